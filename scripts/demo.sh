#!/usr/bin/env bash
# The demo command:  bash scripts/demo.sh [--sql]
#
# Builds and installs the extension and the jobqueue tool, starts a
# throwaway cluster, and shows a queue the way a new user meets it: jobs
# pushed from the shell, a worker running a shell handler, the backlog
# before and after, the failed jobs and a retry. --sql instead walks through
# the same ideas in plain SQL (scripts/demo.sql). The cluster is always
# stopped at the end.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/install-deps.sh
source scripts/cluster.sh

mode=cli
[[ ${1:-} == --sql ]] && mode=sql

# What to install: the "demo" list of scripts/packages.txt (nothing when all is there).
jq_install_purpose demo

# Quiet builds so the demo output is what is on screen; errors still show.
# Only the jobqueue command is built, on every core, as a Release build; the
# build directory is kept, so a later run rebuilds only what changed (and
# keeps whatever build/client was configured with, e.g. by scripts/test.sh).
jobs=$(nproc)
t_build=$SECONDS
make -s -j "$jobs" PG_CONFIG="$PG_CONFIG"
make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
if [[ ! -f build/client/CMakeCache.txt ]]; then
    echo "demo: building the jobqueue command (the first run takes a few minutes; later runs reuse build/client)"
    cmake -S client -B build/client -DCMAKE_BUILD_TYPE=Release > /dev/null
fi
cmake --build build/client -j "$jobs" --target jobqueue_cli > /dev/null
(( SECONDS - t_build < 5 )) || echo "demo: built in $((SECONDS - t_build)) s"
JOBQUEUE=$PWD/build/client/cli/jobqueue
jobqueue() { "$JOBQUEUE" "$@"; }

trap jq_cluster_stop EXIT
jq_cluster_start
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE DATABASE demo'
export PGDATABASE=demo
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION jobqueue'

if [[ $mode == sql ]]; then
    psql -X -v ON_ERROR_STOP=1 -f scripts/demo.sql
    exit 0
fi

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
work_dir=$(mktemp -d)

step "Push 200 e-mails and 100 image jobs from JSON-lines files (one transaction each)."
for i in $(seq 1 200); do printf '{"to": "user%d@example.com"}\n' "$i"; done > "$work_dir/emails.jsonl"
for i in $(seq 1 100); do printf '{"file": "photo%d.png"}\n' "$i"; done > "$work_dir/images.jsonl"
jobqueue push send_email --file "$work_dir/emails.jsonl" --queue email
jobqueue push resize_image --file "$work_dir/images.jsonl" --queue images

step "Push 3 reports due in an hour, and an invoice twice with one unique key: one job, the same id."
for i in 1 2 3; do jobqueue push send_report "{\"report\": $i}" --queue email --delay 1h > /dev/null; done
jobqueue push send_invoice '{"order": 1001}' --queue email --unique invoice:1001
jobqueue push send_invoice '{"order": 1001}' --queue email --unique invoice:1001

step "Push 3 images that the handler cannot process, each allowed a single try."
for i in 1 2 3; do jobqueue push resize_image "{\"file\": \"broken$i.gif\", \"broken\": true}" --queue images --tries 1 > /dev/null; done

step "The backlog before any worker runs:"
jobqueue status

step "Run a worker: 4 at a time, a shell handler gets each payload on stdin (see scripts/demo-handler.sh)."
# (the binary itself in the background, not the shell function, so $! is its pid)
"$JOBQUEUE" work --queues email,images --exec scripts/demo-handler.sh --concurrency 4 --quiet --grace 5s &
worker=$!
for _ in $(seq 1 300); do
    left=$(jobqueue status --json | python3 -c 'import json,sys; print(sum(q["pending"] + q["reserved"] for q in json.load(sys.stdin)))')
    [[ $left == 0 ]] && break
    sleep 0.2
done
kill -TERM "$worker"
wait "$worker"

step "The backlog after: only the delayed reports remain."
jobqueue status

step "The dead letters, newest first:"
jobqueue failed

step "Show one in full, then retry it: it is back in its queue, under its original id."
failed_id=$(jobqueue failed --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
jobqueue show "$failed_id"
jobqueue retry "$failed_id" --tries 1
jobqueue status

rm -rf "$work_dir"
step "Done. Next: bash scripts/demo.sh --sql for the same queue in plain SQL."
