/*-------------------------------------------------------------------------
 *
 * flow/flow.h
 *	  Flow control (1.5): concurrency keys, rate limits, dependencies.
 *
 * Holding jobs back and letting them go (flow.c), jobs that wait for
 * their parents (dependencies.c), concurrency limits (concurrency.c) and
 * rate limits (ratelimit.c).
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_FLOW_H
#define JOBQUEUE_FLOW_H

#include "runtime/runtime.h"

/* flow.c: holding jobs back and letting them go (1.5) */
typedef enum JobRemoval
{
	JOB_REMOVAL_FINISHED,		/* completed, or moved to the failed table */
	JOB_REMOVAL_COMPLETED,		/* completed (queue_delete, queue_delete_many) */
	JOB_REMOVAL_CANCELLED,		/* queue_cancel, queue_clear */
	JOB_REMOVAL_MOVED			/* a rotation moves rows between partitions */
} JobRemoval;

extern void JqFlowInit(void);
extern uint64 RemoveJobs(const JqCall *call, JobRemoval why, JqStatement *statement,
						 JobTable table, Datum *values, const char *nulls, int expected,
						 JobTable *found);
extern bool TakeKeySlot(const JqCall *call, text *queue, text *key);
extern void RefillKeySlots(const JqCall *call, text *queue, text *key, int given_up);
extern void AdmitWaitingOfKeys(const JqCall *call, text *queue, text *key_prefix);
extern void AdmitToFreeSlot(const JqCall *call, int64 id, text *queue, text *key);
extern void ReleaseChild(const JqCall *call, int64 id, text *queue, text *key);
extern void ChildrenParentDone(const JqCall *call, int64 parent, bool parent_failed);
extern void ChildrenFollowParent(const JqCall *call, int64 parent, bool cancelled);

/* dependencies.c: a pushed job that waits for its parents (1.5) */
extern int64 InsertChild(const JqCall *call, const JobSpec *job);

/* ratelimit.c: rate limits per queue (1.5) */
extern int	TakeRateLimitedClaims(const JqCall *call, Datum queue, int wanted,
								  TimestampTz *next_slot);

/* The tables of statements of the folder's files, registered by its Init. */
extern JqStatementSet concurrency_statements;
extern JqStatementSet dependencies_statements;
extern JqStatementSet flow_statements;
extern JqStatementSet ratelimit_statements;

#endif							/* JOBQUEUE_FLOW_H */
