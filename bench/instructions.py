#!/usr/bin/env python3
"""Instructions per call of jobqueue's hot calls against the hand-written SQL,
counted by valgrind (callgrind): the same on every run, unlike CPU time on a
shared machine, so two builds compare to the instruction.

    /usr/bin/python3 bench/instructions.py [--calls 1000] [--kinds push,push_many,reserve1]

Starts bench/percall.py's throwaway cluster (jobqueue preloaded, setup.sql's
objects), stops it, then runs each statement in a single-user backend
(postgres --single, the library preloaded, synchronous_commit off) under
callgrind: PREPARE once, then EXECUTE it CALLS times, one transaction each.
A figure is (the run of CALLS calls - the run of CALLS/5 calls) / (the
difference in calls): the backend's start, the PREPARE and the state made
before the calls (the backlog a claim takes from) cancel out.  The
statements are percall.py's, from bench/scripts.  What a single-user backend
does not do: no background worker runs, so a push that wants wake-ups sends
its own NOTIFY (the coalescing sender is not there).  `make install` first;
needs valgrind.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import percall  # noqa: E402  (the statements and the throwaway cluster)

JOBS100 = "[" + ",".join(['{"name": "job", "payload": {"n": 1}}'] * 100) + "]"

# kind -> [(label, statement name in percall's set, the state made before the calls)]
BACKLOG = ("SELECT count(queue_push_many('" + JOBS100 + "')) FROM generate_series(1, N100);\n"
           "INSERT INTO plain_jobs (name, payload) SELECT 'job', '{\"n\": 1}'"
           " FROM generate_series(1, N100 * 100);")
KINDS = {
    "push": [("queue_push (1 job)", "jq_push", ""), ("plain_insert", "plain_insert", ""),
             ("floor_insert", "floor_insert", "")],
    "push_many": [("queue_push_many (100)", "jq_push_many", ""),
                  ("plain_insert_many", "plain_insert_many", ""),
                  ("floor_insert_many", "floor_insert_many", "")],
    "reserve1": [("queue_reserve 1 job", "jq_reserve1", BACKLOG),
                 ("plain_claim1", "plain_claim1", BACKLOG)],
}


def as_postgres(cmd):
    """cmd as the postgres account when run as root (postgres refuses root)."""
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.geteuid() == 0 else cmd


def session_script(statements, name, calls, before):
    """The single-user session's input: state, PREPARE, CALLS EXECUTEs."""
    types, sql = statements[name]
    args = "('%s')" % JOBS100 if types == ("jsonb",) else ""
    prepare = f"PREPARE s{'(' + ', '.join(types) + ')' if types else ''} AS {sql};"
    n100 = max(1, calls // 100 + 1)
    lines = ["TRUNCATE queue_jobs, plain_jobs, floor_jobs;", before.replace("N100", str(n100)), prepare]
    lines += [f"EXECUTE s{args};"] * calls
    # the single-user backend reads a statement per line
    return "\n".join(" ".join(line.split()) for line in "\n".join(lines).splitlines() if line.strip()) + "\n"


def server_bin(env):
    """The server's programs: cluster.sh's JQ_PGBIN, else the pg_config make install used."""
    if env.get("JQ_PGBIN"):
        return env["JQ_PGBIN"]
    pg_config = os.environ.get("PG_CONFIG", "pg_config")
    return subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()


def instructions(env, statements, name, calls, before, workdir):
    """Instructions callgrind counted for a whole single-user session of CALLS calls."""
    script = os.path.join(workdir, "in.sql")
    with open(script, "w") as f:
        f.write(session_script(statements, name, calls, before))
    os.chmod(script, 0o644)
    postgres = os.path.join(server_bin(env), "postgres")
    cmd = as_postgres(["valgrind", "--tool=callgrind", f"--callgrind-out-file={workdir}/cg.out",
                       postgres, "--single", "-D", env["JQ_PGDATA"], "-c", "shared_preload_libraries=jobqueue",
                       "-c", "synchronous_commit=off", "-c", "jit=off", "percall"])
    with open(script) as stdin:
        out = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, timeout=1800, cwd=workdir)
    if "ERROR:" in out.stdout or "ERROR:" in out.stderr:
        raise SystemExit(f"instructions: {name} failed:\n{out.stdout[-2000:]}")
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise SystemExit(f"instructions: no count from callgrind for {name}:\n{out.stderr[-2000:]}")
    return int(m.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is not installed (apt-get install valgrind)")
    statements = percall.build_statements()
    cluster = percall.start_cluster()
    env = cluster["env"]
    workdir = tempfile.mkdtemp(prefix="jq-instructions-", dir=env["JQ_CLUSTER_DIR"])
    shutil.chown(workdir, "postgres") if os.geteuid() == 0 else None
    try:
        subprocess.run(as_postgres([os.path.join(server_bin(env), "pg_ctl"), "-D", env["JQ_PGDATA"],
                                    "-m", "fast", "-w", "stop"]), check=True, capture_output=True,
                       timeout=120, cwd=workdir)
        few = max(1, args.calls // 5)
        print(f"instructions per call (callgrind), single-user backend, {args.calls} - {few} calls")
        print("| call | instructions per call | jobqueue / this |")
        print("|---|---:|---:|")
        for kind in args.kinds.split(","):
            first = None
            for label, name, before in KINDS[kind]:
                many = instructions(env, statements, name, args.calls, before, workdir)
                less = instructions(env, statements, name, few, before, workdir)
                per_call = (many - less) / (args.calls - few)
                first = first or per_call
                print(f"| {label} | {per_call:,.0f} | {first / per_call:.2f}x |", flush=True)
    finally:
        # the cluster's stop expects a running server: start it again for a clean stop
        subprocess.run(as_postgres([os.path.join(server_bin(env), "pg_ctl"), "-D", env["JQ_PGDATA"],
                                    "-l", env["JQ_SERVER_LOG"], "-w", "start"]),
                       capture_output=True, timeout=120, cwd=workdir)
        percall.stop_cluster(cluster)


if __name__ == "__main__":
    main()
