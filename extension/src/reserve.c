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
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_1);
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_2);

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

/* Move the jobs with these ids to the failed table with plan's error. */
static void
FailJobs(FunctionCallInfo fcinfo, QueuePlanId plan, Datum *ids, int count,
		 TimestampTz now)
{
	Datum		args[2];

	if (count == 0)
		return;
	args[0] = PointerGetDatum(Int8ArrayFromDatums(ids, count));
	args[1] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, plan), args, NULL, false, SPI_OK_INSERT);
}

/*
 * The earliest moment before horizon at which a job of these queues falls
 * due (becomes claimable or expires), or horizon if none does.
 */
static TimestampTz
NextDueMoment(FunctionCallInfo fcinfo, ArrayType *queues, TimestampTz horizon)
{
	Datum		args[2];
	bool		isnull;
	Datum		moment;

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(horizon);
	QueueExecute(QueuePlan(fcinfo, PLAN_NEXT_DUE), args, NULL, false, SPI_OK_SELECT);
	moment = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? horizon : Min(DatumGetTimestampTz(moment), horizon);
}

/*
 * Step 1: delayed and held jobs of these queues whose moment has come become
 * ready; a held job on its last attempt goes to the failed table instead,
 * and (1.1) so does a job past its deadline that is not running.  In the
 * usual case nothing is due: the probe then finds nothing, and (1.1, with
 * preload) the next claims skip it until something may be due (duehint.c).
 */
static void
PromoteDueJobs(FunctionCallInfo fcinfo, ArrayType *queues, TimestampTz now,
			   bool schema_1_1)
{
	Datum		args[2];
	Datum	   *ready_ids;
	Datum	   *exhausted_ids;
	Datum	   *expired_ids = NULL;
	int			ready_count = 0;
	int			exhausted_count = 0;
	int			expired_count = 0;
	uint64		generation = 0;
	bool		remember = false;

	if (schema_1_1)
	{
		if (DueProbeCanBeSkipped(queues, now))
			return;
		/* read before the probe's snapshot is taken: see duehint.c */
		remember = DueProbeCanBeRemembered(&generation);
	}

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(now);
	if (schema_1_1)
	{
		QueueExecute(QueuePlan(fcinfo, PLAN_FIND_EXPIRED_READY), args, NULL, false, SPI_OK_SELECT);
		if (SPI_processed > 0)
		{
			expired_ids = palloc(sizeof(Datum) * SPI_processed);
			for (uint64 row = 0; row < SPI_processed; row++)
				expired_ids[expired_count++] = Int64GetDatum(SpiInt8(row, 1));
			FailJobs(fcinfo, PLAN_FAIL_EXPIRED, expired_ids, expired_count, now);
			expired_count = 0;
			remember = false;
		}
	}
	QueueExecute(QueuePlan(fcinfo, schema_1_1 ? PLAN_FIND_DUE_1_1 : PLAN_FIND_DUE),
				 args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (remember)
			RememberDueProbe(queues, generation, now,
							 NextDueMoment(fcinfo, queues, DueProbeHorizon(now)));
		return;
	}

	ready_ids = palloc(sizeof(Datum) * SPI_processed);
	exhausted_ids = palloc(sizeof(Datum) * SPI_processed);
	expired_ids = palloc(sizeof(Datum) * SPI_processed);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		id = Int64GetDatum(SpiInt8(row, 1));

		if (schema_1_1 && SpiBool(row, 3))
			expired_ids[expired_count++] = id;
		else if (SpiBool(row, 2))
			exhausted_ids[exhausted_count++] = id;
		else
			ready_ids[ready_count++] = id;
	}

	if (ready_count > 0)
	{
		args[0] = PointerGetDatum(Int8ArrayFromDatums(ready_ids, ready_count));
		QueueExecute(QueuePlan(fcinfo, PLAN_MAKE_READY), args, NULL, false, SPI_OK_UPDATE);
	}
	FailJobs(fcinfo, PLAN_FAIL_EXHAUSTED, exhausted_ids, exhausted_count, now);
	FailJobs(fcinfo, PLAN_FAIL_EXPIRED, expired_ids, expired_count, now);
}

/*
 * Step 2 for one queue: claim up to limit jobs and add them to the result in
 * claim order.  Returns how many were claimed.
 */
static int
ClaimFromQueue(FunctionCallInfo fcinfo, Datum queue, int limit, TimestampTz now,
			   Interval *lease, text *worker, bool schema_1_1)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			result_columns = rsinfo->setDesc->natts;
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	int			row_columns;
	bool		lease_isnull;
	Datum	   *ids;
	ClaimSlot  *slots;
	HeapTuple  *claimed;
	int			count;

	args[0] = queue;
	args[1] = TimestampTzGetDatum(now);
	args[2] = Int32GetDatum(limit);
	QueueExecute(QueuePlan(fcinfo, schema_1_1 ? PLAN_CLAIM_CANDIDATES_1_1 : PLAN_CLAIM_CANDIDATES),
				 args, NULL, false, SPI_OK_SELECT);
	count = (int) SPI_processed;
	if (count == 0)
		return 0;

	ids = palloc(sizeof(Datum) * count);
	slots = palloc(sizeof(ClaimSlot) * count);
	for (int i = 0; i < count; i++)
	{
		slots[i].id = SpiInt8(i, 1);
		slots[i].position = i;
		ids[i] = Int64GetDatum(slots[i].id);
	}
	qsort(slots, count, sizeof(ClaimSlot), CompareClaimSlots);

	args[0] = PointerGetDatum(Int8ArrayFromDatums(ids, count));
	args[1] = queue;
	args[2] = TimestampTzGetDatum(now);
	args[4] = PointerGetDatum(worker);
	if (schema_1_1)
	{
		/* the lease (NULL: the queue's default) is applied in SQL */
		args[3] = PointerGetDatum(lease);
		if (lease == NULL)
			nulls[3] = 'n';
	}
	else
		args[3] = TimestampTzGetDatum(QueueTimeAfter(now, lease));
	QueueExecute(QueuePlan(fcinfo, schema_1_1 ? PLAN_CLAIM_UPDATE_1_1 : PLAN_CLAIM_UPDATE),
				 args, nulls, false, SPI_OK_UPDATE_RETURNING);
	row_columns = SPI_tuptable->tupdesc->natts;
	/* a claimed job falls due again when its lease ends */
	if (SPI_processed > 0)
		NoteJobDueAt(DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 9, &lease_isnull)));

	/* UPDATE returns rows in storage order: put them back in claim order. */
	claimed = palloc0(sizeof(HeapTuple) * count);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		ClaimSlot	key = {SpiInt8(row, 1), 0};
		ClaimSlot  *slot = bsearch(&key, slots, count, sizeof(ClaimSlot), CompareClaimSlots);

		if (slot == NULL)
			elog(ERROR, "jobqueue: claimed job " INT64_FORMAT " was not a candidate", key.id);
		claimed[slot->position] = SPI_tuptable->vals[row];
	}

	for (int i = 0; i < count; i++)
	{
		Datum	   *values;
		bool	   *row_nulls;

		if (claimed[i] == NULL)
			continue;
		/* columns the caller's queue_job has beyond ours stay NULL */
		values = palloc0(sizeof(Datum) * Max(result_columns, row_columns));
		row_nulls = palloc(sizeof(bool) * Max(result_columns, row_columns));
		memset(row_nulls, true, sizeof(bool) * Max(result_columns, row_columns));
		heap_deform_tuple(claimed[i], SPI_tuptable->tupdesc, values, row_nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, row_nulls);
	}
	return (int) SPI_processed;
}

/*
 * queue_reserve(queues, lease, worker, max_jobs [, wait]) returns SETOF
 * queue_job, in the order the jobs would have been claimed one by one.
 * From 1.1 a NULL lease is each queue's default lease, paused queues hand
 * out nothing and jobs past their deadline are failed instead of handed
 * out.  From 1.2, with nothing due, it waits up to "wait" for a job to
 * become due (see waiting.c).
 */
static Datum
ReserveFromArgs(FunctionCallInfo fcinfo, bool schema_1_1, bool can_wait)
{
	Datum	   *queue_names;
	int			queue_count;
	ArrayType  *queues = ArgQueues(fcinfo, 0, &queue_names, &queue_count);
	Interval   *lease = NULL;
	text	   *worker = ArgWorkerText(fcinfo, 2);
	int32		max_jobs = ArgInt(fcinfo, 3, "max_jobs", 1, 1, JQ_MAX_JOBS_LIMIT);
	TimestampTz wait_until = 0;
	bool		waiting = false;
	int			claimed = 0;

	if (!schema_1_1 || !PG_ARGISNULL(1))
		lease = ArgInterval(fcinfo, 1, "lease", "60 seconds");
	if (lease != NULL)
		CheckLeaseInterval(lease, "lease");
	if (can_wait && !PG_ARGISNULL(4))
	{
		Interval   *wait = PG_GETARG_INTERVAL_P(4);
		Interval	one_hour = {USECS_PER_HOUR, 0, 0};

		CheckNonNegativeInterval(wait, "wait");
		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(wait),
											  IntervalPGetDatum(&one_hour))) > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"wait\" must be at most 1 hour")));
		/* real time, not the queue's clock: the wait is for this caller */
		wait_until = QueueTimeAfter(GetCurrentTimestamp(), wait);
		waiting = wait_until > GetCurrentTimestamp();
	}
	InitMaterializedSRF(fcinfo, 0);

	SPI_connect();
	for (;;)
	{
		TimestampTz now = QueueNow();
		long		left_ms;

		if (waiting)
			PrepareToWaitForJobs();
		PromoteDueJobs(fcinfo, queues, now, schema_1_1);
		for (int q = 0; q < queue_count && claimed < max_jobs; q++)
		{
			CHECK_FOR_INTERRUPTS();
			claimed += ClaimFromQueue(fcinfo, queue_names[q], max_jobs - claimed,
									  now, lease, worker, schema_1_1);
		}
		left_ms = (long) ((wait_until - GetCurrentTimestamp()) / 1000);
		if (claimed > 0 || !waiting || left_ms <= 0)
			break;
		/* delayed jobs fall due without a wake-up: look again at least every second */
		WaitForJobs(Min(left_ms, 1000));
	}
	if (waiting)
		DoneWaitingForJobs();
	SPI_finish();

	return (Datum) 0;
}

/* queue_reserve, 1.0 schema */
Datum
jobqueue_reserve(PG_FUNCTION_ARGS)
{
	return ReserveFromArgs(fcinfo, false, false);
}

/* queue_reserve, 1.1 schema: pause, per-queue default lease, deadlines */
Datum
jobqueue_reserve_1_1(PG_FUNCTION_ARGS)
{
	return ReserveFromArgs(fcinfo, true, false);
}

/* queue_reserve(..., wait), 1.2: waits for a job when none is due */
Datum
jobqueue_reserve_1_2(PG_FUNCTION_ARGS)
{
	return ReserveFromArgs(fcinfo, true, true);
}
