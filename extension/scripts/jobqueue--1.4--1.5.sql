/*
 * jobqueue 1.4 -> 1.5: flow control, several servers, a cheaper overview.
 *
 * Each part has its own section below; the re-grant of the tiers' new
 * functions to roles granted a tier before 1.5 comes last, once.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.5'" to load this file. \quit

-- ------------------------------------------------------------ flow control
-- (concurrency keys, rate limits, unique-key modes, dependencies)


-- ----------------------------------------------------------- several servers
-- (the shard's id scheme, for the router extension jobqueue_router)


-- ------------------------------------------------------------ the overview
-- queue_overview counts each state exactly up to a smaller cap (1,000) and
-- estimates the counts past it from the planner's statistics, in new
-- columns (NULL: the count is exact), so that its cost no longer follows
-- the backlog.  Its result changes: dropped and created again (the grant
-- of its tiers follows, below).
DROP FUNCTION @extschema@.queue_overview(integer);
CREATE FUNCTION @extschema@.queue_overview(count_cap integer DEFAULT 1000)
RETURNS TABLE (queue text, paused boolean, pending bigint, delayed bigint, reserved bigint,
               failed bigint, counts_capped boolean, oldest_pending_at timestamptz,
               pending_estimate bigint, delayed_estimate bigint, reserved_estimate bigint,
               failed_estimate bigint)
AS 'MODULE_PATHNAME', 'jobqueue_overview_1_5'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_overview(integer) IS
    'every queue with jobs, failed rows or settings: each state counted exactly up to count_cap and estimated past it, and when the oldest pending job fell due';
REVOKE EXECUTE ON FUNCTION @extschema@.queue_overview(integer) FROM PUBLIC;


-- ------------------------------------------------------------ tiers
-- Roles granted a tier before 1.5 get its new functions (a tier is known by
-- one of its functions).
SELECT @extschema@.queue_grant(r.rolname::pg_catalog.text, t.tier)
FROM (VALUES ('queue_stats', 'producer'), ('queue_reserve', 'worker'),
             ('queue_retry_failed', 'admin')) t(known_by, tier),
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
