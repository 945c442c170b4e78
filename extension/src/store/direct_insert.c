/*-------------------------------------------------------------------------
 *
 * direct_insert.c
 *	  A push (queue_push) without a plan.
 *
 * A push is one row into the ring partition that takes pushes now.  As a
 * statement (INSERT ... RETURNING id, wants_wakeups) most of its cost is
 * not the insert: the plan's checks, the executor's nodes and projections,
 * the sub-select that reads the queue's settings and the portal cost about
 * as much as the heap and index inserts (docs/performance.md, "Where a
 * call's time goes").  Here the row is inserted the way PostgreSQL's own
 * logical replication applies one (ExecSimpleRelationInsert): the
 * partition's constraints, its partition bound and every index (partial
 * ones too) are checked and written as the statement would, with WAL and
 * statistics; only the plan is missing.  The queue's wake-up setting is
 * one look-up of queue_settings' primary key under the same snapshot.
 *
 * Only the plain push goes this way: no unique key (its arbiter is the
 * long partition's unique index, ON CONFLICT), no concurrency key and no
 * parents (flow control), a 1.3 schema or later, a partition with no
 * trigger on INSERT (a user's trigger takes the statement, which fires
 * it), no rule and no forced row-level security (store.c), and columns
 * the push does not set whose defaults are constants (shape.c reads them
 * once per partition, kept until the partition's definition changes).  Anything else returns false and the caller runs
 * the statement; nothing has been done then.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* Whether the partition has a trigger that an INSERT fires. */
static bool
HasInsertTriggers(Relation rel)
{
	TriggerDesc *t = rel->trigdesc;

	return t != NULL &&
		(t->trig_insert_before_row || t->trig_insert_after_row || t->trig_insert_instead_row ||
		 t->trig_insert_before_statement || t->trig_insert_after_statement);
}

/* Insert the row in slot into rel as logical replication's apply does. */
static void
InsertRow(Relation rel, TupleTableSlot *slot)
{
	EState	   *estate = CreateExecutorState();
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	ResultRelInfo *result = makeNode(ResultRelInfo);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(estate, list_make1(rte));
	InitResultRelInfo(result, rel, 1, NULL, 0);
	estate->es_output_cid = GetCurrentCommandId(true);
	ExecOpenIndices(result, false);
	ExecSimpleRelationInsert(result, estate, slot);
	ExecCloseIndices(result);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
}

/*
 * Insert the plain push job (see the header) into the ring partition
 * "table" (ring number ring), as api/push.c's statement would; true with its
 * id and whether its queue wants wake-ups, or false (nothing done: run the
 * statement).
 */
bool
InsertJobDirectly(const JqCall *call, const JobSpec *job, JobTable table, int16 ring,
				  int64 *id, bool *wake)
{
	Oid			relid;
	Relation	rel;
	const PartitionShape *shape;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	QueueSettingsRow settings;

	if (table == JOBS_ALL || job->unique_key != NULL || job->concurrency_key != NULL ||
		job->parent_count > 0)
		return false;
	relid = get_relname_relid(JobTableName(table), call->schema);
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, RowExclusiveLock);
	shape = ShapeOf(table, rel);
	if (!shape->push_usable || HasInsertTriggers(rel) || !PartitionWritableDirectly(rel))
	{
		table_close(rel, NoLock);
		return false;
	}

	*id = nextval_internal(get_relname_relid("queue_jobs_id_seq", call->schema), false);
	slot = table_slot_create(rel, NULL);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, shape->defaults, sizeof(Datum) * shape->natts);
	memcpy(slot->tts_isnull, shape->default_nulls, sizeof(bool) * shape->natts);
	SetJobColumn(slot, shape, JOB_COL_ID, Int64GetDatum(*id), false);
	SetJobColumn(slot, shape, JOB_COL_QUEUE, PointerGetDatum(job->queue), false);
	SetJobColumn(slot, shape, JOB_COL_NAME, PointerGetDatum(job->name), false);
	SetJobColumn(slot, shape, JOB_COL_PAYLOAD, PointerGetDatum(job->payload), false);
	SetJobColumn(slot, shape, JOB_COL_PRIORITY, Int32GetDatum(job->priority), false);
	SetJobColumn(slot, shape, JOB_COL_MAX_ATTEMPTS, Int32GetDatum(job->max_attempts), false);
	SetJobColumn(slot, shape, JOB_COL_AVAILABLE_AT, TimestampTzGetDatum(job->available_at), false);
	SetJobColumn(slot, shape, JOB_COL_READY, BoolGetDatum(job->available_at <= call->now), false);
	SetJobColumn(slot, shape, JOB_COL_CREATED_AT, TimestampTzGetDatum(call->now), false);
	SetJobColumn(slot, shape, JOB_COL_DEADLINE, TimestampTzGetDatum(job->deadline),
			  !job->has_deadline);
	SetJobColumn(slot, shape, JOB_COL_RING, Int16GetDatum(ring), false);
	ExecStoreVirtualTuple(slot);

	/* as a statement: a fresh snapshot, this transaction's earlier work seen */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(snapshot);
	InsertRow(rel, slot);
	ReadQueueSettingsRow(call, job->queue, snapshot, &settings);
	*wake = settings.notify;
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);
	CommandCounterIncrement();

	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return true;
}
