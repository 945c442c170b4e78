# shellcheck shell=bash
# bench/run.sh's throughput scenarios 1-4: push, one-job drain, batched drain, depth.

# ============================================================= 1. push
# Single pushes: one job (one row) per transaction, 1 and 8 clients.
scenario_push() {
    log "1. push (SELECT 1, floor INSERT, plain-sql INSERT, pgmq-shaped send, queue_push with wake-ups on/off, batches of 100)"
    push_run() {   # key clients script [extra pgbench args]
        local key=$1 clients=$2 script=$3
        shift 3
        qq -c "TRUNCATE queue_jobs, floor_jobs, plain_jobs, pgmqref.q_bench"
        if [[ $MODE == full ]]; then qq -c "CHECKPOINT"; fi
        pgb "$key.r$rep" "$clients" -T "$SECS" -f "$BENCH/scripts/$script" "$@"
    }
    # the one push and the batch push each right beside the same rows
    # written by hand into plain_jobs (INSERT ... RETURNING id): a table of
    # our shape with its claim index (what a second index costs every
    # INSERT); the batch is the shape of pgmq's send_batch.  Beside, so that
    # the machine's drift between runs (at 1 client a push is one round
    # trip, and SELECT 1 alone moves by a quarter between rounds) falls on
    # both alike; which of the two goes first alternates between rounds.
    push_pair() {   # clients rep
        local c=$1 first=push second=plain
        (( $2 % 2 == 0 )) && first=plain second=push
        for side in $first $second; do
            if [[ $side == push ]]; then
                push_run "push.notify.c$c" "$c" push.sql
                rec "push.notify.c$c" "$PGB_TPS"
            else
                push_run "push.plain.c$c" "$c" plain_insert.sql
                rec "push.plain.c$c" "$PGB_TPS"
            fi
        done
    }
    batch_pair() {   # clients rep; batches of 100: rows per second = calls per second * 100
        local c=$1 first=push second=plain
        (( $2 % 2 == 0 )) && first=plain second=push
        for side in $first $second; do
            if [[ $side == push ]]; then
                push_run "push.batch.c$c" "$c" push_many.sql -D "jobs=$JOBS100"
                rec "push.batch.c$c" "$(calc "$PGB_TPS * 100")"
            else
                push_run "push.batch_plain.c$c" "$c" plain_insert_many.sql -D "jobs=$JOBS100"
                rec "push.batch_plain.c$c" "$(calc "$PGB_TPS * 100")"
            fi
        done
    }
    for rep in $(seq 1 "$REPS"); do
        for c in 1 8; do
            push_run "push.select1.c$c" "$c" select1.sql
            rec "push.select1.c$c" "$PGB_TPS"
            push_run "push.floor.c$c" "$c" floor_insert.sql
            rec "push.floor.c$c" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            push_pair "$c" "$rep"
            qq -c "SELECT queue_set_notify('default', false)"
            push_run "push.quiet.c$c" "$c" push.sql
            rec "push.quiet.c$c" "$PGB_TPS"
            qq -c "SELECT queue_set_notify('default', true)"
            push_run "push.batch_floor.c$c" "$c" floor_insert_many.sql -D "jobs=$JOBS100"
            rec "push.batch_floor.c$c" "$(calc "$PGB_TPS * 100")"
            batch_pair "$c" "$rep"
            # the pgmq-shaped reference (sql/setup.sql): send of the same
            # payload, and send_batch of the same 100 payloads as a jsonb[]
            push_run "push.pgmqref.c$c" "$c" pgmqref_send.sql
            rec "push.pgmqref.c$c" "$PGB_TPS"
            push_run "push.batch_pgmqref.c$c" "$c" pgmqref_send_batch.sql -D "msgs=$MSGS100"
            rec "push.batch_pgmqref.c$c" "$(calc "$PGB_TPS * 100")"
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
    qq -c "TRUNCATE queue_jobs, floor_jobs, pgmqref.q_bench"
}

# ============================================================= 2. drain, one job per claim
# drain_run KEY REP SYSTEM WORKERS SECS JOBS: a fresh backlog of JOBS, one
# timed one-job drain of SYSTEM, its jobs/s recorded as KEY (run REP)
drain_run() {
    local key=$1 rep=$2 sys=$3 workers=$4 secs=$5 jobs=$6 before after
    drain_prepare "$sys" "$jobs"
    before=$(count "$(table_of "$sys")")
    pgb "$key.r$rep" "$workers" -T "$secs" -f "$BENCH/scripts/$(script_of "$sys")"
    after=$(count "$(table_of "$sys")")
    # a backlog drained dry would time idle claims too
    (( after > 0 )) || echo "warning: $key ran out of jobs: raise its backlog" >&2
    rec "$key" "$(calc "($before - $after) / $PGB_SECS")"
}

# A backlog of 100,000; N workers each claim one job and complete it, in
# two transactions (claim commits, then the completion commits), for SECS.
# pgmq-shaped: read('bench', 60, 1), then delete of the message read.
scenario_drain1() {
    log "2. drain one job per claim (ours, floor UPDATE+DELETE, plain-sql, pgmq-shaped read+delete), backlog $BACKLOG, the floor's twice that"
    local jobs
    for rep in $(seq 1 "$REPS"); do
        for w in 2 8; do
            for sys in ours floor plain pgmqref; do
                # the floor's 2 workers emptied 100,000 jobs within the 3 s: twice that
                jobs=$BACKLOG
                [[ $sys == floor ]] && jobs=$(( 2 * BACKLOG ))
                drain_run "drain1.$sys.w$w" "$rep" "$sys" "$w" "$SECS" "$jobs"
                if [[ $sys == ours && $rep == 1 ]]; then explain_claim "drain1-w$w-after"; fi
            done
        done
    done
}

# ============================================================= 2s. drain, one job per claim, sustained
# Scenario 2's loop at 8 workers for SUSTAINED_SECS from SUSTAINED_BACKLOG
# jobs: workers drain for minutes, not for the 3 s after a VACUUM that
# scenario 2 measures.  A claim that walks past the index entries of the
# jobs claimed since the last VACUUM slows down as they pile up; one that
# does not, keeps its pace.  The floor drains about twice as fast as the
# others (on a quiet machine it emptied 300,000 jobs in less than 15 s), so
# its backlog is twice theirs.
scenario_drain1s() {
    log "2s. sustained one-job drain, 8 workers, $SUSTAINED_SECS s from $SUSTAINED_BACKLOG jobs, the floor from twice that (ours, floor, plain-sql, pgmq-shaped)"
    local jobs
    for rep in $(seq 1 "$REPS"); do
        for sys in ours floor plain pgmqref; do
            jobs=$SUSTAINED_BACKLOG
            [[ $sys == floor ]] && jobs=$(( 2 * SUSTAINED_BACKLOG ))
            drain_run "drain1s.$sys.w8" "$rep" "$sys" 8 "$SUSTAINED_SECS" "$jobs"
        done
    done
}

# ============================================================= 3. drain, batched
# Claim 100 per call, complete them in one call; BATCH_CALLS calls in all
# (x100 jobs) from a backlog of 100,000.  PgQ: one consumer reads the same
# number of events in batches of 100 (ticks every 100 events); PgQ has no
# shared consumption, so it is one consumer.
scenario_drainb() {
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
}

# ============================================================= 4. depth
# One worker's claim+complete (pgbench's average transaction time) at a
# shallow backlog of 10,000 ready jobs, and at a deep one: DEEP_READY ready
# jobs, 100,000 delayed jobs of higher priority (due in an hour) and
# 10,000 held jobs of the highest priority (claimed with a 1-hour lease).
scenario_depth() {
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
}
