#!/usr/bin/env bash
# The cost of the pooler-safe client: named prepared statements (direct
# connections, session pooling) against unnamed statements (what the client
# sends through a transaction-pooling pooler), on one throwaway cluster.
#
#   bash bench/statements.sh [--quick]
#
# Builds the extension (make install) and bench/statements.cpp (CMake,
# target jq_statements), starts a cluster with the settings of bench/run.sh,
# runs jq_statements (31 rounds of 300 calls per operation and way; --quick:
# 11 rounds of 100), then pgbench -M prepared against -M extended on the push
# script (as many rounds of 1 s), and prints the median, min and
# max microseconds per call and the ratios unnamed/named. Kept in
# bench/results/<time>-statements/.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

CALLS=300
ROUNDS=31
for arg in "$@"; do
    case $arg in
        --quick) CALLS=100; ROUNDS=11 ;;
        -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "statements.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

OUT=$BENCH/results/$(date +%Y%m%d-%H%M%S)-statements
mkdir -p "$OUT"

export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" > "$OUT/make.log" 2>&1 \
    && make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >> "$OUT/make.log" 2>&1 \
    || { cat "$OUT/make.log" >&2; exit 1; }
{ cmake -S "$BENCH" -B "$BENCH/build" -DCMAKE_BUILD_TYPE=Release \
    && cmake --build "$BENCH/build" --target jq_statements -j 2; } > "$OUT/cmake.log" 2>&1 \
    || { tail -40 "$OUT/cmake.log" >&2; exit 1; }

# the server settings of bench/run.sh (see bench/README.md)
BENCH_PGCONF=$(sed -n '/^BENCH_PGCONF="/,/"$/p' "$BENCH/run.sh" | sed '1s/^BENCH_PGCONF="//; $s/"$//')
# shellcheck source=../scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
trap jq_cluster_stop EXIT
JQ_PGPORT=${JQ_PGPORT:-55561} JQ_PRELOAD=jobqueue JQ_PGCONF=$BENCH_PGCONF jq_cluster_start > "$OUT/cluster.log"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION jobqueue'

# The same comparison without the client library: pgbench's -M prepared
# (named) against -M extended (unnamed, as PQexecParams), one client, the
# push script of bench/run.sh; rounds alternate the order like jq_statements.
pgbench_latency() {
    pgbench -n -M "$1" -c 1 -j 1 -T "$PGB_SECS" -f "$BENCH/scripts/push.sql" 2>&1 | tee -a "$OUT/pgbench.log" \
        | sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
PGB_SECS=1
{
    echo "load_start=$(cut -d' ' -f1 /proc/loadavg) nproc=$(nproc)"
    "$BENCH/build/jq_statements" --calls "$CALLS" --rounds "$ROUNDS" 2> "$OUT/statements.err"
    named=() unnamed=()
    for ((r = 0; r < ROUNDS; r++)); do
        if (( r % 2 == 0 )); then
            named+=("$(pgbench_latency prepared)"); unnamed+=("$(pgbench_latency extended)")
        else
            unnamed+=("$(pgbench_latency extended)"); named+=("$(pgbench_latency prepared)")
        fi
        psql -X -q -c "SELECT queue_clear('default')" > /dev/null
    done
    python3 "$BENCH/statements_ratio.py" "${named[*]}" "${unnamed[*]}"
    echo "load_end=$(cut -d' ' -f1 /proc/loadavg)"
} | tee "$OUT/statements.txt"
