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
 * partition's constraints, its partition bound and every index the row
 * has an entry in (partial ones too) are checked and written as the
 * statement would, with WAL and
 * statistics; only the plan is missing (and the partition bound's check
 * after the first push of a ring into the partition: CheckRow).  The queue's wake-up setting is
 * one look-up of queue_settings' primary key under the same snapshot, kept
 * by the backend for a second (settings_row.c).
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

/*
 * Open the partition of job table "table" for a direct insert: its
 * relation (RowExclusiveLock, kept to the transaction's end) and shape,
 * or false (nothing to close) when the statement must run instead.
 */
static bool
OpenForDirectInsert(const JqCall *call, JobTable table, Relation *rel,
					const PartitionShape **shape)
{
	Oid			relid;

	if (table == JOBS_ALL)
		return false;
	relid = ExtensionRelid(call, JobTableName(table));
	if (!OidIsValid(relid))
		return false;
	*rel = table_open(relid, RowExclusiveLock);
	*shape = ShapeOf(table, *rel);
	if (!(*shape)->push_usable || !PartitionWritableDirectly(call, *rel, CMD_INSERT))
	{
		table_close(*rel, NoLock);
		return false;
	}
	return true;
}

/* Build job's row (as the push statement writes it) in slot. */
static void
BuildJobRow(TupleTableSlot *slot, const PartitionShape *shape, const JobSpec *job, int64 id,
			int16 ring, TimestampTz now)
{
	ExecClearTuple(slot);
	memcpy(slot->tts_values, shape->defaults, sizeof(Datum) * shape->natts);
	memcpy(slot->tts_isnull, shape->default_nulls, sizeof(bool) * shape->natts);
	SetJobColumn(slot, shape, JOB_COL_ID, Int64GetDatum(id), false);
	SetJobColumn(slot, shape, JOB_COL_QUEUE, PointerGetDatum(job->queue), false);
	SetJobColumn(slot, shape, JOB_COL_NAME, PointerGetDatum(job->name), false);
	SetJobColumn(slot, shape, JOB_COL_PAYLOAD, PointerGetDatum(job->payload), false);
	SetJobColumn(slot, shape, JOB_COL_PRIORITY, Int32GetDatum(job->priority), false);
	SetJobColumn(slot, shape, JOB_COL_MAX_ATTEMPTS, Int32GetDatum(job->max_attempts), false);
	SetJobColumn(slot, shape, JOB_COL_AVAILABLE_AT, TimestampTzGetDatum(job->available_at), false);
	SetJobColumn(slot, shape, JOB_COL_READY, BoolGetDatum(job->available_at <= now), false);
	SetJobColumn(slot, shape, JOB_COL_CREATED_AT, TimestampTzGetDatum(now), false);
	SetJobColumn(slot, shape, JOB_COL_DEADLINE, TimestampTzGetDatum(job->deadline),
				 !job->has_deadline);
	SetJobColumn(slot, shape, JOB_COL_RING, Int16GetDatum(ring), false);
	ExecStoreVirtualTuple(slot);
}

/*
 * Check the row in slot as logical replication's apply does before it
 * inserts one (ExecSimpleRelationInsert), less what the partition cannot
 * need: no trigger fires on INSERT and no column is generated
 * (OpenForDirectInsert, ShapeOf), and the partition bound is checked for
 * the first push of a ring into the partition only: the partition key is
 * computed from the ring and the unique key, the same for every plain push
 * of that ring, and its check is an expression planned anew for each
 * executor state.
 */
static void
CheckRow(JobTable table, const PartitionShape *shape, ResultRelInfo *result, EState *estate,
		 TupleTableSlot *slot, int16 ring)
{
	if (result->ri_RelationDesc->rd_att->constr != NULL)
		ExecConstraints(result, slot, estate);
	if (shape->bound_checked_ring != ring)
	{
		ExecPartitionCheck(result, slot, estate, true);
		NoteBoundChecked(table, ring);
	}
}

/*
 * Insert jobs[0..count) into the partition rel of job table "table", one
 * executor state for them all; their ids (from the id sequence, in order)
 * go to ids.  One row goes in as an INSERT statement writes it; several
 * go into the heap together as COPY writes them (table_multi_insert: the
 * rows that fit a page take one buffer lock and one WAL record instead of
 * one each), then their index entries one row at a time, as COPY's do.
 */
static void
InsertRows(const JqCall *call, JobTable table, Relation rel, const PartitionShape *shape,
		   const JobSpec *jobs, int count, int16 ring, int64 *ids, Snapshot snapshot)
{
	PartitionWrite write;
	TupleTableSlot **slots = palloc(sizeof(TupleTableSlot *) * count);
	Oid			id_sequence = ExtensionRelid(call, "queue_jobs_id_seq");

	/*
	 * The rows of a batch share a copy of the partition's descriptor: each
	 * slot of the relation's own would pin it, an entry in the resource
	 * owner to make and to find again.
	 */
	TupleDesc	desc = count > 1 ? CreateTupleDescCopy(RelationGetDescr(rel)) : RelationGetDescr(rel);

	BeginPartitionWrite(&write, table, rel, snapshot, CMD_INSERT);
	for (int i = 0; i < count; i++)
	{
		slots[i] = MakeSingleTupleTableSlot(desc, table_slot_callbacks(rel));
		ids[i] = nextval_internal(id_sequence, false);
		BuildJobRow(slots[i], shape, &jobs[i], ids[i], ring, call->now);
		CheckRow(table, shape, write.result, write.estate, slots[i], ring);
	}
	if (count == 1)
		table_tuple_insert(rel, slots[0], write.estate->es_output_cid, 0, NULL);
	else
		table_multi_insert(rel, slots, count, write.estate->es_output_cid, 0, NULL);
	for (int i = 0; i < count; i++)
	{
		InsertRowIndexEntries(&write, slots[i], false, false);
		ExecDropSingleTupleTableSlot(slots[i]);
	}
	pfree(slots);
	EndPartitionWrite(&write);
}

/*
 * Insert count plain push jobs (see the header; the caller checked each
 * is plain: JobSpecIsPlain) into the ring partition "table" (ring number
 * ring), as the push statements would; true with their ids, in order, and
 * (wake not NULL) whether the first one's queue wants wake-ups, or false
 * (nothing done: run the statements).
 */
bool
InsertJobsDirectly(const JqCall *call, const JobSpec *jobs, int count, JobTable table,
				   int16 ring, int64 *ids, bool *wake)
{
	Relation	rel;
	const PartitionShape *shape;
	Snapshot	snapshot;

	if (!OpenForDirectInsert(call, table, &rel, &shape))
		return false;
	snapshot = BeginStatementSnapshot();
	InsertRows(call, table, rel, shape, jobs, count, ring, ids, snapshot);
	if (wake != NULL)
		*wake = KeptQueueWantsWakeups(call, jobs[0].queue, snapshot);
	EndStatementSnapshot(snapshot);
	table_close(rel, NoLock);
	return true;
}

/* Whether job is a plain push (see the header), which may go the direct way. */
bool
JobSpecIsPlain(const JobSpec *job)
{
	return job->unique_key == NULL && job->concurrency_key == NULL && job->parent_count == 0;
}
