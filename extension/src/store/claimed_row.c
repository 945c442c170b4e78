/*-------------------------------------------------------------------------
 *
 * claimed_row.c
 *	  A claimed job's row found by id and token without the executor (1.6):
 *	  what the completion (direct_delete.c) and the changes of a claimed
 *	  job (direct_update.c: extend, release) share.
 *
 * Their statements find the job by id in one partition at a time (ring.c)
 * and act only if its token is the caller's.  Here a call opens each of
 * the three partitions once, when it first looks in it; each row is looked
 * up by its partition's primary key under the call's snapshot (a batch's
 * rows in one scan), and its token read from it.  A row another
 * transaction holds or changed since the snapshot is locked as the
 * statement's re-check locks it: waiting for its holder, under read
 * committed at its newest version, under snapshot isolation a
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
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

/*
 * A call's work on claimed jobs begins: the three job partitions of the
 * call, in ring.c's order (each locked there, ACCESS SHARE, to the
 * transaction's end), for event's writes, and the one snapshot the call
 * looks everything up under (*snapshot), taken as a statement's would be.
 * None is opened yet: a call opens one when it first looks in it
 * (ClaimedPartitionOpen), and most find their job in the first, the one
 * this backend last found a job in.  false (nothing to end) for a schema
 * before 1.3.
 */
bool
BeginClaimedPartitions(const JqCall *call, CmdType event, ClaimedPartition partitions[3],
					   Snapshot *snapshot)
{
	JobTable	tables[3];
	Oid			relids[3];

	if (JobPartitionsToSearch(call, tables, relids) != 3)
		return false;
	for (int i = 0; i < 3; i++)
	{
		memset(&partitions[i], 0, sizeof(ClaimedPartition));
		partitions[i].call = call;
		partitions[i].event = event;
		partitions[i].table = tables[i];
		partitions[i].relid = relids[i];
		partitions[i].state = CLAIMED_PARTITION_NOT_OPEN;
	}
	*snapshot = BeginStatementSnapshot();
	return true;
}

/*
 * Open the partition (RowExclusiveLock kept to the transaction's end) with
 * its primary key, the first time it is looked in; false when the direct
 * way must leave it to the statement (store.c; for updates also a stored
 * generated column, which an update here would not compute): the
 * statement then looks for the job in every partition.
 */
bool
ClaimedPartitionOpen(ClaimedPartition *partition)
{
	Relation	rel;
	Oid			primary_key;

	if (partition->state != CLAIMED_PARTITION_NOT_OPEN)
		return partition->state == CLAIMED_PARTITION_OPEN;
	rel = table_open(partition->relid, RowExclusiveLock);
	primary_key = PrimaryKeyIndex(rel);
	if (!PartitionWritableDirectly(partition->call, rel, partition->event) || !OidIsValid(primary_key))
	{
		table_close(rel, NoLock);
		partition->state = CLAIMED_PARTITION_LEFT_TO_STATEMENT;
		return false;
	}
	partition->shape = ShapeOf(partition->table, rel);
	if (partition->event == CMD_UPDATE && !partition->shape->update_usable)
	{
		table_close(rel, NoLock);
		partition->state = CLAIMED_PARTITION_LEFT_TO_STATEMENT;
		return false;
	}
	partition->rel = rel;
	partition->primary_key = index_open(primary_key, AccessShareLock);
	partition->slot = table_slot_create(rel, NULL);
	partition->state = CLAIMED_PARTITION_OPEN;
	return true;
}

/*
 * The call's work on claimed jobs is done: its snapshot ended (what follows
 * in the transaction sees the work) and the partitions that were opened
 * closed (their locks stay).
 */
void
EndClaimedPartitions(ClaimedPartition partitions[3], Snapshot snapshot)
{
	EndStatementSnapshot(snapshot);
	for (int i = 0; i < 3; i++)
	{
		if (partitions[i].state != CLAIMED_PARTITION_OPEN)
			continue;
		EndPartitionWrite(&partitions[i].write);
		if (partitions[i].updated != NULL)
			ExecDropSingleTupleTableSlot(partitions[i].updated);
		if (partitions[i].by_id != NULL)
			index_endscan(partitions[i].by_id);
		index_close(partitions[i].primary_key, AccessShareLock);
		ExecDropSingleTupleTableSlot(partitions[i].slot);
		table_close(partitions[i].rel, NoLock);
	}
}

/*
 * The partition's primary key scan under snapshot, begun at the call's
 * first look-up and used for every later one (a scan's start and end were
 * 7 % of a queue_delete_many of 50 looked up one id at a time).
 */
static IndexScanDesc
PrimaryKeyScan(ClaimedPartition *partition, Snapshot snapshot)
{
	/* a call looks everything up under one snapshot */
	Assert(partition->by_id == NULL || partition->by_id->xs_snapshot == snapshot);
	if (partition->by_id == NULL)
		partition->by_id = BeginIndexScan(partition->rel, partition->primary_key, snapshot, 1, 0);
	return partition->by_id;
}

/*
 * The partition whose row of job id holds the claim with token, looked for
 * in the call's order (the row in its slot), or NULL with *outcome:
 * DIRECT_NOT_FOUND (no row holds it) or DIRECT_USE_STATEMENT (a partition
 * looked in is left to the statement, which looks in every one).
 */
ClaimedPartition *
PartitionHoldingClaim(ClaimedPartition partitions[3], int64 id, int64 token, Snapshot snapshot,
					  DirectOutcome *outcome)
{
	for (int i = 0; i < 3; i++)
	{
		if (!ClaimedPartitionOpen(&partitions[i]))
		{
			*outcome = DIRECT_USE_STATEMENT;
			return NULL;
		}
		if (FindClaimedRow(&partitions[i], id, token, snapshot))
			return &partitions[i];
	}
	*outcome = DIRECT_NOT_FOUND;
	return NULL;
}

/*
 * Look job id up in the partition's primary key under snapshot: true with
 * its row in the partition's slot if the row holds the claim with token.
 */
bool
FindClaimedRow(ClaimedPartition *partition, int64 id, int64 token, Snapshot snapshot)
{
	LookUpClaimedRows(partition, &id, 1, snapshot);
	return index_getnext_slot(partition->by_id, ForwardScanDirection, partition->slot) &&
		RowHoldsToken(partition, token);
}

/*
 * Begin looking up the jobs ids[0..count) (ascending, no id twice) in the
 * partition's primary key under snapshot, all in one scan with the ids as
 * an array key, as the executor scans "id = ANY (ids)": from PostgreSQL 17
 * one pass over the index's leaf pages instead of a descent for each id.
 * NextLookedUpRow gives the rows found.
 */
void
LookUpClaimedRows(ClaimedPartition *partition, const int64 *ids, int count, Snapshot snapshot)
{
	IndexScanDesc scan = PrimaryKeyScan(partition, snapshot);
	ScanKeyData key;
	Datum	   *elements;

	if (count == 1)
	{
		/* one job (queue_delete): a plain key, no array to sort */
		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(ids[0]));
		index_rescan(scan, &key, 1, NULL, 0);
		return;
	}
	elements = palloc(sizeof(Datum) * count);
	for (int i = 0; i < count; i++)
		elements[i] = Int64GetDatum(ids[i]);
	ScanKeyEntryInitialize(&key, SK_SEARCHARRAY, 1, BTEqualStrategyNumber, InvalidOid, InvalidOid,
						   F_INT8EQ,
						   PointerGetDatum(construct_array(elements, count, INT8OID, sizeof(int64),
														   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)));
	index_rescan(scan, &key, 1, NULL, 0);
	pfree(elements);
}

/*
 * The next row LookUpClaimedRows found, in id order: true with the row in
 * the partition's slot and its job's id in *id; false when none is left.
 */
bool
NextLookedUpRow(ClaimedPartition *partition, int64 *id)
{
	bool		isnull;

	if (!index_getnext_slot(partition->by_id, ForwardScanDirection, partition->slot))
		return false;
	*id = DatumGetInt64(JobColumnValue(partition->slot, partition->shape, JOB_COL_ID, &isnull));
	return !isnull;
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

/*
 * Whether an earlier pair of pair k's job (ids ascending: the pairs just
 * before k with the same id) was done.  A batch changes or removes a job
 * once however many pairs name it: under the batch's one snapshot a later
 * pair would still find the version the earlier one replaced.
 */
bool
EarlierPairDone(const int64 *ids, const DirectOutcome *outcomes, int k)
{
	for (int j = k - 1; j >= 0 && ids[j] == ids[k]; j--)
		if (outcomes[j] == DIRECT_DONE)
			return true;
	return false;
}
