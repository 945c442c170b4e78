#!/usr/bin/env bats
# The jobqueue tool through a PgBouncer in pool_mode = transaction
# (tests/pgbouncer/run.sh starts it and exports JQ_PGBOUNCER_DSN).
#
#   JOBQUEUE_BIN=/path/to/jobqueue JQ_PGBOUNCER_DSN=... bats tests/pgbouncer/cli.bats
#
# Every command goes through the pooler; the checks read the server
# directly (the PG* environment). Each test works on its own queues
# (pgbt<N>a, pgbt<N>b); teardown deletes their rows.

bats_require_minimum_version 1.5.0

load ../cli/common

# The tool through the pooler, its --pooler left to detect (or to JOBQUEUE_POOLER).
pcli() { "$JOBQUEUE_BIN" --dsn "$JQ_PGBOUNCER_DSN" "$@"; }

count() { sql "select count(*) from queue_jobs where queue = '$1'"; }

# Polls a shell condition every 0.1 s, for at most 20 s.
wait_for() {
    local n=0
    until eval "$1"; do
        n=$((n + 1))
        if [ "$n" -gt 200 ]; then
            echo "timed out waiting for: $1" >&2
            return 1
        fi
        sleep 0.1
    done
}

setup_file() {
    export BATS_NO_PARALLELIZE_WITHIN_FILE=true
    if [ -z "${JOBQUEUE_BIN:-}" ] || [ ! -x "$JOBQUEUE_BIN" ] || [ -z "${JQ_PGBOUNCER_DSN:-}" ]; then
        echo "JOBQUEUE_BIN must name the jobqueue binary and JQ_PGBOUNCER_DSN the pooler" >&2
        return 1
    fi
    PYTHON=$(python3 -c 'import sys; print(sys.executable)')
    export PYTHON
}

setup() {
    Q=pgbt${BATS_TEST_NUMBER}a
    Q2=pgbt${BATS_TEST_NUMBER}b
    WORKER_PID=
}

teardown() {
    if [ -n "${WORKER_PID:-}" ] && kill -0 "$WORKER_PID" 2>/dev/null; then
        kill -KILL "$WORKER_PID"
        wait "$WORKER_PID" || true
    fi
    sql "delete from queue_jobs where queue in ('$Q', '$Q2');
         delete from queue_failed_jobs where queue in ('$Q', '$Q2');
         delete from queue_settings where queue in ('$Q', '$Q2');
         delete from queue_schedules where name like 'pgbt%'"
}

@test "the pooler really breaks named statements: --pooler session fails with 42P05 or 26000" {
    # Proves the setup: a transaction pooler in front, where the named
    # prepared statements of a direct connection fail.
    local failures=0 i
    for i in $(seq 1 10); do
        run --separate-stderr "$JOBQUEUE_BIN" --dsn "$JQ_PGBOUNCER_DSN" --pooler session push named '{}' --queue "$Q"
        if [ "$status" -ne 0 ]; then
            [[ "$stderr" == *"SQLSTATE 42P05"* || "$stderr" == *"SQLSTATE 26000"* ]] || {
                echo "unexpected failure: $stderr" >&2
                return 1
            }
            failures=$((failures + 1))
        fi
    done
    echo "failures with named statements: $failures of 10" >&2
    [ "$failures" -gt 0 ]
}

@test "push: 20 runs in a row and 20 more, 4 at a time, all succeed with distinct ids" {
    local i ids=()
    for i in $(seq 1 20); do
        ids+=("$(pcli push again "{\"i\": $i}" --queue "$Q")")
    done
    [ "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" -eq 20 ]
    for i in $(seq 1 5); do
        pcli push again '{}' --queue "$Q" > /dev/null &
        pcli push again '{}' --queue "$Q" > /dev/null &
        pcli push again '{}' --queue "$Q" > /dev/null &
        pcli push again '{}' --queue "$Q" > /dev/null &
        wait %1 && wait %2 && wait %3 && wait %4
    done
    [ "$(count "$Q")" -eq 40 ]
}

@test "push --file (one transaction), --unique, --delay" {
    "$PYTHON" -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(300):
        f.write(json.dumps({"i": i}) + "\n")
' "$BATS_TEST_TMPDIR/rows.jsonl"
    run -0 --separate-stderr pcli push row --file "$BATS_TEST_TMPDIR/rows.jsonl" --queue "$Q"
    [ "$output" = "pushed 300 jobs to $Q" ]
    [ "$(count "$Q")" -eq 300 ]
    a=$(pcli push once '{}' --queue "$Q2" --unique k1)
    b=$(pcli push once '{}' --queue "$Q2" --unique k1)
    [ "$a" = "$b" ]
    pcli push later '{}' --queue "$Q2" --delay 1h > /dev/null
    [ "$(sql "select count(*) filter (where available_at > now() + interval '50 min') || '/' || count(*)
              from queue_jobs where queue = '$Q2'")" = "1/2" ]
}

@test "status, pause, resume, cancel, clear" {
    pcli push a '{}' --queue "$Q" > /dev/null
    id=$(pcli push b '{}' --queue "$Q")
    run -0 pcli status --json
    jcheck "$output" '[q["pending"] for q in d if q["queue"] == a[0]] == [2]' "$Q"
    run -0 pcli status
    [[ "$output" == *"$Q"* ]]
    pcli pause "$Q"
    [ "$(sql "select paused from queue_settings where queue = '$Q'")" = "t" ]
    pcli resume "$Q"
    [ "$(sql "select paused from queue_settings where queue = '$Q'")" = "f" ]
    pcli cancel "$id"
    [ "$(count "$Q")" -eq 1 ]
    run -0 pcli clear "$Q" --yes
    [ "$(count "$Q")" -eq 0 ]
}

@test "failed, show, retry, forget" {
    for i in 1 2; do
        id=$(pcli push broken "{\"i\": $i}" --queue "$Q")
        sql "select queue_fail(id, token, 'boom $i') from queue_reserve(array['$Q'])" > /dev/null
    done
    run -0 pcli failed --queue "$Q" --json
    jcheck "$output" 'sorted(r["error"] for r in d) == ["boom 1", "boom 2"]'
    run -0 pcli show "$id" --json
    jcheck "$output" 'd["error"] == "boom 2"'
    pcli retry "$id" --tries 5
    [ "$(sql "select max_attempts from queue_jobs where id = $id")" = "5" ]
    other=$(sql "select id from queue_failed_jobs where queue = '$Q'")
    pcli forget "$other"
    [ "$(sql "select count(*) from queue_failed_jobs where queue = '$Q'")" = "0" ]
}

@test "schedule add, list, tick, remove" {
    pcli schedule add "pgbt${BATS_TEST_NUMBER}" '@every 1 minute' tick_job --queue "$Q" > /dev/null
    run -0 pcli schedule list --json
    jcheck "$output" 'any(s["name"] == a[0] for s in d)' "pgbt${BATS_TEST_NUMBER}"
    pcli schedule tick > /dev/null
    pcli schedule remove "pgbt${BATS_TEST_NUMBER}"
    [ "$(sql "select count(*) from queue_schedules where name = 'pgbt${BATS_TEST_NUMBER}'")" = "0" ]
}

@test "work: drains 50 jobs through the pooler, 4 at a time; SIGTERM stops it" {
    for i in $(seq 1 50); do echo "{\"i\": $i}"; done > "$BATS_TEST_TMPDIR/jobs.jsonl"
    pcli push job --file "$BATS_TEST_TMPDIR/jobs.jsonl" --queue "$Q" > /dev/null
    "$JOBQUEUE_BIN" --dsn "$JQ_PGBOUNCER_DSN" work --queues "$Q" --exec 'cat > /dev/null' --concurrency 4 --quiet --json \
        > "$BATS_TEST_TMPDIR/work.out" 2> "$BATS_TEST_TMPDIR/work.err" 3>&- &
    WORKER_PID=$!
    wait_for '[ "$(count "$Q")" -eq 0 ]'
    kill -TERM "$WORKER_PID"
    wait "$WORKER_PID"
    WORKER_PID=
    cat "$BATS_TEST_TMPDIR/work.err" >&2
    jcheck "$(cat "$BATS_TEST_TMPDIR/work.out")" 'd["completed"] == 50 and d["failed"] == 0 and d["lost"] == 0'
    [ "$(sql "select count(*) from queue_failed_jobs where queue = '$Q'")" = "0" ]
}
