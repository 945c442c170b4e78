--
-- upgrade_1_3: the way to 1.3 (the storage ring) with a live backlog.
-- CREATE EXTENSION jobqueue VERSION '1.2', grant the tiers, and fill the
-- queue: pending jobs, delayed jobs (one with a deadline), held jobs
-- (claimed by a worker role and by the superuser: ids and tokens noted),
-- a released job with its error, jobs with unique keys (pending, held,
-- delayed), failed rows, a paused queue, a schedule; ids handed out past
-- the last row (a completed job).  ALTER EXTENSION UPDATE TO '1.3' rebuilds
-- queue_jobs as the partitioned table.  Then: every job and failed row is
-- unchanged (every column), all in queue_jobs_long; the partitions and the
-- id sequence are marked for pg_dump and closed to PUBLIC; held tokens
-- still complete (and extend, release and fail); delayed jobs stay
-- delayed; unique keys are still held; failed rows retry; new ids and
-- tokens continue after the old ones; the admin role may rotate; the ring
-- works (a new job goes to the current ring partition, a rotation moves it
-- on, held); the schedule still ticks.  The same with the extension in another
-- schema.  pg_dump / restore of an upgraded database: tests/ring/upgrade.sh.
-- This file manages the extension itself, and leaves it created at the
-- default version at the end.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

\i sql/include/try.sql

\i sql/include/clock.sql

\i sql/include/allowed.sql

--------------------------------------------------------------------------
-- version 1.2 with a live backlog
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT to_regclass('queue_jobs_long') IS NULL AS no_long_partition,
       to_regprocedure('queue_rotate(integer)') IS NULL AS no_queue_rotate,
       (SELECT relkind FROM pg_class WHERE oid = 'queue_jobs'::regclass) AS queue_jobs_kind;

CREATE ROLE regress_jq_u13_worker;
CREATE ROLE regress_jq_u13_admin;
SELECT queue_grant('regress_jq_u13_worker', 'worker');
SELECT queue_grant('regress_jq_u13_admin', 'admin');

-- pending, with priorities and a payload
SELECT queue_push('u13_p1', '{"n": 1}', 'u13_q', priority => 2) AS p1_id \gset
SELECT queue_push('u13_p2', '{"n": 2}', 'u13_q', max_attempts => 5) AS p2_id \gset
-- delayed: two hours, one with a deadline a day ahead
SELECT queue_push('u13_d1', '{}', 'u13_d', '2 hours') AS d1_id \gset
SELECT queue_push('u13_d2', '{}', 'u13_d', '2 hours', deadline => clock_timestamp() + interval '1 day') AS d2_id \gset
-- held: one by the worker role (1 hour lease), one by the superuser (10 minutes)
SELECT queue_push('u13_h1', '{"held": 1}', 'u13_h') AS h1_id \gset
SELECT queue_push('u13_h2', '{"held": 2}', 'u13_h') AS h2_id \gset
SET ROLE regress_jq_u13_worker;
SELECT id AS h1_claimed, token AS h1_tok FROM queue_reserve('{u13_h}', '1 hour', 'worker-1.2') \gset
RESET ROLE;
SELECT id AS h2_claimed, token AS h2_tok FROM queue_reserve('{u13_h}', '10 minutes', 'admin-1.2') \gset
SELECT :h1_claimed = :h1_id AS claimed_h1, :h2_claimed = :h2_id AS claimed_h2;
-- released once with an error: attempts 1, due now
SELECT queue_push('u13_r1', '{}', 'u13_r', max_attempts => 4) AS r1_id \gset
SELECT queue_release(id, token, '0', 'first try failed') AS released FROM queue_reserve('{u13_r}');
-- unique keys: pending, held, delayed
SELECT queue_push('u13_k1', '{}', 'u13_k', unique_key => 'u13-key-pending') AS k1_id \gset
SELECT queue_push('u13_k2', '{}', 'u13_kh', unique_key => 'u13-key-held') AS k2_id \gset
SELECT id AS k2_claimed, token AS k2_tok FROM queue_reserve('{u13_kh}', '1 hour') \gset
SELECT queue_push('u13_k3', '{}', 'u13_k', '2 hours', unique_key => 'u13-key-delayed') AS k3_id \gset
-- failed: by the worker, and released with no attempts left
SELECT queue_push('u13_f1', '{"f": 1}', 'u13_f', priority => -1) AS f1_id \gset
SELECT queue_fail(id, token, 'fatal at 1.2') AS failed FROM queue_reserve('{u13_f}');
SELECT queue_push('u13_f2', '{"f": 2}', 'u13_f', max_attempts => 1) AS f2_id \gset
SELECT queue_release(id, token, '0', '') AS released_last FROM queue_reserve('{u13_f}');
-- a paused queue with a job; a recurring schedule
SELECT queue_push('u13_e1', '{}', 'u13_e') AS e1_id \gset
SELECT queue_pause('u13_e');
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SELECT queue_schedule_set('u13_sched', '*/10 * * * *', 'u13_report', '{"s": 1}', 'u13_s') AS next_due;
RESET jobqueue.clock_offset;
-- the last id handed out belongs to a job completed since: no row keeps it
SELECT queue_push('u13_done', '{}', 'u13_done') AS last_id \gset
SELECT queue_delete(id, token) AS completed_last FROM queue_reserve('{u13_done}');

SELECT queue, pending, delayed, reserved, total FROM queue_stats();
SELECT count(*) AS failed_rows FROM queue_failed_jobs;

-- the backlog as it stands, to compare after the update (the 1.2 columns)
CREATE TEMP TABLE u13_jobs_before AS
    SELECT id, queue, name, payload, attempts, max_attempts, priority, unique_key, available_at,
           reserved_until, reserved_by, last_error, created_at, token, ready, deadline
    FROM queue_jobs;
CREATE TEMP TABLE u13_failed_before AS SELECT * FROM queue_failed_jobs;
SELECT max(token) AS max_token FROM queue_jobs \gset

--------------------------------------------------------------------------
-- ALTER EXTENSION jobqueue UPDATE TO '1.3'
--------------------------------------------------------------------------
ALTER EXTENSION jobqueue UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- queue_jobs is partitioned: the two ring partitions and the long one
SELECT relkind AS queue_jobs_kind FROM pg_class WHERE oid = 'queue_jobs'::regclass;
SELECT relid::regclass AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_partition_tree('queue_jobs') t JOIN pg_class c ON c.oid = t.relid
WHERE t.isleaf ORDER BY relid::regclass::text;
-- the 1.2 table is gone; ids come from the sequence of the same name as before
SELECT to_regclass('queue_jobs_1_2') IS NULL AS old_table_gone,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'queue\_jobs\_1\_2%') AS leftovers,
       pg_get_serial_sequence('queue_jobs', 'id') AS id_sequence;
-- every partition and both sequences are marked for pg_dump; nothing of
-- the extension's storage is open to PUBLIC
SELECT c::regclass AS config_table
FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'jobqueue' ORDER BY c::regclass::text;
SELECT bool_or(has_table_privilege('public', c, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')) AS public_any
FROM unnest(ARRAY['queue_jobs', 'queue_jobs_ring0', 'queue_jobs_ring1', 'queue_jobs_long',
                  'queue_failed_jobs']::regclass[]) c;

-- every job came through unchanged (every 1.2 column), each once, all in
-- the long partition; the failed rows too
SELECT (SELECT count(*) FROM queue_jobs) AS jobs,
       (SELECT count(*) FROM (SELECT id, queue, name, payload, attempts, max_attempts, priority, unique_key,
                                     available_at, reserved_until, reserved_by, last_error, created_at,
                                     token, ready, deadline FROM queue_jobs
                              EXCEPT SELECT * FROM u13_jobs_before) changed) AS changed_or_new,
       (SELECT count(*) FROM (SELECT * FROM u13_jobs_before
                              EXCEPT SELECT id, queue, name, payload, attempts, max_attempts, priority, unique_key,
                                            available_at, reserved_until, reserved_by, last_error, created_at,
                                            token, ready, deadline FROM queue_jobs) lost) AS lost,
       (SELECT count(DISTINCT id) FROM queue_jobs) AS distinct_ids;
SELECT tableoid::regclass AS partition, ring, count(*) AS jobs FROM queue_jobs GROUP BY 1, 2;
SELECT (SELECT count(*) FROM (TABLE queue_failed_jobs EXCEPT TABLE u13_failed_before) x) AS failed_changed,
       (SELECT count(*) FROM (TABLE u13_failed_before EXCEPT TABLE queue_failed_jobs) x) AS failed_lost;
SELECT queue, pending, delayed, reserved, total FROM queue_stats();

-- the tiers: the admin role may rotate, the worker may not
SELECT r AS role, pg_temp.allowed(r, '{queue_rotate,queue_current_ring,queue_tick,queue_push}') AS may_execute
FROM unnest(ARRAY['regress_jq_u13_worker', 'regress_jq_u13_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- held jobs: the worker's claim extends and completes with its 1.2 token;
-- the superuser's claim releases with its token, which then stops working
SET ROLE regress_jq_u13_worker;
SELECT queue_extend(:h1_id, :h1_tok, '2 hours') AS extended_h1;
SELECT queue_delete(:h1_id, :h1_tok) AS completed_h1;
SELECT queue_delete(:h1_id, :h1_tok) AS completed_h1_again;
RESET ROLE;
SELECT queue_release(:h2_id, :h2_tok, '0', 'released after the update') AS released_h2;
SELECT queue_delete(:h2_id, :h2_tok) AS stale_token_h2;
-- the key held by a claim is still held; its claim fails the job with its token
SELECT queue_push('again', '{}', 'u13_kh', unique_key => 'u13-key-held') = :k2_id AS held_key_answers_holder;
SELECT queue_fail(:k2_id, :k2_tok, 'failed after the update') AS failed_k2;
SELECT queue_push('again', '{}', 'u13_kh', unique_key => 'u13-key-held') <> :k2_id AS held_key_free_again;

-- the other keys: still held by their jobs
SELECT queue_push('again', '{}', 'u13_k', unique_key => 'u13-key-pending') = :k1_id AS pending_key_answers_holder,
       queue_push('again', '{}', 'u13_k', unique_key => 'u13-key-delayed') = :k3_id AS delayed_key_answers_holder;

-- new ids continue after every id handed out at 1.2 (the completed job's
-- too), new tokens after the old ones; a new job without key goes to the
-- ring (partition 0 or 1)
SELECT queue_push('u13_new', '{}', 'u13_n') AS new_id \gset
SELECT :new_id > :last_id AS new_id_above_old,
       (SELECT ring IN (0, 1) FROM queue_jobs WHERE id = :new_id) AS in_ring;
SELECT token > :max_token AS new_token_above_old, id = :new_id AS claimed_new
FROM queue_reserve('{u13_n}', '10 minutes');

-- delayed jobs stay delayed; pending ones are claimed in their order; the
-- released one keeps its attempt and error; the paused queue hands out nothing
SELECT count(*) AS delayed_claimed FROM queue_reserve('{u13_d}');
SELECT name, attempts, last_error, queue_delete(id, token) AS completed
FROM queue_reserve('{u13_q,u13_r}', NULL, 'w', 10);
SELECT count(*) AS paused_claimed FROM queue_reserve('{u13_e}');
SELECT queue_resume('u13_e');
SELECT id = :e1_id AS resumed_job, queue_delete(id, token) AS completed FROM queue_reserve('{u13_e}');
SELECT pg_temp.travel_to(clock_timestamp() + interval '3 hours') IS NOT NULL AS three_hours_later;
SELECT name, queue_delete(id, token) AS completed FROM queue_reserve('{u13_d}', NULL, 'w', 10) ORDER BY name;
RESET jobqueue.clock_offset;

-- failed rows retry under their ids, into the ring
SELECT queue_retry_failed(:f1_id) AS retried_f1;
SELECT id = :f1_id AS same_id, attempts, ring IN (0, 1) AS in_ring
FROM queue_jobs WHERE name = 'u13_f1';
SELECT name, queue_delete(id, token) AS completed FROM queue_reserve('{u13_f}');
SELECT id, name, error FROM queue_failed_jobs ORDER BY id;

-- the ring turns: the new job (held) moves to the long partition with its
-- partition's rotation, where it stays, and still completes with its token
SELECT ring AS new_ring, token AS new_tok FROM queue_jobs WHERE id = :new_id \gset
SELECT moved, truncated, outcome FROM queue_rotate(:new_ring);
SELECT ring = -1 AS in_long, tableoid = 'queue_jobs_long'::regclass AS partition_of_its_ring
FROM queue_jobs WHERE id = :new_id;
SELECT queue_delete(:new_id, :new_tok) AS completed_new;

-- the schedule made at 1.2 ticks
SELECT pg_temp.travel_to('2030-01-01 00:10:30+00') AS queue_now;
SELECT schedule, due_at FROM queue_tick();
SELECT name, payload FROM queue_jobs WHERE queue = 'u13_s';
RESET jobqueue.clock_offset;

--------------------------------------------------------------------------
-- 1.2 in another schema, a held job, then UPDATE (without a version)
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE SCHEMA "u13 Sch";
CREATE EXTENSION jobqueue VERSION '1.2' SCHEMA "u13 Sch";
SELECT "u13 Sch".queue_push('u13_x', '{}', 'u13_x') AS x_id \gset
SELECT id AS x_claimed, token AS x_tok FROM "u13 Sch".queue_reserve('{u13_x}', '1 hour') \gset
ALTER EXTENSION jobqueue UPDATE;
SELECT extversion, extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
SELECT relid::regclass AS partition FROM pg_partition_tree('"u13 Sch".queue_jobs') WHERE isleaf ORDER BY relid::regclass::text;
SELECT "u13 Sch".queue_delete(:x_id, :x_tok) AS completed_x;
SELECT "u13 Sch".queue_push('u13_y', '{}', 'u13_x') > :x_id AS new_id_above_old;

--------------------------------------------------------------------------
-- clean up the roles; leave the extension as the other files expect it:
-- the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
DROP SCHEMA "u13 Sch";
REVOKE USAGE ON SCHEMA public FROM regress_jq_u13_worker, regress_jq_u13_admin;
DROP ROLE regress_jq_u13_worker, regress_jq_u13_admin;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT (SELECT count(*) FROM queue_jobs) AS jobs, (SELECT count(*) FROM queue_schedules) AS schedules;
