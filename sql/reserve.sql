--
-- reserve: claim order, queue precedence, batches, leases, tokens, expiry
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;
\i sql/include/clock.sql
\i sql/include/queued.sql
-- six jobs in queue q whose claim order is known:
--   p5 (priority 5), tie-low and tie-high (priority 3, same available_at, lowest id first),
--   p0-old (priority 0, available_at an hour earlier though pushed later), p0-new, p-1 (priority -1)
-- The clock only moves forward in this file (offsets grow), so every pushed job stays due.
CREATE FUNCTION pg_temp.order_fixture(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    low bigint;
    high bigint;
BEGIN
    PERFORM set_config('jobqueue.clock_offset', '-2 hours', true);
    PERFORM queue_push('p0-new', queue => q);
    PERFORM queue_push('p-1', queue => q, priority => -1);
    PERFORM queue_push('p5', queue => q, priority => 5);
    low := queue_push('tie-low', queue => q, priority => 3);
    high := queue_push('tie-high', queue => q, priority => 3);
    -- same available_at for both ties (written high first, so the heap order is high, low)
    UPDATE queue_jobs SET available_at = '2000-01-01 00:00:00+00' WHERE id = high;
    UPDATE queue_jobs SET available_at = '2000-01-01 00:00:00+00' WHERE id = low;
    PERFORM set_config('jobqueue.clock_offset', '-3 hours', true);
    PERFORM queue_push('p0-old', queue => q);
END $$;

-- claim order one by one: higher priority first, then earliest available_at, then lowest id
BEGIN;
SELECT pg_temp.order_fixture('ord');
COMMIT;
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT name, priority, attempts FROM queue_reserve('{ord}');
SELECT count(*) AS seventh_claim FROM queue_reserve('{ord}');

-- a batch claim returns up to max_jobs jobs, in the order of one-by-one claims
BEGIN;
SELECT pg_temp.order_fixture('batch');
COMMIT;
SELECT name, priority, attempts FROM queue_reserve('{batch}', max_jobs => 4);
-- the rest: fewer than max_jobs are due, so fewer come back
SELECT name, priority, attempts FROM queue_reserve('{batch}', max_jobs => 10);
SELECT count(*) AS nothing_left FROM queue_reserve('{batch}', max_jobs => 10);

-- a batch claim: every job gets attempts 1 and its own non-NULL token, recorded in the table
BEGIN;
SELECT pg_temp.order_fixture('tokens');
COMMIT;
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve('{tokens}', max_jobs => 6);
SELECT count(*) AS claimed, count(DISTINCT token) AS distinct_tokens,
       bool_and(token IS NOT NULL) AS tokens_set, bool_and(attempts = 1) AS attempts_one
  FROM claimed;
SELECT bool_and(j.token = c.token AND j.attempts = 1 AND j.reserved_until = c.reserved_until) AS table_agrees
  FROM claimed c JOIN queue_jobs j USING (id);
DROP TABLE claimed;

-- queues are taken in precedence order: '{high,low}' takes high first even if low has higher priority
SELECT queue_push('low-1', queue => 'low', priority => 100) AS low1 \gset
SELECT queue_push('high-1', queue => 'high', priority => -5) AS high1 \gset
SELECT queue_push('high-2', queue => 'high', priority => 0) AS high2 \gset
SELECT queue_push('low-2', queue => 'low', priority => 0) AS low2 \gset
SELECT queue, name FROM queue_reserve('{high,low}');
SELECT queue, name FROM queue_reserve('{high,low}');
SELECT queue, name FROM queue_reserve('{high,low}');
SELECT queue, name FROM queue_reserve('{high,low}');
SELECT count(*) AS nothing_left FROM queue_reserve('{high,low}');

-- precedence in a batch: the first queue's jobs in claim order, then the next queue's
SELECT pg_temp.queued(queue_push('low-1', queue => 'low', priority => 100)) AS pushed;
SELECT pg_temp.queued(queue_push('high-1', queue => 'high', priority => -5)) AS pushed;
SELECT pg_temp.queued(queue_push('high-2', queue => 'high', priority => 0)) AS pushed;
SELECT pg_temp.queued(queue_push('low-2', queue => 'low', priority => 0)) AS pushed;
SELECT queue, name FROM queue_reserve('{low,high}', max_jobs => 3);
SELECT queue, name FROM queue_reserve('{low,high}', max_jobs => 3);

-- a queue missing from the list is not served
SELECT pg_temp.queued(queue_push('elsewhere', queue => 'unlisted')) AS pushed;
SELECT count(*) AS claimed FROM queue_reserve('{high,low}');
SELECT queue_pending('unlisted') AS still_pending;

-- attempts are incremented by every claim, in the result and in the table
SELECT queue_push('counted', queue => 'att') AS att \gset
SELECT id = :att AS same_job, attempts, max_attempts FROM queue_reserve('{att}');
SELECT attempts FROM queue_jobs WHERE id = :att;

-- the worker name is recorded
SELECT queue_push('w', queue => 'wq') AS wj \gset
SELECT id = :wj AS same_job FROM queue_reserve('{wq}', worker => 'worker-7');
SELECT reserved_by FROM queue_jobs WHERE id = :wj;

-- a worker name longer than 200 characters is cut to 200 (no error)
SELECT queue_push('w', queue => 'wq') AS wj \gset
SELECT id = :wj AS same_job FROM queue_reserve('{wq}', worker => repeat('w', 300));
SELECT length(reserved_by) AS chars, reserved_by = repeat('w', 200) AS is_prefix
  FROM queue_jobs WHERE id = :wj;

-- a multibyte worker name is cut to 200 characters, not bytes
SELECT queue_push('w', queue => 'wq') AS wj \gset
SELECT id = :wj AS same_job FROM queue_reserve('{wq}', worker => repeat('é', 250));
SELECT length(reserved_by) AS chars, octet_length(reserved_by) AS bytes,
       reserved_by = repeat('é', 200) AS is_prefix
  FROM queue_jobs WHERE id = :wj;

-- a worker name of exactly 200 characters is kept whole
SELECT queue_push('w', queue => 'wq') AS wj \gset
SELECT id = :wj AS same_job FROM queue_reserve('{wq}', worker => repeat('x', 200));
SELECT reserved_by = repeat('x', 200) AS kept FROM queue_jobs WHERE id = :wj;

-- reserved_until is the lease from now (in the result and in the table)
SELECT queue_push('leased', queue => 'lease_q') AS lj \gset
SELECT pg_temp.qnow() AS t0 \gset
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve('{lease_q}', lease => '5 minutes');
SELECT pg_temp.qnow() AS t1 \gset
SELECT id = :lj AS same_job,
       reserved_until >= :'t0'::timestamptz + interval '5 minutes' AS at_least_lease,
       reserved_until <= :'t1'::timestamptz + interval '5 minutes' AS at_most_lease
  FROM claimed;
SELECT j.reserved_until = c.reserved_until AS table_agrees FROM claimed c JOIN queue_jobs j USING (id);
DROP TABLE claimed;

-- nothing due: an empty set (unknown queue, only delayed jobs, only held jobs)
SELECT count(*) AS unknown_queue FROM queue_reserve('{no_such_queue}');
SELECT queue_push('later', queue => 'empty_q', delay => '30 minutes') AS dj \gset
SELECT count(*) AS only_delayed FROM queue_reserve('{empty_q}');
SELECT count(*) AS only_held FROM queue_reserve('{lease_q}');

-- a delayed job becomes claimable once the clock passes its delay
SET jobqueue.clock_offset = '29 minutes';
SELECT count(*) AS before_delay_end FROM queue_reserve('{empty_q}');
SET jobqueue.clock_offset = '31 minutes';
SELECT id = :dj AS same_job, name, attempts FROM queue_reserve('{empty_q}');

-- a held job is not claimable until its lease ends; then it is claimed again with attempts + 1 and a new token
SELECT queue_push('held', queue => 'held_q') AS hj \gset
SELECT id AS h_id, token AS h_tok1, attempts AS h_att FROM queue_reserve('{held_q}', lease => '1 minute') \gset
SELECT :h_id = :hj AS same_job, :h_att AS attempts;
SET jobqueue.clock_offset = '31 minutes 30 seconds';
SELECT count(*) AS claimed_during_lease FROM queue_reserve('{held_q}');
SET jobqueue.clock_offset = '33 minutes';
SELECT id AS h_id2, token AS h_tok2, attempts AS h_att2 FROM queue_reserve('{held_q}') \gset
SELECT :h_id2 = :hj AS same_job, :h_att2 AS attempts, :h_tok2 <> :h_tok1 AS new_token;
-- the old token is fenced off: it cannot complete the job, the new one can
SELECT queue_delete(:hj, :h_tok1) AS old_token_delete;
SELECT count(*) AS still_there FROM queue_jobs WHERE id = :hj;
SELECT queue_delete(:hj, :h_tok2) AS new_token_delete;

-- the lease of the last attempt ran out: the next claim moves the job to the failed table, never hands it out
SELECT queue_push('doomed', '{"k": 1}', queue => 'exp_q', priority => 4, max_attempts => 1) AS xj \gset
SELECT id AS x_id, token AS x_tok FROM queue_reserve('{exp_q}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '35 minutes';
SELECT count(*) AS handed_out FROM queue_reserve('{exp_q}');
SELECT count(*) AS in_queue_jobs FROM queue_jobs WHERE id = :xj;
SELECT id = :xj AS same_id, job_id = :xj AS same_job_id, queue, name, payload, priority, attempts, error
  FROM queue_failed_jobs WHERE id = :xj;
SELECT queue_delete(:x_id, :x_tok) AS old_token_delete;

-- the same with a recorded error: the failed row carries it after a newline
SELECT queue_push('doomed-2', queue => 'exp_q', max_attempts => 2) AS xj2 \gset
SELECT id AS x2_id, token AS x2_tok FROM queue_reserve('{exp_q}') \gset
SELECT queue_release(:x2_id, :x2_tok, '0', 'disk full') AS released;
SELECT attempts FROM queue_reserve('{exp_q}', lease => '1 minute');
SET jobqueue.clock_offset = '37 minutes';
SELECT count(*) AS handed_out FROM queue_reserve('{exp_q}');
SELECT attempts, error = E'lease expired after the last attempt (2 of 2)\nlast error: disk full' AS error_ok
  FROM queue_failed_jobs WHERE id = :xj2;

-- the last attempt's lease ran out but no claim has swept it yet: its worker may still complete it
SELECT queue_push('late-finisher', queue => 'exp_q', max_attempts => 1) AS xj4 \gset
SELECT token AS x4_tok FROM queue_reserve('{exp_q}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '37 minutes 30 seconds';
SELECT queue_delete(:xj4, :x4_tok) AS late_delete;
SELECT count(*) AS failed_rows FROM queue_failed_jobs WHERE id = :xj4;

-- the same, but its worker extends the lease: the job is held again, and a claim neither hands it out nor fails it
SELECT queue_push('late-heartbeat', queue => 'exp_q', max_attempts => 1) AS xj5 \gset
SELECT token AS x5_tok FROM queue_reserve('{exp_q}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '38 minutes 30 seconds';
SELECT queue_extend(:xj5, :x5_tok, '10 minutes') AS late_extend;
SELECT count(*) AS handed_out FROM queue_reserve('{exp_q}');
SELECT count(*) AS failed_rows FROM queue_failed_jobs WHERE id = :xj5;
SELECT queue_delete(:xj5, :x5_tok) AS deleted;

-- a job whose lease ran out with attempts left is not failed but claimed again
SELECT queue_push('survivor', queue => 'exp_q', max_attempts => 2) AS xj3 \gset
SELECT attempts FROM queue_reserve('{exp_q}', lease => '1 minute');
SET jobqueue.clock_offset = '40 minutes';
SELECT id = :xj3 AS same_job, attempts FROM queue_reserve('{exp_q}');
SELECT count(*) AS failed_rows FROM queue_failed_jobs WHERE id = :xj3;

-- NULL arguments mean the defaults: queues '{default}', lease 60 seconds, worker '', max_jobs 1
SELECT queue_push('d1') AS d1 \gset
SELECT queue_push('d2') AS d2 \gset
SELECT pg_temp.qnow() AS t0 \gset
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve(NULL, NULL, NULL, NULL);
SELECT pg_temp.qnow() AS t1 \gset
SELECT count(*) AS claimed, bool_and(id = :d1) AS first_job FROM claimed;
SELECT reserved_by = '' AS worker_empty,
       reserved_until >= :'t0'::timestamptz + interval '60 seconds' AS at_least_60s,
       reserved_until <= :'t1'::timestamptz + interval '60 seconds' AS at_most_60s
  FROM queue_jobs WHERE id = :d1;
DROP TABLE claimed;

-- all arguments omitted: the same defaults
SELECT pg_temp.qnow() AS t0 \gset
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve();
SELECT pg_temp.qnow() AS t1 \gset
SELECT count(*) AS claimed, bool_and(id = :d2) AS second_job FROM claimed;
SELECT reserved_by = '' AS worker_empty,
       reserved_until >= :'t0'::timestamptz + interval '60 seconds' AS at_least_60s,
       reserved_until <= :'t1'::timestamptz + interval '60 seconds' AS at_most_60s
  FROM queue_jobs WHERE id = :d2;
DROP TABLE claimed;

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- a claim searches and updates without the executor (1.6,
-- store/direct_claim.c) and hands out what its statements hand out: the
-- same jobs in the same order with the same columns, from jobs spread over
-- both ring partitions and long (merged in claim order), one at a time and
-- in a batch.  The statements are made to run by a trigger of the user's
-- on UPDATE (the direct way steps aside for it), which also shows that
-- such a trigger fires for each claimed job.  A job past its deadline and
-- one not yet due are not handed out.
--------------------------------------------------------------------------
CREATE FUNCTION pg_temp.spread_fixture(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    j bigint;
BEGIN
    PERFORM set_config('jobqueue.clock_offset', '-2 hours', true);
    -- name: partition, priority, order of push
    j := queue_push('long-p1', queue => q, priority => 1);
    UPDATE queue_jobs SET ring = -1 WHERE id = j;
    j := queue_push('ring0-p1', queue => q, priority => 1);
    UPDATE queue_jobs SET ring = 0 WHERE id = j;
    j := queue_push('ring1-p1', queue => q, priority => 1);
    UPDATE queue_jobs SET ring = 1 WHERE id = j;
    j := queue_push('ring1-p7', queue => q, priority => 7);
    UPDATE queue_jobs SET ring = 1 WHERE id = j;
    j := queue_push('long-p7', queue => q, priority => 7);
    UPDATE queue_jobs SET ring = -1 WHERE id = j;
    j := queue_push('ring0-p0', queue => q);
    UPDATE queue_jobs SET ring = 0 WHERE id = j;
    j := queue_push('long-p0-old', queue => q);
    UPDATE queue_jobs SET ring = -1, available_at = available_at - interval '1 hour' WHERE id = j;
    -- never handed out: past its deadline, not yet due
    j := queue_push('expired', queue => q, priority => 9);
    UPDATE queue_jobs SET ring = 1, deadline = now() - interval '3 hours' WHERE id = j;
    j := queue_push('not-yet-due', queue => q, priority => 9);
    UPDATE queue_jobs SET ring = -1, available_at = now() + interval '1 day' WHERE id = j;
END $$;

-- what a claim hands out and what it writes, in claim order (q: the fixture's queue)
CREATE FUNCTION pg_temp.claim_all(q text, per_call int) RETURNS TABLE (
    n bigint, name text, priority int, attempts int, max_attempts int, partition text,
    ready boolean, lease_returned boolean, held_until_lease boolean,
    worker text, token_matches boolean, payload jsonb, created_is_kept boolean, last_error text)
LANGUAGE plpgsql AS $$
DECLARE
    claimed queue_job;
    k bigint := 0;
    got int;
BEGIN
    LOOP
        got := 0;
        FOR claimed IN SELECT * FROM queue_reserve(ARRAY[q], '90 seconds', 'w-' || q, per_call) LOOP
            got := got + 1;
            k := k + 1;
            RETURN QUERY
            SELECT k, j.name, j.priority, j.attempts, j.max_attempts,
                   replace(j.tableoid::regclass::text, 'queue_jobs_', ''),
                   j.ready, claimed.reserved_until = j.reserved_until,
                   j.available_at = j.reserved_until,
                   j.reserved_by, j.token = claimed.token AND claimed.token IS NOT NULL,
                   claimed.payload, claimed.created_at = j.created_at, claimed.last_error
            FROM queue_jobs j WHERE j.id = claimed.id
              AND claimed.name = j.name AND claimed.attempts = j.attempts
              AND claimed.priority = j.priority AND claimed.max_attempts = j.max_attempts;
        END LOOP;
        EXIT WHEN got = 0;
    END LOOP;
END $$;

-- the direct claim, one at a time and ten at a time
BEGIN;
SELECT pg_temp.spread_fixture('direct1'), pg_temp.spread_fixture('direct10');
COMMIT;
SELECT count(DISTINCT tableoid) AS partitions_used FROM queue_jobs WHERE queue = 'direct1';
CREATE TEMP TABLE direct_one AS SELECT * FROM pg_temp.claim_all('direct1', 1);
CREATE TEMP TABLE direct_ten AS SELECT * FROM pg_temp.claim_all('direct10', 10);
SELECT * FROM direct_one ORDER BY n;

-- the statements, with a trigger of the user's on UPDATE, which fires once per claimed job
CREATE TABLE pg_temp.updated_log (name text, was_ready boolean, now_ready boolean);
CREATE FUNCTION pg_temp.log_update() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.updated_log VALUES (NEW.name, OLD.ready, NEW.ready); RETURN NEW; END$$;
BEGIN;
SELECT pg_temp.spread_fixture('stmt1'), pg_temp.spread_fixture('stmt10');
COMMIT;
TRUNCATE pg_temp.updated_log;
CREATE TRIGGER regress_jq_log_update AFTER UPDATE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_update();
CREATE TEMP TABLE stmt_one AS SELECT * FROM pg_temp.claim_all('stmt1', 1);
CREATE TEMP TABLE stmt_ten AS SELECT * FROM pg_temp.claim_all('stmt10', 10);
DROP TRIGGER regress_jq_log_update ON queue_jobs;
SELECT count(*) AS trigger_fired, bool_and(was_ready AND NOT now_ready) AS each_a_claim
  FROM pg_temp.updated_log;

-- the same, column by column (the worker's name aside)
SELECT count(*) AS claimed_each_way,
       count(*) FILTER (WHERE (d.name, d.priority, d.attempts, d.max_attempts, d.partition, d.ready,
                               d.lease_returned, d.held_until_lease, d.token_matches, d.payload,
                               d.created_is_kept, d.last_error)
                        IS NOT DISTINCT FROM
                              (s.name, s.priority, s.attempts, s.max_attempts, s.partition, s.ready,
                               s.lease_returned, s.held_until_lease, s.token_matches, s.payload,
                               s.created_is_kept, s.last_error)) AS the_same
  FROM direct_one d FULL JOIN stmt_one s USING (n);
SELECT count(*) AS claimed_each_way,
       count(*) FILTER (WHERE (d.name, d.partition, d.attempts, d.held_until_lease, d.token_matches)
                        IS NOT DISTINCT FROM (s.name, s.partition, s.attempts, s.held_until_lease,
                                              s.token_matches)) AS the_same
  FROM direct_ten d FULL JOIN stmt_ten s USING (n);
SELECT bool_and(worker = 'w-direct1') AS worker_recorded FROM direct_one;
SELECT name, token IS NULL AS not_claimed FROM queue_jobs
 WHERE queue = 'direct1' AND name = 'not-yet-due';

-- a paused queue hands out nothing; its default lease applies when the claim gives none
SELECT queue_push('paused job', queue => 'dpause') AS dpause_id \gset
SELECT queue_pause('dpause') IS NOT NULL AS paused;
SELECT count(*) AS from_paused FROM queue_reserve('{dpause}');
SELECT queue_resume('dpause') IS NOT NULL AS resumed;
SELECT queue_set_default_lease('dpause', '7 minutes') IS NOT NULL AS lease_set;
SELECT reserved_until - pg_temp.qnow() BETWEEN interval '6 minutes 50 seconds' AND interval '7 minutes'
       AS default_lease_applied
  FROM queue_reserve('{dpause}');

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
