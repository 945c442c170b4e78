/*-------------------------------------------------------------------------
 *
 * store/store.h
 *	  Where a job row lives: the tables, the ring's partitions, a job by id.
 *
 * A job to insert (JobSpec, as checked from a call's arguments), the
 * partition a push writes to and the order a job is looked for by id in
 * (ring.c).
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_STORE_H
#define JOBQUEUE_STORE_H

#include "exec/exec.h"

/* One job to insert, as checked from a call's arguments (api/push.c reads them). */
typedef enum OnDuplicate
{
	ON_DUPLICATE_KEEP,			/* the job holding the unique key stays as it is */
	ON_DUPLICATE_REPLACE,		/* a pending holder takes the new job's values */
	ON_DUPLICATE_DEBOUNCE		/* the same, and the delay must be positive */
} OnDuplicate;

typedef struct JobSpec
{
	text	   *name;
	Jsonb	   *payload;
	text	   *queue;
	int32		priority;
	int32		max_attempts;
	text	   *unique_key;		/* NULL: none */
	TimestampTz available_at;
	bool		has_deadline;
	TimestampTz deadline;
	/* since 1.5: flow control */
	text	   *concurrency_key;	/* NULL: none */
	OnDuplicate on_duplicate;
	int			parent_count;	/* distinct ids it waits for (after) */
	int64	   *parents;		/* sorted */
	bool		run_if_parent_fails;	/* after_failed = 'run' */
} JobSpec;


/* store/ring.c: where a job row lives, the storage ring's partitions */
extern int	jobqueue_ring_period_seconds;
extern void JobqueueDefineRing(void);
extern int	RingAt(TimestampTz time);
extern JobTable RingJobTable(int ring);
extern JobTable PushTable(const JqCall *call, Datum *ring);
extern int	JobTablesToSearch(const JqCall *call, JobTable tables[3]);
extern void NoteJobFoundIn(JobTable table);
extern bool ClaimSearchTable(const JqCall *call, JobTable *table);
extern JobTable JobTableOfPartition(const JqCall *call, Oid relid);
extern uint64 ExecuteFindingJob(const JqCall *call, QueuePlanId id, Datum *values,
								const char *nulls, int expected, JobTable *found);
extern uint64 RunAloneFindingJob(const JqCall *call, QueuePlanId id, Datum *values,
								 const char *nulls, int expected);

#endif							/* JOBQUEUE_STORE_H */
