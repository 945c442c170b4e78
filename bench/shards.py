#!/usr/bin/python3
"""Several servers: what the router (jobqueue_router, PL/Proxy) costs, and
what 1, 2 and 4 shards do, on clusters of its own.

    /usr/bin/python3 bench/shards.py            # 3 rounds of 3 s per figure
    /usr/bin/python3 bench/shards.py --quick    # 1 round of 1 s (a smoke run)

Servers: four shard clusters (jobqueue preloaded, shards 0-3 by
queue_shard_setup) and a router cluster with three databases whose PL/Proxy
cluster "jobqueue" has 1, 2 and 4 of them; ports 56100-56199
(JQ_SHARDS_PORTS), every server stopped at the end (tests/failover/replica.py).

1. Router overhead: pgbench with bench/scripts/push.sql, drain_one.sql,
   push_many.sql (100 jobs a call) and drain_batch.sql (100 a claim) on the
   queue "default", through the 2-shard router and directly on the shard
   that holds "default", alternating, ROUNDS times: the median and the
   spread of the per-round ratios router / direct (goals 0.7x for single
   calls, 0.9x for batched ones).
2. Shards: pushes and one-job drains over 64 queues (bench/scripts/
   shards_push.sql, shards_drain.sql) through the router with 1, 2 and 4
   shards: jobs a second, and the CPU time of each cluster (postmaster and
   every process under it, /proc) per job: the shard's and the router's.
   On one machine the shards share its cores, so their sum cannot grow;
   what N machines give is derived from the CPU per job
   (docs/performance.md, "Several servers").
"""
import argparse
import datetime
import os
import re
import statistics
import time
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TREE, "tests", "failover"))
os.environ.setdefault("JQ_FAILOVER_PORTS", os.environ.get("JQ_SHARDS_PORTS", "56100-56199"))

import replica  # noqa: E402

DB = "app"
SCRIPTS = os.path.join(HERE, "scripts")
TICK = os.sysconf("SC_CLK_TCK")


def pgbench(server, db, script, clients, seconds=None, transactions=None, defines=()):
    """tps of one pgbench run (prepared statements, no vacuum)."""
    argv = [f"{replica.PGBIN}/pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
            "-h", server.host, "-p", str(server.port), "-U", "postgres", "-f", script]
    argv += ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
    for name, value in defines:
        argv += ["-D", f"{name}={value}"]
    done = subprocess.run(argv + [db], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench {script} failed: {done.stderr[-2000:]}")
    m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", done.stdout)
    return float(m.group(1))


def cluster_cpu(server):
    """CPU seconds of the postmaster, its reaped children and its live ones."""
    with open(os.path.join(server.data, "postmaster.pid")) as f:
        postmaster = int(f.readline())

    def times(pid, reaped):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields from state (3rd): utime 14, stime 15, cutime 16, cstime 17
        ticks = int(fields[11]) + int(fields[12])
        return ticks + (int(fields[13]) + int(fields[14]) if reaped else 0)

    total = times(postmaster, True)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == postmaster:
                total += times(entry, False)
        except (OSError, ValueError, IndexError):
            continue
    return total / TICK


IDLE = {}      # server name -> CPU seconds a second when idle (ticker, autovacuum launcher, writers)


def measure_idle(servers, seconds=3):
    before = {s.name: cluster_cpu(s) for s in servers}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    for s in servers:
        IDLE[s.name] = (cluster_cpu(s) - before[s.name]) / elapsed


def timed(servers, run):
    """run()'s result, and each server's CPU seconds during it, net of its idle rate."""
    before = [cluster_cpu(s) for s in servers]
    started = time.monotonic()
    result = run()
    elapsed = time.monotonic() - started
    used = [cluster_cpu(s) - b - IDLE.get(s.name, 0) * elapsed for s, b in zip(servers, before)]
    return result, used


def fill(server, queues, per_queue):
    """per_queue jobs in each queue, pushed on the shard itself."""
    conn = server.connect(DB)
    with conn.cursor() as cur:
        for q in queues:
            left = per_queue
            while left > 0:
                n = min(left, 10000)
                cur.execute("SELECT cardinality(queue_push_many(jsonb_agg(jsonb_build_object("
                            "'name', 'job', 'queue', %s)))) FROM generate_series(1, %s)", (q, n))
                left -= n
    conn.close()


def clear(server):
    conn = server.connect(DB)
    with conn.cursor() as cur:
        cur.execute("SELECT count(queue_clear(queue)) FROM queue_stats()")
        cur.execute("VACUUM")
    conn.close()


def setup(shard_count):
    shards = [replica.init_primary(f"shard{n}", {"shared_preload_libraries": "jobqueue"})
              for n in range(shard_count)]
    router = replica.init_primary("router")
    for n, shard in enumerate(shards):
        shard.query(f"CREATE DATABASE {DB}")
        shard.query("CREATE EXTENSION jobqueue", dbname=DB)
        shard.query("SELECT queue_shard_setup(%s)", (n,), dbname=DB)
    for count in (1, 2, 4):
        db = f"router{count}"
        router.query(f"CREATE DATABASE {db}")
        conn = router.connect(db)
        with conn.cursor() as cur:
            cur.execute("SET client_min_messages = warning")
            cur.execute("CREATE EXTENSION jobqueue_router CASCADE")
            options = ", ".join(f"p{n} %s" for n in range(count))
            cur.execute(f"CREATE SERVER jobqueue FOREIGN DATA WRAPPER plproxy OPTIONS ({options})",
                        [s.dsn(DB).replace(" user=postgres", "") for s in shards[:count]])
            cur.execute("CREATE USER MAPPING FOR PUBLIC SERVER jobqueue")
        conn.close()
    return router, shards


def spread(values):
    return f"{min(values):.2f}-{max(values):.2f}" if max(values) < 10 else f"{min(values):.0f}-{max(values):.0f}"


def overhead(router, shards, rounds, seconds, report):
    home = shards[router.value("SELECT queue_shard_for('default')", dbname="router2")]
    many = "[" + ",".join(['{"name": "job", "payload": {"n": 1}}'] * 100) + "]"
    cases = [
        ("push", "push.sql", 0.7, lambda: None, dict(seconds=seconds), ()),
        ("push_many (100 jobs a call)", "push_many.sql", 0.9, lambda: None, dict(seconds=seconds),
         (("jobs", many),)),
        ("one-job drain", "drain_one.sql", 0.7, lambda: fill(home, ["default"], 4000 * max(seconds, 1)),
         dict(transactions=1500 * max(seconds, 1)), ()),
        ("batch drain (100 a claim)", "drain_batch.sql", 0.9, lambda: fill(home, ["default"], 40000 * max(seconds, 1)),
         dict(transactions=150 * max(seconds, 1)), ()),
    ]
    report.append("## Router overhead (2 shards; queue \"default\" on shard "
                  f"{shards.index(home)}; pgbench -c 2, prepared)\n")
    report.append("| operation | direct tps | through the router tps | ratio (median) | spread | goal |"
                  " shard CPU µs/job direct | shard CPU µs/job routed | router CPU µs/job |")
    report.append("|---|---|---|---|---|---|---|---|---|")
    for name, script, goal, prepare, limit, defines in cases:
        op = "push" if script.startswith("push") else "drain"
        direct, routed, ratios, cpu_direct, cpu_routed, cpu_router = [], [], [], [], [], []
        for _ in range(rounds):
            clear(home)
            prepare()
            jobs = jobs_done(home, op)
            d, (shard_cpu, _) = timed([home, router], lambda: pgbench(
                home, DB, os.path.join(SCRIPTS, script), 2, defines=defines, **limit))
            cpu_direct.append(1e6 * shard_cpu / max(jobs_done(home, op) - jobs, 1))
            clear(home)
            prepare()
            jobs = jobs_done(home, op)
            r, (shard_cpu, router_cpu) = timed([home, router], lambda: pgbench(
                router, "router2", os.path.join(SCRIPTS, script), 2, defines=defines, **limit))
            jobs = max(jobs_done(home, op) - jobs, 1)
            cpu_routed.append(1e6 * shard_cpu / jobs)
            cpu_router.append(1e6 * router_cpu / jobs)
            direct.append(d)
            routed.append(r)
            ratios.append(r / d)
        ratio = statistics.median(ratios)
        report.append(f"| {name} | {statistics.median(direct):.0f} | {statistics.median(routed):.0f} |"
                      f" {ratio:.2f}x | {spread(ratios)} | >= {goal}x {'met' if ratio >= goal else 'missed'} |"
                      f" {statistics.median(cpu_direct):.0f} | {statistics.median(cpu_routed):.0f} |"
                      f" {statistics.median(cpu_router):.0f} |")
        print(report[-1], flush=True)
    clear(home)
    report.append("")


def scaling(router, shards, rounds, seconds, report):
    queues = [f"q{n}" for n in range(64)]
    report.append("## 1, 2 and 4 shards through the router (64 queues, pgbench -c 4)\n")
    report.append("| shards | operation | jobs/s (median) | spread | CPU µs per job: each shard's"
                  " (of its jobs) | CPU µs per job: router |")
    report.append("|---|---|---|---|---|---|")
    for count in (1, 2, 4):
        db = f"router{count}"
        conn = router.connect(db)
        with conn.cursor() as cur:
            cur.execute("SELECT q, queue_shard_for(q) FROM unnest(%s::text[]) q", (queues,))
            home = dict(cur.fetchall())
        conn.close()
        for op, script in (("push", "shards_push.sql"), ("one-job drain", "shards_drain.sql")):
            tps, shard_ms, router_ms = [], [[] for _ in range(count)], []
            for _ in range(rounds):
                for s in shards:
                    clear(s)
                if op != "push":
                    for n in range(count):
                        fill(shards[n], [q for q in queues if home[q] == n], 150 * max(seconds, 1))
                done_before = [jobs_done(s, op) for s in shards[:count]]
                t, used = timed(shards[:count] + [router],
                                lambda: pgbench(router, db, os.path.join(SCRIPTS, script), 4, seconds=seconds))
                done = [jobs_done(s, op) - b for s, b in zip(shards[:count], done_before)]
                tps.append(t)
                for n in range(count):
                    shard_ms[n].append(1e6 * used[n] / max(done[n], 1))
                router_ms.append(1e6 * used[-1] / max(sum(done), 1))
            per_shard = ", ".join(f"{statistics.median(m):.0f}" for m in shard_ms)
            report.append(f"| {count} | {op} | {statistics.median(tps):.0f} | {spread(tps)} | {per_shard} |"
                          f" {statistics.median(router_ms):.0f} |")
            print(report[-1], flush=True)
    report.append("")


def jobs_done(shard, op):
    """Pushed or completed jobs so far, from the shard's counters."""
    column = "pushed" if op == "push" else "completed"
    return int(shard.value(f"SELECT coalesce(sum({column}), 0) FROM queue_counters()", dbname=DB))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one round of 1 s per figure")
    args = parser.parse_args()
    rounds, seconds = (1, 1) if args.quick else (3, 3)
    make = ["make", "-s", "-C", TREE, "install"]
    if os.environ.get("PG_CONFIG"):
        make.append(f"PG_CONFIG={os.environ['PG_CONFIG']}")
    subprocess.run(make, check=True, capture_output=True)
    out = os.path.join(HERE, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-shards")
    os.makedirs(out, exist_ok=True)
    # the servers live in a directory of replica.root(), removed by its stop_all at exit
    return measure(args, rounds, seconds, out)


def measure(args, rounds, seconds, out):
    router, shards = setup(4)
    measure_idle(shards + [router])
    load = os.getloadavg()
    report = [f"# Several servers ({'quick' if args.quick else 'full'}: {rounds} round(s) of {seconds} s;"
              f" load average {load[0]:.1f} at the start; {os.cpu_count()} cores)\n",
              "CPU per job: each cluster's CPU time during the run (postmaster and every process under it),"
              " less its idle rate measured at the start ("
              + ", ".join(f"{name} {1e3 * rate:.1f} ms/s" for name, rate in IDLE.items())
              + "), divided by the jobs pushed or completed there (queue_counters).\n"]
    overhead(router, shards, rounds, seconds, report)
    scaling(router, shards, rounds, seconds, report)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(report) + "\n")
    print("\n".join(report))
    print(f"kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
