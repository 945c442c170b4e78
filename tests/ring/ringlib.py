"""Helpers of the storage ring suites (tests/ring): connections, a database of
their own, checks with a summary, rotations counted, and the server's
process (kill -9 and start again).

Connections come from the PG* environment (PGHOST, PGPORT, PGUSER); every
suite works in a database it creates and drops.  Debian's psycopg2.
"""
import collections
import os
import random
import signal
import subprocess
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from checks import Checks  # noqa: E402,F401  (the suites import it from here)


# Every column of a job row that a rotation must keep (ring: where it is).
JOB_COLUMNS = ("id, queue, name, payload::text, attempts, max_attempts, priority, unique_key, available_at,"
               " reserved_until, reserved_by, last_error, created_at, token, ready, deadline, ring")


def connect(dbname, autocommit=True, settings=None):
    """A connection to dbname; settings ({name: value}) are SET for the session."""
    conn = psycopg2.connect(dbname=dbname, connect_timeout=10)
    conn.autocommit = True
    with conn.cursor() as cur:
        for name, value in (settings or {}).items():
            cur.execute("SELECT set_config(%s, %s, false)", (name, str(value)))
    conn.autocommit = autocommit
    return conn


def one(conn, sql, args=None):
    """The first column of the first row of sql's result (None without one)."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        row = cur.fetchone() if cur.description else None
    return None if row is None else row[0]


class Database:
    """A database of the suite's own with the extension created; dropped at
    the end (with force: connections a killed test left behind go too).
    settings become the database's defaults (ALTER DATABASE SET), so every
    session of the suite agrees on them (jobqueue.ring_period above all:
    each session computes the ring partition its pushes go to)."""

    def __init__(self, name, settings=None):
        self.name = name
        self.settings = settings or {}

    def __enter__(self):
        admin = connect("postgres")
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            cur.execute(f'CREATE DATABASE "{self.name}"')
            for name, value in self.settings.items():
                cur.execute(f'ALTER DATABASE "{self.name}" SET "{name}" = %s', (str(value),))
        admin.close()
        conn = connect(self.name)
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION jobqueue")
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")
            self.version = cur.fetchone()[0]
        conn.close()
        return self

    def __exit__(self, *exc):
        try:
            admin = connect("postgres")
            with admin.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            admin.close()
        except psycopg2.Error as e:
            print(f"note: could not drop {self.name}: {e}", file=sys.stderr)
        return False

    def connect(self, autocommit=True, settings=None):
        return connect(self.name, autocommit, settings)


class Rotations:
    """What queue_rotate answered, by (argument, outcome)."""

    def __init__(self):
        self.outcomes = collections.Counter()
        self.moved = 0

    def rotate(self, cur, ring):
        cur.execute("SELECT rotated, moved, truncated, outcome FROM queue_rotate(%s)", (ring,))
        rotated, moved, truncated, outcome = cur.fetchone()
        self.outcomes[(ring, outcome)] += 1
        self.moved += moved
        return rotated, moved, truncated, outcome

    def count(self, outcome, ring="any"):
        return sum(n for (r, o), n in self.outcomes.items()
                   if o == outcome and (ring == "any" or r == ring))

    def summary(self):
        return ", ".join(f"{'NULL' if r is None else r}:{o}={n}"
                         for (r, o), n in sorted(self.outcomes.items(), key=lambda x: (str(x[0][0]), x[0][1])))


def ring_size(conn):
    """Bytes of the two ring partitions with their indexes."""
    return one(conn, "SELECT pg_total_relation_size('queue_jobs_ring0') + pg_total_relation_size('queue_jobs_ring1')")


# ------------------------------------------------------------ the server

def _as_postgres(argv):
    """Run a server command as the postgres account when we are root
    (initdb and postgres refuse root), from the cluster's directory."""
    if os.getuid() == 0:
        argv = ["runuser", "-u", "postgres", "--"] + argv
    return subprocess.run(argv, cwd=os.environ["JQ_CLUSTER_DIR"], capture_output=True, text=True, timeout=120)


def postmaster_pid():
    with open(os.path.join(os.environ["JQ_PGDATA"], "postmaster.pid")) as f:
        return int(f.readline())


def _children(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_server(every_process=False):
    """kill -9 of the postmaster of the suite's cluster; waits until its
    children (which exit when they notice) are gone, so it can start again.
    Returns the commands of the children still alive after 30 s (then
    killed too): every server process should notice its postmaster's death.
    every_process: its children are killed with it, right after it (a
    machine's crash: statements in flight, commits included, are cut where
    they are, where a postmaster's death alone lets them finish)."""
    pid = postmaster_pid()
    kids = _children(pid)
    os.kill(pid, signal.SIGKILL)
    if every_process:
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 30
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    stuck = []
    for k in kids:
        if _alive(k):
            with open(f"/proc/{k}/cmdline", "rb") as f:
                stuck.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip())
            os.kill(k, signal.SIGKILL)
    while _alive(pid) or any(_alive(k) for k in kids):
        time.sleep(0.05)
    # The postmaster is not our child: until whoever adopted it reaps it, it
    # is a zombie, which the next postmaster takes for a running one
    # ("lock file postmaster.pid already exists").  Wait for that.
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return stuck


def wait_for_server(db, seconds=60):
    """A connection to db once the server answers (after start_server)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return db.connect()
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def start_server():
    """Start the cluster again after kill_server (crash recovery runs)."""
    bindir = os.environ["JQ_PGBIN"]
    done = _as_postgres([f"{bindir}/pg_ctl", "-D", os.environ["JQ_PGDATA"], "-l", os.environ["JQ_SERVER_LOG"],
                         "-w", "-s", "start"])
    if done.returncode != 0:
        with open(os.environ["JQ_SERVER_LOG"]) as f:
            log = f.readlines()[-15:]
        raise RuntimeError(f"pg_ctl start failed: {done.stdout} {done.stderr}\n{''.join(log)}")


# ------------------------------------------------------------ a steady load

class Load:
    """Producers pushing and workers claiming and completing jobs of one
    queue, each in its own session, recording what committed and how long
    each call took: server side (clock_timestamp() - statement_timestamp(),
    read in the call's own statement, so it counts every lock wait inside
    the call) and client side.  A worker completes a claimed job unless
    hold_share says to keep it (held jobs keep their tokens in self.held).
    A call cut by an error (the server killed) is uncertain: its job is put
    in self.uncertain, and the session stops."""

    def __init__(self, db, queue, producers=2, workers=2, lease="60 seconds", hold_share=0.0,
                 pace=0.002, seed=1):
        self.db, self.queue, self.lease, self.hold_share, self.pace = db, queue, lease, hold_share, pace
        self.rng = random.Random(seed)
        self.pushed = set()            # committed pushes
        self.completed = set()         # committed completions
        self.held = {}                 # id -> token of claims kept
        self.uncertain = set()         # ids of calls an error cut
        self.cut_pushes = 0            # pushes an error cut (their ids unknown)
        self.latencies = collections.defaultdict(list)   # kind -> [(server s, client s)]
        self.errors = []
        self._stop = threading.Event()
        self._threads = ([threading.Thread(target=self._produce, args=(random.Random(self.rng.random()),))
                          for _ in range(producers)]
                         + [threading.Thread(target=self._work, args=(random.Random(self.rng.random()),))
                            for _ in range(workers)])

    def start(self):
        for t in self._threads:
            t.daemon = True
            t.start()
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)

    def _timed(self, cur, kind, sql, args):
        t0 = time.monotonic()
        cur.execute(sql, args)
        row = cur.fetchone()
        self.latencies[kind].append((row[-1].total_seconds(), time.monotonic() - t0))
        return row

    def _cursor(self, role):
        """A cursor on a connection of its own, or None (the error recorded)."""
        try:
            return self.db.connect().cursor()
        except psycopg2.Error as e:
            self.errors.append(f"{role}: {e}")
            return None

    def _produce(self, rng):
        cur = self._cursor("producer")
        if cur is None:
            return
        while not self._stop.is_set():
            try:
                job_id = self._timed(cur, "push", "SELECT queue_push('load', '{}', %s), "
                                     "clock_timestamp() - statement_timestamp()", (self.queue,))[0]
                self.pushed.add(job_id)
            except psycopg2.Error as e:
                self.cut_pushes += 1
                self.errors.append(f"producer: {type(e).__name__}: {str(e).strip()[:200]}")
                return
            time.sleep(rng.random() * self.pace)

    def _work(self, rng):
        cur = self._cursor("worker")
        if cur is None:
            return
        job_id = None
        while not self._stop.is_set():
            try:
                job_id = None
                ids, tokens, _ = self._timed(
                    cur, "claim", "SELECT array_agg(id), array_agg(token), clock_timestamp() - statement_timestamp()"
                    " FROM queue_reserve(%s, %s::interval, 'load', 5)", ([self.queue], self.lease))
                if not ids:
                    time.sleep(0.005)
                    continue
                for job_id, token in zip(ids, tokens):
                    if rng.random() < self.hold_share:
                        self.held[job_id] = token
                        continue
                    ok = self._timed(cur, "complete", "SELECT queue_delete(%s, %s), "
                                     "clock_timestamp() - statement_timestamp()", (job_id, token))[0]
                    if ok:
                        self.completed.add(job_id)
                    else:
                        self.errors.append(f"worker: completing job {job_id} with its token returned false")
                job_id = None
            except psycopg2.Error as e:
                if job_id is not None:
                    self.uncertain.add(job_id)
                self.errors.append(f"worker: {type(e).__name__}: {str(e).strip()[:200]}")
                return

    def worst(self, kinds=("push", "claim", "complete")):
        """The longest server-side and client-side call of these kinds (seconds)."""
        both = [lat for k in kinds for lat in self.latencies[k]]
        return (max((s for s, _ in both), default=0.0), max((c for _, c in both), default=0.0), len(both))

    def share_over(self, seconds, kinds=("push", "claim", "complete")):
        both = [s for k in kinds for s, _ in self.latencies[k]]
        return sum(1 for s in both if s > seconds), len(both)
