#!/usr/bin/env python3
"""Randomised stress of the storage ring (1.3), bounded in time.

For JQ_RING_STRESS_SECONDS (default 60) several sessions work on three
queues of a database of their own, with jobqueue.ring_period = 1 s so that
the ring turns many times:
  - producers push with random priorities and delays (most due at once, some
    within a period, some several periods ahead), some with unique keys
    (from a small pool, so keys are often held), one to four jobs per
    transaction, and roll back some transactions;
  - workers claim (queue_reserve, 1 to 4 jobs, leases of 1 to 3 s) and
    complete, release (with and without delay), fail, extend then complete,
    or abandon the job (its lease runs out and it is claimed again); some
    claims roll back, and the token of a rolled-back claim is tried (it must
    not work);
  - an admin retries the failed jobs (queue_retry_failed) and cancels
    random jobs (queue_cancel);
  - a rotator calls queue_rotate(0), queue_rotate(1) and queue_rotate(NULL)
    at random, every 50-350 ms;
  - a checker samples, each in one statement: ids held by two rows of
    queue_jobs (its partitions), ids in both queue_jobs and the failed
    table, jobs without unique key in queue_jobs_long (moved there by a
    rotation), and whether the queues' claim positions are trusted (the
    library is preloaded, so claims start at them).
Then the producers stop, the workers complete everything and the admin
retries what failed until the backlog is empty.  Checked at the end, from
what each session recorded (times are the server's: a claim's moment is
its reserved_until minus its lease; a call's is clock_timestamp() read in
the same statement just before it):
  - every job pushed in a committed transaction was claimed (or cancelled);
  - each was completed (a successful queue_delete) or cancelled exactly
    once, and none is left in queue_jobs or queue_failed_jobs;
  - no job pushed in a rolled-back transaction was ever claimed or completed;
  - no job was held by two live leases at once (each claim came after the
    previous claim's lease ended: its reserved_until, extended, or the
    moment it was completed, released or failed), and none was claimed
    after it was cancelled;
  - every successful call used the token of the job's latest claim, and no
    rolled-back claim's token worked;
  - no id was ever in two rows or in both tables;
  - the ring turned: rotations of ring 0 and 1 truncated many times, moved
    jobs, and some jobs were moved to queue_jobs_long; claim positions were
    in use.
Needs jobqueue preloaded (PG* environment; a superuser).  Knobs:
  JQ_RING_STRESS_SECONDS   length of the working phase (default 60)
  JQ_RING_STRESS_SEED      seed of the random choices (default: the time)
  JQ_RING_STRESS_SELFTEST=truncate   the rotator empties ring partitions with
                           a plain TRUNCATE, moving nothing: the run must fail
Last line: "N passed, N failed".
"""
import collections
import datetime
import os
import random
import sys
import threading
import time

import psycopg2
import psycopg2.errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import Checks, Database, Rotations, one  # noqa: E402

RUN_S = float(os.environ.get("JQ_RING_STRESS_SECONDS", "60"))
DRAIN_S = 60
SEED = int(os.environ.get("JQ_RING_STRESS_SEED", str(int(time.time()))))
SELFTEST = os.environ.get("JQ_RING_STRESS_SELFTEST", "")
QUEUES = ["st_a", "st_b", "st_c"]
PRODUCERS = 2
WORKERS = 3
UNIQUE_KEYS = 40
MAX_BACKLOG = 3000   # producers wait while more jobs than this are unfinished

stop_producing = threading.Event()   # producers and cancels stop
draining = threading.Event()         # workers only complete
stop = threading.Event()             # everyone stops

# What the sessions recorded (list.append and set.add are atomic in CPython).
committed = set()          # ids returned by pushes of committed transactions
committed_list = []        # the same, in order, for the admin's cancels
rolled_back = set()        # ids of pushes (without unique key) that rolled back
claims = []                # (id, token, claim moment, reserved_until) of committed claims
rolled_back_claims = []    # (id, token)
calls = []                 # (id, token, kind, moment, ok)
finished = []              # ids completed or cancelled, for the producers' pace
extends = []               # (id, token, lower bound of the new lease end)
cancels = []               # (id, moment, ok)
retried = []               # counts returned by queue_retry_failed
samples = []               # checker: (dup ids, in both tables, unkeyed in long, trusted positions)
errors = []
rotations = Rotations()


def record_error(who, e):
    errors.append(f"{who}: {type(e).__name__}: {str(e).strip()[:300]}")


def call(cur, kind, job_id, token, sql, args=()):
    """A fenced call, with the server's moment just before it."""
    cur.execute("SELECT clock_timestamp(), " + sql, (job_id, token) + tuple(args))
    moment, ok = cur.fetchone()
    calls.append((job_id, token, kind, moment, ok))
    if ok and kind == "delete":
        finished.append(job_id)
    return ok, moment


def producer(db, n, rng):
    conn = db.connect(autocommit=False)
    cur = conn.cursor()
    seq = 0
    while not stop_producing.is_set():
        if len(committed_list) - len(finished) > MAX_BACKLOG:
            time.sleep(0.05)   # so that the workers can drain it in time at the end
            continue
        keyed = rng.random() < 0.08
        count = 1 if keyed or rng.random() < 0.7 else rng.randint(2, 4)
        pushed = []
        try:
            for _ in range(count):
                seq += 1
                delay = rng.choices(["0", f"{rng.uniform(0.05, 0.9):.2f} seconds",
                                     f"{rng.uniform(1.5, 4.0):.2f} seconds"], weights=[75, 15, 10])[0]
                key = f"uk-{rng.randrange(UNIQUE_KEYS)}" if keyed else None
                cur.execute("SELECT queue_push(%s, '{}', %s, %s::interval, %s, %s)",
                            (f"p{n}-{seq}", rng.choice(QUEUES), delay, rng.randint(-2, 2), key))
                pushed.append(cur.fetchone()[0])
            if rng.random() < 0.15:
                conn.rollback()
                if not keyed:   # a keyed push may have answered with a committed holder's id
                    rolled_back.update(pushed)
            else:
                conn.commit()
                committed.update(pushed)
                committed_list.extend(pushed)
        except psycopg2.Error as e:
            conn.rollback()
            rolled_back.update(pushed if not keyed else [])
            record_error(f"producer {n}", e)
        time.sleep(rng.random() * 0.004)
    conn.close()


def work_on(cur, rng, job_id, token):
    """What a worker does with one claimed job."""
    x = 0.0 if draining.is_set() else rng.random()
    time.sleep(rng.random() * 0.004)
    if x < 0.62:
        call(cur, "delete", job_id, token, "queue_delete(%s, %s)")
    elif x < 0.72:
        call(cur, "release", job_id, token, "queue_release(%s, %s, %s::interval, 'stress release')",
             (rng.choice(["0", "0.3 seconds", "1.5 seconds"]),))
    elif x < 0.79:
        call(cur, "fail", job_id, token, "queue_fail(%s, %s, 'stress fail')")
    elif x < 0.88:
        ok, moment = call(cur, "extend", job_id, token, "queue_extend(%s, %s, '2 seconds')")
        if ok:
            extends.append((job_id, token, moment + datetime.timedelta(seconds=2)))
        time.sleep(rng.random() * 0.2)
        call(cur, "delete", job_id, token, "queue_delete(%s, %s)")
    # else: abandoned, its lease runs out


def worker(db, n, rng):
    conn = db.connect()
    cur = conn.cursor()
    name = f"w{n}"
    while not stop.is_set():
        lease = rng.choice((1, 2, 3))
        args = (rng.sample(QUEUES, len(QUEUES)), f"{lease} seconds", name, rng.randint(1, 4))
        claim = "SELECT id, token, reserved_until FROM queue_reserve(%s, %s::interval, %s, %s)"
        try:
            if not draining.is_set() and rng.random() < 0.07:
                conn.autocommit = False
                cur.execute(claim, args)
                rows = cur.fetchall()
                time.sleep(rng.random() * 0.01)
                conn.rollback()
                conn.autocommit = True
                for job_id, token, _ in rows:
                    rolled_back_claims.append((job_id, token))
                    if rng.random() < 0.3:
                        call(cur, "stale", job_id, token, "queue_delete(%s, %s)")
                continue
            cur.execute(claim, args)
            rows = cur.fetchall()
            if not rows:
                time.sleep(0.01)
                continue
            for job_id, token, until in rows:
                claims.append((job_id, token, until - datetime.timedelta(seconds=lease), until))
            for job_id, token, _ in rows:
                work_on(cur, rng, job_id, token)
        except psycopg2.Error as e:
            record_error(f"worker {n}", e)
            conn.rollback()
            conn.autocommit = True
    conn.close()


def admin(db, rng):
    conn = db.connect()
    cur = conn.cursor()
    while not stop.is_set():
        time.sleep(rng.uniform(0.2, 0.6))
        try:
            retried.append(one(conn, "SELECT queue_retry_failed()"))
            if not stop_producing.is_set() and committed_list:
                for _ in range(rng.randint(0, 3)):
                    job_id = rng.choice(committed_list[-300:])
                    cur.execute("SELECT clock_timestamp(), queue_cancel(%s)", (job_id,))
                    moment, ok = cur.fetchone()
                    cancels.append((job_id, moment, ok))
                    if ok:
                        finished.append(job_id)
        except psycopg2.Error as e:
            record_error("admin", e)
    conn.close()


def rotator(db, rng):
    conn = db.connect()
    cur = conn.cursor()
    while not stop.is_set():
        time.sleep(rng.uniform(0.05, 0.35))
        ring = rng.choice((0, 1, None))
        try:
            if SELFTEST == "truncate" and ring is not None:
                # the seeded bug: empty the partition without moving its jobs
                cur.execute("SET lock_timeout = '20ms'")
                try:
                    cur.execute(f"TRUNCATE queue_jobs_ring{ring}")
                    rotations.outcomes[(ring, "truncated")] += 1
                except psycopg2.errors.LockNotAvailable:
                    rotations.outcomes[(ring, "busy")] += 1
            else:
                rotations.rotate(cur, ring)
        except psycopg2.Error as e:
            record_error("rotator", e)
    conn.close()


CHECK_SQL = """
SELECT (SELECT count(*) FROM (SELECT id FROM queue_jobs GROUP BY id HAVING count(*) > 1) d),
       (SELECT count(*) FROM queue_jobs j JOIN queue_failed_jobs f ON f.id = j.id),
       (SELECT count(*) FROM queue_jobs_long WHERE unique_key IS NULL),
       (SELECT count(*) FROM unnest(%s::text[]) q, LATERAL claim_position(q) p WHERE p.trusted)
"""


def checker(db):
    conn = db.connect()
    cur = conn.cursor()
    while not stop.is_set():
        try:
            cur.execute(CHECK_SQL, (QUEUES,))
            samples.append(cur.fetchone())
        except psycopg2.Error as e:
            record_error("checker", e)
        time.sleep(0.5)
    conn.close()


def backlog(conn):
    return one(conn, """SELECT (SELECT count(*) FROM queue_jobs WHERE queue = ANY (%s))
                             + (SELECT count(*) FROM queue_failed_jobs WHERE queue = ANY (%s))""",
               (QUEUES, QUEUES))


def lease_overlaps():
    """Claims that came while the previous claim of the job still held it,
    and claims after a successful cancel."""
    ends = collections.defaultdict(list)       # (id, token) -> moments the claim ended
    for job_id, token, kind, moment, ok in calls:
        if ok and kind in ("delete", "release", "fail"):
            ends[(job_id, token)].append(moment)
    extended = collections.defaultdict(list)
    for job_id, token, until in extends:
        extended[(job_id, token)].append(until)
    by_job = collections.defaultdict(list)
    for job_id, token, moment, until in claims:
        by_job[job_id].append((moment, token, until))
    overlaps = []
    for job_id, held in by_job.items():
        held.sort()
        for (m1, t1, u1), (m2, t2, _) in zip(held, held[1:]):
            end = min([max([u1] + extended[(job_id, t1)])] + ends[(job_id, t1)])
            if m2 < end:
                overlaps.append((job_id, t1, t2, str(m2), str(end)))
    cancelled_at = {job_id: moment for job_id, moment, ok in cancels if ok}
    after_cancel = [(job_id, str(m)) for job_id, held in by_job.items() if job_id in cancelled_at
                    for m, _, _ in held if m > cancelled_at[job_id]]
    return overlaps, after_cancel, by_job


def stale_successes(by_job):
    """Successful calls whose token was not the job's latest claim's at the call."""
    bad = []
    for job_id, token, kind, moment, ok in calls:
        if not ok or kind == "stale":
            continue
        earlier = [(m, t) for m, t, _ in by_job.get(job_id, []) if m <= moment]
        if not earlier or max(earlier)[1] != token:
            bad.append((job_id, token, kind))
    return bad


def main():
    checks = Checks("ring stress")
    rng = random.Random(SEED)
    print(f"ring stress: {RUN_S:.0f} s of work, seed {SEED}{', SELFTEST ' + SELFTEST if SELFTEST else ''}")
    with Database(f"jq_ring_stress_{os.getpid()}", {"jobqueue.ring_period": 1}) as db:
        conn = db.connect()
        if "jobqueue" not in one(conn, "SHOW shared_preload_libraries"):
            checks.check("jobqueue is preloaded (claim positions need it)", False)
            return checks.finish()
        one(conn, """CREATE FUNCTION claim_position(text)
                       RETURNS TABLE (trusted boolean, priority integer, id bigint)
                       AS 'jobqueue', 'jobqueue_claim_position' LANGUAGE C STRICT""")
        threads = [threading.Thread(target=producer, args=(db, n, random.Random(rng.random())))
                   for n in range(PRODUCERS)]
        threads += [threading.Thread(target=worker, args=(db, n, random.Random(rng.random())))
                    for n in range(WORKERS)]
        threads += [threading.Thread(target=admin, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=rotator, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=checker, args=(db,))]
        for t in threads:
            t.daemon = True
            t.start()
        time.sleep(RUN_S)
        stop_producing.set()
        draining.set()
        drained_at = None
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            if backlog(conn) == 0:
                if drained_at is not None and time.monotonic() - drained_at > 1.5:
                    break
                drained_at = drained_at or time.monotonic()
            else:
                drained_at = None
            time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        left = backlog(conn)
        in_ring = one(conn, "SELECT count(*) FROM queue_jobs")
        conn.close()

    completed = collections.Counter(c[0] for c in calls if c[2] == "delete" and c[4])
    cancelled = collections.Counter(c[0] for c in cancels if c[2])
    claimed = {c[0] for c in claims}
    overlaps, after_cancel, by_job = lease_overlaps()
    print(f"pushed {len(committed)} committed jobs ({len(rolled_back)} rolled back), "
          f"{len(claims)} claims ({len(rolled_back_claims)} rolled back), "
          f"{sum(completed.values())} completions, {sum(cancelled.values())} cancels, "
          f"{sum(1 for c in calls if c[2] == 'release' and c[4])} releases, "
          f"{sum(1 for c in calls if c[2] == 'fail' and c[4])} fails, {sum(retried)} retried, "
          f"{sum(1 for c in calls if c[2] == 'extend' and c[4])} extends")
    print(f"rotations: {rotations.summary()}; jobs moved {rotations.moved}")
    print(f"checker: {len(samples)} samples, at most {max((s[2] for s in samples), default=0)} "
          f"jobs without key in queue_jobs_long, trusted positions in {sum(1 for s in samples if s[3])}")

    checks.check("no session hit an error", not errors, "; ".join(errors[:5]))
    checks.check("the queues drained (nothing left in queue_jobs or queue_failed_jobs)",
                 left == 0 and in_ring == 0, f"{left} left in the stress queues, {in_ring} rows in queue_jobs")
    never = sorted(j for j in committed if j not in claimed and not cancelled[j])
    checks.check(f"every committed job was claimed or cancelled ({len(committed)} jobs)", not never,
                 f"{len(never)} never claimed, e.g. {never[:10]}")
    wrong = sorted(j for j in committed if completed[j] + cancelled[j] != 1)
    checks.check("each committed job was completed or cancelled exactly once", not wrong,
                 f"{len(wrong)} jobs, e.g. {[(j, completed[j], cancelled[j]) for j in wrong[:10]]}")
    ghosts = sorted((rolled_back & (claimed | set(completed))) | (set(completed) - committed))
    checks.check("no job of a rolled-back push was claimed or completed", not ghosts, ghosts[:10])
    checks.check("no job was held by two live leases at once", not overlaps,
                 f"{len(overlaps)}, e.g. {overlaps[:5]}")
    checks.check("no job was claimed after it was cancelled", not after_cancel, after_cancel[:5])
    stale = stale_successes(by_job)
    checks.check("every successful call used the job's current token", not stale,
                 f"{len(stale)}, e.g. {stale[:5]}")
    stale_ok = [c for c in calls if c[2] == "stale" and c[4]]
    checks.check(f"no token of a rolled-back claim worked "
                 f"({sum(1 for c in calls if c[2] == 'stale')} tried)", not stale_ok, stale_ok[:5])
    checks.check("no id was in two rows of queue_jobs, nor in both tables (checker samples)",
                 samples and all(s[0] == 0 and s[1] == 0 for s in samples),
                 [s for s in samples if s[0] or s[1]][:5])
    explicit = rotations.count("truncated", 0) + rotations.count("truncated", 1)
    checks.check(f"rotations of ring 0 and 1 truncated at least 20 times ({explicit})", explicit >= 20)
    checks.check(f"rotations moved jobs ({rotations.moved})", SELFTEST == "truncate" or rotations.moved > 0)
    checks.check("some jobs without unique key were moved to queue_jobs_long",
                 any(s[2] > 0 for s in samples))
    checks.check("claim positions were in use (trusted in the checker's samples)",
                 any(s[3] > 0 for s in samples))
    exercised = (sum(retried) > 0 and rolled_back_claims and any(c[2] == "release" and c[4] for c in calls)
                 and any(c[2] for c in cancels) and len(claims) > len(claimed))
    checks.check("every kind of call was exercised (retries, rolled-back claims, releases, cancels, re-claims)",
                 exercised)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
