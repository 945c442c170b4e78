"""One backend's CPU time, read from /proc: shared by backend_cpu_ab.py, percall.py and
drain_split.py.

The client must run on the server's machine (it reads the backend's /proc).
"""
import os

import psycopg2


def stat_times(pid):
    """(parent pid, user, system, reaped children's user, their system) of process pid,
    times in seconds, from /proc/<pid>/stat (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[1]),) + tuple(int(x) / tck for x in fields[11:15])


def backend_user_system(pid):
    """(user, system) time of process pid in seconds."""
    return stat_times(pid)[1:3]


def backend_cpu_seconds(pid):
    """User + system time of process pid, from /proc/<pid>/stat (clock ticks, 10 ms)."""
    return sum(backend_user_system(pid))


def backend_cpu_ns(pid):
    """Time process pid has run on a CPU, from /proc/<pid>/schedstat (nanoseconds).

    The same quantity as user + system time, but counted by the scheduler to
    the nanosecond rather than sampled in clock ticks, so a few hundred calls
    are enough for a figure.  None when the kernel has no schedstat."""
    try:
        return int(open(f"/proc/{pid}/schedstat").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def connect(dsn):
    """An autocommit connection; returns (cursor, backend pid)."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    return cur, cur.fetchone()[0]
