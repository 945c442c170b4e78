/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  The fixed statements of the extension, prepared once per backend.
 *
 * Each statement is written with "@S@" where the extension's schema goes,
 * and "@J@" where the job table goes: queue_jobs itself, or (1.3) one of
 * its partitions, so that a statement that finds a job by id can look in
 * one partition at a time (ring.c: a statement on the partitioned table
 * costs several times one on a partition to start).  The schema is the
 * namespace of the SQL function being called (it is the extension's
 * schema, resolved once per call in call.c) and quoted in.  Together with the
 * functions' fixed search_path this keeps a caller's search_path from
 * redirecting any query.  Plans are kept with SPI_keepplan; if the schema
 * changes (extension dropped and created elsewhere), all are rebuilt.
 *
 * A statement whose text changed with an API version has one entry per
 * version that changed it, under [statement][version]; a call uses the
 * newest entry not newer than the version of the SQL function it serves,
 * so a 1.2 call runs the 1.1 text of a statement 1.2 left alone, and a
 * statement that only exists since 1.1 cannot run for a 1.0 schema.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#define MAX_PLAN_ARGS 12

typedef struct QueuePlanDef
{
	const char *sql;			/* NULL: no text of its own for this version */
	int			nargs;
	Oid			argtypes[MAX_PLAN_ARGS];
	bool		per_partition;	/* may run on one partition (QueueExecuteOn) */
} QueuePlanDef;

/* The job tables a statement's "@J@" can name (JobTable). */
static const char *const job_table_names[NUM_JOB_TABLES] = {
	[JOBS_ALL] = "queue_jobs",
	[JOBS_RING0] = "queue_jobs_ring0",
	[JOBS_RING1] = "queue_jobs_ring1",
	[JOBS_LONG] = "queue_jobs_long",
};

/* A contract number quoted into SQL text. */
#define SQL_NUMBER(n) CppAsString2(n)

/* Columns copied when a job moves to the failed table. */
#define FAILED_COLUMNS \
	"id, job_id, queue, name, payload, priority, attempts, max_attempts, " \
	"error, failed_at, created_at"

/*
 * The ready flag as a re-check of rows found another way (by id, by
 * deadline).  Written "IS TRUE" / "IS FALSE", which is the same for a NOT
 * NULL column, so that the partial indexes on ready (claim order, waiting
 * jobs) cannot serve these statements: a generic plan made while the
 * table was empty would otherwise be as likely to walk a whole queue in
 * one of them as to take the primary key or the deadline index.
 */
#define STILL_READY "ready IS TRUE"
#define STILL_WAITING "ready IS FALSE"

/* Held by a claim (live when available_at, the lease's end, is ahead). */
#define HELD "(NOT ready AND token IS NOT NULL)"

/*
 * The three states of a job at time "now" (a statement's parameter), as
 * README defines them for queue_stats: reserved = held by a live lease;
 * delayed = not held, due later; pending = the rest (due now, including
 * jobs whose lease ran out).  Every statement that tells the states apart
 * (the reports, the dashboard's reads in browse.c) says it with these.
 */
#define IS_PENDING(now) "(available_at <= " now ")"
#define IS_DELAYED(now) "(available_at > " now " AND NOT " HELD ")"
#define IS_RESERVED(now) "(available_at > " now " AND " HELD ")"
/* The state's name; the three rules cover every job, so it is never NULL. */
#define JOB_STATE(now) \
	"CASE WHEN " IS_PENDING(now) " THEN 'pending' WHEN " IS_DELAYED(now) " THEN 'delayed'" \
	" WHEN " IS_RESERVED(now) " THEN 'reserved' END"

/* The backlog per queue at time $1. */
#define BACKLOG_COUNTS \
	"SELECT queue," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_PENDING("$1") ") AS pending," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_DELAYED("$1") ") AS delayed," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_RESERVED("$1") ") AS reserved," \
	"  pg_catalog.count(*) AS total" \
	" FROM @J@ GROUP BY queue"

/* True unless the queue's settings turn wake-ups off; $1 is the queue. */
#define WANTS_WAKEUPS WANTS_WAKEUPS_OF("$1")
#define WANTS_WAKEUPS_OF(queue) \
	"NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = " queue " AND NOT s.notify)"

/* The lease of a claim: the given one ($4), else the queue's ($2) default, else the contract's. */
#define CLAIM_LEASE \
	"coalesce($4, (SELECT s.default_lease FROM @S@.queue_settings s WHERE s.queue = $2)," \
	" interval '60 seconds')"

/* True unless the queue ($1) is paused. */
#define NOT_PAUSED \
	"NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $1 AND s.paused)"

/* A ready job of queue $1 a 1.1 claim may take at $2: not expired, queue not paused. */
#define CLAIMABLE_NOW "(deadline IS NULL OR deadline > $2) AND " NOT_PAUSED

/* Claim candidates, with their claim positions (ClaimCandidateColumn). */
#define CANDIDATE_COLUMNS "id, priority, available_at"
/* Since 1.3 with their partition, so that the claim updates that one only. */
#define CANDIDATE_COLUMNS_1_3 CANDIDATE_COLUMNS ", tableoid"
/* Since 1.5 with whether the queue has a rate limit (the same for every row). */
#define CANDIDATE_COLUMNS_1_5 CANDIDATE_COLUMNS_1_3 \
	", EXISTS (SELECT 1 FROM @S@.queue_settings r WHERE r.queue = $1 AND r.rate_max IS NOT NULL)"

/* The claim's search from the head of queue $1, for $3 jobs due at $2. */
#define CLAIM_CANDIDATES_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND queue = $1 AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY priority DESC, available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"
/* From the claim position ($4, $5, $6) on, within its priority. */
#define CLAIM_CANDIDATES_FROM_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND queue = $1 AND priority = $4 AND (available_at, id) >= ($5, $6)" \
	"   AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"
/* The priorities below the claim position's ($4), from their head. */
#define CLAIM_CANDIDATES_BELOW_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND queue = $1 AND priority < $4 AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY priority DESC, available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"

/* The three searches as plan entries (1.3 on: per partition), for a version's columns. */
#define CLAIM_CANDIDATES_DEF(columns) \
	{CLAIM_CANDIDATES_SQL(columns), 3, {TEXTOID, TIMESTAMPTZOID, INT4OID}, .per_partition = true}
#define CLAIM_CANDIDATES_FROM_DEF(columns) \
	{CLAIM_CANDIDATES_FROM_SQL(columns), 6, \
	 {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID}, .per_partition = true}
#define CLAIM_CANDIDATES_BELOW_DEF(columns) \
	{CLAIM_CANDIDATES_BELOW_SQL(columns), 4, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID}, \
	 .per_partition = true}

/* The job's last error on a line of its own, when it has one. */
#define WITH_LAST_ERROR \
	"CASE WHEN last_error <> '' THEN pg_catalog.chr(10) || 'last error: ' || last_error ELSE '' END"

/*
 * An error text composed in SQL, kept within JQ_ERROR_TEXT_MAX bytes and
 * cut between characters as CutErrorText does (contract.h says why it
 * keeps JQ_ERROR_TEXT_SQL_KEEP characters).
 */
#define CUT_ERROR_TEXT(expr) \
	" CASE WHEN pg_catalog.octet_length(" expr ") <= " SQL_NUMBER(JQ_ERROR_TEXT_MAX) " THEN " expr \
	" ELSE pg_catalog.left(" expr ", " SQL_NUMBER(JQ_ERROR_TEXT_SQL_KEEP) ")" \
	" || pg_catalog.chr(10) || '" JQ_TRUNCATED_TAIL "' END"

/*
 * A push of one job ($1..$7, $9: deadline); and of a batch, from arrays
 * ($1..$6, $8: deadlines; $7: now).  columns/values: what a version adds
 * (1.3: the id and the ring partition, since it inserts into the ring
 * partition itself: a partition has no identity default, and the
 * partitioned table's tuple routing costs as much as the insert).
 */
#define PUSH_SQL(columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @J@" \
	" (queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  deadline" columns ")" \
	" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $9" values ")" \
	" RETURNING id, " WANTS_WAKEUPS
#define PUSH_BATCH_SQL(columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @J@" \
	" (queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  deadline" columns ")" \
	" SELECT q, n, p, pr, ma, av, av <= $7, $7, dl" values \
	" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)," \
	"   pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)," \
	"   pg_catalog.unnest($8)) AS u(q, n, p, pr, ma, av, dl)" \
	" RETURNING id"
#define PUSH_INTO_RING_COLUMNS ", id, ring"
/*
 * A push with a unique key (1.3: into the long partition, whose unique
 * index is the key's arbiter; a partitioned table cannot have one).
 */
#define PUSH_UNIQUE_LONG_SQL(columns, values) \
	PUSH_UNIQUE_LONG_AT_SQL("$6", "$6 <= $7", columns, values)
/* The same with the job's available_at and ready given (1.5: a job held back). */
#define PUSH_UNIQUE_LONG_AT_SQL(available_at, ready, columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs_long" \
	" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  unique_key, deadline, ring" columns ")" \
	" VALUES (pg_catalog.nextval('@S@.queue_jobs_id_seq'), $1, $2, $3, $4, $5, " available_at ", " \
	ready ", $7, $8, $9, " SQL_NUMBER(JQ_RING_LONG) values ")" \
	" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING" \
	" RETURNING id, " WANTS_WAKEUPS
#define NEXT_JOB_ID_VALUE "pg_catalog.nextval('@S@.queue_jobs_id_seq')"
#define NEXT_JOB_ID ", " NEXT_JOB_ID_VALUE

/* Every column of a job but its ring partition: what a rotation moves unchanged. */
#define RING_MOVED_COLUMNS \
	"id, queue, name, payload, attempts, max_attempts, priority, unique_key, available_at," \
	" reserved_until, reserved_by, last_error, created_at, token, ready, deadline"

/*
 * Puts the rows of "moved" back into queue_jobs, as a retry does; columns
 * and values: what a version adds (1.5: the job's concurrency key).
 */
#define RETRY_INSERT_SQL(available_at, ready, columns, values) \
	" INSERT INTO @J@" \
	"  (id, queue, name, payload, attempts, max_attempts, priority, unique_key," \
	"   available_at, ready, last_error, created_at" columns ")" \
	" SELECT id, queue, name, payload, 0, $2, priority, NULL, " available_at ", " ready ", ''," \
	"  created_at" values \
	" FROM moved"
#define RETRY_INSERT RETRY_INSERT_SQL("$3", "true", "", "")
/* 1.5: a job with a concurrency key comes back held back, as a push does */
#define RETRY_INSERT_1_5 \
	RETRY_INSERT_SQL("CASE WHEN concurrency_key IS NULL THEN $3 ELSE " HELD_BACK_AT " END", \
					 "concurrency_key IS NULL", ", concurrency_key, flow, parked_run_at", \
					 ", concurrency_key, CASE WHEN concurrency_key IS NOT NULL THEN 'key' END," \
					 "  CASE WHEN concurrency_key IS NOT NULL THEN $3 END")

/*
 * A rotation's move, under the partition's ACCESS EXCLUSIVE lock: every
 * job of a ring partition, unchanged, to ring partition $1, or to long
 * when it is not held and due after $2 (a long delay or backoff).
 */
#define RING_MOVE_SQL(columns) \
	"WITH moved AS (" \
	"  DELETE FROM @J@ RETURNING *" \
	")" \
	" INSERT INTO @S@.queue_jobs (" columns ", ring)" \
	" SELECT " columns "," \
	"  CASE WHEN available_at > $2 AND NOT " HELD " THEN " SQL_NUMBER(JQ_RING_LONG) " ELSE $1 END" \
	" FROM moved" \
	" RETURNING queue, priority, available_at, id, ready"

/*
 * The concurrency limit of a key in a queue: the one set for its longest
 * prefix there, else the contract's.
 */
#define KEY_LIMIT(queue, key) \
	"coalesce((SELECT l.max_running FROM @S@.queue_key_limits l" \
	"  WHERE l.queue = " queue " AND pg_catalog.starts_with(" key ", l.key_prefix)" \
	"  ORDER BY pg_catalog.length(l.key_prefix) DESC LIMIT 1), " \
	SQL_NUMBER(JQ_DEFAULT_MAX_RUNNING) ")"

/* What the flow control (1.5) adds to a job, copied when a rotation moves it. */
#define FLOW_COLUMNS "concurrency_key, flow, parked_run_at, waiting_parents, has_children"

/*
 * A job held back by flow control waits out of every index range a claim
 * or the due search reads: not ready, due at infinity (flow.c).
 */
#define HELD_BACK_AT "'infinity'::pg_catalog.timestamptz"

/*
 * Held-back jobs (where) let go as flow, at their own run-at (ready if it
 * is by now): what they return is what flow.c notes (LetGoColumn there).
 */
#define LET_GO_SQL(flow, now, where) \
	JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs" \
	" SET flow = " flow ", available_at = parked_run_at, ready = parked_run_at <= " now "," \
	"     parked_run_at = NULL" \
	" WHERE " where \
	" RETURNING queue, priority, available_at, id, ready, " WANTS_WAKEUPS_OF("queue_jobs.queue")

/*
 * A job's flow as a re-check of rows found by id, written so that the
 * partial indexes on flow (the jobs waiting for a key, for parents) cannot
 * serve the statement instead of the primary keys (as STILL_READY).
 */
#define FLOW_IS(value) "coalesce(flow, '') = " value

/*
 * ---- 1.4: the dashboard's reads (browse.c) ----
 *
 * They must stay cheap at millions of jobs, so no statement counts or
 * sorts a whole queue: every row they read comes from an index range
 * (JQ_INDEX_PLAN_MARK keeps sequential and bitmap scans out of their plans
 * whatever the statistics, hotpath.c), and counts stop at a cap.
 */

/* The rows of from_where counted up to cap + 1: exact up to cap. */
#define CAPPED_COUNT(from_where, cap) \
	"(SELECT pg_catalog.count(*) FROM (SELECT 1 FROM " from_where " LIMIT " cap " + 1) capped)"

/*
 * name(queue): the distinct queues of table's rows that satisfy cond, one
 * index descent each (a loose index scan over an index that leads with
 * queue: the claim index for ready jobs, the waiting index for the
 * others, the failed table's queue index), and a NULL row last.
 */
#define LOOSE_QUEUES(name, table, cond) \
	name "(queue) AS (" \
	" SELECT (SELECT pg_catalog.min(t.queue) FROM " table " t WHERE " cond ")" \
	" UNION ALL" \
	" SELECT (SELECT pg_catalog.min(t.queue) FROM " table " t WHERE " cond " AND t.queue > l.queue)" \
	" FROM " name " l WHERE l.queue IS NOT NULL)"

/*
 * priorities(priority): the distinct priorities of queue's ready jobs,
 * highest first, one descent of the claim index each, and a NULL row
 * last.  The claim index orders a queue's ready jobs by priority, then
 * available_at: so within one priority the jobs due by a moment, or after
 * it, are one range of it.
 */
#define READY_PRIORITIES(queue) \
	"priorities(priority) AS (" \
	" SELECT (SELECT j.priority FROM @J@ j WHERE j.ready AND j.queue = " queue \
	"   ORDER BY j.priority DESC LIMIT 1)" \
	" UNION ALL" \
	" SELECT (SELECT j.priority FROM @J@ j WHERE j.ready AND j.queue = " queue \
	"   AND j.priority < p.priority ORDER BY j.priority DESC LIMIT 1)" \
	" FROM priorities p WHERE p.priority IS NOT NULL)"

/*
 * The ready jobs of queue that satisfy cond, as j: one claim-index range
 * per priority of "priorities".  tail (a LIMIT, or OFFSET 0) keeps each
 * range a scan of its own: a join the planner could flatten would read
 * the queue's whole range of the index.
 */
#define READY_BY_PRIORITY(columns, queue, cond, tail) \
	"priorities p CROSS JOIN LATERAL (SELECT " columns " FROM @J@ j" \
	" WHERE j.ready AND j.queue = " queue " AND j.priority = p.priority AND " cond tail ") j"

/*
 * The candidates of a page of queue $1's jobs in state $3 (NULL: every
 * state) at time $2: the jobs of the index ranges that can hold such jobs,
 * each arm run only for the states it serves (a condition on $3 alone is
 * a one-time filter).  A superset of the state: the caller keeps the rows
 * whose JOB_STATE is $3.  Pending: the queue's ready jobs, and its waiting
 * ones due by $2; delayed or reserved: its waiting jobs due after $2 and
 * (delayed) its ready ones due after $2, which only a clock set back
 * leaves behind.  A ready job is never held.
 */
#define PAGE_CANDIDATES(columns, ready_tail) \
	"WITH RECURSIVE " READY_PRIORITIES("$1") \
	" SELECT " columns " FROM @J@ j WHERE j.ready AND j.queue = $1" \
	"   AND ($3 IS NULL OR $3 = 'pending')" \
	" UNION ALL" \
	" SELECT " columns " FROM " READY_BY_PRIORITY(columns, "$1", IS_DELAYED("$2"), ready_tail) \
	"   WHERE $3 = 'delayed'" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND $3 IS NULL" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND " IS_PENDING("$2") \
	"   AND $3 = 'pending'" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND NOT " IS_PENDING("$2") \
	"   AND $3 IN ('delayed', 'reserved')"

/* What queue_jobs_page returns of a job at time $2, and its state filter $3. */
#define PAGE_COLUMNS \
	"j.id, j.name, " JOB_STATE("$2") ", j.priority, j.attempts, j.max_attempts, j.available_at," \
	" j.reserved_by, j.reserved_until, j.unique_key, j.deadline, j.created_at"
#define PAGE_IN_STATE "($3 IS NULL OR " JOB_STATE("$2") " = $3)"

static const QueuePlanDef plan_defs[NUM_QUEUE_PLANS][JQ_API_COUNT] = {
	[PLAN_PUSH][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "INSERT INTO @J@"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7)"
		" RETURNING id",
		7, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},
	/* A held key is expected, not an error: DO NOTHING, then find the holder. */
	[PLAN_PUSH_UNIQUE][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "INSERT INTO @J@"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at, unique_key)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8)"
		" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
		" RETURNING id",
		8, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
	},
	[PLAN_FIND_UNIQUE_HOLDER][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "SELECT id FROM @J@ WHERE unique_key = $1",
		1, {TEXTOID}
	},

	/*
	 * Delayed and held jobs of these queues whose moment has come, locked so
	 * two workers do not promote the same row.  "exhausted": a held job on
	 * its last attempt whose lease ran out (its worker died).
	 */
	[PLAN_FIND_DUE][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "SELECT id, attempts >= max_attempts FROM @J@"
		" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
		" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	[PLAN_MAKE_READY][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "UPDATE @J@ SET ready = true WHERE id = ANY ($1) AND " STILL_WAITING,
		1, {INT8ARRAYOID}
	},
	[PLAN_FAIL_EXHAUSTED][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "WITH moved AS ("
		"  DELETE FROM @J@ WHERE id = ANY ($1) RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		CUT_ERROR_TEXT("'lease expired after the last attempt (' || attempts || ' of ' || max_attempts || ')'"
					   " || " WITH_LAST_ERROR) ","
		"  $2, created_at"
		" FROM moved"
		" RETURNING queue",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},

	/*
	 * The claim, in two statements so that each keeps a good generic plan
	 * (a join of the two would be planned for a guessed batch size): the
	 * best ready jobs in claim order, locked with SKIP LOCKED so workers
	 * step past each other; then the UPDATE that re-checks everything the
	 * search relied on.
	 */
	[PLAN_CLAIM_CANDIDATES][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "SELECT " CANDIDATE_COLUMNS " FROM @J@"
		" WHERE ready AND queue = $1 AND available_at <= $2"
		" ORDER BY priority DESC, available_at, id"
		" LIMIT $3 FOR UPDATE SKIP LOCKED",
		3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
	},
	/* $6: the fencing tokens' base for this server's timeline (reserve.c) */
	[PLAN_CLAIM_UPDATE][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "UPDATE @J@"
		" SET ready = false, attempts = attempts + 1, available_at = $4,"
		"     reserved_until = $4, reserved_by = $5,"
		"     token = $6 + pg_catalog.nextval('@S@.queue_job_tokens')"
		" WHERE id = ANY ($1) AND " STILL_READY " AND queue = $2 AND available_at <= $3"
		"   AND attempts < max_attempts"
		" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
		"   reserved_until, created_at, last_error",
		6, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT8OID},
		.per_partition = true
	},

	[PLAN_DELETE][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "DELETE FROM @J@ WHERE id = $1 AND token = $2 RETURNING queue",
		2, {INT8OID, INT8OID},
		.per_partition = true
	},
	[PLAN_LOCK_CLAIMED][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "SELECT attempts, max_attempts, queue, priority FROM @J@"
		" WHERE id = $1 AND token = $2 FOR UPDATE",
		2, {INT8OID, INT8OID},
		.per_partition = true
	},
	[PLAN_RELEASE][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "UPDATE @J@"
		" SET ready = $3 <= $4, available_at = $3, reserved_until = NULL,"
		"     reserved_by = NULL, token = NULL, last_error = $5"
		" WHERE id = $1 AND token = $2",
		5, {INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID},
		.per_partition = true
	},
	/* One statement, so a job is never in both tables nor in neither. */
	[PLAN_MOVE_TO_FAILED][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "WITH moved AS ("
		"  DELETE FROM @J@ WHERE id = $1 AND token = $2 RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		"  CASE WHEN $3 <> '' THEN $3"
		"   WHEN last_error <> '' THEN last_error"
		"   ELSE 'failed by the worker (no error given)' END,"
		"  $4, created_at FROM moved"
		" RETURNING id, queue",
		4, {INT8OID, INT8OID, TEXTOID, TIMESTAMPTZOID},
		.per_partition = true
	},
	[PLAN_EXTEND][JQ_API_1_0] = {
		JQ_HOT_PATH_MARK "UPDATE @J@"
		" SET ready = false, available_at = $3, reserved_until = $3"
		" WHERE id = $1 AND token = $2",
		3, {INT8OID, INT8OID, TIMESTAMPTZOID},
		.per_partition = true
	},

	/* Claimable now: available_at has come (for a held job: its lease ran out). */
	[PLAN_PENDING_ALL][JQ_API_1_0] = {
		"SELECT pg_catalog.count(*) FROM @J@ WHERE " IS_PENDING("$1"),
		1, {TIMESTAMPTZOID}
	},
	/* Spelt per "ready" so each arm can use its partial index. */
	[PLAN_PENDING_QUEUE][JQ_API_1_0] = {
		"SELECT pg_catalog.count(*) FROM @J@"
		" WHERE (ready AND queue = $2 AND " IS_PENDING("$1") ")"
		"    OR (NOT ready AND queue = $2 AND " IS_PENDING("$1") ")",
		2, {TIMESTAMPTZOID, TEXTOID}
	},
	[PLAN_STATS][JQ_API_1_0] = {
		BACKLOG_COUNTS " ORDER BY queue COLLATE \"C\"",
		1, {TIMESTAMPTZOID}
	},

	[PLAN_FAILED_COUNT][JQ_API_1_0] = {
		"SELECT pg_catalog.count(*) FROM @S@.queue_failed_jobs",
		0, {0}
	},
	[PLAN_FAILED_ROWS][JQ_API_1_0] = {
		"SELECT * FROM @S@.queue_failed_jobs ORDER BY failed_at DESC, id DESC LIMIT $1",
		1, {INT4OID}
	},
	[PLAN_FAILED_ROWS_QUEUE][JQ_API_1_0] = {
		"SELECT * FROM @S@.queue_failed_jobs WHERE queue = $2"
		" ORDER BY failed_at DESC, id DESC LIMIT $1",
		2, {INT4OID, TEXTOID}
	},
	[PLAN_FAILED_ROW_ID][JQ_API_1_0] = {
		"SELECT * FROM @S@.queue_failed_jobs WHERE id = $3 AND ($2::pg_catalog.text IS NULL OR queue = $2)",
		3, {INT4OID, TEXTOID, INT8OID}
	},
	/* Each row moves back in one statement: it is never in both tables. */
	[PLAN_RETRY_FAILED_ONE][JQ_API_1_0] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
		")" RETRY_INSERT,
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	/* $1 (the id) is unused here: both retry plans take the same arguments */
	[PLAN_RETRY_FAILED_ALL][JQ_API_1_0] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
		")" RETRY_INSERT,
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_FORGET_FAILED_ONE][JQ_API_1_0] = {
		"DELETE FROM @S@.queue_failed_jobs WHERE id = $1",
		1, {INT8OID}
	},
	[PLAN_FORGET_FAILED_BEFORE][JQ_API_1_0] = {
		"DELETE FROM @S@.queue_failed_jobs WHERE failed_at < $1",
		1, {TIMESTAMPTZOID}
	},
	[PLAN_FORGET_FAILED_ALL][JQ_API_1_0] = {
		"DELETE FROM @S@.queue_failed_jobs",
		0, {0}
	},

	/* The extension's own functions, by name, as text signatures. */
	[PLAN_TIER_FUNCTIONS][JQ_API_1_0] = {
		"SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, p.proname::pg_catalog.text"
		" FROM pg_catalog.pg_depend d"
		" JOIN pg_catalog.pg_proc p ON p.oid = d.objid"
		" WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
		"   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass"
		"   AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'jobqueue')"
		"   AND d.deptype = 'e'"
		" ORDER BY 1",
		0, {0}
	},

	/* ---- 1.1: deadlines, wake-ups, batches, administration ---- */

	[PLAN_PUSH][JQ_API_1_1] = {
		PUSH_SQL("", ""),
		9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_PUSH_UNIQUE][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "INSERT INTO @J@"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
		"  unique_key, deadline)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8, $9)"
		" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
		" RETURNING id, " WANTS_WAKEUPS,
		9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID}
	},
	/* Jobs without unique keys, in one statement; ids come back in input order. */
	[PLAN_PUSH_BATCH][JQ_API_1_1] = {
		PUSH_BATCH_SQL("", ""),
		8, {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
			TIMESTAMPTZARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID}
	},
	[PLAN_QUEUE_WANTS_WAKEUPS][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "SELECT " WANTS_WAKEUPS,
		1, {TEXTOID}
	},

	/*
	 * As PLAN_FIND_DUE, plus jobs past their deadline that are not running
	 * (ready, or their lease ran out): those are failed as expired.
	 */
	[PLAN_FIND_DUE][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "SELECT id, attempts >= max_attempts, deadline IS NOT NULL AND deadline <= $2,"
		"  queue, priority, available_at, token IS NOT NULL"
		" FROM @J@"
		" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
		" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	/*
	 * Ready jobs past their deadline (a waiting one is found above).  Two
	 * statements, not one with an OR: each arm then keeps its own partial
	 * index in a generic plan, where an OR made the planner scan the table.
	 */
	[PLAN_FIND_EXPIRED_READY][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "SELECT id FROM @J@"
		" WHERE deadline <= $2 AND queue = ANY ($1) AND " STILL_READY
		" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	/*
	 * The earliest moment up to $2 at which a job of these queues falls due:
	 * a delayed or held one becomes claimable, a ready one expires.  Not
	 * locked: a row another claim is promoting still counts.
	 */
	[PLAN_NEXT_DUE][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "SELECT least("
		" (SELECT pg_catalog.min(available_at) FROM @J@"
		"   WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2),"
		" (SELECT pg_catalog.min(deadline) FROM @J@"
		"   WHERE deadline <= $2 AND queue = ANY ($1) AND " STILL_READY "))",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	[PLAN_FAIL_EXPIRED][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "WITH moved AS ("
		"  DELETE FROM @J@ WHERE id = ANY ($1) RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		CUT_ERROR_TEXT("'expired: its deadline (' || deadline || ') passed before it could run'"
					   " || " WITH_LAST_ERROR) ","
		"  $2, created_at"
		" FROM moved"
		" RETURNING queue",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},
	/* As the 1.0 claim, skipping paused queues and expired jobs. */
	[PLAN_CLAIM_CANDIDATES][JQ_API_1_1] = {
		CLAIM_CANDIDATES_SQL(CANDIDATE_COLUMNS),
		3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
	},
	/*
	 * The search from a claim position (claimpos.c): the rest of the
	 * position's priority from the position on, then the lower priorities
	 * from their head.  Both are ranges of the claim index.
	 */
	[PLAN_CLAIM_CANDIDATES_FROM][JQ_API_1_1] = {
		CLAIM_CANDIDATES_FROM_SQL(CANDIDATE_COLUMNS),
		6, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID}
	},
	[PLAN_CLAIM_CANDIDATES_BELOW][JQ_API_1_1] = {
		CLAIM_CANDIDATES_BELOW_SQL(CANDIDATE_COLUMNS),
		4, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID}
	},
	/* $4 NULL: the queue's default lease, or 60 seconds. */
	[PLAN_CLAIM_UPDATE][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "UPDATE @J@"
		" SET ready = false, attempts = attempts + 1,"
		"     available_at = $3 + " CLAIM_LEASE ","
		"     reserved_until = $3 + " CLAIM_LEASE ","
		"     reserved_by = $5,"
		"     token = $6 + pg_catalog.nextval('@S@.queue_job_tokens')"
		" WHERE id = ANY ($1) AND " STILL_READY " AND queue = $2 AND available_at <= $3"
		"   AND attempts < max_attempts AND (deadline IS NULL OR deadline > $3)"
		"   AND NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $2 AND s.paused)"
		" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
		"   reserved_until, created_at, last_error, deadline",
		6, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, INTERVALOID, TEXTOID, INT8OID},
		.per_partition = true
	},

	/* Batch completion: lock the jobs, pair tokens in C, then delete. */
	[PLAN_LOCK_CLAIMED_MANY][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "SELECT id, token, queue FROM @J@ WHERE id = ANY ($1) ORDER BY id FOR UPDATE",
		1, {INT8ARRAYOID},
		.per_partition = true
	},
	[PLAN_DELETE_IDS][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "DELETE FROM @J@ WHERE id = ANY ($1)",
		1, {INT8ARRAYOID},
		.per_partition = true
	},
	[PLAN_RETRY_FAILED_ONE][JQ_API_1_1] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
		")" RETRY_INSERT " RETURNING queue, priority, id",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_RETRY_FAILED_ALL][JQ_API_1_1] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
		")" RETRY_INSERT " RETURNING queue, priority, id",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},

	/* A job held by a live claim is only cancelled with force ($2). */
	[PLAN_CANCEL][JQ_API_1_1] = {
		JQ_HOT_PATH_MARK "DELETE FROM @J@"
		" WHERE id = $1 AND ($2 OR ready OR token IS NULL OR available_at <= $3)",
		3, {INT8OID, BOOLOID, TIMESTAMPTZOID},
		.per_partition = true
	},
	[PLAN_CLEAR][JQ_API_1_1] = {
		"DELETE FROM @J@ WHERE queue = $1",
		1, {TEXTOID}
	},
	[PLAN_SET_PAUSED][JQ_API_1_1] = {
		"INSERT INTO @S@.queue_settings AS s (queue, paused, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at",
		3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
	},
	[PLAN_SET_DEFAULT_LEASE][JQ_API_1_1] = {
		"INSERT INTO @S@.queue_settings AS s (queue, default_lease, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE"
		" SET default_lease = excluded.default_lease, updated_at = excluded.updated_at",
		3, {TEXTOID, INTERVALOID, TIMESTAMPTZOID}
	},
	[PLAN_SET_NOTIFY][JQ_API_1_1] = {
		"INSERT INTO @S@.queue_settings AS s (queue, notify, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE SET notify = excluded.notify, updated_at = excluded.updated_at",
		3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
	},
	[PLAN_LIST][JQ_API_1_1] = {
		"SELECT coalesce(c.queue, s.queue), coalesce(s.paused, false), s.default_lease,"
		"  coalesce(s.notify, true), coalesce(c.pending, 0), coalesce(c.delayed, 0),"
		"  coalesce(c.reserved, 0), coalesce(c.total, 0)"
		" FROM (" BACKLOG_COUNTS ") c"
		" FULL JOIN @S@.queue_settings s ON s.queue = c.queue"
		" ORDER BY coalesce(c.queue, s.queue) COLLATE \"C\"",
		1, {TIMESTAMPTZOID}
	},

	/* ---- 1.2: recurring schedules ---- */

	[PLAN_SCHEDULE_LOCK][JQ_API_1_2] = {
		"SELECT last_window FROM @S@.queue_schedules WHERE name = $1 FOR UPDATE",
		1, {TEXTOID}
	},
	[PLAN_SCHEDULE_UPSERT][JQ_API_1_2] = {
		"INSERT INTO @S@.queue_schedules AS s"
		" (name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled,"
		"  catch_up, next_due, created_at, updated_at)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)"
		" ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, job_name = excluded.job_name,"
		"  payload = excluded.payload, queue = excluded.queue, priority = excluded.priority,"
		"  max_attempts = excluded.max_attempts, time_zone = excluded.time_zone,"
		"  enabled = excluded.enabled, catch_up = excluded.catch_up,"
		"  next_due = excluded.next_due, updated_at = excluded.updated_at",
		12, {TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, INT4OID, INT4OID, TEXTOID, BOOLOID,
			BOOLOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},
	[PLAN_SCHEDULE_REMOVE][JQ_API_1_2] = {
		"DELETE FROM @S@.queue_schedules WHERE name = $1",
		1, {TEXTOID}
	},
	[PLAN_SCHEDULE_LIST][JQ_API_1_2] = {
		"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled,"
		"  catch_up, next_due, last_window, last_job_id"
		" FROM @S@.queue_schedules ORDER BY name COLLATE \"C\"",
		0, {0}
	},
	/* Due schedules, locked: a concurrent tick skips them instead of waiting. */
	[PLAN_SCHEDULE_DUE][JQ_API_1_2] = {
		"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone,"
		"  catch_up, next_due"
		" FROM @S@.queue_schedules WHERE enabled AND next_due <= $1"
		" ORDER BY next_due LIMIT " SQL_NUMBER(JQ_TICK_BATCH) " FOR UPDATE SKIP LOCKED",
		1, {TIMESTAMPTZOID}
	},
	[PLAN_SCHEDULE_ADVANCE][JQ_API_1_2] = {
		"UPDATE @S@.queue_schedules"
		" SET next_due = $2, last_window = $3, last_job_id = $4, updated_at = $5"
		" WHERE name = $1",
		5, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID}
	},

	/* ---- 1.3: the storage ring (ring.c) ---- */

	[PLAN_PUSH_UNIQUE][JQ_API_1_3] = {
		PUSH_UNIQUE_LONG_SQL("", ""),
		9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_FIND_UNIQUE_HOLDER][JQ_API_1_3] = {
		JQ_HOT_PATH_MARK "SELECT id FROM @S@.queue_jobs_long WHERE unique_key = $1",
		1, {TEXTOID}
	},
	[PLAN_PUSH][JQ_API_1_3] = {
		PUSH_SQL(PUSH_INTO_RING_COLUMNS, NEXT_JOB_ID ", $10"),
		10, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID, INT2OID},
		.per_partition = true
	},
	[PLAN_PUSH_BATCH][JQ_API_1_3] = {
		PUSH_BATCH_SQL(PUSH_INTO_RING_COLUMNS, NEXT_JOB_ID ", $9"),
		9, {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
			TIMESTAMPTZARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID, INT2OID},
		.per_partition = true
	},
	[PLAN_CLAIM_CANDIDATES][JQ_API_1_3] = CLAIM_CANDIDATES_DEF(CANDIDATE_COLUMNS_1_3),
	[PLAN_CLAIM_CANDIDATES_FROM][JQ_API_1_3] = CLAIM_CANDIDATES_FROM_DEF(CANDIDATE_COLUMNS_1_3),
	[PLAN_CLAIM_CANDIDATES_BELOW][JQ_API_1_3] = CLAIM_CANDIDATES_BELOW_DEF(CANDIDATE_COLUMNS_1_3),
	/* The live jobs of a ring partition, counted up to one more than a rotation moves. */
	[PLAN_RING_LIVE_JOBS][JQ_API_1_3] = {
		"SELECT pg_catalog.count(*) FROM"
		" (SELECT 1 FROM @J@ LIMIT " SQL_NUMBER(JQ_RING_MOVE_MAX) " + 1) live",
		0, {0},
		.per_partition = true
	},
	[PLAN_RING_MOVE][JQ_API_1_3] = {
		RING_MOVE_SQL(RING_MOVED_COLUMNS),
		2, {INT2OID, TIMESTAMPTZOID},
		.per_partition = true
	},

	/* ---- 1.4: the dashboard's reads (browse.c) ---- */

	/*
	 * Every queue that has jobs, failed rows or settings, with its backlog
	 * at $1 counted up to the cap $2 (columns as queue_overview returns
	 * them).  The oldest pending job is the one due first: the least
	 * available_at of the queue's waiting jobs due by $1 (the head of the
	 * waiting index) and of the head of each of its priorities.
	 */
	[PLAN_OVERVIEW][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "WITH RECURSIVE "
		LOOSE_QUEUES("ready_queues", "@J@", "t.ready") ", "
		LOOSE_QUEUES("waiting_queues", "@J@", "NOT t.ready") ", "
		LOOSE_QUEUES("failed_queues", "@S@.queue_failed_jobs", "true") ", "
		"queues(queue) AS ("
		"  SELECT queue FROM ready_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM failed_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM @S@.queue_settings)"
		" SELECT q.queue, coalesce(s.paused, false),"
		"  least(c.pending, $2), least(c.delayed, $2), least(c.reserved, $2), least(c.failed, $2),"
		"  greatest(c.pending, c.delayed, c.reserved, c.failed) > $2, c.oldest_pending_at"
		" FROM queues q"
		" LEFT JOIN @S@.queue_settings s ON s.queue = q.queue"
		" CROSS JOIN LATERAL (WITH RECURSIVE " READY_PRIORITIES("q.queue")
		"  SELECT "
		CAPPED_COUNT("@J@ j WHERE j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2") " + "
		CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2")
		"   AS pending, "
		CAPPED_COUNT(READY_BY_PRIORITY("1", "q.queue", IS_DELAYED("$1"), " LIMIT $2 + 1"), "$2") " + "
		CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_DELAYED("$1"), "$2")
		"   AS delayed, "
		CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_RESERVED("$1"), "$2")
		"   AS reserved, "
		CAPPED_COUNT("@S@.queue_failed_jobs f WHERE f.queue = q.queue", "$2") " AS failed,"
		"  least((SELECT pg_catalog.min(j.available_at) FROM "
		READY_BY_PRIORITY("j.available_at", "q.queue", IS_PENDING("$1"),
						  " ORDER BY j.available_at LIMIT 1") "),"
		"   (SELECT j.available_at FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue AND "
		IS_PENDING("$1") " ORDER BY j.available_at LIMIT 1)) AS oldest_pending_at"
		" ) c"
		" ORDER BY q.queue COLLATE \"C\"",
		2, {TIMESTAMPTZOID, INT4OID}
	},

	/*
	 * 1.5: the same queues, each count read up to the cap $2 + 1 only, for
	 * browse.c to tell exact counts from the ones it estimates.  The jobs
	 * due later that wait (delayed or held) are one range of the waiting
	 * index, counted once up to the cap from the index alone; only when
	 * they are within the cap are their rows read, to tell them apart by
	 * their token (a waiting job due later is held exactly when it has
	 * one; "n.seen <= $2" is a one-time filter).  Counting each state of
	 * that range up to the cap separately read every job of the other
	 * state that sorts first; reading their rows past the cap, rows whose
	 * states are estimated anyway.  Columns: queue, paused, pending (two
	 * ranges, each up to $2 + 1), ready jobs due later (delayed: only a
	 * clock set back leaves them), the waiting range's delayed and held
	 * jobs (0 past the cap) and its entries read, failed rows, the oldest
	 * pending job's available_at.
	 */
	[PLAN_OVERVIEW][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "WITH RECURSIVE "
		LOOSE_QUEUES("ready_queues", "@J@", "t.ready") ", "
		LOOSE_QUEUES("waiting_queues", "@J@", "NOT t.ready") ", "
		LOOSE_QUEUES("failed_queues", "@S@.queue_failed_jobs", "true") ", "
		"queues(queue) AS ("
		"  SELECT queue FROM ready_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM failed_queues WHERE queue IS NOT NULL"
		"  UNION SELECT queue FROM @S@.queue_settings)"
		" SELECT q.queue, coalesce(s.paused, false), c.pending, c.ready_delayed,"
		"  w.delayed, w.held, w.seen, c.failed, c.oldest_pending_at"
		" FROM queues q"
		" LEFT JOIN @S@.queue_settings s ON s.queue = q.queue"
		" CROSS JOIN LATERAL (WITH RECURSIVE " READY_PRIORITIES("q.queue")
		"  SELECT "
		CAPPED_COUNT("@J@ j WHERE j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2") " + "
		CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2")
		"   AS pending, "
		CAPPED_COUNT(READY_BY_PRIORITY("1", "q.queue", IS_DELAYED("$1"), " LIMIT $2 + 1"), "$2")
		"   AS ready_delayed, "
		CAPPED_COUNT("@S@.queue_failed_jobs f WHERE f.queue = q.queue", "$2") " AS failed,"
		"  least((SELECT pg_catalog.min(j.available_at) FROM "
		READY_BY_PRIORITY("j.available_at", "q.queue", IS_PENDING("$1"),
						  " ORDER BY j.available_at LIMIT 1") "),"
		"   (SELECT j.available_at FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue AND "
		IS_PENDING("$1") " ORDER BY j.available_at LIMIT 1)) AS oldest_pending_at"
		" ) c"
		" CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS seen"
		"  FROM (SELECT 1 FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue"
		"   AND j.available_at > $1 LIMIT $2 + 1) l) n"
		" CROSS JOIN LATERAL (SELECT n.seen,"
		"  pg_catalog.count(*) FILTER (WHERE l.token IS NULL) AS delayed,"
		"  pg_catalog.count(*) FILTER (WHERE l.token IS NOT NULL) AS held"
		"  FROM (SELECT j.token FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue"
		"   AND j.available_at > $1 AND n.seen <= $2) l) w"
		" ORDER BY q.queue COLLATE \"C\"",
		2, {TIMESTAMPTZOID, INT4OID}
	},

	/*
	 * A page of queue $1's jobs in state $3 at $2, after id $4, at most $5:
	 * from its candidates sorted by id when they are few (counted up to
	 * the cap $4 first), else in id order along the primary keys, reading
	 * every queue's jobs from $4 on until $5 of queue $1 are found.
	 */
	[PLAN_PAGE_CANDIDATES][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "SELECT pg_catalog.count(*) FROM ("
		PAGE_CANDIDATES("1", " LIMIT $4 + 1") " LIMIT $4 + 1) candidates",
		4, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT4OID}
	},
	/*
	 * OFFSET 0 keeps "id > $4" out of the arms: there it would let the
	 * planner take a partition's primary key for one, where the statistics
	 * of a partition holding one big queue make "queue = $1" look useless.
	 */
	[PLAN_PAGE_SORTED][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "SELECT " PAGE_COLUMNS
		" FROM (" PAGE_CANDIDATES("j.*", " OFFSET 0") " OFFSET 0) j"
		" WHERE j.id > $4 AND " PAGE_IN_STATE " ORDER BY j.id LIMIT $5",
		5, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, INT4OID}
	},
	[PLAN_PAGE_BY_ID][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "SELECT " PAGE_COLUMNS " FROM @J@ j"
		" WHERE j.queue = $1 AND j.id > $4 AND " PAGE_IN_STATE " ORDER BY j.id LIMIT $5",
		5, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, INT4OID}
	},

	/* One job by id at $2, live or failed (a job is never in both tables); no token. */
	[PLAN_JOB][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "SELECT id, queue, name, " JOB_STATE("$2") ", payload, priority, attempts,"
		"  max_attempts, available_at, reserved_by, reserved_until, unique_key, deadline,"
		"  last_error, created_at, NULL::pg_catalog.timestamptz"
		" FROM @J@ WHERE id = $1"
		" UNION ALL"
		" SELECT id, queue, name, 'failed', payload, priority, attempts, max_attempts,"
		"  NULL, NULL, NULL, NULL, NULL, error, created_at, failed_at"
		" FROM @S@.queue_failed_jobs WHERE id = $1",
		2, {INT8OID, TIMESTAMPTZOID}
	},

	/* The jobs held by a live lease at $1 (along the waiting index), at most $2; no token. */
	[PLAN_LEASES][JQ_API_1_4] = {
		JQ_INDEX_PLAN_MARK "SELECT reserved_by, queue, id, name, attempts, reserved_until FROM @J@"
		" WHERE NOT ready AND " IS_RESERVED("$1")
		" ORDER BY reserved_by COLLATE \"C\", reserved_until, id LIMIT $2",
		2, {TIMESTAMPTZOID, INT4OID}
	},
	/* ---- 1.5: flow control (flow.c, dependencies.c, concurrency.c, ratelimit.c) ---- */

	/*
	 * A push with a concurrency key ($11; $10, the ring, unused) enters held
	 * back: the caller takes it a slot, or leaves it waiting (flow.c).
	 */
	[PLAN_PUSH_HELD_BACK][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs"
		" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
		"  deadline, concurrency_key, flow, parked_run_at)"
		" VALUES (" NEXT_JOB_ID_VALUE ", $1, $2, $3, $4, $5, " HELD_BACK_AT ", false, $7, $9,"
		"  $11, 'key', $6)"
		" RETURNING id, " WANTS_WAKEUPS,
		11, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID, INT2OID, TEXTOID}
	},
	[PLAN_PUSH_UNIQUE][JQ_API_1_5] = {
		PUSH_UNIQUE_LONG_AT_SQL("CASE WHEN $11 IS NULL THEN $6 ELSE " HELD_BACK_AT " END",
								"$11 IS NULL AND $6 <= $7",
								", concurrency_key, flow, parked_run_at",
								", $11, CASE WHEN $11 IS NOT NULL THEN 'key' END,"
								"  CASE WHEN $11 IS NOT NULL THEN $6 END"),
		11, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID, INT2OID, TEXTOID}
	},
	/* A retried job keeps its concurrency key (and so waits for a slot again). */
	[PLAN_RETRY_FAILED_ONE][JQ_API_1_5] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
		")" RETRY_INSERT_1_5 " RETURNING queue, priority, id, concurrency_key",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_RETRY_FAILED_ALL][JQ_API_1_5] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
		")" RETRY_INSERT_1_5 " RETURNING queue, priority, id, concurrency_key",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_RING_MOVE][JQ_API_1_5] = {
		RING_MOVE_SQL(RING_MOVED_COLUMNS ", " FLOW_COLUMNS),
		2, {INT2OID, TIMESTAMPTZOID},
		.per_partition = true
	},
	/* The claim's searches also say whether the queue ($1) has a rate limit. */
	[PLAN_CLAIM_CANDIDATES][JQ_API_1_5] = CLAIM_CANDIDATES_DEF(CANDIDATE_COLUMNS_1_5),
	[PLAN_CLAIM_CANDIDATES_FROM][JQ_API_1_5] = CLAIM_CANDIDATES_FROM_DEF(CANDIDATE_COLUMNS_1_5),
	[PLAN_CLAIM_CANDIDATES_BELOW][JQ_API_1_5] = CLAIM_CANDIDATES_BELOW_DEF(CANDIDATE_COLUMNS_1_5),

	/*
	 * Concurrency keys.  Take a slot of key $2 of queue $1 if fewer than
	 * its limit are taken; either way the key's row stays locked until the
	 * transaction ends, so the jobs that hold and wait for the key's slots
	 * change one transaction at a time.
	 */
	[PLAN_KEY_TAKE_SLOT][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_key_slots AS s (queue, concurrency_key, running)"
		" VALUES ($1, $2, 1)"
		" ON CONFLICT (queue, concurrency_key) DO UPDATE SET running = s.running + 1"
		" WHERE s.running < " KEY_LIMIT("$1", "$2")
		" RETURNING running",
		2, {TEXTOID, TEXTOID}
	},
	[PLAN_KEY_LOCK_SLOTS][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT running, " KEY_LIMIT("$1", "$2") " FROM @S@.queue_key_slots"
		" WHERE queue = $1 AND concurrency_key = $2 FOR UPDATE",
		2, {TEXTOID, TEXTOID}
	},
	/*
	 * The limit of key $2 of queue $1, read again by a statement of its
	 * own once the key's row is locked (RefillKeySlots): its snapshot sees
	 * a limit changed by the transaction that held the row before.
	 */
	[PLAN_KEY_LIMIT_OF][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT " KEY_LIMIT("$1", "$2"),
		2, {TEXTOID, TEXTOID}
	},
	[PLAN_KEY_SET_RUNNING][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "UPDATE @S@.queue_key_slots SET running = $3 WHERE queue = $1 AND concurrency_key = $2",
		3, {TEXTOID, TEXTOID, INT4OID}
	},
	[PLAN_KEY_DROP_SLOTS][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "DELETE FROM @S@.queue_key_slots WHERE queue = $1 AND concurrency_key = $2",
		2, {TEXTOID, TEXTOID}
	},
	/*
	 * The next $3 jobs waiting for a slot of the key, in the order they get
	 * one, take a slot and may run at their own run-at ($4: now).  Run after
	 * the key's row is locked, by a statement of its own: its snapshot then
	 * sees every job that waits for the key, and no other session admits
	 * them meanwhile: so the search locks nothing, and the UPDATE needs no
	 * re-check of flow (which would let the waiting index serve it instead
	 * of the primary keys); a job cancelled meanwhile is just not admitted.
	 */
	[PLAN_KEY_ADMIT_WAITING][JQ_API_1_5] = {
		LET_GO_SQL("'slot'", "$4",
				   "id = ANY (ARRAY(SELECT w.id FROM @S@.queue_jobs w"
				   "   WHERE w.flow = 'key' AND w.queue = $1 AND w.concurrency_key = $2"
				   "   ORDER BY w.priority DESC, w.parked_run_at, w.id LIMIT $3))"),
		4, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
	},
	/*
	 * The keys of queue $1 starting with $2 that have jobs waiting for a
	 * slot, in the order a limit change locks them (AdmitWaitingOfKeys).
	 */
	[PLAN_KEYS_WAITING][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT DISTINCT concurrency_key FROM @S@.queue_jobs"
		" WHERE flow = 'key' AND queue = $1 AND pg_catalog.starts_with(concurrency_key, $2)"
		" ORDER BY concurrency_key",
		2, {TEXTOID, TEXTOID}
	},
	/*
	 * A held-back job ($1) may run: as flow $3 (NULL, or 'slot' when it
	 * took a slot of its key), at its own run-at.
	 */
	[PLAN_FLOW_LET_GO][JQ_API_1_5] = {
		LET_GO_SQL("$3", "$2", "id = $1 AND flow IN ('key', 'parents')"),
		3, {INT8OID, TIMESTAMPTZOID, TEXTOID}
	},
	/* A job whose parents are done, now waiting for a slot of its key. */
	[PLAN_FLOW_WAIT_FOR_KEY][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs SET flow = 'key' WHERE id = $1 AND " FLOW_IS("'parents'"),
		1, {INT8OID}
	},
	[PLAN_JOB_IS_FAILED][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "SELECT 1 FROM @S@.queue_failed_jobs WHERE id = $1",
		1, {INT8OID}
	},
	/* A job with a concurrency key gone to the failed table keeps its key there. */
	[PLAN_FAILED_SET_KEY][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "UPDATE @S@.queue_failed_jobs SET concurrency_key = $2 WHERE id = $1",
		2, {INT8OID, TEXTOID}
	},

	/*
	 * Dependencies.  A parent ($1) is done for the children that wait for
	 * it ($2 false: it completed) or that run anyway ($2 true: it failed):
	 * each waits for one parent less.
	 */
	[PLAN_CHILDREN_DONE][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "WITH done AS ("
		"  DELETE FROM @S@.queue_job_parents WHERE parent = $1 AND (NOT $2 OR run_anyway)"
		"  RETURNING child"
		")"
		" UPDATE @S@.queue_jobs j SET waiting_parents = j.waiting_parents - 1"
		" WHERE j.id = ANY (ARRAY(SELECT child FROM done)) AND " FLOW_IS("'parents'")
		" RETURNING j.id, j.waiting_parents, j.concurrency_key, j.queue",
		2, {INT8OID, BOOLOID}
	},
	/* The children of a failed or cancelled parent ($1) follow it, with error $2 at $3. */
	[PLAN_CHILDREN_FOLLOW][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "WITH moved AS ("
		"  DELETE FROM @S@.queue_jobs"
		"  WHERE id = ANY (ARRAY(SELECT d.child FROM @S@.queue_job_parents d"
		"                        WHERE d.parent = $1 AND NOT d.run_anyway))"
		"   AND " FLOW_IS("'parents'")
		"  RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ", concurrency_key)"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts, $2, $3,"
		"  created_at, concurrency_key FROM moved"
		" RETURNING queue",
		3, {INT8OID, TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_PARENT_FORGET][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "DELETE FROM @S@.queue_job_parents WHERE parent = $1",
		1, {INT8OID}
	},
	/*
	 * The parents of a new child that are live jobs, locked against their
	 * deletion (not against claims) until the child's push commits; then
	 * those not marked yet marked (an UPDATE per child would give one
	 * parent a row version per child).
	 */
	[PLAN_PARENTS_LOCK][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "SELECT id FROM @S@.queue_jobs WHERE id = ANY ($1) FOR KEY SHARE",
		1, {INT8ARRAYOID}
	},
	[PLAN_PARENTS_MARK][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs SET has_children = true WHERE id = ANY ($1) AND NOT has_children",
		1, {INT8ARRAYOID}
	},
	[PLAN_PARENTS_FAILED][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT id FROM @S@.queue_failed_jobs WHERE id = ANY ($1) FOR SHARE",
		1, {INT8ARRAYOID}
	},
	/* A child ($1..$9 as a push's, $10 the parents it waits for), held back. */
	[PLAN_PUSH_CHILD][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs"
		" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
		"  deadline, concurrency_key, flow, parked_run_at, waiting_parents)"
		" VALUES (pg_catalog.nextval('@S@.queue_jobs_id_seq'), $1, $2, $3, $4, $5, " HELD_BACK_AT ","
		"  false, $7, $9, $8, 'parents', $6, $10)"
		" RETURNING id",
		10, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID, INT4OID}
	},
	[PLAN_ADD_PARENTS][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_job_parents (parent, child, run_anyway)"
		" SELECT p, $1, $3 FROM pg_catalog.unnest($2) p",
		3, {INT8OID, INT8ARRAYOID, BOOLOID}
	},

	/*
	 * on_duplicate: the pending job holding a unique key ($1) takes the new
	 * push's payload, priority, attempts, deadline and run-at ($2..$6, at
	 * $7); a held job is left as it is.  A held-back job keeps waiting,
	 * with the new run-at kept for when it may run.
	 */
	[PLAN_REPLACE_PENDING][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "UPDATE @S@.queue_jobs_long"
		" SET payload = $2, priority = $3, max_attempts = $4, deadline = $5,"
		"     available_at = CASE WHEN flow IN ('key', 'parents') THEN available_at ELSE $6 END,"
		"     parked_run_at = CASE WHEN flow IN ('key', 'parents') THEN $6 END,"
		"     ready = CASE WHEN flow IN ('key', 'parents') THEN false ELSE $6 <= $7 END"
		" WHERE id = $1 AND token IS NULL"
		" RETURNING queue, priority, available_at, ready, " WANTS_WAKEUPS_OF("queue_jobs_long.queue"),
		7, {INT8OID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},

	/* The concurrency limits. */
	[PLAN_KEY_LIMIT_SET][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_key_limits AS l (queue, key_prefix, max_running, updated_at)"
		" VALUES ($1, $2, $3, $4)"
		" ON CONFLICT (queue, key_prefix) DO UPDATE"
		" SET max_running = excluded.max_running, updated_at = excluded.updated_at",
		4, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_KEY_LIMIT_REMOVE][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "DELETE FROM @S@.queue_key_limits WHERE queue = $1 AND key_prefix = $2",
		2, {TEXTOID, TEXTOID}
	},
	[PLAN_KEY_LIMIT_LIST][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT queue, key_prefix, max_running FROM @S@.queue_key_limits"
		" ORDER BY queue, key_prefix",
		0, {0}
	},
	/* The keys in use (of queue $1, or all): limit, slots taken, jobs waiting. */
	[PLAN_KEYS_IN_USE][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "WITH waiting AS ("
		"  SELECT queue, concurrency_key, pg_catalog.count(*) AS jobs FROM @S@.queue_jobs"
		"  WHERE flow = 'key' AND ($1::pg_catalog.text IS NULL OR queue = $1)"
		"  GROUP BY queue, concurrency_key"
		"), taken AS ("
		"  SELECT queue, concurrency_key, running FROM @S@.queue_key_slots"
		"  WHERE $1::pg_catalog.text IS NULL OR queue = $1"
		"), keys AS ("
		"  SELECT coalesce(t.queue, w.queue) AS queue,"
		"   coalesce(t.concurrency_key, w.concurrency_key) AS concurrency_key,"
		"   coalesce(t.running, 0) AS running, coalesce(w.jobs, 0) AS waiting"
		"  FROM taken t FULL JOIN waiting w"
		"   ON t.queue = w.queue AND t.concurrency_key = w.concurrency_key"
		")"
		" SELECT k.queue, k.concurrency_key, " KEY_LIMIT("k.queue", "k.concurrency_key") ","
		"  k.running, k.waiting"
		" FROM keys k ORDER BY k.queue, k.concurrency_key",
		1, {TEXTOID}
	},
	/* Per queue (of $1, or all), the jobs held back by flow control. */
	[PLAN_BLOCKED][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT queue, pg_catalog.count(*) FILTER (WHERE flow = 'key'),"
		"  pg_catalog.count(*) FILTER (WHERE flow = 'parents')"
		" FROM @S@.queue_jobs"
		" WHERE flow IN ('key', 'parents') AND ($1::pg_catalog.text IS NULL OR queue = $1)"
		" GROUP BY queue ORDER BY queue",
		1, {TEXTOID}
	},

	/* Rate limits (ratelimit.c). */
	[PLAN_RATE_SET][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_settings AS s (queue, rate_max, rate_per, rate_tat, updated_at)"
		" VALUES ($1, $2, $3, NULL, $4)"
		" ON CONFLICT (queue) DO UPDATE SET rate_max = excluded.rate_max,"
		"  rate_per = excluded.rate_per, rate_tat = NULL, updated_at = excluded.updated_at",
		4, {TEXTOID, INT4OID, INTERVALOID, TIMESTAMPTZOID}
	},
	[PLAN_RATE_REMOVE][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "UPDATE @S@.queue_settings SET rate_max = NULL, rate_per = NULL, rate_tat = NULL,"
		"  updated_at = $2"
		" WHERE queue = $1 AND rate_max IS NOT NULL",
		2, {TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_RATE_LIST][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
		" WHERE rate_max IS NOT NULL ORDER BY queue",
		0, {0}
	},
	[PLAN_RATE_READ][JQ_API_1_5] = {
		JQ_INDEX_PLAN_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
		" WHERE queue = $1 AND rate_max IS NOT NULL",
		1, {TEXTOID}
	},
	/* The claims of a rate-limited queue take their turns on its settings row. */
	[PLAN_RATE_LOCK][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
		" WHERE queue = $1 AND rate_max IS NOT NULL FOR NO KEY UPDATE",
		1, {TEXTOID}
	},
	[PLAN_RATE_STORE][JQ_API_1_5] = {
		JQ_HOT_PATH_MARK "UPDATE @S@.queue_settings SET rate_tat = $2 WHERE queue = $1",
		2, {TEXTOID, TIMESTAMPTZOID}
	},
};

/* Statement names, for the listing of hot-path plans (tests, bench). */
static const char *const plan_names[NUM_QUEUE_PLANS] = {
	[PLAN_PUSH] = "push",
	[PLAN_PUSH_UNIQUE] = "push_unique",
	[PLAN_PUSH_HELD_BACK] = "push_held_back",
	[PLAN_FIND_UNIQUE_HOLDER] = "find_unique_holder",
	[PLAN_FIND_DUE] = "find_due",
	[PLAN_MAKE_READY] = "make_ready",
	[PLAN_FAIL_EXHAUSTED] = "fail_exhausted",
	[PLAN_CLAIM_CANDIDATES] = "claim_candidates",
	[PLAN_CLAIM_UPDATE] = "claim_update",
	[PLAN_DELETE] = "delete",
	[PLAN_LOCK_CLAIMED] = "lock_claimed",
	[PLAN_RELEASE] = "release",
	[PLAN_MOVE_TO_FAILED] = "move_to_failed",
	[PLAN_EXTEND] = "extend",
	[PLAN_PENDING_ALL] = "pending_all",
	[PLAN_PENDING_QUEUE] = "pending_queue",
	[PLAN_STATS] = "stats",
	[PLAN_FAILED_COUNT] = "failed_count",
	[PLAN_FAILED_ROWS] = "failed_rows",
	[PLAN_FAILED_ROWS_QUEUE] = "failed_rows_queue",
	[PLAN_FAILED_ROW_ID] = "failed_row_id",
	[PLAN_RETRY_FAILED_ONE] = "retry_failed_one",
	[PLAN_RETRY_FAILED_ALL] = "retry_failed_all",
	[PLAN_FORGET_FAILED_ONE] = "forget_failed_one",
	[PLAN_FORGET_FAILED_BEFORE] = "forget_failed_before",
	[PLAN_FORGET_FAILED_ALL] = "forget_failed_all",
	[PLAN_TIER_FUNCTIONS] = "tier_functions",
	[PLAN_PUSH_BATCH] = "push_batch",
	[PLAN_QUEUE_WANTS_WAKEUPS] = "queue_wants_wakeups",
	[PLAN_FIND_EXPIRED_READY] = "find_expired_ready",
	[PLAN_NEXT_DUE] = "next_due",
	[PLAN_FAIL_EXPIRED] = "fail_expired",
	[PLAN_CLAIM_CANDIDATES_FROM] = "claim_candidates_from",
	[PLAN_CLAIM_CANDIDATES_BELOW] = "claim_candidates_below",
	[PLAN_LOCK_CLAIMED_MANY] = "lock_claimed_many",
	[PLAN_DELETE_IDS] = "delete_ids",
	[PLAN_CANCEL] = "cancel",
	[PLAN_CLEAR] = "clear",
	[PLAN_SET_PAUSED] = "set_paused",
	[PLAN_SET_DEFAULT_LEASE] = "set_default_lease",
	[PLAN_SET_NOTIFY] = "set_notify",
	[PLAN_LIST] = "list",
	[PLAN_SCHEDULE_LOCK] = "schedule_lock",
	[PLAN_SCHEDULE_UPSERT] = "schedule_upsert",
	[PLAN_SCHEDULE_REMOVE] = "schedule_remove",
	[PLAN_SCHEDULE_LIST] = "schedule_list",
	[PLAN_SCHEDULE_DUE] = "schedule_due",
	[PLAN_SCHEDULE_ADVANCE] = "schedule_advance",
	[PLAN_RING_LIVE_JOBS] = "ring_live_jobs",
	[PLAN_RING_MOVE] = "ring_move",
	[PLAN_OVERVIEW] = "overview",
	[PLAN_PAGE_CANDIDATES] = "page_candidates",
	[PLAN_PAGE_SORTED] = "page_sorted",
	[PLAN_PAGE_BY_ID] = "page_by_id",
	[PLAN_JOB] = "job",
	[PLAN_LEASES] = "leases",
	[PLAN_KEY_TAKE_SLOT] = "key_take_slot",
	[PLAN_KEY_LOCK_SLOTS] = "key_lock_slots",
	[PLAN_KEY_LIMIT_OF] = "key_limit_of",
	[PLAN_KEY_SET_RUNNING] = "key_set_running",
	[PLAN_KEY_DROP_SLOTS] = "key_drop_slots",
	[PLAN_KEY_ADMIT_WAITING] = "key_admit_waiting",
	[PLAN_KEYS_WAITING] = "keys_waiting",
	[PLAN_FLOW_LET_GO] = "flow_let_go",
	[PLAN_FLOW_WAIT_FOR_KEY] = "flow_wait_for_key",
	[PLAN_JOB_IS_FAILED] = "job_is_failed",
	[PLAN_FAILED_SET_KEY] = "failed_set_key",
	[PLAN_CHILDREN_DONE] = "children_done",
	[PLAN_CHILDREN_FOLLOW] = "children_follow",
	[PLAN_PARENT_FORGET] = "parent_forget",
	[PLAN_PARENTS_LOCK] = "parents_lock",
	[PLAN_PARENTS_MARK] = "parents_mark",
	[PLAN_PARENTS_FAILED] = "parents_failed",
	[PLAN_PUSH_CHILD] = "push_child",
	[PLAN_ADD_PARENTS] = "add_parents",
	[PLAN_REPLACE_PENDING] = "replace_pending",
	[PLAN_KEY_LIMIT_SET] = "key_limit_set",
	[PLAN_KEY_LIMIT_REMOVE] = "key_limit_remove",
	[PLAN_KEY_LIMIT_LIST] = "key_limit_list",
	[PLAN_KEYS_IN_USE] = "keys_in_use",
	[PLAN_BLOCKED] = "blocked",
	[PLAN_RATE_SET] = "rate_set",
	[PLAN_RATE_REMOVE] = "rate_remove",
	[PLAN_RATE_LIST] = "rate_list",
	[PLAN_RATE_READ] = "rate_read",
	[PLAN_RATE_LOCK] = "rate_lock",
	[PLAN_RATE_STORE] = "rate_store",
};

static Oid	cached_schema = InvalidOid;
static char *cached_schema_name = NULL;
static SPIPlanPtr cached_plans[NUM_QUEUE_PLANS][JQ_API_COUNT][NUM_JOB_TABLES];

/* Replace every "@S@" in sql with the quoted schema, every "@J@" with the job table. */
static char *
QualifySql(const char *sql, const char *quoted_schema, JobTable table)
{
	StringInfoData buf;
	const char *p = sql;
	const char *hit;

	initStringInfo(&buf);
	while ((hit = strchr(p, '@')) != NULL)
	{
		appendBinaryStringInfo(&buf, p, hit - p);
		if (strncmp(hit, "@S@", 3) == 0)
			appendStringInfoString(&buf, quoted_schema);
		else if (strncmp(hit, "@J@", 3) == 0)
			appendStringInfo(&buf, "%s.%s", quoted_schema, job_table_names[table]);
		else
		{
			appendStringInfoChar(&buf, '@');
			p = hit + 1;
			continue;
		}
		p = hit + 3;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

/* Forget every kept plan: the extension's schema is not what it was. */
static void
ResetPlans(Oid schema)
{
	char	   *name;

	for (int i = 0; i < NUM_QUEUE_PLANS; i++)
		for (int v = 0; v < JQ_API_COUNT; v++)
			for (int t = 0; t < NUM_JOB_TABLES; t++)
			{
				if (cached_plans[i][v][t] != NULL)
					SPI_freeplan(cached_plans[i][v][t]);
				cached_plans[i][v][t] = NULL;
			}
	name = get_namespace_name(schema);
	if (name == NULL)
		elog(ERROR, "jobqueue: schema %u of the called function does not exist", schema);
	if (cached_schema_name != NULL)
		pfree(cached_schema_name);
	cached_schema_name = MemoryContextStrdup(TopMemoryContext, quote_identifier(name));
	cached_schema = schema;
}

/*
 * The quoted name of the extension's schema, kept for the backend's life
 * (and renewed, with every plan, when the schema changes).
 */
const char *
QueueSchemaQuoted(Oid schema)
{
	if (schema != cached_schema)
		ResetPlans(schema);
	return cached_schema_name;
}

/*
 * The kept plan of a statement for the call's version on a job table,
 * prepared on first use.  Must be called between SPI_connect and
 * SPI_finish.
 */
static SPIPlanPtr
QueuePlanOn(const JqCall *call, QueuePlanId id, JobTable table)
{
	int			version = call->version;
	const QueuePlanDef *def;
	SPIPlanPtr	plan;
	char	   *sql;

	if (call->schema != cached_schema)
		ResetPlans(call->schema);
	while (version > 0 && plan_defs[id][version].sql == NULL)
		version--;
	def = &plan_defs[id][version];
	if (def->sql == NULL)
		elog(ERROR, "jobqueue: statement %d does not exist in API version %d",
			 (int) id, (int) call->version);
	if (table != JOBS_ALL && !def->per_partition)
		elog(ERROR, "jobqueue: statement %d does not run on one partition", (int) id);
	if (cached_plans[id][version][table] != NULL)
		return cached_plans[id][version][table];

	sql = QualifySql(def->sql, cached_schema_name, table);
	/*
	 * A generic plan, always: the statements are short and their best plan
	 * does not depend on the values, while planning a custom plan for every
	 * call would cost more than running it.
	 */
	plan = SPI_prepare_cursor(sql, def->nargs, (Oid *) def->argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "jobqueue: SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "jobqueue: SPI_keepplan failed");
	pfree(sql);
	cached_plans[id][version][table] = plan;
	return plan;
}

/* The name of a job table (unqualified). */
const char *
JobTableName(JobTable table)
{
	return job_table_names[table];
}

/* The kept plan of a statement for the call's version, on queue_jobs. */
SPIPlanPtr
QueuePlan(const JqCall *call, QueuePlanId id)
{
	return QueuePlanOn(call, id, JOBS_ALL);
}

/*
 * Run a statement for the call; anything but the expected SPI result is a
 * bug.  The previous result of this SPI connection is released first: a
 * call that runs statements in a loop (a batch, a wait) must not keep
 * every result it has read until SPI_finish.
 */
int
QueueExecute(const JqCall *call, QueuePlanId id, Datum *values, const char *nulls,
			 int expected)
{
	return QueueExecuteOn(call, id, JOBS_ALL, values, nulls, expected);
}

/* QueueExecute, with "@J@" naming the given job table (a partition, since 1.3). */
int
QueueExecuteOn(const JqCall *call, QueuePlanId id, JobTable table, Datum *values,
			   const char *nulls, int expected)
{
	SPIPlanPtr	plan = QueuePlanOn(call, id, table);
	int			rc;

	SPI_freetuptable(SPI_tuptable);
	rc = SPI_execute_plan(plan, values, nulls, false, 0);
	if (rc != expected)
		elog(ERROR, "jobqueue: statement %d returned %s, expected %s", (int) id,
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return rc;
}

/* "PREPARE name(types) AS sql" for a statement on a job table, qualified with schema. */
static char *
PrepareText(const char *name, const QueuePlanDef *def, const char *quoted_schema,
			JobTable table)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "PREPARE %s", name);
	for (int a = 0; a < def->nargs; a++)
		appendStringInfo(&buf, "%s%s", a == 0 ? "(" : ", ", format_type_be(def->argtypes[a]));
	appendStringInfo(&buf, "%s AS %s", def->nargs > 0 ? ")" : "",
					 QualifySql(def->sql, quoted_schema, table));
	return buf.data;
}

/* "EXECUTE name(NULL, ...)": the arguments do not matter to a generic plan. */
static char *
ExecuteText(const char *name, const QueuePlanDef *def)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "EXECUTE %s", name);
	for (int a = 0; a < def->nargs; a++)
		appendStringInfoString(&buf, a == 0 ? "(NULL" : ", NULL");
	if (def->nargs > 0)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}

PG_FUNCTION_INFO_V1(jobqueue_hot_path_statements);

/*
 * jobqueue_hot_path_statements(schema) returns (statement, version, prepare,
 * execute): every hot-path statement of plans.c as the installed extension
 * runs it in that schema, to be PREPAREd and EXPLAINed (plan_cache_mode =
 * force_generic_plan) by the plan-shape test and the bench.  A statement
 * that may run on one partition is listed once more per partition of
 * queue_jobs the schema has ("delete on queue_jobs_ring0").
 * Not part of the extension's SQL API: a test creates it from the library.
 */
Datum
jobqueue_hot_path_statements(PG_FUNCTION_ARGS)
{
	static const char *const version_names[JQ_API_COUNT] = {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			schema;
	const char *quoted_schema;

	ArgRequire(fcinfo, 0, "schema");
	schema = PG_GETARG_OID(0);
	quoted_schema = quote_identifier(get_namespace_name(schema));

	InitMaterializedSRF(fcinfo, 0);
	for (int id = 0; id < NUM_QUEUE_PLANS; id++)
		for (int v = 0; v < JQ_API_COUNT; v++)
			for (int t = 0; t < NUM_JOB_TABLES; t++)
			{
				const QueuePlanDef *def = &plan_defs[id][v];
				char	   *name;
				Datum		values[4];
				bool		nulls[4] = {false, false, false, false};

				if (def->sql == NULL ||
					strncmp(def->sql, JQ_HOT_PATH_MARK, strlen(JQ_HOT_PATH_MARK)) != 0)
					continue;
				if (t != JOBS_ALL &&
					(!def->per_partition ||
					 !OidIsValid(get_relname_relid(job_table_names[t], schema))))
					continue;
				name = psprintf("jq_%s_%d_%d", plan_names[id], v, t);
				values[0] = CStringGetTextDatum(t == JOBS_ALL ? plan_names[id]
												: psprintf("%s on %s", plan_names[id],
														   job_table_names[t]));
				values[1] = CStringGetTextDatum(version_names[v]);
				values[2] = CStringGetTextDatum(PrepareText(name, def, quoted_schema, t));
				values[3] = CStringGetTextDatum(ExecuteText(name, def));
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	return (Datum) 0;
}
