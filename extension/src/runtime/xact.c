/*-------------------------------------------------------------------------
 *
 * xact.c
 *	  The one transaction-end (and subtransaction-end) callback.
 *
 * What a transaction changed is noted as it runs (claim positions,
 * counters, due hints, waiting backends, coalesced wake-ups) and published
 * or dropped when it ends.  One callback runs every concern's step, in the
 * order written below, instead of one callback per file in an order that
 * only followed from _PG_init's lines (PostgreSQL calls the callbacks in
 * the reverse order of their registration).  The order is the one those
 * registrations gave; each entry says why it may stand there.
 *
 * The steps of the concerns that keep their state in shared memory run
 * only with shared_preload_libraries, as their callbacks were registered
 * only then.  Each step looks at the event itself: COMMIT publishes, ABORT
 * drops, the others are mostly left alone.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"

/* Whether the library was loaded by shared_preload_libraries (shared memory). */
static bool preloaded = false;

static void
OnTransactionEnd(XactEvent event, void *arg)
{
	/*
	 * 0. Before commit, the NOTIFYs of the wake-ups noted (wakeup.c), which
	 * PostgreSQL queues for this commit; before PREPARE, the effects being
	 * prepared are begun (prepared.c), so that each step below adds its part
	 * at this same event, and the wake-ups noted are added to them.
	 */
	if (event == XACT_EVENT_PRE_PREPARE)
		PreparedAtTransactionEnd(event);
	WakeupsAtTransactionEnd(event);

	if (preloaded)
	{
		/*
		 * 1. Counters: what happened to each queue's jobs, added to shared
		 * memory at commit.  First, as before: counting is independent of
		 * every other step, and a reader of the counters may be woken below.
		 */
		CountersAtTransactionEnd(event);

		/*
		 * 2. Claim positions: advanced past this transaction's claims, or
		 * moved back to the jobs it made claimable, before any waiting claim
		 * is woken (3) to search from them.
		 */
		ClaimPositionsAtTransactionEnd(event);

		/*
		 * 3. Waiting backends: queue_reserve's waits are woken once the jobs
		 * are visible (this event comes after the commit is), and after the
		 * claim positions (2) point at them.
		 */
		WaitingAtTransactionEnd(event);

		/*
		 * 4. Coalesced NOTIFY: queues whose wake-up was left to the sender
		 * become pending, and the sender is woken.  Listeners then claim
		 * through the claim positions published in (2).
		 */
		NotifierAtTransactionEnd(event);
	}

	/*
	 * 5. Due hints: announce rows falling due soon (a shared counter, in
	 * waiting's segment) and keep this transaction's probe.  Last, as
	 * before; the protocol (duehint.c) only needs the rows visible first,
	 * which they are at this event whatever the step's place.  Runs without
	 * preload too, to drop this backend's own notes.
	 */
	DueHintAtTransactionEnd(event);

	/*
	 * 6. Prepared effects: once every step added its part, PREPARE publishes
	 * them for COMMIT PREPARED; any other end forgets them.
	 */
	if (event != XACT_EVENT_PRE_PREPARE)
		PreparedAtTransactionEnd(event);
}

static void
OnSubtransactionEnd(SubXactEvent event, SubTransactionId sub, SubTransactionId parent,
					void *arg)
{
	/* 0. Wake-ups: an aborted subtransaction's are dropped. */
	WakeupsAtSubtransactionEnd(event);
	if (!preloaded)
		return;
	/* 1. Counters: a subtransaction's counts go to its parent, or away. */
	CountersAtSubtransactionEnd(event);
	/* 2. Claim positions: an aborted subtransaction's claims are undone. */
	ClaimPositionsAtSubtransactionEnd(event);
}

/* From JqRuntimeInit, once: the one pair of callbacks. */
void
RegisterTransactionEnd(bool preloading)
{
	preloaded = preloading;
	RegisterXactCallback(OnTransactionEnd, NULL);
	RegisterSubXactCallback(OnSubtransactionEnd, NULL);
}
