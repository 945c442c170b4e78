#!/usr/bin/env bash
# The jobqueue benchmark: one command, its own throwaway cluster.
#
#   bash bench/run.sh [--quick] [--only=NAME[,NAME...]]
#   bash bench/run.sh --soak [--soak-compare]
#
# Installs what it needs (PgQ from apt, the extension via make install, the
# C++ programs via CMake), starts a PostgreSQL 15 cluster with the fixed
# settings below, runs every scenario against jobqueue and the references
# (floor, plain-sql, pgmq-shaped, PgQ; pg-boss through Node), stops the
# cluster, and prints a markdown table: each figure, its ratio to the
# reference measured in the same run, and the goal met/missed.  Raw
# pgbench logs, EXPLAIN probes and the table are kept in
# bench/results/<time>/.  See bench/README.md.
#
#   --quick   one run per figure of 1 s instead of the median of 3 runs of
#             3 s; backlogs of 30,000 instead of 100,000 for the drains,
#             200,000 ready jobs instead of 1,000,000 for the deep case,
#             30,000 jobs per churn round instead of 200,000, steady loads
#             of 20 s instead of 60 s, an idle window of 20 s instead of 60 s,
#             waiting workers for 40 s instead of 120 s (about 4 minutes on
#             an idle machine).
#   --only=NAME[,NAME...]
#             run only these scenarios: push drain1 drain1s drainb depth churn held
#             latency cold_plan steady worker dashboard flow idle waiting peers
#             (the report's rows of the others, and the ratios that need them,
#             are n/a).  peers: pg-boss and jobqueue through node-postgres
#             (bench/peers/pgboss.mjs; npm ci installs pg-boss when missing).
#   --soak    instead of the scenarios: a steady load of SOAK_SECS (default
#             600) while a REPEATABLE READ transaction stays open that has
#             read SOAK_HELD: other (default: another table) or queue_jobs.
#   --soak-compare
#             --soak, then the same again with claim positions off.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

MODE=full
SCENARIOS="push drain1 drain1s drainb depth churn held latency cold_plan steady worker dashboard flow idle waiting peers"
ONLY=
SOAK=0          # 1: --soak, 2: --soak-compare
for arg in "$@"; do
    case $arg in
        --quick) MODE=quick ;;
        --only=*) ONLY=${arg#--only=} ;;
        --soak) (( SOAK )) || SOAK=1 ;;
        --soak-compare) SOAK=2 ;;
        -h|--help) sed -n '2,34s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done
for name in ${ONLY//,/ }; do
    [[ " $SCENARIOS " == *" $name "* ]] || { echo "run.sh: unknown scenario: $name (one of: $SCENARIOS)" >&2; exit 2; }
done
if (( SOAK )); then
    [[ -z $ONLY && $MODE == full ]] || { echo "run.sh: --soak runs alone (no --quick, no --only)" >&2; exit 2; }
    MODE=soak
    ONLY=soak
fi
# want NAME: is scenario NAME to be run (all of them unless --only names
# some; the soak only with --soak)
want() {
    if [[ $1 == soak ]]; then (( SOAK )); return; fi
    [[ -z $ONLY || ",$ONLY," == *",$1,"* ]]
}

# The pieces: parameters, helpers and the scenarios (each a function
# scenario_NAME, run below in the order of SCENARIOS).
# shellcheck source=lib/params.sh
source "$BENCH/lib/params.sh"
# shellcheck source=lib/measure.sh
source "$BENCH/lib/measure.sh"
# shellcheck source=lib/sessions.sh
source "$BENCH/lib/sessions.sh"
# shellcheck source=lib/scenarios_push_drain.sh
source "$BENCH/lib/scenarios_push_drain.sh"
# shellcheck source=lib/scenarios_storage.sh
source "$BENCH/lib/scenarios_storage.sh"
# shellcheck source=lib/scenarios_latency.sh
source "$BENCH/lib/scenarios_latency.sh"
# shellcheck source=lib/scenario_dashboard.sh
source "$BENCH/lib/scenario_dashboard.sh"
# shellcheck source=lib/scenario_flow.sh
source "$BENCH/lib/scenario_flow.sh"
# shellcheck source=lib/scenario_peers.sh
source "$BENCH/lib/scenario_peers.sh"

# Server settings: the same for every system measured (see bench/README.md, "Settings, and why").
BENCH_PGCONF="shared_buffers = 512MB
max_connections = 50
fsync = on
synchronous_commit = off
wal_buffers = 16MB
max_wal_size = 4GB
checkpoint_timeout = 30min
jit = off
autovacuum = on"
# The background ticker (the library is preloaded for every system): it
# calls queue_tick() every second in the database a scenario runs in
# (ticker_follow), as on a production server with jobqueue.tick_database
# set; from extension version 1.3 each tick also rotates the storage ring.
BENCH_TICKER_CONF="jobqueue.tick_database = 'bench'
jobqueue.tick_interval = 1s"

STAMP=$(date +%Y%m%d-%H%M%S)
OUT=$BENCH/results/$STAMP-$MODE
mkdir -p "$OUT/pgbench"
RAW=$OUT/raw.tsv
: > "$RAW"
T_START=$(date +%s)

log() { printf '[%4ds] %s\n' $(( $(date +%s) - T_START )) "$*" >&2; }
# mark NAME: the time since the previous mark goes to raw.tsv as time.<previous>
PHASE=setup
PHASE_T0=$T_START
mark() {
    local now
    now=$(date +%s)
    rec "time.$PHASE" $(( now - PHASE_T0 ))
    PHASE=$1
    PHASE_T0=$now
}

# ------------------------------------------------------------- install
# What to install: the "bench" list of scripts/packages.txt (nothing when all
# is there). install-deps.sh points PG_CONFIG at JQ_PGBIN; one given keeps.
bench_pg_config=${PG_CONFIG:-}
# shellcheck source=../scripts/install-deps.sh
source "$ROOT/scripts/install-deps.sh"
[[ -n $bench_pg_config ]] && PG_CONFIG=$bench_pg_config
jq_install_purpose bench >&2
export PG_CONFIG
log "building and installing the extension (make install)"
make -C "$ROOT" -s PG_CONFIG="$PG_CONFIG" >"$OUT/make.log" 2>&1 \
    && make -C "$ROOT" -s install PG_CONFIG="$PG_CONFIG" >>"$OUT/make.log" 2>&1 \
    || { cat "$OUT/make.log" >&2; exit 1; }

log "building bench/latency.cpp, steady.cpp, worker_drain.cpp (CMake, against jobqueue::client)"
{ cmake -S "$BENCH" -B "$BENCH/build" -DCMAKE_BUILD_TYPE=Release \
    && cmake --build "$BENCH/build" --target jq_latency jq_steady jq_worker_drain -j "$(nproc)"; } >"$OUT/cmake.log" 2>&1 \
    || { tail -40 "$OUT/cmake.log" >&2; exit 1; }
LATENCY_BIN=$BENCH/build/jq_latency
STEADY_BIN=$BENCH/build/jq_steady
WORKER_DRAIN_BIN=$BENCH/build/jq_worker_drain

# ------------------------------------------------------------- cluster
HOLDER_PID=    # the psql holding a snapshot open (held snapshot, soak)
DASH_PIDS=()   # the dashboards (scenario dashboard)
POLL_PID=      #   and the probe polling one
WATCH_PID=     # the queue watcher's psql (churn, held snapshot, soak)
WATCH_STOP=    #   the file that ends its loop
cleanup() {
    local rc=$?
    if [[ -n $HOLDER_PID ]]; then kill "$HOLDER_PID" 2>/dev/null || true; fi
    if [[ -n $WATCH_PID ]]; then touch "$WATCH_STOP"; kill "$WATCH_PID" 2>/dev/null || true; fi
    if [[ -n $POLL_PID ]]; then kill "$POLL_PID" 2>/dev/null || true; fi
    local pid
    for pid in "${DASH_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    jq_cluster_stop
    exit $rc
}
# shellcheck source=../scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM
# preloaded for every system alike: queue_reserve's shared-memory wake-ups
JQ_PGPORT=${JQ_PGPORT:-55551} JQ_PRELOAD=jobqueue JQ_PGCONF="$BENCH_PGCONF
$BENCH_TICKER_CONF" jq_cluster_start >"$OUT/cluster.log"
set -euo pipefail   # cluster.sh sets these too; keep them explicit
export PGDATABASE=bench
createdb bench
psql -X -q -v ON_ERROR_STOP=1 -f "$BENCH/sql/setup.sql" >"$OUT/setup.log"


q "SELECT 'extension jobqueue ' || extversion FROM pg_extension WHERE extname = 'jobqueue'
   UNION ALL SELECT 'extension pgq ' || extversion FROM pg_extension WHERE extname = 'pgq'
   UNION ALL SELECT version()" > "$OUT/versions.txt"
rec meta.mode "$MODE"
rec meta.secs "$SECS"
rec meta.reps "$REPS"
rec meta.deep_ready "$DEEP_READY"
rec meta.churn_jobs "$CHURN_JOBS"
rec meta.churn_rounds "$CHURN_ROUNDS"
rec meta.batch_calls "$BATCH_CALLS"
rec meta.backlog "$BACKLOG"
rec meta.steady_secs "$STEADY_SECS"
rec meta.steady_rate "$STEADY_RATE"
rec meta.cold_backlog "$COLD_BACKLOG"
rec meta.held_one_claims "$HELD_ONE_CLAIMS"
rec meta.dash_sizes "$DASH_SMALL $DASH_BIG"
rec meta.dash_calls "$DASH_CALLS"
rec meta.dash_rounds "$DASH_ROUNDS"
rec meta.dash_drain_secs "$DASH_DRAIN_SECS"
if (( SOAK )); then
    rec meta.soak_secs "$SOAK_SECS"
    rec meta.soak_window "$SOAK_WINDOW"
    rec meta.soak_held "$SOAK_HELD"
    rec meta.soak_report_secs "$SOAK_REPORT_SECS"
fi
rec meta.flow "blocked=$FLOW_BLOCKED busy_keys=$FLOW_BUSY_KEYS parents=$FLOW_PARENTS free=$FLOW_FREE claims=$FLOW_CLAIMS drain_keys=$FLOW_DRAIN_KEYS rounds=$FLOW_ROUNDS"
rec meta.idle_secs "$IDLE_SECS"
rec meta.waiting "secs=$WAITING_SECS workers=$WAITING_WORKERS rate=$WAITING_RATE producers=$WAITING_PRODUCERS ref_at=$WAITING_REF_AT"
rec meta.only "$ONLY"
rec meta.jobqueue "$(q "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")"
# the ring's period (from 1.3; empty before) and the ticker's interval
rec meta.ring_period "$(q "SELECT current_setting('jobqueue.ring_period', true)")"
rec meta.tick_interval "$(q "SELECT current_setting('jobqueue.tick_interval')")"
rec meta.load_start "$(cut -d' ' -f1 /proc/loadavg)"
rec meta.nproc "$(nproc)"

# 100 jobs as the JSON a client sends to queue_push_many; the floor's
# batched INSERT takes the same text and inserts its 100 elements.
JOBS100=$(printf '{"name":"job","payload":{"n":1}},%.0s' $(seq 1 100))
JOBS100="[${JOBS100%,}]"
# The same 100 payloads as the jsonb[] a client sends to the pgmq-shaped
# send_batch (an array literal sent as a parameter).
MSGS100=$(printf '"{\\"n\\": 1}",%.0s' $(seq 1 100))
MSGS100="{${MSGS100%,}}"

# The ticker was started with the cluster, before the database existed: it
# connects within its restart time.
ticker_follow bench
mkdir -p "$OUT/watch"

# Warm-up: WAL segments created, catalogs cached, before anything is timed.
log "warm-up"
qq -c "SELECT bench_fill_queue(20000)" -c "SELECT bench_fill_plain(20000)" -c "SELECT bench_fill_floor(20000)" \
   -c "SELECT bench_fill_pgmqref(20000)"
pgbench -n -M prepared -c 2 -j 2 -T 1 -f "$BENCH/scripts/drain_one.sql" >/dev/null 2>&1 || true
qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs, pgmqref.q_bench"
settle

# The scenarios (bench/lib/scenario*.sh), in order; --only and --soak choose.
for scenario in $SCENARIOS soak; do
    if want "$scenario"; then
        mark "$scenario"
        "scenario_$scenario"
    fi
done

mark end
rec meta.load_end "$(cut -d' ' -f1 /proc/loadavg)"
rec meta.total_secs "$(( $(date +%s) - T_START ))"
printf '%s\n' "$BENCH_PGCONF" "$BENCH_TICKER_CONF" > "$OUT/postgresql.conf.bench"

jq_cluster_stop
trap - EXIT
log "done in $(( $(date +%s) - T_START )) s; results in ${OUT#"$ROOT"/}"
python3 "$BENCH/report.py" "$RAW" "$OUT/versions.txt" | tee "$OUT/results.md"
