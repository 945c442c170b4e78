#!/usr/bin/env python3
"""Two-phase commit (prepared.c): a prepared push wakes workers at COMMIT PREPARED.

Checked with the library preloaded, max_prepared_transactions > 0 and the
default coalescing (jobqueue.notify_coalesce):
  - a claim waiting in the server (queue_reserve(wait => 10 s)) is woken
    by COMMIT PREPARED run in a third session, and returns the prepared
    job well before its wait would end; a LISTENing worker is notified;
  - ROLLBACK PREPARED wakes nobody: the waiting claim returns nothing at
    the end of its wait, the listener gets no notification;
  - PREPARE after a push that left its wake-up to the coalescing sender
    (pushes of one queue from two sessions within the window) works, and
    the session, its later transactions and the server stay sound: many
    rounds of prepared and plain pushes in the same sessions, every job
    delivered to the listener, the server never restarted.

Needs a cluster with jobqueue preloaded and max_prepared_transactions >= 4
(PG* environment), the extension created in PGDATABASE.
"""
import select
import sys
import threading
import time

import psycopg2

WAIT_S = 10            # the waiting claim's wait
WOKEN_WITHIN_S = 3.0   # a woken claim returns well before WAIT_S
SETTLE_S = 2.0         # how long a listener waits for a straggling notification
ROUNDS = 40


def connect(autocommit=True):
    conn = psycopg2.connect("")
    conn.autocommit = autocommit
    return conn


def scalar(conn, sql, args=()):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def prepare_push(conn, gid, queue):
    """Push one job to queue in a transaction prepared as gid."""
    with conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("SELECT queue_push('twophase', queue => %s)", (queue,))
        job = cur.fetchone()[0]
        cur.execute("PREPARE TRANSACTION %s", (gid,))
    return job


def waiting_claim(queue, result):
    conn = connect()
    started = time.monotonic()
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM queue_reserve(ARRAY[%s], '60 seconds', 'waiter', 1, "
                    "wait => %s::interval)", (queue, f"{WAIT_S} seconds"))
        rows = cur.fetchall()
    result["ids"] = [r[0] for r in rows]
    result["returned_at"] = time.monotonic()
    result["started"] = started
    conn.close()


def notifications(listener, settle_s):
    """The payloads delivered to listener within settle_s."""
    got = []
    deadline = time.monotonic() + settle_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return got
        if select.select([listener], [], [], left) != ([], [], []):
            listener.poll()
            while listener.notifies:
                got.append(listener.notifies.pop(0).payload)


def check_commit_prepared_wakes(failures):
    queue = "twophase_wake"
    listener = connect()
    scalar(listener, "SELECT 1")
    with listener.cursor() as cur:
        cur.execute("LISTEN jobqueue")
    producer, committer = connect(), connect()
    result = {}
    waiter = threading.Thread(target=waiting_claim, args=(queue, result))
    waiter.start()
    time.sleep(0.5)                     # the claim is waiting by now
    job = prepare_push(producer, "jq_tp_wake", queue)
    early = notifications(listener, 0.5)
    if queue in early:
        failures.append(f"notified at PREPARE, before COMMIT PREPARED: {early}")
    if "ids" in result:
        failures.append(f"the waiting claim returned before COMMIT PREPARED: {result['ids']}")
    committed_at = time.monotonic()
    with committer.cursor() as cur:
        cur.execute("COMMIT PREPARED 'jq_tp_wake'")
    waiter.join(WAIT_S + 5)
    late = notifications(listener, SETTLE_S)
    if result.get("ids") != [job]:
        failures.append(f"the waiting claim got {result.get('ids')}, not the prepared job {job}")
    elif result["returned_at"] - committed_at > WOKEN_WITHIN_S:
        failures.append("the waiting claim was not woken by COMMIT PREPARED: it returned "
                        f"{result['returned_at'] - committed_at:.1f} s after it")
    if late.count(queue) != 1:
        failures.append(f"after COMMIT PREPARED the listener got {late}, not one {queue!r}")
    print(f"COMMIT PREPARED: waiting claim returned the job "
          f"{result.get('returned_at', 0) - committed_at:.3f} s after it; listener got {late}")
    for conn in (listener, producer, committer):
        conn.close()


def check_rollback_prepared_wakes_nobody(failures):
    queue = "twophase_rollback"
    listener = connect()
    with listener.cursor() as cur:
        cur.execute("LISTEN jobqueue")
    producer, committer = connect(), connect()
    result = {}
    waiter = threading.Thread(target=waiting_claim, args=(queue, result))
    waiter.start()
    time.sleep(0.5)
    prepare_push(producer, "jq_tp_rollback", queue)
    with committer.cursor() as cur:
        cur.execute("ROLLBACK PREPARED 'jq_tp_rollback'")
    waiter.join(WAIT_S + 5)
    got = notifications(listener, SETTLE_S)
    if result.get("ids") != []:
        failures.append(f"after ROLLBACK PREPARED the waiting claim got {result.get('ids')}")
    if queue in got:
        failures.append(f"ROLLBACK PREPARED notified: {got}")
    jobs = scalar(committer, "SELECT count(*) FROM queue_jobs WHERE queue = %s", (queue,))
    if jobs != 0:
        failures.append(f"ROLLBACK PREPARED left {jobs} jobs")
    print(f"ROLLBACK PREPARED: waiting claim got {result.get('ids')}, listener got {got}")
    for conn in (listener, producer, committer):
        conn.close()


def check_prepared_skippers(failures):
    """Rounds of a leading push (notifies) and a prepared push within the
    coalescing window (would have skipped), in the same two sessions."""
    queue = "twophase_coalesce"
    start_time = scalar(connect(), "SELECT pg_postmaster_start_time()")
    listener = connect()
    with listener.cursor() as cur:
        cur.execute("LISTEN jobqueue")
    leader, preparer, committer = connect(), connect(), connect()
    for conn in (leader, preparer):
        with conn.cursor() as cur:
            cur.execute("SET jobqueue.notify_coalesce = '300ms'")
    delivered = missed = 0
    for round_ in range(ROUNDS):
        scalar(leader, "SELECT queue_push('lead', queue => %s)", (queue,))
        prepare_push(preparer, f"jq_tp_skip_{round_}", queue)
        with committer.cursor() as cur:
            cur.execute(f"COMMIT PREPARED 'jq_tp_skip_{round_}'")
        # a plain transaction of the preparing session right after its PREPARE
        scalar(preparer, "SELECT queue_push('after', queue => %s)", (queue,))
        got = notifications(listener, 0.4)
        delivered += got.count(queue)
        claimed = scalar(committer, "SELECT count(*) FROM queue_reserve(ARRAY[%s], "
                         "'60 seconds', 'drain', 10)", (queue,))
        if claimed != 3:
            missed += 1
            failures.append(f"round {round_}: claimed {claimed} of 3 jobs")
    late = notifications(listener, SETTLE_S).count(queue)
    if delivered + late == 0:
        failures.append("the listener was never notified")
    if scalar(committer, "SELECT pg_postmaster_start_time()") != start_time:
        failures.append("the server restarted (a backend crashed)")
    print(f"{ROUNDS} rounds of prepared pushes within the window: {delivered + late} "
          f"notifications, {missed} rounds short of jobs, server up")
    for conn in (listener, leader, preparer, committer):
        conn.close()


def main():
    setup = connect()
    if scalar(setup, "SELECT current_setting('max_prepared_transactions')::int") < 4:
        print("twophase.py: needs max_prepared_transactions >= 4", file=sys.stderr)
        return 2
    with setup.cursor() as cur:
        cur.execute("SELECT queue_clear(q) FROM unnest(ARRAY['twophase_wake', "
                    "'twophase_rollback', 'twophase_coalesce']) q")
    setup.close()
    failures = []
    check_commit_prepared_wakes(failures)
    check_rollback_prepared_wakes_nobody(failures)
    check_prepared_skippers(failures)
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
