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
 * From a write's second row on, a row's choice is kept for the next one:
 * an index predicate is immutable, so a row whose values in the columns
 * the predicates read are the same (byte for byte) as the last row's needs
 * the same indexes.  The rows of a batch push, or of a claim of many,
 * mostly agree, and then none of the five predicates is evaluated again.
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

/*
 * Get ready to choose write's indexes for its rows (BeginPartitionWrite
 * calls it, with the index list read): none known of the write yet.
 */
void
BeginRowIndexes(PartitionWrite *write)
{
	write->kept = palloc0(sizeof(KeptIndex *) * Max(write->index_count, 1));
	write->rows_chosen = 0;
	write->choice_column_count = -1;
	write->remembered = false;
}

/*
 * The columns a row's choice depends on: those the predicates of write's
 * indexes read.  Found at the write's second row, when its first has made
 * every index known; none (each row looked at alone) when one is not
 * known (queue_failed_jobs has no shape) or a predicate reads the whole row.
 */
static void
FindChoiceColumns(PartitionWrite *write)
{
	Bitmapset  *columns = NULL;
	int			column = -1;

	write->choice_column_count = 0;
	for (int i = 0; i < write->index_count; i++)
	{
		if (write->kept[i] == NULL)
			return;
		columns = bms_union(columns, write->kept[i]->columns);
	}
	if (bms_is_member(InvalidAttrNumber - FirstLowInvalidHeapAttributeNumber, columns))
		return;
	write->choice_columns = palloc(sizeof(AttrNumber) * Max(bms_num_members(columns), 1));
	while ((column = bms_next_member(columns, column)) >= 0)
		write->choice_columns[write->choice_column_count++] =
			column + FirstLowInvalidHeapAttributeNumber;
	write->choice_values = palloc(sizeof(Datum) * Max(write->choice_column_count, 1));
	write->choice_nulls = palloc(sizeof(bool) * Max(write->choice_column_count, 1));
}

/* Whether the row in slot has the last row's values in the columns the choice reads. */
static bool
SameChoiceColumns(PartitionWrite *write, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	if (!write->remembered)
		return false;
	for (int c = 0; c < write->choice_column_count; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, write->choice_columns[c] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, write->choice_columns[c], &isnull);

		if (isnull != write->choice_nulls[c] ||
			(!isnull && !datum_image_eq(value, write->choice_values[c], attr->attbyval,
										attr->attlen)))
			return false;
	}
	return true;
}

/*
 * Remember the values of the row in slot that its choice read (copies in
 * the write's memory, which goes with it).
 */
static void
RememberChoiceColumns(PartitionWrite *write, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	MemoryContext old = MemoryContextSwitchTo(write->estate->es_query_cxt);

	for (int c = 0; c < write->choice_column_count; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, write->choice_columns[c] - 1);
		Datum		value = slot_getattr(slot, write->choice_columns[c],
										 &write->choice_nulls[c]);

		write->choice_values[c] = write->choice_nulls[c] ? (Datum) 0 :
			datumCopy(value, attr->attbyval, attr->attlen);
	}
	MemoryContextSwitchTo(old);
	write->remembered = true;
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

/*
 * Make write's indexes (what the executor's helpers insert into) those the
 * row in slot needs, opening each the first time (see the header).
 */
void
UseIndexesOfRow(PartitionWrite *write, TupleTableSlot *slot)
{
	ResultRelInfo *result = write->result;

	if (write->rows_chosen++ == 1)
		FindChoiceColumns(write);
	if (write->choice_column_count > 0 && SameChoiceColumns(write, slot))
		return;					/* the last row's indexes, still in result */
	result->ri_NumIndices = 0;
	for (int i = 0; i < write->index_count; i++)
	{
		bool		needs;

		if (write->table != JOBS_ALL && write->kept[i] == NULL)
			write->kept[i] = KeptIndexOf(write->table, write->index_oids[i]);
		if (write->kept[i] == NULL)
		{
			/* not known yet (or an index of queue_failed_jobs): opened to be known */
			if (write->opened[i] == NULL)
				OpenRowIndex(write, i);
			needs = write->kept[i] == NULL || RowSatisfies(write, write->kept[i], slot);
		}
		else
		{
			needs = RowSatisfies(write, write->kept[i], slot);
			if (needs && write->opened[i] == NULL)
				OpenRowIndex(write, i);
		}
		if (!needs)
			continue;
		result->ri_IndexRelationDescs[result->ri_NumIndices] = write->opened[i];
		result->ri_IndexRelationInfo[result->ri_NumIndices] = write->infos[i];
		result->ri_NumIndices++;
	}
	if (write->choice_column_count > 0)
		RememberChoiceColumns(write, slot);
}
