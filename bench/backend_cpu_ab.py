#!/usr/bin/env python3
"""A/B of two builds by the CPU time one backend spends per call.

    python3 bench/backend_cpu_ab.py "DSN of the old build's cluster" "DSN of the new one" [ROUNDS]

Each DSN is a libpq connection string to a database with the extension
created (two clusters of the same machine, each with its build installed
and preloaded).  Per round and build, in alternating order: 3,000 pushes,
2,000 one-job drains (claim + delete) of a 10,000-job queue, 100 batched
drains of 50; every call a prepared statement, one connection per build.
The figure is the backend's own user + system time (/proc/<pid>/stat)
divided by the jobs: unlike throughput it hardly moves when other work
shares the machine.  Prints the medians, the per-round values and new/old.
The client must run on the servers' machine (it reads their /proc).
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend_cpu import backend_cpu_seconds, connect  # noqa: E402

CALLS = {
    "push": ("SELECT queue_push('job', '{}')", 3000, 1),
    "one-job drain": ("SELECT queue_delete(id, token) FROM queue_reserve('{default}', NULL, 'ab', 1)", 2000, 1),
    "batched drain (50)": ("SELECT queue_delete_many(array_agg(id), array_agg(token))"
                           " FROM queue_reserve('{default}', NULL, 'ab', 50)", 100, 50),
}


def one_round(cur, pid):
    cur.execute("TRUNCATE queue_jobs")
    cur.execute("SELECT queue_set_notify('default', false)")
    cur.execute("DEALLOCATE ALL")
    for n, (sql, _, _) in enumerate(CALLS.values()):
        cur.execute(f"PREPARE call{n} AS {sql}")
    result = {}
    for n, (what, (_, calls, jobs_per_call)) in enumerate(CALLS.items()):
        if what == "one-job drain":
            cur.execute("SELECT queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'j'))"
                        " FROM generate_series(1, 10000)))")
            cur.execute("VACUUM ANALYZE queue_jobs")
        before = backend_cpu_seconds(pid)
        for _ in range(calls):
            cur.execute(f"EXECUTE call{n}")
        result[what] = (backend_cpu_seconds(pid) - before) / (calls * jobs_per_call) * 1e6
    return result


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    builds = {"old": connect(sys.argv[1]), "new": connect(sys.argv[2])}
    results = {"old": [], "new": []}
    for r in range(rounds):
        for name in ("old", "new") if r % 2 == 0 else ("new", "old"):
            results[name].append(one_round(*builds[name]))
    for what in CALLS:
        old = [r[what] for r in results["old"]]
        new = [r[what] for r in results["new"]]
        print(f"{what}: old median {statistics.median(old):.1f} us/job {[round(x, 1) for x in old]};"
              f" new median {statistics.median(new):.1f} {[round(x, 1) for x in new]};"
              f" new/old {statistics.median(new) / statistics.median(old):.2f}")


if __name__ == "__main__":
    main()
