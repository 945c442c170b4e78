/*-------------------------------------------------------------------------
 *
 * shape.c
 *	  What a job partition is made of, for the direct paths (1.6).
 *
 * The writes without a plan (direct_insert.c, direct_claim.c,
 * direct_slots.c) need where each column they read or set is in a
 * partition's rows, the constant default of every other column (a push
 * fills them) and the partition's claim index and index of the jobs
 * waiting for a key.  Reading that from the catalog costs more than the write
 * itself, so it is read once per partition and kept until the partition's
 * definition changes: a relcache invalidation of the partition (an ALTER,
 * and every TRUNCATE of a rotation, which gives it a new file) or a reset
 * of the cache forgets it.  Each shape's memory is its own context, emptied
 * when the shape is read again, so rotations leave nothing behind.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "catalog/index.h"
#include "catalog/partition.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/relcache.h"
#include "utils/rel.h"

/* The names of JobColumn's columns, in its order. */
static const char *const job_column_names[NUM_JOB_COLUMNS] = {
	[JOB_COL_ID] = "id",
	[JOB_COL_QUEUE] = "queue",
	[JOB_COL_NAME] = "name",
	[JOB_COL_PAYLOAD] = "payload",
	[JOB_COL_PRIORITY] = "priority",
	[JOB_COL_MAX_ATTEMPTS] = "max_attempts",
	[JOB_COL_AVAILABLE_AT] = "available_at",
	[JOB_COL_READY] = "ready",
	[JOB_COL_CREATED_AT] = "created_at",
	[JOB_COL_DEADLINE] = "deadline",
	[JOB_COL_RING] = "ring",
	[JOB_COL_ATTEMPTS] = "attempts",
	[JOB_COL_TOKEN] = "token",
	[JOB_COL_RESERVED_UNTIL] = "reserved_until",
	[JOB_COL_RESERVED_BY] = "reserved_by",
	[JOB_COL_LAST_ERROR] = "last_error",
	[JOB_COL_CONCURRENCY_KEY] = "concurrency_key",
	[JOB_COL_FLOW] = "flow",
	[JOB_COL_PARKED_RUN_AT] = "parked_run_at",
	[JOB_COL_HAS_CHILDREN] = "has_children",
};

/* The columns a plain push sets (the statement's column list, api/push.c). */
static const JobColumn pushed_columns[] = {
	JOB_COL_ID, JOB_COL_QUEUE, JOB_COL_NAME, JOB_COL_PAYLOAD, JOB_COL_PRIORITY,
	JOB_COL_MAX_ATTEMPTS, JOB_COL_AVAILABLE_AT, JOB_COL_READY, JOB_COL_CREATED_AT,
	JOB_COL_DEADLINE, JOB_COL_RING
};

/* The indexes of queue_jobs whose partitions a claim and a key's hand-over search. */
#define CLAIM_INDEX_NAME "queue_jobs_claim_idx"
#define KEY_WAITING_INDEX_NAME "queue_jobs_key_waiting_idx"

static PartitionShape shapes[NUM_JOB_TABLES];
static bool forget_registered = false;

/* A partition's definition changed (or the cache was reset): read it again. */
static void
ForgetShapes(Datum arg, Oid relid)
{
	for (int t = 0; t < NUM_JOB_TABLES; t++)
		if (!OidIsValid(relid) || shapes[t].relid == relid || shapes[t].claim_index == relid ||
			shapes[t].key_waiting_index == relid)
			shapes[t].relid = InvalidOid;
}

/* Whether the push sets column attnum (1-based) itself. */
static bool
PushSets(const PartitionShape *shape, AttrNumber attnum)
{
	for (int c = 0; c < lengthof(pushed_columns); c++)
		if (shape->attnum[pushed_columns[c]] == attnum)
			return true;
	return false;
}

/*
 * The constant defaults of the columns a push does not set; push_usable
 * false when one of them has a default that is not a constant.
 */
static void
ReadDefaults(PartitionShape *shape, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	shape->defaults = palloc0(sizeof(Datum) * desc->natts);
	shape->default_nulls = palloc(sizeof(bool) * desc->natts);
	for (int c = 0; c < lengthof(pushed_columns); c++)
		shape->push_usable &= shape->attnum[pushed_columns[c]] > 0;
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
		else if (!PushSets(shape, a + 1))
			shape->push_usable = false; /* fine if the push sets it (ring's default) */
	}
}

/* The partition's index made for queue_jobs' index "name", if it has one. */
static Oid
FindPartitionIndex(Relation rel, const char *name)
{
	Oid			parent = get_relname_relid(name, RelationGetNamespace(rel));
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	if (!OidIsValid(parent))
		return InvalidOid;
	foreach(lc, indexes)
	{
		Oid			index = lfirst_oid(lc);

		if (get_rel_relispartition(index) && get_partition_parent(index, true) == parent)
			found = index;
	}
	list_free(indexes);
	return found;
}

/*
 * Whether the claim index leads with the queue's hash, as 1.7 builds it
 * (pg_catalog.hashtext(queue), ...), and under which collation the hash
 * is taken; false when it leads with the queue itself, as before 1.7.
 * *usable false when it leads with anything else: no claim without a plan
 * then.
 */
static bool
ClaimIndexLeadsWithHash(PartitionShape *shape, bool *usable)
{
	Relation	index = index_open(shape->claim_index, AccessShareLock);
	AttrNumber	first = index->rd_index->indkey.values[0];
	bool		by_hash = false;

	*usable = first == shape->attnum[JOB_COL_QUEUE];
	if (first == 0)
	{
		Node	   *expr = linitial(RelationGetIndexExpressions(index));

		if (IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcid == F_HASHTEXT &&
			list_length(((FuncExpr *) expr)->args) == 1 &&
			IsA(linitial(((FuncExpr *) expr)->args), Var) &&
			((Var *) linitial(((FuncExpr *) expr)->args))->varattno == shape->attnum[JOB_COL_QUEUE])
		{
			by_hash = true;
			*usable = true;
			shape->claim_hash_collation = ((FuncExpr *) expr)->inputcollid;
		}
	}
	index_close(index, AccessShareLock);
	return by_hash;
}

/*
 * The shape of the partition rel of job table "table" (a ring partition or
 * long), read now or kept from before.
 */
const PartitionShape *
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
	if (shape->context == NULL)
		shape->context = AllocSetContextCreate(TopMemoryContext, "jobqueue partition shape",
											   ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(shape->context);
	old = MemoryContextSwitchTo(shape->context);
	shape->natts = desc->natts;
	shape->indexes = NIL;
	memset(&shape->choice, 0, sizeof(IndexChoice));
	shape->choice.context = shape->context;
	shape->choice.column_count = -1;
	for (int c = 0; c < NUM_JOB_COLUMNS; c++)
		shape->attnum[c] = Max(SPI_fnumber(desc, job_column_names[c]), 0);
	/* a push computes no generated column (direct_insert.c) */
	shape->push_usable = !(desc->constr != NULL && desc->constr->has_generated_stored);
	shape->bound_checked_ring = -2;
	ReadDefaults(shape, rel);
	shape->claim_index = FindPartitionIndex(rel, CLAIM_INDEX_NAME);
	shape->key_waiting_index = FindPartitionIndex(rel, KEY_WAITING_INDEX_NAME);
	/* an update without a plan computes no generated column */
	shape->update_usable = !(desc->constr != NULL && desc->constr->has_generated_stored);
	for (int c = 0; c < NUM_CORE_JOB_COLUMNS; c++)
		shape->update_usable &= shape->attnum[c] > 0;
	shape->claim_usable = shape->update_usable && OidIsValid(shape->claim_index);
	shape->claim_by_hash = false;
	if (shape->claim_usable)
	{
		bool		usable;

		shape->claim_by_hash = ClaimIndexLeadsWithHash(shape, &usable);
		shape->claim_usable = usable;
	}
	shape->admit_usable = shape->update_usable && OidIsValid(shape->key_waiting_index);
	for (int c = NUM_CORE_JOB_COLUMNS; c < NUM_JOB_COLUMNS; c++)
		shape->admit_usable &= shape->attnum[c] > 0;
	MemoryContextSwitchTo(old);
	shape->relid = RelationGetRelid(rel);
	return shape;
}

/* Set column of the (virtual) row being built in slot. */
void
SetJobColumn(TupleTableSlot *slot, const PartitionShape *shape, JobColumn column, Datum value,
			 bool isnull)
{
	slot->tts_values[shape->attnum[column] - 1] = value;
	slot->tts_isnull[shape->attnum[column] - 1] = isnull;
}

/* Column of the row in slot. */
Datum
JobColumnValue(TupleTableSlot *slot, const PartitionShape *shape, JobColumn column, bool *isnull)
{
	return slot_getattr(slot, shape->attnum[column], isnull);
}

/*
 * A plain push with ring number ring was found within the partition bound
 * of table's partition: every later one is (the partition key is the ring
 * and the unique key, which a plain push leaves NULL), until the partition
 * changes and its shape is read again.
 */
void
NoteBoundChecked(JobTable table, int ring)
{
	shapes[table].bound_checked_ring = ring;
}

/*
 * The indexes the last row of a write into job table "table"'s partition
 * rel needed (row_indexes.c), kept with its shape; NULL when the shape
 * kept is not rel's (not read for it, or forgotten since).
 */
IndexChoice *
ShapeIndexChoice(JobTable table, Relation rel)
{
	PartitionShape *shape = &shapes[table];

	return shape->relid == RelationGetRelid(rel) ? &shape->choice : NULL;
}

/*
 * An index of job table "table"'s partition as the direct writes know it
 * (see PartitionWrite, direct_write.c), or NULL until a row first needed
 * it (KeepIndex).  Its kept predicate lets a write tell, from the row
 * alone, that the row has no entry in it: then it need not be opened.
 */
const KeptIndex *
KeptIndexOf(JobTable table, Oid index)
{
	ListCell   *lc;

	foreach(lc, shapes[table].indexes)
		if (((KeptIndex *) lfirst(lc))->index == index)
			return lfirst(lc);
	return NULL;
}

/*
 * Keep index (just opened) with the shape of job table "table"'s
 * partition: its description, made once per shape instead of for every
 * write, and its predicate and key expressions compiled once, which the
 * executor would plan and compile again for every executor state
 * (ExecPrepareQual, ExecPrepareExprList at the first row inserted).  The
 * kept description has no predicate: a write evaluates the kept one
 * itself, for the row, before it asks for the row's entries
 * (row_indexes.c), which it does with a copy of its own (CopyKeptInfo).
 * The columns the predicate reads are kept too.  A compiled expression
 * refers to nothing of an executor state; the shape's memory, and so the
 * kept indexes, go when the partition changes (an index created or dropped
 * changes it too).  Returns the index as kept.
 */
const KeptIndex *
KeepIndex(JobTable table, Relation index)
{
	PartitionShape *shape = &shapes[table];
	const KeptIndex *kept = KeptIndexOf(table, RelationGetRelid(index));
	MemoryContext old;
	KeptIndex  *keep;
	IndexInfo  *info;
	ListCell   *lc;

	if (kept != NULL)
		return kept;
	old = MemoryContextSwitchTo(shape->context);
	info = BuildIndexInfo(index);
	keep = palloc(sizeof(KeptIndex));
	keep->index = RelationGetRelid(index);
	keep->predicate = info->ii_Predicate == NIL ? NULL :
		ExecInitQual((List *) expression_planner((Expr *) copyObject(info->ii_Predicate)), NULL);
	keep->columns = NULL;
	pull_varattnos((Node *) info->ii_Predicate, 1, &keep->columns);
	info->ii_Predicate = NIL;
	info->ii_PredicateState = NULL;
	/* the key's expressions (1.7's claim index: the queue's hash) compiled once too */
	foreach(lc, info->ii_Expressions)
		info->ii_ExpressionsState =
			lappend(info->ii_ExpressionsState,
					ExecInitExpr(expression_planner((Expr *) copyObject(lfirst(lc))), NULL));
	keep->checked_info = info;
	shape->indexes = lappend(shape->indexes, keep);
	MemoryContextSwitchTo(old);
	return keep;
}
