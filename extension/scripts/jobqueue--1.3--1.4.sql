/*
 * jobqueue 1.3 -> 1.4: what dashboards and Prometheus read.
 *
 *   queue_counters()        - per queue, how many jobs were pushed, claimed,
 *                             completed, released, retried (from the failed
 *                             table), failed, and found with an expired lease,
 *                             since the server started (shared memory: needs
 *                             jobqueue in shared_preload_libraries)
 *   queue_counters_reset()  - this database's counters back to zero
 *   queue_overview(), queue_jobs_page(), queue_job(), queue_leases()
 *                           - the dashboard's reads: every queue's backlog
 *                             counted up to a cap, a queue's jobs page by
 *                             page, one job, the live leases
 *
 * Tables: queue_failed_jobs gets an index on queue.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.4'" to load this file. \quit

CREATE FUNCTION @extschema@.queue_counters(
    OUT queue text, OUT pushed bigint, OUT claimed bigint, OUT completed bigint,
    OUT released bigint, OUT retried bigint, OUT failed bigint, OUT expired bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jobqueue_counters'
LANGUAGE C VOLATILE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_counters() IS
    'jobs pushed, claimed, completed, released, retried, failed and found with an expired lease per queue, since the server started or the last reset (needs jobqueue preloaded)';

CREATE FUNCTION @extschema@.queue_counters_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_counters_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_counters_reset() IS
    'set every queue''s counters of this database back to zero';

REVOKE EXECUTE ON FUNCTION @extschema@.queue_counters() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.queue_counters_reset() FROM PUBLIC;

/*
 * ---- The dashboard's reads: queue_overview, queue_jobs_page, queue_job,
 * queue_leases (extension/src/browse.c) ----
 *
 * What a dashboard shows, read without counting or sorting a whole queue.
 * queue_overview is monitoring (producer tier, like queue_stats); the
 * others show payloads and workers (admin tier, like queue_failed_rows).
 */

-- The failed table's queues, and each queue's failed rows newest first:
-- queue_overview finds and counts them by queue (and queue_failed_rows'
-- queue filter reads them in its order).
CREATE INDEX queue_failed_jobs_queue_idx
    ON @extschema@.queue_failed_jobs (queue, failed_at DESC, id DESC);

CREATE FUNCTION @extschema@.queue_overview(count_cap integer DEFAULT 10000)
RETURNS TABLE (queue text, paused boolean, pending bigint, delayed bigint, reserved bigint,
               failed bigint, counts_capped boolean, oldest_pending_at timestamptz)
AS 'MODULE_PATHNAME', 'jobqueue_overview'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_overview(integer) IS
    'every queue with jobs, failed rows or settings: each state counted up to count_cap, and when the oldest pending job fell due';

CREATE FUNCTION @extschema@.queue_jobs_page(
    queue    text,
    state    text    DEFAULT NULL,
    after_id bigint  DEFAULT NULL,
    max_rows integer DEFAULT 50)
RETURNS TABLE (id bigint, name text, state text, priority integer, attempts integer,
               max_attempts integer, available_at timestamptz, reserved_by text,
               reserved_until timestamptz, unique_key text, deadline timestamptz,
               created_at timestamptz)
AS 'MODULE_PATHNAME', 'jobqueue_jobs_page'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_jobs_page(text, text, bigint, integer) IS
    'a page of a queue''s jobs (in state, when given) in id order, after after_id';

CREATE FUNCTION @extschema@.queue_job(id bigint)
RETURNS TABLE (id bigint, queue text, name text, state text, payload jsonb, priority integer,
               attempts integer, max_attempts integer, available_at timestamptz,
               reserved_by text, reserved_until timestamptz, unique_key text,
               deadline timestamptz, last_error text, created_at timestamptz,
               failed_at timestamptz)
AS 'MODULE_PATHNAME', 'jobqueue_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_job(bigint) IS
    'one job by id, live (pending, delayed, reserved) or failed; no row for an unknown id';

CREATE FUNCTION @extschema@.queue_leases(max_rows integer DEFAULT 200)
RETURNS TABLE (worker text, queue text, id bigint, name text, attempts integer,
               reserved_until timestamptz)
AS 'MODULE_PATHNAME', 'jobqueue_leases'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_leases(integer) IS
    'the jobs held by a live lease, by worker and lease end';

REVOKE EXECUTE ON FUNCTION
    @extschema@.queue_overview(integer),
    @extschema@.queue_jobs_page(text, text, bigint, integer),
    @extschema@.queue_job(bigint),
    @extschema@.queue_leases(integer)
FROM PUBLIC;

-- Roles granted a tier before 1.4 get its new functions: producers the
-- counters and queue_overview, admins the counters' reset and the other
-- reads of the dashboard (a tier is known by one of its functions).
SELECT @extschema@.queue_grant(r.rolname::pg_catalog.text, t.tier)
FROM (VALUES ('queue_stats', 'producer'), ('queue_retry_failed', 'admin')) t(known_by, tier),
     pg_catalog.pg_proc p,
     LATERAL pg_catalog.aclexplode(p.proacl) a(grantor, grantee, privilege_type, is_grantable),
     pg_catalog.pg_roles r
WHERE p.pronamespace = '@extschema@'::pg_catalog.regnamespace
  AND p.proname = t.known_by
  AND a.privilege_type = 'EXECUTE'
  AND a.grantee <> p.proowner
  AND r.oid = a.grantee
GROUP BY r.rolname, t.tier
ORDER BY t.tier DESC;
