/*-------------------------------------------------------------------------
 *
 * runtime/runtime.h
 *	  Backend and shared state: what a transaction tells the rest of the server.
 *
 * Shared memory (shmem.c), queue_reserve's wait (waiting.c), due hints
 * (duehint.c), claim positions (claimpos.c), counters (counters.c),
 * NOTIFY wake-ups (wakeup.c, notifier.c) and the background ticker
 * (ticker.c).
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_RUNTIME_H
#define JOBQUEUE_RUNTIME_H

#include "store/store.h"

#include "access/xact.h"

/* shmem.c: the shared memory segments of the concerns that keep state there */
extern void RegisterSharedSegment(const char *name, Size size, void **pointer,
								  void (*fill) (void *segment));
extern uint32 QueueSlotHash(Oid database, const char *queue);

/* counters.c: what happened to each queue's jobs, counted at commit (preload) */
typedef enum JobEvent
{
	JOB_PUSHED,					/* inserted by a push or a schedule */
	JOB_CLAIMED,				/* handed out by queue_reserve */
	JOB_COMPLETED,				/* deleted by its worker (queue_delete*) */
	JOB_RELEASED,				/* given back by queue_release* for another attempt */
	JOB_RETRIED,				/* requeued from the failed table (queue_retry_failed) */
	JOB_FAILED,					/* moved to the failed table, for any reason */
	JOB_EXPIRED,				/* its lease ran out before its worker finished */
	JOB_EVENT_KINDS
} JobEvent;
extern void JobqueueRequestCounters(void);
extern void CountJobs(text *queue, JobEvent event, int64 jobs);
extern void CountJobsOfRows(int column, JobEvent event);

/* waiting.c: queue_reserve's wait, woken from shared memory when preloaded */
extern void JobqueueRequestWaiting(void);
extern void MarkJobsDue(void);
extern void PrepareToWaitForJobs(void);
extern uint64 JobsDueWakeups(void);
extern void WaitForJobs(long timeout_ms);
extern void DoneWaitingForJobs(void);
extern pg_atomic_uint64 *SharedDueWritesCounter(void);

/* duehint.c: skipping the due-probe of a claim when nothing can be due */
extern void NoteJobDueAt(TimestampTz moment);
extern bool DueProbeCanBeSkipped(ArrayType *queues, TimestampTz now);
extern bool DueProbeCanBeRemembered(uint64 *generation);
extern TimestampTz DueProbeHorizon(TimestampTz now);
extern void RememberDueProbe(ArrayType *queues, uint64 generation, TimestampTz now,
							 TimestampTz until);

/* claimpos.c: where a queue's claims start their search (with preload) */
typedef JobOrder ClaimPosition;	/* a job's place in claim order (store.h) */

typedef struct ClaimStart
{
	int			slot;			/* -1: the queue has no position */
	uint64		incarnation;	/* of the slot, when read */
	uint64		generation;		/* of the queue's position when read */
	bool		from_position;	/* search from "at"; else from the head */
	ClaimPosition at;
} ClaimStart;

extern void JobqueueDefineClaimPositions(void);
extern void JobqueueRequestClaimPositions(void);
extern bool ClaimPositionsUsable(const JqCall *call);
extern void ReadClaimStart(text *queue, ClaimStart *start);
extern void IncludeOwnMoves(ClaimStart *start);
extern void NoteClaimed(const ClaimStart *start, const ClaimPosition *first,
						const ClaimPosition *last);
extern void NoteClaimable(text *queue, const ClaimPosition *position);

/* ticker.c: the background ticker, with shared_preload_libraries */
extern void JobqueueDefineTicker(bool preloading);

/* wakeup.c: NOTIFY on channel "jobqueue", payload the queue's name, at commit */
#define JQ_NOTIFY_CHANNEL "jobqueue"
extern void WakeQueue(text *queue);
extern void WakeQueueNamed(const char *queue);

/* notifier.c: coalesced NOTIFY, with shared_preload_libraries */
extern void JobqueueDefineNotifier(bool preloading);
extern void NotifyQueueListeners(const char *queue);
extern List *AddWakeQueue(List *queues, text *queue);
extern void WakeQueuesThatWantIt(const JqCall *call, List *queues);

/* runnable.c: a job became due or claimable, told to everyone who must know */
typedef enum JobWake
{
	JOB_WAKE_NOBODY,			/* its claimer takes it, or it only moved */
	JOB_WAKE_WAITERS,			/* waiting claims; its queue wants no NOTIFY */
	JOB_WAKE_LISTENERS,			/* waiting claims and its queue's listeners */
	JOB_WAKE_IF_WANTED			/* later, as its queue's settings say (a list) */
} JobWake;
extern void NoteJobCanRun(text *queue, const ClaimPosition *position, bool claimable,
						  JobEvent event, JobWake wake, List **wake_queues);

/*
 * prepared.c: what a prepared transaction leaves to COMMIT PREPARED.  At
 * PREPARE TRANSACTION each step below adds what it would have published
 * at commit to the effects being prepared; COMMIT PREPARED, from any
 * session, publishes them (ROLLBACK PREPARED drops them).
 */
#define PREPARED_QUEUES 16
typedef struct PreparedQueue
{
	char		queue[JQ_QUEUE_NAME_BYTES];
	bool		wake;			/* NOTIFY its listeners */
	int64		counts[JOB_EVENT_KINDS];
} PreparedQueue;
typedef struct PreparedMove
{
	int			slot;
	uint64		incarnation;
	ClaimPosition to;
} PreparedMove;
typedef struct PreparedEffects
{
	bool		overflow;		/* more queues or moves than fit: see prepared.c */
	bool		jobs_due;		/* wake waiting claims */
	bool		due_noted;		/* a row falls due at due_at (duehint.c) */
	TimestampTz due_at;
	int			queue_count;
	PreparedQueue queues[PREPARED_QUEUES];
	int			move_count;
	PreparedMove moves[PREPARED_QUEUES];
} PreparedEffects;
extern void JobqueueRequestPrepared(void);
extern PreparedEffects *EffectsBeingPrepared(void);
extern PreparedQueue *PreparedQueueOf(PreparedEffects *effects, const char *queue);
extern void PreparedAtTransactionEnd(XactEvent event);
extern void CountersApplyPrepared(const PreparedEffects *effects);
extern void ClaimPositionsApplyPrepared(const PreparedEffects *effects);
extern void WakeWaitingClaims(void);
extern void DueHintApplyPrepared(const PreparedEffects *effects);

/* xact.c: the one transaction-end callback, and the steps it runs in order */
extern void RegisterTransactionEnd(bool preloading);
extern void WakeupsAtTransactionEnd(XactEvent event);
extern void WakeupsAtSubtransactionEnd(SubXactEvent event);
extern void CountersAtTransactionEnd(XactEvent event);
extern void CountersAtSubtransactionEnd(SubXactEvent event);
extern void ClaimPositionsAtTransactionEnd(XactEvent event);
extern void ClaimPositionsAtSubtransactionEnd(SubXactEvent event);
extern void WaitingAtTransactionEnd(XactEvent event);
extern void NotifierAtTransactionEnd(XactEvent event);
extern void DueHintAtTransactionEnd(XactEvent event);

/* runtime.c */
extern void JqRuntimeInit(bool preloading);

#endif							/* JOBQUEUE_RUNTIME_H */
