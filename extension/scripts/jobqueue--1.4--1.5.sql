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

/*
 * A shard's number, once queue_shard_setup has made the database one shard
 * of several (no row: shard 0).  Dumped, unlike the id sequence's bounds.
 */
CREATE TABLE @extschema@.queue_shard_config (
    singleton boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    shard     integer     NOT NULL CHECK (shard BETWEEN 0 AND 32767),
    set_at    timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.queue_shard_config IS
    'jobqueue: this database''s shard number (queue_shard_setup); no row: shard 0';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_shard_config', '');
REVOKE ALL ON @extschema@.queue_shard_config FROM PUBLIC;

CREATE FUNCTION @extschema@.queue_shard_setup(shard integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jobqueue_shard_setup'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_shard_setup(integer) IS
    'jobqueue: make this database shard number shard (0-32767): job ids from shard << 48; refused while ids outside that range exist; returns the next id';
REVOKE EXECUTE ON FUNCTION @extschema@.queue_shard_setup(integer) FROM PUBLIC;

CREATE FUNCTION @extschema@.queue_shard()
RETURNS integer
AS 'MODULE_PATHNAME', 'jobqueue_shard'
LANGUAGE C STABLE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_shard() IS
    'jobqueue: this database''s shard number (0 unless queue_shard_setup set another)';
REVOKE EXECUTE ON FUNCTION @extschema@.queue_shard() FROM PUBLIC;

CREATE FUNCTION @extschema@.queue_job_shard(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'jobqueue_job_shard'
LANGUAGE C IMMUTABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_job_shard(bigint) IS
    'jobqueue: the shard number a job id names (id >> 48)';
REVOKE EXECUTE ON FUNCTION @extschema@.queue_job_shard(bigint) FROM PUBLIC;


-- ------------------------------------------------------------ the overview


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
