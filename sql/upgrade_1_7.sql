--
-- upgrade_1_7: the claim index leads with the queue's hash.  At 1.6, fill
-- two queues whose names hash alike ('queue-18608' and 'queue-239561') and
-- another; ALTER EXTENSION UPDATE TO '1.7'.  Then: the index is built again
-- over the same rows (amcheck finds every entry); each queue's counts,
-- pages and claims hold its own jobs only, by the claim without a plan and
-- by the claim statements (a rate-limited queue's claim runs them), though
-- the two queues share one range of the index; pushes and a batch after the
-- update write the new index's entries.  Leaves the extension created at
-- the default version (and amcheck dropped).
--
\set VERBOSITY terse
SET TimeZone = 'UTC';
CREATE EXTENSION IF NOT EXISTS amcheck;

DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.6';
SELECT pg_get_indexdef('queue_jobs_claim_idx'::regclass) AS claim_index_at_1_6;

-- Every index of queue_jobs' partitions checked against the heap (an error
-- names a missing entry): the number checked.
CREATE FUNCTION pg_temp.check_indexes() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(bt_index_check(i.indexrelid, true))
    FROM pg_index i
    WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('queue_jobs') WHERE isleaf)
$$;

SELECT hashtext('queue-18608') = hashtext('queue-239561') AS names_hash_alike;
-- queue-18608's jobs of priority 1 come first in the shared range
SELECT count(*) AS pushed_a
FROM (SELECT queue_push('a' || i, jsonb_build_object('n', i), 'queue-18608', priority => i % 2)
      FROM generate_series(1, 6) AS i) x;
SELECT count(*) AS pushed_b
FROM (SELECT queue_push('b' || i, '{}', 'queue-239561') FROM generate_series(1, 4) AS i) x;
SELECT queue_push('b later', '{}', 'queue-239561', delay => '1 hour') > 0 AS pushed;
SELECT queue_push('other', '{}', 'u17_other') > 0 AS pushed;
CREATE TEMP TABLE u17_jobs_before AS SELECT * FROM queue_jobs;

ALTER EXTENSION jobqueue UPDATE TO '1.7';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_get_indexdef('queue_jobs_claim_idx'::regclass) AS claim_index_at_1_7;

-- nothing queued changed; every row has its entries in the new index
SELECT (SELECT count(*) FROM (TABLE queue_jobs EXCEPT TABLE u17_jobs_before) x) AS jobs_changed,
       (SELECT count(*) FROM (TABLE u17_jobs_before EXCEPT TABLE queue_jobs) x) AS jobs_gone;
SELECT pg_temp.check_indexes() > 0 AS indexes_checked;

-- counts and pages: each queue's own jobs
SELECT queue_pending('queue-18608') AS pending_a, queue_pending('queue-239561') AS pending_b;
SELECT queue, pending, delayed FROM queue_stats() ORDER BY queue;
SELECT queue, pending, delayed FROM queue_overview() ORDER BY queue;
SELECT name FROM queue_jobs_page('queue-239561', 'pending') ORDER BY name;

-- the claim statements: queue-18608's jobs only, best first
SELECT queue_rate_limit_set('queue-18608', 100, '1 hour');
SELECT name, priority FROM queue_reserve('{queue-18608}', max_jobs => 3);
SELECT name, priority FROM queue_reserve('{queue-18608}', max_jobs => 10) ORDER BY name;
-- the claim without a plan: queue-239561's jobs only
SELECT name FROM queue_reserve('{queue-239561}', max_jobs => 10) ORDER BY name;
SELECT queue, count(*) AS left_ready FROM queue_jobs WHERE ready GROUP BY queue ORDER BY queue;

-- pushes and a batch after the update: entries in the new index, claimed
SELECT queue_push('b new', '{}', 'queue-239561') > 0 AS pushed;
SELECT cardinality(queue_push_many('[{"name": "b batch 1", "queue": "queue-239561"},
                                     {"name": "b batch 2", "queue": "queue-239561"},
                                     {"name": "a batch", "queue": "queue-18608"}]')) AS batch;
SELECT pg_temp.check_indexes() > 0 AS indexes_checked;
SELECT name FROM queue_reserve('{queue-239561}', max_jobs => 10) ORDER BY name;
SELECT name FROM queue_reserve('{queue-18608}', max_jobs => 10) ORDER BY name;

--------------------------------------------------------------------------
-- clean up; leave the extension at the default version
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
DROP EXTENSION amcheck;
