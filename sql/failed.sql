--
-- failed: queue_failed_rows, queue_retry_failed, queue_forget_failed
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;
\i sql/include/clock.sql
-- push a job into queue q, claim it and fail it with error e; returns the job's id
CREATE FUNCTION pg_temp.fail_one(job text, q text, e text, prio int DEFAULT 0,
                                 pay jsonb DEFAULT '{}', ukey text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    pushed bigint;
    r record;
BEGIN
    pushed := queue_push(job, pay, q, priority => prio, unique_key => ukey);
    SELECT * INTO STRICT r FROM queue_reserve(ARRAY[q]);
    IF r.id <> pushed OR NOT queue_fail(r.id, r.token, e) THEN
        RAISE EXCEPTION 'could not fail job %', job;
    END IF;
    RETURN pushed;
END $$;
-- The clock only moves forward in this file (offsets grow).

-- queue_failed_rows: newest first (failed_at differs by an hour each)
SELECT pg_temp.fail_one('old', 'fq', 'e-old') AS f_old \gset
SET jobqueue.clock_offset = '1 hour';
SELECT pg_temp.fail_one('middle', 'fq', 'e-middle') AS f_mid \gset
SET jobqueue.clock_offset = '2 hours';
SELECT pg_temp.fail_one('new', 'fq', 'e-new') AS f_new \gset
SELECT name, queue, attempts, error FROM queue_failed_rows();
-- the listed rows are the failed table's rows, keyed by the job id
SELECT count(*) AS rows_matching FROM queue_failed_rows() r JOIN queue_failed_jobs f USING (id)
 WHERE r.job_id = r.id AND r.failed_at = f.failed_at;

-- queue_failed_rows(max_rows): only the newest max_rows
SELECT name FROM queue_failed_rows(2);
SELECT name FROM queue_failed_rows(max_rows => 1);

-- queue_failed_rows with NULL or no argument returns at most 50 rows
DO $$
BEGIN
    FOR i IN 1..52 LOOP
        PERFORM pg_temp.fail_one('bulk-' || i, 'bulk_q', 'bulk error');
    END LOOP;
END $$;
SELECT queue_failed_count() AS failed;
SELECT count(*) AS null_rows FROM queue_failed_rows(NULL);
SELECT count(*) AS default_rows FROM queue_failed_rows();
SELECT count(*) AS rows_100 FROM queue_failed_rows(100);
-- the newest 50 are the last 50 failed
SELECT count(*) FILTER (WHERE name LIKE 'bulk-%') AS bulk_listed FROM queue_failed_rows(NULL);
SELECT count(*) AS oldest_bulk_listed FROM queue_failed_rows(NULL) WHERE name IN ('bulk-1', 'bulk-2');
SELECT min(id) AS bulk_first FROM queue_failed_jobs WHERE queue = 'bulk_q' \gset
SELECT queue_forget_failed(id => :bulk_first) AS forgotten;
WITH bulk AS MATERIALIZED (SELECT id FROM queue_failed_jobs WHERE queue = 'bulk_q')
SELECT sum(queue_forget_failed(id => bulk.id)) AS forgotten_rest_of_bulk FROM bulk;
SELECT queue_failed_count() AS failed;

-- queue_retry_failed(id): the job comes back under its original id and created_at, attempts 0,
-- the given max_attempts, last_error '', no unique key, due now; the failed row is gone; returns 1
SELECT queue_push('retry-me', '{"n": 42}', 'rq', priority => 6, unique_key => 'key-retry') AS rj \gset
SELECT created_at AS rj_created FROM queue_jobs WHERE id = :rj \gset
SELECT id AS rj_id, token AS rj_tok FROM queue_reserve('{rq}') \gset
SELECT queue_release(:rj_id, :rj_tok, '0', 'temporary outage') AS released;
SELECT id AS rj_id, token AS rj_tok FROM queue_reserve('{rq}') \gset
SELECT :rj_id = :rj AS same_job, queue_fail(:rj_id, :rj_tok, 'still out') AS failed;
SELECT attempts, error FROM queue_failed_jobs WHERE id = :rj;
SELECT count(*) AS rows_with_key FROM queue_jobs WHERE unique_key = 'key-retry';
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_retry_failed(:rj, 7) AS retried;
SELECT queue, name, payload, priority, attempts, max_attempts, last_error = '' AS last_error_empty,
       unique_key IS NULL AS no_key, created_at = :'rj_created'::timestamptz AS same_created_at,
       available_at >= :'t0'::timestamptz AND available_at <= pg_temp.qnow() AS due_now,
       reserved_until IS NULL AS not_held, reserved_by IS NULL AS no_worker
  FROM queue_jobs WHERE id = :rj;
SELECT count(*) AS failed_row_left FROM queue_failed_jobs WHERE id = :rj;
SELECT queue_pending('rq') AS pending;
-- the retried job is claimable at once, under its id, and counts attempts from 1 again
SELECT id = :rj AS same_id, name, attempts, max_attempts, last_error = '' AS last_error_empty
  FROM queue_reserve('{rq}');
-- its old unique key is free: a push with it makes a new job
SELECT queue_push('new-holder', queue => 'rq', unique_key => 'key-retry') <> :rj AS new_job;
SELECT count(*) AS rows_in_rq FROM queue_jobs WHERE queue = 'rq';

-- queue_retry_failed with max_attempts omitted or NULL: 3
SELECT pg_temp.fail_one('retry-default', 'rq2', 'x') AS rd1 \gset
SELECT pg_temp.fail_one('retry-null', 'rq2', 'x') AS rd2 \gset
SELECT queue_retry_failed(:rd1) AS retried_default, queue_retry_failed(:rd2, NULL) AS retried_null;
SELECT name, attempts, max_attempts FROM queue_jobs WHERE id IN (:rd1, :rd2) ORDER BY id;

-- queue_retry_failed of an unknown id (or one already retried): 0, nothing changes
SELECT queue_failed_count() AS failed_before;
SELECT queue_retry_failed(:rj) AS retried_again, queue_retry_failed(-1) AS retried_unknown;
SELECT queue_failed_count() AS failed_after;

-- queue_retry_failed(NULL) retries every failed row and returns how many
SELECT pg_temp.fail_one('all-1', 'ra', 'x') AS ra1 \gset
SELECT pg_temp.fail_one('all-2', 'rb', 'x') AS ra2 \gset
SELECT queue_failed_count() AS failed_before;
SELECT queue_retry_failed(NULL) AS retried_all;
SELECT queue_failed_count() AS failed_after;
SELECT name, queue, attempts, max_attempts FROM queue_jobs
 WHERE id IN (:ra1, :ra2, :f_old, :f_mid, :f_new) ORDER BY id;
-- with no argument at all it retries all too (none left: 0)
SELECT queue_retry_failed() AS retried_none;

-- queue_forget_failed by id: deletes that row only
TRUNCATE queue_jobs, queue_failed_jobs;
SET jobqueue.clock_offset = '3 hours';
SELECT pg_temp.fail_one('forget-a', 'gq', 'x') AS ga \gset
SET jobqueue.clock_offset = '4 hours';
SELECT pg_temp.fail_one('forget-b', 'gq', 'x') AS gb \gset
SET jobqueue.clock_offset = '5 hours';
SELECT pg_temp.fail_one('forget-c', 'gq', 'x') AS gc \gset
SELECT pg_temp.fail_one('forget-d', 'gq', 'x') AS gd \gset
SELECT queue_forget_failed(:gd) AS forgotten;
SELECT queue_forget_failed(id => :gd) AS forgotten_again, queue_forget_failed(id => -1) AS forgotten_unknown;
SELECT name FROM queue_failed_rows();

-- queue_forget_failed(before => t): deletes the rows that failed before t
SELECT queue_forget_failed(before => pg_temp.qnow() - interval '90 minutes') AS forgotten;
SELECT name FROM queue_failed_rows();
SELECT queue_forget_failed(before => pg_temp.qnow() - interval '3 hours') AS forgotten_none;
SELECT queue_failed_count() AS failed;

-- queue_forget_failed needs exactly one of id, before, all_rows => true; a refused call deletes nothing
SELECT queue_forget_failed();
\echo :SQLSTATE
SELECT queue_forget_failed(NULL, NULL, NULL);
\echo :SQLSTATE
SELECT queue_forget_failed(all_rows => false);
\echo :SQLSTATE
SELECT queue_forget_failed(id => :gb, all_rows => true);
\echo :SQLSTATE
SELECT queue_forget_failed(id => :gb, before => pg_temp.qnow());
\echo :SQLSTATE
SELECT queue_forget_failed(before => pg_temp.qnow(), all_rows => true);
\echo :SQLSTATE
SELECT queue_forget_failed(:gb, pg_temp.qnow(), true);
\echo :SQLSTATE
SELECT queue_failed_count() AS failed_still;

-- queue_forget_failed(all_rows => true): deletes every row and returns how many
SELECT queue_forget_failed(all_rows => true) AS forgotten_all;
SELECT queue_failed_count() AS failed;
SELECT queue_forget_failed(all_rows => true) AS forgotten_none;

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;
