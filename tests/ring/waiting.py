#!/usr/bin/env python3
"""The ring keeps rotating while workers wait (issue 30, test b).

32 sessions loop queue_reserve(..., wait => '1 second') and complete what
they get (queue_delete), a producer offers about 800 jobs a second (4 every
5 ms, so that most workers wait most of the time), and a session calls
queue_rotate(NULL) every half second, as the ticker would, counting its
outcomes; jobqueue.ring_period is 4 s.  The run
lasts JQ_WAITING_SECONDS (40 s; 120 s with JQ_LONG=1), after 2 s of the
workers alone.  Checked:
  - while the workers wait with nothing to claim, none of them holds a lock
    on queue_jobs or its partitions (pg_locks, 10 looks; a look may catch
    a round of a claim, which holds its locks for a moment), and they sleep
    (wait event Extension) rather than look again and again;
  - a push wakes one of them at once (median of 5 under 0.25 s; a lost
    wake-up would leave it to the next look, up to 1 s later);
  - rotations truncate: after the first 8 s, in at least every other
    period (about one a period here; the 1.3-1.5 rotation answered 'busy'
    as long as any worker waited: 0 truncated, 35 busy in 40 s);
  - the job tables' size (queue_jobs' partitions with their indexes) at
    the end is at most twice their size at 20 s;
  - every job pushed was completed or is still in queue_jobs.
Needs a superuser (PG* environment).  Last line: "N passed, N failed".
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import Checks, Database, one  # noqa: E402
import storagelib  # noqa: E402

PERIOD = 4
WORKERS = 32
SECONDS = int(os.environ.get("JQ_WAITING_SECONDS", "120" if os.environ.get("JQ_LONG") == "1" else "40"))
REFERENCE_AT = 20

SIZE = ("SELECT pg_total_relation_size('queue_jobs_ring0') + pg_total_relation_size('queue_jobs_ring1')"
        " + pg_total_relation_size('queue_jobs_long')")


def main():
    checks = Checks("ring waiting")
    with Database(f"jq_ring_waiting_{os.getpid()}", {"jobqueue.ring_period": PERIOD}) as db:
        # first the workers alone: nothing to claim, every one of them waits
        load = storagelib.WaitingLoad(db.connect, "waiting", WORKERS).start_workers()
        conn = db.connect()
        time.sleep(2)
        with_locks = []
        asleep = []
        for _ in range(10):
            asleep.append(one(conn, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%queue_reserve%'"
                                    " AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()"))
            with_locks.append(one(conn, """
                SELECT count(DISTINCT l.pid) FROM pg_locks l
                JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.relation IN ('queue_jobs'::regclass, 'queue_jobs_ring0'::regclass,
                                     'queue_jobs_ring1'::regclass, 'queue_jobs_long'::regclass)
                  AND a.query LIKE '%queue_reserve%' AND a.state = 'active'
                  AND l.pid <> pg_backend_pid()"""))
            time.sleep(0.1)
        print(f"   {WORKERS} workers waiting with nothing to claim: sessions holding a lock on the job tables,"
              f" in 10 looks 100 ms apart: {with_locks}")
        checks.check("a waiting queue_reserve holds no lock on the job tables while it sleeps"
                     " (in at least 8 of 10 looks no waiting session does)",
                     sum(1 for n in with_locks if n == 0) >= 8, with_locks)
        print(f"   of them asleep (wait event Extension) in the same looks: {asleep}")
        checks.check(f"the waiting workers sleep (at least {WORKERS * 3 // 4} asleep in the median look)",
                     sorted(asleep)[len(asleep) // 2] >= WORKERS * 3 // 4, asleep)
        # a push wakes a sleeping worker at once (without wake-ups it would wait up to 1 s)
        latencies = []
        for _ in range(5):
            job = one(conn, "SELECT queue_push('w', '{}', 'waiting')")
            t0 = time.monotonic()
            while one(conn, "SELECT count(*) FROM queue_jobs WHERE id = %s AND attempts = 0", (job,)) \
                    and time.monotonic() - t0 < 3:
                time.sleep(0.005)
            latencies.append(round(time.monotonic() - t0, 3))
            load.pushed.append(1)
            time.sleep(0.3)
        print(f"   a push to {WORKERS} sleeping workers claimed after (s): {latencies}")
        checks.check("a push wakes a waiting worker (median under 0.25 s)",
                     sorted(latencies)[2] < 0.25, latencies)

        # 4 jobs every 5 ms, so that most workers wait most of the time
        load.start_load(rate=800, batch=4, producers=1, rotate_every=0.5)
        started = load.load_started
        sizes = []
        reference = None
        while time.monotonic() - started < SECONDS:
            time.sleep(1)
            size = one(conn, SIZE)
            sizes.append(size)
            if reference is None and time.monotonic() - started >= REFERENCE_AT:
                reference = size
        load.stop()
        final = one(conn, SIZE)
        left = one(conn, "SELECT count(*) FROM queue_jobs WHERE queue = 'waiting'")
        conn.close()

        outcomes, late = load.outcomes(), load.outcomes(after=8)
        truncated = late["truncated"]
        summary = ", ".join(f"{o}={n} ({late[o]} after 8 s)" for o, n in sorted(outcomes.items()))
        pushed, completed, errors = load.total_pushed(), load.total_completed(), load.errors
        print(f"   {SECONDS} s, {WORKERS} waiting workers: {pushed} pushed, {completed} completed,"
              f" {left} left; rotations: {summary}; size at {REFERENCE_AT} s {reference} bytes, at the end {final},"
              f" largest {max(sizes)}")
        checks.check("no call failed", not errors, errors[:3])
        wanted = max(1, (SECONDS - 8) // PERIOD // 2)
        checks.check(f"rotations truncate while workers wait (at least {wanted} after 8 s)", truncated >= wanted,
                     f"{truncated} truncated; {summary}")
        checks.check(f"the job tables at the end are at most twice their size at {REFERENCE_AT} s",
                     reference is not None and final <= 2 * reference, (reference, final))
        checks.check("every job pushed was completed or is still queued",
                     pushed == completed + left, (pushed, completed, left))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
