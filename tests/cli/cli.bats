#!/usr/bin/env bats
# Command-line tests of the jobqueue tool, against a live server.
#
#   JOBQUEUE_BIN=/path/to/jobqueue bats tests/cli
#
# The server comes from the PG* environment: a database (postgres) where a
# superuser may create the jobqueue extension. Each test works on its own
# queues (clit<N>a, clit<N>b) and teardown deletes their jobs, failed rows and
# settings. Three commands act on every failed row of the database (retry
# --all, forget --before, forget --all): their tests compute what to expect
# from the database, so other rows do not break them, but those rows are
# requeued or deleted: run this file against a test database only, and not
# in parallel with other users of it.
#
# Helpers beside this file: handler.sh (the --exec command of `work`) and
# table.py (parses a printed table and checks its alignment).

bats_require_minimum_version 1.5.0

# ---------------------------------------------------------------- helpers

load common

# Jobs of a queue (queue_jobs rows).
count() { sql "select count(*) from queue_jobs where queue = '$1'"; }

# Failed rows of a queue, or of the whole database without an argument.
failed_count() {
    if [ $# -gt 0 ]; then
        sql "select count(*) from queue_failed_jobs where queue = '$1'"
    else
        sql "select count(*) from queue_failed_jobs"
    fi
}

# "1 job", "2 jobs": the CLI's counting sentences.
jobs() { if [ "$1" -eq 1 ]; then echo "1 job"; else echo "$1 jobs"; fi; }

# A failed job made through SQL: push, claim, fail. Prints its id.
#   make_failed NAME QUEUE ERROR_SQL_LITERAL [CLOCK_OFFSET]
# The queue must hold no other due job. With CLOCK_OFFSET (e.g. -10days) the
# queue's clock is shifted, so failed_at lies in the past.
make_failed() {
    local options="" result
    [ -z "${4:-}" ] || options="-c jobqueue.clock_offset=$4"
    # one transaction; psql prints both results: the id, then t
    result=$(PGOPTIONS="$options" sql "select queue_push('$1', '{\"k\": [1, 2]}', '$2');
        select bool_and(queue_fail(id, token, $3)) from queue_reserve(array['$2'])")
    [[ "$result" =~ ^[0-9]+$'\n't$ ]] || { echo "make_failed: psql printed: $result" >&2; return 1; }
    echo "${result%$'\n'*}"
}


# What a failing command must not change: the jobs of $Q (count and ids),
# every job, every failed row.
db_state() {
    sql "select (select count(*) || ':' || coalesce(sum(id), 0) from queue_jobs where queue = '$Q')
             || ' ' || (select count(*) from queue_jobs) || ' ' || (select count(*) from queue_failed_jobs)"
}

# Runs the CLI expecting exit status STATUS, one error line containing TEXT,
# and no change to the database.   expect_error STATUS TEXT ARGS...
# A test running a series of failing commands may set DB_STATE_KNOWN=$(db_state)
# once: each command is then compared with it, saving a query per command.
expect_error() {
    local want=$1 text=$2 before
    shift 2
    before=${DB_STATE_KNOWN:-$(db_state)}
    run --separate-stderr "$JOBQUEUE_BIN" "$@"
    if [ "$status" -ne "$want" ]; then
        echo "jobqueue $*: exit status $status, expected $want (stdout: $output; stderr: $stderr)" >&2
        return 1
    fi
    assert_error_line "$text" || { echo "  (from: jobqueue $*)" >&2; return 1; }
    if [ "$(db_state)" != "$before" ]; then
        echo "jobqueue $* changed the database: $before -> $(db_state)" >&2
        return 1
    fi
}

# Polls a shell condition every 0.1 s, for at most 15 s.
wait_for() {
    local n=0
    until eval "$1"; do
        n=$((n + 1))
        if [ "$n" -gt 150 ]; then
            echo "timed out waiting for: $1" >&2
            return 1
        fi
        sleep 0.1
    done
}

# Starts `jobqueue work ARGS...` in the background; its stdout and stderr go
# to work.out and work.err in the test's temporary directory.
start_worker() {
    "$JOBQUEUE_BIN" work "$@" >"$BATS_TEST_TMPDIR/work.out" 2>"$BATS_TEST_TMPDIR/work.err" 3>&- &
    WORKER_PID=$!
}

# Sends SIGNAL to the worker and waits (at most 15 s) for it to exit; its exit
# status is left in WORKER_STATUS.
stop_worker() {
    kill -"$1" "$WORKER_PID"
    local n=0
    while kill -0 "$WORKER_PID" 2>/dev/null; do
        n=$((n + 1))
        if [ "$n" -gt 150 ]; then
            echo "worker still running 15 s after SIG$1" >&2
            return 1
        fi
        sleep 0.1
    done
    WORKER_STATUS=0
    wait "$WORKER_PID" || WORKER_STATUS=$?
    WORKER_PID=
}

worker_log() { cat "$BATS_TEST_TMPDIR/work.err"; }

# ---------------------------------------------------------------- setup

setup_file() {
    # The tests share the database and some act on every failed row: one at a time.
    export BATS_NO_PARALLELIZE_WITHIN_FILE=true
    if [ -z "${JOBQUEUE_BIN:-}" ] || [ ! -x "$JOBQUEUE_BIN" ]; then
        echo "JOBQUEUE_BIN must name the jobqueue binary (got '${JOBQUEUE_BIN:-}')" >&2
        return 1
    fi
    # the interpreter itself: a version manager's python3 shim costs much per call
    PYTHON=$(python3 -c 'import sys; print(sys.executable)')
    export PYTHON
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
    # leftovers of an interrupted earlier run
    psql -X -q -v ON_ERROR_STOP=1 -c "
        delete from queue_jobs where queue like 'clit%';
        delete from queue_failed_jobs where queue like 'clit%';
        delete from queue_settings where queue like 'clit%'"
}

setup() {
    Q=clit${BATS_TEST_NUMBER}a
    Q2=clit${BATS_TEST_NUMBER}b
    HANDLER=$BATS_TEST_DIRNAME/handler.sh
    export HANDLER_OUT=$BATS_TEST_TMPDIR/handled
    WORKER_PID=
}

teardown() {
    if [ -n "${WORKER_PID:-}" ] && kill -0 "$WORKER_PID" 2>/dev/null; then
        kill -KILL "$WORKER_PID"
        wait "$WORKER_PID" || true
    fi
    sql "delete from queue_jobs where queue in ('$Q', '$Q2');
         delete from queue_failed_jobs where queue in ('$Q', '$Q2');
         delete from queue_settings where queue in ('$Q', '$Q2')"
}

# ---------------------------------------------------------------- push

@test "push: payload argument and --queue; prints the id, --json prints {\"id\": N}" {
    run -0 --separate-stderr cli push send_email '{"to": "ada", "n": 1}' --queue "$Q"
    [[ "$output" =~ ^[0-9]+$ ]]
    [ -z "$stderr" ]
    id=$output
    [ "$(sql "select name || ' ' || payload::text || ' ' || queue || ' ' || priority || ' ' || attempts || ' '
                     || max_attempts || ' ' || (unique_key is null) || ' ' || (available_at <= now()) || ' '
                     || (deadline is null) from queue_jobs where id = $id")" \
        = "send_email {\"n\": 1, \"to\": \"ada\"} $Q 0 0 3 true true true" ]

    run -0 --separate-stderr cli push second '[1, "two"]' --queue "$Q" --json
    jcheck "$output" 'list(d) == ["id"] and type(d["id"]) is int and d["id"] > int(a[0])' "$id"
    id2=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$output")
    [ "$(sql "select name || ' ' || payload::text from queue_jobs where id = $id2")" = 'second [1, "two"]' ]

    # no payload: {}
    run -0 cli push bare --queue "$Q"
    [ "$(sql "select payload::text from queue_jobs where id = $output")" = '{}' ]
    [ "$(count "$Q")" -eq 3 ]
}

@test "push: without --queue the job goes to queue 'default'" {
    run -0 cli push to_default '{"d": true}'
    id=$output
    [ "$(sql "select queue || ' ' || payload::text from queue_jobs where id = $id")" = 'default {"d": true}' ]
    run -0 cli cancel "$id"
    [ "$(sql "select count(*) from queue_jobs where id = $id")" -eq 0 ]
}

@test "push: '-' reads the payload from stdin" {
    run -0 --separate-stderr cli push from_stdin - --queue "$Q" <<<'{"lines": ["a", "b"], "nested": {"x": null}}'
    [[ "$output" =~ ^[0-9]+$ ]]
    [ "$(sql "select payload::text from queue_jobs where id = $output")" \
        = '{"lines": ["a", "b"], "nested": {"x": null}}' ]
    # bad JSON on stdin: exit 1, nothing queued
    run -1 --separate-stderr cli push from_stdin - --queue "$Q" <<<'{"open": '
    assert_error_line "not valid JSON"
    [ "$(count "$Q")" -eq 1 ]
}

@test "push --delay: the job is delayed (status: delayed 1, pending 0)" {
    run -0 cli push later '{}' --queue "$Q" --delay 90s
    id=$output
    [ "$(sql "select available_at between now() + interval '80 s' and now() + interval '100 s'
              from queue_jobs where id = $id")" = t ]
    run -0 cli status --json
    jcheck "$output" '[(q["pending"], q["delayed"], q["reserved"], q["total"]) for q in d if q["queue"] == a[0]] == [(0, 1, 0, 1)]' "$Q"
    # other units
    run -0 cli push later '{}' --queue "$Q" --delay 2h
    [ "$(sql "select available_at between now() + interval '119 min' and now() + interval '121 min'
              from queue_jobs where id = $output")" = t ]
    run -0 cli push later '{}' --queue "$Q" --delay 1500ms
    [ "$(sql "select available_at > now() + interval '1 s' from queue_jobs where id = $output")" = t ]
}

@test "push --priority and --tries are stored" {
    run -0 cli push urgent '{}' --queue "$Q" --priority 7 --tries 9
    [ "$(sql "select priority || ' ' || max_attempts from queue_jobs where id = $output")" = "7 9" ]
    run -0 cli push low '{}' --queue "$Q" --priority=-3
    [ "$(sql "select priority || ' ' || max_attempts from queue_jobs where id = $output")" = "-3 3" ]
}

@test "push --unique: the same key twice returns the same id and queues one job" {
    run -0 cli push once '{"v": 1}' --queue "$Q" --unique key-1
    first=$output
    run -0 cli push once '{"v": 2}' --queue "$Q" --unique key-1
    [ "$output" = "$first" ]
    run -0 cli push once '{"v": 3}' --queue "$Q" --unique key-1 --json
    jcheck "$output" 'd == {"id": int(a[0])}' "$first"
    [ "$(count "$Q")" -eq 1 ]
    [ "$(sql "select unique_key || ' ' || payload::text from queue_jobs where id = $first")" = 'key-1 {"v": 1}' ]
    run -0 cli push once '{"v": 4}' --queue "$Q" --unique key-2
    [ "$output" != "$first" ]
    [ "$(count "$Q")" -eq 2 ]
}

@test "push --deadline: as a time and as a duration from now" {
    run -0 cli push dated '{}' --queue "$Q" --deadline 2030-01-31T12:00Z
    [ "$(sql "select deadline = '2030-01-31 12:00:00+00' from queue_jobs where id = $output")" = t ]
    run -0 cli push dated '{}' --queue "$Q" --deadline '2030-01-31 12:00:00+02:00'
    [ "$(sql "select deadline = '2030-01-31 10:00:00+00' from queue_jobs where id = $output")" = t ]
    run -0 cli push dated '{}' --queue "$Q" --deadline 2030-02-01
    [ "$(sql "select deadline = '2030-02-01 00:00:00+00' from queue_jobs where id = $output")" = t ]
    run -0 cli push dated '{}' --queue "$Q" --deadline 1h
    [ "$(sql "select deadline between now() + interval '59 min' and now() + interval '61 min'
              from queue_jobs where id = $output")" = t ]
    expect_error 1 "--deadline" push dated '{}' --queue "$Q" --deadline 2030-13-01
    expect_error 1 "--deadline" push dated '{}' --queue "$Q" --deadline=-1h
    # a deadline already past: the server refuses it
    expect_error 2 "SQLSTATE 22023" push dated '{}' --queue "$Q" --deadline 2020-01-01
    [ "$(count "$Q")" -eq 4 ]
}

@test "push --file: 1200 JSON lines push 1200 jobs; --json prints {\"pushed\": N}" {
    file=$BATS_TEST_TMPDIR/rows.jsonl
    "$PYTHON" -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 1201):
        f.write(json.dumps({"i": i}) + "\n")
    f.write("\n")  # a blank line is skipped
' "$file"
    run -0 --separate-stderr cli push import_row --file "$file" --queue "$Q"
    [ "$output" = "pushed 1200 jobs to $Q" ]
    run -0 cli status --json
    jcheck "$output" '[(q["pending"], q["total"]) for q in d if q["queue"] == a[0]] == [(1200, 1200)]' "$Q"
    [ "$(sql "select count(distinct payload->>'i') || ' ' || min((payload->>'i')::int) || ' ' || max((payload->>'i')::int)
              || ' ' || bool_and(name = 'import_row') from queue_jobs where queue = '$Q'")" = "1200 1 1200 true" ]
    # options apply to every line
    printf '{"a": 1}\n{"a": 2}\n' >"$BATS_TEST_TMPDIR/two.jsonl"
    run -0 --separate-stderr cli push two --file "$BATS_TEST_TMPDIR/two.jsonl" --queue "$Q2" --priority 4 --tries 6 --delay 1h --json
    jcheck "$output" 'd == {"pushed": 2}'
    [ "$(sql "select count(*) || ' ' || bool_and(priority = 4 and max_attempts = 6 and available_at > now() + interval '50 min')
              from queue_jobs where queue = '$Q2'")" = "2 true" ]
}

@test "push --file: a bad JSON line pushes nothing, exits 1 and names the line" {
    file=$BATS_TEST_TMPDIR/bad.jsonl
    printf '{"i": 1}\n{"i": 2}\n{"i": oops}\n{"i": 4}\n' >"$file"
    run -1 --separate-stderr cli push import_row --file "$file" --queue "$Q"
    assert_error_line "$file:3:"
    [ "$(count "$Q")" -eq 0 ]
    # an unreadable file, and a payload together with --file: usage errors
    expect_error 1 "cannot read" push import_row --file "$BATS_TEST_TMPDIR/missing.jsonl" --queue "$Q"
    expect_error 1 "not both" push import_row '{}' --file "$file" --queue "$Q"
    expect_error 1 "--unique" push import_row --file "$file" --unique k --queue "$Q"
}

@test "push --file: a server-side error mid-way pushes nothing and exits 2" {
    # Line 700 (in the second batch of 500) is over the 1 MiB payload limit.
    file=$BATS_TEST_TMPDIR/big.jsonl
    "$PYTHON" -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 1001):
        f.write(json.dumps({"i": i, "pad": "x" * (1100 * 1024 if i == 700 else 0)}) + "\n")
' "$file"
    total_before=$(sql "select count(*) from queue_jobs")
    run -2 --separate-stderr cli push import_row --file "$file" --queue "$Q"
    assert_error_line "SQLSTATE 54000"
    [ "$(count "$Q")" -eq 0 ]
    [ "$(sql "select count(*) from queue_jobs")" -eq "$total_before" ]
    # a queue name the server refuses (70 characters)
    printf '{"i": 1}\n{"i": 2}\n' >"$BATS_TEST_TMPDIR/small.jsonl"
    long=$(printf 'q%.0s' $(seq 70))
    run -2 --separate-stderr cli push import_row --file "$BATS_TEST_TMPDIR/small.jsonl" --queue "$long"
    assert_error_line "SQLSTATE 54000"
    [ "$(sql "select count(*) from queue_jobs")" -eq "$total_before" ]
}

# ---------------------------------------------------------------- status

@test "status: aligned table with its headers and the queue's row; --json" {
    for i in 1 2 3; do cli push s '{}' --queue "$Q" >/dev/null; done
    cli push s '{}' --queue "$Q" --delay 1h >/dev/null
    [ "$(sql "select count(*) from queue_reserve(array['$Q'], interval '60 s')")" -eq 1 ]
    sql "select queue_set_default_lease('$Q2', interval '90 s'); select queue_set_notify('$Q2', false)" >/dev/null

    run -0 --separate-stderr cli status
    [ -z "$stderr" ]
    [[ "${lines[0]}" =~ ^QUEUE\ +PENDING\ +DELAYED\ +RESERVED\ +TOTAL\ +PAUSED\ +LEASE\ +NOTIFY$ ]]
    table=$output
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$Q" <<<"$table"
    [ "${lines[0]}" = "QUEUE|PENDING|DELAYED|RESERVED|TOTAL|PAUSED|LEASE|NOTIFY" ]
    [ "${lines[1]}" = "LRRRRLLL" ]
    [ "${lines[2]}" = "$Q|2|1|1|4|no|-|on" ]
    [ "${#lines[@]}" -eq 3 ]
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$Q2" <<<"$table"
    [ "${lines[2]}" = "$Q2|0|0|0|0|no|90s|off" ]

    run -0 --separate-stderr cli status --json
    jcheck "$output" 'type(d) is list and all(type(q) is dict for q in d)'
    jcheck "$output" '[q for q in d if q["queue"] == a[0]] == [{"queue": a[0], "pending": 2, "delayed": 1,
        "reserved": 1, "total": 4, "paused": False, "default_lease_ms": None, "notify": True,
        "concurrency_keys": [], "waiting_for_key": 0, "waiting_for_parents": 0}]' "$Q"
    jcheck "$output" '[q for q in d if q["queue"] == a[0]] == [{"queue": a[0], "pending": 0, "delayed": 0,
        "reserved": 0, "total": 0, "paused": False, "default_lease_ms": 90000, "notify": False,
        "concurrency_keys": [], "waiting_for_key": 0, "waiting_for_parents": 0}]' "$Q2"
    jcheck "$output" '[q["queue"] for q in d] == sorted(q["queue"] for q in d)'
}

@test "status --watch prints the table until stopped" {
    cli push w '{}' --queue "$Q" >/dev/null
    run -124 timeout 2 "$JOBQUEUE_BIN" status --watch
    [[ "$output" == *"jobqueue status, "* ]]
    [[ "$output" =~ QUEUE\ +PENDING\ +DELAYED\ +RESERVED\ +TOTAL\ +PAUSED\ +LEASE\ +NOTIFY ]]
    [[ "$output" =~ $Q\ +1\ +0\ +0\ +1\ +no ]]
}

# ---------------------------------------------------------------- failed, show

@test "failed: newest first, --limit, --queue, error cut to one line; --json" {
    long=$(printf 'x%.0s' $(seq 80))
    f1=$(make_failed first "$Q" "'$long'")
    f2=$(make_failed second "$Q" "'short error'")
    f3=$(make_failed third "$Q" "E'first line of error\nsecond line\nthird'")
    other=$(make_failed elsewhere "$Q2" "'other queue'")

    run -0 --separate-stderr cli failed --queue "$Q"
    [[ "${lines[0]}" =~ ^\ *ID\ +QUEUE\ +NAME\ +ATTEMPTS\ +FAILED\ AT\ +ERROR$ ]]
    table=$output
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" <<<"$table"
    [ "${lines[0]}" = "ID|QUEUE|NAME|ATTEMPTS|FAILED AT|ERROR" ]
    [[ "${lines[1]}" == [R?]LLRLL ]]
    [ "${#lines[@]}" -eq 5 ]
    [[ "${lines[2]}" =~ ^$f3\|$Q\|third\|1/3\|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\|first\ line\ of\ error\.\.\.$ ]]
    [[ "${lines[3]}" =~ ^$f2\|$Q\|second\|1/3\|[-0-9T:]+Z\|short\ error$ ]]
    [[ "${lines[4]}" =~ ^$f1\|$Q\|first\|1/3\|[-0-9T:]+Z\|x{57}\.\.\.$ ]]

    run -0 cli failed --queue "$Q" --limit 2
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" <<<"$output"
    [ "${#lines[@]}" -eq 4 ]
    [[ "${lines[2]}" == "$f3|"* ]]
    [[ "${lines[3]}" == "$f2|"* ]]

    # without --queue: every queue, newest first
    run -0 cli failed
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" <<<"$output"
    [[ "${lines[2]}" == "$other|$Q2|elsewhere|"* ]]
    [[ "${lines[3]}" == "$f3|$Q|third|"* ]]

    run -0 --separate-stderr cli failed --queue "$Q" --json
    jcheck "$output" '[r["id"] for r in d] == [int(x) for x in a]' "$f3" "$f2" "$f1"
    jcheck "$output" 'd[0]["error"] == "first line of error\nsecond line\nthird" and d[2]["error"] == "x" * 80'
    jcheck "$output" 'all(r["queue"] == a[0] and r["payload"] == {"k": [1, 2]} and r["attempts"] == 1
        and r["max_attempts"] == 3 and r["priority"] == 0 and r["failed_at"].endswith("Z")
        and r["created_at"] <= r["failed_at"] for r in d)' "$Q"
    jcheck "$output" '[r["name"] for r in d] == ["third", "second", "first"]'
    run -0 cli failed --queue "$Q" --limit 1 --json
    jcheck "$output" '[r["id"] for r in d] == [int(a[0])]' "$f3"

    # an empty selection
    run -0 cli failed --queue "${Q}none"
    [ "$output" = "no failed jobs" ]
    run -0 cli failed --queue "${Q}none" --json
    [ "$output" = "[]" ]
    expect_error 2 "SQLSTATE 22023" failed --limit 0
    expect_error 1 "--limit" failed --limit many
}

@test "show ID: the payload pretty-printed and the whole error; --json; unknown id exits 2" {
    id=$(make_failed shown "$Q" "E'first line of error\nsecond line\n\tthird, indented'")
    run -0 --separate-stderr cli show "$id"
    [ -z "$stderr" ]
    [ "${lines[0]}" = "id:         $id" ]
    [ "${lines[1]}" = "queue:      $Q" ]
    [ "${lines[2]}" = "name:       shown" ]
    [ "${lines[3]}" = "priority:   0" ]
    [ "${lines[4]}" = "attempts:   1 of 3" ]
    [[ "${lines[5]}" =~ ^created\ at:\ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]]
    [[ "${lines[6]}" =~ ^failed\ at:\ \ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]]
    expected_tail=$(printf '%s\n' 'payload:' '{' '  "k": [' '    1,' '    2' '  ]' '}' 'error:' \
        'first line of error' 'second line' $'\tthird, indented')
    [ "$(printf '%s\n' "${lines[@]:7}")" = "$expected_tail" ]

    run -0 --separate-stderr cli show "$id" --json
    jcheck "$output" 'd["id"] == int(a[0]) and d["queue"] == a[1] and d["name"] == "shown" and d["payload"] == {"k": [1, 2]}
        and d["error"] == "first line of error\nsecond line\n\tthird, indented" and d["attempts"] == 1
        and d["max_attempts"] == 3' "$id" "$Q"

    expect_error 2 "no failed job with id 9223372036854775000" show 9223372036854775000
    expect_error 1 "" show
    expect_error 1 "" show not-a-number
}

# ---------------------------------------------------------------- retry

@test "retry ID --tries N: the job is back under its id with max_attempts N" {
    id=$(make_failed again "$Q" "'broken'")
    run -0 --separate-stderr cli retry "$id" --tries 5
    [ "$output" = "requeued 1 job" ]
    [ "$(failed_count "$Q")" -eq 0 ]
    [ "$(sql "select queue || ' ' || name || ' ' || payload::text || ' ' || attempts || ' ' || max_attempts || ' '
                     || (available_at <= now()) || ' ' || coalesce(last_error, '') || '.'
              from queue_jobs where id = $id")" = "$Q again {\"k\": [1, 2]} 0 5 true ." ]

    # default tries: 3
    id=$(make_failed again2 "$Q2" "'broken'")
    run -0 cli retry "$id" --json
    jcheck "$output" 'd == {"requeued": 1}'
    [ "$(sql "select max_attempts from queue_jobs where id = $id")" -eq 3 ]
}

@test "retry --all --tries N requeues every failed job; errors: unknown id 2, neither 1" {
    a=$(make_failed one "$Q" "'e1'")
    b=$(make_failed two "$Q" "'e2'")
    all=$(failed_count)
    run -0 --separate-stderr cli retry --all --tries 2
    [ "$output" = "requeued $(jobs "$all")" ]
    [ "$(failed_count)" -eq 0 ]
    [ "$(sql "select string_agg(id || ':' || attempts || '/' || max_attempts, ' ' order by id)
              from queue_jobs where queue = '$Q'")" = "$a:0/2 $b:0/2" ]

    c=$(make_failed three "$Q2" "'e3'")
    all=$(failed_count)
    run -0 cli retry --all --json
    jcheck "$output" 'd == {"requeued": int(a[0])}' "$all"
    [ "$(sql "select max_attempts from queue_jobs where id = $c")" -eq 3 ]

    d=$(make_failed four "$Q2" "'e4'")
    expect_error 2 "no failed job with id 9223372036854775000" retry 9223372036854775000
    expect_error 1 "give a job ID or --all" retry
    expect_error 1 "" retry "$d" --all
    # --tries is judged by the server, as for push and schedule add
    expect_error 2 "SQLSTATE 22023" retry "$d" --tries 0
    [ "$(failed_count "$Q2")" -eq 1 ]
}

# ---------------------------------------------------------------- forget

@test "forget ID deletes that failed row; unknown id exits 2" {
    a=$(make_failed one "$Q" "'e1'")
    b=$(make_failed two "$Q" "'e2'")
    run -0 --separate-stderr cli forget "$a"
    [ "$output" = "forgot 1 job" ]
    [ "$(sql "select string_agg(id::text, ' ') from queue_failed_jobs where queue = '$Q'")" = "$b" ]
    run -0 cli forget "$b" --json
    jcheck "$output" 'd == {"forgotten": 1}'
    [ "$(failed_count "$Q")" -eq 0 ]
    c=$(make_failed three "$Q" "'e3'")
    expect_error 2 "no failed job with id $a" forget "$a"
    [ "$(failed_count "$Q")" -eq 1 ]
}

@test "forget --before: an ISO date, and an age like 7d" {
    old=$(make_failed old "$Q" "'old'" -10days)
    new=$(make_failed new "$Q" "'new'")
    [ "$(sql "select failed_at < now() - interval '9 days' from queue_failed_jobs where id = $old")" = t ]

    day=$(date -u -d '5 days ago' +%F)
    expected=$(sql "select count(*) from queue_failed_jobs where failed_at < '$day 00:00:00+00'")
    run -0 --separate-stderr cli forget --before "$day"
    [ "$output" = "forgot $(jobs "$expected")" ]
    [ "$(sql "select string_agg(id::text, ' ') from queue_failed_jobs where queue = '$Q'")" = "$new" ]

    old=$(make_failed old2 "$Q" "'old'" -10days)
    expected=$(sql "select count(*) from queue_failed_jobs where failed_at < now() - interval '7 days'")
    run -0 --separate-stderr cli forget --before 7d --json
    jcheck "$output" 'd == {"forgotten": int(a[0])}' "$expected"
    [ "$(sql "select string_agg(id::text, ' ') from queue_failed_jobs where queue = '$Q'")" = "$new" ]

    expect_error 1 "--before" forget --before yesterday
    expect_error 1 "" forget --before 7d --all
}

@test "forget --all deletes every failed row; no argument exits 1 and deletes nothing" {
    make_failed one "$Q" "'e1'" >/dev/null
    make_failed two "$Q2" "'e2'" >/dev/null
    expect_error 1 "give a job ID, --before TIME or --all" forget
    [ "$(failed_count "$Q")" -eq 1 ]
    [ "$(failed_count "$Q2")" -eq 1 ]
    expect_error 1 "" forget 1 --all
    all=$(failed_count)
    run -0 --separate-stderr cli forget --all
    [ "$output" = "forgot $(jobs "$all")" ]
    [ "$(failed_count)" -eq 0 ]
    run -0 cli forget --all --json
    jcheck "$output" 'd == {"forgotten": 0}'
}

# ---------------------------------------------------------------- cancel, clear

@test "cancel: a pending job is deleted; one held by a live claim only with --force" {
    run -0 cli push c1 '{}' --queue "$Q"
    pending=$output
    run -0 --separate-stderr cli cancel "$pending"
    [ "$output" = "cancelled job $pending" ]
    [ "$(count "$Q")" -eq 0 ]

    run -0 cli push c2 '{}' --queue "$Q"
    held=$output
    [ "$(sql "select id from queue_reserve(array['$Q'], interval '60 s')")" = "$held" ]
    expect_error 2 "job $held was not cancelled" cancel "$held"
    [ "$(count "$Q")" -eq 1 ]
    run -0 --separate-stderr cli cancel "$held" --force --json
    jcheck "$output" 'd == {"cancelled": 1}'
    [ "$(count "$Q")" -eq 0 ]

    expect_error 2 "was not cancelled" cancel "$held"
    expect_error 1 "" cancel
}

@test "clear: without --yes exits 1 and deletes nothing; with --yes prints the count" {
    for i in 1 2 3; do cli push x '{}' --queue "$Q" >/dev/null; done
    cli push x '{}' --queue "$Q" --delay 1h >/dev/null
    cli push y '{}' --queue "$Q2" >/dev/null
    expect_error 1 "without --yes" clear "$Q"
    [ "$(count "$Q")" -eq 4 ]
    run -0 --separate-stderr cli clear "$Q" --yes
    [ "$output" = "deleted 4 jobs from $Q" ]
    [ "$(count "$Q")" -eq 0 ]
    [ "$(count "$Q2")" -eq 1 ]
    run -0 cli clear "$Q2" --yes --json
    jcheck "$output" 'd == {"deleted": 1}'
    run -0 cli clear "$Q2" --yes
    [ "$output" = "deleted 0 jobs from $Q2" ]
    expect_error 1 "" clear --yes
}

# ---------------------------------------------------------------- pause, resume

@test "pause / resume: status PAUSED yes/no; a paused queue is not worked" {
    run -0 --separate-stderr cli pause "$Q"
    [ "$output" = "paused $Q" ]
    run -0 cli pause "$Q" --json
    jcheck "$output" 'd == {"queue": a[0], "paused": True}' "$Q"
    p1=$(cli push p '{"p": 1}' --queue "$Q")
    p2=$(cli push p '{"p": 2}' --queue "$Q")
    o=$(cli push o '{"o": 1}' --queue "$Q2")
    run -0 cli status
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$Q" <<<"$output"
    [ "${lines[2]}" = "$Q|2|0|0|2|yes|-|on" ]

    start_worker --queues "$Q,$Q2" --exec "$HANDLER"
    wait_for '[ "$(count "$Q2")" -eq 0 ]'   # the worker works...
    sleep 2                                  # ...but not the paused queue
    [ "$(count "$Q")" -eq 2 ]
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q' and attempts = 0 and reserved_until is null")" -eq 2 ]
    [ "$(cat "$HANDLER_OUT")" = "{\"o\":1} $o o 1" ]

    run -0 --separate-stderr cli resume "$Q" --json
    jcheck "$output" 'd == {"queue": a[0], "paused": False}' "$Q"
    run -0 cli status --json
    jcheck "$output" '[q["paused"] for q in d if q["queue"] == a[0]] == [False]' "$Q"
    wait_for '[ "$(count "$Q")" -eq 0 ]'
    stop_worker TERM
    [ "$WORKER_STATUS" -eq 0 ]
    [ "$(wc -l <"$HANDLER_OUT")" -eq 3 ]
    grep -qx "{\"p\":1} $p1 p 1" "$HANDLER_OUT"
    grep -qx "{\"p\":2} $p2 p 1" "$HANDLER_OUT"

    run -0 cli pause "$Q"
    run -0 cli resume "$Q"
    [ "$output" = "resumed $Q" ]
    run -0 cli status
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$Q" <<<"$output"
    [ "${lines[2]}" = "$Q|0|0|0|0|no|-|on" ]
}

# ---------------------------------------------------------------- work

@test "work --queues a,b --exec: payload on stdin, JOBQUEUE_JOB_* set, exit 0 completes; SIGTERM stops it" {
    b=$(cli push job_b '{"q": "b"}' --queue "$Q2")
    a=$(cli push job_a '{"q": "a", "s": "two words"}' --queue "$Q")
    start_worker --queues "$Q,$Q2" --exec "$HANDLER"
    wait_for '[ "$(count "$Q")" -eq 0 ] && [ "$(count "$Q2")" -eq 0 ]'
    stop_worker TERM
    [ "$WORKER_STATUS" -eq 0 ]
    # the first queue listed goes first
    [ "$(cat "$HANDLER_OUT")" = "{\"q\":\"a\",\"s\":\"two words\"} $a job_a 1
{\"q\":\"b\"} $b job_b 1" ]
    [ "$(failed_count "$Q")" -eq 0 ]
    [ "$(failed_count "$Q2")" -eq 0 ]
    worker_log | grep -q "waiting for jobs on $Q,$Q2"
    worker_log | grep -q "job $a (job_a, attempt 1) done"
    [ "$(worker_log | tail -n 1)" = "jobqueue work: stopped; 2 completed, 0 retried, 0 failed" ]
}

@test "work: exit 75 releases the job for a later retry; SIGINT stops it" {
    id=$(cli push flaky '{"n": 75}' --queue "$Q")
    HANDLER_EXIT=75 HANDLER_STDERR='try later\n' start_worker --queues "$Q" --exec "$HANDLER"
    wait_for "[ \"\$(sql \"select count(*) from queue_jobs where id = $id and last_error <> ''\")\" -eq 1 ]"
    stop_worker INT
    [ "$WORKER_STATUS" -eq 0 ]
    [ "$(cat "$HANDLER_OUT")" = "{\"n\":75} $id flaky 1" ]
    [ "$(sql "select attempts || ' ' || (available_at > now()) || ' ' || (reserved_until is null or reserved_until <= now())
              || ' ' || last_error from queue_jobs where id = $id")" = "1 true true command exited with status 75: try later" ]
    [ "$(failed_count "$Q")" -eq 0 ]
    worker_log | grep -q "job $id (flaky, attempt 1) retry"
    [ "$(worker_log | tail -n 1)" = "jobqueue work: stopped; 0 completed, 1 retried, 0 failed" ]
}

@test "work: another exit status fails the job with the command's stderr as the error" {
    id=$(cli push doomed '{"n": 3}' --queue "$Q")
    HANDLER_EXIT=3 HANDLER_STDERR='boom: line one\nline two\n' start_worker --queues "$Q" --exec "$HANDLER"
    wait_for '[ "$(failed_count "$Q")" -eq 1 ]'
    stop_worker TERM
    [ "$WORKER_STATUS" -eq 0 ]
    [ "$(count "$Q")" -eq 0 ]
    run -0 cli show "$id" --json
    jcheck "$output" 'd["error"] == "command exited with status 3: boom: line one\nline two" and d["attempts"] == 1
        and d["name"] == "doomed" and d["payload"] == {"n": 3}'
    run -0 cli failed --queue "$Q"
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$id" <<<"$output"
    [[ "${lines[2]}" == "$id|$Q|doomed|1/3|"*"|command exited with status 3: boom: line one..." ]]
    [ "$(worker_log | tail -n 1)" = "jobqueue work: stopped; 0 completed, 0 retried, 1 failed" ]
}

@test "work --concurrency N runs N commands at once" {
    ids=()
    for i in 1 2 3; do ids+=("$(cli push together "{\"i\": $i}" --queue "$Q")"); done
    # each command waits until all three have started (and fails after 10 s)
    HANDLER_BARRIER=3 start_worker --queues "$Q" --exec "$HANDLER" --concurrency 3
    wait_for '[ "$(count "$Q")" -eq 0 ]'
    stop_worker TERM
    [ "$WORKER_STATUS" -eq 0 ]
    [ "$(failed_count "$Q")" -eq 0 ]
    [ "$(wc -l <"$HANDLER_OUT")" -eq 3 ]
    for i in 1 2 3; do grep -qx "{\"i\":$i} ${ids[$((i - 1))]} together 1" "$HANDLER_OUT"; done
    [ "$(worker_log | tail -n 1)" = "jobqueue work: stopped; 3 completed, 0 retried, 0 failed" ]
}

@test "work --lease: a running job is held with that lease; on SIGTERM it finishes within the grace period" {
    id=$(cli push slow '{"s": 1}' --queue "$Q")
    HANDLER_SLEEP=2 start_worker --queues "$Q" --exec "$HANDLER" --lease 3s --grace 20s
    wait_for '[ -s "$HANDLER_OUT.start" ]'
    # held with the 3 s lease (renewed while the command runs), not the 60 s default
    [ "$(sql "select reserved_until > now() and reserved_until <= now() + interval '3.5 s' and attempts = 1
              from queue_jobs where id = $id")" = t ]
    [ ! -e "$HANDLER_OUT" ]   # still running when the signal comes
    stop_worker TERM
    [ "$WORKER_STATUS" -eq 0 ]
    [ "$(cat "$HANDLER_OUT")" = "{\"s\":1} $id slow 1" ]
    [ "$(count "$Q")" -eq 0 ]
    [ "$(failed_count "$Q")" -eq 0 ]
    [ "$(worker_log | tail -n 1)" = "jobqueue work: stopped; 1 completed, 0 retried, 0 failed" ]
}

@test "work: bad options exit 1 with one error line" {
    DB_STATE_KNOWN=$(db_state)
    expect_error 1 "--exec" work --queues "$Q"
    expect_error 1 "--lease" work --queues "$Q" --exec true --lease 5y
    # a lease the server refuses stops the worker at its first claim
    expect_error 2 "SQLSTATE 22023" work --queues "$Q" --exec true --lease 0 --quiet
    expect_error 1 "--concurrency" work --queues "$Q" --exec true --concurrency 0
    expect_error 3 "cannot connect" --dsn 'host=/nonexistent port=1' work --queues "$Q" --exec true
}

@test "dashboard: bad options exit 1 with one error line, never echoing a secret" {
    DB_STATE_KNOWN=$(db_state)
    expect_error 1 "--listen" dashboard --listen nowhere
    expect_error 1 "port" dashboard --listen 127.0.0.1:0
    expect_error 1 "cannot read" dashboard --auth-file /nonexistent/auth
    expect_error 1 "not a duration" dashboard --statement-timeout soon
    expect_error 1 "--connections" dashboard --connections 0
    expect_error 1 "--password" dashboard --password s3cret
    # another address than loopback needs credentials, or --insecure-no-auth with --allow-host
    JOBQUEUE_DASHBOARD_AUTH= expect_error 1 "is not a loopback address" dashboard --listen 0.0.0.0:7070
    JOBQUEUE_DASHBOARD_AUTH= expect_error 1 "--insecure-no-auth needs --allow-host" dashboard --listen 0.0.0.0:7070 --insecure-no-auth
    expect_error 1 "--allow-host" dashboard --allow-host "bad host"
    JOBQUEUE_DASHBOARD_AUTH='s3cret' expect_error 1 "JOBQUEUE_DASHBOARD_AUTH: credentials must" dashboard
    [[ "$stderr" != *s3cret* ]]
    printf 'basic ops\n' > "$BATS_TEST_TMPDIR/auth"
    chmod 600 "$BATS_TEST_TMPDIR/auth"  # else it warns first
    expect_error 1 "basic credentials must be USER:PASSWORD" dashboard --auth-file "$BATS_TEST_TMPDIR/auth"
}

# ---------------------------------------------------------------- errors

@test "errors: usage mistakes exit 1 with one line and change nothing" {
    cli push keep '{}' --queue "$Q" >/dev/null
    DB_STATE_KNOWN=$(db_state)
    expect_error 1 "--bogus" push x '{}' --queue "$Q" --bogus
    expect_error 1 "" status --bogus
    expect_error 1 "" bogus-subcommand
    expect_error 1 "" # no subcommand
    expect_error 1 "NAME" push
    expect_error 1 "" push x '{}' --queue
    expect_error 1 "not valid JSON" push x '{"a": ' --queue "$Q"
    expect_error 1 "not valid JSON" push x 'not json' --queue "$Q"
    expect_error 1 "must not be negative" push x '{}' --queue "$Q" --delay=-5
    expect_error 1 "must not be negative" push x '{}' --queue "$Q" --delay -5s
    expect_error 1 "unknown unit" push x '{}' --queue "$Q" --delay 5y
    expect_error 1 "not a duration" push x '{}' --queue "$Q" --delay soon
    expect_error 1 "" push x '{}' --queue "$Q" --priority high
    expect_error 1 "" push x '{}' --queue "$Q" --tries many
    expect_error 1 "" push x '{}' extra-argument --queue "$Q"
    [ "$(count "$Q")" -eq 1 ]
}

@test "errors: an unreachable server exits 3 with one line" {
    cli push keep '{}' --queue "$Q" >/dev/null
    DB_STATE_KNOWN=$(db_state)
    expect_error 3 "cannot connect" --dsn 'host=/nonexistent port=1' push x '{}' --queue "$Q"
    expect_error 3 "cannot connect" --dsn 'host=/nonexistent port=1' status
    expect_error 3 "cannot connect" --dsn 'host=/nonexistent port=1' failed
    expect_error 3 "cannot connect" --dsn 'host=/nonexistent port=1' clear "$Q" --yes
    [ "$(count "$Q")" -eq 1 ]
}

@test "errors: a value the server refuses exits 2 with one line naming the SQLSTATE" {
    cli push keep '{}' --queue "$Q" >/dev/null
    DB_STATE_KNOWN=$(db_state)
    long=$(printf 'q%.0s' $(seq 70))
    expect_error 2 "SQLSTATE 54000" push x '{}' --queue "$long"
    expect_error 2 "SQLSTATE 22023" push x '{}' --queue "$Q" --tries 0
    expect_error 2 "SQLSTATE 54000" pause "$long"
    [ "$(count "$Q")" -eq 1 ]
}

# ---------------------------------------------------------------- help

@test "--help: every subcommand exits 0 and shows an example" {
    run -0 --separate-stderr cli --help
    [[ "$output" == *"Usage: jobqueue"* ]]
    # the subcommands listed in the help are exactly those tested here
    listed=$(sed -n '/^Subcommands:/,/^$/p' <<<"$output" | awk 'NR > 1 && NF { print $1 }' | sort | tr '\n' ' ')
    [ "$listed" = "cancel clear dashboard failed forget limit pause push rate resume retry schedule show status work " ]
    for command in status failed show retry forget cancel clear pause resume push work dashboard; do
        run --separate-stderr "$JOBQUEUE_BIN" "$command" --help
        [ "$status" -eq 0 ] || { echo "$command --help: exit $status" >&2; return 1; }
        [[ "$output" == *"Usage: jobqueue $command"* ]] || { echo "$command --help: no usage line" >&2; return 1; }
        grep -q '^Example' <<<"$output" || { echo "$command --help: no Example line" >&2; return 1; }
        grep -q "^  jobqueue $command" <<<"$output" || { echo "$command --help: no example command" >&2; return 1; }
    done
}
