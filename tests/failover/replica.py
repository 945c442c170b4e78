"""Primary and standby servers for the failover suite (tests/failover), with
PostgreSQL's own streaming replication: a primary made by initdb, standbys
made from it by pg_basebackup -R (primary_conninfo and standby.signal
written by pg_basebackup), promoted by pg_ctl promote.

Every server lives in a directory of its own under the suite's directory
(JQ_FAILOVER_DIR, made by tests/failover/run.sh, which also stops whatever
is left there if this process dies), with its own port from
JQ_FAILOVER_PORTS (default 56000-56099) and its unix socket in that
directory.  stop_all() (registered with atexit, and run on SIGTERM, SIGINT
and SIGHUP) stops every server and every process started through
start_process(), and removes this program's directory (unless
JQ_FAILOVER_KEEP is set: then the servers' logs stay).  Debian's psycopg2.
"""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psycopg2

PGBIN = os.environ.get("JQ_PGBIN") or "/usr/lib/postgresql/15/bin"

_servers = []      # every Server made, running or not
_processes = []    # every process from start_process
_ports_taken = set()
_root = None


def root():
    """This program's directory: a new one in run.sh's (JQ_FAILOVER_DIR),
    or in /tmp when run alone."""
    global _root
    if _root is None:
        suite = os.environ.get("JQ_FAILOVER_DIR")
        _root = tempfile.mkdtemp(dir=suite) if suite else tempfile.mkdtemp(prefix="jq-fo.", dir="/tmp")
        _give_to_postgres(_root)
    return _root


def _give_to_postgres(path):
    if os.getuid() == 0:
        subprocess.run(["chown", "postgres:", path], check=True)


def _as_postgres(argv, cwd, timeout=120, check=True):
    """Run a server program as the postgres account when we are root (initdb
    and postgres refuse root), from a directory it can read."""
    if os.getuid() == 0:
        argv = ["runuser", "-u", "postgres", "--"] + argv
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout} {done.stderr}")
    return done


def _port_busy(port):
    """A unix socket .s.PGSQL.<port> anywhere, or a TCP listener on it."""
    with open("/proc/net/unix") as f:
        if any(line.rstrip().endswith(f"/.s.PGSQL.{port}") for line in f):
            return True
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def free_port():
    """A port of the suite's range that no server uses and this run has not
    handed out before (a killed server's port stays ours)."""
    first, last = (int(p) for p in os.environ.get("JQ_FAILOVER_PORTS", "56000-56099").split("-"))
    for port in range(first, last + 1):
        if port not in _ports_taken and not _port_busy(port):
            _ports_taken.add(port)
            return port
    raise RuntimeError(f"no free port in {first}-{last}")


class Server:
    """One PostgreSQL server: data directory, socket directory, log."""

    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(root(), name)
        os.mkdir(self.dir)
        _give_to_postgres(self.dir)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = free_port()
        _servers.append(self)

    # ---------------------------------------------------------- connecting

    @property
    def host(self):
        return self.dir

    def dsn(self, dbname="postgres"):
        return f"host={self.dir} port={self.port} dbname={dbname} user=postgres"

    def connect(self, dbname="postgres", autocommit=True, **options):
        conn = psycopg2.connect(self.dsn(dbname), connect_timeout=10, **options)
        conn.autocommit = autocommit
        return conn

    def query(self, sql, args=None, dbname="postgres"):
        """All rows of sql, on a connection of its own."""
        conn = self.connect(dbname)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def value(self, sql, args=None, dbname="postgres"):
        rows = self.query(sql, args, dbname)
        return rows[0][0] if rows else None

    # ---------------------------------------------------------- the server

    def configure(self, settings):
        """Append settings ({name: value}) to postgresql.conf: later lines win."""
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"\n# --- failover suite: {self.name} ---\n")
            for name, value in settings.items():
                f.write(f"{name} = '{value}'\n")

    def _pg_ctl(self, *args, check=True, timeout=120):
        return _as_postgres([f"{PGBIN}/pg_ctl", "-D", self.data, *args], self.dir, timeout=timeout, check=check)

    def start(self, options=None):
        """pg_ctl start, waiting until it accepts connections (a standby: until
        it is consistent); options go to the postmaster (-o)."""
        extra = ["-o", options] if options else []
        done = self._pg_ctl("-l", self.log, "-w", "-t", "60", "-s", *extra, "start", check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: pg_ctl start failed: {done.stderr}\n{self.log_tail()}")

    def stop(self, mode="fast"):
        """pg_ctl stop; an immediate stop is the crash of the server (what
        its clients see when the machine under it dies)."""
        if self.running():
            self._pg_ctl("-m", mode, "-w", "-t", "60", "-s", "stop", check=False)

    def kill(self):
        self.stop("immediate")

    def promote(self):
        """pg_ctl promote, waiting until the server accepts writes."""
        self._pg_ctl("-w", "-t", "60", "-s", "promote")

    def running(self):
        return self._pg_ctl("status", check=False).returncode == 0

    def log_tail(self, lines=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def log_lines(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.readlines()
        except OSError:
            return []


# ------------------------------------------------------------ clusters

def init_primary(name, settings=None):
    """A new primary: initdb (trust, which also allows local replication
    connections), streaming replication settings, started."""
    server = Server(name)
    _as_postgres([f"{PGBIN}/initdb", "-D", server.data, "-A", "trust", "-U", "postgres", "--no-sync",
                  "-E", "UTF8", "--locale=C"], server.dir)
    server.configure({
        "listen_addresses": "",
        "port": server.port,
        "unix_socket_directories": server.dir,
        "fsync": "off",                  # the tests crash servers, never the machine
        "wal_level": "replica",
        "max_wal_senders": 5,
        "hot_standby": "on",             # for the standbys made from this one
        "wal_keep_size": "256MB",
        "log_min_messages": "warning",
        **(settings or {}),
    })
    server.start()
    return server


def make_standby(primary, name, settings=None, start=True):
    """A streaming standby of primary: pg_basebackup -R writes standby.signal
    and primary_conninfo; cluster_name becomes the walreceiver's
    application_name, the name synchronous_standby_names matches.  The
    copied postgresql.conf is the primary's: port and socket directory are
    overridden, and synchronous_standby_names cleared (once promoted, the
    server has no standby of its own, and its commits would wait for one)."""
    server = Server(name)
    _as_postgres([f"{PGBIN}/pg_basebackup", "-D", server.data, "-h", primary.host, "-p", str(primary.port),
                  "-U", "postgres", "-R", "-X", "stream", "-c", "fast", "--no-sync"], server.dir)
    server.configure({
        "port": server.port,
        "unix_socket_directories": server.dir,
        "cluster_name": name,
        "synchronous_standby_names": "",
        **(settings or {}),
    })
    if start:
        server.start()
        wait_streaming(primary, name)
    return server


def wait_streaming(primary, name, seconds=30):
    """Until primary's pg_stat_replication shows the standby streaming."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if primary.value("SELECT count(*) FROM pg_stat_replication WHERE application_name = %s"
                         " AND state = 'streaming'", (name,)):
            return
        time.sleep(0.1)
    raise RuntimeError(f"standby {name} is not streaming from {primary.name}")


def make_synchronous(primary, standby_name):
    """synchronous_standby_names on the primary (synchronous_commit stays
    on, the default): a commit returns once the standby has flushed its WAL."""
    primary.configure({"synchronous_standby_names": standby_name, "synchronous_commit": "on"})
    primary.value("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if primary.value("SELECT sync_state FROM pg_stat_replication WHERE application_name = %s",
                         (standby_name,)) == "sync":
            return
        time.sleep(0.1)
    raise RuntimeError(f"{standby_name} did not become synchronous")


def wait_replayed(primary, standby, seconds=30):
    """Until standby has replayed all the WAL primary has written so far."""
    target = primary.value("SELECT pg_current_wal_lsn()::text")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if standby.value("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{standby.name} did not replay up to {target}")


def multi_host_dsn(servers, dbname, target="read-write"):
    """libpq's multi-host connection string: hosts and ports in order, and
    target_session_attrs, so that libpq connects to whichever is the primary."""
    dsn = (f"host={','.join(s.host for s in servers)} port={','.join(str(s.port) for s in servers)}"
           f" dbname={dbname} user=postgres")
    return dsn + (f" target_session_attrs={target}" if target else "")


def multi_host_environment(servers, dbname, target="read-write"):
    """The same as the PG* environment, as psql and every libpq program read it."""
    env = {"PGHOST": ",".join(s.host for s in servers), "PGPORT": ",".join(str(s.port) for s in servers),
           "PGDATABASE": dbname, "PGUSER": "postgres"}
    if target:
        env["PGTARGETSESSIONATTRS"] = target
    return env


# ------------------------------------------------------------ processes

def start_process(argv, env=None, stdout=None, stderr=None):
    """A child process (workers), killed by stop_all at the latest."""
    proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
    _processes.append(proc)
    return proc


def end_process(proc, seconds=15):
    """SIGTERM (a graceful stop), then SIGKILL after seconds; its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def stop_all():
    """Every process, then every server (immediately: nothing is kept)."""
    for proc in _processes:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for server in _servers:
        try:
            server.stop("immediate")
        except Exception as e:  # noqa: BLE001 - cleaning up, go on with the others
            print(f"note: could not stop {server.name}: {e}", file=sys.stderr)
    if _root is not None and not os.environ.get("JQ_FAILOVER_KEEP"):
        shutil.rmtree(_root, ignore_errors=True)


def _on_signal(signum, frame):
    # SystemExit unwinds the main thread's finally blocks; atexit then runs stop_all
    sys.exit(128 + signum)


atexit.register(stop_all)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, _on_signal)
