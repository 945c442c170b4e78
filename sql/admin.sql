--
-- admin: queue_cancel, queue_clear, queue_pause / queue_resume,
-- queue_set_default_lease, queue_set_notify and queue_list (1.1).
-- (Deadlines and wake-ups are tested elsewhere.)
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql

\i sql/include/clock.sql
\i sql/include/queued.sql

--------------------------------------------------------------------------
-- queue_cancel(id, force)
--------------------------------------------------------------------------

-- a pending job: true, and it is gone
SELECT queue_push('c_pending', queue => 'cq') AS p_id \gset
SELECT queue_cancel(:p_id) AS cancelled;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :p_id;

-- a delayed job: true, and it is gone
SELECT queue_push('c_delayed', queue => 'cq', delay => '1 hour') AS d_id \gset
SELECT queue_cancel(:d_id) AS cancelled;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :d_id;

-- a job released by its worker (waiting for its backoff, not held): true
SELECT queue_push('c_released', queue => 'cq') AS r_id \gset
SELECT id AS r_id, token AS r_tok FROM queue_reserve('{cq}') \gset
SELECT queue_release(:r_id, :r_tok, '5 minutes') AS released;
SELECT queue_cancel(:r_id) AS cancelled;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :r_id;

-- a job held by a live claim: false, it stays claimed (force NULL is the
-- default, false)
SELECT queue_push('c_held', queue => 'cq') AS h_id \gset
SELECT id AS h_id, token AS h_tok FROM queue_reserve('{cq}') \gset
SELECT queue_cancel(:h_id) AS cancelled;
SELECT queue_cancel(:h_id, NULL) AS cancelled_force_null;
SELECT queue_cancel(:h_id, false) AS cancelled_no_force;
SELECT count(*) AS rows_left, bool_and(token = :h_tok AND NOT ready) AS still_claimed
FROM queue_jobs WHERE id = :h_id;

-- ... with force => true: true, gone; its worker's calls then get false
SELECT queue_cancel(:h_id, force => true) AS cancelled;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :h_id;
SELECT queue_delete(:h_id, :h_tok) AS worker_delete,
       queue_release(:h_id, :h_tok, '0') AS worker_release,
       queue_fail(:h_id, :h_tok, 'x') AS worker_fail,
       queue_extend(:h_id, :h_tok, '1 minute') AS worker_extend;
SELECT queue_failed_count() AS failed_rows;

-- a job whose lease ran out (nobody claimed it since): true without force
SELECT queue_push('c_expired', queue => 'cq') AS x_id \gset
SELECT id AS x_id, token AS x_tok FROM queue_reserve('{cq}', lease => '30 seconds') \gset
SELECT queue_cancel(:x_id) AS cancelled_while_live;
SET jobqueue.clock_offset = '1 minute';
SELECT queue_cancel(:x_id) AS cancelled_after_lease;
RESET jobqueue.clock_offset;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :x_id;

-- an unknown id: false; the id of a failed job: false, the failed row stays
SELECT queue_cancel(-1) AS unknown, queue_cancel(-1, true) AS unknown_forced;
SELECT queue_push('c_failed', queue => 'cq') AS f_id \gset
SELECT id AS f_id, token AS f_tok FROM queue_reserve('{cq}') \gset
SELECT queue_fail(:f_id, :f_tok, 'dead') AS failed;
SELECT queue_cancel(:f_id) AS cancelled, queue_cancel(:f_id, true) AS cancelled_forced;
SELECT queue_failed_count() AS failed_rows;

-- NULL id: 22004 (force has a default)
SELECT pg_temp.try('SELECT queue_cancel(NULL)') AS null_id,
       pg_temp.try('SELECT queue_cancel(NULL, true)') AS null_id_forced;

-- a cancelled job frees its unique key: the next push with it is a new job
SELECT queue_push('c_key', queue => 'cq', unique_key => 'c_key') AS k_id \gset
SELECT queue_push('c_key_again', queue => 'cq', unique_key => 'c_key') = :k_id AS key_held;
SELECT queue_cancel(:k_id) AS cancelled;
SELECT queue_push('c_key_new', queue => 'cq', unique_key => 'c_key') AS k2_id \gset
SELECT :k2_id <> :k_id AS new_job,
       (SELECT name FROM queue_jobs WHERE unique_key = 'c_key') AS key_holder;

-- ... also when it was held and cancelled with force
SELECT queue_push('c_key_held', queue => 'cq_key', unique_key => 'c_key_held') AS kh_id \gset
SELECT count(*) AS claimed FROM queue_reserve('{cq_key}');
SELECT queue_cancel(:kh_id, force => true) AS cancelled;
SELECT queue_push('c_key_held_new', queue => 'cq_key', unique_key => 'c_key_held') <> :kh_id AS new_job;

-- cancelling moves nothing to the failed table
SELECT queue_failed_count() AS failed_rows;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- queue_clear(queue)
--------------------------------------------------------------------------

-- fixtures: clq has a held, a pending and a delayed job; clq_other two jobs
SELECT queue_push('cl_held', queue => 'clq', unique_key => 'cl_key') AS cl_h \gset
SELECT id AS cl_h, token AS cl_tok FROM queue_reserve('{clq}') \gset
SELECT pg_temp.queued(queue_push('cl_pending', queue => 'clq')) AS pushed;
SELECT pg_temp.queued(queue_push('cl_delayed', queue => 'clq', delay => '1 hour')) AS pushed;
SELECT pg_temp.queued(queue_push('cl_o1', queue => 'clq_other')) AS pushed;
SELECT pg_temp.queued(queue_push('cl_o2', queue => 'clq_other')) AS pushed;
SELECT queue, pending, delayed, reserved, total FROM queue_stats() ORDER BY queue;

-- clear returns how many it deleted, held jobs included; other queues untouched
SELECT queue_clear('clq') AS cleared;
SELECT queue, count(*) AS jobs FROM queue_jobs GROUP BY queue ORDER BY queue;
SELECT queue, pending, delayed, reserved, total FROM queue_stats() ORDER BY queue;

-- the worker that held a cleared job gets false
SELECT queue_delete(:cl_h, :cl_tok) AS worker_delete,
       queue_extend(:cl_h, :cl_tok, '1 minute') AS worker_extend;

-- the cleared jobs' unique keys are free; nothing went to the failed table
SELECT queue_push('cl_key_new', queue => 'clq', unique_key => 'cl_key') <> :cl_h AS new_job;
SELECT queue_failed_count() AS failed_rows;

-- clearing again takes the job pushed since; then the queue has none: 0;
-- an unknown queue: 0
SELECT queue_clear('clq') AS cleared_again;
SELECT queue_clear('clq') AS cleared_empty;
SELECT queue_clear('clq_unknown') AS cleared_unknown;
SELECT count(*) AS clq_other_jobs FROM queue_jobs WHERE queue = 'clq_other';

-- a queue name is matched exactly (no pattern, case matters)
SELECT pg_temp.queued(queue_push('cl_case', queue => 'CLQ_other')) AS pushed;
SELECT queue_clear('clq_%') AS cleared_pattern, queue_clear('CLQ_OTHER') AS cleared_wrong_case;
SELECT queue, count(*) AS jobs FROM queue_jobs GROUP BY queue ORDER BY queue;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- queue_pause(queue) / queue_resume(queue)
--------------------------------------------------------------------------

-- fixtures: pzq has three jobs (one claimed before the pause); pzq_other
-- and pzq_next one each
SELECT pg_temp.queued(queue_push('pz_a', queue => 'pzq', priority => 3)) AS pushed;
SELECT pg_temp.queued(queue_push('pz_b', queue => 'pzq', priority => 2)) AS pushed;
SELECT pg_temp.queued(queue_push('pz_c', queue => 'pzq', priority => 1)) AS pushed;
SELECT pg_temp.queued(queue_push('pz_other', queue => 'pzq_other')) AS pushed;
SELECT pg_temp.queued(queue_push('pz_next', queue => 'pzq_next')) AS pushed;
SELECT id AS pa_id, token AS pa_tok FROM queue_reserve('{pzq}') \gset

SELECT queue_pause('pzq');
-- a paused queue hands out nothing
SELECT count(*) AS claimed FROM queue_reserve('{pzq}', max_jobs => 10);
-- its jobs stay, and count as before in queue_stats and queue_list
SELECT count(*) AS jobs FROM queue_jobs WHERE queue = 'pzq';
SELECT queue, pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'pzq';
SELECT queue, paused, pending, delayed, reserved, total FROM queue_list() WHERE queue = 'pzq';
-- other queues are unaffected
SELECT name FROM queue_reserve('{pzq_other}');
-- from a list of queues, the paused one is skipped and the next one serves
SELECT name, queue FROM queue_reserve('{pzq,pzq_next}', max_jobs => 5);
-- a job claimed before the pause can still be completed
SELECT queue_delete(:pa_id, :pa_tok) AS completed;

-- pausing twice is the same as once
SELECT queue_pause('pzq');
SELECT count(*) AS claimed FROM queue_reserve('{pzq}');
SELECT queue, paused FROM queue_list() WHERE queue LIKE 'pz%' ORDER BY queue;

-- resume: the queue hands out its jobs again, in claim order
SELECT queue_resume('pzq');
SELECT queue, paused FROM queue_list() WHERE queue = 'pzq';
SELECT name FROM queue_reserve('{pzq}', max_jobs => 5);

-- a job whose lease ran out in a paused queue is not handed out either
-- (it stays, counted as pending), and is after the resume
SELECT queue_push('pz_lease', queue => 'pzq_lease') AS pl_id \gset
SELECT count(*) AS claimed FROM queue_reserve('{pzq_lease}', lease => '30 seconds');
SELECT queue_pause('pzq_lease');
SET jobqueue.clock_offset = '1 minute';
SELECT count(*) AS claimed FROM queue_reserve('{pzq_lease}');
SELECT pending, reserved, total FROM queue_stats() WHERE queue = 'pzq_lease';
SELECT queue_resume('pzq_lease');
SELECT name, attempts FROM queue_reserve('{pzq_lease}');
RESET jobqueue.clock_offset;

-- a queue can be paused before it has any job; it is listed with 0 counts,
-- and a job pushed into it waits for the resume
SELECT queue_pause('pzq_empty');
SELECT queue, paused, pending, delayed, reserved, total FROM queue_list() WHERE queue = 'pzq_empty';
SELECT pg_temp.queued(queue_push('pz_late', queue => 'pzq_empty')) AS pushed;
SELECT count(*) AS claimed FROM queue_reserve('{pzq_empty}');
SELECT queue_resume('pzq_empty');
SELECT name FROM queue_reserve('{pzq_empty}');

-- resuming a queue that was never paused is fine
SELECT queue_resume('pzq_never');
SELECT queue, paused FROM queue_list() WHERE queue = 'pzq_never';

-- a pause written into queue_settings by hand, not by queue_pause, reaches
-- the claims of a session that keeps the queue's settings (its first claim
-- read them) within a second, and so does its undoing
SELECT pg_temp.queued(queue_push('pz_hand', queue => 'pzq_hand')) AS pushed
FROM generate_series(1, 3);
SELECT count(*) AS claimed FROM queue_reserve('{pzq_hand}');
INSERT INTO queue_settings (queue, paused, updated_at) VALUES ('pzq_hand', true, now());
SELECT pg_sleep(1.1);
SELECT count(*) AS claimed_while_paused FROM queue_reserve('{pzq_hand}');
UPDATE queue_settings SET paused = false WHERE queue = 'pzq_hand';
SELECT pg_sleep(1.1);
SELECT count(*) AS claimed_after FROM queue_reserve('{pzq_hand}');
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

--------------------------------------------------------------------------
-- queue_set_default_lease(queue, lease)
--------------------------------------------------------------------------

-- reserve without a lease (or with lease NULL) uses the queue's default lease
SELECT queue_set_default_lease('lq', '10 minutes');
SELECT pg_temp.queued(queue_push_many('[{"name": "lq_1", "queue": "lq"}, {"name": "lq_2", "queue": "lq"},
                         {"name": "lq_3", "queue": "lq"}, {"name": "lq_4", "queue": "lq"}]')) AS pushed;
SELECT pg_temp.qnow() AS t0 \gset
SELECT name,
       reserved_until >= :'t0'::timestamptz + interval '10 minutes'
         AND reserved_until <= pg_temp.qnow() + interval '10 minutes' AS lease_10min
FROM queue_reserve('{lq}');
SELECT pg_temp.qnow() AS t0 \gset
SELECT name,
       reserved_until >= :'t0'::timestamptz + interval '10 minutes'
         AND reserved_until <= pg_temp.qnow() + interval '10 minutes' AS lease_10min
FROM queue_reserve('{lq}', NULL);
-- the lease stored on the job agrees with the one returned
SELECT count(*) AS held, bool_and(reserved_until = available_at) AS lease_is_next_claim_time
FROM queue_jobs WHERE queue = 'lq' AND token IS NOT NULL;

-- an explicit lease overrides the default
SELECT pg_temp.qnow() AS t0 \gset
SELECT name,
       reserved_until >= :'t0'::timestamptz + interval '30 seconds'
         AND reserved_until <= pg_temp.qnow() + interval '30 seconds' AS lease_30s
FROM queue_reserve('{lq}', '30 seconds');

-- NULL sets it back to 60 seconds (listed as no default lease)
SELECT queue_set_default_lease('lq', NULL);
SELECT queue, default_lease IS NULL AS no_default_lease FROM queue_list() WHERE queue = 'lq';
SELECT pg_temp.qnow() AS t0 \gset
SELECT name,
       reserved_until >= :'t0'::timestamptz + interval '60 seconds'
         AND reserved_until <= pg_temp.qnow() + interval '60 seconds' AS lease_60s
FROM queue_reserve('{lq}');

-- the default lease applies again when a job whose lease ran out is claimed anew
SELECT queue_set_default_lease('lq', '2 hours');
SET jobqueue.clock_offset = '15 minutes';
SELECT pg_temp.qnow() AS t0 \gset
SELECT name, attempts,
       reserved_until >= :'t0'::timestamptz + interval '2 hours'
         AND reserved_until <= pg_temp.qnow() + interval '2 hours' AS lease_2h
FROM queue_reserve('{lq}', max_jobs => 10) ORDER BY name;
RESET jobqueue.clock_offset;

-- from a list of queues, each queue's claim uses that queue's default lease
-- (a queue without one: 60 seconds)
SELECT queue_set_default_lease('lqa', '5 minutes');
SELECT queue_set_default_lease('lqb', '20 minutes');
SELECT pg_temp.queued(queue_push('lqa_job', queue => 'lqa')) AS pushed;
SELECT pg_temp.queued(queue_push('lqb_job', queue => 'lqb')) AS pushed;
SELECT pg_temp.queued(queue_push('lqc_job', queue => 'lqc')) AS pushed;
SELECT pg_temp.qnow() AS t0 \gset
CREATE TEMP TABLE multi AS
    SELECT r.queue, r.name, r.reserved_until, pg_temp.qnow() AS t1
    FROM queue_reserve('{lqb,lqc,lqa}', max_jobs => 3) AS r;
SELECT m.queue, m.name, l.lease,
       m.reserved_until >= :'t0'::timestamptz + l.lease AND m.reserved_until <= m.t1 + l.lease AS lease_ok
FROM multi m
JOIN (VALUES ('lqa', interval '5 minutes'), ('lqb', interval '20 minutes'),
             ('lqc', interval '60 seconds')) AS l(queue, lease) USING (queue)
ORDER BY m.queue;
-- ... and an explicit lease applies to all of them
SELECT pg_temp.queued(queue_push('lqa_job2', queue => 'lqa')) AS pushed;
SELECT pg_temp.queued(queue_push('lqb_job2', queue => 'lqb')) AS pushed;
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue, name,
       reserved_until >= :'t0'::timestamptz + interval '45 seconds'
         AND reserved_until <= pg_temp.qnow() + interval '45 seconds' AS lease_45s
FROM queue_reserve('{lqa,lqb}', '45 seconds', max_jobs => 2);

-- the limits: 1 second and 1 day are accepted; outside them 22023
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_set_default_lease('lq_lim', '1 second')$$,
    $$SELECT queue_set_default_lease('lq_lim', '1 day')$$,
    $$SELECT queue_set_default_lease('lq_lim', '24 hours')$$,
    $$SELECT queue_set_default_lease('lq_lim', '0.5 seconds')$$,
    $$SELECT queue_set_default_lease('lq_lim', '0')$$,
    $$SELECT queue_set_default_lease('lq_lim', '-1 minute')$$,
    $$SELECT queue_set_default_lease('lq_lim', '1 day 1 second')$$,
    $$SELECT queue_set_default_lease('lq_lim', '1 mon')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
-- a rejected value leaves the setting as it was
SELECT queue_set_default_lease('lqa', '2 days');
SELECT queue, default_lease FROM queue_list() WHERE queue IN ('lqa', 'lqb', 'lq_lim') ORDER BY queue;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

--------------------------------------------------------------------------
-- queue_set_notify(queue, enabled)  (the wake-ups themselves: elsewhere)
--------------------------------------------------------------------------

-- the setting shows in queue_list; a queue without settings has notify on
SELECT pg_temp.queued(queue_push('n_job', queue => 'nq_default')) AS pushed;
SELECT queue_set_notify('nq', false);
SELECT queue, notify FROM queue_list() ORDER BY queue;
SELECT queue_set_notify('nq', true);
SELECT queue, notify FROM queue_list() WHERE queue = 'nq';

-- the settings of a queue are independent of each other
SELECT queue_set_notify('nq', false);
SELECT queue_pause('nq');
SELECT queue_set_default_lease('nq', '3 minutes');
SELECT queue, paused, default_lease, notify FROM queue_list() WHERE queue = 'nq';
SELECT queue_resume('nq');
SELECT queue_set_default_lease('nq', NULL);
SELECT queue, paused, default_lease, notify FROM queue_list() WHERE queue = 'nq';
SELECT queue_set_notify('nq', true);
SELECT queue, paused, default_lease, notify FROM queue_list() WHERE queue = 'nq';

-- enabled NULL: 22004
SELECT pg_temp.try($$SELECT queue_set_notify('nq', NULL)$$) AS null_enabled;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

--------------------------------------------------------------------------
-- queue names: NULL 22004, empty 22023, longer than 64 characters 54000
--------------------------------------------------------------------------
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_clear(NULL)$$,
    $$SELECT queue_clear('')$$,
    $$SELECT queue_clear(repeat('q', 65))$$,
    $$SELECT queue_pause(NULL)$$,
    $$SELECT queue_pause('')$$,
    $$SELECT queue_pause(repeat('q', 65))$$,
    $$SELECT queue_resume(NULL)$$,
    $$SELECT queue_resume('')$$,
    $$SELECT queue_resume(repeat('é', 65))$$,
    $$SELECT queue_set_default_lease(NULL, '1 minute')$$,
    $$SELECT queue_set_default_lease('', '1 minute')$$,
    $$SELECT queue_set_default_lease(repeat('q', 65), '1 minute')$$,
    $$SELECT queue_set_notify(NULL, true)$$,
    $$SELECT queue_set_notify('', true)$$,
    $$SELECT queue_set_notify(repeat('q', 65), true)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
-- 64 characters are accepted
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_clear(repeat('é', 64))$$,
    $$SELECT queue_pause(repeat('é', 64))$$,
    $$SELECT queue_resume(repeat('é', 64))$$,
    $$SELECT queue_set_default_lease(repeat('é', 64), '1 minute')$$,
    $$SELECT queue_set_notify(repeat('é', 64), false)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

--------------------------------------------------------------------------
-- queue_list()
--------------------------------------------------------------------------

-- its columns, in order
SELECT pg_get_function_arguments('queue_list()'::regprocedure) AS columns;

-- nothing queued and no settings: no rows
SELECT count(*) AS queues FROM queue_list();

-- fixtures: a_list has a pending, a delayed, a held job and one whose
-- lease ran out (pending again); B_list one pending job and a default
-- lease; b_list settings only (paused); c_list a delayed job and notify off
SELECT pg_temp.queued(queue_push('al_expired', queue => 'a_list')) AS pushed;
SELECT count(*) AS claimed FROM queue_reserve('{a_list}', lease => '30 seconds');
SELECT pg_temp.queued(queue_push('al_held', queue => 'a_list')) AS pushed;
SELECT count(*) AS claimed FROM queue_reserve('{a_list}', lease => '1 hour');
SELECT pg_temp.queued(queue_push('al_pending', queue => 'a_list')) AS pushed;
SELECT pg_temp.queued(queue_push('al_delayed', queue => 'a_list', delay => '1 hour')) AS pushed;
SELECT pg_temp.queued(queue_push('bl_pending', queue => 'B_list')) AS pushed;
SELECT queue_set_default_lease('B_list', '90 seconds');
SELECT queue_pause('b_list');
SELECT pg_temp.queued(queue_push('cl_delayed', queue => 'c_list', delay => '2 hours')) AS pushed;
SELECT queue_set_notify('c_list', false);
SET jobqueue.clock_offset = '5 minutes';

-- every queue with jobs or settings, ordered by name (C collation: upper
-- case first); settings beside the backlog; a queue with settings and no
-- jobs has 0 counts
SELECT * FROM queue_list();

-- the counts agree with queue_stats for every queue that has jobs
SELECT count(*) AS queues_in_stats,
       count(*) FILTER (WHERE (l.pending, l.delayed, l.reserved, l.total)
                            = (s.pending, s.delayed, s.reserved, s.total)) AS agreeing
FROM queue_stats() s LEFT JOIN queue_list() l USING (queue);
SELECT l.queue AS only_in_list, l.total
FROM queue_list() l LEFT JOIN queue_stats() s USING (queue)
WHERE s.queue IS NULL;
RESET jobqueue.clock_offset;

-- a queue whose jobs are all gone but that has settings stays listed with 0
SELECT queue_clear('B_list') AS cleared;
SELECT queue, default_lease, pending, delayed, reserved, total FROM queue_list() WHERE queue = 'B_list';
-- a queue without settings disappears with its last job
SELECT queue_clear('a_list') AS cleared;
SELECT queue FROM queue_list();

TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
