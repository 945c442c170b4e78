--
-- reports: queue_pending, queue_stats, queue_failed_count
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/queued.sql
-- The clock only moves forward in this file (offsets grow).

-- an empty backlog: no stats rows, nothing pending, no failed rows
SELECT count(*) AS stats_rows FROM queue_stats();
SELECT queue_pending() AS pending_all, queue_failed_count() AS failed;

-- the backlog used below, in three queues whose names sort differently in C and in dictionary order:
--   Zq: one held for 2 hours, one held for 1 minute, one pending
--   aq: two pending, one delayed by 1 hour
--   mq: one delayed by 30 minutes, one released for 3 hours
SELECT pg_temp.queued(queue_push('z-held-long', queue => 'Zq')) AS pushed;
SELECT name FROM queue_reserve('{Zq}', lease => '2 hours');
SELECT pg_temp.queued(queue_push('z-held-short', queue => 'Zq')) AS pushed;
SELECT name FROM queue_reserve('{Zq}', lease => '1 minute');
SELECT pg_temp.queued(queue_push('z-pending', queue => 'Zq')) AS pushed;
SELECT pg_temp.queued(queue_push('a-pending-1', queue => 'aq')) AS pushed;
SELECT pg_temp.queued(queue_push('a-pending-2', queue => 'aq')) AS pushed;
SELECT pg_temp.queued(queue_push('a-delayed', queue => 'aq', delay => '1 hour')) AS pushed;
SELECT pg_temp.queued(queue_push('m-delayed', queue => 'mq', delay => '30 minutes')) AS pushed;
SELECT pg_temp.queued(queue_push('m-released', queue => 'mq')) AS pushed;
SELECT id AS m_id, token AS m_tok FROM queue_reserve('{mq}') \gset
SELECT queue_release(:m_id, :m_tok, '3 hours') AS released;

-- queue_pending per queue: delayed jobs and held jobs do not count
SELECT queue_pending('Zq') AS zq, queue_pending('aq') AS aq, queue_pending('mq') AS mq,
       queue_pending('no_such_queue') AS unknown;
-- queue_pending for all queues: NULL and the default
SELECT queue_pending(NULL) AS all_null, queue_pending() AS all_default;
-- the queue name is matched exactly (case matters)
SELECT queue_pending('zq') AS lower_case_zq;

-- queue_stats: one row per queue, ordered by queue (C order: upper case first)
SELECT * FROM queue_stats();
-- the counts partition the backlog
SELECT bool_and(pending + delayed + reserved = total) AS partitions,
       sum(total) = (SELECT count(*) FROM queue_jobs) AS totals_add_up
  FROM queue_stats();

-- after 2 minutes: the 1-minute lease ran out, so that job counts as pending (no claim has run since)
SET jobqueue.clock_offset = '2 minutes';
SELECT queue_pending('Zq') AS zq, queue_pending() AS all_queues;
SELECT * FROM queue_stats();
SELECT bool_and(pending + delayed + reserved = total) AS partitions FROM queue_stats();

-- a claim takes the pending job and the expired one (its lease end is later than the other's push): both reserved
SELECT name, attempts FROM queue_reserve('{Zq}', lease => '1 day', max_jobs => 2);
SELECT queue_pending('Zq') AS zq;
SELECT * FROM queue_stats() WHERE queue = 'Zq';

-- after 31 minutes: the 30-minute delay is over
SET jobqueue.clock_offset = '31 minutes';
SELECT queue_pending('mq') AS mq, queue_pending() AS all_queues;
SELECT * FROM queue_stats();
SELECT bool_and(pending + delayed + reserved = total) AS partitions FROM queue_stats();

-- after 2 hours 1 minute: the 1-hour delay and the 2-hour lease are over, the 3-hour release is not
SET jobqueue.clock_offset = '2 hours 1 minute';
SELECT queue_pending('Zq') AS zq, queue_pending('aq') AS aq, queue_pending('mq') AS mq,
       queue_pending() AS all_queues;
SELECT * FROM queue_stats();
SELECT bool_and(pending + delayed + reserved = total) AS partitions FROM queue_stats();

-- after 3 hours 1 minute: the release delay is over too
SET jobqueue.clock_offset = '3 hours 1 minute';
SELECT * FROM queue_stats();

-- a completed job leaves the stats; a queue with no jobs left has no row
SELECT id AS a_id, token AS a_tok FROM queue_reserve('{aq}') \gset
SELECT * FROM queue_stats() WHERE queue = 'aq';
SELECT queue_delete(:a_id, :a_tok) AS deleted;
SELECT * FROM queue_stats() WHERE queue = 'aq';
SELECT count(*) AS claimed FROM queue_reserve('{mq}', max_jobs => 10);
WITH held AS MATERIALIZED (SELECT id, token FROM queue_jobs WHERE queue = 'mq')
SELECT count(*) FILTER (WHERE queue_delete(id, token)) AS deleted FROM held;
SELECT queue FROM queue_stats();

-- queue_failed_count: rows in the failed table, whatever put them there; failed jobs are not in the stats
SELECT queue_failed_count() AS failed;
SELECT pg_temp.queued(queue_push('f1', queue => 'fq')) AS pushed;
SELECT id AS f_id, token AS f_tok FROM queue_reserve('{fq}') \gset
SELECT queue_fail(:f_id, :f_tok, 'broken') AS failed;
SELECT queue_failed_count() AS failed;
SELECT pg_temp.queued(queue_push('f2', queue => 'fq', max_attempts => 1)) AS pushed;
SELECT id AS f_id, token AS f_tok FROM queue_reserve('{fq}') \gset
SELECT queue_release(:f_id, :f_tok, '0', 'no luck') AS released;
SELECT queue_failed_count() AS failed;
SELECT pg_temp.queued(queue_push('f3', queue => 'fq', max_attempts => 1)) AS pushed;
SELECT count(*) AS claimed FROM queue_reserve('{fq}', lease => '1 minute');
SET jobqueue.clock_offset = '3 hours 3 minutes';
SELECT count(*) AS claimed FROM queue_reserve('{fq}');
SELECT queue_failed_count() AS failed;
SELECT count(*) AS fq_rows FROM queue_stats() WHERE queue = 'fq';
SELECT queue_failed_count() = (SELECT count(*) FROM queue_failed_jobs) AS matches_table;

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;
