/*-------------------------------------------------------------------------
 *
 * waiting.c
 *	  queue_reserve's wait: block in the server until a job is due.
 *
 * NOTIFY makes PostgreSQL serialise the commits of notifying transactions,
 * so this path does without it.  With the library in
 * shared_preload_libraries, a transaction that made a job due (a push, a
 * retry, a release without delay, a tick) broadcasts a condition variable
 * in shared memory right after it commits, whatever the queue's NOTIFY
 * setting, and a waiting queue_reserve wakes and claims at once.  Without
 * preload a waiting queue_reserve looks again every POLL_MS.
 *
 * Waiting happens inside the caller's statement: like any statement, it
 * holds a snapshot while it waits, so keep waits short (seconds).
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#define POLL_MS 50

typedef struct JobqueueShared
{
	ConditionVariable jobs_due;
	pg_atomic_uint64 due_writes;	/* see duehint.c */
	pg_atomic_uint64 wakeups;	/* broadcasts of jobs_due so far */
} JobqueueShared;

static JobqueueShared *shared = NULL;
static bool jobs_due_at_commit = false;

static void
FillShared(void *segment)
{
	JobqueueShared *fresh = (JobqueueShared *) segment;

	ConditionVariableInit(&fresh->jobs_due);
	pg_atomic_init_u64(&fresh->due_writes, 0);
	pg_atomic_init_u64(&fresh->wakeups, 0);
}

/* Wake every waiting claim: jobs were made due, and are visible by now. */
void
WakeWaitingClaims(void)
{
	if (shared == NULL)
		return;
	/* counted first: a claim that reads the count after it misses nothing */
	pg_atomic_fetch_add_u64(&shared->wakeups, 1);
	ConditionVariableBroadcast(&shared->jobs_due);
}

/*
 * After commit the jobs are visible: wake the waiting claims.  A prepared
 * transaction leaves that to its COMMIT PREPARED (prepared.c).
 */
void
WaitingAtTransactionEnd(XactEvent event)
{
	if (event == XACT_EVENT_COMMIT && jobs_due_at_commit)
		WakeWaitingClaims();
	if (event == XACT_EVENT_PRE_PREPARE && jobs_due_at_commit && EffectsBeingPrepared() != NULL)
		EffectsBeingPrepared()->jobs_due = true;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		jobs_due_at_commit = false;
}

/* From _PG_init while shared_preload_libraries is loaded. */
void
JobqueueRequestWaiting(void)
{
	RegisterSharedSegment("jobqueue", sizeof(JobqueueShared), (void **) &shared, FillShared);
}

/* The counter of commits that wrote rows falling due soon; NULL without preload. */
pg_atomic_uint64 *
SharedDueWritesCounter(void)
{
	return shared != NULL ? &shared->due_writes : NULL;
}

/* This transaction made a job due now: wake waiting claims when it commits. */
void
MarkJobsDue(void)
{
	jobs_due_at_commit = true;
}

/*
 * Get ready to be woken: before looking for jobs, or after looking with
 * JobsDueWakeups read before, so that no wake-up is missed.
 */
void
PrepareToWaitForJobs(void)
{
	if (shared != NULL)
		ConditionVariablePrepareToSleep(&shared->jobs_due);
}

/*
 * How many wake-ups of waiting claims there were so far (0 without
 * preload).  A waiting claim whose rounds run in subtransactions cannot be
 * prepared to sleep during a round (a subtransaction's abort cancels it):
 * it reads this before the round and, once prepared after it, sleeps only
 * if no wake-up came in between.
 */
uint64
JobsDueWakeups(void)
{
	if (shared == NULL)
		return 0;
	/* a full barrier: the read comes after PrepareToWaitForJobs put us in the list */
	return pg_atomic_fetch_add_u64(&shared->wakeups, 0);
}

/* Sleep until a committed transaction makes a job due, or timeout_ms. */
void
WaitForJobs(long timeout_ms)
{
	if (timeout_ms <= 0)
		return;
	if (shared != NULL)
		(void) ConditionVariableTimedSleep(&shared->jobs_due, timeout_ms, PG_WAIT_EXTENSION);
	else
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(timeout_ms, POLL_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	CHECK_FOR_INTERRUPTS();
}

/* After the last wait. */
void
DoneWaitingForJobs(void)
{
	if (shared != NULL)
		ConditionVariableCancelSleep();
}
