/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Wake-ups: NOTIFY jobqueue, '<queue>' when a job becomes due now.
 *
 * Sent for a push, a retry or a release without delay, never for a delayed
 * job.  PostgreSQL queues a NOTIFY until commit and drops duplicates within
 * a transaction (subtransactions included), so a queue is announced at most
 * once per transaction and a rolled-back transaction wakes nobody.
 *
 * NOTIFY makes PostgreSQL serialise the commits of notifying transactions:
 * with the library preloaded, wake-ups of a busy queue are coalesced
 * (notifier.c), and each queue can turn them off (queue_set_notify);
 * workers then poll or wait in the server.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "commands/async.h"
#include "utils/builtins.h"

/*
 * The statements of wakeup.c, run by the statement engine (exec/statements.c);
 * registered once (wakeup_statements, from the folder's Init).
 */
enum
{
	PLAN_QUEUE_WANTS_WAKEUPS,
	NUM_WAKEUP_STATEMENTS
};

static JqStatement statements[NUM_WAKEUP_STATEMENTS] = {
	[PLAN_QUEUE_WANTS_WAKEUPS] = {.name = "queue_wants_wakeups", .text = {
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "SELECT " WANTS_WAKEUPS,
			1, {TEXTOID}
		},
	}},
};

JqStatementSet wakeup_statements = JQ_STATEMENT_SET(statements);

/* Queue the wake-up for queue; it is delivered when the transaction commits. */
void
WakeQueue(text *queue)
{
	NotifyQueueListeners(text_to_cstring(queue));
}

/*
 * Whether queue has wake-ups on (the default; off when its settings say
 * so).  Must be called between SPI_connect and SPI_finish.
 */
bool
QueueWantsWakeups(const JqCall *call, text *queue)
{
	Datum		args[1];

	args[0] = PointerGetDatum(queue);
	QueueExecute(call, &statements[PLAN_QUEUE_WANTS_WAKEUPS], args, NULL, SPI_OK_SELECT);
	return SpiBool(0, 1);		/* NOT EXISTS (...) */
}

/* Adds queue to the list of queues to wake, once each. */
List *
AddWakeQueue(List *queues, text *queue)
{
	ListCell   *cell;

	foreach(cell, queues)
	{
		text	   *known = (text *) lfirst(cell);

		if (VARSIZE_ANY_EXHDR(known) == VARSIZE_ANY_EXHDR(queue) &&
			memcmp(VARDATA_ANY(known), VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)) == 0)
			return queues;
	}
	return lappend(queues, queue);
}

/*
 * Wake each queue of the list whose settings want wake-ups (and, whatever
 * the settings, waiting claims: see waiting.c).  Called between
 * SPI_connect and SPI_finish: the list and its names may live in SPI's
 * memory, and the NOTIFY is queued (copied) at once, to be sent at commit.
 */
void
WakeQueuesThatWantIt(const JqCall *call, List *queues)
{
	ListCell   *cell;

	if (queues != NIL)
		MarkJobsDue();

	foreach(cell, queues)
		if (QueueWantsWakeups(call, (text *) lfirst(cell)))
			WakeQueue((text *) lfirst(cell));
}
