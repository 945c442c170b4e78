#!/usr/bin/env bash
# tests/ring/dump.sh - pg_dump / restore with the storage ring (1.3).
#
# A. A database created at 1.2 with a live backlog (pending, delayed, held,
#    keyed and failed jobs) and updated to 1.3, then used at 1.3 (a job
#    pushed into the ring, one claimed there) and updated to the newest, is
#    dumped (custom format and
#    plain SQL) and restored into new databases.  Checked in each restored
#    database: every job (every column, ring included), failed row and
#    sequence is as in the source; the jobs held at 1.2 and at 1.3 complete
#    with their tokens; unique keys answer with their holders; new ids and
#    tokens continue above the old ones; the delayed job is not due; a
#    failed job retries; the ring rotates.
# B. A dump racing a rotation.  pg_dump takes its snapshot first and locks
#    the tables it dumps afterwards, one by one; a rotation that commits in
#    between has moved jobs (new row versions the dump's snapshot cannot
#    see) and truncated their partition (TRUNCATE is not MVCC-safe: the
#    snapshot sees the partition empty).  The window is made wide on
#    purpose: another session holds a lock on a table pg_dump locks before
#    the queue's, so pg_dump waits there with its snapshot taken; a rotation
#    of a ring partition with live jobs runs meanwhile; then the lock goes.
#    Checked: the restored database has every job of the source.
#
# Usage: needs a running cluster (PGHOST/PGPORT/PGUSER=postgres, as
# scripts/test.sh exports) and `make install` done.  Knob:
#   JQ_DUMP_SELFTEST=1   change a job in the restored database on purpose:
#                        the run must fail
# Last line: "N passed, N failed".
set -uo pipefail

SRC=jq_ring_dump_src_$$
DST=jq_ring_dump_dst_$$
DSTP=jq_ring_dump_plain_$$
RACE=jq_ring_dump_race_$$
RACED=jq_ring_dump_raced_$$
WORK=$(mktemp -d /tmp/jq-ring-dump.XXXXXX)
CHECKS_SUITE=ring_dump
source "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.bash"
q() { timeout 60 psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

cleanup() {
    [[ -n ${HOLDER_PID:-} ]] && kill "$HOLDER_PID" 2>/dev/null
    [[ -n ${DUMP_PID:-} ]] && kill "$DUMP_PID" 2>/dev/null
    for d in "$SRC" "$DST" "$DSTP" "$RACE" "$RACED"; do
        dropdb --if-exists --force "$d" >/dev/null 2>&1 || true
    done
    rm -rf -- "$WORK"
}
trap cleanup EXIT
[[ -n ${JQ_KEEP:-} ]] && trap - EXIT

# Every job (every column), failed row and sequence position, in order.
snapshot_sql() {
    cat <<'SQL'
SELECT 'job', j.* FROM queue_jobs j ORDER BY id;
SELECT 'failed', f.* FROM queue_failed_jobs f ORDER BY id;
SELECT 'ids', pg_sequence_last_value(pg_get_serial_sequence('queue_jobs', 'id')::regclass);
SELECT 'tokens', last_value FROM queue_job_tokens;
SELECT 'extension', extversion FROM pg_extension WHERE extname = 'jobqueue';
SQL
}

# ================================================== A: 1.2 updated to 1.3
echo "== A: a database updated from 1.2, used at 1.3, dumped and restored"
createdb "$SRC" || die "create the source database"
q -d "$SRC" > "$WORK/ids.env" <<'SQL' || die "fill the source at 1.2 and update it"
\set QUIET on
CREATE EXTENSION jobqueue VERSION '1.2';
SELECT 'P1=' || queue_push('pending', '{"n": 1}', 'rd_q', priority => 3);
SELECT 'D1=' || queue_push('delayed', '{}', 'rd_d', '2 hours');
SELECT 'K1=' || queue_push('keyed', '{}', 'rd_k', unique_key => 'rd-key');
SELECT 'H0=' || queue_push('held-1.2', '{}', 'rd_h');
SELECT 'H1=' || id || E'\nT1=' || token FROM queue_reserve('{rd_h}', '1 hour', 'worker-1.2');
SELECT 'F0=' || queue_push('failed', '{}', 'rd_f');
SELECT 'FF=' || queue_fail(id, token, 'failed at 1.2') FROM queue_reserve('{rd_f}');
ALTER EXTENSION jobqueue UPDATE TO '1.3';
-- used at 1.3: a job pushed into the ring, another claimed there
SELECT 'R1=' || queue_push('ring-pending', '{}', 'rd_q');
SELECT 'H3=' || queue_push('held-1.3', '{}', 'rd_h3');
SELECT 'T3=' || token FROM queue_reserve('{rd_h3}', '1 hour', 'worker-1.3');
-- then updated to the newest version, which a restore creates
ALTER EXTENSION jobqueue UPDATE;
SELECT 'MAXID=' || pg_sequence_last_value(pg_get_serial_sequence('queue_jobs', 'id')::regclass);
SELECT 'MAXTOKEN=' || (SELECT last_value FROM queue_job_tokens);
SQL
# shellcheck disable=SC1090
source "$WORK/ids.env"
check "source: updated from 1.3 to the newest with jobs in the long partition and in the ring" "$(q -d "$SRC" -c "
    SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'jobqueue')
       AND (SELECT count(*) FROM queue_jobs_long) = 4
       AND (SELECT count(*) FROM queue_jobs WHERE ring IN (0, 1)) = 2
       AND (SELECT count(*) FROM queue_failed_jobs) = 1 AND '$FF' = 'true'
    FROM pg_extension WHERE extname = 'jobqueue'")"
q -d "$SRC" -f <(snapshot_sql) > "$WORK/src.txt" || die "snapshot of the source"

pg_dump -Fc -f "$WORK/src.dump" "$SRC" 2> "$WORK/dump.err" || die "pg_dump -Fc" "$(cat "$WORK/dump.err")"
pg_dump -Fp -f "$WORK/src.sql" "$SRC" 2>> "$WORK/dump.err" || die "pg_dump -Fp" "$(cat "$WORK/dump.err")"
check "pg_dump ran without warnings" "$([[ ! -s $WORK/dump.err ]] && echo t || echo f)" "$(head -c 500 "$WORK/dump.err")"
check "the dump holds the rows of the three partitions" "$(for p in ring0 ring1 long; do
    grep -q "COPY public.queue_jobs_$p " "$WORK/src.sql" || { echo f; exit; }; done; echo t)"
createdb "$DST" || die "create the restore database"
pg_restore --exit-on-error -d "$DST" "$WORK/src.dump" 2> "$WORK/restore.err"
check "pg_restore succeeded" "$([[ $? == 0 && ! -s $WORK/restore.err ]] && echo t || echo f)" "$(head -c 500 "$WORK/restore.err")"
createdb "$DSTP" || die "create the plain restore database"
psql -X -q -v ON_ERROR_STOP=1 -d "$DSTP" -f "$WORK/src.sql" > /dev/null 2> "$WORK/restore_plain.err"
check "psql restore of the plain dump succeeded" "$([[ $? == 0 ]] && echo t || echo f)" "$(head -c 500 "$WORK/restore_plain.err")"
if [[ ${JQ_DUMP_SELFTEST:-0} == 1 ]]; then
    echo "ring_dump: JQ_DUMP_SELFTEST=1: changing a restored job on purpose"
    q -d "$DST" -c "UPDATE queue_jobs SET attempts = attempts + 1 WHERE id = $P1"
fi

verify_restored() { # verify_restored DB LABEL
    local db=$1 l=$2 name value n=0
    q -d "$db" -f <(snapshot_sql) > "$WORK/$db.txt" 2>&1
    if diff -u "$WORK/src.txt" "$WORK/$db.txt" > "$WORK/$db.diff"; then
        check "$l: jobs (ring included), failed rows, sequences and version as in the source" t
    else
        check "$l: jobs (ring included), failed rows, sequences and version as in the source" f \
            "$(head -n 20 "$WORK/$db.diff")"
    fi
    while IFS='|' read -r name value; do
        [[ -z $name ]] && continue
        n=$((n + 1))
        check "$l: $name" "$value"
    done <<< "$(q -d "$db" -v H1="$H1" -v T1="$T1" -v H3="$H3" -v T3="$T3" -v K1="$K1" -v D1="$D1" \
                  -v F0="$F0" -v R1="$R1" -v MAXID="$MAXID" -v MAXTOKEN="$MAXTOKEN" 2>&1 <<'SQL'
SELECT 'the job held at 1.2 completes with its token|' || queue_delete(:H1, :T1);
SELECT 'the job held at 1.3 (in the ring) completes with its token|' || queue_delete(:H3, :T3);
SELECT 'the unique key answers with its holder|' || (queue_push('again', '{}', 'rd_k', unique_key => 'rd-key') = :K1);
SELECT 'a new push gets an id above the old ones|' || (queue_push('new', '{}', 'rd_n') > :MAXID);
SELECT 'a new claim gets a token above the old ones|' ||
       coalesce((SELECT token > :MAXTOKEN FROM queue_reserve('{rd_n}', '1 minute')), false);
SELECT 'the delayed job is not due|' || NOT EXISTS (SELECT 1 FROM queue_reserve('{rd_d}'));
SELECT 'the pending jobs are claimed and completed|' ||
       coalesce((SELECT count(*) = 2 AND bool_and(queue_delete(id, token)) FROM queue_reserve('{rd_q}', NULL, 'w', 5)), false);
SELECT 'a failed job retries|' || (queue_retry_failed(:F0) = 1);
SELECT 'it is back under its id, in the ring|' || EXISTS (SELECT 1 FROM queue_jobs WHERE id = :F0 AND ring IN (0, 1));
SELECT ring AS f0_ring FROM queue_jobs WHERE id = :F0 \gset
SELECT 'the ring rotates (the partition of the retried job: moved and truncated)|' ||
       (moved >= 1 AND outcome = 'truncated') FROM queue_rotate(:f0_ring);
SELECT 'the retried job completes after the rotation|' ||
       coalesce((SELECT id = :F0 AND queue_delete(id, token) FROM queue_reserve('{rd_f}')), false);
SQL
)"
    check "$l: all 11 behaviour checks ran" "$([[ $n == 11 ]] && echo t || echo f)"
}
verify_restored "$DST" "pg_restore"
verify_restored "$DSTP" "psql restore"

# ================================================== B: a dump racing a rotation
echo "== B: a rotation commits after pg_dump took its snapshot, before it locked the queue"
createdb "$RACE" || die "create the race database"
q -d "$RACE" > /dev/null <<'SQL' || die "fill the race database"
-- created before the extension: pg_dump locks it before the queue's tables
CREATE TABLE aa_first (x int);
CREATE EXTENSION jobqueue;
SELECT queue_push('race-' || i, '{}', 'race_q') FROM generate_series(1, 20) i;
SELECT count(*) FROM queue_reserve('{race_q}', '1 hour', 'race-worker', 5);
UPDATE queue_jobs SET ring = 0;
SQL
JOBS_BEFORE=$(q -d "$RACE" -c "SELECT count(*) FROM queue_jobs")
# a session that holds a lock on aa_first until told to stop
mkfifo "$WORK/holder.in"
psql -X -q -d "$RACE" < "$WORK/holder.in" > "$WORK/holder.out" 2>&1 &
HOLDER_PID=$!
exec 7> "$WORK/holder.in"
echo "BEGIN; LOCK TABLE aa_first IN ACCESS EXCLUSIVE MODE; SELECT 'locked';" >&7
for _ in $(seq 100); do grep -q locked "$WORK/holder.out" && break; sleep 0.1; done
pg_dump -Fc -f "$WORK/race.dump" "$RACE" 2> "$WORK/race.err" &
DUMP_PID=$!
waiting=f
for _ in $(seq 100); do
    waiting=$(q -d "$RACE" -c "SELECT count(*) > 0 FROM pg_stat_activity
                               WHERE application_name = 'pg_dump' AND wait_event_type = 'Lock'")
    [[ $waiting == t ]] && break
    sleep 0.1
done
check "pg_dump waits for its lock on a table before the queue's, its snapshot taken" "$waiting"
ROTATION=$(q -d "$RACE" -c "SELECT moved || ' ' || outcome FROM queue_rotate(0)")
echo "   the rotation of ring 0 while pg_dump waits: $ROTATION (moved, outcome)"
echo "COMMIT;" >&7
exec 7>&-
wait "$DUMP_PID"
dump_rc=$?
DUMP_PID=
wait "$HOLDER_PID" 2>/dev/null
HOLDER_PID=
check "pg_dump finished" "$([[ $dump_rc == 0 ]] && echo t || echo f)" "$(head -c 300 "$WORK/race.err")"
createdb "$RACED" || die "create the raced restore database"
pg_restore --exit-on-error -d "$RACED" "$WORK/race.dump" 2> "$WORK/race_restore.err"
check "pg_restore of the raced dump succeeded" "$([[ $? == 0 ]] && echo t || echo f)" "$(head -c 300 "$WORK/race_restore.err")"
JOBS_RESTORED=$(q -d "$RACED" -c "SELECT count(*) FROM queue_jobs")
check "the dump that raced a rotation kept every job ($JOBS_RESTORED of $JOBS_BEFORE restored)" \
    "$([[ $JOBS_RESTORED == "$JOBS_BEFORE" ]] && echo t || echo f)"

finish
