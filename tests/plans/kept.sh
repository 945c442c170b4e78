#!/usr/bin/env bash
# The extension's own kept statements are planned by its rule (index plans,
# no sort) whatever the statistics say, now that the rule is decided by the
# statement the extension registered and not by the query text
# (extension/src/exec/hotpath.c). On analysed empty tables, where the
# planner left alone picks sequential scans and sorts (shown by a control
# query), a push, a claim and a completion run, and auto_explain prints
# the plan of every statement they run (log_level notice): none may scan a
# job partition sequentially, use a bitmap or sort.  A plain claim runs no
# search or UPDATE at all (the direct claim); a rate-limited one does; a
# keyed completion plans neither its DELETE nor the hand-over of its slot;
# a release and an extend plan no UPDATE, a failure no DELETE or INSERT.
#
# Runs against the cluster of the PG* environment; about 2 s.
set -euo pipefail

db=jq_plan_rule
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" || true' EXIT
export PGDATABASE=$db
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION jobqueue' -c 'ANALYZE'

failed=0
check() {   # check NAME COMMAND...: the command decides
    local name=$1
    shift
    if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failed=1; fi
}

# The control: the claim's search, written by hand, planned by PostgreSQL.
control=$(psql -X -At -v ON_ERROR_STOP=1 -c "EXPLAIN (COSTS OFF) SELECT id FROM queue_jobs
    WHERE queue = 'q' AND ready AND available_at <= now() ORDER BY priority DESC, available_at, id LIMIT 1")
check "control: without the rule the planner picks a sequential scan or a sort here" \
    grep -qE 'Seq Scan on queue_jobs|Sort' <<< "$control"

# auto_explain's settings, then the calls; prints every statement's plan
explained() {
    psql -X -v ON_ERROR_STOP=1 2>&1 <<SQL
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
$1
SQL
}

# A plain queue: push, claim and completion take the direct paths (1.6,
# store/direct_*.c), so no claim statement may be planned at all; the
# promotion probes are.  A rate-limited queue's claim takes the statements
# (flow/ratelimit.c): those are the claim's search and UPDATE.
plain=$(explained "SELECT queue_push('x', '{}', 'q');
SELECT count(*) FROM (SELECT queue_delete(id, token) FROM queue_reserve('{q}')) AS done;")
limited=$(explained "SELECT queue_rate_limit_set('r', 100, '1 second');
SELECT queue_push('x', '{}', 'r');
SELECT count(*) FROM (SELECT queue_delete(id, token) FROM queue_reserve('{r}')) AS done;")
claim_search='Query Text: /\* jobqueue hot path \*/ SELECT id, priority, available_at'
claim_update='Query Text: /\* jobqueue hot path \*/ UPDATE .* SET ready = false'
check "a plain claim plans no search and no UPDATE (the direct claim)" \
    bash -c '! grep -qE "$1|$2" <<< "$3"' _ "$claim_search" "$claim_update" "$plain"
check "a rate-limited claim runs its search and UPDATE as statements" \
    bash -c 'grep -qE "$1" <<< "$3" && grep -qE "$2" <<< "$3"' _ "$claim_search" "$claim_update" "$limited"
# A keyed job's completion deletes it the direct way too, then hands its
# key's slot to the next job of the key as the trigger would after a
# DELETE statement: without the executor too (store/direct_slots.c), so
# neither flow.c's lock of the key's row nor its admission UPDATE is
# planned; the next job of the key is then the one to claim.
psql -X -q -v ON_ERROR_STOP=1 -c "SELECT queue_push('k1', '{}', 'kq', concurrency_key => 'c')" \
    -c "SELECT queue_push('k2', '{}', 'kq', concurrency_key => 'c')"
keyed=$(explained "SELECT count(*) FROM (SELECT queue_delete(id, token) FROM queue_reserve('{kq}')) AS done;")
next=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT name FROM queue_reserve('{kq}')")
check "a keyed completion plans no DELETE, no lock of the key and no admission, and hands the slot on" \
    bash -c '! grep -qE "Query Text: /\* jobqueue hot path \*/ (WITH .*)?DELETE FROM [a-z_.]*queue_jobs|queue_key_slots|SET flow = " <<< "$1" &&
             grep -qE "^ *1$" <<< "$1" && [[ $2 == k2 ]]' _ "$keyed" "$next"
# A release and an extend change the claimed row without the executor too
# (store/direct_update.c): neither plans its UPDATE (nor the release its
# lock), and both did what they say.
changes=$(explained "SELECT queue_push('r', '{}', 'rq'), queue_push('e', '{}', 'rq');
SELECT bool_and(CASE name WHEN 'r' THEN queue_release(id, token, '0', 'again')
                          ELSE queue_extend(id, token, '1 hour') END) AS changed
  FROM queue_reserve('{rq}', max_jobs => 2);")
state=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT string_agg(name || ':' || ready || ':' || (token IS NULL), ' ' ORDER BY name)
    FROM queue_jobs WHERE queue = 'rq'")
check "a release and an extend plan no UPDATE and no lock, and change the job" \
    bash -c '! grep -qE "Query Text: /\* jobqueue hot path \*/ (UPDATE|SELECT attempts)" <<< "$1" &&
             grep -qE "^ *t$" <<< "$1" && [[ $2 == "e:false:false r:true:true" ]]' _ "$changes" "$state"
# A failure moves the job to the failed table without the executor too
# (store/direct_delete.c): neither the DELETE nor the INSERT is planned.
failure=$(explained "SELECT queue_push('f', '{}', 'fq');
SELECT bool_and(queue_fail(id, token, 'broken')) AS failed FROM queue_reserve('{fq}');")
failed_row=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT name || ':' || error FROM queue_failed_jobs WHERE queue = 'fq'")
check "a failure plans no DELETE and no INSERT, and moves the job" \
    bash -c '! grep -qE "Query Text: /\* jobqueue hot path \*/ (WITH moved|DELETE|INSERT INTO [a-z_.]*queue_failed_jobs)" <<< "$1" &&
             grep -qE "^ *t$" <<< "$1" && [[ $2 == "f:broken" ]]' _ "$failure" "$failed_row"
plans="$plain
$limited"
hot=$(grep -c 'Query Text: /\* jobqueue hot path \*/' <<< "$plans" || true)
check "auto_explain showed the extension's hot statements ($hot)" test "$hot" -ge 5
bad=$(grep -E 'Seq Scan on queue_jobs|Bitmap|  Sort ' <<< "$plans" || true)
check "no sequential scan of a job table, bitmap or sort in them" test -z "$bad"
if [[ -n $bad ]]; then echo "$bad"; fi
exit $failed
