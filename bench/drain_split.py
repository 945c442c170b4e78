#!/usr/bin/env python3
"""Where the one-job drain's CPU goes: the client, the server's user time,
the server's kernel time, per job, jobqueue against the hand-written SQL.

    /usr/bin/python3 bench/drain_split.py [--workers 8] [--secs 5] [--rounds 3]
                                          [--backlog 100000] [--goal 1.25]

run.sh's drain1 (scenario 2) reports jobs per second.  On a 2-core machine
pgbench and its 8 connections share the two cores with the server, so a
job's CPU is three parts, and only one of them is the queue's own code:
the client's (pgbench: user + system), the server's user time (the
executor, the claim, WAL records, commit) and the server's kernel time
(sockets, wake-ups, context switches).  This measures the three per job,
from /proc: pgbench's rusage; the postmaster's reaped children plus its
live ones for the server (backends exit with pgbench and are reaped before
the second reading); /proc/stat for what else ran ("other": another
session's load on a shared machine).

Each round drains a fresh backlog of BACKLOG jobs of each system with
pgbench -M prepared, WORKERS connections, SECS seconds: run.sh's settings
(BENCH_PGCONF, read from run.sh, the ticker in the database) and its
scripts (drain_one.sql, plain_drain.sql, floor_drain.sql).  Reported:
medians over the rounds, and what the server's user time per job would have
to be for jobqueue to reach GOAL x plain-sql's jobs per second with the
other two parts as measured.  `make install` first.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import percall  # noqa: E402  (the throwaway cluster)
from backend_cpu import stat_times  # noqa: E402

BENCH = percall.BENCH
TICKS = os.sysconf("SC_CLK_TCK")

# system -> (its table, run.sh's script, how to fill BACKLOG)
SYSTEMS = {
    "ours": ("queue_jobs", "drain_one.sql", ["SELECT bench_fill_queue({n})"]),
    "plain": ("plain_jobs", "plain_drain.sql", ["SELECT bench_fill_plain({n})"]),
    "floor": ("floor_jobs", "floor_drain.sql",
              ["SELECT bench_fill_floor({n})",
               "SELECT setval('floor_claim_seq', (SELECT min(id) FROM floor_jobs), false)"]),
}


def bench_settings():
    """run.sh's BENCH_PGCONF and BENCH_TICKER_CONF (the ticker's database: percall)."""
    text = open(os.path.join(BENCH, "run.sh")).read()
    conf = re.search(r'^BENCH_PGCONF="(.*?)"$', text, re.S | re.M).group(1)
    ticker = re.search(r'^BENCH_TICKER_CONF="(.*?)"$', text, re.S | re.M).group(1)
    return conf + "\n" + ticker.replace("'bench'", "'percall'")


def server_times(postmaster):
    """The server's (user, system) seconds so far: the postmaster, the children it
    reaped and its live ones."""
    _, user, system, reaped_user, reaped_system = stat_times(postmaster)
    user, system = user + reaped_user, system + reaped_system
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent, child_user, child_system, _, _ = stat_times(pid)
        except OSError:
            continue   # ended meanwhile
        if parent == postmaster:
            user, system = user + child_user, system + child_system
    return user, system


def machine_busy():
    """Seconds the CPUs were busy so far (all of them), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) / TICKS for x in f.readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def one_drain(env, system, args, postmaster):
    table, script, fills = SYSTEMS[system]

    def sql(*statements):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", "percall"]
        for s in statements:
            cmd += ["-c", s]
        return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True,
                              timeout=600).stdout.strip()

    sql("TRUNCATE queue_jobs, plain_jobs, floor_jobs")
    sql(*[f.format(n=args.backlog) for f in fills])
    sql("VACUUM ANALYZE queue_jobs, plain_jobs, floor_jobs")
    before_jobs = int(sql(f"SELECT count(*) FROM {table}"))
    time.sleep(0.5)   # the psql backends above exit and are reaped
    s0, b0, r0 = server_times(postmaster), machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(args.workers), "-j", str(args.workers),
                          "-T", str(args.secs), "-f", os.path.join(BENCH, "scripts", script), "percall"],
                         env=env, capture_output=True, text=True, timeout=args.secs + 120)
    if out.returncode != 0:
        raise SystemExit(f"drain_split: pgbench failed for {system}\n{out.stdout}\n{out.stderr}")
    time.sleep(0.5)   # pgbench's backends exit and are reaped
    s1, b1, r1 = server_times(postmaster), machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
    jobs = before_jobs - int(sql(f"SELECT count(*) FROM {table}"))
    if jobs <= 0:
        raise SystemExit(f"drain_split: {system} drained nothing")
    # pgbench's own time of the runs (as measure.sh's PGB_SECS): transactions / tps
    secs = (int(re.search(r"actually processed: (\d+)", out.stdout).group(1))
            / float(re.search(r"^tps = ([0-9.]+) \(without", out.stdout, re.M).group(1)))
    us = 1e6 / jobs
    client = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * us
    server_user, server_sys = (s1[0] - s0[0]) * us, (s1[1] - s0[1]) * us
    busy = b1 - b0
    return {"jobs/s": jobs / secs, "client": client, "server user": server_user,
            "server kernel": server_sys, "other": max(0.0, busy * us - client - server_user - server_sys)}


PARTS = ("client", "server user", "server kernel", "other")


def report(results, args):
    med = {s: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for s, rs in results.items()}
    print(f"# one-job drain, {args.workers} workers, {args.rounds} rounds of {args.secs} s, "
          f"backlog {args.backlog}: medians (CPU in microseconds per job)\n")
    print("| system | jobs/s | " + " | ".join(PARTS) + " | all but other |")
    print("|---|---:|" + "---:|" * (len(PARTS) + 1))
    for s, m in med.items():
        total = sum(m[p] for p in PARTS[:3])
        print(f"| {s} | {m['jobs/s']:,.0f} | " + " | ".join(f"{m[p]:.0f}" for p in PARTS)
              + f" | {total:.0f} |")
    if "ours" in med and "plain" in med:
        o, p = med["ours"], med["plain"]
        rounds = ", ".join(f"{a['jobs/s'] / b['jobs/s']:.2f}" for a, b in zip(results["ours"], results["plain"]))
        print(f"\njobqueue / plain-sql: {o['jobs/s'] / p['jobs/s']:.2f}x jobs/s (rounds: {rounds}); "
              + "; ".join(f"{part} {o[part] / p[part]:.2f}x" for part in PARTS[:3]))
        # jobs/s follows the CPU a job takes (client + server): the server user time that
        # leaves ours at plain's CPU per job / goal, the other two parts as measured
        budget = (sum(p[k] for k in PARTS[:3]) / args.goal - o["client"] - o["server kernel"])
        print(f"for {args.goal:.2f}x plain-sql's jobs/s at this CPU per job, jobqueue's server user time "
              f"would have to be {budget:.0f} us per job ({budget / p['server user']:.2f}x plain-sql's, "
              f"now {o['server user']:.0f} us)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backlog", type=int, default=100000)
    ap.add_argument("--systems", default="ours,plain")
    ap.add_argument("--goal", type=float, default=1.25)
    args = ap.parse_args()
    systems = args.systems.split(",")
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"drain_split: unknown system {s} (known: {', '.join(SYSTEMS)})")
    cluster = percall.start_cluster(conf=bench_settings())
    try:
        env = dict(os.environ, **cluster["env"])
        with open(os.path.join(cluster["env"]["JQ_PGDATA"], "postmaster.pid")) as f:
            postmaster = int(f.readline())
        results = {s: [] for s in systems}
        for r in range(args.rounds):
            order = systems if r % 2 == 0 else list(reversed(systems))
            for s in order:
                results[s].append(one_drain(env, s, args, postmaster))
                print(f"round {r + 1} {s}: " + ", ".join(f"{k} {v:,.0f}" for k, v in results[s][-1].items()),
                      file=sys.stderr)
        report(results, args)
    finally:
        percall.stop_cluster(cluster)


if __name__ == "__main__":
    main()
