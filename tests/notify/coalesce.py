#!/usr/bin/env python3
"""Coalesced NOTIFY (notifier.c): a listener is never left asleep.

A listener LISTENs on "jobqueue" and acts as a worker that claims only when
a notification arrives.  Each round, producer A pushes a job and commits
(it notifies: the leading edge), then producer B pushes right after, within
A's coalescing window, and commits (it skips its NOTIFY).  The round passes
when, by draining on notifications alone, the listener claims both jobs:
B's job must be covered by the trailing notification that the sender
worker sends after B's commit.  Also checked: B's transaction really
skipped its NOTIFY in most rounds (coalescing happened), and a queue with
wake-ups turned off (queue_set_notify) gets no trailing notification.

Needs a cluster with jobqueue preloaded (PG* environment) and the
extension created in PGDATABASE.
"""
import os
import select
import sys
import time

import psycopg2

ROUNDS = int(os.environ.get("JQ_COALESCE_ROUNDS", "20"))
WINDOW_MS = 300        # the producers' jobqueue.notify_coalesce
SETTLE_S = 2.0         # how long the listener waits for a straggling notification
QUEUE = "coalesce_q"
QUIET_QUEUE = "coalesce_quiet"


def connect(autocommit=True):
    conn = psycopg2.connect("")
    conn.autocommit = autocommit
    return conn


def producer():
    conn = connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute("SET jobqueue.notify_coalesce = %s", (f"{WINDOW_MS}ms",))
    conn.commit()
    return conn


def push(conn, queue):
    with conn.cursor() as cur:
        cur.execute("SELECT queue_push('coalesce', queue => %s)", (queue,))
    conn.commit()


def drain(listener, queue):
    """Claim and complete every job the listener can see now."""
    done = 0
    with listener.cursor() as cur:
        while True:
            cur.execute("SELECT queue_delete(id, token) FROM queue_reserve(%s, NULL, 'listener', 100)",
                        ([queue],))
            rows = cur.fetchall()
            if not rows:
                return done
            done += len(rows)


def listen_and_drain(listener, queue, settle_s):
    """Drain on every notification until settle_s pass without one.
    Returns (jobs drained, pids that notified)."""
    drained = 0
    pids = []
    deadline = time.monotonic() + settle_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return drained, pids
        # a notification may already have been read while draining
        if not listener.notifies and select.select([listener], [], [], left) == ([], [], []):
            continue
        listener.poll()
        got = False
        while listener.notifies:
            note = listener.notifies.pop(0)
            if note.payload == queue:
                pids.append(note.pid)
                got = True
        if got:
            drained += drain(listener, queue)
            deadline = time.monotonic() + settle_s


def backend_pid(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    conn.commit()
    return pid


def main():
    failures = []
    setup = connect()
    with setup.cursor() as cur:
        cur.execute("SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'")
        if "jobqueue" not in cur.fetchone()[0]:
            print("coalesce: jobqueue is not preloaded; coalescing needs it", file=sys.stderr)
            return 1
        cur.execute("DELETE FROM queue_jobs WHERE queue IN (%s, %s)", (QUEUE, QUIET_QUEUE))
        cur.execute("SELECT queue_set_notify(%s, false)", (QUIET_QUEUE,))

    listener = connect()
    with listener.cursor() as cur:
        cur.execute("LISTEN jobqueue")
    a, b = producer(), producer()
    pid_a, pid_b = backend_pid(a), backend_pid(b)

    # the first coalescing push of a database starts its sender; let it come up
    push(a, QUEUE)
    listen_and_drain(listener, QUEUE, 0.5)
    time.sleep(0.5)

    skipped = 0
    for r in range(ROUNDS):
        push(a, QUEUE)
        push(b, QUEUE)
        drained, pids = listen_and_drain(listener, QUEUE, SETTLE_S if r == 0 else 0.8)
        left = drain(listener, QUEUE)   # what notifications did not lead to
        if left != 0 or drained != 2:
            failures.append(f"round {r}: listener drained {drained} of 2 on notifications "
                            f"({left} left behind); notified by {pids}")
        if pid_b not in pids:
            skipped += 1
        if not any(p not in (pid_a, pid_b) for p in pids) and pid_b not in pids:
            failures.append(f"round {r}: B skipped but no trailing notification came ({pids})")
        time.sleep(WINDOW_MS / 1000.0)  # the next round starts a new window

    if skipped < ROUNDS * 0.5:
        failures.append(f"only {skipped} of {ROUNDS} rounds coalesced B's notification")

    # wake-ups off: no notification at all, leading or trailing
    push(a, QUIET_QUEUE)
    push(b, QUIET_QUEUE)
    _, pids = listen_and_drain(listener, QUIET_QUEUE, 1.0)
    if pids:
        failures.append(f"queue with wake-ups off was notified by {pids}")
    with setup.cursor() as cur:
        cur.execute("DELETE FROM queue_jobs WHERE queue IN (%s, %s)", (QUEUE, QUIET_QUEUE))
        cur.execute("DELETE FROM queue_settings WHERE queue = %s", (QUIET_QUEUE,))

    for f in failures:
        print("FAIL " + f)
    print(f"coalesce: {ROUNDS} rounds, {skipped} coalesced; "
          f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
