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
# the processed transactions.  Also the server's CPU time per job (the
# postmaster's and its processes' user + system time over the run, as
# /proc counts it, exited backends included): on a shared machine it
# varies less than the rates.  Prints per build the median and min-max of
# the jobs/s and of the CPU microseconds per job, and new/old: the ratio of
# the medians and the per-round ratios.  Kept in bench/results/<time>-ab/.  Give it a quiet machine: the
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
server_cpu() {   # clock ticks of CPU the server used so far: the postmaster, its
    # processes, and (in its cutime/cstime) those it has reaped; a process
    # that exits while it is read is left out (its time is in the postmaster's)
    local pm stats
    pm=$(head -n 1 "$JQ_PGDATA/postmaster.pid")
    stats=$(cat "/proc/$pm/stat"
            for p in $(pgrep -P "$pm"); do cat "/proc/$p/stat" 2>/dev/null || true; done)
    awk 'NR == 1 { s += $16 + $17 } { s += $14 + $15 } END { print s }' <<< "$stats"
}
measure() {   # push|drain pgbench-ARGS...: "jobs/s cpu-us/job" of one pgbench run
    # push: a job per transaction; drain: jobs removed, per second of its processed
    # transactions
    local kind=$1 before after log cpu0 cpu1
    shift
    before=$(q -c "SELECT count(*) FROM queue_jobs")
    cpu0=$(server_cpu)
    log=$(pgbench -n -M prepared "$@" 2>&1 | tee -a "$OUT/pgbench.log")
    cpu1=$(server_cpu)
    after=$(q -c "SELECT count(*) FROM queue_jobs")
    awk -v kind="$kind" -v b="$before" -v a="$after" -v ticks=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" \
        -v n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$log")" \
        -v t="$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$log")" \
        'BEGIN { jobs = kind == "push" ? n : b - a
                 printf "%.1f %.2f\n", jobs / (n / t), ticks / hz * 1e6 / jobs }'
}

results=$OUT/rounds.txt
: > "$results"
for round in $(seq 1 "$ROUNDS"); do
    order="old new"
    if (( round % 2 == 0 )); then order="new old"; fi
    for side in $order; do
        version=$(use "$side")
        measure push -c 2 -j 2 -T 1 -f "$BENCH/scripts/push.sql" >/dev/null   # warm-up
        q -c "TRUNCATE queue_jobs" -c "CHECKPOINT" >/dev/null
        read -r push push_cpu < <(measure push -c 8 -j 8 -T "$SECS" -f "$BENCH/scripts/push.sql")
        fill 6
        read -r drain1 drain1_cpu < <(measure drain -c 8 -j 8 -T "$SECS" -f "$BENCH/scripts/drain_one.sql")
        fill 10
        read -r drainb drainb_cpu < <(measure drain -c 8 -j 8 -t 100 -f "$BENCH/scripts/drain_batch.sql")
        echo "$round $side $version push=$push drain1=$drain1 drainb=$drainb" \
             "push_cpu=$push_cpu drain1_cpu=$drain1_cpu drainb_cpu=$drainb_cpu" | tee -a "$results"
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
for key in ("push", "drain1", "drainb", "push_cpu", "drain1_cpu", "drainb_cpu"):
    old, new = vals[("old", key)], vals[("new", key)]
    ratios = [n / o for o, n in zip(old, new)]
    unit, digits = ("server CPU us/job", 1) if key.endswith("_cpu") else ("jobs/s", 0)
    print(f"{key} ({unit}): old median {statistics.median(old):,.{digits}f} "
          f"({min(old):,.{digits}f}-{max(old):,.{digits}f}), "
          f"new median {statistics.median(new):,.{digits}f} ({min(new):,.{digits}f}-{max(new):,.{digits}f}); "
          f"new/old {statistics.median(new) / statistics.median(old):.3f}, "
          f"per round {', '.join(f'{r:.2f}' for r in ratios)}")
PY
