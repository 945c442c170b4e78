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

/* Position of a claimed id in claim order, for putting the batch in order. */
typedef struct ClaimSlot
{
	int64		id;
	int			position;
} ClaimSlot;

static int
CompareClaimSlots(const void *a, const void *b)
{
	int64		x = ((const ClaimSlot *) a)->id;
	int64		y = ((const ClaimSlot *) b)->id;

	return (x > y) - (x < y);
}

static int64
RowInt8(uint64 row, int column)
{
	bool		isnull;

	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
									   column, &isnull));
}

/*
 * Step 1: delayed and held jobs of these queues whose moment has come become
 * ready; a held job on its last attempt goes to the failed table instead.
 * In the usual case nothing is due and this is one index probe.
 */
static void
PromoteDueJobs(FunctionCallInfo fcinfo, ArrayType *queues, TimestampTz now)
{
	Datum		args[2];
	Datum	   *ready_ids;
	Datum	   *exhausted_ids;
	int			ready_count = 0;
	int			exhausted_count = 0;

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, PLAN_FIND_DUE), args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;

	ready_ids = palloc(sizeof(Datum) * SPI_processed);
	exhausted_ids = palloc(sizeof(Datum) * SPI_processed);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		bool		isnull;
		bool		exhausted = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[row],
														   SPI_tuptable->tupdesc, 2, &isnull));

		if (exhausted)
			exhausted_ids[exhausted_count++] = Int64GetDatum(RowInt8(row, 1));
		else
			ready_ids[ready_count++] = Int64GetDatum(RowInt8(row, 1));
	}

	if (ready_count > 0)
	{
		args[0] = PointerGetDatum(Int8ArrayFromDatums(ready_ids, ready_count));
		QueueExecute(QueuePlan(fcinfo, PLAN_MAKE_READY), args, NULL, false, SPI_OK_UPDATE);
	}
	if (exhausted_count > 0)
	{
		args[0] = PointerGetDatum(Int8ArrayFromDatums(exhausted_ids, exhausted_count));
		QueueExecute(QueuePlan(fcinfo, PLAN_FAIL_EXHAUSTED), args, NULL, false, SPI_OK_INSERT);
	}
}

/*
 * Step 2 for one queue: claim up to limit jobs and add them to the result in
 * claim order.  Returns how many were claimed.
 */
static int
ClaimFromQueue(FunctionCallInfo fcinfo, Datum queue, int limit, TimestampTz now,
			   TimestampTz lease_end, text *worker)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			result_columns = rsinfo->setDesc->natts;
	Datum		args[5];
	Datum	   *ids;
	ClaimSlot  *slots;
	HeapTuple  *claimed;
	int			count;

	args[0] = queue;
	args[1] = TimestampTzGetDatum(now);
	args[2] = Int32GetDatum(limit);
	QueueExecute(QueuePlan(fcinfo, PLAN_CLAIM_CANDIDATES), args, NULL, false, SPI_OK_SELECT);
	count = (int) SPI_processed;
	if (count == 0)
		return 0;

	ids = palloc(sizeof(Datum) * count);
	slots = palloc(sizeof(ClaimSlot) * count);
	for (int i = 0; i < count; i++)
	{
		slots[i].id = RowInt8(i, 1);
		slots[i].position = i;
		ids[i] = Int64GetDatum(slots[i].id);
	}
	qsort(slots, count, sizeof(ClaimSlot), CompareClaimSlots);

	args[0] = PointerGetDatum(Int8ArrayFromDatums(ids, count));
	args[1] = queue;
	args[2] = TimestampTzGetDatum(now);
	args[3] = TimestampTzGetDatum(lease_end);
	args[4] = PointerGetDatum(worker);
	QueueExecute(QueuePlan(fcinfo, PLAN_CLAIM_UPDATE), args, NULL, false,
				 SPI_OK_UPDATE_RETURNING);

	/* UPDATE returns rows in storage order: put them back in claim order. */
	claimed = palloc0(sizeof(HeapTuple) * count);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		ClaimSlot	key = {RowInt8(row, 1), 0};
		ClaimSlot  *slot = bsearch(&key, slots, count, sizeof(ClaimSlot), CompareClaimSlots);

		if (slot == NULL)
			elog(ERROR, "jobqueue: claimed job " INT64_FORMAT " was not a candidate", key.id);
		claimed[slot->position] = SPI_tuptable->vals[row];
	}

	for (int i = 0; i < count; i++)
	{
		Datum	   *values;
		bool	   *nulls;

		if (claimed[i] == NULL)
			continue;
		/* columns the caller's queue_job has beyond ours stay NULL */
		values = palloc0(sizeof(Datum) * Max(result_columns, CLAIM_COLUMNS));
		nulls = palloc(sizeof(bool) * Max(result_columns, CLAIM_COLUMNS));
		memset(nulls, true, sizeof(bool) * Max(result_columns, CLAIM_COLUMNS));
		heap_deform_tuple(claimed[i], SPI_tuptable->tupdesc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (int) SPI_processed;
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
	TimestampTz now;
	TimestampTz lease_end;
	int			claimed = 0;

	CheckLeaseInterval(lease, "lease");
	InitMaterializedSRF(fcinfo, 0);

	now = QueueNow();
	lease_end = QueueTimeAfter(now, lease);

	SPI_connect();
	PromoteDueJobs(fcinfo, queues, now);
	for (int q = 0; q < queue_count && claimed < max_jobs; q++)
	{
		CHECK_FOR_INTERRUPTS();
		claimed += ClaimFromQueue(fcinfo, queue_names[q], max_jobs - claimed,
								  now, lease_end, worker);
	}
	SPI_finish();

	return (Datum) 0;
}
