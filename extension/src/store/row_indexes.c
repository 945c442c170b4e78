/*-------------------------------------------------------------------------
 *
 * row_indexes.c
 *	  Which of a partition's indexes a row of a write without a plan has
 *	  entries in (1.6).
 *
 * A job partition has six indexes, five of them partial, and a row has
 * entries in two or three (direct_write.c).  An index is opened when a row
 * of the write first needs an entry in it, which the predicate kept with
 * the partition's shape (shape.c) tells from the row alone.
 *
 * A row's choice is kept for the next row, of this write or of a later
 * one into the same partition (IndexChoice, kept with the shape): an
 * index predicate is immutable, so a row whose values in the columns the
 * predicates read are the same (byte for byte) as the last row's needs the
 * same indexes.  The rows of a batch push, or of a claim of many, mostly
 * agree, and so do one-job pushes one after another; then none of the five
 * predicates is evaluated again.
 * A predicate evaluated here is not evaluated again by the executor's
 * helper that writes the entries: the index's description it is given,
 * kept with the shape too, has none (CopyKeptInfo).
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/sysattr.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "utils/datum.h"

/*
 * A write's own copy of a kept index description (shape.c's KeepIndex,
 * which left the predicate out: the write evaluates it, for the row, before
 * it asks the executor's helper for the row's entries).  The helper notes
 * facts of one statement in a description (whether an update left the
 * index's columns alone, an access method's cache in ii_Context), so
 * those go in the copy, in the write's memory; the parts it only reads
 * (columns, operators, the compiled key expressions) are shared.
 */
static IndexInfo *
CopyKeptInfo(const IndexInfo *kept)
{
	IndexInfo  *copy = palloc(sizeof(IndexInfo));

	*copy = *kept;
	copy->ii_Context = CurrentMemoryContext;
	copy->ii_AmCache = NULL;
	return copy;
}

/* One more each time a choice is remembered, in any partition: 0 is none. */
static uint64 rememberings = 0;

/*
 * Get ready to choose write's indexes for its rows (BeginPartitionWrite
 * calls it, with the index list read): none known of the write yet; the
 * choice kept with the partition's shape (none for queue_failed_jobs, or
 * if the shape was not read for this relation), if it is of the same
 * index list.
 */
void
BeginRowIndexes(PartitionWrite *write, Relation rel)
{
	IndexChoice *choice = write->table == JOBS_ALL ? NULL : ShapeIndexChoice(write->table, rel);

	write->kept = palloc0(sizeof(KeptIndex *) * Max(write->index_count, 1));
	write->needs = palloc0(sizeof(bool) * Max(write->index_count, 1));
	write->applied = 0;
	write->choice = NULL;
	if (choice == NULL)
		return;
	if (choice->index_oids == NULL)
	{
		choice->index_count = write->index_count;
		choice->index_oids = MemoryContextAlloc(choice->context,
												sizeof(Oid) * Max(write->index_count, 1));
		memcpy(choice->index_oids, write->index_oids, sizeof(Oid) * write->index_count);
	}
	if (choice->index_count == write->index_count &&
		memcmp(choice->index_oids, write->index_oids, sizeof(Oid) * write->index_count) == 0)
		write->choice = choice;
}

/*
 * The columns a row's choice depends on: those the predicates of write's
 * indexes read, once its rows have made every index known (else left to a
 * later row); none (each row looked at alone) when a predicate reads the
 * whole row.  The choice's arrays go in the shape's memory.
 */
static void
FindChoiceColumns(IndexChoice *choice, const PartitionWrite *write)
{
	Bitmapset  *columns = NULL;
	int			column = -1;
	MemoryContext old;

	for (int i = 0; i < write->index_count; i++)
	{
		if (write->kept[i] == NULL)
			return;
		columns = bms_union(columns, write->kept[i]->columns);
	}
	choice->column_count = 0;
	if (bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, columns))
		return;
	old = MemoryContextSwitchTo(choice->context);
	choice->kept = palloc(sizeof(KeptIndex *) * Max(write->index_count, 1));
	memcpy(choice->kept, write->kept, sizeof(KeptIndex *) * write->index_count);
	choice->needs = palloc(sizeof(bool) * Max(write->index_count, 1));
	choice->columns = palloc(sizeof(AttrNumber) * Max(bms_num_members(columns), 1));
	while ((column = bms_next_member(columns, column)) >= 0)
		choice->columns[choice->column_count++] = column + FirstLowInvalidHeapAttributeNumber;
	choice->values = palloc0(sizeof(Datum) * Max(choice->column_count, 1));
	choice->nulls = palloc(sizeof(bool) * Max(choice->column_count, 1));
	MemoryContextSwitchTo(old);
}

/* Whether the row in slot has the remembered row's values in the columns the choice reads. */
static bool
SameChoiceColumns(const IndexChoice *choice, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	if (choice->remembered == 0)
		return false;
	for (int c = 0; c < choice->column_count; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, choice->columns[c] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, choice->columns[c], &isnull);

		if (isnull != choice->nulls[c] ||
			(!isnull && !datum_image_eq(value, choice->values[c], attr->attbyval,
										attr->attlen)))
			return false;
	}
	return true;
}

/*
 * Remember the row in slot, the last that write chose indexes for, with
 * the indexes it needs (write->needs): copies of its values in the
 * shape's memory, replacing the last row's.
 */
static void
RememberChoice(IndexChoice *choice, PartitionWrite *write, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	MemoryContext old;

	if (choice->column_count < 0)
		FindChoiceColumns(choice, write);
	if (choice->column_count <= 0)
		return;
	old = MemoryContextSwitchTo(choice->context);
	for (int c = 0; c < choice->column_count; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, choice->columns[c] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, choice->columns[c], &isnull);

		if (!attr->attbyval && choice->remembered != 0 && !choice->nulls[c])
			pfree(DatumGetPointer(choice->values[c]));
		choice->nulls[c] = isnull;
		choice->values[c] = isnull ? (Datum) 0 : datumCopy(value, attr->attbyval, attr->attlen);
	}
	MemoryContextSwitchTo(old);
	memcpy(choice->needs, write->needs, sizeof(bool) * write->index_count);
	choice->remembered = ++rememberings;
	write->applied = choice->remembered;
}

/* Whether the row in slot satisfies the predicate of the index kept (none: it does). */
static bool
RowSatisfies(PartitionWrite *write, const KeptIndex *kept, TupleTableSlot *slot)
{
	ExprContext *econtext;

	if (kept->predicate == NULL)
		return true;
	econtext = GetPerTupleExprContext(write->estate);
	econtext->ecxt_scantuple = slot;
	return ExecQual(kept->predicate, econtext);
}

/*
 * Open index i of write, the first time a row needs it.  An index of a job
 * partition is kept with its shape then, and its predicate is evaluated
 * for the row by the caller; one of queue_failed_jobs (no shape) is left
 * to the executor's helper with its predicate.
 */
static void
OpenRowIndex(PartitionWrite *write, int i)
{
	write->opened[i] = index_open(write->index_oids[i], RowExclusiveLock);
	if (write->table == JOBS_ALL)
	{
		write->infos[i] = BuildIndexInfo(write->opened[i]);
		return;
	}
	if (write->kept[i] == NULL)
		write->kept[i] = KeepIndex(write->table, write->opened[i]);
	write->infos[i] = CopyKeptInfo(write->kept[i]->checked_info);
}

/* Make write's indexes (what the executor's helpers insert into) those of write->needs. */
static void
UseNeededIndexes(PartitionWrite *write)
{
	ResultRelInfo *result = write->result;

	result->ri_NumIndices = 0;
	for (int i = 0; i < write->index_count; i++)
	{
		if (!write->needs[i])
			continue;
		if (write->opened[i] == NULL)
			OpenRowIndex(write, i);
		result->ri_IndexRelationDescs[result->ri_NumIndices] = write->opened[i];
		result->ri_IndexRelationInfo[result->ri_NumIndices] = write->infos[i];
		result->ri_NumIndices++;
	}
}

/*
 * Which indexes the row in slot needs (write->needs), by their predicates:
 * each index known to the shape, or opened (and so made known) to be.
 */
static void
ChooseIndexes(PartitionWrite *write, TupleTableSlot *slot)
{
	for (int i = 0; i < write->index_count; i++)
	{
		if (write->table != JOBS_ALL && write->kept[i] == NULL)
			write->kept[i] = KeptIndexOf(write->table, write->index_oids[i]);
		if (write->kept[i] == NULL)
		{
			/* not known yet (or an index of queue_failed_jobs): opened to be known */
			if (write->opened[i] == NULL)
				OpenRowIndex(write, i);
			write->needs[i] = write->kept[i] == NULL || RowSatisfies(write, write->kept[i], slot);
		}
		else
			write->needs[i] = RowSatisfies(write, write->kept[i], slot);
	}
}

/*
 * Make write's indexes (what the executor's helpers insert into) those the
 * row in slot needs, opening each the first time (see the header).
 */
void
UseIndexesOfRow(PartitionWrite *write, TupleTableSlot *slot)
{
	IndexChoice *choice = write->choice;

	if (choice != NULL && SameChoiceColumns(choice, slot))
	{
		if (write->applied == choice->remembered)
			return;				/* the remembered row's indexes, still in result */
		for (int i = 0; i < write->index_count; i++)
			if (write->kept[i] == NULL)
				write->kept[i] = choice->kept[i];
		memcpy(write->needs, choice->needs, sizeof(bool) * write->index_count);
		write->applied = choice->remembered;
	}
	else
	{
		ChooseIndexes(write, slot);
		write->applied = 0;
		if (choice != NULL)
			RememberChoice(choice, write, slot);
	}
	UseNeededIndexes(write);
}
