--
-- counters: queue_counters() (1.4), per-queue counts in shared memory,
-- added when the transaction that did the work commits.  The regression
-- server preloads jobqueue; without preload queue_counters() fails with
-- 55000 (the package suite checks that on a server of its own).
-- Concurrent transactions are in the isolation spec counters.spec.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
SELECT queue_counters_reset();

\i sql/include/try.sql

-- A view of the counts that changed, for short expected output.
CREATE FUNCTION pg_temp.counts() RETURNS TABLE(queue text, pushed bigint, claimed bigint,
    completed bigint, released bigint, retried bigint, failed bigint, expired bigint)
LANGUAGE sql AS $$
    SELECT * FROM queue_counters()
    WHERE pushed + claimed + completed + released + retried + failed + expired > 0
$$;

--------------------------------------------------------------------------
-- pushes count when they commit
--------------------------------------------------------------------------

SELECT queue_push('a', queue => 'c1') > 0 AS pushed;
BEGIN;
SELECT queue_push('rolled back', queue => 'c1') > 0 AS pushed;
-- not yet committed: not counted
SELECT * FROM pg_temp.counts();
ROLLBACK;
SELECT * FROM pg_temp.counts();

-- a savepoint rolled back drops its pushes; a released one keeps them
BEGIN;
SELECT queue_push('kept', queue => 'c1') > 0 AS pushed;
SAVEPOINT s1;
SELECT queue_push('dropped', queue => 'c1') > 0 AS pushed;
SELECT queue_push('dropped', queue => 'c2') > 0 AS pushed;
ROLLBACK TO s1;
SAVEPOINT s2;
SELECT queue_push('kept in a released savepoint', queue => 'c2') > 0 AS pushed;
RELEASE s2;
COMMIT;
SELECT * FROM pg_temp.counts();

-- a savepoint released inside one that rolls back is dropped with it
BEGIN;
SAVEPOINT outer_sp;
SAVEPOINT inner_sp;
SELECT queue_push('dropped', queue => 'c2') > 0 AS pushed;
RELEASE inner_sp;
ROLLBACK TO outer_sp;
COMMIT;
SELECT * FROM pg_temp.counts();

-- a loop of subtransactions (PL/pgSQL exception blocks), half of them failing
DO $$
BEGIN
    FOR i IN 1..40 LOOP
        BEGIN
            PERFORM queue_push('looped', queue => 'c3');
            IF i % 2 = 0 THEN
                RAISE EXCEPTION 'undo push %', i;
            END IF;
        EXCEPTION WHEN raise_exception THEN
            NULL;
        END;
    END LOOP;
END
$$;
SELECT * FROM pg_temp.counts() WHERE queue = 'c3';

-- a held unique key is not a new job: not counted
SELECT queue_push('keyed', queue => 'c4', unique_key => 'k') AS keyed_id \gset
SELECT queue_push('keyed again', queue => 'c4', unique_key => 'k') = :keyed_id AS same_job;
-- batches count each job, in its own queue
SELECT cardinality(queue_push_many('[{"name": "b1", "queue": "c4"},
    {"name": "b2", "queue": "c5"}, {"name": "b3", "queue": "c5", "unique_key": "k"}]')) AS ids;
SELECT * FROM pg_temp.counts() WHERE queue IN ('c4', 'c5');

--------------------------------------------------------------------------
-- claims, completions, releases, failures, retries, expired leases
--------------------------------------------------------------------------

TRUNCATE queue_jobs, queue_failed_jobs;
SELECT queue_counters_reset();
SELECT * FROM pg_temp.counts();

SELECT count(*) AS pushed FROM (SELECT queue_push('w' || i, queue => 'cw') FROM generate_series(1, 8) i) p;
CREATE TEMP TABLE claims AS SELECT id, token FROM queue_reserve(ARRAY['cw'], '1 minute', 'w', 6);
SELECT * FROM pg_temp.counts();

-- a claim that rolls back does not count
BEGIN;
SELECT count(*) AS claimed FROM queue_reserve(ARRAY['cw'], '1 minute', 'w', 1);
ROLLBACK;

WITH c AS (SELECT id, token FROM claims ORDER BY id LIMIT 1)
SELECT queue_delete(id, token) AS deleted FROM c;
-- a stale token completes nothing: not counted
WITH c AS (SELECT id, token FROM claims ORDER BY id LIMIT 1)
SELECT queue_delete(id, token) AS deleted_again FROM c;
WITH c AS (SELECT id, token FROM claims ORDER BY id OFFSET 1 LIMIT 1)
SELECT queue_release(id, token, delay => '0') AS released FROM c;
WITH c AS (SELECT id, token FROM claims ORDER BY id OFFSET 2 LIMIT 1)
SELECT queue_fail(id, token, 'boom') AS failed FROM c;
WITH c AS (SELECT array_agg(id ORDER BY id) AS ids, array_agg(token ORDER BY id) AS tokens
           FROM (SELECT * FROM claims ORDER BY id OFFSET 3 LIMIT 1) x)
SELECT cardinality(queue_delete_many(ids, tokens)) AS deleted_many FROM c;
WITH c AS (SELECT array_agg(id ORDER BY id) AS ids, array_agg(token ORDER BY id) AS tokens
           FROM (SELECT * FROM claims ORDER BY id OFFSET 4 LIMIT 1) x)
SELECT cardinality(queue_release_many(ids, tokens, delay => '0')) AS released_many FROM c;
WITH c AS (SELECT array_agg(id ORDER BY id) AS ids, array_agg(token ORDER BY id) AS tokens
           FROM (SELECT * FROM claims ORDER BY id OFFSET 5 LIMIT 1) x)
SELECT cardinality(queue_fail_many(ids, tokens, 'boom')) AS failed_many FROM c;
SELECT * FROM pg_temp.counts();

-- a requeue from the failed table is a retry
SELECT queue_retry_failed() AS retried;
SELECT * FROM pg_temp.counts();

-- a lease that runs out: found by the next claim (expired), then claimed
-- again; on its last attempt, to the failed table instead
TRUNCATE queue_jobs, queue_failed_jobs;
SELECT queue_counters_reset();
SELECT queue_push('slow', queue => 'ce') > 0 AS pushed;
SELECT queue_push('last', queue => 'ce', max_attempts => 1) > 0 AS pushed;
SELECT count(*) AS claimed FROM queue_reserve(ARRAY['ce'], '1 second', 'w', 2);
SELECT pg_sleep(1.2);
SELECT count(*) AS claimed_again FROM queue_reserve(ARRAY['ce'], '1 minute', 'w', 2);
SELECT * FROM pg_temp.counts();
SELECT count(*) AS failed_rows FROM queue_failed_jobs;

-- a job past its deadline fails when a claim finds it
SELECT queue_push('late', queue => 'cd', deadline => clock_timestamp() + interval '0.5 second') > 0 AS pushed;
SELECT pg_sleep(0.7);
SELECT count(*) AS claimed FROM queue_reserve(ARRAY['cd'], '1 minute', 'w', 1);
SELECT * FROM pg_temp.counts() WHERE queue = 'cd';

--------------------------------------------------------------------------
-- the counts outlive the session; the reset is this database's
--------------------------------------------------------------------------

\c
\i sql/include/try.sql
SELECT queue, pushed, failed, expired FROM queue_counters() WHERE queue IN ('ce', 'cd') ORDER BY queue;
SELECT queue_counters_reset();
SELECT count(*) AS changed_after_reset FROM queue_counters()
WHERE pushed + claimed + completed + released + retried + failed + expired > 0;

--------------------------------------------------------------------------
-- privileges: producers read the counters, only admins reset them
--------------------------------------------------------------------------

CREATE ROLE regress_jq_14_producer;
CREATE ROLE regress_jq_14_admin;
SELECT queue_grant('regress_jq_14_producer', 'producer');
SELECT queue_grant('regress_jq_14_admin', 'admin');
SET ROLE regress_jq_14_producer;
SELECT count(*) >= 0 AS producer_reads FROM queue_counters();
SELECT pg_temp.try($$SELECT queue_counters_reset()$$) AS producer_resets;
RESET ROLE;
SET ROLE regress_jq_14_admin;
SELECT queue_counters_reset() AS admin_resets;
RESET ROLE;
SELECT queue_revoke('regress_jq_14_producer', 'producer');
SELECT queue_revoke('regress_jq_14_admin', 'admin');
DROP OWNED BY regress_jq_14_producer, regress_jq_14_admin;
DROP ROLE regress_jq_14_producer;
DROP ROLE regress_jq_14_admin;
