#!/usr/bin/env bash
# The jobqueue benchmark: one command, its own throwaway cluster.
#
#   bash bench/run.sh [--quick] [--only=NAME[,NAME...]]
#   bash bench/run.sh --soak [--soak-compare]
#
# Installs what it needs (PgQ from apt, the extension via make install, the
# C++ programs via CMake), starts a PostgreSQL 15 cluster with the fixed
# settings below, runs every scenario against jobqueue and the references
# (floor, plain-sql, PgQ), stops the cluster, and prints a markdown table:
# each figure, its ratio to the reference measured in the same run, and the
# goal met/missed.  Raw pgbench logs, EXPLAIN probes and the table are kept
# in bench/results/<time>/.  See bench/README.md.
#
#   --quick   one run per figure of 1 s instead of the median of 3 runs of
#             3 s; backlogs of 30,000 instead of 100,000 for the drains,
#             200,000 ready jobs instead of 1,000,000 for the deep case,
#             30,000 jobs per churn round instead of 200,000, steady loads
#             of 20 s instead of 60 s, an idle window of 20 s instead of 60 s,
#             waiting workers for 40 s instead of 120 s (about 4 minutes on
#             an idle machine).
#   --only=NAME[,NAME...]
#             run only these scenarios: push drain1 drainb depth churn held
#             latency cold_plan steady worker dashboard flow idle waiting (the
#             report's rows of the others, and the ratios that need them, are n/a).
#   --soak    instead of the scenarios: a steady load of SOAK_SECS (default
#             600) while a REPEATABLE READ transaction stays open that has
#             read SOAK_HELD: other (default: another table) or queue_jobs.
#   --soak-compare
#             --soak, then the same again with claim positions off.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

MODE=full
SCENARIOS="push drain1 drainb depth churn held latency cold_plan steady worker dashboard flow idle waiting"
ONLY=
SOAK=0          # 1: --soak, 2: --soak-compare
for arg in "$@"; do
    case $arg in
        --quick) MODE=quick ;;
        --only=*) ONLY=${arg#--only=} ;;
        --soak) (( SOAK )) || SOAK=1 ;;
        --soak-compare) SOAK=2 ;;
        -h|--help) sed -n '2,31s/^# \{0,1\}//p' "$0"; exit 0 ;;
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

# ------------------------------------------------------------- parameters
if [[ $MODE == quick ]]; then
    SECS=1            # pgbench -T of each timed run
    REPS=1            # runs per figure (median of REPS)
    DEEP_READY=200000 # ready jobs of the deep backlog
    CHURN_JOBS=30000  # jobs per churn round
    BACKLOG=30000     # drain scenarios start from this many jobs
    BATCH_CALLS=200   # claim calls of 100 in a batched drain
    HELD_ONE_CLAIMS=4000 # held snapshot: claims of one job in a one-job drain
    STEADY_SECS=20    # length of each steady load
    WORKER_JOBS=10000 # jobs the worker runtime drains from the backlog
    COLD_CLAIMS=50    # claims timed per cold-plan case and session
    DASH_CALLS=10     # dashboard: timed calls per read, size and round
    DASH_DRAIN_SECS=2 # dashboard: each drain, with and without a poller
    IDLE_SECS=20      # idle: the window measured (each: the queue's, the reference's)
    WAITING_SECS=40   # waiting: the load's length
else
    SECS=3
    REPS=3
    DEEP_READY=1000000
    CHURN_JOBS=200000
    BACKLOG=100000
    BATCH_CALLS=800
    HELD_ONE_CLAIMS=8000
    STEADY_SECS=60
    WORKER_JOBS=80000
    COLD_CLAIMS=200
    DASH_CALLS=30
    DASH_DRAIN_SECS=3
    IDLE_SECS=60
    WAITING_SECS=120
fi
CHURN_ROUNDS=10       # churn: rounds back to back (sizes after 1, 2 and 10 compared)
SHALLOW=10000         # depth: the shallow backlog
DEEP_DELAYED=100000   # depth: delayed jobs, higher priority than the ready ones
DEEP_HELD=10000       # depth: held (claimed, 1 h lease) jobs at the head
SHALLOW_CLAIMS=1000   # depth: claims per run at the shallow backlog (-t)
FLOW_CLAIMS=2000      # flow: claims of free jobs per run (-t)
LAT_JOBS=1000
LAT_RATE=500
LAT_POLL_MS=100
STEADY_RATE=1500      # steady load: jobs per second offered, in all
STEADY_PRODUCERS=4    #   producers sharing that rate, one job per transaction
STEADY_WORKERS=4      #   SQL workers (or worker runtime threads)
STEADY_WINDOW=10      #   claim latency compared between the first and last 10 s
COLD_BACKLOG=50000    # cold plan: claims timed at this backlog
DASH_SMALL=10000      # dashboard: jobs in queue_jobs, small and big
DASH_BIG=${DASH_BIG:-1000000}
DASH_ROUNDS=${DASH_ROUNDS:-3}   # dashboard: rounds of each comparison (in --quick too: a ratio needs them)
DASH_PORT=${DASH_PORT:-7071}   # dashboard: the first of the three ports its dashboards listen on
JQ_DASHBOARD_BIN=${JQ_DASHBOARD_BIN:-}   # the jobqueue tool (with "dashboard"); empty: SQL only
FLOW_BLOCKED=${FLOW_BLOCKED:-1000000}   # flow: jobs held back (in --quick too: the goal names this many)
FLOW_BUSY_KEYS=1000   # flow: busy keys, half the held-back jobs waiting behind them
FLOW_PARENTS=10000    # flow: held parents, the other half waiting for them
FLOW_FREE=10000       # flow: free jobs (a key each) at the start of each round
FLOW_DRAIN_KEYS=1000  # flow: keys of the drain's backlog (limit 1 each)
FLOW_ROUNDS=${FLOW_ROUNDS:-3}   # flow: rounds of each comparison (in --quick too: a ratio needs them)
WAITING_WORKERS=32    # waiting: sessions in queue_reserve(wait => '1 second')
WAITING_RATE=800      #   jobs/s offered, one per transaction,
WAITING_PRODUCERS=4   #   by this many paced producers (sessions), sharing that rate
WAITING_REF_AT=20     #   the size at the end compared with the size this many s into the load
SOAK_SECS=${SOAK_SECS:-600}   # --soak: length of each steady load
if ! [[ $SOAK_SECS =~ ^[0-9]+$ ]] || (( SOAK_SECS < 2 )); then echo "run.sh: SOAK_SECS must be a whole number >= 2" >&2; exit 2; fi
# claim latency compared between the first and last minute (half the run
# when it is shorter than two minutes)
SOAK_WINDOW=$(( SOAK_SECS >= 120 ? 60 : (SOAK_SECS + 1) / 2 ))
SOAK_HELD=${SOAK_HELD:-other}   # --soak: what the held transaction has read
case $SOAK_HELD in
    other) SOAK_HELD_TABLE=bench_other ;;
    queue_jobs) SOAK_HELD_TABLE=queue_jobs ;;
    *) echo "run.sh: SOAK_HELD must be other or queue_jobs" >&2; exit 2 ;;
esac
SOAK_REPORT_SECS=30   # --soak: queue_jobs' size and dead rows reported this often

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

q() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
qq() { psql -X -q -At -v ON_ERROR_STOP=1 "$@" >/dev/null; }
rec() { printf '%s\t%s\n' "$1" "$2" >> "$RAW"; }
# calc EXPR: floating-point arithmetic (awk; python3 starts too slowly here)
calc() { awk "function max_0(x) { return x > 0 ? x : 0 } BEGIN { printf \"%.6f\n\", ($1) }"; }

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

# pgb NAME CLIENTS PGBENCH_ARGS...: run pgbench (prepared statements, one
# thread per client), keep its log, set PGB_TPS PGB_LAT (ms) PGB_N and
# PGB_SECS (time of the processed transactions, without connection time).
pgb() {
    local name=$1 clients=$2
    shift 2
    local logf=$OUT/pgbench/$name.log
    if ! pgbench -n -M prepared -c "$clients" -j "$clients" "$@" >"$logf" 2>&1; then
        echo "pgbench failed ($name):" >&2
        tail -20 "$logf" >&2
        return 1
    fi
    PGB_TPS=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$logf")
    PGB_LAT=$(sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p' "$logf")
    PGB_N=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$logf")
    PGB_SECS=$(calc "$PGB_TPS > 0 ? $PGB_N / $PGB_TPS : 0")
}

# Same starting point for every timed run: the tables' garbage vacuumed,
# statistics fresh, and (full run) dirty pages written so that no checkpoint
# falls inside a timed run.  --quick skips the CHECKPOINT: its WAL stays far
# below max_wal_size, so no checkpoint runs at all.
settle() {
    qq -c "VACUUM ANALYZE queue_jobs, floor_jobs, plain_jobs"
    if [[ $MODE == full ]]; then qq -c "CHECKPOINT"; fi
}

count() { q "SELECT count(*) FROM $1"; }

# figure COLUMN: one of queue_jobs' figures now, summed over its partitions
# (bench_table_figures in sql/setup.sql: total_bytes, heap_bytes,
# index_bytes (the claim index), n_dead_tup, n_live_tup, autovacuums, ...)
figure() { q "SELECT $1 FROM bench_table_figures('queue_jobs', 'queue_jobs_claim_idx')"; }

# not_removable VACUUM_VERBOSE_OUTPUT: the dead rows VACUUM could not remove,
# summed over the partitions (and TOAST tables) it reports on
not_removable() {
    awk '{ for (i = 2; i <= NF; i++) if ($i == "are" && $(i + 1) == "dead" && $(i - 1) ~ /^[0-9]+$/) { n += $(i - 1); seen = 1 } }
         END { if (seen) print n }' "$1"
}

# ticker_follow DB: the background ticker ticks DB from now on.  It reads
# jobqueue.tick_database when it starts: so the setting is changed (ALTER
# SYSTEM, reload), the ticker connected elsewhere ends, and the postmaster
# starts it again (after the extension's restart time of 10 s) in DB.
# Waits until it is connected there (at most 30 s).
ticker_connected() {
    [[ $(q "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue ticker' AND datname = '$1'") == 1 ]]
}
ticker_follow() {
    local db=$1 _
    if ticker_connected "$db"; then return 0; fi
    qq -c "ALTER SYSTEM SET jobqueue.tick_database = '$db'" -c "SELECT pg_reload_conf()"
    qq -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE backend_type = 'jobqueue ticker' AND datname IS DISTINCT FROM '$db'"
    for _ in $(seq 1 300); do
        if ticker_connected "$db"; then return 0; fi
        sleep 0.1
    done
    echo "run.sh: the background ticker did not connect to $db" >&2
    return 1
}

# watch_start CSV [SCAN_EVERY]: from now until watch_stop, a row a second
# (sql/setup.sql's bench_queue_sample(): the time, queue_jobs' sizes, dead
# and live rows summed over its partitions, each partition's relfilenode,
# whether the ticker is connected; every SCAN_EVERY-th row, from the first,
# also the dead rows pgstattuple finds, in all and per partition; how many
# partitions a VACUUM is processing) appended to CSV by one psql session
# in PGDATABASE, in autocommit: it holds no snapshot, and a lock only for
# the moment of a size (or a scan).  The bench truncates nothing while a
# watcher runs, so a partition's new relfilenode is a rotation's TRUNCATE
# (queue_watch.py counts them).
WATCH_FIELDS=epoch,total_bytes,heap_bytes,claim_idx_bytes,n_dead_tup,n_live_tup,autovacuums,filenodes,ticker,scanned_dead,vacuuming,scanned_dead_by_leaf
watch_start() {
    local every=${2:-0}
    WATCH_STOP=$1.stop
    rm -f "$WATCH_STOP"
    echo "$WATCH_FIELDS" > "$1"
    { local i=0
      while [[ ! -e $WATCH_STOP ]]; do
          echo "SELECT bench_queue_sample($(( every > 0 && i % every == 0 ))::boolean);"
          i=$(( i + 1 ))
          sleep 1
      done; } | psql -X -At -q >> "$1" 2>"$1.err" &
    WATCH_PID=$!
}
watch_stop() {
    touch "$WATCH_STOP"
    wait "$WATCH_PID" 2>/dev/null || true
    rm -f "$WATCH_STOP"
    WATCH_PID=
}
# watch truncations CSV [FROM TO] | peak CSV FIELD [FROM TO] | ticked CSV
# [FROM TO] | vacuuming CSV [FROM TO]: queue_watch.py's figures of a
# watcher's CSV
watch() { python3 "$BENCH/queue_watch.py" "$@"; }

# rec_kv PREFIX LINE: each key=value of a C++ program's summary line as its
# own raw.tsv record PREFIX.key
rec_kv() {
    local kv
    for kv in $2; do rec "$1.${kv%%=*}" "${kv#*=}"; done
}

# fresh_db NAME: a new database with setup.sql's objects: the extension's
# tables empty and never analysed, as a new installation has them.
fresh_db() {
    PGOPTIONS='-c client_min_messages=warning' dropdb --if-exists "$1"
    createdb "$1"
    PGDATABASE=$1 psql -X -q -v ON_ERROR_STOP=1 -f "$BENCH/sql/setup.sql" >"$OUT/setup-$1.log"
}

# The plans of one claim as the workers run it: six claims in a rolled-back
# transaction, the sixth under auto_explain (by then the statements inside
# queue_reserve run on the plans a long-lived worker uses); kept in
# explain-TAG.txt.
explain_claim() {
    local tag=$1 max_jobs=${2:-1}
    psql -X -q -v ON_ERROR_STOP=1 >"$OUT/explain-$tag.txt" 2>&1 <<EOF || true
LOAD 'auto_explain';
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_level = notice;
SET client_min_messages = notice;
BEGIN;
SET LOCAL auto_explain.log_min_duration = -1;
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
SET LOCAL auto_explain.log_min_duration = 0;
SELECT count(*) FROM queue_reserve('{default}', NULL, 'probe', $max_jobs);
ROLLBACK;
EOF
    # report.py sums each probe up in one line (scan types, time, buffers)
}

# n jobs through queue_push_many; large fills in two sessions at once (one
# per CPU), each in calls of 10,000.
fill_queue() {   # n [priority] [delay]
    local n=$1 half
    if (( n < 20000 )); then
        qq -c "SELECT bench_fill_queue($n, ${2:-0}, '${3:-0}')"
        return
    fi
    half=$(( n / 2 ))
    qq -c "SELECT bench_fill_queue($half, ${2:-0}, '${3:-0}')" &
    local pid=$!
    qq -c "SELECT bench_fill_queue($(( n - half )), ${2:-0}, '${3:-0}')"
    wait "$pid"
}

# drain_prepare SYSTEM: a fresh backlog of BACKLOG jobs in that system's table
drain_prepare() {   # system
    qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs"
    case $1 in
        ours) fill_queue "$BACKLOG" ;;
        floor) qq -c "SELECT bench_fill_floor($BACKLOG)" \
                  -c "SELECT setval('floor_claim_seq', (SELECT min(id) FROM floor_jobs), false)" ;;
        plain) qq -c "SELECT bench_fill_plain($BACKLOG)" ;;
    esac
    settle
}
table_of() { case $1 in ours) echo queue_jobs ;; floor) echo floor_jobs ;; plain) echo plain_jobs ;; esac; }
script_of() { case $1 in ours) echo drain_one.sql ;; floor) echo floor_drain.sql ;; plain) echo plain_drain.sql ;; esac; }

# holder_start TABLE: another session (in PGDATABASE) opens a REPEATABLE
# READ transaction, reads TABLE, and stays in it until holder_stop: its
# snapshot keeps VACUUM from removing any row deleted since, in every table
# of the database, whatever table it read.
holder_start() {
    psql -X -q -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<SQL &
SET application_name = 'bench_holder';
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM $1;
SELECT pg_sleep(86400);
COMMIT;
SQL
    HOLDER_PID=$!
    local _
    for _ in $(seq 1 100); do
        [[ $(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_holder'
                 AND backend_xmin IS NOT NULL AND query LIKE '%pg_sleep%'") == 1 ]] && return 0
        sleep 0.1
    done
    echo "run.sh: the snapshot holder did not start" >&2
    return 1
}
holder_stop() {
    qq -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_holder'"
    wait "$HOLDER_PID" 2>/dev/null || true
    HOLDER_PID=
}

# steady_load TAG SECS WINDOW JQ_STEADY_ARGS...: jq_steady's steady load
# (STEADY_PRODUCERS producers at STEADY_RATE jobs/s in all, STEADY_WORKERS
# workers) for SECS s in PGDATABASE, claim latency of the first and last
# WINDOW s; its summary line in TAG.txt (and STEADY_LINE), the per-second
# series in TAG.csv, its stderr in TAG.err.
steady_load() {
    local tag=$1 secs=$2 window=$3 rc
    shift 3
    set +e
    STEADY_LINE=$(timeout $(( secs + 60 )) "$STEADY_BIN" --producers "$STEADY_PRODUCERS" \
        --rate "$STEADY_RATE" --workers "$STEADY_WORKERS" --secs "$secs" --window "$window" \
        --series "$OUT/$tag.csv" "$@" 2>"$OUT/$tag.err")
    rc=$?
    set -e
    echo "$STEADY_LINE" > "$OUT/$tag.txt"
    if [[ $rc -ne 0 ]]; then
        echo "jq_steady ($tag) failed (rc $rc):" >&2
        cat "$OUT/$tag.err" >&2
    fi
}

# The ticker was started with the cluster, before the database existed: it
# connects within its restart time.
ticker_follow bench
mkdir -p "$OUT/watch"

# Warm-up: WAL segments created, catalogs cached, before anything is timed.
log "warm-up"
qq -c "SELECT bench_fill_queue(20000)" -c "SELECT bench_fill_plain(20000)" -c "SELECT bench_fill_floor(20000)"
pgbench -n -M prepared -c 2 -j 2 -T 1 -f "$BENCH/scripts/drain_one.sql" >/dev/null 2>&1 || true
qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs"
settle

# ============================================================= 1. push
# Single pushes: one job (one row) per transaction, 1 and 8 clients.
if want push; then
    mark push
    log "1. push (SELECT 1, floor INSERT, plain-sql INSERT, queue_push with wake-ups on/off, batches of 100)"
    push_run() {   # key clients script [extra pgbench args]
        local key=$1 clients=$2 script=$3
        shift 3
        qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs"
        if [[ $MODE == full ]]; then qq -c "CHECKPOINT"; fi
        pgb "$key.r$rep" "$clients" -T "$SECS" -f "$BENCH/scripts/$script" "$@"
    }
    for rep in $(seq 1 "$REPS"); do
        for c in 1 8; do
            push_run "push.select1.c$c" "$c" select1.sql
            rec "push.select1.c$c" "$PGB_TPS"
            push_run "push.floor.c$c" "$c" floor_insert.sql
            rec "push.floor.c$c" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            push_run "push.notify.c$c" "$c" push.sql
            rec "push.notify.c$c" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', false)"
            push_run "push.quiet.c$c" "$c" push.sql
            rec "push.quiet.c$c" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            # batches of 100: rows per second = calls per second * 100
            push_run "push.batch_floor.c$c" "$c" floor_insert_many.sql -D "jobs=$JOBS100"
            rec "push.batch_floor.c$c" "$(calc "$PGB_TPS * 100")"
            push_run "push.batch.c$c" "$c" push_many.sql -D "jobs=$JOBS100"
            rec "push.batch.c$c" "$(calc "$PGB_TPS * 100")"
            if (( c == 8 )); then
                # the same rows into plain_jobs: a table of our shape, with its
                # claim index (what a second index costs every INSERT)
                push_run "push.plain.c$c" "$c" plain_insert.sql
                rec "push.plain.c$c" "$PGB_TPS"
                push_run "push.batch_plain.c$c" "$c" plain_insert_many.sql -D "jobs=$JOBS100"
                rec "push.batch_plain.c$c" "$(calc "$PGB_TPS * 100")"
            fi
        done
        if [[ $MODE == full && $rep == 1 ]]; then
            # Extra (full run, one run each): the same 8-client pushes with synchronous_commit = on (each
            # commit waits for its WAL flush): here NOTIFY's commit serialization
            # (one notifying commit at a time) meets the disk's fsync time.
            export PGOPTIONS='-c synchronous_commit=on'
            push_run "push.sync_floor.c8" 8 floor_insert.sql
            rec "push.sync_floor.c8" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            push_run "push.sync_notify.c8" 8 push.sql
            rec "push.sync_notify.c8" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', false)"
            push_run "push.sync_quiet.c8" 8 push.sql
            rec "push.sync_quiet.c8" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            unset PGOPTIONS
        fi
    done
    qq -c "TRUNCATE queue_jobs, floor_jobs"
fi

# ============================================================= 2. drain, one job per claim
# A backlog of 100,000; N workers each claim one job and complete it, in
# two transactions (claim commits, then the completion commits), for SECS.
if want drain1; then
    mark drain1
    log "2. drain one job per claim (ours, floor UPDATE+DELETE, plain-sql), backlog $BACKLOG"
    for rep in $(seq 1 "$REPS"); do
        for w in 2 8; do
            for sys in ours floor plain; do
                drain_prepare "$sys"
                before=$(count "$(table_of $sys)")
                pgb "drain1.$sys.w$w.r$rep" "$w" -T "$SECS" -f "$BENCH/scripts/$(script_of $sys)"
                after=$(count "$(table_of $sys)")
                rec "drain1.$sys.w$w" "$(calc "($before - $after) / $PGB_SECS")"
                if [[ $sys == ours && $rep == 1 ]]; then explain_claim "drain1-w$w-after"; fi
            done
        done
    done
fi

# ============================================================= 3. drain, batched
# Claim 100 per call, complete them in one call; BATCH_CALLS calls in all
# (x100 jobs) from a backlog of 100,000.  PgQ: one consumer reads the same
# number of events in batches of 100 (ticks every 100 events); PgQ has no
# shared consumption, so it is one consumer.
if want drainb; then
    mark drainb
    log "3. batched drain (ours 2 and 8 workers, PgQ one consumer)"
    for rep in $(seq 1 "$REPS"); do
        for w in 2 8; do
            drain_prepare ours
            before=$(count queue_jobs)
            pgb "drainb.ours.w$w.r$rep" "$w" -t $(( BATCH_CALLS / w )) -f "$BENCH/scripts/drain_batch.sql"
            after=$(count queue_jobs)
            rec "drainb.ours.w$w" "$(calc "($before - $after) / $PGB_SECS")"
            if [[ $rep == 1 ]]; then explain_claim "drainb-w$w-after" 100; fi
        done
        qq -c "TRUNCATE queue_jobs"
        qq -c "SELECT pgq.unregister_consumer('bench', 'bench_consumer')" -c "SELECT pgq.drop_queue('bench')" \
           -c "SELECT pgq.create_queue('bench')" \
           -c "SELECT pgq.set_queue_config('bench', 'ticker_max_count', '1')" \
           -c "SELECT pgq.register_consumer('bench', 'bench_consumer')" \
           -c "CALL bench_pgq_fill($(( BATCH_CALLS * 100 )), 100)" -c "CHECKPOINT"
        pgb "drainb.pgq.c1.r$rep" 1 -t "$BATCH_CALLS" -f "$BENCH/scripts/pgq_consume.sql"
        left=$(q "SELECT coalesce(pending_events, 0) FROM pgq.get_consumer_info('bench', 'bench_consumer')")
        rec "drainb.pgq.c1" "$(calc "($BATCH_CALLS * 100 - $left) / $PGB_SECS")"
    done
fi

# ============================================================= 4. depth
# One worker's claim+complete (pgbench's average transaction time) at a
# shallow backlog of 10,000 ready jobs, and at a deep one: DEEP_READY ready
# jobs, 100,000 delayed jobs of higher priority (due in an hour) and
# 10,000 held jobs of the highest priority (claimed with a 1-hour lease).
if want depth; then
    mark depth
    log "4. depth: shallow $SHALLOW vs deep $DEEP_READY + $DEEP_DELAYED delayed + $DEEP_HELD held"
    for rep in $(seq 1 "$REPS"); do
        qq -c "TRUNCATE queue_jobs"
        fill_queue "$SHALLOW"
        settle
        pgb "depth.shallow.r$rep" 1 -t "$SHALLOW_CLAIMS" -f "$BENCH/scripts/drain_one.sql"
        rec depth.shallow "$PGB_LAT"
    done
    explain_claim depth-shallow
    qq -c "TRUNCATE queue_jobs"
    t0=$(date +%s)
    fill_queue "$DEEP_HELD" 10
    qq -c "SELECT count(*) FROM queue_reserve('{default}', '1 hour', 'holder', $DEEP_HELD)"
    fill_queue "$DEEP_DELAYED" 5 '1 hour'
    fill_queue "$DEEP_READY" 0
    settle
    rec depth.fill_secs "$(( $(date +%s) - t0 ))"
    rec depth.deep_rows "$(count queue_jobs)"
    for rep in $(seq 1 "$REPS"); do
        pgb "depth.deep.r$rep" 1 -T "$SECS" -f "$BENCH/scripts/drain_one.sql"
        rec depth.deep "$PGB_LAT"
    done
    explain_claim depth-deep
    qq -c "TRUNCATE queue_jobs"
fi

# ============================================================= 5. churn
# CHURN_ROUNDS rounds back to back from an empty table, autovacuum as
# configured (default), the ticker rotating the ring every second (1.3):
# push CHURN_JOBS (batches of 100, 2 clients), then drain them all (claims
# of 100, 2 workers).  After each round (one second later: statistics
# flushed, a tick past) queue_jobs' size with its indexes, summed over its
# partitions; a watcher samples it every second throughout (peak of each
# round, partitions a rotation emptied).  From 1.3, again for reference
# with jobqueue.ring_period = CHURN_SHORT_PERIOD (server-wide: the ticker
# and the sessions alike), to show what a shorter period bounds.
CHURN_SHORT_PERIOD=2
if want churn; then
    mark churn
    churn_run() {   # PREFIX: CHURN_ROUNDS rounds, figures as PREFIX.roundN.*
        local prefix=$1 csv=$OUT/watch/$1.csv round t0 from to total heap idx dead autovacuums
        local -a ends
        qq -c "TRUNCATE queue_jobs" -c "CHECKPOINT"
        watch_start "$csv"
        sleep 1   # the watcher's first row: the empty table
        ends=("$(date +%s.%N)")
        for round in $(seq 1 "$CHURN_ROUNDS"); do
            t0=$(date +%s.%N)
            pgb "$prefix.push.round$round" 2 -t $(( CHURN_JOBS / 200 )) -f "$BENCH/scripts/push_many.sql" -D "jobs=$JOBS100"
            pgb "$prefix.drain.round$round" 2 -t $(( CHURN_JOBS / 200 + 20 )) -f "$BENCH/scripts/drain_batch.sql"
            rec "$prefix.round$round.secs" "$(calc "$(date +%s.%N) - $t0")"
            rec "$prefix.round$round.left" "$(count queue_jobs)"
            sleep 1   # let the backends' statistics reach pg_stat_user_tables
            IFS='|' read -r total heap idx dead autovacuums <<<"$(figure "total_bytes, heap_bytes, index_bytes, n_dead_tup, autovacuums")"
            rec "$prefix.round$round.total_bytes" "$total"
            rec "$prefix.round$round.heap_bytes" "$heap"
            rec "$prefix.round$round.claim_idx_bytes" "$idx"
            rec "$prefix.round$round.dead_tup" "$dead"
            rec "$prefix.round$round.autovacuums" "$autovacuums"
            ends+=("$(date +%s.%N)")
        done
        watch_stop
        for round in $(seq 1 "$CHURN_ROUNDS"); do
            from=${ends[round - 1]} to=${ends[round]}
            rec "$prefix.round$round.truncations" "$(watch truncations "$csv" "$from" "$to")"
            rec "$prefix.round$round.peak_bytes" "$(watch peak "$csv" total_bytes "$from" "$to")"
        done
        rec "$prefix.ticked" "$(watch ticked "$csv")"
        rec "$prefix.vacuuming" "$(watch vacuuming "$csv")"
    }
    log "5. churn: $CHURN_JOBS jobs pushed and drained, $CHURN_ROUNDS rounds back to back"
    churn_run churn
    if [[ -n $(q "SELECT current_setting('jobqueue.ring_period', true)") ]]; then
        log "5. churn again with jobqueue.ring_period = $CHURN_SHORT_PERIOD s (reference)"
        qq -c "ALTER SYSTEM SET jobqueue.ring_period = $CHURN_SHORT_PERIOD" -c "SELECT pg_reload_conf()"
        sleep 2   # the ticker reloads its settings at its next tick
        rec churn_short.ring_period "$(q "SHOW jobqueue.ring_period")"
        churn_run churn_short
        qq -c "ALTER SYSTEM RESET jobqueue.ring_period" -c "SELECT pg_reload_conf()"
        sleep 2
    fi
    qq -c "TRUNCATE queue_jobs"
fi

# ============================================================= 6. held snapshot
# Drains while another session holds a REPEATABLE READ transaction open that
# has read (queue) queue_jobs or (other) only bench_other, another table of
# the same database, against the same drain without it (clean): the
# one-job drain (drain_one.sql, 8 workers, HELD_ONE_CLAIMS claims) and the
# batched drain (drain_batch.sql, 8 workers, BATCH_CALLS calls of 100).
# Each with claim positions on (the default) and off (the drain's sessions
# run with jobqueue.claim_positions=off: claims search from the head), the
# latter for reference.
if want held; then
    mark held
    log "6. held snapshot: one-job and batched drains, with and without an open REPEATABLE READ transaction, claim positions on and off"
    held_run() {   # claims(one|batch) holder(clean|queue|other) positions(on|off)
        local claims=$1 holder=$2 positions=$3 key=held.$2.$1.$3 options='' before after
        if [[ $positions == off ]]; then options='-c jobqueue.claim_positions=off'; fi
        drain_prepare ours
        case $holder in
            queue) holder_start queue_jobs ;;
            other) holder_start bench_other ;;
        esac
        before=$(count queue_jobs)
        watch_start "$OUT/watch/$key.r$rep.csv"
        if [[ $claims == one ]]; then
            PGOPTIONS=$options pgb "$key.r$rep" 8 -t $(( HELD_ONE_CLAIMS / 8 )) -f "$BENCH/scripts/drain_one.sql"
        else
            PGOPTIONS=$options pgb "$key.r$rep" 8 -t $(( BATCH_CALLS / 8 )) -f "$BENCH/scripts/drain_batch.sql"
        fi
        after=$(count queue_jobs)
        rec "$key" "$(calc "($before - $after) / $PGB_SECS")"
        if [[ $rep == 1 ]]; then
            PGOPTIONS=$options explain_claim "held-$holder-$claims-$positions" "$([[ $claims == one ]] && echo 1 || echo 100)"
        fi
        sleep 1
        watch_stop
        rec "$key.truncations" "$(watch truncations "$OUT/watch/$key.r$rep.csv")"
        rec "$key.dead_tup" "$(figure n_dead_tup)"
        rec "$key.claim_idx_bytes" "$(figure index_bytes)"
        rec "$key.total_bytes" "$(figure total_bytes)"
        # with the snapshot still held: what a VACUUM now can not remove
        psql -X -q -c "VACUUM (VERBOSE) queue_jobs" >"$OUT/$key-vacuum.r$rep.txt" 2>&1 || true
        rec "$key.not_removable" "$(not_removable "$OUT/$key-vacuum.r$rep.txt")"
        if [[ $holder != clean ]]; then holder_stop; fi
    }
    for rep in $(seq 1 "$REPS"); do
        for claims in one batch; do
            for positions in on off; do
                for holder in clean queue other; do
                    held_run "$claims" "$holder" "$positions"
                done
            done
        done
    done
    qq -c "TRUNCATE queue_jobs"
fi

# ============================================================= 7. latency
if want latency; then
    mark latency
    log "7. latency: one worker, $LAT_JOBS jobs at $LAT_RATE/s (NOTIFY, polling every $LAT_POLL_MS ms)"
    settle
    for mode in notify poll shmem; do
        set +e
        line=$("$LATENCY_BIN" --mode "$mode" --jobs "$LAT_JOBS" --rate "$LAT_RATE" --poll-ms "$LAT_POLL_MS" 2>"$OUT/latency-$mode.err")
        rc=$?
        set -e
        echo "$line" > "$OUT/latency-$mode.txt"
        if [[ $rc -ne 0 && $rc -ne 3 ]]; then
            echo "jq_latency --mode $mode failed (rc $rc):" >&2
            cat "$OUT/latency-$mode.err" >&2
        fi
        rec "latency.$mode" "$line"
    done
fi

# ============================================================= 8. cold plan
# The claim's cost at a backlog of 50,000 when its plans or the table's
# statistics date from the empty table: a session claims once from the empty
# queue (nothing due: its plans are made now), another session pushes 50,000
# jobs with queue_push_many, then COLD_CLAIMS claims are timed (each in its
# own transaction, bench_time_claims) in (same) that first session, (new) a
# new session, and (analysed) a new session after ANALYZE.  Two starting
# states, each in a fresh database: "empty" = VACUUM ANALYZE of the empty
# table first (what settle does in the other scenarios), "none" = never
# vacuumed nor analysed (a new installation).  Autovacuum is off for
# queue_jobs (each of its partitions) here so that the table stays in the
# state measured; the ticker does not tick these databases (no rotation).
if want cold_plan; then
    mark cold_plan
    log "8. cold plan: claims at a backlog of $COLD_BACKLOG planned on the empty table"
    time_claims() {   # db: CALL bench_time_claims in a new session; prints median|p90|claimed
        PGDATABASE=$1 psql -X -At -v ON_ERROR_STOP=1 -c "CALL bench_time_claims($COLD_CLAIMS, 'bench')"
    }
    rec_claims() {   # key "median|p90|claimed"
        local median p90 claimed
        IFS='|' read -r median p90 claimed <<<"$2"
        rec "$1" "$median"
        rec "$1.p90" "$p90"
        rec "$1.claimed" "$claimed"
    }
    for stats in empty none; do
        db=bench_cold_$stats
        fresh_db "$db"
        # per partition: a partitioned table has no autovacuum settings of its own
        PGDATABASE=$db psql -X -q -At -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', l) FROM bench_leaves('queue_jobs') AS l \gexec
SQL
        if [[ $stats == empty ]]; then PGDATABASE=$db qq -c "VACUUM ANALYZE queue_jobs"; fi
        line=$(PGDATABASE=$db psql -X -At -v ON_ERROR_STOP=1 <<SQL
SELECT count(*) FROM queue_reserve('{bench}', NULL, 'bench', 1) \g /dev/null
\! psql -X -q -d $db -v ON_ERROR_STOP=1 -c "SELECT bench_fill_queue($COLD_BACKLOG, 0, '0', 'bench')" >/dev/null
CALL bench_time_claims($COLD_CLAIMS, 'bench');
SQL
    )
        rec_claims "cold.$stats.same" "$line"
        rec_claims "cold.$stats.new" "$(time_claims "$db")"
        # -1 (never analysed) when no partition has been: else the partitions' sum
        rec "cold.$stats.reltuples_before_analyze" "$(PGDATABASE=$db q "SELECT CASE WHEN max(reltuples) < 0 THEN -1
            ELSE sum(greatest(reltuples, 0)) END FROM pg_class WHERE oid IN (SELECT bench_leaves('queue_jobs'))")"
        PGDATABASE=$db qq -c "ANALYZE queue_jobs"
        rec_claims "cold.$stats.analysed" "$(time_claims "$db")"
        dropdb "$db"
    done
fi

# ============================================================= 9. steady load
# Work arriving while workers take it, from an empty, never-analysed table
# (a fresh database for each run, the ticker moved to it; autovacuum as
# configured): STEADY_PRODUCERS
# producers push STEADY_RATE jobs/s in all, one per transaction, for
# STEADY_SECS, while STEADY_WORKERS workers claim and complete one job at a
# time (bench/scripts/drain_one.sql's statements).  jobqueue with NOTIFY off
# and on, the plain-sql queue (plain_insert.sql, plain_drain.sql), and the
# worker runtime as consumer (NOTIFY off: it waits inside queue_reserve).
if want steady; then
    mark steady
    log "9. steady load: $STEADY_RATE jobs/s from $STEADY_PRODUCERS producers, $STEADY_WORKERS workers, $STEADY_SECS s, from an empty table"
    steady_run() {   # tag notify(on|off|-) consumer push_script [drain_script table]
        local tag=$1 notify=$2 consumer=$3 push=$4 drain=${5:-} table=${6:-queue_jobs} db=bench_steady_$1
        local args=(--push-script "$BENCH/scripts/$push" --consumer "$consumer" --table "$table")
        if [[ -n $drain ]]; then args+=(--drain-script "$BENCH/scripts/$drain"); fi
        fresh_db "$db"
        ticker_follow "$db"
        if [[ $notify != - ]]; then
            PGDATABASE=$db qq -c "SELECT queue_set_notify('default', $([[ $notify == on ]] && echo true || echo false))"
        fi
        PGDATABASE=$db steady_load "steady-$tag" "$STEADY_SECS" "$STEADY_WINDOW" "${args[@]}"
        rec_kv "steady.$tag" "$STEADY_LINE"
        dropdb --force "$db"   # --force: the ticker is connected to it
    }
    steady_run quiet off sql push.sql drain_one.sql
    steady_run notify on sql push.sql drain_one.sql
    steady_run plain - sql plain_insert.sql plain_drain.sql plain_jobs
    steady_run runtime off runtime push.sql
    ticker_follow bench
fi

# ============================================================= 10. worker runtime
# The client library's worker runtime (jobqueue::Worker, no-op handler)
# draining WORKER_JOBS jobs from a backlog of BACKLOG, with 2 and 8 threads;
# compared with the SQL drains of scenarios 2 and 3 (same backlog, same run).
if want worker; then
    mark worker
    log "10. worker runtime: $WORKER_JOBS no-op jobs, 2 and 8 threads"
    for rep in $(seq 1 "$REPS"); do
        for t in 2 8; do
            drain_prepare ours
            set +e
            line=$(timeout 600 "$WORKER_DRAIN_BIN" --jobs "$WORKER_JOBS" --threads "$t" \
                   --timeout-secs 300 2>"$OUT/worker-t$t.r$rep.err")
            rc=$?
            set -e
            echo "$line" > "$OUT/worker-t$t.r$rep.txt"
            if [[ $rc -ne 0 ]]; then
                echo "jq_worker_drain --threads $t failed (rc $rc):" >&2
                cat "$OUT/worker-t$t.r$rep.err" >&2
            fi
            rec "worker.drain.t$t" "$(sed -n 's/.* rate=\([0-9.]*\).*/\1/p' <<<"$line")"
        done
    done
    qq -c "TRUNCATE queue_jobs"
fi

# ============================================================= 11. dashboard
# What a dashboard costs (issue 18).  queue_overview() (what the
# dashboard's overview page and its /metrics read) and, with
# JQ_DASHBOARD_BIN, the dashboard's GET /api/overview and GET /metrics,
# each timed DASH_CALLS times one after the other, at DASH_SMALL and at
# DASH_BIG jobs in queue_jobs (databases bench_dash_small, bench_dash_big:
# five queues of 40, 25, 20, 10 and 5 % of the jobs, each 92 % pending, 5 %
# delayed, 3 % held by live leases, and 2 % more failed rows; pushed with
# queue_push_many), the two sizes alternating over DASH_ROUNDS rounds; a
# few pages (queue_jobs_page) and queue_leases() alike.  The dashboards
# start before the fills, so the plans their connections keep were made
# on empty tables.  The plans of the reads at both sizes (auto_explain,
# nested statements).  Then scenario 2's one-job drain, 8 workers, without
# a dashboard and with one (started for the run) polled for /api/overview
# and /metrics every second (or without JQ_DASHBOARD_BIN the SQL they run:
# queue_overview() twice, queue_failed_count()), alternating, DASH_ROUNDS
# rounds, in bench.
if want dashboard; then
    mark dashboard
    log "11. dashboard: reads at $DASH_SMALL and $DASH_BIG jobs${JQ_DASHBOARD_BIN:+ (and $JQ_DASHBOARD_BIN dashboard)}, drains with and without a poller"
    PROBE=(/usr/bin/python3 "$BENCH/dashboard_probe.py")   # not a function: $! of "&" must be the probe's
    rec_probe() {   # key line: the probe's median as key, its other fields as key.field
        local kv
        for kv in $2; do
            case ${kv%%=*} in
                median_ms) rec "$1" "${kv#*=}" ;;
                *) rec "$1.${kv%%=*}" "${kv#*=}" ;;
            esac
        done
    }
    dash_url() { echo "http://127.0.0.1:$(( DASH_PORT + $1 ))"; }   # 0: small, 1: big, 2: bench
    dash_start() {   # index db: a read-only dashboard of db; waits until it answers
        local url _
        url=$(dash_url "$1")
        PGDATABASE=$2 "$JQ_DASHBOARD_BIN" dashboard --read-only --listen "${url#http://}" \
            >>"$OUT/dashboard-$2.log" 2>&1 &
        DASH_PIDS+=($!)
        for _ in $(seq 1 100); do
            if curl -sf -o /dev/null "$url/api/overview"; then return 0; fi
            sleep 0.1
        done
        echo "run.sh: the dashboard of $2 does not answer at $url (see dashboard-$2.log)" >&2
        return 1
    }
    dash_stop() {   # PID...: these dashboards: SIGTERM, then SIGKILL for one still there after 5 s
        local pid _ rc kept=()
        for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
        for pid in "$@"; do
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            if kill -0 "$pid" 2>/dev/null; then
                echo "run.sh: a dashboard (pid $pid) did not stop on SIGTERM within 5 s: SIGKILL" >&2
                rec dashboard.stop_problems 1
                kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
                continue
            fi
            rc=0
            wait "$pid" 2>/dev/null || rc=$?
            if (( rc != 0 )); then
                echo "run.sh: a dashboard (pid $pid) ended with status $rc on SIGTERM" >&2
                rec dashboard.stop_problems 1
            fi
        done
        for pid in "${DASH_PIDS[@]}"; do [[ " $* " == *" $pid "* ]] || kept+=("$pid"); done
        DASH_PIDS=("${kept[@]}")
    }
    DASH_DBS=(bench_dash_small bench_dash_big)
    DASH_SIZES=("$DASH_SMALL" "$DASH_BIG")
    for i in 0 1; do
        fresh_db "${DASH_DBS[i]}"
        if [[ -n $JQ_DASHBOARD_BIN ]]; then dash_start "$i" "${DASH_DBS[i]}"; fi
    done
    t0=$(date +%s)
    for i in 0 1; do
        db=${DASH_DBS[i]} n=${DASH_SIZES[i]}
        # the biggest queue in one session, the four others in a second one
        PGDATABASE=$db qq -c "SELECT bench_fill_dashboard_queue('dash_bulk', $(( n * 40 / 100 )))" &
        fill_pid=$!
        for spec in dash_mail:25 dash_reports:20 dash_events:10 dash_tiny:5; do
            PGDATABASE=$db qq -c "SELECT bench_fill_dashboard_queue('${spec%:*}', $(( n * ${spec#*:} / 100 )))"
        done
        wait "$fill_pid"
        PGDATABASE=$db qq -c "VACUUM ANALYZE queue_jobs, queue_failed_jobs"
        rec "dashboard.jobs.$i" "$(PGDATABASE=$db count queue_jobs)"
        rec "dashboard.failed_rows.$i" "$(PGDATABASE=$db count queue_failed_jobs)"
    done
    rec dashboard.fill_secs "$(( $(date +%s) - t0 ))"
    rec dashboard.http "$([[ -n $JQ_DASHBOARD_BIN ]] && echo 1 || echo 0)"
    # the reads timed: a name, then its SQL (or, starting with /, a path of the dashboard)
    DASH_READS=(overview "SELECT * FROM queue_overview()"
                overview_cap10000 "SELECT * FROM queue_overview(10000)"
                page_tiny "SELECT * FROM queue_jobs_page('dash_tiny')"
                page_bulk "SELECT * FROM queue_jobs_page('dash_bulk')"
                page_mail_reserved "SELECT * FROM queue_jobs_page('dash_mail', 'reserved')"
                leases "SELECT * FROM queue_leases()")
    if [[ -n $JQ_DASHBOARD_BIN ]]; then DASH_READS+=(http_overview /api/overview http_metrics /metrics); fi
    for rep in $(seq 1 "$DASH_ROUNDS"); do
        order="0 1"
        if (( rep % 2 == 0 )); then order="1 0"; fi
        for i in $order; do
            for (( r = 0; r < ${#DASH_READS[@]}; r += 2 )); do
                name=${DASH_READS[r]} read=${DASH_READS[r + 1]}
                if [[ $read == /* ]]; then
                    line=$("${PROBE[@]}" time --calls "$DASH_CALLS" --url "$(dash_url "$i")$read")
                else
                    line=$(PGDATABASE=${DASH_DBS[i]} "${PROBE[@]}" time --calls "$DASH_CALLS" --sql "$read")
                fi
                rec_probe "dashboard.$name.$i" "$line"
            done
        done
    done
    # the plans of the reads' statements as the extension runs them
    for i in 0 1; do
        plans=$OUT/dashboard-plans-${DASH_DBS[i]}.txt
        PGDATABASE=${DASH_DBS[i]} psql -X -q -v ON_ERROR_STOP=1 >"$plans" 2>&1 <<'SQL' || true
LOAD 'auto_explain';
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_analyze = on;
SET auto_explain.log_buffers = on;
SET auto_explain.log_level = notice;
SET auto_explain.log_min_duration = 0;
SET client_min_messages = notice;
SELECT count(*) FROM queue_overview() \g /dev/null
SELECT count(*) FROM queue_jobs_page('dash_tiny') \g /dev/null
SELECT count(*) FROM queue_jobs_page('dash_bulk') \g /dev/null
SELECT count(*) FROM queue_jobs_page('dash_mail', 'reserved') \g /dev/null
SELECT count(*) FROM queue_leases() \g /dev/null
SQL
        rec "dashboard.plans.seq_or_bitmap.$i" "$(grep -cE '(Seq Scan|Bitmap Heap Scan) on queue_(jobs|failed_jobs)' "$plans" || true)"
        rec "dashboard.plans.statements.$i" "$(grep -c 'Query Text: /\* jobqueue index plan \*/' "$plans" || true)"
    done
    # scenario 2's one-job drain, 8 workers: quiet, and polled by a dashboard every second
    for rep in $(seq 1 "$DASH_ROUNDS"); do
        order="quiet polled"
        if (( rep % 2 == 0 )); then order="polled quiet"; fi
        for mode in $order; do
            drain_prepare ours
            if [[ $mode == polled ]]; then
                if [[ -n $JQ_DASHBOARD_BIN ]]; then
                    dash_start 2 bench
                    "${PROBE[@]}" poll --every 1 --url "$(dash_url 2)/api/overview" --url "$(dash_url 2)/metrics" \
                        >"$OUT/dashboard-poll.r$rep.txt" 2>&1 &
                else
                    "${PROBE[@]}" poll --every 1 --sql "SELECT * FROM queue_overview()" \
                        --sql "SELECT * FROM queue_overview()" --sql "SELECT queue_failed_count()" \
                        >"$OUT/dashboard-poll.r$rep.txt" 2>&1 &
                fi
                POLL_PID=$!
                sleep 1   # connected, and polling
            fi
            before=$(count queue_jobs)
            pgb "dashboard.drain.$mode.r$rep" 8 -T "$DASH_DRAIN_SECS" -f "$BENCH/scripts/drain_one.sql"
            after=$(count queue_jobs)
            if [[ $mode == polled ]]; then
                kill -TERM "$POLL_PID" 2>/dev/null || true
                wait "$POLL_PID" 2>/dev/null || true
                POLL_PID=
                rec_probe dashboard.poll "$(tail -1 "$OUT/dashboard-poll.r$rep.txt")"
            fi
            if [[ $mode == polled && -n $JQ_DASHBOARD_BIN ]]; then dash_stop "${DASH_PIDS[-1]}"; fi
            rec "dashboard.drain.$mode" "$(calc "($before - $after) / $PGB_SECS")"
        done
    done
    dash_stop "${DASH_PIDS[@]}"
    for db in "${DASH_DBS[@]}"; do dropdb "$db"; done
    qq -c "TRUNCATE queue_jobs"
fi

# ============================================================= 12. flow control
# What flow control (1.5) costs the claim.  (a) One worker's claim+complete
# (pgbench's average transaction time, FLOW_CLAIMS claims of drain_one.sql)
# of free jobs, each with a concurrency key of its own, in two databases
# alike but for the blocked backlog: bench_flow_ref holds FLOW_FREE free
# jobs; bench_flow_deep the same plus FLOW_BLOCKED jobs held back, half of
# them waiting behind FLOW_BUSY_KEYS busy keys (each key's first job holds
# its slot under a 1-hour lease), half waiting for FLOW_PARENTS parents
# (held under a 1-hour lease).  Each round tops both up by the jobs the
# previous one claimed and times them one after the other (in turns
# first); the ratio of each round goes to raw.tsv.  (b) Scenario 2's one-job drain, 8 workers,
# in bench: a backlog of BACKLOG jobs without keys, then with keys spread
# over FLOW_DRAIN_KEYS keys (limit 1 each), in turns first, FLOW_ROUNDS rounds,
# each round's ratio recorded.
if want flow; then
    mark flow
    declare -A lat=() rate=()
    log "12. flow control: claims with $FLOW_BLOCKED jobs held back vs none; one-job drain with $FLOW_DRAIN_KEYS keys vs none"
    for db in bench_flow_ref bench_flow_deep; do fresh_db "$db"; done
    t0=$(date +%s)
    PGDATABASE=bench_flow_deep qq -c "CALL bench_fill_flow($FLOW_BUSY_KEYS, 'busy:', $FLOW_BUSY_KEYS)" \
        -c "SELECT count(*) FROM queue_reserve('{default}', '1 hour', 'holder', $FLOW_BUSY_KEYS)" \
        -c "SELECT bench_fill_queue($FLOW_PARENTS)" \
        -c "SELECT count(*) FROM queue_reserve('{default}', '1 hour', 'holder', $FLOW_PARENTS)"
    parents=$(PGDATABASE=bench_flow_deep q "SELECT array_agg(id) FROM queue_jobs WHERE concurrency_key IS NULL")
    half=$(( FLOW_BLOCKED / 2 ))
    # the two halves in two sessions at once, one per CPU
    PGDATABASE=bench_flow_deep qq -c "CALL bench_fill_flow($half, 'busy:', $FLOW_BUSY_KEYS)" &
    fill_pid=$!
    PGDATABASE=bench_flow_deep qq -c "CALL bench_fill_flow($(( FLOW_BLOCKED - half )), '', 0, '$parents')"
    wait "$fill_pid"
    rec flow.fill_secs "$(( $(date +%s) - t0 ))"
    rec flow.blocked_rows "$(PGDATABASE=bench_flow_deep q "SELECT count(*) FROM queue_jobs WHERE flow IN ('key', 'parents')")"
    pushed=0
    for db in bench_flow_ref bench_flow_deep; do
        PGDATABASE=$db qq -c "CALL bench_fill_flow($FLOW_FREE, 'free:', $FLOW_FREE + 1000000000)"
    done
    pushed=$FLOW_FREE
    for rep in $(seq 1 "$FLOW_ROUNDS"); do
        # the order alternates, so that drift hits both alike
        order="bench_flow_ref bench_flow_deep"
        (( rep % 2 )) || order="bench_flow_deep bench_flow_ref"
        for db in $order; do
            if (( rep > 1 )); then
                PGDATABASE=$db qq -c "CALL bench_fill_flow($FLOW_CLAIMS, 'free:', $FLOW_FREE + 1000000000, NULL, $pushed)"
            fi
            PGDATABASE=$db qq -c "VACUUM ANALYZE queue_jobs"
            if [[ $MODE == full ]]; then qq -c "CHECKPOINT"; fi
            PGDATABASE=$db pgb "flow.claim.$db.r$rep" 1 -t "$FLOW_CLAIMS" -f "$BENCH/scripts/drain_one.sql"
            rec "flow.claim.${db#bench_flow_}" "$PGB_LAT"
            lat[$db]=$PGB_LAT
        done
        pushed=$(( pushed + FLOW_CLAIMS ))
        rec flow.claim.ratio "$(calc "${lat[bench_flow_deep]} / ${lat[bench_flow_ref]}")"
    done
    PGDATABASE=bench_flow_deep explain_claim flow-deep
    for rep in $(seq 1 "$FLOW_ROUNDS"); do
        order="0 $FLOW_DRAIN_KEYS"
        (( rep % 2 )) || order="$FLOW_DRAIN_KEYS 0"
        for keys in $order; do
            qq -c "TRUNCATE queue_jobs"
            if (( keys == 0 )); then fill_queue "$BACKLOG"; else qq -c "CALL bench_fill_flow($BACKLOG, 'k:', $keys)"; fi
            settle
            before=$(count queue_jobs)
            pgb "flow.drain.k$keys.r$rep" 8 -T "$SECS" -f "$BENCH/scripts/drain_one.sql"
            after=$(count queue_jobs)
            rate[$keys]=$(calc "($before - $after) / $PGB_SECS")
            rec "flow.drain.k$keys" "${rate[$keys]}"
        done
        rec flow.drain.ratio "$(calc "${rate[$FLOW_DRAIN_KEYS]} / ${rate[0]}")"
    done
    qq -c "TRUNCATE queue_jobs"
    for db in bench_flow_ref bench_flow_deep; do PGOPTIONS='-c client_min_messages=warning' dropdb "$db"; done
fi

# ============================================================= 13. idle
# What an idle queue costs (issue 30): in a fresh database the ticker ticks
# (every second, rotating the ring as in production), a paused queue of
# 5,000 jobs, 40 jobs delayed by an hour and 5 ready jobs nobody claims;
# after settling (two ring periods, ANALYZE, VACUUM, CHECKPOINT, one period
# more: bench/storage.py idle, the ring suite's tests/ring/idle.py
# measurement), the WAL the server writes over IDLE_SECS, its records, the
# pg_class row versions written and the job tables' relfilenodes.  The
# reference, first: the same rows in plain_jobs in a database without the
# extension, the ticker connected to it (it finds no queue_tick() there and
# only reads), the same settling and window: what the server writes by
# itself.  WAL is the whole server's, so every database is analysed and
# then vacuumed first (the order of tests/ring/idle.py: a VACUUM prunes
# ANALYZE's dead pg_statistic rows): else autovacuum may analyse and
# vacuum another database's catalogs inside a window (seen in a --quick
# run that only vacuumed first: template1's pg_statistic, 142 KB and 227 KB
# in the two 20 s windows).  storage.py names the database of each record.
if want idle; then
    mark idle
    log "13. idle: a paused queue of 5,000 jobs, 40 delayed, 5 unclaimed, ticked every second: WAL and catalog writes over $IDLE_SECS s, a plain table's for reference"
    period=$(q "SELECT setting FROM pg_settings WHERE name = 'jobqueue.ring_period'")
    period=${period:-10}   # before 1.3 there is no ring: settle as if 10 s
    vacuumdb --all --analyze-only --quiet
    vacuumdb --all --quiet
    idle_run() {   # KEY DB [--plain]: storage.py idle in DB, the ticker moved there
        local key=$1 db=$2 line rc
        shift 2
        ticker_follow "$db"
        set +e
        line=$(PGDATABASE=$db timeout $(( IDLE_SECS + 4 * period + 120 )) /usr/bin/python3 "$BENCH/storage.py" idle \
            --seconds "$IDLE_SECS" --period "$period" "$@" 2>"$OUT/$key.err")
        rc=$?
        set -e
        echo "$line" > "$OUT/$key.txt"
        if [[ $rc -ne 0 ]]; then echo "storage.py idle ($key) failed (rc $rc):" >&2; cat "$OUT/$key.err" >&2; fi
        rec_kv "$key" "$line"
    }
    PGOPTIONS='-c client_min_messages=warning' dropdb --if-exists bench_idle_plain
    createdb bench_idle_plain
    # plain_jobs as setup.sql makes it (our shape, its claim index), nothing else
    pg_dump -s -t plain_jobs bench | psql -X -q -v ON_ERROR_STOP=1 -d bench_idle_plain >/dev/null
    idle_run idle.plain bench_idle_plain --plain
    fresh_db bench_idle
    idle_run idle.ours bench_idle
    ticker_follow bench
    dropdb --force bench_idle_plain
    dropdb --force bench_idle
fi

# ============================================================= 14. waiting
# Workers waiting under load (issue 30): in a fresh database the ticker
# ticks, WAITING_WORKERS sessions loop queue_reserve(wait => '1 second')
# for one job and queue_delete it; WAITING_PRODUCERS paced sessions offer
# WAITING_RATE jobs/s in all, one job per transaction, for WAITING_SECS,
# while a session calls queue_rotate(NULL) every 0.5 s besides the ticker
# (bench/storage.py waiting: tests/ring/waiting.py's workload, from
# tests/ring/storagelib.py).  Every second the job tables' size
# (queue_jobs' leaves with indexes and TOAST, the watcher's row, kept in
# watch/waiting.csv); reported: pushed and delivered jobs/s, the size at
# WAITING_REF_AT s and at the end, partitions emptied, queue_rotate's
# outcomes.
if want waiting; then
    mark waiting
    log "14. waiting: $WAITING_WORKERS sessions in queue_reserve(wait), $WAITING_RATE jobs/s offered, $WAITING_SECS s"
    fresh_db bench_waiting
    ticker_follow bench_waiting
    set +e
    line=$(PGDATABASE=bench_waiting timeout $(( WAITING_SECS + 90 )) /usr/bin/python3 "$BENCH/storage.py" waiting \
        --seconds "$WAITING_SECS" --csv "$OUT/watch/waiting.csv" --rate "$WAITING_RATE" \
        --producers "$WAITING_PRODUCERS" --workers "$WAITING_WORKERS" --reference-at "$WAITING_REF_AT" \
        2>"$OUT/waiting.err")
    rc=$?
    set -e
    echo "$line" > "$OUT/waiting.txt"
    if [[ $rc -ne 0 ]]; then echo "storage.py waiting failed (rc $rc):" >&2; cat "$OUT/waiting.err" >&2; fi
    rec_kv waiting "$line"
    ticker_follow bench
    dropdb --force bench_waiting
fi

# ============================================================= soak (--soak)
# A steady load of SOAK_SECS (STEADY_PRODUCERS producers at STEADY_RATE
# jobs/s, STEADY_WORKERS one-job workers, as scenario 9 with NOTIFY on, the
# default) in a fresh database, the ticker moved to it (rotating the ring
# every second from 1.3), while a REPEATABLE READ transaction that has read
# SOAK_HELD_TABLE (bench_other by default, or queue_jobs) stays open from
# before the start to after the end; a watcher samples queue_jobs (sizes and
# dead rows summed over its partitions, rotations) every second.
# --soak-compare: the same again with claim positions off.
if want soak; then
    mark soak
    soak_run() {   # positions(on|off)
        local positions=$1 db=bench_soak_$1 tag=soak-$1 options='' csv
        if [[ $positions == off ]]; then options='-c jobqueue.claim_positions=off'; fi
        csv=$OUT/$tag-watch.csv
        fresh_db "$db"
        ticker_follow "$db"
        PGDATABASE=$db holder_start "$SOAK_HELD_TABLE"
        PGDATABASE=$db watch_start "$csv" "$SOAK_REPORT_SECS"
        sleep 1   # the watcher's first row: before the load
        PGDATABASE=$db PGOPTIONS=$options steady_load "$tag" "$SOAK_SECS" "$SOAK_WINDOW" \
            --push-script "$BENCH/scripts/push.sql" --consumer sql --drain-script "$BENCH/scripts/drain_one.sql"
        sleep 1   # the workers' last statistics reach pg_stat_user_tables
        watch_stop
        rec_kv "soak.$positions" "$STEADY_LINE"
        rec "soak.$positions.truncations" "$(watch truncations "$csv")"
        rec "soak.$positions.ticked" "$(watch ticked "$csv")"
        rec "soak.$positions.vacuuming" "$(watch vacuuming "$csv")"
        # the snapshot must have been held to the end for the run to count
        rec "soak.$positions.holder_held" "$(q "SELECT count(*) FROM pg_stat_activity
            WHERE application_name = 'bench_holder' AND backend_xmin IS NOT NULL")"
        PGDATABASE=$db holder_stop
        dropdb --force "$db"   # --force: the ticker is connected to it
    }
    soak_positions=on
    if (( SOAK == 2 )); then soak_positions="on off"; fi
    for positions in $soak_positions; do
        log "soak, claim positions $positions: $STEADY_RATE jobs/s from $STEADY_PRODUCERS producers, $STEADY_WORKERS workers, $SOAK_SECS s, a REPEATABLE READ transaction that read $SOAK_HELD_TABLE open throughout"
        soak_run "$positions"
    done
fi

mark end
rec meta.load_end "$(cut -d' ' -f1 /proc/loadavg)"
rec meta.total_secs "$(( $(date +%s) - T_START ))"
printf '%s\n' "$BENCH_PGCONF" "$BENCH_TICKER_CONF" > "$OUT/postgresql.conf.bench"

jq_cluster_stop
trap - EXIT
log "done in $(( $(date +%s) - T_START )) s; results in ${OUT#"$ROOT"/}"
python3 "$BENCH/report.py" "$RAW" "$OUT/versions.txt" | tee "$OUT/results.md"
