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

