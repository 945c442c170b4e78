#!/usr/bin/env bats
# Command-line tests of flow control (1.5): push --concurrency-key,
# --on-duplicate, --after, --after-failed; `jobqueue limit` and `jobqueue
# rate`; what `jobqueue status` shows of keys and blocked jobs.
#
#   JOBQUEUE_BIN=/path/to/jobqueue bats tests/cli/flow.bats
#
# The server comes from the PG* environment, as for cli.bats. Each test works
# on its own queues (clif<N>a, clif<N>b); teardown deletes their jobs, failed
# rows, settings (rate limits among them) and concurrency limits.

bats_require_minimum_version 1.5.0

load common

col() { sql "select $2 from queue_jobs where id = $1"; }

setup_file() {
    export BATS_NO_PARALLELIZE_WITHIN_FILE=true
    if [ -z "${JOBQUEUE_BIN:-}" ] || [ ! -x "$JOBQUEUE_BIN" ]; then
        echo "JOBQUEUE_BIN must name the jobqueue binary (got '${JOBQUEUE_BIN:-}')" >&2
        return 1
    fi
    PYTHON=$(python3 -c 'import sys; print(sys.executable)')
    export PYTHON
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
}

setup() {
    Q=clif${BATS_TEST_NUMBER}a
    Q2=clif${BATS_TEST_NUMBER}b
}

teardown() {
    sql "delete from queue_jobs where queue in ('$Q', '$Q2');
         delete from queue_failed_jobs where queue in ('$Q', '$Q2');
         delete from queue_settings where queue in ('$Q', '$Q2');
         select queue_concurrency_remove(queue, key_prefix) from queue_concurrency_list()
             where queue in ('$Q', '$Q2')" >/dev/null
}

# ---------------------------------------------------------------- push

@test "push --concurrency-key: stored; the key's second job waits for the first" {
    run -0 cli push n '{}' --queue "$Q" --concurrency-key acct:1
    a=$output
    b=$(cli push n '{}' --queue "$Q" --concurrency-key acct:1)
    [ "$(col "$a" concurrency_key)" = "acct:1" ]
    [ "$(col "$a" flow)" = "slot" ]
    [ "$(col "$b" flow)" = "key" ]
    [ "$(sql "select count(*) from queue_reserve(array['$Q'], max_jobs => 5)")" -eq 1 ]
}

@test "push --on-duplicate replace: the pending job takes the new payload; debounce needs --delay" {
    a=$(cli push n '{"v": 1}' --queue "$Q" --unique "clif-$Q" --delay 1h)
    run -0 cli push n '{"v": 2}' --queue "$Q" --unique "clif-$Q" --on-duplicate replace
    [ "$output" = "$a" ]
    [ "$(col "$a" "payload->>'v'")" = "2" ]
    [ "$(col "$a" "available_at <= clock_timestamp()")" = "t" ]
    run -0 cli push n '{"v": 3}' --queue "$Q" --unique "clif-$Q" --on-duplicate debounce --delay 1h
    [ "$output" = "$a" ]
    [ "$(col "$a" "available_at > clock_timestamp() + interval '59 minutes'")" = "t" ]
    run -2 --separate-stderr cli push n '{}' --queue "$Q" --unique "clif-$Q" --on-duplicate debounce
    assert_error_line "SQLSTATE 22023"
    run -1 --separate-stderr cli push n '{}' --queue "$Q" --unique "clif-$Q" --on-duplicate sometimes
    assert_error_line "--on-duplicate"
}

@test "push --after ID,ID and --after-failed run: the child waits for its parents" {
    p1=$(cli push p '{}' --queue "$Q")
    p2=$(cli push p '{}' --queue "$Q")
    run -0 cli push c '{}' --queue "$Q" --after "$p1,$p2" --after-failed run --json
    jcheck "$output" 'list(d) == ["id"]'
    child=$("$PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["id"])' "$output")
    [ "$(col "$child" flow)" = "parents" ]
    [ "$(sql "select count(*) from queue_job_parents where child = $child and run_anyway")" -eq 2 ]
    run -2 --separate-stderr cli push c '{}' --queue "$Q" --after 0
    assert_error_line "SQLSTATE 22023"
    run -1 --separate-stderr cli push c '{}' --queue "$Q" --after "$p1" --after-failed maybe
    assert_error_line "--after-failed"
    run -1 --separate-stderr cli push c '{}' --queue "$Q" --after x
    assert_error_line
}

# ---------------------------------------------------------------- limit

@test "limit set / list / remove, with --json; removing a missing limit exits 2" {
    run -0 cli limit set "$Q" tenant: 3
    [ "$output" = "queue $Q: at most 3 running per key starting with \"tenant:\"" ]
    run -0 cli limit set "$Q" '' 2 --json
    jcheck "$output" 'd == {"queue": a[0], "key_prefix": "", "max_running": 2}' "$Q"
    run -0 cli limit list
    [[ "${lines[0]}" =~ ^QUEUE\ +KEY\ PREFIX\ +MAX\ RUNNING$ ]]
    [[ "$output" =~ $Q\ +tenant:\ +3 ]]
    [[ "$output" =~ $Q\ +\'\'\ +2 ]]
    run -0 cli limit list --json
    jcheck "$output" 'sorted((r["key_prefix"], r["max_running"]) for r in d if r["queue"] == a[0]) == [("", 2), ("tenant:", 3)]' "$Q"
    run -0 cli limit remove "$Q" tenant:
    [ "$(sql "select count(*) from queue_concurrency_list() where queue = '$Q'")" -eq 1 ]
    run -2 --separate-stderr cli limit remove "$Q" tenant:
    assert_error_line "no concurrency limit"
    run -2 --separate-stderr cli limit set "$Q" x 0
    assert_error_line "SQLSTATE 22023"
    run -1 --separate-stderr cli limit set "$Q" x
    assert_error_line
}

# ---------------------------------------------------------------- rate

@test "rate set / list / remove, with --json; a bad period exits 1" {
    run -0 cli rate set "$Q" 10 1s
    [ "$output" = "queue $Q: at most 10 claims per 1s" ]
    run -0 cli rate list
    [[ "${lines[0]}" =~ ^QUEUE\ +CLAIMS\ +PER\ +NEXT\ SLOT$ ]]
    [[ "$output" =~ $Q\ +10\ +1s\ +now ]]
    run -0 cli rate set "$Q" 1 1h --json
    jcheck "$output" 'd == {"queue": a[0], "max_claims": 1, "per_ms": 3600000}' "$Q"
    cli push n '{}' --queue "$Q" >/dev/null
    [ "$(sql "select count(*) from queue_reserve(array['$Q'])")" -eq 1 ]
    run -0 cli rate list --json
    jcheck "$output" '[(r["max_claims"], r["per_ms"], r["next_slot"] is not None) for r in d if r["queue"] == a[0]] == [(1, 3600000, True)]' "$Q"
    run -0 cli rate remove "$Q"
    run -2 --separate-stderr cli rate remove "$Q"
    assert_error_line "no rate limit"
    run -1 --separate-stderr cli rate set "$Q" 10 soon
    assert_error_line "PERIOD"
}

# ---------------------------------------------------------------- status

@test "status: keys in use (running/limit, waiting) and blocked jobs, in the tables and in --json" {
    cli limit set "$Q" two: 2 >/dev/null
    for i in 1 2 3; do cli push n '{}' --queue "$Q" --concurrency-key two:x >/dev/null; done
    cli push n '{}' --queue "$Q" --concurrency-key solo >/dev/null
    parent=$(cli push p '{}' --queue "$Q2")
    cli push c '{}' --queue "$Q2" --after "$parent" >/dev/null
    [ "$(sql "select count(*) from queue_reserve(array['$Q'], max_jobs => 10)")" -eq 3 ]

    run -0 --separate-stderr cli status
    [[ "$output" =~ QUEUE\ +CONCURRENCY\ KEY\ +RUNNING\ +WAITING ]]
    [[ "$output" =~ $Q\ +two:x\ +2/2\ +1 ]]
    [[ "$output" =~ $Q\ +solo\ +1/1\ +0 ]]
    [[ "$output" =~ QUEUE\ +WAITING\ FOR\ KEY\ +WAITING\ FOR\ PARENTS ]]
    [[ "$output" =~ $Q\ +1\ +0 ]]
    [[ "$output" =~ $Q2\ +0\ +1 ]]

    run -0 --separate-stderr cli status --json
    jcheck "$output" '[(q["waiting_for_key"], q["waiting_for_parents"], sorted((k["key"], k["running"], k["max_running"], k["waiting"]) for k in q["concurrency_keys"])) for q in d if q["queue"] == a[0]] == [(1, 0, [("solo", 1, 1, 0), ("two:x", 2, 2, 1)])]' "$Q"
    jcheck "$output" '[(q["waiting_for_key"], q["waiting_for_parents"], q["concurrency_keys"]) for q in d if q["queue"] == a[0]] == [(0, 1, [])]' "$Q2"
}

# ---------------------------------------------------------------- help

@test "limit and rate --help: each subcommand shows its usage and an example" {
    for command in "limit" "limit set" "limit remove" "limit list" "rate" "rate set" "rate remove" "rate list"; do
        # shellcheck disable=SC2086
        run --separate-stderr "$JOBQUEUE_BIN" $command --help
        [ "$status" -eq 0 ] || { echo "$command --help: exit $status" >&2; return 1; }
        [[ "$output" == *"Usage: jobqueue $command"* ]] || { echo "$command --help: no usage line" >&2; return 1; }
        grep -q '^Example' <<<"$output" || { echo "$command --help: no Example line" >&2; return 1; }
        grep -q "^  jobqueue ${command%% *} " <<<"$output" || { echo "$command --help: no example command" >&2; return 1; }
    done
}
