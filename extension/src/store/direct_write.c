/*-------------------------------------------------------------------------
 *
 * direct_write.c
 *	  What every write without a plan shares (1.6): a statement's snapshot,
 *	  and the executor state of a partition's inserts and updates.
 *
 * direct_insert.c, direct_claim.c, direct_delete.c and direct_slots.c do
 * the work of statements with the access methods.  A statement starts
 * with a snapshot that sees the transaction's earlier work, and its
 * writes are seen by what the transaction runs after it; a row inserted
 * or updated needs its partition's constraints, which the executor's
 * helpers for logical replication's apply check given an executor state of
 * the partition alone, and entries in the partition's indexes.
 *
 * Which indexes: a ring partition has six, five of them partial (ready,
 * waiting, with a deadline, waiting for a key, waiting for parents; long
 * also the unique key's), and a row has entries in two or three.  The executor opens and locks all of
 * them for each statement and builds each one's description; here an
 * index is opened when a row of the write first needs an entry in it
 * (row_indexes.c).  An index no row needs is left unopened, as the
 * executor would have left it without an entry: the partition's lock,
 * held, keeps its indexes from being dropped or rebuilt meanwhile.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/snapmgr.h"

/* Whether two texts are equal (the default collation is deterministic: bytes). */
bool
TextsEqual(text *a, text *b)
{
	return VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

/* Whether a text is the C string expected. */
bool
TextIs(text *value, const char *expected)
{
	size_t		length = strlen(expected);

	return VARSIZE_ANY_EXHDR(value) == length && memcmp(VARDATA_ANY(value), expected, length) == 0;
}

/*
 * A snapshot as a statement takes one: this transaction's earlier work
 * seen (a fresh one under read committed), registered and active until
 * EndStatementSnapshot.
 */
Snapshot
BeginStatementSnapshot(void)
{
	Snapshot	snapshot;

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(snapshot);
	return snapshot;
}

/* The statement's work is done: what follows in the transaction sees it. */
void
EndStatementSnapshot(Snapshot snapshot)
{
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);
	CommandCounterIncrement();
}

/*
 * The executor state for event's rows (CMD_INSERT or CMD_UPDATE) in rel,
 * the partition of job table "table" (JOBS_ALL: another of the extension's
 * tables, queue_failed_jobs), under snapshot: its index list read, none
 * opened yet (UseIndexesOfRow), and (an update) the replica identity a
 * publication of the partition's updates needs checked as the executor
 * checks it.
 */
void
BeginPartitionWrite(PartitionWrite *write, JobTable table, Relation rel, Snapshot snapshot,
					CmdType event)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	List	   *indexes = RelationGetIndexList(rel);
	int			i = 0;
	ListCell   *lc;

	write->estate = CreateExecutorState();
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	InitRangeTableOfOne(write->estate, rte);
	write->result = makeNode(ResultRelInfo);
	InitResultRelInfo(write->result, rel, 1, NULL, 0);
	write->estate->es_output_cid = GetCurrentCommandId(true);
	write->estate->es_snapshot = snapshot;
	write->table = table;
	write->index_count = list_length(indexes);
	write->index_oids = palloc(sizeof(Oid) * Max(write->index_count, 1));
	write->opened = palloc0(sizeof(Relation) * Max(write->index_count, 1));
	write->infos = palloc0(sizeof(IndexInfo *) * Max(write->index_count, 1));
	foreach(lc, indexes)
		write->index_oids[i++] = lfirst_oid(lc);
	list_free(indexes);
	write->result->ri_IndexRelationDescs = palloc(sizeof(Relation) * Max(write->index_count, 1));
	write->result->ri_IndexRelationInfo = palloc(sizeof(IndexInfo *) * Max(write->index_count, 1));
	write->result->ri_NumIndices = 0;
	BeginRowIndexes(write, rel);
	if (event != CMD_INSERT)
		CheckCmdReplicaIdentity(rel, event);
}

/*
 * The index entries of the row just inserted or updated (update) from slot
 * (the summarizing indexes' only: summarizing_only).
 */
void
InsertRowIndexEntries(PartitionWrite *write, TupleTableSlot *slot, bool update,
					  bool summarizing_only)
{
	UseIndexesOfRow(write, slot);
	if (write->result->ri_NumIndices > 0)
		list_free(InsertIndexEntries(write->result, slot, write->estate, update, summarizing_only));
	/* the partial indexes' predicates are evaluated per row in this context */
	ResetPerTupleExprContext(write->estate);
}

/*
 * Update the version of write's partition locked in slot "locked" to the
 * row in "updated", as logical replication's apply does
 * (ExecSimpleRelationUpdate: constraints, heap, index entries), with the
 * indexes the new version needs.
 */
void
UpdateLockedRow(PartitionWrite *write, TupleTableSlot *locked, TupleTableSlot *updated)
{
	UseIndexesOfRow(write, updated);
	ExecSimpleRelationUpdate(write->result, write->estate, NULL, locked, updated);
}

/*
 * Update the version at tid of write's partition rel to the row in
 * "updated" under snapshot, as logical replication's apply updates a row:
 * the partition's constraints, the heap update (its WAL record), the new
 * version's index entries.  Without its check of the partition bound: the
 * direct updates change neither column of the partition key (the ring,
 * the unique key), so the row stays within the bound it was found in; and
 * their partitions have no UPDATE trigger of the user's and no stored
 * generated column (the callers check).  With wait false a version another
 * transaction holds is not waited for: the result says so (TM_BeingModified,
 * this transaction's own lock included), and nothing is written.
 */
TM_Result
UpdatePartitionRow(PartitionWrite *write, Relation rel, ItemPointer tid, TupleTableSlot *updated,
				   Snapshot snapshot, bool wait)
{
	TM_FailureData failure;
	LockTupleMode lock_mode;
	IndexesToUpdate update_indexes;
	TM_Result	result;

	if (rel->rd_att->constr != NULL)
		ExecConstraints(write->result, updated, write->estate);
	result = table_tuple_update(rel, tid, updated, GetCurrentCommandId(true), snapshot,
								InvalidSnapshot, wait, &failure, &lock_mode, &update_indexes);
	if (result == TM_Ok && UPDATE_NEEDS_INDEX_ENTRIES(update_indexes))
		InsertRowIndexEntries(write, updated, true, UPDATE_SUMMARIZING_ONLY(update_indexes));
	return result;
}

/*
 * Lock the version of rel at tid (the locked version into slot) in mode as
 * the executor locks a row for FOR UPDATE or an UPDATE's re-check: under
 * read committed following concurrent updates to the newest version; under
 * snapshot isolation a version changed since the snapshot is a
 * serialization failure, raised here.  wait: LockWaitBlock, or
 * LockWaitSkip (the claim's SKIP LOCKED: TM_WouldBlock for a row another
 * transaction holds; it also locks past an update in progress whose lock
 * does not conflict).  What is left to the caller: TM_Ok (locked), TM_Deleted (gone
 * meanwhile), TM_Updated (read committed: moved to another partition),
 * TM_SelfModified (changed by this command: the executor passes it by),
 * TM_WouldBlock.
 */
TM_Result
LockRowAsExecutor(Relation rel, ItemPointer tid, Snapshot snapshot, TupleTableSlot *slot,
				  LockTupleMode mode, LockWaitPolicy wait)
{
	TM_FailureData failure;
	TM_Result	result;
	bool		snapshot_isolation = IsolationUsesXactSnapshot();
	uint8		flags = (snapshot_isolation ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION) |
		(wait == LockWaitSkip ? TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS : 0);

	result = table_tuple_lock(rel, tid, snapshot, slot, GetCurrentCommandId(true), mode, wait,
							  flags, &failure);
	if (snapshot_isolation && (result == TM_Updated || result == TM_Deleted))
		ReportConcurrentChange(TM_Updated);
	return result;
}

/*
 * The serialization failure of a row changed by another transaction since
 * the snapshot, in the executor's words (an UPDATE's of a deleted row says
 * delete; a lock always says update).
 */
void
ReportConcurrentChange(TM_Result result)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent %s",
					result == TM_Deleted ? "delete" : "update")));
}

/* The executor's error for a row a concurrent update moved to another partition. */
void
ReportMovedRow(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("tuple to be locked was already moved to another partition due to concurrent update")));
}

/* Close what BeginPartitionWrite opened (nothing to do if it did not). */
void
EndPartitionWrite(PartitionWrite *write)
{
	ResultRelInfo *result = write->result;

	if (write->estate == NULL)
		return;
	/* the executor's own closing (each index's clean-up, its lock let go) of those opened */
	result->ri_NumIndices = 0;
	for (int i = 0; i < write->index_count; i++)
		if (write->opened[i] != NULL)
		{
			result->ri_IndexRelationDescs[result->ri_NumIndices] = write->opened[i];
			result->ri_IndexRelationInfo[result->ri_NumIndices] = write->infos[i];
			result->ri_NumIndices++;
		}
	ExecCloseIndices(result);
	ExecResetTupleTable(write->estate->es_tupleTable, false);
	FreeExecutorState(write->estate);
	write->estate = NULL;
}

/* Whether a comes before b in claim order (priority DESC, then time, then id). */
bool
JobOrderBefore(const JobOrder *a, const JobOrder *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	if (a->available_at != b->available_at)
		return a->available_at < b->available_at;
	return a->id < b->id;
}

/* Open index (of scan's partition, opened by the caller) and the scan's slots. */
void
OpenPartitionScan(PartitionScan *scan, Oid index)
{
	scan->index = index_open(index, AccessShareLock);
	scan->found = table_slot_create(scan->rel, NULL);
	scan->locked = table_slot_create(scan->rel, NULL);
	scan->updated = MakeSingleTupleTableSlot(RelationGetDescr(scan->rel), &TTSOpsVirtual);
}

/* Scan the index anew from keys (a scan keeps the number of keys it began with). */
void
StartPartitionScan(PartitionScan *scan, Snapshot snapshot, ScanKey keys, int nkeys)
{
	if (scan->scan != NULL)
		index_endscan(scan->scan);
	scan->scan = BeginIndexScan(scan->rel, scan->index, snapshot, nkeys, 0);
	index_rescan(scan->scan, keys, nkeys, NULL, 0);
}

/* The scan whose next row comes first (JobOrderBefore), or -1 when all are done. */
int
NextInOrder(const PartitionScan *scans, int count)
{
	int			best = -1;

	for (int p = 0; p < count; p++)
		if (scans[p].has_next && (best < 0 || JobOrderBefore(&scans[p].next, &scans[best].next)))
			best = p;
	return best;
}

/* End the scans and their writes and close their partitions (the locks stay). */
void
ClosePartitionScans(PartitionScan *scans, int count)
{
	for (int p = 0; p < count; p++)
	{
		PartitionScan *scan = &scans[p];

		EndPartitionWrite(&scan->write);
		if (scan->scan != NULL)
			index_endscan(scan->scan);
		if (scan->index != NULL)
		{
			ExecDropSingleTupleTableSlot(scan->found);
			ExecDropSingleTupleTableSlot(scan->locked);
			ExecDropSingleTupleTableSlot(scan->updated);
			index_close(scan->index, AccessShareLock);
		}
		table_close(scan->rel, NoLock);
	}
}
