/*
 * jobqueue 1.3 -> 1.4: what dashboards and Prometheus read.
 *
 *   queue_counters()        - per queue, how many jobs were pushed, claimed,
 *                             completed, released, retried (from the failed
 *                             table), failed, and found with an expired lease,
 *                             since the server started (shared memory: needs
 *                             jobqueue in shared_preload_libraries)
 *   queue_counters_reset()  - this database's counters back to zero
 *
 * No table changes.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.4'" to load this file. \quit
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

-- Roles granted a tier before 1.4 get its new functions: producers the
-- counters, admins their reset (a tier is known by one of its functions).
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
