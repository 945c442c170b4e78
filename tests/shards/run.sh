#!/usr/bin/env bash
# tests/shards/run.sh - one queue over several servers: two shard clusters
# running jobqueue and a router cluster running jobqueue_router (PL/Proxy),
# started by tests/shards/shards.py on ports 56100-56199 (JQ_SHARDS_PORTS),
# their sockets and data in a directory made here, removed on exit (kept
# with JQ_SHARDS_KEEP=1, for the servers' logs).  Needs the jobqueue tool
# (JOBQUEUE_BIN, default build/client/cli/jobqueue).  Bounded by a 90 s
# timeout.  Last line: "N passed, N failed" (checks).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tests/lib/parts.bash
# scripts/test.sh runs this with its own cluster exported: not ours
unset PGHOST PGPORT PGDATABASE PGUSER JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG
export JQ_PGBIN=${JQ_PGBIN:-/usr/lib/postgresql/15/bin}
export JOBQUEUE_BIN=${JOBQUEUE_BIN:-$PWD/build/client/cli/jobqueue}
# the server helpers of tests/failover/replica.py, on this suite's ports
export JQ_FAILOVER_PORTS=${JQ_SHARDS_PORTS:-56100-56199}
[[ -n ${JQ_SHARDS_KEEP:-} ]] && export JQ_FAILOVER_KEEP=1

source tests/lib/server_dir.bash
jq_server_dir jq-sh

passed=0
failed=0
timeout 90 /usr/bin/python3 tests/shards/shards.py > "$JQ_FAILOVER_DIR/part.out" 2>&1
rc=$?
add_part "tests/shards/shards.py" "$rc" "$(< "$JQ_FAILOVER_DIR/part.out")"

echo "$passed passed, $failed failed"
(( failed == 0 ))
