#!/usr/bin/env python3
"""A hot standby of a jobqueue database, and the same server once promoted.

A primary (jobqueue preloaded, its ticker on, a schedule "@every 1 second")
with a backlog (pending, delayed and held jobs, a failed row) and a
streaming standby made by pg_basebackup -R.  On the standby:

  reads     queue_stats, queue_pending, queue_failed_rows, queue_list and
            queue_schedule_list answer what the primary answers, and so do
            `jobqueue status` and `jobqueue failed`;
  ticker    the standby's log has no line about jobqueue for its first
            seconds: the background ticker (configured there too) neither
            runs nor error-loops before a promotion;
  writes    every writing call fails at once (under a second, queue_reserve
            with a wait included) with SQLSTATE 25006 and a message that
            says the server is a standby;
  client    tests/client/standby_test.cpp: the C++ client refuses writes
            there as a ConnectionError (25006) and a worker logs it once;
  worker    `jobqueue work` connected to the standby alone logs one line
            ("connection lost (... standby ...)") however long it retries,
            fails no job, and once the standby is promoted drains its queue
            by itself and logs "reconnected after N s", once.
Then, on the promoted server:
  ticking   the ticker starts by itself: the schedule enqueues windows
            though nobody calls queue_tick();
  waiting   a queue_reserve waiting in the server is woken by another
            session's push at once (shared memory), not by its periodic look;
  claims    claims find every job: the replicated backlog (pending, delayed
            and held, the latter two due on a clock two hours ahead) and
            200 new jobs of mixed priorities, each claimed once;
  delayed   a job pushed with a 1 s delay is claimed by a waiting claim
            when it falls due.
Last line: "N passed, N failed".
"""
import os
import random
import subprocess
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
STANDBY_TESTS = os.environ.get("JQ_STANDBY_TESTS") or os.path.join(
    tool.TREE, "build", "client", "tests", "jobqueue_standby_tests")
QUIET_SECONDS = 3.0   # the standby's first seconds, in which its log must say nothing of jobqueue


def setup_primary():
    primary = replica.init_primary("primary", {
        "shared_preload_libraries": "jobqueue",
        "jobqueue.tick_database": DB,
        "jobqueue.tick_interval": "200ms",
    })
    conn = primary.connect(DB)
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION jobqueue")
    cur.execute("SELECT queue_push('ro-' || i, jsonb_build_object('i', i), 'fo_ro', priority => i)"
                " FROM generate_series(1, 3) i")
    cur.execute("SELECT queue_push('ro-delayed', '{}', 'fo_ro', '1 hour')")
    cur.execute("SELECT queue_push('ro-held', '{}', 'fo_ro', priority => 9)")
    cur.execute("SELECT id, token FROM queue_reserve('{fo_ro}', '10 minutes', 'primary-worker')")
    held = cur.fetchone()
    cur.execute("SELECT queue_push('broken', '{\"why\": 1}', 'fo_failed')")
    cur.execute("SELECT queue_fail(id, token, 'it broke') FROM queue_reserve('{fo_failed}')")
    cur.execute("SELECT id FROM queue_failed_jobs")
    failed_id = cur.fetchone()[0]
    cur.execute("SELECT queue_push('work-' || i, '{}', 'fo_worker') FROM generate_series(1, 20) i")
    cur.execute("SELECT queue_push('client-' || i, '{}', 'standby_test') FROM generate_series(1, 3) i")
    cur.execute("SELECT count(*) FROM queue_reserve('{standby_test}', '10 minutes', 'primary-worker')")
    cur.execute("SELECT queue_schedule_set('fo-every-second', '@every 1 second', 'tick', queue => 'fo_sched')")
    conn.close()
    return primary, held, failed_id


def reads(server):
    """The read-only calls' answers, without what the ticker changes all the
    time (the schedule's queue, its last and next windows)."""
    return {
        "queue_stats": server.query("SELECT * FROM queue_stats() WHERE queue <> 'fo_sched'", dbname=DB),
        "queue_pending": server.query("SELECT queue_pending('fo_ro'), queue_pending('fo_worker')", dbname=DB),
        "queue_failed_rows": server.query("SELECT * FROM queue_failed_rows()", dbname=DB),
        "queue_list": server.query("SELECT * FROM queue_list() WHERE queue <> 'fo_sched'", dbname=DB),
        "queue_schedule_list": server.query("SELECT name, cron, job_name, queue, enabled, catch_up"
                                            " FROM queue_schedule_list()", dbname=DB),
    }


def cli_reads(server):
    status = tool.run(["status"], dsn=server.dsn(DB))
    failed = tool.run(["failed"], dsn=server.dsn(DB))
    return (status.returncode, [line for line in status.stdout.splitlines() if "fo_sched" not in line],
            status.stderr.strip(), failed.returncode, failed.stdout, failed.stderr.strip())


def writing_calls(held, failed_id):
    jid, tok = held
    return [
        ("queue_push", "SELECT queue_push('x', '{}', 'fo_ro')"),
        ("queue_push_many", """SELECT queue_push_many('[{"name": "x", "queue": "fo_ro"}]')"""),
        ("queue_reserve", "SELECT * FROM queue_reserve('{fo_ro}')"),
        ("queue_reserve with a wait", "SELECT * FROM queue_reserve('{fo_nothing}', wait => '5 seconds')"),
        ("queue_delete", f"SELECT queue_delete({jid}, {tok})"),
        ("queue_release", f"SELECT queue_release({jid}, {tok})"),
        ("queue_fail", f"SELECT queue_fail({jid}, {tok}, 'x')"),
        ("queue_extend", f"SELECT queue_extend({jid}, {tok}, '1 minute')"),
        ("queue_delete_many", f"SELECT queue_delete_many(ARRAY[{jid}]::bigint[], ARRAY[{tok}]::bigint[])"),
        ("queue_release_many", f"SELECT queue_release_many(ARRAY[{jid}]::bigint[], ARRAY[{tok}]::bigint[])"),
        ("queue_fail_many", f"SELECT queue_fail_many(ARRAY[{jid}]::bigint[], ARRAY[{tok}]::bigint[])"),
        ("queue_retry_failed", f"SELECT queue_retry_failed({failed_id})"),
        ("queue_forget_failed", f"SELECT queue_forget_failed({failed_id})"),
        ("queue_pause", "SELECT queue_pause('fo_ro')"),
        ("queue_resume", "SELECT queue_resume('fo_ro')"),
        ("queue_set_default_lease", "SELECT queue_set_default_lease('fo_ro', '1 minute')"),
        ("queue_set_notify", "SELECT queue_set_notify('fo_ro', false)"),
        ("queue_clear", "SELECT queue_clear('fo_ro')"),
        ("queue_cancel", f"SELECT queue_cancel({jid})"),
        ("queue_schedule_set", "SELECT queue_schedule_set('fo-new', '@every 1 minute', 'x')"),
        ("queue_schedule_remove", "SELECT queue_schedule_remove('fo-every-second')"),
        ("queue_tick", "SELECT * FROM queue_tick()"),
        ("queue_rotate", "SELECT * FROM queue_rotate()"),
        ("queue_rotate(0)", "SELECT * FROM queue_rotate(0)"),
    ]


def check_writes_refused(checks, standby, held, failed_id):
    conn = standby.connect(DB)
    for name, sql in writing_calls(held, failed_id):
        began = time.monotonic()
        outcome = None
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                cur.fetchall()
        except psycopg2.Error as e:
            outcome = e
        took = time.monotonic() - began
        if outcome is None:
            checks.check(f"standby: {name} is refused", False, "it succeeded")
            continue
        message = outcome.diag.message_primary or ""
        checks.check(f"standby: {name} fails at once with 25006 and says standby",
                     outcome.pgcode == "25006" and "standby" in message.lower() and took < 1.0,
                     f"SQLSTATE {outcome.pgcode}, {took:.2f}s: {message}")
    conn.close()


def check_quiet_log(checks, standby, started):
    """Nothing about jobqueue in the standby's log since it started (its
    ticker is configured, and must wait for a promotion)."""
    time.sleep(max(0.0, started + QUIET_SECONDS - time.monotonic()))
    lines = [line.strip() for line in standby.log_lines() if "jobqueue" in line]
    checks.check(f"standby: no log line about jobqueue in its first {QUIET_SECONDS:.0f} s (ticker idle)",
                 not lines, f"{len(lines)} lines, first: {lines[:3]}")


def check_client_tests(checks, standby):
    env = tool.environment({"JQ_STANDBY_DSN": standby.dsn(DB), "JQ_STANDBY_QUEUE": "standby_test"})
    try:
        done = subprocess.run([STANDBY_TESTS], env=env, capture_output=True, text=True, timeout=60)
        ok = done.returncode == 0 and "SKIPPED" not in done.stdout
        checks.check("standby: the C++ client's standby tests (tests/client/standby_test.cpp)", ok,
                     (done.stdout + done.stderr)[-3000:])
    except (OSError, subprocess.TimeoutExpired) as e:
        checks.check("standby: the C++ client's standby tests (tests/client/standby_test.cpp)", False, e)


def check_worker_through_promotion(checks, primary, standby):
    """`jobqueue work` on the standby alone, then the standby is promoted."""
    worker = tool.WorkProcess(os.path.join(replica.root(), "worker-on-standby.log"), ["fo_worker"], "true",
                              dsn=standby.dsn(DB), concurrency=2)
    time.sleep(2.5)
    lost, back, other = worker.outages()
    checks.check("worker on the standby: one line says it is a standby, however often it retries",
                 len(lost) == 1 and "standby" in lost[0] and not back and not other, worker.lines())
    checks.check("worker on the standby: nothing claimed", standby.value(
        "SELECT count(*) FROM queue_jobs WHERE queue = 'fo_worker' AND token IS NULL", dbname=DB) == 20)
    primary.stop()
    promoted_at = time.monotonic()
    standby.promote()
    deadline = time.monotonic() + 20
    left = None
    while time.monotonic() < deadline:
        left = standby.value("SELECT count(*) FROM queue_jobs WHERE queue = 'fo_worker'", dbname=DB)
        if left == 0:
            break
        time.sleep(0.1)
    drained = time.monotonic() - promoted_at
    status = worker.stop()
    lost, back, other = worker.outages()
    checks.check(f"worker: drains its queue by itself once the standby is promoted ({drained:.1f} s)",
                 left == 0, f"{left} jobs left")
    checks.check("worker: one 'connection lost' and one 'reconnected after' line in all, nothing else",
                 len(lost) == 1 and len(back) == 1 and not other, worker.lines())
    checks.check("worker: stops with status 0", status == 0, status)


def check_ticker_after_promotion(checks, server):
    """Nobody calls queue_tick() now (the worker above has stopped): the
    schedule's windows keep coming from the ticker of the promoted server."""
    since = server.value("SELECT clock_timestamp()", dbname=DB)
    deadline = time.monotonic() + 8
    enqueued = 0
    while time.monotonic() < deadline and enqueued < 2:
        enqueued = server.value("SELECT count(*) FROM queue_jobs WHERE queue = 'fo_sched' AND created_at > %s",
                                (since,), dbname=DB)
        time.sleep(0.2)
    tickers = server.value("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue ticker'", dbname=DB)
    checks.check("promoted: the ticker runs by itself and enqueues the schedule's windows",
                 enqueued >= 2 and tickers == 1, f"{enqueued} windows in 8 s, {tickers} ticker processes")
    started = [line for line in server.log_lines() if "jobqueue ticker: ticking database" in line]
    checks.check("promoted: the ticker started once", len(started) == 1, started)


def check_waiting_claim(checks, server):
    """A claim waiting in the server (10 s) is woken by a push of another
    session; a waiting claim that is not woken looks again only every
    second or so, hence the bound of 0.5 s."""
    delays = []
    pusher = server.connect(DB)
    for round_ in range(3):
        waiter = server.connect(DB)
        got = {}

        def wait(conn=waiter, got=got):
            with conn.cursor() as cur:
                cur.execute("SELECT id FROM queue_reserve('{fo_wait}', wait => '10 seconds')")
                got["rows"] = cur.fetchall()
                got["at"] = time.monotonic()

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.5)
        with pusher.cursor() as cur:
            cur.execute("SELECT queue_push('wake', '{}', 'fo_wait')")
            pushed_id = cur.fetchone()[0]
        pushed_at = time.monotonic()
        thread.join(15)
        waiter.close()
        ok = got.get("rows") == [(pushed_id,)]
        delays.append(got["at"] - pushed_at if ok else 99.0)
    pusher.close()
    delays.sort()
    checks.check(f"promoted: a waiting claim is woken by a push (median {delays[1] * 1000:.0f} ms)",
                 delays[1] < 0.5, [f"{d:.3f}s" for d in delays])


def check_claims_find_everything(checks, server):
    """The replicated backlog of fo_ro (pending; delayed and held, due two
    hours ahead) and 200 new jobs, claimed in batches: every one, once."""
    conn = server.connect(DB)
    cur = conn.cursor()
    cur.execute("SELECT id FROM queue_jobs WHERE queue = 'fo_ro' ORDER BY id")
    replicated = {r[0] for r in cur.fetchall()}
    cur.execute("SET jobqueue.clock_offset = '2 hours'")
    cur.execute("SELECT id FROM queue_reserve('{fo_ro}', max_jobs => 100)")
    got = [r[0] for r in cur.fetchall()]
    checks.check(f"promoted: claims find the whole replicated backlog ({len(replicated)} jobs)",
                 sorted(got) == sorted(replicated) and len(replicated) == 5, f"{sorted(got)} of {sorted(replicated)}")
    cur.execute("RESET jobqueue.clock_offset")
    rng = random.Random(19)
    pushed = set()
    for i in range(200):
        cur.execute("SELECT queue_push('many', '{}', 'fo_many', priority => %s)", (rng.randrange(-3, 4),))
        pushed.add(cur.fetchone()[0])
    claimed = []
    for _ in range(20):
        cur.execute("SELECT id FROM queue_reserve('{fo_many}', '1 minute', 'claims', 30)")
        batch = [r[0] for r in cur.fetchall()]
        if not batch:
            break
        claimed += batch
        # complete half, so that the claim positions move past completed jobs too
        cur.execute("SELECT queue_delete(id, token) FROM queue_jobs WHERE id = ANY(%s) AND id %% 2 = 0", (batch,))
    checks.check("promoted: claims find every one of 200 new jobs, each once",
                 sorted(claimed) == sorted(pushed), f"{len(claimed)} claims, {len(set(claimed))} jobs of {len(pushed)}")
    conn.close()


def check_delayed_job(checks, server):
    conn = server.connect(DB)
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM queue_reserve('{fo_delay}')")  # nothing due: remembered
    cur.execute("SELECT queue_push('later', '{}', 'fo_delay', '1 second')")
    job = cur.fetchone()[0]
    began = time.monotonic()
    cur.execute("SELECT id FROM queue_reserve('{fo_delay}', wait => '5 seconds')")
    rows = cur.fetchall()
    took = time.monotonic() - began
    checks.check(f"promoted: a delayed job is claimed when due ({took:.2f} s after a 1 s delay)",
                 rows == [(job,)] and 0.9 <= took < 2.5, f"{rows}, {took:.2f}s")
    conn.close()


def main():
    checks = Checks("failover standby")
    try:
        primary, held, failed_id = setup_primary()
        standby = replica.make_standby(primary, "standby")
        standby_started = time.monotonic()
        replica.wait_replayed(primary, standby)

        on_primary, on_standby = reads(primary), reads(standby)
        for name in on_primary:
            checks.check(f"standby: {name} answers what the primary answers", on_standby[name] == on_primary[name],
                         f"standby {on_standby[name]}, primary {on_primary[name]}")
        p_cli, s_cli = cli_reads(primary), cli_reads(standby)
        checks.check("standby: `jobqueue status` shows what it shows on the primary",
                     s_cli[0] == 0 and s_cli[:3] == p_cli[:3] and len(s_cli[1]) > 2, f"standby {s_cli[:3]}, primary {p_cli[:3]}")
        checks.check("standby: `jobqueue failed` shows what it shows on the primary",
                     s_cli[3] == 0 and s_cli[3:] == p_cli[3:] and "it broke" in s_cli[4],
                     f"standby {s_cli[3:]}, primary {p_cli[3:]}")
        check_quiet_log(checks, standby, standby_started)
        check_writes_refused(checks, standby, held, failed_id)
        check_client_tests(checks, standby)
        check_worker_through_promotion(checks, primary, standby)
        check_ticker_after_promotion(checks, standby)
        check_waiting_claim(checks, standby)
        check_claims_find_everything(checks, standby)
        check_delayed_job(checks, standby)
    except Exception as e:  # noqa: BLE001 - a step the rest depends on failed: count it, stop
        checks.check("the run went through", False, f"{type(e).__name__}: {e}")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
