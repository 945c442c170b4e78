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

#include "catalog/pg_trigger.h"
#include "utils/rel.h"

/* The extension's own trigger on queue_jobs' partitions (AFTER DELETE, flow/flow.c). */
#define EXTENSION_DELETE_TRIGGER "queue_flow_job_removed"

/*
 * Whether a job partition may be written without a plan for event
 * (CMD_INSERT, CMD_UPDATE or CMD_DELETE: direct_insert.c, direct_claim.c,
 * direct_delete.c): the statement would apply rules of the user's and
 * row-level security forced on the owner, and fire the triggers on the
 * event, which those writes do not.  The one trigger allowed is the
 * extension's own AFTER DELETE, whose work direct_delete.c leaves to its
 * caller or to the statement.
 */
bool
PartitionWritableDirectly(const JqCall *call, Relation rel, CmdType event)
{
	TriggerDesc *triggers = rel->trigdesc;

	if (rel->rd_rules != NULL || rel->rd_rel->relforcerowsecurity)
		return false;
	for (int i = 0; triggers != NULL && i < triggers->numtriggers; i++)
	{
		Trigger    *trigger = &triggers->triggers[i];
		int16		type = trigger->tgtype;
		bool		fires = event == CMD_INSERT ? TRIGGER_FOR_INSERT(type)
			: event == CMD_UPDATE ? TRIGGER_FOR_UPDATE(type) : TRIGGER_FOR_DELETE(type);

		if (fires && !(strcmp(trigger->tgname, EXTENSION_DELETE_TRIGGER) == 0 &&
					   FunctionSchema(trigger->tgfoid) == call->schema))
			return false;
	}
	return true;
}

/* From _PG_init, once per process that loads the library. */
void
JqStoreInit(void)
{
	/* jobqueue.ring_period: where pushes go depends on it */
	JobqueueDefineRing();
}
