# shellcheck shell=bash
# bench/run.sh's scenario 15: pg-boss as a measured peer, through Node.

# ============================================================= 15. peers via Node
# pg-boss (bench/peers/package.json's version) and jobqueue through the same
# client driver, node-postgres, in one Node process (bench/peers/pgboss.mjs):
# one-job push, batch push of 100, one-job drain (fetch+complete against
# reserve+delete) from a backlog of PEER_BACKLOG, 1 and 8 clients, REPS runs
# of SECS seconds each.  pg-boss creates its schema "pgboss" in the bench
# database at its first start.  Needs node (>= 20) and npm (scripts/packages.txt's
# "bench" list); npm ci installs bench/peers/node_modules when it is missing or
# older than package-lock.json.
scenario_peers() {
    log "15. peers via Node: pg-boss and jobqueue through node-postgres (push, batch of 100, one-job drain from $PEER_BACKLOG)"
    local dir=$BENCH/peers major
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        log "15. peers: no node or npm on PATH: skipped"
        rec peer.status "skipped: no node or npm"
        return 0
    fi
    major=$(node -p 'process.versions.node.split(".")[0]')
    if (( major < 20 )); then
        log "15. peers: node $(node --version) is older than pg-boss's minimum (20): skipped"
        rec peer.status "skipped: node $(node --version)"
        return 0
    fi
    if [[ ! -f $dir/node_modules/.package-lock.json || $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
        log "15. peers: npm ci (bench/peers)"
        (cd "$dir" && npm ci --no-audit --no-fund) >"$OUT/npm-ci.log" 2>&1 \
            || { tail -20 "$OUT/npm-ci.log" >&2; return 1; }
    fi
    local args=(--secs="$SECS" --reps="$REPS" --backlog="$PEER_BACKLOG" --clients="1,8")
    if [[ $MODE == full ]]; then args+=(--checkpoint); fi
    if ! node "$dir/pgboss.mjs" "${args[@]}" >"$OUT/peers.tsv" 2>"$OUT/peers.log"; then
        echo "bench/peers/pgboss.mjs failed:" >&2
        tail -20 "$OUT/peers.log" >&2
        return 1
    fi
    # its lines are raw.tsv records (peer.<system>.<op>.c<C>, peer.meta.*)
    grep -P '^peer\.[a-z0-9_.]+\t\S+$' "$OUT/peers.tsv" >> "$RAW"
    rec peer.status ok
}
