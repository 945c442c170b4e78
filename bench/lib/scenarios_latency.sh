# shellcheck shell=bash
# bench/run.sh's scenarios 7-10: wake-up latency, cold plans, steady load, the
# worker runtime's drain.

# ============================================================= 7. latency
scenario_latency() {
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
}

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
scenario_cold_plan() {
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
}

# ============================================================= 9. steady load
# Work arriving while workers take it, from an empty, never-analysed table
# (a fresh database for each run, the ticker moved to it; autovacuum as
# configured): STEADY_PRODUCERS
# producers push STEADY_RATE jobs/s in all, one per transaction, for
# STEADY_SECS, while STEADY_WORKERS workers claim and complete one job at a
# time (bench/scripts/drain_one.sql's statements).  jobqueue with NOTIFY off
# and on, the plain-sql queue (plain_insert.sql, plain_drain.sql), and the
# worker runtime as consumer (NOTIFY off: it waits inside queue_reserve).
scenario_steady() {
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
}

# ============================================================= 10. worker runtime
# The client library's worker runtime (jobqueue::Worker, no-op handler)
# draining WORKER_JOBS jobs from a backlog of BACKLOG, with 2 and 8 threads;
# compared with the SQL drains of scenarios 2 and 3 (same backlog, same run).
scenario_worker() {
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
}
