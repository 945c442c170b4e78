--
-- upgrade_1_6: the way to 1.6 with a live backlog.  CREATE EXTENSION
-- jobqueue VERSION '1.5' (every function has SET search_path), grant the
-- tiers, fill the queue (pending, delayed, unique-key, held, key-holding
-- and key-waiting, parent and child, failed jobs; a paused queue), ALTER
-- EXTENSION UPDATE TO '1.6'.  Then: no function has a setting of its own,
-- and they are still SECURITY DEFINER; the jobs and failed rows are
-- unchanged; roles granted a tier at 1.5 still call their tier's functions;
-- the held job completes with its 1.5 token, the key's waiter and the
-- child run after their holder and parent.  Leaves the extension created
-- at the default version.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.5';
SELECT count(*) FILTER (WHERE p.proconfig IS NOT NULL) > 0 AS functions_with_settings_at_1_5
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

CREATE ROLE regress_jq_u16_worker;
SELECT queue_grant('regress_jq_u16_worker', 'worker');

SELECT queue_push('u16_p', '{"n": 1}', 'u16_q') AS p_id \gset
SELECT queue_push('u16_d', '{}', 'u16_q', '2 hours') AS d_id \gset
SELECT queue_push('u16_k', '{}', 'u16_q', unique_key => 'u16:k') AS k_id \gset
SELECT queue_push('u16_h', '{}', 'u16_h') AS h_id \gset
SET ROLE regress_jq_u16_worker;
SELECT id = :h_id AS claimed_h, token AS h_tok FROM queue_reserve('{u16_h}', '1 hour', 'worker-1.5') \gset
RESET ROLE;
SELECT :'claimed_h' AS claimed_h;
SELECT queue_push('u16_holder', '{}', 'u16_key', concurrency_key => 'k') AS holder_id \gset
SELECT queue_push('u16_waiter', '{}', 'u16_key', concurrency_key => 'k') AS waiter_id \gset
SELECT queue_push('u16_parent', '{}', 'u16_dep') AS parent_id \gset
SELECT queue_push('u16_child', '{}', 'u16_dep', after => ARRAY[:parent_id]::bigint[]) AS child_id \gset
SELECT queue_push('u16_f', '{}', 'u16_f') AS f_id \gset
SELECT queue_fail(id, token, 'fatal at 1.5') AS failed FROM queue_reserve('{u16_f}');
SELECT queue_push('u16_z', '{}', 'u16_paused') AS z_id \gset
SELECT queue_pause('u16_paused');

CREATE TEMP TABLE u16_jobs_before AS SELECT * FROM queue_jobs;
CREATE TEMP TABLE u16_failed_before AS SELECT * FROM queue_failed_jobs;

ALTER EXTENSION jobqueue UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- no function has a setting of its own; the same ones are SECURITY DEFINER
SELECT count(*) FILTER (WHERE p.proconfig IS NOT NULL) AS functions_with_settings,
       count(*) FILTER (WHERE p.prosecdef) AS security_definer
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

-- nothing queued or failed changed
SELECT (SELECT count(*) FROM (TABLE queue_jobs EXCEPT TABLE u16_jobs_before) x) AS jobs_changed,
       (SELECT count(*) FROM (TABLE u16_jobs_before EXCEPT TABLE queue_jobs) x) AS jobs_gone,
       (SELECT count(*) FROM (TABLE queue_failed_jobs EXCEPT TABLE u16_failed_before) x) AS failed_changed;

-- the worker granted at 1.5 completes its held job with its 1.5 token
SET ROLE regress_jq_u16_worker;
SELECT queue_delete(:h_id, :h_tok) AS held_completed;
SELECT name FROM queue_reserve('{u16_q}', max_jobs => 10) ORDER BY name;
RESET ROLE;
-- the key's waiter runs after its holder, the child after its parent
SELECT queue_delete(id, token) AS holder_done FROM queue_reserve('{u16_key}');
SELECT name FROM queue_reserve('{u16_key}');
SELECT queue_delete(id, token) AS parent_done FROM queue_reserve('{u16_dep}');
SELECT name FROM queue_reserve('{u16_dep}');
SELECT count(*) AS from_paused FROM queue_reserve('{u16_paused}');
SELECT queue_push('u16_k again', '{}', 'u16_q', unique_key => 'u16:k') = :k_id AS key_still_held;
SELECT name FROM queue_failed_rows();

--------------------------------------------------------------------------
-- clean up; leave the extension at the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
REVOKE USAGE ON SCHEMA public FROM regress_jq_u16_worker;
DROP ROLE regress_jq_u16_worker;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
