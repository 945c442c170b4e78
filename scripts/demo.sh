#!/usr/bin/env bash
# The demo command:  bash scripts/demo.sh
# Builds and installs the extension, starts a throwaway cluster, creates
# database "demo" with the extension, and runs scripts/demo.sql in it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ! -f scripts/demo.sql ]]; then
    echo "demo.sh: scripts/demo.sql not found" >&2
    exit 1
fi

source scripts/install-deps.sh
source scripts/cluster.sh

jq_install_deps

# Quiet build so the demo output is what is on screen; errors still show.
make -s PG_CONFIG="$PG_CONFIG"
make -s install PG_CONFIG="$PG_CONFIG" >/dev/null

trap jq_cluster_stop EXIT
jq_cluster_start

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'CREATE DATABASE demo'
psql -X -q -v ON_ERROR_STOP=1 -d demo -c 'CREATE EXTENSION jobqueue'
psql -X -v ON_ERROR_STOP=1 -d demo -f scripts/demo.sql
