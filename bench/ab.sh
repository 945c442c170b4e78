#!/usr/bin/env bash
# A/B of two builds of the extension on ONE cluster: push, one-job drain and
# batched drain, the builds alternating round by round.
#
#   bash bench/ab.sh OLD_REV [NEW_REV]
#
# OLD_REV, NEW_REV: git revisions of this repository (NEW_REV default: the
# working tree as it is).  Each is exported (git archive) and built once;
# then one cluster with bench/run.sh's settings (library preloaded, the
# background ticker every second in the database; AB_TICKER=0: none) and
# AB_ROUNDS rounds (default 3), each: for old, then new (the order
# alternates every round): make install, restart, a fresh CREATE EXTENSION
# (NOTIFY off), then
#   push    pgbench, 8 clients, scripts/push.sql, AB_SECS s (default 5)
#   drain1  8 workers, scripts/drain_one.sql, AB_SECS s, from 60,000 jobs
#   drainb  8 workers, scripts/drain_batch.sql, 800 calls of 100, from
#           100,000 jobs (as bench/run.sh's scenario 3)
# A drain's jobs/s = jobs removed (count before - after) / pgbench's time of
# the processed transactions.  Prints per build the median and min-max of
# the jobs/s, and new/old: the ratio of the medians and the per-round
# ratios.  Kept in bench/results/<time>-ab/.  Give it a quiet machine: the
# two builds are compared minutes apart.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
OLD_REV=${1:?usage: bench/ab.sh OLD_REV [NEW_REV]}
NEW_REV=${2:-}
ROUNDS=${AB_ROUNDS:-3}
SECS=${AB_SECS:-5}
TICKER=${AB_TICKER:-1}

OUT=$BENCH/results/$(date +%Y%m%d-%H%M%S)-ab
mkdir -p "$OUT"
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

# build NAME REV: the extension of REV (empty: the working tree) built in
# OUT/NAME (a copy), or in the working tree itself
declare -A TREE
build() {
    local name=$1 rev=$2 dir
    if [[ -z $rev ]]; then
        dir=$ROOT
    else
        dir=$OUT/$name
        mkdir -p "$dir"
        git -C "$ROOT" archive "$rev" | tar -x -C "$dir"
    fi
    make -C "$dir" -s PG_CONFIG="$PG_CONFIG" >"$OUT/make-$name.log" 2>&1 \
        || { cat "$OUT/make-$name.log" >&2; exit 1; }
    TREE[$name]=$dir
}
build old "$OLD_REV"
build new "$NEW_REV"
echo "old: ${OLD_REV} ($(git -C "$ROOT" rev-parse --short "$OLD_REV")); new: ${NEW_REV:-working tree}" | tee "$OUT/ab.txt"

BENCH_PGCONF=$(sed -n '/^BENCH_PGCONF="/,/"$/p' "$BENCH/run.sh" | sed '1s/^BENCH_PGCONF="//; $s/"$//')
# shellcheck source=../scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
trap jq_cluster_stop EXIT
TICKER_CONF=
if [[ $TICKER == 1 ]]; then TICKER_CONF="jobqueue.tick_database = 'postgres'
jobqueue.tick_interval = 1s"; fi
JQ_PGPORT=${JQ_PGPORT:-55571} JQ_PRELOAD=jobqueue JQ_PGCONF="$BENCH_PGCONF
$TICKER_CONF" jq_cluster_start >"$OUT/cluster.log"
echo "ticker: $([[ $TICKER == 1 ]] && echo 'every 1 s' || echo none); rounds $ROUNDS" | tee -a "$OUT/ab.txt"

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
use() {   # NAME: that build installed, the server restarted, a new extension
    make -C "${TREE[$1]}" -s install PG_CONFIG="$PG_CONFIG" >>"$OUT/make-$1.log" 2>&1
    jq_cluster_restart fast
    q -c "DROP EXTENSION IF EXISTS jobqueue" -c "CREATE EXTENSION jobqueue" \
      -c "SELECT queue_set_notify('default', false)" >/dev/null
    q -c "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"
}
fill() {   # N*10,000 jobs, then VACUUM ANALYZE and CHECKPOINT
    q -c "TRUNCATE queue_jobs" >/dev/null
    for _ in $(seq "$1"); do
        q -c "SELECT cardinality(queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'job'))
                                                 FROM generate_series(1, 10000))))" >/dev/null
    done
    q -c "VACUUM ANALYZE queue_jobs" -c "CHECKPOINT" >/dev/null
}
tps() {   # pgbench ARGS...: its tps (without connection time)
    pgbench -n -M prepared "$@" 2>&1 | tee -a "$OUT/pgbench.log" \
        | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p'
}
drained() {   # pgbench ARGS...: jobs removed per second of its processed transactions
    local before after log
    before=$(q -c "SELECT count(*) FROM queue_jobs")
    log=$(pgbench -n -M prepared "$@" 2>&1 | tee -a "$OUT/pgbench.log")
    after=$(q -c "SELECT count(*) FROM queue_jobs")
    awk -v b="$before" -v a="$after" \
        -v n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$log")" \
        -v t="$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$log")" \
        'BEGIN { printf "%.1f\n", (b - a) / (n / t) }'
}

results=$OUT/rounds.txt
: > "$results"
for round in $(seq 1 "$ROUNDS"); do
    order="old new"
    if (( round % 2 == 0 )); then order="new old"; fi
    for side in $order; do
        version=$(use "$side")
        tps -c 2 -j 2 -T 1 -f "$BENCH/scripts/push.sql" >/dev/null   # warm-up
        q -c "TRUNCATE queue_jobs" -c "CHECKPOINT" >/dev/null
        push=$(tps -c 8 -j 8 -T "$SECS" -f "$BENCH/scripts/push.sql")
        fill 6
        drain1=$(drained -c 8 -j 8 -T "$SECS" -f "$BENCH/scripts/drain_one.sql")
        fill 10
        drainb=$(drained -c 8 -j 8 -t 100 -f "$BENCH/scripts/drain_batch.sql")
        echo "$round $side $version push=$push drain1=$drain1 drainb=$drainb" | tee -a "$results"
    done
done

python3 - "$results" <<'PY' | tee -a "$OUT/ab.txt"
import collections
import statistics
import sys

vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rnd, side, version, *pairs = line.split()
    for pair in pairs:
        key, value = pair.split("=")
        vals[(side, key)].append(float(value))
for key in ("push", "drain1", "drainb"):
    old, new = vals[("old", key)], vals[("new", key)]
    ratios = [n / o for o, n in zip(old, new)]
    print(f"{key} (jobs/s): old median {statistics.median(old):,.0f} ({min(old):,.0f}-{max(old):,.0f}), "
          f"new median {statistics.median(new):,.0f} ({min(new):,.0f}-{max(new):,.0f}); "
          f"new/old {statistics.median(new) / statistics.median(old):.3f}, "
          f"per round {', '.join(f'{r:.2f}' for r in ratios)}")
PY
