--
-- indexes: every row the direct paths write (pushes, batches, claims,
-- releases, extends, failures, a key's hand-over, a parent's completion)
-- has exactly the index entries the executor would have made.  The direct
-- writes open a partition's index only when a row needs an entry in it
-- (store/row_indexes.c), and a row of a batch takes the indexes of the row
-- before it when the columns their predicates read are the same; amcheck's
-- heapallindexed check finds a row missing from any index it belongs in,
-- partial ones included.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings, queue_key_slots, queue_key_limits,
         queue_job_parents;
CREATE EXTENSION IF NOT EXISTS amcheck;

-- Check every index of queue_jobs' partitions and of queue_failed_jobs, with
-- the heap: the number checked (an error names a missing entry).
CREATE FUNCTION pg_temp.check_indexes() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(bt_index_check(i.indexrelid, true))
    FROM pg_index i
    WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('queue_jobs') WHERE isleaf
                         UNION ALL SELECT 'queue_failed_jobs'::regclass)
$$;

-- pushes of every shape: due now, delayed, with a deadline, with a unique
-- key (the long partition), with a concurrency key (one waits), after parents
SELECT queue_push('ready', queue => 'ix') > 0 AS pushed;
SELECT queue_push('delayed', queue => 'ix', delay => '1 hour') > 0 AS pushed;
SELECT queue_push('deadline', queue => 'ix', deadline => now() + interval '1 hour') > 0 AS pushed;
SELECT queue_push('unique', queue => 'ix', unique_key => 'ix-1') > 0 AS pushed;
SELECT queue_push('key-a', queue => 'ix', concurrency_key => 'k') > 0 AS pushed;
SELECT queue_push('key-b', queue => 'ix', concurrency_key => 'k') > 0 AS pushed;
SELECT queue_push('parent', queue => 'ix') AS parent \gset
SELECT queue_push('child', queue => 'ix', after => ARRAY[:parent]) > 0 AS pushed;
SELECT cardinality(queue_push_many('[{"name": "b1", "queue": "ix"},
    {"name": "b2", "queue": "ix", "delay": "1 hour"},
    {"name": "b3", "queue": "ix", "deadline": "2999-01-01"},
    {"name": "b4", "queue": "ix", "priority": 5}]')) AS batch;
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT flow, ready, count(*) FROM queue_jobs WHERE queue = 'ix' GROUP BY 1, 2 ORDER BY 1, 2;
-- a batch in runs of rows that need the same indexes, and rows that differ
-- from the one before; then a claim of them all (the claimed rows in runs too)
SELECT cardinality(queue_push_many('[{"name": "r1", "queue": "ixr"}, {"name": "r2", "queue": "ixr"},
    {"name": "r3", "queue": "ixr", "delay": "1 hour"}, {"name": "r4", "queue": "ixr", "delay": "1 hour"},
    {"name": "r5", "queue": "ixr", "deadline": "2999-01-01"}, {"name": "r6", "queue": "ixr", "deadline": "2999-01-01"},
    {"name": "r7", "queue": "ixr"}, {"name": "r8", "queue": "ixr", "deadline": "2999-01-02"},
    {"name": "r9", "queue": "ixr"}]')) AS batch_in_runs;
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT string_agg(name, ' ' ORDER BY name) AS claimed FROM queue_reserve('{ixr}', max_jobs => 100);
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT ready, deadline IS NOT NULL AS with_deadline, count(*) FROM queue_jobs WHERE queue = 'ixr'
GROUP BY 1, 2 ORDER BY 1, 2;

-- one-job pushes that need other indexes than the push before (a row's
-- choice is kept for the next write into the partition, row_indexes.c):
-- due, delayed, due, with a deadline, due, one more of each
SELECT count(queue_push('a' || i, queue => 'ixa',
                        delay => CASE WHEN i % 4 = 1 THEN interval '1 hour' END,
                        deadline => CASE WHEN i % 4 = 3 THEN timestamptz '2999-01-01' END)) AS pushed
FROM generate_series(0, 7) AS i;
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT ready, deadline IS NOT NULL AS with_deadline, count(*) FROM queue_jobs WHERE queue = 'ixa'
GROUP BY 1, 2 ORDER BY 1, 2;
-- an index created on the partition pushes go to, after pushes in this
-- session kept their choice: the next push has an entry in it
SELECT format('CREATE INDEX ixa_extra ON %s (name) WHERE ready', tableoid::regclass) AS create_extra
FROM queue_jobs WHERE queue = 'ixa' AND name = 'a0' \gset
:create_extra;
SELECT queue_push('a-after-index', queue => 'ixa') > 0 AS pushed;
SELECT pg_temp.check_indexes() AS indexes_checked;
DROP INDEX ixa_extra;
SELECT count(queue_delete(id, token)) AS completed FROM queue_reserve('{ixa}', max_jobs => 100);

-- claims (every ready job; key-b waits), then each way out of a lease
SELECT string_agg(name, ' ' ORDER BY name) AS claimed FROM queue_reserve('{ix}', max_jobs => 100);
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT queue_extend(id, token, '10 minutes') AS extended FROM queue_jobs WHERE name = 'b1';
SELECT queue_release(id, token, '0') AS released FROM queue_jobs WHERE name = 'b3';
SELECT queue_release(id, token, '1 hour') AS released FROM queue_jobs WHERE name = 'b4';
SELECT queue_fail(id, token, 'boom') AS failed FROM queue_jobs WHERE name = 'deadline';
-- the key's slot goes to key-b; the parent's completion frees the child
SELECT queue_delete(id, token) AS deleted FROM queue_jobs WHERE name IN ('key-a', 'parent');
SELECT pg_temp.check_indexes() AS indexes_checked;
SELECT name, flow, ready, reserved_until IS NOT NULL AS held FROM queue_jobs
WHERE queue = 'ix' AND name IN ('key-b', 'child', 'b3', 'b4') ORDER BY name;

-- the failed job back, everything claimed and completed
SELECT queue_retry_failed(id) AS retried FROM queue_failed_jobs WHERE name = 'deadline';
SELECT count(queue_delete(id, token)) AS completed FROM queue_reserve('{ix}', max_jobs => 100);
SELECT pg_temp.check_indexes() AS indexes_checked;
