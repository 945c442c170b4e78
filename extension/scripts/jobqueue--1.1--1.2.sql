/*
 * jobqueue 1.1 -> 1.2: recurring schedules, and queue_reserve's wait.
 *
 * A schedule enqueues one job per due window of its cron expression,
 * exactly once however many sessions call queue_tick() at the same time:
 * the tick locks the schedule's row (SKIP LOCKED), pushes the window's job
 * under a unique key naming the schedule and the window, and moves the
 * schedule to its next window, all in one transaction.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.2'" to load this file. \quit

/*
 * queue_jobs churns: every job is inserted, updated and deleted.  Vacuum it
 * after a few thousand dead rows rather than a fifth of the table, so the
 * claim index does not carry a long dead head between vacuums.
 */
ALTER TABLE @extschema@.queue_jobs SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0);

CREATE TABLE @extschema@.queue_schedules (
    name          text        PRIMARY KEY,
    cron          text        NOT NULL,
    job_name      text        NOT NULL,
    payload       jsonb       NOT NULL DEFAULT '{}',
    queue         text        NOT NULL DEFAULT 'default',
    priority      integer     NOT NULL DEFAULT 0,
    max_attempts  integer     NOT NULL DEFAULT 3,
    time_zone     text        NOT NULL DEFAULT 'UTC',
    enabled       boolean     NOT NULL DEFAULT true,
    catch_up      boolean     NOT NULL DEFAULT false,
    next_due      timestamptz NOT NULL,
    last_window   timestamptz,
    last_job_id   bigint,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.queue_schedules IS
    'jobqueue: recurring schedules (cron expressions enqueuing a job per window)';
CREATE INDEX queue_schedules_due_idx ON @extschema@.queue_schedules (next_due) WHERE enabled;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_schedules', '');
REVOKE ALL ON @extschema@.queue_schedules FROM PUBLIC;

CREATE FUNCTION @extschema@.queue_schedule_set(
    name         text,
    cron         text,
    job_name     text,
    payload      jsonb   DEFAULT '{}',
    queue        text    DEFAULT 'default',
    priority     integer DEFAULT 0,
    max_attempts integer DEFAULT 3,
    time_zone    text    DEFAULT 'UTC',
    enabled      boolean DEFAULT true,
    catch_up     boolean DEFAULT false)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jobqueue_schedule_set'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_schedule_set(text, text, text, jsonb, text, integer, integer, text, boolean, boolean) IS
    'create or replace a recurring schedule; returns its next due window';

CREATE FUNCTION @extschema@.queue_schedule_remove(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jobqueue_schedule_remove'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_schedule_remove(text) IS
    'remove a schedule (its jobs already queued stay); false when there was none';

CREATE FUNCTION @extschema@.queue_schedule_list(
    OUT name text, OUT cron text, OUT job_name text, OUT payload jsonb, OUT queue text,
    OUT priority integer, OUT max_attempts integer, OUT time_zone text, OUT enabled boolean,
    OUT catch_up boolean, OUT next_due timestamptz, OUT last_window timestamptz,
    OUT last_job_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jobqueue_schedule_list'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_schedule_list() IS
    'every schedule with its next due window and the last one enqueued';

CREATE FUNCTION @extschema@.queue_tick(
    OUT schedule text, OUT due_at timestamptz, OUT job_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jobqueue_tick'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_tick() IS
    'enqueue one job per due window of every enabled schedule, exactly once; returns what it enqueued';

CREATE FUNCTION @extschema@.queue_cron_next(
    cron      text,
    after     timestamptz DEFAULT NULL,
    time_zone text        DEFAULT 'UTC',
    count     integer     DEFAULT 1)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'jobqueue_cron_next'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_cron_next(text, timestamptz, text, integer) IS
    'the next count times of a cron expression after a time (NULL: now), in a time zone';

/*
 * queue_reserve gains "wait": with nothing due, block in the server up to
 * that long for a job to become due (woken through shared memory when the
 * library is preloaded, else looking again every 50 ms).  A new signature,
 * so drop and create; the re-grant below restores the workers' rights.
 */
DROP FUNCTION @extschema@.queue_reserve(text[], interval, text, integer);
CREATE FUNCTION @extschema@.queue_reserve(
    queues   text[]   DEFAULT '{default}',
    lease    interval DEFAULT NULL,
    worker   text     DEFAULT '',
    max_jobs integer  DEFAULT 1,
    wait     interval DEFAULT '0')
RETURNS SETOF @extschema@.queue_job
AS 'MODULE_PATHNAME', 'jobqueue_reserve_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER ROWS 1
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_reserve(text[], interval, text, integer, interval) IS
    'claim up to max_jobs due jobs, queues in precedence order; with none due, wait up to wait';

REVOKE EXECUTE ON FUNCTION
    @extschema@.queue_reserve(text[], interval, text, integer, interval),
    @extschema@.queue_schedule_set(text, text, text, jsonb, text, integer, integer, text, boolean, boolean),
    @extschema@.queue_schedule_remove(text),
    @extschema@.queue_schedule_list(),
    @extschema@.queue_tick(),
    @extschema@.queue_cron_next(text, timestamptz, text, integer)
FROM PUBLIC;

-- Roles granted a tier before 1.2 get the 1.2 functions of their tier (and
-- queue_reserve again).  queue_delete, not the re-created queue_reserve,
-- tells a worker.
SELECT @extschema@.queue_grant(r.rolname::pg_catalog.text,
    CASE WHEN pg_catalog.bool_or(p.proname = 'queue_retry_failed') THEN 'admin'
         WHEN pg_catalog.bool_or(p.proname = 'queue_delete') THEN 'worker'
         ELSE 'producer' END)
FROM pg_catalog.pg_proc p,
     LATERAL pg_catalog.aclexplode(p.proacl) a(grantor, grantee, privilege_type, is_grantable),
     pg_catalog.pg_roles r
WHERE p.pronamespace = '@extschema@'::pg_catalog.regnamespace
  AND p.proname IN ('queue_retry_failed', 'queue_delete', 'queue_stats')
  AND a.privilege_type = 'EXECUTE'
  AND a.grantee <> p.proowner
  AND r.oid = a.grantee
GROUP BY r.rolname;
