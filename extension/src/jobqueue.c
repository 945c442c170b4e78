/*-------------------------------------------------------------------------
 *
 * jobqueue.c
 *	  Module entry point of the jobqueue extension.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "miscadmin.h"
#include "utils/guc.h"

JQ_MODULE_MAGIC("jobqueue", JQ_EXTVERSION);

void		_PG_init(void);

/* Runs once per backend when the library is loaded. */
void
_PG_init(void)
{
	bool		preloading = process_shared_preload_libraries_in_progress;

	/* bottom to top (README.md); each folder defines its own settings */
	JqBaseInit();
	JqExecInit();
	JqStoreInit();
	JqRuntimeInit(preloading);
	JqFlowInit();
	JqApiInit();
	/* after every jobqueue.* setting exists: a typo in the prefix now warns */
	MarkGUCPrefixReserved("jobqueue");
}
