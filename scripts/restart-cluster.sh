#!/usr/bin/env bash
# Restarts the throwaway cluster that test.sh started (its JQ_PGDATA and
# JQ_SERVER_LOG are in the environment). Used by fault tests:
#   bash scripts/restart-cluster.sh [fast|immediate|smart]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
jq_cluster_restart "${1:-fast}"
