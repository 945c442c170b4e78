/*-------------------------------------------------------------------------
 *
 * jobqueue.h
 *	  Declarations shared by the jobqueue extension's C files.
 *
 * The extension is a set of SQL-callable functions over its tables
 * (queue_jobs, queue_failed_jobs, queue_settings, queue_schedules).  Each
 * file holds one concern:
 *   contract.h  - the contract's defaults and limits, written once
 *   call.c      - the call context every SQL entry point builds first
 *   plans.c     - SPI statements, prepared once per backend and version
 *   hotpath.c   - index plans for the hot statements, whatever the statistics
 *   results.c   - reading SPI results, copying them to set results
 *   settings.c  - GUCs and the queue's clock
 *   args.c      - argument checks shared by every function
 *   errortext.c - cutting stored error text to its limit
 *   push.c      - queue_push (and the insert shared with batches, schedules)
 *   batch.c     - queue_push_many and the batch completions
 *   reserve.c   - queue_reserve: promotion, claim, in-server wait
 *   complete.c  - delete, release, fail, extend of one claimed job
 *   failed.c    - the failed table: count, rows, retry, forget
 *   reports.c   - queue_pending, queue_stats
 *   admin.c     - cancel, clear, pause, default lease, wake-ups, list
 *   grants.c    - the producer / worker / admin tiers
 *   wakeup.c    - NOTIFY wake-ups
 *   notifier.c  - shared memory: coalescing them for busy queues
 *   cron.c      - cron expressions (cron.h)
 *   schedules.c - recurring schedules and queue_tick
 *   ticker.c    - the background ticker (with shared_preload_libraries)
 *   shmem.c     - the shared memory segments, requested once
 *   waiting.c   - shared memory: queue_reserve's wait
 *   duehint.c   - shared memory: skipping the due-probe
 *   claimpos.c  - shared memory: where a queue's claims start their search
 *   ring.c      - the storage ring: partitions emptied by rotation (1.3)
 *   counters.c  - shared memory: jobs pushed, claimed, ... per queue (1.4)
 *   browse.c    - the dashboard's reads: overview, pages, one job, leases (1.4)
 *   flow.c      - flow control: holding jobs back and letting them go (1.5)
 *   dependencies.c - jobs pushed to wait for other jobs (1.5)
 *   concurrency.c  - concurrency limits, and what flow control holds back (1.5)
 *   ratelimit.c - rate limits per queue (1.5)
 * The SQL API itself is documented in README.md ("Functions").
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
#include "mb/pg_wchar.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "contract.h"

/* Room for a queue name in shared memory: JQ_QUEUE_NAME_MAX characters. */
#define JQ_QUEUE_NAME_BYTES (JQ_QUEUE_NAME_MAX * MAX_MULTIBYTE_CHAR_LEN + 1)

/*
 * The versions of the SQL API, as the install and upgrade scripts name
 * them.  A C entry point exists per SQL function and version whose
 * behaviour differs; it only says which version it serves.
 */
typedef enum JqApiVersion
{
	JQ_API_1_0,
	JQ_API_1_1,					/* deadlines, pause, default leases, wake-ups */
	JQ_API_1_2,					/* schedules, queue_reserve's wait */
	JQ_API_1_3,					/* the storage ring */
	JQ_API_1_4,					/* counters and the dashboard's reads */
	JQ_API_1_5,					/* flow control, shards */
	JQ_API_COUNT
} JqApiVersion;

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

/* settings.c */
extern int	jobqueue_max_payload_bytes;
extern void JobqueueDefineSettings(void);
extern TimestampTz QueueNow(void);
extern bool QueueClockShifted(void);
extern TimestampTz QueueTimeAfter(TimestampTz base, Interval *span);

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
	PLAN_KEY_LIMIT_OF,
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

/* Columns (1-based) of the rows a claim's UPDATE returns, a queue_job. */
typedef enum ClaimedColumn
{
	CLAIMED_ID = 1,
	CLAIMED_QUEUE,
	CLAIMED_NAME,
	CLAIMED_PAYLOAD,
	CLAIMED_ATTEMPTS,
	CLAIMED_MAX_ATTEMPTS,
	CLAIMED_PRIORITY,
	CLAIMED_TOKEN,
	CLAIMED_RESERVED_UNTIL,
	CLAIMED_CREATED_AT,
	CLAIMED_LAST_ERROR,
	CLAIMED_DEADLINE			/* since 1.1 */
} ClaimedColumn;

/* Columns of the claim candidates (PLAN_CLAIM_CANDIDATES and its _FROM, _BELOW). */
typedef enum ClaimCandidateColumn
{
	CANDIDATE_ID = 1,
	CANDIDATE_PRIORITY,
	CANDIDATE_AVAILABLE_AT,
	CANDIDATE_PARTITION,		/* since 1.3: its partition's relation id */
	CANDIDATE_RATE_LIMITED		/* since 1.5: its queue has a rate limit */
} ClaimCandidateColumn;

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
extern uint64 RunAloneFindingJob(const JqCall *call, QueuePlanId id, Datum *values,
								 const char *nulls, int expected);
extern int	CompareLeadingIds(const void *a, const void *b);

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
extern Interval *ArgInterval(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *ArgOptionalDelay(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *ArgOptionalLease(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *DefaultLease(void);
extern void CheckNonNegativeInterval(Interval *span, const char *argname);
extern void CheckLeaseInterval(Interval *span, const char *argname);
extern void CheckWaitInterval(Interval *span, const char *argname);
extern Jsonb *ArgPayload(FunctionCallInfo fcinfo, int argno, const char *argname);
extern void CheckPayload(Jsonb *payload, const char *argname);
extern int	ArgIdTokenArrays(FunctionCallInfo fcinfo, int64 **ids, int64 **tokens);

/* errortext.c */
extern text *ArgErrorText(FunctionCallInfo fcinfo, int argno);
extern text *CutErrorText(const char *message, int len);

/* push.c: one job to insert, as checked from a call's arguments */
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

extern void ClearJobSpecFlow(JobSpec *job);
extern OnDuplicate ParseOnDuplicate(const char *value, const char *argname);
extern bool ParseAfterFailed(const char *value, const char *argname);
extern void SetJobSpecParents(JobSpec *job, int64 *ids, int count, const char *argname);
extern void CheckJobSpecFlow(const JobSpec *job, TimestampTz now);
extern bool JobSpecUsesFlow(const JobSpec *job);

extern int64 InsertJob(const JqCall *call, const JobSpec *job, bool *inserted, bool *wake);
extern void CheckDeadline(TimestampTz deadline, TimestampTz available_at);
extern void NoteJobSpecDue(const JobSpec *job, TimestampTz now);
extern void NoteJobSpecClaimable(const JqCall *call, const JobSpec *job, int64 id);

/* shmem.c: the shared memory segments of the concerns that keep state there */
extern void RegisterSharedSegment(const char *name, Size size, void **pointer,
								  void (*fill) (void *segment));

/* counters.c: what happened to each queue's jobs, counted at commit (preload) */
typedef enum JobEvent
{
	JOB_PUSHED,					/* inserted by a push or a schedule */
	JOB_CLAIMED,				/* handed out by queue_reserve */
	JOB_COMPLETED,				/* deleted by its worker (queue_delete*) */
	JOB_RELEASED,				/* given back by queue_release* for another attempt */
	JOB_RETRIED,				/* requeued from the failed table (queue_retry_failed) */
	JOB_FAILED,					/* moved to the failed table, for any reason */
	JOB_EXPIRED,				/* its lease ran out before its worker finished */
	JOB_EVENT_KINDS
} JobEvent;
extern void JobqueueRequestCounters(void);
extern void CountJobs(text *queue, JobEvent event, int64 jobs);
extern void CountJobsOfRows(int column, JobEvent event);

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

/* hotpath.c: hot-path statements keep index plans whatever the statistics */
#define JQ_HOT_PATH_MARK "/* jobqueue hot path */ "
/* the same for statements that must read indexes but may sort (not hot path) */
#define JQ_INDEX_PLAN_MARK "/* jobqueue index plan */ "
extern void JobqueueInstallPlannerHook(void);

/* claimpos.c: where a queue's claims start their search (with preload) */
typedef struct ClaimPosition
{
	int32		priority;
	TimestampTz available_at;
	int64		id;
} ClaimPosition;

typedef struct ClaimStart
{
	int			slot;			/* -1: the queue has no position */
	uint64		incarnation;	/* of the slot, when read */
	uint64		generation;		/* of the queue's position when read */
	bool		from_position;	/* search from "at"; else from the head */
	ClaimPosition at;
} ClaimStart;

extern void JobqueueDefineClaimPositions(void);
extern void JobqueueRequestClaimPositions(void);
extern bool ClaimPositionsUsable(const JqCall *call);
extern bool ClaimPositionBefore(const ClaimPosition *a, const ClaimPosition *b);
extern void ReadClaimStart(text *queue, ClaimStart *start);
extern void IncludeOwnMoves(ClaimStart *start);
extern void NoteClaimed(const ClaimStart *start, const ClaimPosition *first,
						const ClaimPosition *last);
extern void NoteClaimable(text *queue, const ClaimPosition *position);

/* ring.c: the storage ring's partitions, emptied by rotation */
extern void JobqueueDefineRing(void);
extern void RotateRingIfDue(const JqCall *call);
extern JobTable RingJobTable(int ring);
extern JobTable PushTable(const JqCall *call, Datum *ring);
extern int	JobTablesToSearch(const JqCall *call, JobTable tables[3]);
extern void NoteJobFoundIn(JobTable table);
extern bool ClaimSearchTable(const JqCall *call, JobTable *table);
extern JobTable JobTableOfPartition(const JqCall *call, Oid relid);
extern uint64 ExecuteFindingJob(const JqCall *call, QueuePlanId id, Datum *values,
								const char *nulls, int expected, JobTable *found);

/* flow.c: holding jobs back and letting them go (1.5) */
typedef enum JobRemoval
{
	JOB_REMOVAL_FINISHED,		/* completed, or moved to the failed table */
	JOB_REMOVAL_COMPLETED,		/* completed (queue_delete, queue_delete_many) */
	JOB_REMOVAL_CANCELLED,		/* queue_cancel, queue_clear */
	JOB_REMOVAL_MOVED			/* a rotation moves rows between partitions */
} JobRemoval;
extern void JobqueueDefineFlow(void);
extern JobRemoval SetJobRemoval(JobRemoval removal);
extern bool TakeKeySlot(const JqCall *call, text *queue, text *key);
extern void RefillKeySlots(const JqCall *call, text *queue, text *key, int given_up);
extern void AdmitWaitingOfKeys(const JqCall *call, text *queue, text *key_prefix);
extern bool AdmitToFreeSlot(const JqCall *call, int64 id, text *queue, text *key);
extern void ReleaseChild(const JqCall *call, int64 id, text *queue, text *key);
extern void NoteJobMayRun(const JqCall *call, text *queue, const ClaimPosition *position,
						  bool ready, bool wants_wakeups);
extern void ChildrenParentDone(const JqCall *call, int64 parent, bool parent_failed);
extern void ChildrenFollowParent(const JqCall *call, int64 parent, bool cancelled);

/* dependencies.c: a pushed job that waits for its parents (1.5) */
extern int64 InsertChild(const JqCall *call, const JobSpec *job);

/* ratelimit.c: rate limits per queue (1.5) */
extern int	TakeRateLimitedClaims(const JqCall *call, Datum queue, int wanted,
								  TimestampTz *next_slot);

/* ticker.c: the background ticker, with shared_preload_libraries */
extern void JobqueueDefineTicker(bool preloading);

/* wakeup.c: NOTIFY on channel "jobqueue", payload the queue's name */
#define JQ_NOTIFY_CHANNEL "jobqueue"
extern void WakeQueue(text *queue);

/* notifier.c: coalesced NOTIFY, with shared_preload_libraries */
extern void JobqueueDefineNotifier(bool preloading);
extern void NotifyQueueListeners(const char *queue);
extern bool QueueWantsWakeups(const JqCall *call, text *queue);
extern List *AddWakeQueue(List *queues, text *queue);
extern void WakeQueuesThatWantIt(const JqCall *call, List *queues);

/* complete.c: finishing one claimed job, shared with the batch calls */
extern bool MoveClaimedToFailed(const JqCall *call, int64 id, int64 token, text *error);
extern bool ReleaseClaimed(const JqCall *call, int64 id, int64 token, Interval *delay,
						   text *error, text **due_queue);
extern void ArgIdAndToken(FunctionCallInfo fcinfo, int64 *id, int64 *token);

#endif							/* JOBQUEUE_H */
