/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Wake-ups: NOTIFY jobqueue, '<queue>' when a job becomes due now.
 *
 * Sent for a push, a retry or a release without delay, never for a delayed
 * job.  A wake-up is noted here, once per queue and transaction, and the
 * NOTIFY is queued only when the transaction is about to commit (its
 * pre-commit step): so a rolled-back transaction or subtransaction wakes
 * nobody, and a transaction that is prepared instead (PREPARE
 * TRANSACTION, which PostgreSQL refuses after a NOTIFY) hands its
 * wake-ups to COMMIT PREPARED (prepared.c).
 *
 * NOTIFY makes PostgreSQL serialise the commits of notifying transactions:
 * with the library preloaded, wake-ups of a busy queue are coalesced
 * (notifier.c), and each queue can turn them off (queue_set_notify);
 * workers then poll or wait in the server.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/builtins.h"

/* A queue to wake when the transaction commits, noted at a nesting level. */
typedef struct NotedWakeup
{
	int			level;			/* GetCurrentTransactionNestLevel() when noted */
	char		queue[JQ_QUEUE_NAME_BYTES];
} NotedWakeup;

static List *noted_wakeups = NIL;	/* of NotedWakeup *, in TopTransactionContext */

/* Wake the listeners of queue when the transaction commits. */
void
WakeQueueNamed(const char *queue)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *cell;
	NotedWakeup *noted;
	MemoryContext old;

	/* noted at this level or an enclosing one: it stands as long as this one */
	foreach(cell, noted_wakeups)
	{
		noted = (NotedWakeup *) lfirst(cell);
		if (noted->level <= level && strcmp(noted->queue, queue) == 0)
			return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	noted = palloc0(sizeof(NotedWakeup));
	noted->level = level;
	strlcpy(noted->queue, queue, JQ_QUEUE_NAME_BYTES);
	noted_wakeups = lappend(noted_wakeups, noted);
	MemoryContextSwitchTo(old);
}

void
WakeQueue(text *queue)
{
	WakeQueueNamed(text_to_cstring(queue));
}

/*
 * Before commit, queue the NOTIFYs (or leave them to the coalescing sender,
 * notifier.c); before PREPARE, hand them to the prepared effects.
 */
void
WakeupsAtTransactionEnd(XactEvent event)
{
	ListCell   *cell;

	if (event == XACT_EVENT_PRE_COMMIT)
		foreach(cell, noted_wakeups)
			NotifyQueueListeners(((NotedWakeup *) lfirst(cell))->queue);
	else if (event == XACT_EVENT_PRE_PREPARE)
	{
		PreparedEffects *effects = EffectsBeingPrepared();

		foreach(cell, noted_wakeups)
		{
			PreparedQueue *carried = effects != NULL
				? PreparedQueueOf(effects, ((NotedWakeup *) lfirst(cell))->queue) : NULL;

			if (carried != NULL)
				carried->wake = true;
		}
	}
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
			 event == XACT_EVENT_PREPARE)
		noted_wakeups = NIL;	/* TopTransactionContext is going away */
}

/*
 * A subtransaction that rolls back drops the wake-ups it noted; one that
 * commits hands them to its parent.
 */
void
WakeupsAtSubtransactionEnd(SubXactEvent event)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *cell;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(cell, noted_wakeups)
			if (((NotedWakeup *) lfirst(cell))->level >= level)
				noted_wakeups = foreach_delete_current(noted_wakeups, cell);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		foreach(cell, noted_wakeups)
		{
			NotedWakeup *noted = (NotedWakeup *) lfirst(cell);

			if (noted->level >= level)
				noted->level = level - 1;
		}
}

/* Adds queue to the list of queues to wake, once each. */
List *
AddWakeQueue(List *queues, text *queue)
{
	ListCell   *cell;

	foreach(cell, queues)
		if (TextsEqual((text *) lfirst(cell), queue))
			return queues;
	return lappend(queues, queue);
}

/*
 * Wake each queue of the list whose settings want wake-ups (and, whatever
 * the settings, waiting claims: see waiting.c), the settings kept by the
 * session as a push keeps them (store/settings_row.c).  The list and its
 * names may live in SPI's memory: each wake-up is noted (copied) at once,
 * to be sent at commit.
 */
void
WakeQueuesThatWantIt(const JqCall *call, List *queues)
{
	ListCell   *cell;
	Snapshot	snapshot;

	if (queues == NIL)
		return;
	MarkJobsDue();
	snapshot = BeginStatementSnapshot();
	foreach(cell, queues)
		if (KeptQueueWantsWakeups(call, (text *) lfirst(cell), snapshot))
			WakeQueue((text *) lfirst(cell));
	EndStatementSnapshot(snapshot);
}
