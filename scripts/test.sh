#!/usr/bin/env bash
# The one test command, used locally and by CI:
#
#   bash scripts/test.sh [--long] [--only=SUITE[,SUITE...]] [--pg=N[,N...]]
#
# Builds the extension with warnings as errors, installs it, starts a
# throwaway cluster and runs every suite against it.  The last line is
# always "N passed, N failed" (counting suites); exit status is non-zero
# if any suite failed or the build/setup did.
#   --long   export JQ_LONG=1 so suites can run their long stress modes
#   --only   run just the named suites (in the order of SUITES below)
#   --pg     the PostgreSQL major versions, each in turn: 15 on this Debian
#            12 machine (all suites), 17 and 18 each in a fresh Debian root
#            filesystem of the release that carries it (the suites of
#            OTHER_PG_SUITES below; scripts/debian-root.sh); the last line
#            counts the suites of all of them.  Without it: 15 here.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export JQ_LONG=${JQ_LONG:-0}
only=
pg_versions=
for arg in "$@"; do
    case $arg in
        --long) JQ_LONG=1 ;;
        --only=*) only=,${arg#--only=}, ;;
        --pg=*) pg_versions=${arg#--pg=} ;;
        -h|--help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "test.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

# The version this machine's Debian serves, and the Debian release that
# serves each other one (scripts/debian-root.sh makes a root of it).
HOST_PG_VERSION=15
declare -A DEBIAN_RELEASE_OF_PG=([17]=trixie [18]=sid)
# The suites run on another version: all but those that test what does not
# depend on the server's version (packaging, the command-line tool's
# arguments, the dashboard's pages, the examples, PgBouncer).
OTHER_PG_SUITES=regress,plan_rule,client,battery,dump,search_path,notify,chaos,ring_stress,ring,ring_dump,failover,flow_stress,shards,package

# --pg: run this command once per version and add up the suites (a run's
# own outcome is read from its summary line).
if [[ -n $pg_versions ]]; then
    total_passed=0 total_failed=0 timings=()
    for version in ${pg_versions//,/ }; do
        start=$SECONDS
        args=()
        [[ $JQ_LONG == 1 ]] && args+=(--long)
        log=$(mktemp /tmp/jq-test-pg$version.XXXXXX)
        if [[ $version == "$HOST_PG_VERSION" ]]; then
            [[ -n $only ]] && args+=("--only=${only:1:-1}")
            bash scripts/test.sh "${args[@]}" 2>&1 | tee "$log" || true
        elif [[ -n ${DEBIAN_RELEASE_OF_PG[$version]:-} ]]; then
            if [[ -n $only ]]; then
                args+=("--only=${only:1:-1}")
            else
                args+=("--only=$OTHER_PG_SUITES")
            fi
            echo "==> PostgreSQL $version in Debian ${DEBIAN_RELEASE_OF_PG[$version]}"
            bash scripts/debian-root.sh "${DEBIAN_RELEASE_OF_PG[$version]}" -- \
                env JQ_PG_VERSION="$version" JQ_TEST_PACKAGES=test_other_pg \
                bash scripts/test.sh "${args[@]}" 2>&1 | tee "$log" || true
        else
            echo "test.sh: PostgreSQL $version is not supported here (15, 17, 18)" >&2
            rm -f "$log"
            exit 2
        fi
        summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
        rm -f "$log"
        if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            total_passed=$((total_passed + BASH_REMATCH[1]))
            total_failed=$((total_failed + BASH_REMATCH[2]))
        else
            total_failed=$((total_failed + 1))    # the run itself failed
            summary="no summary: the run failed"
        fi
        timings+=("PostgreSQL $version: $summary in $((SECONDS - start)) s")
    done
    printf '==> %s\n' "${timings[@]}"
    echo "$total_passed passed, $total_failed failed"
    (( total_failed == 0 ))
    exit
fi

# Warnings PGXS's own flags would let through must fail the build.
WERROR_CFLAGS="-Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare"

# ---------------------------------------------------------------- suites
# Each suite is a function suite_<name>; it runs in a subshell with set -e,
# against the cluster described by PGHOST/PGPORT/PGUSER, and fails by
# returning non-zero (or by any failing command).

# Print a diff file, cut so a broken run cannot flood the CI log.
show_diffs() {
    local f=$1 n
    [[ -s $f ]] || return 0
    n=$(wc -l < "$f")
    echo "======== $f ($n lines, showing at most 300) ========"
    head -n 300 "$f"
    echo "======== end of $f ========"
}

suite_regress() {
    # Root runs make (it owns the tree); pg_regress reaches the cluster
    # through the exported PGHOST/PGPORT/PGUSER.
    if ! make installcheck PG_CONFIG="$PG_CONFIG"; then
        show_diffs regression.diffs
        show_diffs output_iso/regression.diffs
        return 1
    fi
}

# The planning rule reaches the extension's own kept statements only: a
# push, a claim and a completion on analysed empty tables, their plans read
# with auto_explain (tests/plans/kept.sh, about 2 s); user queries are
# checked by the plans regress file.
suite_plan_rule() { timeout 60 bash tests/plans/kept.sh; }

# META.json must carry the control file's version; the SQL scripts'
# defaults must be contract.h's; every relative link of the Markdown
# resolves; no include goes up a layer; scripts/packages.txt installs every
# package the CMake files, the scripts and the tests need.
suite_packaging() {
    make -s version-check PG_CONFIG="$PG_CONFIG"
    make -s contract-check PG_CONFIG="$PG_CONFIG"
    python3 scripts/check_links.py
    make -s layer-check PG_CONFIG="$PG_CONFIG"
    python3 scripts/check_packages.py
}

# The C++ client: unit tests, live tests of every call, worker tests
# (restarting the server through scripts/restart-cluster.sh).
suite_client() {
    # the live suites use database postgres (the PG* environment)
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
    cmake -S client -B build/client -DJOBQUEUE_BUILD_TESTS=ON -DJOBQUEUE_WERROR=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo > build/client-cmake.log
    cmake --build build/client -j 2
    JQ_RESTART_COMMAND="bash $PWD/scripts/restart-cluster.sh" \
        ctest --test-dir build/client --output-on-failure
    # what a new user does: install, then find_package(jobqueue) from a project of their own
    rm -rf build/install build/consumer
    cmake --install build/client --prefix "$PWD/build/install" > /dev/null
    cmake -S tests/client/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install" > /dev/null
    cmake --build build/consumer > /dev/null
    build/consumer/consumer
}

# The jobqueue command-line tool (built by the client suite), with bats.
suite_cli() {
    [[ -x build/client/cli/jobqueue ]] || cmake --build build/client -j 2 --target jobqueue_cli
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue bats tests/cli
}

# Robustness: the bad-input battery, dump and restore, a hostile search_path.
suite_battery() { bash tests/battery/run.sh; }
suite_dump() { bash tests/dump/run.sh; }
suite_search_path() { bash tests/search_path/run.sh; }

# Coalesced NOTIFY: a listener that claims only when notified still gets
# every job (the sender's trailing notification), and each committed
# transaction announces each of its queues once, with Debian's psycopg2
# (about 55 s).
suite_notify() {
    # database postgres (the PG* environment), also when run alone (--only)
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
    timeout 180 /usr/bin/python3 tests/notify/coalesce.py
    # PREPARE TRANSACTION after a push; COMMIT PREPARED wakes (prepared.c)
    timeout 120 /usr/bin/python3 tests/notify/twophase.py
}

# Chaos: workers killed at random and the server restarted under load
# (3,000 jobs; 100,000 with --long).
suite_chaos() {
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue bash tests/stress/chaos.sh
}

# The Python (psycopg2) and Node (pg) examples, producers and workers, against
# the cluster (about 35 s; every step in it has its own timeout).
suite_examples() { bash tests/examples/run.sh; }

# The PGXN archive and the Debian packages, built and installed into a
# server of their own (not the one above).
suite_package() { bash tests/package/run.sh; }

# The client, the worker and the tool through PgBouncer in transaction mode
# (built by the client suite).
suite_pgbouncer() {
    cmake --build build/client -j 2 --target jobqueue_pgbouncer_tests jobqueue_cli > /dev/null
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue timeout 120 bash tests/pgbouncer/run.sh
}

SUITES=(packaging regress plan_rule client cli pgbouncer battery dump search_path notify chaos examples package)

# The storage ring (1.3): a randomised stress run with rotations, pauses,
# long delays and three kill -9 of the server at random (60 s of work, 300 s
# and eight kills with --long), against a cluster of its own; a held
# snapshot, a held lock, kill -9, rotations by time, an idle queue that
# writes nothing and rotations while workers wait, against a cluster of its
# own; pg_dump / restore of a database updated from 1.2, and a dump racing a
# rotation.
suite_ring_stress() {
    local seconds=60
    [[ $JQ_LONG == 1 ]] && seconds=300
    JQ_RING_STRESS_SECONDS=$seconds timeout $((seconds + 240)) bash tests/ring/stress.sh
}
suite_ring() { timeout 900 bash tests/ring/run.sh; }
suite_ring_dump() { timeout 180 bash tests/ring/dump.sh; }
SUITES+=(ring_stress ring ring_dump)

# `jobqueue dashboard`: headless Debian Chromium (puppeteer-core from npm) on
# its pages and actions, /metrics read by python3-prometheus-client, and a
# screenshot of a busy queue, against two clusters of its own
# (tests/dashboard/run.sh, about 100 s). Builds the tool when the client
# suite did not.
suite_dashboard() {
    [[ -f build/client/CMakeCache.txt ]] || cmake -S client -B build/client -DJOBQUEUE_WERROR=ON > build/client-cmake.log
    cmake --build build/client -j 2 --target jobqueue_cli > /dev/null
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue timeout 240 bash tests/dashboard/run.sh
}
SUITES+=(dashboard)

# High availability: a hot standby, fencing tokens across a promotion, and a
# failover in the middle of a drain with synchronous and with asynchronous
# streaming replication, on servers of its own (ports 56000-56099). Needs the
# tool and the standby tests of the client (built here when missing).
suite_failover() {
    if [[ ! -f build/client/CMakeCache.txt ]]; then
        cmake -S client -B build/client -DJOBQUEUE_BUILD_TESTS=ON -DJOBQUEUE_WERROR=ON \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo > build/client-cmake.log
    fi
    cmake --build build/client -j 2 --target jobqueue_cli jobqueue_standby_tests > /dev/null
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue JQ_PGBIN=$JQ_PGBIN timeout 300 bash tests/failover/run.sh
}
SUITES+=(failover)

# Flow control (1.5) under stress: 8 workers with random failures and
# leases that run out, on keys of limit 1 and 2; a monitor checks that no
# key ever has more live leases than its limit, and every job ends exactly
# once (tests/stress/flow_stress.py, about 30 s).
suite_flow_stress() {
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS jobqueue'
    timeout 180 /usr/bin/python3 tests/stress/flow_stress.py
}
SUITES+=(flow_stress)

# Several servers: two shard clusters and a router cluster (jobqueue_router,
# PL/Proxy): the id scheme, the mapping, transactional pushes on a shard,
# fencing, sums, `jobqueue work` through the router, a stopped shard, bad
# input (tests/shards/run.sh, about 15 s, ports 56100-56199). Needs the tool.
suite_shards() {
    [[ -f build/client/CMakeCache.txt ]] || cmake -S client -B build/client -DJOBQUEUE_WERROR=ON > build/client-cmake.log
    cmake --build build/client -j 2 --target jobqueue_cli > /dev/null
    JOBQUEUE_BIN=$PWD/build/client/cli/jobqueue JQ_PGBIN=$JQ_PGBIN timeout 120 bash tests/shards/run.sh
}
SUITES+=(shards)

if [[ -n $only ]]; then
    chosen=()
    for s in "${SUITES[@]}"; do
        [[ $only == *",$s,"* ]] && chosen+=("$s")
    done
    for s in ${only//,/ }; do
        [[ " ${SUITES[*]} " == *" $s "* ]] || { echo "test.sh: no suite named $s" >&2; exit 2; }
    done
    SUITES=("${chosen[@]}")
fi

# ---------------------------------------------------------------- main
passed=0
failed=0
phase="build/setup"
summary_done=0

# If the run dies early (setup failure, Ctrl-C), still drop the cluster and
# end with the summary line, counting suites that did not pass as failed.
on_exit() {
    local rc=$?
    jq_cluster_stop 2>/dev/null || true
    if (( ! summary_done )); then
        if (( rc != 0 )); then
            echo "test.sh: aborted during $phase (exit $rc)" >&2
        else
            echo "test.sh: aborted during $phase" >&2
        fi
        echo "$passed passed, $((${#SUITES[@]} - passed)) failed"
    fi
}
trap on_exit EXIT

source scripts/install-deps.sh
source scripts/cluster.sh

# Every suite's packages, once, up front: the "test" list of
# scripts/packages.txt (on another PostgreSQL version, --pg, the list of
# its suites: test_other_pg).
jq_install_purpose "${JQ_TEST_PACKAGES:-test}"
mkdir -p build

echo "==> build (PG_CFLAGS=$WERROR_CFLAGS)"
make -s clean PG_CONFIG="$PG_CONFIG"
make PG_CFLAGS="$WERROR_CFLAGS" PG_CONFIG="$PG_CONFIG"
make install PG_CONFIG="$PG_CONFIG"

# Preloaded, as production should run it: the shared-memory wake-ups of
# queue_reserve's wait are then in play (the ticker stays off).  Prepared
# transactions allowed, for the two-phase tests (twophase_wakeups, notify).
JQ_PRELOAD=jobqueue JQ_PGCONF="max_prepared_transactions = 10" jq_cluster_start

phase="suites"
for s in "${SUITES[@]}"; do
    echo "==> suite $s"
    start=$SECONDS
    # Not "if suite_x": bash ignores set -e inside a function run as a
    # condition, which would hide failures in the middle of a suite.
    set +e
    ( set -e; "suite_$s" )
    rc=$?
    set -e
    if (( rc == 0 )); then
        passed=$((passed + 1))
        echo "==> suite $s: PASSED ($((SECONDS - start))s)"
    else
        failed=$((failed + 1))
        echo "==> suite $s: FAILED (exit $rc, $((SECONDS - start))s)"
    fi
done

# Stop here rather than in the trap so the summary really is the last line.
jq_cluster_stop
summary_done=1
echo "$passed passed, $failed failed"
(( failed == 0 ))
