--
-- privileges_1_1: the functions 1.1 adds belong to the tiers of queue_grant
-- (producer: queue_push_many, queue_list; worker: + queue_delete_many,
-- queue_release_many, queue_fail_many; admin: + queue_cancel, queue_clear,
-- queue_pause, queue_resume, queue_set_default_lease, queue_set_notify);
-- nobody but the owner touches queue_settings directly; queue_revoke takes
-- a tier's 1.1 functions with it.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql

\i sql/include/allowed.sql
-- allowed_1_1(role): the functions 1.1 adds or re-creates that a role may
-- execute (queue_push has a new signature; queue_reserve, queue_release and
-- queue_retry_failed were replaced)
CREATE FUNCTION pg_temp.allowed_1_1(role_name text) RETURNS text
LANGUAGE sql AS $fn$
    SELECT pg_temp.allowed(role_name,
                           ARRAY['queue_push', 'queue_push_many', 'queue_list',
                                 'queue_reserve', 'queue_release', 'queue_delete_many',
                                 'queue_release_many', 'queue_fail_many',
                                 'queue_retry_failed', 'queue_cancel', 'queue_clear', 'queue_pause',
                                 'queue_resume', 'queue_set_default_lease', 'queue_set_notify'])
$fn$;

-- every 1.1 call a role might make, for the denial checks
CREATE TEMP TABLE calls_1_1 (n int, tier text, call text);
INSERT INTO calls_1_1 VALUES
    (1,  'producer', $$SELECT queue_push_many('[{"name": "n", "queue": "p11"}]')$$),
    (2,  'producer', $$SELECT * FROM queue_list()$$),
    (3,  'producer', $$SELECT queue_push('n', queue => 'p11', deadline => clock_timestamp() + interval '1 hour')$$),
    (4,  'worker',   $$SELECT * FROM queue_reserve('{p11}', NULL)$$),
    (5,  'worker',   $$SELECT queue_delete_many('{1}', '{1}')$$),
    (6,  'worker',   $$SELECT queue_release_many('{1}', '{1}')$$),
    (7,  'worker',   $$SELECT queue_fail_many('{1}', '{1}')$$),
    (8,  'admin',    $$SELECT queue_cancel(1)$$),
    (9,  'admin',    $$SELECT queue_clear('p11')$$),
    (10, 'admin',    $$SELECT queue_pause('p11')$$),
    (11, 'admin',    $$SELECT queue_resume('p11')$$),
    (12, 'admin',    $$SELECT queue_set_default_lease('p11', '5 minutes')$$),
    (13, 'admin',    $$SELECT queue_set_notify('p11', false)$$),
    (14, 'admin',    $$SELECT queue_retry_failed()$$);
GRANT SELECT ON calls_1_1 TO PUBLIC;

-- what the current role gets from each call of the list
CREATE FUNCTION pg_temp.outcomes() RETURNS TABLE (n int, tier text, call text, outcome text)
LANGUAGE sql AS $fn$
    SELECT c.n, c.tier, c.call, pg_temp.try(c.call) FROM pg_temp.calls_1_1 c ORDER BY c.n
$fn$;

CREATE ROLE regress_jq_11_nobody;
CREATE ROLE regress_jq_11_producer;
CREATE ROLE regress_jq_11_worker;
CREATE ROLE regress_jq_11_admin;

--------------------------------------------------------------------------
-- queue_settings is closed to PUBLIC and to every tier
--------------------------------------------------------------------------

-- no ACL entry of queue_settings names PUBLIC
SELECT count(*) AS public_grants
FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
WHERE c.oid = 'queue_settings'::regclass AND a.grantee = 0;

-- every 1.1 function is closed to PUBLIC
SELECT pg_temp.allowed_1_1('public') AS public_may_execute;

-- a fresh role may execute none of them (42501 on every call)
SELECT pg_temp.allowed_1_1('regress_jq_11_nobody') AS nobody_may_execute;
SET ROLE regress_jq_11_nobody;
SELECT * FROM pg_temp.outcomes();
RESET ROLE;

--------------------------------------------------------------------------
-- the tiers, granted at 1.1
--------------------------------------------------------------------------
SELECT queue_grant('regress_jq_11_producer', 'producer');
SELECT queue_grant('regress_jq_11_worker', 'worker');
SELECT queue_grant('regress_jq_11_admin', 'admin');
SELECT r AS role, pg_temp.allowed_1_1(r) AS may_execute
FROM unnest(ARRAY['regress_jq_11_nobody', 'regress_jq_11_producer',
                  'regress_jq_11_worker', 'regress_jq_11_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- queue_grant also granted USAGE on the extension's schema, explicitly
SELECT r AS role, EXISTS (
           SELECT FROM pg_namespace ns CROSS JOIN LATERAL aclexplode(ns.nspacl) a
           WHERE ns.oid = (SELECT extnamespace FROM pg_extension WHERE extname = 'jobqueue')
             AND a.grantee = r::regrole AND a.privilege_type = 'USAGE') AS schema_usage_granted
FROM unnest(ARRAY['regress_jq_11_nobody', 'regress_jq_11_producer',
                  'regress_jq_11_worker', 'regress_jq_11_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- no tier can read or write queue_settings directly
SELECT r AS role,
       has_table_privilege(r, 'queue_settings',
           'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') AS settings_any
FROM unnest(ARRAY['regress_jq_11_nobody', 'regress_jq_11_producer',
                  'regress_jq_11_worker', 'regress_jq_11_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

--------------------------------------------------------------------------
-- producer: queue_push_many and queue_list, nothing of worker or admin
--------------------------------------------------------------------------
SET ROLE regress_jq_11_producer;
-- real calls: a batch push (also with a deadline) and the queue list
SELECT cardinality(queue_push_many(jsonb_build_array(
    jsonb_build_object('name', 'from-producer-1', 'queue', 'p11'),
    jsonb_build_object('name', 'from-producer-2', 'queue', 'p11',
                       'deadline', clock_timestamp() + interval '1 hour'),
    jsonb_build_object('name', 'from-producer-3', 'queue', 'p11')))) AS pushed;
SELECT queue, paused, default_lease, notify, pending, delayed, reserved, total FROM queue_list();
-- every call, as the producer
SELECT * FROM pg_temp.outcomes();
-- ... and queue_settings directly
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_settings$$,
    $$INSERT INTO queue_settings (queue, paused, updated_at) VALUES ('p11', true, now())$$,
    $$UPDATE queue_settings SET paused = true$$,
    $$DELETE FROM queue_settings$$,
    $$TRUNCATE queue_settings$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
SELECT name, queue, deadline IS NOT NULL AS has_deadline FROM queue_jobs ORDER BY name;

--------------------------------------------------------------------------
-- worker: + queue_delete_many, queue_release_many, queue_fail_many
--------------------------------------------------------------------------
SET ROLE regress_jq_11_worker;
-- real calls: claim three jobs (lease NULL: the default), complete one,
-- release one, fail one, each through its batch call
CREATE TEMP TABLE w_claim AS SELECT * FROM queue_reserve('{p11}', NULL, 'w11', 3);
SELECT count(*) AS claimed FROM w_claim;
SELECT queue_delete_many(array_agg(id), array_agg(token)) = array_agg(id) AS completed_one
FROM w_claim WHERE name = 'from-producer-1';
SELECT queue_release_many(array_agg(id), array_agg(token), '0', 'again') = array_agg(id) AS released_one
FROM w_claim WHERE name = 'from-producer-2';
SELECT queue_fail_many(array_agg(id), array_agg(token), 'broken') = array_agg(id) AS failed_one
FROM w_claim WHERE name = 'from-producer-3';
SELECT queue, pending, delayed, reserved, total FROM queue_list();
-- every call, as the worker
SELECT * FROM pg_temp.outcomes();
-- ... and queue_settings directly
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_settings$$,
    $$INSERT INTO queue_settings (queue, paused, updated_at) VALUES ('p11', true, now())$$,
    $$UPDATE queue_settings SET paused = true$$,
    $$DELETE FROM queue_settings$$,
    $$TRUNCATE queue_settings$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
DROP TABLE w_claim;
SELECT name, last_error FROM queue_jobs ORDER BY name;
SELECT name, error FROM queue_failed_jobs ORDER BY name;

--------------------------------------------------------------------------
-- admin: every 1.1 function
--------------------------------------------------------------------------
SET ROLE regress_jq_11_admin;
-- real calls: pause, set the default lease and notify, list, resume,
-- cancel, clear
SELECT queue_pause('p11');
SELECT count(*) AS claimed_while_paused FROM queue_reserve('{p11}');
SELECT queue_set_default_lease('p11', '5 minutes');
SELECT queue_set_notify('p11', false);
SELECT queue, paused, default_lease, notify, pending, delayed, reserved, total FROM queue_list();
SELECT queue_resume('p11');
SELECT queue_push('to-cancel', queue => 'p11') AS cancel_id \gset
SELECT queue_cancel(:cancel_id) AS cancelled;
SELECT queue_clear('p11') AS cleared;
SELECT queue_retry_failed() AS retried;
SELECT queue, paused, default_lease, notify, pending, delayed, reserved, total FROM queue_list();
-- every call, as the admin
SELECT * FROM pg_temp.outcomes();
-- ... but not queue_settings directly, nor the tier management
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_settings$$,
    $$INSERT INTO queue_settings (queue, paused, updated_at) VALUES ('p11', true, now())$$,
    $$UPDATE queue_settings SET paused = true$$,
    $$DELETE FROM queue_settings$$,
    $$TRUNCATE queue_settings$$,
    $$SELECT queue_grant('regress_jq_11_nobody', 'producer')$$,
    $$SELECT queue_revoke('regress_jq_11_worker', 'worker')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
-- the admin's settings were written, as the owner, into queue_settings
SELECT queue, paused, default_lease, notify FROM queue_settings;

--------------------------------------------------------------------------
-- queue_revoke(role, 'worker') takes the worker's and the admin's 1.1
-- functions and leaves the producer's
--------------------------------------------------------------------------
SELECT queue_revoke('regress_jq_11_admin', 'worker');
SELECT queue_revoke('regress_jq_11_worker', 'worker');
SELECT r AS role, pg_temp.allowed_1_1(r) AS may_execute
FROM unnest(ARRAY['regress_jq_11_producer', 'regress_jq_11_worker',
                  'regress_jq_11_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
-- the former admin: producer calls work, the others are refused
SET ROLE regress_jq_11_admin;
SELECT * FROM pg_temp.outcomes();
RESET ROLE;
-- the former worker: the same
SET ROLE regress_jq_11_worker;
SELECT * FROM pg_temp.outcomes();
RESET ROLE;

--------------------------------------------------------------------------
-- clean up: revoke the tiers and the schema's USAGE, then drop the roles
--------------------------------------------------------------------------
SELECT queue_revoke('regress_jq_11_producer', 'producer');
SELECT queue_revoke('regress_jq_11_worker', 'producer');
SELECT queue_revoke('regress_jq_11_admin', 'producer');
SELECT r AS role, pg_temp.allowed_1_1(r) AS may_execute
FROM unnest(ARRAY['regress_jq_11_producer', 'regress_jq_11_worker',
                  'regress_jq_11_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
REVOKE USAGE ON SCHEMA public FROM regress_jq_11_producer, regress_jq_11_worker,
    regress_jq_11_admin;
SELECT count(*) AS schema_grants_left
FROM pg_namespace ns CROSS JOIN LATERAL aclexplode(ns.nspacl) a
WHERE ns.oid = (SELECT extnamespace FROM pg_extension WHERE extname = 'jobqueue')
  AND a.grantee IN ('regress_jq_11_producer'::regrole, 'regress_jq_11_worker'::regrole,
                    'regress_jq_11_admin'::regrole);
REVOKE SELECT ON calls_1_1 FROM PUBLIC;
DROP ROLE regress_jq_11_nobody, regress_jq_11_producer, regress_jq_11_worker,
    regress_jq_11_admin;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
