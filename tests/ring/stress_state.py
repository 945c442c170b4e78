"""tests/ring/stress.py's shared state: its knobs, what every session records
(read by the checks at the end), the commits left without a reply at a kill
(limbo), and the sessions that survive kills (Session) with their fenced
calls.  Every record is a mutable object, never rebound: the modules share
it by importing it."""
import collections
import os
import threading
import time

import psycopg2

from ringlib import Rotations, one


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
