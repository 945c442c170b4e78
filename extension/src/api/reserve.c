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
 *      (1.5) A queue with a rate limit hands out as many as it allows.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "access/xlog.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* Columns (1-based) of the rows a claim's UPDATE returns, a queue_job. */
typedef enum ClaimedColumn
{
	CLAIMED_ID = 1,
	CLAIMED_QUEUE,
	CLAIMED_NAME,
	CLAIMED_PAYLOAD,
	CLAIMED_ATTEMPTS,
	CLAIMED_MAX_ATTEMPTS,
	CLAIMED_PRIORITY,
	CLAIMED_TOKEN,
	CLAIMED_RESERVED_UNTIL,
	CLAIMED_CREATED_AT,
	CLAIMED_LAST_ERROR,
	CLAIMED_DEADLINE			/* since 1.1 */
} ClaimedColumn;

/* Columns of the claim candidates (PLAN_CLAIM_CANDIDATES and its _FROM, _BELOW). */
typedef enum ClaimCandidateColumn
{
	CANDIDATE_ID = 1,
	CANDIDATE_PRIORITY,
	CANDIDATE_AVAILABLE_AT,
	CANDIDATE_PARTITION,		/* since 1.3: its partition's relation id */
	CANDIDATE_RATE_LIMITED		/* since 1.5: its queue has a rate limit */
} ClaimCandidateColumn;

PG_FUNCTION_INFO_V1(jobqueue_reserve);
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_1);
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_2);
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_3);
PG_FUNCTION_INFO_V1(jobqueue_reserve_1_5);

/* The queues argument: non-empty, no NULL element, each a valid name. */
static ArrayType *
ArgQueues(FunctionCallInfo fcinfo, int argno, Datum **elems, int *count)
{
	ArrayType  *queues;
	bool	   *nulls;

	if (PG_ARGISNULL(argno))
		queues = construct_array((Datum[]) {CStringGetTextDatum(JQ_DEFAULT_QUEUE)}, 1,
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

/* A candidate's place in the batch, for putting the claimed rows in claim order. */
typedef struct ClaimSlot
{
	int64		id;				/* first: sorted with CompareLeadingIds */
	int			position;		/* in the batch, in claim order */
} ClaimSlot;

/* The candidates of one queue, in claim order. */
typedef struct Candidates
{
	int			count;
	Datum	   *ids;
	ClaimPosition *positions;	/* each one's claim position */
	ClaimSlot  *slots;			/* sorted by id */
	bool		rate_limited;	/* 1.5: their queue has a rate limit */
	JobTable	searched;		/* 1.3: the one partition searched, else JOBS_ALL */
	Oid			partition;		/* 1.3: the partition holding them all, if one does */
	bool		several;		/* 1.3: they are in several partitions */
} Candidates;

/* Columns of the due-probe (PLAN_FIND_DUE): those after exhausted only since 1.1. */
enum
{
	DUE_ID = 1, DUE_EXHAUSTED, DUE_EXPIRED, DUE_QUEUE, DUE_PRIORITY, DUE_AVAILABLE_AT,
	DUE_HELD					/* its lease ran out */
};

/* Move the jobs with these ids to the failed table with plan's error. */
static void
FailJobs(const JqCall *call, QueuePlanId plan, Datum *ids, int count)
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
	QueueExecute(call, PLAN_NEXT_DUE, args, NULL, SPI_OK_SELECT);
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
	QueueExecute(call, PLAN_FIND_EXPIRED_READY, args, NULL, SPI_OK_SELECT);
	count = (int) SPI_processed;
	if (count == 0)
		return false;
	ids = palloc(sizeof(Datum) * count);
	for (int row = 0; row < count; row++)
		ids[row] = Int64GetDatum(SpiInt8(row, 1));	/* its only column, the id */
	FailJobs(call, PLAN_FAIL_EXPIRED, ids, count);
	return true;
}

/*
 * Step 1: delayed and held jobs of these queues whose moment has come become
 * ready; a held job on its last attempt goes to the failed table instead,
 * and (1.1) so does a job past its deadline that is not running.  In the
 * usual case nothing is due: the probe then finds nothing, and (1.1, with
 * preload) the next claims skip it until something may be due (duehint.c).
 */
static void
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

	if (since_1_1)
	{
		if (DueProbeCanBeSkipped(queues, call->now))
			return;
		/* read before the probe's snapshot is taken: see duehint.c */
		remember = DueProbeCanBeRemembered(&generation);
		if (FailExpiredReadyJobs(call, queues))
			remember = false;
	}

	args[0] = PointerGetDatum(queues);
	args[1] = TimestampTzGetDatum(call->now);
	QueueExecute(call, PLAN_FIND_DUE, args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		if (remember)
			RememberDueProbe(queues, generation, call->now,
							 NextDueMoment(call, queues, DueProbeHorizon(call->now)));
		return;
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

				NoteClaimable(SpiTextCopy(row, DUE_QUEUE), &position);
			}
		}
	}

	if (ready_count > 0)
	{
		args[0] = PointerGetDatum(Int8ArrayFromDatums(ready_ids, ready_count));
		QueueExecute(call, PLAN_MAKE_READY, args, NULL, SPI_OK_UPDATE);
	}
	FailJobs(call, PLAN_FAIL_EXHAUSTED, exhausted_ids, exhausted_count);
	FailJobs(call, PLAN_FAIL_EXPIRED, expired_ids, expired_count);
}

/* What a claim hands out, the same for every queue of the call. */
typedef struct ClaimTerms
{
	Interval   *lease;			/* NULL (1.1): each queue's default lease */
	text	   *worker;
} ClaimTerms;

/*
 * Run one candidate search and append its rows (in claim order) to the
 * candidates.
 */
static void
AddCandidates(const JqCall *call, QueuePlanId plan, JobTable search, Datum *args,
			  Candidates *found)
{
	bool		knows_partition = JqCallSince(call, JQ_API_1_3);

	QueueExecuteOn(call, plan, search, args, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		int			i = found->count++;

		if (knows_partition)
		{
			Oid			partition = SpiOid(row, CANDIDATE_PARTITION);

			found->several |= i > 0 && partition != found->partition;
			found->partition = partition;
		}
		if (JqCallSince(call, JQ_API_1_5))
			found->rate_limited = SpiBool(row, CANDIDATE_RATE_LIMITED);
		found->positions[i].id = SpiInt8(row, CANDIDATE_ID);
		found->positions[i].priority = SpiInt32(row, CANDIDATE_PRIORITY);
		found->positions[i].available_at = SpiTimestampTz(row, CANDIDATE_AVAILABLE_AT);
		found->ids[i] = Int64GetDatum(found->positions[i].id);
		found->slots[i].id = found->positions[i].id;
		found->slots[i].position = i;
	}
}

/*
 * Lock up to limit ready jobs of queue in claim order, searching from the
 * head or, when start says so, from the queue's claim position: the rest
 * of its priority, then the lower priorities.
 */
static void
FindClaimCandidates(const JqCall *call, Datum queue, int limit, const ClaimStart *start,
					Candidates *found)
{
	Datum		args[6];
	JobTable	search = JOBS_ALL;

	found->count = 0;
	found->rate_limited = false;
	found->partition = InvalidOid;
	found->searched = JOBS_ALL;
	found->several = false;
	found->ids = palloc(sizeof(Datum) * limit);
	found->positions = palloc(sizeof(ClaimPosition) * limit);
	found->slots = palloc(sizeof(ClaimSlot) * limit);
	if (JqCallSince(call, JQ_API_1_3) && !ClaimSearchTable(call, &search))
		return;					/* every partition is empty */
	found->searched = search;
	args[0] = queue;
	args[1] = TimestampTzGetDatum(call->now);
	args[2] = Int32GetDatum(limit);
	if (start == NULL || !start->from_position)
		AddCandidates(call, PLAN_CLAIM_CANDIDATES, search, args, found);
	else
	{
		args[3] = Int32GetDatum(start->at.priority);
		args[4] = TimestampTzGetDatum(start->at.available_at);
		args[5] = Int64GetDatum(start->at.id);
		AddCandidates(call, PLAN_CLAIM_CANDIDATES_FROM, search, args, found);
		if (found->count < limit)
		{
			args[2] = Int32GetDatum(limit - found->count);
			AddCandidates(call, PLAN_CLAIM_CANDIDATES_BELOW, search, args, found);
		}
	}
	qsort(found->slots, found->count, sizeof(ClaimSlot), CompareLeadingIds);
}

/*
 * What every fencing token of this server adds to the token sequence's
 * value: the timeline, in the bits from 48 up.  A standby promoted after
 * asynchronous replication may not have received the WAL that advanced
 * the sequence for the old primary's last claims, and would hand out
 * those values again, perhaps to the same jobs; a worker still holding
 * such a lost claim could then finish the new claim's job.  Promotion
 * starts a new timeline, so no token after it equals one before it
 * (while the sequence stays below 2^48, and for 32,767 timelines).  On
 * timeline 1 tokens are the sequence's values, as before.
 */
static int64
FencingTokenBase(void)
{
	TimeLineID	timeline = GetWALInsertionTimeLine();

	return (int64) ((timeline - 1) % 32767) << 48;
}

/*
 * Claim the candidates: one UPDATE that re-checks what the search relied
 * on.  A 1.0 claim passes the lease's end; from 1.1 the lease itself, NULL
 * for the queue's default, applied in SQL.
 */
static void
ClaimCandidates(const JqCall *call, Datum queue, const Candidates *found,
				const ClaimTerms *terms)
{
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	/* all in one partition (the usual case): the UPDATE starts on that one only */
	JobTable	table = found->searched != JOBS_ALL ? found->searched
		: OidIsValid(found->partition) && !found->several
		? JobTableOfPartition(call, found->partition) : JOBS_ALL;

	args[0] = PointerGetDatum(Int8ArrayFromDatums(found->ids, found->count));
	args[1] = queue;
	args[2] = TimestampTzGetDatum(call->now);
	if (JqCallSince(call, JQ_API_1_1))
	{
		args[3] = PointerGetDatum(terms->lease);
		if (terms->lease == NULL)
			nulls[3] = 'n';
	}
	else
		args[3] = TimestampTzGetDatum(QueueTimeAfter(call->now, terms->lease));
	args[4] = PointerGetDatum(terms->worker);
	args[5] = Int64GetDatum(FencingTokenBase());
	QueueExecuteOn(call, PLAN_CLAIM_UPDATE, table, args, nulls, SPI_OK_UPDATE_RETURNING);
}

/*
 * Add the rows the claim's UPDATE returned to the call's result, in claim
 * order (UPDATE returns them in storage order), and tell the claim
 * position which jobs were claimed.  Columns the caller's queue_job has
 * beyond ours stay NULL.
 */
static void
AddClaimedInClaimOrder(const JqCall *call, const Candidates *found, const ClaimStart *start)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) call->fcinfo->resultinfo;
	int			columns = Max(rsinfo->setDesc->natts, SPI_tuptable->tupdesc->natts);
	HeapTuple  *claimed = palloc0(sizeof(HeapTuple) * found->count);
	Datum	   *values = palloc(sizeof(Datum) * columns);
	bool	   *nulls = palloc(sizeof(bool) * columns);
	int			first = -1;
	int			last = -1;

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		ClaimSlot	key = {SpiInt8(row, CLAIMED_ID), 0};
		ClaimSlot  *slot = bsearch(&key, found->slots, found->count, sizeof(ClaimSlot),
								   CompareLeadingIds);

		if (slot == NULL)
			elog(ERROR, "jobqueue: claimed job " INT64_FORMAT " was not a candidate", key.id);
		claimed[slot->position] = SPI_tuptable->vals[row];
	}
	for (int i = 0; i < found->count; i++)
	{
		if (claimed[i] == NULL)
			continue;
		if (first < 0)
			first = i;
		last = i;
		memset(values, 0, sizeof(Datum) * columns);
		memset(nulls, true, sizeof(bool) * columns);
		heap_deform_tuple(claimed[i], SPI_tuptable->tupdesc, values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (start != NULL && first >= 0)
		NoteClaimed(start, &found->positions[first], &found->positions[last]);
}

/*
 * The earliest moment a rate limit met in this claim round lets a claim
 * take a job again (0: none met): a waiting claim looks again then.
 */
static TimestampTz round_rate_slot = 0;

/*
 * A rate-limited queue's candidates: keep the first ones its limit allows
 * (the others stay locked until the claim's transaction ends, and other
 * claims pass them by).
 */
static void
KeepRateLimitedCandidates(const JqCall *call, Datum queue, Candidates *found)
{
	TimestampTz next_slot;
	int			allowed = TakeRateLimitedClaims(call, queue, found->count, &next_slot);
	int			kept = 0;

	if (next_slot != 0 && (round_rate_slot == 0 || next_slot < round_rate_slot))
		round_rate_slot = next_slot;
	if (allowed >= found->count)
		return;
	for (int i = 0; i < found->count; i++)
		if (found->slots[i].position < allowed)
			found->slots[kept++] = found->slots[i];
	found->count = allowed;
}

/*
 * Step 2 for one queue: claim up to limit jobs and add them to the result in
 * claim order.  Returns how many were claimed.
 */
static int
ClaimFromQueue(const JqCall *call, Datum queue, int limit, const ClaimTerms *terms)
{
	ClaimStart	start;
	bool		use_position = ClaimPositionsUsable(call);
	Candidates	found;

	/* read before the search's snapshot is taken: see claimpos.c */
	if (use_position)
	{
		ReadClaimStart(DatumGetTextPP(queue), &start);
		IncludeOwnMoves(&start);
	}
	FindClaimCandidates(call, queue, limit, use_position ? &start : NULL, &found);
	if (found.rate_limited)
		KeepRateLimitedCandidates(call, queue, &found);
	if (found.count == 0)
		return 0;
	ClaimCandidates(call, queue, &found, terms);
	if (SPI_processed == 0)
		return 0;
	/* a claimed job falls due again when its lease ends */
	NoteJobDueAt(SpiTimestampTz(0, CLAIMED_RESERVED_UNTIL));
	CountJobs(DatumGetTextPP(queue), JOB_CLAIMED, (int64) SPI_processed);
	AddClaimedInClaimOrder(call, &found, use_position ? &start : NULL);
	return (int) SPI_processed;
}

/*
 * One round of a claim: promote, then claim from each queue in precedence
 * order until max_jobs.  Returns how many were claimed.
 */
static int
ClaimRound(const JqCall *call, ArrayType *queues, Datum *queue_names, int queue_count,
		   int max_jobs, const ClaimTerms *terms)
{
	int			claimed = 0;

	round_rate_slot = 0;
	PromoteDueJobs(call, queues);
	for (int q = 0; q < queue_count && claimed < max_jobs; q++)
	{
		CHECK_FOR_INTERRUPTS();
		claimed += ClaimFromQueue(call, queue_names[q], max_jobs - claimed, terms);
	}
	return claimed;
}

/*
 * The end of queue_reserve's wait argument (1.2), in real time, not the
 * queue's clock: the wait is for this caller.  0 when it does not wait.
 */
static TimestampTz
ArgWaitUntil(const JqCall *call, int argno)
{
	FunctionCallInfo fcinfo = call->fcinfo;
	Interval   *wait;

	if (!JqCallSince(call, JQ_API_1_2) || PG_ARGISNULL(argno))
		return 0;
	wait = PG_GETARG_INTERVAL_P(argno);
	CheckWaitInterval(wait, "wait");
	return QueueTimeAfter(GetCurrentTimestamp(), wait);
}

/*
 * queue_reserve(queues, lease, worker, max_jobs [, wait]) returns SETOF
 * queue_job, in the order the jobs would have been claimed one by one.
 * From 1.1 a NULL lease is each queue's default lease, paused queues hand
 * out nothing and jobs past their deadline are failed instead of handed
 * out.  From 1.2, with nothing due, it waits up to "wait" for a job to
 * become due (see waiting.c): each round then runs in its own SPI
 * connection, so what a round allocated is gone before the next, however
 * long the wait.
 */
static Datum
Reserve(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	Datum	   *queue_names;
	int			queue_count;
	ArrayType  *queues;
	ClaimTerms	terms;
	int32		max_jobs;
	TimestampTz wait_until;
	bool		waiting;

	JqCallBeginWriting(&call, fcinfo, version);
	queues = ArgQueues(fcinfo, 0, &queue_names, &queue_count);
	terms.lease = ArgOptionalLease(fcinfo, 1, "lease");
	if (terms.lease == NULL && !JqCallSince(&call, JQ_API_1_1))
		terms.lease = DefaultLease();
	terms.worker = ArgWorkerText(fcinfo, 2);
	max_jobs = ArgInt(fcinfo, 3, "max_jobs", JQ_DEFAULT_MAX_JOBS, 1, JQ_MAX_JOBS_LIMIT);
	wait_until = ArgWaitUntil(&call, 4);
	waiting = wait_until > GetCurrentTimestamp();
	InitMaterializedSRF(fcinfo, 0);

	for (;;)
	{
		int			claimed;
		long		left_ms;

		if (waiting)
			PrepareToWaitForJobs();
		SPI_connect();
		claimed = ClaimRound(&call, queues, queue_names, queue_count, max_jobs, &terms);
		SPI_finish();
		left_ms = (long) ((wait_until - GetCurrentTimestamp()) / 1000);
		if (claimed > 0 || !waiting || left_ms <= 0)
			break;
		/* delayed jobs fall due without a wake-up: look again at least every second */
		left_ms = Min(left_ms, 1000);
		/* and a rate limit's next slot opens without one */
		if (round_rate_slot != 0)
			left_ms = Min(left_ms, Max((long) ((round_rate_slot - call.now) / 1000), 1));
		WaitForJobs(left_ms);
		call.now = QueueNow();
	}
	if (waiting)
		DoneWaitingForJobs();

	return (Datum) 0;
}

/* queue_reserve, 1.0 schema */
Datum
jobqueue_reserve(PG_FUNCTION_ARGS)
{
	return Reserve(fcinfo, JQ_API_1_0);
}

/* queue_reserve, 1.1 schema: pause, per-queue default lease, deadlines */
Datum
jobqueue_reserve_1_1(PG_FUNCTION_ARGS)
{
	return Reserve(fcinfo, JQ_API_1_1);
}

/* queue_reserve(..., wait), 1.2: waits for a job when none is due */
Datum
jobqueue_reserve_1_2(PG_FUNCTION_ARGS)
{
	return Reserve(fcinfo, JQ_API_1_2);
}

/* queue_reserve, 1.3: a claim updates the storage ring partition of its jobs only */
Datum
jobqueue_reserve_1_3(PG_FUNCTION_ARGS)
{
	return Reserve(fcinfo, JQ_API_1_3);
}

/* queue_reserve, 1.5: rate limits */
Datum
jobqueue_reserve_1_5(PG_FUNCTION_ARGS)
{
	return Reserve(fcinfo, JQ_API_1_5);
}
