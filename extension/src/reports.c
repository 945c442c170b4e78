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
#include "jobqueue.h"

#include "funcapi.h"

PG_FUNCTION_INFO_V1(jobqueue_pending);
PG_FUNCTION_INFO_V1(jobqueue_stats);

/* queue_pending(queue): jobs claimable now in queue (NULL: all queues). */
Datum
jobqueue_pending(PG_FUNCTION_ARGS)
{
	text	   *queue = ArgOptionalNameText(fcinfo, 0, "queue", JQ_QUEUE_NAME_MAX);
	Datum		args[2];
	int64		count;

	args[0] = TimestampTzGetDatum(QueueNow());
	args[1] = PointerGetDatum(queue);

	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, queue ? PLAN_PENDING_QUEUE : PLAN_PENDING_ALL),
				 args, NULL, false, SPI_OK_SELECT);
	count = SpiInt8(0, 1);
	SPI_finish();

	PG_RETURN_INT64(count);
}

/* queue_stats(): pending, delayed, reserved and total per queue. */
Datum
jobqueue_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		args[1];

	InitMaterializedSRF(fcinfo, 0);
	args[0] = TimestampTzGetDatum(QueueNow());

	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, PLAN_STATS), args, NULL, false, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		CHECK_FOR_INTERRUPTS();
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[row]);
	}
	SPI_finish();

	return (Datum) 0;
}
