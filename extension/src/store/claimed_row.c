/*-------------------------------------------------------------------------
 *
 * claimed_row.c
 *	  A claimed job's row found by id and token without the executor (1.6):
 *	  what the completion (direct_delete.c) and the changes of a claimed
 *	  job (direct_update.c: extend, release) share.
 *
 * Their statements find the job by id in one partition at a time (ring.c)
 * and act only if its token is the caller's.  Here the three partitions
 * are opened once for a call, each row is looked up by its partition's
 * primary key under the call's snapshot, and its token read from it.  A
 * row another transaction holds or changed since the snapshot is locked
 * as the statement's re-check locks it: waiting for its holder, under
 * read committed at its newest version, under snapshot isolation a
 * serialization failure.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

/*
 * Open the three job partitions (locked in ring.c's order, RowExclusiveLock
 * kept to the transaction's end) with their primary keys for event's
 * writes; false (nothing left open) for a schema before 1.3 or a partition
 * the direct way must leave to the statement (store.c).
 */
bool
OpenClaimedPartitions(const JqCall *call, CmdType event, ClaimedPartition partitions[3])
{
	JobTable	tables[3];
	Oid			relids[3];

	if (JobPartitionsToSearch(call, tables, relids) != 3)
		return false;
	for (int i = 0; i < 3; i++)
	{
		Relation	rel = table_open(relids[i], RowExclusiveLock);
		Oid			primary_key = PrimaryKeyIndex(rel);

		if (!PartitionWritableDirectly(call, rel, event) || !OidIsValid(primary_key))
		{
			table_close(rel, NoLock);
			CloseClaimedPartitions(partitions, i);
			return false;
		}
		memset(&partitions[i], 0, sizeof(ClaimedPartition));
		partitions[i].table = tables[i];
		partitions[i].rel = rel;
		partitions[i].shape = ShapeOf(tables[i], rel);
		partitions[i].primary_key = index_open(primary_key, AccessShareLock);
		partitions[i].slot = table_slot_create(rel, NULL);
	}
	return true;
}

/* Close the first count of the partitions (their locks stay). */
void
CloseClaimedPartitions(ClaimedPartition *partitions, int count)
{
	for (int i = 0; i < count; i++)
	{
		EndPartitionWrite(&partitions[i].write);
		if (partitions[i].updated != NULL)
			ExecDropSingleTupleTableSlot(partitions[i].updated);
		index_close(partitions[i].primary_key, AccessShareLock);
		ExecDropSingleTupleTableSlot(partitions[i].slot);
		table_close(partitions[i].rel, NoLock);
	}
}

/*
 * Look job id up in the partition's primary key under snapshot: true with
 * its row in the partition's slot if the row holds the claim with token.
 */
bool
FindClaimedRow(ClaimedPartition *partition, int64 id, int64 token, Snapshot snapshot)
{
	IndexScanDesc scan;
	ScanKeyData key;
	bool		found;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = BeginIndexScan(partition->rel, partition->primary_key, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, partition->slot);
	index_endscan(scan);
	return found && RowHoldsToken(partition, token);
}

/* Whether the row in the partition's slot holds the claim with this token. */
bool
RowHoldsToken(ClaimedPartition *partition, int64 token)
{
	bool		isnull;
	Datum		value = JobColumnValue(partition->slot, partition->shape, JOB_COL_TOKEN, &isnull);

	return !isnull && DatumGetInt64(value) == token;
}

/*
 * Lock the newest version of the row at tid (the partition's slot gets
 * it) as the statement's re-check does, in mode, waiting for a transaction
 * that holds it: DIRECT_DONE if locked and it still holds token,
 * DIRECT_NOT_FOUND if deleted meanwhile or claimed again (another token),
 * DIRECT_USE_STATEMENT if moved to another partition (which the statement
 * reports) or changed by this command.  Under snapshot isolation a row
 * changed since the snapshot is a serialization failure, as there.
 */
DirectOutcome
LockClaimedRow(ClaimedPartition *partition, ItemPointer tid, Snapshot snapshot, int64 token,
			   LockTupleMode mode)
{
	TM_Result	result = LockRowAsExecutor(partition->rel, tid, snapshot, partition->slot, mode,
										   LockWaitBlock);

	if (result == TM_Deleted)
		return DIRECT_NOT_FOUND;	/* finished by someone else meanwhile */
	if (result != TM_Ok)
		return DIRECT_USE_STATEMENT;	/* moved to another partition, or ours */
	return RowHoldsToken(partition, token) ? DIRECT_DONE : DIRECT_NOT_FOUND;
}
