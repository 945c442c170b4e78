#!/usr/bin/env bash
# tests/dashboard/run.sh - `jobqueue dashboard` in a real browser, and its
# /metrics read by Prometheus's own parser.
#
#   JOBQUEUE_BIN=build/client/cli/jobqueue bash tests/dashboard/run.sh [--screenshot FILE]
#
# Starts two throwaway clusters of its own (the browser test stops and starts
# one of them): "main" with jobqueue preloaded, "plain" without (no
# counters). Then five dashboards:
#   admin      the superuser, read-write          (browser.test.js, metrics_test.py)
#   readonly   --read-only                         (no buttons; a forged POST is 403)
#   auth       --auth-file with basic credentials  (401 without them)
#   producer   a producer-tier role (queue_grant)  (an action refused with 42501, shown)
#   plain      against the cluster without preload ("counters need ...", /metrics without counters)
# and runs
#   screenshot.js     the overview while producers push and a worker runs: the
#                     chart's rates are not zero; the PNG goes to
#                     build/dashboard.png, or FILE with --screenshot (the
#                     README's docs/dashboard.png is made that way);
#   metrics_test.py   /metrics parsed with prometheus_client: counters equal to
#                     what the test pushed and completed, gauges equal to SQL,
#                     label escaping;
#   hostile_test.py   raw sockets: slow request heads, heads over 64 KiB or 100
#                     lines (431, VmRSS bounded), NUL bytes in an action (400);
#   browser.test.js   headless Debian Chromium (puppeteer-core, never a downloaded
#                     browser): numbers against SQL, paging, pause/resume, clear
#                     with confirmation, retry and forget, escaping of payloads,
#                     read-only, cross-site POSTs, privileges, auth, the database
#                     stopped and started again, a statement cut by the timeout,
#                     a malformed route, bidirectional text in names.
# Before them: another address than loopback without credentials (no start;
# --insecure-no-auth with --allow-host checks Host).
# Every part has a timeout; every server and process is stopped on exit.
# Last line: "N passed, N failed".
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
JOBQUEUE_BIN=${JOBQUEUE_BIN:-$ROOT/build/client/cli/jobqueue}
SCREENSHOT=$ROOT/build/dashboard.png
SHOT_SECONDS=14
while (( $# )); do
    case $1 in
        --screenshot) SCREENSHOT=$(realpath -m "$2"); SHOT_SECONDS=45; shift 2 ;;
        *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
done

# scripts/test.sh runs this with its own cluster exported: leave it alone.
unset JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG PGHOST PGPORT PGDATABASE PGUSER
source scripts/install-deps.sh
source scripts/cluster.sh
source tests/lib/parts.bash
set +e # the sourced scripts turn -e on; this suite counts failures itself

WORK=$(mktemp -d /tmp/jq-dashboard.XXXXXX)
chmod 755 "$WORK"
pids=()
passed=0
failed=0
check() { # check NAME t|f [detail]
    if [[ $2 == t ]]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1${3:+: $3}"; fi
}
finish() { echo "$passed passed, $failed failed"; (( failed == 0 )); exit; }

# A cluster is started in a subshell (cluster.sh keeps one per shell) and
# its environment kept in $WORK/<name>.env, which db.sh and stop_cluster read.
start_cluster() { # start_cluster NAME PORT PRELOAD
    (
        JQ_PGPORT=$2 JQ_PRELOAD=$3 jq_cluster_start > "$WORK/$1.start.log" 2>&1 || exit 1
        declare -p PGHOST PGPORT PGUSER PGDATABASE JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG JQ_PGBIN \
            | sed 's/^declare -x /export /; s/^declare -- /export /' > "$WORK/$1.env"
    )
}
stop_cluster() { # stop_cluster NAME
    [[ -f $WORK/$1.env ]] || return 0
    (source "$WORK/$1.env"; jq_cluster_stop)
}

cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null; done
    for pid in "${pids[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2> /dev/null
        wait "$pid" 2> /dev/null
    done
    stop_cluster main
    stop_cluster plain
    rm -rf -- "$WORK"
}
trap cleanup EXIT

# ------------------------------------------------------------ setup
[[ -x $JOBQUEUE_BIN ]] || { check "the jobqueue tool is built ($JOBQUEUE_BIN)" f; finish; }
jq_install_deps chromium python3 python3-psycopg2 python3-prometheus-client > "$WORK/apt.log" 2>&1 \
    || { check "install chromium, python3-prometheus-client" f "$(tail -3 "$WORK/apt.log")"; finish; }
# nodejs from other sources brings its own npm, which the npm package would conflict with
command -v node > /dev/null || jq_install_deps nodejs || { check "install nodejs" f; finish; }
command -v npm > /dev/null || jq_install_deps npm || { check "install npm" f; finish; }
# puppeteer-core drives Debian's /usr/bin/chromium: it must never download a browser
(cd tests/dashboard && PUPPETEER_SKIP_DOWNLOAD=1 timeout 120 npm ci --prefer-offline --no-audit --no-fund --loglevel=error) \
    > "$WORK/npm.log" 2>&1 || { check "npm ci in tests/dashboard" f "$(tail -5 "$WORK/npm.log")"; finish; }

start_cluster main "${JQ_DASHBOARD_PGPORT:-56140}" jobqueue || { check "start the preloaded cluster" f "$(cat "$WORK/main.start.log")"; finish; }
start_cluster plain "$(( ${JQ_DASHBOARD_PGPORT:-56140} + 5 ))" "" || { check "start the cluster without preload" f "$(cat "$WORK/plain.start.log")"; finish; }
for name in main plain; do
    (source "$WORK/$name.env"; psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION jobqueue') \
        || { check "create the extension ($name)" f; finish; }
done
(source "$WORK/main.env"; psql -X -q -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE jq_dash_producer LOGIN" -c "SELECT queue_grant('jq_dash_producer', 'producer')") > /dev/null \
    || { check "create the producer-tier role" f; finish; }

# ------------------------------------------------------------ the dashboards
port=${JQ_DASHBOARD_PORT:-56150}
umask 077
printf 'basic %s\n' "ops:s3cret pass" > "$WORK/auth"
umask 022
start_dashboard() { # start_dashboard NAME CLUSTER ENVIRONMENT... -- ARGUMENTS...: exports DASH_<NAME>_URL
    local name=$1 cluster=$2 env=() p
    shift 2
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    p=$(_jq_pick_port "$port") || return 1
    port=$((p + 1))
    (source "$WORK/$cluster.env"; exec env "${env[@]}" "$JOBQUEUE_BIN" dashboard --listen "127.0.0.1:$p" "$@") \
        > "$WORK/dashboard-$name.log" 2>&1 &
    pids+=($!)
    export "DASH_${name^^}_URL=http://127.0.0.1:$p" "DASH_${name^^}_PID=$!"
    for _ in $(seq 50); do
        curl -s -o /dev/null "http://127.0.0.1:$p/favicon.ico" -u "ops:s3cret pass" && return 0
        sleep 0.1
    done
    echo "---- $WORK/dashboard-$name.log"; cat "$WORK/dashboard-$name.log"
    return 1
}
start_dashboard admin main -- || { check "start the admin dashboard" f; finish; }
start_dashboard readonly main -- --read-only || { check "start the read-only dashboard" f; finish; }
start_dashboard auth main -- --auth-file "$WORK/auth" || { check "start the dashboard with credentials" f; finish; }
start_dashboard producer main PGUSER=jq_dash_producer -- || { check "start the producer-tier dashboard" f; finish; }
start_dashboard plain plain -- || { check "start the dashboard without counters" f; finish; }
# Bound to every address it warns without credentials, and not with them.
bind_warning() { # bind_warning ENVIRONMENT...: prints the dashboard's stderr once it serves
    local p pid log=$WORK/bind.log
    p=$(_jq_pick_port "$port") || return 1
    port=$((p + 1))
    (source "$WORK/main.env"; exec env "$@" "$JOBQUEUE_BIN" dashboard --listen "0.0.0.0:$p") > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do grep -q '^jobqueue dashboard on' "$log" && break; sleep 0.1; done
    kill -TERM "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2> /dev/null; then
        kill -KILL "$pid"
        echo "(did not stop on SIGTERM)"
    fi
    wait "$pid"
    cat "$log"
}
out=$(bind_warning JOBQUEUE_DASHBOARD_AUTH="bearer t0ken")
check "--listen 0.0.0.0 with credentials does not warn, and stops on SIGTERM" \
    "$([[ $out == *"(credentials required)"* && $out != *warning* && $out != *"did not stop"* ]] && echo t || echo f)" "$out"

# Another address than loopback without credentials: no start, unless asked
# for with --insecure-no-auth, and then only requests whose Host is a
# loopback one or an --allow-host one (DNS rebinding). Bound to 0.0.0.0, but
# every request goes to 127.0.0.1: no traffic leaves the machine.
refused_start() { # refused_start ARGUMENTS...: prints "EXIT-STATUS: OUTPUT"
    local p out rc
    p=$(_jq_pick_port "$port") || return 1
    port=$((p + 1))
    out=$(source "$WORK/main.env"; JOBQUEUE_DASHBOARD_AUTH= timeout 5 "$JOBQUEUE_BIN" dashboard --listen "0.0.0.0:$p" "$@" 2>&1)
    rc=$?
    echo "$rc: $out"
}
out=$(refused_start)
check "--listen 0.0.0.0 without credentials does not start (exit 1, naming --auth-file and --insecure-no-auth)" \
    "$([[ $out == "1: "*"0.0.0.0:"*"is not a loopback address"*"--auth-file"*"--insecure-no-auth"* ]] && echo t || echo f)" "$out"
out=$(refused_start --insecure-no-auth)
check "--insecure-no-auth without --allow-host does not start (exit 1)" \
    "$([[ $out == "1: "*"--insecure-no-auth needs --allow-host"* ]] && echo t || echo f)" "$out"
open_port=$(_jq_pick_port "$port") && port=$((open_port + 1))
(source "$WORK/main.env"; exec env JOBQUEUE_DASHBOARD_AUTH= "$JOBQUEUE_BIN" dashboard --listen "0.0.0.0:$open_port" \
    --insecure-no-auth --allow-host good.example --allow-host 10.9.8.7) > "$WORK/dashboard-open.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$open_port/favicon.ico") == 204 ]] && break
    sleep 0.1
done
host_status() { # host_status HOST-HEADER: the status of /api/overview asked with that Host
    curl -s -o /dev/null -w '%{http_code}' -H "Host: $1" "http://127.0.0.1:$open_port/api/overview"
}
out="evil.example:$(host_status "evil.example:$open_port") good.example.evil:$(host_status good.example.evil) \
[::2]:$(host_status "[::2]:$open_port")"
check "--insecure-no-auth: a Host not allowed gets 403 (DNS rebinding)" \
    "$([[ $out == "evil.example:403 good.example.evil:403 [::2]:403" ]] && echo t || echo f)" "$out"
out="good.example:$(host_status "good.example:$open_port") GOOD.example:$(host_status GOOD.example) \
10.9.8.7:$(host_status "10.9.8.7:$open_port") 127.0.0.1:$(host_status "127.0.0.1:$open_port")"
check "--insecure-no-auth: an --allow-host Host (any case, any port) and a loopback one are served" \
    "$([[ $out == "good.example:200 GOOD.example:200 10.9.8.7:200 127.0.0.1:200" ]] && echo t || echo f)" "$out"
out=$(cat "$WORK/dashboard-open.log")
check "--insecure-no-auth warns on stderr" \
    "$([[ $out == *"warning: the dashboard listens on 0.0.0.0:"*"without credentials"* ]] && echo t || echo f)" "$out"

export DASH_AUTH_USER=ops DASH_AUTH_PASSWORD="s3cret pass"
export DASH_MAIN_ENV=$WORK/main.env DASH_PLAIN_ENV=$WORK/plain.env DASH_ROOT=$ROOT

# ------------------------------------------------------------ the parts
# run_part NAME SECONDS COMMAND...: adds the part's own "N passed, N failed"
run_part() {
    local name=$1 seconds=$2 out rc
    shift 2
    echo "--- $name"
    # the parts reach the main cluster through the PG* environment
    out=$(source "$WORK/main.env"; timeout "$seconds" "$@" 2>&1)
    rc=$?
    add_part "$name" "$rc" "$out"
}

# The screenshot first, while the cluster holds its queues only; the browser
# test last, since it stops and starts the database (which resets the
# counters the metrics test counts).
mkdir -p "$(dirname "$SCREENSHOT")"
DASH_SCREENSHOT=$SCREENSHOT DASH_SHOT_SECONDS=$SHOT_SECONDS DASH_JOBQUEUE_BIN=$JOBQUEUE_BIN \
    run_part "screenshot of a busy queue" $((SHOT_SECONDS + 60)) node tests/dashboard/screenshot.js
run_part "metrics (prometheus_client)" 60 /usr/bin/python3 tests/dashboard/metrics_test.py
run_part "hostile requests (raw sockets)" 120 /usr/bin/python3 tests/dashboard/hostile_test.py
run_part "browser (puppeteer-core + chromium)" 150 node tests/dashboard/browser.test.js

if (( failed )); then
    for log in "$WORK"/dashboard-*.log; do echo "---- $log"; tail -n 20 "$log"; done
fi
finish
