# shellcheck shell=bash
# bench/run.sh's scenario 11: what a dashboard costs.

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
scenario_dashboard() {
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
}
