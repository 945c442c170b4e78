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

