#!/usr/bin/env bash
# Installs the Debian packages a command needs, but only when missing, so
# repeated local runs stay fast and offline. What each command needs is
# written once, in scripts/packages.txt (one list per purpose: extension,
# client, demo, test, bench).
#
#   bash scripts/install-deps.sh PURPOSE|PACKAGE ...   # install only
#   source scripts/install-deps.sh
#   jq_install_purpose PURPOSE ...     # a command's lists (demo.sh, test.sh, bench/run.sh)
#   jq_packages PURPOSE ...            # print a purpose's packages, one a line
#   jq_install_deps PACKAGE ...        # any packages (plus the extension's)
#
# The PostgreSQL major version is JQ_PG_VERSION (default 15, Debian 12's;
# scripts/test.sh --pg=N sets it inside a Debian system that has N): "@PG@"
# in packages.txt stands for it.  Sourcing also puts that version's bin dir
# first on PATH, so callers get the right pg_config / pg_ctl / psql even if
# other versions are installed.
set -euo pipefail

JQ_PACKAGES_FILE=${JQ_PACKAGES_FILE:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/packages.txt}
export JQ_PG_VERSION=${JQ_PG_VERSION:-15}
export JQ_PGBIN=${JQ_PGBIN:-/usr/lib/postgresql/$JQ_PG_VERSION/bin}

case ":$PATH:" in
    *":$JQ_PGBIN:"*) ;;
    *) export PATH="$JQ_PGBIN:$PATH" ;;
esac
# Make PGXS builds use that version whatever /usr/bin/pg_config would pick.
export PG_CONFIG=$JQ_PGBIN/pg_config

# jq_packages PURPOSE...: the purpose's items from packages.txt, @references
# expanded, each once; PKG(CMD) items are kept as they are (see
# jq_install_purpose).
jq_packages() {
    local purpose line name items item seen=" "
    local -a todo=("$@") out=()
    while (( ${#todo[@]} )); do
        purpose=${todo[0]}
        todo=("${todo[@]:1}")
        [[ $seen == *" @$purpose "* ]] && continue
        seen+="@$purpose "
        local found=0
        while IFS= read -r line || [[ -n $line ]]; do
            line=${line%%#*}
            [[ $line =~ ^([a-z_]+):(.*)$ ]] || continue
            name=${BASH_REMATCH[1]} items=${BASH_REMATCH[2]}
            [[ $name == "$purpose" ]] || continue
            found=1
            for item in ${items//@PG@/$JQ_PG_VERSION}; do
                if [[ $item == @* ]]; then
                    todo+=("${item#@}")
                elif [[ $seen != *" $item "* ]]; then
                    seen+="$item "
                    out+=("$item")
                fi
            done
        done < "$JQ_PACKAGES_FILE"
        (( found )) || { echo "install-deps: no list '$purpose' in $JQ_PACKAGES_FILE" >&2; return 1; }
    done
    (( ${#out[@]} == 0 )) || printf '%s\n' "${out[@]}"
}

# jq_install_purpose PURPOSE...: installs what the purposes' lists name and
# this machine lacks. PKG(CMD) means PKG only when CMD is not on PATH (a
# nodejs from another repository brings its own npm, which Debian's npm
# package would conflict with).
jq_install_purpose() {
    local item list pkgs=()
    list=$(jq_packages "$@") || return 1
    for item in $list; do
        if [[ $item =~ ^([^()]+)\(([^()]+)\)$ ]]; then
            command -v "${BASH_REMATCH[2]}" > /dev/null 2>&1 || pkgs+=("${BASH_REMATCH[1]}")
        else
            pkgs+=("$item")
        fi
    done
    jq_install_deps "${pkgs[@]}"
}

# The packages among the arguments that are not installed, one a line
# (one dpkg-query for all: a later run checks everything in a few ms).
_jq_missing_packages() {
    local pkg installed
    installed=" $(dpkg-query -W -f='${db:Status-Abbrev}|${Package}\n' "$@" 2>/dev/null \
        | awk -F'|' '$1 ~ /^ii/ { printf "%s ", $2 }' || true) "
    for pkg in "$@"; do
        [[ $installed == *" ${pkg%%:*} "* ]] || printf '%s\n' "$pkg"
    done
}

# jq_install_deps PACKAGE...: installs the packages that are missing.
jq_install_deps() {
    local missing=()
    (( $# )) || return 0
    mapfile -t missing < <(_jq_missing_packages "$@")
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

# Executed (not sourced): install the named purposes' lists and packages.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    purposes=() packages=()
    for arg in "$@"; do
        if grep -q "^$arg:" "$JQ_PACKAGES_FILE"; then purposes+=("$arg"); else packages+=("$arg"); fi
    done
    (( ${#purposes[@]} )) && jq_install_purpose "${purposes[@]}"
    jq_install_deps "${packages[@]}"
fi
