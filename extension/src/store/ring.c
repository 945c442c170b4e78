/*-------------------------------------------------------------------------
 *
 * ring.c
 *	  The storage ring (1.3): a backlog that is emptied, not vacuumed.
 *
 * Every job is inserted, updated and deleted, so queue_jobs churns; while
 * an old snapshot is held anywhere in the database VACUUM may not remove
 * what the churn leaves, and a burst faster than autovacuum grows the
 * table for good.  So since 1.3 queue_jobs is partitioned by "ring":
 *
 *   ring 0, ring 1 - new jobs go to partition
 *                    (epoch seconds / jobqueue.ring_period) % 2, so pushes
 *                    change partition every period;
 *   ring -1 (long) - jobs kept out of the ring: every job with a unique key
 *                    (its unique index must see every holder of a key), and
 *                    jobs a rotation found due or held more than a period
 *                    ahead.  Vacuumed as before.
 *
 * A rotation empties the ring partition pushes are not going to: it moves
 * the partition's few live jobs (ids, tokens, leases and all unchanged) to
 * the other ring partition, or to long if their moment is more than a
 * period away, and then TRUNCATEs it, which leaves no dead rows behind
 * whatever snapshot is held.  It runs from queue_tick() (the background
 * ticker, or workers), never from a claim.
 *
 * TRUNCATE needs an ACCESS EXCLUSIVE lock, and every statement on
 * queue_jobs locks every partition.  The rotation asks for it with a short
 * lock timeout (jobqueue.ring_lock_timeout), so that a claim or a push
 * queued behind the request waits at most that long, and gives up
 * ("busy") while any transaction holds a lock on the partition (one that
 * is still open after reading or writing queue_jobs); the next tick tries
 * again.  Moving and truncating happen under that lock, in one step: no
 * worker waits on a row the rotation holds, and a statement that queued
 * behind the lock takes its snapshot after the rotation commits (locks are
 * taken before the snapshot), so it finds the moved jobs.  Only a
 * REPEATABLE READ transaction whose snapshot is older than a rotation and
 * that reads queue_jobs for the first time after it misses the moved jobs:
 * TRUNCATE is not MVCC-safe.
 *
 * A statement on the partitioned table starts every partition's scan (and,
 * for UPDATE and DELETE, every partition's result relation): several
 * times the cost of the same statement on one table, for the statements
 * that find one job by id.  Those look in one partition at a time instead,
 * the likeliest first (ExecuteFindingJob), holding a lock on every
 * partition meanwhile so that no rotation moves the job between the looks.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(jobqueue_current_ring);
PG_FUNCTION_INFO_V1(jobqueue_rotate);

static int	ring_period_seconds = JQ_DEFAULT_RING_PERIOD_SECONDS;
static int	ring_lock_timeout_ms = JQ_DEFAULT_RING_LOCK_TIMEOUT_MS;

/*
 * After a rotation found its partition busy (or too full), this backend's
 * rotations that pick their partition by time (queue_tick) wait this part
 * of a period before trying again: each lock request makes the claims
 * behind it wait up to the lock timeout, and a long transaction that holds
 * the lock is not gone a second later.
 */
#define BUSY_BACKOFF_PARTS 4
static TimestampTz busy_until = 0;

/* Rotations of one database take turns (advisory lock class of the ring). */
#define RING_LOCK_CLASS 3

/* Columns of PLAN_RING_MOVE's result. */
enum
{
	MOVED_QUEUE = 1, MOVED_PRIORITY, MOVED_AVAILABLE_AT, MOVED_ID, MOVED_READY
};

/* The ring slot of a wall-clock time: which period it falls in. */
static int64
RingSlotAt(TimestampTz time)
{
	return (time / USECS_PER_SEC) / ring_period_seconds;
}

/* The ring partition pushes go to at a wall-clock time. */
static int
RingAt(TimestampTz time)
{
	return (int) (RingSlotAt(time) % JQ_RING_PARTITIONS);
}

/*
 * queue_current_ring() returns the ring partition new jobs go to now: the
 * default of queue_jobs.ring.  The wall clock, not the queue's (a shifted
 * test clock must not move storage).
 */
Datum
jobqueue_current_ring(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT16((int16) RingAt(GetCurrentTimestamp()));
}

/*
 * Where a push of the call inserts its jobs without unique key: since 1.3
 * the ring partition pushes go to now, whose ring is set in *ring (the
 * push's own parameter); before, queue_jobs.
 */
JobTable
PushTable(const JqCall *call, Datum *ring)
{
	int			current = RingAt(GetCurrentTimestamp());

	*ring = Int16GetDatum((int16) current);
	return JqCallSince(call, JQ_API_1_3) ? RingJobTable(current) : JOBS_ALL;
}

/* The job table of a partition, by its ring (JQ_RING_LONG: the long one). */
JobTable
RingJobTable(int ring)
{
	return ring == JQ_RING_LONG ? JOBS_LONG : ring == 0 ? JOBS_RING0 : JOBS_RING1;
}

/*
 * The partition this backend last found a job by id in: a worker's jobs
 * come in runs from one partition (a backlog pushed in one period), so the
 * next look starts there.
 */
static JobTable last_found = JOBS_ALL;

/*
 * The partitions of the call's queue_jobs, the one this backend last found
 * a job in first, then the one pushes go to now,
 * each locked (ACCESS SHARE, as any statement on queue_jobs would) so that
 * no rotation moves a job among them before this transaction ends; their
 * relation ids in relids, when given.  false for a schema before 1.3,
 * which has one table.
 */
static bool
LockJobPartitions(const JqCall *call, JobTable order[3], Oid *relids)
{
	int			current = RingAt(GetCurrentTimestamp());

	order[0] = RingJobTable(current);
	order[1] = RingJobTable((current + 1) % JQ_RING_PARTITIONS);
	order[2] = JOBS_LONG;
	for (int i = 1; i < 3; i++)
		if (order[i] == last_found)
		{
			order[i] = order[0];
			order[0] = last_found;
		}
	for (int i = 0; i < 3; i++)
	{
		Oid			relid = get_relname_relid(JobTableName(order[i]), call->schema);

		if (!OidIsValid(relid))
			return false;
		LockRelationOid(relid, AccessShareLock);
		if (relids != NULL)
			relids[i] = relid;
	}
	return true;
}

/* The job table of one of the call's partitions, by relation id (else JOBS_ALL). */
JobTable
JobTableOfPartition(const JqCall *call, Oid relid)
{
	for (JobTable t = JOBS_RING0; t < NUM_JOB_TABLES; t++)
		if (get_relname_relid(JobTableName(t), call->schema) == relid)
			return t;
	return JOBS_ALL;
}

/*
 * Where a claim of a 1.3 schema searches: the only partition with pages,
 * or JOBS_ALL when several have some; false when none has any (nothing to
 * claim).  A partition is empty for a while after each rotation, and the
 * long one unless unique keys or long delays are used; a search of
 * queue_jobs starts a scan of every partition, a search of one partition
 * only its own.  A push into an empty partition that commits after this
 * look is found by the next claim (its commit moves the claim position back
 * to it); one that committed before has extended the partition already.
 */
bool
ClaimSearchTable(const JqCall *call, JobTable *table)
{
	JobTable	order[3];
	Oid			relids[3];
	int			with_pages = 0;

	*table = JOBS_ALL;
	if (!LockJobPartitions(call, order, relids))
		return true;
	for (int i = 0; i < 3; i++)
	{
		Relation	rel = RelationIdGetRelation(relids[i]);

		if (RelationGetNumberOfBlocks(rel) > 0)
		{
			with_pages++;
			*table = order[i];
		}
		RelationClose(rel);
	}
	if (with_pages > 1)
		*table = JOBS_ALL;
	return with_pages > 0;
}

/* A job was found by id in table (the next look starts there). */
void
NoteJobFoundIn(JobTable table)
{
	last_found = table;
}

/*
 * The tables to look for jobs by id in, in order (see LockJobPartitions);
 * returns how many: 3 partitions, or (before 1.3) queue_jobs alone.
 */
int
JobTablesToSearch(const JqCall *call, JobTable tables[3])
{
	if (LockJobPartitions(call, tables, NULL))
		return 3;
	tables[0] = JOBS_ALL;
	return 1;
}

/*
 * Run a statement that finds jobs by id ("@J@" naming the job table) on
 * each partition in turn until it finds some; *found says where.  Returns
 * SPI_processed.  Must be called between SPI_connect and SPI_finish.
 */
uint64
ExecuteFindingJob(const JqCall *call, QueuePlanId id, Datum *values, const char *nulls,
				  int expected, JobTable *found)
{
	JobTable	order[3];

	*found = JOBS_ALL;
	if (!LockJobPartitions(call, order, NULL))
	{
		QueueExecute(call, id, values, nulls, expected);
		return SPI_processed;
	}
	for (int i = 0; i < 3; i++)
	{
		QueueExecuteOn(call, id, order[i], values, nulls, expected);
		if (SPI_processed > 0)
		{
			*found = last_found = order[i];
			return SPI_processed;
		}
	}
	return 0;
}

/* What one rotation did, as queue_rotate returns it. */
typedef struct RingRotation
{
	int			ring;
	int64		moved;
	bool		truncated;
	const char *outcome;
} RingRotation;

static Oid
RingPartition(const JqCall *call, int ring)
{
	char	   *name = psprintf("queue_jobs_ring%d", ring);
	Oid			relid = get_relname_relid(name, call->schema);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobqueue: partition \"%s\" does not exist", name),
				 errhint("ALTER EXTENSION jobqueue UPDATE to 1.3 or later.")));
	return relid;
}

static bool
PartitionHasPages(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		has_pages = RelationGetNumberOfBlocks(rel) > 0;

	table_close(rel, AccessShareLock);
	return has_pages;
}

/* Whether another session of this database is rotating now (else: our turn). */
static bool
OtherRotationRunning(void)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, RING_LOCK_CLASS);
	return LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Whether a pg_dump is connected to this database.  pg_dump takes its
 * snapshot before its locks: a rotation committed in between would move
 * jobs its snapshot cannot see out of a partition it then reads empty
 * (TRUNCATE is not MVCC-safe), and the dump would lose them.
 */
static bool
DumpRunning(void)
{
	if (SPI_execute("SELECT 1 FROM pg_catalog.pg_stat_activity"
					" WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()"
					"   AND application_name OPERATOR(pg_catalog.=) 'pg_dump'"
					"   AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "jobqueue: could not look for a running pg_dump");
	return SPI_processed > 0;
}

/*
 * The partition's ACCESS EXCLUSIVE lock, waiting at most the ring's lock
 * timeout; false if it was not granted in time.  Any other error is raised.
 */
static bool
LockPartitionBriefly(Oid relid)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			nest_level;
	volatile bool granted = true;

	BeginInternalSubTransaction(NULL);
	nest_level = NewGUCNestLevel();
	(void) set_config_option("lock_timeout", psprintf("%d", ring_lock_timeout_ms),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		LockRelationOid(relid, AccessExclusiveLock);
		AtEOXact_GUC(true, nest_level);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		AtEOXact_GUC(false, nest_level);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		/* another error (a cancel, statement_timeout): raised outside the subtransaction */
		if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(error);
		FreeErrorData(error);
		granted = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	return granted;
}

/*
 * Move every job of ring partition "ring" forward (to "to", or to long when
 * it is not held and due more than a period after the call's now: a held
 * job is usually done within moments, whatever its lease) and truncate it.
 * The lock is held; the moved claimable jobs are noted for claim positions.
 */
static int64
MoveAndTruncate(const JqCall *call, int ring, int to)
{
	Datum		args[2];
	uint64		moved;
	JqCall		move_call = *call;
	JobRemoval	removal;

	/* every column the installed schema has moves, whichever call rotates */
	move_call.version = InstalledApiVersion();
	args[0] = Int16GetDatum((int16) to);
	args[1] = TimestampTzGetDatum(call->now + (int64) ring_period_seconds * USECS_PER_SEC);
	/* the rows only move: flow control (flow.c) must not see jobs leave */
	removal = SetJobRemoval(JOB_REMOVAL_MOVED);
	QueueExecuteOn(&move_call, PLAN_RING_MOVE, RingJobTable(ring), args, NULL,
				   SPI_OK_INSERT_RETURNING);
	SetJobRemoval(removal);
	moved = SPI_processed;
	for (uint64 row = 0; row < moved; row++)
	{
		ClaimPosition position;

		if (!SpiBool(row, MOVED_READY))
			continue;
		position.priority = SpiInt32(row, MOVED_PRIORITY);
		position.available_at = SpiTimestampTz(row, MOVED_AVAILABLE_AT);
		position.id = SpiInt8(row, MOVED_ID);
		NoteClaimable(SpiTextCopy(row, MOVED_QUEUE), &position);
	}
	if (SPI_execute(psprintf("TRUNCATE %s.queue_jobs_ring%d", call->quoted_schema, ring),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "jobqueue: TRUNCATE of ring partition %d failed", ring);
	return (int64) moved;
}

/*
 * Rotate ring partition "ring" (-1: the one pushes are not going to now,
 * once half a period has passed since they stopped going there).  Must be
 * called between SPI_connect and SPI_finish.
 */
static RingRotation
RotateRing(const JqCall *call, int ring)
{
	RingRotation result = {ring, 0, false, NULL};
	TimestampTz wall = GetCurrentTimestamp();
	int			current = RingAt(wall);
	Oid			relid;

	if (ring < 0)
	{
		int64		period = (int64) ring_period_seconds * USECS_PER_SEC;

		result.ring = (current + 1) % JQ_RING_PARTITIONS;
		if ((wall % period) * 2 < period)
		{
			result.outcome = "not due";
			return result;
		}
		if (wall < busy_until)
		{
			result.outcome = "busy";
			return result;
		}
	}
	relid = RingPartition(call, result.ring);
	if (!PartitionHasPages(relid))
		result.outcome = "empty";
	else if (OtherRotationRunning() || DumpRunning())
		result.outcome = "busy";
	else
	{
		QueueExecuteOn(call, PLAN_RING_LIVE_JOBS, RingJobTable(result.ring), NULL, NULL,
					   SPI_OK_SELECT);
		if (SpiInt8(0, 1) > JQ_RING_MOVE_MAX)
			result.outcome = "too many";
		else if (!LockPartitionBriefly(relid))
			result.outcome = "busy";
		if (result.outcome != NULL)
			busy_until = wall + (int64) ring_period_seconds * USECS_PER_SEC / BUSY_BACKOFF_PARTS;
		else
		{
			int			to = result.ring == current ? (current + 1) % JQ_RING_PARTITIONS : current;

			result.moved = MoveAndTruncate(call, result.ring, to);
			result.truncated = true;
			result.outcome = "truncated";
		}
	}
	return result;
}

/*
 * From queue_tick (1.3): rotate if it is time.  Not in a transaction block
 * (BEGIN ... COMMIT): the rotation's lock would be held, and every claim
 * kept waiting, until that transaction ends.  Between SPI_connect and
 * SPI_finish.
 */
void
RotateRingIfDue(const JqCall *call)
{
	if (!IsTransactionBlock())
		(void) RotateRing(call, -1);
}

/*
 * queue_rotate(ring integer DEFAULT NULL) returns (rotated, moved, truncated,
 * outcome): one rotation now, of the given ring partition (0 or 1), or of
 * the one pushes are not going to if that is due (NULL).
 */
Datum
jobqueue_rotate(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int			ring = -1;
	RingRotation rotation;
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_3);
	if (!PG_ARGISNULL(0))
	{
		ring = PG_GETARG_INT32(0);
		if (ring < 0 || ring >= JQ_RING_PARTITIONS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"ring\" must be 0 or 1, or NULL for the partition due"),
					 errdetail("It was %d.", ring)));
	}
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "jobqueue: queue_rotate must return a row");

	SPI_connect();
	rotation = RotateRing(&call, ring);
	SPI_finish();

	values[0] = Int32GetDatum(rotation.ring);
	values[1] = Int64GetDatum(rotation.moved);
	values[2] = BoolGetDatum(rotation.truncated);
	values[3] = CStringGetTextDatum(rotation.outcome);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* From _PG_init. */
void
JobqueueDefineRing(void)
{
	DefineCustomIntVariable("jobqueue.ring_period",
							"How long pushes fill one partition of the storage ring.",
							"A rotation empties the other partition once half a period has passed.",
							&ring_period_seconds, JQ_DEFAULT_RING_PERIOD_SECONDS,
							JQ_RING_PERIOD_MIN_SECONDS, JQ_RING_PERIOD_MAX_SECONDS,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("jobqueue.ring_lock_timeout",
							"How long a rotation waits for its lock before trying again later.",
							"Claims and pushes queued behind the rotation wait at most about this long.",
							&ring_lock_timeout_ms, JQ_DEFAULT_RING_LOCK_TIMEOUT_MS, 1, 10000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
}
