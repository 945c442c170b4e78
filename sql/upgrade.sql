--
-- upgrade: CREATE EXTENSION jobqueue VERSION '1.0' with the new library,
-- queue and claim jobs there, ALTER EXTENSION jobqueue UPDATE to 1.1, and
-- finish the same jobs with the 1.1 API.  Roles keep their tiers and get
-- the 1.1 functions of their tier.
-- This file manages the extension itself, and leaves it created at the
-- default version at the end.
--
\set VERBOSITY terse

\i sql/include/try.sql

\i sql/include/clock.sql

\i sql/include/allowed.sql
-- the functions of 1.0, and those 1.1 adds
\set fn_1_0 '{queue_push,queue_pending,queue_stats,queue_failed_count,queue_reserve,queue_delete,queue_release,queue_fail,queue_extend,queue_failed_rows,queue_retry_failed,queue_forget_failed,queue_grant,queue_revoke}'
\set fn_1_1 '{queue_push_many,queue_list,queue_delete_many,queue_release_many,queue_fail_many,queue_cancel,queue_clear,queue_pause,queue_resume,queue_set_default_lease,queue_set_notify}'

--------------------------------------------------------------------------
-- version 1.0
--------------------------------------------------------------------------

-- the test driver installed the default version (1.2); go back to 1.0
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- no 1.1 object exists at 1.0: no settings table, no new function, no
-- deadline column, the 7-argument queue_push, an 11-column queue_job
SELECT to_regclass('queue_settings') IS NULL AS no_queue_settings,
       to_regproc('queue_push_many') IS NULL AS no_queue_push_many,
       (SELECT count(*) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = ANY (:'fn_1_1')) AS functions_1_1,
       (SELECT count(*) FROM pg_attribute
        WHERE attrelid = 'queue_jobs'::regclass AND attname = 'deadline') AS deadline_columns,
       (SELECT string_agg(pronargs::text, ',') FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = 'queue_push') AS queue_push_args,
       (SELECT count(*) FROM pg_attribute
        WHERE attrelid = 'queue_job'::regclass AND attnum > 0) AS queue_job_columns;

-- roles granted the three tiers at 1.0 (and one granted nothing)
CREATE ROLE regress_jq_up_producer;
CREATE ROLE regress_jq_up_worker;
CREATE ROLE regress_jq_up_admin;
CREATE ROLE regress_jq_up_none;
SELECT queue_grant('regress_jq_up_producer', 'producer');
SELECT queue_grant('regress_jq_up_worker', 'worker');
SELECT queue_grant('regress_jq_up_admin', 'admin');
SELECT r AS role, pg_temp.allowed(r, :'fn_1_0') AS may_execute_1_0
FROM unnest(ARRAY['regress_jq_up_producer', 'regress_jq_up_worker', 'regress_jq_up_admin',
                  'regress_jq_up_none']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- pushes at 1.0 (the new library on the 1.0 schema): plain jobs, a delayed
-- one, one with a unique key; the same key again gives the holder's id
SELECT queue_push('up_a', '{"n": 1}', 'up_q', priority => 5) AS a_id \gset
SELECT queue_push('up_b', queue => 'up_q', priority => 4) AS b_id \gset
SELECT queue_push('up_c', queue => 'up_q', priority => 3) AS c_id \gset
SELECT queue_push('up_f', queue => 'up_q', priority => 2) AS f_id \gset
SELECT queue_push('up_e', queue => 'up_q', priority => 1) AS e_id \gset
SELECT queue_push('up_later', queue => 'up_q', delay => '1 hour') AS l_id \gset
SELECT queue_push('up_unique', queue => 'up_uq', unique_key => 'up_key') AS u_id \gset
SELECT queue_push('up_unique_again', queue => 'up_uq', unique_key => 'up_key') = :u_id AS same_holder;
SELECT queue, pending, delayed, reserved, total FROM queue_stats();

-- claims at 1.0: queue_reserve takes the five due jobs of up_q in claim
-- order (priority), each attempt 1, with a lease of 5 minutes
CREATE TEMP TABLE held AS
    SELECT r.name, r.id, r.token, r.attempts, r.ordinality AS claim_order
    FROM queue_reserve('{up_q}', '5 minutes', 'worker-1.0', 5) WITH ORDINALITY AS r;
SELECT claim_order, name, attempts FROM held ORDER BY claim_order;
SELECT token AS a_tok FROM held WHERE name = 'up_a' \gset
SELECT token AS b_tok FROM held WHERE name = 'up_b' \gset
SELECT token AS c_tok FROM held WHERE name = 'up_c' \gset
SELECT token AS f_tok FROM held WHERE name = 'up_f' \gset
SELECT token AS e_tok FROM held WHERE name = 'up_e' \gset

-- release at 1.0 with delay 0: up_e is due again at once
SELECT queue_release(:e_id, :e_tok, '0', 'released at 1.0') AS released;
SELECT queue_pending('up_q') AS pending_up_q;
SELECT queue, pending, delayed, reserved, total FROM queue_stats();

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- the 1.1 objects exist: the settings table, the eleven new functions, the
-- deadline column, one queue_push (8 arguments, the last one deadline)
SELECT to_regclass('queue_settings') IS NOT NULL AS has_queue_settings,
       (SELECT count(*) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = ANY (:'fn_1_1')) AS functions_1_1,
       (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
        WHERE attrelid = 'queue_jobs'::regclass AND attname = 'deadline') AS deadline_column,
       (SELECT string_agg(pronargs || ':' || proargnames[pronargs], ',') FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname = 'queue_push') AS queue_push_args;

-- queue_job gains a trailing deadline column, the first eleven unchanged
SELECT string_agg(attname, ',' ORDER BY attnum) AS queue_job_columns
FROM pg_attribute WHERE attrelid = 'queue_job'::regclass AND attnum > 0 AND NOT attisdropped;

-- queue_settings (columns, empty) is marked for pg_dump and closed to PUBLIC
SELECT string_agg(attname, ',' ORDER BY attnum) AS queue_settings_columns
FROM pg_attribute WHERE attrelid = 'queue_settings'::regclass AND attnum > 0 AND NOT attisdropped;
SELECT 'queue_settings'::regclass = ANY (extconfig) AS dumped FROM pg_extension WHERE extname = 'jobqueue';
SELECT has_table_privilege('public', 'queue_settings', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE') AS public_any,
       (SELECT count(*) FROM queue_settings) AS settings_rows;

-- every function (old and new) is closed to PUBLIC, runs as the owner with
-- a pinned search_path (except queue_grant / queue_revoke: not definer)
SELECT count(*) AS functions,
       bool_or(has_function_privilege('public', p.oid, 'EXECUTE')) AS public_executes_any,
       bool_and(p.prosecdef) FILTER (WHERE p.proname NOT IN ('queue_grant', 'queue_revoke')) AS definer,
       bool_and(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp']) AS pinned_search_path
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue');

-- the jobs came through unchanged, with no deadline
SELECT name, queue, attempts, ready, token IS NOT NULL AS held, last_error,
       deadline IS NULL AS no_deadline
FROM queue_jobs ORDER BY id;
SELECT * FROM queue_list();

-- queue_delete with a token from before the update
SELECT queue_delete(:a_id, :a_tok) AS completed;
-- queue_delete_many with tokens from before the update; a wrong token
-- (up_b's token given for up_c) is left alone
SELECT queue_delete_many(ARRAY[:b_id, :c_id], ARRAY[:b_tok, :b_tok]) = ARRAY[:b_id]::bigint[] AS completed_only_b;
SELECT string_agg(name, ',' ORDER BY name) AS left_in_up_q FROM queue_jobs WHERE queue = 'up_q';

-- a job claimed before the update can be released after it (1.1 queue_release)
SELECT queue_release(:c_id, :c_tok, '0', 'released at 1.1') AS released;
SELECT attempts, last_error, ready, token IS NULL AS no_token FROM queue_jobs WHERE id = :c_id;

-- ... or failed (1.1 queue_fail_many)
SELECT queue_fail_many(ARRAY[:f_id], ARRAY[:f_tok], 'failed at 1.1') = ARRAY[:f_id]::bigint[] AS failed;
SELECT name, job_id = :f_id AS same_job, attempts, error FROM queue_failed_jobs;

-- the jobs released at 1.0 and at 1.1 are claimed by the 1.1 queue_reserve
-- (lease NULL: the default 60 seconds): attempt 2, last error kept, deadline NULL
SELECT pg_temp.qnow() AS t0 \gset
CREATE TEMP TABLE held2 AS
    SELECT r.*, r.ordinality AS claim_order FROM queue_reserve('{up_q}', max_jobs => 5) WITH ORDINALITY AS r;
SELECT claim_order, name, attempts, last_error, deadline IS NULL AS no_deadline,
       reserved_until >= :'t0'::timestamptz + interval '60 seconds'
         AND reserved_until <= pg_temp.qnow() + interval '60 seconds' AS lease_60s
FROM held2 ORDER BY claim_order;
SELECT cardinality(queue_delete_many(array_agg(id), array_agg(token))) AS completed FROM held2;

-- the job delayed at 1.0 becomes due when its delay ends
SELECT count(*) AS claimable_now FROM queue_reserve('{up_q}');
SET jobqueue.clock_offset = '61 minutes';
SELECT id = :l_id AS is_delayed_job, token AS l_tok FROM queue_reserve('{up_q}') \gset
SELECT :'is_delayed_job' AS is_delayed_job;
SELECT queue_delete_many(ARRAY[:l_id], ARRAY[:l_tok]) = ARRAY[:l_id]::bigint[] AS completed;
RESET jobqueue.clock_offset;
SELECT count(*) AS left_in_up_q FROM queue_jobs WHERE queue = 'up_q';

-- the unique key taken at 1.0 is still held: the 1.1 queue_push and
-- queue_push_many give the holder's id, nothing is inserted
SELECT queue_push('up_unique_1_1', queue => 'up_uq', unique_key => 'up_key') = :u_id AS push_gets_holder,
       (queue_push_many('[{"name": "up_unique_many", "queue": "up_uq", "unique_key": "up_key"}]'))[1] = :u_id
         AS push_many_gets_holder;
SELECT name FROM queue_jobs WHERE unique_key = 'up_key';
-- once the holder is completed (1.1), the key is free again
SELECT id = :u_id AS is_holder, token AS u_tok FROM queue_reserve('{up_uq}') \gset
SELECT :'is_holder' AS is_holder, queue_delete(:u_id, :u_tok) AS completed;
SELECT queue_push('up_unique_new', queue => 'up_uq', unique_key => 'up_key') <> :u_id AS new_holder;

-- the upgraded queue_push takes a deadline (stored as given) and checks it
SELECT pg_temp.qnow() + interval '1 hour' AS dl \gset
SELECT queue_push('up_deadline', queue => 'up_dq', deadline => :'dl') AS dl_id \gset
SELECT name, deadline = :'dl'::timestamptz AS deadline_kept FROM queue_jobs WHERE id = :dl_id;
SELECT pg_temp.try($$SELECT queue_push('up_expired', queue => 'up_dq', deadline => clock_timestamp() - interval '1 minute')$$)
       AS past_deadline;

--------------------------------------------------------------------------
-- the roles after the update
--------------------------------------------------------------------------

-- each role kept its tier and got the 1.1 functions of its tier (producer:
-- batch push and list; worker: batch completion; admin: administration)
SELECT r AS role, pg_temp.allowed(r, :'fn_1_0') AS may_execute_1_0
FROM unnest(ARRAY['regress_jq_up_producer', 'regress_jq_up_worker', 'regress_jq_up_admin',
                  'regress_jq_up_none']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
SELECT r AS role, pg_temp.allowed(r, :'fn_1_1') AS may_execute_1_1
FROM unnest(ARRAY['regress_jq_up_producer', 'regress_jq_up_worker', 'regress_jq_up_admin',
                  'regress_jq_up_none']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
SELECT has_function_privilege('regress_jq_up_producer', 'queue_push_many(jsonb)', 'EXECUTE') AS producer_push_many,
       has_function_privilege('regress_jq_up_producer', 'queue_push(text,jsonb,text,interval,integer,text,integer,timestamptz)', 'EXECUTE') AS producer_push,
       has_function_privilege('regress_jq_up_producer', 'queue_delete_many(bigint[],bigint[])', 'EXECUTE') AS producer_delete_many,
       has_function_privilege('regress_jq_up_worker', 'queue_delete_many(bigint[],bigint[])', 'EXECUTE') AS worker_delete_many,
       has_function_privilege('regress_jq_up_worker', 'queue_pause(text)', 'EXECUTE') AS worker_pause,
       has_function_privilege('regress_jq_up_admin', 'queue_pause(text)', 'EXECUTE') AS admin_pause,
       has_function_privilege('regress_jq_up_none', 'queue_push_many(jsonb)', 'EXECUTE') AS none_push_many;

-- the producer pushes a batch with the new function, and may not complete
SET ROLE regress_jq_up_producer;
SELECT cardinality(queue_push_many('[{"name": "up_by_producer", "queue": "up_rq"}]')) AS pushed;
SELECT pg_temp.try($$SELECT queue_delete_many('{1}', '{1}')$$) AS producer_delete_many;
RESET ROLE;

-- the worker claims and completes it with the batch call, and may not pause
SET ROLE regress_jq_up_worker;
SELECT id AS w_id, token AS w_tok FROM queue_reserve('{up_rq}') \gset
SELECT queue_delete_many(ARRAY[:w_id], ARRAY[:w_tok]) = ARRAY[:w_id]::bigint[] AS completed;
SELECT pg_temp.try($$SELECT queue_pause('up_rq')$$) AS worker_pause;
RESET ROLE;

-- the admin pauses and resumes a queue
SET ROLE regress_jq_up_admin;
SELECT queue_pause('up_rq');
SELECT queue, paused FROM queue_list() WHERE queue = 'up_rq';
SELECT queue_resume('up_rq');
SELECT queue, paused FROM queue_list() WHERE queue = 'up_rq';
RESET ROLE;

-- the role without a tier still gets nothing
SET ROLE regress_jq_up_none;
SELECT pg_temp.try($$SELECT queue_push_many('[]')$$) AS none_push_many;
RESET ROLE;

-- clean up the roles: revoke the tiers and the schema USAGE queue_grant gave
SELECT queue_revoke(r, 'producer')
FROM unnest(ARRAY['regress_jq_up_producer', 'regress_jq_up_worker', 'regress_jq_up_admin']) AS r;
REVOKE ALL ON SCHEMA public FROM regress_jq_up_producer, regress_jq_up_worker, regress_jq_up_admin;
DROP ROLE regress_jq_up_producer, regress_jq_up_worker, regress_jq_up_admin, regress_jq_up_none;

--------------------------------------------------------------------------
-- a role whose name needs quoting keeps its tier across the update too
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.0';
CREATE ROLE "regress_jq_up_Mixed Case";
SELECT queue_grant('regress_jq_up_Mixed Case', 'worker');
ALTER EXTENSION jobqueue UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_temp.allowed('regress_jq_up_Mixed Case', :'fn_1_0') AS may_execute_1_0,
       pg_temp.allowed('regress_jq_up_Mixed Case', :'fn_1_1') AS may_execute_1_1;
SELECT queue_revoke('regress_jq_up_Mixed Case', 'producer');
REVOKE ALL ON SCHEMA public FROM "regress_jq_up_Mixed Case";
DROP ROLE "regress_jq_up_Mixed Case";

--------------------------------------------------------------------------
-- leave the extension as the other files expect it: the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT count(*) AS jobs FROM queue_jobs;
