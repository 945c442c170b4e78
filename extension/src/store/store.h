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

#include "access/genam.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/*
 * The words of the statements on the job tables (each file's statements are
 * beside it; these are what several of them say alike).  "@S@" stands for
 * the extension's schema, "@J@" for the job table (statements.c).
 */
/* A contract number quoted into SQL text. */
#define SQL_NUMBER(n) CppAsString2(n)

/* Columns copied when a job moves to the failed table. */
#define FAILED_COLUMNS \
	"id, job_id, queue, name, payload, priority, attempts, max_attempts, " \
	"error, failed_at, created_at"

/* Held by a claim (live when available_at, the lease's end, is ahead). */
#define HELD "(NOT ready AND token IS NOT NULL)"

/*
 * The three states of a job at time "now" (a statement's parameter), as
 * docs/sql-api.md defines them for queue_stats: reserved = held by a live lease;
 * delayed = not held, due later; pending = the rest (due now, including
 * jobs whose lease ran out).  Every statement that tells the states apart
 * (the reports, the dashboard's reads in browse.c) says it with these.
 */
#define IS_PENDING(now) "(available_at <= " now ")"

#define IS_DELAYED(now) "(available_at > " now " AND NOT " HELD ")"

#define IS_RESERVED(now) "(available_at > " now " AND " HELD ")"

/* The backlog per queue at time $1. */
#define BACKLOG_COUNTS \
	"SELECT queue," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_PENDING("$1") ") AS pending," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_DELAYED("$1") ") AS delayed," \
	"  pg_catalog.count(*) FILTER (WHERE " IS_RESERVED("$1") ") AS reserved," \
	"  pg_catalog.count(*) AS total" \
	" FROM @J@ GROUP BY queue"

/*
 * The ready flag as a re-check of rows found another way (by id, by
 * deadline).  Written "IS TRUE" / "IS FALSE", which is the same for a NOT
 * NULL column, so that the partial indexes on ready (claim order, waiting
 * jobs) cannot serve these statements: a generic plan made while the
 * table was empty would otherwise be as likely to walk a whole queue in
 * one of them as to take the primary key or the deadline index.
 */
#define STILL_READY "ready IS TRUE"

#define STILL_WAITING "ready IS FALSE"

/*
 * True unless the queue's settings turn wake-ups off; $1 is the queue.  A
 * scalar subquery on queue_settings' primary key (one row at most), not
 * NOT EXISTS: the planner may answer an EXISTS of a row's column with a
 * hash of the whole table built for each statement, and from PostgreSQL 18,
 * where a disabled sequential scan costs no more, it does when the
 * statement expects a few rows.
 */
#define WANTS_WAKEUPS WANTS_WAKEUPS_OF("$1")

#define WANTS_WAKEUPS_OF(queue) \
	"(SELECT s.notify FROM @S@.queue_settings s WHERE s.queue = " queue ") IS NOT FALSE"

#define PUSH_INTO_RING_COLUMNS ", id, ring"

#define NEXT_JOB_ID_VALUE "pg_catalog.nextval('@S@.queue_jobs_id_seq')"

#define NEXT_JOB_ID ", " NEXT_JOB_ID_VALUE

/*
 * The concurrency limit of a key in a queue: the one set for its longest
 * prefix there, else the contract's.
 */
#define KEY_LIMIT(queue, key) \
	"coalesce((SELECT l.max_running FROM @S@.queue_key_limits l" \
	"  WHERE l.queue = " queue " AND pg_catalog.starts_with(" key ", l.key_prefix)" \
	"  ORDER BY pg_catalog.length(l.key_prefix) DESC LIMIT 1), " \
	SQL_NUMBER(JQ_DEFAULT_MAX_RUNNING) ")"

/*
 * A job held back by flow control waits out of every index range a claim
 * or the due search reads: not ready, due at infinity (flow.c).
 */
#define HELD_BACK_AT "'infinity'::pg_catalog.timestamptz"

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
extern int	JobPartitionsToSearch(const JqCall *call, JobTable tables[3], Oid relids[3]);
extern void NoteJobFoundIn(JobTable table);
extern bool ClaimSearchTable(const JqCall *call, JobTable *table);
extern int	ClaimSearchPartitions(const JqCall *call, JobTable tables[3], Oid relids[3]);
extern JobTable JobTableOfPartition(const JqCall *call, Oid relid);
extern uint64 ExecuteFindingJob(const JqCall *call, JqStatement *statement, Datum *values,
								const char *nulls, int expected, JobTable *found);
extern uint64 RunAloneFindingJob(const JqCall *call, JqStatement *statement, Datum *values,
								 const char *nulls, int expected);

/* store.c */
extern void JqStoreInit(void);

/* store.c */
extern bool PartitionWritableDirectly(const JqCall *call, Relation rel, CmdType event);

/*
 * store/shape.c: what a job partition is made of, for the direct paths.
 * The columns they read or set, by name in shape.c.
 */
typedef enum JobColumn
{
	JOB_COL_ID, JOB_COL_QUEUE, JOB_COL_NAME, JOB_COL_PAYLOAD, JOB_COL_PRIORITY,
	JOB_COL_MAX_ATTEMPTS, JOB_COL_AVAILABLE_AT, JOB_COL_READY, JOB_COL_CREATED_AT,
	JOB_COL_DEADLINE, JOB_COL_RING, JOB_COL_ATTEMPTS, JOB_COL_TOKEN,
	JOB_COL_RESERVED_UNTIL, JOB_COL_RESERVED_BY, JOB_COL_LAST_ERROR,
	/* flow control's (1.5): absent from the partitions of a 1.3 or 1.4 schema */
	JOB_COL_CONCURRENCY_KEY, JOB_COL_FLOW, JOB_COL_PARKED_RUN_AT, JOB_COL_HAS_CHILDREN,
	NUM_JOB_COLUMNS
} JobColumn;

/* The columns every job partition has (1.3 on). */
#define NUM_CORE_JOB_COLUMNS JOB_COL_CONCURRENCY_KEY

/* An index of a partition, known to the direct writes: its predicate made once (NULL: not partial). */
typedef struct KeptIndex
{
	Oid			index;
	ExprState  *predicate;
	Bitmapset  *columns;		/* those the predicate reads (pull_varattnos) */
	IndexInfo  *checked_info;	/* its description, without the predicate (KeepIndex) */
} KeptIndex;

/*
 * Which of a job partition's indexes the last row a write of the backend
 * looked at needed, and that row's values in the columns the indexes'
 * predicates read (row_indexes.c): kept with the partition's shape, in
 * its memory, so that the next write's row of the same kind (the next
 * push) needs no predicate evaluated.
 */
typedef struct IndexChoice
{
	MemoryContext context;		/* the shape's */
	int			index_count;	/* the partition's indexes, in RelationGetIndexList's order */
	Oid		   *index_oids;
	const KeptIndex **kept;		/* by position, each known when the columns are found */
	int			column_count;	/* -1: not found yet; 0: each row looked at alone */
	AttrNumber *columns;		/* those the predicates read */
	Datum	   *values;			/* the remembered row's */
	bool	   *nulls;
	bool	   *needs;			/* by position: whether the remembered row has an entry */
	uint64		remembered;		/* which remembering (0: none; see RememberChoice) */
} IndexChoice;

typedef struct PartitionShape
{
	Oid			relid;			/* InvalidOid: not read yet, or forgotten */
	int			natts;
	AttrNumber	attnum[NUM_JOB_COLUMNS];	/* 0: the partition has no such column */
	/* a push: every pushed column there, and constants for the others' defaults */
	bool		push_usable;
	Datum	   *defaults;		/* per attribute, in context */
	bool	   *default_nulls;
	/* the ring a plain push into it was found within its partition bound (-2: none yet) */
	int			bound_checked_ring;
	/* an update without a plan: every column there, no stored generated column */
	bool		update_usable;
	/* a claim: that, and the claim index */
	bool		claim_usable;
	Oid			claim_index;
	/* its first column: the queue's hash (1.7: hashtext(queue) under that collation), or the queue */
	bool		claim_by_hash;
	Oid			claim_hash_collation;
	/* a key's slot handed on (1.5): the index of the jobs waiting for a slot, and the flow columns */
	bool		admit_usable;
	Oid			key_waiting_index;
	List	   *indexes;		/* of KeptIndex: those a write has needed (KeepIndex) */
	IndexChoice choice;			/* the last row's indexes (row_indexes.c) */
	MemoryContext context;		/* emptied each time the shape is read again */
} PartitionShape;

extern const PartitionShape *ShapeOf(JobTable table, Relation rel);
extern void NoteBoundChecked(JobTable table, int ring);
extern IndexChoice *ShapeIndexChoice(JobTable table, Relation rel);
extern const KeptIndex *KeptIndexOf(JobTable table, Oid index);
extern const KeptIndex *KeepIndex(JobTable table, Relation index);
extern void SetJobColumn(TupleTableSlot *slot, const PartitionShape *shape, JobColumn column,
						 Datum value, bool isnull);
extern Datum JobColumnValue(TupleTableSlot *slot, const PartitionShape *shape, JobColumn column,
							bool *isnull);

/* store/settings_row.c: a queue's row of queue_settings (defaults without one) */
typedef struct QueueSettingsRow
{
	bool		notify;
	bool		paused;
	bool		rate_limited;	/* 1.5: rate_max is set */
	bool		has_default_lease;
	Interval	default_lease;
} QueueSettingsRow;

extern void KeptQueueSettings(const JqCall *call, text *queue, Snapshot snapshot,
							  QueueSettingsRow *settings);
extern bool KeptQueueWantsWakeups(const JqCall *call, text *queue, Snapshot snapshot);
extern void ForgetQueueSettingsAtCommit(const JqCall *call);

/* store/direct_insert.c: plain pushes without a plan */
extern bool JobSpecIsPlain(const JobSpec *job);
extern bool InsertJobsDirectly(const JqCall *call, const JobSpec *jobs, int count, JobTable table,
							   int16 ring, int64 *ids, bool *wake);

/* store/direct_write.c: what every write without a plan shares */
typedef struct PartitionWrite
{
	EState	   *estate;			/* NULL: not begun */
	ResultRelInfo *result;		/* its indexes: those the row at hand needs (UseIndexesOfRow) */
	JobTable	table;
	int			index_count;	/* the partition's indexes, opened when a row first needs one */
	Oid		   *index_oids;
	Relation   *opened;			/* NULL: not opened yet */
	IndexInfo **infos;
	/* which indexes a row needs (row_indexes.c) */
	const KeptIndex **kept;		/* NULL: not known (yet) */
	bool	   *needs;			/* by position: whether the row at hand has an entry there */
	IndexChoice *choice;		/* the partition shape's; NULL: none (queue_failed_jobs) */
	uint64		applied;		/* the choice's remembering the result's indexes are (0: none) */
} PartitionWrite;

extern bool TextsEqual(text *a, text *b);
extern bool TextIs(text *value, const char *expected);
extern Snapshot BeginStatementSnapshot(void);
extern void EndStatementSnapshot(Snapshot snapshot);
extern void BeginPartitionWrite(PartitionWrite *write, JobTable table, Relation rel,
								Snapshot snapshot, CmdType event);
extern void InsertRowIndexEntries(PartitionWrite *write, TupleTableSlot *slot, bool update,
								  bool summarizing_only);
extern void UpdateLockedRow(PartitionWrite *write, TupleTableSlot *locked,
							TupleTableSlot *updated);
extern TM_Result UpdatePartitionRow(PartitionWrite *write, Relation rel, ItemPointer tid,
									TupleTableSlot *updated, Snapshot snapshot, bool wait);
extern TM_Result LockRowAsExecutor(Relation rel, ItemPointer tid, Snapshot snapshot,
								   TupleTableSlot *slot, LockTupleMode mode, LockWaitPolicy wait);
pg_noreturn extern void ReportConcurrentChange(TM_Result result);
pg_noreturn extern void ReportMovedRow(void);
extern void EndPartitionWrite(PartitionWrite *write);

/* store/row_indexes.c: the indexes a row has entries in */
extern void BeginRowIndexes(PartitionWrite *write, Relation rel);
extern void UseIndexesOfRow(PartitionWrite *write, TupleTableSlot *slot);

/* store/direct_delete.c: completions without the executor */
typedef enum DirectOutcome
{
	DIRECT_DONE,				/* deleted */
	DIRECT_NOT_FOUND,			/* no row of the job holds the token */
	DIRECT_USE_STATEMENT		/* nothing changed: run the statement */
} DirectOutcome;
/* store/claimed_row.c: a claimed job's row found by id and token, in each partition */
typedef enum ClaimedPartitionState
{
	CLAIMED_PARTITION_NOT_OPEN,
	CLAIMED_PARTITION_OPEN,
	CLAIMED_PARTITION_LEFT_TO_STATEMENT /* the direct way may not write it */
} ClaimedPartitionState;

typedef struct ClaimedPartition
{
	const JqCall *call;
	CmdType		event;			/* the writes it is opened for */
	JobTable	table;
	Oid			relid;
	ClaimedPartitionState state;
	/* once open: */
	Relation	rel;
	const PartitionShape *shape;
	Relation	primary_key;
	IndexScanDesc by_id;		/* its scan, begun at the first look-up, NULL until then */
	TupleTableSlot *slot;		/* the row found, or locked */
	TupleTableSlot *updated;	/* a change's new version (direct_update.c), NULL until made */
	PartitionWrite write;		/* begun at its first change */
} ClaimedPartition;

extern bool BeginClaimedPartitions(const JqCall *call, CmdType event,
								   ClaimedPartition partitions[3], Snapshot *snapshot);
extern bool ClaimedPartitionOpen(ClaimedPartition *partition);
extern void EndClaimedPartitions(ClaimedPartition partitions[3], Snapshot snapshot);
extern bool FindClaimedRow(ClaimedPartition *partition, int64 id, int64 token, Snapshot snapshot);
extern ClaimedPartition *PartitionHoldingClaim(ClaimedPartition partitions[3], int64 id,
											   int64 token, Snapshot snapshot,
											   DirectOutcome *outcome);
extern void LookUpClaimedRows(ClaimedPartition *partition, const int64 *ids, int count,
							  Snapshot snapshot);
extern bool NextLookedUpRow(ClaimedPartition *partition, int64 *id);
extern bool RowHoldsToken(ClaimedPartition *partition, int64 token);
extern DirectOutcome LockClaimedRow(ClaimedPartition *partition, ItemPointer tid,
									Snapshot snapshot, int64 token, LockTupleMode mode);
extern bool EarlierPairDone(const int64 *ids, const DirectOutcome *outcomes, int k);

/*
 * store/direct_update.c: claimed jobs changed by id and token.  decide
 * sets the columns of the new version ("updated", a copy of "row") of the
 * job of pair "pair" (its index in the ids given) or returns false to leave
 * the job to the statements.
 */
typedef struct ClaimedChange
{
	bool		(*decide) (TupleTableSlot *row, TupleTableSlot *updated,
						   const PartitionShape *shape, int pair, void *arg);
	void	   *arg;
} ClaimedChange;

extern DirectOutcome UpdateClaimedDirectly(const JqCall *call, int64 id, int64 token,
										   const ClaimedChange *change);
extern bool UpdateClaimedManyDirectly(const JqCall *call, int count, const int64 *ids,
									  const int64 *tokens, const ClaimedChange *change,
									  DirectOutcome *outcomes);

/* The columns of queue_failed_jobs a failure writes (direct_delete.c) */
typedef enum FailedColumn
{
	FAILED_ID, FAILED_JOB_ID, FAILED_QUEUE, FAILED_NAME, FAILED_PAYLOAD, FAILED_PRIORITY,
	FAILED_ATTEMPTS, FAILED_MAX_ATTEMPTS, FAILED_ERROR, FAILED_FAILED_AT, FAILED_CREATED_AT,
	NUM_FAILED_COLUMNS
} FailedColumn;

/* The error a failure records when the worker gave none and none was recorded before. */
#define FAILED_WITHOUT_ERROR "failed by the worker (no error given)"

extern bool FailJobsDirectly(const JqCall *call, int count, const int64 *ids,
							 const int64 *tokens, text *error, TimestampTz failed_at,
							 DirectOutcome *outcomes, text **queues);

extern bool DeleteJobsDirectly(const JqCall *call, int count, const int64 *ids,
							   const int64 *tokens, DirectOutcome *outcomes, text **queues,
							   text **slot_keys);


/*
 * store/direct_claim.c: a claim without the executor.  A job's place in
 * claim order (priority first, then due time, then id), the columns of a
 * claimed job as queue_reserve returns it (a queue_job, 1-based) and what
 * a claim asks for.
 */
typedef struct JobOrder
{
	int32		priority;
	TimestampTz available_at;
	int64		id;
} JobOrder;

/*
 * store/direct_write.c: one partition's ordered index scan, merged with the
 * other partitions' (a claim's, a key's waiting jobs), and its updates.
 */
typedef struct PartitionScan
{
	JobTable	table;
	Relation	rel;
	const PartitionShape *shape;
	Relation	index;			/* NULL: not begun (OpenPartitionScan) */
	IndexScanDesc scan;
	TupleTableSlot *found;		/* the row the scan is on */
	bool		has_next;
	JobOrder	next;			/* that row's place in the merge's order */
	TupleTableSlot *locked;		/* the row as locked */
	TupleTableSlot *updated;	/* its new version */
	PartitionWrite write;		/* begun at its first update */
} PartitionScan;

extern bool JobOrderBefore(const JobOrder *a, const JobOrder *b);
extern void OpenPartitionScan(PartitionScan *scan, Oid index);
extern void StartPartitionScan(PartitionScan *scan, Snapshot snapshot, ScanKey keys, int nkeys);
extern int	NextInOrder(const PartitionScan *scans, int count);
extern void ClosePartitionScans(PartitionScan *scans, int count);

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
	CLAIMED_DEADLINE,			/* since 1.1 */
	NUM_CLAIMED_COLUMNS = CLAIMED_DEADLINE
} ClaimedColumn;

typedef struct ClaimRequest
{
	text	   *queue;
	int			limit;
	bool		from_position;	/* search from "from" within its priority, then below */
	JobOrder	from;
	Interval   *lease;			/* NULL: the queue's default lease */
	text	   *worker;
	int64		token_base;		/* added to each token (the timeline's, reserve.c) */
} ClaimRequest;

typedef struct ClaimedJob
{
	Datum		values[NUM_CLAIMED_COLUMNS];	/* ClaimedColumn - 1 */
	bool		nulls[NUM_CLAIMED_COLUMNS];
	JobOrder	order;			/* where it was in claim order */
} ClaimedJob;

extern DirectOutcome ClaimJobsDirectly(const JqCall *call, const ClaimRequest *request,
									   ClaimedJob **claimed, int *count);

/*
 * store/direct_slots.c: a key's slot handed on without the executor.  A
 * job let take a slot: its new place in claim order (due at its run-at)
 * and whether it is ready.
 */
typedef struct AdmittedJob
{
	JobOrder	order;
	bool		ready;
} AdmittedJob;

extern DirectOutcome LockKeySlotsDirectly(const JqCall *call, text *queue, text *key,
										  int32 *running, int32 *limit);
extern DirectOutcome AdmitWaitingDirectly(const JqCall *call, text *queue, text *key, int count,
										  AdmittedJob *admitted, int *admitted_count,
										  bool *wants_wakeups);

#endif							/* JOBQUEUE_STORE_H */
