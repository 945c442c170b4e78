/*-------------------------------------------------------------------------
 *
 * reserve.c
 *	  queue_reserve: claim up to max_jobs due jobs in one call.
 *
 * The call commits with the caller's statement; a worker runs the job after
 * that commit, never inside the claiming transaction.  Two steps:
 *   1. promote (promote.c): delayed or held jobs of these queues whose
 *      moment has come become ready (a held job on its last attempt goes to
 *      the failed table instead: its worker died);
 *   2. claim: per queue, in precedence order, the best ready jobs, locked
 *      with SKIP LOCKED and updated under a re-check of everything the
 *      search relied on; each gets attempts + 1, a lease and a new token.
 *      (1.5) A queue with a rate limit hands out as many as it allows.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "access/xact.h"
#include "access/xlog.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"

/* The rows a claim's UPDATE returns are queue_jobs: ClaimedColumn (store.h). */

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

/* The lease of a claim: the given one ($4), else the queue's ($2) default, else the contract's. */
#define CLAIM_LEASE \
	"coalesce($4, (SELECT s.default_lease FROM @S@.queue_settings s WHERE s.queue = $2)," \
	" interval '" SQL_NUMBER(JQ_DEFAULT_LEASE_SECONDS) " seconds')"

/* True unless the queue ($1) is paused. */
#define NOT_PAUSED \
	"NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $1 AND s.paused)"

/* A ready job of queue $1 a 1.1 claim may take at $2: not expired, queue not paused. */
#define CLAIMABLE_NOW "(deadline IS NULL OR deadline > $2) AND " NOT_PAUSED

/* Claim candidates, with their claim positions (ClaimCandidateColumn). */
#define CANDIDATE_COLUMNS "id, priority, available_at"

/* Since 1.3 with their partition, so that the claim updates that one only. */
#define CANDIDATE_COLUMNS_1_3 CANDIDATE_COLUMNS ", tableoid"

/* Since 1.5 with whether the queue has a rate limit (the same for every row). */
#define CANDIDATE_COLUMNS_1_5 CANDIDATE_COLUMNS_1_3 \
	", EXISTS (SELECT 1 FROM @S@.queue_settings r WHERE r.queue = $1 AND r.rate_max IS NOT NULL)"

/* The claim's search from the head of queue $1, for $3 jobs due at $2. */
#define CLAIM_CANDIDATES_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND @QUEUE_IS(queue, $1)@ AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY priority DESC, available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"

/* From the claim position ($4, $5, $6) on, within its priority. */
#define CLAIM_CANDIDATES_FROM_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND @QUEUE_IS(queue, $1)@ AND priority = $4 AND (available_at, id) >= ($5, $6)" \
	"   AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"

/* The priorities below the claim position's ($4), from their head. */
#define CLAIM_CANDIDATES_BELOW_SQL(columns) \
	JQ_HOT_PATH_MARK "SELECT " columns " FROM @J@" \
	" WHERE ready AND @QUEUE_IS(queue, $1)@ AND priority < $4 AND available_at <= $2 AND " CLAIMABLE_NOW \
	" ORDER BY priority DESC, available_at, id" \
	" LIMIT $3 FOR UPDATE SKIP LOCKED"

/* The three searches as plan entries (1.3 on: per partition), for a version's columns. */
#define CLAIM_CANDIDATES_DEF(columns) \
	{CLAIM_CANDIDATES_SQL(columns), 3, {TEXTOID, TIMESTAMPTZOID, INT4OID}, .per_partition = true}

#define CLAIM_CANDIDATES_FROM_DEF(columns) \
	{CLAIM_CANDIDATES_FROM_SQL(columns), 6, \
	 {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID}, .per_partition = true}

#define CLAIM_CANDIDATES_BELOW_DEF(columns) \
	{CLAIM_CANDIDATES_BELOW_SQL(columns), 4, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID}, \
	 .per_partition = true}

/*
 * The statements of reserve.c, run by the statement engine (exec/statements.c);
 * registered once (reserve_statements, from the folder's Init).
 */
enum
{
	PLAN_CLAIM_CANDIDATES,
	PLAN_CLAIM_UPDATE,
	PLAN_CLAIM_CANDIDATES_FROM,
	PLAN_CLAIM_CANDIDATES_BELOW,
	NUM_RESERVE_STATEMENTS
};

static JqStatement statements[NUM_RESERVE_STATEMENTS] = {
	[PLAN_CLAIM_CANDIDATES] = {.name = "claim_candidates", .text = {
		/*
		 * The claim, in two statements so that each keeps a good generic plan
		 * (a join of the two would be planned for a guessed batch size): the
		 * best ready jobs in claim order, locked with SKIP LOCKED so workers
		 * step past each other; then the UPDATE that re-checks everything the
		 * search relied on.
		 */
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "SELECT " CANDIDATE_COLUMNS " FROM @J@"
			" WHERE ready AND @QUEUE_IS(queue, $1)@ AND available_at <= $2"
			" ORDER BY priority DESC, available_at, id"
			" LIMIT $3 FOR UPDATE SKIP LOCKED",
			3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
		},
		/* As the 1.0 claim, skipping paused queues and expired jobs. */
		[JQ_API_1_1] = {
			CLAIM_CANDIDATES_SQL(CANDIDATE_COLUMNS),
			3, {TEXTOID, TIMESTAMPTZOID, INT4OID}
		},
		[JQ_API_1_3] = CLAIM_CANDIDATES_DEF(CANDIDATE_COLUMNS_1_3),
		/* The claim's searches also say whether the queue ($1) has a rate limit. */
		[JQ_API_1_5] = CLAIM_CANDIDATES_DEF(CANDIDATE_COLUMNS_1_5),
	}},
	[PLAN_CLAIM_UPDATE] = {.name = "claim_update", .text = {
		/* $6: the fencing tokens' base for this server's timeline (reserve.c) */
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "UPDATE @J@"
			" SET ready = false, attempts = attempts + 1, available_at = $4,"
			"     reserved_until = $4, reserved_by = $5,"
			"     token = $6 + pg_catalog.nextval('@S@.queue_job_tokens')"
			" WHERE id = ANY ($1) AND " STILL_READY " AND queue = $2 AND available_at <= $3"
			"   AND attempts < max_attempts"
			" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
			"   reserved_until, created_at, last_error",
			6, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT8OID},
			.per_partition = true
		},
		/* $4 NULL: the queue's default lease, or JQ_DEFAULT_LEASE_SECONDS. */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "UPDATE @J@"
			" SET ready = false, attempts = attempts + 1,"
			"     available_at = $3 + " CLAIM_LEASE ","
			"     reserved_until = $3 + " CLAIM_LEASE ","
			"     reserved_by = $5,"
			"     token = $6 + pg_catalog.nextval('@S@.queue_job_tokens')"
			" WHERE id = ANY ($1) AND " STILL_READY " AND queue = $2 AND available_at <= $3"
			"   AND attempts < max_attempts AND (deadline IS NULL OR deadline > $3)"
			"   AND NOT EXISTS (SELECT 1 FROM @S@.queue_settings s WHERE s.queue = $2 AND s.paused)"
			" RETURNING id, queue, name, payload, attempts, max_attempts, priority, token,"
			"   reserved_until, created_at, last_error, deadline",
			6, {INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, INTERVALOID, TEXTOID, INT8OID},
			.per_partition = true
		},
	}},
	[PLAN_CLAIM_CANDIDATES_FROM] = {.name = "claim_candidates_from", .text = {
		/*
		 * The search from a claim position (claimpos.c): the rest of the
		 * position's priority from the position on, then the lower priorities
		 * from their head.  Both are ranges of the claim index.
		 */
		[JQ_API_1_1] = {
			CLAIM_CANDIDATES_FROM_SQL(CANDIDATE_COLUMNS),
			6, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, TIMESTAMPTZOID, INT8OID}
		},
		[JQ_API_1_3] = CLAIM_CANDIDATES_FROM_DEF(CANDIDATE_COLUMNS_1_3),
		[JQ_API_1_5] = CLAIM_CANDIDATES_FROM_DEF(CANDIDATE_COLUMNS_1_5),
	}},
	[PLAN_CLAIM_CANDIDATES_BELOW] = {.name = "claim_candidates_below", .text = {
		[JQ_API_1_1] = {
			CLAIM_CANDIDATES_BELOW_SQL(CANDIDATE_COLUMNS),
			4, {TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID}
		},
		[JQ_API_1_3] = CLAIM_CANDIDATES_BELOW_DEF(CANDIDATE_COLUMNS_1_3),
		[JQ_API_1_5] = CLAIM_CANDIDATES_BELOW_DEF(CANDIDATE_COLUMNS_1_5),
	}},
};

JqStatementSet reserve_statements = JQ_STATEMENT_SET(statements);

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
AddCandidates(const JqCall *call, JqStatement *plan, JobTable search, Datum *args,
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
		AddCandidates(call, &statements[PLAN_CLAIM_CANDIDATES], search, args, found);
	else
	{
		args[3] = Int32GetDatum(start->at.priority);
		args[4] = TimestampTzGetDatum(start->at.available_at);
		args[5] = Int64GetDatum(start->at.id);
		AddCandidates(call, &statements[PLAN_CLAIM_CANDIDATES_FROM], search, args, found);
		if (found->count < limit)
		{
			args[2] = Int32GetDatum(limit - found->count);
			AddCandidates(call, &statements[PLAN_CLAIM_CANDIDATES_BELOW], search, args, found);
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
	QueueExecuteOn(call, &statements[PLAN_CLAIM_UPDATE], table, args, nulls, SPI_OK_UPDATE_RETURNING);
}

/*
 * Add one claimed job (its columns in ClaimedColumn order, count of them)
 * to the call's result.  Columns the caller's queue_job has beyond ours
 * stay NULL; ours beyond its (an older schema's) are left out.
 */
static void
AddClaimedRow(const JqCall *call, const Datum *values, const bool *nulls, int count)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) call->fcinfo->resultinfo;
	int			columns = rsinfo->setDesc->natts;
	Datum	   *row = palloc0(sizeof(Datum) * Max(columns, count));
	bool	   *row_nulls = palloc(sizeof(bool) * Max(columns, count));

	memset(row_nulls, true, sizeof(bool) * Max(columns, count));
	memcpy(row, values, sizeof(Datum) * count);
	memcpy(row_nulls, nulls, sizeof(bool) * count);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, row_nulls);
	pfree(row);
	pfree(row_nulls);
}

/*
 * Add the rows the claim's UPDATE returned to the call's result, in claim
 * order (UPDATE returns them in storage order), and tell the claim
 * position which jobs were claimed.
 */
static void
AddClaimedInClaimOrder(const JqCall *call, const Candidates *found, const ClaimStart *start)
{
	HeapTuple  *claimed = palloc0(sizeof(HeapTuple) * found->count);
	int			columns = SPI_tuptable->tupdesc->natts;
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
		heap_deform_tuple(claimed[i], SPI_tuptable->tupdesc, values, nulls);
		AddClaimedRow(call, values, nulls, columns);
	}
	if (start != NULL && first >= 0)
		NoteClaimed(start, &found->positions[first], &found->positions[last]);
}

/*
 * A rate-limited queue's candidates: keep the first ones its limit allows
 * (the others stay locked until the claim's transaction ends, and other
 * claims pass them by).  *rate_slot: the earliest moment a rate limit met
 * in this claim round lets a claim take a job again (0: none met yet), made
 * earlier when this limit's next slot is.
 */
static void
KeepRateLimitedCandidates(const JqCall *call, Datum queue, Candidates *found,
						  TimestampTz *rate_slot)
{
	TimestampTz next_slot;
	int			allowed = TakeRateLimitedClaims(call, queue, found->count, &next_slot);
	int			kept = 0;

	if (next_slot != 0 && (*rate_slot == 0 || next_slot < *rate_slot))
		*rate_slot = next_slot;
	if (allowed >= found->count)
		return;
	for (int i = 0; i < found->count; i++)
		if (found->slots[i].position < allowed)
			found->slots[kept++] = found->slots[i];
	found->count = allowed;
}

/*
 * Step 2 for one queue without the executor (store/direct_claim.c, a 1.5
 * schema or later): true with how many were claimed, their rows added to
 * the result in claim order; false when the claim takes the statements
 * (nothing was done).
 */
static bool
ClaimDirectly(const JqCall *call, Datum queue, int limit, const ClaimTerms *terms,
			  const ClaimStart *start, int *count)
{
	ClaimRequest request = {0};
	ClaimedJob *claimed;

	if (!JqCallSince(call, JQ_API_1_5))
		return false;
	request.queue = DatumGetTextPP(queue);
	request.limit = limit;
	request.from_position = start != NULL && start->from_position;
	if (request.from_position)
		request.from = start->at;
	request.lease = terms->lease;
	request.worker = terms->worker;
	request.token_base = FencingTokenBase();
	if (ClaimJobsDirectly(call, &request, &claimed, count) == DIRECT_USE_STATEMENT)
		return false;
	if (*count == 0)
		return true;
	/* a claimed job falls due again when its lease ends */
	NoteJobDueAt(DatumGetTimestampTz(claimed[0].values[CLAIMED_RESERVED_UNTIL - 1]));
	CountJobs(request.queue, JOB_CLAIMED, (int64) *count);
	for (int i = 0; i < *count; i++)
		AddClaimedRow(call, claimed[i].values, claimed[i].nulls, NUM_CLAIMED_COLUMNS);
	if (start != NULL)
		NoteClaimed(start, &claimed[0].order, &claimed[*count - 1].order);
	return true;
}

/*
 * Step 2 for one queue: claim up to limit jobs and add them to the result in
 * claim order.  Returns how many were claimed.  *rate_slot as in
 * KeepRateLimitedCandidates.
 */
static int
ClaimFromQueue(const JqCall *call, Datum queue, int limit, const ClaimTerms *terms,
			   TimestampTz *rate_slot)
{
	ClaimStart	start;
	bool		use_position = ClaimPositionsUsable(call);
	Candidates	found;
	int			claimed;

	/* read before the search's snapshot is taken: see claimpos.c */
	if (use_position)
	{
		ReadClaimStart(DatumGetTextPP(queue), &start);
		IncludeOwnMoves(&start);
	}
	if (ClaimDirectly(call, queue, limit, terms, use_position ? &start : NULL, &claimed))
		return claimed;
	FindClaimCandidates(call, queue, limit, use_position ? &start : NULL, &found);
	if (found.rate_limited)
		KeepRateLimitedCandidates(call, queue, &found, rate_slot);
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
 * order until max_jobs.  Returns how many were claimed; *rate_slot is the
 * earliest moment a rate limit met in the round lets a claim take a job
 * again (0: none met): a waiting claim looks again then.  *promoted: the
 * round changed jobs before claiming (promoted, failed as expired).
 */
static int
ClaimRound(const JqCall *call, ArrayType *queues, Datum *queue_names, int queue_count,
		   int max_jobs, const ClaimTerms *terms, TimestampTz *rate_slot, bool *promoted)
{
	int			claimed = 0;

	*rate_slot = 0;
	*promoted = PromoteDueJobs(call, queues);
	for (int q = 0; q < queue_count && claimed < max_jobs; q++)
	{
		CHECK_FOR_INTERRUPTS();
		claimed += ClaimFromQueue(call, queue_names[q], max_jobs - claimed, terms, rate_slot);
	}
	return claimed;
}

/*
 * One round of a waiting claim (ClaimRound between SPI_connect and
 * SPI_finish), in an internal subtransaction, as a PL/pgSQL exception block
 * runs its statements, so that a round that found nothing leaves no lock
 * behind.  Locks on the job tables last until the end of the (sub)transaction
 * that took them, and a rotation needs the ACCESS EXCLUSIVE lock of its
 * partition: a waiting call that kept its rounds' locks would keep every
 * rotation "busy" for its whole wait.  So a round that claimed nothing and
 * changed nothing is rolled back, which releases its relation and row
 * locks before the call sleeps (it wrote nothing: nothing is undone); a
 * round that claimed jobs, or promoted or failed some, is kept: its writes
 * and its locks pass to the caller's transaction, which ends soon after a
 * claim.  Locks the caller's transaction took before this call are the
 * caller's and stay.  An error in the round rolls the subtransaction back
 * and is raised again.
 */
static int
ClaimRoundReleasingLocks(const JqCall *call, ArrayType *queues, Datum *queue_names, int queue_count,
						 int max_jobs, const ClaimTerms *terms, TimestampTz *rate_slot)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			claimed = 0;
	bool		promoted = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		SPI_connect();
		claimed = ClaimRound(call, queues, queue_names, queue_count, max_jobs, terms, rate_slot,
							 &promoted);
		SPI_finish();
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		/* also ends the round's SPI connection (AtEOSubXact_SPI) */
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		ReThrowError(error);
	}
	PG_END_TRY();
	if (claimed > 0 || promoted)
		ReleaseCurrentSubTransaction();
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
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
 * long the wait, and in its own subtransaction, so that no lock on the job
 * tables is held while it sleeps (ClaimRoundReleasingLocks).  A call that
 * does not wait runs its one round as before, without a subtransaction.
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
		TimestampTz rate_slot;
		uint64		wakeups = 0;

		if (waiting)
		{
			/* the round's subtransaction would cancel a sleep prepared now: count instead */
			wakeups = JobsDueWakeups();
			claimed = ClaimRoundReleasingLocks(&call, queues, queue_names, queue_count, max_jobs,
											   &terms, &rate_slot);
		}
		else
		{
			bool		promoted;

			SPI_connect();
			claimed = ClaimRound(&call, queues, queue_names, queue_count, max_jobs, &terms,
								 &rate_slot, &promoted);
			SPI_finish();
		}
		left_ms = (long) ((wait_until - GetCurrentTimestamp()) / 1000);
		if (claimed > 0 || !waiting || left_ms <= 0)
			break;
		/* delayed jobs fall due without a wake-up: look again at least every second */
		left_ms = Min(left_ms, 1000);
		/* and a rate limit's next slot opens without one */
		if (rate_slot != 0)
			left_ms = Min(left_ms, Max((long) ((rate_slot - call.now) / 1000), 1));
		/* ready to be woken, then no wake-up since the round began: sleep */
		PrepareToWaitForJobs();
		if (JobsDueWakeups() == wakeups)
			WaitForJobs(left_ms);
		else
			CHECK_FOR_INTERRUPTS();
		JqCallReadClock(&call);
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
