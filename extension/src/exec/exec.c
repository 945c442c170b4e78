/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  The exec folder's Init: the planning rule of the hot path.
 *
 * The statements themselves are registered by the folders that own them.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

/* From _PG_init, once per process that loads the library. */
void
JqExecInit(void)
{
	JobqueueInstallPlannerHook();
}
