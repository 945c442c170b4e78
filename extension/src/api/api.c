/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The api folder's Init: its setting and statements.
 *
 * The statements of the entry points are beside them; each file's table
 * is registered here, once.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

/* From _PG_init, once per process that loads the library. */
void
JqApiInit(void)
{
	/* jobqueue.ring_lock_timeout */
	JobqueueDefineRotation();
	RegisterStatements(&admin_statements);
	RegisterStatements(&batch_statements);
	RegisterStatements(&browse_statements);
	RegisterStatements(&complete_statements);
	RegisterStatements(&failed_statements);
	RegisterStatements(&grants_statements);
	RegisterStatements(&promote_statements);
	RegisterStatements(&push_statements);
	RegisterStatements(&reports_statements);
	RegisterStatements(&reserve_statements);
	RegisterStatements(&rotation_statements);
	RegisterStatements(&schedules_statements);
}
