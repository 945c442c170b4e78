#!/usr/bin/env bash
# tests/package/run.sh - the packages a user installs: the PGXN archive and
# the Debian packages, installed into a server that never saw the extension.
#
#   1. make dist builds jobqueue-<version>.zip of the tracked files as they
#      are now (uncommitted changes included, untracked files not; in a copy
#      of the tree without its repository, such as scripts/debian-root.sh
#      makes, the copy's files that .gitignore does not ignore) and checks
#      it with scripts/pgxn-check.py; test_pgxn_check.py proves the checker
#      refuses broken variants (META.json fields, missing files, layout).
#   2. dpkg-buildpackage -b in the unpacked archive (so the archive alone is
#      enough to build), with the system's PostgreSQL and a clean PATH: the
#      packages of PostgreSQL JQ_PG_VERSION (default 15, Debian 12's; 17 and
#      18 under scripts/test.sh --pg=N, in the Debian release that has N).
#      Then, in another copy of the archive, an in-tree make followed by an
#      out-of-tree one (VPATH, as pg_buildext builds) and its make install.
#   3. the packages built are exactly those of tests/package/expected/, and
#      each holds exactly the files listed there ("@PG@" is the version).
#   4. a private copy of that PostgreSQL with every jobqueue file taken out:
#      CREATE EXTENSION fails there; the extension package is extracted over
#      it (dpkg-deb -x); then CREATE EXTENSION works, the library is loaded
#      from the copy, a push / reserve / delete round trip works, and 1.0
#      updates to the current version with the packaged scripts.
#   5. the packaged jobqueue command runs (--help, push, status) against that
#      server; a CMake project find_package()s the packaged library, builds
#      and runs a push / claim / complete against it (tests/client/consumer).
#
# Usage: bash tests/package/run.sh   (root or sudo for missing build
# dependencies; starts and stops its own server, whatever PG* says).
# Outputs stay under build/package/ (archive, unpacked tree, .deb files,
# build log).  Knobs:
#   JQ_PACKAGE_SELFTEST=1   repack the extension package without its last
#                           upgrade script: the run must fail
#   JQ_PACKAGE_BUILD_TIMEOUT  seconds for dpkg-buildpackage (default 900)
#   JQ_LONG=1               build with Debian's default flags and debug
#                           symbol packages (a normal run builds at -O0)
# Last line: "N passed, N failed".
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
HERE=$ROOT/tests/package
OUT=$ROOT/build/package
SELFTEST=${JQ_PACKAGE_SELFTEST:-0}
BUILD_TIMEOUT=${JQ_PACKAGE_BUILD_TIMEOUT:-900}
CHECKS_SUITE=package
source tests/lib/checks.bash
ran() { "$@" && echo t || echo f; }
check_sql() { # check_sql NAME psql-arguments...: the output must be just "t"
    local name=$1 output
    shift
    output=$(q "$@" 2>&1)
    check "$name" "$([[ $output == t ]] && echo t || echo f)" "$output"
}

# scripts/test.sh runs this with its own cluster exported: leave it alone.
unset JQ_CLUSTER_DIR JQ_PGDATA JQ_SERVER_LOG PGHOST PGPORT PGDATABASE

source scripts/install-deps.sh
# the test command's packages (scripts/packages.txt: build-essential, debhelper,
# postgresql-server-dev-all and the client's; none missing under scripts/test.sh),
# or, on another PostgreSQL version (scripts/test.sh --pg=N), the list it names
# (JQ_TEST_PACKAGES=test_other_pg)
jq_install_purpose "${JQ_TEST_PACKAGES:-test}" || die "build dependencies"
# The PostgreSQL major version whose packages are built and tested (set by
# scripts/install-deps.sh: JQ_PG_VERSION, default 15).
PG=$JQ_PG_VERSION
SYSTEM_PG_LIB=/usr/lib/postgresql/$PG
SYSTEM_PG_SHARE=/usr/share/postgresql/$PG
EXT_PACKAGE=postgresql-$PG-jobqueue

WORK=$(mktemp -d /tmp/jq-pkg.XXXXXX)
chmod 755 "$WORK"
PGROOT=$WORK/root
export JQ_PGBIN=$PGROOT$SYSTEM_PG_LIB/bin
source scripts/cluster.sh
# Both sourced files turn on errexit; this script counts failures instead.
set +e
cleanup() {
    jq_cluster_stop
    rm -rf -- "$WORK"
}
trap cleanup EXIT

q() { timeout 60 "$JQ_PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# ------------------------------------------------------------ 1. the archive
rm -rf "$OUT"
mkdir -p "$OUT"
if [[ $(git -C "$ROOT" rev-parse --show-toplevel 2> /dev/null) -ef $ROOT ]]; then
    ref=$(git stash create) || die "git stash create"
    ref=${ref:-HEAD}
else
    # A copy of the tree without its .git (scripts/debian-root.sh copies the
    # tracked and untracked, not ignored, files to /src): make dist archives
    # the tree of a throwaway repository holding the copy's files, with the
    # copy's .gitignore applied as in the checkout it came from.
    export GIT_DIR=$WORK/git GIT_WORK_TREE=$ROOT
    git init -q "$GIT_DIR" && git add -A && ref=$(git write-tree) \
        || die "git: a tree of the copy's files (no repository in $ROOT)"
fi
make -s -C "$OUT" -f "$ROOT/Makefile" dist DIST_REF="$ref" > "$OUT/dist.log" 2>&1 \
    || { cat "$OUT/dist.log"; die "make dist builds an archive that passes pgxn-check"; }
zips=("$OUT"/jobqueue-*.zip)
ZIP=${zips[0]}
DIST=$(basename "$ZIP" .zip)
check "make dist: $DIST.zip, checked by pgxn-check ($(grep -c . < <(unzip -Z1 "$ZIP")) entries)" t
check "pgxn-check refuses broken archives (tests/package/test_pgxn_check.py)" \
    "$(ran timeout 120 python3 "$HERE/test_pgxn_check.py" "$ZIP")"

# ------------------------------------------------------------ 2. the build
unzip -q "$ZIP" -d "$OUT" || die "unzip $DIST.zip"
SRC=$OUT/$DIST
echo "== dpkg-buildpackage in build/package/$DIST (log: build/package/build.log)"
# With Debian's flags (-O2 -g) the C++ client alone takes minutes of CPU on
# two cores.  What this suite checks (rules, install files, package contents,
# that they work) does not depend on the optimisation, so a normal run builds
# at -O0 without debug info; --long (JQ_LONG=1) builds exactly as a user does.
if [[ ${JQ_LONG:-0} == 1 ]]; then
    build_flags=()
else
    build_flags=(DEB_BUILD_OPTIONS="noautodbgsym noopt" DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g)
fi
# debian/control is generated from debian/control.in by pg_buildext (one
# postgresql-N-jobqueue paragraph per version debian/pgversions allows that
# this Debian supports, "pg_buildext supported-versions": 15 on Debian 12, 17
# on Debian 13, 18 on sid).  The committed file is Debian 12's, for 15, and
# the build's clean step (pgxs_debian_control.mk: pg_buildext checkcontrol)
# fails when it is not what control.in gives here.  On the release it was
# generated for, that is the check that it is up to date.  On another one it
# is rebuilt the way PostgreSQL's own rebuilds of Debian's sources for other
# releases do it (backports and apt.postgresql.org: checkcontrol regenerates
# the file when the changelog names such a suite or PG_UPDATECONTROL is set;
# Debian's own buildds never do, a new upload carries the file): with
# PG_UPDATECONTROL=yes, so the build's clean step writes debian/control for
# this release's version and says so ("Notice: Updating debian/control").
CONTROL_PG=$(sed -n 's/^Package: postgresql-\([0-9][0-9]*\)-jobqueue$/\1/p' "$SRC/debian/control")
control_env=()
[[ $CONTROL_PG == "$PG" ]] || control_env=(PG_UPDATECONTROL=yes)
build_start=$SECONDS
(cd "$SRC" && env -u PG_CONFIG -u MAKEFLAGS -u PG_UPDATECONTROL PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    "${build_flags[@]}" "${control_env[@]}" \
    timeout "$BUILD_TIMEOUT" dpkg-buildpackage -us -uc -b -j2) > "$OUT/build.log" 2>&1 \
    || { tail -n 40 "$OUT/build.log"; die "dpkg-buildpackage -b"; }
check "dpkg-buildpackage -b from the archive ($((SECONDS - build_start))s)" t
updated=f
grep -q '^Notice: Updating debian/control from debian/control.in' "$OUT/build.log" && updated=t
if [[ $CONTROL_PG == "$PG" ]]; then
    check "debian/control is control.in's for PostgreSQL $PG (the build's check left it alone)" \
        "$([[ $updated == f ]] && echo t || echo f)"
else
    check "debian/control (committed for $CONTROL_PG) regenerated by the build for PostgreSQL $PG" \
        "$([[ $updated == t ]] && grep -qx "Package: $EXT_PACKAGE" "$SRC/debian/control" && echo t || echo f)" \
        "$(grep '^Package:' "$SRC/debian/control" | tr '\n' ' ')"
fi

# ------------------------------------------------------------ 2b. out of the tree
# pg_buildext builds out of the tree (make -f SRC/Makefile VPATH=SRC), and a
# developer's tree may already hold an in-tree build.  The out-of-tree build
# must then make and install its own copy of every built file: make finds a
# file that is up to date through VPATH and would otherwise install nothing
# for it (jobqueue_router's script, built from its parts, is one).
VSRC=$WORK/vpath-src/$DIST VBUILD=$WORK/vpath-build VROOT=$WORK/vpath-root
ROUTER_SCRIPT=extension/router/jobqueue_router--1.0.sql
vpath_make() { # vpath_make DIR ARGS...: at -O0, with this PostgreSQL's pg_config
    make -C "$1" -j2 PROFILE=-O0 PG_CONFIG="$SYSTEM_PG_LIB/bin/pg_config" "${@:2}" >> "$OUT/vpath.log" 2>&1
}
mkdir -p "$VBUILD" && unzip -q "$ZIP" -d "$WORK/vpath-src" \
    && vpath_make "$VSRC" \
    && vpath_make "$VBUILD" -f "$VSRC/Makefile" VPATH="$VSRC" install DESTDIR="$VROOT"
vpath_rc=$?
installed=$VROOT$SYSTEM_PG_SHARE/extension/$(basename "$ROUTER_SCRIPT")
check "an out-of-tree build after an in-tree one builds and installs (make -f, VPATH; log: build/package/vpath.log)" \
    "$([[ $vpath_rc == 0 ]] && echo t || echo f)" "$(tail -n 5 "$OUT/vpath.log")"
check "  ... its own $ROUTER_SCRIPT, the same as the in-tree one" \
    "$([[ -f $VBUILD/$ROUTER_SCRIPT && -f $installed ]] && cmp -s "$installed" "$VSRC/$ROUTER_SCRIPT" \
        && echo t || echo f)"

VERSION=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
EXTVERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$SRC/extension/jobqueue.control")
deb() { echo "$OUT/${1}_${VERSION}_${ARCH}.deb"; }

if [[ $SELFTEST == 1 ]]; then
    echo "== self-test: the extension package loses jobqueue--1.1--1.2.sql"
    dpkg-deb -R "$(deb "$EXT_PACKAGE")" "$WORK/repack"
    rm "$WORK/repack$SYSTEM_PG_SHARE/extension/jobqueue--1.1--1.2.sql"
    dpkg-deb -b "$WORK/repack" "$(deb "$EXT_PACKAGE")" > /dev/null
fi

# ------------------------------------------------------------ 3. the contents
# expected/PACKAGE.files for each package, "@PG@" in the name and the lines
# standing for the PostgreSQL version and "@MULTIARCH@" for the multiarch
# triplet; the build must make these packages and no other.
packages=() templates=()
for expected in "$HERE"/expected/*.files; do
    templates+=("$(basename "$expected" .files)")
    packages+=("${templates[-1]//@PG@/$PG}")
done
built=$(cd "$OUT" && for f in *.deb; do [[ -f $f ]] && echo "${f%%_*}"; done | sort)
check "the packages built are those of tests/package/expected/ ($(echo $built))" \
    "$([[ $built == "$(printf '%s\n' "${packages[@]}" | sort)" ]] && echo t || echo f)" \
    "expected: ${packages[*]}"
for i in "${!packages[@]}"; do
    package=${packages[i]} template=${templates[i]}
    file=$(deb "$package")
    if [[ ! -f $file ]]; then
        check "$package: built" f "no $file"
        continue
    fi
    # regular files and symlinks; directories follow from them
    dpkg-deb -c "$file" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort > "$WORK/$package.files"
    sed -e "s/@MULTIARCH@/$MULTIARCH/g" -e "s/@PG@/$PG/g" "$HERE/expected/$template.files" \
        | sort > "$WORK/$package.expected"
    if diff -u "$WORK/$package.expected" "$WORK/$package.files" > "$WORK/$package.diff"; then
        check "$package: exactly the expected $(wc -l < "$WORK/$package.files") files" t
    else
        check "$package: exactly the expected files" f "differences (- expected, + packaged):"
        sed -n '3,$p' "$WORK/$package.diff"
    fi
done

# ------------------------------------------------------------ 4. a clean server
mkdir -p "$PGROOT/usr/lib/postgresql" "$PGROOT/usr/share/postgresql"
cp -a "$SYSTEM_PG_LIB" "$PGROOT/usr/lib/postgresql/" && cp -a "$SYSTEM_PG_SHARE" "$PGROOT/usr/share/postgresql/" \
    || die "copy PostgreSQL $PG"
# The test command may have run "make install" into the system's tree.
find "$PGROOT" -name 'jobqueue*' -exec rm -rf {} +
check "the PostgreSQL copy holds no jobqueue file" "$([[ -z $(find "$PGROOT" -name 'jobqueue*') ]] && echo t || echo f)"
chmod -R a+rX "$WORK"
jq_cluster_start > "$WORK/cluster.log" || { cat "$WORK/cluster.log"; die "start a server from the copy"; }

# The server's files are the copy's: its share directory (where it looks for
# extensions) is the copy's.  Up to 17 the error names the control file it
# could not open, in the copy; from 18 (extension_control_path) it says only
# that the extension is not available.
before=$(q -c 'CREATE EXTENSION jobqueue' 2>&1)
sharedir=$(q -c "SELECT setting FROM pg_config WHERE name = 'SHAREDIR'" 2>&1)
if (( PG < 18 )); then
    failed_in_copy=$([[ $before == *"$PGROOT$SYSTEM_PG_SHARE/extension/jobqueue.control"* ]] && echo t || echo f)
else
    failed_in_copy=$([[ $before == *'extension "jobqueue" is not available'* ]] && echo t || echo f)
fi
check "before the package: CREATE EXTENSION fails, looking in the copy" \
    "$([[ $failed_in_copy == t && $sharedir == "$PGROOT$SYSTEM_PG_SHARE" ]] && echo t || echo f)" \
    "$before (SHAREDIR: $sharedir)"

dpkg-deb -x "$(deb "$EXT_PACKAGE")" "$PGROOT" || die "dpkg-deb -x $EXT_PACKAGE"
chmod -R a+rX "$PGROOT"
check_sql "CREATE EXTENSION jobqueue from the package (version $EXTVERSION)" \
    -c 'CREATE EXTENSION jobqueue' -c "SELECT extversion = '$EXTVERSION' FROM pg_extension WHERE extname = 'jobqueue'"

# One session: the library it loads must be the packaged one, in the copy.
loaded=$(q -c 'SELECT queue_pending()' -c "SELECT string_agg(DISTINCT substring(line from '(/[^ ]*jobqueue\.so)'), ' ')
                  FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') AS line
                 WHERE line LIKE '%jobqueue.so%'" 2>&1 | tail -n 1)
check "the server loads jobqueue.so from the copy" \
    "$([[ $loaded == "$PGROOT$SYSTEM_PG_LIB/lib/jobqueue.so" ]] && echo t || echo f)" "$loaded"

# Separate statements: a statement does not see what a function it calls wrote.
check_sql "push / reserve / delete round trip" <<'SQL'
SELECT queue_push('package_check', '{"from": "deb"}', 'package') AS pushed \gset
SELECT id AS claimed, token FROM queue_reserve('{package}', '30 seconds', 'package-test') \gset
SELECT :pushed = :claimed AND queue_delete(:claimed, :token) AS deleted \gset
SELECT :'deleted'::boolean AND NOT EXISTS (SELECT 1 FROM queue_jobs WHERE id = :pushed) AND queue_pending('package') = 0;
SQL

# This server does not preload jobqueue: the counters say they need it,
# and nothing else minds.
counters=$(q -v VERBOSITY=sqlstate -c 'SELECT count(*) FROM queue_counters()' 2>&1)
hint=$(q -c 'SELECT count(*) FROM queue_counters()' 2>&1)
check "without preload: queue_counters() fails with 55000 naming shared_preload_libraries" \
    "$([[ $counters == *55000* && $hint == *shared_preload_libraries* ]] && echo t || echo f)" "$counters / $hint"

q -c 'CREATE DATABASE jq_package_update' || die "create database jq_package_update"
check_sql "CREATE EXTENSION jobqueue VERSION '1.0', then ALTER EXTENSION UPDATE reaches $EXTVERSION" \
    -d jq_package_update -c "CREATE EXTENSION jobqueue VERSION '1.0'" -c 'ALTER EXTENSION jobqueue UPDATE' \
    -c "SELECT extversion = '$EXTVERSION' FROM pg_extension WHERE extname = 'jobqueue'"

# ------------------------------------------------------------ 5. the client packages
dpkg-deb -x "$(deb jobqueue-cli)" "$WORK/cli" && dpkg-deb -x "$(deb libjobqueue-dev)" "$WORK/dev" \
    || die "dpkg-deb -x the client packages"
cli=$WORK/cli/usr/bin/jobqueue
check "jobqueue --help (packaged command)" \
    "$([[ $(timeout 30 "$cli" --help 2>&1) == *push* ]] && echo t || echo f)"
pushed=$(timeout 30 "$cli" push package_cli '{"n": 1}' --queue package_cli 2>&1)
status=$(timeout 30 "$cli" status --json 2>&1)
check "jobqueue push / status against the packaged extension" \
    "$([[ $pushed =~ ^[0-9]+$ ]] && python3 -c 'import json, sys
queues = {q["queue"]: q for q in json.loads(sys.argv[1])}
sys.exit(queues["package_cli"]["pending"] != 1)' "$status" && echo t || echo f)" "push: $pushed; status: $status"

consumer=$WORK/consumer
if timeout 300 cmake -S tests/client/consumer -B "$consumer" -DCMAKE_PREFIX_PATH="$WORK/dev/usr" \
        > "$WORK/consumer.log" 2>&1 \
   && timeout 300 cmake --build "$consumer" >> "$WORK/consumer.log" 2>&1; then
    check "find_package(jobqueue) from libjobqueue-dev: configured and built" t
    consumer_output=$(timeout 60 "$consumer/consumer" 2>&1)
    check "the consumer pushes, claims and completes through the packaged library" \
        "$([[ $? == 0 ]] && echo t || echo f)" "$consumer_output"
else
    check "find_package(jobqueue) from libjobqueue-dev: configured and built" f "see below"
    tail -n 30 "$WORK/consumer.log"
fi

finish
