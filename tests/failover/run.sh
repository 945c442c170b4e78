#!/usr/bin/env bash
# tests/failover/run.sh - jobqueue across a failover with PostgreSQL's own
# streaming replication (pg_basebackup -R, pg_ctl promote).
#
# Each part starts primaries and standbys of its own (tests/failover/replica.py),
# on ports of JQ_FAILOVER_PORTS (56000-56099) with their sockets in a directory
# made here, and stops them on every exit path; whatever a killed part left
# running there is stopped by this script's trap, which then removes the
# directory (kept with JQ_FAILOVER_KEEP=1, for the servers' logs).
#   standby.py        a hot standby: reads work, writes fail at once with
#                     25006, the ticker idles; the client and a worker on it;
#                     after promotion: ticker, waiting claims, claim positions,
#                     delayed jobs
#   tokens.py         fencing tokens after a promotion that lost the old
#                     primary's last claims
#   failover.py sync  a failover in the middle of a drain, synchronous
#   failover.py async the same, asynchronous, with a lagging standby
# Needs the jobqueue tool (JOBQUEUE_BIN, default build/client/cli/jobqueue)
# and tests/client's jobqueue_standby_tests (JQ_STANDBY_TESTS). The parts'
# timeouts add up to 265 s (the async part's drain of about 4,500 jobs by
# shell handlers took 68 s on a quiet 2-core machine, past the 50 s it had).
# Last line: "N passed, N failed" (checks).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/lib/parts.bash
# scripts/test.sh runs this with its own cluster exported: not ours
unset PGHOST PGPORT PGDATABASE PGUSER JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG
export JQ_PGBIN=${JQ_PGBIN:-/usr/lib/postgresql/15/bin}
export JOBQUEUE_BIN=${JOBQUEUE_BIN:-$PWD/build/client/cli/jobqueue}

source tests/lib/server_dir.bash
jq_server_dir jq-fo
# A signal (scripts/test.sh's timeout) ends the running part at once: it is
# run in the background and waited for, so the trap is not held up by it, and
# told to stop (it stops its servers itself; cleanup catches the rest).
part=
on_signal() {
    if [[ -n $part ]]; then
        kill -TERM "$part" 2> /dev/null && wait "$part"
        cat "$JQ_FAILOVER_DIR/part.out" 2> /dev/null
        echo "FAIL cut by a signal"
        echo "$passed passed, $((failed + 1)) failed"
    fi
    exit 143
}
trap on_signal TERM INT HUP

passed=0
failed=0
run_part() { # run_part SECONDS program [args]: adds the program's "N passed, N failed"
    local seconds=$1 out rc
    shift
    echo "== $*"
    timeout "$seconds" /usr/bin/python3 "$@" > "$JQ_FAILOVER_DIR/part.out" 2>&1 &
    part=$!
    wait "$part"
    rc=$?
    part=
    out=$(< "$JQ_FAILOVER_DIR/part.out")
    add_part "$*" "$rc" "$out"
}

run_part 55 tests/failover/standby.py
run_part 20 tests/failover/tokens.py
run_part 90 tests/failover/failover.py sync
run_part 100 tests/failover/failover.py async

echo "$passed passed, $failed failed"
(( failed == 0 ))
