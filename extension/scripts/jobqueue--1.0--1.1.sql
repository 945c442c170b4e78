/*
 * jobqueue 1.0 -> 1.1: batches, wake-ups, queue administration, deadlines.
 *
 * Functions whose behaviour needs the 1.1 schema point at new C symbols
 * (..._1_1); the 1.0 symbols stay in the library, so a database still at 1.0
 * keeps working with the new library until ALTER EXTENSION jobqueue UPDATE.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.1'" to load this file. \quit

-- Deadlines: past it, a job that is not running is failed as expired.
ALTER TABLE @extschema@.queue_jobs ADD COLUMN deadline timestamptz;

CREATE INDEX queue_jobs_deadline_idx
    ON @extschema@.queue_jobs (queue, deadline)
    WHERE deadline IS NOT NULL;

ALTER TYPE @extschema@.queue_job ADD ATTRIBUTE deadline timestamptz;

/*
 * Per-queue settings.  A queue without a row has the defaults: not paused,
 * lease 60 seconds, wake-ups on.
 */
CREATE TABLE @extschema@.queue_settings (
    queue         text        PRIMARY KEY,
    paused        boolean     NOT NULL DEFAULT false,
    default_lease interval,
    notify        boolean     NOT NULL DEFAULT true,
    updated_at    timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.queue_settings IS
    'jobqueue: per-queue settings (paused, default lease, wake-ups)';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_settings', '');
REVOKE ALL ON @extschema@.queue_settings FROM PUBLIC;

-- queue_push gains a deadline: a new signature, so drop and create.
DROP FUNCTION @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer);
CREATE FUNCTION @extschema@.queue_push(
    name         text,
    payload      jsonb       DEFAULT '{}',
    queue        text        DEFAULT 'default',
    delay        interval    DEFAULT '0',
    priority     integer     DEFAULT 0,
    unique_key   text        DEFAULT NULL,
    max_attempts integer     DEFAULT 3,
    deadline     timestamptz DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jobqueue_push_1_1'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz) IS
    'queue a job; returns its id, or the id of the job already holding unique_key';

-- NULL lease now means the queue's default lease (60 seconds if it has none).
CREATE OR REPLACE FUNCTION @extschema@.queue_reserve(
    queues   text[]   DEFAULT '{default}',
    lease    interval DEFAULT NULL,
    worker   text     DEFAULT '',
    max_jobs integer  DEFAULT 1)
RETURNS SETOF @extschema@.queue_job
AS 'MODULE_PATHNAME', 'jobqueue_reserve_1_1'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER ROWS 1
SET search_path = pg_catalog, pg_temp;

-- Wake-ups on release without delay and on retry.
CREATE OR REPLACE FUNCTION @extschema@.queue_release(
    id    bigint,
    token bigint,
    delay interval DEFAULT NULL,
    error text     DEFAULT '')
RETURNS boolean
AS 'MODULE_PATHNAME', 'jobqueue_release_1_1'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION @extschema@.queue_retry_failed(id bigint DEFAULT NULL, max_attempts integer DEFAULT 3)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jobqueue_retry_failed_1_1'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- Failed rows can be filtered by queue, or fetched one by id.
DROP FUNCTION @extschema@.queue_failed_rows(integer);
CREATE FUNCTION @extschema@.queue_failed_rows(
    max_rows integer DEFAULT 50,
    queue    text    DEFAULT NULL,
    id       bigint  DEFAULT NULL)
RETURNS SETOF @extschema@.queue_failed_jobs
AS 'MODULE_PATHNAME', 'jobqueue_failed_rows_1_1'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_failed_rows(integer, text, bigint) IS
    'failed jobs, newest first; only of queue, or only the job id, when given';

-- Batches.
CREATE FUNCTION @extschema@.queue_push_many(jobs jsonb)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'jobqueue_push_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_push_many(jsonb) IS
    'queue a JSON array of jobs in one call; their ids in input order';

CREATE FUNCTION @extschema@.queue_delete_many(ids bigint[], tokens bigint[])
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'jobqueue_delete_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_delete_many(bigint[], bigint[]) IS
    'complete many claimed jobs, each fenced by its own token; the ids completed';

CREATE FUNCTION @extschema@.queue_release_many(
    ids    bigint[],
    tokens bigint[],
    delay  interval DEFAULT NULL,
    error  text     DEFAULT '')
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'jobqueue_release_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_release_many(bigint[], bigint[], interval, text) IS
    'release many claimed jobs, each fenced by its own token; the ids released';

CREATE FUNCTION @extschema@.queue_fail_many(ids bigint[], tokens bigint[], error text DEFAULT '')
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'jobqueue_fail_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_fail_many(bigint[], bigint[], text) IS
    'fail many claimed jobs, each fenced by its own token; the ids failed';

-- Administration.
CREATE FUNCTION @extschema@.queue_cancel(id bigint, force boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jobqueue_cancel'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_cancel(bigint, boolean) IS
    'delete a job that is not running (any job with force); false if none was deleted';

CREATE FUNCTION @extschema@.queue_clear(queue text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jobqueue_clear'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_clear(text) IS
    'delete every job of a queue; returns how many';

CREATE FUNCTION @extschema@.queue_pause(queue text)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_pause'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_pause(text) IS
    'stop handing out jobs of a queue (its jobs stay)';

CREATE FUNCTION @extschema@.queue_resume(queue text)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_resume'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_resume(text) IS
    'hand out jobs of a paused queue again';

CREATE FUNCTION @extschema@.queue_set_default_lease(queue text, lease interval)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_set_default_lease'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_set_default_lease(text, interval) IS
    'the lease queue_reserve uses for this queue when given none (NULL: 60 seconds)';

CREATE FUNCTION @extschema@.queue_set_notify(queue text, enabled boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_set_notify'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_set_notify(text, boolean) IS
    'turn NOTIFY wake-ups of a queue on or off';

CREATE FUNCTION @extschema@.queue_list(
    OUT queue text, OUT paused boolean, OUT default_lease interval, OUT notify boolean,
    OUT pending bigint, OUT delayed bigint, OUT reserved bigint, OUT total bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jobqueue_list'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_list() IS
    'every queue with jobs or settings: its settings beside its backlog';

REVOKE EXECUTE ON FUNCTION
    @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz),
    @extschema@.queue_failed_rows(integer, text, bigint),
    @extschema@.queue_push_many(jsonb),
    @extschema@.queue_delete_many(bigint[], bigint[]),
    @extschema@.queue_release_many(bigint[], bigint[], interval, text),
    @extschema@.queue_fail_many(bigint[], bigint[], text),
    @extschema@.queue_cancel(bigint, boolean),
    @extschema@.queue_clear(text),
    @extschema@.queue_pause(text),
    @extschema@.queue_resume(text),
    @extschema@.queue_set_default_lease(text, interval),
    @extschema@.queue_set_notify(text, boolean),
    @extschema@.queue_list()
FROM PUBLIC;

/*
 * Roles granted a tier at 1.0 get the 1.1 functions of their tier.  The
 * tier a role holds is read from the 1.0 functions it may execute: the
 * highest of admin (queue_retry_failed), worker (queue_reserve) and
 * producer (queue_stats: queue_push was re-created above).
 */
SELECT @extschema@.queue_grant(r.rolname::pg_catalog.text,
    CASE WHEN pg_catalog.bool_or(p.proname = 'queue_retry_failed') THEN 'admin'
         WHEN pg_catalog.bool_or(p.proname = 'queue_reserve') THEN 'worker'
         ELSE 'producer' END)
FROM pg_catalog.pg_proc p,
     LATERAL pg_catalog.aclexplode(p.proacl) a(grantor, grantee, privilege_type, is_grantable),
     pg_catalog.pg_roles r
WHERE p.pronamespace = '@extschema@'::pg_catalog.regnamespace
  AND p.proname IN ('queue_retry_failed', 'queue_reserve', 'queue_stats')
  AND a.privilege_type = 'EXECUTE'
  AND a.grantee <> p.proowner
  AND r.oid = a.grantee
GROUP BY r.rolname;
