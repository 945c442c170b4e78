"""The idle queue and the waiting workers of issue 30, shared by the ring
suite's tests (tests/ring/idle.py, waiting.py) and the benchmark's scenarios
idle and waiting (bench/storage.py), so both measure the same thing:

  - fill_idle: the idle queue's jobs (a paused queue of 5,000, 40 delayed by
    an hour, 5 unclaimed of a queue without workers);
  - settle, idle_window: the settling before an idle window and what the
    window wrote (WAL, pg_class row versions, relfilenodes);
  - wal_records, not_the_servers: the window's WAL records (pg_waldump) and
    those that are not the background writer's running-transactions snapshot;
  - WaitingLoad: sessions waiting in queue_reserve(wait) that delete what they
    claim, paced producers, and a session calling queue_rotate(NULL).

Connections are the caller's (psycopg2, autocommit).  No checks here: the
tests check, the bench reports.
"""
import collections
import os
import subprocess
import threading
import time

import psycopg2

# queue_jobs' leaves from 1.3: what a rotation would give a new relfilenode
PARTITIONS = ("queue_jobs_ring0", "queue_jobs_ring1", "queue_jobs_long")
IDLE_JOBS = 5045   # fill_idle's jobs


def _one(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        row = cur.fetchone() if cur.description else None
    return None if row is None else row[0]


def fill_idle(cur):
    """The idle queue: 5,000 jobs of a paused queue, 40 jobs delayed by an
    hour (many ring periods) and 5 ready jobs nobody claims."""
    cur.execute("SELECT queue_pause('idle_paused')")
    cur.execute("SELECT count(queue_push('idle', '{}', 'idle_paused')) FROM generate_series(1, 5000)")
    cur.execute("SELECT count(queue_push('idle', '{}', 'idle_q', delay => '1 hour')) FROM generate_series(1, 40)")
    cur.execute("SELECT count(queue_push('idle', '{}', 'idle_q')) FROM generate_series(1, 5)")


def settle(conn, period):
    """Two ring periods, so the first rotations put the jobs where they stay;
    then ANALYZE, VACUUM and a CHECKPOINT, so that neither autovacuum nor a
    timed checkpoint writes during the window; then one period more."""
    time.sleep(2 * period + 1)
    with conn.cursor() as cur:
        cur.execute("ANALYZE")
        cur.execute("VACUUM")   # after ANALYZE: its dead pg_statistic rows would be pruned in the window
        cur.execute("CHECKPOINT")
    time.sleep(period + 1)


def catalog_state(conn, relations=PARTITIONS):
    """pg_class's row versions written (as the statistics see them) and the
    relations' relfilenodes."""
    _one(conn, "SELECT pg_stat_clear_snapshot()")
    versions = _one(conn, "SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_sys_tables"
                          " WHERE relname = 'pg_class'")
    nodes = tuple(_one(conn, "SELECT pg_relation_filenode(%s)", (r,)) for r in relations)
    return versions, nodes


def pg_class_versions(conn):
    """Each pg_class row's version (oid -> (xmin, ctid)): two of these tell
    how many rows got a new version, whoever wrote it and whenever its
    statistics are reported (an in-place update, as VACUUM's, keeps both)."""
    with conn.cursor() as cur:
        cur.execute("SELECT oid, xmin::text, ctid::text FROM pg_class")
        return {oid: (xmin, ctid) for oid, xmin, ctid in cur.fetchall()}


def changed_versions(before, after):
    """Rows of pg_class inserted, deleted or given a new version between two
    pg_class_versions."""
    return (sum(1 for oid, v in after.items() if before.get(oid) != v)
            + sum(1 for oid in before if oid not in after))


IdleWindow = collections.namedtuple("IdleWindow", "seconds lsn_before lsn_after wal_bytes catalog_before"
                                                  " catalog_after versions_changed")


def idle_window(conn, seconds, relations=PARTITIONS):
    """What the server writes over `seconds` (nothing else done here): WAL
    bytes (pg_current_wal_lsn), pg_class statistics and relfilenodes of
    `relations`, and pg_class rows with a new version."""
    lsn_before = _one(conn, "SELECT pg_current_wal_lsn()")
    catalog_before = catalog_state(conn, relations)
    versions_before = pg_class_versions(conn)
    time.sleep(seconds)
    lsn_after = _one(conn, "SELECT pg_current_wal_lsn()")
    catalog_after = catalog_state(conn, relations)
    versions_after = pg_class_versions(conn)
    wal_bytes = int(_one(conn, "SELECT pg_wal_lsn_diff(%s, %s)", (lsn_after, lsn_before)))
    return IdleWindow(seconds, lsn_before, lsn_after, wal_bytes, catalog_before, catalog_after,
                      changed_versions(versions_before, versions_after))


def wal_records(lsn_before, lsn_after):
    """The WAL records between two LSNs (pg_waldump's "rmgr: ..." lines),
    read from JQ_PGDATA's pg_wal with JQ_PGBIN's pg_waldump; None when these
    are not set (the records cannot be read)."""
    pgbin, pgdata = os.environ.get("JQ_PGBIN"), os.environ.get("JQ_PGDATA")
    if not pgbin or not pgdata:
        return None
    if lsn_before == lsn_after:
        return []
    dump = subprocess.run([os.path.join(pgbin, "pg_waldump"), "-p", os.path.join(pgdata, "pg_wal"),
                           "-s", lsn_before, "-e", lsn_after], capture_output=True, text=True, timeout=60)
    return [line for line in dump.stdout.splitlines() if line.startswith("rmgr:")]


def not_the_servers(records):
    """The records that are not PostgreSQL's own running-transactions
    snapshot (rmgr Standby, RUNNING_XACTS), which the background writer logs
    up to 15 s after any WAL was written, so one may trail earlier activity
    into an idle window."""
    return [r for r in records if not (r.startswith("rmgr: Standby") and "RUNNING_XACTS" in r)]


class WaitingLoad:
    """`workers` sessions loop queue_reserve('{queue}', NULL, wN, 1, wait)
    and queue_delete what they get; from start_load on, `producers` sessions
    push `rate` jobs a second in all, `batch` jobs per transaction, paced on
    a schedule (a late push is caught up, not dropped), and one session
    calls queue_rotate(NULL) every `rotate_every` s (as the ticker would),
    counting its outcomes by (seconds since start_load, outcome).  connect()
    returns a new autocommit connection to the database."""

    def __init__(self, connect, queue="waiting", workers=32, wait="1 second"):
        self.connect, self.queue, self.wait = connect, queue, wait
        self.stop_event = threading.Event()
        self.errors = []
        self.pushed = []                       # jobs of each committed push transaction
        self.completed = collections.Counter()  # worker -> jobs deleted
        self.rotations = []                    # (seconds since start_load, outcome)
        self.load_started = None
        self.threads = [threading.Thread(target=self._work, args=(n,), daemon=True) for n in range(workers)]

    def start_workers(self):
        for t in self.threads:
            t.start()
        return self

    def start_load(self, rate=800, batch=4, producers=1, rotate_every=0.5):
        self.load_started = time.monotonic()
        extra = [threading.Thread(target=self._produce, args=(producers * batch / rate, batch), daemon=True)
                 for _ in range(producers)]
        if rotate_every:
            extra.append(threading.Thread(target=self._rotate, args=(rotate_every,), daemon=True))
        for t in extra:
            t.start()
        self.threads += extra
        return self

    def stop(self, timeout=15):
        self.stop_event.set()
        for t in self.threads:
            t.join(timeout=timeout)

    def total_pushed(self):
        return sum(self.pushed)

    def total_completed(self):
        return sum(self.completed.values())

    def outcomes(self, after=0.0):
        """queue_rotate's outcomes (outcome -> count) of the calls made more
        than `after` s into the load."""
        return collections.Counter(o for t, o in self.rotations if t > after)

    def _work(self, n):
        try:
            cur = self.connect().cursor()
            while not self.stop_event.is_set():
                cur.execute("SELECT id, token FROM queue_reserve(%s, NULL, %s, 1, %s)",
                            ([self.queue], f"w{n}", self.wait))
                for job_id, token in cur.fetchall():
                    cur.execute("SELECT queue_delete(%s, %s)", (job_id, token))
                    if cur.fetchone()[0]:
                        self.completed[n] += 1
                    else:
                        self.errors.append(f"worker {n}: completing job {job_id} returned false")
        except psycopg2.Error as e:
            self.errors.append(f"worker {n}: {str(e).strip()[:200]}")

    def _produce(self, interval, batch):
        try:
            cur = self.connect().cursor()
            next_at = time.monotonic()
            while not self.stop_event.is_set():
                cur.execute("SELECT count(queue_push('w', '{}', %s)) FROM generate_series(1, %s)",
                            (self.queue, batch))
                self.pushed.append(cur.fetchone()[0])
                next_at += interval
                time.sleep(max(0.0, next_at - time.monotonic()))
        except psycopg2.Error as e:
            self.errors.append(f"producer: {str(e).strip()[:200]}")

    def _rotate(self, every):
        try:
            cur = self.connect().cursor()
            while not self.stop_event.is_set():
                cur.execute("SELECT outcome FROM queue_rotate(NULL)")
                self.rotations.append((time.monotonic() - self.load_started, cur.fetchone()[0]))
                self.stop_event.wait(every)
        except psycopg2.Error as e:
            self.errors.append(f"rotation: {str(e).strip()[:200]}")
