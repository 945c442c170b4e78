#!/usr/bin/env python3
"""Randomised stress of the storage ring (1.3), bounded in time.

For JQ_RING_STRESS_SECONDS (default 60) several sessions work on three
queues of a database of their own, with jobqueue.ring_period = 1 s so that
the ring turns many times:
  - producers push with random priorities and delays (most due at once, some
    within a period, some several periods ahead, some 5 to 20 periods ahead
    ("long"), and a few 30 days ahead, never due during the run ("never")),
    some with unique keys (from a small pool, so keys are often held), one
    to four jobs per transaction, and roll back some transactions; each job's
    payload carries the producer's own name for it ({"pid": ...});
  - workers claim (queue_reserve, 1 to 4 jobs, leases of 1 to 3 s, each
    claim with a reserved_by of its own) and complete, release (with and
    without delay), fail, extend then complete, or abandon the job (its lease
    runs out and it is claimed again); some claims roll back, and the token
    of a rolled-back claim is tried (it must not work);
  - a holder claims one or two jobs at a time with a 30 s lease, keeps them
    2 to 8 s (over rotations, which move them to queue_jobs_long, and over
    kills), reads their rows (token and lease unchanged) and completes them
    with their tokens (which must work);
  - an admin retries the failed jobs (queue_retry_failed), cancels random
    jobs (queue_cancel; never the "never" ones), and pauses and resumes the
    queues at random (queue_pause / queue_resume, 0.5 to 3 s, at most two
    queues at once): a pause's window starts at a server moment read after
    its commit and ends at one read before the resume;
  - a rotator calls queue_rotate(0), queue_rotate(1) and queue_rotate(NULL)
    at random, every 50-350 ms;
  - a checker samples, each in one statement: ids held by two rows of
    queue_jobs (its partitions), ids in both queue_jobs and the failed
    table, jobs without unique key in queue_jobs_long (moved there by a
    rotation), and whether the queues' claim positions are trusted (the
    library is preloaded, so claims start at them); and where each "long"
    and "never" job is while it still waits for its first claim (partition,
    ctid, xmin, the whole row);
  - with JQ_RING_STRESS_KILLS=N (needs a cluster of the program's own:
    tests/ring/stress.sh), a killer kills the postmaster with SIGKILL N times
    at random moments of the first 80 % of the run, and starts it again
    (crash recovery): one kill in the middle of a rotation that moved jobs
    and truncated its partition but has not committed, one right after a
    rotation that committed having moved jobs, the others at any moment
    (the kinds taken in turn, in a random order); the postmaster alone
    (its backends finish the statement in hand, reply, and exit when they
    notice) or with every server process at once (statements and commits
    in flight cut where they are: a commit may be done with no reply), in
    turn, in a random order.  Just before a kill at any moment, one push
    transaction, one claim (with a 30 s lease) and one completion commit
    with synchronous_commit = on on a cluster whose synchronous standby
    never comes (stress.sh): each is flushed and then waits for ever, a
    commit done with no reply (the killer waits up to 5 s for the three to
    be sent; one whose backend the killer did not see waiting for the standby
    (wait event SyncRep) is an ordinary
    unknown outcome, not one that must be found committed).  Every session
    reconnects
    and resolves what the kill left unknown: a push transaction cut anywhere
    (its commit included) is looked up by its payload ids in queue_jobs, the
    failed table and the jobs claimed so far (committed, counted once, or
    not, all of a transaction's jobs alike); a claim cut by a kill is looked
    up by its reserved_by (its jobs are adopted, tokens and leases, and
    worked on); a fenced call (completion, release, fail, extend) cut by a
    kill is followed by a completion with the same token, which works if the
    job is still there under that token (it must then: a token that is
    still the job's works after a restart) and otherwise finds the job gone
    or claimed again; a pause or resume cut is read back from queue_list().
Then the producers stop, the workers complete everything and the admin
resumes the queues and retries what failed until the backlog (the "never"
jobs aside) is empty.  Checked at the end, from what each session recorded
(times are the server's: a claim's moment is its reserved_until minus its
lease; a call's is clock_timestamp() read in the same statement just before
it; a claim runs from its statement_timestamp() to a clock_timestamp()
read after queue_reserve returned, in the same statement):
  - every job pushed in a committed transaction (or resolved as committed)
    was claimed or cancelled, except the "never" ones;
  - each was completed (a successful queue_delete, or one a kill cut that
    left the job gone with nobody claiming it again) or cancelled exactly
    once, and none but the "never" ones is left in queue_jobs or
    queue_failed_jobs;
  - no job pushed in a rolled-back (or unresolved) transaction was ever
    claimed or completed (by payload id: a kill may hand an uncommitted
    push's id out again);
  - no job was held by two live leases at once (each claim came after the
    previous claim's lease ended: its reserved_until, extended, or the
    moment it was completed, released or failed; claims with a call a kill
    cut are left out), and none was claimed after it was cancelled;
  - every successful call used the token of the job's latest claim, and no
    rolled-back claim's token worked;
  - no claim that ran inside a pause window (it started after the pause
    committed and returned before the resume began) handed out a job of the
    paused queue (a claim still running when the resume commits may see
    it: its statements take their snapshots as they go), and a queue
    paused before a kill was still paused after;
  - no id was ever in two rows or in both tables;
  - every "long" or "never" job moved at most once, from the ring partition
    it was pushed to, to queue_jobs_long, and never back; in
    queue_jobs_long its row (ctid, xmin) was never written again;
  - every committed "never" job is there at the end, in queue_jobs_long,
    with the row first seen (every column but ring), the producer's name,
    queue and payload, and the ctid and xmin it had in queue_jobs_long;
  - the holder's jobs kept token and lease while held (some of them in
    queue_jobs_long), and every one completed with its token, also those
    held over a kill;
  - with kills: every kill happened (the rotation kinds and both ways of
    killing too), every server process exited when the postmaster alone was
    killed, every connection lost was lost to a kill; the push, claim and
    completion left without a reply were each found committed (the push's
    jobs, the claim's jobs adopted, the job gone and counted completed);
  - the ring turned: rotations of ring 0 and 1 truncated many times, moved
    jobs, and some jobs were moved to queue_jobs_long; claim positions were
    in use.
Needs jobqueue preloaded (PG* environment; a superuser).  Knobs:
  JQ_RING_STRESS_SECONDS   length of the working phase (default 60)
  JQ_RING_STRESS_KILLS     kill -9 of the server this many times (default 0;
                           needs JQ_PGDATA, JQ_PGBIN, JQ_SERVER_LOG and
                           JQ_CLUSTER_DIR of a cluster it may kill)
  JQ_RING_STRESS_SEED      seed of the random choices (default: the time)
  JQ_RING_STRESS_SELFTEST  breaks what is checked, the run must fail:
                           truncate  the rotator empties ring partitions with
                                     a plain TRUNCATE, moving nothing;
                           pause     the admin pauses and resumes another
                                     queue than the one it records;
                           lose      after each restart one "never" job and
                                     one due job are deleted (a lossy crash);
                           moveback  the rotator moves some waiting jobs of
                                     queue_jobs_long back to a ring partition;
                           noresolve a push or claim a kill cut is taken as
                                     not committed, without looking
Last line: "N passed, N failed".
"""
import collections
import datetime
import json
import os
import random
import sys
import threading
import time

import psycopg2
import psycopg2.errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import JOB_COLUMNS, Checks, Database, Rotations, kill_server, one, start_server  # noqa: E402

RUN_S = float(os.environ.get("JQ_RING_STRESS_SECONDS", "60"))
KILLS = int(os.environ.get("JQ_RING_STRESS_KILLS", "0"))
DRAIN_S = 60
SEED = int(os.environ.get("JQ_RING_STRESS_SEED", str(int(time.time()))))
SELFTEST = os.environ.get("JQ_RING_STRESS_SELFTEST", "")
QUEUES = ["st_a", "st_b", "st_c"]
PRODUCERS = 2
WORKERS = 3
UNIQUE_KEYS = 40
MAX_BACKLOG = 3000   # producers wait while more jobs than this are unfinished
HOLD_LEASE = 30      # seconds: the holder's lease, longer than any hold and restart
LONG_UNTIL = min(20, RUN_S / 3)   # seconds before the end: no "long" delay after that (the drain stays short)

stop_producing = threading.Event()   # producers, cancels and pauses stop
draining = threading.Event()         # workers only complete
stop = threading.Event()             # everyone stops

# What the sessions recorded (list.append and set.add are atomic in CPython).
committed = set()          # ids returned by pushes of committed transactions
committed_list = []        # the same, in order, for the admin's cancels
rolled_back = set()        # pids of pushes (without unique key) that rolled back or never committed
claims = []                # (id, token, claim moment, reserved_until) of committed claims
claim_info = {}            # (id, token) -> (pid, queue, statement start, a moment after it returned; None when adopted)
claimed_pids = {}          # pid -> id, of every claim recorded
rolled_back_claims = []    # (id, token)
calls = []                 # (id, token, kind, moment, ok)
finished = []              # ids completed or cancelled, for the producers' pace
extends = []               # (id, token, lower bound of the new lease end)
cancels = []               # (id, moment, ok)
retried = []               # counts returned by queue_retry_failed
samples = []               # checker: (dup ids, in both tables, unkeyed in long, trusted positions)
errors = []
rotations = Rotations()
# pauses
windows = []               # (queue, start, end, how): server moments the queue was known paused
pause_kept = []            # (queue, still paused after a restart)
# "long" and "never" jobs
tracked = []               # ids of committed "long" and "never" jobs
never_pushed = {}          # id -> (name, queue, payload text) as the producer wrote it
places = collections.defaultdict(list)    # id -> partitions seen while waiting, changes only
long_rows = {}             # id -> (ctid, xmin) last seen in queue_jobs_long while waiting
rewritten = []             # (id, before, after): a waiting row of queue_jobs_long written again
first_rows = {}            # id -> the row first seen (every column of JOB_COLUMNS)
# kills
kill_lock = threading.Lock()
server_up = threading.Event()
server_up.set()
kill_epoch = [0]
kills = []                 # {"kind", "moved", "stuck", "down"}
kill_request = [None]      # the kind the rotator should kill in, if any
kill_how = ["postmaster"]  # what each kill kills in turn: "postmaster" or "every process"
kill_done = threading.Event()
unknown_pushes = []        # (pids, "committed" | "not committed")
adopted = []               # (claim name, jobs adopted)
uncertain = []             # (id, token, kind, claim moment): fenced calls a kill cut
redos = []                 # (id, token, ok): the completion after such a call
token_refused = []         # (id, token): a redo refused while the job still had that token
held = []                  # holder: (id, token, ok, kept, in long, epoch at claim, epoch at completion)
# commits left without a reply: with synchronous_standby_names naming no
# standby (stress.sh), a session that sets synchronous_commit = on flushes
# its commit and then waits for ever; a kill cuts it, and the outcome must
# be found committed after the restart
LIMBO = {"push": threading.Event(), "claim": threading.Event(), "delete": threading.Event()}
limbo_on = [False]         # the cluster names a standby that is not there
limbo = []                 # (kind, what, resolved committed)
limbo_sent = {}            # kind -> monotonic moment its waiting statement was sent
limbo_pid = {}             # kind -> the backend of its waiting statement
limbo_waiting = set()      # kinds whose backend the killer saw waiting for the standby
kill_began = [0.0]         # monotonic moment of the last kill


def limbo_take(kind):
    """True (once) when the killer asked for a commit of this kind left
    without a reply: the caller's next commit waits until the kill."""
    if limbo_on[0] and LIMBO[kind].is_set():
        LIMBO[kind].clear()
        return True
    return False


def limbo_cut(kind):
    """After a kill cut the kind's waiting statement: True if the killer saw
    its backend waiting for the standby (wait event SyncRep: its commit was
    flushed), False if the kill may have come first (an ordinary unknown
    outcome; a time margin alone was not enough on a loaded machine)."""
    sent = limbo_sent.pop(kind, None)
    return sent is not None and kind in limbo_waiting


def see_limbo_waiting(seconds=5):
    """Before a kill: which kinds' backends wait for the standby, waiting up
    to seconds for all that were sent."""
    limbo_waiting.clear()
    conn = psycopg2.connect(dbname="postgres", connect_timeout=10)
    conn.autocommit = True
    deadline = time.monotonic() + seconds
    try:
        while True:
            pids = {k: limbo_pid.get(k) for k in limbo_sent}
            with conn.cursor() as cur:
                cur.execute("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
                            " AND pid = ANY(%s)", ([p for p in pids.values() if p],))
                waiting = {r[0] for r in cur.fetchall()}
            limbo_waiting.update(k for k, p in pids.items() if p in waiting)
            if len(limbo_waiting) == len(pids) or time.monotonic() > deadline:
                return
            time.sleep(0.05)
    finally:
        conn.close()


def limbo_again(kind):
    """The waiting statement returned: it wrote nothing, so it did not wait."""
    limbo_sent.pop(kind, None)
    LIMBO[kind].set()


def record_error(who, e):
    errors.append(f"{who}: {type(e).__name__}: {str(e).strip()[:300]}")


class Session:
    """A connection that survives kills: lost() tells a lost connection
    (then it reconnects, once the server is up again) from an error."""

    def __init__(self, db, who, autocommit=True):
        self.db, self.who, self.autocommit = db, who, autocommit
        self.conn = None
        self.connect()

    def connect(self):
        deadline = time.monotonic() + 120
        while True:
            server_up.wait(timeout=120)
            epoch = kill_epoch[0]
            try:
                self.conn = self.db.connect(autocommit=self.autocommit)
                self.cur = self.conn.cursor()
                self.epoch = epoch
                return
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def lost(self, e):
        """After e: False if the connection still works (e is an error of
        its own); True if it was lost, then connected again.  A loss with no
        kill since the connection was made is recorded as an error."""
        if self.conn.closed == 0 and not isinstance(e, psycopg2.InterfaceError):
            return False
        if kill_epoch[0] == self.epoch and server_up.is_set():
            record_error(self.who, RuntimeError(f"connection lost with no kill: {str(e).strip()[:200]}"))
        try:
            self.conn.close()
        except psycopg2.Error:
            pass
        self.connect()
        return True

    def rollback(self):
        try:
            self.conn.rollback()
        except psycopg2.Error as e:
            self.lost(e)

    def retrying(self, fn):
        """fn(cur) again after every lost connection."""
        while True:
            try:
                return fn(self.cur)
            except psycopg2.Error as e:
                if not self.lost(e):
                    raise


def call(cur, kind, job_id, token, sql, args=()):
    """A fenced call, with the server's moment just before it."""
    cur.execute("SELECT clock_timestamp(), " + sql, (job_id, token) + tuple(args))
    moment, ok = cur.fetchone()
    calls.append((job_id, token, kind, moment, ok))
    if ok and kind == "delete":
        finished.append(job_id)
    return ok, moment


def fenced(s, kind, job_id, token, sql, args=()):
    """call() on a Session.  If a kill cuts it, its outcome is unknown: after
    the restart the job is completed with the same token, which works if
    the call did not commit (nor was the job claimed again); returns
    (None, None) then."""
    waits = kind == "delete" and limbo_take("delete")
    try:
        if waits:
            s.cur.execute("SET synchronous_commit = on")
            limbo_pid["delete"] = s.conn.get_backend_pid()
            limbo_sent["delete"] = time.monotonic()
        done = call(s.cur, kind, job_id, token, sql, args)
        if waits:
            s.cur.execute("SET synchronous_commit = local")
            limbo_again("delete")   # it did not write (a stale token)
        return done
    except psycopg2.Error as e:
        if not s.lost(e):
            if waits:   # no later commit of this session may wait
                s.cur.execute("SET synchronous_commit = local")
            raise
    moment = max((m for i, t, m, _ in claims if i == job_id and t == token), default=None)
    uncertain.append((job_id, token, kind, moment))
    ok, _ = s.retrying(lambda cur: call(cur, "delete", job_id, token, "queue_delete(%s, %s)"))
    redos.append((job_id, token, ok))
    if waits and limbo_cut("delete"):
        gone = s.retrying(lambda cur: one(cur.connection, "SELECT count(*) = 0 FROM queue_jobs WHERE id = %s",
                                          (job_id,)))
        limbo.append(("delete", (job_id, token), not ok and gone))
    if not ok:
        current = s.retrying(lambda cur: one(cur.connection, "SELECT token FROM queue_jobs WHERE id = %s", (job_id,)))
        if current == token:
            token_refused.append((job_id, token))
    return None, None


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
    after a claim was recorded)."""
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
                resolve_push(s, jobs, keyed)
                if waits and limbo_cut("push"):
                    limbo.append(("push", [pid for _, pid, *_ in jobs], unknown_pushes[-1][1] == "committed"))
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
                if ok is None:   # cut by a kill: the completion after the restart says
                    ok = next(r[2] for r in reversed(redos) if r[:2] == (job_id, token))
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


def kill(kind, moved=None):
    """kill -9 of the postmaster (alone, or with every server process: the
    next in kill_how), then start it again (crash recovery)."""
    every = kill_how[len(kills) % len(kill_how)] == "every process"
    with kill_lock:
        started = time.monotonic()
        at = datetime.datetime.now(datetime.timezone.utc)
        kill_began[0] = time.monotonic()
        kill_epoch[0] += 1
        server_up.clear()
        try:
            stuck = kill_server(every_process=every)
            start_server()
            if SELFTEST == "lose":
                conn = wait_for_db()
                one(conn, """DELETE FROM queue_jobs WHERE id IN
                               ((SELECT id FROM queue_jobs WHERE payload ? 'never' LIMIT 1)
                                UNION ALL (SELECT id FROM queue_jobs WHERE NOT payload ? 'never' LIMIT 1))""")
                conn.close()
        except Exception as e:  # noqa: BLE001 (a server that does not come back ends the run)
            record_error("killer", e)
            stop_producing.set()
            stop.set()
            raise
        finally:
            server_up.set()
        kills.append({"kind": kind, "every": every, "moved": moved, "stuck": stuck,
                      "down": time.monotonic() - started, "at": at})


def wait_for_db():
    deadline = time.monotonic() + 60
    while True:
        try:
            return DB[0].connect()
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


DB = [None]


def killer(rng):
    """KILLS kills, one in each of KILLS equal spans of the first 80 % of
    the run (after its first 10 %), in kinds taken in turn."""
    kinds = rng.sample(["open rotation", "after rotation", "any moment"], 3)
    kill_how[:] = rng.sample(["postmaster", "every process"], 2)
    started = time.monotonic()
    span = RUN_S * 0.7 / max(KILLS, 1)
    for i in range(KILLS):
        at = RUN_S * 0.1 + span * i + rng.uniform(0.1, 0.9) * span
        while time.monotonic() - started < at and not stop.is_set():
            time.sleep(0.05)
        if stop.is_set():
            return
        kind = kinds[i % 3]
        if kind == "any moment":
            limbo_sent.clear()
            for event in LIMBO.values():
                event.set()
            deadline = time.monotonic() + 5   # until each kind's statement is sent
            while len(limbo_sent) < len(LIMBO) and time.monotonic() < deadline:
                time.sleep(0.05)
            see_limbo_waiting()
            kill(kind)
            for event in LIMBO.values():
                event.clear()
            continue
        kill_done.clear()
        kill_request[0] = kind
        if not kill_done.wait(30):
            kill_request[0] = None
            errors.append(f"killer: no rotation moved jobs within 30 s for the kill '{kind}'")


def rotate_and_kill(db, s, rng, kind):
    """The rotator's part of a kill in a rotation: in an open rotation (moved
    and truncated, not committed) or right after one that committed."""
    ring = rng.choice((0, 1))
    if kind == "open rotation":
        conn = db.connect(autocommit=False)
        cur = conn.cursor()
        cur.execute("SELECT moved, outcome FROM queue_rotate(%s)", (ring,))
        moved, outcome = cur.fetchone()
        if outcome == "truncated" and moved > 0:
            kill_request[0] = None
            kill(kind, moved)
            kill_done.set()
            try:
                conn.close()
            except psycopg2.Error:
                pass
        else:
            conn.rollback()
            conn.close()
    else:
        _, moved, _, outcome = rotations.rotate(s.cur, ring)
        if outcome == "truncated" and moved > 0:
            kill_request[0] = None
            kill(kind, moved)
            kill_done.set()


def rotator(db, rng):
    s = Session(db, "rotator")
    while not stop.is_set():
        time.sleep(rng.uniform(0.05, 0.35))
        ring = rng.choice((0, 1, None))
        try:
            if kill_request[0]:
                rotate_and_kill(db, s, rng, kill_request[0])
            elif SELFTEST == "truncate" and ring is not None:
                # the seeded bug: empty the partition without moving its jobs
                s.cur.execute("SET lock_timeout = '20ms'")
                try:
                    s.cur.execute(f"TRUNCATE queue_jobs_ring{ring}")
                    rotations.outcomes[(ring, "truncated")] += 1
                except psycopg2.errors.LockNotAvailable:
                    rotations.outcomes[(ring, "busy")] += 1
            else:
                rotations.rotate(s.cur, ring)
                if SELFTEST == "moveback" and rng.random() < 0.2:
                    # the seeded bug: waiting jobs go back from long to the ring
                    s.cur.execute("""UPDATE queue_jobs SET ring = queue_current_ring() WHERE id IN
                                       (SELECT id FROM queue_jobs_long WHERE unique_key IS NULL
                                        AND (payload ? 'long' OR payload ? 'never') AND NOT ready LIMIT 3)""")
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("rotator", e)
    s.conn.close()


CHECK_SQL = """
SELECT (SELECT count(*) FROM (SELECT id FROM queue_jobs GROUP BY id HAVING count(*) > 1) d),
       (SELECT count(*) FROM queue_jobs j JOIN queue_failed_jobs f ON f.id = j.id),
       (SELECT count(*) FROM queue_jobs_long WHERE unique_key IS NULL),
       (SELECT count(*) FROM unnest(%s::text[]) q, LATERAL claim_position(q) p WHERE p.trusted)
"""
# the "long" and "never" jobs still waiting for their first claim
WAITING_SQL = f"""
SELECT tableoid::regclass::text, ctid::text, xmin::text, {JOB_COLUMNS} FROM queue_jobs
 WHERE id = ANY (%s) AND attempts = 0 AND NOT ready AND available_at > clock_timestamp()
"""


def look_at_waiting(cur):
    cur.execute(WAITING_SQL, (list(tracked),))
    for place, ctid, xmin, *row in cur.fetchall():
        job_id = row[0]
        first_rows.setdefault(job_id, tuple(row))
        if not places[job_id] or places[job_id][-1] != place:
            places[job_id].append(place)
        if place == "queue_jobs_long":
            if job_id in long_rows and long_rows[job_id] != (ctid, xmin):
                rewritten.append((job_id, long_rows[job_id], (ctid, xmin)))
            long_rows[job_id] = (ctid, xmin)


def checker(db):
    s = Session(db, "checker")
    while not stop.is_set():
        try:
            s.cur.execute(CHECK_SQL, (QUEUES,))
            samples.append(s.cur.fetchone())
            look_at_waiting(s.cur)
        except psycopg2.Error as e:
            if not s.lost(e):
                record_error("checker", e)
        time.sleep(0.5)
    s.conn.close()


def backlog(conn):
    return one(conn, """SELECT (SELECT count(*) FROM queue_jobs WHERE queue = ANY (%s) AND NOT payload ? 'never')
                             + (SELECT count(*) FROM queue_failed_jobs WHERE queue = ANY (%s))""",
               (QUEUES, QUEUES))


def lease_overlaps(cut):
    """Claims that came while the previous claim of the job still held it,
    and claims after a successful cancel.  A claim with a call a kill cut
    (cut: its (id, token)s) may have ended at an unknown moment: left out."""
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
    for job_id, claimed in by_job.items():
        claimed.sort()
        for (m1, t1, u1), (m2, t2, _) in zip(claimed, claimed[1:]):
            if (job_id, t1) in cut:
                continue
            end = min([max([u1] + extended[(job_id, t1)])] + ends[(job_id, t1)])
            if m2 < end:
                overlaps.append((job_id, t1, t2, str(m2), str(end)))
    cancelled_at = {job_id: moment for job_id, moment, ok in cancels if ok}
    after_cancel = [(job_id, str(m)) for job_id, claimed in by_job.items() if job_id in cancelled_at
                    for m, _, _ in claimed if m > cancelled_at[job_id]]
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


def cut_completions(by_job):
    """Completions a kill cut that committed: the completion with the same
    token after the restart did not work, and nobody claimed or cancelled
    the job after that claim (had the cut one not committed, the job would
    have stayed, to be claimed again or cancelled)."""
    redone = {(i, t): ok for i, t, ok in redos}
    cancelled_at = collections.defaultdict(list)
    for job_id, moment, ok in cancels:
        if ok:
            cancelled_at[job_id].append(moment)
    done = collections.Counter()
    for job_id, token, kind, moment in uncertain:
        if kind != "delete" or redone.get((job_id, token)) is not False or moment is None:
            continue
        later = [m for m, t, _ in by_job.get(job_id, []) if m > moment] + \
            [m for m in cancelled_at[job_id] if m > moment]
        if not later:
            done[job_id] += 1
    return done


def never_checks(checks, conn):
    """The "never" jobs at the end: all there, untouched, in queue_jobs_long."""
    with conn.cursor() as cur:
        cur.execute(f"""SELECT tableoid::regclass::text, ctid::text, xmin::text, {JOB_COLUMNS}
                          FROM queue_jobs WHERE payload ? 'never'""")
        final = {row[3]: row for row in cur.fetchall()}
    expected = set(never_pushed)
    missing = sorted(expected - set(final))
    extra = sorted(set(final) - expected)
    checks.check(f"every committed \"never\" job is there at the end ({len(expected)} jobs)",
                 expected and not missing and not extra,
                 f"{len(missing)} missing, e.g. {missing[:10]}; {len(extra)} nobody committed, e.g. {extra[:10]}")
    changed, moved_again, not_long, unseen = [], [], [], []
    for job_id in expected & set(final):
        place, ctid, xmin, *row = final[job_id]
        name, queue, payload = never_pushed[job_id]
        if job_id not in first_rows:
            unseen.append(job_id)
        elif tuple(row[:-1]) != first_rows[job_id][:-1] or (row[1], row[2], json.loads(row[3])) != (
                queue, name, json.loads(payload)):
            changed.append(job_id)
        if place != "queue_jobs_long":
            not_long.append((job_id, place))
        elif job_id in long_rows and long_rows[job_id] != (ctid, xmin):
            moved_again.append((job_id, long_rows[job_id], (ctid, xmin)))
    checks.check("each was seen waiting by the checker", not unseen, unseen[:10])
    checks.check("each has the row first seen (every column but ring) and what the producer wrote",
                 not changed, changed[:10])
    checks.check("each is in queue_jobs_long, with the ctid and xmin it had there", not not_long and not moved_again,
                 f"not in long: {not_long[:5]}; written again: {moved_again[:5]}")


def main():
    checks = Checks("ring stress")
    rng = random.Random(SEED)
    print(f"ring stress: {RUN_S:.0f} s of work, {KILLS} kills, seed {SEED}"
          f"{', SELFTEST ' + SELFTEST if SELFTEST else ''}")
    if KILLS:
        for name in ("JQ_PGDATA", "JQ_PGBIN", "JQ_SERVER_LOG", "JQ_CLUSTER_DIR"):
            if not os.environ.get(name):
                print(f"stress.py: {name} is not set (kills need a cluster of their own: tests/ring/stress.sh)",
                      file=sys.stderr)
                return 2
    with Database(f"jq_ring_stress_{os.getpid()}", {"jobqueue.ring_period": 1}) as db:
        DB[0] = db
        conn = db.connect()
        if "jobqueue" not in one(conn, "SHOW shared_preload_libraries"):
            checks.check("jobqueue is preloaded (claim positions need it)", False)
            return checks.finish()
        one(conn, """CREATE FUNCTION claim_position(text)
                       RETURNS TABLE (trusted boolean, priority integer, id bigint)
                       AS 'jobqueue', 'jobqueue_claim_position' LANGUAGE C STRICT""")
        limbo_on[0] = bool(KILLS and one(conn, "SHOW synchronous_standby_names")
                           and one(conn, "SHOW synchronous_commit") == "local")
        conn.close()
        threads = [threading.Thread(target=producer, args=(db, n, random.Random(rng.random())))
                   for n in range(PRODUCERS)]
        threads += [threading.Thread(target=worker, args=(db, n, random.Random(rng.random())))
                    for n in range(WORKERS)]
        threads += [threading.Thread(target=holder, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=admin, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=rotator, args=(db, random.Random(rng.random()))),
                    threading.Thread(target=checker, args=(db,))]
        killing = threading.Thread(target=killer, args=(random.Random(rng.random()),), daemon=True)
        for t in threads:
            t.daemon = True
            t.start()
        killing.start()
        time.sleep(RUN_S)
        stop_producing.set()
        killing.join(timeout=40)
        draining.set()
        conn = wait_for_db()
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
        in_ring = one(conn, "SELECT count(*) FROM queue_jobs WHERE NOT payload ? 'never'")
        never_checks(checks, conn)
        conn.close()

    overlaps, after_cancel, by_job = lease_overlaps({(i, t) for i, t, _, _ in uncertain})
    completed = collections.Counter(c[0] for c in calls if c[2] == "delete" and c[4])
    cut_done = cut_completions(by_job)
    completed.update(cut_done)
    cancelled = collections.Counter(c[0] for c in cancels if c[2])
    claimed = {c[0] for c in claims}
    due = committed - set(never_pushed)
    print(f"pushed {len(committed)} committed jobs ({len(rolled_back)} rolled back, {len(tracked)} long or never, "
          f"{len(never_pushed)} never), {len(claims)} claims ({len(rolled_back_claims)} rolled back), "
          f"{sum(completed.values())} completions, {sum(cancelled.values())} cancels, "
          f"{sum(1 for c in calls if c[2] == 'release' and c[4])} releases, "
          f"{sum(1 for c in calls if c[2] == 'fail' and c[4])} fails, {sum(retried)} retried, "
          f"{sum(1 for c in calls if c[2] == 'extend' and c[4])} extends")
    print(f"rotations: {rotations.summary()}; jobs moved {rotations.moved}")
    print(f"checker: {len(samples)} samples, at most {max((s[2] for s in samples), default=0)} "
          f"jobs without key in queue_jobs_long, trusted positions in {sum(1 for s in samples if s[3])}")
    print(f"pauses: {len(windows)} windows, {sum((e - s).total_seconds() for _, s, e, _ in windows):.1f} s in all; "
          f"holder: {len(held)} jobs, {sum(1 for h in held if h[4])} in long, "
          f"{sum(1 for h in held if h[5] != h[6])} over a kill")
    for k in kills:
        print(f"kill ({k['kind']}, {'every process' if k['every'] else 'the postmaster'}): "
              f"{k['moved'] if k['moved'] is not None else '-'} jobs in the open or last "
              f"rotation, server back after {k['down']:.1f} s")
    if KILLS:
        print(f"after the kills: {len(unknown_pushes)} push transactions unknown "
              f"({sum(1 for _, r in unknown_pushes if r == 'committed')} committed), {len(adopted)} claims "
              f"unknown ({sum(1 for _, n in adopted if n)} committed, {sum(n for _, n in adopted)} jobs adopted), "
              f"{len(uncertain)} fenced calls unknown ({sum(cut_done.values())} completions that committed), "
              f"{sum(1 for r in redos if r[2])} completed after the restart with their tokens")
        print(f"commits left without a reply at a kill: {', '.join(f'{k} {w}' for k, w, _ in limbo) or 'none'}")

    checks.check("no session hit an error", not errors, "; ".join(errors[:5]))
    checks.check("the queues drained (nothing but the \"never\" jobs left in queue_jobs or queue_failed_jobs)",
                 left == 0 and in_ring == 0, f"{left} left in the stress queues, {in_ring} rows in queue_jobs")
    never = sorted(j for j in due if j not in claimed and not cancelled[j])
    checks.check(f"every committed job was claimed or cancelled ({len(due)} jobs, the \"never\" ones aside)",
                 not never, f"{len(never)} never claimed, e.g. {never[:10]}")
    wrong = sorted(j for j in due if completed[j] + cancelled[j] != 1)
    checks.check("each committed job was completed or cancelled exactly once", not wrong,
                 f"{len(wrong)} jobs, e.g. {[(j, completed[j], cancelled[j]) for j in wrong[:10]]}")
    ghost_pids = rolled_back & set(claimed_pids)
    ghosts = sorted(set(completed) - due) + sorted(ghost_pids)
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

    in_pause = []
    for (job_id, token), (_, queue, started, ended) in claim_info.items():
        inside = [(str(s), str(e), h) for q, s, e, h in windows if q == queue and s < started and ended < e] \
            if started is not None else []
        if inside:
            in_pause.append((job_id, queue, str(started), str(ended), inside))
    checks.check(f"no claim that ran while its queue was paused handed out its job ({len(windows)} pauses)",
                 not in_pause, f"{len(in_pause)}, e.g. {in_pause[:5]}; kills at {[str(k['at']) for k in kills]}")
    checks.check(f"the queues paused before a kill were still paused after it ({len(pause_kept)})",
                 all(k for _, k in pause_kept), [q for q, k in pause_kept if not k])
    checks.check("pauses were exercised (at least 5 windows, 5 s in all)",
                 len(windows) >= 5 and sum((e - s).total_seconds() for _, s, e, _ in windows) >= 5)

    bad_moves = {j: p for j, p in places.items()
                 if len(p) > 2 or "queue_jobs_long" in p[:-1] or len(p) == 2 and p[1] != "queue_jobs_long"}
    in_long = sum(1 for p in places.values() if p[-1] == "queue_jobs_long")
    checks.check(f"\"long\" and \"never\" jobs moved at most once, to queue_jobs_long, and never back "
                 f"({len(places)} seen waiting, {in_long} in long)", not bad_moves,
                 f"{len(bad_moves)}, e.g. {list(bad_moves.items())[:5]}")
    checks.check("no waiting row of queue_jobs_long was written again (ctid, xmin)", not rewritten, rewritten[:5])
    checks.check("some \"long\" jobs were moved to queue_jobs_long while they waited",
                 any(p[-1] == "queue_jobs_long" for j, p in places.items() if j not in never_pushed))
    checks.check(f"the holder's jobs kept their token and lease while held ({len(held)})",
                 held and all(h[3] for h in held), [h for h in held if not h[3]][:5])
    checks.check("the holder completed every job with its token", all(h[2] for h in held),
                 [h for h in held if not h[2]][:5])
    checks.check("some held jobs were in queue_jobs_long (moved by a rotation, token and lease kept)",
                 any(h[4] for h in held))
    if KILLS:
        checks.check(f"the server was killed {KILLS} times and came back "
                     f"({', '.join(k['kind'] for k in kills)})", len(kills) == KILLS,
                     f"{len(kills)} kills")
        checks.check("a kill hit an open rotation that had moved jobs",
                     KILLS < 3 or any(k["kind"] == "open rotation" for k in kills))
        checks.check(f"every push, claim and completion left without a reply at a kill was found committed "
                     f"({len(limbo)}: {sorted({k for k, _, _ in limbo})})",
                     not limbo_on[0] or not any(k["kind"] == "any moment" for k in kills)
                     or ({k for k, _, _ in limbo} == set(LIMBO) and all(c for _, _, c in limbo)),
                     [x for x in limbo if not x[2]] or "not every kind was left waiting"
                     if limbo_on[0] else "")
        checks.check("the postmaster was killed alone, and with every server process",
                     KILLS < 2 or {k["every"] for k in kills} == {False, True})
        checks.check("every server process exited when the postmaster alone was killed",
                     not any(k["stuck"] for k in kills), [k["stuck"] for k in kills if k["stuck"]])
        checks.check("a completion with its token after a restart worked whenever the job still had that token",
                     not token_refused, token_refused[:5])
        checks.check("some held jobs were completed with their tokens after a kill",
                     any(h[5] != h[6] and h[2] for h in held))
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
