#!/usr/bin/env python3
"""A failover in the middle of a drain:  failover.py sync|async

A primary and a streaming standby, synchronous (synchronous_standby_names
names the standby, synchronous_commit = on) or asynchronous; jobqueue
preloaded and its ticker on in both (the standby's waits for a promotion).
Producers (psycopg2, each push its own transaction) push jobs; two C++
workers (`jobqueue work --exec ... --concurrency 3`, the Worker runtime)
run them, one connected with a multi-host connection string
("host=/sockA,/sockB port=pA,pB target_session_attrs=read-write"), the
other with the same in the PG* environment (PGHOST=a,b PGPORT=pa,pb
PGTARGETSESSIONATTRS=read-write); a probe worker (psycopg2) claims and
completes jobs of a queue of its own, noting each claim and completion the
server acknowledged; two schedules ("@every 1 second", catch_up on and off)
enqueue windows that the workers run too.  In the middle of the drain the
primary is killed (pg_ctl stop -m immediate) and, after an outage of
JQ_FAILOVER_OUTAGE seconds (2; the time a failover manager takes to decide),
the standby promoted (pg_ctl promote); everything goes on against it until
the backlog is zero.  In asynchronous mode the standby's WAL receiver is
stopped for JQ_FAILOVER_LAG seconds (1.5) before the kill: a lagging standby.
The old primary's data directory is started again afterwards on a port
nobody else knows, to compare what it had with what the new primary has.

What is observable, and so what the checks mean:
  every job carries a key of its own in its payload ("k"): job ids are no
    identity across an asynchronous failover, since the promoted server's id
    sequence may be behind and hands out the ids of lost jobs again;
  a push is acknowledged when queue_push returned to the producer;
  a claim or a completion is acknowledged when the probe's queue_reserve
    returned the job, or its queue_delete returned true;
  a completion is recorded when a job's row leaves queue_jobs (an audit
    trigger on DELETE writes fo_completions: the job's id, key and the token
    of the claim whose queue_delete removed it; no job fails here, nothing is
    cancelled, and a rotation of the storage ring, which moves a job by
    DELETE and INSERT in one statement, is told apart by the row being there
    again); a claim is recorded when a row's token changes (fo_claims); a
    window is enqueued when a schedule's job is inserted (fo_windows: its
    unique key names the schedule and the window);
  a job ran when its handler appended its key to a file (at-least-once: a
    job whose claim or completion the kill cut runs again, and is counted).

Checks, in both modes unless marked:
  cli        `jobqueue push` and `jobqueue status` reach the primary through
             both forms with the standby listed first; without
             target_session_attrs the push lands on the standby and is
             refused (exit 3, SQLSTATE 25006);
  pushes     (sync) every acknowledged push is on the new primary right
             after the promotion, and is completed in the end; (async) printed;
  acks       (sync) every claim and completion acknowledged to the probe is
             recorded on the new primary; (async) printed;
  drain      the workers reconnect by themselves and the backlog reaches
             zero; on the new primary no job is completed twice, and every
             completion used the token of the job's last recorded claim;
  fencing    a job claimed on the old primary (lease 2 s), claimed again on
             the new one once its lease ran out: queue_delete(id, old token)
             is false, the new token works; and no (id, token) of a claim
             recorded only on the old primary is handed out by the new one
             (async: it would let the worker holding the lost claim finish
             the new claim's job);
  log        each worker wrote one "connection lost" and one "reconnected
             after" line, nothing else;
  windows    on the new primary no window is enqueued twice; the catch_up
             schedule has every window (those of the outage enqueued late),
             the other skips windows only in the outage, all but the latest;
             (sync) at most one window (a tick in flight at the kill) was
             enqueued on both sides as different jobs; (async) printed.
JQ_FAILOVER_SELFTEST=nosync runs "sync" with an asynchronous, lagging standby:
its pushes, acks and windows checks must fail.
Printed: the time from the primary's death to the first job completed on the
new primary, and what the old primary had that the new one lacks.
Last line: "N passed, N failed".
"""
import collections
import datetime
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import replica  # noqa: E402
import tool  # noqa: E402
from checks import Checks  # noqa: E402

import psycopg2  # noqa: E402

# The database initdb makes: it exists when the server starts, so the
# background ticker connects to it at once (to a database created later it
# would connect only when the ticker is restarted, 10 s after failing).
DB = "postgres"
# Jobs waiting when the workers start, by mode: enough for a backlog to be
# left at the kill (synchronous commits make the drain about 3 times slower).
BACKLOG = {"sync": 1500, "async": 3000}
# Seconds between the kill and the promotion: a failover manager's time to
# decide (Patroni's loop_wait and ttl are seconds); long enough for the
# outage to span schedule windows. 0 measures promotion and reconnection alone.
OUTAGE = float(os.environ.get("JQ_FAILOVER_OUTAGE", "2"))
# Asynchronous mode: seconds before the kill during which the standby's WAL
# receiver is stopped (SIGSTOP), as a standby lags behind a busy primary
# over a real network; what the primary commits meanwhile is what an
# asynchronous failover loses. Locally, without it, the standby is
# milliseconds behind and nothing is lost.
LAG = float(os.environ.get("JQ_FAILOVER_LAG", "1.5"))
# JQ_FAILOVER_SELFTEST=nosync: the sync run without synchronous_standby_names,
# its standby lagging as in the async run: the sync checks must fail.
NOSYNC = os.environ.get("JQ_FAILOVER_SELFTEST") == "nosync"
WORK_QUEUES = ["fo_work", "fo_sched"]
# Seconds after the promoted server's first window in which a skipped window
# of a schedule without catch_up still counts as the outage's (see the check).
STARTUP_SECONDS = 2
SCHEDULE_PREFIX = "jobqueue:schedule:"

# The audit trail (see the module's comment). The queue's functions run with
# search_path = pg_catalog, pg_temp: everything is qualified.
AUDIT_SQL = """
CREATE TABLE public.fo_claims (job_id bigint NOT NULL, token bigint NOT NULL,
                               at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp());
CREATE TABLE public.fo_completions (job_id bigint NOT NULL, k text, token bigint, queue text NOT NULL,
                                    at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp());
CREATE TABLE public.fo_windows (job_id bigint NOT NULL, unique_key text NOT NULL,
                                at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp());
CREATE FUNCTION public.fo_audit() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- a rotation of the storage ring moves jobs with DELETE ... INSERT in
        -- one statement: a job still there after it was moved, not completed
        IF EXISTS (SELECT 1 FROM public.queue_jobs WHERE id = OLD.id) THEN
            RETURN OLD;
        END IF;
        INSERT INTO public.fo_completions (job_id, k, token, queue)
        VALUES (OLD.id, COALESCE(OLD.payload ->> 'k', OLD.unique_key), OLD.token, OLD.queue);
        RETURN OLD;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO public.fo_claims (job_id, token) VALUES (NEW.id, NEW.token);
    ELSE
        INSERT INTO public.fo_windows (job_id, unique_key) VALUES (NEW.id, NEW.unique_key);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER fo_audit_claims AFTER UPDATE ON public.queue_jobs FOR EACH ROW
    WHEN (NEW.token IS NOT NULL AND NEW.token IS DISTINCT FROM OLD.token) EXECUTE FUNCTION public.fo_audit();
CREATE TRIGGER fo_audit_completions AFTER DELETE ON public.queue_jobs FOR EACH ROW
    EXECUTE FUNCTION public.fo_audit();
CREATE TRIGGER fo_audit_windows AFTER INSERT ON public.queue_jobs FOR EACH ROW
    WHEN (NEW.unique_key LIKE 'jobqueue:schedule:%') EXECUTE FUNCTION public.fo_audit();
"""


def connect_retrying(dsn, stop, seconds=60):
    """A connection to whichever host is the primary, retried while the
    failover lasts; None once stop is set or after seconds."""
    deadline = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            conn = psycopg2.connect(dsn, connect_timeout=2)
            conn.autocommit = True
            return conn
        except psycopg2.Error:
            time.sleep(0.05)
    return None


class Producers:
    """Threads pushing one job per transaction, three to fo_work for one to
    fo_probe; acked: (key, time the call returned) of every push that did."""

    def __init__(self, dsn, threads=2, pace=0.004):
        self.dsn, self.pace = dsn, pace
        self.acked = []
        self.failures = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)]

    def start(self):
        for t in self._threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self._threads:
            t.join(30)

    def _run(self, n):
        conn, i = None, 0
        while not self.stop.is_set():
            if conn is None:
                conn = connect_retrying(self.dsn, self.stop)
                if conn is None:
                    return
            key = f"p{n}-{i}"
            i += 1
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT queue_push('job', jsonb_build_object('k', %s), %s, max_attempts => 100)",
                                (key, "fo_probe" if i % 4 == 0 else "fo_work"))
                    cur.fetchone()
                with self._lock:
                    self.acked.append((key, time.time()))
            except psycopg2.Error:
                self.failures += 1   # its outcome is unknown: not acknowledged
                conn.close()
                conn = None
            time.sleep(self.pace)


class Probe:
    """One worker in Python on queue fo_probe: claims (lease 5 s) and
    completes one job at a time, noting (id, token, key) of each claim the
    server returned and each completion that returned true."""

    def __init__(self, dsn):
        self.dsn = dsn
        self.claims, self.completions = [], []
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def finish(self):
        self.stop.set()
        self._thread.join(30)

    def _run(self):
        conn = None
        while not self.stop.is_set():
            if conn is None:
                conn = connect_retrying(self.dsn, self.stop)
                if conn is None:
                    return
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT id, token, payload ->> 'k' FROM queue_reserve('{fo_probe}', '5 seconds',"
                                " 'probe', wait => '200 milliseconds')")
                    row = cur.fetchone()
                    if row is None:
                        continue
                    self.claims.append(row)
                    cur.execute("SELECT queue_delete(%s, %s)", row[:2])
                    if cur.fetchone()[0]:
                        self.completions.append(row)
            except psycopg2.Error:
                conn.close()
                conn = None


def window_of(unique_key):
    """(schedule, window as a UTC datetime) of a schedule job's unique key
    jobqueue:schedule:<name>:<window in ISO 8601>."""
    name, window = unique_key[len(SCHEDULE_PREFIX):].split(":", 1)
    return name, datetime.datetime.fromisoformat(window.replace("Z", "+00:00"))


def setup(mode):
    settings = {"shared_preload_libraries": "jobqueue", "jobqueue.tick_database": DB,
                "jobqueue.tick_interval": "200ms", "max_connections": 60}
    primary = replica.init_primary("primary", settings)
    conn = primary.connect(DB)
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION jobqueue")
        cur.execute(AUDIT_SQL)
        for name, catch_up in (("fo-catch-up", True), ("fo-latest", False)):
            cur.execute("SELECT queue_schedule_set(%s, '@every 1 second', 'window', queue => 'fo_sched',"
                        " max_attempts => 100, catch_up => %s)", (name, catch_up))
    conn.close()
    standby = replica.make_standby(primary, "standby")
    if mode == "sync" and not NOSYNC:
        replica.make_synchronous(primary, "standby")
    return primary, standby


def check_cli_forms(checks, primary, standby):
    """Both forms of a multi-host connection, the standby listed first."""
    dsn = replica.multi_host_dsn([standby, primary], DB)
    pushed = tool.run(["push", "cli", "{}", "--queue", "fo_cli"], dsn=dsn)
    checks.check("cli: push through a multi-host --dsn (standby first, target_session_attrs=read-write)",
                 pushed.returncode == 0 and pushed.stdout.strip().isdigit(), f"{pushed.returncode} {pushed.stderr}")
    env = replica.multi_host_environment([standby, primary], DB)
    status = tool.run(["status", "--json"], env=env)
    checks.check("cli: status through PGHOST=a,b PGPORT=pa,pb PGTARGETSESSIONATTRS=read-write",
                 status.returncode == 0 and '"fo_cli"' in status.stdout, f"{status.returncode} {status.stderr}")
    pushed = tool.run(["push", "cli", "{}", "--queue", "fo_cli"], env=dict(env, PGTARGETSESSIONATTRS="any"))
    checks.check("cli: without target_session_attrs the push lands on the standby: exit 3, SQLSTATE 25006",
                 pushed.returncode == 3 and "25006" in pushed.stderr and "standby" in pushed.stderr,
                 f"{pushed.returncode} {pushed.stderr.strip()}")


def wait_for(predicate, seconds, step=0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def audit(server):
    """What a server's audit trail and queue hold."""
    q = lambda sql: server.query(sql, dbname=DB)  # noqa: E731
    return {
        # (job, token, when): a replicated claim has the same three on both sides
        "claims": set(q("SELECT job_id, token, at::text FROM fo_claims")),
        "completions": q("SELECT job_id, k, token, queue, extract(epoch FROM at)::float8 FROM fo_completions"),
        "windows": q("SELECT job_id, unique_key, extract(epoch FROM at)::float8 FROM fo_windows"),
        "jobs": dict(q("SELECT id, COALESCE(payload ->> 'k', unique_key) FROM queue_jobs")),
        "last_claims": dict(q("SELECT DISTINCT ON (job_id) job_id, token FROM fo_claims ORDER BY job_id, at DESC")),
    }


def check_windows(checks, mode, new, old, killed_at, promote_at):
    by_schedule = collections.defaultdict(list)
    for job, key, at in new["windows"]:
        name, window = window_of(key)
        by_schedule[name].append((window, job, at))
    for name in ("fo-catch-up", "fo-latest"):
        rows = sorted(by_schedule[name])
        windows = [w for w, _, _ in rows]
        checks.check(f"windows: {name}: no window enqueued twice on the new primary ({len(windows)} windows)",
                     len(windows) == len(set(windows)) and len(windows) >= 5,
                     [w.isoformat() for w, n in collections.Counter(windows).items() if n > 1])
        missing = []
        for a, b in zip(windows, windows[1:]):
            step = a + datetime.timedelta(seconds=1)
            while step < b:
                missing.append(step)
                step += datetime.timedelta(seconds=1)
        if name == "fo-catch-up":
            # windows that fell due while no server could tick, enqueued by the promoted one
            caught_up = [w for w, _, at in rows if killed_at < w.timestamp() < promote_at and at >= promote_at]
            checks.check(f"windows: {name}: every window from the first to the last, the outage's caught up"
                         f" ({len(caught_up)} late)", not missing and (caught_up or promote_at - killed_at < 2),
                         f"missing {[m.isoformat() for m in missing]}, {len(caught_up)} caught up")
        else:
            # the outage: from the last window enqueued before the kill to the
            # first enqueued after it (by the promoted server's ticker), and
            # the promoted server's first STARTUP_SECONDS: its end-of-recovery
            # checkpoint and the whole backlog's drain compete with the
            # ticker, whose tick may then come more than a window late (a
            # 2-core machine skipped one window a second after the first,
            # at every code version tried)
            before = max((w for w, _, at in rows if at < killed_at), default=None)
            after = min((w for w, _, at in rows if at >= killed_at), default=None)
            settled = after and after + datetime.timedelta(seconds=STARTUP_SECONDS)
            outside = [m for m in missing if before is None or after is None or not before < m < settled]
            print(f"windows: {name}: {len(missing)} windows skipped, in the outage from"
                  f" {before and before.isoformat()} to {after and after.isoformat()} (catch_up off: the latest only)")
            checks.check(f"windows: {name}: windows are skipped only in the outage", not outside,
                         [m.isoformat() for m in outside])
            if promote_at - killed_at >= 2:
                # two windows or more fell due in the outage: the first tick enqueues the latest only
                checks.check(f"windows: {name}: the outage's windows but the latest are skipped", missing,
                             "none skipped")
    new_keys = {key: job for job, key, _ in new["windows"]}
    lost = [key for job, key, _ in old["windows"] if key not in new_keys]
    twice = [key for job, key, _ in old["windows"] if key in new_keys and new_keys[key] != job]
    print(f"windows: enqueued on the old primary only: {len(lost)}; on both sides as different jobs: {len(twice)}")
    if mode == "sync":
        checks.check("windows: (sync) at most the tick in flight at the kill enqueued on both sides",
                     len(twice) <= 1, twice)


class Run:
    """One failover in the middle of a drain (see the module's comment)."""

    def __init__(self, mode, checks):
        self.mode, self.checks = mode, checks
        self.backlog = int(os.environ.get("JQ_FAILOVER_BACKLOG") or BACKLOG[mode])
        self.work = replica.root()

    def start(self):
        self.primary, self.standby = setup(self.mode)
        check_cli_forms(self.checks, self.primary, self.standby)
        self.dsn = replica.multi_host_dsn([self.primary, self.standby], DB)
        # a backlog, acknowledged like every push; the fencing job, claimed with a short lease
        conn = self.primary.connect(DB)
        with conn.cursor() as cur:
            cur.execute("SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'job', 'queue', 'fo_work',"
                        " 'max_attempts', 100, 'payload', jsonb_build_object('k', 'b-' || i))))"
                        " FROM generate_series(1, %s) i", (self.backlog,))
            cur.execute("SELECT queue_push('fenced', '{}', 'fo_fence', max_attempts => 100)")
            cur.execute("SELECT id, token FROM queue_reserve('{fo_fence}', '2 seconds', 'old-primary')")
            self.fence = cur.fetchone()
        conn.close()
        # this claim is not the one to lose (tokens.py loses claims): replicated before the lag
        replica.wait_replayed(self.primary, self.standby)
        self.producers = Producers(self.dsn)
        self.producers.acked += [(f"b-{i}", time.time()) for i in range(1, self.backlog + 1)]
        self.probe = Probe(self.dsn)
        self.runs = os.path.join(self.work, "runs.txt")
        handler = f'printf "%s\\n" "$(cat)" >> {self.runs}'   # the payload: one write, one line
        self.workers = [
            tool.WorkProcess(os.path.join(self.work, "worker-dsn.log"), WORK_QUEUES, handler, dsn=self.dsn),
            tool.WorkProcess(os.path.join(self.work, "worker-env.log"), WORK_QUEUES, handler,
                             env=replica.multi_host_environment([self.primary, self.standby], DB))]
        self.producers.start()
        self.probe.start()

    def fail_over(self):
        primary, standby = self.primary, self.standby
        # the middle of the drain: a quarter of the backlog done and 3 s of
        # work (schedule windows), or half of it done
        started = time.monotonic()
        done = lambda: primary.value("SELECT count(*) FROM fo_completions WHERE queue = 'fo_work'",  # noqa: E731
                                     dbname=DB)
        wait_for(lambda: done() >= self.backlog // 2 or (done() >= self.backlog // 4 and time.monotonic() > started + 3), 20)
        receiver = None
        if (self.mode == "async" or NOSYNC) and LAG > 0:
            receiver = standby.value("SELECT pid FROM pg_stat_wal_receiver")
            os.kill(receiver, signal.SIGSTOP)
            time.sleep(LAG)
        left = primary.value("SELECT count(*) FROM queue_jobs WHERE queue = 'fo_work'", dbname=DB)
        self.killed_at = time.time()
        primary.kill()
        self.died_at = time.time()
        if receiver:
            os.kill(receiver, signal.SIGCONT)   # it finds the primary gone
        time.sleep(OUTAGE)
        self.promote_at = time.time()
        standby.promote()
        self.promoted_at = time.time()
        if receiver:
            print(f"the standby's WAL receiver was stopped for {LAG:.1f} s before the kill")
        print(f"killed the primary with {left} jobs of fo_work left ({self.died_at - self.killed_at:.2f} s);"
              f" promoted {self.promoted_at - self.killed_at:.2f} s after the kill (pg_ctl promote took"
              f" {self.promoted_at - self.promote_at:.2f} s)")
        # what the new primary has of the pushes acknowledged before the kill
        present = {r[0] for r in standby.query("SELECT payload ->> 'k' FROM queue_jobs UNION ALL"
                                               " SELECT k FROM fo_completions", dbname=DB)}
        acked = [key for key, at in self.producers.acked if at < self.killed_at]
        missing = [key for key in acked if key not in present]
        if self.mode == "sync":
            self.checks.check(f"pushes: (sync) every acknowledged push is on the new primary ({len(acked)})",
                              not missing, f"{len(missing)} missing, e.g. {missing[:5]}")
        else:
            print(f"pushes: (async) acknowledged before the kill but not on the new primary:"
                  f" {len(missing)} of {len(acked)}")

    def drain(self):
        new = self.standby
        time.sleep(3)
        self.producers.finish()
        drained = wait_for(lambda: new.value("SELECT count(*) FROM queue_jobs WHERE queue IN ('fo_work', 'fo_probe')",
                                             dbname=DB) == 0, 90, 0.25)
        drained_at = time.time()
        self.probe.finish()
        statuses = [w.stop() for w in self.workers]
        left = new.value("SELECT count(*) FROM queue_jobs WHERE queue IN ('fo_work', 'fo_probe')", dbname=DB)
        self.checks.check(f"drain: the workers reconnect and the backlog reaches zero"
                          f" ({drained_at - self.promoted_at:.1f} s after the promotion)",
                          drained and left == 0, f"{left} jobs left")
        self.checks.check("drain: the workers stop with status 0", statuses == [0, 0], statuses)

    def check_fencing_directly(self):
        fence_id, old_token = self.fence
        conn = self.standby.connect(DB)
        with conn.cursor() as cur:
            cur.execute("SELECT id, token FROM queue_reserve('{fo_fence}', '1 minute', 'new-primary')")
            row = cur.fetchone()
            new_token = row[1] if row and row[0] == fence_id else None
            cur.execute("SELECT queue_delete(%s, %s)", (fence_id, old_token))
            old_works = cur.fetchone()[0]
            cur.execute("SELECT queue_delete(%s, %s)", (fence_id, new_token))
            new_works = cur.fetchone()[0]
        conn.close()
        self.checks.check("fencing: the old primary's claim cannot complete the job claimed again on the new one",
                          new_token is not None and not old_works,
                          f"claimed again: {row}, queue_delete(id, old token {old_token}) = {old_works}")
        self.checks.check("fencing: the new claim's token completes it", new_works is True, new_works)

    def check_outcomes(self):
        checks, mode = self.checks, self.mode
        self.new = new = audit(self.standby)
        completed = collections.Counter(k for _, k, _, _, _ in new["completions"])
        twice = [k for k, n in completed.items() if n > 1]
        checks.check(f"drain: no job completed twice on the new primary ({len(completed)} jobs)", not twice,
                     f"{len(twice)} jobs, e.g. {twice[:5]}")
        stale = [(job, token) for job, _, token, _, _ in new["completions"]
                 if job in new["last_claims"] and new["last_claims"][job] != token]
        checks.check("drain: every completion used the token of the job's last claim", not stale, stale[:5])
        never = [key for key, _ in self.producers.acked if key not in completed]
        if mode == "sync":
            checks.check(f"pushes: (sync) every acknowledged push was completed ({len(self.producers.acked)})",
                         not never, f"{len(never)}, e.g. {never[:5]}")
        else:
            print(f"pushes: (async) acknowledged pushes lost with the old primary (never completed): {len(never)}"
                  f" of {len(self.producers.acked)}")
        claims = {(j, t) for j, t, _ in new["claims"]}
        completions = {(j, t) for j, _, t, _, _ in new["completions"]}
        claims_missing = [c for c in self.probe.claims if c[:2] not in claims]
        done_missing = [c for c in self.probe.completions if c[:2] not in completions]
        if mode == "sync":
            checks.check(f"acks: (sync) every claim acknowledged to the probe is on the new primary"
                         f" ({len(self.probe.claims)})", not claims_missing, claims_missing[:5])
            checks.check(f"acks: (sync) every completion acknowledged to the probe is on the new primary"
                         f" ({len(self.probe.completions)})", not done_missing, done_missing[:5])
        else:
            print(f"acks: (async) claims acknowledged to the probe but not on the new primary: {len(claims_missing)}"
                  f" of {len(self.probe.claims)}; completions: {len(done_missing)} of {len(self.probe.completions)}")
        for w in self.workers:
            lost, back, other = w.outages()
            checks.check(f"log: {os.path.basename(w.log)}: one 'connection lost' and one 'reconnected after'"
                         " line, nothing else", len(lost) == 1 and len(back) == 1 and not other, w.lines()[:10])
        # the failover's time: the primary's death to the first job a C++
        # worker completed on the new primary (the old one is dead once
        # pg_ctl stop -m immediate has returned: completions after that are the new one's)
        firsts = sorted(at for _, _, _, queue, at in new["completions"] if queue == "fo_work" and at > self.died_at)
        checks.check("drain: jobs were completed on the new primary", bool(firsts))
        if firsts:
            print(f"failover time ({mode}): {firsts[0] - self.killed_at:.2f} s from the kill to the first job"
                  f" completed on the new primary, {firsts[0] - self.promote_at:.2f} s from the promote command"
                  f" (outage before it {OUTAGE:.1f} s)")
        with open(self.runs) as f:
            ran = collections.Counter(f.read().splitlines())
        print(f"runs: {sum(ran.values())} handler runs of {len(ran)} jobs; {sum(1 for n in ran.values() if n > 1)}"
              " jobs ran more than once (at-least-once: claims or completions the kill cut)")

    def compare_with_old_primary(self):
        """The old primary, started again where nobody connects to it."""
        primary, new = self.primary, self.new
        primary.port = replica.free_port()
        primary.start(f"-c port={primary.port} -c jobqueue.tick_database= -c synchronous_standby_names=")
        old = audit(primary)
        primary.stop()
        # every job each side knows of, by id: its key
        old_jobs = {**old["jobs"], **{j: k for j, k, _, _, _ in old["completions"]}}
        new_jobs = {**new["jobs"], **{j: k for j, k, _, _, _ in new["completions"]}}
        old_keys, new_keys = set(old_jobs.values()) - {None}, set(new_jobs.values()) - {None}
        claims_lost = old["claims"] - new["claims"]
        old_done = {(k, t) for _, k, t, _, _ in old["completions"]}
        new_done = {(k, t) for _, k, t, _, _ in new["completions"]}
        reused = [j for j, k in old_jobs.items() if j in new_jobs and new_jobs[j] != k]
        print(f"old primary only ({self.mode}): {len(old_keys - new_keys)} pushes, {len(claims_lost)} claims,"
              f" {len(old_done - new_done)} completions (of {len(old_keys)}, {len(old['claims'])}, {len(old_done)});"
              f" ids of its jobs given to other jobs by the new primary: {len(reused)}")
        # a claim the new primary made with the (id, token) of one lost with the old
        reissued = sorted({(j, t) for j, t, _ in claims_lost} & {(j, t) for j, t, _ in new["claims"] - old["claims"]})
        self.checks.check("fencing: no (id, token) of a claim lost with the old primary is handed out again",
                          not reissued, f"{len(reissued)}, e.g. {reissued[:5]}")
        check_windows(self.checks, self.mode, new, old, self.killed_at, self.promote_at)


def run(mode, checks):
    failover = Run(mode, checks)
    failover.start()
    failover.fail_over()
    failover.drain()
    failover.check_fencing_directly()
    failover.check_outcomes()
    failover.compare_with_old_primary()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("sync", "async"):
        print("usage: failover.py sync|async", file=sys.stderr)
        return 2
    checks = Checks(f"failover {mode}")
    try:
        run(mode, checks)
    except Exception as e:  # noqa: BLE001 - a step the rest depends on failed: count it, stop
        checks.check("the run went through", False, f"{type(e).__name__}: {e}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
