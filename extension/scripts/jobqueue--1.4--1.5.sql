/*
 * jobqueue 1.4 -> 1.5: flow control, several servers, a cheaper overview.
 *
 * Each part has its own section below; the re-grant of the tiers' new
 * functions to roles granted a tier before 1.5 comes last, once.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.5'" to load this file. \quit

-- ------------------------------------------------------------ flow control
-- (concurrency keys, rate limits, unique-key modes, dependencies)
/*
 * extension/src/flow.c says how jobs are held back and let go.  A job
 * held back (flow 'key': waiting for a slot of its concurrency key;
 * 'parents': waiting for the jobs it was pushed after) is not ready and
 * due at 'infinity', so neither the claim index nor the due search ever
 * reaches it, however many there are; its own run-at waits in parked_run_at.
 * A job with a concurrency key that may run holds a slot of its key
 * (flow 'slot') until it leaves queue_jobs.
 */
ALTER TABLE @extschema@.queue_jobs
    ADD COLUMN concurrency_key text,
    ADD COLUMN flow            text,
    ADD COLUMN parked_run_at   timestamptz,
    ADD COLUMN waiting_parents integer NOT NULL DEFAULT 0,
    ADD COLUMN has_children    boolean NOT NULL DEFAULT false;
-- No CHECK on flow: only the extension's statements write it, and a CHECK
-- is prepared again by every INSERT and UPDATE (every push and claim).
COMMENT ON COLUMN @extschema@.queue_jobs.flow IS
    'flow control: NULL (free), slot (holds a slot of its concurrency key), key (waits for one), parents (waits for its parents)';

-- A retried job keeps its concurrency key.
ALTER TABLE @extschema@.queue_failed_jobs ADD COLUMN concurrency_key text;

-- The jobs waiting for a slot of a key, in the order they get one.
CREATE INDEX queue_jobs_key_waiting_idx
    ON @extschema@.queue_jobs (queue, concurrency_key, priority DESC, parked_run_at, id)
    WHERE flow = 'key';

-- The jobs waiting for their parents, counted per queue by queue_blocked.
CREATE INDEX queue_jobs_parents_waiting_idx
    ON @extschema@.queue_jobs (queue)
    WHERE flow = 'parents';

-- How many jobs of each key in use hold a slot (its row locks the key).
CREATE TABLE @extschema@.queue_key_slots (
    queue           text    NOT NULL,
    concurrency_key text    NOT NULL,
    running         integer NOT NULL CHECK (running >= 0),
    PRIMARY KEY (queue, concurrency_key)
);
COMMENT ON TABLE @extschema@.queue_key_slots IS
    'jobqueue: the slots taken per concurrency key (jobs with flow = ''slot'')';

-- Limits per key prefix within a queue (longest prefix wins; none: 1).
CREATE TABLE @extschema@.queue_key_limits (
    queue       text    NOT NULL,
    key_prefix  text    NOT NULL,
    max_running integer NOT NULL CHECK (max_running >= 1),
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (queue, key_prefix)
);
COMMENT ON TABLE @extschema@.queue_key_limits IS
    'jobqueue: how many jobs of one concurrency key may run at once, per key prefix and queue';

-- A child and each parent it waits for (kept while the child waits or sits
-- in the failed table because of that parent).
CREATE TABLE @extschema@.queue_job_parents (
    parent     bigint  NOT NULL,
    child      bigint  NOT NULL,
    run_anyway boolean NOT NULL,
    PRIMARY KEY (parent, child)
);
CREATE INDEX queue_job_parents_child_idx ON @extschema@.queue_job_parents (child);
COMMENT ON TABLE @extschema@.queue_job_parents IS
    'jobqueue: dependencies: the child runs when every parent has completed';

-- Rate limits: at most rate_max claims per rate_per; rate_tat is the
-- limit's "theoretical arrival time" (GCRA: extension/src/ratelimit.c).
ALTER TABLE @extschema@.queue_settings
    ADD COLUMN rate_max integer CHECK (rate_max >= 1),
    ADD COLUMN rate_per interval,
    ADD COLUMN rate_tat timestamptz;

SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_key_slots', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_key_limits', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.queue_job_parents', '');
REVOKE ALL ON @extschema@.queue_key_slots, @extschema@.queue_key_limits,
              @extschema@.queue_job_parents FROM PUBLIC;

/*
 * The triggers that let jobs go when a job leaves queue_jobs, whichever
 * statement removes it (a completion, a failure, an expiry, a cancel, a
 * retry of a failed parent); flow.c says why triggers, and why these two.
 * Their functions fire inside the extension's functions, which run as its
 * owner with a pinned search_path, and name every object with its schema:
 * no SECURITY DEFINER or search_path of their own, whose per-call setting
 * would cost every completion more than the function does.
 */
CREATE FUNCTION @extschema@.queue_flow_job_removed()
RETURNS trigger AS 'MODULE_PATHNAME', 'jobqueue_flow_job_removed' LANGUAGE C;
CREATE FUNCTION @extschema@.queue_flow_failed_removed()
RETURNS trigger AS 'MODULE_PATHNAME', 'jobqueue_flow_failed_removed' LANGUAGE C;
CREATE FUNCTION @extschema@.queue_flow_jobs_truncated()
RETURNS trigger AS 'MODULE_PATHNAME', 'jobqueue_flow_jobs_truncated' LANGUAGE C;
REVOKE EXECUTE ON FUNCTION @extschema@.queue_flow_job_removed(),
    @extschema@.queue_flow_failed_removed(), @extschema@.queue_flow_jobs_truncated() FROM PUBLIC;

-- No WHEN clause: a trigger's WHEN is prepared again by every statement,
-- which costs a completion more than a call that returns at once.
CREATE TRIGGER queue_flow_job_removed AFTER DELETE ON @extschema@.queue_jobs
    FOR EACH ROW EXECUTE FUNCTION @extschema@.queue_flow_job_removed();
-- TRUNCATE fires no row trigger: the slots and the dependencies of the
-- jobs it removed go with them.  (A rotation truncates a partition, whose
-- jobs it moved first: no trigger of the parent fires.)
CREATE TRIGGER queue_flow_jobs_truncated AFTER TRUNCATE ON @extschema@.queue_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.queue_flow_jobs_truncated();
CREATE TRIGGER queue_flow_failed_truncated AFTER TRUNCATE ON @extschema@.queue_failed_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.queue_flow_jobs_truncated();
CREATE TRIGGER queue_flow_failed_removed AFTER DELETE ON @extschema@.queue_failed_jobs
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.queue_flow_failed_removed();

-- queue_push gains flow control: a new signature, so drop and create.
DROP FUNCTION @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz);
CREATE FUNCTION @extschema@.queue_push(
    name            text,
    payload         jsonb       DEFAULT '{}',
    queue           text        DEFAULT 'default',
    delay           interval    DEFAULT '0',
    priority        integer     DEFAULT 0,
    unique_key      text        DEFAULT NULL,
    max_attempts    integer     DEFAULT 3,
    deadline        timestamptz DEFAULT NULL,
    concurrency_key text        DEFAULT NULL,
    on_duplicate    text        DEFAULT 'keep',
    after           bigint[]    DEFAULT NULL,
    after_failed    text        DEFAULT 'fail')
RETURNS bigint
AS 'MODULE_PATHNAME', 'jobqueue_push_1_5'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz, text, text, bigint[], text) IS
    'enqueue a job; returns its id (for a held unique key, the holder''s id)';

CREATE OR REPLACE FUNCTION @extschema@.queue_push_many(jobs jsonb)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'jobqueue_push_many_1_5'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- The claim honours rate limits; every other argument as in 1.2.
CREATE OR REPLACE FUNCTION @extschema@.queue_reserve(
    queues   text[]   DEFAULT '{default}',
    lease    interval DEFAULT NULL,
    worker   text     DEFAULT '',
    max_jobs integer  DEFAULT 1,
    wait     interval DEFAULT '0')
RETURNS SETOF @extschema@.queue_job
AS 'MODULE_PATHNAME', 'jobqueue_reserve_1_5'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER ROWS 1
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION @extschema@.queue_concurrency_set(queue text, key_prefix text, max_running integer)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_concurrency_set'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_concurrency_set(text, text, integer) IS
    'let at most max_running jobs of one concurrency key starting with key_prefix run at once in queue';

CREATE FUNCTION @extschema@.queue_concurrency_remove(queue text, key_prefix text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jobqueue_concurrency_remove'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_concurrency_remove(text, text) IS
    'forget a concurrency limit (keys it covered fall back to a shorter prefix, or 1)';

CREATE FUNCTION @extschema@.queue_concurrency_list()
RETURNS TABLE (queue text, key_prefix text, max_running integer)
AS 'MODULE_PATHNAME', 'jobqueue_concurrency_list'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_concurrency_list() IS 'the concurrency limits set';

CREATE FUNCTION @extschema@.queue_concurrency_keys(queue text DEFAULT NULL)
RETURNS TABLE (queue text, concurrency_key text, max_running integer, running integer,
               waiting bigint)
AS 'MODULE_PATHNAME', 'jobqueue_concurrency_keys'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_concurrency_keys(text) IS
    'the concurrency keys in use: their limit, the jobs holding a slot, the jobs waiting for one';

CREATE FUNCTION @extschema@.queue_rate_limit_set(queue text, max_claims integer, per interval)
RETURNS void
AS 'MODULE_PATHNAME', 'jobqueue_rate_limit_set'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_set(text, integer, interval) IS
    'let claims take at most max_claims jobs of queue per period, across all sessions';

CREATE FUNCTION @extschema@.queue_rate_limit_remove(queue text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jobqueue_rate_limit_remove'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_remove(text) IS 'lift a queue''s rate limit';

CREATE FUNCTION @extschema@.queue_rate_limits()
RETURNS TABLE (queue text, max_claims integer, per interval, next_slot timestamptz)
AS 'MODULE_PATHNAME', 'jobqueue_rate_limits'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_rate_limits() IS
    'the rate limits set, and when each queue''s next claim slot opens (NULL: now)';

CREATE FUNCTION @extschema@.queue_rate_limit_next(queue text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jobqueue_rate_limit_next'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_rate_limit_next(text) IS
    'when the queue''s next claim slot opens; NULL when a claim may take a job now';

CREATE FUNCTION @extschema@.queue_blocked(queue text DEFAULT NULL)
RETURNS TABLE (queue text, waiting_for_key bigint, waiting_for_parents bigint)
AS 'MODULE_PATHNAME', 'jobqueue_blocked'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.queue_blocked(text) IS
    'per queue, the jobs held back: waiting for a slot of their concurrency key, waiting for parents';

REVOKE EXECUTE ON FUNCTION
    @extschema@.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz, text, text, bigint[], text),
    @extschema@.queue_concurrency_set(text, text, integer),
    @extschema@.queue_concurrency_remove(text, text),
    @extschema@.queue_concurrency_list(),
    @extschema@.queue_concurrency_keys(text),
    @extschema@.queue_rate_limit_set(text, integer, interval),
    @extschema@.queue_rate_limit_remove(text),
    @extschema@.queue_rate_limits(),
    @extschema@.queue_rate_limit_next(text),
    @extschema@.queue_blocked(text)
FROM PUBLIC;


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
