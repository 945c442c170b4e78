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
	QueueExecute(&call, queue ? PLAN_PENDING_QUEUE : PLAN_PENDING_ALL, args, NULL,
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
	return ReturnRowsOf(&call, PLAN_STATS, args, NULL);
}
