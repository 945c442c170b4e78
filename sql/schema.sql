--
-- schema: the extension installs into the schema chosen at creation, is not
-- relocatable, is immune to search_path capture, marks its tables for
-- pg_dump, and survives being dropped and re-created in one session.
-- This file creates the extension itself, and leaves it in public at the end.
--
\set VERBOSITY terse

\i sql/include/try.sql
\i sql/include/queued.sql

-- the schemas of all member objects of the extension (functions, relations, types)
CREATE FUNCTION pg_temp.member_schemas() RETURNS text
LANGUAGE sql AS $fn$
    SELECT coalesce(string_agg(DISTINCT nspname, ', ' ORDER BY nspname), '(none)')
    FROM (SELECT p.pronamespace AS ns
          FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
          WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue')
          UNION ALL
          SELECT c.relnamespace
          FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
          WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue')
          UNION ALL
          SELECT t.typnamespace
          FROM pg_depend d JOIN pg_type t ON t.oid = d.objid
          WHERE d.classid = 'pg_type'::regclass AND d.deptype = 'e'
            AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue')) m
    JOIN pg_namespace n ON n.oid = m.ns
$fn$;

--------------------------------------------------------------------------
-- placement
--------------------------------------------------------------------------

-- the extension created by the test driver lives in public
SELECT extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
DROP EXTENSION jobqueue;
CREATE SCHEMA jq;
CREATE EXTENSION jobqueue SCHEMA jq;

-- now the extension and every member object are in jq, nothing in public
SELECT extnamespace::regnamespace AS schema, extrelocatable FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_temp.member_schemas() AS member_schemas;
SELECT to_regclass('jq.queue_jobs') IS NOT NULL AS jq_jobs,
       to_regclass('jq.queue_failed_jobs') IS NOT NULL AS jq_failed,
       to_regtype('jq.queue_job') IS NOT NULL AS jq_type,
       to_regprocedure('jq.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz, text, text, bigint[], text)') IS NOT NULL AS jq_push,
       to_regclass('public.queue_jobs') IS NULL AS no_public_jobs,
       to_regclass('public.queue_failed_jobs') IS NULL AS no_public_failed,
       to_regprocedure('public.queue_push(text, jsonb, text, interval, integer, text, integer, timestamptz, text, text, bigint[], text)') IS NULL AS no_public_push;

-- both tables (every partition of queue_jobs) are marked for pg_dump (pg_extension_config_dump)
SELECT (SELECT bool_and(relid = ANY (extconfig)) FROM pg_partition_tree('jq.queue_jobs') WHERE isleaf) AS jobs_dumped,
       'jq.queue_failed_jobs'::regclass = ANY (extconfig) AS failed_dumped
FROM pg_extension WHERE extname = 'jobqueue';

-- not relocatable: ALTER EXTENSION ... SET SCHEMA fails, the extension stays in jq
SELECT pg_temp.try($$ALTER EXTENSION jobqueue SET SCHEMA public$$) AS set_schema;
ALTER EXTENSION jobqueue SET SCHEMA public;
SELECT extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_temp.member_schemas() AS member_schemas;

-- queue_grant also grants USAGE on the extension's schema
CREATE ROLE regress_jq_schema;
SELECT has_schema_privilege('regress_jq_schema', 'jq', 'USAGE') AS usage_before;
SELECT jq.queue_grant('regress_jq_schema', 'producer');
SELECT has_schema_privilege('regress_jq_schema', 'jq', 'USAGE') AS usage_after;
SET ROLE regress_jq_schema;
SELECT pg_temp.queued(jq.queue_push('by-role', queue => 'schema')) AS pushed;
SELECT jq.queue_pending('schema') AS pending;
RESET ROLE;
SELECT jq.queue_revoke('regress_jq_schema', 'producer');
REVOKE USAGE ON SCHEMA jq FROM regress_jq_schema;
DROP ROLE regress_jq_schema;
TRUNCATE jq.queue_jobs, jq.queue_failed_jobs;

--------------------------------------------------------------------------
-- a hostile search_path captures nothing
--------------------------------------------------------------------------

-- look-alike tables and sequence in a schema "evil", and a log of captures
CREATE SCHEMA evil;
CREATE TABLE evil.queue_jobs (LIKE jq.queue_jobs INCLUDING ALL EXCLUDING DEFAULTS);
CREATE TABLE evil.queue_failed_jobs (LIKE jq.queue_failed_jobs INCLUDING ALL);
CREATE SEQUENCE evil.queue_job_tokens;
CREATE TABLE evil.captured (what text);
-- functions and operators that misbehave (and log) if they are ever used
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO evil.captured VALUES ('nextval');
    RETURN 42;
END
$fn$;
CREATE FUNCTION evil.int8_always(bigint, bigint) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO evil.captured VALUES ('=(bigint,bigint)');
    RETURN true;
END
$fn$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_always);
CREATE FUNCTION evil.text_always(text, text) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO evil.captured VALUES ('=(text,text)');
    RETURN true;
END
$fn$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_always);
CREATE FUNCTION evil.tstz_always(timestamptz, timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO evil.captured VALUES ('<=(timestamptz,timestamptz)');
    RETURN true;
END
$fn$;
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tstz_always);
-- and a temporary look-alike table
CREATE TEMP TABLE queue_jobs (LIKE jq.queue_jobs INCLUDING ALL EXCLUDING DEFAULTS);

-- with search_path = evil, jq, public: the calls use jq's tables only
SET search_path = evil, jq, public;
SELECT pg_temp.queued(jq.queue_push('hostile-1', queue => 'h')) AS pushed;
SELECT pg_temp.queued(jq.queue_push('hostile-2', queue => 'h', delay => '1 hour')) AS pushed;
SELECT * FROM jq.queue_stats();
SELECT jq.queue_pending('h') AS pending;
CREATE TEMP TABLE claim1 AS SELECT * FROM jq.queue_reserve('{h}');
SELECT jq.queue_delete(id, token + 1) AS wrong_token_deletes FROM claim1;
SELECT jq.queue_delete(id, token) AS deleted FROM claim1;
SELECT * FROM jq.queue_stats();
RESET search_path;
SELECT count(*) AS claimed, bool_and(name = 'hostile-1') AS right_job FROM claim1;
SELECT name FROM jq.queue_jobs ORDER BY name;
SELECT (SELECT count(*) FROM evil.queue_jobs) AS evil_jobs,
       (SELECT count(*) FROM evil.queue_failed_jobs) AS evil_failed,
       (SELECT count(*) FROM pg_temp.queue_jobs) AS temp_jobs,
       (SELECT count(*) FROM evil.captured) AS captured;

-- the trap is armed: with evil before pg_catalog, a plain query of the
-- caller's own is captured by evil.= ...
SET search_path = evil, pg_catalog, jq, public;
SELECT count(*) AS rows_matching_id_minus_1 FROM jq.queue_jobs WHERE id = (-1)::bigint;
RESET search_path;
SELECT count(*) > 0 AS trap_fired FROM evil.captured;
TRUNCATE evil.captured;

-- ... but the extension's functions are not: fenced tokens, the token
-- sequence, queue and time comparisons all stay the real ones
SET search_path = evil, pg_catalog, jq, public;
SELECT pg_temp.queued(jq.queue_push('hostile-3', queue => 'h')) AS pushed;
SELECT pg_temp.queued(jq.queue_push('other-queue', queue => 'x')) AS pushed;
CREATE TEMP TABLE claim2 AS SELECT * FROM jq.queue_reserve('{h}', max_jobs => 10);
CREATE TEMP TABLE claim3 AS SELECT * FROM jq.queue_reserve('{h}', max_jobs => 10);
SELECT jq.queue_delete(id, token + 1000) AS wrong_token_deletes FROM claim2;
SELECT jq.queue_release(id, token + 1000, '0') AS wrong_token_releases FROM claim2;
SELECT jq.queue_extend(id, token + 1000, '1 minute') AS wrong_token_extends FROM claim2;
SELECT jq.queue_fail(id, token + 1000, 'x') AS wrong_token_fails FROM claim2;
SELECT jq.queue_fail(id, token, 'failed on purpose') AS failed FROM claim2;
SELECT jq.queue_failed_count() AS failed_count;
SELECT * FROM jq.queue_stats();
RESET search_path;
-- exactly the due job of queue h was claimed, with a real token
SELECT count(*) AS claimed, bool_and(c.name = 'hostile-3') AS right_job,
       bool_and(c.token <> 42) AS real_token
FROM claim2 c;
SELECT count(*) AS claimed_again FROM claim3;
SELECT name, error FROM jq.queue_failed_jobs;
SELECT name FROM jq.queue_jobs ORDER BY name;
SELECT (SELECT count(*) FROM evil.queue_jobs) AS evil_jobs,
       (SELECT count(*) FROM evil.queue_failed_jobs) AS evil_failed,
       (SELECT count(*) FROM pg_temp.queue_jobs) AS temp_jobs,
       (SELECT count(*) FROM evil.captured) AS captured,
       (SELECT last_value FROM evil.queue_job_tokens) AS evil_token_last_value;
DROP TABLE pg_temp.queue_jobs;

--------------------------------------------------------------------------
-- dropped and re-created in the same session: the functions still work
--------------------------------------------------------------------------

-- in the same schema
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue SCHEMA jq;
SELECT jq.queue_pending() AS pending;
SELECT pg_temp.queued(jq.queue_push('again-1', queue => 'r')) AS pushed;
CREATE TEMP TABLE claim4 AS SELECT * FROM jq.queue_reserve('{r}');
SELECT count(*) AS claimed, bool_and(name = 'again-1') AS right_job FROM claim4;
SELECT jq.queue_delete(id, token) AS deleted FROM claim4;
SELECT * FROM jq.queue_stats();
SELECT jq.queue_failed_count() AS failed_count;

-- in another schema
DROP EXTENSION jobqueue;
CREATE SCHEMA jq2;
CREATE EXTENSION jobqueue SCHEMA jq2;
SELECT pg_temp.member_schemas() AS member_schemas;
SELECT to_regclass('jq.queue_jobs') IS NULL AS jq_gone;
SELECT pg_temp.queued(jq2.queue_push('again-2', queue => 'r')) AS pushed;
SELECT pg_temp.queued(jq2.queue_push('again-3', queue => 'r', delay => '1 hour')) AS pushed;
CREATE TEMP TABLE claim5 AS SELECT * FROM jq2.queue_reserve('{r}', max_jobs => 5);
SELECT count(*) AS claimed, bool_and(name = 'again-2') AS right_job FROM claim5;
SELECT jq2.queue_fail(id, token, 'to jq2''s failed table') AS failed FROM claim5;
SELECT * FROM jq2.queue_stats();
SELECT jq2.queue_failed_count() AS failed_count;
SELECT name, error FROM jq2.queue_failed_rows();
SELECT jq2.queue_retry_failed() AS retried;
SELECT name FROM jq2.queue_jobs ORDER BY name;
SELECT jq2.queue_forget_failed(all_rows => true) AS forgotten;

--------------------------------------------------------------------------
-- restore the original state: the extension in public
--------------------------------------------------------------------------
DROP EXTENSION jobqueue;
DROP SCHEMA jq, jq2;
SET client_min_messages = warning;
DROP SCHEMA evil CASCADE;
RESET client_min_messages;
CREATE EXTENSION jobqueue;
SELECT extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'jobqueue';
SELECT pg_temp.member_schemas() AS member_schemas;
SELECT pg_temp.queued(queue_push('back-in-public')) AS pushed;
SELECT queue_pending() AS pending;
TRUNCATE queue_jobs, queue_failed_jobs;
