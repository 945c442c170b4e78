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

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Runs once per backend when the library is loaded. */
void
_PG_init(void)
{
	JobqueueDefineSettings();
	JobqueueDefineTicker(process_shared_preload_libraries_in_progress);
	JobqueueDefineDueHint();
	JobqueueInstallPlannerHook();
	JobqueueDefineClaimPositions();
	JobqueueDefineRing();
	JobqueueDefineRotation();
	JobqueueDefineNotifier(process_shared_preload_libraries_in_progress);
	JobqueueDefineFlow();
	if (process_shared_preload_libraries_in_progress)
	{
		JobqueueRequestWaiting();
		JobqueueRequestClaimPositions();
		JobqueueRequestCounters();
	}
	RuntimeInit();
	ApiInit();
	/* after every jobqueue.* setting exists: a typo in the prefix now warns */
	MarkGUCPrefixReserved("jobqueue");
}
