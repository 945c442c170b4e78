#!/usr/bin/env bash
# The client, the worker and the jobqueue tool through a real PgBouncer in
# pool_mode = transaction, in front of the test cluster (PGHOST/PGPORT).
#
#   JOBQUEUE_BIN=build/client/cli/jobqueue bash tests/pgbouncer/run.sh
#
# Starts its own PgBouncer (tests/pgbouncer/pgbouncer.sh: own port and unix
# socket dir, query_timeout = 2 s) and stops it on exit, then runs
#   - tests/pgbouncer/cli.bats: the tool's commands through the pooler;
#   - build/client/tests/jobqueue_pgbouncer_tests (tests/client/pgbouncer_test.cpp):
#     the client's calls, waiting claims against query_timeout, a worker that
#     must not LISTEN, and a 4-thread worker draining 1,500 jobs while the
#     pooler restarts, every job completed exactly once.
# Both are built by the client suite (scripts/test.sh). Every step is under
# a timeout; the whole takes well under 2 minutes.
#
# JOBQUEUE_POOLER=session forces the named prepared statements of a direct
# connection: the run must then fail (42P05 / 26000), which shows that it
# tests the pooler-safe mode.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
JOBQUEUE_BIN=${JOBQUEUE_BIN:-$ROOT/build/client/cli/jobqueue}
TEST_BIN=${JQ_PGBOUNCER_TEST_BIN:-$ROOT/build/client/tests/jobqueue_pgbouncer_tests}
for f in "$JOBQUEUE_BIN" "$TEST_BIN"; do
    [[ -x $f ]] || { echo "run.sh: $f not built (run the client suite first)" >&2; exit 1; }
done
export JOBQUEUE_BIN

# shellcheck source=pgbouncer.sh
source "$ROOT/tests/pgbouncer/pgbouncer.sh"
trap jq_pgbouncer_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
JQ_PGB_POOL_MODE=transaction JQ_PGB_QUERY_TIMEOUT=2 jq_pgbouncer_start
export JQ_PGBOUNCER_DSN=$JQ_PGB_DSN
export JQ_PGBOUNCER_LOGGED_DSN=$JQ_PGB_LOGGED_DSN
export JQ_PGBOUNCER_QUERY_TIMEOUT_MS=2000
export JQ_PGBOUNCER_RESTART_COMMAND="bash $ROOT/tests/pgbouncer/pgbouncer.sh restart 1"

status=0
echo "--- the jobqueue tool through PgBouncer"
timeout 60 bats "$ROOT/tests/pgbouncer/cli.bats" || status=1
echo "--- the client and the worker through PgBouncer"
timeout 90 "$TEST_BIN" || status=1
if (( status != 0 )); then
    echo "--- last lines of the PgBouncer log"
    tail -n 30 "$JQ_PGB_DIR/pgbouncer.log" || true
fi
exit "$status"
