/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  Queue administration (1.1): cancel a job, clear a queue, pause and
 *	  resume, a per-queue default lease, wake-ups on or off, and the list of
 *	  queues with their settings beside their backlog.
 *
 * Settings live in queue_settings, one row per queue that has any; a queue
 * without a row is not paused, leases JQ_DEFAULT_LEASE_SECONDS and sends
 * wake-ups.  A
 * pause takes effect for every claim that starts after it commits.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_cancel);
PG_FUNCTION_INFO_V1(jobqueue_clear);
PG_FUNCTION_INFO_V1(jobqueue_pause);
PG_FUNCTION_INFO_V1(jobqueue_resume);
PG_FUNCTION_INFO_V1(jobqueue_set_default_lease);
PG_FUNCTION_INFO_V1(jobqueue_set_notify);
PG_FUNCTION_INFO_V1(jobqueue_list);

/*
 * The statements of admin.c, run by the statement engine (exec/statements.c);
 * registered once (admin_statements, from the folder's Init).
 */
enum
{
	PLAN_CANCEL,
	PLAN_CLEAR,
	PLAN_SET_PAUSED,
	PLAN_SET_DEFAULT_LEASE,
	PLAN_SET_NOTIFY,
	PLAN_LIST,
	NUM_ADMIN_STATEMENTS
};

static JqStatement statements[NUM_ADMIN_STATEMENTS] = {
	[PLAN_CANCEL] = {.name = "cancel", .text = {
		/* A job held by a live claim is only cancelled with force ($2). */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "DELETE FROM @J@"
			" WHERE id = $1 AND ($2 OR ready OR token IS NULL OR available_at <= $3)",
			3, {INT8OID, BOOLOID, TIMESTAMPTZOID},
			.per_partition = true
		},
	}},
	[PLAN_CLEAR] = {.name = "clear", .text = {
		[JQ_API_1_1] = {
			"DELETE FROM @J@ WHERE queue = $1",
			1, {TEXTOID}
		},
	}},
	[PLAN_SET_PAUSED] = {.name = "set_paused", .text = {
		[JQ_API_1_1] = {
			"INSERT INTO @S@.queue_settings AS s (queue, paused, updated_at) VALUES ($1, $2, $3)"
			" ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at",
			3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_SET_DEFAULT_LEASE] = {.name = "set_default_lease", .text = {
		[JQ_API_1_1] = {
			"INSERT INTO @S@.queue_settings AS s (queue, default_lease, updated_at) VALUES ($1, $2, $3)"
			" ON CONFLICT (queue) DO UPDATE"
			" SET default_lease = excluded.default_lease, updated_at = excluded.updated_at",
			3, {TEXTOID, INTERVALOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_SET_NOTIFY] = {.name = "set_notify", .text = {
		[JQ_API_1_1] = {
			"INSERT INTO @S@.queue_settings AS s (queue, notify, updated_at) VALUES ($1, $2, $3)"
			" ON CONFLICT (queue) DO UPDATE SET notify = excluded.notify, updated_at = excluded.updated_at",
			3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_LIST] = {.name = "list", .text = {
		[JQ_API_1_1] = {
			"SELECT coalesce(c.queue, s.queue), coalesce(s.paused, false), s.default_lease,"
			"  coalesce(s.notify, true), coalesce(c.pending, 0), coalesce(c.delayed, 0),"
			"  coalesce(c.reserved, 0), coalesce(c.total, 0)"
			" FROM (" BACKLOG_COUNTS ") c"
			" FULL JOIN @S@.queue_settings s ON s.queue = c.queue"
			" ORDER BY coalesce(c.queue, s.queue) COLLATE \"C\"",
			1, {TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet admin_statements = JQ_STATEMENT_SET(statements);

/*
 * queue_cancel(id, force): delete a job that is not running.  A job held by
 * a live claim is left alone (false) unless force; its worker's later calls
 * then get false.  Returns whether a job was deleted.
 */
Datum
jobqueue_cancel(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[3];
	bool		cancelled;
	JobTable	found;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	ArgRequire(fcinfo, 0, "id");
	args[0] = PG_GETARG_DATUM(0);
	args[1] = BoolGetDatum(!PG_ARGISNULL(1) && PG_GETARG_BOOL(1));
	args[2] = TimestampTzGetDatum(call.now);

	/* a cancelled parent takes its children with it (flow.c) */
	SPI_connect();
	cancelled = RemoveJobs(&call, JOB_REMOVAL_CANCELLED, &statements[PLAN_CANCEL], JOBS_ALL,
						   args, NULL, SPI_OK_DELETE, &found) == 1;
	SPI_finish();

	PG_RETURN_BOOL(cancelled);
}

/* queue_clear(queue): delete every job of the queue; returns how many. */
Datum
jobqueue_clear(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	int64		deleted;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));

	SPI_connect();
	deleted = (int64) RemoveJobs(&call, JOB_REMOVAL_CANCELLED, &statements[PLAN_CLEAR], JOBS_ALL,
								 args, NULL, SPI_OK_DELETE, NULL);
	SPI_finish();

	PG_RETURN_INT64(deleted);
}

/* Write one setting of a queue: plan's upsert with (queue, value, now). */
static void
WriteSetting(FunctionCallInfo fcinfo, JqStatement *plan, Datum value, bool value_isnull)
{
	JqCall		call;
	Datum		args[3];
	char		nulls[3] = {' ', value_isnull ? 'n' : ' ', ' '};

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = value;
	args[2] = TimestampTzGetDatum(call.now);

	RunAlone(&call, plan, args, nulls, SPI_OK_INSERT);
	/* the pushes of every session read the queue's settings again (settings_row.c) */
	ForgetQueueSettingsAtCommit(&call);
}

/* queue_pause(queue): claims hand out nothing from it; its jobs stay. */
Datum
jobqueue_pause(PG_FUNCTION_ARGS)
{
	WriteSetting(fcinfo, &statements[PLAN_SET_PAUSED], BoolGetDatum(true), false);
	PG_RETURN_VOID();
}

/* queue_resume(queue) */
Datum
jobqueue_resume(PG_FUNCTION_ARGS)
{
	WriteSetting(fcinfo, &statements[PLAN_SET_PAUSED], BoolGetDatum(false), false);
	PG_RETURN_VOID();
}

/* queue_set_default_lease(queue, lease): NULL goes back to the contract's default. */
Datum
jobqueue_set_default_lease(PG_FUNCTION_ARGS)
{
	Interval   *lease = ArgOptionalLease(fcinfo, 1, "lease");

	WriteSetting(fcinfo, &statements[PLAN_SET_DEFAULT_LEASE], PointerGetDatum(lease), lease == NULL);
	PG_RETURN_VOID();
}

/* queue_set_notify(queue, enabled): NOTIFY wake-ups on or off. */
Datum
jobqueue_set_notify(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 1, "enabled");
	WriteSetting(fcinfo, &statements[PLAN_SET_NOTIFY], PG_GETARG_DATUM(1), false);
	PG_RETURN_VOID();
}

/* queue_list(): every queue with jobs or settings, ordered by name. */
Datum
jobqueue_list(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];

	JqCallBegin(&call, fcinfo, JQ_API_1_1);
	args[0] = TimestampTzGetDatum(call.now);
	return ReturnRowsOf(&call, &statements[PLAN_LIST], args, NULL);
}
