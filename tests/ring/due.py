#!/usr/bin/env python3
"""Rotations by time (1.3): queue_rotate(NULL), what queue_tick() does.

For jobqueue.ring_period of 1, 2 and 3 seconds, a session pushes a job and
calls queue_rotate(NULL) every 50 ms for two and a half periods, noting the
wall clock of each call.  Checked for each period: some rotation truncated;
every rotation that truncated emptied the partition pushes were not going
to, in the second half of a period (at least half a period after pushes
left it); every 'not due' came in the first half.  And queue_tick() rotates
too: called in the second half of a period, it empties the partition pushes
left (its relfilenode changes).  And a partition whose rows are all dead
is emptied by the next tick before its turn, the one taking pushes too:
with a period of an hour (no rotation by time), 12,000 jobs (over a MiB)
pushed and completed, then ticks until the statistics show them dead: the
partition's relfilenode changes and it has no page left; with one live job
left among the same, nothing is emptied.  Needs a superuser (PG* environment).
Last line: "N passed, N failed".
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import Checks, Database, one  # noqa: E402


def ring_at(t, period):
    return int(t // period) % 2


def into_period(t, period):
    return (t % period) / period


def rotations_by_time(checks, db, period):
    conn = db.connect(settings={"jobqueue.ring_period": period})
    cur = conn.cursor()
    seen = []
    end = time.time() + 2.5 * period
    while time.time() < end:
        cur.execute("SELECT queue_push('due', '{}', 'due_q')")
        before = time.time()
        cur.execute("SELECT rotated, outcome FROM queue_rotate(NULL)")
        rotated, outcome = cur.fetchone()
        seen.append((before, time.time(), rotated, outcome))
        time.sleep(0.05)
    one(conn, "DELETE FROM queue_jobs")
    conn.close()
    truncated = [s for s in seen if s[3] == "truncated"]
    # a call spans [before, after]: judge only calls whose span lies within one half period
    def half(s):
        a, b = into_period(s[0], period), into_period(s[1], period)
        if int(s[0] // period) != int(s[1] // period):
            return None
        return "first" if b < 0.5 else "second" if a >= 0.5 else None
    wrong_ring = [s for s in truncated if s[2] == ring_at(s[0], period) and s[2] == ring_at(s[1], period)]
    early = [s for s in truncated if half(s) == "first"]
    late_not_due = [s for s in seen if s[3] == "not due" and half(s) == "second"]
    outcomes = sorted({s[3] for s in seen})
    print(f"   period {period} s: {len(seen)} calls, outcomes {outcomes}, {len(truncated)} truncated")
    checks.check(f"period {period} s: rotations by time truncated", len(truncated) >= 1)
    checks.check(f"period {period} s: each truncated the partition pushes were not going to", not wrong_ring,
                 wrong_ring[:3])
    checks.check(f"period {period} s: none truncated in the first half of a period", not early, early[:3])
    checks.check(f"period {period} s: none said 'not due' in the second half of a period", not late_not_due,
                 late_not_due[:3])


def tick_rotates(checks, db):
    period = 2
    conn = db.connect(settings={"jobqueue.ring_period": period})
    cur = conn.cursor()
    # a job in each partition, then wait for the second half of a period
    for _ in range(2):
        cur.execute("SELECT queue_push('tick', '{}', 'due_t')")
        time.sleep(period / 2 + 0.1)
        cur.execute("SELECT queue_push('tick', '{}', 'due_t')")
        time.sleep(period / 2)
    while not 0.6 <= into_period(time.time(), period) <= 0.8:
        time.sleep(0.02)
    left = 1 - ring_at(time.time(), period)
    node = f"pg_relation_filenode('queue_jobs_ring{left}')"
    before = one(conn, f"SELECT {node}")
    cur.execute("SELECT count(*) FROM queue_tick()")
    after = one(conn, f"SELECT {node}")
    jobs = one(conn, "SELECT count(*) FROM queue_jobs WHERE queue = 'due_t'")
    checks.check("queue_tick() in the second half of a period empties the partition pushes left "
                 "(its relfilenode changes), keeping its jobs", before != after and jobs == 4, (before, after, jobs))
    conn.close()


def burst(cur, queue, jobs, keep):
    """Push jobs, complete all but keep of them; return the partition pushes went to."""
    cur.execute("SELECT count(*) FROM (SELECT queue_push_many(jsonb_agg(jsonb_build_object("
                "'name', 'burst', 'queue', %s))) FROM generate_series(1, %s) g GROUP BY g %% 100) s",
                (queue, jobs))
    cur.execute("SELECT count(*) FROM (SELECT queue_delete(id, token) FROM queue_reserve(ARRAY[%s],"
                " '10 minutes', 'w', 10000)) s", (queue,))
    cur.execute("SELECT count(*) FROM (SELECT queue_delete(id, token) FROM queue_reserve(ARRAY[%s],"
                " '10 minutes', 'w', %s)) s", (queue, jobs - 10000 - keep))
    return one(cur.connection, "SELECT queue_current_ring()")


def emptied_when_dead(checks, db):
    conn = db.connect(settings={"jobqueue.ring_period": 3600})
    cur = conn.cursor()
    for keep, label in ((0, "every row dead"), (1, "one live job")):
        cur.execute("TRUNCATE queue_jobs")
        ring = burst(cur, f"dead_{keep}", 12000, keep)
        node = f"pg_relation_filenode('queue_jobs_ring{ring}')"
        before = one(conn, f"SELECT {node}")
        size = one(conn, f"SELECT pg_relation_size('queue_jobs_ring{ring}')")
        deadline = time.time() + 15
        while time.time() < deadline:
            cur.execute("SELECT count(*) FROM queue_tick()")
            if one(conn, f"SELECT {node}") != before:
                break
            time.sleep(0.5)   # the backends' statistics reach the server within a second
        after = one(conn, f"SELECT {node}")
        pages = one(conn, f"SELECT pg_relation_size('queue_jobs_ring{ring}')")
        live = one(conn, f"SELECT count(*) FROM queue_jobs WHERE queue = 'dead_{keep}'")
        if keep == 0:
            checks.check(f"a partition taking pushes whose rows are all dead ({size // 1024} kB) is "
                         "emptied by a tick before its turn", after != before and pages == 0 and live == 0,
                         (before, after, pages, live))
        else:
            checks.check(f"with {label} in it, it is left as it is (no TRUNCATE in 15 s)",
                         after == before and pages == size and live == 1, (before, after, pages, live))
    conn.close()


def main():
    checks = Checks("ring due")
    with Database(f"jq_ring_due_{os.getpid()}") as db:
        for period in (1, 2, 3):
            rotations_by_time(checks, db, period)
        tick_rotates(checks, db)
        emptied_when_dead(checks, db)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
