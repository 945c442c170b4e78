/*-------------------------------------------------------------------------
 *
 * dependencies.c
 *	  Jobs that wait for other jobs (1.5): queue_push(..., after => ids).
 *
 * A child names its parents when it is pushed, so they exist before it
 * and a cycle cannot be built.  Each parent must be in queue_jobs (the
 * child waits for it to complete) or in the failed table (the child fails
 * with it at once, or, pushed to run anyway, does not wait for it); an id
 * found in neither is a 22023 error: it never existed, or it completed
 * and is gone.  Pushing a child locks its live parents against deletion
 * (FOR KEY SHARE: claims of them go on) and marks them (has_children), so
 * a parent cannot complete unseen while its child is being pushed: its
 * completion waits for the push's transaction.  The child waits in queue_jobs, held back (flow.c), with a
 * row per parent in queue_job_parents.
 *
 *-------------------------------------------------------------------------
 */
#include "flow/flow.h"

#include "utils/builtins.h"

/*
 * The statements of dependencies.c, run by the statement engine (exec/statements.c);
 * registered once (dependencies_statements, from the folder's Init).
 */
enum
{
	PLAN_PARENTS_LOCK,
	PLAN_PARENTS_MARK,
	PLAN_PARENTS_FAILED,
	PLAN_PUSH_CHILD,
	PLAN_ADD_PARENTS,
	NUM_DEPENDENCIES_STATEMENTS
};

static JqStatement statements[NUM_DEPENDENCIES_STATEMENTS] = {
	[PLAN_PARENTS_LOCK] = {.name = "parents_lock", .text = {
		/*
		 * The parents of a new child that are live jobs, locked against their
		 * deletion (not against claims) until the child's push commits; then
		 * those not marked yet marked (an UPDATE per child would give one
		 * parent a row version per child).
		 */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "SELECT id FROM @S@.queue_jobs WHERE id = ANY ($1) FOR KEY SHARE",
			1, {INT8ARRAYOID}
		},
	}},
	[PLAN_PARENTS_MARK] = {.name = "parents_mark", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs SET has_children = true WHERE id = ANY ($1) AND NOT has_children",
			1, {INT8ARRAYOID}
		},
	}},
	[PLAN_PARENTS_FAILED] = {.name = "parents_failed", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT id FROM @S@.queue_failed_jobs WHERE id = ANY ($1) FOR SHARE",
			1, {INT8ARRAYOID}
		},
	}},
	[PLAN_PUSH_CHILD] = {.name = "push_child", .text = {
		/* A child ($1..$9 as a push's, $10 the parents it waits for), held back. */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs"
			" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
			"  deadline, concurrency_key, flow, parked_run_at, waiting_parents)"
			" VALUES (pg_catalog.nextval('@S@.queue_jobs_id_seq'), $1, $2, $3, $4, $5, " HELD_BACK_AT ","
			"  false, $7, $9, $8, 'parents', $6, $10)"
			" RETURNING id",
			10, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID, INT4OID}
		},
	}},
	[PLAN_ADD_PARENTS] = {.name = "add_parents", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_job_parents (parent, child, run_anyway)"
			" SELECT p, $1, $3 FROM pg_catalog.unnest($2) p",
			3, {INT8OID, INT8ARRAYOID, BOOLOID}
		},
	}},
};

JqStatementSet dependencies_statements = JQ_STATEMENT_SET(statements);

/* Whether id is among the sorted ids. */
static bool
IdAmong(int64 id, const int64 *ids, int count)
{
	return bsearch(&id, ids, count, sizeof(int64), CompareLeadingIds) != NULL;
}

/* The ids the current SPI result's first column holds, sorted. */
static int64 *
SortedResultIds(int *count)
{
	int64	   *ids = palloc(sizeof(int64) * Max(SPI_processed, 1));

	*count = (int) SPI_processed;
	for (int row = 0; row < *count; row++)
		ids[row] = SpiInt8(row, 1);
	qsort(ids, *count, sizeof(int64), CompareLeadingIds);
	return ids;
}

/* Datums of the ids, for an int8[] argument. */
static ArrayType *
IdArray(const int64 *ids, int count)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		values[i] = Int64GetDatum(ids[i]);
	return Int8ArrayFromDatums(values, count);
}

/*
 * Insert a job that waits for its parents; returns its id.  Between
 * SPI_connect and SPI_finish.
 */
int64
InsertChild(const JqCall *call, const JobSpec *job)
{
	Datum		args[10];
	char		nulls[10];
	int64	   *live;
	int			live_count;
	int64	   *failed = NULL;
	int			failed_count = 0;
	int64	   *waited_for;
	int			waited_count = 0;
	int			waiting;
	int64		id;

	args[0] = PointerGetDatum(IdArray(job->parents, job->parent_count));
	QueueExecute(call, &statements[PLAN_PARENTS_LOCK], args, NULL, SPI_OK_SELECT);
	live = SortedResultIds(&live_count);
	QueueExecute(call, &statements[PLAN_PARENTS_MARK], args, NULL, SPI_OK_UPDATE);
	if (live_count < job->parent_count)
	{
		QueueExecute(call, &statements[PLAN_PARENTS_FAILED], args, NULL, SPI_OK_SELECT);
		failed = SortedResultIds(&failed_count);
	}
	for (int i = 0; i < job->parent_count; i++)
		if (!IdAmong(job->parents[i], live, live_count) &&
			!IdAmong(job->parents[i], failed, failed_count))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"after\" names job " INT64_FORMAT ", which does not exist",
							job->parents[i]),
					 errdetail("A job can wait only for jobs in the queue or in the failed table; a completed job is gone."),
					 errhint("Push the child in the transaction that pushes its parents.")));

	/* it waits for its live parents, and for failed ones unless it runs anyway */
	waited_for = palloc(sizeof(int64) * job->parent_count);
	for (int i = 0; i < job->parent_count; i++)
		if (IdAmong(job->parents[i], live, live_count) || !job->run_if_parent_fails)
			waited_for[waited_count++] = job->parents[i];
	waiting = waited_count;

	memset(nulls, ' ', sizeof(nulls));
	args[0] = PointerGetDatum(job->queue);
	args[1] = PointerGetDatum(job->name);
	args[2] = PointerGetDatum(job->payload);
	args[3] = Int32GetDatum(job->priority);
	args[4] = Int32GetDatum(job->max_attempts);
	args[5] = TimestampTzGetDatum(job->available_at);
	args[6] = TimestampTzGetDatum(call->now);
	args[7] = PointerGetDatum(job->concurrency_key);
	nulls[7] = job->concurrency_key == NULL ? 'n' : ' ';
	args[8] = TimestampTzGetDatum(job->deadline);
	nulls[8] = job->has_deadline ? ' ' : 'n';
	args[9] = Int32GetDatum(waiting);
	QueueExecute(call, &statements[PLAN_PUSH_CHILD], args, nulls, SPI_OK_INSERT_RETURNING);
	id = SpiInt8(0, 1);
	CountJobs(job->queue, JOB_PUSHED, 1);

	if (waited_count > 0)
	{
		args[0] = Int64GetDatum(id);
		args[1] = PointerGetDatum(IdArray(waited_for, waited_count));
		args[2] = BoolGetDatum(job->run_if_parent_fails);
		QueueExecute(call, &statements[PLAN_ADD_PARENTS], args, NULL, SPI_OK_INSERT);
	}
	if (failed_count > 0 && !job->run_if_parent_fails)
		ChildrenFollowParent(call, failed[0], false);
	else if (waiting == 0)
		ReleaseChild(call, id, job->queue, job->concurrency_key);
	return id;
}
