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
 * The look-up costs about a tenth of a push and 5 % of a claim and its
 * completion, so each backend keeps the rows of the queues it used lately
 * (KeptQueueSettings): every call that makes a job due reads the wake-up
 * setting so (wakeup.c, direct_insert.c, a key's slot handed on in
 * direct_slots.c), and the claim without a plan (direct_claim.c) the
 * others.  Every setter of the extension (queue_set_notify, queue_pause,
 * ...: ForgetQueueSettingsAtCommit) invalidates queue_settings' relcache
 * entry before its commit returns: every session forgets what it kept at
 * its next look (which first takes in the invalidations sent), this one
 * at its next command, and again if the change rolls back; so too when the
 * table is truncated or dropped.  A write of the table by hand invalidates
 * nothing, so a kept row is read again once it is a second old.
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
#include "utils/inval.h"
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
static void
ReadQueueSettingsRow(const JqCall *call, text *queue, Snapshot snapshot,
					 QueueSettingsRow *settings)
{
	Oid			relid = ExtensionRelid(call, "queue_settings");
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

#define KEPT_QUEUES 32			/* queues whose row a backend keeps */
#define KEPT_USECS USECS_PER_SEC	/* a kept row is read again after this */

typedef struct KeptSettings
{
	TimestampTz read_at;		/* 0: free */
	QueueSettingsRow settings;
	int			length;
	char		queue[JQ_QUEUE_NAME_BYTES];
} KeptSettings;

static KeptSettings kept_settings[KEPT_QUEUES];
static int	next_kept = 0;
static Oid	kept_settings_relid = InvalidOid;
static bool forget_registered = false;

/* queue_settings changed, or the relation cache was reset: forget every kept row. */
static void
ForgetKeptSettings(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && relid != kept_settings_relid)
		return;
	for (int i = 0; i < KEPT_QUEUES; i++)
		kept_settings[i].read_at = 0;
}

/*
 * queue's settings: kept from a read less than a second ago that no
 * setter has invalidated since (see the header), or read now under
 * snapshot and kept.
 */
void
KeptQueueSettings(const JqCall *call, text *queue, Snapshot snapshot, QueueSettingsRow *settings)
{
	TimestampTz now = call->wall;
	int			length = VARSIZE_ANY_EXHDR(queue);
	KeptSettings *kept;

	/* a setter that committed before this look has sent its invalidation */
	AcceptInvalidationMessages();
	for (int i = 0; i < KEPT_QUEUES; i++)
	{
		kept = &kept_settings[i];
		if (kept->read_at != 0 && now >= kept->read_at &&
			now - kept->read_at < KEPT_USECS &&
			kept->length == length && memcmp(kept->queue, VARDATA_ANY(queue), length) == 0)
		{
			*settings = kept->settings;
			return;
		}
	}
	ReadQueueSettingsRow(call, queue, snapshot, settings);
	if (!forget_registered)
	{
		CacheRegisterRelcacheCallback(ForgetKeptSettings, (Datum) 0);
		forget_registered = true;
	}
	kept_settings_relid = ExtensionRelid(call, "queue_settings");
	if (OidIsValid(kept_settings_relid) && length < JQ_QUEUE_NAME_BYTES)
	{
		kept = &kept_settings[next_kept];
		next_kept = (next_kept + 1) % KEPT_QUEUES;
		kept->read_at = now;
		kept->settings = *settings;
		kept->length = length;
		memcpy(kept->queue, VARDATA_ANY(queue), length);
	}
}

/* Whether queue wants NOTIFY wake-ups (its kept settings). */
bool
KeptQueueWantsWakeups(const JqCall *call, text *queue, Snapshot snapshot)
{
	QueueSettingsRow settings;

	KeptQueueSettings(call, queue, snapshot, &settings);
	return settings.notify;
}

/*
 * A queue's settings were changed by a function of the extension: every
 * session forgets the settings it kept once the change commits.
 */
void
ForgetQueueSettingsAtCommit(const JqCall *call)
{
	Oid			relid = ExtensionRelid(call, "queue_settings");

	if (OidIsValid(relid))
		CacheInvalidateRelcacheByRelid(relid);
}
