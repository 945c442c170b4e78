-- ------------------------------------------------------------ claiming
CREATE FUNCTION @extschema@.router_reserve_on(part integer, queues text[], lease interval,
                                              worker text, max_jobs integer, wait interval)
RETURNS SETOF @extschema@.queue_job
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue';
    RUN ON part;
    SELECT j.id, j.queue, j.name, j.payload, j.attempts, j.max_attempts, j.priority, j.token, j.reserved_until, j.created_at, j.last_error, j.deadline
    FROM @extschema@.queue_reserve(queues, lease, worker, max_jobs, wait) j;
$$;

/*
 * Whether an error of a remote call says its shard cannot be reached:
 * PL/Proxy's own libpq failures (XX000, "[db] PQconnectPoll: ..."), a
 * connection class error, or the shard shutting down.
 */
CREATE FUNCTION @extschema@.router_unreachable(state text, message text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT state IN ('57P01', '57P02', '57P03') OR state LIKE '08%'
        OR (state = 'XX000' AND message OPERATOR(pg_catalog.~) '\] PQ[A-Za-z]+: ')
$$;

/*
 * queue_reserve: the queues in precedence order, consecutive queues of one
 * shard in one claim there, each claim for what max_jobs leaves.  When
 * every queue is on one shard the call, and its wait, are that shard's.
 * Otherwise a wait polls: a round of claims without waiting, then a wait
 * of at most 250 ms on the first queue's shard, until a job comes or the
 * wait is over (a job due on another shard waits for the next round).
 * A shard that cannot be reached (PL/Proxy's libpq errors) is left out of
 * a claim over several shards, with a warning; the claim fails (08006)
 * only when none of its shards can be reached.  Arguments the shards
 * refuse go as they are to the first queue's shard (the check of queue
 * names' length states JQ_QUEUE_NAME_MAX, 64).
 */
CREATE FUNCTION @extschema@.queue_reserve(
    queues   text[]   DEFAULT '{default}',
    lease    interval DEFAULT NULL,
    worker   text     DEFAULT '',
    max_jobs integer  DEFAULT 1,
    wait     interval DEFAULT '0')
RETURNS SETOF @extschema@.queue_job
LANGUAGE plpgsql
AS $$
DECLARE
    parts      integer := @extschema@.router_partitions();
    group_part integer[] := '{}';
    group_qs   text[] := '{}';        -- the group's queues, as one array literal each
    q          text;
    p          integer;
    wanted     integer := COALESCE(max_jobs, 1);
    claimed    integer;
    until      timestamptz;
    g          integer;
    reached    integer;
    unreachable text;
    state      text;
BEGIN
    -- one queue (the usual worker's claim): the call is its shard's, as it is
    IF pg_catalog.cardinality(queues) = 1 THEN
        RETURN QUERY SELECT * FROM @extschema@.router_reserve_on(
            @extschema@.router_queue_hash(queues[1]), queues, lease, worker, max_jobs, wait);
        RETURN;
    END IF;
    IF queues IS NULL THEN
        queues := '{default}';
    END IF;
    IF pg_catalog.cardinality(queues) = 0 OR pg_catalog.array_position(queues, NULL) IS NOT NULL
       OR wanted NOT BETWEEN 1 AND 10000
       OR COALESCE(wait, '0') NOT BETWEEN '0' AND '1 hour'
       OR EXISTS (SELECT FROM pg_catalog.unnest(queues) u(name)
                  WHERE pg_catalog.length(u.name) NOT BETWEEN 1 AND 64) THEN
        RETURN QUERY SELECT * FROM @extschema@.router_reserve_on(
            @extschema@.router_queue_hash(queues[1]), queues, lease, worker, max_jobs, wait);
        RETURN;
    END IF;
    FOREACH q IN ARRAY queues LOOP
        p := @extschema@.router_queue_hash(q) OPERATOR(pg_catalog.&) (parts - 1);
        IF pg_catalog.cardinality(group_part) > 0 AND group_part[pg_catalog.cardinality(group_part)] = p THEN
            group_qs[pg_catalog.cardinality(group_qs)] :=
                (group_qs[pg_catalog.cardinality(group_qs)]::text[] || q)::text;
        ELSE
            group_part := group_part || p;
            group_qs := group_qs || ARRAY[q]::text;
        END IF;
    END LOOP;
    IF pg_catalog.cardinality(group_part) = 1 THEN
        RETURN QUERY SELECT * FROM @extschema@.router_reserve_on(
            group_part[1], queues, lease, worker, max_jobs, wait);
        RETURN;
    END IF;
    until := pg_catalog.clock_timestamp() + COALESCE(wait, '0');
    LOOP
        claimed := 0;
        reached := 0;
        FOR g IN 1 .. pg_catalog.cardinality(group_part) LOOP
            -- a shard that cannot be reached is left out of this round
            BEGIN
                RETURN QUERY SELECT * FROM @extschema@.router_reserve_on(
                    group_part[g], group_qs[g]::text[], lease, worker, wanted - claimed, '0');
                GET DIAGNOSTICS p = ROW_COUNT;
                claimed := claimed + p;
                reached := reached + 1;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS unreachable = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
                IF NOT @extschema@.router_unreachable(state, unreachable) THEN
                    RAISE;
                END IF;
                RAISE WARNING 'jobqueue_router: shard % left out of this claim: %', group_part[g], unreachable;
            END;
            EXIT WHEN claimed >= wanted;
        END LOOP;
        IF reached = 0 THEN
            RAISE EXCEPTION 'jobqueue_router: no shard of these queues can be reached'
                USING ERRCODE = 'connection_failure', DETAIL = unreachable;
        END IF;
        EXIT WHEN claimed > 0 OR pg_catalog.clock_timestamp() >= until;
        BEGIN
            RETURN QUERY SELECT * FROM @extschema@.router_reserve_on(
                group_part[1], group_qs[1]::text[], lease, worker, wanted,
                LEAST(until - pg_catalog.clock_timestamp(), interval '250 ms'));
            GET DIAGNOSTICS p = ROW_COUNT;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS unreachable = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
            IF NOT @extschema@.router_unreachable(state, unreachable) THEN
                RAISE;
            END IF;
            -- the first queue's shard is down: wait here instead
            PERFORM pg_catalog.pg_sleep(pg_catalog.extract(epoch FROM
                LEAST(until - pg_catalog.clock_timestamp(), interval '250 ms')));
            p := 0;
        END;
        EXIT WHEN p > 0;
    END LOOP;
    RETURN;
END
$$;
COMMENT ON FUNCTION @extschema@.queue_reserve(text[], interval, text, integer, interval) IS
    'jobqueue_router: queue_reserve over the queues'' shards in precedence order';

