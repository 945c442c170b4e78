/*-------------------------------------------------------------------------
 *
 * exec/exec.h
 *	  Running statements: the call context, the statement engine, results.
 *
 * Every SQL entry point builds a JqCall first (call.c); statements are
 * prepared once per backend and API version (plans.c), their results read
 * with typed readers (results.c), and the hot-path statements keep their
 * index plans whatever the statistics (hotpath.c).
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_EXEC_H
#define JOBQUEUE_EXEC_H

#include "base/base.h"

/*
 * call.c: what every internal function needs to know about the SQL call
 * it serves, resolved once when the call starts.
 */
typedef struct JqCall
{
	FunctionCallInfo fcinfo;
	JqApiVersion version;		/* of the SQL function being called */
	Oid			schema;			/* the extension's: the function's namespace */
	const char *quoted_schema;	/* for statements built at run time */
	TimestampTz now;			/* the queue's clock at the call's start */
} JqCall;

extern void JqCallBegin(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version);
extern void JqCallBeginWriting(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version);
extern bool JqCallSince(const JqCall *call, JqApiVersion version);
extern JqApiVersion InstalledApiVersion(void);

/*
 * plans.c: one entry per fixed statement the extension runs.  A statement
 * may have a variant per API version; a call gets the newest variant not
 * newer than its own version (plans.c, plan_defs).
 */
typedef enum QueuePlanId
{
	PLAN_PUSH,
	PLAN_PUSH_UNIQUE,
	PLAN_FIND_UNIQUE_HOLDER,
	PLAN_FIND_DUE,
	PLAN_MAKE_READY,
	PLAN_FAIL_EXHAUSTED,
	PLAN_CLAIM_CANDIDATES,
	PLAN_CLAIM_UPDATE,
	PLAN_DELETE,
	PLAN_LOCK_CLAIMED,
	PLAN_RELEASE,
	PLAN_MOVE_TO_FAILED,
	PLAN_EXTEND,
	PLAN_PENDING_ALL,
	PLAN_PENDING_QUEUE,
	PLAN_STATS,
	PLAN_FAILED_COUNT,
	PLAN_FAILED_ROWS,
	PLAN_FAILED_ROWS_QUEUE,
	PLAN_FAILED_ROW_ID,
	PLAN_RETRY_FAILED_ONE,
	PLAN_RETRY_FAILED_ALL,
	PLAN_FORGET_FAILED_ONE,
	PLAN_FORGET_FAILED_BEFORE,
	PLAN_FORGET_FAILED_ALL,
	PLAN_TIER_FUNCTIONS,
	/* since 1.1 */
	PLAN_PUSH_BATCH,
	PLAN_QUEUE_WANTS_WAKEUPS,
	PLAN_FIND_EXPIRED_READY,
	PLAN_NEXT_DUE,
	PLAN_FAIL_EXPIRED,
	PLAN_CLAIM_CANDIDATES_FROM,
	PLAN_CLAIM_CANDIDATES_BELOW,
	PLAN_LOCK_CLAIMED_MANY,
	PLAN_DELETE_IDS,
	PLAN_CANCEL,
	PLAN_CLEAR,
	PLAN_SET_PAUSED,
	PLAN_SET_DEFAULT_LEASE,
	PLAN_SET_NOTIFY,
	PLAN_LIST,
	/* since 1.2 */
	PLAN_SCHEDULE_LOCK,
	PLAN_SCHEDULE_UPSERT,
	PLAN_SCHEDULE_REMOVE,
	PLAN_SCHEDULE_LIST,
	PLAN_SCHEDULE_DUE,
	PLAN_SCHEDULE_ADVANCE,
	/* since 1.3 */
	PLAN_RING_LIVE_JOBS,
	PLAN_RING_MOVE,
	/* since 1.4 */
	PLAN_OVERVIEW,
	PLAN_PAGE_CANDIDATES,
	PLAN_PAGE_SORTED,
	PLAN_PAGE_BY_ID,
	PLAN_JOB,
	PLAN_LEASES,
	/* since 1.5: flow control */
	PLAN_PUSH_HELD_BACK,
	PLAN_KEY_TAKE_SLOT,
	PLAN_KEY_LOCK_SLOTS,
	PLAN_KEY_SET_RUNNING,
	PLAN_KEY_DROP_SLOTS,
	PLAN_KEY_ADMIT_WAITING,
	PLAN_KEYS_WAITING,
	PLAN_FLOW_LET_GO,
	PLAN_FLOW_WAIT_FOR_KEY,
	PLAN_JOB_IS_FAILED,
	PLAN_FAILED_SET_KEY,
	PLAN_CHILDREN_DONE,
	PLAN_CHILDREN_FOLLOW,
	PLAN_PARENT_FORGET,
	PLAN_PARENTS_LOCK,
	PLAN_PARENTS_MARK,
	PLAN_PARENTS_FAILED,
	PLAN_PUSH_CHILD,
	PLAN_ADD_PARENTS,
	PLAN_REPLACE_PENDING,
	PLAN_KEY_LIMIT_SET,
	PLAN_KEY_LIMIT_REMOVE,
	PLAN_KEY_LIMIT_LIST,
	PLAN_KEYS_IN_USE,
	PLAN_BLOCKED,
	PLAN_RATE_SET,
	PLAN_RATE_REMOVE,
	PLAN_RATE_LIST,
	PLAN_RATE_READ,
	PLAN_RATE_LOCK,
	PLAN_RATE_STORE,
	NUM_QUEUE_PLANS
} QueuePlanId;

/*
 * The tables a statement's jobs can be read from: queue_jobs, or (1.3)
 * one of its partitions (ring.c).
 */
typedef enum JobTable
{
	JOBS_ALL,
	JOBS_RING0,
	JOBS_RING1,
	JOBS_LONG,
	NUM_JOB_TABLES
} JobTable;

extern const char *JobTableName(JobTable table);
extern SPIPlanPtr QueuePlan(const JqCall *call, QueuePlanId id);
extern const char *QueueSchemaQuoted(Oid schema);
extern int	QueueExecute(const JqCall *call, QueuePlanId id, Datum *values,
						 const char *nulls, int expected);
extern int	QueueExecuteOn(const JqCall *call, QueuePlanId id, JobTable table,
						   Datum *values, const char *nulls, int expected);

/* results.c */
extern ArrayType *Int8ArrayFromDatums(Datum *values, int count);
extern int64 SpiInt8(uint64 row, int column);
extern Oid	SpiOid(uint64 row, int column);
extern int32 SpiInt32(uint64 row, int column);
extern bool SpiBool(uint64 row, int column);
extern TimestampTz SpiTimestampTz(uint64 row, int column);
extern text *SpiTextCopy(uint64 row, int column);
extern text *SpiText(uint64 row, int column);
extern Jsonb *SpiJsonbCopy(uint64 row, int column);
extern bool SpiIsNull(uint64 row, int column);
extern SPITupleTable *SpiTakeResult(void);
extern Datum ReturnRowsOf(const JqCall *call, QueuePlanId id, Datum *values,
						  const char *nulls);
extern uint64 RunAlone(const JqCall *call, QueuePlanId id, Datum *values,
					   const char *nulls, int expected);
extern int	CompareLeadingIds(const void *a, const void *b);

/* hotpath.c: hot-path statements keep index plans whatever the statistics */
#define JQ_HOT_PATH_MARK "/* jobqueue hot path */ "
/* the same for statements that must read indexes but may sort (not hot path) */
#define JQ_INDEX_PLAN_MARK "/* jobqueue index plan */ "
extern void JobqueueInstallPlannerHook(void);

#endif							/* JOBQUEUE_EXEC_H */
