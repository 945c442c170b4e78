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
 * it), no rule and no forced row-level security (store.c), and columns the push does not set whose defaults are constants
 * (read once per partition from the catalog, kept until the partition's
 * definition changes).  Anything else returns false and the caller runs
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

/* The columns a plain push sets (the statement's column list, api/push.c). */
typedef enum PushColumn
{
	COL_ID, COL_QUEUE, COL_NAME, COL_PAYLOAD, COL_PRIORITY, COL_MAX_ATTEMPTS,
	COL_AVAILABLE_AT, COL_READY, COL_CREATED_AT, COL_DEADLINE, COL_RING,
	NUM_PUSH_COLUMNS
} PushColumn;

static const char *const push_column_names[NUM_PUSH_COLUMNS] = {
	"id", "queue", "name", "payload", "priority", "max_attempts",
	"available_at", "ready", "created_at", "deadline", "ring"
};

/*
 * What a partition's row is made of, read once: where each pushed column
 * is, and the constant default of every other column (NULL when it has
 * none).  usable is false when a column the push does not set has a
 * default that is not a constant.
 */
typedef struct PartitionShape
{
	Oid			relid;			/* InvalidOid: not read yet, or forgotten */
	bool		usable;
	int			natts;
	AttrNumber	attnum[NUM_PUSH_COLUMNS];
	Datum	   *defaults;		/* per attribute, in context */
	bool	   *default_nulls;
	MemoryContext context;		/* emptied each time the shape is read again */
} PartitionShape;

static PartitionShape shapes[NUM_JOB_TABLES];
static bool forget_registered = false;

/* A partition's definition changed (or the cache was reset): read it again. */
static void
ForgetShapes(Datum arg, Oid relid)
{
	for (int t = 0; t < NUM_JOB_TABLES; t++)
		if (!OidIsValid(relid) || shapes[t].relid == relid)
			shapes[t].relid = InvalidOid;
}

static const PartitionShape *
ShapeOf(JobTable table, Relation rel)
{
	PartitionShape *shape = &shapes[table];
	TupleDesc	desc = RelationGetDescr(rel);
	MemoryContext old;

	if (shape->relid == RelationGetRelid(rel))
		return shape;
	if (!forget_registered)
	{
		CacheRegisterRelcacheCallback(ForgetShapes, (Datum) 0);
		forget_registered = true;
	}
	/* read again after every TRUNCATE (a rotation): the old shape's memory goes */
	if (shape->context == NULL)
		shape->context = AllocSetContextCreate(TopMemoryContext, "jobqueue partition shape",
											   ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(shape->context);
	old = MemoryContextSwitchTo(shape->context);
	shape->usable = true;
	shape->natts = desc->natts;
	shape->defaults = palloc0(sizeof(Datum) * desc->natts);
	shape->default_nulls = palloc(sizeof(bool) * desc->natts);
	for (int c = 0; c < NUM_PUSH_COLUMNS; c++)
	{
		shape->attnum[c] = SPI_fnumber(desc, push_column_names[c]);
		if (shape->attnum[c] <= 0)
			shape->usable = false;
	}
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		Node	   *expr = attr->attisdropped ? NULL : build_column_default(rel, a + 1);

		shape->default_nulls[a] = true;
		if (expr == NULL)
			continue;
		expr = eval_const_expressions(NULL, expr);
		if (IsA(expr, Const))
		{
			shape->default_nulls[a] = ((Const *) expr)->constisnull;
			shape->defaults[a] = datumCopy(((Const *) expr)->constvalue, attr->attbyval,
										   attr->attlen);
		}
		else
		{
			/* fine if the push sets the column itself (ring's default) */
			bool		pushed = false;

			for (int c = 0; c < NUM_PUSH_COLUMNS; c++)
				pushed |= shape->attnum[c] == a + 1;
			shape->usable &= pushed;
		}
	}
	MemoryContextSwitchTo(old);
	shape->relid = RelationGetRelid(rel);
	return shape;
}

/* Whether the partition has a trigger that an INSERT fires. */
static bool
HasInsertTriggers(Relation rel)
{
	TriggerDesc *t = rel->trigdesc;

	return t != NULL &&
		(t->trig_insert_before_row || t->trig_insert_after_row || t->trig_insert_instead_row ||
		 t->trig_insert_before_statement || t->trig_insert_after_statement);
}

/*
 * Whether a queue wants NOTIFY wake-ups: not unless its row in
 * queue_settings says notify = false (store.h's WANTS_WAKEUPS, as a
 * look-up of the primary key under snapshot).
 */
static bool
QueueWantsWakeups(const JqCall *call, text *queue, Snapshot snapshot)
{
	Oid			relid = get_relname_relid("queue_settings", call->schema);
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;
	bool		wants = true;

	if (!OidIsValid(relid))
		return true;
	rel = table_open(relid, AccessShareLock);
	index = index_open(RelationGetPrimaryKeyIndex(rel), AccessShareLock);
	slot = table_slot_create(rel, NULL);
	ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(queue));
	scan = index_beginscan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		notify = slot_getattr(slot, SPI_fnumber(slot->tts_tupleDescriptor, "notify"),
										  &isnull);

		wants = isnull || DatumGetBool(notify);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
	return wants;
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
	Datum		values[NUM_PUSH_COLUMNS];
	bool		nulls[NUM_PUSH_COLUMNS] = {false};

	if (table == JOBS_ALL || job->unique_key != NULL || job->concurrency_key != NULL ||
		job->parent_count > 0)
		return false;
	relid = get_relname_relid(JobTableName(table), call->schema);
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, RowExclusiveLock);
	shape = ShapeOf(table, rel);
	if (!shape->usable || HasInsertTriggers(rel) || !PartitionWritableDirectly(rel))
	{
		table_close(rel, NoLock);
		return false;
	}

	*id = nextval_internal(get_relname_relid("queue_jobs_id_seq", call->schema), false);
	values[COL_ID] = Int64GetDatum(*id);
	values[COL_QUEUE] = PointerGetDatum(job->queue);
	values[COL_NAME] = PointerGetDatum(job->name);
	values[COL_PAYLOAD] = PointerGetDatum(job->payload);
	values[COL_PRIORITY] = Int32GetDatum(job->priority);
	values[COL_MAX_ATTEMPTS] = Int32GetDatum(job->max_attempts);
	values[COL_AVAILABLE_AT] = TimestampTzGetDatum(job->available_at);
	values[COL_READY] = BoolGetDatum(job->available_at <= call->now);
	values[COL_CREATED_AT] = TimestampTzGetDatum(call->now);
	values[COL_DEADLINE] = TimestampTzGetDatum(job->deadline);
	nulls[COL_DEADLINE] = !job->has_deadline;
	values[COL_RING] = Int16GetDatum(ring);

	slot = table_slot_create(rel, NULL);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, shape->defaults, sizeof(Datum) * shape->natts);
	memcpy(slot->tts_isnull, shape->default_nulls, sizeof(bool) * shape->natts);
	for (int c = 0; c < NUM_PUSH_COLUMNS; c++)
	{
		slot->tts_values[shape->attnum[c] - 1] = values[c];
		slot->tts_isnull[shape->attnum[c] - 1] = nulls[c];
	}
	ExecStoreVirtualTuple(slot);

	/* as a statement: a fresh snapshot, this transaction's earlier work seen */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(snapshot);
	InsertRow(rel, slot);
	*wake = QueueWantsWakeups(call, job->queue, snapshot);
	PopActiveSnapshot();
	UnregisterSnapshot(snapshot);
	CommandCounterIncrement();

	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return true;
}
