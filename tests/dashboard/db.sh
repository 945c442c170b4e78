#!/usr/bin/env bash
# tests/dashboard/db.sh stop|start ENV_FILE: stops or starts the cluster that
# run.sh started and described in ENV_FILE (the browser test takes the
# database away under a running dashboard, then gives it back).
set -euo pipefail
source "$2"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cluster.sh"
case $1 in
    stop) _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "$JQ_PGDATA" -m fast -w -s stop ;;
    start) _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "$JQ_PGDATA" -l "$JQ_SERVER_LOG" -w -s start ;;
    *) echo "db.sh: stop or start" >&2; exit 2 ;;
esac
