#!/usr/bin/env bash
# tests/search_path/run.sh - a caller's search_path cannot capture the extension.
#
# A schema "evil", put before the extension's schema in search_path, holds
# its own queue_jobs, queue_failed_jobs, queue_settings (with sentinel rows in
# the very queues the test uses) and queue_job_tokens (starting at 10^9);
# functions nextval, count, now, clock_timestamp, coalesce, unnest, chr, left,
# octet_length, format; operators = and <= for (text,text), (bigint,bigint),
# (timestamptz,timestamptz) and also <>, <, >, >=, || .  Each evil function
# and operator writes a row into evil.calls (log mode) or raises (raise mode)
# and otherwise answers like the real one; writes to the evil tables are
# logged and blocked by triggers.
#
# Passes (a fresh set of queue names each):
#   1. SET search_path = evil, public                    (log mode)
#   2. SET search_path = evil, pg_catalog, public        (log mode: evil
#      objects now win over pg_catalog for unqualified names)
#   3. SET search_path = pg_temp, evil, pg_catalog, public, plus temp tables
#      queue_jobs / queue_failed_jobs / queue_settings with sentinel rows
#   4. as 2, raise mode: any evil object called makes the call fail
# In each pass every jobqueue function is called (push, push_many, reserve,
# delete, delete_many, release, release_many, fail, fail_many, extend,
# pending, stats, list, failed rows/count, retry, forget, cancel, clear, pause,
# resume, set_default_lease, set_notify, grant, revoke; from 1.2 also
# schedule_set, schedule_list, cron_next, tick, schedule_remove, with an evil
# queue_schedules beside them) and then checked, with
# a clean search_path: its results are those of the extension's own tables
# (no sentinel row or evil token shows up), the extension's tables hold what
# the calls wrote, the evil tables are unchanged and evil.calls is empty.
# Also checked once: no function of the extension has a setting of its own
# (1.6: the library parses and runs each statement under pg_catalog alone;
# up to 1.5 each had search_path=pg_catalog, pg_temp), and all but queue_grant /
# queue_revoke are SECURITY DEFINER (but for queue_current_ring, the
# default of queue_jobs.ring, which runs no SQL; 1.3; and the flow-control
# trigger functions, which fire inside the others: 1.5).  From 1.3 a rotation
# of the storage ring runs under the hostile search_path too.
#
# Usage: needs a running cluster (PGHOST/PGPORT/PGUSER=postgres, as
# scripts/test.sh exports) and `make install` done.  Creates database
# jq_search_path_<pid> and role jq_sp_role_<pid>, drops both at the end.
#   JQ_SP_SELFTEST=1  call one evil operator from a pass on purpose: must fail
# Last line: "N passed, N failed".
set -uo pipefail

DB=jq_search_path_$$
ROLE=jq_sp_role_$$
WORK=$(mktemp -d /tmp/jq-sp.XXXXXX)
SELFTEST=${JQ_SP_SELFTEST:-0}
CHECKS_SUITE=search_path
source "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.bash"

cleanup() {
    dropdb --if-exists --force "$DB" >/dev/null 2>&1 || true
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $ROLE" >/dev/null 2>&1 || true
    rm -rf -- "$WORK"
}
trap cleanup EXIT


createdb "$DB" || { check "create database" f; finish; }
q -d postgres -c "CREATE ROLE $ROLE NOLOGIN" || { check "create role" f; finish; }

# ------------------------------------------------------------ the evil schema
q -d "$DB" > /dev/null <<'SQL' || { check "create the extension and the evil schema" f; finish; }
CREATE EXTENSION jobqueue;
CREATE SCHEMA evil;
CREATE TABLE evil.calls (what text);
-- log mode writes a row; raise mode (evil.raise = on) raises
CREATE FUNCTION evil.log(what text) RETURNS boolean LANGUAGE plpgsql
SET search_path = pg_catalog AS $$
BEGIN
    IF current_setting('evil.raise', true) = 'on' THEN
        RAISE EXCEPTION 'evil object called: %', what;
    END IF;
    INSERT INTO evil.calls VALUES (what);
    RETURN true;
END $$;

-- look-alike tables, with sentinel rows in the queues the test uses
CREATE TABLE evil.queue_jobs (LIKE public.queue_jobs INCLUDING DEFAULTS);
CREATE TABLE evil.queue_failed_jobs (LIKE public.queue_failed_jobs INCLUDING DEFAULTS);
CREATE TABLE evil.queue_settings (LIKE public.queue_settings INCLUDING DEFAULTS);
CREATE SEQUENCE evil.queue_job_tokens START 1000000000;
INSERT INTO evil.queue_jobs (id, queue, name, payload, available_at, created_at, ready, priority)
SELECT 900000 + g * 10 + k, q || '_' || g, 'EVIL', '{"evil": true}', '2000-01-01', '2000-01-01', true, 1000
FROM generate_series(1, 4) g, generate_series(1, 5) k, unnest('{sp_q,sp_m,sp_p}'::text[]) WITH ORDINALITY AS u(q, o)
WHERE k = o OR k > 3;
INSERT INTO evil.queue_failed_jobs
SELECT 990000 + g, 990000 + g, 'sp_q_' || g, 'EVIL', '{}', 0, 1, 1, 'EVIL', '2000-01-01', '2000-01-01'
FROM generate_series(1, 4) g;
INSERT INTO evil.queue_settings VALUES ('evil_only', true, '1 second', false, '2000-01-01');
INSERT INTO evil.queue_settings SELECT 'sp_q_' || g, true, '1 second', false, '2000-01-01' FROM generate_series(1, 4) g;

CREATE FUNCTION evil.block_write() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    PERFORM evil.log(TG_OP || ' on evil.' || TG_TABLE_NAME);
    RETURN NULL;
END $$;
CREATE TRIGGER block BEFORE INSERT OR UPDATE OR DELETE ON evil.queue_jobs FOR EACH ROW EXECUTE FUNCTION evil.block_write();
CREATE TRIGGER block BEFORE INSERT OR UPDATE OR DELETE ON evil.queue_failed_jobs FOR EACH ROW EXECUTE FUNCTION evil.block_write();
CREATE TRIGGER block BEFORE INSERT OR UPDATE OR DELETE ON evil.queue_settings FOR EACH ROW EXECUTE FUNCTION evil.block_write();
CREATE TRIGGER block_truncate BEFORE TRUNCATE ON evil.queue_jobs FOR EACH STATEMENT EXECUTE FUNCTION evil.block_write();

-- look-alike functions: log, then answer like the real one
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('nextval(regclass)') THEN 424242::bigint END $$;
CREATE FUNCTION evil.nextval(text) RETURNS bigint LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('nextval(text)') THEN 424242::bigint END $$;
CREATE FUNCTION evil.count_step(bigint) RETURNS bigint LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('count(*)') THEN $1 + 1000 END $$;
CREATE AGGREGATE evil.count(*) (SFUNC = evil.count_step, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION evil.count_any_step(bigint, anyelement) RETURNS bigint LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('count(anyelement)') THEN $1 + 1000 END $$;
CREATE AGGREGATE evil.count(anyelement) (SFUNC = evil.count_any_step, STYPE = bigint, INITCOND = '0');
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('now()') THEN '2000-01-01'::timestamptz END $$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('clock_timestamp()') THEN '2000-01-01'::timestamptz END $$;
CREATE FUNCTION evil."coalesce"(anyelement, anyelement) RETURNS anyelement LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('coalesce') THEN COALESCE($1, $2) END $$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT x FROM pg_catalog.unnest($1) x WHERE evil.log('unnest') $$;
CREATE FUNCTION evil.chr(integer) RETURNS text LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('chr') THEN pg_catalog.chr($1) END $$;
CREATE FUNCTION evil.left(text, integer) RETURNS text LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('left') THEN pg_catalog.left($1, $2) END $$;
CREATE FUNCTION evil.octet_length(text) RETURNS integer LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('octet_length') THEN pg_catalog.octet_length($1) END $$;
CREATE FUNCTION evil.format(text, VARIADIC text[]) RETURNS text LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('format') THEN 'EVIL' END $$;

-- look-alike operators
CREATE FUNCTION evil.op(what text, result boolean) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log(what) THEN result END $$;
CREATE FUNCTION evil.eq_text(text, text) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('=(text,text)', texteq($1, $2)) $$;
CREATE FUNCTION evil.le_text(text, text) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('<=(text,text)', text_le($1, $2)) $$;
CREATE FUNCTION evil.ne_text(text, text) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('<>(text,text)', textne($1, $2)) $$;
CREATE FUNCTION evil.cat_text(text, text) RETURNS text LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT CASE WHEN evil.log('||(text,text)') THEN textcat($1, $2) END $$;
CREATE FUNCTION evil.eq_int8(bigint, bigint) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('=(bigint,bigint)', int8eq($1, $2)) $$;
CREATE FUNCTION evil.le_int8(bigint, bigint) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('<=(bigint,bigint)', int8le($1, $2)) $$;
CREATE FUNCTION evil.ge_int8(bigint, bigint) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('>=(bigint,bigint)', int8ge($1, $2)) $$;
CREATE FUNCTION evil.eq_tstz(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('=(timestamptz,timestamptz)', timestamptz_eq($1, $2)) $$;
CREATE FUNCTION evil.le_tstz(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('<=(timestamptz,timestamptz)', timestamptz_le($1, $2)) $$;
CREATE FUNCTION evil.lt_tstz(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('<(timestamptz,timestamptz)', timestamptz_lt($1, $2)) $$;
CREATE FUNCTION evil.gt_tstz(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql SET search_path = pg_catalog
AS $$ SELECT evil.op('>(timestamptz,timestamptz)', timestamptz_gt($1, $2)) $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq_text);
CREATE OPERATOR evil.<= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.le_text);
CREATE OPERATOR evil.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.ne_text);
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.cat_text);
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.eq_int8);
CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.le_int8);
CREATE OPERATOR evil.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.ge_int8);
CREATE OPERATOR evil.= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.eq_tstz);
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.le_tstz);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.lt_tstz);
CREATE OPERATOR evil.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.gt_tstz);

DO $$ BEGIN
    IF to_regclass('public.queue_schedules') IS NOT NULL THEN
        CREATE TABLE evil.queue_schedules (LIKE public.queue_schedules INCLUDING DEFAULTS);
        INSERT INTO evil.queue_schedules (name, cron, job_name, queue, next_due, created_at, updated_at)
        SELECT 'EVIL-sched_' || g, '* * * * *', 'EVIL', 'sp_p_' || g, '2000-01-01', '2000-01-01', '2000-01-01'
        FROM generate_series(1, 4) g;
        CREATE TRIGGER block BEFORE INSERT OR UPDATE OR DELETE ON evil.queue_schedules
            FOR EACH ROW EXECUTE FUNCTION evil.block_write();
    END IF;
END $$;
CREATE SCHEMA sp_check;
CREATE FUNCTION sp_check.evil_tables() RETURNS text LANGUAGE sql SET search_path = pg_catalog, public AS $$
    SELECT md5(coalesce((SELECT string_agg(j::text, '|' ORDER BY id) FROM evil.queue_jobs j), '') ||
               coalesce((SELECT string_agg(f::text, '|' ORDER BY id) FROM evil.queue_failed_jobs f), '') ||
               coalesce((SELECT string_agg(s::text, '|' ORDER BY queue) FROM evil.queue_settings s), '') ||
               coalesce((SELECT string_agg(c::text, '|' ORDER BY name) FROM evil.queue_schedules c), '') ||
               (SELECT last_value::text FROM evil.queue_job_tokens))
$$;
CREATE TABLE sp_check.baseline AS SELECT sp_check.evil_tables() AS sum;
SQL

# The evil objects work (a sanity check of the trap itself).
out=$(q -d "$DB" 2>&1 <<'SQL'
SET search_path = evil, pg_catalog, public;
SELECT 'x'::text = 'x'::text, 1::bigint = 1::bigint, now() = now(), count(*) FROM evil.queue_jobs;
SET search_path = pg_catalog, public;
SELECT count(DISTINCT what) >= 3 FROM evil.calls;
DELETE FROM evil.calls;
SQL
)
check "the trap works: evil operators and functions are taken and log when called" \
    "$([[ $(tail -n 1 <<< "$out") == t ]] && echo t || echo f)" "$out"

check "no function has a setting of its own (1.6: the library pins each statement's path); all but grant/revoke are SECURITY DEFINER" "$(q -d "$DB" -c "
    SELECT bool_and(p.proconfig IS NULL)
           AND bool_and(p.prosecdef OR p.proname IN ('queue_grant', 'queue_revoke'))
               FILTER (WHERE p.proname NOT IN ('queue_current_ring', 'queue_flow_job_removed',
                                               'queue_flow_failed_removed', 'queue_flow_jobs_truncated'))
           AND count(*) >= 20
    FROM pg_proc p
    JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'")"

# 1.2 and later: the schedule functions are called and checked too
SCHED=$(q -d "$DB" -c "SELECT (to_regclass('public.queue_schedules') IS NOT NULL)::int")
# 1.3 and later: a rotation of the storage ring too
RING=$(q -d "$DB" -c "SELECT (to_regclass('public.queue_jobs_ring0') IS NOT NULL)::int")
# 1.5 and later: flow control, whose triggers run SQL of their own
FLOW=$(q -d "$DB" -c "SELECT (to_regclass('public.queue_key_slots') IS NOT NULL)::int")

# One pass: every call under the given search_path, then the checks.
run_pass() { # run_pass N SEARCH_PATH RAISE(on|off) TEMP_TABLES(0|1)
    local n=$1 path=$2 raise=$3 temp=$4 out names
    q -d "$DB" -c "TRUNCATE public.queue_jobs, public.queue_failed_jobs, public.queue_settings$([[ $FLOW == 1 ]] && echo ", public.queue_key_slots, public.queue_job_parents"); DELETE FROM evil.calls" \
        || { check "pass $n: reset" f; return; }
    out=$(psql -X -q -At -v ON_ERROR_STOP=0 -d "$DB" -v sfx="_$n" -v role="$ROLE" -v raise="$raise" \
          -v temp="$temp" -v selftest="$SELFTEST" -v path="$path" -v sched="$SCHED" -v ring="$RING" -v flow="$FLOW" -f - 2>&1 <<'SQL'
\set p1 NULL
\set p2 NULL
\set p2b NULL
\set pd NULL
\set r1 NULL
\set t1 NULL
\set r2 NULL
\set t2 NULL
\set r3 NULL
\set t3 NULL
\if :temp
CREATE TEMP TABLE queue_jobs (LIKE public.queue_jobs);
INSERT INTO queue_jobs SELECT * FROM evil.queue_jobs;
CREATE TEMP TABLE queue_failed_jobs (LIKE public.queue_failed_jobs);
INSERT INTO queue_failed_jobs SELECT * FROM evil.queue_failed_jobs;
CREATE TEMP TABLE queue_settings (LIKE public.queue_settings);
INSERT INTO queue_settings SELECT * FROM evil.queue_settings;
\endif
SELECT 'sp_q' || :'sfx' AS qq, 'sp_m' || :'sfx' AS qm, 'sp_p' || :'sfx' AS qp,
       'sp-key' || :'sfx' AS key, 'sp-mkey' || :'sfx' AS mkey, 'sp-sched' || :'sfx' AS sname \gset
-- the calls, under the hostile search_path (no operator or function of our own below)
SET evil.raise = :'raise';
SET search_path = :path;
SELECT queue_push('sp-1', '{"a": 1}', :'qq') AS p1 \gset
SELECT queue_push('sp-2', '{}', :'qq', '0', 5, :'key') AS p2 \gset
SELECT queue_push('sp-2b', '{}', :'qq', unique_key => :'key') AS p2b \gset
SELECT queue_push('sp-d', '{}', :'qq', '1 hour', deadline => '2999-01-01') AS pd \gset
SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'sp-m1', 'queue', :'qm'),
                                         jsonb_build_object('name', 'sp-m2', 'queue', :'qm', 'unique_key', :'mkey'),
                                         jsonb_build_object('name', 'sp-m3', 'queue', :'qm', 'delay', 0),
                                         jsonb_build_object('name', 'sp-m4', 'queue', :'qm'))) AS pm \gset
SELECT queue_pending(:'qq') AS pending_q, queue_pending() AS pending_all \gset
SELECT string_agg(concat_ws(':', queue, pending, delayed, reserved, total), ',' ORDER BY queue) AS stats FROM queue_stats() \gset
SELECT string_agg(concat_ws(':', queue, paused, notify, pending, total), ',' ORDER BY queue) AS list FROM queue_list() \gset
SELECT id AS r1, token AS t1, name AS n1 FROM queue_reserve(ARRAY[:'qq'], '1 minute', 'sp-w', 1) \gset
SELECT id AS r2, token AS t2, name AS n2 FROM queue_reserve(ARRAY[:'qq'], NULL, 'sp-w', 1) \gset
SELECT queue_extend(:r1, :t1, '10 minutes') AS ext \gset
SELECT queue_delete(:r1, :t1) AS del \gset
SELECT queue_release(:r2, :t2, '0', 'oops') AS rel \gset
SELECT id AS r3, token AS t3 FROM queue_reserve(ARRAY[:'qq'], '1 minute', 'sp-w', 1) \gset
SELECT queue_fail(:r3, :t3, 'bad') AS fl \gset
SELECT array_agg(id) AS mids, array_agg(token) AS mtoks, max(token) AS maxtok
  FROM queue_reserve(ARRAY[:'qm'], '1 minute', 'sp-w', 2) \gset
SELECT queue_delete_many(:'mids', :'mtoks') AS dm \gset
SELECT array_agg(id) AS rids, array_agg(token) AS rtoks FROM queue_reserve(ARRAY[:'qm'], '1 minute', 'sp-w', 2) \gset
SELECT queue_release_many(:'rids', :'rtoks', '0', 'again') AS rm \gset
SELECT array_agg(id) AS fids, array_agg(token) AS ftoks FROM queue_reserve(ARRAY[:'qm'], '1 minute', 'sp-w', 2) \gset
SELECT queue_fail_many(:'fids', :'ftoks', 'all bad') AS fm \gset
SELECT queue_failed_count() AS fc \gset
SELECT string_agg(concat_ws(':', id, queue, name, error), ',' ORDER BY id) AS frows FROM queue_failed_rows(50) \gset
SELECT string_agg(concat_ws(':', id, name), ',') AS frow_q FROM queue_failed_rows(50, :'qm') \gset
SELECT queue_retry_failed(:r3) AS retry \gset
SELECT queue_forget_failed((:'fids'::bigint[])[1]) AS forget \gset
SELECT queue_cancel(:pd) AS cancel \gset
SELECT queue_pause(:'qp');
SELECT queue_set_default_lease(:'qp', '5 minutes');
SELECT queue_set_notify(:'qp', false);
SELECT queue_resume(:'qp');
SELECT queue_pause(:'qq');
SELECT queue_push('sp-m5', '{}', :'qm') AS p5 \gset
SELECT queue_clear(:'qm') AS cleared \gset
SELECT queue_grant(:'role', 'admin');
SELECT queue_revoke(:'role', 'worker');
\if :sched
SELECT queue_schedule_set(:'sname', '*/5 * * * *', 'sp-cron', '{}', :'qp', time_zone => 'Europe/Berlin') AS sset \gset
SELECT string_agg(concat_ws(':', name, cron, queue), ',') AS slist FROM queue_schedule_list() \gset
SELECT string_agg(x::text, ',') AS cnext FROM queue_cron_next('0 12 * * *', '2030-01-01 00:00+00', 'UTC', 2) x \gset
SET jobqueue.clock_offset = '10 minutes';
SELECT string_agg(concat_ws(':', schedule, job_id), ',') AS ticked FROM queue_tick() \gset
RESET jobqueue.clock_offset;
SELECT queue_schedule_remove(:'sname') AS sremoved \gset
\endif
\if :flow
\set qf sp_flow :sfx
\set qr sp_rate :sfx
SELECT queue_push('sp-k1', '{}', :'qf', concurrency_key => 'k') AS k1 \gset
SELECT queue_push('sp-k2', '{}', :'qf', concurrency_key => 'k') AS k2 \gset
SELECT queue_push('sp-child', '{}', :'qf', after => ARRAY[:k1]::bigint[]) AS kc \gset
SELECT string_agg(name, ',' ORDER BY id) AS kclaim1 FROM queue_reserve(ARRAY[:'qf'], max_jobs => 10) \gset
SELECT queue_delete(id, token) AS kdone FROM public.queue_jobs WHERE id = :k1 \gset
SELECT string_agg(name, ',' ORDER BY id) AS kclaim2 FROM queue_reserve(ARRAY[:'qf'], max_jobs => 10) \gset
SELECT queue_rate_limit_set(:'qr', 1, '1 hour');
SELECT queue_push('sp-r1', '{}', :'qr') > 0 AS r1p, queue_push('sp-r2', '{}', :'qr') > 0 AS r2p \gset
SELECT pg_catalog.count(*) AS rclaimed FROM queue_reserve(ARRAY[:'qr'], max_jobs => 10) \gset
\endif
\if :ring
SELECT pg_catalog.count(*) AS jobs_before_rotation FROM public.queue_jobs \gset
SELECT outcome AS rotated, moved AS rot_moved FROM queue_rotate(queue_current_ring()) \gset
\endif
\if :selftest
SELECT 'a'::text = 'a'::text;
\endif
-- the checks, with a clean search_path
RESET evil.raise;
SET search_path = pg_catalog, public;
SELECT 'no evil object was called|' || NOT EXISTS (SELECT 1 FROM evil.calls);
SELECT 'evil tables unchanged|' || (sp_check.evil_tables() = (SELECT sum FROM sp_check.baseline));
SELECT 'push: ids are the extension''s (not evil sequence / sentinel)|' ||
       (:p1 < 900000 AND :p2 < 900000 AND :pd < 900000 AND :p1 <> :p2);
SELECT 'push: a held unique key answers with its holder|' || (:p2b = :p2);
SELECT 'push_many: 4 distinct ids from the extension''s sequence|' ||
       ((SELECT count(DISTINCT x) FROM unnest(:'pm'::bigint[]) x WHERE x < 900000) = 4);
SELECT 'pending counts only the extension''s rows (2 due in the queue, 6 in all)|' || (:pending_q = 2 AND :pending_all = 6);
SELECT 'stats show only the extension''s queues|' ||
       (:'stats' = format('%s:4:0:0:4,%s:2:1:0:3', :'qm', :'qq'));
SELECT 'list shows no evil settings|' || (:'list' NOT LIKE '%evil%' AND :'list' = format('%s:f:t:4:4,%s:f:t:2:3', :'qm', :'qq'));
SELECT 'reserve: the priority job first, then the other, tokens from the extension''s sequence|' ||
       (:'n1' = 'sp-2' AND :'n2' = 'sp-1' AND :t1 < 1000000000 AND :t2 > :t1 AND :t1 <> 424242);
SELECT 'extend, delete, release and fail took effect|' || (:'ext'::boolean AND :'del'::boolean AND :'rel'::boolean AND :'fl'::boolean);
SELECT 'the released job was claimed again and failed: in the extension''s failed table|' ||
       (:r3 = :r2 AND NOT EXISTS (SELECT 1 FROM public.queue_jobs WHERE id = :r1));
SELECT 'delete_many, release_many, fail_many acted on 2 jobs each|' ||
       (cardinality(:'dm'::bigint[]) = 2 AND cardinality(:'rm'::bigint[]) = 2 AND cardinality(:'fm'::bigint[]) = 2
        AND :maxtok < 1000000000);
SELECT 'failed count and rows are the extension''s (3 rows, no EVIL)|' ||
       (:fc = 3 AND :'frows' NOT LIKE '%EVIL%' AND :'frow_q' NOT LIKE '%EVIL%' AND :'frows' LIKE '%all bad%');
SELECT 'retry, forget and cancel worked on the extension''s rows|' || (:retry = 1 AND :forget = 1 AND :'cancel'::boolean);
SELECT 'after retry the job is back under its id; after forget one failed row is left|' ||
       (EXISTS (SELECT 1 FROM public.queue_jobs WHERE id = :r3) AND (SELECT count(*) FROM public.queue_failed_jobs) = 1);
SELECT 'settings written to the extension''s table|' ||
       ((SELECT NOT paused AND default_lease = interval '5 minutes' AND NOT notify FROM public.queue_settings WHERE queue = :'qp')
        AND (SELECT paused FROM public.queue_settings WHERE queue = :'qq')
        AND NOT EXISTS (SELECT 1 FROM public.queue_settings WHERE queue = 'evil_only'));
SELECT 'clear removed the queue''s jobs from the extension''s table|' ||
       (:cleared = 1 AND :p5 < 900000 AND NOT EXISTS (SELECT 1 FROM public.queue_jobs WHERE queue = :'qm'));
\if :ring
SELECT 'rotation: the ring partition of the new jobs emptied into the extension''s own partitions|' ||
       (:'rotated' = 'truncated' AND :rot_moved > 0
        AND (SELECT count(*) FROM public.queue_jobs) = :jobs_before_rotation);
\endif
\if :sched
SELECT 'schedules: set, list, cron_next, tick and remove use the extension''s table|' ||
       (:'slist' = format('sp-sched%s:*/5 * * * *:%s', :'sfx', :'qp') AND :'slist' NOT LIKE '%EVIL%'
        AND :'cnext' = '2030-01-01 12:00:00+00,2030-01-02 12:00:00+00'
        AND :'sremoved'::boolean AND NOT EXISTS (SELECT 1 FROM public.queue_schedules));
SELECT 'the tick pushed the schedule''s job into the extension''s queue_jobs|' ||
       (:'ticked' LIKE format('sp-sched%s:%%', :'sfx') AND :'ticked' NOT LIKE '%EVIL%'
        AND EXISTS (SELECT 1 FROM public.queue_jobs WHERE queue = :'qp' AND name = 'sp-cron'));
\endif
\if :flow
SELECT 'flow control: one job of a key at a time, the slot and the parent''s completion passed on|' ||
       (:'kclaim1' = 'sp-k1' AND :'kdone'::boolean AND :'kclaim2' = 'sp-k2,sp-child'
        AND NOT EXISTS (SELECT 1 FROM public.queue_key_slots WHERE running <> 1)
        AND NOT EXISTS (SELECT 1 FROM public.queue_job_parents));
SELECT 'rate limit: one claim of two jobs, the limit read from the extension''s settings|' || (:rclaimed = 1);
\endif
SELECT 'grant gave admin, revoke took worker and admin, producer kept|' ||
       (has_function_privilege(:'role', (SELECT p.oid FROM pg_catalog.pg_proc p
                                          WHERE p.proname = 'queue_push' AND p.pronamespace = 'public'::regnamespace), 'EXECUTE')
        AND NOT has_function_privilege(:'role', 'public.queue_reserve(text[],interval,text,integer,interval)', 'EXECUTE')
        AND NOT has_function_privilege(:'role', 'public.queue_retry_failed(bigint,integer)', 'EXECUTE'));
SQL
)
    names=0
    while IFS='|' read -r name value; do
        [[ -z $name || -z ${value:-} ]] && continue
        names=$((names + 1))
        check "pass $n ($path$([[ $temp == 1 ]] && echo ", temp tables"), raise $raise): $name" "$value"
    done <<< "$(grep '|' <<< "$out")"
    local expect=$((18 + 2 * SCHED + RING + 2 * FLOW))
    check "pass $n: all $expect checks ran, no call failed" \
        "$([[ $names == "$expect" ]] && ! grep -q 'ERROR' <<< "$out" && echo t || echo f)" \
        "$(grep -m5 -E 'ERROR|evil' <<< "$out")"
    if [[ -n $(q -d "$DB" -c "SELECT string_agg(DISTINCT what, ', ') FROM evil.calls") ]]; then
        echo "   evil objects called: $(q -d "$DB" -c "SELECT string_agg(DISTINCT what, ', ') FROM evil.calls")"
    fi
}

run_pass 1 "evil, public" off 0
run_pass 2 "evil, pg_catalog, public" off 0
run_pass 3 "pg_temp, evil, pg_catalog, public" off 1
run_pass 4 "evil, pg_catalog, public" on 0

finish
