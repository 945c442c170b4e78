--
-- upgrade_1_5: the way to 1.5 with a live backlog.  CREATE EXTENSION
-- jobqueue VERSION '1.4', grant the tiers, fill the queue (pending,
-- delayed, held, failed jobs; a paused queue; a batch with a flow field,
-- refused at 1.4), ALTER EXTENSION UPDATE TO
-- '1.5'.  Then: the jobs are unchanged (their new flow columns empty);
-- roles granted a tier at 1.4 got the 1.5 functions of their tier, PUBLIC
-- none; a held job completes with its 1.4 token; flow control works on the
-- upgraded schema, and a rotation (queue_rotate, a 1.3 function) moves
-- the columns 1.5 added.  The same with the extension in another schema.
-- This file manages the extension itself, and leaves it created at the
-- default version at the end.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

\i sql/include/try.sql

\i sql/include/allowed.sql

--------------------------------------------------------------------------
-- version 1.4 with a live backlog
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT to_regprocedure('queue_blocked(text)') IS NULL AS no_queue_blocked;

CREATE ROLE regress_jq_u15_producer;
CREATE ROLE regress_jq_u15_worker;
CREATE ROLE regress_jq_u15_admin;
SELECT queue_grant('regress_jq_u15_producer', 'producer');
SELECT queue_grant('regress_jq_u15_worker', 'worker');
SELECT queue_grant('regress_jq_u15_admin', 'admin');

SELECT queue_push('u15_p1', '{"n": 1}', 'u15_q') AS p1_id \gset
SELECT queue_push('u15_d1', '{}', 'u15_q', '2 hours') AS d1_id \gset
SELECT queue_push('u15_k1', '{}', 'u15_q', unique_key => 'u15:k') AS k1_id \gset
SELECT queue_push('u15_h1', '{"held": 1}', 'u15_h') AS h1_id \gset
SET ROLE regress_jq_u15_worker;
SELECT id = :h1_id AS claimed_h1, token AS h1_tok FROM queue_reserve('{u15_h}', '1 hour', 'worker-1.4') \gset
RESET ROLE;
SELECT :'claimed_h1' AS claimed_h1;
SELECT queue_push('u15_f1', '{"f": 1}', 'u15_f') AS f1_id \gset
SELECT queue_fail(id, token, 'fatal at 1.4') AS failed FROM queue_reserve('{u15_f}');
SELECT queue_pause('u15_paused');
-- at 1.4 a job object has no flow fields: a batch that names one fails, nothing written
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "u15_b1", "queue": "u15_b"},
    {"name": "u15_b2", "queue": "u15_b", "concurrency_key": "k"}]')$$) AS flow_field_at_1_4;
SELECT count(*) AS u15_b_rows FROM queue_jobs WHERE queue = 'u15_b';

CREATE TEMP TABLE u15_jobs_before AS SELECT * FROM queue_jobs;
CREATE TEMP TABLE u15_failed_before AS SELECT * FROM queue_failed_jobs;

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE TO '1.5'
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- nothing queued or failed changed; the new columns are empty
SELECT (SELECT count(*) FROM (SELECT id, queue, name, payload, attempts, max_attempts, priority,
                                     unique_key, available_at, reserved_until, reserved_by,
                                     last_error, created_at, token, ready, deadline, ring
                              FROM queue_jobs EXCEPT TABLE u15_jobs_before) x) AS jobs_changed,
       (SELECT count(*) FROM (SELECT id, job_id, queue, name, payload, priority, attempts,
                                     max_attempts, error, failed_at, created_at
                              FROM queue_failed_jobs EXCEPT TABLE u15_failed_before) x) AS failed_changed,
       (SELECT count(*) FROM queue_jobs) = (SELECT count(*) FROM u15_jobs_before) AS same_job_count,
       (SELECT bool_and(concurrency_key IS NULL AND flow IS NULL AND parked_run_at IS NULL
                        AND waiting_parents = 0 AND NOT has_children) FROM queue_jobs) AS flow_empty;

-- the tiers granted at 1.4 reach the 1.5 functions of their tier; PUBLIC none
SELECT r AS role,
       pg_temp.allowed(r, '{queue_push,queue_blocked,queue_concurrency_keys,queue_rate_limits,queue_rate_limit_next,queue_concurrency_set,queue_rate_limit_set,queue_flow_job_added}') AS may_execute
FROM unnest(ARRAY['public', 'regress_jq_u15_producer', 'regress_jq_u15_worker',
                  'regress_jq_u15_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- the held job still completes with its 1.4 token
SET ROLE regress_jq_u15_worker;
SELECT queue_delete(:h1_id, :h1_tok) AS completed_h1;
RESET ROLE;

-- flow control on the upgraded schema: a producer pushes jobs of one key,
-- the admin raises its limit; a child waits for its parent
SET ROLE regress_jq_u15_producer;
SELECT count(*) AS pushed FROM (SELECT queue_push('u15_c' || n, queue => 'u15_c', concurrency_key => 'c')
                                FROM generate_series(1, 3) n) p;
SELECT queue_push('u15_child', queue => 'u15_c', after => ARRAY[:p1_id]::bigint[]) AS child_id \gset
SELECT * FROM queue_blocked('u15_c');
RESET ROLE;
SET ROLE regress_jq_u15_admin;
SELECT queue_concurrency_set('u15_c', 'c', 2);
RESET ROLE;
SELECT * FROM queue_concurrency_keys('u15_c');

-- a rotation moves held-back jobs with their flow columns
CREATE TEMP TABLE u15_flow_before AS
    SELECT id, concurrency_key, flow, parked_run_at, waiting_parents, has_children FROM queue_jobs;
SELECT moved > 0 AS moved_jobs, outcome FROM queue_rotate(queue_current_ring());
SELECT count(*) AS flow_rows_changed
FROM (TABLE u15_flow_before
      EXCEPT SELECT id, concurrency_key, flow, parked_run_at, waiting_parents, has_children FROM queue_jobs) x;
-- and they still go their way: the parent's completion lets the child run
SELECT queue_delete(id, token) AS completed_p1 FROM queue_reserve('{u15_q}') WHERE id = :p1_id;
SELECT flow, ready FROM queue_jobs WHERE id = :child_id;

--------------------------------------------------------------------------
-- 1.4 in another schema, then UPDATE (without a version)
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE SCHEMA "u15 Sch";
CREATE EXTENSION jobqueue VERSION '1.4' SCHEMA "u15 Sch";
SELECT "u15 Sch".queue_push('u15_x', '{}', 'u15 x') AS x_id \gset
ALTER EXTENSION jobqueue UPDATE;
SELECT extversion, extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
SELECT "u15 Sch".queue_push('u15_y', '{}', 'u15 x', concurrency_key => 'k') > 0 AS pushed;
SELECT "u15 Sch".queue_push('u15_z', '{}', 'u15 x', concurrency_key => 'k') > 0 AS pushed;
SELECT * FROM "u15 Sch".queue_blocked();

--------------------------------------------------------------------------
-- clean up the roles; leave the extension as the other files expect it:
-- the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
DROP SCHEMA "u15 Sch";
REVOKE USAGE ON SCHEMA public FROM regress_jq_u15_producer, regress_jq_u15_worker, regress_jq_u15_admin;
DROP ROLE regress_jq_u15_producer, regress_jq_u15_worker, regress_jq_u15_admin;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
