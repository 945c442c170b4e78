/*-------------------------------------------------------------------------
 *
 * runtime.c
 *	  The runtime folder's Init: its settings, shared memory, the transaction end.
 *
 * Settings first; shared memory only while shared_preload_libraries is
 * loaded (preloading); then the one transaction-end callback (xact.c).
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

/* From _PG_init, once per process that loads the library. */
void
JqRuntimeInit(bool preloading)
{
	/* jobqueue.tick_database, jobqueue.tick_interval; the ticker worker */
	JobqueueDefineTicker(preloading);
	/* jobqueue.claim_positions */
	JobqueueDefineClaimPositions();
	/* jobqueue.notify_coalesce; the notifier's shared memory */
	JobqueueDefineNotifier(preloading);
	if (preloading)
	{
		JobqueueRequestWaiting();
		JobqueueRequestClaimPositions();
		JobqueueRequestCounters();
		/* a prepared transaction's wake-ups and counts, kept for COMMIT PREPARED */
		JobqueueRequestPrepared();
	}
	/* one callback for every step above that ends with the transaction */
	RegisterTransactionEnd(preloading);
}
