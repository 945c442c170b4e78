/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The store folder's Init: its setting.
 *
 * The storage ring's period (ring.c).
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

/* From _PG_init, once per process that loads the library. */
void
JqStoreInit(void)
{
	/* jobqueue.ring_period: where pushes go depends on it */
	JobqueueDefineRing();
}
