/*-------------------------------------------------------------------------
 *
 * base.c
 *	  The base folder's Init: its settings.
 *
 * The settings of the queue's clock and of argument checks (settings.c).
 *
 *-------------------------------------------------------------------------
 */
#include "base/base.h"

/* From _PG_init, once per process that loads the library. */
void
JqBaseInit(void)
{
	/* jobqueue.clock_offset, jobqueue.max_payload_bytes */
	JobqueueDefineSettings();
}
