#!/usr/bin/env bash
# tests/ring/run.sh - the storage ring (1.3) under a held snapshot, under a
# held lock, and through kill -9 of the server.
#
# Starts a throwaway cluster of its own (jobqueue preloaded), since the
# crash tests kill its postmaster, and runs against it:
#   tests/ring/held.py    (a) a REPEATABLE READ transaction that read another
#                         table: rotations truncate, the ring stays small;
#                         (b) a transaction that read queue_jobs: rotations
#                         are 'busy', no call waits more than the lock timeout
#                         plus a margin
#   tests/ring/crash.py   (c) kill -9 during an open rotation and right after
#                         a committed one under load, rotations rolled back and
#                         cancelled mid-work: nothing lost, nothing twice,
#                         held jobs complete with their tokens
#   tests/ring/due.py     rotations by time (queue_rotate(NULL), queue_tick):
#                         the partition pushes left, from half a period on
#   tests/ring/idle.py    (issue 30 a) a paused queue of 5,000 jobs, delayed and
#                         unclaimed jobs, ticked every second: no WAL, no
#                         pg_class row version over 60 s (JQ_IDLE_SECONDS)
#   tests/ring/waiting.py (issue 30 b) 32 workers waiting in queue_reserve(wait)
#                         under ~800 jobs/s: rotations truncate, the tables stay
#                         within 2x their size at 20 s (40 s; 120 s with JQ_LONG=1)
# The cluster's ticker ticks the database of idle.py (jq_ring_idle) every
# second; it connects once that database exists (10 s after each failure).
# Each part is bounded (timeout); the cluster is always stopped.  Knobs are
# those of the two programs (JQ_RING_SELFTEST=norotate|lock, ...).
# Last line: "N passed, N failed" (checks of the three programs).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# scripts/test.sh runs this with its own cluster exported: leave it alone.
unset JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG PGHOST PGPORT PGDATABASE
source scripts/cluster.sh
source tests/lib/parts.bash
# cluster.sh turns on errexit; this script counts failures instead.
set +e
# crash.py restarts the server itself: it needs the bin dir cluster.sh defaulted
export JQ_PGBIN
trap jq_cluster_stop EXIT

JQ_PGPORT=${JQ_RING_PGPORT:-55490} JQ_PRELOAD=jobqueue JQ_PGCONF="jobqueue.tick_database = 'jq_ring_idle'
jobqueue.tick_interval = 1s" jq_cluster_start || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
run_part() { # run_part SECONDS program: adds the program's "N passed, N failed"
    local out rc
    out=$(timeout "$1" /usr/bin/python3 "$2" 2>&1)
    rc=$?
    add_part "$2" "$rc" "$out"
}

run_part 150 tests/ring/held.py
run_part 200 tests/ring/crash.py
run_part 60 tests/ring/due.py
run_part 150 tests/ring/idle.py
run_part $(( ${JQ_LONG:-0} == 1 ? 240 : 150 )) tests/ring/waiting.py

jq_cluster_stop
echo "$passed passed, $failed failed"
(( failed == 0 ))
