#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests and the demo (version JQ_PG_VERSION, 15 by default).
#
# Usage (from a bash script):
#   source scripts/cluster.sh
#   trap jq_cluster_stop EXIT
#   jq_cluster_start
#
# Knobs (environment, read by jq_cluster_start):
#   JQ_PGPORT   preferred port (default 54329; a free one is picked if busy)
#   JQ_PRELOAD  value for shared_preload_libraries (default empty)
#   JQ_PGCONF   extra postgresql.conf lines, appended verbatim
#   JQ_PGBIN    PostgreSQL bin dir (default /usr/lib/postgresql/$JQ_PG_VERSION/bin)
#
# After start: PGHOST PGPORT PGUSER PGDATABASE JQ_CLUSTER_DIR JQ_PGDATA
# JQ_SERVER_LOG are exported, so plain psql / make installcheck just work.
set -euo pipefail

JQ_PGBIN=${JQ_PGBIN:-/usr/lib/postgresql/${JQ_PG_VERSION:-15}/bin}

# initdb/postgres refuse to run as root, so drop to the postgres account.
# cd into the cluster dir first: postgres binaries fail when they cannot
# read their current directory (e.g. /root).
_jq_as_pg() {
    if [[ $(id -u) -eq 0 ]]; then
        (cd "$JQ_CLUSTER_DIR" && runuser -u postgres -- "$@")
    else
        (cd "$JQ_CLUSTER_DIR" && "$@")
    fi
}

# A port counts as busy if any unix socket named .s.PGSQL.<port> exists
# (another cluster, whatever its socket dir) or something listens on TCP.
# Reads /proc directly so no extra package (ss/netstat) is needed.
_jq_port_busy() {
    local port=$1 hex f line
    if grep -q "/\.s\.PGSQL\.${port}\$" /proc/net/unix 2>/dev/null; then
        return 0
    fi
    printf -v hex '%04X' "$port"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [[ -r $f ]] || continue
        # fields: sl local_address rem_address st ...; st 0A = LISTEN
        while read -r _ line _ st _; do
            [[ $st == 0A && ${line##*:} == "$hex" ]] && return 0
        done < "$f"
    done
    return 1
}

_jq_pick_port() {
    local port=$1 tries=0
    while _jq_port_busy "$port"; do
        tries=$((tries + 1))
        if (( tries > 200 )); then
            echo "cluster.sh: no free port found near $1" >&2
            return 1
        fi
        port=$((port + 1))
    done
    echo "$port"
}

_jq_show_log() {
    if [[ -n ${JQ_SERVER_LOG:-} && -f $JQ_SERVER_LOG ]]; then
        echo "---- last lines of $JQ_SERVER_LOG ----" >&2
        tail -n 40 "$JQ_SERVER_LOG" >&2 || true
        echo "----" >&2
    fi
}

jq_cluster_start() {
    if [[ -n ${JQ_CLUSTER_DIR:-} && -d ${JQ_CLUSTER_DIR} ]]; then
        echo "cluster.sh: a cluster is already running in $JQ_CLUSTER_DIR" >&2
        return 1
    fi
    if [[ ! -x $JQ_PGBIN/initdb ]]; then
        echo "cluster.sh: $JQ_PGBIN/initdb not found (run scripts/install-deps.sh)" >&2
        return 1
    fi

    local port
    port=$(_jq_pick_port "${JQ_PGPORT:-54329}") || return 1

    # Export the dir right away so jq_cluster_stop can clean up even if
    # a later step fails.  Short path: unix socket paths are limited to
    # ~107 bytes.
    JQ_CLUSTER_DIR=$(mktemp -d /tmp/jq-pg.XXXXXX) || return 1
    export JQ_CLUSTER_DIR
    export JQ_PGDATA=$JQ_CLUSTER_DIR/data
    export JQ_SERVER_LOG=$JQ_CLUSTER_DIR/server.log
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres: "$JQ_CLUSTER_DIR" || return 1
    fi

    if ! _jq_as_pg "$JQ_PGBIN/initdb" -D "$JQ_PGDATA" -A trust -U postgres \
            --no-sync -E UTF8 --locale=C > "$JQ_CLUSTER_DIR/initdb.log" 2>&1; then
        echo "cluster.sh: initdb failed:" >&2
        cat "$JQ_CLUSTER_DIR/initdb.log" >&2 || true
        return 1
    fi

    # Appended settings win over the defaults earlier in the file.
    {
        echo ""
        echo "# --- throwaway test cluster settings ---"
        echo "listen_addresses = ''"
        echo "port = $port"
        echo "unix_socket_directories = '$JQ_CLUSTER_DIR'"
        echo "fsync = off"
        echo "max_connections = 100"
        echo "shared_preload_libraries = '${JQ_PRELOAD:-}'"
        echo "log_min_messages = warning"
        if [[ -n ${JQ_PGCONF:-} ]]; then
            printf '%s\n' "$JQ_PGCONF"
        fi
    } >> "$JQ_PGDATA/postgresql.conf" || return 1

    if ! _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "$JQ_PGDATA" -l "$JQ_SERVER_LOG" \
            -w -s start; then
        echo "cluster.sh: server failed to start" >&2
        _jq_show_log
        return 1
    fi

    export PGHOST=$JQ_CLUSTER_DIR
    export PGPORT=$port
    export PGUSER=postgres
    export PGDATABASE=postgres
    case ":$PATH:" in
        *":$JQ_PGBIN:"*) ;;
        *) export PATH="$JQ_PGBIN:$PATH" ;;
    esac
    echo "PostgreSQL test cluster running: PGHOST=$PGHOST PGPORT=$PGPORT (log: $JQ_SERVER_LOG)"
}

# Safe to call twice and from an EXIT trap: never fails, and forgets the
# cluster once it is gone.
jq_cluster_stop() {
    local dir=${JQ_CLUSTER_DIR:-}
    [[ -n $dir ]] || return 0
    if [[ -d $dir && -f ${JQ_PGDATA:-$dir/data}/postmaster.pid ]]; then
        if ! _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "${JQ_PGDATA:-$dir/data}" \
                -m fast -w -s stop 2>/dev/null; then
            # Fast shutdown stuck or failed: do not leave a server behind.
            _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "${JQ_PGDATA:-$dir/data}" \
                -m immediate -w -s stop 2>/dev/null || true
        fi
    fi
    # Only ever delete what jq_cluster_start created.
    case $dir in
        /tmp/jq-pg.*) rm -rf -- "$dir" || true ;;
    esac
    unset JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG PGHOST PGPORT
    return 0
}

# Fault tests need to bounce the server (mode: smart, fast or immediate).
jq_cluster_restart() {
    local mode=${1:-fast}
    if [[ -z ${JQ_PGDATA:-} || ! -d $JQ_PGDATA ]]; then
        echo "cluster.sh: no cluster to restart" >&2
        return 1
    fi
    # -l again: pg_ctl does not remember the log file across restarts.
    if ! _jq_as_pg "$JQ_PGBIN/pg_ctl" -D "$JQ_PGDATA" -l "$JQ_SERVER_LOG" \
            restart -m "$mode" -w -s; then
        echo "cluster.sh: restart (-m $mode) failed" >&2
        _jq_show_log
        return 1
    fi
}
