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

Then, once per committed transaction: a transaction that pushes to two
queues several times each (wa, wb, wa, wa, wb) announces each queue
exactly once, by its own NOTIFY or, when it skipped its NOTIFY, by the
sender, never both: counted per queue with queues of their own for each
transaction, so every notification of them is that transaction's (or the
one producer A committed just before, when the case needs a skip).  With
and without other sessions pushing to other queues all the while.

Needs a cluster with jobqueue preloaded (PG* environment) and the
extension created in PGDATABASE.
"""
import os
import select
import sys
import threading
import time

import psycopg2

ROUNDS = int(os.environ.get("JQ_COALESCE_ROUNDS", "20"))
WINDOW_MS = 300        # the producers' jobqueue.notify_coalesce
SETTLE_S = 2.0         # how long the listener waits for a straggling notification
QUEUE = "coalesce_q"
QUIET_QUEUE = "coalesce_quiet"
ONCE_ROUNDS = int(os.environ.get("JQ_COALESCE_ONCE_ROUNDS", "3"))


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


def collect(listener, queues, settle_s):
    """The notifications of queues, as (queue, pid), until settle_s pass
    without one (and at least settle_s from now)."""
    got = []
    deadline = time.monotonic() + settle_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return got
        if not listener.notifies and select.select([listener], [], [], left) == ([], [], []):
            continue
        listener.poll()
        while listener.notifies:
            note = listener.notifies.pop(0)
            if note.payload in queues:
                got.append((note.payload, note.pid))
                deadline = time.monotonic() + settle_s


def forget_notifications(listener):
    listener.poll()
    del listener.notifies[:]


def noise(stop, pushed):
    """Another session pushing to a queue of its own, a transaction a push."""
    conn = producer()
    with conn.cursor() as cur:
        while not stop.is_set():
            cur.execute("SELECT queue_push('noise', queue => 'once_noise')")
            conn.commit()
            pushed[0] += 1
            time.sleep(0.003)
    conn.close()


def check_once_per_transaction(listener, a, t, pid_a, pid_t, settle_s, concurrent):
    """Each transaction announces each queue it pushed to exactly once."""
    failures = []
    stop = threading.Event()
    pushed = [0]
    skip_cases = [0, 0]     # queues T should have left to the sender; those it did
    threads = [threading.Thread(target=noise, args=(stop, pushed)) for _ in range(2 if concurrent else 0)]
    for th in threads:
        th.start()
    label = "with other sessions pushing" if concurrent else "alone"
    try:
        for r in range(ONCE_ROUNDS):
            for case in ("notifies", "skips", "skips, then the window passes"):
                tag = f"{'c' if concurrent else 's'}{r}_{case.split(',')[0][0]}{len(case)}"
                wa, wb = f"once_{tag}_a", f"once_{tag}_b"
                forget_notifications(listener)
                expected_by_a = 0
                if case != "notifies":
                    # A notifies both queues (the leading edge): T, within A's
                    # window, skips its NOTIFY and leaves both to the sender
                    with a.cursor() as cur:
                        cur.execute("SELECT queue_push('once', queue => %s), queue_push('once', queue => %s)",
                                    (wa, wb))
                    a.commit()
                    expected_by_a = 1
                with t.cursor() as cur:
                    for i, q in enumerate((wa, wb, wa, wa, wb)):
                        if case == "skips, then the window passes" and i == 3:
                            time.sleep(WINDOW_MS / 1000.0 + 0.1)
                        cur.execute("SELECT queue_push('once', queue => %s)", (q,))
                t.commit()
                got = collect(listener, (wa, wb), settle_s)
                for q in (wa, wb):
                    pids = [pid for queue, pid in got if queue == q]
                    by_a = pids.count(pid_a)
                    by_t = pids.count(pid_t)
                    by_sender = len(pids) - by_a - by_t
                    # T's own NOTIFY, or (when it skipped) one by the sender
                    if by_a != expected_by_a or by_t + by_sender != 1:
                        failures.append(f"{label}, round {r}, T {case}: queue {q[-1]} announced "
                                        f"{by_t + by_sender} times for T (by T {by_t}, by the sender "
                                        f"{by_sender}), {by_a} for A (expected 1 for T, "
                                        f"{expected_by_a} for A)")
                    if case == "notifies" and by_t != 1:
                        failures.append(f"{label}, round {r}: T did not notify {q[-1]} itself "
                                        f"(by T {by_t}, by the sender {by_sender})")
                    if case != "notifies":
                        skip_cases[0] += 1
                        skip_cases[1] += by_sender == 1 and by_t == 0
                time.sleep(WINDOW_MS / 1000.0)  # the next case starts a new window
    finally:
        stop.set()
        for th in threads:
            th.join()
    if concurrent and pushed[0] == 0:
        failures.append("the other sessions pushed nothing")
    # T skips unless the sender is not up (it starts on demand)
    if skip_cases[1] < skip_cases[0] * 0.5:
        failures.append(f"{label}: T left only {skip_cases[1]} of {skip_cases[0]} queues to the sender")
    return failures


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

    # once per transaction; late duplicates come from the sender within the
    # server's notify_coalesce (its period) of the commit: wait far longer
    with setup.cursor() as cur:
        cur.execute("SELECT setting::int FROM pg_settings WHERE name = 'jobqueue.notify_coalesce'")
        server_coalesce_ms = cur.fetchone()[0]
    once_settle_s = max(1.0, 20 * server_coalesce_ms / 1000.0)
    t = producer()
    pid_t = backend_pid(t)
    for concurrent in (False, True):
        failures += check_once_per_transaction(listener, a, t, pid_a, pid_t, once_settle_s, concurrent)

    with setup.cursor() as cur:
        cur.execute("DELETE FROM queue_jobs WHERE queue IN (%s, %s) OR queue LIKE 'once\\_%%'",
                    (QUEUE, QUIET_QUEUE))
        cur.execute("DELETE FROM queue_settings WHERE queue = %s", (QUIET_QUEUE,))

    for f in failures:
        print("FAIL " + f)
    print(f"coalesce: {ROUNDS} rounds, {skipped} coalesced; {2 * 3 * ONCE_ROUNDS} transactions "
          f"counted (each queue once each); "
          f"{1 if not failures else 0} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
