#!/usr/bin/env bash
# tests/examples/run.sh - the Python (psycopg2) and Node (pg) examples work.
#
# For each language, against the running cluster (database postgres):
#   producer  its committed order and job both exist; the rolled-back push
#             left neither the order nor the job;
#   workers   two of them, lease 2 s, drain the producer's job plus 5 jobs that
#             succeed, 2 that fail once (released with a 1 s delay) then
#             succeed, 1 that always fails and 1 that runs 4 s (it must extend
#             its lease).  An audit trigger on queue_jobs (this suite's queues
#             only) records every claim, extend, release and delete, so SQL
#             shows: each job claimed and deleted exactly once, except the
#             retried ones (claimed twice, released for 1 s in between with the
#             handler's error); the failing one in queue_failed_jobs with its
#             error text; the long job claimed once and extended; nothing left;
#             each handler's outcome printed once by the workers, no lease lost;
#   transactional handler
#             3 jobs whose handler writes a row and completes the job in one
#             transaction: each row there once, each job claimed and deleted
#             once; then one that stalls 3 s after its write while another
#             session (its clock an hour ahead: the lease has run out for it)
#             takes the job over and completes it with a row of its own: the
#             worker's queue_delete answers false, it rolls back and says so,
#             and only the other session's row is left;
#   stop      SIGTERM while a worker runs a job: it finishes and completes the
#             job, then both workers exit 0.
#
# Usage: needs a running cluster with jobqueue installed (PGHOST/PGPORT/PGUSER,
# as scripts/test.sh exports).  Installs the test command's packages when
# missing (scripts/packages.txt), runs `npm ci` in client/examples/node.
# Uses queues jq_examples_* and the tables example_orders, example_deliveries, jq_examples_*;
# drops them at the end.
# Last line: "N passed, N failed".
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PGDATABASE=postgres PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
PY=/usr/bin/python3 # Debian's python3-psycopg2 belongs to the system interpreter
WORK=$(mktemp -d /tmp/jq-examples.XXXXXX)
worker_pids=()

CHECKS_SUITE=examples
source tests/lib/checks.bash
# every statement here is short: one that hangs fails the suite instead
q() { timeout 20 psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

cleanup() {
    local pid
    for pid in "${worker_pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
    q > /dev/null <<'SQL' || echo "examples: cleanup failed" >&2
DROP TRIGGER IF EXISTS jq_examples_audit ON queue_jobs;
DROP FUNCTION IF EXISTS jq_examples_audit();
DROP TABLE IF EXISTS jq_examples_audit, jq_examples_expect, example_orders, example_deliveries;
DELETE FROM queue_jobs WHERE starts_with(queue, 'jq_examples_');
DELETE FROM queue_failed_jobs WHERE starts_with(queue, 'jq_examples_');
SQL
    rm -rf -- "$WORK"
}
trap cleanup EXIT

# check_cmd NAME COMMAND...: passes when the command succeeds.
check_cmd() {
    local name=$1
    shift
    if "$@"; then check "$name" t; else check "$name" f; fi
}
# check_none NAME SQL: passes when the query returns no rows (the offenders).
check_none() {
    local rows
    if ! rows=$(q -c "$2" 2>&1); then check "$1" f "$rows"; return; fi
    if [[ -z $rows ]]; then check "$1" t; else check "$1" f "$(tr '\n' ' ' <<< "$rows")"; fi
}
# poll SECONDS SQL: until the query answers t.
poll() {
    local deadline=$((SECONDS + $1))
    until [[ $(q -c "$2") == t ]]; do
        (( SECONDS < deadline )) || return 1
        sleep 0.2
    done
}
# stop_worker PID SECONDS: SIGTERM, then its exit status (137 if it had to be killed).
stop_worker() {
    local pid=$1 deadline=$((SECONDS + $2))
    kill -TERM "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null; do
        if (( SECONDS >= deadline )); then
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            return 137
        fi
        sleep 0.1
    done
    wait "$pid"
}
example() { # example LANGUAGE producer|worker: the command line
    case $1 in
        python) echo "$PY client/examples/python/$2.py" ;;
        node) echo "node client/examples/node/$2.js" ;;
    esac
}

# ------------------------------------------------------------ setup
source scripts/install-deps.sh
set +e # install-deps.sh turns -e on; this suite counts failures itself
# the test command's packages (scripts/packages.txt; none missing under scripts/test.sh)
jq_install_purpose test || { check "install the test packages" f; finish; }
(cd client/examples/node && timeout 60 npm ci --prefer-offline --no-audit --no-fund --loglevel=error) \
    > "$WORK/npm.log" 2>&1 || { check "npm ci in client/examples/node" f "$(tail -5 "$WORK/npm.log")"; finish; }

q > /dev/null <<'SQL' || { check "create the extension and the audit trigger" f; finish; }
CREATE EXTENSION IF NOT EXISTS jobqueue;
CREATE TABLE jq_examples_expect (job_id bigint PRIMARY KEY, lang text NOT NULL, kind text NOT NULL);
CREATE TABLE jq_examples_audit (seq bigserial, job_id bigint, event text, attempts int, last_error text,
                                due_in interval);
-- The queue's functions run with search_path = pg_catalog, pg_temp: qualify everything.
CREATE FUNCTION jq_examples_audit() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO public.jq_examples_audit (job_id, event, attempts, last_error)
        VALUES (OLD.id, 'delete', OLD.attempts, OLD.last_error);
        RETURN OLD;
    END IF;
    INSERT INTO public.jq_examples_audit (job_id, event, attempts, last_error, due_in)
    VALUES (NEW.id,
            CASE WHEN NEW.token IS NOT NULL AND NEW.token IS DISTINCT FROM OLD.token THEN 'claim'
                 WHEN OLD.token IS NOT NULL AND NEW.token IS NULL THEN 'release'
                 WHEN NEW.reserved_until > OLD.reserved_until THEN 'extend'
                 ELSE 'other' END,
            NEW.attempts, NEW.last_error, NEW.available_at - clock_timestamp());
    RETURN NEW;
END $$;
CREATE TRIGGER jq_examples_audit AFTER UPDATE OR DELETE ON queue_jobs
    FOR EACH ROW WHEN (starts_with(OLD.queue, 'jq_examples_')) EXECUTE FUNCTION jq_examples_audit();
SQL

# ------------------------------------------------------------ per language
run_language() {
    local lang=$1 order=$2 queue=jq_examples_$1 out committed rolled_back pid i rc
    local log=$WORK/$lang-workers.log

    # producer
    if ! out=$(timeout 20 $(example "$lang" producer) --queue "$queue" "$order" 2>&1); then
        check "$lang producer runs" f "$out"
        return
    fi
    committed=$(sed -n "s/^order $order committed, job \([0-9]*\)\$/\1/p" <<< "$out")
    rolled_back=$(sed -n "s/^order $((order + 1)) rolled back, job \([0-9]*\) with it\$/\1/p" <<< "$out")
    if [[ -z $committed || -z $rolled_back ]]; then
        check "$lang producer prints both job ids" f "$out"
        return
    fi
    check "$lang producer: the committed order and its job both exist" "$(q -c "
        SELECT (SELECT count(*) FROM example_orders WHERE id = $order) = 1
           AND (SELECT count(*) FROM queue_jobs WHERE id = $committed AND queue = '$queue'
                   AND name = 'send_receipt' AND payload = '{\"order\": $order}') = 1")"
    check "$lang producer: the rollback removed the order and its job" "$(q -c "
        SELECT NOT EXISTS (SELECT FROM example_orders WHERE id = $((order + 1)))
           AND NOT EXISTS (SELECT FROM queue_jobs WHERE id = $rolled_back
                              OR payload = '{\"order\": $((order + 1))}')")"

    # the jobs for the workers, with what should become of each
    q -c "INSERT INTO jq_examples_expect VALUES ($committed, '$lang', 'ok')" || return
    q > /dev/null -v queue="$queue" -v lang="$lang" <<'SQL' || { check "$lang: push the worker's jobs" f; return; }
INSERT INTO jq_examples_expect
SELECT queue_push('send_receipt', jsonb_build_object('order', g), queue => :'queue'), :'lang', 'ok' FROM generate_series(1, 5) g
UNION ALL
SELECT queue_push('charge_card', jsonb_build_object('order', g), queue => :'queue'), :'lang', 'retry' FROM generate_series(6, 7) g
UNION ALL
SELECT queue_push('send_receipt', '{}', queue => :'queue'), :'lang', 'fail'
UNION ALL
SELECT queue_push('build_report', '{"seconds": 4}', queue => :'queue'), :'lang', 'long'
UNION ALL
SELECT queue_push('record_delivery', jsonb_build_object('order', g), queue => :'queue'), :'lang', 'tx' FROM generate_series(11, 13) g;
SQL

    worker_pids=()
    for i in 1 2; do
        $(example "$lang" worker) --queue "$queue" --lease 2 > "$WORK/$lang-worker-$i.out" 2>&1 &
        worker_pids+=($!)
    done
    check_cmd "$lang workers drain the queue within 30 s" \
        poll 30 "SELECT NOT EXISTS (SELECT FROM queue_jobs WHERE queue = '$queue')"

    # a lease taken over while a transactional handler stalls after its write: another
    # session, its clock an hour ahead (the worker's lease has run out for it), claims the
    # job and completes it with a row of its own; the worker's queue_delete answers false
    local stale deadline
    stale=$(q -c "SELECT queue_push('record_delivery', '{\"order\": 20, \"stall\": 3}', queue => '$queue')") || return
    q -c "INSERT INTO jq_examples_expect VALUES ($stale, '$lang', 'tx_stale')" || return
    check_cmd "$lang: the stalling transactional job is claimed within 10 s" \
        poll 10 "SELECT EXISTS (SELECT FROM queue_jobs WHERE id = $stale AND reserved_by IS NOT NULL)"
    sleep 0.5 # its handler has written its row (not committed) and stalls
    check "$lang: another session takes the job over and completes it" "$(q -v id="$stale" -v queue="$queue" <<'SQL'
BEGIN;
SET LOCAL jobqueue.clock_offset = '1 hour';
SELECT token FROM queue_reserve(ARRAY[:'queue'], lease => '1 minute', max_jobs => 1) \gset
INSERT INTO example_deliveries VALUES (20, :id, 'other session');
SELECT queue_delete(:id, :token);
COMMIT;
SQL
)"
    deadline=$((SECONDS + 10))
    until cat "$WORK/$lang"-worker-*.out |
        grep -q "^job $stale record_delivery attempt 1: lease lost, rolled back\$"; do
        (( SECONDS < deadline )) || break
        sleep 0.2
    done

    # graceful stop: SIGTERM while a job runs; it is finished and completed first
    local last
    last=$(q -c "SELECT queue_push('build_report', '{\"seconds\": 2}', queue => '$queue')") || return
    q -c "INSERT INTO jq_examples_expect VALUES ($last, '$lang', 'stop')" || return
    check_cmd "$lang: the last job is claimed within 10 s" \
        poll 10 "SELECT EXISTS (SELECT FROM queue_jobs WHERE id = $last AND reserved_by IS NOT NULL)"
    for pid in "${worker_pids[@]}"; do
        stop_worker "$pid" 10
        rc=$?
        check "$lang worker $pid exits with 0 within 10 s of SIGTERM" "$( ((rc == 0)) && echo t || echo f)" "exit $rc"
    done
    worker_pids=()
    cat "$WORK/$lang-worker-1.out" "$WORK/$lang-worker-2.out" > "$log"
    check_cmd "$lang workers both print \"worker stopped\"" test "$(grep -c '^worker stopped$' "$log")" = 2

    # what the audit trigger saw, one row per job of this language
    local jobs="WITH s AS (
            SELECT e.job_id, e.kind,
                   count(*) FILTER (WHERE a.event = 'claim') AS claims,
                   count(*) FILTER (WHERE a.event = 'extend') AS extends,
                   count(*) FILTER (WHERE a.event = 'release') AS releases,
                   count(*) FILTER (WHERE a.event = 'delete') AS deletes,
                   max(a.attempts) FILTER (WHERE a.event = 'delete') AS deleted_at_attempt,
                   string_agg(a.last_error, ',') FILTER (WHERE a.event = 'release') AS release_errors,
                   max(a.due_in) FILTER (WHERE a.event = 'release') AS released_for,
                   string_agg(a.event, ',' ORDER BY a.seq) FILTER (WHERE a.event <> 'other') AS events,
                   (SELECT string_agg(f.error, ',') FROM queue_failed_jobs f WHERE f.job_id = e.job_id) AS failed_error
            FROM jq_examples_expect e LEFT JOIN jq_examples_audit a USING (job_id)
            WHERE e.lang = '$lang'
            GROUP BY e.job_id, e.kind)
        SELECT job_id, kind, events, released_for, failed_error FROM s WHERE"
    check_none "$lang: nothing is left in the queue" \
        "SELECT id, name, attempts FROM queue_jobs WHERE queue = '$queue'"
    check_none "$lang: jobs that succeed are claimed once and deleted once, never released" \
        "$jobs kind IN ('ok', 'stop', 'tx') AND NOT (claims = 1 AND releases = 0 AND deletes = 1
                     AND deleted_at_attempt = 1 AND failed_error IS NULL)"
    check_none "$lang: retried jobs are released for 1 s with the handler's error, then claimed again and deleted" \
        "$jobs kind = 'retry' AND NOT (events ~ '^claim,release,claim,delete\$'
                     AND release_errors = 'payment gateway timed out'
                     AND released_for BETWEEN '0.5 s' AND '1 s' AND deleted_at_attempt = 2
                     AND failed_error IS NULL)"
    check_none "$lang: the failing job is in queue_failed_jobs with its error" \
        "$jobs kind = 'fail' AND NOT (claims = 1 AND releases = 0
                     AND failed_error = 'payload has no \"order\"')"
    check_none "$lang: the long job is extended and never claimed twice" \
        "$jobs kind = 'long' AND NOT (claims = 1 AND extends >= 2 AND releases = 0
                     AND deleted_at_attempt = 1 AND failed_error IS NULL)"

    check_none "$lang: each transactional job's row is there exactly once" \
        "SELECT e.job_id, count(d.job_id) FROM jq_examples_expect e LEFT JOIN example_deliveries d USING (job_id)
         WHERE e.lang = '$lang' AND e.kind = 'tx' GROUP BY e.job_id HAVING count(d.job_id) <> 1"
    check_none "$lang: the job taken over was claimed twice and deleted once, and only the other session's row is left" \
        "$jobs kind = 'tx_stale' AND NOT (events ~ '^claim,(extend,)*claim,delete\$' AND failed_error IS NULL
                     AND (SELECT string_agg(worker, ',') FROM example_deliveries d WHERE d.job_id = s.job_id)
                         = 'other session')"

    # what the workers printed: each handler's outcome once
    local id kind expect line bad=""
    while IFS='|' read -r id kind; do
        expect=done
        case $kind in
            retry) [[ $(grep -c "^job $id charge_card attempt 1: retry in 1s: payment gateway timed out\$" "$log") == 1 ]] ||
                       bad+=" $id(retry line)" ;;
            fail) expect='failed: payload has no "order"' ;;
            tx_stale) expect='lease lost, rolled back' ;;
        esac
        [[ $(grep -c "^job $id [a-z_]* attempt [0-9]*: $expect\$" "$log") == 1 ]] || bad+=" $id($kind)"
    done < <(q -c "SELECT job_id, kind FROM jq_examples_expect WHERE lang = '$lang' ORDER BY job_id")
    check "$lang workers print each job's outcome once" "$([[ -z $bad ]] && echo t || echo f)" "wrong:$bad"
    line=$(grep -v "^job $stale " "$log" | grep -m1 'lease lost')
    check "$lang workers never lose a lease" "$([[ -z $line ]] && echo t || echo f)" "$line"
}

run_language python 1000
run_language node 2000
finish
