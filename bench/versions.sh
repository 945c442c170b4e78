#!/usr/bin/env bash
# bench/versions.sh: server CPU per call (bench/percall.py) on each
# PostgreSQL major version, one after the other in one session, so that
# the ratios to the hand-written SQL can be compared between versions.
#
#   bash bench/versions.sh [--pg=15,18] [percall.py's arguments...]
#
# 15 runs on this Debian 12 machine; 17 and 18 in a fresh Debian root
# filesystem of the release that carries them (scripts/debian-root.sh, as
# scripts/test.sh --pg does).  Each run builds and installs the extension
# for its version and starts a throwaway cluster of its own (percall.py).
# Default: --pg=15,18 --rounds 7.  Output: each version's table, headed
# "==> PostgreSQL N".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

versions=15,18
args=()
for arg in "$@"; do
    case $arg in
        --pg=*) versions=${arg#--pg=} ;;
        *) args+=("$arg") ;;
    esac
done
(( ${#args[@]} )) || args=(--rounds 7)
declare -A debian_release=([17]=trixie [18]=sid)

# Build, install, measure; run in the version's system as root.
measure='
set -euo pipefail
source scripts/install-deps.sh
jq_install_purpose extension
jq_install_deps python3 python3-psycopg2
make -s clean
make -s install > /dev/null
/usr/bin/python3 bench/percall.py "$@"
'
for version in ${versions//,/ }; do
    echo "==> PostgreSQL $version"
    if [[ $version == 15 ]]; then
        JQ_PG_VERSION=15 bash -c "$measure" percall "${args[@]}"
    elif [[ -n ${debian_release[$version]:-} ]]; then
        bash scripts/debian-root.sh "${debian_release[$version]}" -- \
            env JQ_PG_VERSION="$version" bash -c "$measure" percall "${args[@]}"
    else
        echo "versions.sh: PostgreSQL $version is not supported here (15, 17, 18)" >&2
        exit 2
    fi
done
