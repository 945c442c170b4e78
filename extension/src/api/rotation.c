/*-------------------------------------------------------------------------
 *
 * rotation.c
 *	  The storage ring's rotation (1.3): emptying a ring partition.
 *
 * Where rows live, and why the ring exists: store/ring.c.
 *
 * A rotation empties the ring partition pushes are not going to: it moves
 * the partition's few live jobs (ids, tokens, leases and all unchanged) to
 * the long partition, where they stay until they are done, and then
 * TRUNCATEs it, which leaves no dead rows behind whatever snapshot is held.
 * It runs from queue_tick() (the background ticker, or workers), never from
 * a claim.
 *
 * Work in proportion to jobs pushed and done, never to time or to jobs
 * waiting (up to 1.5 the live jobs went to the other ring
 * partition and came back a period later, so an idle backlog was rewritten
 * twice a period):
 *   - a partition with no pages (already emptied, nothing pushed since) is
 *     skipped at once: no lock beyond a look at its size, no write, no
 *     TRUNCATE ("empty");
 *   - a live job moves at most once, and only because it alone keeps its
 *     partition from being emptied: to long, which is never rotated.  A
 *     paused queue, a backlog without workers, delayed and held-back jobs
 *     are moved once and then lie still, so an idle queue writes nothing.
 * Long is vacuumed the ordinary way; what reaches it is the jobs that
 * outlived their partition by half a period (a backlog, long delays,
 * paused or held-back jobs, jobs held past that), not the throughput.
 *
 * TRUNCATE needs an ACCESS EXCLUSIVE lock, and every statement on
 * queue_jobs locks every partition.  A lock request that waits makes
 * every later request on the partition wait behind it, so the rotation
 * first asks without waiting, again every millisecond, for up to
 * jobqueue.ring_lock_timeout: nobody waits behind that, and between the
 * short transactions of workers the partition is usually free within it.
 * Only if it never was (a load with no gap between transactions, which
 * would otherwise keep the partition from ever being emptied) does it queue
 * its request, with that lock timeout, so that a claim or a push queued
 * behind it waits at most that long; it gives up ("busy") while any
 * transaction holds a lock on the partition (one that is still open after
 * reading or writing queue_jobs); the next tick tries again.  Moving and truncating happen under that lock, in one step: no
 * worker waits on a row the rotation holds, and a statement that queued
 * behind the lock takes its snapshot after the rotation commits (locks are
 * taken before the snapshot), so it finds the moved jobs.  Only a
 * REPEATABLE READ transaction whose snapshot is older than a rotation and
 * that reads queue_jobs for the first time after it misses the moved jobs:
 * TRUNCATE is not MVCC-safe.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(jobqueue_rotate);

/* Every column of a job but its ring partition: what a rotation moves unchanged. */
#define RING_MOVED_COLUMNS \
	"id, queue, name, payload, attempts, max_attempts, priority, unique_key, available_at," \
	" reserved_until, reserved_by, last_error, created_at, token, ready, deadline"

/*
 * A rotation's move, under the partition's ACCESS EXCLUSIVE lock: every
 * job of a ring partition, unchanged, to partition $1, or to long when it
 * is not held and due after $2 (a long delay or backoff).  Since 1.5
 * $1 is long itself (MoveAndTruncate): every job goes there.
 */
#define RING_MOVE_SQL(columns) \
	"WITH moved AS (" \
	"  DELETE FROM @J@ RETURNING *" \
	")" \
	" INSERT INTO @S@.queue_jobs (" columns ", ring)" \
	" SELECT " columns "," \
	"  CASE WHEN available_at > $2 AND NOT " HELD " THEN " SQL_NUMBER(JQ_RING_LONG) " ELSE $1 END" \
	" FROM moved" \
	" RETURNING queue, priority, available_at, id, ready"

/* What the flow control (1.5) adds to a job, copied when a rotation moves it. */
#define FLOW_COLUMNS "concurrency_key, flow, parked_run_at, waiting_parents, has_children"

/*
 * The statements of rotation.c, run by the statement engine (exec/statements.c);
 * registered once (rotation_statements, from the folder's Init).
 */
enum
{
	PLAN_RING_LIVE_JOBS,
	PLAN_RING_MOVE,
	NUM_ROTATION_STATEMENTS
};

static JqStatement statements[NUM_ROTATION_STATEMENTS] = {
	[PLAN_RING_LIVE_JOBS] = {.name = "ring_live_jobs", .text = {
		/* The live jobs of a ring partition, counted up to one more than a rotation moves. */
		[JQ_API_1_3] = {
			"SELECT pg_catalog.count(*) FROM"
			" (SELECT 1 FROM @J@ LIMIT " SQL_NUMBER(JQ_RING_MOVE_MAX) " + 1) live",
			0, {0},
			.per_partition = true
		},
	}},
	[PLAN_RING_MOVE] = {.name = "ring_move", .text = {
		[JQ_API_1_3] = {
			RING_MOVE_SQL(RING_MOVED_COLUMNS),
			2, {INT2OID, TIMESTAMPTZOID},
			.per_partition = true
		},
		[JQ_API_1_5] = {
			RING_MOVE_SQL(RING_MOVED_COLUMNS ", " FLOW_COLUMNS),
			2, {INT2OID, TIMESTAMPTZOID},
			.per_partition = true
		},
	}},
};

JqStatementSet rotation_statements = JQ_STATEMENT_SET(statements);

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
	Oid			relid = ExtensionRelid(call, name);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("jobqueue: partition \"%s\" does not exist", name),
				 errhint("ALTER EXTENSION jobqueue UPDATE to 1.3 or later.")));
	return relid;
}

/* A ring partition's size in blocks (a moment's ACCESS SHARE lock to read it). */
static BlockNumber
PartitionBlocks(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	BlockNumber blocks = RelationGetNumberOfBlocks(rel);

	table_close(rel, AccessShareLock);
	return blocks;
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
	if (SpiExecuteSafely("SELECT 1 FROM pg_catalog.pg_stat_activity"
						 " WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()"
						 "   AND application_name OPERATOR(pg_catalog.=) 'pg_dump'"
						 "   AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()",
						 true) != SPI_OK_SELECT)
		elog(ERROR, "jobqueue: could not look for a running pg_dump");
	return SPI_processed > 0;
}

/*
 * The partition's ACCESS EXCLUSIVE lock without a queued request: asked
 * for again every millisecond for up to the ring's lock timeout (see the
 * header).  false if it was never free.
 */
static bool
LockPartitionWithoutQueueing(Oid relid)
{
	TimestampTz give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ring_lock_timeout_ms);

	for (;;)
	{
		if (ConditionalLockRelationOid(relid, AccessExclusiveLock))
			return true;
		if (GetCurrentTimestamp() >= give_up)
			return false;
		CHECK_FOR_INTERRUPTS();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * The partition's ACCESS EXCLUSIVE lock: without queueing first, then
 * queued, waiting at most the ring's lock timeout; false if it was not
 * granted in time.  Any other error is raised.
 */
static bool
LockPartitionBriefly(Oid relid)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			nest_level;
	volatile bool granted = true;

	if (LockPartitionWithoutQueueing(relid))
		return true;
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
 * Move every job of ring partition "ring" to long, where it stays, and
 * truncate the partition.  The lock is held; the moved claimable jobs are
 * noted for claim positions.
 */
static int64
MoveAndTruncate(const JqCall *call, int ring)
{
	int			to = JQ_RING_LONG;
	Datum		args[2];
	uint64		moved;
	JqCall		move_call = *call;

	/* every column the installed schema has moves, whichever call rotates */
	move_call.version = InstalledApiVersion();
	args[0] = Int16GetDatum((int16) to);
	args[1] = TimestampTzGetDatum(call->now + (int64) jobqueue_ring_period_seconds * USECS_PER_SEC);
	/* the rows only move: flow control (flow.c) must not see jobs leave */
	moved = RemoveJobs(&move_call, JOB_REMOVAL_MOVED, &statements[PLAN_RING_MOVE],
					   RingJobTable(ring), args, NULL, SPI_OK_INSERT_RETURNING, NULL);
	for (uint64 row = 0; row < moved; row++)
	{
		ClaimPosition position;

		if (!SpiBool(row, MOVED_READY))
			continue;
		position.priority = SpiInt32(row, MOVED_PRIORITY);
		position.available_at = SpiTimestampTz(row, MOVED_AVAILABLE_AT);
		position.id = SpiInt8(row, MOVED_ID);
		/* it only moved: counted and woken for when it was written */
		NoteJobCanRun(SpiTextCopy(row, MOVED_QUEUE), &position, true, JOB_EVENT_KINDS,
					  JOB_WAKE_NOBODY, NULL);
	}
	if (SpiExecuteSafely(psprintf("TRUNCATE %s.queue_jobs_ring%d", call->quoted_schema, ring),
						 false) != SPI_OK_UTILITY)
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
		int64		period = (int64) jobqueue_ring_period_seconds * USECS_PER_SEC;

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
	if (PartitionBlocks(relid) == 0)
		result.outcome = "empty";
	else if (OtherRotationRunning() || DumpRunning())
		result.outcome = "busy";
	else
	{
		QueueExecuteOn(call, &statements[PLAN_RING_LIVE_JOBS], RingJobTable(result.ring), NULL, NULL,
					   SPI_OK_SELECT);
		if (SpiInt8(0, 1) > JQ_RING_MOVE_MAX)
			result.outcome = "too many";
		else if (!LockPartitionBriefly(relid))
			result.outcome = "busy";
		if (result.outcome != NULL)
			busy_until = wall + (int64) jobqueue_ring_period_seconds * USECS_PER_SEC / BUSY_BACKOFF_PARTS;
		else
		{
			result.moved = MoveAndTruncate(call, result.ring);
			result.truncated = true;
			result.outcome = "truncated";
		}
	}
	return result;
}

/*
 * Whether a ring partition looks worth emptying before its turn: at least
 * JQ_RING_DEAD_TRUNCATE_BYTES, and by the statistics a hundred dead rows or
 * more for each live one.  The statistics lag the last second's work and
 * their live count is an estimate that drifts (a TRUNCATE of queue_jobs may
 * leave a partition's at a few rows), so they only say when to look: the
 * live rows are counted exactly before the partition is emptied.
 */
static bool
LooksAllDead(Oid relid)
{
	PgStat_StatTabEntry *stats;

	if ((uint64) PartitionBlocks(relid) * BLCKSZ < JQ_RING_DEAD_TRUNCATE_BYTES)
		return false;
	stats = pgstat_fetch_stat_tabentry(relid);
	return stats != NULL && STAT_DEAD_TUPLES(stats) > 0 &&
		STAT_LIVE_TUPLES(stats) <= STAT_DEAD_TUPLES(stats) / 100;
}

/*
 * Empty each ring partition whose rows are all dead, the one taking pushes
 * too, without waiting for its turn.  A burst of jobs done within a period
 * otherwise stays in its partition until the partition's turn comes, and
 * the next burst is written beside it (each burst's peak twice the first);
 * this makes the next burst start in an empty partition.  Nothing live is
 * moved (one that was pushed between the count and the lock moves to long,
 * once, as in any rotation); idle partitions (no pages, or live jobs) are
 * left as they are, so an idle queue still writes nothing.
 */
static void
EmptyDeadPartitions(const JqCall *call)
{
	for (int ring = 0; ring < JQ_RING_PARTITIONS; ring++)
	{
		Oid			relid = RingPartition(call, ring);

		if (!LooksAllDead(relid))
			continue;
		if (OtherRotationRunning() || DumpRunning())
			return;
		QueueExecuteOn(call, &statements[PLAN_RING_LIVE_JOBS], RingJobTable(ring), NULL, NULL,
					   SPI_OK_SELECT);
		if (SpiInt8(0, 1) == 0 && LockPartitionBriefly(relid))
			(void) MoveAndTruncate(call, ring);
	}
}

/*
 * From queue_tick (1.3): rotate if it is time, and empty partitions whose
 * rows are all dead.  Not in a transaction block (BEGIN ... COMMIT): the
 * rotation's lock would be held, and every claim kept waiting, until that
 * transaction ends.  Between SPI_connect and SPI_finish.
 */
void
RotateRingIfDue(const JqCall *call)
{
	if (IsTransactionBlock())
		return;
	(void) RotateRing(call, -1);
	EmptyDeadPartitions(call);
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
JobqueueDefineRotation(void)
{
	DefineCustomIntVariable("jobqueue.ring_lock_timeout",
							"How long a rotation asks for its lock without queueing, then queued, before trying again later.",
							"Claims and pushes wait behind the rotation only in the queued part, at most about this long.",
							&ring_lock_timeout_ms, JQ_DEFAULT_RING_LOCK_TIMEOUT_MS, 1, 10000,
							PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
}
