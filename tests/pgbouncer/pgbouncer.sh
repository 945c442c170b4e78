#!/usr/bin/env bash
# A throwaway PgBouncer in front of the test cluster (PGHOST/PGPORT).
#
#   source tests/pgbouncer/pgbouncer.sh
#   trap jq_pgbouncer_stop EXIT
#   JQ_PGB_POOL_MODE=transaction jq_pgbouncer_start
#
# Knobs (environment, read by jq_pgbouncer_start):
#   JQ_PGB_POOL_MODE      pool_mode (default transaction)
#   JQ_PGB_QUERY_TIMEOUT  query_timeout in seconds (default 0: none)
#   JQ_PGB_POOL_SIZE      default_pool_size (default 20)
#
# After start: JQ_PGB_DIR (config, log, unix socket), JQ_PGB_PORT,
# JQ_PGB_DSN (a libpq connection string to the pooled database) and
# JQ_PGB_LOGGED_DSN (the same database under the name "logged", whose server
# connections log every statement they run in the server log) are exported. PgBouncer listens on a unix socket only, on a port of its own
# and in a directory of its own; it refuses to run as root, so it runs as
# the postgres account then.
set -euo pipefail

_jq_pgb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/cluster.sh
source "$_jq_pgb_root/scripts/cluster.sh"

JQ_PGB_BIN=${JQ_PGB_BIN:-/usr/sbin/pgbouncer}

_jq_pgb_as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd "$JQ_PGB_DIR" && runuser -u postgres -- "$@")
    else
        (cd "$JQ_PGB_DIR" && "$@")
    fi
}

# Waits (up to 10 s) until a query through PgBouncer succeeds.
_jq_pgb_wait_ready() {
    local i
    for ((i = 0; i < 100; i++)); do
        if psql -X -q -At "$JQ_PGB_DSN" -c 'SELECT 1' > /dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    echo "pgbouncer.sh: PgBouncer does not answer on $JQ_PGB_DIR port $JQ_PGB_PORT" >&2
    tail -n 30 "$JQ_PGB_DIR/pgbouncer.log" >&2 || true
    return 1
}

# Starts PgBouncer with the configuration in $JQ_PGB_DIR (written by
# jq_pgbouncer_start), as a daemon; returns once it answers.
_jq_pgb_launch() {
    _jq_pgb_as_pg "$JQ_PGB_BIN" -d -q "$JQ_PGB_DIR/pgbouncer.ini"
    _jq_pgb_wait_ready
}

jq_pgbouncer_start() {
    if [[ -n ${JQ_PGB_DIR:-} && -d $JQ_PGB_DIR ]]; then
        echo "pgbouncer.sh: a PgBouncer is already running in $JQ_PGB_DIR" >&2
        return 1
    fi
    if [[ -z ${PGHOST:-} || -z ${PGPORT:-} ]]; then
        echo "pgbouncer.sh: PGHOST/PGPORT must name the cluster to pool" >&2
        return 1
    fi
    if [[ ! -x $JQ_PGB_BIN ]]; then
        echo "pgbouncer.sh: $JQ_PGB_BIN not found (bash scripts/install-deps.sh test)" >&2
        return 1
    fi
    JQ_PGB_DIR=$(mktemp -d /tmp/jq-pgb.XXXXXX) || return 1
    export JQ_PGB_DIR
    JQ_PGB_PORT=$(_jq_pick_port 56432) || return 1
    export JQ_PGB_PORT
    export JQ_PGB_DSN="host=$JQ_PGB_DIR port=$JQ_PGB_PORT dbname=${PGDATABASE:-postgres} user=${PGUSER:-postgres}"
    export JQ_PGB_LOGGED_DSN="host=$JQ_PGB_DIR port=$JQ_PGB_PORT dbname=logged user=${PGUSER:-postgres}"
    # auth_type trust still wants the user named in the auth file
    printf '"%s" ""\n' "${PGUSER:-postgres}" > "$JQ_PGB_DIR/userlist.txt"
    cat > "$JQ_PGB_DIR/pgbouncer.ini" <<EOF
[databases]
* = host=$PGHOST port=$PGPORT
logged = host=$PGHOST port=$PGPORT dbname=${PGDATABASE:-postgres} connect_query='SET log_statement = "all"'

[pgbouncer]
listen_addr =
listen_port = $JQ_PGB_PORT
unix_socket_dir = $JQ_PGB_DIR
auth_type = trust
auth_file = $JQ_PGB_DIR/userlist.txt
admin_users = ${PGUSER:-postgres}
pool_mode = ${JQ_PGB_POOL_MODE:-transaction}
default_pool_size = ${JQ_PGB_POOL_SIZE:-20}
max_client_conn = 200
query_timeout = ${JQ_PGB_QUERY_TIMEOUT:-0}
logfile = $JQ_PGB_DIR/pgbouncer.log
pidfile = $JQ_PGB_DIR/pgbouncer.pid
EOF
    if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres: "$JQ_PGB_DIR" || return 1
    fi
    _jq_pgb_launch
    echo "PgBouncer (pool_mode ${JQ_PGB_POOL_MODE:-transaction}) running: $JQ_PGB_DSN"
}

# The pid of the running PgBouncer, if any.
_jq_pgb_pid() {
    [[ -n ${JQ_PGB_DIR:-} && -s $JQ_PGB_DIR/pgbouncer.pid ]] || return 1
    local pid
    pid=$(cat "$JQ_PGB_DIR/pgbouncer.pid")
    kill -0 "$pid" 2> /dev/null || return 1
    echo "$pid"
}

# Immediate shutdown (SIGTERM: every client and server connection is
# closed at once); waits until the process is gone.
_jq_pgb_kill() {
    local pid i
    pid=$(_jq_pgb_pid) || return 0
    kill -TERM "$pid" 2> /dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2> /dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
}

# Stops PgBouncer (its connections drop as in a crash) and starts it again
# on the same port and socket, after pause_seconds (default 1).
jq_pgbouncer_restart() {
    _jq_pgb_kill
    sleep "${1:-1}"
    _jq_pgb_launch
}

# Safe to call twice and from an EXIT trap.
jq_pgbouncer_stop() {
    local dir=${JQ_PGB_DIR:-}
    [[ -n $dir ]] || return 0
    _jq_pgb_kill
    case $dir in
        /tmp/jq-pgb.*) rm -rf -- "$dir" || true ;;
    esac
    unset JQ_PGB_DIR JQ_PGB_PORT JQ_PGB_DSN JQ_PGB_LOGGED_DSN
    return 0
}

# Run as a script: the restart, for test programs (JQ_PGB_DIR names it).
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    case ${1:-} in
        restart) jq_pgbouncer_restart "${2:-1}" ;;
        *) echo "usage: pgbouncer.sh restart [pause_seconds]" >&2; exit 2 ;;
    esac
fi
