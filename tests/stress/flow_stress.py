#!/usr/bin/env python3
"""Concurrency keys under stress (extension 1.5), bounded in time.

On a queue of its own, in the database of the PG* environment (a superuser):
  - the queue's keys one:a, one:b, one:c run at most 1 job at a time (the
    default limit) and two:a, two:b at most 2 (queue_concurrency_set with
    the prefix "two:"); a producer pushes jobs over these keys, at random,
    while 8 worker threads (a connection each) claim one job at a time with
    a 1 s lease and then, at random: complete it after a short while, release
    it for another attempt (a random failure; the third failed attempt moves
    it to the failed table), fail it at once, sleep past the lease before
    completing it (its lease runs out, the job may be claimed again and the
    late completion is fenced out), or abandon it (the lease runs out);
  - a monitor samples, in one statement each time, the live leases per key:
    jobs of the queue with a token and reserved_until > clock_timestamp()
    (an expired lease is not live), grouped by the key the job was pushed
    with (also written in its payload, so the self-test below still counts
    by key).
Then the producer stops and the workers drain the queue. Checked:
  - no sample saw more live leases of a key than its limit;
  - the limits were reached (a key of each kind seen at its limit), leases
    expired and jobs were claimed again, and jobs went to the failed table;
  - every job pushed ended exactly once: one successful queue_delete, or a
    row in the failed table, never both, and nothing is left in queue_jobs.
Knobs:
  JQ_FLOW_STRESS_SECONDS   the producer's time (default 18)
  JQ_FLOW_STRESS_SEED      seed of the random choices (default: the time)
  JQ_FLOW_STRESS_SELFTEST=nokey   push without the concurrency key: the run
                           must fail (the limits are exceeded)
Last line: "N passed, N failed".
"""
import collections
import json
import os
import random
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from checks import Checks  # noqa: E402

SECONDS = float(os.environ.get("JQ_FLOW_STRESS_SECONDS", "18"))
SEED = int(os.environ.get("JQ_FLOW_STRESS_SEED", str(int(time.time()))))
SELFTEST = os.environ.get("JQ_FLOW_STRESS_SELFTEST", "")
WORKERS = 8
LEASE = 1.0
DRAIN_SECONDS = 90
QUEUE = f"flowstress_{os.getpid()}"
LIMITS = {"one:a": 1, "one:b": 1, "one:c": 1, "two:a": 2, "two:b": 2}


def connect():
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


class Run:
    """What the threads record, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pushed = set()
        self.completed = collections.Counter()  # id -> successful queue_delete calls
        self.claims = collections.Counter()      # id -> claims
        self.events = collections.Counter()      # what the workers did
        self.producing = True
        self.stop = False
        self.errors = []

    def note(self, what, n=1):
        with self.lock:
            self.events[what] += n


def producer(run, rng):
    conn = connect()
    cur = conn.cursor()
    keys = list(LIMITS)
    until = time.monotonic() + SECONDS
    try:
        while time.monotonic() < until and not run.stop:
            key = rng.choice(keys)
            payload = json.dumps({"key": key})
            if SELFTEST == "nokey":
                cur.execute("SELECT queue_push('flow', %s::jsonb, %s)", (payload, QUEUE))
            else:
                cur.execute("SELECT queue_push('flow', %s::jsonb, %s, concurrency_key => %s)", (payload, QUEUE, key))
            with run.lock:
                run.pushed.add(cur.fetchone()[0])
            # a burst now and then, so that keys have jobs waiting for a slot
            time.sleep(0 if rng.random() < 0.3 else rng.uniform(0.01, 0.05))
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        run.errors.append(f"producer: {e!r}")
    finally:
        run.producing = False
        conn.close()


def worker(run, number, seed):
    rng = random.Random(seed)
    conn = connect()
    cur = conn.cursor()
    name = f"w{number}"
    try:
        while not run.stop:
            cur.execute("SELECT id, token FROM queue_reserve(ARRAY[%s], %s * interval '1 second', %s, 1)",
                        (QUEUE, LEASE, name))
            row = cur.fetchone()
            if row is None:
                time.sleep(0.005)
                continue
            job, token = row
            with run.lock:
                run.claims[job] += 1
            roll = rng.random()
            if roll < 0.12:
                time.sleep(rng.uniform(0, 0.02))
                cur.execute("SELECT queue_release(%s, %s, interval '0', 'random failure')", (job, token))
                run.note("released" if cur.fetchone()[0] else "release fenced")
                continue
            if roll < 0.15:
                cur.execute("SELECT queue_fail(%s, %s, 'permanent failure')", (job, token))
                run.note("failed" if cur.fetchone()[0] else "fail fenced")
                continue
            if roll < 0.18:
                run.note("abandoned")  # its lease runs out; it is claimed again
                continue
            if roll < 0.22:
                time.sleep(LEASE + rng.uniform(0.1, 0.6))  # past the lease
                run.note("slept past the lease")
            else:
                time.sleep(rng.uniform(0.002, 0.04))
            cur.execute("SELECT queue_delete(%s, %s)", (job, token))
            if cur.fetchone()[0]:
                with run.lock:
                    run.completed[job] += 1
            else:
                run.note("completion fenced")
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        run.errors.append(f"worker {name}: {e!r}")
    finally:
        conn.close()


def monitor(run, samples, over):
    conn = connect()
    cur = conn.cursor()
    try:
        while not run.stop:
            cur.execute(
                "SELECT payload->>'key', count(*) FROM queue_jobs"
                " WHERE queue = %s AND token IS NOT NULL AND reserved_until > clock_timestamp() GROUP BY 1",
                (QUEUE,))
            for key, live in cur.fetchall():
                samples[key] = max(samples.get(key, 0), live)
                if live > LIMITS[key]:
                    over.append((key, live))
            samples["#"] = samples.get("#", 0) + 1
            time.sleep(0.01)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        run.errors.append(f"monitor: {e!r}")
    finally:
        conn.close()


def main():
    checks = Checks("flow_stress")
    print(f"flow_stress: seed {SEED}, {SECONDS:.0f} s of pushes, {WORKERS} workers, queue {QUEUE}"
          + (f", self-test {SELFTEST}" if SELFTEST else ""))
    sys.stdout.flush()
    rng = random.Random(SEED)
    admin = connect()
    cur = admin.cursor()
    cur.execute("SELECT queue_concurrency_set(%s, 'two:', 2)", (QUEUE,))

    run = Run()
    samples, over = {}, []
    threads = [threading.Thread(target=producer, args=(run, random.Random(rng.random())))]
    threads += [threading.Thread(target=worker, args=(run, i, rng.random())) for i in range(WORKERS)]
    watcher = threading.Thread(target=monitor, args=(run, samples, over))
    for t in threads + [watcher]:
        t.start()
    try:
        threads[0].join()
        # the drain: until every job pushed has left queue_jobs, bounded
        until = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < until and not run.errors:
            cur.execute("SELECT count(*) FROM queue_jobs WHERE queue = %s", (QUEUE,))
            if cur.fetchone()[0] == 0:
                break
            time.sleep(0.2)
    finally:
        run.stop = True
        for t in threads + [watcher]:
            t.join(timeout=LEASE + 5)

    cur.execute("SELECT count(*) FROM queue_jobs WHERE queue = %s", (QUEUE,))
    left = cur.fetchone()[0]
    cur.execute("SELECT id FROM queue_failed_jobs WHERE queue = %s", (QUEUE,))
    failed = {r[0] for r in cur.fetchall()}
    print(f"pushed {len(run.pushed)}, completed {len(run.completed)}, failed {len(failed)}, left {left}; "
          f"{sum(run.claims.values())} claims, {samples.get('#', 0)} samples; most live leases per key "
          + ", ".join(f"{k} {samples.get(k, 0)}" for k in LIMITS) + "; " + ", ".join(
              f"{k} {n}" for k, n in sorted(run.events.items())))

    checks.check("no errors in the sessions", not run.errors, "; ".join(run.errors[:3]))
    checks.check("no key ever had more live leases than its limit", not over,
                 f"{len(over)} samples over the limit, e.g. {over[:5]}")
    checks.check("keys of limit 1 and of limit 2 were seen at their limit",
                 max(samples.get(k, 0) for k in ("one:a", "one:b", "one:c")) == 1
                 and max(samples.get(k, 0) for k in ("two:a", "two:b")) == 2,
                 {k: samples.get(k, 0) for k in LIMITS})
    checks.check("leases ran out and their jobs were claimed again",
                 run.events["slept past the lease"] > 0 and run.events["abandoned"] > 0
                 and any(n > 1 for n in run.claims.values()), dict(run.events))
    checks.check("random failures sent jobs to the failed table", len(failed) > 0, len(failed))
    twice = [j for j, n in run.completed.items() if n > 1]
    checks.check("no job was completed twice", not twice, twice[:5])
    both = set(run.completed) & failed
    checks.check("no job was both completed and failed", not both, sorted(both)[:5])
    ended = set(run.completed) | failed
    checks.check("every job pushed ended (completed or failed), nothing is left",
                 ended == run.pushed and left == 0,
                 f"{len(run.pushed - ended)} never ended, {len(ended - run.pushed)} unknown, {left} left")

    cur.execute("DELETE FROM queue_jobs WHERE queue = %s", (QUEUE,))
    cur.execute("DELETE FROM queue_failed_jobs WHERE queue = %s", (QUEUE,))
    cur.execute("SELECT queue_concurrency_remove(%s, 'two:')", (QUEUE,))
    admin.close()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
