/*-------------------------------------------------------------------------
 *
 * direct_claim.c
 *	  A claim (queue_reserve's step 2 for one queue) without the executor.
 *
 * As statements a claim is a search (SELECT ... ORDER BY priority DESC,
 * available_at, id LIMIT n FOR UPDATE SKIP LOCKED) and an UPDATE of what it
 * locked; their executors' start and end, the plans' checks and the
 * sub-selects of queue_settings cost more than the index range, the row
 * locks and the row updates (docs/performance.md, "Where a call's time
 * goes").  Here the same work is done with the access methods:
 *
 *   - the queue's settings: one look-up of queue_settings' primary key
 *     (settings_row.c).  A paused queue hands out nothing;
 *   - the search: an ordered scan of the claim index of each partition
 *     that has pages (the index's own order, the claim order), merged
 *     across partitions, under a snapshot taken as a statement's would be.
 *     From a claim position, as the statements: the rest of the position's
 *     priority from the position on (two ranges, ClaimRange), then the lower
 *     priorities from their head;
 *   - each job in claim order is locked as FOR UPDATE SKIP LOCKED locks
 *     it: a row another transaction holds is passed by; under read
 *     committed a row changed since the snapshot is locked at its newest
 *     version, under snapshot isolation that is a serialization failure;
 *   - a job nobody holds or changed since the snapshot is updated at once,
 *     without a lock first (one WAL record, where a lock and an update are
 *     two): the update fails rather than wait if anyone holds the row;
 *   - otherwise the job is locked as FOR UPDATE SKIP LOCKED locks it: a row
 *     another transaction holds is passed by; under read committed a row
 *     changed since the snapshot is locked at its newest version, under
 *     snapshot isolation that is a serialization failure; the locked
 *     version is checked again for everything the search relied on (ready,
 *     due, not expired, attempts left), as the UPDATE's WHERE does;
 *   - either way the row is updated as logical replication's apply updates
 *     one (constraints, every index, WAL, statistics; the partition key's
 *     columns are not changed, so the row stays within its bound).  The new values are the claim UPDATE's: not ready, one
 *     more attempt, due and held until the lease's end, the worker, a new
 *     fencing token.
 *
 * When the direct way steps aside (DIRECT_USE_STATEMENT, nothing done: the
 * caller runs the statements): a schema before 1.3, a queue with a rate
 * limit (its turns are taken on its settings row, flow/ratelimit.c), a
 * partition with an UPDATE trigger (one of the user's: the statement fires
 * it), rules or forced row-level security (store.c), a stored generated
 * column, or without the claim index.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/*
 * The claim index's columns: (hashtext(queue), priority DESC, available_at,
 * id) WHERE ready; before 1.7 the queue itself first.  Names that hash
 * alike share a range: Claimable compares the row's queue too.
 */
#define CLAIM_INDEX_QUEUE 1
#define CLAIM_INDEX_PRIORITY 2
#define CLAIM_INDEX_AVAILABLE_AT 3
#define CLAIM_INDEX_ID 4

/*
 * Which range of the claim index a search reads.  From a claim position
 * the rest of its priority is two ranges, each of which the index starts
 * at exactly (a row comparison would be one): the position's due time from
 * its id on, then the later due times.  A backlog pushed in one
 * transaction shares one due time, so a search from the due time alone
 * would walk every entry before the position, dead ones included.
 */
typedef enum ClaimRange
{
	RANGE_HEAD,					/* the whole queue, from its head */
	RANGE_FROM_SAME_TIME,		/* the position's priority and due time, from its id on */
	RANGE_FROM_LATER,			/* the position's priority, due later */
	RANGE_BELOW					/* the priorities below the position's */
} ClaimRange;

/* What the whole claim works with. */
typedef struct DirectClaim
{
	const JqCall *call;
	const ClaimRequest *request;
	Snapshot	snapshot;
	TimestampTz lease_end;
	Oid			tokens;			/* the token sequence */
	int			searched;
	PartitionScan partitions[3];	/* each partition's claim index */
	ClaimedJob *claimed;
	int			count;
} DirectClaim;

/* A column of the row in slot that is never NULL. */
static Datum
Column(TupleTableSlot *slot, const PartitionShape *shape, JobColumn column)
{
	bool		isnull;
	Datum		value = JobColumnValue(slot, shape, column, &isnull);

	if (isnull)
		elog(ERROR, "jobqueue: job row has a NULL in a NOT NULL column");
	return value;
}

/* The row's place in claim order. */
static JobOrder
OrderOf(TupleTableSlot *slot, const PartitionShape *shape)
{
	JobOrder	order;

	order.priority = DatumGetInt32(Column(slot, shape, JOB_COL_PRIORITY));
	order.available_at = DatumGetTimestampTz(Column(slot, shape, JOB_COL_AVAILABLE_AT));
	order.id = DatumGetInt64(Column(slot, shape, JOB_COL_ID));
	return order;
}

/*
 * Whether the row in slot is a job of the queue a claim at now may take:
 * ready, due, not past its deadline, attempts left.  The search's and the
 * claim UPDATE's conditions, checked on what the search found and again on
 * the locked version.
 */
static bool
Claimable(const DirectClaim *claim, TupleTableSlot *slot, const PartitionShape *shape)
{
	TimestampTz now = claim->call->now;
	bool		no_deadline;
	Datum		deadline = JobColumnValue(slot, shape, JOB_COL_DEADLINE, &no_deadline);

	if (!DatumGetBool(Column(slot, shape, JOB_COL_READY)))
		return false;
	if (DatumGetTimestampTz(Column(slot, shape, JOB_COL_AVAILABLE_AT)) > now)
		return false;
	if (!no_deadline && DatumGetTimestampTz(deadline) <= now)
		return false;
	if (DatumGetInt32(Column(slot, shape, JOB_COL_ATTEMPTS)) >=
		DatumGetInt32(Column(slot, shape, JOB_COL_MAX_ATTEMPTS)))
		return false;
	return TextsEqual(DatumGetTextPP(Column(slot, shape, JOB_COL_QUEUE)), claim->request->queue);
}

/* Move search to the next claimable job of its range (has_next false at the end). */
static void
Advance(const DirectClaim *claim, PartitionScan *search)
{
	search->has_next = false;
	while (index_getnext_slot(search->scan, ForwardScanDirection, search->found))
	{
		if (!Claimable(claim, search->found, search->shape))
			continue;
		search->next = OrderOf(search->found, search->shape);
		search->has_next = true;
		return;
	}
}

/* Start the scan of range in search's claim index. */
static void
BeginRange(DirectClaim *claim, PartitionScan *search, ClaimRange range)
{
	const ClaimRequest *request = claim->request;
	Relation	index = search->index;
	ScanKeyData keys[4];
	int			nkeys = 1;

	if (search->shape->claim_by_hash)
		ScanKeyInit(&keys[0], CLAIM_INDEX_QUEUE, BTEqualStrategyNumber, F_INT4EQ,
					DirectFunctionCall1Coll(hashtext, search->shape->claim_hash_collation,
											PointerGetDatum(request->queue)));
	else
		ScanKeyEntryInitialize(&keys[0], 0, CLAIM_INDEX_QUEUE, BTEqualStrategyNumber, InvalidOid,
							   index->rd_indcollation[0], F_TEXTEQ,
							   PointerGetDatum(request->queue));
	if (range == RANGE_FROM_SAME_TIME || range == RANGE_FROM_LATER)
		ScanKeyInit(&keys[nkeys++], CLAIM_INDEX_PRIORITY, BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(request->from.priority));
	if (range == RANGE_FROM_SAME_TIME)
	{
		ScanKeyInit(&keys[nkeys++], CLAIM_INDEX_AVAILABLE_AT, BTEqualStrategyNumber,
					F_TIMESTAMPTZ_EQ, TimestampTzGetDatum(request->from.available_at));
		ScanKeyInit(&keys[nkeys++], CLAIM_INDEX_ID, BTGreaterEqualStrategyNumber, F_INT8GE,
					Int64GetDatum(request->from.id));
	}
	else if (range == RANGE_FROM_LATER)
		ScanKeyInit(&keys[nkeys++], CLAIM_INDEX_AVAILABLE_AT, BTGreaterStrategyNumber,
					F_TIMESTAMPTZ_GT, TimestampTzGetDatum(request->from.available_at));
	else if (range == RANGE_BELOW)
		ScanKeyInit(&keys[nkeys++], CLAIM_INDEX_PRIORITY, BTLessStrategyNumber, F_INT4LT,
					Int32GetDatum(request->from.priority));
	StartPartitionScan(search, claim->snapshot, keys, nkeys);
	Advance(claim, search);
}

/* The job row's column of each of a claimed job's columns (ClaimedColumn - 1). */
static const JobColumn claimed_columns[NUM_CLAIMED_COLUMNS] = {
	[CLAIMED_ID - 1] = JOB_COL_ID,
	[CLAIMED_QUEUE - 1] = JOB_COL_QUEUE,
	[CLAIMED_NAME - 1] = JOB_COL_NAME,
	[CLAIMED_PAYLOAD - 1] = JOB_COL_PAYLOAD,
	[CLAIMED_ATTEMPTS - 1] = JOB_COL_ATTEMPTS,
	[CLAIMED_MAX_ATTEMPTS - 1] = JOB_COL_MAX_ATTEMPTS,
	[CLAIMED_PRIORITY - 1] = JOB_COL_PRIORITY,
	[CLAIMED_TOKEN - 1] = JOB_COL_TOKEN,
	[CLAIMED_RESERVED_UNTIL - 1] = JOB_COL_RESERVED_UNTIL,
	[CLAIMED_CREATED_AT - 1] = JOB_COL_CREATED_AT,
	[CLAIMED_LAST_ERROR - 1] = JOB_COL_LAST_ERROR,
	[CLAIMED_DEADLINE - 1] = JOB_COL_DEADLINE,
};

/* Keep column c (0-based) of the claimed row (a copy in the caller's memory). */
static void
Keep(ClaimedJob *job, int c, TupleTableSlot *slot, const PartitionShape *shape, JobColumn from)
{
	Form_pg_attribute attr = TupleDescAttr(slot->tts_tupleDescriptor, shape->attnum[from] - 1);
	bool		isnull;
	Datum		value = JobColumnValue(slot, shape, from, &isnull);

	job->nulls[c] = isnull;
	job->values[c] = isnull ? (Datum) 0 : datumCopy(value, attr->attbyval, attr->attlen);
}

/*
 * Build in the partition's "updated" slot the row the claim UPDATE makes of
 * the job in "from": not ready, one more attempt, due and held until the lease's end,
 * the worker, a new fencing token.
 */
static void
BuildClaimedRow(DirectClaim *claim, int p, TupleTableSlot *from)
{
	const PartitionShape *shape = claim->partitions[p].shape;
	TupleTableSlot *updated = claim->partitions[p].updated;
	int64		token = claim->request->token_base + nextval_internal(claim->tokens, false);

	slot_getallattrs(from);
	ExecClearTuple(updated);
	memcpy(updated->tts_values, from->tts_values, sizeof(Datum) * shape->natts);
	memcpy(updated->tts_isnull, from->tts_isnull, sizeof(bool) * shape->natts);
	SetJobColumn(updated, shape, JOB_COL_READY, BoolGetDatum(false), false);
	SetJobColumn(updated, shape, JOB_COL_ATTEMPTS,
				 Int32GetDatum(DatumGetInt32(Column(from, shape, JOB_COL_ATTEMPTS)) + 1), false);
	SetJobColumn(updated, shape, JOB_COL_AVAILABLE_AT, TimestampTzGetDatum(claim->lease_end),
				 false);
	SetJobColumn(updated, shape, JOB_COL_RESERVED_UNTIL, TimestampTzGetDatum(claim->lease_end),
				 false);
	SetJobColumn(updated, shape, JOB_COL_RESERVED_BY, PointerGetDatum(claim->request->worker),
				 false);
	SetJobColumn(updated, shape, JOB_COL_TOKEN, Int64GetDatum(token), false);
	ExecStoreVirtualTuple(updated);
}

/* Keep the claimed job (its row as updated; "from", as it was) in the result. */
static void
KeepClaimed(DirectClaim *claim, int p, TupleTableSlot *from)
{
	const PartitionShape *shape = claim->partitions[p].shape;
	TupleTableSlot *updated = claim->partitions[p].updated;
	ClaimedJob *job = &claim->claimed[claim->count++];

	job->order = OrderOf(from, shape);
	for (int c = 0; c < NUM_CLAIMED_COLUMNS; c++)
		Keep(job, c, updated, shape, claimed_columns[c]);
	ExecClearTuple(updated);
}

/*
 * Lock the job at tid as FOR UPDATE SKIP LOCKED does, and claim it if its
 * locked version may still be claimed: the way of a job another
 * transaction holds or changed since the snapshot.
 */
static void
LockAndClaim(DirectClaim *claim, int p, ItemPointerData tid)
{
	PartitionScan *search = &claim->partitions[p];
	TupleTableSlot *locked = claim->partitions[p].locked;
	TM_Result	result;

	result = LockRowAsExecutor(search->rel, &tid, claim->snapshot, locked, LockTupleExclusive,
							   LockWaitSkip);
	switch (result)
	{
		case TM_Ok:
			break;
		case TM_WouldBlock:		/* held by another transaction: pass it by */
		case TM_SelfModified:	/* changed by this call already */
		case TM_Deleted:		/* finished meanwhile */
			return;
		case TM_Updated:		/* read committed follows updates: a move */
			ReportMovedRow();
		default:
			elog(ERROR, "jobqueue: unexpected result %d locking a job to claim", (int) result);
	}
	if (Claimable(claim, locked, search->shape))
	{
		BuildClaimedRow(claim, p, locked);
		UpdateLockedRow(&search->write, locked, claim->partitions[p].updated);
		KeepClaimed(claim, p, locked);
	}
	ExecClearTuple(locked);
}

/*
 * Whether the version in found (a heap tuple the scan returned, pinned) has
 * a deleter or locker recorded: then another claim most likely holds it,
 * and an update without waiting would only fail after building the new row
 * and taking a token.  Read without the buffer's lock, so only a hint for
 * the way to go: both ways check the row under the lock.
 */
static bool
MayBeHeld(TupleTableSlot *found)
{
	HeapTupleHeader header;

	if (!TTS_IS_BUFFERTUPLE(found))
		return false;
	header = ((BufferHeapTupleTableSlot *) found)->base.tuple->t_data;
	return !(header->t_infomask & HEAP_XMAX_INVALID) &&
		TransactionIdIsValid(HeapTupleHeaderGetRawXmax(header));
}

/*
 * Claim the job partition p's search is on (claimable as the snapshot sees
 * it): updated at once when nobody holds or changed it since, else locked
 * first (LockAndClaim).
 */
static void
TryClaim(DirectClaim *claim, int p)
{
	PartitionScan *search = &claim->partitions[p];
	ItemPointerData tid = search->found->tts_tid;
	TM_Result	result;

	if (search->write.estate == NULL)
		BeginPartitionWrite(&search->write, search->table, search->rel, claim->snapshot,
							CMD_UPDATE);
	if (MayBeHeld(search->found))
	{
		LockAndClaim(claim, p, tid);
		return;
	}
	BuildClaimedRow(claim, p, search->found);
	/*
	 * Nobody holds or changed it since the snapshot, most likely: updated
	 * without waiting and without a lock first, the update its only WAL
	 * record (a lock is one more).
	 */
	result = UpdatePartitionRow(&search->write, search->rel, &tid, search->updated,
								claim->snapshot, false);
	if (result == TM_Ok)
	{
		KeepClaimed(claim, p, search->found);
		return;
	}
	ExecClearTuple(claim->partitions[p].updated);
	if (result == TM_SelfModified)
		return;					/* changed by this call already */
	if (result == TM_Deleted && !IsolationUsesXactSnapshot())
		return;					/* finished meanwhile */
	/* held, or changed since the snapshot: as FOR UPDATE SKIP LOCKED decides */
	LockAndClaim(claim, p, search->found->tts_tid);
}

/* Claim from range until the request's limit: the best next job of any partition first. */
static void
ClaimFromRange(DirectClaim *claim, ClaimRange range)
{
	for (int p = 0; p < claim->searched; p++)
		BeginRange(claim, &claim->partitions[p], range);
	while (claim->count < claim->request->limit)
	{
		int			best = NextInOrder(claim->partitions, claim->searched);

		if (best < 0)
			return;
		CHECK_FOR_INTERRUPTS();
		TryClaim(claim, best);
		/* the next job is looked for only while the request wants one */
		if (claim->count < claim->request->limit)
			Advance(claim, &claim->partitions[best]);
	}
}

/* Open the partitions to search; false (all closed again) if one is not for the direct way. */
static bool
OpenPartitions(DirectClaim *claim, JobTable *tables, Oid *relids)
{
	for (int p = 0; p < claim->searched; p++)
	{
		PartitionScan *search = &claim->partitions[p];
		Relation	rel = table_open(relids[p], RowExclusiveLock);
		const PartitionShape *shape = ShapeOf(tables[p], rel);

		if (!shape->claim_usable || !PartitionWritableDirectly(claim->call, rel, CMD_UPDATE))
		{
			table_close(rel, NoLock);
			for (int q = 0; q < p; q++)
				table_close(claim->partitions[q].rel, NoLock);
			return false;
		}
		memset(search, 0, sizeof(PartitionScan));
		search->table = tables[p];
		search->rel = rel;
		search->shape = shape;
	}
	return true;
}

/*
 * Claim up to request->limit jobs of request->queue as the claim's two
 * statements would (see the header): DIRECT_DONE with the claimed jobs, in
 * claim order, in *claimed and how many in *count (none: nothing to
 * claim, or the queue is paused), or DIRECT_USE_STATEMENT (nothing done).
 */
DirectOutcome
ClaimJobsDirectly(const JqCall *call, const ClaimRequest *request, ClaimedJob **claimed,
				  int *count)
{
	DirectClaim claim = {.call = call, .request = request};
	JobTable	tables[3];
	Oid			relids[3];
	QueueSettingsRow settings;

	*claimed = NULL;
	*count = 0;
	claim.searched = ClaimSearchPartitions(call, tables, relids);
	if (claim.searched < 0)
		return DIRECT_USE_STATEMENT;
	if (claim.searched == 0)
		return DIRECT_DONE;		/* every partition is empty */
	if (!OpenPartitions(&claim, tables, relids))
		return DIRECT_USE_STATEMENT;

	claim.snapshot = BeginStatementSnapshot();
	KeptQueueSettings(call, request->queue, claim.snapshot, &settings);
	if (settings.rate_limited || settings.paused)
	{
		for (int p = 0; p < claim.searched; p++)
			table_close(claim.partitions[p].rel, NoLock);
		EndStatementSnapshot(claim.snapshot);
		return settings.paused && !settings.rate_limited ? DIRECT_DONE : DIRECT_USE_STATEMENT;
	}
	if (request->lease != NULL)
		claim.lease_end = QueueTimeAfter(call->now, request->lease);
	else if (settings.has_default_lease)
		claim.lease_end = QueueTimeAfter(call->now, &settings.default_lease);
	else
		claim.lease_end = call->now + (TimestampTz) JQ_DEFAULT_LEASE_SECONDS * USECS_PER_SEC;
	claim.tokens = ExtensionRelid(call, "queue_job_tokens");
	claim.claimed = palloc(sizeof(ClaimedJob) * request->limit);
	for (int p = 0; p < claim.searched; p++)
		OpenPartitionScan(&claim.partitions[p], claim.partitions[p].shape->claim_index);

	if (!request->from_position)
		ClaimFromRange(&claim, RANGE_HEAD);
	else
	{
		ClaimFromRange(&claim, RANGE_FROM_SAME_TIME);
		if (claim.count < request->limit)
			ClaimFromRange(&claim, RANGE_FROM_LATER);
		if (claim.count < request->limit)
			ClaimFromRange(&claim, RANGE_BELOW);
	}

	ClosePartitionScans(claim.partitions, claim.searched);
	EndStatementSnapshot(claim.snapshot);
	*claimed = claim.claimed;
	*count = claim.count;
	return DIRECT_DONE;
}
