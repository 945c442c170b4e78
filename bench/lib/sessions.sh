# shellcheck shell=bash
# bench/run.sh's sessions beside a scenario: the background ticker moved between
# databases, the queue watcher, the snapshot holder, the steady load (jq_steady).

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
