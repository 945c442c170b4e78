#!/usr/bin/env bash
# Installs the packages needed to build and test, but only when missing,
# so repeated local runs stay fast and offline.
#
#   bash scripts/install-deps.sh [extra-package ...]     # install only
#   source scripts/install-deps.sh; jq_install_deps [extra-package ...]
#
# Sourcing also puts the PostgreSQL 15 bin dir first on PATH, so callers get
# the right pg_config / pg_ctl / psql even if other versions are installed.
set -euo pipefail

JQ_BASE_PACKAGES=(make gcc postgresql-15 postgresql-server-dev-15 libpq-dev)
JQ_PGBIN=${JQ_PGBIN:-/usr/lib/postgresql/15/bin}

case ":$PATH:" in
    *":$JQ_PGBIN:"*) ;;
    *) export PATH="$JQ_PGBIN:$PATH" ;;
esac
# Make PGXS builds use version 15 whatever /usr/bin/pg_config would pick.
export PG_CONFIG=$JQ_PGBIN/pg_config

_jq_pkg_installed() {
    # "dpkg -s" also succeeds for removed packages that left config files,
    # so look at the status line.
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

jq_install_deps() {
    local pkg missing=()
    for pkg in "${JQ_BASE_PACKAGES[@]}" "$@"; do
        _jq_pkg_installed "$pkg" || missing+=("$pkg")
    done
    (( ${#missing[@]} == 0 )) && return 0

    echo "install-deps: installing ${missing[*]}"
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "install-deps: missing ${missing[*]} and not root" >&2
            return 1
        fi
    fi
    # Quiet apt (-qq) but keep errors; noninteractive because CI has no stdin.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Executed (not sourced): install right away.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    jq_install_deps "$@"
fi
