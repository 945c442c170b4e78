#!/usr/bin/env bash
# tests/battery/run.sh - the bad-input battery of the jobqueue extension.
#
# Every SQL function of the extension (listed from pg_proc through the
# extension's pg_depend entries, so new functions are covered without edits)
# is called with NULL in each argument, empty / 10,000-character / injection-
# looking names, -1, 0, 2^31-1, -2^31, zero, negative and '1000000 years'
# intervals, arrays of mismatched lengths and with NULLs, NUL bytes and
# invalid UTF-8 (through convert_from, bytea, and raw bytes from the client),
# 50 MB payloads built server-side, and a few thousand random combinations
# (gen.py, random.seed(42): the same calls on every run).  Each call runs in
# battery.try(), a PL/pgSQL subtransaction that records 'ok' or the SQLSTATE.
#
# A check fails when a call ends in an internal error (SQLSTATE class XX), a
# crash of the backend, or no answer; when a hand-written case (gen.py
# SPECIAL) does not give its expected SQLSTATE / result; when the seeded
# backlog (pending, delayed, held, failed jobs, unique keys, queue settings)
# changed; when a table invariant broke; or when the server log written
# during the run says "terminated by signal", "TRAP", "was terminated" or
# "PANIC".  Calls that succeed change only queues named battery_* (gen.py
# explains how; calls that could reach further are rolled back).
#
# Databases (dropped at the end): jq_battery_<pid> (UTF8, default version;
# edge, special, client-bytes and random passes), jq_battery10_<pid> (1.0
# schema, edge pass: the 1.0 C entry points), jq_battery_ascii_<pid>
# (SQL_ASCII, default version, edge pass plus bytes that are not UTF-8
# stored for real).
#
# Usage: needs a running cluster (PGHOST/PGPORT/PGUSER=postgres, as
# scripts/test.sh exports) and `make install` done.
#   bash tests/battery/run.sh
# Knobs: JQ_LONG=1             30,000 random calls instead of 3,000
#        JQ_BATTERY_CALLS=N    N random calls
#        JQ_BATTERY_QUICK=1    only the UTF8 database (for valgrind runs)
#        JQ_BATTERY_SKIP=tags  comma list of SPECIAL tags not to run (e.g. wake_many)
#        JQ_BATTERY_SELFTEST=1 change a seeded row on purpose: the run must fail
#        JQ_BATTERY_KEEP=1     keep the databases and generated SQL (to investigate)
#        JQ_SERVER_LOG         server log to scan (scripts/cluster.sh exports it)
# Last line: "N passed, N failed" (one check per call, plus the checks above).
#
# ---------------------------------------------------------------------------
# Repeating the regression suite and this battery under valgrind or ASan
# ---------------------------------------------------------------------------
# valgrind (what was done; PostgreSQL 15 from Debian, valgrind 3.19):
#   1. a cluster as scripts/cluster.sh makes it (initdb -A trust -U postgres
#      --no-sync -E UTF8 --locale=C, as the postgres user), but the postmaster
#      started by hand under valgrind, as the postgres user:
#        valgrind --quiet --trace-children=yes --leak-check=no \
#          --num-callers=30 --error-limit=no [--error-exitcode=99] \
#          --suppressions=tests/battery/valgrind-pg.supp \
#          --log-file=/tmp/vg/logs/pg.%p.log \
#          /usr/lib/postgresql/15/bin/postgres -D "$PGDATA" -c port=55541 \
#          -c unix_socket_directories=/tmp/vg -c listen_addresses= \
#          -c max_connections=20 -c fsync=off -c jit=off \
#          -c max_parallel_workers_per_gather=0 -c autovacuum=off &
#      Every backend is a forked child: --trace-children=yes follows it, one
#      log per process.  With --error-exitcode=99 a backend that had an error
#      exits 99, the postmaster takes that for a crash and restarts, so every
#      later test fails too: good to stop at the first error, bad for a full
#      list.  Without it the run goes to the end and the logs hold everything.
#      The .supp file hides only PostgreSQL's own padding writes (WAL, stats).
#   2. the regression suite with pg_regress directly (never make
#      installcheck), ~15x slower than without valgrind:
#        PGHOST=/tmp/vg PGPORT=55541 PGUSER=postgres \
#        /usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress \
#          --inputdir=. --outputdir=/tmp/vg/out --load-extension=jobqueue \
#          --dbname=vg_regress <the REGRESS list of the Makefile>
#   3. a small battery (about 1,100 calls, ~6 minutes under valgrind):
#        JQ_SERVER_LOG=<the postmaster's stderr file> JQ_BATTERY_QUICK=1 \
#        JQ_BATTERY_CALLS=300 bash tests/battery/run.sh
#   4. the reports with a frame of the extension:
#        grep -l 'extension/src\|jobqueue.so' /tmp/vg/logs/pg.*.log
#      Invalid reads or writes with a jobqueue frame are bugs; reports with
#      only PostgreSQL frames are PostgreSQL's known noise.
#   Caveat: Debian's PostgreSQL is not built with USE_VALGRIND, so valgrind
#   sees palloc/pfree only at the malloc level: memory of a context that was
#   reset but whose block was kept (small allocations, the context freelist)
#   still reads as valid.  Use-after-free of bigger allocations (blocks of
#   their own, or blocks freed on reset) is reported.
# ASan (not run here; the recipe):
#   build outside the shared tree and install into a private copy of the
#   PostgreSQL installation (the binaries find share/ and lib/ relative to
#   their own place), so neither the tree nor the system install changes:
#     P=/tmp/asan/pg; mkdir -p $P/usr/lib/postgresql $P/usr/share/postgresql
#     cp -a /usr/lib/postgresql/15 $P/usr/lib/postgresql/
#     cp -a /usr/share/postgresql/15 $P/usr/share/postgresql/
#     git archive HEAD | tar -x -C /tmp/asan/src && cd /tmp/asan/src
#     make PG_CFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -g -O1' \
#          PG_LDFLAGS='-fsanitize=address,undefined'
#     make install DESTDIR=$P
#   initdb with $P/usr/lib/postgresql/15/bin/initdb, then start the postmaster
#   with the runtime preloaded (postgres itself is not instrumented, so the
#   ASan runtime must be the first library of the process):
#     LD_PRELOAD=$(gcc -print-file-name=libasan.so) \
#     ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=/tmp/asan/log/pg \
#     UBSAN_OPTIONS=print_stacktrace=1 \
#     $P/usr/lib/postgresql/15/bin/postgres -D "$PGDATA" -c port=55541 ...
#   run pg_regress and this battery as for valgrind and read /tmp/asan/log/pg.*.
#   (The valgrind run above used the same private install, built without
#   sanitizers.)
# ---------------------------------------------------------------------------
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LONG=${JQ_LONG:-0}
if [[ -n ${JQ_BATTERY_CALLS:-} ]]; then
    RANDOM_CALLS=$JQ_BATTERY_CALLS
elif [[ $LONG == 1 ]]; then
    RANDOM_CALLS=30000
else
    RANDOM_CALLS=3000
fi
QUICK=${JQ_BATTERY_QUICK:-0}
SKIP=${JQ_BATTERY_SKIP:-}
SELFTEST=${JQ_BATTERY_SELFTEST:-0}

DB=jq_battery_$$
DB10=jq_battery10_$$
DBASCII=jq_battery_ascii_$$
WORK=$(mktemp -d /tmp/jq-battery.XXXXXX)
export PGOPTIONS="${PGOPTIONS:-} -c statement_timeout=120s -c client_min_messages=warning"

passed=0
failed=0
started=$SECONDS

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check NAME CONDITION-RESULT(t/f) [detail]
    if [[ $2 == t ]]; then ok; else bad "$1${3:+ ($3)}"; fi
}

wait_ready() {
    local i
    for i in $(seq 1 240); do
        if psql -X -q -At -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    echo "battery: server did not come back" >&2
    return 1
}

cleanup() {
    wait_ready >/dev/null 2>&1 || true
    if [[ ${JQ_BATTERY_KEEP:-0} == 1 ]]; then
        echo "battery: JQ_BATTERY_KEEP=1: kept $DB $DB10 $DBASCII and $WORK"
        return
    fi
    for d in "$DB" "$DB10" "$DBASCII"; do
        dropdb --if-exists --force "$d" >/dev/null 2>&1 || true
    done
    rm -rf -- "$WORK"
}
trap cleanup EXIT

LOG_OFFSET=0
if [[ -n ${JQ_SERVER_LOG:-} && -f $JQ_SERVER_LOG ]]; then
    LOG_OFFSET=$(stat -c %s "$JQ_SERVER_LOG")
fi

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# The recording machinery: battery.try runs one call in a subtransaction.
setup_db() { # setup_db DB ENCODING [VERSION]
    local db=$1 enc=$2 version=${3:-}
    createdb -T template0 -E "$enc" --locale=C "$db" || return 1
    q -d "$db" <<SQL || return 1
CREATE EXTENSION jobqueue ${version:+VERSION '$version'};
CREATE SCHEMA battery;
CREATE TABLE battery.log (n int PRIMARY KEY, tag text, fn text, rollback boolean,
                          sqlstate text, message text, result text, stmt text);
CREATE TABLE battery.expect (n int PRIMARY KEY, sqlstate text, result text);
-- Runs expr; records 'ok' or the SQLSTATE.  rb: roll the call back even when
-- it succeeded (calls that could reach beyond battery_* queues).
CREATE FUNCTION battery.try(n int, tag text, fn text, pre text, expr text, rb boolean)
RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
    st text := 'ok';
    msg text;
    res text;
BEGIN
    BEGIN
        IF pre IS NOT NULL THEN
            EXECUTE pre;
        END IF;
        EXECUTE 'SELECT left((' || expr || ')::text, 200)' INTO res;
        IF rb THEN
            RAISE EXCEPTION USING ERRCODE = 'JQRBK';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
        IF st = 'JQRBK' THEN
            st := 'ok';
            msg := NULL;
        END IF;
    END;
    INSERT INTO battery.log VALUES (n, tag, fn, rb, st, left(msg, 300), res, left(expr, 400));
    RETURN st;
END
\$\$;
CREATE FUNCTION battery.skip(n int, tag text, fn text, expr text) RETURNS text
LANGUAGE sql AS \$\$
    INSERT INTO battery.log VALUES (n, tag, fn, false, 'skipped', NULL, NULL, left(expr, 400));
    DELETE FROM battery.expect e WHERE e.n = skip.n;
    SELECT 'skipped';
\$\$;
SQL
}

# The pre-existing backlog the battery must not change.
seed_db() { # seed_db DB
    local db=$1 v11
    v11=$(q -d "$db" -c "SELECT extversion <> '1.0' FROM pg_extension WHERE extname = 'jobqueue'")
    q -d "$db" >/dev/null <<SQL || return 1
SELECT queue_push('seed_job', '{"k": 1}', 'seed_alpha');
SELECT queue_push('seed_delayed', '{"k": 2}', 'seed_alpha', '1 hour', 7);
SELECT queue_push('seed_unique', '{}', 'seed_beta', unique_key => 'seed_key_1');
SELECT queue_push('seed_held', '{}', 'seed_gamma') FROM generate_series(1, 2);
SELECT count(*) FROM queue_reserve('{seed_gamma}', '1 hour', 'seed-worker', 2);
SELECT queue_push('seed_failed', '{"f": true}', 'seed_delta') FROM generate_series(1, 2);
SELECT queue_fail(id, token, 'seed error') FROM queue_reserve('{seed_delta}', '1 hour', 'seed-worker', 2);
SELECT queue_push('seed_expiring', '{}', 'seed_epsilon', '1 second', max_attempts => 1);
SELECT queue_push('seed_lease_gone', '{}', 'seed_zeta', max_attempts => 1);
SELECT count(*) FROM queue_reserve('{seed_zeta}', '1 second', 'seed-worker', 1);
CREATE TABLE battery.seed_jobs AS SELECT id FROM queue_jobs;
CREATE TABLE battery.seed_failed AS SELECT id FROM queue_failed_jobs;
SQL
    if [[ $v11 == t ]]; then
        q -d "$db" >/dev/null <<'SQL' || return 1
SELECT queue_push('seed_deadline', '{}', 'seed_beta', priority => -5, max_attempts => 9,
                  deadline => clock_timestamp() + interval '1 day');
INSERT INTO battery.seed_jobs SELECT max(id) FROM queue_jobs;
SELECT queue_pause('seed_beta');
SELECT queue_set_default_lease('seed_gamma', '5 minutes');
SELECT queue_set_notify('seed_alpha', false);
CREATE TABLE battery.seed_settings AS SELECT queue FROM queue_settings;
SQL
    else
        q -d "$db" -c "CREATE TABLE battery.seed_settings (queue text)" || return 1
    fi
}

checksum() { # checksum DB: md5 of the seeded rows (a missing row counts)
    local db=$1 settings="''"
    if [[ $(q -d "$db" -c "SELECT to_regclass('queue_settings') IS NOT NULL") == t ]]; then
        settings="coalesce((SELECT string_agg(coalesce(x::text, 'MISSING ' || s.queue), '|' ORDER BY s.queue)
                   FROM battery.seed_settings s LEFT JOIN queue_settings x ON x.queue = s.queue), '')"
    fi
    q -d "$db" -c "SELECT md5(
        coalesce((SELECT string_agg(coalesce(j::text, 'MISSING ' || s.id), '|' ORDER BY s.id)
                  FROM battery.seed_jobs s LEFT JOIN queue_jobs j ON j.id = s.id), '') || '#' ||
        coalesce((SELECT string_agg(coalesce(f::text, 'MISSING ' || s.id), '|' ORDER BY s.id)
                  FROM battery.seed_failed s LEFT JOIN queue_failed_jobs f ON f.id = s.id), '') || '#' ||
        $settings) || ' ' || (SELECT count(*) FROM battery.seed_jobs) || ' jobs'"
}

functions_tsv() { # functions_tsv DB > file: the extension's functions and IN arguments
    q -d "$1" -F $'\t' -c "
SELECT p.proname,
       coalesce((SELECT string_agg(u.n, ',' ORDER BY u.o)
                 FROM unnest(coalesce(p.proargnames, '{}'),
                             coalesce(p.proargmodes::text[],
                                      array_fill('i'::text, ARRAY[coalesce(cardinality(p.proargnames), 0)])))
                      WITH ORDINALITY AS u(n, m, o)
                 WHERE u.m IN ('i', 'b', 'v')), ''),
       coalesce((SELECT string_agg(format_type(t.oid, NULL), ',' ORDER BY t.o)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS t(oid, o)), ''),
       p.pronargdefaults, p.proretset
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
ORDER BY p.proname, p.oid"
}

ext_schema() {
    q -d "$1" -c "SELECT quote_ident(n.nspname) FROM pg_extension e
                  JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'jobqueue'"
}

# Runs a file of calls (one a line).  A lost connection is a crash: the first
# call of the file with no log row is marked CRASH, the server is awaited and
# the run goes on with the next line.
run_calls() { # run_calls DB FILE
    local db=$1 file=$2 start=1 rc crash_n line total
    total=$(wc -l < "$file")
    while (( start <= total )); do
        tail -n +"$start" "$file" | psql -X -q -At -v ON_ERROR_STOP=0 -d "$db" \
            > "$WORK/out.txt" 2> "$WORK/err.txt"
        rc=$?
        if (( rc != 2 )); then
            break
        fi
        wait_ready || return 1
        # the first call from here on that has no row: the one that crashed
        crash_n=""
        declare -A logged=()
        local first_n
        first_n=$(tail -n +"$start" "$file" | head -n 1 | sed -E 's/^[^(]*battery\.[a-z]+\(([0-9]+),.*/\1/; s/^INSERT INTO battery.expect VALUES \(([0-9]+),.*/\1/')
        while IFS= read -r line; do
            logged[$line]=1
        done < <(q -d "$db" -c "SELECT n FROM battery.log WHERE n >= $first_n")
        while IFS= read -r line; do
            if [[ -z ${logged[$line]:-} ]]; then
                crash_n=$line
                break
            fi
            start=$((start + 1))
        done < <(tail -n +"$start" "$file" | sed -E 's/^INSERT INTO battery.expect VALUES \(([0-9]+),.*/\1/; s/^SELECT battery\.[a-z]+\(([0-9]+),.*/\1/')
        unset logged
        [[ -n $crash_n ]] || break
        echo "battery: call $crash_n lost the connection (crash?): $(grep -m1 -o "battery.try($crash_n, .*" "$file" | cut -c1-300)"
        q -d "$db" -c "INSERT INTO battery.log VALUES ($crash_n, 'crash', NULL, NULL, 'CRASH',
                       'connection lost', NULL, NULL) ON CONFLICT DO NOTHING" || return 1
        start=$((start + 1))
    done
    return 0
}

# One check per call: ended in a result or an error with a proper SQLSTATE.
judge_calls() { # judge_calls DB FIRST LAST LABEL
    local db=$1 first=$2 last=$3 label=$4 good bads missing
    missing=$(q -d "$db" -c "SELECT count(*) FROM generate_series($first, $last) g
                             WHERE NOT EXISTS (SELECT 1 FROM battery.log WHERE n = g)")
    good=$(q -d "$db" -c "SELECT count(*) FROM battery.log l LEFT JOIN battery.expect e USING (n)
        WHERE n BETWEEN $first AND $last AND l.sqlstate NOT LIKE 'XX%' AND l.sqlstate <> 'CRASH'
          AND (e.n IS NULL OR (l.sqlstate = 'skipped') OR (e.sqlstate = '!ok' AND l.sqlstate <> 'ok')
               OR (l.sqlstate = e.sqlstate AND (e.result IS NULL OR l.result = e.result)))")
    passed=$((passed + good))
    bads=$(q -d "$db" -F ' | ' -c "SELECT l.n, l.fn, l.sqlstate,
            coalesce('expected ' || e.sqlstate || coalesce(' = ' || e.result, '') || ', got result ' || coalesce(l.result, 'none'), ''),
            coalesce(l.message, ''), coalesce(l.stmt, '')
        FROM battery.log l LEFT JOIN battery.expect e USING (n)
        WHERE n BETWEEN $first AND $last AND NOT (l.sqlstate NOT LIKE 'XX%' AND l.sqlstate <> 'CRASH'
          AND (e.n IS NULL OR (l.sqlstate = 'skipped') OR (e.sqlstate = '!ok' AND l.sqlstate <> 'ok')
               OR (l.sqlstate = e.sqlstate AND (e.result IS NULL OR l.result = e.result))))
        ORDER BY n")
    if [[ -n $bads ]]; then
        while IFS= read -r line; do
            bad "$label call ${line:0:600}"
        done <<< "$bads"
    fi
    if (( missing > 0 )); then
        for (( i = 0; i < missing; i++ )); do failed=$((failed + 1)); done
        echo "FAIL: $label: $missing calls have no result (timeout or lost statement)"
    fi
}

report_counts() { # report_counts DB FIRST LAST LABEL
    local db=$1
    echo "-- $4: $(q -d "$db" -c "SELECT count(*) || ' calls, ' || count(*) FILTER (WHERE sqlstate = 'ok') || ' ok ('
            || count(*) FILTER (WHERE sqlstate = 'ok' AND rollback) || ' rolled back), '
            || count(*) FILTER (WHERE sqlstate NOT IN ('ok', 'skipped')) || ' errors, '
            || count(*) FILTER (WHERE sqlstate = 'skipped') || ' skipped'
            FROM battery.log WHERE n BETWEEN $2 AND $3")"
    echo "   errors by SQLSTATE: $(q -d "$db" -c "SELECT coalesce(string_agg(sqlstate || ' ' || c, ', ' ORDER BY c DESC, sqlstate), 'none')
            FROM (SELECT sqlstate, count(*) c FROM battery.log
                  WHERE n BETWEEN $2 AND $3 AND sqlstate NOT IN ('ok', 'skipped') GROUP BY 1) s")"
}

# Table invariants after the battery.
invariants() { # invariants DB LABEL
    local db=$1 label=$2 has_settings res
    res=$(q -d "$db" -F ' ' <<'SQL'
SELECT 'tables_present', to_regclass('queue_jobs') IS NOT NULL AND to_regclass('queue_failed_jobs') IS NOT NULL;
SELECT 'no_job_in_both_tables', NOT EXISTS (SELECT 1 FROM queue_jobs j JOIN queue_failed_jobs f USING (id));
SELECT 'job_columns_in_range', NOT EXISTS (SELECT 1 FROM queue_jobs WHERE attempts < 0 OR attempts > max_attempts
    OR max_attempts NOT BETWEEN 1 AND 1000000 OR char_length(name) NOT BETWEEN 1 AND 200
    OR char_length(queue) NOT BETWEEN 1 AND 64 OR char_length(unique_key) NOT BETWEEN 1 AND 200
    OR char_length(reserved_by) > 200 OR octet_length(last_error) > 60000);
SELECT 'failed_columns_in_range', NOT EXISTS (SELECT 1 FROM queue_failed_jobs WHERE id <> job_id
    OR char_length(name) NOT BETWEEN 1 AND 200 OR char_length(queue) NOT BETWEEN 1 AND 64
    OR octet_length(error) NOT BETWEEN 1 AND 60000);
SELECT 'stats_match_table', (SELECT coalesce(sum(total), 0) FROM queue_stats()) = (SELECT count(*) FROM queue_jobs)
    AND NOT EXISTS (SELECT 1 FROM queue_stats() WHERE pending + delayed + reserved <> total);
SELECT 'failed_count_matches', queue_failed_count() = (SELECT count(*) FROM queue_failed_jobs);
SQL
)
    while read -r name value; do
        check "$label invariant $name" "$value"
    done <<< "$res"
}

# Bytes a client sends that are not valid in the database encoding.
client_bytes() { # client_bytes DB FIRST_N -> sets CLIENT_LAST
    local db=$1 n=$2 schema out state
    schema=$(ext_schema "$db")
    run_raw() { # run_raw TAG EXPECT ENCODING SQL-BYTES
        local tag=$1 expect=$2 enc=$3
        out=$(printf '%b' "$4" | PGCLIENTENCODING=$enc psql -X -q -At -v VERBOSITY=verbose -d "$db" 2>&1 | tr -cd '[:print:]\n')
        state=$(grep -o -m1 -E '^(psql:[^ ]* )?ERROR:  [0-9A-Z]{5}' <<< "$out" | grep -o -E '[0-9A-Z]{5}$')
        [[ -n $state ]] || state=ok
        wait_ready
        q -d "$db" -c "INSERT INTO battery.log VALUES ($n, 'client:$tag', 'queue_push', false,
            $(printf "'%s'" "$state"), left(\$m\$${out//\$m\$/}\$m\$, 300), NULL, NULL)" >/dev/null
        q -d "$db" -c "INSERT INTO battery.expect VALUES ($n, '$expect', NULL)" >/dev/null
        n=$((n + 1))
    }
    run_raw ff_utf8 22021 UTF8 "SELECT $schema.queue_push('bad\\xff', '{}', 'battery_q1');\n"
    run_raw c328_utf8 22021 UTF8 "SELECT $schema.queue_push('bad\\xc3\\x28', '{}', 'battery_q1');\n"
    run_raw ff_sql_ascii 22021 SQL_ASCII "SELECT $schema.queue_push('bad\\xff', '{}', 'battery_q1');\n"
    run_raw ff_payload 22021 UTF8 "SELECT $schema.queue_push('n', '{\"a\": \"\\xff\"}', 'battery_q1');\n"
    # LATIN1 0xFF is the character y-diaeresis: converted, stored, valid
    run_raw ff_latin1 ok LATIN1 "SELECT $schema.queue_push('latin\\xff', '{}', 'battery_q1') > 0;\n"
    # psql cannot send a NUL byte: the statement is cut there (no call reaches the server)
    run_raw nul_in_query 42601 UTF8 "SELECT $schema.queue_push('a\\x00b', '{}', 'battery_q1');\n"
    CLIENT_LAST=$((n - 1))
}

# SQL_ASCII: bytes that are not UTF-8 stored and handed back for real.
ascii_cases() { # ascii_cases DB FIRST_N > file
    local s=$1 n=$2
    local bad="convert_from(''\\xffc3''::bytea, ''SQL_ASCII'')"
    cat <<SQL
SELECT battery.try($n, 'ascii', 'queue_push', NULL, '$s.queue_push(''n'' || $bad, jsonb_build_object(''x'', $bad), ''battery_'' || $bad, unique_key => ''battery_k'' || $bad) > 0', false);
SELECT battery.try($((n + 1)), 'ascii', 'queue_push', NULL, '$s.queue_push(repeat($bad, 101), ''{}'', ''battery_a'')', false);
SELECT battery.try($((n + 2)), 'ascii', 'queue_reserve', NULL, '(SELECT bool_and($s.queue_release(id, token, ''0'', repeat($bad, 40000)) AND position($bad in queue) > 0) FROM $s.queue_reserve(ARRAY[''battery_'' || $bad]))', false);
SELECT battery.try($((n + 3)), 'ascii', 'queue_reserve', NULL, '(SELECT bool_and($s.queue_fail(id, token, repeat(''e'' || $bad, 30000)) AND octet_length(last_error) <= 60000) FROM $s.queue_reserve(ARRAY[''battery_'' || $bad]))', false);
SELECT battery.try($((n + 4)), 'ascii', 'queue_failed_rows', NULL, '(SELECT bool_and(octet_length(error) <= 60000 AND error LIKE ''%truncated'') FROM $s.queue_failed_rows(5, ''battery_'' || $bad))', false);
SELECT battery.try($((n + 5)), 'ascii', 'queue_retry_failed', NULL, '$s.queue_retry_failed((SELECT id FROM $s.queue_failed_jobs WHERE queue = ''battery_'' || $bad))', false);
SELECT battery.try($((n + 6)), 'ascii', 'queue_list', NULL, '(SELECT count(*) FROM $s.queue_list() WHERE queue = ''battery_'' || $bad)', false);
SELECT battery.try($((n + 7)), 'ascii', 'queue_pause', NULL, '$s.queue_pause(''battery_'' || $bad)', false);
SELECT battery.try($((n + 8)), 'ascii', 'queue_clear', NULL, '$s.queue_clear(''battery_'' || $bad)', false);
SQL
    INSERT_EXPECT="INSERT INTO battery.expect VALUES ($n, 'ok', 'true'), ($((n + 1)), '54000', NULL),
        ($((n + 2)), 'ok', 'true'), ($((n + 3)), 'ok', 'true'), ($((n + 4)), 'ok', 'true'),
        ($((n + 5)), 'ok', '1'), ($((n + 6)), 'ok', '1'), ($((n + 7)), 'ok', NULL), ($((n + 8)), 'ok', '1')"
    ASCII_LAST=$((n + 8))
}

# A full pass over one database.  Calls are numbered from 1 in each database.
battery_db() { # battery_db DB LABEL KIND(main|edge|ascii)
    local db=$1 label=$2 kind=$3 schema before after n first
    schema=$(ext_schema "$db")
    functions_tsv "$db" > "$WORK/$db.functions.tsv" || { bad "$label: function list"; return; }
    local nfun
    nfun=$(wc -l < "$WORK/$db.functions.tsv")
    echo "== $label ($db): $nfun functions of the extension: $(cut -f1 "$WORK/$db.functions.tsv" | paste -sd' ')"
    check "$label: the extension has functions" "$( (( nfun >= 10 )) && echo t || echo f)" "$nfun"
    before=$(checksum "$db")

    n=1
    first=$n
    python3 "$HERE/gen.py" "$WORK/$db.functions.tsv" "$schema" edge $n > "$WORK/$db.edge.sql" || { bad "$label: gen.py edge"; return; }
    n=$((n + $(wc -l < "$WORK/$db.edge.sql")))
    local t0=$SECONDS
    run_calls "$db" "$WORK/$db.edge.sql"
    judge_calls "$db" $first $((n - 1)) "$label edge"
    report_counts "$db" $first $((n - 1)) "$label edge pass ($((SECONDS - t0))s)"

    if [[ $kind == main ]]; then
        first=$n
        python3 "$HERE/gen.py" "$WORK/$db.functions.tsv" "$schema" special $n "$SKIP" > "$WORK/$db.special.sql" || { bad "$label: gen.py special"; return; }
        n=$((n + $(wc -l < "$WORK/$db.special.sql")))
        t0=$SECONDS
        run_calls "$db" "$WORK/$db.special.sql"
        judge_calls "$db" $first $((n - 1)) "$label special"
        report_counts "$db" $first $((n - 1)) "$label special cases ($((SECONDS - t0))s)"

        first=$n
        t0=$SECONDS
        client_bytes "$db" $n
        n=$((CLIENT_LAST + 1))
        judge_calls "$db" $first $((n - 1)) "$label client bytes"
        report_counts "$db" $first $((n - 1)) "$label bytes from the client ($((SECONDS - t0))s)"

        first=$n
        python3 "$HERE/gen.py" "$WORK/$db.functions.tsv" "$schema" random $n "$RANDOM_CALLS" > "$WORK/$db.random.sql" || { bad "$label: gen.py random"; return; }
        n=$((n + $(wc -l < "$WORK/$db.random.sql")))
        t0=$SECONDS
        run_calls "$db" "$WORK/$db.random.sql"
        judge_calls "$db" $first $((n - 1)) "$label random"
        report_counts "$db" $first $((n - 1)) "$label random pass, seed 42 ($((SECONDS - t0))s)"
    elif [[ $kind == ascii ]]; then
        first=$n
        ascii_cases "$schema" $n > "$WORK/$db.ascii.sql"
        q -d "$db" -c "$INSERT_EXPECT" >/dev/null
        n=$((ASCII_LAST + 1))
        run_calls "$db" "$WORK/$db.ascii.sql"
        judge_calls "$db" $first $((n - 1)) "$label SQL_ASCII bytes"
        report_counts "$db" $first $((n - 1)) "$label SQL_ASCII bytes"
    fi
    report_counts "$db" 1 $((n - 1)) "$label all"

    if [[ $SELFTEST == 1 && $kind == main ]]; then
        echo "battery: JQ_BATTERY_SELFTEST=1: changing a seeded job on purpose"
        q -d "$db" -c "UPDATE queue_jobs SET priority = priority + 1 WHERE id = (SELECT min(id) FROM battery.seed_jobs)" >/dev/null
    fi
    after=$(checksum "$db")
    check "$label: seeded backlog unchanged" "$([[ $before == "$after" ]] && echo t || echo f)" "before $before, after $after"
    echo "   seeded backlog checksum: before $before, after $after"
    invariants "$db" "$label"
}

# ------------------------------------------------------------------ main
wait_ready || { echo "0 passed, 1 failed"; exit 1; }

if ! setup_db "$DB" UTF8 || ! seed_db "$DB"; then
    echo "battery: setup failed"; echo "$passed passed, $((failed + 1)) failed"; exit 1
fi
battery_db "$DB" "$(q -d "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")/UTF8" main

if [[ $QUICK != 1 ]]; then
    if setup_db "$DB10" UTF8 1.0 && seed_db "$DB10"; then
        battery_db "$DB10" "1.0/UTF8" edge
    else
        bad "setup of the 1.0 database"
    fi
    if setup_db "$DBASCII" SQL_ASCII && seed_db "$DBASCII"; then
        battery_db "$DBASCII" "$(q -d "$DBASCII" -c "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")/SQL_ASCII" ascii
    else
        bad "setup of the SQL_ASCII database"
    fi
fi

# The server log written during this run.
if [[ -n ${JQ_SERVER_LOG:-} && -f $JQ_SERVER_LOG ]]; then
    hits=$(tail -c +"$((LOG_OFFSET + 1))" "$JQ_SERVER_LOG" | grep -E "terminated by signal|TRAP|was terminated|PANIC" || true)
    if [[ -z $hits ]]; then
        ok
        echo "== server log: no crash, TRAP or PANIC during the run"
    else
        bad "server log during the run:"
        head -n 20 <<< "$hits"
    fi
else
    echo "battery: JQ_SERVER_LOG not set: server log not scanned"
fi

echo "battery: $((SECONDS - started))s"
echo "$passed passed, $failed failed"
(( failed == 0 ))
