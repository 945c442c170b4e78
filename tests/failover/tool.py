"""The jobqueue command-line tool in the failover suite: one-off commands,
and `jobqueue work` processes (the C++ Worker runtime) whose stderr is kept
in a file, to count the lines a failover makes it write.

JOBQUEUE_BIN names the tool (scripts/test.sh builds it; default
build/client/cli/jobqueue of the tree).
"""
import os
import subprocess

import replica

TREE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.environ.get("JOBQUEUE_BIN") or os.path.join(TREE, "build", "client", "cli", "jobqueue")

# What Worker::ConnectionLog writes, once per outage.
LOST = "jobqueue worker: connection lost ("
BACK = "jobqueue worker: reconnected after "


def environment(extra=None):
    """The process environment without any PG* variable of the caller's,
    plus extra (a multi-host PG* environment, say)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG") and k != "JOBQUEUE_POOLER"}
    env.update(extra or {})
    return env


def run(args, dsn=None, env=None, timeout=30):
    """jobqueue [--dsn DSN] ARGS: the finished process (stdout, stderr, returncode)."""
    argv = [BIN] + (["--dsn", dsn] if dsn else []) + list(args)
    return subprocess.run(argv, env=environment(env), capture_output=True, text=True, timeout=timeout)


class WorkProcess:
    """`jobqueue work --quiet` running COMMAND per job; its stderr goes to
    a file (log), read by lines()."""

    def __init__(self, log, queues, command, dsn=None, env=None, concurrency=3, lease="5s"):
        self.log = log
        argv = ([BIN] + (["--dsn", dsn] if dsn else [])
                + ["work", "--queues", ",".join(queues), "--exec", command,
                   "--concurrency", str(concurrency), "--lease", lease, "--grace", "5s", "--quiet"])
        self._stderr = open(log, "w")
        self.proc = replica.start_process(argv, env=environment(env), stdout=subprocess.DEVNULL,
                                          stderr=self._stderr)

    def stop(self):
        """SIGTERM: a graceful stop; the exit status."""
        status = replica.end_process(self.proc)
        self._stderr.close()
        return status

    def lines(self):
        with open(self.log, errors="replace") as f:
            return [line.rstrip("\n") for line in f]

    def outages(self):
        """(lines saying the connection was lost, lines saying it is back,
        every other line but the tool's last "stopped" summary)."""
        lost, back, other = [], [], []
        for line in self.lines():
            if line.startswith(LOST):
                lost.append(line)
            elif line.startswith(BACK):
                back.append(line)
            elif not line.startswith("jobqueue work: stopped;"):
                other.append(line)
        return lost, back, other
