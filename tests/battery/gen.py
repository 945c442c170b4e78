#!/usr/bin/env python3
"""Writes the bad-input battery for tests/battery/run.sh as SQL, one call a line.

Usage: gen.py FUNCTIONS_TSV SCHEMA MODE FIRST_N [COUNT] > calls.sql
  FUNCTIONS_TSV  the extension's functions, read from pg_proc by run.sh:
                 proname <TAB> arg names (comma list) <TAB> arg types (comma
                 list, format_type) <TAB> number of args with defaults <TAB>
                 returns a set (t/f)
  SCHEMA         the extension's schema (quoted identifier)
  MODE           edge   - every argument of every function given each value of
                          its pool (NULL, empty, huge, negative, ...), the
                          other arguments given plausible values
                 random - COUNT calls mixing good and bad values at random
                          (random.seed(42): the same calls every run)
  FIRST_N        number of the first call (calls are numbered globally)

Each line is   SELECT battery.try(N, 'tag', 'function', pre, 'expr', rollback);
battery.try (run.sh) evaluates expr, catches any error and logs its SQLSTATE.

Scope rule (the battery must never change the seeded backlog):
  a call that would act on a queue not named battery_* (queue NULL means
  'default'), on every failed row (retry_failed(NULL), forget before/all),
  or on privileges (grant/revoke) runs with rollback = true: battery.try
  rolls its subtransaction back after it succeeded.  Ids and tokens come
  from pools of values no seeded job has (negative, 0, 2^31-1, 2^63-1) or
  from sub-selects over battery_* rows only.  A function this script does
  not know always runs with rollback = true.
"""
import random
import sys

READ_ONLY = {"queue_pending", "queue_stats", "queue_failed_count",
             "queue_failed_rows", "queue_list", "queue_cron_next", "queue_schedule_list"}
QUEUE_SCOPED = {"queue_push", "queue_clear", "queue_pause", "queue_resume",
                "queue_set_default_lease", "queue_set_notify"}
# grants change privileges; schedules and the tick act on every schedule
ALWAYS_ROLLBACK = {"queue_grant", "queue_revoke", "queue_schedule_set",
                   "queue_schedule_remove", "queue_tick"}
KNOWN = READ_ONLY | QUEUE_SCOPED | ALWAYS_ROLLBACK | {
    "queue_push_many", "queue_reserve", "queue_delete", "queue_delete_many",
    "queue_release", "queue_release_many", "queue_fail", "queue_fail_many",
    "queue_extend", "queue_retry_failed", "queue_forget_failed", "queue_cancel"}


def q(s):
    """SQL string literal (standard_conforming_strings on)."""
    return "'" + s.replace("'", "''") + "'"


class V:
    """A value: its SQL expression, and whether it keeps the call inside battery_* queues."""

    def __init__(self, sql, bat=False, good=False):
        self.sql = sql
        self.bat = bat      # a queue / queue array / jobs array naming battery_* queues only
        self.good = good    # plausible value (used for the other arguments)


def pool(values):
    return [v if isinstance(v, V) else V(v) for v in values]


S = "@S@"  # replaced by the schema

# sub-selects over battery_* rows (never a seeded row)
BAT = "queue LIKE 'battery\\_%'"
# each falls back to a value no row has (-1, '{}'), never to NULL: a NULL id
# would mean "every failed row" to queue_retry_failed
HELD_ID = f"coalesce((SELECT id FROM {S}.queue_jobs WHERE {BAT} AND token IS NOT NULL ORDER BY id LIMIT 1), -1)"
HELD_TOKEN = f"coalesce((SELECT token FROM {S}.queue_jobs WHERE {BAT} AND token IS NOT NULL ORDER BY id LIMIT 1), -1)"
LAST_HELD_ID = f"coalesce((SELECT id FROM {S}.queue_jobs WHERE {BAT} AND token IS NOT NULL ORDER BY id DESC LIMIT 1), -1)"
LAST_HELD_TOKEN = f"coalesce((SELECT token FROM {S}.queue_jobs WHERE {BAT} AND token IS NOT NULL ORDER BY id DESC LIMIT 1), -1)"
ANY_ID = f"coalesce((SELECT id FROM {S}.queue_jobs WHERE {BAT} ORDER BY id DESC LIMIT 1), -1)"
FAILED_ID = f"coalesce((SELECT id FROM {S}.queue_failed_jobs WHERE {BAT} ORDER BY id DESC LIMIT 1), -1)"
HELD_IDS = (f"coalesce((SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM {S}.queue_jobs"
            f" WHERE {BAT} AND token IS NOT NULL ORDER BY id LIMIT 5) s), '{{}}')")
HELD_TOKENS = (f"coalesce((SELECT array_agg(token ORDER BY id) FROM (SELECT id, token FROM {S}.queue_jobs"
               f" WHERE {BAT} AND token IS NOT NULL ORDER BY id LIMIT 5) s), '{{}}')")

BIG_INTS = ["-1", "0", "1", "2147483647", "-2147483648", "10000", "10001",
            "1000000", "1000001", "NULL"]
ID_VALUES = ["-1", "0", "2147483647", "-2147483648", "9223372036854775807",
             "(-9223372036854775807 - 1)", "NULL"]

# name-like text that may go anywhere (read-only calls, names of jobs, keys)
TEXT_ANY = pool([
    "NULL", "''", "repeat('x', 10000)", "repeat('y', 200)", "repeat('y', 201)",
    "repeat('é', 200)", "repeat('é', 201)", "repeat('\U0001F600', 64)",
    q("x'; DROP TABLE queue_jobs; --"), q("$$"), q("$q$ SELECT 1 $q$"),
    q("back\\slash\\"), q('quo"te'), q("it's"), q("'"), q("%_*?"),
    "E'tab\\there\\nnewline'", "E'\\\\x00'", "E'\\x00'", "chr(0)",
    "convert_from('\\x00'::bytea, 'UTF8')", "convert_from('\\xff'::bytea, 'UTF8')",
    "convert_from('\\xc328'::bytea, 'UTF8')", "encode('\\x00ff'::bytea, 'escape')",
    "U&'\\0000'", "' '", q("default"), q("seed_alpha"),
])
# queue names for calls that change something: battery_* only, or invalid
QUEUE_MUT = pool([
    V(q("battery_q1"), bat=True, good=True), V(q("battery_q2"), bat=True, good=True),
    V(q("battery_" + "q" * 56), bat=True),                # 64 characters
    V(q("battery_" + "é" * 56), bat=True),                # 64 characters, 120 bytes
    V(q("battery_" + "q" * 57), bat=True),                # 65: too long
    V(q("battery_x'; DROP TABLE queue_jobs; --"), bat=True),
    V(q("battery_$$"), bat=True), V(q('battery_"quoted"'), bat=True),
    V(q("battery_back\\slash"), bat=True), V(q("battery_it's"), bat=True),
    V(q("battery_ "), bat=True),
    "NULL", "''", "repeat('x', 10000)", "E'\\x00'", "convert_from('\\xff'::bytea, 'UTF8')",
    "chr(0)",
])
# read-only queue arguments: anything, seeded queues included
QUEUE_RO = pool([V(q("battery_q1"), good=True), q("seed_alpha")]) + TEXT_ANY

QUEUE_ARRAYS = pool([
    V("'{battery_q1}'", bat=True, good=True), V("'{battery_q1,battery_q2}'", bat=True, good=True),
    V("ARRAY['battery_q2', 'battery_" + "q" * 56 + "']", bat=True),
    V("'{battery_q1,NULL}'", bat=True), V("'{NULL}'::text[]", bat=True), V("'{}'::text[]", bat=True),
    V("'{\"\"}'::text[]", bat=True), V("ARRAY['battery_q1', repeat('x', 10000)]", bat=True),
    V("'{{battery_q1},{battery_q2}}'::text[]", bat=True),
    V("'[5:6]={battery_q1,battery_q2}'::text[]", bat=True),
    V("(SELECT array_agg('battery_q' || g) FROM generate_series(1, 10001) g)", bat=True),
    V("ARRAY['battery_x''; DROP TABLE queue_jobs; --']", bat=True),
    "NULL", "'{default}'", "ARRAY[E'\\x00']",
])
JSONB = pool([
    V("'{}'", good=True), V("'{\"a\": [1, 2, {\"b\": null}]}'", good=True), "NULL", "'[]'", "'null'",
    "'\"s\"'", "'1e1000'", "'-0'", "'{\"a\": \"\\u0000\"}'", "'{\"a\": \"\\ud800\"}'",
    "jsonb_build_object('x', repeat('a', 1048560))",          # just under 1 MiB as text
    "jsonb_build_object('x', repeat('a', 1048577))",          # over
    "(repeat('[', 2000) || repeat(']', 2000))::jsonb",
    "(SELECT jsonb_agg(1e10000::numeric) FROM generate_series(1, 120))",  # small binary, 1.2 MB text
    q('{"x": "x\'; DROP TABLE queue_jobs; --"}'),
])
INTERVALS = pool([
    V("'0'", good=True), V("'1 hour'", good=True), V("'30 seconds'", good=True), "NULL",
    "'-1 second'", "'-1 microsecond'", "'1 second'", "'0.999999 second'", "'1 day'",
    "'1 day 1 microsecond'", "'24 hours'", "'1 mon'", "'-1 mon 40 days'", "'1000000 years'",
    "'-1000000 years'", "'178000000 years'", "'-178000000 years'", "'1 microsecond'",
])
LEASES = INTERVALS
# queue_reserve's wait really waits when nothing is claimable: only short
# ones, so that every call of the pass ends in seconds (1.2)
WAITS = pool([
    V("'0'", good=True), V("'0.2 second'", good=True), "NULL", "'-1 second'",
    "'-1 microsecond'", "'1 microsecond'", "'1000000 years'", "'-178000000 years'",
])
INTS = pool([V("0", good=True), V("3", good=True)] + BIG_INTS)
TIMESTAMPS = pool([
    "NULL", V("clock_timestamp() + interval '1 day'", good=True), "'infinity'", "'-infinity'",
    "clock_timestamp() - interval '1 hour'", "clock_timestamp()", "'294276-12-31 23:59:59+00'",
    "'4713-01-01 00:00:00+00 BC'", "'epoch'",
])
BOOLS = pool([V("false", good=True), V("true", good=True), "NULL"])
INT8_ARRAYS = pool([
    V(HELD_IDS, good=True), "NULL", "'{}'::bigint[]", "'{1,2}'::bigint[]", "'{1}'::bigint[]",
    "'{NULL}'::bigint[]", "'{-1,NULL}'::bigint[]", "'{{1,2},{3,4}}'::bigint[]",
    "'[0:1]={-1,-2}'::bigint[]", "array_fill(-1::bigint, ARRAY[10001])",
    "array_fill(-1::bigint, ARRAY[10000])", "'{9223372036854775807,-9223372036854775808}'::bigint[]",
    "'{0,0,0}'::bigint[]",
])
TOKEN_ARRAYS = pool([V(HELD_TOKENS, good=True)]) + INT8_ARRAYS[1:]
IDS = pool([V(HELD_ID, good=True), V(ANY_ID, good=True), V(LAST_HELD_ID, good=True)] + ID_VALUES)
TOKENS = pool([V(HELD_TOKEN, good=True), V(LAST_HELD_TOKEN, good=True)] + ID_VALUES)
FAILED_IDS = pool([V(FAILED_ID, good=True)] + ID_VALUES)
ROLES = pool([V("'postgres'", good=True), "'pg_monitor'", "'no_such_role_battery'", "NULL", "''",
              "'PUBLIC'", "'public'", q("x'; DROP TABLE queue_jobs; --"), q('"postgres"'),
              "repeat('r', 10000)"])
TIERS = pool([V("'producer'", good=True), V("'admin'", good=True), "'worker'", "'owner'",
              "'ADMIN'", "''", "NULL", q("admin'; --"), "repeat('t', 10000)"])
ERRORS = pool([V("''", good=True), V("'boom'", good=True), "NULL", "repeat('e', 70000)",
               "repeat('é', 40000)", "repeat('\U0001F600', 20000)", "repeat('e', 59999)",
               q("x'; DROP TABLE queue_jobs; --")])
WORKERS = pool([V("'w1'", good=True), "NULL", "''", "repeat('w', 10000)", "repeat('é', 201)",
                "repeat('\U0001F600', 300)", q("w'; DROP TABLE queue_jobs; --")])


def jobs_value(rng, n=None):
    """A JSON jobs array (as SQL), and whether every job names a battery_* queue."""
    fields_bad = {
        "name": ['""', '"' + "n" * 201 + '"', "1", "null", "[]", '"ok"'],
        "payload": ['{"a":1}', "null", "[1]", '"s"', "1e400"],
        "queue": ['"battery_q1"', '""', '"battery_' + "q" * 57 + '"', "7", "null"],
        "delay": ['"5 minutes"', '"-1 second"', "-1", "1e300", '"1000000 years"', "3.5",
                  '"P1Y"', '"garbage"', '"' + "9" * 300 + ' seconds"', '"178000000 years"'],
        "priority": ["1", "2147483648", "-2147483649", "1.5", '"1"', "1e2"],
        "unique_key": ['"battery_k1"', '""', '"' + "k" * 201 + '"', "1", '"seed_key_1"'],
        "max_attempts": ["1", "0", "1000001", "3.0", "-1", '"3"'],
        "deadline": ['"2999-01-01 00:00:00+00"', '"infinity"', '"-infinity"', '"epoch"',
                     '"now"', '"garbage"', '"' + "2" * 300 + '"', '"4713-01-01 BC"',
                     '"1999-01-01 12:00 Mars/Olympus"'],
        "bogus": ["1"],
    }
    if n is None:
        n = rng.choice([0, 1, 1, 2, 3, 5])
    elems = []
    bat = True
    for _ in range(n):
        if rng.random() < 0.08:
            elems.append(rng.choice(["1", '"job"', "null", "[]", "{}"]))
            continue
        obj = {"name": '"job"', "queue": '"battery_q2"'}
        for f, vals in fields_bad.items():
            if rng.random() < 0.25:
                obj[f] = rng.choice(vals)
        if rng.random() < 0.1:
            del obj["queue"]
        if not obj.get("queue", "null").startswith('"battery_'):
            bat = False         # no queue, null, or not a battery_* name: not provably scoped
        elems.append("{" + ", ".join(f'"{k}": {v}' for k, v in obj.items()) + "}")
    text = "[" + ", ".join(elems) + "]"
    return V(q(text) + "::jsonb", bat=bat, good=True)


def jobs_fixed():
    """Hand-picked jobs arrays for the edge pass."""
    one = '{"name": "job", "queue": "battery_q2"}'
    vals = [
        V(q("[" + one + "]") + "::jsonb", bat=True, good=True),
        V("'[]'::jsonb", bat=True), V("'{}'::jsonb", bat=True), V("'\"x\"'::jsonb", bat=True),
        V("'null'::jsonb", bat=True), V("'[[]]'::jsonb", bat=True), V("'[null]'::jsonb", bat=True),
        V("'[1]'::jsonb", bat=True), V(q('[{"queue": "battery_q2"}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "nope": 1}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "delay": -1}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "delay": "1000000 years"}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "delay": 1e308}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "deadline": "-infinity"}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "deadline": "infinity"}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "priority": 2147483648}]') + "::jsonb", bat=True),
        V(q('[{"name": "job", "queue": "battery_q2", "unique_key": "battery_k2"},'
            ' {"name": "job", "queue": "battery_q2", "unique_key": "battery_k2"}]') + "::jsonb", bat=True),
        V("(SELECT jsonb_agg(jsonb_build_object('name', 'j', 'queue', 'battery_q3')) FROM generate_series(1, 10001))",
          bat=True),
        V("(SELECT jsonb_agg(jsonb_build_object('name', 'j', 'queue', 'battery_bulk')) FROM generate_series(1, 10000))",
          bat=True),
        V("jsonb_build_array(jsonb_build_object('name', 'j', 'queue', 'battery_q2', 'payload',"
          " jsonb_build_object('x', repeat('a', 1048577))))", bat=True),
        "NULL", V(q('[{"name": "job"}]') + "::jsonb"),  # no queue: 'default' (rolled back)
    ]
    return pool(vals)


CRONS = pool([
    V("'* * * * *'", good=True), V("'*/5 9-17 * * mon-fri'", good=True), "NULL", "''", "'   '",
    "'@hourly'", "'@every 10 minutes'", "'@every 0 seconds'", "'@every -5 minutes'", "'@every 1 mon'",
    "'@every 2147483647 days'", "'@every'", "'@reboot'", "'0 0 30 2 *'", "'0 0 29 2 *'",
    "'60 * * * *'", "'* 24 * * *'", "'* * 0 * *'", "'* * * 13 *'", "'* * * * 8'", "'* * * * 7'",
    "'5-1 * * * *'", "'*/0 * * * *'", "'*/60 * * * *'", "'1/1000000000000 * * * *'",
    "'99999999999999999999 * * * *'", "'* * * *'", "'* * * * * *'", "'jan * * * *'",
    "'* * * ja *'", "'* * * JAN-DEC SUN-SAT'", "'-1 * * * *'", "'L W # ? *'",
    "repeat('1,', 5000) || '1 * * * *'", "repeat('*', 10000)", q("* * * * *'; DROP TABLE queue_jobs; --"),
    "E'*\t*\t*\t*\t*'", "convert_from('\xff'::bytea, 'UTF8')",
])
TIME_ZONES = pool([
    V("'UTC'", good=True), V("'Europe/Berlin'", good=True), "'Pacific/Apia'", "'America/St_Johns'",
    "NULL", "''", "'Mars/Olympus'", "'+25:00'", "'EST5EDT'", "'posixrules'", "'../../../etc/passwd'",
    "'/etc/localtime'", "'Etc/GMT+14'", "repeat('x', 10000)", "'localtime'",
])


def arg_pool(fn, argname, argtype, rng=None):
    """The pool of values for one argument."""
    if argtype == "text" and argname == "cron":
        return CRONS
    if argtype == "text" and argname == "time_zone":
        return TIME_ZONES
    if argtype == "integer" and argname == "count":
        return pool([V("1", good=True), V("5", good=True), "1000", "1001"] + BIG_INTS)
    if argtype == "text":
        if argname == "queue":
            return QUEUE_RO if fn in READ_ONLY else QUEUE_MUT
        if argname == "role":
            return ROLES
        if argname == "tier":
            return TIERS
        if argname == "error":
            return ERRORS
        if argname == "worker":
            return WORKERS
        if argname == "name":
            return pool([V("'job'", good=True)]) + TEXT_ANY
        if argname == "unique_key":
            return pool([V("NULL", good=True), V("'battery_k1'", good=True), q("seed_key_1")]) + TEXT_ANY
        return pool([V("'x'", good=True)]) + TEXT_ANY
    if argtype == "text[]":
        return QUEUE_ARRAYS
    if argtype == "jsonb":
        if argname == "jobs":
            return jobs_fixed()
        return JSONB
    if argtype == "interval":
        if argname == "wait":
            return WAITS
        return LEASES if argname == "lease" else INTERVALS
    if argtype == "integer":
        if argname == "max_jobs":
            return pool([V("1", good=True), V("5", good=True)] + BIG_INTS)
        if argname == "max_attempts":
            return pool([V("3", good=True), V("1", good=True)] + BIG_INTS)
        if argname == "max_rows":
            return pool([V("50", good=True)] + BIG_INTS)
        return INTS
    if argtype == "bigint":
        if argname == "token":
            return TOKENS
        if argname == "id" and fn in ("queue_retry_failed", "queue_forget_failed", "queue_failed_rows"):
            return FAILED_IDS
        return IDS
    if argtype == "bigint[]":
        return TOKEN_ARRAYS if argname == "tokens" else INT8_ARRAYS
    if argtype == "boolean":
        return BOOLS
    if argtype == "timestamp with time zone":
        return TIMESTAMPS
    return pool([V("NULL", good=True)])


def needs_rollback(fn, names, values):
    """True when the call might act outside battery_* queues (see the module doc)."""
    if fn not in KNOWN or fn in ALWAYS_ROLLBACK:
        return True
    if fn in READ_ONLY:
        return False
    by = dict(zip(names, values))
    if fn in QUEUE_SCOPED or fn == "queue_reserve" or fn == "queue_push_many":
        key = {"queue_reserve": "queues", "queue_push_many": "jobs"}.get(fn, "queue")
        v = by.get(key)
        if v is None or not v.bat:       # omitted: the default queue
            return True
    if fn == "queue_retry_failed" and (by.get("id") is None or by["id"].sql == "NULL"):
        return True
    if fn == "queue_forget_failed":
        if by.get("before") is not None and by["before"].sql != "NULL":
            return True
        if by.get("all_rows") is not None and by["all_rows"].sql != "false":
            return True
    return False


SETOF = set()      # functions returning sets (main() fills it from the list)


def emit(n, tag, fn, names, values, schema, pre=None):
    args = ", ".join(v.sql for v in values)
    expr = f"{schema}.{fn}({args})"
    if fn in SETOF:
        expr = f"(SELECT count(*) FROM {expr})"
    expr = expr.replace(S, schema)
    rb = needs_rollback(fn, names, values)
    pre_sql = "NULL" if pre is None else q(pre)
    return (f"SELECT battery.try({n}, {q(tag)}, {q(fn)}, {pre_sql}, {q(expr)}, "
            f"{'true' if rb else 'false'});")


# Hand-written cases: (tag, function, expr with @S@, pre, rollback, expected SQLSTATE
# or None, expected result or None).  'wake_many' cases make one call wake (or
# complete) hundreds of queues (or jobs), the sizes where per-call lists outgrow
# a memory block; run.sh can skip a tag with JQ_BATTERY_SKIP.
FNAMES = set()     # the functions of the installed version (main() fills it)
BIG50 = "jsonb_build_object('x', repeat('a', 50 * 1024 * 1024))"
WQ = "(SELECT array_agg('battery_w' || g) FROM generate_series(1, 300) g)"
SPECIAL = [
    ("payload50mb", "queue_push", f"@S@.queue_push('big', {BIG50}, 'battery_big')", None, False, "54000", None),
    ("payload50mb", "queue_push_many",
     f"@S@.queue_push_many(jsonb_build_array(jsonb_build_object('name', 'big', 'queue', 'battery_big', 'payload', {BIG50})))",
     None, False, "54000", None),
    ("payload50mb", "queue_push", f"@S@.queue_push('big', {BIG50}, 'battery_big') > 0",
     "SET LOCAL jobqueue.max_payload_bytes = '100MB'", False, "ok", "true"),
    ("payload50mb", "queue_reserve",
     "(SELECT bool_and(octet_length(payload->>'x') = 50 * 1024 * 1024 AND @S@.queue_delete(id, token))"
     " FROM @S@.queue_reserve('{battery_big}'))", None, False, "ok", "true"),
    ("payload1mib", "queue_push", "@S@.queue_push('p', jsonb_build_object('x', repeat('a', 1048567)), 'battery_q1') > 0",
     None, False, "ok", "true"),
    ("payload1mib", "queue_push", "@S@.queue_push('p', jsonb_build_object('x', repeat('a', 1048568)), 'battery_q1')",
     None, False, "54000", None),
    ("payload1mib", "queue_push", "@S@.queue_push('p', (SELECT jsonb_agg(1e10000::numeric) FROM generate_series(1, 120)), 'battery_q1')",
     None, False, "54000", None),
    ("nul", "queue_push", "@S@.queue_push(E'\\x00', '{}', 'battery_q1')", None, False, "22021", None),
    ("nul", "queue_push", "@S@.queue_push(chr(0), '{}', 'battery_q1')", None, False, "54000", None),
    ("nul", "queue_push", "@S@.queue_push(convert_from('\\x6100'::bytea, 'UTF8'), '{}', 'battery_q1')", None, False, "22021", None),
    ("nul", "queue_push", "@S@.queue_push('n', '{\"a\": \"\\u0000\"}'::jsonb, 'battery_q1')", None, False, "22P05", None),
    ("nul", "queue_push", "@S@.queue_push(encode('\\x00'::bytea, 'escape'), '{}', 'battery_q1') > 0", None, False, "ok", "true"),
    ("utf8", "queue_push", "@S@.queue_push(convert_from('\\xff'::bytea, 'UTF8'), '{}', 'battery_q1')", None, False, "22021", None),
    ("utf8", "queue_push", "@S@.queue_push(convert_from('\\xc328'::bytea, 'UTF8'), '{}', 'battery_q1')", None, False, "22021", None),
    ("utf8", "queue_push", "@S@.queue_push(convert_from('\\xeda080'::bytea, 'UTF8'), '{}', 'battery_q1')", None, False, "22021", None),
    ("utf8", "queue_push", "@S@.queue_push('n', convert_from('\\x7b2261223a2022ff227d'::bytea, 'UTF8')::jsonb, 'battery_q1')",
     None, False, "22021", None),
    ("injection", "queue_push", "@S@.queue_push('x''; DROP TABLE queue_jobs; --', '{}', 'battery_x''; DROP TABLE queue_jobs; --',"
     " unique_key => '$$; DROP TABLE queue_jobs; $$') > 0", None, False, "ok", "true"),
    ("injection", "queue_pending", "@S@.queue_pending('battery_x''; DROP TABLE queue_jobs; --') >= 1", None, False, "ok", "true"),
    ("injection", "queue_grant", "@S@.queue_grant('x''; DROP TABLE queue_jobs; --', 'admin')", None, True, "42704", None),
    ("injection", "queue_grant", "@S@.queue_grant('postgres', 'admin''; DROP TABLE queue_jobs; --')", None, True, "22023", None),
    ("delay", "queue_push", "@S@.queue_push('d', '{}', 'battery_q1', '1000000 years')", None, False, "22008", None),
    ("delay", "queue_push", "@S@.queue_push('d', '{}', 'battery_q1', '-1 microsecond')", None, False, "22023", None),
    ("clock", "queue_pending", "@S@.queue_pending()", "SET LOCAL jobqueue.clock_offset = 'garbage'", False, "22023", None),
    ("clock", "queue_push", "@S@.queue_push('c', '{}', 'battery_q1')", "SET LOCAL jobqueue.clock_offset = '1000000 years'",
     False, "22008", None),
    ("clock", "queue_reserve", "(SELECT count(*) FROM @S@.queue_reserve('{battery_q1}'))",
     "SET LOCAL jobqueue.clock_offset = '-1000000 years'", False, "22008", None),
    ("limits", "queue_push_many",
     "@S@.queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'j', 'queue', 'battery_q3')) FROM generate_series(1, 10001)))",
     None, False, "54000", None),
    ("limits", "queue_delete_many", "@S@.queue_delete_many(array_fill(1::bigint, ARRAY[10001]), array_fill(1::bigint, ARRAY[10001]))",
     None, False, "54000", None),
    ("limits", "queue_delete_many", "@S@.queue_delete_many('{1,2}', '{1}')", None, False, "22023", None),
    ("limits", "queue_delete_many", "@S@.queue_delete_many('{1,NULL}', '{1,2}')", None, False, "22023", None),
    ("limits", "queue_delete_many", "@S@.queue_delete_many(NULL, '{1}')", None, False, "22004", None),
    ("limits", "queue_reserve", "(SELECT count(*) FROM @S@.queue_reserve('{}'))", None, False, "22023", None),
    ("limits", "queue_reserve", "(SELECT count(*) FROM @S@.queue_reserve('{battery_q1,NULL}'))", None, False, "22023", None),
    ("limits", "queue_reserve", "(SELECT count(*) FROM @S@.queue_reserve('{battery_q1}', '0'))", None, False, "22023", None),
    ("limits", "queue_reserve", "(SELECT count(*) FROM @S@.queue_reserve('{battery_q1}', max_jobs => 10001))", None, False, "22023", None),
    ("limits", "queue_forget_failed", "@S@.queue_forget_failed()", None, False, "22023", None),
    ("limits", "queue_forget_failed", "@S@.queue_forget_failed(-1, 'infinity')", None, True, "22023", None),
    # the same id twice, the second time with token 0 (an id given twice completes once)
    ("semantic", "queue_push", "@S@.queue_push('dup', '{}', 'battery_dup') > 0", None, False, "ok", "true"),
    ("semantic", "queue_delete_many",
     "(SELECT @S@.queue_delete_many(ARRAY[id, id], ARRAY[token, 0]) = ARRAY[id] FROM @S@.queue_reserve('{battery_dup}'))",
     None, False, "ok", "true"),
    ("bulk", "queue_push_many",
     "cardinality(@S@.queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'j', 'queue', 'battery_dm')) FROM generate_series(1, 2000))))",
     None, False, "ok", "2000"),
    ("bulk", "queue_delete_many",
     "(SELECT cardinality(@S@.queue_delete_many(array_agg(id), array_agg(token)))"
     " FROM @S@.queue_reserve('{battery_dm}', '1 hour', 'w', 2000))", None, False, "ok", "2000"),
    ("wake_many", "queue_push_many",
     "cardinality(@S@.queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'w', 'queue', 'battery_w' || g)) FROM generate_series(1, 300) g)))",
     None, False, "ok", "300"),
    ("wake_many", "queue_release_many",
     f"(SELECT cardinality(@S@.queue_release_many(array_agg(id), array_agg(token), '0')) FROM @S@.queue_reserve({WQ}, '1 hour', 'w', 300))",
     None, False, "ok", "300"),
    ("wake_many", "queue_fail_many",
     f"(SELECT cardinality(@S@.queue_fail_many(array_agg(id), array_agg(token), 'f')) FROM @S@.queue_reserve({WQ}, '1 hour', 'w', 300))",
     None, False, "ok", "300"),
    ("wake_many", "queue_retry_failed", "@S@.queue_retry_failed() >= 300", None, True, "ok", "true"),
    # 1.2 schedules ('!ok': any error with a proper SQLSTATE)
    ("cron", "queue_cron_next", "(SELECT count(*) FROM @S@.queue_cron_next('@every 2147483647 days', now()))",
     None, False, "!ok", None),
    ("cron", "queue_cron_next", "(SELECT count(*) FROM @S@.queue_cron_next('@every 106751991 days', now()))",
     None, False, "!ok", None),
    ("cron", "queue_cron_next", "(SELECT bool_and(x > now()) FROM @S@.queue_cron_next('@every 7 seconds', now(), 'UTC', 1000) x)",
     None, False, "ok", "true"),
    ("cron", "queue_schedule_set", "@S@.queue_schedule_set('battery_s1', '* * * * *', 'battery-cron-job', '{}', 'battery_cron')",
     None, False, "ok", None),
    # ten minutes on, battery_s1 (the only schedule) is due once: one job
    ("cron", "queue_tick", "(SELECT count(*) FROM @S@.queue_tick())", "SET LOCAL jobqueue.clock_offset = '10 minutes'",
     False, "ok", "1"),
    ("cron", "queue_schedule_remove", "@S@.queue_schedule_remove('battery_s1')", None, False, "ok", None),
]


def emit_special(n, case, schema, skip):
    tag, fn, expr, pre, rb, expect_state, expect_result = case
    expr = expr.replace(S, schema)
    lines = []
    if expect_state is not None:
        lines.append(f"INSERT INTO battery.expect VALUES ({n}, {q(expect_state)}, "
                     f"{'NULL' if expect_result is None else q(expect_result)});")
    pre_sql = "NULL" if pre is None else q(pre)
    call = (f"SELECT battery.try({n}, {q(tag)}, {q(fn)}, {pre_sql}, {q(expr)}, "
            f"{'true' if rb else 'false'});")
    if tag in skip or fn not in FNAMES:     # a function this version does not have
        call = f"SELECT battery.skip({n}, {q(tag)}, {q(fn)}, {q(expr)});"
    lines.append(call)
    return [" ".join(lines)]         # one call a line: run.sh restarts after a crash by line


def main():
    tsv, schema, mode, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 and mode == "random" else 3000
    funcs = []
    with open(tsv) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            name, argnames, argtypes, ndef = cols[:4]
            if len(cols) > 4 and cols[4] in ("t", "true"):
                SETOF.add(name)
            names = argnames.split(",") if argnames else []
            types = argtypes.split(",") if argtypes else []
            funcs.append((name, names, types, int(ndef)))
    out = []
    n = first
    FNAMES.update(f[0] for f in funcs)
    if mode == "special":
        skip = set(t for t in (sys.argv[5] if len(sys.argv) > 5 else "").split(",") if t)
        for case in SPECIAL:
            out.extend(emit_special(n, case, schema, skip))
            n += 1
    elif mode == "edge":
        for fn, names, types, ndef in funcs:
            pools = [arg_pool(fn, a, t) for a, t in zip(names, types)]
            base = [next(v for v in p if v.good) if any(v.good for v in p) else p[0] for p in pools]
            # with only the arguments that have no default
            required = len(names) - ndef
            out.append(emit(n, "defaults", fn, names[:required], base[:required], schema))
            n += 1
            out.append(emit(n, "plausible", fn, names, base, schema))
            n += 1
            for i, p in enumerate(pools):
                for v in p:
                    vals = list(base)
                    vals[i] = v
                    out.append(emit(n, f"edge:{names[i]}", fn, names, vals, schema))
                    n += 1
    else:
        random.seed(42)
        rng = random            # the module's generator, seeded: the same calls every run
        fnames = {f[0] for f in funcs}
        for i in range(count):
            # every 25 calls, feed battery_feed with claimed jobs, so the id
            # and token sub-selects find live claims (success paths)
            if i % 25 == 0 and {"queue_push", "queue_reserve"} <= fnames:
                push = (f"(SELECT count({schema}.queue_push('feed', '{{}}', 'battery_feed'))"
                        f" FROM generate_series(1, 4))")
                take = f"(SELECT count(*) FROM {schema}.queue_reserve('{{battery_feed}}', '1 hour', 'feeder', 4))"
                out.append(f"SELECT battery.try({n}, 'feed', 'queue_push', NULL, {q(push)}, false);")
                out.append(f"SELECT battery.try({n + 1}, 'feed', 'queue_reserve', NULL, {q(take)}, false);")
                n += 2
                continue
            fn, names, types, ndef = rng.choice(funcs)
            k = rng.randint(len(names) - ndef, len(names))
            vals = []
            for a, t in zip(names[:k], types[:k]):
                if a == "jobs":
                    vals.append(jobs_value(rng))
                    continue
                p = arg_pool(fn, a, t)
                good = [v for v in p if v.good]
                if good and rng.random() < 0.6:
                    vals.append(rng.choice(good))
                else:
                    vals.append(rng.choice(p))
            pre = None
            r = rng.random()
            if r < 0.05:
                pre = "SET LOCAL jobqueue.clock_offset = '2 hours'"
            elif r < 0.07:
                pre = "SET LOCAL jobqueue.clock_offset = '-1000000 years'"
            elif r < 0.08:
                pre = "SET LOCAL jobqueue.max_payload_bytes = 1024"
            out.append(emit(n, "random", fn, names[:k], vals, schema, pre))
            n += 1
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
