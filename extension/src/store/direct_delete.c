/*-------------------------------------------------------------------------
 *
 * direct_delete.c
 *	  Completions (queue_delete, queue_delete_many) without the executor.
 *
 * queue_delete is half of every job's life (a claim, then a completion),
 * and as a statement (DELETE ... WHERE id = $1 AND token = $2) most of its
 * cost is not the delete: the executor's start and end, the plan's checks,
 * the portal and the trigger queue of every statement cost more than the
 * one index probe and the one heap delete it makes (docs/performance.md,
 * "Where a call's time goes").  Here the same work is done with the access
 * methods PostgreSQL's own catalog code uses: a look-up of the id in each
 * partition's primary key, under a snapshot taken as a statement's would
 * be, its token checked, and the row deleted (WAL, statistics,
 * serializable conflicts and the visibility map as heap_delete does them)
 * at once if nobody holds or changed it since the snapshot.  Otherwise the
 * row is locked (waiting for the transaction that holds it, following a
 * concurrent update to its newest version, as the statement's re-check
 * does), its token checked again on the locked version, and deleted.
 *
 * What the statement does besides, and when the direct way steps aside
 * (DIRECT_USE_STATEMENT, the caller runs the statement):
 *   - row triggers: a partition's only trigger is the extension's own
 *     AFTER DELETE (flow/flow.c), which does nothing for a job without a
 *     concurrency key's slot and without children.  A job holding its
 *     key's slot is deleted here and its key given to the caller, which
 *     hands the slot on as the trigger would (api/complete.c); a job with
 *     children, or a partition with any other trigger (one of the user's),
 *     takes the statement, which fires them;
 *   - rules of the user's and row-level security forced on the owner
 *     (store.c): the statement;
 *   - a publication that publishes deletes needs the table's replica
 *     identity: checked as the executor checks it (an error, as there);
 *   - a row that a concurrent update moved to another partition (which the
 *     statement reports as an error) takes the statement too.
 * The locks: ACCESS SHARE on every partition (ring.c), as the statement
 * takes it, and ROW EXCLUSIVE on each of the three (the statement takes it
 * on those it looked in), the row's own lock.  A batch (queue_delete_many)
 * opens the partitions once and works under one snapshot, as its
 * statements did.
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
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* What the flow trigger (flow/flow.c) does when a completion deletes a row. */
typedef enum CompletionFlow
{
	FLOW_NOTHING,				/* no key's slot held, no children: it returns at once */
	FLOW_SLOT,					/* a key's slot held, no children: the slot goes on */
	FLOW_TRIGGER				/* children: the statement, which fires it */
} CompletionFlow;

/*
 * What the flow trigger would do for the row in slot, completed; for
 * FLOW_SLOT *key gets the key (a copy).
 */
static CompletionFlow
FlowOfCompletion(TupleTableSlot *slot, const PartitionShape *shape, text **key)
{
	bool		no_key;
	bool		no_flow;
	bool		isnull;
	Datum		value;
	Datum		flow;

	if (shape->attnum[JOB_COL_CONCURRENCY_KEY] == 0)
		return FLOW_NOTHING;	/* a schema before 1.5 */
	value = JobColumnValue(slot, shape, JOB_COL_HAS_CHILDREN, &isnull);
	if (!isnull && DatumGetBool(value))
		return FLOW_TRIGGER;
	value = JobColumnValue(slot, shape, JOB_COL_CONCURRENCY_KEY, &no_key);
	flow = JobColumnValue(slot, shape, JOB_COL_FLOW, &no_flow);
	if (no_key || no_flow || !TextIs(DatumGetTextPP(flow), "slot"))
		return FLOW_NOTHING;
	*key = DatumGetTextPCopy(value);
	return FLOW_SLOT;
}

/*
 * Whether the row in slot may be deleted the direct way, the flow
 * trigger's work (FlowOfCompletion) left to the caller: *slot_key (when
 * slot_key is given) gets the key whose slot the job holds, or NULL.
 */
static bool
FlowAllowsDirect(TupleTableSlot *slot, const PartitionShape *shape, text **slot_key)
{
	text	   *key = NULL;

	switch (FlowOfCompletion(slot, shape, &key))
	{
		case FLOW_NOTHING:
			if (slot_key != NULL)
				*slot_key = NULL;
			return true;
		case FLOW_SLOT:
			if (slot_key == NULL)
				return false;
			*slot_key = key;
			return true;
		case FLOW_TRIGGER:
			break;
	}
	return false;
}

/*
 * Find the row of job id in the partition by its primary key under
 * snapshot and delete it if it holds token (see the header).  *queue gets
 * its queue when deleted, *slot_key the key whose slot it held (NULL: none;
 * slot_key NULL: such a job takes the statement).
 */
static DirectOutcome
DeleteFromPartition(ClaimedPartition *partition, int64 id, int64 token, Snapshot snapshot,
					text **queue, text **slot_key)
{
	Relation	rel = partition->rel;
	TupleTableSlot *slot = partition->slot;
	DirectOutcome outcome = DIRECT_NOT_FOUND;
	ItemPointerData tid;
	TM_FailureData failure;
	TM_Result	result;
	bool		isnull;

	if (!FindClaimedRow(partition, id, token, snapshot))
		goto done;
	if (!FlowAllowsDirect(slot, partition->shape, slot_key))
	{
		outcome = DIRECT_USE_STATEMENT;
		goto done;
	}

	/*
	 * Nobody holds or changed the row since the snapshot (the usual case):
	 * deleted at once, its only WAL record, the token checked above on
	 * this very version.
	 */
	CheckCmdReplicaIdentity(rel, CMD_DELETE);
	*queue = DatumGetTextPCopy(JobColumnValue(slot, partition->shape, JOB_COL_QUEUE, &isnull));
	tid = slot->tts_tid;
	result = table_tuple_delete(rel, &tid, GetCurrentCommandId(true), snapshot, InvalidSnapshot,
								false, &failure, false);
	if (result == TM_Ok)
	{
		outcome = DIRECT_DONE;
		goto done;
	}

	/* otherwise lock the newest version, waiting for a transaction that changes it */
	tid = slot->tts_tid;
	outcome = LockClaimedRow(partition, &tid, snapshot, token, LockTupleExclusive);
	if (outcome != DIRECT_DONE)
		goto done;
	if (!FlowAllowsDirect(slot, partition->shape, slot_key))
	{
		outcome = DIRECT_USE_STATEMENT;
		goto done;
	}
	*queue = DatumGetTextPCopy(JobColumnValue(slot, partition->shape, JOB_COL_QUEUE, &isnull));
	tid = slot->tts_tid;
	result = table_tuple_delete(rel, &tid, GetCurrentCommandId(true), snapshot, InvalidSnapshot,
								true, &failure, false);
	if (result != TM_Ok)
		elog(ERROR, "jobqueue: could not delete job " INT64_FORMAT " after locking it (%d)",
			 id, (int) result);
done:
	ExecClearTuple(slot);
	return outcome;
}

/*
 * queue_delete's work for count (id, token) pairs without the executor,
 * in the order given (queue_delete_many gives them sorted by id, the order
 * its statement locks them in; once a pair deleted a job, the pairs naming
 * it right after find nothing), under one snapshot taken as a statement's
 * would be: outcomes[i] is DIRECT_DONE (deleted; its queue in queues[i]),
 * DIRECT_NOT_FOUND (no row of the job holds that token: the statement
 * would have deleted nothing) or DIRECT_USE_STATEMENT (nothing done for
 * that job: the caller runs the statement for it).  A deleted job that
 * held a slot of its concurrency key has the key in slot_keys[i] (else
 * NULL): the caller hands the slot on, as the flow trigger would have.  Returns false when
 * nothing was done at all (a schema before 1.3, or a partition the direct
 * way leaves to the statement): the caller runs the statements.
 */
bool
DeleteJobsDirectly(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
				   DirectOutcome *outcomes, text **queues, text **slot_keys)
{
	ClaimedPartition partitions[3];
	Snapshot	snapshot;
	int64		last_deleted = 0;
	bool		deleted_any = false;

	if (!OpenClaimedPartitions(call, CMD_DELETE, partitions))
		return false;
	snapshot = BeginStatementSnapshot();
	for (int j = 0; j < count; j++)
	{
		outcomes[j] = DIRECT_NOT_FOUND;
		/* the statement's snapshot still sees a row this call deleted */
		if (deleted_any && ids[j] == last_deleted)
			continue;
		for (int i = 0; i < 3 && outcomes[j] == DIRECT_NOT_FOUND; i++)
		{
			outcomes[j] = DeleteFromPartition(&partitions[i], ids[j], tokens[j], snapshot,
											  &queues[j], &slot_keys[j]);
			if (outcomes[j] == DIRECT_DONE)
			{
				NoteJobFoundIn(partitions[i].table);
				last_deleted = ids[j];
				deleted_any = true;
			}
		}
	}
	EndStatementSnapshot(snapshot);
	CloseClaimedPartitions(partitions, 3);
	return true;
}
