/*-------------------------------------------------------------------------
 *
 * runtime.c
 *	  The runtime folder's Init.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

/* From _PG_init: the folder's statements. */
void
RuntimeInit(void)
{
	RegisterStatements(&wakeup_statements);
}
