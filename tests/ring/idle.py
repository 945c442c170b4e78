#!/usr/bin/env python3
"""An idle queue costs nothing (issue 30, test a).

A preloaded cluster whose ticker ticks this suite's database
(tests/ring/run.sh sets jobqueue.tick_database = 'jq_ring_idle' and
jobqueue.tick_interval = 1s; the ring period is 5 s here, so a rotation
would be due every 5 s), holding a paused queue of 5,000 jobs, 40 jobs
delayed by an hour and 5 unclaimed jobs of a queue without workers.  A
session of the test calls queue_tick() every second too, so rotations are
tried even before the ticker has connected (it connects 10 s after it
failed to find the database, which is created after the server started).

After a settling period (two periods, so the jobs are where they stay;
then ANALYZE, VACUUM and a CHECKPOINT, so that neither autovacuum nor a
timed checkpoint writes during the window), over JQ_IDLE_SECONDS (60 s):
  - pg_current_wal_lsn() does not move;
  - pg_class of the database gets no new row version (n_tup_ins + n_tup_upd
    + n_tup_del of pg_stat_sys_tables, and the partitions' relfilenodes);
  - every job is still there with its id.
Needs a superuser (PG* environment).  Last line: "N passed, N failed".
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ringlib import Checks, Database, one  # noqa: E402
import storagelib  # noqa: E402

DBNAME = "jq_ring_idle"      # the ticker's database (tests/ring/run.sh)
PERIOD = 5
WINDOW = int(os.environ.get("JQ_IDLE_SECONDS", "60"))


def wait_for_ticker(conn, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if one(conn, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue ticker'"
                     " AND datname = current_database()"):
            return True
        time.sleep(0.5)
    return False


def main():
    checks = Checks("ring idle")
    with Database(DBNAME, {"jobqueue.ring_period": PERIOD}) as db:
        conn = db.connect()
        storagelib.fill_idle(conn.cursor())
        ids_before = one(conn, "SELECT array_agg(id ORDER BY id) FROM queue_jobs")

        stop = threading.Event()
        ticks = {"calls": 0, "errors": []}

        def tick():
            tconn = db.connect()
            tcur = tconn.cursor()
            while not stop.is_set():
                try:
                    tcur.execute("SELECT count(*) FROM queue_tick()")
                    ticks["calls"] += 1
                except Exception as e:  # noqa: BLE001 (reported as a check)
                    ticks["errors"].append(str(e).strip()[:200])
                    return
                stop.wait(1.0)
            tconn.close()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        attached = wait_for_ticker(conn, 30)
        print(f"   the background ticker {'is' if attached else 'is not'} attached to {DBNAME}")

        # settle: the first rotations put the jobs where they stay
        storagelib.settle(conn, PERIOD)

        window = storagelib.idle_window(conn, WINDOW)
        lsn_before, lsn_after, wal_bytes = window.lsn_before, window.lsn_after, window.wal_bytes
        catalog_before, catalog_after = window.catalog_before, window.catalog_after
        stop.set()
        ticker.join(timeout=10)

        print(f"   over {WINDOW} s: WAL {int(wal_bytes)} bytes ({lsn_before} -> {lsn_after}),"
              f" pg_class row versions {catalog_before[0]} -> {catalog_after[0]},"
              f" relfilenodes {catalog_before[1]} -> {catalog_after[1]}, {ticks['calls']} ticks of the test")
        checks.check("queue_tick() kept running", not ticks["errors"] and ticks["calls"] >= WINDOW // 2,
                     ticks["errors"][:2])
        # PostgreSQL's background writer logs a snapshot of the running
        # transactions (rmgr Standby, RUNNING_XACTS) up to 15 s after any WAL
        # was written, so one may trail the settling period's own writes into
        # the window; it is the server's, not the extension's, and the only
        # record allowed. Any other record fails the check.
        records = (storagelib.wal_records(lsn_before, lsn_after) or []) if wal_bytes else []
        if records:
            print("\n".join("   " + line[:200] for line in records[:15]))
        ours = storagelib.not_the_servers(records)
        if wal_bytes and not records:
            ours = [f"{int(wal_bytes)} bytes, records not read"]
        checks.check(f"no WAL written in {WINDOW} s of an idle queue (but the server's running-transactions"
                     f" snapshot)", not ours, ours[:3])
        checks.check(f"no pg_class row version written in {WINDOW} s",
                     catalog_before[0] == catalog_after[0], (catalog_before[0], catalog_after[0]))
        checks.check(f"no partition got a new relfilenode in {WINDOW} s",
                     catalog_before[1] == catalog_after[1], (catalog_before[1], catalog_after[1]))
        ids_after = one(conn, "SELECT array_agg(id ORDER BY id) FROM queue_jobs")
        checks.check("all 5,045 jobs are still there with their ids",
                     ids_after == ids_before and len(ids_after) == 5045, len(ids_after or []))
        conn.close()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
