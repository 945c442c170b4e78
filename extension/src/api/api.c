/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The api folder's Init.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

/* From _PG_init: the folder's statements. */
void
ApiInit(void)
{
	RegisterStatements(&admin_statements);
	RegisterStatements(&batch_statements);
	RegisterStatements(&browse_statements);
	RegisterStatements(&complete_statements);
	RegisterStatements(&failed_statements);
	RegisterStatements(&grants_statements);
	RegisterStatements(&push_statements);
	RegisterStatements(&reports_statements);
	RegisterStatements(&reserve_statements);
	RegisterStatements(&rotation_statements);
	RegisterStatements(&schedules_statements);
}
