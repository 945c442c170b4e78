#!/usr/bin/env bash
# tests/ring/stress.sh - the storage ring's randomised stress (tests/ring/stress.py)
# with kill -9 of the server, against a throwaway cluster of its own (jobqueue
# preloaded, no ticker), since it kills its postmaster.
#
#   JQ_RING_STRESS_SECONDS  the working phase (default 60; 300 with JQ_LONG=1)
#   JQ_RING_STRESS_KILLS    kills during it (default 3; 8 with JQ_LONG=1)
#   JQ_RING_STRESS_PGPORT   preferred port (default 55495; a free one is picked)
# Other knobs are stress.py's (JQ_RING_STRESS_SEED, JQ_RING_STRESS_SELFTEST).
# The program is bounded (timeout: the working phase plus 200 s); the cluster
# is always stopped.  Last line: stress.py's "N passed, N failed".
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# scripts/test.sh runs this with its own cluster exported: leave it alone.
unset JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG PGHOST PGPORT PGDATABASE
source scripts/cluster.sh
# cluster.sh turns on errexit; the program's status is this script's.
set +e
# stress.py restarts the server itself: it needs the bin dir cluster.sh defaulted
export JQ_PGBIN
trap jq_cluster_stop EXIT

long=${JQ_LONG:-0}
export JQ_RING_STRESS_SECONDS=${JQ_RING_STRESS_SECONDS:-$(( long == 1 ? 300 : 60 ))}
export JQ_RING_STRESS_KILLS=${JQ_RING_STRESS_KILLS:-$(( long == 1 ? 8 : 3 ))}

# A synchronous standby that never connects: sessions commit locally, except
# those stress.py sets to synchronous_commit = on just before a kill, whose
# commits are flushed and then wait for ever (a commit done with no reply).
JQ_PGPORT=${JQ_RING_STRESS_PGPORT:-55495} JQ_PRELOAD=jobqueue JQ_PGCONF="synchronous_standby_names = 'jq_stress_nobody'
synchronous_commit = local" jq_cluster_start || { echo "0 passed, 1 failed"; exit 1; }

timeout $(( ${JQ_RING_STRESS_SECONDS%.*} + 200 )) /usr/bin/python3 tests/ring/stress.py
rc=$?
(( rc == 124 )) && echo "stress.py: timed out" && echo "0 passed, 1 failed"
exit $rc
