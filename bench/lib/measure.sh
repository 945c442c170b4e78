# shellcheck shell=bash
# bench/run.sh's measuring helpers: psql calls, raw.tsv records, pgbench runs,
# the tables reset and filled, fresh databases, the claim's plans.

q() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
qq() { psql -X -q -At -v ON_ERROR_STOP=1 "$@" >/dev/null; }
rec() { printf '%s\t%s\n' "$1" "$2" >> "$RAW"; }
# calc EXPR: floating-point arithmetic (awk; python3 starts too slowly here)
calc() { awk "function max_0(x) { return x > 0 ? x : 0 } BEGIN { printf \"%.6f\n\", ($1) }"; }

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
    qq -c "VACUUM ANALYZE queue_jobs, floor_jobs, plain_jobs, pgmqref.q_bench"
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

# drain_prepare SYSTEM [JOBS]: a fresh backlog of JOBS (BACKLOG) jobs in that system's table
drain_prepare() {   # system [jobs]
    local n=${2:-$BACKLOG}
    qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs, pgmqref.q_bench"
    case $1 in
        ours) fill_queue "$n" ;;
        floor) qq -c "SELECT bench_fill_floor($n)" \
                  -c "SELECT setval('floor_claim_seq', (SELECT min(id) FROM floor_jobs), false)" ;;
        plain) qq -c "SELECT bench_fill_plain($n)" ;;
        pgmqref) qq -c "SELECT bench_fill_pgmqref($n)" ;;
    esac
    settle
}
table_of() { case $1 in ours) echo queue_jobs ;; floor) echo floor_jobs ;; plain) echo plain_jobs ;; pgmqref) echo pgmqref.q_bench ;; esac; }
script_of() { case $1 in ours) echo drain_one.sql ;; floor) echo floor_drain.sql ;; plain) echo plain_drain.sql ;; pgmqref) echo pgmqref_drain.sql ;; esac; }
