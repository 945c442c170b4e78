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
