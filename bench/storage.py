#!/usr/bin/env python3
"""bench/run.sh's storage scenarios (issue 30): an idle queue, and workers
waiting in queue_reserve(wait) under a steady offered load.

    storage.py idle --seconds N --period P [--plain]
    storage.py waiting --seconds N --csv FILE [--rate R] [--producers P]
                       [--workers W] [--reference-at S]

Both run in PGDATABASE (PG* environment, a superuser), which run.sh made
with sql/setup.sql and the background ticker ticks; they print one line of
key=value pairs (run.sh's rec_kv).  The workloads and measurements are the
ring suite's (tests/ring/storagelib.py), as tests/ring/idle.py and
waiting.py run them:

idle      the idle queue (a paused queue of 5,000 jobs, 40 delayed by an
          hour, 5 unclaimed), settled (two ring periods P; ANALYZE, VACUUM,
          CHECKPOINT; one period more), then over N s: WAL bytes, its
          records (pg_waldump; those that are not the background writer's
          running-transactions snapshot, and those of this database's
          relations), pg_class row versions (new xmin/ctid, and the
          statistics' count) and the job tables' relfilenodes.  --plain: the
          same rows in plain_jobs, in a database without the extension (the
          reference: what the server writes by itself).
waiting   W sessions loop queue_reserve(..., 1, '1 second') + queue_delete;
          after 2 s of them alone, P producers offer R jobs/s in all, one job
          per transaction, paced, and a session calls queue_rotate(NULL)
          every 0.5 s (as tests/ring/waiting.py; the ticker rotates too), for
          N s.  Every second a row of bench_queue_sample() (the run.sh
          watcher's row: sizes of queue_jobs' leaves with indexes and TOAST,
          relfilenodes) goes to FILE; reported: pushed/s and delivered/s, the
          size at S s and at the end, the peak, partitions emptied (any
          rotation, the ticker's included) and queue_rotate's outcomes.
"""
import argparse
import collections
import os
import re
import sys
import time

import psycopg2

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BENCH, "..", "tests", "ring"))
import storagelib  # noqa: E402
import queue_watch  # noqa: E402


def connect():
    conn = psycopg2.connect(connect_timeout=10)
    conn.autocommit = True
    return conn


def one(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def fill_plain(cur):
    """fill_idle's rows in plain_jobs: 5,000, 40 available in an hour, 5."""
    cur.execute("INSERT INTO plain_jobs (queue, name) SELECT 'idle_paused', 'idle' FROM generate_series(1, 5000)")
    cur.execute("INSERT INTO plain_jobs (queue, name, available_at)"
                " SELECT 'idle_q', 'idle', now() + interval '1 hour' FROM generate_series(1, 40)")
    cur.execute("INSERT INTO plain_jobs (queue, name) SELECT 'idle_q', 'idle' FROM generate_series(1, 5)")


def idle(args):
    conn = connect()
    if args.plain:
        fill_plain(conn.cursor())
        relations, table = ("plain_jobs",), "plain_jobs"
    else:
        storagelib.fill_idle(conn.cursor())
        relations, table = storagelib.PARTITIONS, "queue_jobs"
    storagelib.settle(conn, args.period)
    window = storagelib.idle_window(conn, args.seconds, relations)
    records = storagelib.wal_records(window.lsn_before, window.lsn_after)
    others = storagelib.not_the_servers(records or [])
    # the database of each record's first block ("rel TABLESPACE/DATABASE/FILENODE"; 0: a shared
    # catalog; "-": a record without a block): WAL is the server's, whatever database wrote it
    with conn.cursor() as cur:
        cur.execute("SELECT oid::text, datname FROM pg_database UNION ALL SELECT '0', 'shared'")
        names = dict(cur.fetchall())
    dbname = one(conn, "SELECT current_database()")

    def database(record):
        m = re.search(r" rel \d+/(\d+)/\d+", record)
        return names.get(m.group(1), m.group(1)) if m else "-"

    here = [r for r in records or [] if database(r) == dbname]
    kinds = collections.Counter(r.split()[1] + ":" + r.split("desc: ")[-1].split()[0] for r in others)
    where = collections.Counter(database(r) for r in others)
    fields = {
        "seconds": window.seconds,
        "wal_bytes": window.wal_bytes,
        "wal_per_min": round(window.wal_bytes * 60 / window.seconds),
        "records": "n/a" if records is None else len(records),
        "other_records": "n/a" if records is None else len(others),
        "db_records": "n/a" if records is None else len(here),
        "other_kinds": ";".join(f"{k}={n}" for k, n in sorted(kinds.items())) or "-",
        "other_databases": ";".join(f"{k}={n}" for k, n in sorted(where.items())) or "-",
        "pg_class_versions": window.versions_changed,
        "pg_class_stat": window.catalog_after[0] - window.catalog_before[0],
        "filenode_changes": sum(1 for a, b in zip(window.catalog_before[1], window.catalog_after[1]) if a != b),
        "rows": one(conn, f"SELECT count(*) FROM {table}"),
    }
    print(" ".join(f"{k}={v}" for k, v in fields.items()))
    if records:
        print("\n".join(r[:200] for r in records[:20]), file=sys.stderr)


def sizes_compared(rows, ref_epoch, period):
    """The job tables' size (total_bytes of the watcher's rows) at the first
    row at or after ref_epoch and at the last row; and the highest size of
    the ring period up to each of them: the size saws up and down once a
    period (a rotation empties a partition), so two single rows differ by
    where in its period each one falls, the highest of a period does not."""
    def highest(t):
        vals = [r["total_bytes"] for r in rows if t - period < r["epoch"] <= t]
        return int(max(vals)) if vals else "n/a"

    ref = next((r for r in rows if r["epoch"] >= ref_epoch), None)
    last = rows[-1] if rows else None
    return {"at_ref": "n/a" if ref is None else int(ref["total_bytes"]),
            "end": "n/a" if last is None else int(last["total_bytes"]),
            "period_peak_at_ref": "n/a" if ref is None else highest(ref["epoch"]),
            "period_peak_end": "n/a" if last is None else highest(last["epoch"])}


def waiting(args):
    conn = connect()
    load = storagelib.WaitingLoad(connect, "waiting", args.workers).start_workers()
    time.sleep(2)   # the workers alone: every one of them waits
    rows = []
    with open(args.csv, "w", encoding="utf-8") as out:
        out.write(",".join(queue_watch.FIELDS) + "\n")
        load.start_load(rate=args.rate, batch=1, producers=args.producers, rotate_every=0.5)
        start_epoch = time.time()
        while time.monotonic() - load.load_started < args.seconds:
            time.sleep(1)
            out.write(one(conn, "SELECT bench_queue_sample()") + "\n")
            out.flush()
        secs = time.monotonic() - load.load_started
        pushed, completed = load.total_pushed(), load.total_completed()
        load.stop()
    rows = queue_watch.read_watch(args.csv)
    period = one(conn, "SELECT setting::integer FROM pg_settings WHERE name = 'jobqueue.ring_period'")
    sizes = sizes_compared(rows, start_epoch + args.reference_at, period)
    outcomes = load.outcomes()
    fields = {
        "seconds": round(secs, 1),
        "workers": args.workers,
        "producers": args.producers,
        "offered_rate": args.rate,
        "push_rate": round(pushed / secs, 1),
        "delivered_rate": round(completed / secs, 1),
        "pushed": load.total_pushed(),
        "completed": load.total_completed(),
        "left": one(conn, "SELECT count(*) FROM queue_jobs WHERE queue = 'waiting'"),
        "reference_at": args.reference_at,
        "size_at_ref": sizes["at_ref"],
        "size_end": sizes["end"],
        "period": period,
        "period_peak_at_ref": sizes["period_peak_at_ref"],
        "period_peak_end": sizes["period_peak_end"],
        "size_peak": int(queue_watch.peak(rows, "total_bytes") or 0),
        "truncations": queue_watch.truncations(rows),
        "ticked": round(queue_watch.share(rows, "ticker") or 0, 2),
        "rotate_calls": sum(outcomes.values()),
        "rotate_outcomes": ";".join(f"{o.replace(' ', '_')}={n}" for o, n in sorted(outcomes.items())) or "-",
        "errors": len(load.errors),
    }
    print(" ".join(f"{k}={v}" for k, v in fields.items()))
    for e in load.errors[:5]:
        print(e, file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="scenario", required=True)
    p = sub.add_parser("idle")
    p.add_argument("--seconds", type=int, required=True)
    p.add_argument("--period", type=int, required=True, help="the ring period (s): the settling's unit")
    p.add_argument("--plain", action="store_true")
    p = sub.add_parser("waiting")
    p.add_argument("--seconds", type=int, required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--rate", type=float, default=800)
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--workers", type=int, default=32)
    p.add_argument("--reference-at", type=int, default=20)
    args = parser.parse_args()
    {"idle": idle, "waiting": waiting}[args.scenario](args)


if __name__ == "__main__":
    main()
