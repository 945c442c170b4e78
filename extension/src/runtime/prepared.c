/*-------------------------------------------------------------------------
 *
 * prepared.c
 *	  Two-phase commit: a prepared transaction's wake-ups, counts and claim
 *	  position moves, published when COMMIT PREPARED runs.
 *
 * What a transaction changed is published by the steps of xact.c when it
 * commits, in the committing backend.  A transaction ended by PREPARE
 * TRANSACTION commits later, with COMMIT PREPARED, maybe in another
 * session and after this backend is gone.  So, with the library preloaded
 * and max_prepared_transactions above 0, PREPARE moves what the steps
 * would have published into shared memory, one entry per prepared
 * transaction named by its identifier (the gid): at pre-prepare each step
 * adds its part to the effects being prepared (EffectsBeingPrepared), and
 * once the transaction is prepared the entry is published.  COMMIT
 * PREPARED, in whatever session of the database runs it, then publishes
 * the entry as the steps would have: counts, moves of claim positions,
 * waiting claims woken, the due hint; and the NOTIFY of each queue is
 * noted for the COMMIT PREPARED statement's own commit, right after.
 * ROLLBACK PREPARED drops the entry.
 *
 * The gid is only known to the PREPARE TRANSACTION statement, so a
 * ProcessUtility hook notes it, and runs after COMMIT/ROLLBACK PREPARED.
 *
 * Limits, each written down in docs/semantics.md:
 *   - the entries live in shared memory: after a server restart a prepared
 *     transaction still commits, but its wake-ups are not sent (listeners
 *     and waiting claims find its jobs at their next poll) nor its counts
 *     counted;
 *   - an entry names at most PREPARED_QUEUES queues and as many position
 *     moves; beyond them the rest of the counts is dropped, the rest of the
 *     queues' listeners are not notified (waiting claims are woken, and the
 *     database's claim positions are distrusted, so that no claim passes a
 *     job of the transaction);
 *   - without preload nothing is kept: PREPARE TRANSACTION still works (no
 *     NOTIFY was queued: wakeup.c), and the jobs are found by polling.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "nodes/parsenodes.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/utility.h"

typedef struct PreparedEntry
{
	bool		used;
	Oid			database;
	char		gid[GIDSIZE];
	PreparedEffects effects;
} PreparedEntry;

typedef struct PreparedShared
{
	slock_t		mutex;
	int			capacity;		/* max_prepared_transactions */
	PreparedEntry entries[FLEXIBLE_ARRAY_MEMBER];
} PreparedShared;

static PreparedShared *registry = NULL;
static ProcessUtility_hook_type previous_utility = NULL;

/* The gid of this transaction's PREPARE TRANSACTION, until it ends. */
static char preparing_gid[GIDSIZE];
static bool preparing = false;
static PreparedEffects being_prepared;

static void
FillRegistry(void *segment)
{
	PreparedShared *fresh = (PreparedShared *) segment;

	SpinLockInit(&fresh->mutex);
	fresh->capacity = max_prepared_xacts;
}

/*
 * The effects the steps add to at pre-prepare: NULL when nothing is kept
 * (no registry, or not in a PREPARE TRANSACTION).
 */
PreparedEffects *
EffectsBeingPrepared(void)
{
	return registry != NULL && preparing ? &being_prepared : NULL;
}

/* The entry of queue in effects, added if new; NULL (and overflow) when full. */
PreparedQueue *
PreparedQueueOf(PreparedEffects *effects, const char *queue)
{
	PreparedQueue *entry;

	for (int i = 0; i < effects->queue_count; i++)
		if (strcmp(effects->queues[i].queue, queue) == 0)
			return &effects->queues[i];
	if (effects->queue_count == PREPARED_QUEUES)
	{
		effects->overflow = true;
		return NULL;
	}
	entry = &effects->queues[effects->queue_count++];
	memset(entry, 0, sizeof(PreparedQueue));
	strlcpy(entry->queue, queue, JQ_QUEUE_NAME_BYTES);
	return entry;
}

static bool
HasEffects(const PreparedEffects *effects)
{
	return effects->overflow || effects->jobs_due || effects->due_noted ||
		effects->queue_count > 0 || effects->move_count > 0;
}

/* Once prepared: the entry is there for COMMIT PREPARED (dropped if no room). */
static void
PublishPrepared(void)
{
	SpinLockAcquire(&registry->mutex);
	for (int i = 0; i < registry->capacity; i++)
	{
		PreparedEntry *entry = &registry->entries[i];

		if (entry->used)
			continue;
		entry->used = true;
		entry->database = MyDatabaseId;
		strlcpy(entry->gid, preparing_gid, GIDSIZE);
		entry->effects = being_prepared;
		break;
	}
	SpinLockRelease(&registry->mutex);
}

/* Take (copy out and free) the entry of gid; false if there is none. */
static bool
TakePrepared(const char *gid, PreparedEffects *effects)
{
	bool		found = false;

	SpinLockAcquire(&registry->mutex);
	for (int i = 0; i < registry->capacity && !found; i++)
	{
		PreparedEntry *entry = &registry->entries[i];

		if (entry->used && entry->database == MyDatabaseId && strcmp(entry->gid, gid) == 0)
		{
			*effects = entry->effects;
			entry->used = false;
			found = true;
		}
	}
	SpinLockRelease(&registry->mutex);
	return found;
}

/*
 * The prepared transaction has committed (its changes are visible): publish
 * what its own commit would have, in the order of xact.c's steps.
 */
static void
PublishCommittedPrepared(const PreparedEffects *effects)
{
	CountersApplyPrepared(effects);
	ClaimPositionsApplyPrepared(effects);
	if (effects->jobs_due || effects->overflow)
		WakeWaitingClaims();
	for (int i = 0; i < effects->queue_count; i++)
		if (effects->queues[i].wake)
			WakeQueueNamed(effects->queues[i].queue);	/* at this statement's commit */
	DueHintApplyPrepared(effects);
}

static void
NotePreparedUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	TransactionStmt *stmt = IsA(pstmt->utilityStmt, TransactionStmt)
		? (TransactionStmt *) pstmt->utilityStmt : NULL;
	PreparedEffects committed;

	if (stmt != NULL && stmt->kind == TRANS_STMT_PREPARE)
	{
		strlcpy(preparing_gid, stmt->gid, GIDSIZE);
		preparing = true;
	}
	if (previous_utility != NULL)
		previous_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	/* reached only when the prepared transaction did end as asked */
	if (stmt != NULL && (stmt->kind == TRANS_STMT_COMMIT_PREPARED ||
						 stmt->kind == TRANS_STMT_ROLLBACK_PREPARED) &&
		TakePrepared(stmt->gid, &committed) && stmt->kind == TRANS_STMT_COMMIT_PREPARED)
		PublishCommittedPrepared(&committed);
}

/*
 * The first step at pre-prepare (the others add to the effects), and the
 * last at the end: PREPARE publishes them, anything else forgets them.
 */
void
PreparedAtTransactionEnd(XactEvent event)
{
	if (event == XACT_EVENT_PRE_PREPARE)
	{
		memset(&being_prepared, 0, sizeof(PreparedEffects));
		return;
	}
	if (event == XACT_EVENT_PREPARE && EffectsBeingPrepared() != NULL &&
		HasEffects(&being_prepared))
		PublishPrepared();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		preparing = false;
}

/* From _PG_init while shared_preload_libraries is loaded. */
void
JobqueueRequestPrepared(void)
{
	if (max_prepared_xacts <= 0)
		return;					/* no transaction can be prepared */
	RegisterSharedSegment("jobqueue prepared",
						  add_size(offsetof(PreparedShared, entries),
								   mul_size(max_prepared_xacts, sizeof(PreparedEntry))),
						  (void **) &registry, FillRegistry);
	previous_utility = ProcessUtility_hook;
	ProcessUtility_hook = NotePreparedUtility;
}
