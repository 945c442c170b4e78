/*
 * jobqueue_router 1.0: jobqueue's SQL API in a router database, each call
 * sent with PL/Proxy to the shard databases that run jobqueue (1.5 or
 * later, each made a shard with queue_shard_setup(n)).
 *
 * The cluster is the PL/Proxy SQL/MED server named "jobqueue": partition
 * pN is shard N (its queue_shard() must be N), a power of two of them.
 * The router is installed into the schema that holds jobqueue on the
 * shards: PL/Proxy calls the function of the same schema and name there.
 *
 * Where a call goes:
 *  - by queue: a queue's routing key is its name up to the first ':' (the
 *    whole name when it has none), its shard hashtext(key) & (shards - 1),
 *    so "tenant42:mail" and "tenant42:billing" live on the shard that
 *    queue_shard_for_key('tenant42') names for the tenant's own data;
 *  - by id: a job id carries its shard in the bits from 48 up;
 *  - to every shard (RUN ON ALL), the results merged in the order one
 *    server gives.
 * PL/Proxy runs each remote call in autocommit mode on its shard: a push
 * through the router commits on the shard at once, whatever the router's
 * transaction does.  A push that must commit or roll back with the
 * application's data is made on the shard itself (queue_shard_for).
 *
 * Arguments that the shards would refuse are sent as they are to one
 * shard (partition 0, or the one the call names), so that the error and
 * its SQLSTATE are the shard's own.  Privileges are the shards': PL/Proxy
 * connects to them as the calling user.
 *
 * Internal functions are named router_*: the public ones have jobqueue's
 * names, arguments and defaults.
 */
\echo Use "CREATE EXTENSION jobqueue_router" to load this file. \quit

-- ------------------------------------------------------------ result types
CREATE TYPE @extschema@.queue_job AS (
    id             bigint,
    queue          text,
    name           text,
    payload        jsonb,
    attempts       integer,
    max_attempts   integer,
    priority       integer,
    token          bigint,
    reserved_until timestamptz,
    created_at     timestamptz,
    last_error     text,
    deadline       timestamptz
);

-- The columns of jobqueue 1.5's queue_failed_jobs; the shards' calls name
-- them, so a later version's added columns do not break the router.
CREATE TYPE @extschema@.queue_failed_jobs AS (
    id           bigint,
    job_id       bigint,
    queue        text,
    name         text,
    payload      jsonb,
    priority     integer,
    attempts     integer,
    max_attempts integer,
    error        text,
    failed_at    timestamptz,
    created_at   timestamptz,
    concurrency_key text
);

-- ------------------------------------------------------------ the mapping
-- The partitions of the cluster "jobqueue" (its p0, p1 ... options).
CREATE FUNCTION @extschema@.router_partitions()
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.count(*)::integer
    FROM pg_catalog.pg_foreign_server s,
         pg_catalog.unnest(s.srvoptions) o(opt)
    WHERE s.srvname = 'jobqueue' AND o.opt OPERATOR(pg_catalog.~) '^p[0-9]+='
$$;
COMMENT ON FUNCTION @extschema@.router_partitions() IS
    'jobqueue_router: how many shards the PL/Proxy cluster "jobqueue" has';

-- A routing key's hash (PL/Proxy takes it & (shards - 1)).
CREATE FUNCTION @extschema@.router_key_hash(key text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT pg_catalog.hashtext(COALESCE(key, '')) $$;
COMMENT ON FUNCTION @extschema@.router_key_hash(text) IS
    'jobqueue_router: the hash of a routing key';

-- A queue's hash: of its name up to the first ':' (NULL is 'default').
CREATE FUNCTION @extschema@.router_queue_hash(queue text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT @extschema@.router_key_hash(
        pg_catalog.split_part(COALESCE(queue, 'default'), ':', 1))
$$;
COMMENT ON FUNCTION @extschema@.router_queue_hash(text) IS
    'jobqueue_router: the hash of a queue''s routing key (its name up to the first '':'')';

-- A job id's shard (the bits from 48 up); NULL goes to shard 0, which refuses it.
CREATE FUNCTION @extschema@.router_id_hash(id bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT COALESCE((id OPERATOR(pg_catalog.>>) 48)::integer, 0) $$;
COMMENT ON FUNCTION @extschema@.router_id_hash(bigint) IS
    'jobqueue_router: the shard a job id names (NULL: 0)';

CREATE FUNCTION @extschema@.queue_shard_for_key(key text)
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT @extschema@.router_key_hash(key) OPERATOR(pg_catalog.&) (@extschema@.router_partitions() - 1)
$$;
COMMENT ON FUNCTION @extschema@.queue_shard_for_key(text) IS
    'jobqueue_router: the shard of a routing key (the application''s tenant key): hashtext(key) & (shards - 1)';

CREATE FUNCTION @extschema@.queue_shard_for(queue text)
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT @extschema@.router_queue_hash(queue) OPERATOR(pg_catalog.&) (@extschema@.router_partitions() - 1)
$$;
COMMENT ON FUNCTION @extschema@.queue_shard_for(text) IS
    'jobqueue_router: the shard that holds a queue (where its transactional pushes go)';

CREATE FUNCTION @extschema@.queue_job_shard(id bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (id OPERATOR(pg_catalog.>>) 48)::integer $$;
COMMENT ON FUNCTION @extschema@.queue_job_shard(bigint) IS
    'jobqueue_router: the shard that holds job id (id >> 48)';

-- The shards and their connection strings, for an application that pushes on them itself.
CREATE FUNCTION @extschema@.queue_shards(OUT shard integer, OUT connstr text)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.substr(pg_catalog.split_part(o.opt, '=', 1), 2)::integer,
           pg_catalog.substr(o.opt, pg_catalog.strpos(o.opt, '=') + 1)
    FROM pg_catalog.pg_foreign_server s,
         pg_catalog.unnest(s.srvoptions) o(opt)
    WHERE s.srvname = 'jobqueue' AND o.opt OPERATOR(pg_catalog.~) '^p[0-9]+='
    ORDER BY 1
$$;
COMMENT ON FUNCTION @extschema@.queue_shards() IS
    'jobqueue_router: the shards of the cluster "jobqueue" and their connection strings';

-- ------------------------------------------------------------ pushing
CREATE FUNCTION @extschema@.queue_push(
    name         text,
    payload      jsonb       DEFAULT '{}',
    queue        text        DEFAULT 'default',
    delay        interval    DEFAULT '0',
    priority     integer     DEFAULT 0,
    unique_key   text        DEFAULT NULL,
    max_attempts integer     DEFAULT 3,
    deadline     timestamptz DEFAULT NULL,
    concurrency_key text     DEFAULT NULL,
    on_duplicate text        DEFAULT 'keep',
    after        bigint[]    DEFAULT NULL,
    after_failed text        DEFAULT 'fail')
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue';
    RUN ON @extschema@.router_queue_hash(queue);
$$;
COMMENT ON FUNCTION @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz, text, text, bigint[], text) IS
    'jobqueue_router: queue_push on the queue''s shard (autocommit there; "after" names jobs of that shard)';

-- The jobs of one batch that go to one shard, with their places in the batch.
CREATE FUNCTION @extschema@.router_push_split(jobs jsonb[], places integer[],
                                              OUT place integer, OUT id bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue';
    SPLIT jobs, places;
    RUN ON @extschema@.router_queue_hash(jobs->>'queue');
    SELECT u.place, u.id
    FROM unnest(places,
                           @extschema@.queue_push_many(pg_catalog.to_jsonb(jobs))) AS u(place, id);
$$;

-- A whole batch on one shard (for what that shard refuses as a whole).
CREATE FUNCTION @extschema@.router_push_many_on(part integer, jobs jsonb)
RETURNS bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue';
    RUN ON part;
    SELECT @extschema@.queue_push_many(jobs) AS router_push_many_on;
$$;

/*
 * queue_push_many: each shard's jobs in one call there, all shards in
 * parallel; the ids in input order (a batch for one shard goes as it is).  Atomic per shard only: a job that its
 * shard refuses fails that shard's part, while other shards' parts may have
 * committed.  A batch that is not a non-empty array of at most 10,000 jobs
 * goes whole to shard 0, whose checks refuse it.
 */
CREATE FUNCTION @extschema@.queue_push_many(jobs jsonb)
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
DECLARE
    ids        bigint[];
    first_part integer;
    last_part  integer;
BEGIN
    IF jobs IS NULL OR pg_catalog.jsonb_typeof(jobs) <> 'array'
       OR pg_catalog.jsonb_array_length(jobs) NOT BETWEEN 1 AND 10000
       OR EXISTS (SELECT FROM pg_catalog.jsonb_array_elements(jobs) j
                  WHERE pg_catalog.jsonb_typeof(j) <> 'object') THEN
        RETURN @extschema@.router_push_many_on(0, jobs);
    END IF;
    -- all of it for one shard (one queue, or one tenant's): sent as it is
    SELECT pg_catalog.min(h), pg_catalog.max(h) INTO first_part, last_part
    FROM (SELECT @extschema@.router_queue_hash(j OPERATOR(pg_catalog.->>) 'queue')
                 OPERATOR(pg_catalog.&) (@extschema@.router_partitions() - 1) AS h
          FROM pg_catalog.jsonb_array_elements(jobs) j) parts;
    IF first_part = last_part THEN
        RETURN @extschema@.router_push_many_on(first_part, jobs);
    END IF;
    SELECT pg_catalog.array_agg(s.id ORDER BY s.place) INTO ids
    FROM @extschema@.router_push_split(
             ARRAY(SELECT j FROM pg_catalog.jsonb_array_elements(jobs) WITH ORDINALITY e(j, n) ORDER BY n),
             ARRAY(SELECT n::integer FROM pg_catalog.generate_series(1, pg_catalog.jsonb_array_length(jobs)) n)) s;
    RETURN ids;
END
$$;
COMMENT ON FUNCTION @extschema@.queue_push_many(jsonb) IS
    'jobqueue_router: queue_push_many, each shard''s jobs in one call there (atomic per shard)';

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

-- ------------------------------------------------------------ finishing, by id
CREATE FUNCTION @extschema@.queue_delete(id bigint, token bigint)
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id); $$;
COMMENT ON FUNCTION @extschema@.queue_delete(bigint, bigint) IS
    'jobqueue_router: queue_delete on the job''s shard';

CREATE FUNCTION @extschema@.queue_release(id bigint, token bigint,
                                          delay interval DEFAULT NULL, error text DEFAULT '')
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id); $$;
COMMENT ON FUNCTION @extschema@.queue_release(bigint, bigint, interval, text) IS
    'jobqueue_router: queue_release on the job''s shard';

CREATE FUNCTION @extschema@.queue_fail(id bigint, token bigint, error text DEFAULT '')
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id); $$;
COMMENT ON FUNCTION @extschema@.queue_fail(bigint, bigint, text) IS
    'jobqueue_router: queue_fail on the job''s shard';

CREATE FUNCTION @extschema@.queue_extend(id bigint, token bigint, lease interval)
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id); $$;
COMMENT ON FUNCTION @extschema@.queue_extend(bigint, bigint, interval) IS
    'jobqueue_router: queue_extend on the job''s shard';

CREATE FUNCTION @extschema@.queue_cancel(id bigint, force boolean DEFAULT false)
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id); $$;
COMMENT ON FUNCTION @extschema@.queue_cancel(bigint, boolean) IS
    'jobqueue_router: queue_cancel on the job''s shard';

/*
 * The batch forms: the pairs split by the shard each id names, every
 * shard's part in parallel; the result in input order.  A batch of one
 * shard's jobs (the usual case: one claim's) goes whole to that shard.  Arrays the shards
 * refuse (NULL, of different lengths, with NULLs, too long) go whole to
 * shard 0.
 */
CREATE FUNCTION @extschema@.router_batch_shape_ok(ids bigint[], tokens bigint[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ids IS NOT NULL AND tokens IS NOT NULL
       AND pg_catalog.array_ndims(ids) IS NOT DISTINCT FROM pg_catalog.array_ndims(tokens)
       AND pg_catalog.cardinality(ids) = pg_catalog.cardinality(tokens)
       AND pg_catalog.cardinality(ids) BETWEEN 1 AND 10000
       AND pg_catalog.array_ndims(ids) = 1
       AND pg_catalog.array_position(ids, NULL) IS NULL
       AND pg_catalog.array_position(tokens, NULL) IS NULL
$$;

-- The one shard that holds every id of a batch (NULL: several).
CREATE FUNCTION @extschema@.router_batch_home(ids bigint[])
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN pg_catalog.min(i OPERATOR(pg_catalog.>>) 48) = pg_catalog.max(i OPERATOR(pg_catalog.>>) 48)
                THEN pg_catalog.min(i OPERATOR(pg_catalog.>>) 48)::integer END
    FROM pg_catalog.unnest(ids) i
$$;

CREATE FUNCTION @extschema@.router_batch_done(ids bigint[], done bigint[])
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT COALESCE(pg_catalog.array_agg(i.id ORDER BY i.n), '{}')
    FROM pg_catalog.unnest(ids) WITH ORDINALITY i(id, n)
    WHERE i.id = ANY (done)
$$;

CREATE FUNCTION @extschema@.router_delete_split(ids bigint[], tokens bigint[])
RETURNS SETOF bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; SPLIT ids, tokens; RUN ON @extschema@.router_id_hash(ids);
    SELECT @extschema@.queue_delete_many(ids, tokens) AS router_delete_split;
$$;
CREATE FUNCTION @extschema@.router_delete_many_on(part integer, ids bigint[], tokens bigint[])
RETURNS bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON part;
    SELECT @extschema@.queue_delete_many(ids, tokens) AS router_delete_many_on;
$$;
CREATE FUNCTION @extschema@.queue_delete_many(ids bigint[], tokens bigint[])
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
DECLARE
    home integer;
BEGIN
    IF NOT @extschema@.router_batch_shape_ok(ids, tokens) THEN
        RETURN @extschema@.router_delete_many_on(0, ids, tokens);
    END IF;
    home := @extschema@.router_batch_home(ids);
    IF home IS NOT NULL THEN
        RETURN @extschema@.router_delete_many_on(home, ids, tokens);
    END IF;
    RETURN @extschema@.router_batch_done(ids,
        ARRAY(SELECT pg_catalog.unnest(d) FROM @extschema@.router_delete_split(ids, tokens) d));
END
$$;
COMMENT ON FUNCTION @extschema@.queue_delete_many(bigint[], bigint[]) IS
    'jobqueue_router: queue_delete_many, split by the ids'' shards';

CREATE FUNCTION @extschema@.router_release_split(ids bigint[], tokens bigint[], delay interval, error text)
RETURNS SETOF bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; SPLIT ids, tokens; RUN ON @extschema@.router_id_hash(ids);
    SELECT @extschema@.queue_release_many(ids, tokens, delay, error) AS router_release_split;
$$;
CREATE FUNCTION @extschema@.router_release_many_on(part integer, ids bigint[], tokens bigint[],
                                                   delay interval, error text)
RETURNS bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON part;
    SELECT @extschema@.queue_release_many(ids, tokens, delay, error) AS router_release_many_on;
$$;
CREATE FUNCTION @extschema@.queue_release_many(ids bigint[], tokens bigint[],
                                               delay interval DEFAULT NULL, error text DEFAULT '')
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
DECLARE
    home integer;
BEGIN
    IF NOT @extschema@.router_batch_shape_ok(ids, tokens) THEN
        RETURN @extschema@.router_release_many_on(0, ids, tokens, delay, error);
    END IF;
    home := @extschema@.router_batch_home(ids);
    IF home IS NOT NULL THEN
        RETURN @extschema@.router_release_many_on(home, ids, tokens, delay, error);
    END IF;
    RETURN @extschema@.router_batch_done(ids,
        ARRAY(SELECT pg_catalog.unnest(d) FROM @extschema@.router_release_split(ids, tokens, delay, error) d));
END
$$;
COMMENT ON FUNCTION @extschema@.queue_release_many(bigint[], bigint[], interval, text) IS
    'jobqueue_router: queue_release_many, split by the ids'' shards';

CREATE FUNCTION @extschema@.router_fail_split(ids bigint[], tokens bigint[], error text)
RETURNS SETOF bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; SPLIT ids, tokens; RUN ON @extschema@.router_id_hash(ids);
    SELECT @extschema@.queue_fail_many(ids, tokens, error) AS router_fail_split;
$$;
CREATE FUNCTION @extschema@.router_fail_many_on(part integer, ids bigint[], tokens bigint[], error text)
RETURNS bigint[]
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON part;
    SELECT @extschema@.queue_fail_many(ids, tokens, error) AS router_fail_many_on;
$$;
CREATE FUNCTION @extschema@.queue_fail_many(ids bigint[], tokens bigint[], error text DEFAULT '')
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
DECLARE
    home integer;
BEGIN
    IF NOT @extschema@.router_batch_shape_ok(ids, tokens) THEN
        RETURN @extschema@.router_fail_many_on(0, ids, tokens, error);
    END IF;
    home := @extschema@.router_batch_home(ids);
    IF home IS NOT NULL THEN
        RETURN @extschema@.router_fail_many_on(home, ids, tokens, error);
    END IF;
    RETURN @extschema@.router_batch_done(ids,
        ARRAY(SELECT pg_catalog.unnest(d) FROM @extschema@.router_fail_split(ids, tokens, error) d));
END
$$;
COMMENT ON FUNCTION @extschema@.queue_fail_many(bigint[], bigint[], text) IS
    'jobqueue_router: queue_fail_many, split by the ids'' shards';

-- ------------------------------------------------------------ the backlog
CREATE FUNCTION @extschema@.router_pending_on(queue text)
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue);
    SELECT @extschema@.queue_pending(queue) AS router_pending_on;
$$;
CREATE FUNCTION @extschema@.router_pending_all()
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT @extschema@.queue_pending(NULL) AS router_pending_all;
$$;
CREATE FUNCTION @extschema@.queue_pending(queue text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT CASE WHEN queue IS NULL
                THEN (SELECT pg_catalog.sum(n)::bigint FROM @extschema@.router_pending_all() n)
                ELSE @extschema@.router_pending_on(queue) END
$$;
COMMENT ON FUNCTION @extschema@.queue_pending(text) IS
    'jobqueue_router: queue_pending on the queue''s shard, or summed over all shards';

CREATE FUNCTION @extschema@.router_stats_all(OUT queue text, OUT pending bigint, OUT delayed bigint,
                                             OUT reserved bigint, OUT total bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT s.queue, s.pending, s.delayed, s.reserved, s.total FROM @extschema@.queue_stats() s;
$$;
CREATE FUNCTION @extschema@.queue_stats(OUT queue text, OUT pending bigint, OUT delayed bigint,
                                        OUT reserved bigint, OUT total bigint)
RETURNS SETOF record
LANGUAGE sql
AS $$
    SELECT s.queue, pg_catalog.sum(s.pending)::bigint, pg_catalog.sum(s.delayed)::bigint,
           pg_catalog.sum(s.reserved)::bigint, pg_catalog.sum(s.total)::bigint
    FROM @extschema@.router_stats_all() s
    GROUP BY s.queue
    ORDER BY s.queue COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_stats() IS
    'jobqueue_router: queue_stats of every shard, summed per queue';

CREATE FUNCTION @extschema@.router_list_all(OUT queue text, OUT paused boolean, OUT default_lease interval,
                                            OUT notify boolean, OUT pending bigint, OUT delayed bigint,
                                            OUT reserved bigint, OUT total bigint, OUT shard integer)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT l.queue, l.paused, l.default_lease, l.notify, l.pending, l.delayed, l.reserved, l.total,
           @extschema@.queue_shard() AS shard
    FROM @extschema@.queue_list() l;
$$;
-- queue_list: the settings from the queue's own shard, the backlog summed.
CREATE FUNCTION @extschema@.queue_list(OUT queue text, OUT paused boolean, OUT default_lease interval,
                                       OUT notify boolean, OUT pending bigint, OUT delayed bigint,
                                       OUT reserved bigint, OUT total bigint)
RETURNS SETOF record
LANGUAGE sql
AS $$
    SELECT l.queue,
           pg_catalog.bool_or(l.paused) FILTER (WHERE l.shard = @extschema@.queue_shard_for(l.queue)),
           pg_catalog.max(l.default_lease) FILTER (WHERE l.shard = @extschema@.queue_shard_for(l.queue)),
           COALESCE(pg_catalog.bool_and(l.notify) FILTER (WHERE l.shard = @extschema@.queue_shard_for(l.queue)), true),
           pg_catalog.sum(l.pending)::bigint, pg_catalog.sum(l.delayed)::bigint,
           pg_catalog.sum(l.reserved)::bigint, pg_catalog.sum(l.total)::bigint
    FROM @extschema@.router_list_all() l
    GROUP BY l.queue
    ORDER BY l.queue COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_list() IS
    'jobqueue_router: queue_list of every shard: settings from the queue''s shard, backlog summed';

CREATE FUNCTION @extschema@.router_counters_all(OUT queue text, OUT pushed bigint, OUT claimed bigint,
                                                OUT completed bigint, OUT released bigint, OUT retried bigint,
                                                OUT failed bigint, OUT expired bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT c.queue, c.pushed, c.claimed, c.completed, c.released, c.retried, c.failed, c.expired
    FROM @extschema@.queue_counters() c;
$$;
CREATE FUNCTION @extschema@.queue_counters(OUT queue text, OUT pushed bigint, OUT claimed bigint,
                                           OUT completed bigint, OUT released bigint, OUT retried bigint,
                                           OUT failed bigint, OUT expired bigint)
RETURNS SETOF record
LANGUAGE sql
AS $$
    SELECT c.queue, pg_catalog.sum(c.pushed)::bigint, pg_catalog.sum(c.claimed)::bigint,
           pg_catalog.sum(c.completed)::bigint, pg_catalog.sum(c.released)::bigint,
           pg_catalog.sum(c.retried)::bigint, pg_catalog.sum(c.failed)::bigint,
           pg_catalog.sum(c.expired)::bigint
    FROM @extschema@.router_counters_all() c
    GROUP BY c.queue
    ORDER BY c.queue COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_counters() IS
    'jobqueue_router: queue_counters of every shard, summed per queue';

CREATE FUNCTION @extschema@.router_counters_reset_all()
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT 1 AS router_counters_reset_all FROM (SELECT @extschema@.queue_counters_reset()) r;
$$;
CREATE FUNCTION @extschema@.queue_counters_reset()
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_catalog.count(*) FROM @extschema@.router_counters_reset_all() $$;
COMMENT ON FUNCTION @extschema@.queue_counters_reset() IS
    'jobqueue_router: queue_counters_reset on every shard';

-- ------------------------------------------------------------ failed jobs
CREATE FUNCTION @extschema@.router_failed_count_all()
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT @extschema@.queue_failed_count() AS router_failed_count_all;
$$;
CREATE FUNCTION @extschema@.queue_failed_count()
RETURNS bigint
LANGUAGE sql
AS $$ SELECT COALESCE(pg_catalog.sum(n), 0)::bigint FROM @extschema@.router_failed_count_all() n $$;
COMMENT ON FUNCTION @extschema@.queue_failed_count() IS
    'jobqueue_router: queue_failed_count summed over the shards';

CREATE FUNCTION @extschema@.router_failed_rows_all(max_rows integer, queue text)
RETURNS SETOF @extschema@.queue_failed_jobs
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT f.id, f.job_id, f.queue, f.name, f.payload, f.priority, f.attempts, f.max_attempts, f.error, f.failed_at, f.created_at, f.concurrency_key
    FROM @extschema@.queue_failed_rows(max_rows, queue, NULL) f;
$$;
CREATE FUNCTION @extschema@.router_failed_rows_on(part integer, max_rows integer, queue text, id bigint)
RETURNS SETOF @extschema@.queue_failed_jobs
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON part;
    SELECT f.id, f.job_id, f.queue, f.name, f.payload, f.priority, f.attempts, f.max_attempts, f.error, f.failed_at, f.created_at, f.concurrency_key
    FROM @extschema@.queue_failed_rows(max_rows, queue, id) f;
$$;
-- queue_failed_rows: one job's row from its shard; otherwise the newest of
-- every shard's newest (a max_rows below 1 goes to shard 0, which refuses it).
CREATE FUNCTION @extschema@.queue_failed_rows(max_rows integer DEFAULT 50, queue text DEFAULT NULL,
                                              id bigint DEFAULT NULL)
RETURNS SETOF @extschema@.queue_failed_jobs
LANGUAGE plpgsql
AS $$
BEGIN
    IF id IS NOT NULL THEN
        RETURN QUERY SELECT * FROM @extschema@.router_failed_rows_on(
            @extschema@.router_id_hash(id), max_rows, queue, id);
    ELSIF max_rows < 1 THEN
        RETURN QUERY SELECT * FROM @extschema@.router_failed_rows_on(0, max_rows, queue, id);
    ELSE
        RETURN QUERY SELECT * FROM @extschema@.router_failed_rows_all(max_rows, queue) f
            ORDER BY f.failed_at DESC, f.id DESC
            LIMIT COALESCE(max_rows, 50);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.queue_failed_rows(integer, text, bigint) IS
    'jobqueue_router: queue_failed_rows of every shard, newest first (one job''s from its shard)';

CREATE FUNCTION @extschema@.router_retry_failed_on(id bigint, max_attempts integer)
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id);
    SELECT @extschema@.queue_retry_failed(id, max_attempts) AS router_retry_failed_on;
$$;
CREATE FUNCTION @extschema@.router_retry_failed_all(max_attempts integer)
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT @extschema@.queue_retry_failed(NULL, max_attempts) AS router_retry_failed_all;
$$;
CREATE FUNCTION @extschema@.queue_retry_failed(id bigint DEFAULT NULL, max_attempts integer DEFAULT 3)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT CASE WHEN id IS NOT NULL THEN @extschema@.router_retry_failed_on(id, max_attempts)
                ELSE (SELECT pg_catalog.sum(n)::bigint FROM @extschema@.router_retry_failed_all(max_attempts) n) END
$$;
COMMENT ON FUNCTION @extschema@.queue_retry_failed(bigint, integer) IS
    'jobqueue_router: queue_retry_failed on the job''s shard, or on every shard';

CREATE FUNCTION @extschema@.router_forget_failed_on(id bigint, before timestamptz, all_rows boolean)
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON @extschema@.router_id_hash(id);
    SELECT @extschema@.queue_forget_failed(id, before, all_rows) AS router_forget_failed_on;
$$;
CREATE FUNCTION @extschema@.router_forget_failed_all(before timestamptz, all_rows boolean)
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT @extschema@.queue_forget_failed(NULL, before, all_rows) AS router_forget_failed_all;
$$;
CREATE FUNCTION @extschema@.queue_forget_failed(id bigint DEFAULT NULL, before timestamptz DEFAULT NULL,
                                                all_rows boolean DEFAULT false)
RETURNS bigint
LANGUAGE sql
AS $$
    SELECT CASE WHEN id IS NOT NULL THEN @extschema@.router_forget_failed_on(id, before, all_rows)
                ELSE (SELECT pg_catalog.sum(n)::bigint FROM @extschema@.router_forget_failed_all(before, all_rows) n) END
$$;
COMMENT ON FUNCTION @extschema@.queue_forget_failed(bigint, timestamptz, boolean) IS
    'jobqueue_router: queue_forget_failed on the job''s shard, or on every shard';

-- ------------------------------------------------------------ queue administration, by queue
CREATE FUNCTION @extschema@.queue_clear(queue text)
RETURNS bigint
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_clear(text) IS 'jobqueue_router: queue_clear on the queue''s shard';

CREATE FUNCTION @extschema@.queue_pause(queue text)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_pause(text) IS 'jobqueue_router: queue_pause on the queue''s shard';

CREATE FUNCTION @extschema@.queue_resume(queue text)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_resume(text) IS 'jobqueue_router: queue_resume on the queue''s shard';

CREATE FUNCTION @extschema@.queue_set_default_lease(queue text, lease interval)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_set_default_lease(text, interval) IS
    'jobqueue_router: queue_set_default_lease on the queue''s shard';

CREATE FUNCTION @extschema@.queue_set_notify(queue text, enabled boolean)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_set_notify(text, boolean) IS
    'jobqueue_router: queue_set_notify on the queue''s shard';

-- ------------------------------------------------------------ schedules
CREATE FUNCTION @extschema@.router_schedule_set_on(name text, cron text, job_name text, payload jsonb,
                                                   queue text, priority integer, max_attempts integer,
                                                   time_zone text, enabled boolean, catch_up boolean)
RETURNS timestamptz
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue);
    SELECT @extschema@.queue_schedule_set(name, cron, job_name, payload, queue, priority, max_attempts,
                                          time_zone, enabled, catch_up) AS router_schedule_set_on;
$$;
CREATE FUNCTION @extschema@.router_schedule_remove_on(part integer, name text)
RETURNS boolean
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON part;
    SELECT @extschema@.queue_schedule_remove(name) AS router_schedule_remove_on;
$$;
/*
 * queue_schedule_set: a schedule lives on its queue's shard, whose ticker
 * pushes its jobs there; set there, then removed from every other shard
 * (where an earlier version for another queue may be).
 */
CREATE FUNCTION @extschema@.queue_schedule_set(name text, cron text, job_name text,
                                               payload jsonb DEFAULT '{}', queue text DEFAULT 'default',
                                               priority integer DEFAULT 0, max_attempts integer DEFAULT 3,
                                               time_zone text DEFAULT 'UTC', enabled boolean DEFAULT true,
                                               catch_up boolean DEFAULT false)
RETURNS timestamptz
LANGUAGE plpgsql
AS $$
DECLARE
    next_due timestamptz;
    home     integer := @extschema@.queue_shard_for(queue);
BEGIN
    next_due := @extschema@.router_schedule_set_on(name, cron, job_name, payload, queue, priority,
                                                   max_attempts, time_zone, enabled, catch_up);
    PERFORM @extschema@.router_schedule_remove_on(p, name)
    FROM pg_catalog.generate_series(0, @extschema@.router_partitions() - 1) p
    WHERE p <> home;
    RETURN next_due;
END
$$;
COMMENT ON FUNCTION @extschema@.queue_schedule_set(text, text, text, jsonb, text, integer, integer, text, boolean, boolean) IS
    'jobqueue_router: queue_schedule_set on the queue''s shard (and removed from the others)';

CREATE FUNCTION @extschema@.router_schedule_remove_all(name text)
RETURNS SETOF boolean
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT @extschema@.queue_schedule_remove(name) AS router_schedule_remove_all;
$$;
CREATE FUNCTION @extschema@.queue_schedule_remove(name text)
RETURNS boolean
LANGUAGE sql
AS $$ SELECT pg_catalog.bool_or(r) FROM @extschema@.router_schedule_remove_all(name) r $$;
COMMENT ON FUNCTION @extschema@.queue_schedule_remove(text) IS
    'jobqueue_router: queue_schedule_remove on every shard';

CREATE FUNCTION @extschema@.router_schedule_list_all(
    OUT name text, OUT cron text, OUT job_name text, OUT payload jsonb, OUT queue text,
    OUT priority integer, OUT max_attempts integer, OUT time_zone text, OUT enabled boolean,
    OUT catch_up boolean, OUT next_due timestamptz, OUT last_window timestamptz, OUT last_job_id bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT s.name, s.cron, s.job_name, s.payload, s.queue, s.priority, s.max_attempts, s.time_zone,
           s.enabled, s.catch_up, s.next_due, s.last_window, s.last_job_id
    FROM @extschema@.queue_schedule_list() s;
$$;
CREATE FUNCTION @extschema@.queue_schedule_list(
    OUT name text, OUT cron text, OUT job_name text, OUT payload jsonb, OUT queue text,
    OUT priority integer, OUT max_attempts integer, OUT time_zone text, OUT enabled boolean,
    OUT catch_up boolean, OUT next_due timestamptz, OUT last_window timestamptz, OUT last_job_id bigint)
RETURNS SETOF record
LANGUAGE sql
AS $$ SELECT * FROM @extschema@.router_schedule_list_all() s ORDER BY s.name COLLATE "C" $$;
COMMENT ON FUNCTION @extschema@.queue_schedule_list() IS
    'jobqueue_router: the schedules of every shard, by name';

CREATE FUNCTION @extschema@.router_tick_all(OUT schedule text, OUT due_at timestamptz, OUT job_id bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT t.schedule, t.due_at, t.job_id FROM @extschema@.queue_tick() t;
$$;
CREATE FUNCTION @extschema@.queue_tick(OUT schedule text, OUT due_at timestamptz, OUT job_id bigint)
RETURNS SETOF record
LANGUAGE sql
AS $$ SELECT * FROM @extschema@.router_tick_all() t ORDER BY t.due_at, t.schedule COLLATE "C" $$;
COMMENT ON FUNCTION @extschema@.queue_tick() IS
    'jobqueue_router: queue_tick on every shard';

CREATE FUNCTION @extschema@.queue_cron_next(cron text, after timestamptz DEFAULT NULL,
                                            time_zone text DEFAULT 'UTC', count integer DEFAULT 1)
RETURNS SETOF timestamptz
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON 0; $$;
COMMENT ON FUNCTION @extschema@.queue_cron_next(text, timestamptz, text, integer) IS
    'jobqueue_router: queue_cron_next (computed on shard 0)';

-- ------------------------------------------------------------ privileges on every shard
CREATE FUNCTION @extschema@.router_grant_all(role text, tier text)
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT 1 AS router_grant_all FROM (SELECT @extschema@.queue_grant(role, tier)) g;
$$;
CREATE FUNCTION @extschema@.queue_grant(role text, tier text)
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_catalog.count(*) FROM @extschema@.router_grant_all(role, tier) $$;
COMMENT ON FUNCTION @extschema@.queue_grant(text, text) IS
    'jobqueue_router: queue_grant on every shard (the role must exist there)';

CREATE FUNCTION @extschema@.router_revoke_all(role text, tier text)
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT 1 AS router_revoke_all FROM (SELECT @extschema@.queue_revoke(role, tier)) g;
$$;
CREATE FUNCTION @extschema@.queue_revoke(role text, tier text)
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_catalog.count(*) FROM @extschema@.router_revoke_all(role, tier) $$;
COMMENT ON FUNCTION @extschema@.queue_revoke(text, text) IS
    'jobqueue_router: queue_revoke on every shard';

-- ------------------------------------------------------------ flow control (jobqueue 1.5)
CREATE FUNCTION @extschema@.queue_concurrency_set(queue text, key_prefix text, max_running integer)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_concurrency_set(text, text, integer) IS
    'jobqueue_router: queue_concurrency_set on the queue''s shard';

CREATE FUNCTION @extschema@.queue_concurrency_remove(queue text, key_prefix text)
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_concurrency_remove(text, text) IS
    'jobqueue_router: queue_concurrency_remove on the queue''s shard';

CREATE FUNCTION @extschema@.queue_rate_limit_set(queue text, max_claims integer, per interval)
RETURNS void
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_set(text, integer, interval) IS
    'jobqueue_router: queue_rate_limit_set on the queue''s shard';

CREATE FUNCTION @extschema@.queue_rate_limit_remove(queue text)
RETURNS boolean
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_remove(text) IS
    'jobqueue_router: queue_rate_limit_remove on the queue''s shard';

CREATE FUNCTION @extschema@.queue_rate_limit_next(queue text)
RETURNS timestamptz
LANGUAGE plproxy
AS $$ CLUSTER 'jobqueue'; RUN ON @extschema@.router_queue_hash(queue); $$;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_next(text) IS
    'jobqueue_router: queue_rate_limit_next on the queue''s shard';

CREATE FUNCTION @extschema@.router_concurrency_list_all(OUT queue text, OUT key_prefix text, OUT max_running integer)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT c.queue, c.key_prefix, c.max_running FROM @extschema@.queue_concurrency_list() c;
$$;
CREATE FUNCTION @extschema@.queue_concurrency_list()
RETURNS TABLE (queue text, key_prefix text, max_running integer)
LANGUAGE sql
AS $$
    SELECT * FROM @extschema@.router_concurrency_list_all() c
    ORDER BY c.queue COLLATE "C", c.key_prefix COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_concurrency_list() IS
    'jobqueue_router: queue_concurrency_list of every shard';

CREATE FUNCTION @extschema@.router_concurrency_keys_all(queue text, OUT queue text, OUT concurrency_key text,
                                                        OUT max_running integer, OUT running integer,
                                                        OUT waiting bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT k.queue, k.concurrency_key, k.max_running, k.running, k.waiting
    FROM @extschema@.queue_concurrency_keys($1) k;
$$;
CREATE FUNCTION @extschema@.queue_concurrency_keys(queue text DEFAULT NULL)
RETURNS TABLE (queue text, concurrency_key text, max_running integer, running integer, waiting bigint)
LANGUAGE sql
AS $$
    SELECT * FROM @extschema@.router_concurrency_keys_all($1) k
    ORDER BY k.queue COLLATE "C", k.concurrency_key COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_concurrency_keys(text) IS
    'jobqueue_router: queue_concurrency_keys of every shard';

CREATE FUNCTION @extschema@.router_rate_limits_all(OUT queue text, OUT max_claims integer, OUT per interval,
                                                   OUT next_slot timestamptz)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT r.queue, r.max_claims, r.per, r.next_slot FROM @extschema@.queue_rate_limits() r;
$$;
CREATE FUNCTION @extschema@.queue_rate_limits()
RETURNS TABLE (queue text, max_claims integer, per interval, next_slot timestamptz)
LANGUAGE sql
AS $$ SELECT * FROM @extschema@.router_rate_limits_all() r ORDER BY r.queue COLLATE "C" $$;
COMMENT ON FUNCTION @extschema@.queue_rate_limits() IS
    'jobqueue_router: queue_rate_limits of every shard';

CREATE FUNCTION @extschema@.router_blocked_all(queue text, OUT queue text, OUT waiting_for_key bigint,
                                               OUT waiting_for_parents bigint)
RETURNS SETOF record
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT b.queue, b.waiting_for_key, b.waiting_for_parents FROM @extschema@.queue_blocked($1) b;
$$;
CREATE FUNCTION @extschema@.queue_blocked(queue text DEFAULT NULL)
RETURNS TABLE (queue text, waiting_for_key bigint, waiting_for_parents bigint)
LANGUAGE sql
AS $$
    SELECT b.queue, pg_catalog.sum(b.waiting_for_key)::bigint, pg_catalog.sum(b.waiting_for_parents)::bigint
    FROM @extschema@.router_blocked_all($1) b
    GROUP BY b.queue
    ORDER BY b.queue COLLATE "C"
$$;
COMMENT ON FUNCTION @extschema@.queue_blocked(text) IS
    'jobqueue_router: queue_blocked of every shard, summed per queue';
