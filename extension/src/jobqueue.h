/*-------------------------------------------------------------------------
 *
 * jobqueue.h
 *	  Declarations shared by the jobqueue extension's C files.
 *
 * The extension is a set of SQL-callable functions over two tables
 * (queue_jobs, queue_failed_jobs).  Each file holds one concern:
 *   settings.c  - GUCs and the queue's clock
 *   plans.c     - SPI plans prepared once per backend, schema-qualified
 *   args.c      - argument checks shared by every function
 *   errortext.c - cutting stored error text to its limit
 *   push.c, reserve.c, complete.c, failed.c, reports.c, grants.c
 *   waiting.c, duehint.c - shared memory: waits, and skipping the due-probe
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_H
#define JOBQUEUE_H

#include "postgres.h"

#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* Limits of the contract (API.md, "Precise rules"). */
#define JQ_QUEUE_NAME_MAX		64		/* characters */
#define JQ_JOB_NAME_MAX			200		/* characters */
#define JQ_UNIQUE_KEY_MAX		200		/* characters */
#define JQ_WORKER_NAME_MAX		200		/* characters; longer names are cut */
#define JQ_MAX_ATTEMPTS_LIMIT	1000000
#define JQ_MAX_JOBS_LIMIT		10000
#define JQ_ERROR_TEXT_MAX		60000	/* bytes, marker included */

/* settings.c */
extern int	jobqueue_max_payload_bytes;
extern void JobqueueDefineSettings(void);
extern TimestampTz QueueNow(void);
extern bool QueueClockShifted(void);
extern TimestampTz QueueTimeAfter(TimestampTz base, Interval *span);

/* plans.c: one entry per fixed statement the extension runs */
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
	/* 1.1 */
	PLAN_PUSH_1_1,
	PLAN_PUSH_UNIQUE_1_1,
	PLAN_PUSH_BATCH,
	PLAN_QUEUE_WANTS_WAKEUPS,
	PLAN_FIND_DUE_1_1,
	PLAN_FIND_EXPIRED_READY,
	PLAN_NEXT_DUE,
	PLAN_FAIL_EXPIRED,
	PLAN_CLAIM_CANDIDATES_1_1,
	PLAN_CLAIM_UPDATE_1_1,
	PLAN_LOCK_CLAIMED_MANY,
	PLAN_DELETE_IDS,
	PLAN_RETRY_FAILED_ONE_1_1,
	PLAN_RETRY_FAILED_ALL_1_1,
	PLAN_CANCEL,
	PLAN_CLEAR,
	PLAN_SET_PAUSED,
	PLAN_SET_DEFAULT_LEASE,
	PLAN_SET_NOTIFY,
	PLAN_LIST,
	/* 1.2 */
	PLAN_SCHEDULE_LOCK,
	PLAN_SCHEDULE_UPSERT,
	PLAN_SCHEDULE_REMOVE,
	PLAN_SCHEDULE_LIST,
	PLAN_SCHEDULE_DUE,
	PLAN_SCHEDULE_ADVANCE,
	NUM_QUEUE_PLANS
} QueuePlanId;

extern SPIPlanPtr QueuePlan(FunctionCallInfo fcinfo, QueuePlanId id);
extern const char *QueueSchemaName(void);
extern ArrayType *Int8ArrayFromDatums(Datum *values, int count);
extern int64 SpiInt8(uint64 row, int column);
extern bool SpiBool(uint64 row, int column);
extern int	QueueExecute(SPIPlanPtr plan, Datum *values, const char *nulls,
						 bool read_only, int expected);

/* args.c */
extern bool ParseIntervalQuietly(const char *input, Interval *result);
extern bool ParseTimestampQuietly(const char *input, TimestampTz *result);
extern void ArgRequire(FunctionCallInfo fcinfo, int argno, const char *argname);
extern text *ArgNameText(FunctionCallInfo fcinfo, int argno, const char *argname,
						 const char *default_value, int max_chars);
extern text *ArgOptionalNameText(FunctionCallInfo fcinfo, int argno,
								 const char *argname, int max_chars);
extern void CheckNameText(text *value, const char *argname, int max_chars);
extern text *ArgWorkerText(FunctionCallInfo fcinfo, int argno);
extern int32 ArgInt(FunctionCallInfo fcinfo, int argno, const char *argname,
					int32 default_value, int32 min_value, int32 max_value);
extern Interval *ArgInterval(FunctionCallInfo fcinfo, int argno,
							 const char *argname, const char *default_value);
extern void CheckNonNegativeInterval(Interval *span, const char *argname);
extern void CheckLeaseInterval(Interval *span, const char *argname);
extern Jsonb *ArgPayload(FunctionCallInfo fcinfo, int argno, const char *argname);
extern void CheckPayload(Jsonb *payload, const char *argname);
extern int	ArgIdTokenArrays(FunctionCallInfo fcinfo, int64 **ids, int64 **tokens);

/* errortext.c */
extern text *ArgErrorText(FunctionCallInfo fcinfo, int argno);
extern text *CutErrorText(const char *message, int len);

/* push.c: one job to insert, as checked from a call's arguments */
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
} JobSpec;

extern int64 InsertJob(FunctionCallInfo fcinfo, const JobSpec *job, TimestampTz now,
					   bool schema_1_1, bool *inserted, bool *wake);
extern void CheckDeadline(TimestampTz deadline, TimestampTz available_at);
extern void NoteJobSpecDue(const JobSpec *job, TimestampTz now);

/* waiting.c: queue_reserve's wait, woken from shared memory when preloaded */
extern void JobqueueRequestWaiting(void);
extern void MarkJobsDue(void);
extern void PrepareToWaitForJobs(void);
extern void WaitForJobs(long timeout_ms);
extern void DoneWaitingForJobs(void);
extern pg_atomic_uint64 *SharedDueWritesCounter(void);

/* duehint.c: skipping the due-probe of a claim when nothing can be due */
extern void JobqueueDefineDueHint(void);
extern void NoteJobDueAt(TimestampTz moment);
extern bool DueProbeCanBeSkipped(ArrayType *queues, TimestampTz now);
extern bool DueProbeCanBeRemembered(uint64 *generation);
extern TimestampTz DueProbeHorizon(TimestampTz now);
extern void RememberDueProbe(ArrayType *queues, uint64 generation, TimestampTz now,
							 TimestampTz until);

/* ticker.c: the background ticker, with shared_preload_libraries */
extern void JobqueueDefineTicker(bool preloading);

/* wakeup.c: NOTIFY on channel "jobqueue", payload the queue's name */
#define JQ_NOTIFY_CHANNEL "jobqueue"
extern void WakeQueue(text *queue);
extern bool QueueWantsWakeups(FunctionCallInfo fcinfo, text *queue);
extern List *AddWakeQueue(List *queues, text *queue);
extern void WakeQueuesThatWantIt(FunctionCallInfo fcinfo, List *queues);

/* complete.c: finishing one claimed job, shared with the batch calls */
extern bool MoveClaimedToFailed(FunctionCallInfo fcinfo, int64 id, int64 token,
								text *error, TimestampTz now);
extern bool ReleaseClaimed(FunctionCallInfo fcinfo, int64 id, int64 token, Interval *delay,
						   text *error, TimestampTz now, text **due_queue);
extern void ArgIdAndToken(FunctionCallInfo fcinfo, int64 *id, int64 *token);

#endif							/* JOBQUEUE_H */
