--
-- browse: the dashboard's reads (1.4): queue_overview, queue_jobs_page,
-- queue_job, queue_leases.  Every argument error with its SQLSTATE; every
-- state, told apart as queue_stats does (also a ready job due later, which
-- only a clock set back leaves); counts exact up to the cap, and past it
-- a lower bound and an estimate (1.5), near the truth once analysed and
-- never below what was counted; keyset pages
-- of a small queue and of one past the size where pages are sorted from
-- the queue's own index ranges (both against a reference query written
-- from README's rules); a failed job; the live leases after claims; a
-- payload returned verbatim; the tiers (producer: queue_overview only);
-- the extension in a quoted schema.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql

\i sql/include/clock.sql

\i sql/include/allowed.sql

-- state_at(job, t): a job's state at t by README's words (reserved: held by
-- a live lease; delayed: not held, due later; pending: the rest), written
-- here independently of the extension's statements
CREATE FUNCTION pg_temp.state_at(j queue_jobs, t timestamptz) RETURNS text
LANGUAGE sql AS $fn$
    SELECT CASE WHEN j.available_at <= t THEN 'pending'
                WHEN NOT j.ready AND j.token IS NOT NULL THEN 'reserved'
                ELSE 'delayed' END
$fn$;

-- page_matches(queue, state, after_id, max_rows): whether queue_jobs_page
-- returns exactly the ids, states and names the reference query finds
-- (the jobs of the queue in that state after after_id, by id), and how
-- many rows it returned
CREATE FUNCTION pg_temp.page_matches(q text, s text, a bigint, n integer,
                                     OUT matches boolean, OUT returned bigint)
LANGUAGE sql AS $fn$
    WITH page AS (SELECT p.id, p.state, p.name, row_number() OVER () AS k
                  FROM queue_jobs_page(q, s, a, n) p),
         reference AS (SELECT j.id, pg_temp.state_at(j, pg_temp.qnow()) AS state, j.name,
                              row_number() OVER (ORDER BY j.id) AS k
                       FROM queue_jobs j
                       WHERE j.queue = q AND j.id > coalesce(a, 0)
                         AND (s IS NULL OR pg_temp.state_at(j, pg_temp.qnow()) = s)
                       ORDER BY j.id LIMIT coalesce(n, 50))
    SELECT NOT EXISTS (SELECT id, state, name, k FROM page EXCEPT SELECT id, state, name, k FROM reference)
           AND NOT EXISTS (SELECT id, state, name, k FROM reference EXCEPT SELECT id, state, name, k FROM page),
           (SELECT count(*) FROM page)
$fn$;

--------------------------------------------------------------------------
-- argument errors
--------------------------------------------------------------------------
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_overview(0)$$,
    $$SELECT * FROM queue_overview(-1)$$,
    $$SELECT * FROM queue_overview(10000001)$$,
    $$SELECT * FROM queue_jobs_page(NULL)$$,
    $$SELECT * FROM queue_jobs_page('')$$,
    $$SELECT * FROM queue_jobs_page(repeat('q', 65))$$,
    $$SELECT * FROM queue_jobs_page('q', 'failed')$$,
    $$SELECT * FROM queue_jobs_page('q', 'Pending')$$,
    $$SELECT * FROM queue_jobs_page('q', '')$$,
    $$SELECT * FROM queue_jobs_page('q', max_rows => 0)$$,
    $$SELECT * FROM queue_jobs_page('q', max_rows => 1001)$$,
    $$SELECT * FROM queue_job(NULL)$$,
    $$SELECT * FROM queue_leases(0)$$,
    $$SELECT * FROM queue_leases(10001)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
-- the limits themselves, and NULL for an argument with a default, are accepted
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_overview(1)$$,
    $$SELECT * FROM queue_overview(10000000)$$,
    $$SELECT * FROM queue_overview(NULL)$$,
    $$SELECT * FROM queue_jobs_page(repeat('q', 64), 'pending', NULL, 1)$$,
    $$SELECT * FROM queue_jobs_page('q', NULL, NULL, NULL)$$,
    $$SELECT * FROM queue_jobs_page('q', 'reserved', -5, 1000)$$,
    $$SELECT * FROM queue_leases(NULL)$$,
    $$SELECT * FROM queue_leases(10000)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- nothing anywhere: no queue, no lease, no job
SELECT (SELECT count(*) FROM queue_overview()) AS queues,
       (SELECT count(*) FROM queue_leases()) AS leases,
       (SELECT count(*) FROM queue_jobs_page('br_q')) AS page_rows,
       (SELECT count(*) FROM queue_job(1)) AS job_rows;

-- no function returns a fencing token
SELECT count(*) AS token_columns
FROM pg_proc p, unnest(p.proargnames) AS a(name)
WHERE p.proname IN ('queue_overview', 'queue_jobs_page', 'queue_job', 'queue_leases')
  AND a.name ~ 'token';

--------------------------------------------------------------------------
-- every state
--------------------------------------------------------------------------
-- br_q: two pending (priorities 0 and 5), one delayed by 2 hours, one held
-- for 1 hour, one held for 1 minute (its lease runs out below), one
-- released for 3 hours (delayed; it keeps its worker's name); br_w: one job
-- claimed by each of two workers; br_f: one failed row only; br_paused:
-- settings only
SELECT queue_push('p-low', '{"n": 1}', 'br_q') AS p_low \gset
SELECT queue_push('p-high', '{"n": 2}', 'br_q', priority => 5) AS p_high \gset
SELECT queue_push('d-later', '{}', 'br_q', '2 hours') AS d_later \gset
SELECT queue_push('h-long', '{}', 'br_q', priority => 9) AS h_long \gset
SELECT id = :h_long AS claimed_h_long FROM queue_reserve('{br_q}', '1 hour', 'worker-b');
SELECT queue_push('h-short', '{}', 'br_q', priority => 9) AS h_short \gset
SELECT id = :h_short AS claimed_h_short FROM queue_reserve('{br_q}', '1 minute', 'worker-a');
SELECT queue_push('r-released', '{}', 'br_q', priority => 9) AS r_released \gset
SELECT queue_release(id, token, '3 hours', 'try later') AS released
FROM queue_reserve('{br_q}', '1 minute', 'worker-c');
SELECT queue_push('w-1', '{}', 'br_w') AS w_1 \gset
SELECT queue_push('w-2', '{}', 'br_w') AS w_2 \gset
SELECT id = :w_1 AS claimed_w_1 FROM queue_reserve('{br_w}', '30 minutes', 'worker-b');
SELECT id = :w_2 AS claimed_w_2 FROM queue_reserve('{br_w}', '20 minutes', 'worker-a');
SELECT queue_push('f-broken', '{"why": "broken"}', 'br_f') AS f_broken \gset
SELECT queue_fail(id, token, 'it broke') AS failed FROM queue_reserve('{br_f}');
SELECT queue_pause('br_paused');

-- one row per queue with jobs, failed rows or settings, by name; the
-- counts are queue_stats' (compared below)
SELECT queue, paused, pending, delayed, reserved, failed, counts_capped,
       oldest_pending_at IS NOT NULL AS has_oldest
FROM queue_overview();
SELECT count(*) AS differs_from_queue_stats
FROM queue_overview() o FULL JOIN queue_stats() s USING (queue)
WHERE s.queue IS NOT NULL
  AND (o.pending, o.delayed, o.reserved) IS DISTINCT FROM (s.pending, s.delayed, s.reserved);
-- oldest_pending_at: the available_at of the pending job due first
SELECT o.oldest_pending_at = (SELECT min(available_at) FROM queue_jobs
                              WHERE queue = 'br_q' AND available_at <= pg_temp.qnow())
       AS oldest_is_first_due
FROM queue_overview() o WHERE o.queue = 'br_q';

-- each job's state, through queue_job and through the page
SELECT j.name, j.state, j.attempts, j.reserved_by, j.last_error, j.failed_at IS NULL AS not_failed
FROM unnest(ARRAY[:p_low, :p_high, :d_later, :h_long, :h_short, :r_released]) WITH ORDINALITY AS t(id, n),
     LATERAL queue_job(t.id) j
ORDER BY t.n;
SELECT id = :p_low AS first_is_p_low, name, state, priority, attempts, reserved_by,
       reserved_until IS NOT NULL AS has_lease_end
FROM queue_jobs_page('br_q');

-- the live leases, by worker, then lease end; the released job is not held
SELECT l.worker, l.queue, l.name, l.attempts, l.reserved_until = j.reserved_until AS its_lease_end,
       l.reserved_until > pg_temp.qnow() AS live
FROM queue_leases() WITH ORDINALITY l JOIN queue_jobs j USING (id)
ORDER BY l.ordinality;

-- two minutes later the 1-minute lease has run out: that job is pending
-- again (no claim has run) and no longer a lease
SELECT pg_temp.travel_to(pg_temp.qnow() + interval '2 minutes') IS NOT NULL AS two_minutes_later;
SELECT queue, pending, delayed, reserved FROM queue_overview() WHERE queue = 'br_q';
SELECT state FROM queue_job(:h_short);
SELECT worker, queue, name FROM queue_leases();
SELECT name, state FROM queue_jobs_page('br_q', 'pending');
SELECT name, state FROM queue_jobs_page('br_q', 'delayed');
SELECT name, state FROM queue_jobs_page('br_q', 'reserved');
-- the job whose lease ran out fell due at its lease's end, after p-low was
-- pushed: p-low is still the oldest pending job
SELECT o.oldest_pending_at = (SELECT available_at FROM queue_jobs WHERE id = :p_low) AS oldest_still_p_low
FROM queue_overview() o WHERE o.queue = 'br_q';
SELECT count(*) AS differs_from_queue_stats
FROM queue_overview() o JOIN queue_stats() s USING (queue)
WHERE (o.pending, o.delayed, o.reserved) IS DISTINCT FROM (s.pending, s.delayed, s.reserved);

-- with the clock set back an hour, the jobs pushed since are due later
-- though ready: delayed, as queue_stats counts them, and the held ones
-- whose lease ends within the hour are reserved still
SELECT pg_temp.travel_to(pg_temp.qnow() - interval '1 hour') IS NOT NULL AS an_hour_back;
SELECT queue, pending, delayed, reserved, oldest_pending_at IS NULL AS none_pending
FROM queue_overview() WHERE queue IN ('br_q', 'br_w');
SELECT count(*) AS differs_from_queue_stats
FROM queue_overview() o JOIN queue_stats() s USING (queue)
WHERE (o.pending, o.delayed, o.reserved) IS DISTINCT FROM (s.pending, s.delayed, s.reserved);
SELECT name, state FROM queue_jobs_page('br_q', 'delayed');
SELECT name, state FROM queue_job(:p_high);
SELECT * FROM pg_temp.page_matches('br_q', 'delayed', NULL, 50);
RESET jobqueue.clock_offset;

--------------------------------------------------------------------------
-- counts stopped at the cap
--------------------------------------------------------------------------
-- br_cap: three pending jobs; a cap of 2 stops there and says so, a cap
-- of 3 counts them all
SELECT count(queue_push('cap-' || i, '{}', 'br_cap')) AS pushed FROM generate_series(1, 3) AS i;
SELECT count_cap, pending, delayed, reserved, failed, counts_capped,
       pending_estimate IS NOT NULL AS pending_estimated,
       num_nulls(delayed_estimate, reserved_estimate, failed_estimate) AS others_exact
FROM unnest(ARRAY[1, 2, 3, 4]) AS count_cap, LATERAL queue_overview(count_cap) o
WHERE o.queue = 'br_cap' ORDER BY count_cap;
-- br_q (two of each state): a cap of 1 caps every count; delayed and held
-- jobs due later are counted together up to the cap (here: one) from the
-- index alone, and past it their rows are not read: both counts are 0 (a
-- lower bound), both estimated
SELECT pending, delayed + reserved AS delayed_and_reserved, counts_capped,
       num_nonnulls(pending_estimate, delayed_estimate, reserved_estimate) AS estimated,
       failed_estimate IS NULL AS failed_exact
FROM queue_overview(1) WHERE queue = 'br_q';
-- br_f's one failed row: a cap of 1 is not exceeded
SELECT failed, counts_capped, failed_estimate IS NULL AS failed_exact
FROM queue_overview(1) WHERE queue = 'br_f';

--------------------------------------------------------------------------
-- past the cap: a lower bound and an estimate (1.5)
--------------------------------------------------------------------------
-- br_est: 3,000 pending, 20 held, 5 delayed, and 40 failed rows; br_late:
-- 10 pending, 1,500 delayed, 30 held.  Analysed, so that the planner's
-- statistics know them (and only then: autovacuum must not analyse the
-- tables under the test).  A ring period of an hour keeps every push of the
-- section in one ring partition: at the default 10 s the pushes after the
-- ANALYZE could land in the other one, whose pages it never saw.
SET jobqueue.ring_period = '1h';
ALTER TABLE queue_jobs_ring0 SET (autovacuum_enabled = false);
ALTER TABLE queue_jobs_ring1 SET (autovacuum_enabled = false);
ALTER TABLE queue_jobs_long SET (autovacuum_enabled = false);
ALTER TABLE queue_failed_jobs SET (autovacuum_enabled = false);
SELECT sum(cardinality(queue_push_many(jobs))) AS pushed
FROM (SELECT jsonb_agg(jsonb_build_object('name', 'est-' || i, 'queue', 'br_est')) AS jobs
      FROM generate_series(1, 3065) AS i) batch;
SELECT count(*) AS claimed FROM queue_reserve('{br_est}', '1 hour', 'worker-est', 60);
SELECT count(queue_fail(id, token, 'broken')) AS failed
FROM (SELECT * FROM queue_jobs WHERE queue = 'br_est' AND token IS NOT NULL LIMIT 40) j;
SELECT count(queue_push('est-d', '{}', 'br_est', '1 hour')) AS delayed FROM generate_series(1, 5);
SELECT sum(cardinality(queue_push_many(jobs))) AS pushed
FROM (SELECT jsonb_agg(jsonb_build_object('name', 'late-' || i, 'queue', 'br_late',
                                          'delay', CASE WHEN i <= 1500 THEN 7200 ELSE 0 END)) AS jobs
      FROM generate_series(1, 1540) AS i) batch;
SELECT count(*) AS claimed FROM queue_reserve('{br_late}', '1 hour', 'worker-late', 30);
ANALYZE queue_jobs, queue_failed_jobs;
-- the true counts, for the comparisons below
CREATE TEMP TABLE br_truth AS
SELECT queue, pending, delayed, reserved,
       (SELECT count(*) FROM queue_failed_jobs f WHERE f.queue = s.queue) AS failed
FROM queue_stats() s WHERE queue IN ('br_est', 'br_late');
SELECT * FROM br_truth ORDER BY queue;
-- at the default cap (1,000): br_est's pending jobs are past it (the count
-- stops at the cap, the estimate is within 10 % of the truth), its other
-- states are exact; br_late's jobs due later are past it: delayed and
-- reserved are estimated, each at least what was counted of it, together
-- within 10 %; its pending jobs are exact
SELECT o.queue, o.pending, o.counts_capped,
       o.pending_estimate IS NOT NULL AS pending_estimated,
       o.delayed_estimate IS NOT NULL AS delayed_estimated,
       o.reserved_estimate IS NOT NULL AS reserved_estimated,
       o.failed_estimate IS NOT NULL AS failed_estimated,
       CASE WHEN o.pending_estimate IS NULL THEN o.pending = t.pending
            ELSE abs(o.pending_estimate - t.pending) <= t.pending / 10 END AS pending_right,
       CASE WHEN o.delayed_estimate IS NULL THEN (o.delayed, o.reserved) = (t.delayed, t.reserved)
            ELSE abs(o.delayed_estimate + o.reserved_estimate - t.delayed - t.reserved)
                 <= (t.delayed + t.reserved) / 10
                 AND o.delayed_estimate >= o.delayed AND o.reserved_estimate >= o.reserved
                 AND o.delayed <= t.delayed AND o.reserved <= t.reserved END AS later_right,
       o.failed = t.failed AS failed_right
FROM queue_overview() o JOIN br_truth t USING (queue) ORDER BY o.queue;
-- the oldest pending job stays exact past the cap
SELECT o.oldest_pending_at = (SELECT min(available_at) FROM queue_jobs
                              WHERE queue = o.queue AND available_at <= pg_temp.qnow())
       AS oldest_exact
FROM queue_overview() o WHERE o.queue IN ('br_est', 'br_late') ORDER BY o.queue;
-- a cap of 10: the failed rows are estimated too (at least 11); with a cap
-- above every count, nothing is estimated
SELECT queue, failed, failed_estimate >= 11 AS failed_estimate_past_cap,
       abs(failed_estimate - 40) <= 4 AS failed_estimate_right
FROM queue_overview(10) WHERE queue = 'br_est';
SELECT count(*) AS estimated_at_cap_100000
FROM queue_overview(100000)
WHERE num_nonnulls(pending_estimate, delayed_estimate, reserved_estimate, failed_estimate) > 0
   OR counts_capped;
-- not analysed since br_est tripled, the estimate follows the table's size
-- (its pages now, with the rows per page of the last ANALYZE) but keeps
-- the queue's share of the table that ANALYZE saw: the queue's jobs then,
-- times the table's growth, less its exact jobs due later
SELECT count(*) AS rows_analysed, count(*) FILTER (WHERE queue = 'br_est') AS est_analysed
FROM queue_jobs \gset
SELECT sum(cardinality(queue_push_many(jobs))) AS pushed
FROM (SELECT jsonb_agg(jsonb_build_object('name', 'est-' || i, 'queue', 'br_est')) AS jobs
      FROM generate_series(1, 6000) AS i GROUP BY i / 3000) batches;
SELECT abs(o.pending_estimate - (:est_analysed * n.now / :rows_analysed - 25)) <= 0.1 * o.pending_estimate
       AS estimate_follows_size,
       o.pending_estimate < 9005 AS below_the_truth
FROM queue_overview() o, (SELECT count(*) AS now FROM queue_jobs) n WHERE o.queue = 'br_est';
DROP TABLE br_truth;
DELETE FROM queue_jobs WHERE queue IN ('br_est', 'br_late');
DELETE FROM queue_failed_jobs WHERE queue = 'br_est';
ALTER TABLE queue_jobs_ring0 RESET (autovacuum_enabled);
ALTER TABLE queue_jobs_ring1 RESET (autovacuum_enabled);
ALTER TABLE queue_jobs_long RESET (autovacuum_enabled);
ALTER TABLE queue_failed_jobs RESET (autovacuum_enabled);
RESET jobqueue.ring_period;

--------------------------------------------------------------------------
-- a failed job, an unknown id, a payload returned verbatim
--------------------------------------------------------------------------
SELECT id = :f_broken AS same_id, queue, name, state, payload, priority, attempts, max_attempts,
       available_at, reserved_by, reserved_until, unique_key, deadline, last_error,
       created_at IS NOT NULL AS has_created_at, failed_at IS NOT NULL AS has_failed_at
FROM queue_job(:f_broken);
SELECT count(*) AS unknown_rows FROM queue_job(-1);
SELECT queue_push('html', jsonb_build_object('body', '<script>alert("x")</script> & </td>'),
                  'br_x', unique_key => '<b>key</b>',
                  deadline => '2100-01-01 00:00:00+00') AS html_id \gset
SELECT payload, payload ->> 'body' = '<script>alert("x")</script> & </td>' AS verbatim,
       unique_key, deadline
FROM queue_job(:html_id);
SELECT name, unique_key, deadline FROM queue_jobs_page('br_x');

--------------------------------------------------------------------------
-- keyset pages
--------------------------------------------------------------------------
-- br_page: seven jobs, three delayed, between jobs of another queue
SELECT count(*) AS pushed FROM (
    SELECT queue_push('page-' || i, '{}', CASE WHEN i % 2 = 0 THEN 'br_page' ELSE 'br_other' END,
                      CASE WHEN i % 3 = 0 THEN interval '1 hour' ELSE interval '0' END)
    FROM generate_series(1, 14) AS i) pushes;
-- page by page, two at a time, each page starting after the last id of the one before
SELECT id AS after1 FROM queue_jobs_page('br_page', max_rows => 2) ORDER BY id DESC LIMIT 1 \gset
SELECT id AS after2 FROM queue_jobs_page('br_page', NULL, :after1, 2) ORDER BY id DESC LIMIT 1 \gset
SELECT id AS after3 FROM queue_jobs_page('br_page', NULL, :after2, 2) ORDER BY id DESC LIMIT 1 \gset
SELECT page, name, state
FROM (SELECT 1 AS page, * FROM queue_jobs_page('br_page', NULL, NULL, 2)
      UNION ALL SELECT 2, * FROM queue_jobs_page('br_page', NULL, :after1, 2)
      UNION ALL SELECT 3, * FROM queue_jobs_page('br_page', NULL, :after2, 2)
      UNION ALL SELECT 4, * FROM queue_jobs_page('br_page', NULL, :after3, 2)) pages
ORDER BY page, id;
-- by state, and against the reference query
SELECT s AS state, a IS NOT NULL AS after_first, m.*
FROM unnest(ARRAY[NULL, 'pending', 'delayed', 'reserved']) AS s,
     unnest(ARRAY[NULL, :after1]::bigint[]) AS a,
     LATERAL pg_temp.page_matches('br_page', s, a, 2) m
ORDER BY s NULLS FIRST, a NULLS FIRST;
-- a queue nobody used, and ids past the last: empty pages
SELECT (SELECT count(*) FROM queue_jobs_page('br_none')) AS unknown_queue,
       (SELECT count(*) FROM queue_jobs_page('br_page', NULL, (SELECT max(id) FROM queue_jobs))) AS past_the_end;

-- br_big: 50,200 jobs (more than a page sorts from the queue's index
-- ranges, so its pages are read along the primary keys) between jobs of
-- another queue: 112 delayed, 30 held, the rest pending
SELECT sum(cardinality(queue_push_many(jobs))) AS pushed
FROM (SELECT jsonb_agg(jsonb_build_object(
                 'name', 'big-' || i,
                 'queue', CASE WHEN i % 10 = 0 THEN 'br_big_other' ELSE 'br_big' END,
                 'delay', CASE WHEN i % 500 = 1 THEN 3600 ELSE 0 END)) AS jobs
      FROM generate_series(1, 55778) AS i GROUP BY i / 10000) batches;
SELECT count(*) AS claimed FROM queue_reserve('{br_big}', '1 hour', 'worker-big', 30);
SELECT pending, delayed, reserved, counts_capped FROM queue_overview(100000) WHERE queue = 'br_big';
SELECT id AS big_mid FROM queue_jobs WHERE queue = 'br_big' ORDER BY id OFFSET 25000 LIMIT 1 \gset
SELECT s AS state, a IS NOT NULL AS after_mid, m.*
FROM unnest(ARRAY[NULL, 'pending', 'delayed', 'reserved']) AS s,
     unnest(ARRAY[NULL, :big_mid]::bigint[]) AS a,
     LATERAL pg_temp.page_matches('br_big', s, a, 100) m
ORDER BY s NULLS FIRST, a NULLS FIRST;
-- the capped counts of the big queue (the default cap: 1,000)
SELECT pending, delayed, reserved, counts_capped, pending_estimate IS NOT NULL AS pending_estimated
FROM queue_overview() WHERE queue = 'br_big';
SELECT count(*) AS leases_of_big FROM queue_leases(10000) WHERE queue = 'br_big';
SELECT count(*) AS leases_cut_to FROM queue_leases(5);
DELETE FROM queue_jobs WHERE queue IN ('br_big', 'br_big_other');

--------------------------------------------------------------------------
-- the tiers: a producer may call queue_overview only; a worker too; an
-- admin all four
--------------------------------------------------------------------------
CREATE ROLE regress_jq_br_producer;
CREATE ROLE regress_jq_br_worker;
CREATE ROLE regress_jq_br_admin;
SELECT queue_grant('regress_jq_br_producer', 'producer');
SELECT queue_grant('regress_jq_br_worker', 'worker');
SELECT queue_grant('regress_jq_br_admin', 'admin');
SELECT r AS role,
       pg_temp.allowed(r, '{queue_overview,queue_jobs_page,queue_job,queue_leases}') AS may_execute
FROM unnest(ARRAY['public', 'regress_jq_br_producer', 'regress_jq_br_worker',
                  'regress_jq_br_admin']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
CREATE TEMP TABLE br_calls (n int, call text);
INSERT INTO br_calls VALUES
    (1, $$SELECT * FROM queue_overview()$$),
    (2, $$SELECT * FROM queue_jobs_page('br_q')$$),
    (3, $$SELECT * FROM queue_job(1)$$),
    (4, $$SELECT * FROM queue_leases()$$);
GRANT SELECT ON br_calls TO PUBLIC;
SET ROLE regress_jq_br_producer;
SELECT n, call, pg_temp.try(call) AS outcome FROM br_calls ORDER BY n;
SELECT queue, pending FROM queue_overview() WHERE queue = 'br_q';
RESET ROLE;
SET ROLE regress_jq_br_admin;
SELECT n, call, pg_temp.try(call) AS outcome FROM br_calls ORDER BY n;
SELECT name, state FROM queue_job(:f_broken);
RESET ROLE;
SELECT queue_revoke(r, 'producer')
FROM unnest(ARRAY['regress_jq_br_producer', 'regress_jq_br_worker', 'regress_jq_br_admin']) AS r;
REVOKE USAGE ON SCHEMA public FROM regress_jq_br_producer, regress_jq_br_worker, regress_jq_br_admin;
DROP TABLE br_calls;
DROP ROLE regress_jq_br_producer, regress_jq_br_worker, regress_jq_br_admin;

--------------------------------------------------------------------------
-- the extension in a quoted schema, a caller's search_path elsewhere
--------------------------------------------------------------------------
DROP FUNCTION pg_temp.page_matches(text, text, bigint, integer), pg_temp.state_at(queue_jobs, timestamptz);
DROP EXTENSION jobqueue;
CREATE SCHEMA "br Sch";
CREATE EXTENSION jobqueue SCHEMA "br Sch";
SET search_path = pg_catalog;
SELECT "br Sch".queue_push('s-1', '{"s": 1}', 'br s') AS s1 \gset
SELECT "br Sch".queue_push('s-2', '{}', 'br s', '1 hour') AS s2 \gset
SELECT count(*) AS claimed FROM "br Sch".queue_reserve('{br s}', '1 hour', 'w s');
SELECT queue, pending, delayed, reserved FROM "br Sch".queue_overview();
SELECT name, state FROM "br Sch".queue_jobs_page('br s');
SELECT name, state, payload FROM "br Sch".queue_job(:s2);
SELECT worker, queue, name FROM "br Sch".queue_leases();
RESET search_path;
DROP EXTENSION jobqueue;
DROP SCHEMA "br Sch";
CREATE EXTENSION jobqueue;
