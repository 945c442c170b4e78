--
-- upgrade_1_2: the way to 1.2 (recurring schedules).  CREATE EXTENSION
-- jobqueue VERSION '1.0', grant the tiers, push and claim; ALTER EXTENSION
-- UPDATE TO '1.1' and use the 1.1 API; UPDATE TO '1.2': the schedule
-- objects exist, schedules work, and roles granted a tier before have the
-- 1.2 functions of their tier (a worker may call queue_tick).  Then the
-- other ways in: CREATE ... VERSION '1.1' + UPDATE, and 1.0 + one UPDATE
-- straight to 1.2.
-- This file manages the extension itself, and leaves it created at the
-- default version at the end.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

\i sql/include/try.sql

\i sql/include/clock.sql

\i sql/include/allowed.sql
-- the functions 1.2 adds; a few of 1.0 and 1.1, one per tier
\set fn_1_2 '{queue_cron_next,queue_tick,queue_schedule_set,queue_schedule_list,queue_schedule_remove}'
\set fn_tiers '{queue_push,queue_push_many,queue_reserve,queue_delete_many,queue_retry_failed,queue_pause}'

--------------------------------------------------------------------------
-- version 1.0
--------------------------------------------------------------------------

-- the test driver installed the default version, 1.2; go back to 1.0
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- nothing of 1.1 or 1.2 exists at 1.0
SELECT to_regclass('queue_settings') IS NULL AS no_queue_settings,
       to_regclass('queue_schedules') IS NULL AS no_queue_schedules,
       (SELECT count(*) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = ANY (:'fn_1_2')) AS functions_1_2;

-- roles granted the three tiers at 1.0 (and one granted nothing)
CREATE ROLE regress_jq_u12_producer;
CREATE ROLE regress_jq_u12_worker;
CREATE ROLE regress_jq_u12_admin;
CREATE ROLE regress_jq_u12_none;
SELECT queue_grant('regress_jq_u12_producer', 'producer');
SELECT queue_grant('regress_jq_u12_worker', 'worker');
SELECT queue_grant('regress_jq_u12_admin', 'admin');

-- pushes and a claim at 1.0 (the worker role claims)
SELECT queue_push('u12_a', '{"n": 1}', 'u12_q', priority => 2) AS a_id \gset
SELECT queue_push('u12_b', '{"n": 2}', 'u12_q', priority => 1) AS b_id \gset
SET ROLE regress_jq_u12_worker;
SELECT id = :a_id AS claimed_a, attempts, id AS a_id, token AS a_tok
FROM queue_reserve('{u12_q}', '5 minutes', 'worker-1.0') \gset
RESET ROLE;
SELECT :'claimed_a' AS claimed_a, :'attempts' AS attempts;
SELECT queue, pending, delayed, reserved, total FROM queue_stats();

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE TO '1.1'
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- 1.1 objects, none of 1.2
SELECT to_regclass('queue_settings') IS NOT NULL AS has_queue_settings,
       to_regclass('queue_schedules') IS NULL AS no_queue_schedules,
       (SELECT count(*) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = ANY (:'fn_1_2')) AS functions_1_2;

-- the 1.1 API: the worker completes the job claimed at 1.0 with the batch
-- call and its 1.0 token; a batch push; queue_list
SET ROLE regress_jq_u12_worker;
SELECT queue_delete_many(ARRAY[:a_id], ARRAY[:a_tok]) = ARRAY[:a_id]::bigint[] AS completed_a;
RESET ROLE;
SELECT cardinality(queue_push_many('[{"name": "u12_c", "queue": "u12_q"},
                                     {"name": "u12_d", "queue": "u12_q", "priority": 3}]')) AS pushed;
SELECT queue, paused, pending, delayed, reserved, total FROM queue_list();

-- the tiers at 1.1
SELECT r AS role, pg_temp.allowed(r, :'fn_tiers') AS may_execute
FROM unnest(ARRAY['regress_jq_u12_producer', 'regress_jq_u12_worker', 'regress_jq_u12_admin',
                  'regress_jq_u12_none']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE TO '1.2'
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- the table queue_schedules (its columns, empty), marked for pg_dump,
-- closed to PUBLIC; the five new functions
SELECT string_agg(attname, ',' ORDER BY attnum) AS queue_schedules_columns
FROM pg_attribute WHERE attrelid = 'queue_schedules'::regclass AND attnum > 0 AND NOT attisdropped;
SELECT 'queue_schedules'::regclass = ANY (extconfig) AS dumped FROM pg_extension WHERE extname = 'jobqueue';
SELECT has_table_privilege('public', 'queue_schedules', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE') AS public_any,
       (SELECT count(*) FROM queue_schedules) AS schedule_rows;
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS arguments
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace AND p.proname = ANY (:'fn_1_2')
ORDER BY p.proname;

-- every function of the extension (old and new) is closed to PUBLIC and
-- runs as the owner with a pinned search_path (except queue_grant /
-- queue_revoke: not definer)
SELECT count(*) AS functions,
       bool_or(has_function_privilege('public', p.oid, 'EXECUTE')) AS public_executes_any,
       bool_and(p.prosecdef) FILTER (WHERE p.proname NOT IN ('queue_grant', 'queue_revoke')) AS definer,
       bool_and(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp']) AS pinned_search_path
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

-- the jobs came through the two updates
SELECT name, attempts, ready, token IS NULL AS unclaimed FROM queue_jobs ORDER BY name;

-- each role kept its tier and has the 1.2 functions of its tier: producer
-- queue_cron_next, worker also queue_tick, admin also the schedule functions
SELECT r AS role, pg_temp.allowed(r, :'fn_tiers') AS may_execute,
       pg_temp.allowed(r, :'fn_1_2') AS may_execute_1_2
FROM unnest(ARRAY['regress_jq_u12_producer', 'regress_jq_u12_worker', 'regress_jq_u12_admin',
                  'regress_jq_u12_none']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- schedules work: the admin creates one; at its window the worker ticks
-- (the clock offset set by the superuser stays in force under SET ROLE),
-- claims the job and completes it
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SET ROLE regress_jq_u12_admin;
SELECT queue_schedule_set('u12_sched', '*/10 * * * *', 'u12_report', '{"from": "schedule"}', 'u12_sq') AS next_due;
SELECT name, cron, job_name, queue, next_due, last_window FROM queue_schedule_list();
RESET ROLE;
SET ROLE regress_jq_u12_producer;
SELECT t AS producer_cron_next FROM queue_cron_next('*/10 * * * *') t;
SELECT pg_temp.try($$SELECT queue_tick()$$) AS producer_tick;
RESET ROLE;
SELECT pg_temp.travel_to('2030-01-01 00:10:30+00') AS queue_now;
SET ROLE regress_jq_u12_worker;
SELECT pg_temp.try($$SELECT queue_schedule_list()$$) AS worker_list;
SELECT schedule, due_at FROM queue_tick();
SELECT count(*) AS enqueued_again FROM queue_tick();
SELECT name, payload, attempts, id AS s_id, token AS s_tok FROM queue_reserve('{u12_sq}') \gset
SELECT :'name' AS name, :'payload' AS payload, :'attempts' AS attempts;
SELECT queue_delete(:s_id, :s_tok) AS completed;
RESET ROLE;
SELECT count(*) AS jobs_left_in_u12_sq FROM queue_jobs WHERE queue = 'u12_sq';
SELECT name, next_due, last_window, last_job_id = :s_id AS last_job_is_completed_job FROM queue_schedule_list();
RESET jobqueue.clock_offset;

-- the role without a tier gets none of it
SET ROLE regress_jq_u12_none;
SELECT pg_temp.try($$SELECT queue_tick()$$) AS none_tick;
SELECT pg_temp.try($$SELECT queue_cron_next('@daily')$$) AS none_cron_next;
RESET ROLE;

--------------------------------------------------------------------------
-- CREATE EXTENSION jobqueue VERSION '1.1', then ALTER EXTENSION UPDATE
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT to_regclass('queue_schedules') IS NULL AS no_queue_schedules;
SELECT queue_grant('regress_jq_u12_worker', 'worker');
SELECT queue_grant('regress_jq_u12_admin', 'admin');
SELECT queue_push('u12_v11', queue => 'u12_q') AS v11_id \gset

-- without a version: the default, 1.2
ALTER EXTENSION jobqueue UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT r AS role, pg_temp.allowed(r, :'fn_1_2') AS may_execute_1_2
FROM unnest(ARRAY['regress_jq_u12_worker', 'regress_jq_u12_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- the job pushed at 1.1 is still there; a schedule ticked by the worker
SELECT name, attempts FROM queue_jobs WHERE id = :v11_id;
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SELECT queue_schedule_set('u12_hourly', '@hourly', 'u12_hourly_job', queue => 'u12_q') AS next_due;
SELECT pg_temp.travel_to('2030-01-01 01:00:30+00') AS queue_now;
SET ROLE regress_jq_u12_worker;
SELECT schedule, due_at FROM queue_tick();
RESET ROLE;
SELECT name, unique_key FROM queue_jobs ORDER BY id;
RESET jobqueue.clock_offset;

--------------------------------------------------------------------------
-- CREATE EXTENSION jobqueue VERSION '1.0', then one ALTER EXTENSION
-- UPDATE (1.0 -> 1.1 -> 1.2): the worker may tick
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.0';
SELECT queue_grant('regress_jq_u12_worker', 'worker');
ALTER EXTENSION jobqueue UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_temp.allowed('regress_jq_u12_worker', :'fn_tiers') AS may_execute,
       pg_temp.allowed('regress_jq_u12_worker', :'fn_1_2') AS may_execute_1_2;
SET ROLE regress_jq_u12_worker;
SELECT count(*) AS enqueued FROM queue_tick();
RESET ROLE;
-- the tiers the update re-granted are the roles' own grants, not the
-- extension's initial privileges (pg_dump would leave those out; from 17 on
-- they would keep the roles from being dropped)
SELECT count(*) AS roles_in_initial_privileges
FROM pg_init_privs p, unnest(p.initprivs) AS item
WHERE item::text LIKE 'regress\_jq\_u12%';

--------------------------------------------------------------------------
-- clean up the roles; leave the extension as the other files expect it:
-- the default version
--------------------------------------------------------------------------
SELECT queue_revoke('regress_jq_u12_worker', 'producer');
REVOKE USAGE ON SCHEMA public FROM regress_jq_u12_producer, regress_jq_u12_worker, regress_jq_u12_admin;
DROP ROLE regress_jq_u12_producer, regress_jq_u12_worker, regress_jq_u12_admin, regress_jq_u12_none;
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT (SELECT count(*) FROM queue_jobs) AS jobs, (SELECT count(*) FROM queue_schedules) AS schedules;
