#!/usr/bin/env bash
# tests/dump/run.sh - pg_dump / restore keeps the queue, and the queue works there.
#
# A database holding pending, reserved (claimed, live lease), delayed,
# released-with-error and failed jobs, unique keys and queue settings (paused,
# default lease, notify off) is dumped with pg_dump and restored into new
# databases, with pg_restore (custom format) and with psql (plain format).
# Checked in each restored database:
#   - every job row is kept column for column: ids, attempts, max_attempts,
#     priority, times (available_at, reserved_until, created_at, deadline),
#     tokens, ready, reserved_by, last_error, unique keys;
#   - failed rows and settings rows are kept column for column;
#   - sequences continue: a new push gets an id above the old ones, a new claim
#     a token above the old ones;
#   - (1.2 and later) a recurring schedule is kept and ticks after the restore;
#   - the queue works: pending jobs are claimed and completed, the job that was
#     held before the dump still completes with its old token, a held unique
#     key still answers with its holder's id, the delayed job is not due until
#     its time (clock_offset), the paused queue hands out nothing, the default
#     lease and notify-off settings still apply, a failed job retries under its
#     own id.
# A second scenario dumps a 1.0 database whose extension lives in a schema
# with a name that needs quoting and restores it where the default version
# is newer.
#
# Usage: needs a running cluster (PGHOST/PGPORT/PGUSER=postgres, as
# scripts/test.sh exports) and `make install` done.  Knobs:
#   JQ_DUMP_SELFTEST=1   change a job in the restored database on purpose:
#                        the run must fail
# Last line: "N passed, N failed".
set -uo pipefail

SRC=jq_dump_src_$$
DST=jq_dump_dst_$$
DSTP=jq_dump_plain_$$
SRC10=jq_dump_src10_$$
DST10=jq_dump_dst10_$$
WORK=$(mktemp -d /tmp/jq-dump.XXXXXX)
SELFTEST=${JQ_DUMP_SELFTEST:-0}
CHECKS_SUITE=dump
source "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.bash"

cleanup() {
    for d in "$SRC" "$DST" "$DSTP" "$SRC10" "$DST10"; do
        dropdb --if-exists --force "$d" >/dev/null 2>&1 || true
    done
    rm -rf -- "$WORK"
}
trap cleanup EXIT


# ================================================== scenario A: 1.1 in public
createdb "$SRC" || die "create source database"
q -d "$SRC" -c "CREATE EXTENSION jobqueue" || die "create extension"
VERSION=$(q -d "$SRC" -c "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")
echo "== scenario A: extension $VERSION in public; dump, restore with pg_restore and with psql"

# Fill the queue; ids and tokens go to psql variables written to a file.
q -d "$SRC" > "$WORK/ids.env" <<'SQL' || die "fill the source database"
\set QUIET on
-- pending, with priority, payload and a unique key
SELECT 'P1=' || queue_push('pending-1', '{"n": 1, "s": "é"}', 'dump_a', priority => 5);
SELECT 'P2=' || queue_push('pending-2', '{"n": 2}', 'dump_a', unique_key => 'uk-pending', max_attempts => 7);
-- delayed, with a unique key and a deadline
SELECT 'D1=' || queue_push('delayed-1', '{}', 'dump_d', '2 hours', unique_key => 'uk-delayed',
                           deadline => clock_timestamp() + interval '1 day');
-- reserved: a live claim of one hour
SELECT 'R0=' || queue_push('reserved-1', '{"held": true}', 'dump_r', unique_key => 'uk-held');
SELECT 'R1=' || id || E'\nRT=' || token FROM queue_reserve('{dump_r}', '1 hour', 'worker-dump');
-- released with an error once: attempts 1, last_error kept, due now
SELECT 'X1=' || queue_push('released-1', '{}', 'dump_x', max_attempts => 5);
SELECT 'XR=' || queue_release(id, token, '0', 'first try failed') FROM queue_reserve('{dump_x}', '1 minute', 'w');
-- failed: by the worker, and released with no attempts left
SELECT 'F1=' || queue_push('failed-1', '{"f": 1}', 'dump_f', priority => -3);
SELECT 'FF=' || queue_fail(id, token, 'fatal: disk on fire') FROM queue_reserve('{dump_f}', '1 minute', 'w');
SELECT 'F2=' || queue_push('failed-2', '{"f": 2}', 'dump_f', max_attempts => 1);
SELECT 'FR=' || queue_release(id, token, '0', '') FROM queue_reserve('{dump_f}', '1 minute', 'w');
-- a paused queue with a job in it
SELECT 'E1=' || queue_push('paused-1', '{}', 'dump_e');
SELECT queue_pause('dump_e');
SELECT queue_set_default_lease('dump_b', '10 minutes');
SELECT queue_set_notify('dump_a', false);
-- the highest id and token handed out so far
SELECT 'MAXID=' || (SELECT max(id) FROM (SELECT id FROM queue_jobs UNION ALL SELECT id FROM queue_failed_jobs) s);
SELECT 'MAXTOKEN=' || (SELECT max(token) FROM queue_jobs);
SQL
# shellcheck disable=SC1090
source "$WORK/ids.env"
check "source filled (held job $R1 token $RT, failed $F1 $F2, max id $MAXID)" \
    "$([[ -n ${R1:-} && -n ${RT:-} && $FF == true && $FR == true && $XR == true ]] && echo t || echo f)"
check "source: 6 jobs, 2 failed rows, 3 settings rows" "$(q -d "$SRC" -c "SELECT
    (SELECT count(*) FROM queue_jobs) = 6 AND (SELECT count(*) FROM queue_failed_jobs) = 2
    AND (SELECT count(*) FROM queue_settings) = 3")"

snapshot_sql() { # snapshot_sql SCHEMA WITH_SETTINGS(1|0) [WITH_SCHEDULES(1|0)]
    echo "SELECT 'job', j.* FROM $1.queue_jobs j ORDER BY id;"
    echo "SELECT 'failed', f.* FROM $1.queue_failed_jobs f ORDER BY id;"
    if [[ $2 == 1 ]]; then
        echo "SELECT 'settings', x.* FROM $1.queue_settings x ORDER BY queue;"
    fi
    if [[ ${3:-0} == 1 ]]; then
        echo "SELECT 'schedule', s.* FROM $1.queue_schedules s ORDER BY name;"
    fi
    echo "SELECT 'sequence', last_value FROM $1.queue_job_tokens;"
    echo "SELECT 'extension', extversion, extnamespace::regnamespace FROM pg_extension WHERE extname = 'jobqueue';"
}
# 1.2 and later: a recurring schedule is part of the backlog too
SCHED=$(q -d "$SRC" -c "SELECT (to_regclass('queue_schedules') IS NOT NULL)::int")
if [[ $SCHED == 1 ]]; then
    q -d "$SRC" -c "SELECT queue_schedule_set('dump-every-5', '*/5 * * * *', 'cron-job', '{\"c\": 1}', 'dump_s',
                                              time_zone => 'Europe/Berlin') IS NOT NULL" >/dev/null \
        || die "create a schedule in the source"
fi
q -d "$SRC" -f <(snapshot_sql public 1 "$SCHED") > "$WORK/src.txt" || die "snapshot of the source"

pg_dump -Fc -f "$WORK/src.dump" "$SRC" 2> "$WORK/dump.err" || die "pg_dump -Fc" "$(cat "$WORK/dump.err")"
pg_dump -Fp -f "$WORK/src.sql" "$SRC" 2>> "$WORK/dump.err" || die "pg_dump -Fp" "$(cat "$WORK/dump.err")"
check "pg_dump ran without warnings" "$([[ ! -s $WORK/dump.err ]] && echo t || echo f)" "$(head -c 500 "$WORK/dump.err")"
check "the dump holds the job rows (COPY of queue_jobs)" \
    "$(grep -q 'COPY public.queue_jobs' "$WORK/src.sql" && echo t || echo f)"

createdb "$DST" || die "create restore database"
pg_restore --exit-on-error -d "$DST" "$WORK/src.dump" 2> "$WORK/restore.err"
check "pg_restore succeeded" "$([[ $? == 0 && ! -s $WORK/restore.err ]] && echo t || echo f)" "$(head -c 500 "$WORK/restore.err")"
createdb "$DSTP" || die "create plain restore database"
psql -X -q -v ON_ERROR_STOP=1 -d "$DSTP" -f "$WORK/src.sql" > /dev/null 2> "$WORK/restore_plain.err"
check "psql restore of the plain dump succeeded" "$([[ $? == 0 ]] && echo t || echo f)" "$(head -c 500 "$WORK/restore_plain.err")"

if [[ $SELFTEST == 1 ]]; then
    echo "dump: JQ_DUMP_SELFTEST=1: changing a restored job on purpose"
    q -d "$DST" -c "UPDATE queue_jobs SET attempts = attempts + 1 WHERE id = $P1"
fi

# Everything the restored queue must do, for one restored database.
verify_restored() { # verify_restored DB LABEL
    local db=$1 l=$2 out
    q -d "$db" -f <(snapshot_sql public 1 "$SCHED") > "$WORK/$db.txt" 2>&1
    if diff -u "$WORK/src.txt" "$WORK/$db.txt" > "$WORK/$db.diff"; then
        check "$l: jobs, failed rows, settings, token sequence and version identical to the source" t
    else
        check "$l: jobs, failed rows, settings, token sequence and version identical to the source" f \
            "$(head -n 20 "$WORK/$db.diff")"
    fi
    # named checks; each prints "name|t" or "name|f"
    out=$(q -d "$db" -v P1="$P1" -v P2="$P2" -v D1="$D1" -v R1="$R1" -v RT="$RT" -v X1="$X1" \
          -v F1="$F1" -v F2="$F2" -v E1="$E1" -v MAXID="$MAXID" -v MAXTOKEN="$MAXTOKEN" 2>&1 <<'SQL'
SELECT 'held job still held by its claim (token, lease ahead, worker)|' ||
       (token = :RT AND NOT ready AND reserved_until > clock_timestamp() + interval '50 minutes'
        AND reserved_by = 'worker-dump' AND attempts = 1) FROM queue_jobs WHERE id = :R1;
SELECT 'released job kept attempts 1 and its last error|' ||
       (attempts = 1 AND max_attempts = 5 AND last_error = 'first try failed' AND token IS NULL)
       FROM queue_jobs WHERE id = :X1;
SELECT 'delayed job kept its delay, key and deadline|' ||
       (available_at > clock_timestamp() + interval '110 minutes' AND unique_key = 'uk-delayed'
        AND deadline > clock_timestamp() + interval '23 hours' AND NOT ready) FROM queue_jobs WHERE id = :D1;
SELECT 'failed rows kept their errors and attempts|' ||
       ((SELECT error = 'fatal: disk on fire' AND attempts = 1 AND priority = -3 FROM queue_failed_jobs WHERE id = :F1)
        AND (SELECT error = 'released with no attempts left' AND max_attempts = 1 FROM queue_failed_jobs WHERE id = :F2));
SELECT 'queue_list shows the settings (paused, lease, notify)|' ||
       ((SELECT paused FROM queue_list() WHERE queue = 'dump_e')
        AND (SELECT default_lease = interval '10 minutes' FROM queue_list() WHERE queue = 'dump_b')
        AND (SELECT NOT notify FROM queue_list() WHERE queue = 'dump_a'));
SELECT 'stats: dump_a 2 pending, dump_d 1 delayed, dump_r 1 reserved|' ||
       ((SELECT pending = 2 AND total = 2 FROM queue_stats() WHERE queue = 'dump_a')
        AND (SELECT delayed = 1 FROM queue_stats() WHERE queue = 'dump_d')
        AND (SELECT reserved = 1 FROM queue_stats() WHERE queue = 'dump_r'));
SELECT 'a held unique key answers with its holder|' ||
       (queue_push('again', '{}', 'dump_d', unique_key => 'uk-delayed') = :D1
        AND queue_push('again', '{}', 'dump_r', unique_key => 'uk-held') = :R1);
SELECT 'a new push gets an id above the old ones|' || (queue_push('new-1', '{}', 'dump_n') > :MAXID);
SELECT 'a new claim gets a token above the old ones|' ||
       coalesce((SELECT token > :MAXTOKEN FROM queue_reserve('{dump_n}', '1 minute', 'w-new')), false);
LISTEN jobqueue;
SELECT 'pending jobs are claimed in priority order and completed|' ||
       (SELECT array_agg(name ORDER BY name) = '{pending-1,pending-2}' AND bool_and(queue_delete(id, token))
          AND (array_agg(id))[1] = :P1
        FROM queue_reserve('{dump_a}', '1 minute', 'w', 2));
SELECT 'the job held before the dump completes with its old token|' || queue_delete(:R1, :RT);
SELECT 'its unique key is free again|' || (queue_push('again', '{}', 'dump_r', unique_key => 'uk-held') <> :R1);
SELECT 'the delayed job is not due yet|' || NOT EXISTS (SELECT 1 FROM queue_reserve('{dump_d}'));
SELECT 'the paused queue hands out nothing|' || NOT EXISTS (SELECT 1 FROM queue_reserve('{dump_e}'));
SELECT queue_resume('dump_e') \g /dev/null
SELECT 'after resume it hands out its job|' ||
       coalesce((SELECT id = :E1 AND queue_delete(id, token) FROM queue_reserve('{dump_e}')), false);
SELECT queue_push('lease', '{}', 'dump_b') \g /dev/null
SELECT 'a job pushed into dump_b gets its default lease of 10 minutes|' ||
       coalesce((SELECT reserved_until BETWEEN clock_timestamp() + interval '9 minutes'
                                           AND clock_timestamp() + interval '11 minutes'
                 FROM queue_reserve('{dump_b}')), false);
SELECT 'the released job is claimed again (attempt 2, last error shown)|' ||
       coalesce((SELECT id = :X1 AND attempts = 2 AND last_error = 'first try failed' AND queue_delete(id, token)
                 FROM queue_reserve('{dump_x}')), false);
SELECT 'a failed job retries (count 1)|' || (queue_retry_failed(:F1) = 1);
SELECT 'it is back under its own id, attempts 0, its failed row gone|' ||
       (EXISTS (SELECT 1 FROM queue_jobs WHERE id = :F1 AND attempts = 0 AND name = 'failed-1')
        AND NOT EXISTS (SELECT 1 FROM queue_failed_jobs WHERE id = :F1));
SQL
)
    # notify: dump_a has notify off (no NOTIFY expected for it); dump_f is on
    local names=0
    while IFS='|' read -r name value; do
        [[ -z $name ]] && continue
        if [[ $name == *"Asynchronous notification"* ]]; then
            continue
        fi
        names=$((names + 1))
        check "$l: $name" "$value"
    done <<< "$(grep -v '^Asynchronous' <<< "$out")"
    check "$l: all 19 behaviour checks ran" "$([[ $names == 19 ]] && echo t || echo f)" "$out"
    # wake-ups after the restore: notify off for dump_a, on for others
    out=$(q -d "$db" 2>&1 <<'SQL'
LISTEN jobqueue;
SELECT queue_push('quiet', '{}', 'dump_a') > 0;
SELECT queue_push('loud', '{}', 'dump_w') > 0;
SQL
)
    check "$l: NOTIFY setting kept (dump_a silent, dump_w wakes)" \
        "$( (grep -q 'payload "dump_w"' <<< "$out" && ! grep -q 'payload "dump_a"' <<< "$out") && echo t || echo f)" "$out"
    if [[ $SCHED == 1 ]]; then
        check "$l: the schedule ticks after the restore (a job in dump_s within 10 minutes)" "$(q -d "$db" -c "
            SET jobqueue.clock_offset = '10 minutes';
            SELECT count(*) >= 1 FROM queue_tick() WHERE schedule = 'dump-every-5';" 2>&1 | tail -n 1)"
        check "$l: the ticked job is in dump_s with the schedule's name and payload" "$(q -d "$db" -c "
            SELECT count(*) >= 1 AND bool_and(payload = '{\"c\": 1}') FROM queue_jobs WHERE queue = 'dump_s' AND name = 'cron-job'")"
    fi
    check "$l: the delayed job is due after its delay (clock_offset 3 hours)" "$(q -d "$db" -c "
        SET jobqueue.clock_offset = '3 hours';
        SELECT coalesce((SELECT id = $D1 AND queue_delete(id, token) FROM queue_reserve('{dump_d}')), false)")"
}

verify_restored "$DST" "pg_restore"
verify_restored "$DSTP" "psql restore"

# ================================================== scenario B: 1.0, quoted schema
echo "== scenario B: extension 1.0 in schema \"Jq Sch\", restored where the default is $VERSION"
createdb "$SRC10" || die "create 1.0 source"
q -d "$SRC10" >/dev/null <<'SQL' || die "fill the 1.0 source"
CREATE SCHEMA "Jq Sch";
CREATE EXTENSION jobqueue VERSION '1.0' SCHEMA "Jq Sch";
SELECT "Jq Sch".queue_push('old-pending', '{"v": 1}', 'old_q', unique_key => 'old-key');
SELECT "Jq Sch".queue_push('old-held', '{}', 'old_h');
SELECT count(*) FROM "Jq Sch".queue_reserve('{old_h}', '1 hour', 'old-worker');
SELECT "Jq Sch".queue_push('old-failed', '{}', 'old_f');
SELECT "Jq Sch".queue_fail(id, token, 'old error') FROM "Jq Sch".queue_reserve('{old_f}');
SQL
q -d "$SRC10" -f <(snapshot_sql '"Jq Sch"' 0 | grep -v "^SELECT 'extension'") > "$WORK/src10.txt" || die "snapshot 1.0"
read -r OLD_ID OLD_TOKEN <<< "$(q -d "$SRC10" -F ' ' -c "SELECT id, token FROM \"Jq Sch\".queue_jobs WHERE name = 'old-held'")"
OLD_PENDING=$(q -d "$SRC10" -c "SELECT id FROM \"Jq Sch\".queue_jobs WHERE name = 'old-pending'")
pg_dump -Fc -f "$WORK/src10.dump" "$SRC10" || die "pg_dump of the 1.0 database"
createdb "$DST10" || die "create 1.0 restore database"
pg_restore --exit-on-error -d "$DST10" "$WORK/src10.dump" 2> "$WORK/restore10.err"
check "1.0: pg_restore succeeded" "$([[ $? == 0 ]] && echo t || echo f)" "$(head -c 500 "$WORK/restore10.err")"
echo "   restored at version $(q -d "$DST10" -c "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")"
# compare the 1.0 columns only (a newer version may have added columns)
q -d "$DST10" -f <(cat <<'SQL'
SELECT 'job', j.id, j.queue, j.name, j.payload, j.attempts, j.max_attempts, j.priority, j.unique_key,
       j.available_at, j.reserved_until, j.reserved_by, j.last_error, j.created_at, j.token, j.ready
  FROM "Jq Sch".queue_jobs j ORDER BY id;
SELECT 'failed', f.id, f.job_id, f.queue, f.name, f.payload, f.priority, f.attempts, f.max_attempts,
       f.error, f.failed_at, f.created_at
  FROM "Jq Sch".queue_failed_jobs f ORDER BY id;
SELECT 'sequence', last_value FROM "Jq Sch".queue_job_tokens;
SQL
) > "$WORK/dst10.txt" 2>&1
if diff -u "$WORK/src10.txt" "$WORK/dst10.txt" > "$WORK/b.diff"; then
    check "1.0: jobs, failed rows and token sequence identical" t
else
    check "1.0: jobs, failed rows and token sequence identical" f "$(head -n 20 "$WORK/b.diff")"
fi
check "1.0: the held job completes with its old token; the key answers with its holder; a new claim gets a higher token" "$(q -d "$DST10" -c "
    SELECT \"Jq Sch\".queue_delete($OLD_ID, $OLD_TOKEN)
       AND \"Jq Sch\".queue_push('old-key-again', '{}', 'old_q', unique_key => 'old-key') = $OLD_PENDING
       AND coalesce((SELECT token > $OLD_TOKEN AND \"Jq Sch\".queue_delete(id, token)
                     FROM \"Jq Sch\".queue_reserve('{old_q}')), false)")"

finish
