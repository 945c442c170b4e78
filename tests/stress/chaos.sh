#!/usr/bin/env bash
# tests/stress/chaos.sh: chaos test of the jobqueue worker runtime and the
# server side of claims, leases and fencing.
#
# A producer pushes JOBS jobs (3,000; 100,000 with JQ_LONG=1) in batches
# (queue_push_many) while K=4 `jobqueue work` processes (2 handler threads
# each, 2 s leases) run them. All along, the harness SIGKILLs a random worker
# every 200-600 ms and starts a new one in its place; once, when half the
# jobs are pushed, it restarts the server with `pg_ctl restart -m immediate`.
# When the producer is done and the queue is empty, the kills stop, a probe
# batch checks that every live worker still takes jobs, and the workers are
# stopped with SIGTERM. Then it checks: every pushed job completed at least
# once, none left in queue_jobs or queue_failed_jobs, none lost, and every
# duplicate completion explained by a killed worker or by the restart.
#
# Completions are recorded by the handler (tests/stress/chaos-handler.sh),
# which appends a line to a file of its worker incarnation; the harness loads
# the files into the table chaos_results at the end. A file rather than a
# psql call per job because (1) psql costs a process and a backend per job,
# several times the cost of the job itself on a 2-core machine, and (2) a file
# keeps working while the server restarts, so the record of a run can never
# be lost or doubled by the chaos the test itself causes.
#
# Needs: the PG* environment of a running throwaway cluster started by
# scripts/cluster.sh (JQ_PGDATA and JQ_SERVER_LOG exported), the extension
# installed, and JOBQUEUE_BIN = the jobqueue CLI binary. Creates (and on
# success drops) the database $CHAOS_DB (default chaos).
#
# Knobs: JQ_LONG=1 (100,000 jobs, longer limits), CHAOS_JOBS, CHAOS_WORKERS,
# CHAOS_SEED (for $RANDOM: which worker is killed, and when), CHAOS_KEEP=1
# (keep the work directory and the database also on success).
#
# Output: the counts (pushed, completed, duplicates, failed, lost, kills,
# restarts), one "ok"/"not ok" line per check, and "N passed, N failed";
# exit status 1 when a check failed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export PATH="${JQ_PGBIN:-/usr/lib/postgresql/15/bin}:$PATH"

die() { echo "chaos.sh: $*" >&2; exit 2; }
[[ -n ${JOBQUEUE_BIN:-} && -x ${JOBQUEUE_BIN} ]] || die "set JOBQUEUE_BIN to the jobqueue CLI binary"
[[ -n ${JQ_PGDATA:-} && -d ${JQ_PGDATA} ]] || die "JQ_PGDATA is not set: start a cluster with scripts/cluster.sh"
[[ -n ${JQ_SERVER_LOG:-} && -f ${JQ_SERVER_LOG} ]] || die "JQ_SERVER_LOG is not set"
[[ -n ${PGHOST:-} && -n ${PGPORT:-} ]] || die "PGHOST/PGPORT are not set"
export PGUSER=${PGUSER:-postgres}

if [[ ${JQ_LONG:-0} == 1 ]]; then
    JOBS=${CHAOS_JOBS:-100000}
    RUN_LIMIT=${CHAOS_RUN_LIMIT:-3600}    # s, until the producer is done
    DRAIN_LIMIT=${CHAOS_DRAIN_LIMIT:-600}  # s, from then until the queue is empty
else
    JOBS=${CHAOS_JOBS:-3000}
    RUN_LIMIT=${CHAOS_RUN_LIMIT:-900}
    DRAIN_LIMIT=${CHAOS_DRAIN_LIMIT:-180}
fi
WORKERS=${CHAOS_WORKERS:-4}
DB=${CHAOS_DB:-chaos}
QUEUE=chaos
BATCH=500            # jobs per queue_push_many call
BACKLOG=1500         # the producer waits while more jobs than this are pending
MAX_ATTEMPTS=25
PROBE=1000           # jobs pushed after the chaos to see every live worker take some
                     # (a worker claims up to its threads + claim-ahead at once: 100 and more)
KILL_MIN_MS=${CHAOS_KILL_MIN_MS:-200}
KILL_MAX_MS=${CHAOS_KILL_MAX_MS:-600}
SEED=${CHAOS_SEED:-$(( $$ ^ $(date +%s) ))}
RANDOM=$SEED

DSN="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$DB"
WORK=$(mktemp -d /tmp/jq-chaos.XXXXXX)
mkdir -p "$WORK/done" "$WORK/log"
LOG_START=$(stat -c %s "$JQ_SERVER_LOG")

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
qdb() { q -d "$DB" "$@"; }
now() { local up _; read -r up _ < /proc/uptime; NOW=$up; NOW_CS=${up/./}; NOW_CS=$((10#$NOW_CS)); }
event() { now; printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$NOW" "${5:-}" >> "$WORK/events"; }

now; T0_CS=$NOW_CS
echo "chaos: $JOBS jobs, $WORKERS workers x 2 handlers, lease 2s, seed $SEED, work dir $WORK"

# --- database ------------------------------------------------------------
q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || die "cannot create database $DB"
qdb <<'SQL' || die "cannot set up database $DB"
CREATE EXTENSION jobqueue;
CREATE TABLE chaos_pushed (seq int PRIMARY KEY, id bigint NOT NULL UNIQUE, probe boolean NOT NULL);
CREATE TABLE chaos_results (job_id bigint, wid text, attempt int, at numeric, payload jsonb);
CREATE TABLE chaos_events (wid text, slot int, pid int, event text, at numeric, rc int);
SQL

# --- workers ---------------------------------------------------------------
declare -a SLOT_PID SLOT_WID
WSEQ=0
KILLS=0
SELF_EXITS=0

start_worker() {
    local slot=$1 wid
    WSEQ=$((WSEQ + 1))
    wid=w$WSEQ
    CHAOS_WID=$wid CHAOS_OUT="$WORK/done/$wid" "$JOBQUEUE_BIN" --dsn "$DSN" work --queues "$QUEUE" \
        --exec ". '$HERE/chaos-handler.sh'" --concurrency 2 --lease 2s --grace 1s --quiet \
        > /dev/null 2> "$WORK/log/$wid.err" &
    SLOT_PID[$slot]=$!
    SLOT_WID[$slot]=$wid
    event "$wid" "$slot" "$!" start
}

alive() {  # pid: running (not gone, not a zombie)
    local state _
    [[ -r /proc/$1/stat ]] || return 1
    read -r _ _ state _ < "/proc/$1/stat" 2>/dev/null || return 1
    [[ $state != Z && $state != X ]]
}

# A worker that ended by itself: record it and start another.
reap_dead() {
    local slot pid rc
    for ((slot = 0; slot < WORKERS; slot++)); do
        pid=${SLOT_PID[$slot]}
        alive "$pid" && continue
        wait "$pid"; rc=$?
        SELF_EXITS=$((SELF_EXITS + 1))
        event "${SLOT_WID[$slot]}" "$slot" "$pid" exit "$rc"
        start_worker "$slot"
    done
}

kill_random() {
    local slot=$((RANDOM % WORKERS)) pid
    pid=${SLOT_PID[$slot]}
    alive "$pid" || return 0   # ended by itself: reap_dead records it
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    KILLS=$((KILLS + 1))
    event "${SLOT_WID[$slot]}" "$slot" "$pid" kill 137
    start_worker "$slot"
}

cleanup() {
    local pid
    for pid in "${SLOT_PID[@]}" ${PRODUCER_PID:-}; do
        alive "$pid" && kill -KILL "$pid" 2>/dev/null
    done
    wait 2>/dev/null
}
trap cleanup EXIT

# --- producer --------------------------------------------------------------
# Pushes seq first..last in one transaction that also records the ids in
# chaos_pushed, so after an error (the restart) a look at chaos_pushed says
# whether the batch committed: pushed exactly once, never twice, never lost.
push_sql() {  # first last backlog-bound(0: none) probe
    local cond="true"
    [[ $3 -gt 0 ]] && cond="queue_pending('$QUEUE') < $3"
    cat <<SQL
WITH pushed AS (
    INSERT INTO chaos_pushed (seq, id, probe)
    SELECT $1 + t.o - 1, t.id, $4
    FROM unnest(CASE WHEN $cond THEN queue_push_many((
             SELECT jsonb_agg(jsonb_build_object('name', 'chaos', 'queue', '$QUEUE', 'max_attempts', $MAX_ATTEMPTS,
                                                 'payload', jsonb_build_object('seq', g)) ORDER BY g)
             FROM generate_series($1, $2) g))
         ELSE '{}'::bigint[] END) WITH ORDINALITY AS t(id, o)
    RETURNING 1)
SELECT count(*) FROM pushed
SQL
}

push_range() {  # first last backlog probe; 0 = pushed, 1 = backlog full, 2 = broken
    local n want=$(($2 - $1 + 1))
    if n=$(qdb -c "$(push_sql "$@")" 2>> "$WORK/producer.err"); then
        [[ $n == "$want" ]] && return 0
        [[ $n == 0 ]] && return 1
        echo "pushed $n of $want in one batch" >> "$WORK/producer.err"; return 2
    fi
    # Unknown outcome: ask until the server answers.
    for ((;;)); do
        if n=$(qdb -c "SELECT count(*) FROM chaos_pushed WHERE seq BETWEEN $1 AND $2" 2>/dev/null); then
            [[ $n == "$want" ]] && return 0
            [[ $n == 0 ]] && return 1
            echo "batch $1..$2 half committed ($n of $want)" >> "$WORK/producer.err"; return 2
        fi
        sleep 0.2
    done
}

producer() {
    local first=1 last rc
    while ((first <= JOBS)); do
        last=$((first + BATCH - 1)); ((last > JOBS)) && last=$JOBS
        push_range "$first" "$last" "$BACKLOG" false; rc=$?
        case $rc in
            0) echo "$last" > "$WORK/progress.tmp" && mv "$WORK/progress.tmp" "$WORK/progress"
               first=$((last + 1)) ;;
            1) sleep 1 ;;
            *) echo failed > "$WORK/producer.failed"; exit 1 ;;
        esac
    done
}

echo 0 > "$WORK/progress"
for ((slot = 0; slot < WORKERS; slot++)); do start_worker "$slot"; done
producer &
PRODUCER_PID=$!

# --- chaos -----------------------------------------------------------------
RESTARTS=0
RESTART_STATE=none    # none, running, done
RESTART_BEGIN= RESTART_END= RESTART_RC=
PRODUCER_DONE_CS=
DRAINED=0
TIMED_OUT=
LAST_CHECK_CS=0
RESTART_PID=
left=unknown

# Sleeps without a process: read with a timeout from a pipe nobody writes to.
exec {NAP_FD}<> <(:)
nap() { read -r -t "$1" -u "$NAP_FD" _; }
while :; do
    ms=$((KILL_MIN_MS + RANDOM % (KILL_MAX_MS - KILL_MIN_MS + 1)))
    nap "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    reap_dead
    kill_random
    now
    read -r progress < "$WORK/progress"

    if [[ $RESTART_STATE == none ]] && ((progress >= JOBS / 2)); then
        RESTART_STATE=running
        event server "" "" restart_begin
        RESTART_BEGIN=$NOW
        (
            bash "$REPO/scripts/restart-cluster.sh" immediate > "$WORK/restart.log" 2>&1
            rc=$?
            read -r up _ < /proc/uptime
            echo "$up $rc" > "$WORK/restart.end"
        ) &
        RESTART_PID=$!
    fi
    if [[ $RESTART_STATE == running && -s $WORK/restart.end ]]; then
        wait "$RESTART_PID"
        read -r RESTART_END RESTART_RC < "$WORK/restart.end"
        printf 'server\t\t\trestart_end\t%s\t%s\n' "$RESTART_END" "$RESTART_RC" >> "$WORK/events"
        RESTART_STATE=done
        RESTARTS=1
        echo "chaos: server restarted at +$(( ${RESTART_BEGIN/./} / 100 - T0_CS / 100 ))s (exit status $RESTART_RC)"
    fi

    if [[ -z $PRODUCER_DONE_CS ]] && ! alive "$PRODUCER_PID"; then
        wait "$PRODUCER_PID"
        PRODUCER_DONE_CS=$NOW_CS
        echo "chaos: producer done at +$(( (NOW_CS - T0_CS) / 100 ))s ($progress pushed), $KILLS kills so far"
        [[ -e $WORK/producer.failed ]] && { TIMED_OUT="the producer failed"; break; }
    fi
    if [[ -n $PRODUCER_DONE_CS && $RESTART_STATE == done ]] && ((NOW_CS - LAST_CHECK_CS >= 100)); then
        LAST_CHECK_CS=$NOW_CS
        left=$(qdb -c "SELECT count(*) FROM queue_jobs WHERE queue = '$QUEUE'" 2>/dev/null) || left=unknown
        if [[ $left == 0 ]]; then DRAINED=1; break; fi
    fi
    if [[ -z $PRODUCER_DONE_CS ]] && ((NOW_CS - T0_CS > RUN_LIMIT * 100)); then
        TIMED_OUT="the producer was not done after ${RUN_LIMIT}s ($progress of $JOBS pushed)"; break
    fi
    if [[ -n $PRODUCER_DONE_CS ]] && ((NOW_CS - PRODUCER_DONE_CS > DRAIN_LIMIT * 100)); then
        TIMED_OUT="the queue was not empty ${DRAIN_LIMIT}s after the producer was done ($left jobs left)"; break
    fi
done
now; CHAOS_END_CS=$NOW_CS
[[ -n $TIMED_OUT ]] && echo "chaos: $TIMED_OUT" >&2
if [[ $RESTART_STATE == running ]]; then   # only after a timeout
    wait "$RESTART_PID"; read -r RESTART_END RESTART_RC < "$WORK/restart.end"
    printf 'server\t\t\trestart_end\t%s\t%s\n' "$RESTART_END" "$RESTART_RC" >> "$WORK/events"
    RESTARTS=1
fi
if alive "${PRODUCER_PID}"; then kill -KILL "$PRODUCER_PID"; wait "$PRODUCER_PID"; fi
echo "chaos: chaos over at +$(( (CHAOS_END_CS - T0_CS) / 100 ))s: $KILLS kills, $SELF_EXITS workers ended by themselves"

# --- probe: every live worker still takes jobs -----------------------------
reap_dead
PROBE_DONE=0
PROBE_WIDS=()
if ((DRAINED)); then
    sleep 1
    reap_dead
    PROBE_WIDS=("${SLOT_WID[@]}")
    if push_range $((JOBS + 1)) $((JOBS + PROBE)) 0 true; then
        for ((i = 0; i < 300; i++)); do
            left=$(qdb -c "SELECT count(*) FROM queue_jobs WHERE queue = '$QUEUE'" 2>/dev/null) || left=unknown
            [[ $left == 0 ]] && { PROBE_DONE=1; break; }
            sleep 0.1
        done
    fi
    reap_dead
fi

# --- graceful stop -----------------------------------------------------------
declare -a STOP_RC
for ((slot = 0; slot < WORKERS; slot++)); do kill -TERM "${SLOT_PID[$slot]}" 2>/dev/null; done
for ((i = 0; i < 150; i++)); do
    running=0
    for ((slot = 0; slot < WORKERS; slot++)); do alive "${SLOT_PID[$slot]}" && running=1; done
    ((running)) || break
    sleep 0.1
done
for ((slot = 0; slot < WORKERS; slot++)); do
    pid=${SLOT_PID[$slot]}
    if alive "$pid"; then
        kill -KILL "$pid"; wait "$pid"
        STOP_RC[$slot]=hung
        event "${SLOT_WID[$slot]}" "$slot" "$pid" stop_hung 137
    else
        wait "$pid"; rc=$?
        STOP_RC[$slot]=$rc
        event "${SLOT_WID[$slot]}" "$slot" "$pid" stop "$rc"
    fi
done
sleep 0.3   # orphaned handlers of killed workers have long finished; be sure
now; END_CS=$NOW_CS

# --- load and check ----------------------------------------------------------
LOAD_OK=1
cat "$WORK"/done/* > "$WORK/results.tsv" 2>/dev/null
qdb -c "\\copy chaos_results FROM '$WORK/results.tsv'" 2> "$WORK/load.err" || LOAD_OK=0
qdb -c "\\copy chaos_events FROM '$WORK/events' WITH (NULL '')" 2>> "$WORK/load.err" || LOAD_OK=0

declare -A V
while IFS='|' read -r key value; do V[$key]=$value; done < <(qdb -v rb="${RESTART_BEGIN:-0}" -v re="${RESTART_END:-0}" <<'SQL'
CREATE TEMP TABLE runs AS
SELECT r.*, p.seq, p.probe,
       row_number() OVER w AS k, count(*) OVER (PARTITION BY r.job_id) AS n
FROM chaos_results r LEFT JOIN chaos_pushed p ON p.id = r.job_id
WINDOW w AS (PARTITION BY r.job_id ORDER BY r.attempt, r.at);
-- The runs before the last of a job: each one's completion was lost. Such a
-- run is explained by a kill of its worker incarnation from 1 s before it (an
-- orphaned command of a killed worker still writes its line) to 5 s after it,
-- or by the restart: from 5 s before it began (lease 2 s, plus slack) to 15 s
-- after it ended (the workers' reconnect backoff grows to 5 s between tries).
CREATE TEMP TABLE lost_runs AS
SELECT r.*,
       EXISTS (SELECT 1 FROM chaos_events e
               WHERE e.wid = r.wid AND e.event = 'kill' AND e.at BETWEEN r.at - 1 AND r.at + 5) AS by_kill,
       EXISTS (SELECT 1 FROM chaos_events e
               WHERE e.wid = r.wid AND e.event = 'kill') AS worker_killed,
       r.at BETWEEN :rb - 5 AND :re + 15 AS by_restart
FROM runs r WHERE r.k < r.n;
SELECT 'pushed', count(*) FROM chaos_pushed
UNION ALL SELECT 'pushed_main', count(*) FROM chaos_pushed WHERE NOT probe
UNION ALL SELECT 'pushed_probe', count(*) FROM chaos_pushed WHERE probe
UNION ALL SELECT 'seq_gaps', (SELECT count(*) FROM generate_series(1, (SELECT max(seq) FROM chaos_pushed)) g
                              WHERE g NOT IN (SELECT seq FROM chaos_pushed))
UNION ALL SELECT 'runs', count(*) FROM chaos_results
UNION ALL SELECT 'completed', count(DISTINCT p.id) FROM chaos_pushed p JOIN chaos_results r ON r.job_id = p.id
UNION ALL SELECT 'not_completed', count(*) FROM chaos_pushed p WHERE NOT EXISTS (SELECT 1 FROM chaos_results r WHERE r.job_id = p.id)
UNION ALL SELECT 'dup_jobs', count(*) FROM (SELECT job_id FROM chaos_results GROUP BY job_id HAVING count(*) > 1) d
UNION ALL SELECT 'dup_runs', count(*) FROM lost_runs
UNION ALL SELECT 'dup_by_kill', count(*) FROM lost_runs WHERE by_kill
UNION ALL SELECT 'dup_by_restart', count(*) FROM lost_runs WHERE by_restart AND NOT by_kill
UNION ALL SELECT 'dup_unexplained', count(*) FROM lost_runs WHERE NOT by_kill AND NOT by_restart
UNION ALL SELECT 'dup_unexplained_killed_later', count(*) FROM lost_runs WHERE NOT by_kill AND NOT by_restart AND worker_killed
UNION ALL SELECT 'same_attempt_twice', count(*) FROM (SELECT 1 FROM chaos_results GROUP BY job_id, attempt HAVING count(*) > 1) d
UNION ALL SELECT 'phantom_runs', count(*) FROM runs WHERE seq IS NULL
UNION ALL SELECT 'payload_mismatch', count(*) FROM runs
          WHERE seq IS NOT NULL AND payload <> 'null' AND (payload->>'seq')::int IS DISTINCT FROM seq
-- no payload on stdin: only when the worker was killed just then
UNION ALL SELECT 'payload_missing', count(*) FROM runs WHERE payload = 'null'
UNION ALL SELECT 'payload_missing_unexplained', count(*) FROM runs r
          WHERE payload = 'null' AND NOT EXISTS (SELECT 1 FROM chaos_events e
              WHERE e.wid = r.wid AND e.event = 'kill' AND e.at BETWEEN r.at - 1 AND r.at + 1)
UNION ALL SELECT 'max_attempt', coalesce(max(attempt), 0) FROM chaos_results
UNION ALL SELECT 'in_queue', count(*) FROM queue_jobs WHERE queue = 'chaos'
UNION ALL SELECT 'failed', count(*) FROM queue_failed_jobs WHERE queue = 'chaos'
UNION ALL SELECT 'lost', count(*) FROM chaos_pushed p
          WHERE NOT EXISTS (SELECT 1 FROM chaos_results r WHERE r.job_id = p.id)
            AND NOT EXISTS (SELECT 1 FROM queue_jobs j WHERE j.id = p.id)
            AND NOT EXISTS (SELECT 1 FROM queue_failed_jobs f WHERE f.id = p.id OR f.job_id = p.id)
UNION ALL SELECT 'incarnations', count(*) FROM chaos_events WHERE event = 'start'
UNION ALL SELECT 'exits_outside_restart', count(*) FROM chaos_events
          WHERE event = 'exit' AND NOT at BETWEEN :rb - 1 AND :re + 15
UNION ALL SELECT 'exits_by_signal', count(*) FROM chaos_events WHERE event = 'exit' AND rc > 128
-- workers that lived through the restart and 8 s beyond it: did they complete jobs after it?
UNION ALL SELECT 'restart_survivors', count(*) FROM chaos_events s
          WHERE s.event = 'start' AND s.at < :rb
            AND NOT EXISTS (SELECT 1 FROM chaos_events e WHERE e.wid = s.wid AND e.event <> 'start' AND e.at < :re + 8)
UNION ALL SELECT 'restart_survivors_idle', count(*) FROM chaos_events s
          WHERE s.event = 'start' AND s.at < :rb
            AND NOT EXISTS (SELECT 1 FROM chaos_events e WHERE e.wid = s.wid AND e.event <> 'start' AND e.at < :re + 8)
            AND NOT EXISTS (SELECT 1 FROM chaos_results r WHERE r.wid = s.wid AND r.at > :re)
UNION ALL SELECT 'survived_restart_and_worked', count(DISTINCT r.wid) FROM chaos_results r
          JOIN chaos_events s ON s.wid = r.wid AND s.event = 'start' AND s.at < :rb
          WHERE r.at > :re;
SQL
)

# Jobs of the probe per worker incarnation alive during it.
PROBE_IDLE=()
for wid in "${PROBE_WIDS[@]}"; do
    n=$(qdb -c "SELECT count(*) FROM chaos_results r JOIN chaos_pushed p ON p.id = r.job_id AND p.probe WHERE r.wid = '$wid'" 2>/dev/null)
    [[ $n =~ ^[0-9]+$ && $n -gt 0 ]] || PROBE_IDLE+=("$wid")
done

# What the workers said on stderr (--quiet: only problems), numbers masked.
WORKER_MESSAGES=$(cat "$WORK"/log/*.err 2>/dev/null | grep -v '^jobqueue work: stopped' |
    sed 's/[0-9]\{3,\}/N/g' | sort | uniq -c | sort -rn)
# Worker::record gave up on an outcome (the job then runs again when its
# lease ends). worker.hpp: "Lost connections are re-opened with backoff;
# completions are fenced by the claim's token, so repeating one after a lost
# answer can neither lose nor double-complete a job": a lost connection must
# be retried, never given up.
RECORD_GIVEUPS=$(cat "$WORK"/log/*.err 2>/dev/null | grep -c "recording a job's outcome failed")

CRASHES=$(tail -c +$((LOG_START + 1)) "$JQ_SERVER_LOG" | grep -E 'terminated by signal|PANIC' || true)

echo
echo "counts: pushed ${V[pushed]:-?} (${V[pushed_main]:-?} + ${V[pushed_probe]:-?} probe), completed ${V[completed]:-?}" \
     "(${V[runs]:-?} runs), duplicates ${V[dup_jobs]:-?} jobs / ${V[dup_runs]:-?} extra runs" \
     "(${V[dup_by_kill]:-?} by a kill, ${V[dup_by_restart]:-?} by the restart, ${V[dup_unexplained]:-?} unexplained)," \
     "failed ${V[failed]:-?}, left in queue ${V[in_queue]:-?}, lost ${V[lost]:-?}, kills $KILLS, restarts $RESTARTS," \
     "worker incarnations ${V[incarnations]:-?}, ended by themselves $SELF_EXITS, highest attempt ${V[max_attempt]:-?}," \
     "restart survivors ${V[restart_survivors]:-?} (worked after it: ${V[survived_restart_and_worked]:-?})," \
     "time $(( (END_CS - T0_CS) / 100 ))s"

if [[ -n $WORKER_MESSAGES ]]; then
    echo "worker messages on stderr (count, text; over all $WSEQ incarnations):"
    echo "$WORKER_MESSAGES" | head -n 8 | cut -c1-220
fi

PASS=0 FAIL=0
check() {  # description, then a test command
    local what=$1; shift
    if "$@"; then PASS=$((PASS + 1)); echo "ok - $what"; else FAIL=$((FAIL + 1)); echo "not ok - $what"; fi
}
is() { [[ ${V[$1]:-x} == "$2" ]]; }

check "the chaos phase ended with an empty queue in time${TIMED_OUT:+ ($TIMED_OUT)}" test -z "$TIMED_OUT"
check "the result files and events loaded" test "$LOAD_OK" = 1
check "pushed $JOBS jobs once each (plus $PROBE probe jobs)" \
    eval 'is pushed_main "$JOBS" && is pushed_probe "$((DRAINED ? PROBE : 0))" && is seq_gaps 0'
check "every pushed job completed at least once" eval 'is not_completed 0 && [[ ${V[completed]} == "${V[pushed]}" ]]'
check "no job left in queue_jobs" is in_queue 0
check "no job in queue_failed_jobs" is failed 0
check "no job lost" is lost 0
check "no run of a job that was never pushed, every payload matches its job" \
    eval 'is phantom_runs 0 && is payload_mismatch 0'
check "a command got no payload only when its worker was killed at that moment (${V[payload_missing]:-?} runs)" \
    is payload_missing_unexplained 0
check "no claim ran twice (one run per job and attempt)" is same_attempt_twice 0
check "every duplicate completion explained by a kill or the restart" is dup_unexplained 0
check "the server restarted once (pg_ctl restart -m immediate)" eval '[[ $RESTARTS == 1 && $RESTART_RC == 0 ]]'
check "workers were killed ($KILLS kills)" test "$KILLS" -gt 0
check "no worker ended by itself except around the restart" eval 'is exits_outside_restart 0 && is exits_by_signal 0'
check "workers that lived 8s past the restart completed jobs after it (${V[restart_survivors]:-?} such workers)" is restart_survivors_idle 0
check "every live worker took probe jobs after the chaos" \
    eval '((PROBE_DONE)) && ((${#PROBE_IDLE[@]} == 0))'
check "no worker gave up recording a job's outcome after a lost connection ($RECORD_GIVEUPS times)" \
    test "$RECORD_GIVEUPS" = 0
check "every worker stopped on SIGTERM with status 0" eval '[[ "${STOP_RC[*]}" =~ ^(0 )*0$ ]]'
check "no server process crashed (no 'terminated by signal' or PANIC in the server log)" test -z "$CRASHES"

if ((FAIL)); then
    echo
    echo "---- details (work dir $WORK, database $DB kept) ----"
    [[ -s $WORK/producer.err ]] && { echo "producer errors:"; tail -n 5 "$WORK/producer.err"; }
    [[ -s $WORK/load.err ]] && { echo "load errors:"; cat "$WORK/load.err"; }
    [[ -n $CRASHES ]] && { echo "server log:"; echo "$CRASHES" | head -n 10; }
    ((${#PROBE_IDLE[@]})) && echo "workers without probe jobs: ${PROBE_IDLE[*]}"
    echo "worker stop statuses: ${STOP_RC[*]}"
    qdb -v rb="${RESTART_BEGIN:-0}" -v re="${RESTART_END:-0}" <<'SQL'
\pset footer off
\echo 'unexplained duplicate runs (first 10): the earlier run, its worker, and that worker''s events'
SELECT r.job_id, r.wid, r.attempt, r.at,
       (SELECT string_agg(e.event || '@' || e.at, ' ' ORDER BY e.at) FROM chaos_events e WHERE e.wid = r.wid) AS worker_events,
       (SELECT string_agg(x.wid || '#' || x.attempt || '@' || x.at, ' ' ORDER BY x.attempt)
        FROM chaos_results x WHERE x.job_id = r.job_id) AS all_runs
FROM (SELECT c.*, row_number() OVER (PARTITION BY c.job_id ORDER BY c.attempt, c.at) AS k,
             count(*) OVER (PARTITION BY c.job_id) AS n FROM chaos_results c) r
WHERE r.k < r.n
  AND NOT EXISTS (SELECT 1 FROM chaos_events e WHERE e.wid = r.wid AND e.event = 'kill' AND e.at BETWEEN r.at - 1 AND r.at + 5)
  AND NOT r.at BETWEEN :rb - 5 AND :re + 15
ORDER BY r.at LIMIT 10;
\echo 'failed jobs (first 5)'
SELECT job_id, attempts, left(error, 200) AS error FROM queue_failed_jobs WHERE queue = 'chaos' ORDER BY job_id LIMIT 5;
\echo 'not completed (first 5)'
SELECT p.seq, p.id, j.attempts, j.ready, j.reserved_until, j.reserved_by, left(j.last_error, 100) AS last_error
FROM chaos_pushed p LEFT JOIN queue_jobs j ON j.id = p.id
WHERE NOT EXISTS (SELECT 1 FROM chaos_results r WHERE r.job_id = p.id) ORDER BY p.seq LIMIT 5;
SQL
fi
echo "$PASS passed, $FAIL failed"

if ((FAIL == 0)) && [[ ${CHAOS_KEEP:-0} != 1 ]]; then
    rm -rf -- "$WORK"
    q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
fi
((FAIL == 0))
