--
-- plans: every hot-path statement (claim, promotion, expiry, push,
-- completion) is planned on the index that serves it, whatever the
-- statistics say: on an empty table after ANALYZE, on a filled table that
-- was never analysed, and on an analysed large one.  Each statement is
-- PREPAREd from the text the extension runs and EXPLAINed as a generic
-- plan, as the extension's kept plans are (with jobqueue.plan_marked_text
-- on, so that the copy is planned by the extension's rule; without it only
-- the extension's own kept statements are, whatever a query's text holds,
-- which the last part of this file checks).
-- This file manages the extension itself, and leaves it created at the
-- default version at the end.
--
\set VERBOSITY terse
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
CREATE SCHEMA jq_plans;
CREATE FUNCTION jq_plans.hot_path_statements(schema regnamespace)
RETURNS TABLE (statement text, version text, prepare_sql text, execute_sql text)
AS 'jobqueue', 'jobqueue_hot_path_statements' LANGUAGE C STRICT;

-- The scan and sort nodes (and index conditions) of each hot statement's generic plan, one line
-- per statement: the newest text of each, the one the installed version's functions run
-- (older texts serve older schemas, whose tables they are written for).
CREATE FUNCTION jq_plans.shapes() RETURNS TABLE (statement text, version text, shape text)
LANGUAGE plpgsql AS $fn$
DECLARE
    s record;
    line text;
    nodes text[];
BEGIN
    SET LOCAL plan_cache_mode = force_generic_plan;
    SET LOCAL jobqueue.plan_marked_text = on;
    DEALLOCATE ALL;
    FOR s IN SELECT DISTINCT ON (h.statement) *
             FROM jq_plans.hot_path_statements(
                 (SELECT extnamespace FROM pg_extension WHERE extname = 'jobqueue')) h
             ORDER BY h.statement, string_to_array(h.version, '.')::int[] DESC
    LOOP
        EXECUTE s.prepare_sql;
        nodes := '{}';
        FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || s.execute_sql LOOP
            -- a Merge Append over the partitions keeps their index order: its
            -- "Sort Key" is no sort
            IF line ~ '(Scan|Sort|Index Cond|Append)' AND line !~ 'Sort Key' THEN
                nodes := nodes || regexp_replace(btrim(line), '^->\s*', '');
            END IF;
        END LOOP;
        statement := s.statement;
        version := s.version;
        shape := array_to_string(nodes, '; ');
        RETURN NEXT;
    END LOOP;
END
$fn$;

-- What must never appear in a hot plan: a scan of the whole queue table,
-- a bitmap scan or a sort.
CREATE FUNCTION jq_plans.bad_shapes() RETURNS TABLE (statement text, version text, shape text)
LANGUAGE sql AS $fn$
    SELECT * FROM jq_plans.shapes()
    WHERE shape ~ '(Seq Scan on queue_jobs|Bitmap|Sort)'
$fn$;

-- 1. empty, analysed: the shapes every later case must keep
VACUUM ANALYZE queue_jobs;
SELECT * FROM jq_plans.shapes();
SELECT * FROM jq_plans.bad_shapes();
CREATE TABLE jq_plans.empty_shapes AS SELECT * FROM jq_plans.shapes();

-- Plans that differ from the empty table's (none may).
CREATE FUNCTION jq_plans.changed_shapes() RETURNS TABLE (statement text, version text, shape text)
LANGUAGE sql AS $fn$
    SELECT * FROM jq_plans.shapes() EXCEPT SELECT * FROM jq_plans.empty_shapes ORDER BY 1, 2
$fn$;

-- 2. filled, never analysed (the table is created anew, so no statistics;
-- autovacuum must not analyse it under the test)
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
ALTER TABLE queue_jobs_ring0 SET (autovacuum_enabled = false);
ALTER TABLE queue_jobs_ring1 SET (autovacuum_enabled = false);
ALTER TABLE queue_jobs_long SET (autovacuum_enabled = false);
SELECT count(*) FROM unnest(queue_push_many(
    (SELECT jsonb_agg(jsonb_build_object('name', 'n', 'queue', 'q' || (i % 3),
                                         'delay', CASE WHEN i % 5 = 0 THEN 60 ELSE 0 END))
     FROM generate_series(1, 10000) AS i))) AS pushed;
SELECT bool_and(c.reltuples < 0) AS never_analysed
FROM pg_partition_tree('queue_jobs') t JOIN pg_class c ON c.oid = t.relid;
SELECT * FROM jq_plans.changed_shapes();

-- 3. the same table analysed
ANALYZE queue_jobs;
SELECT * FROM jq_plans.changed_shapes();

DEALLOCATE ALL;
DROP SCHEMA jq_plans CASCADE;

-- 4. A user's query is planned as without the extension, whatever its text
-- holds: the mark in a string literal, or a marked statement before it in
-- the same query string.  A small indexed table whose natural plan is a
-- sequential scan; the rule would make it an index scan.
CREATE TABLE user_rows (id int PRIMARY KEY, note text);
INSERT INTO user_rows SELECT i, 'row ' || i FROM generate_series(1, 100) AS i;
ANALYZE user_rows;
EXPLAIN (COSTS OFF) SELECT * FROM user_rows WHERE id > 0 AND note <> '/* jobqueue hot path */ ';
EXPLAIN (COSTS OFF) SELECT * FROM user_rows WHERE id > 0 AND note <> '/* jobqueue index plan */ ';
SELECT '/* jobqueue hot path */ ' AS marked \; EXPLAIN (COSTS OFF) SELECT * FROM user_rows WHERE id > 0;
-- the switch for tests and benchmarks plans marked text by the rule
SET jobqueue.plan_marked_text = on;
EXPLAIN (COSTS OFF) SELECT * FROM user_rows WHERE id > 0 AND note <> '/* jobqueue hot path */ ';
RESET jobqueue.plan_marked_text;
-- and only a superuser may turn it on
CREATE ROLE jq_plans_user;
SET ROLE jq_plans_user;
SET jobqueue.plan_marked_text = on;
RESET ROLE;
DROP ROLE jq_plans_user;
DROP TABLE user_rows;

DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
