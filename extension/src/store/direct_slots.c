/*-------------------------------------------------------------------------
 *
 * direct_slots.c
 *	  A concurrency key's slot handed on without the executor (1.6).
 *
 * When a job holding a slot of its key leaves queue_jobs, flow control
 * (flow/flow.c, RefillKeySlots) locks the key's row of queue_key_slots,
 * reads the key's limit and lets the key's next waiting jobs take the free
 * slots.  As statements that is a SELECT ... FOR UPDATE with a sub-select
 * of queue_key_limits and an UPDATE of queue_jobs whose ids come from a
 * search of the waiting jobs: their executors' start and end (an UPDATE
 * of the partitioned table starts one result relation per partition) cost
 * several times the two index look-ups and the one row update they make
 * (bench/history/2026-12-06-performance-log.md, "A key's slot handed on").
 * Here the same work is done with the access methods:
 *
 *   - the key's row is found by queue_key_slots' primary key under a
 *     statement's snapshot and locked as FOR UPDATE locks it: waiting for
 *     the transaction that holds it, under read committed following a
 *     concurrent update to the newest version, under snapshot isolation
 *     failing with a serialization error;
 *   - the key's limit is read after the lock, under a snapshot taken then,
 *     so that a limit the row's previous holder changed is seen (as the
 *     statements read it again: flow.c).  The longest prefix of the key
 *     among the queue's limits wins, as KEY_LIMIT says; a queue with more
 *     limits than MAX_LIMITS_SCANNED leaves the limit to the statement;
 *   - the waiting jobs (flow 'key') are read in the order they get a slot
 *     from the partitions' waiting index, merged across partitions, under a
 *     snapshot taken after the key's row was locked: it sees every job that
 *     waits for the key, and nobody else admits them meanwhile.  Each is
 *     updated as the admission UPDATE updates it (it takes a slot, due at
 *     its own run-at, ready if that is by now), waiting for a transaction
 *     that holds it; one deleted meanwhile is passed by.
 *
 * When the direct way steps aside (DIRECT_USE_STATEMENT, nothing done): a
 * table with rules, forced row-level security or a trigger of the user's
 * on the event (store.c), a partition without the waiting index, or one
 * a concurrent update moved the job out of.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* More limits than this in one queue: the statement finds the key's. */
#define MAX_LIMITS_SCANNED 64

/* The columns of queue_key_slots and queue_key_limits read here. */
#define SLOTS_RUNNING "running"
#define LIMITS_KEY_PREFIX 2		/* the primary key's second column */
#define LIMITS_MAX_RUNNING "max_running"

/* The waiting index's columns: (queue, concurrency_key, priority DESC, parked_run_at, id). */
#define WAITING_INDEX_QUEUE 1
#define WAITING_INDEX_KEY 2

/* A column of the row in slot, by name (the table's own numbering), never NULL. */
static Datum
NamedColumn(TupleTableSlot *slot, const char *name)
{
	int			attnum = SPI_fnumber(slot->tts_tupleDescriptor, name);
	bool		isnull;
	Datum		value;

	if (attnum <= 0)
		elog(ERROR, "jobqueue: table has no column \"%s\"", name);
	value = slot_getattr(slot, attnum, &isnull);
	if (isnull)
		elog(ERROR, "jobqueue: column \"%s\" is NULL", name);
	return value;
}

/* Equality scan keys on the first two text columns of index: queue, key. */
static void
QueueAndKey(ScanKeyData keys[2], Relation index, text *queue, text *key)
{
	ScanKeyEntryInitialize(&keys[0], 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(queue));
	ScanKeyEntryInitialize(&keys[1], 0, 2, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[1], F_TEXTEQ, PointerGetDatum(key));
}

/*
 * Lock the version at tid as FOR UPDATE (mode LockTupleExclusive) or an
 * UPDATE (LockTupleNoKeyExclusive) does, waiting for its holder; under
 * read committed the newest version is locked, into slot.  False if it was
 * deleted meanwhile (or by this command).
 */
static bool
LockRowWaiting(Relation rel, ItemPointer tid, Snapshot snapshot, TupleTableSlot *slot,
			   LockTupleMode mode)
{
	TM_Result	result = LockRowAsExecutor(rel, tid, snapshot, slot, mode, LockWaitBlock);

	switch (result)
	{
		case TM_Ok:
			return true;
		case TM_SelfModified:	/* by this command: as the executor, not seen */
		case TM_Deleted:		/* deleted meanwhile */
			return false;
		case TM_Updated:		/* read committed follows updates: a move */
			ReportMovedRow();
		default:
			elog(ERROR, "jobqueue: unexpected result %d locking a row", (int) result);
	}
	return false;
}

/*
 * The limit of key in queue as the limits' rows are now (see the header),
 * or -1 if the queue has too many limits to scan here.
 */
static int32
ReadKeyLimit(const JqCall *call, text *queue, text *key)
{
	Relation	rel = table_open(ExtensionRelid(call, "queue_key_limits"),
								 AccessShareLock);
	Relation	index = index_open(PrimaryKeyIndex(rel), AccessShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Snapshot	snapshot = BeginStatementSnapshot();
	IndexScanDesc scan = BeginIndexScan(rel, index, snapshot, 1, 0);
	ScanKeyData keys[2];
	int32		limit = JQ_DEFAULT_MAX_RUNNING;
	int			longest = -1;
	int			scanned = 0;

	QueueAndKey(keys, index, queue, key);
	index_rescan(scan, keys, 1, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		text	   *prefix = DatumGetTextPP(slot_getattr(slot, LIMITS_KEY_PREFIX, &isnull));
		int			length = VARSIZE_ANY_EXHDR(prefix);

		if (++scanned > MAX_LIMITS_SCANNED)
		{
			limit = -1;
			break;
		}
		/* pg_catalog.starts_with(key, prefix): bytes, the default collation being deterministic */
		if (length > longest && length <= VARSIZE_ANY_EXHDR(key) &&
			memcmp(VARDATA_ANY(prefix), VARDATA_ANY(key), length) == 0)
		{
			longest = length;
			limit = DatumGetInt32(NamedColumn(slot, LIMITS_MAX_RUNNING));
		}
	}
	index_endscan(scan);
	EndStatementSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
	return limit;
}

/*
 * Lock the row of key in queue_key_slots as the statement's FOR UPDATE
 * does (see the header): DIRECT_DONE with the slots taken in *running and
 * the key's limit now in *limit (-1: the statement must read it),
 * DIRECT_NOT_FOUND when the key has no row (no job holds or waits for a
 * slot), or DIRECT_USE_STATEMENT (nothing done).
 */
DirectOutcome
LockKeySlotsDirectly(const JqCall *call, text *queue, text *key, int32 *running, int32 *limit)
{
	Oid			relid = ExtensionRelid(call, "queue_key_slots");
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData keys[2];
	TupleTableSlot *slot;
	Snapshot	snapshot;
	bool		found;

	if (!OidIsValid(relid))
		return DIRECT_USE_STATEMENT;
	rel = table_open(relid, RowShareLock);
	if (!PartitionWritableDirectly(call, rel, CMD_UPDATE) ||
		!OidIsValid(PrimaryKeyIndex(rel)))
	{
		table_close(rel, NoLock);
		return DIRECT_USE_STATEMENT;
	}
	index = index_open(PrimaryKeyIndex(rel), AccessShareLock);
	slot = table_slot_create(rel, NULL);
	snapshot = BeginStatementSnapshot();
	QueueAndKey(keys, index, queue, key);
	scan = BeginIndexScan(rel, index, snapshot, 2, 0);
	index_rescan(scan, keys, 2, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	if (found)
	{
		ItemPointerData tid = slot->tts_tid;

		/* the key columns are never updated: the newest version is the key's */
		found = LockRowWaiting(rel, &tid, snapshot, slot, LockTupleExclusive);
	}
	if (found)
		*running = DatumGetInt32(NamedColumn(slot, SLOTS_RUNNING));
	EndStatementSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(rel, NoLock);
	if (!found)
		return DIRECT_NOT_FOUND;
	*limit = ReadKeyLimit(call, queue, key);
	return DIRECT_DONE;
}

/* Whether the row in slot still waits for a slot of key in queue. */
static bool
WaitsForKey(TupleTableSlot *slot, const PartitionShape *shape, text *queue, text *key)
{
	bool		isnull;
	Datum		flow = JobColumnValue(slot, shape, JOB_COL_FLOW, &isnull);
	Datum		job_key;

	if (isnull || !TextIs(DatumGetTextPP(flow), "key"))
		return false;
	job_key = JobColumnValue(slot, shape, JOB_COL_CONCURRENCY_KEY, &isnull);
	return !isnull && TextsEqual(DatumGetTextPP(job_key), key) &&
		TextsEqual(DatumGetTextPP(JobColumnValue(slot, shape, JOB_COL_QUEUE, &isnull)), queue);
}

/* Move search to the next job waiting for the key (has_next false at the end). */
static void
NextWaiting(PartitionScan *search, text *queue, text *key)
{
	search->has_next = false;
	while (index_getnext_slot(search->scan, ForwardScanDirection, search->found))
	{
		bool		isnull;

		if (!WaitsForKey(search->found, search->shape, queue, key))
			continue;
		search->next.priority = DatumGetInt32(JobColumnValue(search->found, search->shape,
															 JOB_COL_PRIORITY, &isnull));
		search->next.available_at =
			DatumGetTimestampTz(JobColumnValue(search->found, search->shape,
											   JOB_COL_PARKED_RUN_AT, &isnull));
		if (isnull)
			elog(ERROR, "jobqueue: a job waiting for a key has no run-at");
		search->next.id = DatumGetInt64(JobColumnValue(search->found, search->shape,
													   JOB_COL_ID, &isnull));
		search->has_next = true;
		return;
	}
}

/*
 * Build in search's "updated" slot the row the admission makes of the
 * waiting job in "from": it holds a slot, due at its own run-at, ready if
 * that is by now; and note it in *job.
 */
static void
BuildAdmittedRow(const JqCall *call, PartitionScan *search, TupleTableSlot *from,
				 AdmittedJob *job)
{
	const PartitionShape *shape = search->shape;
	TupleTableSlot *admitted = search->updated;
	bool		isnull;
	TimestampTz run_at = DatumGetTimestampTz(JobColumnValue(from, shape, JOB_COL_PARKED_RUN_AT,
															&isnull));

	if (isnull)
		elog(ERROR, "jobqueue: a job waiting for a key has no run-at");
	slot_getallattrs(from);
	ExecClearTuple(admitted);
	memcpy(admitted->tts_values, from->tts_values, sizeof(Datum) * shape->natts);
	memcpy(admitted->tts_isnull, from->tts_isnull, sizeof(bool) * shape->natts);
	SetJobColumn(admitted, shape, JOB_COL_FLOW, CStringGetTextDatum("slot"), false);
	SetJobColumn(admitted, shape, JOB_COL_AVAILABLE_AT, TimestampTzGetDatum(run_at), false);
	SetJobColumn(admitted, shape, JOB_COL_READY, BoolGetDatum(run_at <= call->now), false);
	SetJobColumn(admitted, shape, JOB_COL_PARKED_RUN_AT, (Datum) 0, true);
	ExecStoreVirtualTuple(admitted);
	job->order.priority = DatumGetInt32(JobColumnValue(from, shape, JOB_COL_PRIORITY, &isnull));
	job->order.available_at = run_at;
	job->order.id = DatumGetInt64(JobColumnValue(from, shape, JOB_COL_ID, &isnull));
	job->ready = run_at <= call->now;
}

/*
 * Admit the job search is on: true with it in *job, false if it was
 * deleted (or stopped waiting) meanwhile.  Updated as the statement
 * updates it, waiting for a transaction that holds it; a version changed
 * since the snapshot is locked at its newest (read committed) and checked
 * again.
 */
static bool
Admit(const JqCall *call, PartitionScan *search, Snapshot snapshot, text *queue, text *key,
	  AdmittedJob *job)
{
	ItemPointerData tid = search->found->tts_tid;
	TM_Result	result;

	if (search->write.estate == NULL)
		BeginPartitionWrite(&search->write, search->table, search->rel, snapshot, CMD_UPDATE);
	BuildAdmittedRow(call, search, search->found, job);
	result = UpdatePartitionRow(&search->write, search->rel, &tid, search->updated, snapshot, true);
	if (result == TM_Ok)
		return true;
	if (result == TM_SelfModified)
		return false;			/* changed by this command already */
	if (result != TM_Updated && result != TM_Deleted)
		elog(ERROR, "jobqueue: unexpected result %d admitting a waiting job", (int) result);
	if (IsolationUsesXactSnapshot())
		ReportConcurrentChange(result);
	if (result == TM_Deleted)
		return false;			/* cancelled meanwhile */
	/* read committed: changed since the snapshot; lock its newest version and look again */
	tid = search->found->tts_tid;
	if (!LockRowWaiting(search->rel, &tid, snapshot, search->locked, LockTupleNoKeyExclusive))
		return false;
	if (!WaitsForKey(search->locked, search->shape, queue, key))
	{
		ExecClearTuple(search->locked);
		return false;
	}
	BuildAdmittedRow(call, search, search->locked, job);
	UpdateLockedRow(&search->write, search->locked, search->updated);
	ExecClearTuple(search->locked);
	return true;
}

/*
 * Let up to count jobs waiting for a slot of key in queue take one, in the
 * order they get one, as the admission statement does (see the header;
 * the caller holds the key's row locked): DIRECT_DONE with the admitted
 * jobs in admitted[0..*admitted_count) and in *wants_wakeups whether the
 * queue wants wake-ups, or DIRECT_USE_STATEMENT (nothing done).
 */
DirectOutcome
AdmitWaitingDirectly(const JqCall *call, text *queue, text *key, int count,
					 AdmittedJob *admitted, int *admitted_count, bool *wants_wakeups)
{
	PartitionScan searches[3];
	JobTable	tables[3];
	Oid			relids[3];
	int			searched = ClaimSearchPartitions(call, tables, relids);
	Snapshot	snapshot;

	*admitted_count = 0;
	*wants_wakeups = false;
	if (searched < 0)
		return DIRECT_USE_STATEMENT;
	memset(searches, 0, sizeof(searches));
	for (int p = 0; p < searched; p++)
	{
		searches[p].table = tables[p];
		searches[p].rel = table_open(relids[p], RowExclusiveLock);
		searches[p].shape = ShapeOf(tables[p], searches[p].rel);
		if (!searches[p].shape->admit_usable ||
			!PartitionWritableDirectly(call, searches[p].rel, CMD_UPDATE))
		{
			ClosePartitionScans(searches, p + 1);
			return DIRECT_USE_STATEMENT;
		}
	}
	snapshot = BeginStatementSnapshot();
	for (int p = 0; p < searched; p++)
	{
		PartitionScan *search = &searches[p];
		ScanKeyData keys[2];

		OpenPartitionScan(search, search->shape->key_waiting_index);
		QueueAndKey(keys, search->index, queue, key);
		StartPartitionScan(search, snapshot, keys, 2);
		NextWaiting(search, queue, key);
	}
	while (*admitted_count < count)
	{
		int			best = NextInOrder(searches, searched);

		if (best < 0)
			break;
		CHECK_FOR_INTERRUPTS();
		if (Admit(call, &searches[best], snapshot, queue, key, &admitted[*admitted_count]))
			(*admitted_count)++;
		if (*admitted_count < count)
			NextWaiting(&searches[best], queue, key);
	}
	if (*admitted_count > 0)
		*wants_wakeups = KeptQueueWantsWakeups(call, queue, snapshot);
	ClosePartitionScans(searches, searched);
	EndStatementSnapshot(snapshot);
	return DIRECT_DONE;
}
