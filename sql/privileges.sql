--
-- privileges: tables and functions closed to PUBLIC; queue_grant /
-- queue_revoke hand out the nested tiers producer < worker < admin; the
-- functions run with the extension owner's rights.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/try.sql

\i sql/include/allowed.sql
\i sql/include/queued.sql
-- allowed(role): the functions of the contract (1.0) a role may execute
CREATE FUNCTION pg_temp.allowed(role_name text) RETURNS text
LANGUAGE sql AS $fn$
    SELECT pg_temp.allowed(role_name,
                           ARRAY['queue_push', 'queue_pending', 'queue_stats', 'queue_failed_count',
                                 'queue_reserve', 'queue_delete', 'queue_release', 'queue_fail',
                                 'queue_extend', 'queue_failed_rows', 'queue_retry_failed',
                                 'queue_forget_failed', 'queue_grant', 'queue_revoke'])
$fn$;

CREATE ROLE regress_jq_nobody;
CREATE ROLE regress_jq_producer;
CREATE ROLE regress_jq_worker;
CREATE ROLE regress_jq_admin;
CREATE ROLE regress_jq_nested;
CREATE ROLE regress_jq_outsider;

--------------------------------------------------------------------------
-- PUBLIC gets nothing
--------------------------------------------------------------------------

-- no function of the extension is executable by PUBLIC
SELECT bool_or(has_function_privilege('public', d.objid, 'EXECUTE')) AS public_executes_any,
       count(*) >= 14 AS at_least_14_functions
FROM pg_depend d
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

-- no table or sequence of the extension grants anything to PUBLIC
SELECT count(*) AS public_grants
FROM pg_depend d
JOIN pg_class c ON c.oid = d.objid
CROSS JOIN LATERAL aclexplode(c.relacl) a
WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue')
  AND a.grantee = 0;

-- a fresh role can neither read nor write the tables
SELECT has_table_privilege('regress_jq_nobody', 'queue_jobs',
           'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') AS jobs_any,
       has_table_privilege('regress_jq_nobody', 'queue_failed_jobs',
           'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER') AS failed_any;
SELECT pg_temp.allowed('regress_jq_nobody') AS nobody_may_execute;

-- ... and every attempt fails with 42501
SELECT pg_temp.queued(queue_push('fixture')) AS pushed;
SET ROLE regress_jq_nobody;
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_jobs$$,
    $$SELECT * FROM queue_failed_jobs$$,
    $$INSERT INTO queue_jobs (queue, name, available_at, created_at) VALUES ('q', 'n', now(), now())$$,
    $$DELETE FROM queue_jobs$$,
    $$SELECT queue_push('n')$$,
    $$SELECT queue_pending()$$,
    $$SELECT * FROM queue_stats()$$,
    $$SELECT queue_failed_count()$$,
    $$SELECT * FROM queue_reserve()$$,
    $$SELECT queue_delete(1, 1)$$,
    $$SELECT queue_release(1, 1)$$,
    $$SELECT queue_fail(1, 1)$$,
    $$SELECT queue_extend(1, 1, '1 minute')$$,
    $$SELECT * FROM queue_failed_rows()$$,
    $$SELECT queue_retry_failed()$$,
    $$SELECT queue_forget_failed(all_rows => true)$$,
    $$SELECT queue_grant('regress_jq_nobody', 'admin')$$,
    $$SELECT queue_revoke('regress_jq_nobody', 'admin')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- the functions run as the extension's owner, with a fixed search_path
--------------------------------------------------------------------------

CREATE TEMP TABLE runs_as_caller AS
    SELECT unnest(ARRAY['queue_current_ring', 'queue_flow_job_removed', 'queue_flow_failed_removed',
                  'queue_flow_jobs_truncated']) AS proname;
-- every function but queue_grant / queue_revoke is SECURITY DEFINER (but
-- for queue_current_ring, the default of queue_jobs.ring, which runs no SQL
-- (it reads the clock) and is called for every inserted row, and the
-- flow-control trigger functions (1.5), which fire inside the other
-- functions for every deleted row: they run as their caller); from 1.6 no
-- function has a SET search_path of its own (up to 1.5 each pinned it to
-- pg_catalog, pg_temp): the library parses and runs every statement under
-- pg_catalog alone (exec/searchpath.c; tests/search_path proves it)
SELECT bool_and(p.prosecdef) FILTER (WHERE p.proname NOT IN ('queue_grant', 'queue_revoke')
                                       AND p.proname NOT IN (SELECT * FROM pg_temp.runs_as_caller)) AS definer,
       bool_and(p.proconfig IS NULL) AS no_setting_of_their_own
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

-- the caller's search_path is the caller's again after each call, in the
-- same transaction, and an error inside a call leaves nothing behind
-- either (no "leaked override search path" warning at COMMIT)
CREATE SCHEMA regress_jq_callers;
CREATE TABLE regress_jq_callers.mine (x int);
-- a statement of the extension's that fails: a trigger of the user's refuses a push
CREATE FUNCTION regress_jq_callers.refuse() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN IF NEW.name = 'boom' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END$$;
CREATE TRIGGER regress_jq_refuse BEFORE INSERT ON queue_jobs_long
    FOR EACH ROW EXECUTE FUNCTION regress_jq_callers.refuse();
BEGIN;
SET LOCAL search_path = regress_jq_callers, public;
SELECT queue_push('path', queue => 'path_q') IS NOT NULL AS pushed;
SELECT queue_delete(id, token) AS deleted FROM queue_reserve('{path_q}');
SELECT pg_temp.try($$SELECT queue_push('boom', unique_key => 'boom')$$) AS failed_in_a_statement;
SAVEPOINT s;
SELECT queue_push('boom', unique_key => 'boom');
ROLLBACK TO s;
SELECT current_schemas(false) AS callers_path, count(*) AS callers_table_found FROM mine;
COMMIT;
DROP TRIGGER regress_jq_refuse ON queue_jobs_long;
DROP SCHEMA regress_jq_callers CASCADE;

--------------------------------------------------------------------------
-- producer: push, pending, stats, failed count
--------------------------------------------------------------------------
SELECT queue_grant('regress_jq_producer', 'producer');
SELECT pg_temp.allowed('regress_jq_producer') AS producer_may_execute;

SET ROLE regress_jq_producer;
-- a producer pushes and looks at the backlog (real calls)
SELECT pg_temp.queued(queue_push('from-producer', '{"by": "producer"}', queue => 'priv')) AS pushed;
SELECT queue_pending('priv') AS pending;
SELECT * FROM queue_stats();
SELECT queue_failed_count() AS failed_count;
-- ... but cannot claim, finish, manage failed jobs, grant, or touch the tables
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_reserve('{priv}')$$,
    $$SELECT queue_delete(1, 1)$$,
    $$SELECT queue_release(1, 1)$$,
    $$SELECT queue_fail(1, 1)$$,
    $$SELECT queue_extend(1, 1, '1 minute')$$,
    $$SELECT * FROM queue_failed_rows()$$,
    $$SELECT queue_retry_failed()$$,
    $$SELECT queue_forget_failed(all_rows => true)$$,
    $$SELECT queue_grant('regress_jq_producer', 'worker')$$,
    $$SELECT * FROM queue_jobs$$,
    $$UPDATE queue_jobs SET priority = 9$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
-- the producer's job was written, as the owner, into queue_jobs
SELECT name, payload, queue FROM queue_jobs;

--------------------------------------------------------------------------
-- worker: the producer's functions plus reserve, delete, release, fail, extend
--------------------------------------------------------------------------
SELECT queue_grant('regress_jq_worker', 'worker');
SELECT pg_temp.allowed('regress_jq_worker') AS worker_may_execute;

SET ROLE regress_jq_worker;
-- a worker claims, completes, releases, extends and fails jobs although it
-- has no right on the tables (the functions run as the owner)
CREATE TEMP TABLE w_claim AS SELECT * FROM queue_reserve('{priv}', worker => 'w1');
SELECT count(*) AS claimed, bool_and(name = 'from-producer') AS producers_job FROM w_claim;
SELECT queue_extend(id, token, '2 minutes') AS extended FROM w_claim;
SELECT queue_release(id, token, '0', 'try again') AS released FROM w_claim;
TRUNCATE w_claim;
INSERT INTO w_claim SELECT * FROM queue_reserve('{priv}');
SELECT count(*) AS claimed, bool_and(attempts = 2) AS attempt_2,
       bool_and(last_error = 'try again') AS saw_error FROM w_claim;
SELECT queue_delete(id, token) AS deleted FROM w_claim;
SELECT pg_temp.queued(queue_push('to-fail', queue => 'priv')) AS pushed;
TRUNCATE w_claim;
INSERT INTO w_claim SELECT * FROM queue_reserve('{priv}');
SELECT queue_fail(id, token, 'boom') AS failed FROM w_claim;
SELECT queue_pending('priv') AS pending, queue_failed_count() AS failed_count;
-- ... but cannot manage failed jobs, grant, or touch the tables
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_failed_rows()$$,
    $$SELECT queue_retry_failed()$$,
    $$SELECT queue_forget_failed(all_rows => true)$$,
    $$SELECT queue_grant('regress_jq_worker', 'admin')$$,
    $$SELECT queue_revoke('regress_jq_producer', 'producer')$$,
    $$SELECT * FROM queue_jobs$$,
    $$SELECT * FROM queue_failed_jobs$$,
    $$DELETE FROM queue_failed_jobs$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
DROP TABLE w_claim;
-- the worker's failure is in the failed table
SELECT name, error FROM queue_failed_jobs;

--------------------------------------------------------------------------
-- admin: everything except queue_grant / queue_revoke
--------------------------------------------------------------------------
SELECT queue_grant('regress_jq_admin', 'admin');
SELECT pg_temp.allowed('regress_jq_admin') AS admin_may_execute;

SET ROLE regress_jq_admin;
-- an admin lists, retries and forgets failed jobs (real calls)
SELECT name, error FROM queue_failed_rows();
SELECT queue_retry_failed() AS retried;
CREATE TEMP TABLE a_claim AS SELECT * FROM queue_reserve('{priv}');
SELECT count(*) AS claimed, bool_and(name = 'to-fail') AS retried_job FROM a_claim;
SELECT queue_fail(id, token, 'boom again') AS failed FROM a_claim;
SELECT queue_forget_failed(all_rows => true) AS forgotten;
SELECT queue_failed_count() AS failed_count;
-- ... and all the other functions, but not the tier management
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', queue => 'priv')$$,
    $$SELECT queue_pending()$$,
    $$SELECT * FROM queue_stats()$$,
    $$SELECT * FROM queue_reserve('{priv}')$$,
    $$SELECT queue_delete(1, 1)$$,
    $$SELECT queue_release(1, 1)$$,
    $$SELECT queue_fail(1, 1)$$,
    $$SELECT queue_extend(1, 1, '1 minute')$$,
    $$SELECT queue_forget_failed(id => 1)$$,
    $$SELECT queue_grant('regress_jq_nobody', 'producer')$$,
    $$SELECT queue_revoke('regress_jq_worker', 'worker')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
DROP TABLE a_claim;

-- the failed attempts changed nobody's rights
SELECT pg_temp.allowed('regress_jq_nobody') AS nobody_may_execute;
SELECT pg_temp.allowed('regress_jq_worker') AS worker_may_execute;

--------------------------------------------------------------------------
-- tiers nest; queue_revoke takes the tier and those above it
--------------------------------------------------------------------------

-- granting admin alone gives the worker's and the producer's functions too
SELECT queue_grant('regress_jq_nested', 'admin');
SELECT pg_temp.allowed('regress_jq_nested') AS nested_may_execute;
-- granting a lower tier to an admin takes nothing away
SELECT queue_grant('regress_jq_nested', 'producer');
SELECT pg_temp.allowed('regress_jq_nested') AS nested_may_execute;
-- granting twice is harmless
SELECT queue_grant('regress_jq_nested', 'admin');
SELECT pg_temp.allowed('regress_jq_nested') = pg_temp.allowed('regress_jq_admin') AS same_as_admin;
-- revoking admin leaves worker
SELECT queue_revoke('regress_jq_nested', 'admin');
SELECT pg_temp.allowed('regress_jq_nested') = pg_temp.allowed('regress_jq_worker') AS same_as_worker;
-- revoking worker (from an admin) leaves producer
SELECT queue_grant('regress_jq_nested', 'admin');
SELECT queue_revoke('regress_jq_nested', 'worker');
SELECT pg_temp.allowed('regress_jq_nested') AS nested_may_execute;
SET ROLE regress_jq_nested;
-- (nothing is queued: every job above was completed, or failed and forgotten)
SELECT queue_pending() AS producer_call_pending;
SELECT pg_temp.try($$SELECT * FROM queue_reserve()$$) AS reserve_after_revoke;
RESET ROLE;
-- revoking producer removes everything
SELECT queue_grant('regress_jq_nested', 'admin');
SELECT queue_revoke('regress_jq_nested', 'producer');
SELECT pg_temp.allowed('regress_jq_nested') AS nested_may_execute;
SET ROLE regress_jq_nested;
SELECT pg_temp.try($$SELECT queue_pending()$$) AS pending_after_revoke;
RESET ROLE;
-- revoking a tier the role does not hold is harmless
SELECT queue_revoke('regress_jq_nested', 'admin');
SELECT pg_temp.allowed('regress_jq_nested') AS nested_may_execute;

--------------------------------------------------------------------------
-- only the extension's owner or a superuser manages tiers
--------------------------------------------------------------------------

-- a non-owner, non-superuser has no EXECUTE on queue_grant / queue_revoke
SET ROLE regress_jq_outsider;
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_grant('regress_jq_outsider', 'admin')$$,
    $$SELECT queue_revoke('regress_jq_worker', 'producer')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
-- even given EXECUTE on them directly, the owner check refuses (42501)
GRANT EXECUTE ON FUNCTION queue_grant(text, text), queue_revoke(text, text) TO regress_jq_outsider;
SET ROLE regress_jq_outsider;
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_grant('regress_jq_outsider', 'admin')$$,
    $$SELECT queue_grant('regress_jq_nobody', 'producer')$$,
    $$SELECT queue_revoke('regress_jq_worker', 'producer')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION queue_grant(text, text), queue_revoke(text, text) FROM regress_jq_outsider;
SELECT pg_temp.allowed('regress_jq_outsider') AS outsider_may_execute;
SELECT pg_temp.allowed('regress_jq_nobody') AS nobody_may_execute;
SELECT pg_temp.allowed('regress_jq_worker') AS worker_may_execute;

-- a non-superuser cannot raise jobqueue.max_payload_bytes (42501)
SET ROLE regress_jq_admin;
SELECT pg_temp.try($$SET jobqueue.max_payload_bytes = '2MB'$$) AS raise_limit;
RESET ROLE;

--------------------------------------------------------------------------
-- clean up: revoke the tiers, then drop the roles
--------------------------------------------------------------------------
SELECT queue_revoke('regress_jq_producer', 'producer');
SELECT queue_revoke('regress_jq_worker', 'producer');
SELECT queue_revoke('regress_jq_admin', 'producer');
REVOKE ALL ON SCHEMA public FROM regress_jq_producer, regress_jq_worker,
    regress_jq_admin, regress_jq_nested;
DROP ROLE regress_jq_nobody, regress_jq_producer, regress_jq_worker,
    regress_jq_admin, regress_jq_nested, regress_jq_outsider;
TRUNCATE queue_jobs, queue_failed_jobs;
