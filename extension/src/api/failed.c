/*-------------------------------------------------------------------------
 *
 * failed.c
 *	  Failed-job management: count, list, retry, forget.
 *
 * A failed row is keyed by its job's id.  A retry moves the row back to
 * queue_jobs under that id in one statement, so a job is never in both
 * tables nor in neither.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_failed_count);
PG_FUNCTION_INFO_V1(jobqueue_failed_rows);
PG_FUNCTION_INFO_V1(jobqueue_failed_rows_1_1);
PG_FUNCTION_INFO_V1(jobqueue_retry_failed);
PG_FUNCTION_INFO_V1(jobqueue_retry_failed_1_1);
PG_FUNCTION_INFO_V1(jobqueue_forget_failed);

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
 * The statements of failed.c, run by the statement engine (exec/statements.c);
 * registered once (failed_statements, from the folder's Init).
 */
enum
{
	PLAN_FAILED_COUNT,
	PLAN_FAILED_ROWS,
	PLAN_FAILED_ROWS_QUEUE,
	PLAN_FAILED_ROW_ID,
	PLAN_RETRY_FAILED_ONE,
	PLAN_RETRY_FAILED_ALL,
	PLAN_FORGET_FAILED_ONE,
	PLAN_FORGET_FAILED_BEFORE,
	PLAN_FORGET_FAILED_ALL,
	NUM_FAILED_STATEMENTS
};

static JqStatement statements[NUM_FAILED_STATEMENTS] = {
	[PLAN_FAILED_COUNT] = {.name = "failed_count", .text = {
		[JQ_API_1_0] = {
			"SELECT pg_catalog.count(*) FROM @S@.queue_failed_jobs",
			0, {0}
		},
	}},
	[PLAN_FAILED_ROWS] = {.name = "failed_rows", .text = {
		[JQ_API_1_0] = {
			"SELECT * FROM @S@.queue_failed_jobs ORDER BY failed_at DESC, id DESC LIMIT $1",
			1, {INT4OID}
		},
	}},
	[PLAN_FAILED_ROWS_QUEUE] = {.name = "failed_rows_queue", .text = {
		[JQ_API_1_0] = {
			"SELECT * FROM @S@.queue_failed_jobs WHERE queue = $2"
			" ORDER BY failed_at DESC, id DESC LIMIT $1",
			2, {INT4OID, TEXTOID}
		},
	}},
	[PLAN_FAILED_ROW_ID] = {.name = "failed_row_id", .text = {
		[JQ_API_1_0] = {
			"SELECT * FROM @S@.queue_failed_jobs WHERE id = $3 AND ($2::pg_catalog.text IS NULL OR queue = $2)",
			3, {INT4OID, TEXTOID, INT8OID}
		},
	}},
	[PLAN_RETRY_FAILED_ONE] = {.name = "retry_failed_one", .text = {
		/* Each row moves back in one statement: it is never in both tables. */
		[JQ_API_1_0] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
			")" RETRY_INSERT,
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
		[JQ_API_1_1] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
			")" RETRY_INSERT " RETURNING queue, priority, id",
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
		/* A retried job keeps its concurrency key (and so waits for a slot again). */
		[JQ_API_1_5] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs WHERE id = $1 RETURNING *"
			")" RETRY_INSERT_1_5 " RETURNING queue, priority, id, concurrency_key",
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_RETRY_FAILED_ALL] = {.name = "retry_failed_all", .text = {
		/* $1 (the id) is unused here: both retry plans take the same arguments */
		[JQ_API_1_0] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
			")" RETRY_INSERT,
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
		[JQ_API_1_1] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
			")" RETRY_INSERT " RETURNING queue, priority, id",
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
		[JQ_API_1_5] = {
			"WITH moved AS ("
			"  DELETE FROM @S@.queue_failed_jobs RETURNING *"
			")" RETRY_INSERT_1_5 " RETURNING queue, priority, id, concurrency_key",
			3, {INT8OID, INT4OID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_FORGET_FAILED_ONE] = {.name = "forget_failed_one", .text = {
		[JQ_API_1_0] = {
			"DELETE FROM @S@.queue_failed_jobs WHERE id = $1",
			1, {INT8OID}
		},
	}},
	[PLAN_FORGET_FAILED_BEFORE] = {.name = "forget_failed_before", .text = {
		[JQ_API_1_0] = {
			"DELETE FROM @S@.queue_failed_jobs WHERE failed_at < $1",
			1, {TIMESTAMPTZOID}
		},
	}},
	[PLAN_FORGET_FAILED_ALL] = {.name = "forget_failed_all", .text = {
		[JQ_API_1_0] = {
			"DELETE FROM @S@.queue_failed_jobs",
			0, {0}
		},
	}},
};

JqStatementSet failed_statements = JQ_STATEMENT_SET(statements);

/* queue_failed_count(): rows in the failed table. */
Datum
jobqueue_failed_count(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64		count;

	JqCallBegin(&call, fcinfo, JQ_API_1_0);
	SPI_connect();
	QueueExecute(&call, &statements[PLAN_FAILED_COUNT], NULL, NULL, SPI_OK_SELECT);
	count = SpiInt8(0, 1);		/* count(*) */
	SPI_finish();

	PG_RETURN_INT64(count);
}

/*
 * queue_failed_rows(max_rows [, queue, id]): the newest failed rows first;
 * from 1.1 only those of queue, or only the job id, when given.
 */
static Datum
FailedRows(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	int32		max_rows;
	text	   *queue = NULL;
	bool		by_id = false;
	Datum		args[3];
	char		nulls[3] = {' ', ' ', ' '};
	JqStatement *plan = &statements[PLAN_FAILED_ROWS];

	JqCallBegin(&call, fcinfo, version);
	max_rows = ArgInt(fcinfo, 0, "max_rows", JQ_DEFAULT_FAILED_ROWS, 1, PG_INT32_MAX);
	if (JqCallSince(&call, JQ_API_1_1))
	{
		queue = ArgOptionalNameText(fcinfo, 1, "queue", JQ_QUEUE_NAME_MAX);
		by_id = !PG_ARGISNULL(2);
	}
	args[0] = Int32GetDatum(max_rows);
	args[1] = PointerGetDatum(queue);
	nulls[1] = queue ? ' ' : 'n';
	args[2] = by_id ? PG_GETARG_DATUM(2) : Int64GetDatum(0);
	if (by_id)
		plan = &statements[PLAN_FAILED_ROW_ID];
	else if (queue)
		plan = &statements[PLAN_FAILED_ROWS_QUEUE];

	return ReturnRowsOf(&call, plan, args, nulls);
}

Datum
jobqueue_failed_rows(PG_FUNCTION_ARGS)
{
	return FailedRows(fcinfo, JQ_API_1_0);
}

Datum
jobqueue_failed_rows_1_1(PG_FUNCTION_ARGS)
{
	return FailedRows(fcinfo, JQ_API_1_1);
}

/*
 * queue_retry_failed(id, max_attempts): requeue one failed job (all when id
 * is NULL) under its original id, attempts 0, due now, no unique key.
 * Returns how many were requeued.  From 1.1 the statement returns each
 * requeued job's queue, and those queues are woken.
 */
static Datum
Retry(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	JqCall		retry_call;
	bool		returns_queues;
	bool		all_rows = PG_ARGISNULL(0);
	Datum		args[3];
	int64		moved;

	JqCallBeginWriting(&call, fcinfo, version);
	returns_queues = JqCallSince(&call, JQ_API_1_1);
	args[0] = all_rows ? Int64GetDatum(0) : PG_GETARG_DATUM(0);
	args[1] = Int32GetDatum(ArgInt(fcinfo, 1, "max_attempts", JQ_DEFAULT_MAX_ATTEMPTS, 1,
								   JQ_MAX_ATTEMPTS_LIMIT));
	args[2] = TimestampTzGetDatum(call.now);

	/* a retried job keeps every column the installed schema has */
	retry_call = call;
	retry_call.version = Max(call.version, InstalledApiVersion());
	SPI_connect();
	QueueExecute(&retry_call, all_rows ? &statements[PLAN_RETRY_FAILED_ALL] : &statements[PLAN_RETRY_FAILED_ONE], args, NULL,
				 returns_queues ? SPI_OK_INSERT_RETURNING : SPI_OK_INSERT);
	moved = (int64) SPI_processed;
	if (returns_queues && moved > 0)
	{
		List	   *queues = NIL;
		bool		has_keys = JqCallSince(&retry_call, JQ_API_1_5);
		SPITupleTable *retried = SpiTakeResult();

		for (uint64 row = 0; row < (uint64) moved; row++)
		{
			/* RETURNING queue, priority, id (1.5: concurrency_key); due now */
			HeapTuple	tuple = retried->vals[row];
			bool		isnull;
			bool		no_key = true;
			text	   *queue = DatumGetTextPCopy(SPI_getbinval(tuple, retried->tupdesc, 1, &isnull));
			int64		id = DatumGetInt64(SPI_getbinval(tuple, retried->tupdesc, 3, &isnull));
			Datum		key = has_keys ? SPI_getbinval(tuple, retried->tupdesc, 4, &no_key) : 0;
			ClaimPosition position = {DatumGetInt32(SPI_getbinval(tuple, retried->tupdesc, 2,
																  &isnull)),
									  call.now, id};

			/* a job with a concurrency key came back held back: a slot, or a wait */
			if (!no_key)
			{
				CountJobs(queue, JOB_RETRIED, 1);
				AdmitToFreeSlot(&retry_call, id, queue, DatumGetTextPCopy(key));
				continue;
			}
			NoteJobCanRun(queue, &position, true, JOB_RETRIED, JOB_WAKE_IF_WANTED, &queues);
		}
		SPI_freetuptable(retried);
		WakeQueuesThatWantIt(&call, queues);
	}
	SPI_finish();

	PG_RETURN_INT64(moved);
}

Datum
jobqueue_retry_failed(PG_FUNCTION_ARGS)
{
	return Retry(fcinfo, JQ_API_1_0);
}

Datum
jobqueue_retry_failed_1_1(PG_FUNCTION_ARGS)
{
	return Retry(fcinfo, JQ_API_1_1);
}

/*
 * queue_forget_failed(id, before, all_rows): delete failed rows by id, or
 * older than before, or all.  Exactly one of the three must be given, so a
 * forgotten argument never turns into an unconditional delete.
 */
Datum
jobqueue_forget_failed(PG_FUNCTION_ARGS)
{
	JqCall		call;
	bool		by_id = !PG_ARGISNULL(0);
	bool		by_age = !PG_ARGISNULL(1);
	bool		all_rows = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	Datum		args[1] = {0};
	JqStatement *plan;
	int64		deleted;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_0);
	if ((int) by_id + (int) by_age + (int) all_rows != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("queue_forget_failed needs exactly one of \"id\", \"before\" or \"all_rows => true\""),
				 errdetail("Got %d of them.", (int) by_id + (int) by_age + (int) all_rows)));
	if (by_id)
	{
		plan = &statements[PLAN_FORGET_FAILED_ONE];
		args[0] = PG_GETARG_DATUM(0);
	}
	else if (by_age)
	{
		plan = &statements[PLAN_FORGET_FAILED_BEFORE];
		args[0] = PG_GETARG_DATUM(1);
	}
	else
		plan = &statements[PLAN_FORGET_FAILED_ALL];

	deleted = (int64) RunAlone(&call, plan, args, NULL, SPI_OK_DELETE);

	PG_RETURN_INT64(deleted);
}
