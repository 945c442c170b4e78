/*-------------------------------------------------------------------------
 *
 * notifier.c
 *	  Coalesced NOTIFY: a busy queue does not notify once per transaction.
 *
 * PostgreSQL serialises the commits of transactions that NOTIFY (they take
 * one lock at commit), so a queue whose every push notified would let its
 * producers commit one at a time.  With the library preloaded, a
 * transaction that makes a job due in a queue (wakeup.c) notifies itself
 * only when the queue was last notified at least jobqueue.notify_coalesce
 * ago: the leading edge.  Otherwise it skips the NOTIFY and, once it has
 * committed, marks the queue "pending" in shared memory and wakes its
 * database's sender, a background worker that notifies each pending queue,
 * in a transaction of its own, at most once per jobqueue.notify_coalesce:
 * the trailing edge.
 *
 * A transaction decides once per queue, just before it commits (the
 * wake-ups it noted, wakeup.c), and keeps to it: it notifies the queue itself, or leaves it to the sender,
 * never both, so each queue is announced once per transaction.
 *
 * Why no listener sleeps past a job: a committed job's transaction either
 * notified at its own commit, or skipped; a skipper marks the queue
 * pending only after its commit is visible, and the sender clears the mark
 * before it notifies, so that notification is sent after the job became
 * visible, and a listener woken by it finds the job.  A skipper keeps its
 * database's sender from exiting from its decision until its transaction
 * ends (in_flight), so the sender is there to send.  A listener is woken at
 * most about notify_coalesce plus a scheduling delay after a commit.
 *
 * A sender is started on demand, one per database (NOTIFY is
 * database-local), and exits when its database has been quiet for
 * SENDER_IDLE_MS, so it never keeps a database from being dropped for
 * long.  Until a sender runs (or when none can be started, or a queue
 * finds no free slot), transactions notify as they always did.  Without
 * preload, or with jobqueue.notify_coalesce = 0, every wake-up is a NOTIFY
 * of the transaction itself.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "commands/async.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

PGDLLEXPORT void jobqueue_notifier_main(Datum main_arg);

#define QUEUE_SLOTS 256			/* queues (of all databases) coalesced at once */
#define SENDER_SLOTS 16			/* databases with a sender at once */
#define SENDER_IDLE_MS 3000		/* a quiet sender exits after this (DROP DATABASE waits 5 s) */
#define SENDER_START_TIMEOUT_USECS (10 * USECS_PER_SEC)

typedef enum SenderState
{
	SENDER_FREE,
	SENDER_STARTING,			/* registered, not running yet */
	SENDER_RUNNING
} SenderState;

typedef struct Sender
{
	SenderState state;
	Oid			database;
	TimestampTz state_since;
	int			pid;			/* the worker, once it has started */
	Latch	   *latch;			/* while running */
	int			in_flight;		/* transactions that skipped and have not ended */
	TimestampTz last_activity;
} Sender;

typedef struct QueueSlot
{
	Oid			database;		/* InvalidOid: free */
	char		queue[JQ_QUEUE_NAME_BYTES];
	TimestampTz last_notified;	/* decided by a transaction, or sent by the sender */
	bool		pending;		/* a committed job waits for the trailing notification */
	int			holders;		/* open transactions that skipped for this queue */
} QueueSlot;

/* A slot nobody needs any more can take another queue: notified long ago. */
#define QUEUE_SLOT_REUSE_USECS USECS_PER_SEC

typedef struct NotifierShared
{
	slock_t		mutex;			/* guards everything below; held briefly */
	Sender		senders[SENDER_SLOTS];
	QueueSlot	queues[QUEUE_SLOTS];
} NotifierShared;

static NotifierShared *notifier = NULL;
static int	coalesce_ms = 2;

/*
 * This transaction's decisions, one per queue, kept until it ends: the
 * queue slots it skipped the NOTIFY of (to mark pending at commit), and
 * the queues it notifies itself.  A queue's first wake-up in a transaction
 * decides for all its later ones: a transaction that notifies a queue
 * never also leaves it to the sender, nor the other way round, so it
 * announces each queue once.
 */
static List *skipped_slots = NIL;	/* of int, in TopTransactionContext */
static List *notified_queues = NIL; /* of char *, in TopTransactionContext */
static int	held_sender = -1;	/* the sender slot this transaction holds */

static void
FillNotifierShared(void *segment)
{
	SpinLockInit(&((NotifierShared *) segment)->mutex);
}

/* The sender slot of database, or -1.  Mutex held. */
static int
FindSender(Oid database)
{
	for (int i = 0; i < SENDER_SLOTS; i++)
		if (notifier->senders[i].state != SENDER_FREE &&
			notifier->senders[i].database == database)
			return i;
	return -1;
}

/*
 * The slot of (database, queue), taking a free one if it has none (or one
 * whose queue nobody needs: nothing pending, nobody skipping, notified
 * long ago, as good as new); -1 if none.  hash: QueueSlotHash(database,
 * queue), computed before the mutex was taken.  Mutex held.
 */
static int
FindQueueSlot(Oid database, const char *queue, uint32 hash, TimestampTz now)
{
	uint32		start = hash % QUEUE_SLOTS;
	int			reusable = -1;

	for (int probe = 0; probe < QUEUE_SLOTS; probe++)
	{
		int			i = (start + probe) % QUEUE_SLOTS;
		QueueSlot  *slot = &notifier->queues[i];

		if (slot->database == database && strcmp(slot->queue, queue) == 0)
			return i;
		if (reusable < 0 && !slot->pending && slot->holders == 0 &&
			(slot->database == InvalidOid || now - slot->last_notified > QUEUE_SLOT_REUSE_USECS))
			reusable = i;
		if (slot->database == InvalidOid)
			break;				/* the queue is not further on */
	}
	if (reusable >= 0)
	{
		QueueSlot  *slot = &notifier->queues[reusable];

		slot->database = database;
		strlcpy(slot->queue, queue, JQ_QUEUE_NAME_BYTES);
		slot->last_notified = 0;
		slot->pending = false;
		slot->holders = 0;
	}
	return reusable;
}

/*
 * Register a sender for this database (not called with the mutex held).
 * Failure (no free worker slot) only means no coalescing for now.
 */
static void
StartSender(int sender)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	worker.bgw_main_arg = Int32GetDatum(sender);
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "jobqueue");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "jobqueue_notifier_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "jobqueue notifier");
	snprintf(worker.bgw_type, BGW_MAXLEN, "jobqueue notifier");
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		SpinLockAcquire(&notifier->mutex);
		notifier->senders[sender].state = SENDER_FREE;
		SpinLockRelease(&notifier->mutex);
	}
}

/*
 * Whether this transaction may skip its NOTIFY of queue, the trailing
 * notification being left to the sender.  When it may, the sender is held
 * until the transaction ends and the queue is remembered for the commit.
 * Decided by the queue's first wake-up in the transaction, for all of them
 * (see skipped_slots): the window alone would let a transaction that
 * notified a queue skip its next wake-up of it, a few pushes later, and so
 * be announced twice, by its own NOTIFY and by the sender.
 */
static bool
MaySkipNotify(const char *queue)
{
	TimestampTz now = GetCurrentTimestamp();
	uint32		hash = QueueSlotHash(MyDatabaseId, queue);
	ListCell   *cell;
	int			sender;
	int			slot = -1;
	bool		start = false;
	bool		skip = false;
	bool		newly_held = false;

	foreach(cell, notified_queues)
		if (strcmp((const char *) lfirst(cell), queue) == 0)
			return false;		/* notified already: the NOTIFY again, deduplicated */

	SpinLockAcquire(&notifier->mutex);
	sender = FindSender(MyDatabaseId);
	if (sender < 0 || (notifier->senders[sender].state == SENDER_STARTING &&
					   now - notifier->senders[sender].state_since > SENDER_START_TIMEOUT_USECS))
	{
		/* none yet, or one that never came up: (re)start one, notify meanwhile */
		if (sender < 0)
			for (int i = 0; i < SENDER_SLOTS && sender < 0; i++)
				if (notifier->senders[i].state == SENDER_FREE ||
					(notifier->senders[i].state == SENDER_STARTING &&
					 now - notifier->senders[i].state_since > SENDER_START_TIMEOUT_USECS))
					sender = i;
		if (sender >= 0)
		{
			notifier->senders[sender].state = SENDER_STARTING;
			notifier->senders[sender].pid = 0;
			notifier->senders[sender].database = MyDatabaseId;
			notifier->senders[sender].state_since = now;
			notifier->senders[sender].in_flight = 0;
			start = true;
		}
	}
	else if (notifier->senders[sender].state == SENDER_RUNNING)
	{
		slot = FindQueueSlot(MyDatabaseId, queue, hash, now);
		if (slot >= 0)
		{
			QueueSlot  *q = &notifier->queues[slot];

			if (list_member_int(skipped_slots, slot))
				skip = true;	/* skipped already: the sender announces it */
			else if (now - q->last_notified < (int64) coalesce_ms * 1000)
				skip = true;
			else
				q->last_notified = now; /* the leading edge: notify */
			notifier->senders[sender].last_activity = now;
			if (skip && held_sender < 0)
			{
				notifier->senders[sender].in_flight++;
				held_sender = sender;
			}
			if (skip && !list_member_int(skipped_slots, slot))
			{
				q->holders++;	/* until this transaction ends */
				newly_held = true;
			}
		}
	}
	SpinLockRelease(&notifier->mutex);

	if (start)
		StartSender(sender);
	if (newly_held || !skip)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		if (newly_held)
			skipped_slots = lappend_int(skipped_slots, slot);
		else
			notified_queues = lappend(notified_queues, pstrdup(queue));
		MemoryContextSwitchTo(old);
	}
	return skip;
}

/* At the end of a transaction that skipped: commit marks its queues pending. */
void
NotifierAtTransactionEnd(XactEvent event)
{
	ListCell   *cell;
	Latch	   *latch = NULL;

	/*
	 * The decisions are made at pre-commit (wakeup.c), so a prepared
	 * transaction has none; were it otherwise, PREPARE lets go as an abort
	 * does, before the lists' memory goes.
	 */
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	if (held_sender >= 0)
	{
		Sender	   *sender = &notifier->senders[held_sender];
		bool		restart = false;

		bool		newly_pending = false;

		SpinLockAcquire(&notifier->mutex);
		foreach(cell, skipped_slots)
		{
			QueueSlot  *q = &notifier->queues[lfirst_int(cell)];

			q->holders--;
			if (event == XACT_EVENT_COMMIT)
			{
				newly_pending |= !q->pending;
				q->pending = true;
			}
		}
		if (sender->state == SENDER_RUNNING && sender->database == MyDatabaseId)
		{
			sender->in_flight--;
			/* a queue already pending is the sender's to send: no need to wake it again */
			if (newly_pending)
				latch = sender->latch;
		}
		else if (event == XACT_EVENT_COMMIT && sender->state == SENDER_FREE)
		{
			/* the sender died since the decision: a new one sends what is pending */
			sender->state = SENDER_STARTING;
			sender->pid = 0;
			sender->database = MyDatabaseId;
			sender->state_since = GetCurrentTimestamp();
			sender->in_flight = 0;
			restart = true;
		}
		SpinLockRelease(&notifier->mutex);
		if (latch != NULL && event == XACT_EVENT_COMMIT)
			SetLatch(latch);
		if (restart)
			StartSender(held_sender);
	}
	/* the lists lived in TopTransactionContext, which is going away */
	skipped_slots = NIL;
	notified_queues = NIL;
	held_sender = -1;
}

/*
 * Wake the listeners of queue: queue a NOTIFY for this transaction's
 * commit, unless the sender will send it (see above).
 */
void
NotifyQueueListeners(const char *queue)
{
	if (notifier != NULL && coalesce_ms > 0 && MaySkipNotify(queue))
		return;
	Async_Notify(JQ_NOTIFY_CHANNEL, queue);
}

/*
 * The sender's round: claim every pending queue of its database whose last
 * notification is at least coalesce_ms old.  Returns them (names copied) and
 * sets *wait_ms to how long until the next pending one may be sent.
 */
static List *
TakePendingQueues(int sender, long *wait_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		spacing = (int64) Max(coalesce_ms, 1) * 1000;
	List	   *due = NIL;

	*wait_ms = SENDER_IDLE_MS;
	SpinLockAcquire(&notifier->mutex);
	for (int i = 0; i < QUEUE_SLOTS; i++)
	{
		QueueSlot  *q = &notifier->queues[i];

		if (q->database != MyDatabaseId || !q->pending)
			continue;
		if (now - q->last_notified < spacing)
		{
			*wait_ms = Min(*wait_ms, (long) ((spacing - (now - q->last_notified)) / 1000) + 1);
			continue;
		}
		q->pending = false;
		q->last_notified = now;
		notifier->senders[sender].last_activity = now;
		due = lappend(due, pstrdup(q->queue));
	}
	SpinLockRelease(&notifier->mutex);
	return due;
}

/* One NOTIFY per queue, in a transaction of the sender's own. */
static void
SendNotifications(List *queues)
{
	ListCell   *cell;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	foreach(cell, queues)
		Async_Notify(JQ_NOTIFY_CHANNEL, (const char *) lfirst(cell));
	CommitTransactionCommand();
}

/* Leave when quiet and nobody holds the sender; the slot is then free. */
static bool
SenderMayExit(int sender)
{
	bool		exit_now = false;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&notifier->mutex);
	if (notifier->senders[sender].in_flight == 0 &&
		now - notifier->senders[sender].last_activity >= (int64) SENDER_IDLE_MS * 1000)
	{
		bool		pending = false;

		for (int i = 0; i < QUEUE_SLOTS; i++)
			if (notifier->queues[i].database == MyDatabaseId && notifier->queues[i].pending)
				pending = true;
		if (!pending)
		{
			/* forget the database's queues: their last notification is old */
			for (int i = 0; i < QUEUE_SLOTS; i++)
				if (notifier->queues[i].database == MyDatabaseId)
					notifier->queues[i].database = InvalidOid;
			notifier->senders[sender].state = SENDER_FREE;
			notifier->senders[sender].latch = NULL;
			notifier->senders[sender].pid = 0;
			exit_now = true;
		}
	}
	SpinLockRelease(&notifier->mutex);
	return exit_now;
}

/*
 * However the sender ends (also when it cannot connect: its database was
 * dropped), its slot is free again; pending marks stay for the next one.
 */
static void
SenderExit(int code, Datum arg)
{
	int			sender = DatumGetInt32(arg);

	SpinLockAcquire(&notifier->mutex);
	if (notifier->senders[sender].pid == MyProcPid)
	{
		notifier->senders[sender].state = SENDER_FREE;
		notifier->senders[sender].latch = NULL;
		notifier->senders[sender].pid = 0;
	}
	SpinLockRelease(&notifier->mutex);
}

void
jobqueue_notifier_main(Datum main_arg)
{
	int			sender = DatumGetInt32(main_arg);
	Oid			database;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	SpinLockAcquire(&notifier->mutex);
	database = notifier->senders[sender].database;
	notifier->senders[sender].pid = MyProcPid;
	SpinLockRelease(&notifier->mutex);
	before_shmem_exit(SenderExit, Int32GetDatum(sender));
	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);

	SpinLockAcquire(&notifier->mutex);
	notifier->senders[sender].latch = MyLatch;
	notifier->senders[sender].state = SENDER_RUNNING;
	notifier->senders[sender].state_since = GetCurrentTimestamp();
	notifier->senders[sender].last_activity = GetCurrentTimestamp();
	SpinLockRelease(&notifier->mutex);

	for (;;)
	{
		long		wait_ms;
		List	   *due;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		due = TakePendingQueues(sender, &wait_ms);
		if (due != NIL)
		{
			SendNotifications(due);
			list_free_deep(due);
			continue;
		}
		if (SenderMayExit(sender))
			proc_exit(0);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* From _PG_init: the setting always; shared memory while preloading. */
void
JobqueueDefineNotifier(bool preloading)
{
	DefineCustomIntVariable("jobqueue.notify_coalesce",
							"Shortest time between two NOTIFY wake-ups of one queue sent for different transactions.",
							"Wake-ups in between are sent once, by a background worker, after the "
							"transactions commit. 0 sends one NOTIFY per transaction. Needs "
							"jobqueue in shared_preload_libraries.",
							&coalesce_ms, 2, 0, 1000, PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	if (!preloading)
		return;
	RegisterSharedSegment("jobqueue notifier", sizeof(NotifierShared), (void **) &notifier,
						  FillNotifierShared);
}
