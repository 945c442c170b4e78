--
-- clock: jobqueue.clock_offset shifts the queue's clock, the times it stores
-- and the times it compares; superuser only; times come from
-- clock_timestamp() (plus the offset), never from now().
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/try.sql

-- the first call loads the library, which defines its settings
SELECT queue_pending() AS pending;

-- the offset is 0 by default
SHOW jobqueue.clock_offset;

-- with an offset of 2 hours, created_at and available_at are clock_timestamp() + 2 hours
SET jobqueue.clock_offset = '2 hours';
SHOW jobqueue.clock_offset;
SELECT clock_timestamp() AS t0 \gset
SELECT queue_push('shifted', queue => 'clk') AS id \gset
SELECT created_at BETWEEN :'t0'::timestamptz + interval '2 hours'
                      AND clock_timestamp() + interval '2 hours' AS created_shifted,
       available_at = created_at AS due_at_push
FROM queue_jobs WHERE id = :id;
-- ... and the job is due on the shifted clock
SELECT queue_pending('clk') AS pending;
SELECT count(*) AS claimed, bool_and(id = :id) AS same_job FROM queue_reserve('{clk}');
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a job delayed by 1 hour is not due, neither at +59 minutes ...
SELECT clock_timestamp() AS t0 \gset
SELECT queue_push('later', queue => 'clk', delay => '1 hour') AS id \gset
SELECT available_at - created_at = interval '1 hour' AS delay_1h,
       created_at BETWEEN :'t0' AND clock_timestamp() AS created_unshifted
FROM queue_jobs WHERE id = :id;
SELECT queue_pending('clk') AS pending;
SELECT * FROM queue_stats();
SELECT count(*) AS claimed FROM queue_reserve('{clk}');
SET jobqueue.clock_offset = '59 minutes';
SELECT queue_pending('clk') AS pending;
SELECT count(*) AS claimed FROM queue_reserve('{clk}');
-- ... but becomes due by travelling to +61 minutes, and can be claimed there
SET jobqueue.clock_offset = '61 minutes';
SELECT queue_pending('clk') AS pending;
SELECT * FROM queue_stats();
SELECT clock_timestamp() AS t0 \gset
CREATE TEMP TABLE first_claim AS
    SELECT * FROM queue_reserve('{clk}', lease => '5 minutes');
SELECT count(*) AS claimed, bool_and(id = :id) AS same_job, bool_and(attempts = 1) AS attempt_1
FROM first_claim;
-- the lease ends 5 minutes after the shifted now
SELECT reserved_until BETWEEN :'t0'::timestamptz + interval '66 minutes'
                          AND clock_timestamp() + interval '66 minutes' AS lease_shifted
FROM queue_jobs WHERE id = :id;
SELECT * FROM queue_stats();

-- 4 minutes later the lease still holds; queue_extend counts from the shifted now
SET jobqueue.clock_offset = '65 minutes';
SELECT * FROM queue_stats();
SELECT count(*) AS claimed FROM queue_reserve('{clk}');
SELECT clock_timestamp() AS t0 \gset
SELECT queue_extend(id, token, '5 minutes') AS extended FROM first_claim;
SELECT reserved_until BETWEEN :'t0'::timestamptz + interval '70 minutes'
                          AND clock_timestamp() + interval '70 minutes' AS extended_shifted
FROM queue_jobs WHERE id = :id;
SET jobqueue.clock_offset = '69 minutes';
SELECT * FROM queue_stats();
SELECT count(*) AS claimed FROM queue_reserve('{clk}');

-- travelling past the lease's end makes the job due again ...
SET jobqueue.clock_offset = '71 minutes';
SELECT * FROM queue_stats();
SELECT queue_pending('clk') AS pending;
-- ... and another claim takes it: second attempt, new token; the old token is dead
CREATE TEMP TABLE second_claim AS SELECT * FROM queue_reserve('{clk}');
SELECT count(*) AS claimed, bool_and(s.id = :id) AS same_job,
       bool_and(s.attempts = 2) AS attempt_2, bool_and(s.token <> f.token) AS new_token
FROM second_claim s, first_claim f;
SELECT queue_delete(id, token) AS old_token_deletes FROM first_claim;
SELECT queue_delete(id, token) AS new_token_deletes FROM second_claim;
RESET jobqueue.clock_offset;

-- a job whose last attempt's lease ran out goes to the failed table on the
-- next claim, failed_at on the shifted clock
SELECT queue_push('last', queue => 'clk', max_attempts => 1) AS id \gset
SELECT count(*) AS claimed FROM queue_reserve('{clk}', lease => '1 minute');
SET jobqueue.clock_offset = '2 minutes';
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS claimed FROM queue_reserve('{clk}');
SELECT job_id = :id AS same_job, attempts, error,
       failed_at BETWEEN :'t0'::timestamptz + interval '2 minutes'
                     AND clock_timestamp() + interval '2 minutes' AS failed_shifted
FROM queue_failed_jobs;
SELECT count(*) AS left_in_queue FROM queue_jobs;
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a negative offset: created_at is clock_timestamp() - 1 hour
SET jobqueue.clock_offset = '-1 hour';
SHOW jobqueue.clock_offset;
SELECT clock_timestamp() AS t0 \gset
SELECT queue_push('early', queue => 'neg', delay => '30 minutes') AS id \gset
SELECT created_at BETWEEN :'t0'::timestamptz - interval '1 hour'
                      AND clock_timestamp() - interval '1 hour' AS created_shifted,
       available_at - created_at = interval '30 minutes' AS delay_30m
FROM queue_jobs WHERE id = :id;
-- on the rewound clock the job is 30 minutes away
SELECT queue_pending('neg') AS pending;
SELECT count(*) AS claimed FROM queue_reserve('{neg}');
-- RESET returns to the real clock, where the job is half an hour overdue
RESET jobqueue.clock_offset;
SHOW jobqueue.clock_offset;
SELECT queue_pending('neg') AS pending;
SELECT count(*) AS claimed, bool_and(id = :id) AS same_job FROM queue_reserve('{neg}');
TRUNCATE queue_jobs, queue_failed_jobs;

-- a job pushed due now is in the future of a clock rewound by 1 hour: it is
-- not claimable there, so it is not pending but delayed (available_at in
-- the future, not held)
SELECT queue_push('now', queue => 'neg') AS id \gset
SET jobqueue.clock_offset = '-1 hour';
SELECT count(*) AS claimed FROM queue_reserve('{neg}');
SELECT queue_pending('neg') AS pending, queue_pending() AS pending_all;
SELECT * FROM queue_stats();
RESET jobqueue.clock_offset;
SELECT queue_pending('neg') AS pending;
SELECT * FROM queue_stats();
TRUNCATE queue_jobs, queue_failed_jobs;

-- after RESET, stored times are clock_timestamp() again
SELECT clock_timestamp() AS t0 \gset
SELECT queue_push('plain', queue => 'clk') AS id \gset
SELECT created_at BETWEEN :'t0' AND clock_timestamp() AS created_unshifted
FROM queue_jobs WHERE id = :id;

-- SET LOCAL shifts the clock until the end of the transaction only
BEGIN;
SET LOCAL jobqueue.clock_offset = '3 hours';
SELECT clock_timestamp() AS t0 \gset
SELECT queue_push('local', queue => 'clk') AS id \gset
COMMIT;
SHOW jobqueue.clock_offset;
SELECT created_at BETWEEN :'t0'::timestamptz + interval '3 hours'
                      AND clock_timestamp() + interval '3 hours' AS created_shifted
FROM queue_jobs WHERE id = :id;
TRUNCATE queue_jobs, queue_failed_jobs;

-- a value that is not an interval is rejected (22023) and the offset stays
SET jobqueue.clock_offset = '5 minutes';
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SET jobqueue.clock_offset = 'banana'$$,
    $$SET jobqueue.clock_offset = '2 hours and a bit'$$,
    $$SELECT set_config('jobqueue.clock_offset', 'banana', false)$$,
    $$SET jobqueue.clock_offset = '-90 seconds'$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
SET jobqueue.clock_offset = 'banana';
SHOW jobqueue.clock_offset;
RESET jobqueue.clock_offset;

-- a non-superuser cannot set, reset or set_config the offset (42501); the
-- superuser's offset stays in force
CREATE ROLE regress_jq_clock;
SET jobqueue.clock_offset = '7 minutes';
SET ROLE regress_jq_clock;
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SET jobqueue.clock_offset = '2 hours'$$,
    $$SET LOCAL jobqueue.clock_offset = '2 hours'$$,
    $$SET jobqueue.clock_offset = '0'$$,
    $$RESET jobqueue.clock_offset$$,
    $$SELECT set_config('jobqueue.clock_offset', '2 hours', false)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
SET jobqueue.clock_offset = '2 hours';
SHOW jobqueue.clock_offset;
RESET ROLE;
SHOW jobqueue.clock_offset;
RESET jobqueue.clock_offset;
DROP ROLE regress_jq_clock;

-- times come from clock_timestamp(), not from the transaction's start:
-- two pushes of one transaction, 0.05 s apart, have different created_at
BEGIN;
SELECT queue_push('a', queue => 'tx') AS id_a \gset
SELECT pg_sleep(0.05);
SELECT queue_push('b', queue => 'tx') AS id_b \gset
SELECT b.created_at - a.created_at >= interval '0.05 seconds' AS apart,
       a.created_at >= now() AS a_not_before_start,
       b.created_at >= now() + interval '0.05 seconds' AS b_after_start
FROM queue_jobs a, queue_jobs b WHERE a.id = :id_a AND b.id = :id_b;
-- a claim in the same transaction leases from the wall clock too
SELECT bool_and(reserved_until >= now() + interval '60.05 seconds') AS lease_from_clock
FROM queue_reserve('{tx}', max_jobs => 2);
COMMIT;

-- clean up
TRUNCATE queue_jobs, queue_failed_jobs;
