#!/usr/bin/env python3
"""One queue over several PostgreSQL servers: two shard clusters running
jobqueue (made shards 0 and 1 with queue_shard_setup) and a router cluster
running jobqueue_router (PL/Proxy), each with a database "app".

Three clusters rather than one cluster of several databases, so that a
shard can be stopped while the router and the other shard go on; two
shards because PL/Proxy wants a power of two and the machine has 2 cores.

Checks: the id scheme (ranges, refusal, a dump and restore), pushes spread
as the mapping says, a transactional push on a shard rolls back with its
transaction (and a push through the router does not: autocommit there),
fencing through the router, stats and failed rows through the router equal
the sum of the shards', `jobqueue work` through the router drains every job
exactly once, the jobqueue tool's commands through the router, a stopped
shard makes only its own queues unavailable (an error naming it) and loses
nothing, bad input gets the SQLSTATE one server gives.

Servers, ports and cleanup come from tests/failover/replica.py (ports of
JQ_FAILOVER_PORTS; tests/shards/run.sh sets 56100-56199); the jobqueue
tool from tests/failover/tool.py (JOBQUEUE_BIN).  Self-tests that must fail:
JQ_SHARDS_SELFTEST=anyshard routes every push to a random shard (the
mapping), JQ_SHARDS_SELFTEST=noidrange leaves out queue_shard_setup (both
shards hand out the same small ids: routing by id goes wrong),
JQ_SHARDS_SELFTEST=noskip makes the router's claim give up on a stopped shard.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "failover"), os.path.join(HERE, "..", "lib")]

import psycopg2  # noqa: E402

import replica  # noqa: E402
import tool  # noqa: E402
from checks import Checks  # noqa: E402

DB = "app"
SHARD_BITS = 48
SELFTEST = os.environ.get("JQ_SHARDS_SELFTEST", "")


def setup():
    shards = [replica.init_primary(f"shard{n}", {"shared_preload_libraries": "jobqueue"}) for n in range(2)]
    router = replica.init_primary("router")
    for n, shard in enumerate(shards):
        shard.query(f"CREATE DATABASE {DB}")
        conn = shard.connect(DB)
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION jobqueue")
            if SELFTEST != "noidrange":
                cur.execute("SELECT queue_shard_setup(%s)", (n,))
            cur.execute("CREATE TABLE orders (id int PRIMARY KEY, tenant text NOT NULL)")
        conn.close()
    router.query(f"CREATE DATABASE {DB}")
    conn = router.connect(DB)
    with conn.cursor() as cur:
        cur.execute("SET client_min_messages = warning")
        cur.execute("CREATE EXTENSION jobqueue_router CASCADE")
        options = ", ".join(f"p{n} %s" for n in range(len(shards)))
        cur.execute(f"CREATE SERVER jobqueue FOREIGN DATA WRAPPER plproxy OPTIONS ({options})",
                    [s.dsn(DB).replace(" user=postgres", "") for s in shards])
        cur.execute("CREATE USER MAPPING FOR PUBLIC SERVER jobqueue")
        if SELFTEST == "noskip":
            cur.execute("CREATE OR REPLACE FUNCTION router_unreachable(state text, message text) RETURNS boolean"
                        " LANGUAGE sql IMMUTABLE AS $$ SELECT false $$")
        if SELFTEST == "anyshard":
            cur.execute("CREATE OR REPLACE FUNCTION router_queue_hash(queue text) RETURNS integer"
                        " LANGUAGE sql VOLATILE AS $$ SELECT (random() * 1000)::integer $$")
    conn.close()
    return router, shards


def rows(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def value(conn, sql, args=None):
    got = rows(conn, sql, args)
    return got[0][0] if got else None


def sqlstate(conn, sql, args=None):
    """The SQLSTATE sql fails with (None: it did not fail)."""
    try:
        rows(conn, sql, args)
        return None
    except psycopg2.Error as e:
        return e.pgcode


def error_of(conn, sql, args=None):
    try:
        rows(conn, sql, args)
        return None
    except psycopg2.Error as e:
        return e


def queues_on(router, shard, count, prefix):
    """count queue names that the router maps to shard."""
    found, n = [], 0
    while len(found) < count:
        name = f"{prefix}{n}"
        if value(router, "SELECT queue_shard_for(%s)", (name,)) == shard:
            found.append(name)
        n += 1
    return found


def check_ids(checks, router, shards, conns):
    s0, s1 = conns
    checks.check("queue_shard() is each shard's number",
                 [value(c, "SELECT queue_shard()") for c in conns] == [0, 1])
    one = value(s1, "SELECT queue_push('id probe', queue => 'ids')")
    zero = value(s0, "SELECT queue_push('id probe', queue => 'ids')")
    checks.check("shard 1 hands out ids from 1 << 48, shard 0 small ones",
                 one >> SHARD_BITS == 1 and zero >> SHARD_BITS == 0, (zero, one))
    checks.check("queue_job_shard names the shard of an id, on a shard and on the router",
                 value(s0, "SELECT queue_job_shard(%s)", (one,)) == 1
                 and value(router, "SELECT queue_job_shard(%s)", (one,)) == 1)
    e = error_of(s1, "SELECT queue_shard_setup(2)")
    checks.check("queue_shard_setup refuses while ids outside the new range exist (55000)",
                 e is not None and e.pgcode == "55000" and "outside its id range" in str(e), e)
    e = error_of(s0, "SELECT queue_shard_setup(1)")
    checks.check("an existing database with jobs can stay shard 0 only", e is not None and e.pgcode == "55000", e)
    again = value(s1, "SELECT queue_shard_setup(1)")
    checks.check("queue_shard_setup again with the same number goes on after the last id", again == one + 1,
                 (one, again))
    checks.check("queue_shard_setup checks its argument (22004, 22023)",
                 (sqlstate(s1, "SELECT queue_shard_setup(NULL)"),
                  sqlstate(s1, "SELECT queue_shard_setup(-1)"),
                  sqlstate(s1, "SELECT queue_shard_setup(32768)")) == ("22004", "22023", "22023"))
    # pg_dump keeps the shard number and the sequence's value, not its bounds
    shard1 = shards[1]
    dump = os.path.join(shard1.dir, "app.dump")
    subprocess.run([f"{replica.PGBIN}/pg_dump", "-Fc", "-f", dump, "-h", shard1.host, "-p", str(shard1.port),
                    "-U", "postgres", DB], check=True, capture_output=True, timeout=60)
    shard1.query("CREATE DATABASE app_restored")
    subprocess.run([f"{replica.PGBIN}/pg_restore", "-d", "app_restored", "-h", shard1.host,
                    "-p", str(shard1.port), "-U", "postgres", dump], check=True, capture_output=True, timeout=60)
    restored = shard1.connect("app_restored")
    after = value(restored, "SELECT queue_push('after restore', queue => 'ids')")
    checks.check("after a dump and restore: same shard number, ids go on in the shard's range",
                 value(restored, "SELECT queue_shard()") == 1 and after >= again and after >> SHARD_BITS == 1,
                 (again, after))
    value(restored, "SELECT queue_shard_setup(queue_shard())")
    checks.check("queue_shard_setup(queue_shard()) puts the bounds back after a restore",
                 value(restored, "SELECT min_value = 1::bigint << 48 AND max_value = (2::bigint << 48) - 1"
                       " FROM pg_sequences WHERE sequencename = 'queue_jobs_id_seq'"))
    restored.close()
    shard1.query("DROP DATABASE app_restored")
    for c in conns:
        rows(c, "SELECT queue_clear('ids')")


def check_mapping(checks, router, conns):
    names = [f"map{n}" for n in range(16)]
    for q in names:
        rows(router, "SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'm', 'queue', %s)))"
             " FROM generate_series(1, 5)", (q,))
    home = {q: value(router, "SELECT queue_shard_for(%s)", (q,)) for q in names}
    where = {}
    for n, c in enumerate(conns):
        for q, total in rows(c, "SELECT queue, total FROM queue_stats() WHERE queue LIKE 'map%%'"):
            where.setdefault(q, []).append((n, total))
    checks.check("every queue's jobs are all on the shard queue_shard_for names",
                 all(where.get(q) == [(home[q], 5)] for q in names), {q: (home[q], where.get(q)) for q in names})
    checks.check("the queues spread over both shards", set(home.values()) == {0, 1}, home)
    wrong = [(n, i) for n, c in enumerate(conns)
             for (i,) in rows(c, "SELECT id FROM queue_jobs WHERE queue LIKE 'map%%'") if i >> SHARD_BITS != n]
    checks.check("every job id names the shard that holds it", not wrong, wrong[:5])
    checks.check("a queue's routing key is its name up to ':' (the tenant's data and queues together)",
                 value(router, "SELECT queue_shard_for('t7:mail') = queue_shard_for_key('t7')"
                       " AND queue_shard_for('t7:billing') = queue_shard_for_key('t7')"
                       " AND queue_shard_for('t7') = queue_shard_for_key('t7')"))
    for c in conns:
        for q in names:
            rows(c, "SELECT queue_clear(%s)", (q,))


def check_transactions(checks, router):
    # the application finds its tenant's shard and pushes there, in its own transaction
    shard, connstr = rows(router, "SELECT s.shard, s.connstr FROM queue_shards() s"
                          " WHERE s.shard = queue_shard_for_key('t1')")[0]
    app = psycopg2.connect(connstr + " user=postgres")
    with app.cursor() as cur:
        cur.execute("INSERT INTO orders VALUES (1, 't1')")
        cur.execute("SELECT queue_push('receipt', '{\"order\": 1}', queue => 't1:mail')")
    app.rollback()
    checks.check("a push on the shard rolls back with the application's transaction",
                 value(router, "SELECT queue_pending('t1:mail')") == 0
                 and value(app, "SELECT count(*) FROM orders") == 0)
    app.rollback()
    with app.cursor() as cur:
        cur.execute("INSERT INTO orders VALUES (2, 't1')")
        cur.execute("SELECT queue_push('receipt', '{\"order\": 2}', queue => 't1:mail')")
        pushed = cur.fetchone()[0]
    app.commit()
    got = rows(router, "SELECT id, payload ->> 'order', token FROM queue_reserve('{t1:mail}')")
    checks.check("and commits with it: the router's claim gets the job",
                 len(got) == 1 and got[0][0] == pushed and got[0][1] == "2" and pushed >> SHARD_BITS == shard, got)
    if got:
        rows(router, "SELECT queue_delete(%s, %s)", (got[0][0], got[0][2]))
    app.close()
    router.autocommit = False
    rows(router, "SELECT queue_push('not transactional', queue => 't2:mail')")
    router.rollback()
    router.autocommit = True
    checks.check("a push through the router is committed on the shard at once (PL/Proxy's autocommit)",
                 value(router, "SELECT queue_pending('t2:mail')") == 1)
    rows(router, "SELECT queue_clear('t2:mail')")


def check_fencing(checks, router):
    q = queues_on(router, 1, 1, "fence")[0]
    job = value(router, "SELECT queue_push('fenced', queue => %s)", (q,))
    first = rows(router, "SELECT id, token FROM queue_reserve(%s, '1 second', 'old')", ([q],))
    time.sleep(1.3)
    second = rows(router, "SELECT id, token FROM queue_reserve(%s, '1 minute', 'new')", ([q],))
    ok = len(first) == 1 and len(second) == 1 and first[0][0] == second[0][0] == job
    old, new = (first[0][1], second[0][1]) if ok else (None, None)
    checks.check("through the router: a lapsed lease's job claimed again with a new token", ok and old != new,
                 (first, second))
    checks.check("the old token's extend, release, fail and delete are refused",
                 ok and rows(router, "SELECT queue_extend(%s, %s, '1 minute'), queue_release(%s, %s),"
                             " queue_fail(%s, %s), queue_delete(%s, %s)",
                             (job, old) * 4)[0] == (False, False, False, False))
    checks.check("the new token's delete is accepted", ok and value(router, "SELECT queue_delete(%s, %s)", (job, new)))


def check_sums(checks, router, conns):
    queues = queues_on(router, 0, 2, "sum") + queues_on(router, 1, 2, "sum")
    rows(router, "SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'x', 'queue', q,"
         " 'delay', CASE WHEN i %% 3 = 0 THEN 3600 ELSE 0 END, 'max_attempts', 1)))"
         " FROM unnest(%s::text[]) q, generate_series(1, 6) i", (queues,))
    claimed = rows(router, "SELECT id, token FROM queue_reserve(%s, max_jobs => 12)", (queues,))
    failed = rows(router, "SELECT queue_fail_many(%s, %s, 'broken')",
                  ([c[0] for c in claimed[::2]], [c[1] for c in claimed[::2]]))[0][0]
    checks.check("queue_fail_many through the router fails pairs of both shards, in input order",
                 failed == [c[0] for c in claimed[::2]] and {i >> SHARD_BITS for i in failed} == {0, 1}, failed)
    summed = {}
    for c in conns:
        for q, *counts in rows(c, "SELECT queue, pending, delayed, reserved, total FROM queue_stats()"):
            summed[q] = [a + b for a, b in zip(summed.get(q, [0, 0, 0, 0]), counts)]
    through = rows(router, "SELECT queue, pending, delayed, reserved, total FROM queue_stats()")
    checks.check("queue_stats through the router is the sum of the shards', ordered by queue",
                 [(q, list(n)) for q, *n in [(r[0], *r[1:]) for r in through]] == sorted(summed.items())
                 and {q for q, *_ in through} >= set(queues), (through, summed))
    checks.check("queue_pending() through the router is the sum of the shards'",
                 value(router, "SELECT queue_pending()") == sum(value(c, "SELECT queue_pending()") for c in conns))
    checks.check("queue_failed_count through the router is the sum",
                 value(router, "SELECT queue_failed_count()")
                 == sum(value(c, "SELECT queue_failed_count()") for c in conns) == len(failed))
    merged = sorted((r for c in conns for r in rows(c, "SELECT id, failed_at FROM queue_failed_rows(1000)")),
                    key=lambda r: (r[1], r[0]), reverse=True)
    checks.check("queue_failed_rows through the router: every shard's, newest first",
                 [r[0] for r in rows(router, "SELECT id FROM queue_failed_rows(1000)")] == [r[0] for r in merged])
    on1 = [i for i in failed if i >> SHARD_BITS == 1][0]
    checks.check("queue_failed_rows(id => ...) finds a shard 1 row through the router",
                 [r[0] for r in rows(router, "SELECT id FROM queue_failed_rows(id => %s)", (on1,))] == [on1])
    checks.check("queue_retry_failed(id) through the router requeues it on its shard",
                 value(router, "SELECT queue_retry_failed(%s)", (on1,)) == 1
                 and value(conns[1], "SELECT count(*) FROM queue_jobs WHERE id = %s", (on1,)) == 1)
    checks.check("queue_forget_failed(all_rows) through the router: every shard's rows",
                 value(router, "SELECT queue_forget_failed(all_rows => true)") == len(failed) - 1
                 and value(router, "SELECT queue_failed_count()") == 0)
    for q in queues:
        rows(router, "SELECT queue_clear(%s)", (q,))


def check_drain(checks, router, router_server, work_dir):
    queues = queues_on(router, 0, 2, "drain") + queues_on(router, 1, 2, "drain")
    queues = [queues[0], queues[2], queues[1], queues[3]]        # precedence alternating between shards
    ids = rows(router, "SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'd', 'queue', q)))"
               " FROM unnest(%s::text[]) q, generate_series(1, 250)", (queues,))[0][0]
    runs = os.path.join(work_dir, "runs.txt")
    handler = f'echo "$JOBQUEUE_JOB_ID" >> {runs}'
    env = {"PGHOST": router_server.host, "PGPORT": str(router_server.port), "PGDATABASE": DB, "PGUSER": "postgres"}
    workers = [tool.WorkProcess(os.path.join(work_dir, f"worker{n}.log"), queues, handler, env=env, lease="5s")
               for n in range(2)]
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline and value(router, "SELECT queue_pending()") > 0:
        time.sleep(0.3)
    while time.monotonic() < deadline and sum(r[0] for r in rows(
            router, "SELECT total FROM queue_stats() WHERE queue = ANY (%s)", (queues,))) > 0:
        time.sleep(0.3)
    statuses = [w.stop() for w in workers]
    with open(runs) as f:
        ran = [int(line) for line in f if line.strip()]
    checks.check(f"two `jobqueue work` through the router ran all {len(ids)} jobs of both shards exactly once",
                 sorted(ran) == sorted(ids) and {i >> SHARD_BITS for i in ran} == {0, 1},
                 f"{len(ran)} runs, {len(set(ran))} distinct of {len(ids)}")
    left = value(router, "SELECT coalesce(sum(total), 0) FROM queue_stats() WHERE queue = ANY (%s)", (queues,))
    noise = [line for w in workers for line in w.lines() if "stopped" not in line]
    checks.check("the workers completed every job, stopped cleanly and logged no error",
                 left == 0 and statuses == [0, 0] and not noise, (left, statuses, noise[:5]))


def check_tool(checks, router, router_server):
    dsn = router_server.dsn(DB)
    q = queues_on(router, 1, 1, "cli")[0]
    pushed = tool.run(["push", "hello", '{"n": 1}', "--queue", q], dsn=dsn)
    status = tool.run(["status", "--json"], dsn=dsn)
    checks.check("the jobqueue tool pushes and reads status through the router",
                 pushed.returncode == 0 and int(pushed.stdout.split()[-1]) >> SHARD_BITS == 1
                 and status.returncode == 0 and q in status.stdout, (pushed.stdout, pushed.stderr, status.stderr))
    rows(router, "SELECT queue_clear(%s)", (q,))


def check_stopped_shard(checks, router, shards, conns):
    q0 = queues_on(router, 0, 1, "down")[0]
    q1 = queues_on(router, 1, 1, "down")[0]
    for q in (q0, q1):
        rows(router, "SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'k', 'queue', %s)))"
             " FROM generate_series(1, 5)", (q,))
    conns[1].close()
    shards[1].stop("fast")
    # the router's open connection to the shard reports the shutdown; the next call cannot connect
    first = error_of(router, "SELECT queue_push('x', queue => %s)", (q1,))
    e = error_of(router, "SELECT queue_push('x', queue => %s)", (q1,))
    checks.check("with shard 1 stopped, a push to its queue fails (its open connection: 57P01)",
                 first is not None and first.pgcode == "57P01", first)
    checks.check("and then with an error naming the shard's server",
                 e is not None and shards[1].host in str(e) and str(shards[1].port) in str(e), e)
    checks.check("while the other shard's queues push, count and claim",
                 value(router, "SELECT queue_push('x', queue => %s)", (q0,)) is not None
                 and value(router, "SELECT queue_pending(%s)", (q0,)) == 6
                 and len(rows(router, "SELECT id FROM queue_reserve(%s, max_jobs => 2)", ([q0],))) == 2)
    got = rows(router, "SELECT id FROM queue_reserve(%s, max_jobs => 10)", ([q1, q0],))
    checks.check("a claim over both shards' queues gets the live shard's jobs (the stopped one skipped)",
                 len(got) == 4 and all(i >> SHARD_BITS == 0 for (i,) in got), got)
    e = error_of(router, "SELECT * FROM queue_stats()")
    checks.check("a call over every shard fails, naming the stopped one",
                 e is not None and shards[1].host in str(e), e)
    shards[1].start()
    conns[1] = shards[1].connect(DB)
    checks.check("after the restart nothing of shard 1 was lost and the router reaches it again",
                 value(conns[1], "SELECT count(*) FROM queue_jobs WHERE queue = %s", (q1,)) == 5
                 and value(router, "SELECT queue_pending(%s)", (q1,)) == 5
                 and len(rows(router, "SELECT id FROM queue_reserve(%s, max_jobs => 10)", ([q1],))) == 5)
    for q in (q0, q1):
        rows(router, "SELECT queue_clear(%s)", (q,))


# Calls that one server refuses; through the router each must fail with the same SQLSTATE.
BAD_CALLS = [
    "SELECT queue_push(NULL)",
    "SELECT queue_push('x', queue => '')",
    "SELECT queue_push('x', queue => repeat('q', 65))",
    "SELECT queue_push('x', delay => '-1 second')",
    "SELECT queue_push('x', max_attempts => 0)",
    "SELECT queue_push_many(NULL)",
    "SELECT queue_push_many('{}')",
    "SELECT queue_push_many('[{\"nme\": \"x\"}]')",
    "SELECT queue_push_many('[1]')",
    "SELECT * FROM queue_reserve('{}')",
    "SELECT * FROM queue_reserve('{a,NULL}')",
    "SELECT * FROM queue_reserve('{a,b}', max_jobs => 0)",
    "SELECT * FROM queue_reserve('{a,b}', wait => '2 hours')",
    "SELECT * FROM queue_reserve('{a,b}', wait => '-1 second')",
    "SELECT * FROM queue_reserve('{a,b}', lease => '0 seconds')",
    "SELECT * FROM queue_reserve(ARRAY['a', repeat('q', 65)])",
    "SELECT queue_delete(NULL, 1)",
    "SELECT queue_extend(1, 1, '0 seconds')",
    "SELECT queue_delete_many('{1,2}', '{1}')",
    "SELECT queue_delete_many(NULL, NULL)",
    "SELECT queue_release_many('{1,NULL}', '{1,2}')",
    "SELECT queue_fail_many('{1}', '{}')",
    "SELECT queue_pending('')",
    "SELECT * FROM queue_failed_rows(0)",
    "SELECT queue_forget_failed()",
    "SELECT queue_forget_failed(id => 1, all_rows => true)",
    "SELECT queue_retry_failed(max_attempts => 0)",
    "SELECT queue_pause(NULL)",
    "SELECT queue_schedule_set('s', 'not cron', 'j')",
]


def check_bad_input(checks, router, conns):
    differ = []
    for sql in BAD_CALLS:
        alone, routed = sqlstate(conns[0], sql), sqlstate(router, sql)
        if alone is None or alone != routed:
            differ.append((sql, alone, routed))
    checks.check(f"{len(BAD_CALLS)} refused calls get one server's SQLSTATE through the router", not differ, differ)


def main():
    checks = Checks("shards")
    router_server, shards = setup()
    router = router_server.connect(DB)
    conns = [s.connect(DB) for s in shards]
    parts = [
        lambda: check_ids(checks, router, shards, conns),
        lambda: check_mapping(checks, router, conns),
        lambda: check_transactions(checks, router),
        lambda: check_fencing(checks, router),
        lambda: check_sums(checks, router, conns),
        lambda: check_bad_input(checks, router, conns),
        lambda: check_tool(checks, router, router_server),
        lambda: check_drain(checks, router, router_server, replica.root()),
        lambda: check_stopped_shard(checks, router, shards, conns),
    ]
    for part in parts:
        try:
            part()
        except Exception as e:  # noqa: BLE001 - one broken part must not hide the others
            checks.check(f"part {part.__code__.co_names[0]} ran to its end", False, repr(e))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
