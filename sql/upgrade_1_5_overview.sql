--
-- upgrade_1_5_overview: queue_overview across the update to 1.5.  At 1.4
-- it counts up to its cap of 10,000 and has no estimate columns; after
-- ALTER EXTENSION UPDATE TO '1.5' the same call counts exactly up to 1,000
-- and estimates past it, on the same jobs; roles granted a tier at 1.4 may
-- still call it (producer, worker), PUBLIC may not.  This file manages the
-- extension itself, and leaves it created at the default version.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

\i sql/include/allowed.sql

DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue VERSION '1.4';
CREATE ROLE regress_jq_u15o_producer;
CREATE ROLE regress_jq_u15o_worker;
SELECT queue_grant('regress_jq_u15o_producer', 'producer');
SELECT queue_grant('regress_jq_u15o_worker', 'worker');

-- u15o_big: 1,200 pending, 3 held; u15o_small: 2 pending
SELECT sum(cardinality(queue_push_many(jobs))) AS pushed
FROM (SELECT jsonb_agg(jsonb_build_object('name', 'j-' || i,
                                          'queue', CASE WHEN i <= 1203 THEN 'u15o_big' ELSE 'u15o_small' END)) AS jobs
      FROM generate_series(1, 1205) AS i) batch;
SELECT count(*) AS claimed FROM queue_reserve('{u15o_big}', '1 hour', 'w', 3);
ANALYZE queue_jobs;

-- at 1.4: every count exact below its cap of 10,000, no estimate columns
SELECT queue, pending, delayed, reserved, failed, counts_capped FROM queue_overview();
SELECT count(*) AS estimate_columns
FROM pg_proc p, unnest(p.proargnames) AS a(name)
WHERE p.proname = 'queue_overview' AND a.name LIKE '%estimate';

ALTER EXTENSION jobqueue UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';

-- at 1.5: the same jobs, exact up to 1,000, the pending jobs of u15o_big
-- past it estimated (within 10 %)
SELECT queue, pending, delayed, reserved, failed, counts_capped,
       pending_estimate IS NOT NULL AS pending_estimated,
       abs(coalesce(pending_estimate, pending) - CASE queue WHEN 'u15o_big' THEN 1200 ELSE 2 END)
           <= 120 AS pending_right,
       num_nonnulls(delayed_estimate, reserved_estimate, failed_estimate) AS others_estimated
FROM queue_overview();
SELECT queue, pending, counts_capped FROM queue_overview(10000);

-- the tiers granted at 1.4 still reach it; PUBLIC does not
SELECT r AS role, pg_temp.allowed(r, '{queue_overview}') AS may_execute
FROM unnest(ARRAY['public', 'regress_jq_u15o_producer', 'regress_jq_u15o_worker']) WITH ORDINALITY AS t(r, n)
ORDER BY n;
SET ROLE regress_jq_u15o_producer;
SELECT count(*) AS queues_seen_by_producer FROM queue_overview();
RESET ROLE;

DROP EXTENSION jobqueue;
REVOKE USAGE ON SCHEMA public FROM regress_jq_u15o_producer, regress_jq_u15o_worker;
DROP ROLE regress_jq_u15o_producer, regress_jq_u15o_worker;
CREATE EXTENSION jobqueue;
SELECT extversion FROM pg_extension WHERE extname = 'jobqueue';
