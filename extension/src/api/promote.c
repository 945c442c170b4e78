/*-------------------------------------------------------------------------
 *
 * promote.c
 *	  queue_reserve's first step: the jobs of its queues whose moment has
 *	  come become claimable, or go to the failed table.
 *
 * A delayed job, or a held one whose lease ran out, becomes ready when its
 * moment has come; a held job on its last attempt goes to the failed table
 * instead (its worker died), and (1.1) so does a job past its deadline that
 * is not running.  The claim (reserve.c) then takes the ready ones.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "catalog/pg_type.h"

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
 * Move the jobs of ids $1 to the failed table at $2, each with the error
 * error_sql (an SQL text expression over the job's columns) and its last
 * error after it.
 */
#define FAIL_MOVED_SQL(error_sql) \
	JQ_HOT_PATH_MARK "WITH moved AS (" \
	"  DELETE FROM @J@ WHERE id = ANY ($1) RETURNING *" \
	")" \
	" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")" \
	" SELECT id, id, queue, name, payload, priority, attempts, max_attempts," \
	CUT_ERROR_TEXT(error_sql " || " WITH_LAST_ERROR) "," \
	"  $2, created_at" \
	" FROM moved" \
	" RETURNING queue"

/*
 * The statements of promote.c, run by the statement engine (exec/statements.c);
 * registered once (promote_statements, from the folder's Init).
 */
enum
{
	PLAN_FIND_DUE,
	PLAN_MAKE_READY,
	PLAN_FAIL_EXHAUSTED,
	PLAN_FIND_EXPIRED_READY,
	PLAN_NEXT_DUE,
	PLAN_FAIL_EXPIRED,
	NUM_PROMOTE_STATEMENTS
};

static JqStatement statements[NUM_PROMOTE_STATEMENTS] = {
	[PLAN_FIND_DUE] = {.name = "find_due", .text = {
		/*
		 * Delayed and held jobs of these queues whose moment has come, locked so
		 * two workers do not promote the same row.  "exhausted": a held job on
		 * its last attempt whose lease ran out (its worker died).
		 */
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "SELECT id, attempts >= max_attempts FROM @J@"
			" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
			" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
			2, {TEXTARRAYOID, TIMESTAMPTZOID}
		},
		/*
		 * As PLAN_FIND_DUE, plus jobs past their deadline that are not running
		 * (ready, or their lease ran out): those are failed as expired.
		 */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "SELECT id, attempts >= max_attempts, deadline IS NOT NULL AND deadline <= $2,"
			"  queue, priority, available_at, token IS NOT NULL"
			" FROM @J@"
			" WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2"
			" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
			2, {TEXTARRAYOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_MAKE_READY] = {.name = "make_ready", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "UPDATE @J@ SET ready = true WHERE id = ANY ($1) AND " STILL_WAITING,
			1, {INT8ARRAYOID}
		},
	}},
	[PLAN_FAIL_EXHAUSTED] = {.name = "fail_exhausted", .text = {
		[JQ_API_1_0] = {
			FAIL_MOVED_SQL("'lease expired after the last attempt (' || attempts || ' of ' || max_attempts || ')'"),
			2, {INT8ARRAYOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_FIND_EXPIRED_READY] = {.name = "find_expired_ready", .text = {
		/*
		 * Ready jobs past their deadline (a waiting one is found above).  Two
		 * statements, not one with an OR: each arm then keeps its own partial
		 * index in a generic plan, where an OR made the planner scan the table.
		 */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "SELECT id FROM @J@"
			" WHERE deadline <= $2 AND queue = ANY ($1) AND " STILL_READY
			" LIMIT " SQL_NUMBER(JQ_PROMOTE_BATCH) " FOR UPDATE SKIP LOCKED",
			2, {TEXTARRAYOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_NEXT_DUE] = {.name = "next_due", .text = {
		/*
		 * The earliest moment up to $2 at which a job of these queues falls due:
		 * a delayed or held one becomes claimable, a ready one expires.  Not
		 * locked: a row another claim is promoting still counts.
		 */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "SELECT least("
			" (SELECT pg_catalog.min(available_at) FROM @J@"
			"   WHERE NOT ready AND queue = ANY ($1) AND available_at <= $2),"
			" (SELECT pg_catalog.min(deadline) FROM @J@"
			"   WHERE deadline <= $2 AND queue = ANY ($1) AND " STILL_READY "))",
			2, {TEXTARRAYOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_FAIL_EXPIRED] = {.name = "fail_expired", .text = {
		[JQ_API_1_1] = {
			FAIL_MOVED_SQL("'expired: its deadline (' || deadline || ') passed before it could run'"),
			2, {INT8ARRAYOID, TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet promote_statements = JQ_STATEMENT_SET(statements);

/* Columns of the due-probe (PLAN_FIND_DUE): those after exhausted only since 1.1. */
enum
{
	DUE_ID = 1, DUE_EXHAUSTED, DUE_EXPIRED, DUE_QUEUE, DUE_PRIORITY, DUE_AVAILABLE_AT,
	DUE_HELD					/* its lease ran out */
};

/* Move the jobs with these ids to the failed table with plan's error. */
static void
FailJobs(const JqCall *call, JqStatement *plan, Datum *ids, int count)
{
	Datum		args[2];

	if (count == 0)
		return;
	args[0] = PointerGetDatum(Int8ArrayFromDatums(ids, count));
	args[1] = TimestampTzGetDatum(call->now);
	QueueExecute(call, plan, args, NULL, SPI_OK_INSERT_RETURNING);
	CountJobsOfRows(1, JOB_FAILED);	/* RETURNING queue */
}

/*
 * The earliest moment before horizon at which a job of these queues falls
 * due (becomes claimable or expires), or horizon if none does.
 */
static TimestampTz
NextDueMoment(const JqCall *call, ArrayType *queues, TimestampTz horizon)
{
	Datum		args[2];

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(horizon);
	QueueExecute(call, &statements[PLAN_NEXT_DUE], args, NULL, SPI_OK_SELECT);
	/* least() of two minimums: NULL when no row falls due before horizon */
	if (SpiIsNull(0, 1))
		return horizon;
	return Min(SpiTimestampTz(0, 1), horizon);
}

/* Ready jobs past their deadline (1.1) go to the failed table. */
static bool
FailExpiredReadyJobs(const JqCall *call, ArrayType *queues)
{
	Datum		args[2];
	Datum	   *ids;
	int			count;

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_FIND_EXPIRED_READY], args, NULL, SPI_OK_SELECT);
	count = (int) SPI_processed;
	if (count == 0)
		return false;
	ids = palloc(sizeof(Datum) * count);
	for (int row = 0; row < count; row++)
		ids[row] = Int64GetDatum(SpiInt8(row, 1));	/* its only column, the id */
	FailJobs(call, &statements[PLAN_FAIL_EXPIRED], ids, count);
	return true;
}

/*
 * Step 1: delayed and held jobs of these queues whose moment has come become
 * ready; a held job on its last attempt goes to the failed table instead,
 * and (1.1) so does a job past its deadline that is not running.  In the
 * usual case nothing is due: the probe then finds nothing, and (1.1, with
 * preload) the next claims skip it until something may be due (duehint.c).
 * Returns whether it changed any job (a waiting claim keeps such a round).
 */
bool
PromoteDueJobs(const JqCall *call, ArrayType *queues)
{
	bool		since_1_1 = JqCallSince(call, JQ_API_1_1);
	Datum		args[2];
	Datum	   *ready_ids;
	Datum	   *exhausted_ids;
	Datum	   *expired_ids;
	int			ready_count = 0;
	int			exhausted_count = 0;
	int			expired_count = 0;
	uint64		generation = 0;
	bool		remember = false;
	bool		changed = false;

	if (since_1_1)
	{
		if (DueProbeCanBeSkipped(queues, call->now))
			return false;
		/* read before the probe's snapshot is taken: see duehint.c */
		remember = DueProbeCanBeRemembered(&generation);
		if (FailExpiredReadyJobs(call, queues))
			remember = false, changed = true;
	}

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_FIND_DUE], args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (remember)
			RememberDueProbe(queues, generation, call->now,
							 NextDueMoment(call, queues, DueProbeHorizon(call->now)));
		return changed;
	}

	ready_ids = palloc(sizeof(Datum) * SPI_processed);
	exhausted_ids = palloc(sizeof(Datum) * SPI_processed);
	expired_ids = palloc(sizeof(Datum) * SPI_processed);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		id = Int64GetDatum(SpiInt8(row, DUE_ID));

		if (since_1_1 && SpiBool(row, DUE_HELD))
			CountJobs(SpiText(row, DUE_QUEUE), JOB_EXPIRED, 1);
		if (since_1_1 && SpiBool(row, DUE_EXPIRED))
			expired_ids[expired_count++] = id;
		else if (SpiBool(row, DUE_EXHAUSTED))
			exhausted_ids[exhausted_count++] = id;
		else
		{
			ready_ids[ready_count++] = id;
			if (since_1_1)
			{
				ClaimPosition position = {SpiInt32(row, DUE_PRIORITY),
										  SpiTimestampTz(row, DUE_AVAILABLE_AT),
										  DatumGetInt64(id)};

				/* no wake-up: this claim is about to take what it promoted */
				NoteJobCanRun(SpiTextCopy(row, DUE_QUEUE), &position, true, JOB_EVENT_KINDS,
							  JOB_WAKE_NOBODY, NULL);
			}
		}
	}

	if (ready_count > 0)
	{
		args[0] = PointerGetDatum(Int8ArrayFromDatums(ready_ids, ready_count));
		QueueExecute(call, &statements[PLAN_MAKE_READY], args, NULL, SPI_OK_UPDATE);
	}
	FailJobs(call, &statements[PLAN_FAIL_EXHAUSTED], exhausted_ids, exhausted_count);
	FailJobs(call, &statements[PLAN_FAIL_EXPIRED], expired_ids, expired_count);
	return true;
}
