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
	JobRemoval	removal;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	ArgRequire(fcinfo, 0, "id");
	args[0] = PG_GETARG_DATUM(0);
	args[1] = BoolGetDatum(!PG_ARGISNULL(1) && PG_GETARG_BOOL(1));
	args[2] = TimestampTzGetDatum(call.now);

	/* a cancelled parent takes its children with it (flow.c) */
	removal = SetJobRemoval(JOB_REMOVAL_CANCELLED);
	cancelled = RunAloneFindingJob(&call, PLAN_CANCEL, args, NULL, SPI_OK_DELETE) == 1;
	SetJobRemoval(removal);

	PG_RETURN_BOOL(cancelled);
}

/* queue_clear(queue): delete every job of the queue; returns how many. */
Datum
jobqueue_clear(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	int64		deleted;
	JobRemoval	removal;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));

	removal = SetJobRemoval(JOB_REMOVAL_CANCELLED);
	deleted = (int64) RunAlone(&call, PLAN_CLEAR, args, NULL, SPI_OK_DELETE);
	SetJobRemoval(removal);

	PG_RETURN_INT64(deleted);
}

/* Write one setting of a queue: plan's upsert with (queue, value, now). */
static void
WriteSetting(FunctionCallInfo fcinfo, QueuePlanId plan, Datum value, bool value_isnull)
{
	JqCall		call;
	Datum		args[3];
	char		nulls[3] = {' ', value_isnull ? 'n' : ' ', ' '};

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = value;
	args[2] = TimestampTzGetDatum(call.now);

	RunAlone(&call, plan, args, nulls, SPI_OK_INSERT);
}

/* queue_pause(queue): claims hand out nothing from it; its jobs stay. */
Datum
jobqueue_pause(PG_FUNCTION_ARGS)
{
	WriteSetting(fcinfo, PLAN_SET_PAUSED, BoolGetDatum(true), false);
	PG_RETURN_VOID();
}

/* queue_resume(queue) */
Datum
jobqueue_resume(PG_FUNCTION_ARGS)
{
	WriteSetting(fcinfo, PLAN_SET_PAUSED, BoolGetDatum(false), false);
	PG_RETURN_VOID();
}

/* queue_set_default_lease(queue, lease): NULL goes back to the contract's default. */
Datum
jobqueue_set_default_lease(PG_FUNCTION_ARGS)
{
	Interval   *lease = ArgOptionalLease(fcinfo, 1, "lease");

	WriteSetting(fcinfo, PLAN_SET_DEFAULT_LEASE, PointerGetDatum(lease), lease == NULL);
	PG_RETURN_VOID();
}

/* queue_set_notify(queue, enabled): NOTIFY wake-ups on or off. */
Datum
jobqueue_set_notify(PG_FUNCTION_ARGS)
{
	ArgRequire(fcinfo, 1, "enabled");
	WriteSetting(fcinfo, PLAN_SET_NOTIFY, PG_GETARG_DATUM(1), false);
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
	return ReturnRowsOf(&call, PLAN_LIST, args, NULL);
}
