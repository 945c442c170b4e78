/*-------------------------------------------------------------------------
 *
 * direct_delete.c
 *	  Completions (queue_delete, queue_delete_many) and failures
 *	  (queue_fail, a release on the last attempt) without the executor.
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
 * A failure is the same delete, and the job's row in queue_failed_jobs
 * inserted from the version deleted, as the failure's one statement (a
 * DELETE ... RETURNING feeding an INSERT) writes it.  Only for a job
 * without a concurrency key and without children: for those the flow
 * trigger keeps the key in the failed row and fails the children, so the
 * statement runs; so it does for a failed table with a trigger of the
 * user's on INSERT, rules or forced row-level security.
 * The locks: ACCESS SHARE on every partition (ring.c), as the statement
 * takes it, and ROW EXCLUSIVE on each of the three (the statement takes it
 * on those it looked in), the row's own lock.  A batch (queue_delete_many)
 * opens the partitions once and works under one snapshot, as its
 * statements did, and looks its jobs up in one scan of each partition's
 * primary key with their ids as an array key, as its statement's
 * "id = ANY (ids)" does (claimed_row.c).
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

/* A failure's row of queue_failed_jobs, built from the job's version deleted. */
typedef struct FailedRow
{
	Relation	rel;
	TupleTableSlot *slot;		/* virtual, its values its own once built */
	AttrNumber	attnum[NUM_FAILED_COLUMNS];
	text	   *error;			/* the worker's ('' : none given) */
	TimestampTz failed_at;
	PartitionWrite write;		/* the failed table's, begun at its first row */
} FailedRow;

static bool BuildFailedRow(FailedRow *failed, TupleTableSlot *job, const PartitionShape *shape);

/*
 * Delete the job whose row is in the partition's slot (found under
 * snapshot, holding token; see the header).  *queue gets its queue when
 * deleted, *slot_key the key whose slot it held (NULL: none; slot_key
 * NULL: such a job takes the statement).  With failed, the job's failed
 * row is built from the version deleted (a job it cannot be built for
 * takes the statement).
 */
static DirectOutcome
DeleteFoundRow(ClaimedPartition *partition, int64 id, int64 token, Snapshot snapshot,
			   text **queue, text **slot_key, FailedRow *failed)
{
	Relation	rel = partition->rel;
	TupleTableSlot *slot = partition->slot;
	DirectOutcome outcome;
	ItemPointerData tid;
	TM_FailureData failure;
	TM_Result	result;
	bool		isnull;

	if (!FlowAllowsDirect(slot, partition->shape, slot_key) ||
		(failed != NULL && !BuildFailedRow(failed, slot, partition->shape)))
	{
		outcome = DIRECT_USE_STATEMENT;
		goto done;
	}

	/*
	 * Nobody holds or changed the row since the snapshot (the usual case):
	 * deleted at once, its only WAL record, the token checked on this very
	 * version.
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
	if (!FlowAllowsDirect(slot, partition->shape, slot_key) ||
		(failed != NULL && !BuildFailedRow(failed, slot, partition->shape)))
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
 * The pairs of DeleteJobsDirectly (ids ascending) that still look for
 * their job: those of each job no pair has deleted yet that are not done
 * (DIRECT_NOT_FOUND so far).  Their jobs' ids, each once and ascending, go
 * to wanted; returns how many.
 */
static int
JobsStillWanted(int count, const int64 *ids, const DirectOutcome *outcomes, int64 *wanted)
{
	int			nwanted = 0;

	for (int first = 0, next; first < count; first = next)
	{
		bool		deleted = false;
		bool		looking = false;

		for (next = first; next < count && ids[next] == ids[first]; next++)
		{
			deleted |= outcomes[next] == DIRECT_DONE;
			looking |= outcomes[next] == DIRECT_NOT_FOUND;
		}
		if (looking && !deleted)
			wanted[nwanted++] = ids[first];
	}
	return nwanted;
}

/*
 * One partition's part of DeleteJobsDirectly: the jobs still wanted looked
 * up in one scan of its primary key; each job found is deleted for the
 * first of its pairs whose token its row holds (another pair's token can
 * only be stale).  false when no job is left to look for, or when the
 * partition is left to the statement (the pairs of the jobs still wanted
 * that are still looking then take it).
 */
static bool
DeleteInPartition(ClaimedPartition *partition, int count, const int64 *ids, const int64 *tokens,
				  Snapshot snapshot, DirectOutcome *outcomes, text **queues, text **slot_keys)
{
	int64	   *wanted = palloc(sizeof(int64) * count);
	int			nwanted = JobsStillWanted(count, ids, outcomes, wanted);
	int			next = 0;
	int64		id;

	if (nwanted == 0 || !ClaimedPartitionOpen(partition))
	{
		/* not the stale pairs of a job another pair deleted: the statement would find nothing */
		for (int j = 0, w = 0; j < count && w < nwanted; j++)
		{
			while (w < nwanted && wanted[w] < ids[j])
				w++;
			if (w < nwanted && wanted[w] == ids[j] && outcomes[j] == DIRECT_NOT_FOUND)
				outcomes[j] = DIRECT_USE_STATEMENT;
		}
		pfree(wanted);
		return false;
	}
	LookUpClaimedRows(partition, wanted, nwanted, snapshot);
	while (NextLookedUpRow(partition, &id))
	{
		CHECK_FOR_INTERRUPTS();
		while (next < count && ids[next] < id)
			next++;
		for (int j = next; j < count && ids[j] == id; j++)
		{
			if (outcomes[j] != DIRECT_NOT_FOUND || !RowHoldsToken(partition, tokens[j]))
				continue;
			outcomes[j] = DeleteFoundRow(partition, id, tokens[j], snapshot, &queues[j],
										 &slot_keys[j], NULL);
			if (outcomes[j] == DIRECT_DONE)
				NoteJobFoundIn(partition->table);
			break;
		}
	}
	ExecClearTuple(partition->slot);
	pfree(wanted);
	return true;
}

/*
 * queue_delete's work for count (id, token) pairs without the executor,
 * ids ascending (queue_delete_many sorts them by id, the order its
 * statement locks them in: a job is deleted for the first of its pairs
 * whose token it holds, the others find nothing), under one snapshot taken
 * as a statement's would be, one partition after the other: outcomes[i]
 * is DIRECT_DONE (deleted; its queue in queues[i]), DIRECT_NOT_FOUND (no
 * row of the job holds that token: the statement would have deleted
 * nothing) or DIRECT_USE_STATEMENT (nothing done for that job, which was
 * not in the partitions looked in before one the direct way leaves to the
 * statement: the caller runs the statement for it).  A deleted job that
 * held a slot of its concurrency key has the key in slot_keys[i] (else
 * NULL): the caller hands the slot on, as the flow trigger would have.
 * Returns false when nothing was done at all (a schema before 1.3): the
 * caller runs the statements.
 */
bool
DeleteJobsDirectly(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
				   DirectOutcome *outcomes, text **queues, text **slot_keys)
{
	ClaimedPartition partitions[3];
	Snapshot	snapshot;

	if (!BeginClaimedPartitions(call, CMD_DELETE, partitions, &snapshot))
		return false;
	for (int j = 0; j < count; j++)
	{
		Assert(j == 0 || ids[j - 1] <= ids[j]);
		outcomes[j] = DIRECT_NOT_FOUND;
	}
	for (int i = 0; i < 3; i++)
		if (!DeleteInPartition(&partitions[i], count, ids, tokens, snapshot, outcomes, queues,
							   slot_keys))
			break;
	EndClaimedPartitions(partitions, snapshot);
	return true;
}

/* The columns of queue_failed_jobs a failure writes, by name (FailedColumn's order). */
static const char *const failed_column_names[NUM_FAILED_COLUMNS] = {
	"id", "job_id", "queue", "name", "payload", "priority", "attempts", "max_attempts",
	"error", "failed_at", "created_at"
};

/* The job's column each failed column copies (NUM_JOB_COLUMNS: made by the failure). */
static const JobColumn failed_from_job[NUM_FAILED_COLUMNS] = {
	[FAILED_ID] = JOB_COL_ID,
	[FAILED_JOB_ID] = JOB_COL_ID,
	[FAILED_QUEUE] = JOB_COL_QUEUE,
	[FAILED_NAME] = JOB_COL_NAME,
	[FAILED_PAYLOAD] = JOB_COL_PAYLOAD,
	[FAILED_PRIORITY] = JOB_COL_PRIORITY,
	[FAILED_ATTEMPTS] = JOB_COL_ATTEMPTS,
	[FAILED_MAX_ATTEMPTS] = JOB_COL_MAX_ATTEMPTS,
	[FAILED_ERROR] = NUM_JOB_COLUMNS,
	[FAILED_FAILED_AT] = NUM_JOB_COLUMNS,
	[FAILED_CREATED_AT] = JOB_COL_CREATED_AT,
};

/*
 * Build the failed row of the job in "job" (see the header): false for a
 * job with a concurrency key (the statement and the flow trigger then
 * keep the key in the failed row; a job with children FlowAllowsDirect
 * already left to them).  The error is the worker's, else the job's last
 * recorded one, else says none was given (complete.c's statement says the
 * same in SQL).
 */
static bool
BuildFailedRow(FailedRow *failed, TupleTableSlot *job, const PartitionShape *shape)
{
	TupleTableSlot *row = failed->slot;
	bool		isnull;
	Datum		value;

	if (shape->attnum[JOB_COL_CONCURRENCY_KEY] > 0 &&	/* 1.5 on */
		!slot_attisnull(job, shape->attnum[JOB_COL_CONCURRENCY_KEY]))
		return false;
	ExecClearTuple(row);
	memset(row->tts_isnull, true, sizeof(bool) * row->tts_tupleDescriptor->natts);
	for (int c = 0; c < NUM_FAILED_COLUMNS; c++)
	{
		AttrNumber	a = failed->attnum[c] - 1;

		if (failed_from_job[c] != NUM_JOB_COLUMNS)
			row->tts_values[a] = JobColumnValue(job, shape, failed_from_job[c],
												&row->tts_isnull[a]);
	}
	if (VARSIZE_ANY_EXHDR(failed->error) > 0)
		value = PointerGetDatum(failed->error);
	else
	{
		value = JobColumnValue(job, shape, JOB_COL_LAST_ERROR, &isnull);
		if (isnull || VARSIZE_ANY_EXHDR(DatumGetTextPP(value)) == 0)
			value = CStringGetTextDatum(FAILED_WITHOUT_ERROR);
	}
	row->tts_values[failed->attnum[FAILED_ERROR] - 1] = value;
	row->tts_isnull[failed->attnum[FAILED_ERROR] - 1] = false;
	row->tts_values[failed->attnum[FAILED_FAILED_AT] - 1] = TimestampTzGetDatum(failed->failed_at);
	row->tts_isnull[failed->attnum[FAILED_FAILED_AT] - 1] = false;
	ExecStoreVirtualTuple(row);
	/* its own copy: the job's version goes with the delete */
	ExecMaterializeSlot(row);
	return true;
}

/*
 * Open queue_failed_jobs for a failure's insert: false (closed again) if
 * the direct way must leave it to the statement (see the header).
 */
static bool
OpenFailedTable(const JqCall *call, FailedRow *failed)
{
	Oid			relid = ExtensionRelid(call, "queue_failed_jobs");

	if (!OidIsValid(relid))
		return false;
	failed->rel = table_open(relid, RowExclusiveLock);
	for (int c = 0; c < NUM_FAILED_COLUMNS; c++)
		failed->attnum[c] = SPI_fnumber(RelationGetDescr(failed->rel), failed_column_names[c]);
	for (int c = 0; c < NUM_FAILED_COLUMNS; c++)
		if (failed->attnum[c] <= 0)
		{
			table_close(failed->rel, NoLock);
			return false;
		}
	if (!PartitionWritableDirectly(call, failed->rel, CMD_INSERT) ||
		(failed->rel->rd_att->constr != NULL && failed->rel->rd_att->constr->has_generated_stored))
	{
		table_close(failed->rel, NoLock);
		return false;
	}
	failed->slot = MakeSingleTupleTableSlot(RelationGetDescr(failed->rel), &TTSOpsVirtual);
	return true;
}

/* Insert the failed row built (constraints, the primary key's uniqueness, every index). */
static void
InsertFailedRow(FailedRow *failed, Snapshot snapshot)
{
	PartitionWrite *write = &failed->write;

	if (write->estate == NULL)
		BeginPartitionWrite(write, JOBS_ALL, failed->rel, snapshot, CMD_INSERT);
	if (failed->rel->rd_att->constr != NULL)
		ExecConstraints(write->result, failed->slot, write->estate);
	table_tuple_insert(failed->rel, failed->slot, write->estate->es_output_cid, 0, NULL);
	InsertRowIndexEntries(write, failed->slot, false, false);
}

/* Fail pair's job in the first partition where its row holds token (see the header). */
static DirectOutcome
FailClaimed(ClaimedPartition partitions[3], FailedRow *failed, int64 id, int64 token,
			Snapshot snapshot, text **queue)
{
	DirectOutcome outcome;
	ClaimedPartition *partition = PartitionHoldingClaim(partitions, id, token, snapshot, &outcome);

	if (partition == NULL)
		return outcome;
	outcome = DeleteFoundRow(partition, id, token, snapshot, queue, NULL, failed);
	if (outcome == DIRECT_DONE)
	{
		NoteJobFoundIn(partition->table);
		InsertFailedRow(failed, snapshot);
	}
	return outcome;
}

/*
 * Move the claimed jobs of the pairs (ids[k], tokens[k]), count of them,
 * ids ascending, to queue_failed_jobs with error ('' for none) at
 * failed_at, as the failure's statement does (see the header), each job
 * once however many pairs name it (EarlierPairDone), in id order:
 * outcomes[k] is DIRECT_DONE (the job's queue in queues[k]),
 * DIRECT_NOT_FOUND (no row of the job holds the token, or an earlier pair
 * failed it) or DIRECT_USE_STATEMENT (nothing done for the pair).  Returns
 * false, nothing done, when the direct way may not be taken at all.
 */
bool
FailJobsDirectly(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
				 text *error, TimestampTz failed_at, DirectOutcome *outcomes, text **queues)
{
	ClaimedPartition partitions[3];
	FailedRow	failed = {.error = error, .failed_at = failed_at};
	Snapshot	snapshot;

	if (!BeginClaimedPartitions(call, CMD_DELETE, partitions, &snapshot))
		return false;
	if (!OpenFailedTable(call, &failed))
	{
		EndClaimedPartitions(partitions, snapshot);
		return false;
	}
	for (int k = 0; k < count; k++)
	{
		Assert(k == 0 || ids[k - 1] <= ids[k]);
		CHECK_FOR_INTERRUPTS();
		outcomes[k] = EarlierPairDone(ids, outcomes, k) ? DIRECT_NOT_FOUND :
			FailClaimed(partitions, &failed, ids[k], tokens[k], snapshot, &queues[k]);
	}
	if (failed.write.estate != NULL)
		EndPartitionWrite(&failed.write);
	ExecDropSingleTupleTableSlot(failed.slot);
	table_close(failed.rel, NoLock);
	EndClaimedPartitions(partitions, snapshot);
	return true;
}
