/*-------------------------------------------------------------------------
 *
 * ring.c
 *	  Where a job row lives: the storage ring's partitions (1.3), and
 *	  finding a job by id in them.
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
 * A rotation (api/rotation.c) empties the ring partition pushes are not
 * going to, moving its few live jobs forward and truncating it.
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
#include "store/store.h"

#include "catalog/namespace.h"
#include "funcapi.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(jobqueue_current_ring);

int			jobqueue_ring_period_seconds = JQ_DEFAULT_RING_PERIOD_SECONDS;

/* The ring slot of a wall-clock time: which period it falls in. */
static int64
RingSlotAt(TimestampTz time)
{
	return (time / USECS_PER_SEC) / jobqueue_ring_period_seconds;
}

/* The ring partition pushes go to at a wall-clock time. */
int
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
	int			current = RingAt(call->wall);

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
		Oid			relid = ExtensionRelid(call, JobTableName(order[i]));

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
		if (ExtensionRelid(call, JobTableName(t)) == relid)
			return t;
	return JOBS_ALL;
}

/*
 * Whether a partition (locked) has pages, without a system call when this
 * backend already knows it has: the size the storage manager last read or
 * extended it to.  That size can only be too high, never too low, for a
 * partition that has lost pages: a TRUNCATE gives it a new file (whose size
 * is not known yet), and a VACUUM that shortens it makes every backend
 * forget the size at its next lock (an invalidation).  Too high costs one
 * search of an empty partition, never a missed job; a size not known, or
 * known to be 0, is read from the file each time, since another backend may
 * have extended it since.
 */
static bool
PartitionMayHavePages(Relation rel)
{
	BlockNumber known = RelationGetSmgr(rel)->smgr_cached_nblocks[MAIN_FORKNUM];

	if (known != InvalidBlockNumber && known > 0)
		return true;
	return RelationGetNumberOfBlocks(rel) > 0;
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
	JobTable	tables[3];
	Oid			relids[3];
	int			with_pages = ClaimSearchPartitions(call, tables, relids);

	*table = with_pages == 1 ? tables[0] : JOBS_ALL;
	return with_pages != 0;
}

/*
 * The partitions a claim searches (ClaimSearchTable): those with pages, in
 * tables and relids; returns how many, or -1 for a schema before 1.3 (one
 * table, queue_jobs).  Each partition is locked as a statement would.
 */
int
ClaimSearchPartitions(const JqCall *call, JobTable tables[3], Oid relids[3])
{
	JobTable	order[3];
	Oid			locked[3];
	int			with_pages = 0;

	if (!LockJobPartitions(call, order, locked))
		return -1;
	for (int i = 0; i < 3; i++)
	{
		Relation	rel = RelationIdGetRelation(locked[i]);

		if (PartitionMayHavePages(rel))
		{
			tables[with_pages] = order[i];
			relids[with_pages++] = locked[i];
		}
		RelationClose(rel);
	}
	return with_pages;
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
	return JobPartitionsToSearch(call, tables, NULL);
}

/* JobTablesToSearch, with the partitions' relation ids in relids when given. */
int
JobPartitionsToSearch(const JqCall *call, JobTable tables[3], Oid relids[3])
{
	if (LockJobPartitions(call, tables, relids))
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
ExecuteFindingJob(const JqCall *call, JqStatement *statement, Datum *values, const char *nulls,
				  int expected, JobTable *found)
{
	JobTable	order[3];

	*found = JOBS_ALL;
	if (!LockJobPartitions(call, order, NULL))
	{
		QueueExecute(call, statement, values, nulls, expected);
		return SPI_processed;
	}
	for (int i = 0; i < 3; i++)
	{
		QueueExecuteOn(call, statement, order[i], values, nulls, expected);
		if (SPI_processed > 0)
		{
			*found = last_found = order[i];
			return SPI_processed;
		}
	}
	return 0;
}

/* RunAlone for a statement that finds a job by id (ExecuteFindingJob). */
uint64
RunAloneFindingJob(const JqCall *call, JqStatement *statement, Datum *values, const char *nulls,
				   int expected)
{
	uint64		processed;
	JobTable	found;

	SPI_connect();
	processed = ExecuteFindingJob(call, statement, values, nulls, expected, &found);
	SPI_finish();
	return processed;
}

/* From _PG_init: the period also decides where pushes go, so it is the store's. */
void
JobqueueDefineRing(void)
{
	DefineCustomIntVariable("jobqueue.ring_period",
							"How long pushes fill one partition of the storage ring.",
							"A rotation empties the other partition once half a period has passed.",
							&jobqueue_ring_period_seconds, JQ_DEFAULT_RING_PERIOD_SECONDS,
							JQ_RING_PERIOD_MIN_SECONDS, JQ_RING_PERIOD_MAX_SECONDS,
							PGC_SUSET, GUC_UNIT_S, NULL, NULL, NULL);
}
