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

