/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  The fixed statements of the extension, prepared once per backend.
 *
 * Each statement is written with "@S@" where the extension's schema goes;
 * the schema is taken from the namespace of the SQL function being called
 * (it is the extension's schema) and quoted in.  Together with the
 * functions' fixed search_path this keeps a caller's search_path from
 * redirecting any query.  Plans are kept with SPI_keepplan; if the schema
 * changes (extension dropped and created elsewhere), all are rebuilt.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#define MAX_PLAN_ARGS 12

typedef struct QueuePlanDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[MAX_PLAN_ARGS];
} QueuePlanDef;

/* Columns copied when a job moves to the failed table. */
#define FAILED_COLUMNS \
	"id, job_id, queue, name, payload, priority, attempts, max_attempts, " \
	"error, failed_at, created_at"

/* Held by a claim (live when available_at, the lease's end, is ahead). */
#define HELD "(NOT ready AND token IS NOT NULL)"

/*
 * The backlog per queue at time $1.  reserved: held by a live lease;
 * delayed: not held, due later; pending: the rest (due now, including jobs
 * whose lease ran out).
 */
#define BACKLOG_COUNTS \
	"SELECT queue," \
	"  pg_catalog.count(*) FILTER (WHERE available_at <= $1) AS pending," \
	"  pg_catalog.count(*) FILTER (WHERE available_at > $1 AND NOT " HELD ") AS delayed," \
	"  pg_catalog.count(*) FILTER (WHERE available_at > $1 AND " HELD ") AS reserved," \
	"  pg_catalog.count(*) AS total" \
	" FROM @S@.queue_jobs GROUP BY queue"

/* True unless the queue's settings turn wake-ups off; $1 is the queue. */
#define WANTS_WAKEUPS \
	"NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $1 AND NOT s.notify)"

/* The lease of a claim: the given one ($4), the queue's ($2) default, or 60 s. */
#define CLAIM_LEASE \
	"coalesce($4, (SELECT s.default_lease FROM @S@.queue_settings s WHERE s.queue = $2)," \
	" interval '60 seconds')"

/* True unless the queue ($1) is paused. */
#define NOT_PAUSED \
	"NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $1 AND s.paused)"

/* The job's last error on a line of its own, when it has one. */
#define WITH_LAST_ERROR \
	"CASE WHEN last_error <> '' THEN pg_catalog.chr(10) || 'last error: ' || last_error ELSE '' END"

/*
 * An error text composed in SQL, kept within JQ_ERROR_TEXT_MAX bytes like
 * CutErrorText does: 14,996 characters are at most 59,984 bytes, so with
 * the marker the result stays under 60,000 and is cut between characters.
 */
#define CUT_ERROR_TEXT(expr) \
	" CASE WHEN pg_catalog.octet_length(" expr ") <= 60000 THEN " expr \
	" ELSE pg_catalog.left(" expr ", 14996) || pg_catalog.chr(10) || '... truncated' END"

/* Puts the rows of "moved" back into queue_jobs, as a retry does. */
#define RETRY_INSERT \
	" INSERT INTO @S@.queue_jobs" \
	"  (id, queue, name, payload, attempts, max_attempts, priority, unique_key," \
	"   available_at, ready, last_error, created_at)" \
	" SELECT id, queue, name, payload, 0, $2, priority, NULL, $3, true, '', created_at" \
	" FROM moved"

static const QueuePlanDef plan_defs[NUM_QUEUE_PLANS] = {
	[PLAN_PUSH] = {
		"INSERT INTO @S@.queue_jobs"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7)"
		" RETURNING id",
		7, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},
	/* A held key is expected, not an error: DO NOTHING, then find the holder. */
	[PLAN_PUSH_UNIQUE] = {
		"INSERT INTO @S@.queue_jobs"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at, unique_key)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8)"
		" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
		" RETURNING id",
		8, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
	},
	[PLAN_FIND_UNIQUE_HOLDER] = {
		"SELECT id FROM @S@.queue_jobs WHERE unique_key = $1",
		1, {TEXTOID}
	},

	/*
	 * Delayed and held jobs of these queues whose moment has come, locked so
	 * two workers do not promote the same row.  "exhausted": a held job on
	 * its last attempt whose lease ran out (its worker died).
	 */
	[PLAN_FIND_DUE] = {
		"SELECT id, attempts >= max_attempts FROM @S@.queue_jobs"
		" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
		" LIMIT 1000 FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	[PLAN_MAKE_READY] = {
		"UPDATE @S@.queue_jobs SET ready = true WHERE id = ANY ($1) AND NOT ready",
		1, {INT8ARRAYOID}
	},
	[PLAN_FAIL_EXHAUSTED] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_jobs WHERE id = ANY ($1) RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		CUT_ERROR_TEXT("'lease expired after the last attempt (' || attempts || ' of ' || max_attempts || ')'"
					   " || " WITH_LAST_ERROR) ","
		"  $2, created_at"
		" FROM moved",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},

	/*
	 * The claim, in two statements so that each keeps a good generic plan
	 * (a join of the two would be planned for a guessed batch size): the
	 * best ready jobs in claim order, locked with SKIP LOCKED so workers
	 * step past each other; then the UPDATE that re-checks everything the
	 * search relied on.
	 */
	[PLAN_CLAIM_CANDIDATES] = {
		"SELECT id FROM @S@.queue_jobs"
		" WHERE ready AND queue = $1 AND available_at <= $2"
		" ORDER BY priority DESC, available_at, id"
		" LIMIT $3 FOR UPDATE SKIP LOCKED",
		3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
	},
	[PLAN_CLAIM_UPDATE] = {
		"UPDATE @S@.queue_jobs"
		" SET ready = false, attempts = attempts + 1, available_at = $4,"
		"     reserved_until = $4, reserved_by = $5,"
		"     token = pg_catalog.nextval('@S@.queue_job_tokens')"
		" WHERE id = ANY ($1) AND ready AND queue = $2 AND available_at <= $3"
		"   AND attempts < max_attempts"
		" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
		"   reserved_until, created_at, last_error",
		5, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
	},

	[PLAN_DELETE] = {
		"DELETE FROM @S@.queue_jobs WHERE id = $1 AND token = $2",
		2, {INT8OID, INT8OID}
	},
	[PLAN_LOCK_CLAIMED] = {
		"SELECT attempts, max_attempts, queue FROM @S@.queue_jobs"
		" WHERE id = $1 AND token = $2 FOR UPDATE",
		2, {INT8OID, INT8OID}
	},
	[PLAN_RELEASE] = {
		"UPDATE @S@.queue_jobs"
		" SET ready = $3 <= $4, available_at = $3, reserved_until = NULL,"
		"     reserved_by = NULL, token = NULL, last_error = $5"
		" WHERE id = $1 AND token = $2",
		5, {INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
	},
	/* One statement, so a job is never in both tables nor in neither. */
	[PLAN_MOVE_TO_FAILED] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_jobs WHERE id = $1 AND token = $2 RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		"  CASE WHEN $3 <> '' THEN $3"
		"   WHEN last_error <> '' THEN last_error"
		"   ELSE 'failed by the worker (no error given)' END,"
		"  $4, created_at FROM moved"
		" RETURNING id",
		4, {INT8OID, INT8OID, TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_EXTEND] = {
		"UPDATE @S@.queue_jobs"
		" SET ready = false, available_at = $3, reserved_until = $3"
		" WHERE id = $1 AND token = $2",
		3, {INT8OID, INT8OID, TIMESTAMPTZOID}
	},

	/* Claimable now: available_at has come (for a held job: its lease ran out). */
	[PLAN_PENDING_ALL] = {
		"SELECT pg_catalog.count(*) FROM @S@.queue_jobs WHERE available_at <= $1",
		1, {TIMESTAMPTZOID}
	},
	/* Spelt per "ready" so each arm can use its partial index. */
	[PLAN_PENDING_QUEUE] = {
		"SELECT pg_catalog.count(*) FROM @S@.queue_jobs"
		" WHERE (ready AND queue = $2 AND available_at <= $1)"
		"    OR (NOT ready AND queue = $2 AND available_at <= $1)",
		2, {TIMESTAMPTZOID, TEXTOID}
	},
	[PLAN_STATS] = {
		BACKLOG_COUNTS " ORDER BY queue COLLATE \"C\"",
		1, {TIMESTAMPTZOID}
	},

	[PLAN_FAILED_COUNT] = {
		"SELECT pg_catalog.count(*) FROM @S@.queue_failed_jobs",
		0, {0}
	},
	[PLAN_FAILED_ROWS] = {
		"SELECT * FROM @S@.queue_failed_jobs ORDER BY failed_at DESC, id DESC LIMIT $1",
		1, {INT4OID}
	},
	[PLAN_FAILED_ROWS_QUEUE] = {
		"SELECT * FROM @S@.queue_failed_jobs WHERE queue = $2"
		" ORDER BY failed_at DESC, id DESC LIMIT $1",
		2, {INT4OID, TEXTOID}
	},
	[PLAN_FAILED_ROW_ID] = {
		"SELECT * FROM @S@.queue_failed_jobs WHERE id = $3 AND ($2::pg_catalog.text IS NULL OR queue = $2)",
		3, {INT4OID, TEXTOID, INT8OID}
	},
	/* Each row moves back in one statement: it is never in both tables. */
	[PLAN_RETRY_FAILED_ONE] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
		")" RETRY_INSERT,
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	/* $1 (the id) is unused here: both retry plans take the same arguments */
	[PLAN_RETRY_FAILED_ALL] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
		")" RETRY_INSERT,
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_FORGET_FAILED_ONE] = {
		"DELETE FROM @S@.queue_failed_jobs WHERE id = $1",
		1, {INT8OID}
	},
	[PLAN_FORGET_FAILED_BEFORE] = {
		"DELETE FROM @S@.queue_failed_jobs WHERE failed_at < $1",
		1, {TIMESTAMPTZOID}
	},
	[PLAN_FORGET_FAILED_ALL] = {
		"DELETE FROM @S@.queue_failed_jobs",
		0, {0}
	},

	/* The extension's own functions, by name, as text signatures. */
	[PLAN_TIER_FUNCTIONS] = {
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

	[PLAN_PUSH_1_1] = {
		"INSERT INTO @S@.queue_jobs"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at, deadline)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $9)"
		" RETURNING id, " WANTS_WAKEUPS,
		9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID}
	},
	[PLAN_PUSH_UNIQUE_1_1] = {
		"INSERT INTO @S@.queue_jobs"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
		"  unique_key, deadline)"
		" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8, $9)"
		" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
		" RETURNING id, " WANTS_WAKEUPS,
		9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
			TEXTOID, TIMESTAMPTZOID}
	},
	/* Jobs without unique keys, in one statement; ids come back in input order. */
	[PLAN_PUSH_BATCH] = {
		"INSERT INTO @S@.queue_jobs"
		" (queue, name, payload, priority, max_attempts, available_at, ready, created_at, deadline)"
		" SELECT q, n, p, pr, ma, av, av <= $7, $7, dl"
		" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3),"
		"   pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6),"
		"   pg_catalog.unnest($8)) AS u(q, n, p, pr, ma, av, dl)"
		" RETURNING id",
		8, {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
			TIMESTAMPTZARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID}
	},
	[PLAN_QUEUE_WANTS_WAKEUPS] = {
		"SELECT " WANTS_WAKEUPS,
		1, {TEXTOID}
	},

	/*
	 * As PLAN_FIND_DUE, plus jobs past their deadline that are not running
	 * (ready, or their lease ran out): those are failed as expired.
	 */
	[PLAN_FIND_DUE_1_1] = {
		"SELECT id, attempts >= max_attempts, deadline IS NOT NULL AND deadline <= $2"
		" FROM @S@.queue_jobs"
		" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
		" LIMIT 1000 FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	/*
	 * Ready jobs past their deadline (a waiting one is found above).  Two
	 * statements, not one with an OR: each arm then keeps its own partial
	 * index in a generic plan, where an OR made the planner scan the table.
	 */
	[PLAN_FIND_EXPIRED_READY] = {
		"SELECT id FROM @S@.queue_jobs"
		" WHERE deadline <= $2 AND queue = ANY ($1) AND ready"
		" LIMIT 1000 FOR UPDATE SKIP LOCKED",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	/*
	 * The earliest moment up to $2 at which a job of these queues falls due:
	 * a delayed or held one becomes claimable, a ready one expires.  Not
	 * locked: a row another claim is promoting still counts.
	 */
	[PLAN_NEXT_DUE] = {
		"SELECT least("
		" (SELECT pg_catalog.min(available_at) FROM @S@.queue_jobs"
		"   WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2),"
		" (SELECT pg_catalog.min(deadline) FROM @S@.queue_jobs"
		"   WHERE deadline <= $2 AND queue = ANY ($1) AND ready))",
		2, {TEXTARRAYOID, TIMESTAMPTZOID}
	},
	[PLAN_FAIL_EXPIRED] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_jobs WHERE id = ANY ($1) RETURNING *"
		")"
		" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
		" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
		CUT_ERROR_TEXT("'expired: its deadline (' || deadline || ') passed before it could run'"
					   " || " WITH_LAST_ERROR) ","
		"  $2, created_at"
		" FROM moved",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},
	/* As the 1.0 claim, skipping paused queues and expired jobs. */
	[PLAN_CLAIM_CANDIDATES_1_1] = {
		"SELECT id FROM @S@.queue_jobs"
		" WHERE ready AND queue = $1 AND available_at <= $2"
		"   AND (deadline IS NULL OR deadline > $2) AND " NOT_PAUSED
		" ORDER BY priority DESC, available_at, id"
		" LIMIT $3 FOR UPDATE SKIP LOCKED",
		3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
	},
	/* $4 NULL: the queue's default lease, or 60 seconds. */
	[PLAN_CLAIM_UPDATE_1_1] = {
		"UPDATE @S@.queue_jobs"
		" SET ready = false, attempts = attempts + 1,"
		"     available_at = $3 + " CLAIM_LEASE ","
		"     reserved_until = $3 + " CLAIM_LEASE ","
		"     reserved_by = $5,"
		"     token = pg_catalog.nextval('@S@.queue_job_tokens')"
		" WHERE id = ANY ($1) AND ready AND queue = $2 AND available_at <= $3"
		"   AND attempts < max_attempts AND (deadline IS NULL OR deadline > $3)"
		"   AND NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $2 AND s.paused)"
		" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
		"   reserved_until, created_at, last_error, deadline",
		5, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, INTERVALOID, TEXTOID}
	},

	/* Batch completion: lock the jobs, pair tokens in C, then delete. */
	[PLAN_LOCK_CLAIMED_MANY] = {
		"SELECT id, token FROM @S@.queue_jobs WHERE id = ANY ($1) ORDER BY id FOR UPDATE",
		1, {INT8ARRAYOID}
	},
	[PLAN_DELETE_IDS] = {
		"DELETE FROM @S@.queue_jobs WHERE id = ANY ($1)",
		1, {INT8ARRAYOID}
	},
	[PLAN_RETRY_FAILED_ONE_1_1] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
		")" RETRY_INSERT " RETURNING queue",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},
	[PLAN_RETRY_FAILED_ALL_1_1] = {
		"WITH moved AS ("
		"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
		")" RETRY_INSERT " RETURNING queue",
		3, {INT8OID, INT4OID, TIMESTAMPTZOID}
	},

	/* A job held by a live claim is only cancelled with force ($2). */
	[PLAN_CANCEL] = {
		"DELETE FROM @S@.queue_jobs"
		" WHERE id = $1 AND ($2 OR ready OR token IS NULL OR available_at <= $3)",
		3, {INT8OID, BOOLOID, TIMESTAMPTZOID}
	},
	[PLAN_CLEAR] = {
		"DELETE FROM @S@.queue_jobs WHERE queue = $1",
		1, {TEXTOID}
	},
	[PLAN_SET_PAUSED] = {
		"INSERT INTO @S@.queue_settings AS s (queue, paused, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at",
		3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
	},
	[PLAN_SET_DEFAULT_LEASE] = {
		"INSERT INTO @S@.queue_settings AS s (queue, default_lease, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE"
		" SET default_lease = excluded.default_lease, updated_at = excluded.updated_at",
		3, {TEXTOID, INTERVALOID, TIMESTAMPTZOID}
	},
	[PLAN_SET_NOTIFY] = {
		"INSERT INTO @S@.queue_settings AS s (queue, notify, updated_at) VALUES ($1, $2, $3)"
		" ON CONFLICT (queue) DO UPDATE SET notify = excluded.notify, updated_at = excluded.updated_at",
		3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
	},
	[PLAN_LIST] = {
		"SELECT coalesce(c.queue, s.queue), coalesce(s.paused, false), s.default_lease,"
		"  coalesce(s.notify, true), coalesce(c.pending, 0), coalesce(c.delayed, 0),"
		"  coalesce(c.reserved, 0), coalesce(c.total, 0)"
		" FROM (" BACKLOG_COUNTS ") c"
		" FULL JOIN @S@.queue_settings s ON s.queue = c.queue"
		" ORDER BY coalesce(c.queue, s.queue) COLLATE \"C\"",
		1, {TIMESTAMPTZOID}
	},

	/* ---- 1.2: recurring schedules ---- */

	[PLAN_SCHEDULE_LOCK] = {
		"SELECT last_window FROM @S@.queue_schedules WHERE name = $1 FOR UPDATE",
		1, {TEXTOID}
	},
	[PLAN_SCHEDULE_UPSERT] = {
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
	[PLAN_SCHEDULE_REMOVE] = {
		"DELETE FROM @S@.queue_schedules WHERE name = $1",
		1, {TEXTOID}
	},
	[PLAN_SCHEDULE_LIST] = {
		"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled,"
		"  catch_up, next_due, last_window, last_job_id"
		" FROM @S@.queue_schedules ORDER BY name COLLATE \"C\"",
		0, {0}
	},
	/* Due schedules, locked: a concurrent tick skips them instead of waiting. */
	[PLAN_SCHEDULE_DUE] = {
		"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone,"
		"  catch_up, next_due"
		" FROM @S@.queue_schedules WHERE enabled AND next_due <= $1"
		" ORDER BY next_due LIMIT 100 FOR UPDATE SKIP LOCKED",
		1, {TIMESTAMPTZOID}
	},
	[PLAN_SCHEDULE_ADVANCE] = {
		"UPDATE @S@.queue_schedules"
		" SET next_due = $2, last_window = $3, last_job_id = $4, updated_at = $5"
		" WHERE name = $1",
		5, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID}
	},
};

static Oid	cached_schema = InvalidOid;
static char *cached_schema_name = NULL;
static SPIPlanPtr cached_plans[NUM_QUEUE_PLANS];

/* Replace every "@S@" in sql with the quoted schema name. */
static char *
QualifySql(const char *sql, const char *quoted_schema)
{
	StringInfoData buf;
	const char *p = sql;
	const char *hit;

	initStringInfo(&buf);
	while ((hit = strstr(p, "@S@")) != NULL)
	{
		appendBinaryStringInfo(&buf, p, hit - p);
		appendStringInfoString(&buf, quoted_schema);
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
	{
		if (cached_plans[i] != NULL)
			SPI_freeplan(cached_plans[i]);
		cached_plans[i] = NULL;
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
 * The kept plan for a statement, prepared on first use.  Must be called
 * between SPI_connect and SPI_finish.
 */
SPIPlanPtr
QueuePlan(FunctionCallInfo fcinfo, QueuePlanId id)
{
	Oid			schema = get_func_namespace(fcinfo->flinfo->fn_oid);
	const QueuePlanDef *def = &plan_defs[id];
	SPIPlanPtr	plan;
	char	   *sql;

	if (schema != cached_schema)
		ResetPlans(schema);
	if (cached_plans[id] != NULL)
		return cached_plans[id];

	sql = QualifySql(def->sql, cached_schema_name);
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
	cached_plans[id] = plan;
	return plan;
}

/* The quoted schema name of the last QueuePlan call. */
const char *
QueueSchemaName(void)
{
	return cached_schema_name;
}

/* Execute a kept plan; anything but the expected SPI result is a bug. */
int
QueueExecute(SPIPlanPtr plan, Datum *values, const char *nulls, bool read_only,
			 int expected)
{
	int			rc = SPI_execute_plan(plan, values, nulls, read_only, 0);

	if (rc != expected)
		elog(ERROR, "jobqueue: statement returned %s, expected %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return rc;
}

/* An int8[] of the given values, for "id = ANY ($1)" parameters. */
ArrayType *
Int8ArrayFromDatums(Datum *values, int count)
{
	return construct_array(values, count, INT8OID, sizeof(int64),
						   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

/* Column (1-based) of row of the last SPI result as int8; NULL reads as 0. */
int64
SpiInt8(uint64 row, int column)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									  column, &isnull);

	return isnull ? 0 : DatumGetInt64(value);
}

/* Column (1-based) of row of the last SPI result as boolean; NULL is false. */
bool
SpiBool(uint64 row, int column)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									  column, &isnull);

	return !isnull && DatumGetBool(value);
}
