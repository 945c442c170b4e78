#!/usr/bin/env python3
"""kill -9 of the server in the middle of a rotation, and right after one
(1.3, the storage ring).  Needs a cluster of the suite's own (tests/ring/run.sh
starts it: JQ_PGDATA, JQ_PGBIN, JQ_SERVER_LOG, JQ_CLUSTER_DIR and the PG*
environment), since it kills its postmaster.

(c1) An open rotation.  Ring partition 0 holds pending, delayed (1 hour)
     and held jobs (claimed with a 10 minute lease; ids and tokens noted),
     besides a job with a unique key (long partition) and a failed row.  A
     session rotates ring 0 in an open transaction (the jobs moved, the
     partition truncated, nothing committed), another pushes in an open
     transaction (with a unique key: to the long partition); then the postmaster is killed with SIGKILL and the server
     started again (crash recovery).  Checked: every job and failed row is
     there exactly as before (every column, ring 0 included), each id once;
     the uncommitted push left nothing; the held jobs complete with their
     tokens; the delayed job is not claimable, the pending ones are; the
     unique key still answers with its holder; ring 0 rotates afterwards.
(c2) A committed rotation under load.  Producers push and workers claim
     (keeping a fifth of their jobs held, 60 s leases) and complete, while
     a rotator rotates ring 0 and 1 in turn; right after the first rotation
     that committed having moved jobs (at least 2 s into the load), the
     postmaster is killed, and the server started again.  Checked: every job
     whose push committed and whose completion did not is there exactly
     once; no completed job came back; no id is there twice; jobs nobody
     knows of are at most the pushes the kill cut; the held jobs complete
     with their tokens; then everything left is claimed and completed (two
     minutes ahead on the queue's clock, past the leases of claims the kill
     cut, whose tokens nobody knows).
(c3) A rotation cancelled.  Ring partition 0 holds 6,000 pending, 40
     delayed and 20 held jobs (ids, tokens and leases noted).  First a
     rotation in an open transaction is rolled back after it moved and
     truncated; then rotations under statement_timeouts of 1, 2, 3 ... ms
     are cancelled (57014) in the middle of their work until one completes.
     Checked after each cancelled one: every job as before (every column,
     ring 0 included), the partition's file unchanged; after the one that
     completes: every job in the long partition with its id, token and
     lease, the held jobs complete with their tokens.
Knob: JQ_RING_SELFTEST=unlogged makes queue_jobs_long an unlogged table (a
rotation whose moves would not survive a crash): the run must fail.
Last line: "N passed, N failed".
"""
import os
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import JOB_COLUMNS, Checks, Database, Load, kill_server, one, start_server, wait_for_server  # noqa: E402


def rows(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def state(conn):
    return (rows(conn, f"SELECT {JOB_COLUMNS} FROM queue_jobs ORDER BY id"),
            rows(conn, "SELECT * FROM queue_failed_jobs ORDER BY id"))


def open_rotation(checks, db):
    print("== (c1) kill -9 while a rotation of ring 0 is open (moved and truncated, not committed)")
    conn = db.connect()
    cur = conn.cursor()
    cur.execute("SELECT queue_push('pending-' || i, jsonb_build_object('i', i), 'crash_q', priority => i)"
                " FROM generate_series(1, 3) i")
    cur.execute("SELECT queue_push('delayed', '{}', 'crash_q', '1 hour')")
    delayed = cur.fetchone()[0]
    cur.execute("SELECT queue_push('held-' || i, '{}', 'crash_h') FROM generate_series(1, 3) i")
    cur.execute("SELECT id, token FROM queue_reserve(ARRAY['crash_h'], '10 minutes', 'crash-worker', 3)")
    held = cur.fetchall()
    cur.execute("SELECT queue_push('keyed', '{}', 'crash_k', unique_key => 'crash-key')")
    keyed = cur.fetchone()[0]
    cur.execute("SELECT queue_push('failed', '{}', 'crash_f')")
    cur.execute("SELECT queue_fail(id, token, 'crash fail') FROM queue_reserve(ARRAY['crash_f'])")
    cur.execute("UPDATE queue_jobs SET ring = 0 WHERE unique_key IS NULL")
    before = state(conn)
    in_ring0 = one(conn, "SELECT count(*) FROM queue_jobs_ring0")

    rotation = db.connect(autocommit=False)
    rcur = rotation.cursor()
    rcur.execute("SELECT moved, truncated, outcome FROM queue_rotate(0)")
    moved, truncated, outcome = rcur.fetchone()
    rcur.execute("SELECT count(*) FROM queue_jobs_ring0")
    emptied = rcur.fetchone()[0] == 0
    # with a unique key, so that it goes to the long partition (a push to
    # ring 0 would wait for the rotation's lock)
    pusher = db.connect(autocommit=False)
    pusher.cursor().execute("SELECT queue_push('uncommitted', '{}', 'crash_q', unique_key => 'uncommitted-key')")
    checks.check(f"(c1) the open rotation moved the {in_ring0} jobs of ring 0 and truncated it",
                 outcome == "truncated" and moved == in_ring0 == 7 and emptied, (moved, truncated, outcome))
    conn.close()

    stuck = kill_server()
    checks.check("(c1) every server process exited when the postmaster was killed", not stuck, stuck)
    start_server()
    conn = wait_for_server(db)
    after = state(conn)
    checks.check("(c1) after the crash every job and failed row is as before (every column, ring 0)",
                 after == before, f"{len(before[0])} jobs before, {len(after[0])} after")
    dups = rows(conn, "SELECT id FROM queue_jobs GROUP BY id HAVING count(*) > 1")
    checks.check("(c1) each id once", not dups, dups)
    checks.check("(c1) the uncommitted push left nothing",
                 one(conn, "SELECT count(*) FROM queue_jobs WHERE name = 'uncommitted'") == 0)
    completed = [one(conn, "SELECT queue_delete(%s, %s)", (job_id, token)) for job_id, token in held]
    checks.check("(c1) the held jobs complete with their tokens", completed == [True, True, True], completed)
    claimed = rows(conn, "SELECT name FROM queue_reserve(ARRAY['crash_q'], '1 minute', 'after', 10)")
    checks.check("(c1) the pending jobs are claimable, the delayed one is not",
                 sorted(n for (n,) in claimed) == ["pending-1", "pending-2", "pending-3"]
                 and one(conn, "SELECT NOT ready FROM queue_jobs WHERE id = %s", (delayed,)), claimed)
    checks.check("(c1) the unique key answers with its holder",
                 one(conn, "SELECT queue_push('again', '{}', 'crash_k', unique_key => 'crash-key')") == keyed)
    checks.check("(c1) ring 0 rotates after the restart",
                 one(conn, "SELECT outcome FROM queue_rotate(0)") == "truncated")
    one(conn, "TRUNCATE queue_jobs, queue_failed_jobs")
    conn.close()


def committed_rotation(checks, db):
    print("== (c2) kill -9 right after a committed rotation, under load")
    load = Load(db, "crash_load", producers=2, workers=2, hold_share=0.2).start()
    killed = {}

    def rotate_then_kill():
        conn = db.connect()
        cur = conn.cursor()
        started = time.monotonic()
        ring = 0
        while time.monotonic() - started < 30:
            time.sleep(0.15)
            cur.execute("SELECT moved, outcome FROM queue_rotate(%s)", (ring,))
            moved, outcome = cur.fetchone()
            ring = 1 - ring
            if outcome == "truncated" and moved > 0 and time.monotonic() - started > 2:
                killed["stuck"] = kill_server()
                killed["moved"] = moved
                return

    rotator = threading.Thread(target=rotate_then_kill, daemon=True)
    rotator.start()
    rotator.join(timeout=60)
    load.stop()
    if not checks.check("(c2) a rotation that moved jobs committed, then the server was killed", "moved" in killed):
        return
    checks.check("(c2) every server process exited when the postmaster was killed", not killed["stuck"],
                 killed["stuck"])
    start_server()
    conn = wait_for_server(db)
    present = dict(rows(conn, "SELECT id, count(*) FROM queue_jobs WHERE queue = 'crash_load' GROUP BY id"))
    expected = load.pushed - load.completed - load.uncertain
    missing = sorted(expected - set(present))
    back = sorted((load.completed - load.uncertain) & set(present))
    twice = sorted(i for i, n in present.items() if n > 1)
    unknown = set(present) - load.pushed - load.uncertain
    print(f"   the last rotation moved {killed['moved']} jobs; {len(load.pushed)} pushes committed, "
          f"{len(load.completed)} completions, {len(load.held)} held, {len(load.uncertain)} calls cut, "
          f"{len(present)} jobs after the restart")
    checks.check(f"(c2) every committed job not completed is there ({len(expected)})", not missing,
                 f"{len(missing)} missing, e.g. {missing[:10]}")
    checks.check("(c2) no completed job came back", not back, back[:10])
    checks.check("(c2) no id is there twice", not twice, twice[:10])
    checks.check(f"(c2) jobs nobody knows of ({len(unknown)}) are at most the pushes the kill cut ({load.cut_pushes})",
                 len(unknown) <= load.cut_pushes, sorted(unknown)[:10])
    held = {i: t for i, t in load.held.items() if i not in load.uncertain}
    done = [one(conn, "SELECT queue_delete(%s, %s)", (i, t)) for i, t in held.items()]
    checks.check(f"(c2) the held jobs complete with their tokens ({len(held)})", held and all(done),
                 f"{done.count(False)} of {len(done)} returned false")
    # claims the kill cut may have committed: their leases end within 60 s
    one(conn, "SET jobqueue.clock_offset = '2 minutes'")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = rows(conn, "SELECT queue_delete(id, token) FROM queue_reserve(ARRAY['crash_load'], NULL, 'drain', 100)")
        if not got:
            break
    left = one(conn, "SELECT count(*) FROM queue_jobs WHERE queue = 'crash_load'")
    checks.check("(c2) everything left is claimed and completed", left == 0, f"{left} left")
    conn.close()


def end_aborted(conn):
    """Roll back what the server still holds open.  A statement timeout that
    fires as queue_rotate returns is taken at the start of the COMMIT that
    follows: the server's transaction is then aborted but still open, while
    psycopg2 counts it as ended after any COMMIT and sends nothing on
    rollback()."""
    conn.rollback()
    if conn.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_INERROR:
        conn.autocommit = True
        conn.cursor().execute("ROLLBACK")
        conn.autocommit = False


def cancelled_rotation(checks, db):
    print("== (c3) a rotation rolled back, and rotations cancelled by statement_timeout mid-work")
    conn = db.connect()
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM (SELECT queue_push('pending', jsonb_build_object('i', i), 'cancel_q')"
                " FROM generate_series(1, 6000) i) s")
    cur.execute("SELECT count(*) FROM (SELECT queue_push('delayed', '{}', 'cancel_q', '1 hour')"
                " FROM generate_series(1, 40) i) s")
    cur.execute("SELECT count(*) FROM (SELECT queue_push('held', '{}', 'cancel_h') FROM generate_series(1, 20) i) s")
    cur.execute("SELECT id, token FROM queue_reserve(ARRAY['cancel_h'], '10 minutes', 'cancel-worker', 20)")
    held = cur.fetchall()
    cur.execute("UPDATE queue_jobs SET ring = 0 WHERE ring <> 0")
    before = state(conn)
    file_before = one(conn, "SELECT pg_relation_filenode('queue_jobs_ring0')")

    def unchanged(label):
        after = state(conn)
        checks.check(f"(c3) {label}: every job as before (every column, ring 0), the partition's file too",
                     after == before and one(conn, "SELECT pg_relation_filenode('queue_jobs_ring0')") == file_before,
                     f"{len(before[0])} jobs before, {len(after[0])} after")

    rotation = db.connect(autocommit=False)
    rcur = rotation.cursor()
    rcur.execute("SELECT moved, outcome FROM queue_rotate(0)")
    moved, outcome = rcur.fetchone()
    checks.check("(c3) the open rotation moved the jobs of ring 0 and truncated it",
                 outcome == "truncated" and moved == len(before[0]), (moved, outcome))
    rotation.rollback()
    unchanged("after the open rotation was rolled back")

    cancelled = 0
    completed = None
    for timeout_ms in range(1, 400):
        rcur.execute(f"SET statement_timeout = {timeout_ms}")
        try:
            rcur.execute("SELECT moved, outcome FROM queue_rotate(0)")
            completed = rcur.fetchone()
            rotation.commit()
            break
        except psycopg2.errors.QueryCanceled:
            end_aborted(rotation)
            cancelled += 1
            if cancelled <= 3 or cancelled % 10 == 0:
                unchanged(f"after cancelled rotation {cancelled} ({timeout_ms} ms)")
    print(f"   {cancelled} rotations cancelled before one completed in time: {completed}")
    checks.check("(c3) some rotations were cancelled, then one completed",
                 cancelled > 0 and completed is not None and completed[1] == "truncated", (cancelled, completed))
    moved_rows = rows(conn, f"SELECT {JOB_COLUMNS} FROM queue_jobs_long ORDER BY id")
    # the same jobs, each with its id, token and lease; only its partition changed
    same = [r[:-1] for r in moved_rows] == [r[:-1] for r in before[0]]
    checks.check("(c3) after the rotation that completed, every job is in long with its id, token and lease",
                 same and all(r[-1] == -1 for r in moved_rows) and one(conn, "SELECT count(*) FROM queue_jobs_ring0") == 0,
                 f"{len(moved_rows)} in long of {len(before[0])}")
    done = [one(conn, "SELECT queue_delete(%s, %s)", (job_id, token)) for job_id, token in held]
    checks.check("(c3) the held jobs complete with their tokens", all(done) and len(done) == 20, done.count(False))
    one(conn, "TRUNCATE queue_jobs, queue_failed_jobs")
    rotation.close()
    conn.close()


def main():
    checks = Checks("ring crash")
    for name in ("JQ_PGDATA", "JQ_PGBIN", "JQ_SERVER_LOG", "JQ_CLUSTER_DIR"):
        if not os.environ.get(name):
            print(f"crash.py: {name} is not set (tests/ring/run.sh starts a cluster of its own)", file=sys.stderr)
            return 2
    with Database(f"jq_ring_crash_{os.getpid()}") as db:
        if os.environ.get("JQ_RING_SELFTEST") == "unlogged":
            print("crash: JQ_RING_SELFTEST=unlogged: queue_jobs_long loses its rows in a crash")
            conn = db.connect()
            one(conn, "ALTER TABLE queue_jobs_long SET UNLOGGED")
            conn.close()
        open_rotation(checks, db)
        committed_rotation(checks, db)
        cancelled_rotation(checks, db)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
