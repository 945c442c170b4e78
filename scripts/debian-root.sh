#!/usr/bin/env bash
# Runs a command of the project inside a fresh Debian root filesystem whose
# release carries another PostgreSQL major version than the host's: the
# way scripts/test.sh --pg=17 and --pg=18 test those versions on a Debian 12
# machine (Debian 13 "trixie" serves PostgreSQL 17, "sid" PostgreSQL 18).
#
#   bash scripts/debian-root.sh SUITE -- COMMAND...
#
# As root, on a Debian host with the package registry reachable:
#   1. a minimal base system of SUITE (mmdebstrap, else debootstrap; both
#      from the host's Debian), built once and kept as a tarball in
#      JQ_ROOT_CACHE (default /var/cache/jobqueue-debian-roots);
#   2. unpacked into a new directory under JQ_ROOT_BASE (default /var/tmp),
#      with the host's resolver and apt proxy settings;
#   3. the project's files (tracked and untracked, not ignored, as they are
#      in the working tree) copied to /src in it;
#   4. COMMAND run there as root in /src, in private mount, PID and IPC
#      namespaces (the host's network: the registry, loopback ports), with
#      its own /proc, /dev and /dev/shm, and a policy that starts no daemon
#      from a package's scripts;
#   5. every process it left stopped with the namespace, and the directory
#      deleted (JQ_KEEP_ROOT=1 keeps it and prints its path).
# COMMAND installs what it needs itself (scripts/install-deps.sh), as on a
# new machine.  Exit status: COMMAND's; 125 when the root could not be made.
set -uo pipefail

die() { echo "debian-root: $*" >&2; exit 125; }

(( $# >= 3 )) && [[ $2 == -- ]] || die "usage: debian-root.sh SUITE -- COMMAND..."
suite=$1
shift 2
(( EUID == 0 )) || die "must run as root (it builds a root filesystem and mounts in it)"
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${JQ_ROOT_CACHE:-/var/cache/jobqueue-debian-roots}
mirror=${JQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
arch=$(dpkg --print-architecture)
tarball=$cache/$suite-$arch.tar.gz

# apt options the base system and the root keep: a proxy of the host's,
# and no expiry check of the release files (a registry that serves a
# snapshot of a moving release, sid, keeps serving it after its date).
apt_options() {
    local f
    echo 'Acquire::Check-Valid-Until "false";'
    for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/*; do
        [[ -f $f ]] && grep -hiE '^[^#]*proxy' "$f"
    done
    return 0
}

build_base() {
    local tmp=$cache/.building.$$ rc=0 dir
    command -v mmdebstrap > /dev/null || command -v debootstrap > /dev/null ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap > /dev/null ||
        return 1
    echo "debian-root: building a base system of $suite (once; kept in $cache)" >&2
    if command -v mmdebstrap > /dev/null; then
        local opts=()
        while IFS= read -r line; do opts+=(--aptopt="$line"); done < <(apt_options)
        mmdebstrap --variant=minbase --mode=root --format=tar "${opts[@]}" \
            "$suite" - "$mirror" 2> "$cache/$suite.log" | gzip -1 > "$tmp" || rc=1
    else
        dir=$(mktemp -d "$cache/.debootstrap.XXXXXX")
        debootstrap --variant=minbase "$suite" "$dir" "$mirror" > "$cache/$suite.log" 2>&1 || rc=1
        (( rc )) || tar --numeric-owner -C "$dir" -czf "$tmp" . || rc=1
        rm -rf --one-file-system "$dir"
    fi
    if (( rc )) || [[ ! -s $tmp ]]; then
        tail -n 20 "$cache/$suite.log" >&2
        rm -f "$tmp"
        return 1
    fi
    mv -f "$tmp" "$tarball"
}

mkdir -p "$cache" || die "cannot create $cache"
{
    flock 9
    [[ -s $tarball ]] || build_base || die "could not build a base system of $suite"
} 9> "$cache/.lock"

work=$(mktemp -d "${JQ_ROOT_BASE:-/var/tmp}/jq-root-$suite.XXXXXX") || die "mktemp"
root=$work/root
cleanup() {
    if [[ ${JQ_KEEP_ROOT:-0} == 1 ]]; then
        echo "debian-root: kept $root" >&2
    else
        rm -rf --one-file-system "$work"
    fi
}
trap cleanup EXIT
mkdir "$root" && tar --numeric-owner -xzf "$tarball" -C "$root" || die "could not unpack $tarball"

# What the root needs from the host: the resolver, apt's options, no daemons.
rm -f "$root/etc/resolv.conf"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
apt_options > "$root/etc/apt/apt.conf.d/90jobqueue-root"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
[[ -s $root/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' > "$root/etc/hosts"
mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"

# The project as it is in the working tree (what git would commit or add).
mkdir "$root/src"
git -C "$project" ls-files -z --cached --others --exclude-standard |
    tar -C "$project" --null -T - --ignore-failed-read -cf - 2> /dev/null |
    tar -C "$root/src" -xf - || die "could not copy the project into the root"

# Inside new namespaces: mount what a system has, run, and let every process
# go with the namespace's first one.
inner='
root=$1; shift
mount --make-rprivate /
mount -t proc proc "$root/proc" || exit 125
mount -t sysfs -o ro sysfs "$root/sys" 2> /dev/null
mount -t tmpfs -o mode=0755,size=64m tmpfs "$root/dev" || exit 125
for node in null zero full random urandom tty; do
    touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node" || exit 125
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" || exit 125
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm" || exit 125
exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 CI="${CI:-}" JQ_LONG="${JQ_LONG:-0}" \
    /bin/sh -c "cd /src && exec \"\$@\"" sh "$@"
'
unshare --mount --pid --ipc --fork --kill-child -- bash -c "$inner" debian-root "$root" "$@"
