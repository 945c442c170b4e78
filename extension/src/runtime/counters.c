/*-------------------------------------------------------------------------
 *
 * counters.c
 *	  How many jobs each queue pushed, claimed, completed, released,
 *	  retried, failed and found with an expired lease, in shared memory.
 *
 * Tables tell how much is waiting, not how much flowed: with the library
 * preloaded, every call that changes jobs counts them here, per database
 * and queue, for queue_counters() (and so the dashboard's rates and
 * Prometheus).  A count is noted in the backend first and reaches shared
 * memory only when its transaction commits: a push that rolls back (or
 * whose subtransaction does) never counts.  A prepared transaction's
 * counts are kept for its COMMIT PREPARED (prepared.c).
 *
 * Counters are cumulative from the server's start, as Prometheus expects
 * of a counter (a restart resets them; rates are the reader's business),
 * and queue_counters_reset() drops a database's.  A commit takes one
 * spinlock per queue it touched, to find the queue's slot (a hash probe)
 * and add to it.  There are COUNTER_SLOTS slots for all databases; a slot
 * stays with its queue until a reset drops it (a reset also drops the
 * slots of databases that no longer exist), and once all are taken,
 * further queues are counted together in one slot that queue_counters()
 * shows with a NULL queue.
 *
 * Without preload nothing is noted, and queue_counters() says it needs
 * preload (SQLSTATE 55000).
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/spin.h"
#include "utils/syscache.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(jobqueue_counters);
PG_FUNCTION_INFO_V1(jobqueue_counters_reset);

#define COUNTER_SLOTS 1024		/* queues of all databases, plus the overflow */
#define OVERFLOW_SLOT COUNTER_SLOTS

typedef struct CounterSlot
{
	Oid			database;		/* InvalidOid: free */
	bool		dropped;		/* free, but probes go on past it */
	char		queue[JQ_QUEUE_NAME_BYTES];
	uint64		counts[JOB_EVENT_KINDS];
} CounterSlot;

typedef struct CountersShared
{
	slock_t		mutex;			/* every read and write of the slots */
	CounterSlot slots[COUNTER_SLOTS + 1];	/* the last: queues beyond the others */
} CountersShared;

/* What this transaction counted so far, per queue and subtransaction level. */
typedef struct PendingCount
{
	char		queue[JQ_QUEUE_NAME_BYTES];
	int			level;			/* GetCurrentTransactionNestLevel() when noted */
	int64		counts[JOB_EVENT_KINDS];
} PendingCount;

static CountersShared *counters = NULL;
static PendingCount *pending = NULL;	/* in TopMemoryContext */
static int	pending_count = 0;
static int	pending_capacity = 0;

static void
FillCounters(void *segment)
{
	CountersShared *shared = (CountersShared *) segment;

	SpinLockInit(&shared->mutex);
}

/*
 * Note jobs of queue for this transaction's commit.  Cheap when the
 * transaction already noted the queue: the last entry is tried first.
 */
void
CountJobs(text *queue, JobEvent event, int64 jobs)
{
	int			level;
	int			length;
	PendingCount *entry = NULL;

	if (counters == NULL || jobs <= 0)
		return;
	level = GetCurrentTransactionNestLevel();
	length = Min(VARSIZE_ANY_EXHDR(queue), JQ_QUEUE_NAME_BYTES - 1);
	for (int i = pending_count - 1; i >= 0; i--)
	{
		PendingCount *candidate = &pending[i];

		if (candidate->level == level &&
			strncmp(candidate->queue, VARDATA_ANY(queue), length) == 0 &&
			candidate->queue[length] == '\0')
		{
			entry = candidate;
			break;
		}
	}
	if (entry == NULL)
	{
		if (pending_count == pending_capacity)
		{
			int			capacity = Max(8, pending_capacity * 2);

			pending = pending == NULL
				? MemoryContextAlloc(TopMemoryContext, sizeof(PendingCount) * capacity)
				: repalloc(pending, sizeof(PendingCount) * capacity);
			pending_capacity = capacity;
		}
		entry = &pending[pending_count++];
		memset(entry, 0, sizeof(PendingCount));
		memcpy(entry->queue, VARDATA_ANY(queue), length);
		entry->level = level;
	}
	entry->counts[event] += jobs;
}

/* Count the jobs of the rows of the last SPI result, by their queue in column. */
void
CountJobsOfRows(int column, JobEvent event)
{
	if (counters == NULL)
		return;
	for (uint64 row = 0; row < SPI_processed; row++)
		CountJobs(SpiText(row, column), event, 1);
}

/*
 * The slot of (database, queue): found, or else taken (the first dropped
 * slot on the way, or the free one that ends the probe), or the overflow
 * slot when all are taken.  hash: QueueSlotHash(database, queue), computed
 * before the spinlock was taken.  Spinlock held.
 */
static CounterSlot *
SlotLocked(Oid database, const char *queue, uint32 hash)
{
	uint32		start = hash % COUNTER_SLOTS;
	CounterSlot *reusable = NULL;

	for (int probe = 0; probe < COUNTER_SLOTS; probe++)
	{
		CounterSlot *slot = &counters->slots[(start + probe) % COUNTER_SLOTS];

		if (slot->database == InvalidOid)
		{
			if (reusable == NULL && slot->dropped)
			{
				reusable = slot;
				continue;
			}
			if (slot->dropped)
				continue;
			reusable = reusable != NULL ? reusable : slot;
			break;
		}
		if (slot->database == database && strcmp(slot->queue, queue) == 0)
			return slot;
	}
	if (reusable == NULL)
		return &counters->slots[OVERFLOW_SLOT];
	memset(reusable, 0, sizeof(CounterSlot));
	reusable->database = database;
	strlcpy(reusable->queue, queue, JQ_QUEUE_NAME_BYTES);
	return reusable;
}

/* Add counts of queue (this database's) to shared memory. */
static void
AddCounts(const char *queue, const int64 *counts)
{
	CounterSlot *slot;
	uint32		hash = QueueSlotHash(MyDatabaseId, queue);

	SpinLockAcquire(&counters->mutex);
	slot = SlotLocked(MyDatabaseId, queue, hash);
	for (int e = 0; e < JOB_EVENT_KINDS; e++)
		slot->counts[e] += (uint64) counts[e];
	SpinLockRelease(&counters->mutex);
}

/*
 * At commit the counts become visible, after the transaction's changes
 * (the callback runs once the commit is recorded and visible); at abort
 * they are dropped; at PREPARE they go to the prepared effects, for COMMIT
 * PREPARED (prepared.c).
 */
void
CountersAtTransactionEnd(XactEvent event)
{
	PreparedEffects *effects;

	if (pending_count == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			for (int i = 0; i < pending_count; i++)
				AddCounts(pending[i].queue, pending[i].counts);
			pending_count = 0;
			break;
		case XACT_EVENT_PRE_PREPARE:
			effects = EffectsBeingPrepared();
			for (int i = 0; i < pending_count && effects != NULL; i++)
			{
				PreparedQueue *carried = PreparedQueueOf(effects, pending[i].queue);

				for (int e = 0; carried != NULL && e < JOB_EVENT_KINDS; e++)
					carried->counts[e] += pending[i].counts[e];
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			pending_count = 0;
			break;
		default:
			break;
	}
}

/* COMMIT PREPARED: the prepared transaction's counts. */
void
CountersApplyPrepared(const PreparedEffects *effects)
{
	if (counters == NULL)
		return;
	for (int i = 0; i < effects->queue_count; i++)
		AddCounts(effects->queues[i].queue, effects->queues[i].counts);
}

/* The entry of queue at level among the first count entries, or NULL. */
static PendingCount *
FindPending(const char *queue, int level, int count)
{
	for (int i = 0; i < count; i++)
		if (pending[i].level == level && strcmp(pending[i].queue, queue) == 0)
			return &pending[i];
	return NULL;
}

/*
 * A subtransaction that rolls back drops what it (and the levels inside
 * it) noted; one that commits hands its counts to its parent level (added
 * to the parent's entry of the queue, so that a loop of subtransactions
 * keeps one entry per queue), and a later rollback of the parent drops
 * them too.
 */
void
CountersAtSubtransactionEnd(SubXactEvent event)
{
	int			level = GetCurrentTransactionNestLevel();
	int			kept = 0;

	if (pending_count == 0 ||
		(event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	for (int i = 0; i < pending_count; i++)
	{
		PendingCount entry = pending[i];
		PendingCount *parent_entry;

		if (entry.level >= level)
		{
			if (event == SUBXACT_EVENT_ABORT_SUB)
				continue;
			entry.level = level - 1;
			parent_entry = FindPending(entry.queue, entry.level, kept);
			if (parent_entry != NULL)
			{
				for (int e = 0; e < JOB_EVENT_KINDS; e++)
					parent_entry->counts[e] += entry.counts[e];
				continue;
			}
		}
		pending[kept++] = entry;
	}
	pending_count = kept;
}

static void
RequirePreload(const char *function)
{
	if (counters == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobqueue: %s needs jobqueue in shared_preload_libraries", function),
				 errdetail("The counters live in shared memory, which only a preloaded library has."),
				 errhint("Add jobqueue to shared_preload_libraries and restart the server.")));
}

static int
CompareSlotQueues(const void *a, const void *b)
{
	const CounterSlot *left = a;
	const CounterSlot *right = b;

	return strcmp(left->queue, right->queue);
}

/*
 * queue_counters() returns (queue, pushed, claimed, completed, released,
 * retried, failed, expired) for each queue of this database counted since
 * the server started, ordered by queue name (bytewise); then the overflow
 * row (queue NULL) if queues of any database went uncounted by name.
 */
Datum
jobqueue_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CounterSlot *mine;
	int			found = 0;
	Datum		values[1 + JOB_EVENT_KINDS];
	bool		nulls[1 + JOB_EVENT_KINDS];
	bool		overflowed = false;

	RequirePreload("queue_counters()");
	InitMaterializedSRF(fcinfo, 0);
	/* copied under the lock, so every row is one moment's */
	mine = palloc(sizeof(CounterSlot) * (COUNTER_SLOTS + 1));
	SpinLockAcquire(&counters->mutex);
	for (int i = 0; i < COUNTER_SLOTS; i++)
		if (counters->slots[i].database == MyDatabaseId)
			mine[found++] = counters->slots[i];
	mine[found] = counters->slots[OVERFLOW_SLOT];
	SpinLockRelease(&counters->mutex);
	qsort(mine, found, sizeof(CounterSlot), CompareSlotQueues);

	memset(nulls, false, sizeof(nulls));
	for (int i = 0; i <= found; i++)
	{
		values[0] = CStringGetTextDatum(mine[i].queue);
		for (int e = 0; e < JOB_EVENT_KINDS; e++)
		{
			values[1 + e] = Int64GetDatum((int64) mine[i].counts[e]);
			overflowed |= i == found && mine[i].counts[e] != 0;
		}
		nulls[0] = i == found;
		if (i < found || overflowed)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * queue_counters_reset(): this database's counters start again from zero:
 * its slots are dropped (and the overflow slot, shared by all databases,
 * is zeroed), and so are the slots of databases dropped since they were
 * counted.  A transaction committing meanwhile counts before or after.
 */
Datum
jobqueue_counters_reset(PG_FUNCTION_ARGS)
{
	Oid		   *databases = palloc(sizeof(Oid) * COUNTER_SLOTS);
	bool	   *gone = palloc0(sizeof(bool) * COUNTER_SLOTS);

	RequirePreload("queue_counters_reset()");
	/* which databases are gone, looked up outside the spinlock */
	SpinLockAcquire(&counters->mutex);
	for (int i = 0; i < COUNTER_SLOTS; i++)
		databases[i] = counters->slots[i].database;
	SpinLockRelease(&counters->mutex);
	for (int i = 0; i < COUNTER_SLOTS; i++)
		gone[i] = OidIsValid(databases[i]) &&
			!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(databases[i]));

	SpinLockAcquire(&counters->mutex);
	for (int i = 0; i < COUNTER_SLOTS; i++)
	{
		CounterSlot *slot = &counters->slots[i];

		if (OidIsValid(slot->database) &&
			(slot->database == MyDatabaseId || (gone[i] && slot->database == databases[i])))
		{
			slot->database = InvalidOid;
			slot->dropped = true;
		}
	}
	memset(counters->slots[OVERFLOW_SLOT].counts, 0, sizeof(counters->slots[OVERFLOW_SLOT].counts));
	SpinLockRelease(&counters->mutex);
	PG_RETURN_VOID();
}

/* From _PG_init while shared_preload_libraries is loaded. */
void
JobqueueRequestCounters(void)
{
	RegisterSharedSegment("jobqueue counters", sizeof(CountersShared),
						  (void **) &counters, FillCounters);
}
