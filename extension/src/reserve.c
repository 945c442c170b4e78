/*-------------------------------------------------------------------------
 *
 * reserve.c
 *	  queue_reserve: claim up to max_jobs due jobs in one call.
 *
 * The call commits with the caller's statement; a worker runs the job after
 * that commit, never inside the claiming transaction.  Two steps:
 *   1. promote: delayed or held jobs of these queues whose moment has come
 *      become ready (a held job on its last attempt goes to the failed
 *      table instead: its worker died);
 *   2. claim: per queue, in precedence order, the best ready jobs, locked
 *      with SKIP LOCKED and updated under a re-check of everything the
 *      search relied on; each gets attempts + 1, a lease and a new token.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(jobqueue_reserve);

#define CLAIM_COLUMNS 11

/* The queues argument: non-empty, no NULL element, each a valid name. */
static ArrayType *
ArgQueues(FunctionCallInfo fcinfo, int argno, Datum **elems, int *count)
{
	ArrayType  *queues;
	bool	   *nulls;

	if (PG_ARGISNULL(argno))
		queues = construct_array((Datum[]) {CStringGetTextDatum("default")}, 1,
								 TEXTOID, -1, false, TYPALIGN_INT);
	else
		queues = PG_GETARG_ARRAYTYPE_P(argno);

	deconstruct_array(queues, TEXTOID, -1, false, TYPALIGN_INT,
					  elems, &nulls, count);
	if (*count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"queues\" must not be empty"),
				 errdetail("Give at least one queue name, such as '{default}'.")));
	for (int i = 0; i < *count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"queues\" must not contain NULL (element %d)", i + 1)));
		CheckNameText(DatumGetTextPP((*elems)[i]), "queues", JQ_QUEUE_NAME_MAX);
	}
	return queues;
}

/*
 * queue_reserve(queues, lease, worker, max_jobs) returns SETOF queue_job,
 * in the order the jobs would have been claimed one by one.
 */
Datum
jobqueue_reserve(PG_FUNCTION_ARGS)
{
	Datum	   *queue_names;
	int			queue_count;
	ArrayType  *queues = ArgQueues(fcinfo, 0, &queue_names, &queue_count);
	Interval   *lease = ArgInterval(fcinfo, 1, "lease", "60 seconds");
	text	   *worker = ArgWorkerText(fcinfo, 2);
	int32		max_jobs = ArgInt(fcinfo, 3, "max_jobs", 1, 1, JQ_MAX_JOBS_LIMIT);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now;
	TimestampTz lease_end;
	int			claimed = 0;
	Datum		promote_args[2];

	CheckLeaseInterval(lease, "lease");
	InitMaterializedSRF(fcinfo, 0);

	now = QueueNow();
	lease_end = QueueTimeAfter(now, lease);

	SPI_connect();

	promote_args[0] = PointerGetDatum(queues);
	promote_args[1] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, PLAN_PROMOTE_DUE), promote_args, NULL, false,
				 SPI_OK_INSERT);

	for (int q = 0; q < queue_count && claimed < max_jobs; q++)
	{
		Datum		args[5];

		CHECK_FOR_INTERRUPTS();
		args[0] = queue_names[q];
		args[1] = Int32GetDatum(max_jobs - claimed);
		args[2] = TimestampTzGetDatum(now);
		args[3] = TimestampTzGetDatum(lease_end);
		args[4] = PointerGetDatum(worker);
		QueueExecute(QueuePlan(fcinfo, PLAN_CLAIM), args, NULL, false, SPI_OK_SELECT);

		for (uint64 row = 0; row < SPI_processed; row++)
		{
			Datum		values[CLAIM_COLUMNS];
			bool		nulls[CLAIM_COLUMNS];

			heap_deform_tuple(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
							  values, nulls);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		claimed += (int) SPI_processed;
	}

	SPI_finish();
	return (Datum) 0;
}
