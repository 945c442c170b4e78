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

