#!/usr/bin/env python3
"""Figures from a queue watcher's CSV (run.sh's watch_start/watch_stop: one
row a second of bench_queue_sample(), see sql/setup.sql).

    queue_watch.py truncations CSV [FROM TO]   partitions emptied by a rotation
    queue_watch.py peak CSV FIELD [FROM TO]    the highest FIELD (e.g. total_bytes)
    queue_watch.py ticked CSV [FROM TO]        share of rows with the ticker connected
    queue_watch.py vacuuming CSV [FROM TO]     share of rows with a VACUUM on a partition

FROM, TO: epoch seconds; only rows taken in (FROM, TO] count (a truncation
between two rows counts with the later row).  A TRUNCATE gives a partition a
new relfilenode, so a leaf whose filenode differs from the row before was
emptied in between.  The watcher runs only while the bench itself truncates
nothing, so every change it sees is the ring's rotation.
"""
import sys

FIELDS = ("epoch", "total_bytes", "heap_bytes", "claim_idx_bytes", "n_dead_tup", "n_live_tup",
          "autovacuums", "filenodes", "ticker", "scanned_dead", "vacuuming", "scanned_dead_by_leaf")
# fields of "leaf=value;..." pairs, read as dicts
PER_LEAF = ("filenodes", "scanned_dead_by_leaf")


def number(text):
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return None


def read_watch(path):
    """The rows of a watcher's CSV as dicts (numbers as floats, the per-leaf
    fields as dicts leaf -> value); lines that are not samples (errors) are
    skipped."""
    rows = []
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return rows
    for line in lines:
        parts = line.strip().split(",")
        if len(parts) > len(FIELDS) or len(parts) < FIELDS.index("ticker") + 1 or number(parts[0]) is None:
            continue
        parts += [""] * (len(FIELDS) - len(parts))   # a CSV of an older watcher
        row = {k: number(v) for k, v in zip(FIELDS, parts) if k not in PER_LEAF}
        for k in PER_LEAF:
            row[k] = dict(p.split("=", 1) for p in parts[FIELDS.index(k)].split(";") if "=" in p)
        rows.append(row)
    return rows


def within(rows, t0=None, t1=None):
    return [r for r in rows if (t0 is None or r["epoch"] > t0) and (t1 is None or r["epoch"] <= t1)]


def truncations(rows, t0=None, t1=None):
    """How many times a leaf got a new relfilenode between consecutive rows,
    the later row in (t0, t1]."""
    n = 0
    for before, after in zip(rows, rows[1:]):
        if within([after], t0, t1):
            n += sum(1 for leaf, node in after["filenodes"].items()
                     if leaf in before["filenodes"] and before["filenodes"][leaf] != node)
    return n


def peak(rows, field, t0=None, t1=None):
    vals = [r[field] for r in within(rows, t0, t1) if r.get(field) is not None]
    return max(vals) if vals else None


def share(rows, field, t0=None, t1=None):
    """The share of the rows in (t0, t1] whose field is not zero."""
    sel = within(rows, t0, t1)
    return sum(1 for r in sel if r[field]) / len(sel) if sel else None


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    what, path, rest = argv[1], argv[2], argv[3:]
    rows = read_watch(path)
    field = None
    if what == "peak":
        if not rest:
            print(__doc__)
            return 2
        field, rest = rest[0], rest[1:]
    t0, t1 = (float(rest[0]), float(rest[1])) if len(rest) == 2 else (None, None)
    if what == "truncations":
        value = truncations(rows, t0, t1)
    elif what == "peak":
        value = peak(rows, field, t0, t1)
    elif what == "ticked":
        value = share(rows, "ticker", t0, t1)
    elif what == "vacuuming":
        value = share(rows, "vacuuming", t0, t1)
    else:
        print(__doc__)
        return 2
    if value is None:
        print("")
    elif float(value).is_integer():
        print(int(value))
    else:
        print(f"{value:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
