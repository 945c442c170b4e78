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

