"""tests/ring/stress.py's workload: the producers, the workers, the holder
and the admin (retries, cancels, pauses), each resolving what a kill left
unknown."""
import datetime
import json
import time

import psycopg2

from ringlib import one
from stress_state import (
    HOLD_LEASE, LIMBO, LONG_UNTIL, MAX_BACKLOG, QUEUES, RUN_S, SELFTEST, UNIQUE_KEYS, Session, adopted, call,
    cancels, claim_info, claimed_pids, claims, committed, committed_list, draining, errors, extends, fenced,
    finished, held, kill_epoch, limbo, limbo_again, limbo_cut, limbo_pid, limbo_sent, limbo_take, never_pushed,
    pause_kept, record_error, redos, retried, rolled_back, rolled_back_claims, stop, stop_producing, tracked,
    unknown_pushes, windows,
)


def push_kind(rng, late):
    kinds = ["now", "short", "medium", "long", "never"]
    return rng.choices(kinds, weights=[72, 14, 9, 0 if late else 4, 1])[0]


def delay_of(rng, kind):
    return {"now": lambda: "0",
            "short": lambda: f"{rng.uniform(0.05, 0.9):.2f} seconds",
            "medium": lambda: f"{rng.uniform(1.5, 4.0):.2f} seconds",
            "long": lambda: f"{rng.uniform(5, 20):.2f} seconds",
            "never": lambda: f"30 days {rng.randint(0, 3600)} seconds"}[kind]()


def committed_jobs(ids, jobs):
    """Note the jobs of a committed transaction: [(id, pid, kind, name, queue, payload)]."""
    committed.update(ids)
    committed_list.extend(i for i, _, kind, *_ in jobs if kind != "never")
    for job_id, _, kind, name, queue, payload in jobs:
        if kind in ("long", "never"):
            tracked.append(job_id)
        if kind == "never":
            never_pushed[job_id] = (name, queue, payload)


RESOLVE_PUSH = """SELECT payload->>'pid', id FROM queue_jobs WHERE payload->>'pid' = ANY (%s)
                  UNION ALL SELECT payload->>'pid', id FROM queue_failed_jobs WHERE payload->>'pid' = ANY (%s)"""


def resolve_push(s, jobs, keyed):
    """A transaction a kill cut: committed if any of its jobs is in a table
    or was claimed (looked up in that order: a job leaves the tables only
    after a claim was recorded).  Returns whether it committed (not read
    back from unknown_pushes, which the other producers append to too)."""
    pids = [pid for _, pid, *_ in jobs]
    found = dict(s.retrying(lambda cur: (cur.execute(RESOLVE_PUSH, (pids, pids)), cur.fetchall())[1]))
    if SELFTEST == "noresolve":
        found = {}
    for pid in pids:
        if pid not in found and pid in claimed_pids and SELFTEST != "noresolve":
            found[pid] = claimed_pids[pid]
    if found:
        if len(found) != len(pids) and not keyed:
            errors.append(f"push resolution: only {sorted(found)} of the transaction's {pids} committed")
        jobs = [(found[j[1]],) + tuple(j[1:]) for j in jobs if j[1] in found]
        committed_jobs([j[0] for j in jobs], jobs)
        unknown_pushes.append((pids, "committed"))
    else:
        rolled_back.update(pids)
        unknown_pushes.append((pids, "not committed"))
    s.rollback()   # the look-up's transaction: a lock on queue_jobs would keep rotations busy
    return bool(found)


def producer(db, n, rng):
    s = Session(db, f"producer {n}", autocommit=False)
    seq = 0
    started = time.monotonic()
    while not stop_producing.is_set():
        if len(committed_list) - len(finished) > MAX_BACKLOG and not LIMBO["push"].is_set():
            time.sleep(0.05)   # so that the workers can drain it in time at the end
            continue
        keyed = rng.random() < 0.08
        count = 1 if keyed or rng.random() < 0.7 else rng.randint(2, 4)
        late = time.monotonic() - started > RUN_S - LONG_UNTIL
        jobs = []              # (id or None, pid, kind, name, queue, payload)
        waits = False
        try:
            for _ in range(count):
                seq += 1
                pid = f"p{n}-{seq}"
                kind = "now" if keyed else push_kind(rng, late)
                payload = json.dumps({"pid": pid, kind: True})
                job = [None, pid, kind, f"{kind}-{pid}", rng.choice(QUEUES), payload]
                jobs.append(job)
                key = f"uk-{rng.randrange(UNIQUE_KEYS)}" if keyed else None
                s.cur.execute("SELECT queue_push(%s, %s, %s, %s::interval, %s, %s)",
                              (job[3], payload, job[4], delay_of(rng, kind), rng.randint(-2, 2), key))
                job[0] = s.cur.fetchone()[0]
            if rng.random() < 0.15:
                s.conn.rollback()
                if not keyed:   # a keyed push may have answered with a committed holder's id
                    rolled_back.update(pid for _, pid, *_ in jobs)
            else:
                waits = not keyed and limbo_take("push")
                if waits:
                    s.cur.execute("SET LOCAL synchronous_commit = on")
                    limbo_pid["push"] = s.conn.get_backend_pid()
                    limbo_sent["push"] = time.monotonic()
                s.conn.commit()
                if waits:
                    limbo_again("push")
                committed_jobs([j[0] for j in jobs], [tuple(j) for j in jobs])
        except psycopg2.Error as e:
            if s.lost(e):
                was_committed = resolve_push(s, jobs, keyed)
                if waits and limbo_cut("push"):
                    limbo.append(("push", [pid for _, pid, *_ in jobs], was_committed))
            else:
                s.rollback()
                rolled_back.update([] if keyed else [pid for _, pid, *_ in jobs])
                record_error(f"producer {n}", e)
        time.sleep(rng.random() * 0.004)
    s.conn.close()


def work_on(s, rng, job_id, token):
    """What a worker does with one claimed job."""
    x = 0.0 if draining.is_set() else rng.random()
    time.sleep(rng.random() * 0.004)
    if x < 0.62:
        fenced(s, "delete", job_id, token, "queue_delete(%s, %s)")
    elif x < 0.72:
        fenced(s, "release", job_id, token, "queue_release(%s, %s, %s::interval, 'stress release')",
               (rng.choice(["0", "0.3 seconds", "1.5 seconds"]),))
    elif x < 0.79:
        fenced(s, "fail", job_id, token, "queue_fail(%s, %s, 'stress fail')")
    elif x < 0.88:
        ok, moment = fenced(s, "extend", job_id, token, "queue_extend(%s, %s, '2 seconds')")
        if ok is None:
            return     # completed (or found gone) after the kill
        if ok:
            extends.append((job_id, token, moment + datetime.timedelta(seconds=2)))
        time.sleep(rng.random() * 0.2)
        fenced(s, "delete", job_id, token, "queue_delete(%s, %s)")
    # else: abandoned, its lease runs out


CLAIM = ("SELECT id, token, reserved_until, payload->>'pid', queue, statement_timestamp(), clock_timestamp()"
         " FROM queue_reserve(%s, %s::interval, %s, %s)")
ADOPT = ("SELECT id, token, reserved_until, payload->>'pid', queue, NULL, NULL"
         " FROM queue_jobs WHERE reserved_by = %s")


def note_claims(rows, lease):
    for job_id, token, until, pid, queue, started, ended in rows:
        claim_info[(job_id, token)] = (pid, queue, started, ended)
        claimed_pids[pid] = job_id
        claims.append((job_id, token, until - datetime.timedelta(seconds=lease), until))


def claim(s, name, args, lease, may_wait=False):
    """A claim; if a kill cuts it, its jobs (if it committed) are found by
    its reserved_by and adopted."""
    waits = may_wait and limbo_take("claim")
    if waits:   # a lease that outlasts the restart: the adopted jobs are still ours
        args, lease = (args[0], f"{HOLD_LEASE} seconds") + tuple(args[2:]), HOLD_LEASE
    try:
        if waits:
            s.cur.execute("SET synchronous_commit = on")
            limbo_pid["claim"] = s.conn.get_backend_pid()
            limbo_sent["claim"] = time.monotonic()
        s.cur.execute(CLAIM, args)
        rows = s.cur.fetchall()
        if waits:
            s.cur.execute("SET synchronous_commit = local")
            limbo_again("claim")    # it claimed nothing
    except psycopg2.Error as e:
        if not s.lost(e):
            if waits:   # no later commit of this session may wait
                s.cur.execute("SET synchronous_commit = local")
            raise
        rows = s.retrying(lambda cur: (cur.execute(ADOPT, (name,)), cur.fetchall())[1])
        if SELFTEST == "noresolve":
            rows = []
        adopted.append((name, len(rows)))
        if waits and limbo_cut("claim"):
            limbo.append(("claim", name, len(rows) > 0))
    note_claims(rows, lease)
    return rows


def worker(db, n, rng):
    s = Session(db, f"worker {n}")
    k = 0
    while not stop.is_set():
        k += 1
        name = f"w{n}-{k}"
        lease = rng.choice((1, 2, 3))
        args = (rng.sample(QUEUES, len(QUEUES)), f"{lease} seconds", name, rng.randint(1, 4))
        try:
            if not draining.is_set() and rng.random() < 0.07:
                s.conn.autocommit = False
                s.cur.execute(CLAIM, args)
                rows = s.cur.fetchall()
                time.sleep(rng.random() * 0.01)
                s.conn.rollback()
                s.conn.autocommit = True
                for job_id, token, *_ in rows:
                    rolled_back_claims.append((job_id, token))
                    if rng.random() < 0.3:
                        call(s.cur, "stale", job_id, token, "queue_delete(%s, %s)")
                continue
            rows = claim(s, name, args, lease, may_wait=True)
            if not rows:
                time.sleep(0.01)
                continue
            for job_id, token, *_ in rows:
                work_on(s, rng, job_id, token)
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error(f"worker {n}", e)
                s.rollback()
                s.conn.autocommit = True
    s.conn.close()


HELD_ROW = "SELECT token, reserved_until, tableoid::regclass::text FROM queue_jobs WHERE id = %s"


def holder(db, rng):
    """Holds one or two jobs at a time under a long lease, over rotations
    and kills, then completes them with their tokens."""
    s = Session(db, "holder")
    k = 0
    while not draining.is_set():
        k += 1
        try:
            epoch = kill_epoch[0]
            rows = claim(s, f"h-{k}", (QUEUES, f"{HOLD_LEASE} seconds", f"h-{k}", rng.randint(1, 2)), HOLD_LEASE)
            if not rows:
                time.sleep(0.05)
                continue
            draining.wait(rng.uniform(2, 8))
            for job_id, token, until, *_ in rows:
                row = s.retrying(lambda cur: (cur.execute(HELD_ROW, (job_id,)), cur.fetchone())[1])
                kept = row is not None and row[0] == token and row[1] == until
                ok, _ = fenced(s, "delete", job_id, token, "queue_delete(%s, %s)")
                if ok is None:   # cut by a kill: the completion after the restart says,
                    # unless the cut delete was seen waiting for the standby: then it had
                    # committed and the completion after the restart rightly found no job
                    ok = (next(r[2] for r in reversed(redos) if r[:2] == (job_id, token))
                          or ("delete", (job_id, token), True) in limbo)
                held.append((job_id, token, ok, kept, row is not None and row[2] == "queue_jobs_long",
                             epoch, kill_epoch[0]))
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("holder", e)
    s.conn.close()


def queue_paused(s, queue):
    """(server moment, paused) of queue, read in one statement."""
    return s.retrying(lambda cur: (cur.execute(
        "SELECT clock_timestamp(), coalesce((SELECT paused FROM queue_list() WHERE queue = %s), false)",
        (queue,)), cur.fetchone())[1])


def pauses(s, rng, paused, until, how):
    """One pause or resume at random (all resumes once producing stopped).
    paused: queue -> server moment since when it is known paused."""
    target = (lambda q: q + "-selftest") if SELFTEST == "pause" else (lambda q: q)
    if stop_producing.is_set():
        todo = list(paused)
    else:
        q = rng.choice(QUEUES)
        todo = [q] if q in paused and time.monotonic() > until[q] or q not in paused and len(paused) < 2 else []
    for q in todo:
        if q in paused:
            before = one(s.conn, "SELECT clock_timestamp()")
            windows.append((q, paused.pop(q), before, how.pop(q)))
            try:
                one(s.conn, "SELECT queue_resume(%s)", (target(q),))
            except psycopg2.Error as e:
                if not s.lost(e):
                    raise
                moment, now_paused = queue_paused(s, q)
                if now_paused and SELFTEST != "pause":
                    paused[q], how[q] = moment, "resume cut, still paused"
        else:
            try:
                one(s.conn, "SELECT queue_pause(%s)", (target(q),))
                paused[q] = one(s.conn, "SELECT clock_timestamp()")
                how[q] = "paused"
            except psycopg2.Error as e:
                if not s.lost(e):
                    raise
                moment, now_paused = queue_paused(s, q)
                if now_paused or SELFTEST == "pause":
                    paused[q], how[q] = moment, "pause cut, found paused"
            until[q] = time.monotonic() + rng.uniform(0.5, 3)


def admin(db, rng):
    s = Session(db, "admin")
    paused, until, how = {}, {}, {}
    epoch = s.epoch
    while not stop.is_set():
        time.sleep(rng.uniform(0.05, 0.3) if not stop_producing.is_set() else 0.2)
        try:
            if s.epoch != epoch:
                # reconnected after a kill: the queues paused before are still paused
                for q in list(paused):
                    pause_kept.append((q, queue_paused(s, q)[1] or SELFTEST == "pause"))
                epoch = s.epoch
            pauses(s, rng, paused, until, how)
            if rng.random() < 0.4:
                retried.append(one(s.conn, "SELECT queue_retry_failed()"))
            if not stop_producing.is_set() and committed_list and rng.random() < 0.4:
                for _ in range(rng.randint(0, 3)):
                    job_id = rng.choice(committed_list[-300:])
                    s.cur.execute("SELECT clock_timestamp(), queue_cancel(%s)", (job_id,))
                    moment, ok = s.cur.fetchone()
                    cancels.append((job_id, moment, ok))
                    if ok:
                        finished.append(job_id)
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("admin", e)
    s.conn.close()
