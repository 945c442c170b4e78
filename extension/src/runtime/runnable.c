/*-------------------------------------------------------------------------
 *
 * runnable.c
 *	  A job became due or claimable: the one function that tells everyone.
 *
 * A write that makes a job claimable (a push, a release, a retry, a
 * promotion, a rotation's move, flow control letting a job go) or due later
 * must be told to the places that act on it at commit: the counters, the
 * due hints (duehint.c), the claim positions (claimpos.c), the waiting
 * claims (waiting.c) and the listeners (wakeup.c, notifier.c).  Each write
 * path calls NoteJobCanRun once per job instead of a subset of those, so a
 * new path cannot forget one.  (A deadline is noted with NoteJobDueAt: it is
 * the moment a job expires, not one at which it can run.)
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

/*
 * A job of queue can run: now (claimable, at position in its queue's claim
 * order) or at position->available_at.  event: what the counters record of
 * it (JOB_EVENT_KINDS: nothing, the caller counted or nothing happened to
 * it).  wake: who hears of a claimable job now; JOB_WAKE_IF_WANTED adds the
 * queue to *wake_queues, for WakeQueuesThatWantIt once the caller's
 * statements are done.  Everything is published when the transaction
 * commits (xact.c).
 */
void
NoteJobCanRun(text *queue, const ClaimPosition *position, bool claimable, JobEvent event,
			  JobWake wake, List **wake_queues)
{
	if (event != JOB_EVENT_KINDS)
		CountJobs(queue, event, 1);
	if (!claimable)
	{
		NoteJobDueAt(position->available_at);
		return;
	}
	NoteClaimable(queue, position);
	switch (wake)
	{
		case JOB_WAKE_NOBODY:
			break;
		case JOB_WAKE_WAITERS:
			MarkJobsDue();
			break;
		case JOB_WAKE_LISTENERS:
			MarkJobsDue();
			WakeQueue(queue);
			break;
		case JOB_WAKE_IF_WANTED:
			*wake_queues = AddWakeQueue(*wake_queues, queue);
			break;
	}
}
