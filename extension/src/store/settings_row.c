/*-------------------------------------------------------------------------
 *
 * settings_row.c
 *	  A queue's row of queue_settings, read without a plan (1.6).
 *
 * The direct paths (direct_insert.c, direct_claim.c) need what the
 * statements read in sub-selects of queue_settings: whether the queue
 * wants wake-ups, is paused, its default lease and whether it has a rate
 * limit.  One look-up of the table's primary key, under the snapshot the
 * direct path works under, reads them all.  A queue without a row has the
 * contract's defaults: wake-ups on, not paused, no default lease, no rate
 * limit.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* A boolean column of the row in slot, by name; fallback when absent or NULL. */
static bool
BoolColumn(TupleTableSlot *slot, const char *name, bool fallback)
{
	int			attnum = SPI_fnumber(slot->tts_tupleDescriptor, name);
	bool		isnull;
	Datum		value;

	if (attnum <= 0)
		return fallback;
	value = slot_getattr(slot, attnum, &isnull);
	return isnull ? fallback : DatumGetBool(value);
}

/* Whether a column of the row in slot, by name, is present and not NULL. */
static bool
ColumnIsSet(TupleTableSlot *slot, const char *name, Datum *value)
{
	int			attnum = SPI_fnumber(slot->tts_tupleDescriptor, name);
	bool		isnull;

	if (attnum <= 0)
		return false;
	*value = slot_getattr(slot, attnum, &isnull);
	return !isnull;
}

/* Read queue's settings (see the header) under snapshot into *settings. */
void
ReadQueueSettingsRow(const JqCall *call, text *queue, Snapshot snapshot,
					 QueueSettingsRow *settings)
{
	Oid			relid = get_relname_relid("queue_settings", call->schema);
	Relation	rel;
	Relation	index;
	IndexScanDesc scan;
	ScanKeyData key;
	TupleTableSlot *slot;

	memset(settings, 0, sizeof(QueueSettingsRow));
	settings->notify = true;
	if (!OidIsValid(relid))
		return;
	rel = table_open(relid, AccessShareLock);
	index = index_open(PrimaryKeyIndex(rel), AccessShareLock);
	slot = table_slot_create(rel, NULL);
	ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(queue));
	scan = BeginIndexScan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		Datum		value;

		settings->notify = BoolColumn(slot, "notify", true);
		settings->paused = BoolColumn(slot, "paused", false);
		settings->rate_limited = ColumnIsSet(slot, "rate_max", &value);
		settings->has_default_lease = ColumnIsSet(slot, "default_lease", &value);
		if (settings->has_default_lease)
			settings->default_lease = *DatumGetIntervalP(value);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}
