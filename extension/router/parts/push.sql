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

