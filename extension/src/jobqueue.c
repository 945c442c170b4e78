/*-------------------------------------------------------------------------
 *
 * jobqueue.c
 *	  Module entry point of the jobqueue extension.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Runs once per backend when the library is loaded. */
void
_PG_init(void)
{
	JobqueueDefineSettings();
}
