/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The store folder's Init: its setting; what a write without a plan
 *	  must leave to the statement.
 *
 * The storage ring's period (ring.c).
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "utils/rel.h"

/*
 * Whether a job partition may be written without a plan (direct_insert.c,
 * direct_delete.c): the statement would apply rules of the user's and
 * row-level security forced on the owner, which those writes do not; the
 * triggers each checks itself.
 */
bool
PartitionWritableDirectly(Relation rel)
{
	return rel->rd_rules == NULL && !rel->rd_rel->relforcerowsecurity;
}

/* From _PG_init, once per process that loads the library. */
void
JqStoreInit(void)
{
	/* jobqueue.ring_period: where pushes go depends on it */
	JobqueueDefineRing();
}
