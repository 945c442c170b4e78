/*-------------------------------------------------------------------------
 *
 * direct_update.c
 *	  Claimed jobs changed by id and token without the executor (1.6):
 *	  queue_extend's new lease, queue_release's and queue_release_many's
 *	  next attempt.
 *
 * As statements (api/complete.c) an extend is an UPDATE of the job's row
 * where id and token match, one partition at a time, and a release locks
 * the row first (SELECT ... FOR UPDATE: its attempts decide between a
 * retry and the failed table) and then updates it.  Their executors' start
 * and end cost more than the one index probe and the one row update
 * (docs/performance.md, "Where a call's time goes").  Here:
 *
 *   - the row is found by the partitions' primary keys under a
 *     statement's snapshot and its token checked (claimed_row.c);
 *   - the caller's ClaimedChange decides from the row what its new version
 *     is (or that it leaves the job to the statements: a release on the
 *     last attempt goes to the failed table there);
 *   - the row is updated at once if nobody holds or changed it since the
 *     snapshot (one WAL record; the decision was made on that very
 *     version), else locked as the statement's re-check locks it, its
 *     token checked again, the decision made again on the locked version,
 *     and updated;
 *   - the update is logical replication's apply's (constraints, every
 *     index, WAL, statistics); neither column of the partition key changes.
 *
 * Many jobs (queue_release_many) share the partitions, their writes and
 * one snapshot, and are changed in id order, the order every batch call
 * locks jobs in, so that two calls naming the same jobs cannot deadlock;
 * a job is changed once however many pairs name it (EarlierPairDone).
 *
 * The direct way steps aside (DIRECT_USE_STATEMENT, nothing done) for a
 * schema before 1.3, a partition with an UPDATE trigger of the user's,
 * rules, forced row-level security or a stored generated column, and a
 * row a concurrent update moved to another partition.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "utils/rel.h"

/*
 * Build the row's new version in the partition's "updated" slot from the
 * row in its slot (the change decides the columns it sets); false if the
 * change leaves the job to the statements.
 */
static bool
BuildChangedRow(ClaimedPartition *partition, const ClaimedChange *change, int pair)
{
	TupleTableSlot *from = partition->slot;
	TupleTableSlot *updated = partition->updated;
	const PartitionShape *shape = partition->shape;

	slot_getallattrs(from);
	ExecClearTuple(updated);
	memcpy(updated->tts_values, from->tts_values, sizeof(Datum) * shape->natts);
	memcpy(updated->tts_isnull, from->tts_isnull, sizeof(bool) * shape->natts);
	if (!change->decide(from, updated, shape, pair, change->arg))
	{
		ExecClearTuple(updated);
		return false;
	}
	ExecStoreVirtualTuple(updated);
	return true;
}

/* Change the claimed row found in partition (see the header). */
static DirectOutcome
ChangeInPartition(ClaimedPartition *partition, int64 token, Snapshot snapshot,
				  const ClaimedChange *change, int pair)
{
	Relation	rel = partition->rel;
	ItemPointerData tid = partition->slot->tts_tid;
	DirectOutcome outcome;

	if (partition->write.estate == NULL)
	{
		BeginPartitionWrite(&partition->write, partition->table, rel, snapshot, CMD_UPDATE);
		partition->updated = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	}
	if (!BuildChangedRow(partition, change, pair))
		return DIRECT_USE_STATEMENT;
	if (UpdatePartitionRow(&partition->write, rel, &tid, partition->updated, snapshot,
						   false) == TM_Ok)
		return DIRECT_DONE;

	/* held or changed since the snapshot: lock the newest version, look again */
	tid = partition->slot->tts_tid;
	outcome = LockClaimedRow(partition, &tid, snapshot, token, LockTupleNoKeyExclusive);
	if (outcome != DIRECT_DONE)
		return outcome;
	if (!BuildChangedRow(partition, change, pair))
		return DIRECT_USE_STATEMENT;
	UpdateLockedRow(&partition->write, partition->slot, partition->updated);
	return DIRECT_DONE;
}

/* Change pair's job in the first partition where its row holds token (see the header). */
static DirectOutcome
ChangeClaimed(ClaimedPartition partitions[3], int64 id, int64 token, Snapshot snapshot,
			  const ClaimedChange *change, int pair)
{
	DirectOutcome outcome;
	ClaimedPartition *partition = PartitionHoldingClaim(partitions, id, token, snapshot, &outcome);

	if (partition == NULL)
		return outcome;
	outcome = ChangeInPartition(partition, token, snapshot, change, pair);
	if (outcome == DIRECT_DONE)
		NoteJobFoundIn(partition->table);
	ExecClearTuple(partition->slot);
	return outcome;
}

/*
 * Change the claimed jobs of the pairs (ids[k], tokens[k]), count of them,
 * ids ascending, as change decides (see the header); outcomes[k] is
 * DIRECT_DONE, DIRECT_NOT_FOUND (no row of the job holds the token, or an
 * earlier pair changed the job: the statement would have changed nothing)
 * or DIRECT_USE_STATEMENT (nothing done for the pair: the caller runs the
 * statements).  Returns false, nothing done, when the direct way may not
 * be taken at all.
 */
bool
UpdateClaimedManyDirectly(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
						  const ClaimedChange *change, DirectOutcome *outcomes)
{
	ClaimedPartition partitions[3];
	Snapshot	snapshot;

	if (!BeginClaimedPartitions(call, CMD_UPDATE, partitions, &snapshot))
		return false;
	for (int k = 0; k < count; k++)
	{
		Assert(k == 0 || ids[k - 1] <= ids[k]);
		CHECK_FOR_INTERRUPTS();
		outcomes[k] = EarlierPairDone(ids, outcomes, k) ? DIRECT_NOT_FOUND :
			ChangeClaimed(partitions, ids[k], tokens[k], snapshot, change, k);
	}
	EndClaimedPartitions(partitions, snapshot);
	return true;
}

/*
 * Change the claimed job (id, token) as change decides (see the header):
 * DIRECT_DONE, DIRECT_NOT_FOUND (no row of the job holds the token: the
 * statement would have changed nothing) or DIRECT_USE_STATEMENT (nothing
 * done: the caller runs the statements).
 */
DirectOutcome
UpdateClaimedDirectly(const JqCall *call, int64 id, int64 token, const ClaimedChange *change)
{
	DirectOutcome outcome;

	if (!UpdateClaimedManyDirectly(call, 1, &id, &token, change, &outcome))
		return DIRECT_USE_STATEMENT;
	return outcome;
}
