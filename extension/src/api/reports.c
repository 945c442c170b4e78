/*-------------------------------------------------------------------------
 *
 * reports.c
 *	  queue_pending and queue_stats: what the backlog looks like now.
 *
 * "Now" is the queue's clock.  A job whose lease ran out is due again, so it
 * counts as pending even before a claim promotes it.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "funcapi.h"

PG_FUNCTION_INFO_V1(jobqueue_pending);
PG_FUNCTION_INFO_V1(jobqueue_stats);

/*
 * The statements of reports.c, run by the statement engine (exec/statements.c);
 * registered once (reports_statements, from the folder's Init).
 */
enum
{
	PLAN_PENDING_ALL,
	PLAN_PENDING_QUEUE,
	PLAN_STATS,
	NUM_REPORTS_STATEMENTS
};

static JqStatement statements[NUM_REPORTS_STATEMENTS] = {
	[PLAN_PENDING_ALL] = {.name = "pending_all", .text = {
		/* Claimable now: available_at has come (for a held job: its lease ran out). */
		[JQ_API_1_0] = {
			"SELECT pg_catalog.count(*) FROM @J@ WHERE " IS_PENDING("$1"),
			1, {TIMESTAMPTZOID}
		},
	}},
	[PLAN_PENDING_QUEUE] = {.name = "pending_queue", .text = {
		/* Spelt per "ready" so each arm can use its partial index. */
		[JQ_API_1_0] = {
			"SELECT pg_catalog.count(*) FROM @J@"
			" WHERE (ready AND @QUEUE_IS(queue, $2)@ AND " IS_PENDING("$1") ")"
			"    OR (NOT ready AND queue = $2 AND " IS_PENDING("$1") ")",
			2, {TIMESTAMPTZOID, TEXTOID}
		},
	}},
	[PLAN_STATS] = {.name = "stats", .text = {
		[JQ_API_1_0] = {
			BACKLOG_COUNTS " ORDER BY queue COLLATE \"C\"",
			1, {TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet reports_statements = JQ_STATEMENT_SET(statements);

/* queue_pending(queue): jobs claimable now in queue (NULL: all queues). */
Datum
jobqueue_pending(PG_FUNCTION_ARGS)
{
	JqCall		call;
	text	   *queue;
	Datum		args[2];
	int64		count;

	JqCallBegin(&call, fcinfo, JQ_API_1_0);
	queue = ArgOptionalNameText(fcinfo, 0, "queue", JQ_QUEUE_NAME_MAX);
	args[0] = TimestampTzGetDatum(call.now);
	args[1] = PointerGetDatum(queue);

	SPI_connect();
	QueueExecute(&call, queue ? &statements[PLAN_PENDING_QUEUE] : &statements[PLAN_PENDING_ALL], args, NULL,
				 SPI_OK_SELECT);
	count = SpiInt8(0, 1);		/* count(*) */
	SPI_finish();

	PG_RETURN_INT64(count);
}

/* queue_stats(): pending, delayed, reserved and total per queue. */
Datum
jobqueue_stats(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];

	JqCallBegin(&call, fcinfo, JQ_API_1_0);
	args[0] = TimestampTzGetDatum(call.now);
	return ReturnRowsOf(&call, &statements[PLAN_STATS], args, NULL);
}
