#!/usr/bin/env bats
# Command-line tests of `jobqueue schedule add|remove|list|tick` (1.2),
# against a live server.
#
#   JOBQUEUE_BIN=/path/to/jobqueue bats tests/cli/schedule.bats
#
# The server comes from the PG* environment, as for cli.bats: a database
# where a superuser may create the jobqueue extension (at 1.2). Each test
# works on its own schedules (clis<N>a, clis<N>b, ...) and queues (clis<N>q,
# clis<N>r); teardown deletes them and their jobs.
#
# `schedule tick` ticks every schedule of the database: the tests look only
# at the lines and jobs of their own schedules, but other due schedules of
# the database get their jobs enqueued too. Run this file against a test
# database, not in parallel with other users of it.
#
# A schedule is made due without waiting for its window either with
# '@every 1 second' and a sleep of 1.1 s, or by moving its next_due into
# the past with psql (as superuser) to a window of its own expression.

bats_require_minimum_version 1.5.0

# ---------------------------------------------------------------- helpers

load common

# A time as the CLI prints it: 2030-01-01T00:10:00.000000Z.
ISO="'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"
iso() { sql "select to_char(($1) at time zone 'UTC', $ISO)"; }


# The schedules (every column) and jobs of this test: a failing command
# must not change them.
db_state() {
    sql "select coalesce(string_agg(s::text, ';' order by name), '-') from queue_schedules s
         where name like '${P}%'"
    sql "select count(*) || ':' || coalesce(sum(id), 0) from queue_jobs where queue in ('$Q', '$Q2')"
}

# Runs the CLI expecting exit status STATUS, one error line containing TEXT,
# and no change to this test's schedules and jobs.
#   expect_error STATUS TEXT ARGS...
expect_error() {
    local want=$1 text=$2 before
    shift 2
    before=$(db_state)
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

# The lines of `schedule tick` output about schedule $1.
tick_lines() { grep -E "^schedule $1: " <<<"$2" || true; }

# ---------------------------------------------------------------- setup

setup_file() {
    export BATS_NO_PARALLELIZE_WITHIN_FILE=true
    if [ -z "${JOBQUEUE_BIN:-}" ] || [ ! -x "$JOBQUEUE_BIN" ]; then
        echo "JOBQUEUE_BIN must name the jobqueue binary (got '${JOBQUEUE_BIN:-}')" >&2
        return 1
    fi
    PYTHON=$(python3 -c 'import sys; print(sys.executable)')
    export PYTHON
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
    # the schedule commands need 1.2 or later
    [ "$(psql -X -At -c "select string_to_array(extversion, '.')::int[] >= '{1,2}' from pg_extension where extname = 'jobqueue'")" = t ] || {
        echo "the database's jobqueue extension is older than 1.2" >&2
        return 1
    }
    # leftovers of an interrupted earlier run
    psql -X -q -v ON_ERROR_STOP=1 -c "
        delete from queue_schedules where name like 'clis%';
        delete from queue_jobs where queue like 'clis%'"
}

setup() {
    P=clis${BATS_TEST_NUMBER}
    S=${P}a
    S2=${P}b
    Q=${P}q
    Q2=${P}r
}

teardown() {
    sql "delete from queue_schedules where name like '${P}%';
         delete from queue_jobs where queue in ('$Q', '$Q2')"
}

# ---------------------------------------------------------------- add

@test "schedule add: prints the next window; every option is stored" {
    # the next Jan 1 00:00 UTC
    want=$(iso "(select min(t) from (select make_timestamp(y, 1, 1, 0, 0, 0) at time zone 'UTC' as t
                 from generate_series(extract(year from now())::int, extract(year from now())::int + 1) y) x
                 where t > now())")
    run -0 --separate-stderr cli schedule add "$S" '0 0 1 1 *' yearly_job '{"k": [1, 2]}' --queue "$Q"
    [ -z "$stderr" ]
    [ "$output" = "schedule $S: next window $want" ]
    [ "$(sql "select cron || ' ' || job_name || ' ' || payload::text || ' ' || queue || ' ' || priority || ' '
                     || max_attempts || ' ' || time_zone || ' ' || enabled || ' ' || catch_up || ' '
                     || (last_window is null) || ' ' || to_char(next_due at time zone 'UTC', $ISO)
              from queue_schedules where name = '$S'")" \
        = "0 0 1 1 * yearly_job {\"k\": [1, 2]} $Q 0 3 UTC true false true $want" ]

    # every option: the next Jan 1 09:00 in New York (14:00 UTC)
    want=$(iso "(select min(t) from (select make_timestamp(y, 1, 1, 9, 0, 0) at time zone 'America/New_York' as t
                 from generate_series(extract(year from now())::int, extract(year from now())::int + 1) y) x
                 where t > now())")
    [[ "$want" == *"T14:00:00.000000Z" ]]
    run -0 --separate-stderr cli schedule add "$S2" '0 9 1 jan *' ny_job --queue "$Q2" --priority 4 --tries 9 \
        --tz America/New_York --disabled --catch-up
    [ "$output" = "schedule $S2: next window $want" ]
    [ "$(sql "select cron || ' ' || job_name || ' ' || payload::text || ' ' || queue || ' ' || priority || ' '
                     || max_attempts || ' ' || time_zone || ' ' || enabled || ' ' || catch_up
              from queue_schedules where name = '$S2'")" \
        = "0 9 1 jan * ny_job {} $Q2 4 9 America/New_York false true" ]
}

@test "schedule add --json: {\"name\", \"next_due\"}; the same name again replaces the schedule" {
    run -0 --separate-stderr cli schedule add "$S" '*/10 * * * *' job_a --queue "$Q" --json
    [ -z "$stderr" ]
    jcheck "$output" 'sorted(d) == ["name", "next_due"] and d["name"] == a[0]' "$S"
    first=$("$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["next_due"])' "$output")
    [ "$first" = "$(iso "(select next_due from queue_schedules where name = '$S')")" ]
    # the next */10 window after now: within ten minutes, on a multiple of ten
    [ "$(sql "select next_due > now() and next_due <= now() + interval '10 minutes'
                     and extract(minute from next_due at time zone 'UTC')::int % 10 = 0
                     and extract(second from next_due) = 0
              from queue_schedules where name = '$S'")" = t ]

    # replace: new expression and job, one row
    run -0 --separate-stderr cli schedule add "$S" '0 0 1 1 *' job_b '{"v": 2}' --queue "$Q"
    [ "$(sql "select count(*) || ' ' || min(cron) || ' ' || min(job_name) || ' ' || min(payload::text)
              from queue_schedules where name = '$S'")" = '1 0 0 1 1 * job_b {"v": 2}' ]
}

@test "schedule add: a bad cron exits 2 with SQLSTATE 22023 on one stderr line, nothing stored" {
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '61 * * * *' j --queue "$Q"
    assert_error_line 'invalid cron expression: minute field "61" is out of range (0-59)'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '* 24 * * *' j
    assert_error_line 'hour field "24"'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '* * 32 * *' j
    assert_error_line 'day of month field "32"'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '* * * foo *' j
    assert_error_line 'month field "foo"'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '* * * * 8' j
    assert_error_line 'day of week field "8"'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '* * * *' j
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '@fortnightly' j
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '@every 0 seconds' j
    # never matches, unknown zone, bad tries: refused by the server too
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '0 0 30 2 *' j
    assert_error_line 'cron expression never matches'
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '@daily' j --tz Mars/Olympus
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '@daily' j --tries 0
    [ "$(sql "select count(*) from queue_schedules where name like '${P}%'")" -eq 0 ]

    # a failed replace leaves the schedule as it was
    cli schedule add "$S" '@daily' keep_job --queue "$Q" >/dev/null
    expect_error 2 'SQLSTATE 22023' schedule add "$S" '60 * * * *' other_job --queue "$Q"
    [ "$(sql "select cron || ' ' || job_name from queue_schedules where name = '$S'")" = '@daily keep_job' ]
}

@test "schedule add: usage errors exit 1 (bad JSON payload, missing arguments, bad option values)" {
    expect_error 1 'not valid JSON' schedule add "$S" '@daily' j '{"open": '
    expect_error 1 '' schedule add "$S" '@daily'
    expect_error 1 '' schedule add "$S" '@daily' j --priority high
    expect_error 1 '' schedule
    [ "$(sql "select count(*) from queue_schedules where name like '${P}%'")" -eq 0 ]
}

# ---------------------------------------------------------------- remove

@test "schedule remove: removes it (its queued jobs stay); an unknown name exits 2" {
    cli schedule add "$S" '0 0 1 1 *' job_r --queue "$Q" >/dev/null
    # one queued job of the schedule: its next_due in the past, ticked
    sql "update queue_schedules set next_due = '2020-01-01 00:00+00' where name = '$S'"
    cli schedule tick >/dev/null
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q'")" -eq 1 ]

    run -0 --separate-stderr cli schedule remove "$S"
    [ -z "$stderr" ]
    [ "$output" = "removed schedule $S" ]
    [ "$(sql "select count(*) from queue_schedules where name = '$S'")" -eq 0 ]
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q'")" -eq 1 ]

    # gone now: exit 2, one line, nothing changed
    expect_error 2 "no schedule named \"$S\"" schedule remove "$S"
    expect_error 2 "no schedule named \"${P}never\"" schedule remove "${P}never"

    # --json
    cli schedule add "$S2" '@daily' job_r2 --queue "$Q" >/dev/null
    run -0 --separate-stderr cli schedule remove "$S2" --json
    jcheck "$output" 'd == {"removed": a[0]}' "$S2"
    [ "$(sql "select count(*) from queue_schedules where name = '$S2'")" -eq 0 ]
}

# ---------------------------------------------------------------- list

@test "schedule list: aligned table with a row per schedule; --json" {
    cli schedule add "$S" '*/10 * * * *' list_job_a '{"n": 1}' --queue "$Q" >/dev/null
    cli schedule add "$S2" '0 9 * * mon-fri' list_job_b --queue "$Q2" --tz Europe/Berlin --disabled \
        --catch-up --priority 2 --tries 5 >/dev/null
    # S has enqueued one window (2020-01-01 00:00, its next_due moved there)
    sql "update queue_schedules set next_due = '2020-01-01 00:00+00' where name = '$S'"
    cli schedule tick >/dev/null
    next_a=$(iso "(select next_due from queue_schedules where name = '$S')")
    last_a=$(iso "(select last_window from queue_schedules where name = '$S')")
    next_b=$(iso "(select next_due from queue_schedules where name = '$S2')")

    run -0 --separate-stderr cli schedule list
    [ -z "$stderr" ]
    [[ "${lines[0]}" =~ ^NAME\ +CRON\ +TZ\ +JOB\ +QUEUE\ +ENABLED\ +NEXT\ WINDOW\ +LAST\ WINDOW$ ]]
    table=$output
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$S" <<<"$table"
    [ "${lines[0]}" = "NAME|CRON|TZ|JOB|QUEUE|ENABLED|NEXT WINDOW|LAST WINDOW" ]
    [[ "${lines[1]}" =~ ^[L?]{8}$ ]]
    [ "${lines[2]}" = "$S|*/10 * * * *|UTC|list_job_a|$Q|yes|${next_a%.000000Z}Z|${last_a%.000000Z}Z" ]
    [ "${#lines[@]}" -eq 3 ]
    run -0 "$PYTHON" "$BATS_TEST_DIRNAME/table.py" "$S2" <<<"$table"
    [ "${lines[2]}" = "$S2|0 9 * * mon-fri|Europe/Berlin|list_job_b|$Q2|no|${next_b%.000000Z}Z|-" ]
    # ordered by name
    names=$(awk 'NR > 2 { print $1 }' <<<"$table")
    [ "$names" = "$(LC_ALL=C sort <<<"$names")" ]

    run -0 --separate-stderr cli schedule list --json
    [ -z "$stderr" ]
    jcheck "$output" 'type(d) is list and [s["name"] for s in d] == sorted(s["name"] for s in d)'
    jcheck "$output" '[s for s in d if s["name"] == a[0]] == [{"name": a[0], "cron": "*/10 * * * *",
        "job_name": "list_job_a", "payload": {"n": 1}, "queue": a[1], "priority": 0, "max_attempts": 3,
        "time_zone": "UTC", "enabled": True, "catch_up": False, "next_due": a[2], "last_window": a[3]}]' \
        "$S" "$Q" "$next_a" "$last_a"
    jcheck "$output" '[s for s in d if s["name"] == a[0]] == [{"name": a[0], "cron": "0 9 * * mon-fri",
        "job_name": "list_job_b", "payload": {}, "queue": a[1], "priority": 2, "max_attempts": 5,
        "time_zone": "Europe/Berlin", "enabled": False, "catch_up": True, "next_due": a[2],
        "last_window": None}]' "$S2" "$Q2" "$next_b"
}

@test "schedule list: without schedules, 'no schedules' and [] (only when the database has none)" {
    if [ "$(sql "select count(*) from queue_schedules")" -ne 0 ]; then
        skip "the database has schedules of others"
    fi
    run -0 --separate-stderr cli schedule list
    [ "$output" = "no schedules" ]
    run -0 --separate-stderr cli schedule list --json
    [ "$output" = "[]" ]
}

# ---------------------------------------------------------------- tick

@test "schedule tick: enqueues the due job of an '@every 1 second' schedule" {
    cli schedule add "$S" '@every 1 second' tick_job '{"from": "tick"}' --queue "$Q" --priority 3 --tries 4 >/dev/null
    sleep 1.1
    run -0 --separate-stderr cli schedule tick
    [ -z "$stderr" ]
    line=$(tick_lines "$S" "$output")
    [[ "$line" =~ ^schedule\ $S:\ window\ ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\.000000Z\ -\>\ job\ ([0-9]+)$ ]]
    window=${BASH_REMATCH[1]}
    id=${BASH_REMATCH[2]}
    # the last line counts every job the tick enqueued (this one included)
    [[ "${lines[-1]}" =~ ^enqueued\ [0-9]+\ jobs?$ ]]
    [ "${lines[-1]}" = "enqueued $(( ${#lines[@]} - 1 )) $([ ${#lines[@]} -eq 2 ] && echo job || echo jobs)" ]

    # the job: the schedule's fields, due now, the window's unique key
    [ "$(sql "select name || ' ' || payload::text || ' ' || queue || ' ' || priority || ' ' || max_attempts || ' '
                     || attempts || ' ' || ready || ' ' || (available_at <= now()) || ' ' || unique_key
              from queue_jobs where id = $id")" \
        = "tick_job {\"from\": \"tick\"} $Q 3 4 0 true true jobqueue:schedule:$S:${window}Z" ]
    # the schedule remembers it
    [ "$(sql "select to_char(last_window at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') || ' ' || last_job_id
                     || ' ' || (next_due = last_window + interval '1 second')
              from queue_schedules where name = '$S'")" = "$window $id true" ]

    # the job can be claimed and completed like any other
    [ "$(sql "select count(*) from queue_reserve(array['$Q']) r where r.id = $id and queue_delete(r.id, r.token)")" -eq 1 ]
}

@test "schedule tick: only the latest missed window; with --catch-up each one; ticking again adds nothing" {
    # yearly schedules last enqueued long ago: next_due 2020-01-01
    cli schedule add "$S" '0 0 1 1 *' latest_job --queue "$Q" >/dev/null
    cli schedule add "$S2" '0 0 1 1 *' every_year_job --queue "$Q2" --catch-up >/dev/null
    sql "update queue_schedules set next_due = '2020-01-01 00:00+00' where name in ('$S', '$S2')"
    this_year=$(sql "select extract(year from now() at time zone 'UTC')::int")
    years=$((this_year - 2020 + 1))

    run -0 --separate-stderr cli schedule tick
    # S: this year's window only
    [ "$(tick_lines "$S" "$output" | wc -l)" -eq 1 ]
    [[ "$(tick_lines "$S" "$output")" == "schedule $S: window ${this_year}-01-01T00:00:00.000000Z -> job "* ]]
    [ "$(sql "select count(*) || ' ' || min(unique_key) from queue_jobs where queue = '$Q'")" \
        = "1 jobqueue:schedule:$S:${this_year}-01-01T00:00:00Z" ]
    # S2: every year from 2020, in order
    [ "$(tick_lines "$S2" "$output" | wc -l)" -eq "$years" ]
    [ "$(tick_lines "$S2" "$output" | sed -E 's/.* window ([0-9]{4})-.*/\1/' | tr '\n' ' ')" \
        = "$(seq -s ' ' 2020 "$this_year") " ]
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q2'")" -eq "$years" ]
    # both move on to next year
    [ "$(sql "select string_agg(to_char(next_due at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), ' ' order by name)
              from queue_schedules where name in ('$S', '$S2')")" \
        = "$((this_year + 1))-01-01 00:00 $((this_year + 1))-01-01 00:00" ]

    # again: nothing more for either
    run -0 --separate-stderr cli schedule tick
    [ -z "$(tick_lines "$S" "$output")" ]
    [ -z "$(tick_lines "$S2" "$output")" ]
    [ "$(sql "select count(*) from queue_jobs where queue in ('$Q', '$Q2')")" -eq $((years + 1)) ]
}

@test "schedule tick: a disabled schedule, and one not yet due, enqueue nothing" {
    cli schedule add "$S" '0 0 1 1 *' off_job --queue "$Q" --disabled >/dev/null
    cli schedule add "$S2" '0 0 1 1 *' not_due_job --queue "$Q" >/dev/null
    sql "update queue_schedules set next_due = '2020-01-01 00:00+00' where name = '$S'"
    run -0 --separate-stderr cli schedule tick
    [ -z "$(tick_lines "$S" "$output")" ]
    [ -z "$(tick_lines "$S2" "$output")" ]
    [[ "${lines[-1]}" =~ ^enqueued\ [0-9]+\ jobs?$ ]]
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q'")" -eq 0 ]
    [ "$(sql "select last_window is null from queue_schedules where name = '$S'")" = t ]
}

@test "schedule tick --json: [{\"schedule\", \"due_at\", \"job_id\"}] per enqueued window" {
    cli schedule add "$S" '0 0 1 1 *' json_job --queue "$Q" --catch-up >/dev/null
    sql "update queue_schedules set next_due = '2021-01-01 00:00+00' where name = '$S'"
    run -0 --separate-stderr cli schedule tick --json
    [ -z "$stderr" ]
    jcheck "$output" 'type(d) is list and all(sorted(t) == ["due_at", "job_id", "schedule"] for t in d)'
    jcheck "$output" '[t["due_at"] for t in d if t["schedule"] == a[0]][:2]
                      == ["2021-01-01T00:00:00.000000Z", "2022-01-01T00:00:00.000000Z"]' "$S"
    # the job ids are the jobs of the schedule's windows
    ids=$("$PYTHON" -c 'import json,sys; print(",".join(str(t["job_id"]) for t in json.loads(sys.argv[1]) if t["schedule"] == sys.argv[2]))' "$output" "$S")
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q' and id in ($ids)")" \
        -eq "$(sql "select count(*) from queue_jobs where queue = '$Q'")" ]
    [ "$(sql "select count(*) from queue_jobs where queue = '$Q'")" -ge 5 ]
    # nothing due: []
    run -0 --separate-stderr cli schedule tick --json
    jcheck "$output" 'type(d) is list and not [t for t in d if t["schedule"] == a[0]]' "$S"
}

# ---------------------------------------------------------------- help

@test "schedule --help: add, remove, list and tick each show usage and an Example" {
    run -0 --separate-stderr cli schedule --help
    [[ "$output" == *"Usage: jobqueue schedule"* ]]
    listed=$(sed -n '/^Subcommands:/,/^$/p' <<<"$output" | awk 'NR > 1 && NF { print $1 }' | sort | tr '\n' ' ')
    [ "$listed" = "add list remove tick " ]
    for command in add remove list tick; do
        run --separate-stderr "$JOBQUEUE_BIN" schedule "$command" --help
        [ "$status" -eq 0 ] || { echo "schedule $command --help: exit $status" >&2; return 1; }
        [[ "$output" == *"Usage: jobqueue schedule $command"* ]] || { echo "schedule $command --help: no usage line" >&2; return 1; }
        grep -q '^Example' <<<"$output" || { echo "schedule $command --help: no Example line" >&2; return 1; }
        grep -q "^  jobqueue schedule $command" <<<"$output" || { echo "schedule $command --help: no example command" >&2; return 1; }
    done
}
