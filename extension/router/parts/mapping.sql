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

