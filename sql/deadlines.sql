--
-- deadlines (1.1): a job may carry a deadline (queue_push's deadline
-- argument, queue_push_many's "deadline" field).  Before it the job runs
-- normally; past it, a job that is not running (ready, delayed until after
-- it, or whose lease ran out) is never handed out: queue_reserve moves it to
-- queue_failed_jobs as expired and goes on searching.  A job held by a live
-- lease is left alone.  The clock is travelled with jobqueue.clock_offset.
--
-- The sweep happens at claim time: queue_reserve fails the expired jobs of
-- the queues it was asked for.  Until a claim looks at its queue, an expired
-- job is still a row of queue_jobs, and queue_pending / queue_stats /
-- queue_list count it as pending (it is due; it has not been swept yet).
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql
\i sql/include/queued.sql

-- the error an expired job gets, for a deadline (and the job's last error)
CREATE FUNCTION pg_temp.expired_error(deadline timestamptz, last_error text DEFAULT '')
RETURNS text LANGUAGE sql AS $fn$
    SELECT 'expired: its deadline (' || deadline || ') passed before it could run'
           || CASE WHEN last_error <> '' THEN E'\nlast error: ' || last_error ELSE '' END
$fn$;

--------------------------------------------------------------------------
-- pushing with a deadline
--------------------------------------------------------------------------

-- queue_push stores the deadline as given
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('with-deadline', '{"n": 1}', 'dl', deadline => :'d1') AS id1 \gset
SELECT deadline = :'d1'::timestamptz AS deadline_stored, ready, attempts
FROM queue_jobs WHERE id = :id1;

-- queue_push_many stores each job's deadline (a string in any timestamptz
-- input form), both for plain jobs and for jobs with a unique key (two
-- insert paths), and a missing or JSON null deadline is none
SELECT queue_push_many(jsonb_build_array(
    jsonb_build_object('name', 'many-1', 'queue', 'dl', 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'many-2', 'queue', 'dl', 'deadline', :'d1'::text, 'unique_key', 'dl-k'),
    jsonb_build_object('name', 'many-3', 'queue', 'dl'),
    jsonb_build_object('name', 'many-4', 'queue', 'dl', 'deadline', NULL::text),
    jsonb_build_object('name', 'many-5', 'queue', 'dl', 'deadline', NULL::text, 'unique_key', 'dl-k2')
)) AS many_ids \gset
SELECT m.n, j.name, j.deadline = :'d1'::timestamptz AS deadline_stored, j.deadline IS NULL AS no_deadline
FROM unnest(:'many_ids'::bigint[]) WITH ORDINALITY AS m(id, n)
JOIN queue_jobs j ON j.id = m.id
ORDER BY m.n;

-- a NULL deadline is none
SELECT queue_push('null-deadline', queue => 'dl', deadline => NULL) AS id_null \gset
SELECT deadline IS NULL AS no_deadline FROM queue_jobs WHERE id = :id_null;

--------------------------------------------------------------------------
-- before its deadline a job is claimed normally
--------------------------------------------------------------------------

-- 59 minutes later (the deadline is 1 hour after the push) every job is
-- claimed; the returned queue_job rows carry their deadlines
SET jobqueue.clock_offset = '59 minutes';
CREATE TEMP TABLE early AS SELECT * FROM queue_reserve('{dl}', max_jobs => 10);
SELECT name, attempts, deadline = :'d1'::timestamptz AS deadline_returned,
       deadline IS NULL AS no_deadline
FROM early ORDER BY name COLLATE "C";
SELECT count(*) AS failed FROM queue_failed_jobs;
-- ... and completed with their tokens
SELECT cardinality(queue_delete_many(array_agg(id), array_agg(token))) AS completed FROM early;
SELECT count(*) AS jobs_left FROM queue_jobs;
RESET jobqueue.clock_offset;
DROP TABLE early;

--------------------------------------------------------------------------
-- past its deadline a job is failed as expired, and the search goes on
--------------------------------------------------------------------------

-- fixtures: an expiring job of higher priority, with a payload, and a job
-- without deadline behind it in the same queue
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('expires', '{"keep": [1, 2, 3]}', 'dl', priority => 10,
                  max_attempts => 5, deadline => :'d1') AS exp_id \gset
SELECT queue_push('stays', '{"n": 2}', 'dl') AS stay_id \gset
CREATE TEMP TABLE before_expiry AS SELECT * FROM queue_jobs;

-- 2 hours later, before any claim: the expired job is not swept yet (the
-- sweep happens at claim time), so it still counts as pending
SET jobqueue.clock_offset = '2 hours';
SELECT queue_pending('dl') AS pending, queue_pending() AS pending_all;
SELECT * FROM queue_stats();
SELECT queue, pending, delayed, reserved, total FROM queue_list();
SELECT count(*) AS failed FROM queue_failed_jobs;

-- queue_reserve does not hand out the expired job (although it has the
-- higher priority) but the other job of the queue, in the same call
SELECT clock_timestamp() AS t0 \gset
CREATE TEMP TABLE claim AS SELECT * FROM queue_reserve('{dl}');
SELECT count(*) AS claimed, bool_and(id = :stay_id) AS is_other_job, bool_and(attempts = 1) AS attempt_1
FROM claim;

-- the expired job moved to queue_failed_jobs under its own id, keeping its
-- attempts, max_attempts, payload, priority, queue, name and created_at
SELECT f.job_id = :exp_id AS same_id, f.queue, f.name, f.payload, f.priority,
       f.attempts, f.max_attempts, f.created_at = b.created_at AS same_created_at,
       f.failed_at BETWEEN :'t0'::timestamptz + interval '2 hours'
                       AND clock_timestamp() + interval '2 hours' AS failed_at_queue_clock
FROM queue_failed_jobs f JOIN before_expiry b ON b.id = f.id;
-- its error names the deadline
SELECT left(error, 22) AS error_start,
       error = pg_temp.expired_error(:'d1') AS error_exact
FROM queue_failed_jobs WHERE id = :exp_id;
SELECT count(*) AS in_jobs FROM queue_jobs WHERE id = :exp_id;

-- now swept, it no longer counts as pending
SELECT queue_pending('dl') AS pending;
SELECT * FROM queue_stats();
SELECT queue_delete(id, token) AS completed FROM claim;
RESET jobqueue.clock_offset;
DROP TABLE claim, before_expiry;
TRUNCATE queue_jobs, queue_failed_jobs;

-- with max_jobs: three expired jobs (ahead by priority) and three live ones
-- in one queue; a batch of 2 gets the two best live jobs, every expired
-- job is failed by that same call
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT pg_temp.queued(queue_push_many(jsonb_build_array(
    jsonb_build_object('name', 'exp-a', 'queue', 'dlb', 'priority', 9, 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'live-a', 'queue', 'dlb', 'priority', 5),
    jsonb_build_object('name', 'exp-b', 'queue', 'dlb', 'priority', 8, 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'live-b', 'queue', 'dlb', 'priority', 4, 'deadline', :'d1'::timestamptz + interval '1 day'),
    jsonb_build_object('name', 'exp-c', 'queue', 'dlb', 'priority', 7, 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'live-c', 'queue', 'dlb', 'priority', 3)
))) AS pushed;
SET jobqueue.clock_offset = '2 hours';
SELECT name, priority FROM queue_reserve('{dlb}', max_jobs => 2);
SELECT name, error = pg_temp.expired_error(:'d1') AS expired_error
FROM queue_failed_jobs ORDER BY name;
-- the third live job is still there for the next claim
SELECT name FROM queue_reserve('{dlb}', max_jobs => 10);
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a batch larger than what is left: only live jobs come back, all expired
-- ones are failed
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT pg_temp.queued(queue_push_many(jsonb_build_array(
    jsonb_build_object('name', 'exp-1', 'queue', 'dlb', 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'live-1', 'queue', 'dlb'),
    jsonb_build_object('name', 'exp-2', 'queue', 'dlb', 'deadline', :'d1'::timestamptz),
    jsonb_build_object('name', 'live-2', 'queue', 'dlb')
))) AS pushed;
SET jobqueue.clock_offset = '2 hours';
SELECT name FROM queue_reserve('{dlb}', max_jobs => 10);
SELECT name FROM queue_failed_jobs ORDER BY name;
SELECT count(*) AS jobs_left FROM queue_jobs;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- across queues: the first queue holds only an expired job, the second a
-- live one; one call fails the first and returns the second
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('first-expired', queue => 'dl-a', deadline => :'d1') AS exp_id \gset
SELECT queue_push('second-live', queue => 'dl-b') AS live_id \gset
SELECT queue_push('third-expired', queue => 'dl-c', deadline => :'d1') AS exp_c_id \gset
SET jobqueue.clock_offset = '2 hours';
SELECT name, queue, id = :live_id AS is_live FROM queue_reserve('{dl-a,dl-b,dl-c}');
SELECT name, queue, error = pg_temp.expired_error(:'d1') AS expired_error
FROM queue_failed_jobs ORDER BY name;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- in a batch across queues, the expired jobs of each queue are skipped and
-- the live ones of every queue returned in precedence order
SELECT clock_timestamp() AS t \gset
SELECT pg_temp.queued(queue_push_many(jsonb_build_array(
    jsonb_build_object('name', 'a-exp', 'queue', 'dl-a', 'priority', 1, 'deadline', :'t'::timestamptz + interval '1 minute'),
    jsonb_build_object('name', 'a-live', 'queue', 'dl-a'),
    jsonb_build_object('name', 'b-exp', 'queue', 'dl-b', 'priority', 1, 'deadline', :'t'::timestamptz + interval '1 minute'),
    jsonb_build_object('name', 'b-live', 'queue', 'dl-b')
))) AS pushed;
SET jobqueue.clock_offset = '2 hours';
SELECT name, queue FROM queue_reserve('{dl-b,dl-a}', max_jobs => 3);
SELECT name FROM queue_failed_jobs ORDER BY name;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a claim sweeps only the queues it was asked for: an expired job of
-- another queue stays in queue_jobs (still pending) until its queue is claimed
SELECT clock_timestamp() AS t \gset
SELECT pg_temp.queued(queue_push('elsewhere', queue => 'dl-other', deadline => :'t'::timestamptz + interval '1 minute')) AS pushed;
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT count(*) AS in_jobs, queue_pending('dl-other') AS pending FROM queue_jobs;
SELECT count(*) AS failed FROM queue_failed_jobs;
SELECT count(*) AS claimed FROM queue_reserve('{dl-other}');
SELECT count(*) AS in_jobs FROM queue_jobs;
SELECT name FROM queue_failed_jobs;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a delayed job whose deadline passes before a claim looks at it is failed
-- as expired when its delay ends, never handed out
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('late', queue => 'dl', delay => '10 minutes', deadline => :'d1') AS late_id \gset
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT job_id = :late_id AS same_id, attempts, error = pg_temp.expired_error(:'d1') AS expired_error
FROM queue_failed_jobs;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- a job held by a live lease is left alone past its deadline
--------------------------------------------------------------------------

-- claimed with a 3-hour lease, 2 hours later (past the deadline) the job is
-- not failed, not handed out again, and its worker completes it
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('long-run', queue => 'dl', deadline => :'d1') AS held_id \gset
CREATE TEMP TABLE held AS SELECT * FROM queue_reserve('{dl}', lease => '3 hours');
SELECT count(*) AS claimed, bool_and(id = :held_id) AS same_job FROM held;
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT count(*) AS failed FROM queue_failed_jobs;
SELECT token = (SELECT token FROM held) AS same_claim, ready FROM queue_jobs WHERE id = :held_id;
SELECT * FROM queue_stats();
-- the worker's calls still work: extend, then complete
SELECT queue_extend(id, token, '10 minutes') AS extended FROM held;
SELECT queue_delete(id, token) AS completed FROM held;
SELECT count(*) AS jobs, (SELECT count(*) FROM queue_failed_jobs) AS failed FROM queue_jobs;
RESET jobqueue.clock_offset;
DROP TABLE held;

-- when that lease runs out past the deadline, the job is failed as expired
-- instead of handed out again (it is not on its last attempt: 1 of 3)
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('worker-dies', '{"w": 1}', 'dl', deadline => :'d1') AS held_id \gset
CREATE TEMP TABLE held AS SELECT * FROM queue_reserve('{dl}', lease => '90 minutes');
SELECT count(*) AS claimed, bool_and(id = :held_id) AS same_job FROM held;
-- at +80 minutes: past the deadline, the lease still live: left alone
SET jobqueue.clock_offset = '80 minutes';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT count(*) AS in_jobs FROM queue_jobs WHERE id = :held_id;
-- at +2 hours: the lease ran out: failed as expired, not handed out
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT job_id = :held_id AS same_id, attempts, max_attempts, payload,
       error = pg_temp.expired_error(:'d1') AS expired_error
FROM queue_failed_jobs;
-- the dead worker's token now gets false everywhere
SELECT queue_delete(id, token) AS completed, queue_extend(id, token, '1 minute') AS extended
FROM held;
RESET jobqueue.clock_offset;
DROP TABLE held;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- an expired job that had an error keeps it in its failed row
--------------------------------------------------------------------------

-- claimed, released at once with an error, then expired: the error is the
-- expiry, then a new line and 'last error: ...'
SELECT clock_timestamp() + interval '1 hour' AS d1 \gset
SELECT queue_push('flaky', queue => 'dl', deadline => :'d1') AS flaky_id \gset
SELECT queue_release(id, token, '0', 'connection refused') AS released
FROM queue_reserve('{dl}');
SELECT last_error, attempts FROM queue_jobs WHERE id = :flaky_id;
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT attempts, error = pg_temp.expired_error(:'d1', 'connection refused') AS error_exact,
       split_part(error, E'\n', 2) AS second_line
FROM queue_failed_jobs WHERE id = :flaky_id;
RESET jobqueue.clock_offset;

-- a job released on purpose (error '') gets no 'last error' line
SELECT clock_timestamp() + interval '1 hour' AS d2 \gset
SELECT queue_push('released', queue => 'dl', deadline => :'d2') AS rel_id \gset
SELECT queue_release(id, token, '0') AS released FROM queue_reserve('{dl}');
SET jobqueue.clock_offset = '2 hours';
SELECT count(*) AS claimed FROM queue_reserve('{dl}');
SELECT error = pg_temp.expired_error(:'d2') AS error_exact, position(E'\n' IN error) AS newline_at
FROM queue_failed_jobs WHERE id = :rel_id;
RESET jobqueue.clock_offset;

--------------------------------------------------------------------------
-- a retried expired job comes back without a deadline
--------------------------------------------------------------------------

-- queue_retry_failed puts it back under its id, attempts 0, no deadline,
-- and it is claimable even though the old deadline has long passed
SET jobqueue.clock_offset = '2 hours';
SELECT queue_retry_failed(:flaky_id) AS retried;
SELECT deadline IS NULL AS no_deadline, attempts, ready, last_error = '' AS error_empty
FROM queue_jobs WHERE id = :flaky_id;
SELECT count(*) AS claimed, bool_and(id = :flaky_id) AS same_job, bool_and(deadline IS NULL) AS returned_no_deadline
FROM queue_reserve('{dl}');
-- retrying every failed job: the same
SELECT queue_retry_failed() AS retried;
SELECT count(*) AS claimed, bool_and(id = :rel_id) AS same_job FROM queue_reserve('{dl}');
SELECT count(*) AS failed FROM queue_failed_jobs;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- a deadline must come after the moment the job becomes due (22023)
--------------------------------------------------------------------------

-- deadline equal to now or to the end of the delay (computed just before
-- the call, so not later than the queue's now + delay), or earlier: 22023;
-- one second after the due time is accepted
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('d', deadline => clock_timestamp())$$,
    $$SELECT queue_push('d', deadline => clock_timestamp() - interval '1 second')$$,
    $$SELECT queue_push('d', deadline => '-infinity')$$,
    $$SELECT queue_push('d', deadline => clock_timestamp() + interval '1 second')$$,
    $$SELECT queue_push('d', deadline => 'infinity')$$,
    $$SELECT queue_push('d', delay => '1 hour', deadline => clock_timestamp() + interval '1 hour')$$,
    $$SELECT queue_push('d', delay => '1 hour', deadline => clock_timestamp() + interval '59 minutes')$$,
    $$SELECT queue_push('d', delay => '1 hour', deadline => clock_timestamp() + interval '1 hour 1 second')$$,
    $$SELECT queue_push_many('[{"name": "d", "deadline": "2000-01-01 00:00:00+00"}]')$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'd', 'deadline', clock_timestamp())))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'd', 'delay', '1 hour', 'deadline', clock_timestamp() + interval '1 hour')))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'd', 'delay', 3600, 'deadline', clock_timestamp() + interval '1 hour')))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'd', 'delay', 3600, 'deadline', clock_timestamp() + interval '1 hour 1 second')))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'ok'), jsonb_build_object('name', 'd', 'deadline', clock_timestamp())))$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- the due time is on the queue's clock: with the clock 2 hours ahead, a
-- deadline 1 hour after the wall clock is already in the past
SET jobqueue.clock_offset = '2 hours';
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('d', deadline => clock_timestamp() + interval '1 hour')$$,
    $$SELECT queue_push('d', deadline => clock_timestamp() + interval '2 hours 1 minute')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET jobqueue.clock_offset;

-- the same error at top level; nothing was written by any of these
SELECT queue_push('d', deadline => clock_timestamp() - interval '1 minute');
SELECT count(*) AS jobs FROM queue_jobs;

--------------------------------------------------------------------------
-- a NULL deadline is none: the job never expires
--------------------------------------------------------------------------

-- pushed with deadline NULL (and in a batch with "deadline": null), the
-- jobs are still claimed a year later
SELECT pg_temp.queued(queue_push('forever', queue => 'dl', deadline => NULL)) AS pushed;
SELECT pg_temp.queued(queue_push_many('[{"name": "forever-many", "queue": "dl", "deadline": null}]')) AS pushed;
SET jobqueue.clock_offset = '1 year';
SELECT name, deadline IS NULL AS no_deadline FROM queue_reserve('{dl}', max_jobs => 10) ORDER BY id;
SELECT count(*) AS failed FROM queue_failed_jobs;
RESET jobqueue.clock_offset;

-- clean up
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
