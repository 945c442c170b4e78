#!/usr/bin/env python3
"""Server CPU per call of each jobqueue call, against the hand-written SQL.

    /usr/bin/python3 bench/percall.py [--dsn DSN] [--rounds 11] [--calls 1000]
                             [--perf OUTDIR [--perf-rounds 20] [--perf-period 1000000]]
    /usr/bin/python3 bench/percall.py --count-statements [--rounds 3 --calls 200]
    /usr/bin/python3 bench/percall.py --analyse OUTDIR

Without --dsn it starts its own throwaway cluster (scripts/cluster.sh,
jobqueue preloaded, JQ_PGBIN honoured), creates a database with
bench/sql/setup.sql's objects (the extension, the "floor" and "plain-sql"
references) and stops the cluster at the end; `make install` must have
been run.  With --dsn the database must already have setup.sql's objects.

One connection, autocommit, every call a prepared statement (PREPARE once,
then EXECUTE; psycopg2 sends EXECUTE as a simple query, so every figure
includes parsing that EXECUTE: the `SELECT 1` row is that floor).  Per
round, for each kind below, CALLS calls (the batch forms CALLS/10 calls),
jobqueue's and the reference's, the order alternating between rounds; the
state a call needs (jobs to claim, claimed jobs with their tokens) is made
before its window and is not counted.  The figure is the backend's CPU time
per call from /proc/<pid>/schedstat (nanoseconds on a CPU: user + system,
counted by the scheduler), with the user + system clock ticks of
/proc/<pid>/stat as a cross-check; a first round warms up and is not
counted.  Reported: median and min-max over the rounds, and the ratio to the
reference (median of the per-round ratios).

References, from bench/scripts (the SQL run.sh times) wherever one exists:
push = plain_insert.sql (and floor_insert.sql); push_many = plain_insert_many
(and floor_insert_many); reserve 1 = plain_drain.sql's claim; delete =
plain_drain.sql's DELETE.  Written here (no file has one): the claim of 50
(plain_drain's claim with `id = ANY(ARRAY(... LIMIT 50 ...))`), the DELETE of
50 by `id = ANY`, and the UPDATE by id that releases or extends a lease.
queue_fail (which moves the job to queue_failed_jobs) is compared with the
DELETE by id: a lower bound.

--perf OUTDIR: after the timed rounds, for each kind in turn PERF_ROUNDS
more rounds with `perf record -g -p <backend> -e cpu-clock` enabled only
around that kind's calls (perf's --control fifo); then per kind: perf report
--no-children top 25 and --children top 40 and the shares
(OUTDIR/<kind>.txt), and printed here the user-mode samples' shares (see
CATEGORIES and analyse()) and, with the timed rounds, the same in µs per
call.  In a VM without hardware events each sample costs tens of µs and an
attached event slows every context switch: the CPU per call under perf is
printed too, and the kernel's samples are left out of the shares (the
kernel's part is /proc's system time).  --analyse OUTDIR prints the shares
of kept profiles again.

--count-statements: no timing; the statements each call runs inside
(pg_stat_statements with track = all, preloaded in the own cluster).
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backend_cpu import backend_cpu_ns, backend_user_system, connect  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)


# ------------------------------------------------------------------ statements
def script_statements(name, params=()):
    """The SQL statements of bench/scripts/NAME, psql lines dropped, each psql
    variable in params replaced by $1, $2, ... in that order."""
    text = open(os.path.join(BENCH, "scripts", name)).read()
    text = text.replace("\\gset", ";")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("\\"))
    out = []
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        for n, var in enumerate(params, 1):
            stmt = re.sub(r"(?<!:):%s\b" % var, f"${n}", stmt)
        out.append(stmt)
    return out


def plain_claim_many(claim_one, n):
    """plain_drain.sql's claim of one job, made to claim n: the CTE's UPDATE
    with `id = ANY(ARRAY(SELECT ... LIMIT n ...))`, returning id and token."""
    m = re.match(r"WITH c AS \(\s*(UPDATE .* RETURNING [^)]*)\) SELECT", claim_one)
    update = m.group(1)
    update = update.replace("WHERE id = (SELECT", "WHERE id = ANY(ARRAY(SELECT")
    update = update.replace("LIMIT 1 FOR UPDATE SKIP LOCKED)", f"LIMIT {n} FOR UPDATE SKIP LOCKED))")
    assert "ANY(ARRAY(" in update and f"LIMIT {n}" in update, update
    return f"WITH c AS ({update}) SELECT id, token FROM c"


def build_statements():
    """name -> (argument types, SQL).  Names starting with jq_ are jobqueue's."""
    push, = script_statements("push.sql")
    push_many, = script_statements("push_many.sql", ["jobs"])
    reserve_one, delete_one = script_statements("drain_one.sql", ["id", "token"])
    plain_insert, = script_statements("plain_insert.sql")
    plain_insert_many, = script_statements("plain_insert_many.sql", ["jobs"])
    floor_insert, = script_statements("floor_insert.sql")
    floor_insert_many, = script_statements("floor_insert_many.sql", ["jobs"])
    plain_claim, plain_delete = script_statements("plain_drain.sql", ["id", "token"])
    select1, = script_statements("select1.sql")
    return {
        "select1": ((), select1),
        "jq_push": ((), push),
        "plain_insert": ((), plain_insert),
        "floor_insert": ((), floor_insert),
        "jq_push_many": (("jsonb",), push_many),
        "plain_insert_many": (("jsonb",), plain_insert_many),
        "floor_insert_many": (("jsonb",), floor_insert_many),
        "jq_reserve1": ((), reserve_one),
        "plain_claim1": ((), plain_claim),
        "jq_reserve50": ((), "SELECT id, token FROM queue_reserve('{default}', NULL, 'bench', 50)"),
        "plain_claim50": ((), plain_claim_many(plain_claim, 50)),
        "jq_delete": (("bigint", "bigint"), delete_one),
        "plain_delete": (("bigint", "bigint"), plain_delete),
        "jq_delete_many": (("bigint[]", "bigint[]"), "SELECT queue_delete_many($1, $2)"),
        "plain_delete_many": (("bigint[]", "bigint[]"), "DELETE FROM plain_jobs WHERE id = ANY($1)"),
        "jq_release": (("bigint", "bigint"), "SELECT queue_release($1, $2)"),
        "plain_release": (("bigint", "bigint"),
                          "UPDATE plain_jobs SET available_at = now(), reserved_until = NULL,"
                          " reserved_by = NULL WHERE id = $1 AND token = $2"),
        "jq_fail": (("bigint", "bigint"), "SELECT queue_fail($1, $2, 'percall')"),
        "jq_extend": (("bigint", "bigint"), "SELECT queue_extend($1, $2, interval '5 minutes')"),
        "plain_extend": (("bigint", "bigint"),
                         "UPDATE plain_jobs SET available_at = now() + interval '5 minutes',"
                         " reserved_until = now() + interval '5 minutes' WHERE id = $1 AND token = $2"),
    }


# The rows of the report: (label, jobqueue's statement, reference, other
# references, jobs per call).  plain_delete also serves queue_fail.
ROWS = [
    ("SELECT 1 (the EXECUTE floor)", "select1", None, (), 1),
    ("queue_push (1 job)", "jq_push", "plain_insert", ("floor_insert",), 1),
    ("queue_push_many (100)", "jq_push_many", "plain_insert_many", ("floor_insert_many",), 100),
    ("queue_reserve 1 job", "jq_reserve1", "plain_claim1", (), 1),
    ("queue_reserve 50", "jq_reserve50", "plain_claim50", (), 50),
    ("queue_delete", "jq_delete", "plain_delete", (), 1),
    ("queue_delete_many (50)", "jq_delete_many", "plain_delete_many", (), 50),
    ("queue_release", "jq_release", "plain_release", (), 1),
    ("queue_fail", "jq_fail", "plain_delete_f", (), 1),
    ("queue_extend", "jq_extend", "plain_extend", (), 1),
]

JOBS100 = "[" + ",".join(['{"name":"job","payload":{"n":1}}'] * 100) + "]"


# ------------------------------------------------------------------ measuring
class Runner:
    def __init__(self, cur, pid, perf=None, statements=None):
        self.cur, self.pid, self.perf = cur, pid, perf
        self.samples = {}   # kind -> list of per-round (ns/call, ticks-s/call, user s, system s)
        self.statements = statements   # kind -> {nested statement: calls}, when counting them

    def prepare(self, statements):
        self.cur.execute("DEALLOCATE ALL")
        for name, (types, sql) in statements.items():
            args = f"({', '.join(types)})" if types else ""
            self.cur.execute(f"PREPARE {name}{args} AS {sql}")

    def run(self, kind, stmt, arglist, fetch=False, record=True):
        """EXECUTE stmt once per element of arglist (a tuple of arguments);
        the backend's CPU over those calls is recorded under kind."""
        cur = self.cur
        placeholders = ""
        if arglist and arglist[0]:
            placeholders = "(" + ", ".join(["%s"] * len(arglist[0])) + ")"
        sql = f"EXECUTE {stmt}{placeholders}"
        texts = [cur.mogrify(sql, args) if args else sql for args in arglist]
        rows = []
        if self.statements is not None and record:
            cur.execute("SELECT pg_stat_statements_reset()")
        if self.perf and record:
            self.perf.enable(kind)
        ns0, (u0, s0) = backend_cpu_ns(self.pid), backend_user_system(self.pid)
        for text in texts:
            cur.execute(text)
            if fetch:
                rows.extend(cur.fetchall())
        ns1, (u1, s1) = backend_cpu_ns(self.pid), backend_user_system(self.pid)
        if self.perf and record:
            self.perf.disable(kind)
        if self.statements is not None and record:
            cur.execute("SELECT query, calls FROM pg_stat_statements WHERE NOT toplevel")
            counts = self.statements.setdefault(kind, {"calls": 0})
            counts["calls"] += len(texts)
            for query, n in cur.fetchall():
                counts[query] = counts.get(query, 0) + n
        if record:
            n = len(texts)
            ns = (ns1 - ns0) / n / 1000 if ns0 is not None else None
            # (µs/call by schedstat, µs/call by ticks, user s, system s)
            self.samples.setdefault(kind, []).append((ns, (u1 - u0 + s1 - s0) / n * 1e6, u1 - u0, s1 - s0))
        return rows


def claimed(rows):
    return [(int(i), int(t)) for i, t in rows if i]


def one_round(r, run, calls):
    """One round of every kind; even rounds jobqueue first, odd the references."""
    cur = run.cur
    cur.execute("TRUNCATE queue_jobs, queue_failed_jobs, plain_jobs, floor_jobs")
    batches = max(1, calls // 10)
    jq_first = r % 2 == 0

    def pair(jq, ref):
        for f in ((jq, ref) if jq_first else (ref, jq)):
            f()

    run.run("select1", "select1", [()] * calls)
    pair(lambda: run.run("jq_push", "jq_push", [()] * calls),
         lambda: (run.run("plain_insert", "plain_insert", [()] * calls),
                  run.run("floor_insert", "floor_insert", [()] * calls)))
    pair(lambda: run.run("jq_push_many", "jq_push_many", [(JOBS100,)] * batches),
         lambda: (run.run("plain_insert_many", "plain_insert_many", [(JOBS100,)] * batches),
                  run.run("floor_insert_many", "floor_insert_many", [(JOBS100,)] * batches)))
    cur.execute("VACUUM ANALYZE queue_jobs")
    cur.execute("VACUUM ANALYZE plain_jobs")
    got = {}

    def claim(kind, stmt, n, key):
        got[key] = claimed(run.run(kind, stmt, [()] * n, fetch=True))

    pair(lambda: claim("jq_reserve1", "jq_reserve1", calls, "jq_a"),
         lambda: claim("plain_claim1", "plain_claim1", calls, "pl_a"))
    pair(lambda: claim("jq_reserve50", "jq_reserve50", batches, "jq_b"),
         lambda: claim("plain_claim50", "plain_claim50", batches, "pl_b"))
    # not measured: the jobs the release and fail windows need
    for key, stmt in (("jq_c", "jq_reserve50"), ("jq_d", "jq_reserve50"),
                      ("pl_c", "plain_claim50"), ("pl_d", "plain_claim50")):
        got[key] = claimed(run.run(None, stmt, [()] * (calls // 50 or 1), fetch=True, record=False))
    for key in got:
        if not got[key]:
            raise SystemExit(f"percall: nothing claimed for {key} (round {r})")
    pair(lambda: run.run("jq_extend", "jq_extend", got["jq_a"]),
         lambda: run.run("plain_extend", "plain_extend", got["pl_a"]))
    pair(lambda: run.run("jq_delete", "jq_delete", got["jq_a"]),
         lambda: run.run("plain_delete", "plain_delete", got["pl_a"]))

    def many(pairs):
        return [([i for i, _ in pairs[k:k + 50]], [t for _, t in pairs[k:k + 50]])
                for k in range(0, len(pairs), 50)]
    pair(lambda: run.run("jq_delete_many", "jq_delete_many", many(got["jq_b"])),
         lambda: run.run("plain_delete_many", "plain_delete_many", many(got["pl_b"])))
    pair(lambda: run.run("jq_release", "jq_release", got["jq_c"]),
         lambda: run.run("plain_release", "plain_release", got["pl_c"]))
    pair(lambda: run.run("jq_fail", "jq_fail", got["jq_d"]),
         lambda: run.run("plain_delete_f", "plain_delete", got["pl_d"]))


# ------------------------------------------------------------------ perf
class Perf:
    """One `perf record` per kind, attached to the backend, started disabled
    and enabled around that kind's calls through its control fifo."""

    def __init__(self, outdir, pid, kinds, period):
        self.outdir, self.procs = outdir, {}
        os.makedirs(outdir, exist_ok=True)
        self.fifodir = tempfile.mkdtemp(prefix="percall-perf.")
        for kind in kinds:
            ctl, ack = (os.path.join(self.fifodir, f"{kind}.{x}") for x in ("ctl", "ack"))
            os.mkfifo(ctl)
            os.mkfifo(ack)
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(period), "-g",
                   "-p", str(pid), "-D", "-1", "--control", f"fifo:{ctl},{ack}",
                   "-o", os.path.join(outdir, f"{kind}.data")]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                    stderr=open(os.path.join(outdir, f"{kind}.perf.log"), "w"))
            # opening the fifos waits for perf to open its ends
            self.procs[kind] = (proc, open(ctl, "w"), open(ack, "r"))
        self.command = " ".join(shlex.quote(c) for c in cmd)

    def _send(self, kind, what):
        _, ctl, ack = self.procs[kind]
        ctl.write(what + "\n")
        ctl.flush()
        reply = ack.readline()
        if not reply.lstrip("\x00").startswith("ack"):
            raise SystemExit(f"percall: perf for {kind} answered {reply!r} to {what}")

    def enable(self, kind):
        if kind in self.procs:
            self._send(kind, "enable")

    def disable(self, kind):
        if kind in self.procs:
            self._send(kind, "disable")

    def stop(self):
        for proc, ctl, ack in self.procs.values():
            proc.send_signal(signal.SIGINT)
        for kind, (proc, ctl, ack) in self.procs.items():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            ctl.close()
            ack.close()
        shutil.rmtree(self.fifodir, ignore_errors=True)


# Exclusive categories: each sample goes to the first frame, from the leaf
# up, that matches one of these (in this order of test for one frame);
# frames of none (memory allocation, libc, the kernel, unnamed addresses)
# pass the sample on to their caller.  A frame in jobqueue.so is the
# extension's own code.
CATEGORIES = [
    ("WAL", r"^(XLog|log_heap_|XLogInsert|CopyXLog|ReserveXLog|WALInsert)"),
    ("heap/index/buffers", r"^(heap_|heapam_|simple_heap_|_bt|bt(insert|gettuple|beginscan|rescan|endscan)"
                           r"|index_(getnext|fetch|beginscan|rescan|endscan|insert|getbitmap)|ExecInsertIndexTuples"
                           r"|ReadBuffer|ReleaseBuffer|LockBuffer|UnlockReleaseBuffer|MarkBuffer|BufTable|PinBuffer"
                           r"|RelationGetBufferForTuple|PageAdd|PageIndex|HeapTupleSatisfies|visibilitymap_"
                           r"|table_tuple_|table_index_fetch|toast_|heap_page_prune|ExecCheckIndexConstraints)"),
    ("catalog lookups/locks", r"^(SearchCatCache|SearchSysCache|SysCacheGetAttr|RelationIdGetRelation|RelationBuild"
                              r"|RelationClose|relation_(open|close)|try_relation_open|table_(open|close)"
                              r"|index_(open|close)|LockRelation|UnlockRelation|LockAcquire|LockRelease|LockHeldByMe"
                              r"|CheckRelationLockedByMe|RangeVarGetRelid|get_(rel|func|typ|opcode|namespace|attname"
                              r"|atttype|array_type|element_type|base_type|collation|opfamily|partition)"
                              r"|RelationGetPartitionDesc|PartitionDirectory|find_inheritance_children|find_all_inheritors"
                              r"|AcceptInvalidationMessages|ReceiveSharedInvalidMessages|RelationGetIndexList"
                              r"|CatalogCacheIdInvalidate|lookup_type_cache|LookupTypeName|typeidType|format_type)"),
    ("GUC save/restore", r"^(set_config_option|NewGUCNestLevel|AtEOXact_GUC|ProcessGUCArray|GUCArray|assign_search_path"
                         r"|check_search_path|fetch_search_path|find_option|guc_|parse_and_validate_value"
                         r"|SplitIdentifierString|push_old_value|set_guc_source|InitializeSearchPath"
                         r"|PushOverrideSearchPath|PopOverrideSearchPath|recomputeNamespacePath)"),
    ("triggers", r"^(ExecCallTriggerFunc|AfterTrigger|afterTrigger|ExecAR|ExecBR|ExecAS|ExecBS|GetAfterTrigger"
                 r"|MakeTransitionCaptureState|ExecGetTriggerResultRel|RI_|ri_)"),
    ("planning/plan cache", r"^(planner|standard_planner|subquery_planner|grouping_planner|query_planner"
                            r"|create_plan|set_plan_references|pg_plan_quer|GetCachedPlan|ReleaseCachedPlan"
                            r"|CachedPlan|RevalidateCachedQuery|CheckCachedPlan|BuildCachedPlan|choose_custom_plan"
                            r"|cost_|make_one_rel|add_path|preprocess_|expression_planner|eval_const_expressions"
                            r"|get_relation_info|estimate_|clauselist_selectivity|AcquireExecutorLocks"
                            r"|AcquirePlannerLocks|ScanQueryForLocks|QueryRewrite|pg_rewrite_query)"),
    ("executor start-up/shutdown", r"^(ExecutorStart|standard_ExecutorStart|InitPlan|ExecInit|ExecutorEnd"
                                   r"|standard_ExecutorEnd|ExecEnd|ExecutorFinish|standard_ExecutorFinish"
                                   r"|CreateExecutorState|FreeExecutorState|ExecBuild|ExecReadyExpr|ExecAssign"
                                   r"|ExecConditionalAssign|ExecCreateScanSlot|ExecGetResultType|ExecOpenIndices"
                                   r"|ExecCloseIndices|ExecCloseResultRelations|ExecCloseRangeTableRelations"
                                   r"|ExecTypeFromTL|ExecCheckRTPerms|ExecCheckRTEPerms|MakeTupleTableSlot"
                                   r"|ExecSetupPartitionTupleRouting|ExecCleanupTupleRouting|ExecFindPartition"
                                   r"|CreateQueryDesc|FreeQueryDesc|ExecResetTupleTable|ExecInitRangeTable)"),
    ("SPI", r"^(SPI_|_SPI_|spi_|SPI)"),
    ("executor run (rest)", r"^(ExecutorRun|standard_ExecutorRun|ExecProc|ExecScan|ExecModifyTable|ExecInsert"
                            r"|ExecUpdate|ExecDelete|ExecLockRows|ExecIndex|ExecSeq|ExecResult|ExecNestLoop"
                            r"|ExecAgg|ExecLimit|ExecSort|ExecInterp|ExecEval|ExecJust|ExecMaterial|ExecStore"
                            r"|ExecFetch|ExecFilter|ExecCopySlot|ExecProject|ExecQual|ExecClear|ExecSubPlan"
                            r"|ExecSetParamPlan|ExecScanFetch|ExecHash|ExecAppend|ExecCustom|ExecFunctionScan"
                            r"|ExecMakeTableFunctionResult|ExecPrepareTupleRouting|ExecConstraints"
                            r"|ExecComputeStoredGenerated|ExecGetUpdateNewTuple|ExecCheckPlanOutput|tuplestore_"
                            r"|ExecCTEScan|ExecMakeFunctionResultSet|ExecProjectSet|ExecMergeJoin|ExecHashJoin)"),
    ("transaction start/commit", r"^(StartTransaction|CommitTransaction|AbortTransaction|AtEOXact_|AtCommit_"
                                 r"|AtStart_|CallXactCallbacks|RecordTransactionCommit|ProcArrayEndTransaction"
                                 r"|GetSnapshotData|GetTransactionSnapshot|PushActiveSnapshot|PopActiveSnapshot"
                                 r"|RegisterSnapshot|UnregisterSnapshot|ResourceOwner|TransactionIdCommitTree"
                                 r"|AssignTransactionId|GetNewTransactionId|pgstat_|PreCommit_|smgrDoPendingDeletes)"),
    ("outer statement (EXECUTE parse, portal, protocol)", r"^(exec_simple_query|pg_parse_query|raw_parser|base_yyparse"
                                                          r"|core_yylex|pg_analyze_and_rewrite|parse_analyze|transform"
                                                          r"|ExecuteQuery|EvaluateParams|FetchPreparedStatement"
                                                          r"|PortalRun|PortalStart|PortalDrop|CreatePortal|PortalCleanup"
                                                          r"|pq_|socket_|secure_|ReadCommand|SocketBackend|printtup"
                                                          r"|EndCommand|BeginCommand|ReadyForQuery|standard_ProcessUtility"
                                                          r"|ProcessUtility|pg_plan_queries|CreateDestReceiver"
                                                          r"|PostgresMain|pgstat_report_activity|ProcessClientReadInterrupt"
                                                          r"|WaitEventSetWait|printtup_|SendRowDescription)"),
]
CATEGORY_RE = [(name, re.compile(rx)) for name, rx in CATEGORIES]
OWN = "jobqueue.so (its functions and the uncategorised helpers they call)"
# Samples in the kernel (or at a libc system call's return): counted in the
# categories above through their callers, and shown apart as well.
KERNEL = "(of all samples: in the kernel or at a system call's return)"
SYSCALL = re.compile(r"^(__libc_(recv|send|write|pwrite|read|pread)|__send|__recv|epoll_wait|__GI_|fdatasync|__fsync)")

# Functions whose inclusive share (samples with them anywhere on the stack) is printed.
INCLUSIVE = ["exec_simple_query", "ExecuteQuery", "PortalRun", "fmgr_security_definer", "ProcessGUCArray",
             "set_config_option", "NewGUCNestLevel", "AtEOXact_GUC", "SPI_connect", "SPI_finish",
             "SPI_execute_plan", "SPI_execute_plan_with_paramlist", "SPI_execute_snapshot", "SPI_cursor_open",
             "GetCachedPlan", "planner", "ExecutorStart", "ExecutorRun", "ExecutorFinish", "ExecutorEnd",
             "AfterTriggerEndQuery", "ExecCallTriggerFunc", "jobqueue_flow_job_removed", "SearchCatCache1",
             "SearchCatCache", "SearchSysCache1", "RelationIdGetRelation", "LockRelationOid",
             "LockAcquireExtended", "table_open", "relation_open", "XLogInsert", "heap_insert", "heap_update",
             "heap_delete", "heap_lock_tuple", "btinsert", "ExecInsertIndexTuples", "index_getnext_slot",
             "CommitTransactionCommand", "StartTransactionCommand", "AllocSetAlloc", "palloc",
             "MemoryContextDelete", "MemoryContextReset"]


def read_stacks(datafile):
    """[(frames leaf first as (symbol, dso))] from perf script."""
    out = subprocess.run(["perf", "script", "-i", datafile, "-F", "ip,sym,dso"], capture_output=True,
                         text=True, check=True).stdout
    stacks, frames = [], []
    for line in out.splitlines():
        line = line.strip()
        if not line:
            if frames:
                stacks.append(frames)
            frames = []
            continue
        m = re.match(r"([0-9a-f]+)\s+(.*?)\s+\((.*)\)$", line)
        if not m:
            continue
        sym, dso = m.group(2), m.group(3)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        frames.append((sym, os.path.basename(dso)))
    if frames:
        stacks.append(frames)
    return stacks


def categorise(frames):
    for sym, dso in frames:
        if dso.startswith("jobqueue"):
            return OWN
        for name, rx in CATEGORY_RE:
            if rx.match(sym):
                return name
    return "other / unresolved"


def in_kernel(frames):
    return bool(frames) and (frames[0][1].startswith("[kernel") or bool(SYSCALL.match(frames[0][0])))


def analyse(outdir, kind):
    """The shares of one kind's profile, over its user-mode samples: a
    sample in the kernel, or at the return of a system call, is left out
    (under perf in this VM most of them are perf's own cost at the
    backend's context switches: see profile()); the kernel's part of a call
    is /proc's system time of the timed rounds instead."""
    data = os.path.join(outdir, f"{kind}.data")
    stacks = read_stacks(data)
    n_all = len(stacks)
    stacks = [f for f in stacks if not in_kernel(f)]
    n = len(stacks)
    cats, incl, jqfun, jqself = {}, {}, {}, {}
    for frames in stacks:
        c = categorise(frames)
        cats[c] = cats.get(c, 0) + 1
        seen = set()
        for sym, dso in frames:
            if sym not in seen:
                seen.add(sym)
                incl[sym] = incl.get(sym, 0) + 1
                if dso.startswith("jobqueue"):
                    jqfun[sym] = jqfun.get(sym, 0) + 1
        if frames and frames[0][1].startswith("jobqueue"):
            jqself[frames[0][0]] = jqself.get(frames[0][0], 0) + 1
    reports = []
    for mode in ("--no-children", "--children"):
        rep = subprocess.run(["perf", "report", "-i", data, mode, "--stdio", "-g", "none",
                              "--percent-limit", "0.3"], capture_output=True, text=True).stdout
        lines = [ln for ln in rep.splitlines() if ln.strip() and not ln.startswith("#")]
        reports.append((mode, lines[:25 if mode == "--no-children" else 40]))
    with open(os.path.join(outdir, f"{kind}.txt"), "w") as f:
        f.write(f"{kind}: {n_all} samples, {n} in user mode (the shares below are of these)\n\n"
                "categories (exclusive):\n")
        for c, k in sorted(cats.items(), key=lambda x: -x[1]):
            f.write(f"  {100 * k / n:5.1f}%  {c}\n")
        f.write("\ninclusive (on the stack):\n")
        for sym, k in sorted(incl.items(), key=lambda x: -x[1])[:80]:
            f.write(f"  {100 * k / n:5.1f}%  {sym}\n")
        f.write("\njobqueue.so functions, inclusive:\n")
        for sym, k in sorted(jqfun.items(), key=lambda x: -x[1])[:25]:
            f.write(f"  {100 * k / n:5.1f}%  {sym}  (self {100 * jqself.get(sym, 0) / n:.1f}%)\n")
        for mode, lines in reports:
            f.write(f"\nperf report {mode} --stdio -g none (all samples, the kernel's included):\n")
            f.write("\n".join(lines) + "\n")
    return n_all, n, cats, incl, jqfun, jqself


# ------------------------------------------------------------------ report
def fmt_range(values):
    return f"{statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f})"


def system_share(rows):
    """System time / (user + system) over all rounds, from the clock ticks."""
    user, system = sum(r[2] for r in rows), sum(r[3] for r in rows)
    return system / (user + system) if user + system else 0.0


def report(samples, rounds, tick_hz):
    print(f"\nserver CPU per call, µs (schedstat; median (min–max) of {rounds} rounds)"
          f" and ratio to the hand-written SQL (median of per-round ratios, min–max)")
    print("| call | jobqueue µs/call | µs/job | reference | reference µs/call | ratio | per-round ratios |"
          " ratio less SELECT 1 | ticks-based jobqueue µs/call | system share |")
    print("|---|---:|---:|---|---:|---:|---|---:|---:|---:|")
    floor = [s[0] for s in samples["select1"]]
    for label, jq, ref, others, jobs in ROWS:
        a = [s[0] for s in samples[jq]]
        ticks = [s[1] for s in samples[jq]]
        per = f"{statistics.median(a) / jobs:.1f}" if jobs > 1 else ""
        refs = [ref] if ref else []
        if not refs:
            print(f"| {label} | {fmt_range(a)} | {per} | | | | | | {statistics.median(ticks):.0f} |"
                  f" {system_share(samples[jq]):.0%} |")
        for i, rk in enumerate(refs + list(others)):
            b = [s[0] for s in samples[rk]]
            ratios = [x / y for x, y in zip(a, b)]
            # the call's own work: each round's figures less that round's SELECT 1
            net = [(x - f) / (y - f) for x, y, f in zip(a, b, floor) if y - f > 0]
            rname = rk.replace("plain_delete_f", "plain_delete")
            print(f"| {label if i == 0 else ''} | {fmt_range(a) if i == 0 else ''} | {per if i == 0 else ''} |"
                  f" {rname} | {fmt_range(b)} | {statistics.median(ratios):.2f}× |"
                  f" {min(ratios):.2f}–{max(ratios):.2f} | {statistics.median(net):.2f}× |"
                  f" {statistics.median(ticks):.0f} | {system_share(samples[jq]):.0%} |")
    print(f"(ticks: /proc/<pid>/stat user+system at {tick_hz} Hz, a cross-check only; system share:"
          f" its system ticks / all ticks over the rounds, the kernel's part of the call)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dsn", help="a database with bench/sql/setup.sql's objects (default: own cluster)")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=1000, help="calls per kind and round (batch forms: a tenth)")
    ap.add_argument("--notify", choices=("on", "off"), default="off",
                    help="NOTIFY wake-ups of the queue 'default' (default off, as backend_cpu_ab.py)")
    ap.add_argument("--perf", metavar="OUTDIR", help="also profile each kind with perf record -g")
    ap.add_argument("--perf-rounds", type=int, default=20)
    ap.add_argument("--perf-period", type=int, default=1000000,
                    help="cpu-clock sample period, ns (in a VM each sample costs tens of µs: keep it low)")
    ap.add_argument("--perf-only", action="store_true", help="no timed rounds, only the profile")
    ap.add_argument("--count-statements", action="store_true",
                    help="instead of timing: the statements each call runs inside (pg_stat_statements, track = all,"
                         " preloaded in the own cluster; with --dsn it must be there)")
    ap.add_argument("--analyse", metavar="OUTDIR", help="only print the shares of the profiles kept in OUTDIR")
    args = ap.parse_args()
    if args.analyse:
        print_profiles(args.analyse, None)
        return

    cluster = None
    dsn = args.dsn
    if not dsn:
        cluster = start_cluster(args.count_statements)
        dsn = cluster["dsn"]
    try:
        cur, pid = connect(dsn)
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'")
        version = cur.fetchone()[0]
        cur.execute(f"SELECT queue_set_notify('default', {args.notify == 'on'})")
        statements = build_statements()
        runner = Runner(cur, pid)
        runner.prepare(statements)
        print(f"jobqueue {version}, backend {pid}, {args.rounds} rounds of {args.calls} calls,"
              f" load average {open('/proc/loadavg').read().split()[0]} at the start", flush=True)
        t0 = time.time()
        if args.count_statements:
            count_statements(cur, pid, args)
            return
        if not args.perf_only:
            one_round(1, runner, args.calls)   # warm-up, not counted
            runner.samples = {}
            for r in range(args.rounds):
                one_round(r, runner, args.calls)
                print(f"  round {r + 1}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
            print(f"load average {open('/proc/loadavg').read().split()[0]} at the end;"
                  f" {time.time() - t0:.0f} s", flush=True)
            report(runner.samples, args.rounds, os.sysconf("SC_CLK_TCK"))
        if args.perf:
            profile(args, cur, pid)
            print_profiles(args.perf, None if args.perf_only else runner.samples)
    finally:
        if cluster:
            stop_cluster(cluster)


def count_statements(cur, pid, args):
    """Per call kind: the statements run inside one call (nested statements
    of pg_stat_statements), over args.rounds rounds."""
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    one_round(1, Runner(cur, pid), args.calls)   # warm-up
    runner = Runner(cur, pid, statements={})
    for r in range(args.rounds):
        one_round(r, runner, args.calls)
    print("\nstatements run inside each call (pg_stat_statements, track = all; per call):")
    for label, kind, _, _, _ in ROWS[1:]:
        counts = dict(runner.statements[kind])
        calls = counts.pop("calls")
        total = sum(counts.values()) / calls
        print(f"  {label}: {total:.2f} statements per call")
        for query, n in sorted(counts.items(), key=lambda x: -x[1]):
            if n / calls >= 0.01:
                print(f"      {n / calls:5.2f}  {' '.join(query.split())[:150]}")


PROFILED = [jq for _, jq, _, _, _ in ROWS] + ["plain_insert", "plain_claim1", "plain_delete"]


def profile(args, cur, pid):
    """Record one profile per kind (PROFILED) in args.perf."""
    kinds = PROFILED
    if args.perf_only:
        one_round(1, Runner(cur, pid), args.calls)   # warm-up
    # One kind at a time: a perf event attached to the backend, even a
    # disabled one, adds work to each of its context switches (one or two
    # per call), which would show in every other kind's profile.
    loaded = {}
    for kind in kinds:
        perf = Perf(args.perf, pid, [kind], args.perf_period)
        runner = Runner(cur, pid, perf)
        try:
            for r in range(args.perf_rounds):
                one_round(r, runner, args.calls)
        finally:
            perf.stop()
        loaded[kind] = statistics.median(s[0] for s in runner.samples[kind])
        print(f"  profiled {kind}", file=sys.stderr, flush=True)
    print(f"\nprofiles: {perf.command.replace(kinds[-1], '<kind>')} ({args.perf_rounds} rounds),"
          f" files in {args.perf}/<kind>.txt")
    print("CPU µs/call while profiled (perf's own cost included; compare the timed figures): "
          + ", ".join(f"{k} {v:.1f}" for k, v in loaded.items()))


def print_profiles(perfdir, timed):
    """The shares of every profile in perfdir; with timed (the timed
    rounds' samples) also in µs per call: user time (schedstat µs less the
    system share) times each share."""
    kinds = [k for k in PROFILED if os.path.exists(os.path.join(perfdir, f"{k}.data"))]
    allcats = [OWN] + [c for c, _ in CATEGORIES] + ["other / unresolved"]
    results = {k: analyse(perfdir, k) for k in kinds}
    print("\nshares of each call's user-mode samples, exclusive (the first categorised frame from the leaf up):")
    print("| category | " + " | ".join(k for k in kinds) + " |")
    print("|---|" + "---:|" * len(kinds))
    print("| samples (all / user mode) | " + " | ".join(f"{results[k][0]} / {results[k][1]}" for k in kinds) + " |")
    for c in allcats:
        print(f"| {c} | " + " | ".join(f"{100 * results[k][2].get(c, 0) / max(results[k][1], 1):.1f}"
                                       for k in kinds) + " |")
    if timed:
        print("\nthe same in µs per call (user µs = timed median × (1 − system share); kernel = the rest):")
        print("| category | " + " | ".join(k for k in kinds) + " |")
        print("|---|" + "---:|" * len(kinds))
        total = {k: statistics.median(r[0] for r in timed[k]) for k in kinds}
        user = {k: total[k] * (1 - system_share(timed[k])) for k in kinds}
        print("| CPU µs/call (timed median) | " + " | ".join(f"{total[k]:.1f}" for k in kinds) + " |")
        print("| kernel (system time) | " + " | ".join(f"{total[k] - user[k]:.1f}" for k in kinds) + " |")
        for c in allcats:
            print(f"| {c} | " + " | ".join(f"{user[k] * results[k][2].get(c, 0) / max(results[k][1], 1):.1f}"
                                           for k in kinds) + " |")
    print("\ninclusive shares (% of user-mode samples with the function on the stack):")
    print("| function | " + " | ".join(kinds) + " |")
    print("|---|" + "---:|" * len(kinds))
    for sym in INCLUSIVE:
        vals = [100 * results[k][3].get(sym, 0) / max(results[k][1], 1) for k in kinds]
        if max(vals) >= 0.5:
            print(f"| {sym} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
    print("\njobqueue.so functions, inclusive % (self %) of user-mode samples, top 10 per call:")
    for k in kinds:
        _, n, _, _, jqfun, jqself = results[k]
        top = sorted(jqfun.items(), key=lambda x: -x[1])[:10]
        print(f"  {k}: " + ", ".join(f"{sym} {100 * v / n:.1f} ({100 * jqself.get(sym, 0) / n:.1f})"
                                     for sym, v in top))


# ------------------------------------------------------------------ cluster
def start_cluster(count_statements=False, conf="jit = off"):
    """scripts/cluster.sh's throwaway cluster, jobqueue preloaded, with
    setup.sql's objects in database percall; its environment is kept in a
    dict for stop_cluster.  conf: the server's settings."""
    port = os.environ.get("JQ_PGPORT", "55720")
    preload = "jobqueue"
    if count_statements:
        preload = "jobqueue,pg_stat_statements"
        conf += "\npg_stat_statements.track = all\npg_stat_statements.max = 1000"
    script = (f"set -e; source {shlex.quote(ROOT)}/scripts/cluster.sh; "
              f"JQ_PGPORT={port} JQ_PRELOAD={preload} JQ_PGCONF={shlex.quote(conf)} jq_cluster_start >&2; "
              "env | grep -E '^(PGHOST|PGPORT|PGUSER|JQ_CLUSTER_DIR|JQ_PGDATA|JQ_SERVER_LOG|JQ_PGBIN)='")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"percall: cluster start failed\n{out.stderr}")
    env = dict(line.split("=", 1) for line in out.stdout.splitlines())
    cluster = {"env": env}
    penv = dict(os.environ, **env)
    subprocess.run(["psql", "-X", "-q", "-d", "postgres", "-c", "CREATE DATABASE percall"],
                   env=penv, check=True, timeout=60)
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "percall", "-f",
                    os.path.join(BENCH, "sql", "setup.sql")], env=penv, check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    cluster["dsn"] = f"host={env['PGHOST']} port={env['PGPORT']} user={env['PGUSER']} dbname=percall"
    return cluster


def stop_cluster(cluster):
    env = dict(os.environ, **cluster["env"])
    subprocess.run(["bash", "-c", f"source {shlex.quote(ROOT)}/scripts/cluster.sh; jq_cluster_stop"],
                   env=env, timeout=120)


if __name__ == "__main__":
    main()
