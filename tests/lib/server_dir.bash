# The directory of a suite that starts servers of its own (the Python
# helpers of tests/failover/replica.py put each server's data and socket
# under JQ_FAILOVER_DIR), and its cleanup: every server still running there
# stopped, the directory removed unless JQ_FAILOVER_KEEP is set (for the
# servers' logs).  Sourced by tests/failover/run.sh and tests/shards/run.sh:
#   jq_server_dir PREFIX   makes /tmp/PREFIX.XXXXXX, exports JQ_FAILOVER_DIR,
#                          and traps EXIT with jq_server_dir_cleanup

as_postgres() {
    if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

jq_server_dir_cleanup() {
    local pid_file
    for pid_file in "$JQ_FAILOVER_DIR"/*/*/data/postmaster.pid; do
        [[ -f $pid_file ]] || continue
        as_postgres "$JQ_PGBIN/pg_ctl" -D "$(dirname "$pid_file")" -m immediate -w -s stop 2> /dev/null || true
    done
    if [[ -z ${JQ_FAILOVER_KEEP:-} ]]; then
        rm -rf -- "$JQ_FAILOVER_DIR"
    else
        echo "kept $JQ_FAILOVER_DIR"
    fi
}

jq_server_dir() {
    JQ_FAILOVER_DIR=$(mktemp -d "/tmp/$1.XXXXXX") || exit 1
    export JQ_FAILOVER_DIR
    [[ $(id -u) -eq 0 ]] && chown postgres: "$JQ_FAILOVER_DIR"
    trap jq_server_dir_cleanup EXIT
}
