--
-- upgrade_1_4: the way to 1.4 with a live backlog.  CREATE EXTENSION
-- jobqueue VERSION '1.3', grant the tiers, fill the queue (pending,
-- delayed, held, failed jobs; a paused queue), ALTER EXTENSION UPDATE TO
-- '1.4'.  Then: the jobs are unchanged; the dashboard's reads work on them
-- (queue_overview agrees with queue_stats, pages, one job, the leases);
-- roles granted a tier at 1.3 got the 1.4 functions of their tier
-- (producer and worker: queue_overview; admin: all four), PUBLIC none; the
-- failed table's new queue index exists.  The same with the extension in
-- another schema.  This file manages the extension itself, and leaves it
-- created at the default version at the end.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

\i sql/include/try.sql

\i sql/include/allowed.sql

--------------------------------------------------------------------------
-- version 1.3 with a live backlog
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT to_regprocedure('queue_overview(integer)') IS NULL AS no_queue_overview;

CREATE ROLE regress_jq_u14_producer;
CREATE ROLE regress_jq_u14_worker;
CREATE ROLE regress_jq_u14_admin;
SELECT queue_grant('regress_jq_u14_producer', 'producer');
SELECT queue_grant('regress_jq_u14_worker', 'worker');
SELECT queue_grant('regress_jq_u14_admin', 'admin');

SELECT queue_push('u14_p1', '{"n": 1}', 'u14_q') AS p1_id \gset
SELECT queue_push('u14_p2', '{"n": 2}', 'u14_q', priority => 3) AS p2_id \gset
SELECT queue_push('u14_d1', '{}', 'u14_q', '2 hours') AS d1_id \gset
SELECT queue_push('u14_h1', '{"held": 1}', 'u14_h') AS h1_id \gset
SET ROLE regress_jq_u14_worker;
SELECT id = :h1_id AS claimed_h1, token AS h1_tok FROM queue_reserve('{u14_h}', '1 hour', 'worker-1.3') \gset
RESET ROLE;
SELECT :'claimed_h1' AS claimed_h1;
SELECT queue_push('u14_f1', '{"f": 1}', 'u14_f') AS f1_id \gset
SELECT queue_fail(id, token, 'fatal at 1.3') AS failed FROM queue_reserve('{u14_f}');
SELECT queue_pause('u14_paused');

CREATE TEMP TABLE u14_jobs_before AS SELECT * FROM queue_jobs;
CREATE TEMP TABLE u14_failed_before AS SELECT * FROM queue_failed_jobs;

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE TO '1.4'
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- nothing queued or failed changed
SELECT (SELECT count(*) FROM (TABLE queue_jobs EXCEPT TABLE u14_jobs_before) x) AS jobs_changed,
       (SELECT count(*) FROM (TABLE u14_jobs_before EXCEPT TABLE queue_jobs) x) AS jobs_lost,
       (SELECT count(*) FROM (TABLE queue_failed_jobs EXCEPT TABLE u14_failed_before) x) AS failed_changed,
       (SELECT count(*) FROM (TABLE u14_failed_before EXCEPT TABLE queue_failed_jobs) x) AS failed_lost;
-- the failed table's queue index
SELECT indexrelid::regclass AS index, pg_get_indexdef(indexrelid) ~ '\(queue, failed_at DESC, id DESC\)' AS columns
FROM pg_index WHERE indrelid = 'queue_failed_jobs'::regclass AND indexrelid::regclass::text = 'queue_failed_jobs_queue_idx';

-- the tiers granted at 1.3 reach the 1.4 functions of their tier; PUBLIC none
SELECT r AS role,
       pg_temp.allowed(r, '{queue_overview,queue_jobs_page,queue_job,queue_leases}') AS may_execute
FROM unnest(ARRAY['public', 'regress_jq_u14_producer', 'regress_jq_u14_worker',
                  'regress_jq_u14_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- the producer reads the overview: it agrees with queue_stats
SET ROLE regress_jq_u14_producer;
SELECT queue, paused, pending, delayed, reserved, failed, counts_capped FROM queue_overview();
SELECT count(*) AS differs_from_queue_stats
FROM queue_overview() o JOIN queue_stats() s USING (queue)
WHERE (o.pending, o.delayed, o.reserved) IS DISTINCT FROM (s.pending, s.delayed, s.reserved);
SELECT pg_temp.try($$SELECT * FROM queue_job(1)$$) AS producer_queue_job;
RESET ROLE;

-- the admin reads pages, jobs and leases of the 1.3 backlog
SET ROLE regress_jq_u14_admin;
SELECT name, state, attempts FROM queue_jobs_page('u14_q');
SELECT name, state, reserved_by FROM queue_job(:h1_id);
SELECT name, state, last_error FROM queue_job(:f1_id);
SELECT worker, queue, name FROM queue_leases();
RESET ROLE;
-- the held job still completes with its 1.3 token
SET ROLE regress_jq_u14_worker;
SELECT queue_delete(:h1_id, :h1_tok) AS completed_h1;
RESET ROLE;
SELECT count(*) AS leases_left FROM queue_leases();

--------------------------------------------------------------------------
-- 1.3 in another schema, then UPDATE (without a version)
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE SCHEMA "u14 Sch";
CREATE EXTENSION jobqueue VERSION '1.3' SCHEMA "u14 Sch";
SELECT "u14 Sch".queue_push('u14_x', '{}', 'u14 x') AS x_id \gset
ALTER EXTENSION jobqueue UPDATE;
SELECT extversion, extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
SELECT queue, pending FROM "u14 Sch".queue_overview();
SELECT name, state FROM "u14 Sch".queue_job(:x_id);

--------------------------------------------------------------------------
-- clean up the roles; leave the extension as the other files expect it:
-- the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
DROP SCHEMA "u14 Sch";
REVOKE USAGE ON SCHEMA public FROM regress_jq_u14_producer, regress_jq_u14_worker, regress_jq_u14_admin;
DROP ROLE regress_jq_u14_producer, regress_jq_u14_worker, regress_jq_u14_admin;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
