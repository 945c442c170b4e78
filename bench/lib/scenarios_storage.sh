# shellcheck shell=bash
# bench/run.sh's storage scenarios: the table's size under churn (5) and under a
# held snapshot (6), an idle queue's writes (13), waiting workers (14), --soak.

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
scenario_churn() {
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
}

# ============================================================= 6. held snapshot
# Drains while another session holds a REPEATABLE READ transaction open that
# has read (queue) queue_jobs or (other) only bench_other, another table of
# the same database, against the same drain without it (clean): the
# one-job drain (drain_one.sql, 8 workers, HELD_ONE_CLAIMS claims) and the
# batched drain (drain_batch.sql, 8 workers, BATCH_CALLS calls of 100).
# Each with claim positions on (the default) and off (the drain's sessions
# run with jobqueue.claim_positions=off: claims search from the head), the
# latter for reference.
scenario_held() {
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
}

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
scenario_idle() {
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
}

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
scenario_waiting() {
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
}

# ============================================================= soak (--soak)
# A steady load of SOAK_SECS (STEADY_PRODUCERS producers at STEADY_RATE
# jobs/s, STEADY_WORKERS one-job workers, as scenario 9 with NOTIFY on, the
# default) in a fresh database, the ticker moved to it (rotating the ring
# every second from 1.3), while a REPEATABLE READ transaction that has read
# SOAK_HELD_TABLE (bench_other by default, or queue_jobs) stays open from
# before the start to after the end; a watcher samples queue_jobs (sizes and
# dead rows summed over its partitions, rotations) every second.
# --soak-compare: the same again with claim positions off.
scenario_soak() {
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
}
