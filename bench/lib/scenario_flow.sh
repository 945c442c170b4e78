# shellcheck shell=bash
# bench/run.sh's scenario 12: what flow control costs the claim.

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
scenario_flow() {
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
}
