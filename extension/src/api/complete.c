/*-------------------------------------------------------------------------
 *
 * complete.c
 *	  What a worker does with a claimed job: delete (done), release (try
 *	  again later), fail (dead letter), extend (heartbeat).
 *
 * Every call is fenced by the claim's token: a worker whose claim was
 * replaced by another worker's gets false and changes nothing.  A token
 * stays valid until another claim replaces it (or the job is released), so
 * a worker whose lease ran out may still finish if nobody claimed the job.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "common/pg_prng.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_delete);
PG_FUNCTION_INFO_V1(jobqueue_release);
PG_FUNCTION_INFO_V1(jobqueue_release_1_1);
PG_FUNCTION_INFO_V1(jobqueue_fail);
PG_FUNCTION_INFO_V1(jobqueue_extend);

/*
 * The statements of complete.c, run by the statement engine (exec/statements.c);
 * registered once (complete_statements, from the folder's Init).
 */
enum
{
	PLAN_DELETE,
	PLAN_LOCK_CLAIMED,
	PLAN_RELEASE,
	PLAN_MOVE_TO_FAILED,
	PLAN_EXTEND,
	NUM_COMPLETE_STATEMENTS
};

static JqStatement statements[NUM_COMPLETE_STATEMENTS] = {
	[PLAN_DELETE] = {.name = "delete", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "DELETE FROM @J@ WHERE id = $1 AND token = $2 RETURNING queue",
			2, {INT8OID, INT8OID},
			.per_partition = true
		},
	}},
	[PLAN_LOCK_CLAIMED] = {.name = "lock_claimed", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "SELECT attempts, max_attempts, queue, priority FROM @J@"
			" WHERE id = $1 AND token = $2 FOR UPDATE",
			2, {INT8OID, INT8OID},
			.per_partition = true
		},
	}},
	[PLAN_RELEASE] = {.name = "release", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "UPDATE @J@"
			" SET ready = $3 <= $4, available_at = $3, reserved_until = NULL,"
			"     reserved_by = NULL, token = NULL, last_error = $5"
			" WHERE id = $1 AND token = $2",
			5, {INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID},
			.per_partition = true
		},
	}},
	[PLAN_MOVE_TO_FAILED] = {.name = "move_to_failed", .text = {
		/* One statement, so a job is never in both tables nor in neither. */
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "WITH moved AS ("
			"  DELETE FROM @J@ WHERE id = $1 AND token = $2 RETURNING *"
			")"
			" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ")"
			" SELECT id, id, queue, name, payload, priority, attempts, max_attempts,"
			"  CASE WHEN $3 <> '' THEN $3"
			"   WHEN last_error <> '' THEN last_error"
			"   ELSE '" FAILED_WITHOUT_ERROR "' END,"
			"  $4, created_at FROM moved"
			" RETURNING id, queue",
			4, {INT8OID, INT8OID, TEXTOID, TIMESTAMPTZOID},
			.per_partition = true
		},
	}},
	[PLAN_EXTEND] = {.name = "extend", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "UPDATE @J@"
			" SET ready = false, available_at = $3, reserved_until = $3"
			" WHERE id = $1 AND token = $2",
			3, {INT8OID, INT8OID, TIMESTAMPTZOID},
			.per_partition = true
		},
	}},
};

JqStatementSet complete_statements = JQ_STATEMENT_SET(statements);

#define BACKOFF_BASE_USECS	(10 * USECS_PER_SEC)
#define BACKOFF_CAP_USECS	(3600 * USECS_PER_SEC)

/* Columns of PLAN_LOCK_CLAIMED. */
enum
{
	LOCKED_ATTEMPTS = 1, LOCKED_MAX_ATTEMPTS, LOCKED_QUEUE, LOCKED_PRIORITY
};

/* A move of the claimed job (id, token) to the failed table by the statement. */
static bool
MoveToFailedWithStatement(const JqCall *call, int64 id, int64 token, text *error)
{
	Datum		args[4];
	JobTable	found;

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = PointerGetDatum(error);
	args[3] = TimestampTzGetDatum(call->now);
	if (ExecuteFindingJob(call, &statements[PLAN_MOVE_TO_FAILED], args, NULL, SPI_OK_INSERT_RETURNING,
						  &found) != 1)
		return false;
	CountJobsOfRows(2, JOB_FAILED);	/* RETURNING id, queue */
	return true;
}

/*
 * Move the claimed jobs of the pairs (ids[k], tokens[k]), count of them,
 * ids ascending, to the failed table; failed[k] says whether pair k's job
 * was moved (false when the token is not the current claim's, or an
 * earlier pair moved the job).  Without the executor where it may
 * (store/direct_delete.c), else by the statement.  Must be called between
 * SPI_connect and SPI_finish.
 */
void
MoveClaimedToFailedMany(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
						text *error, bool *failed)
{
	DirectOutcome *outcomes = palloc(sizeof(DirectOutcome) * Max(count, 1));
	text	  **queues = palloc(sizeof(text *) * Max(count, 1));

	if (!FailJobsDirectly(call, count, ids, tokens, error, call->now, outcomes, queues))
		for (int k = 0; k < count; k++)
			outcomes[k] = DIRECT_USE_STATEMENT;
	for (int k = 0; k < count; k++)
	{
		failed[k] = outcomes[k] == DIRECT_DONE;
		if (failed[k])
			CountJobs(queues[k], JOB_FAILED, 1);
		else if (outcomes[k] == DIRECT_USE_STATEMENT)
		{
			CHECK_FOR_INTERRUPTS();
			failed[k] = MoveToFailedWithStatement(call, ids[k], tokens[k], error);
		}
	}
	pfree(outcomes);
	pfree(queues);
}

/* MoveClaimedToFailedMany of one pair: whether the job was moved. */
bool
MoveClaimedToFailed(const JqCall *call, int64 id, int64 token, text *error)
{
	bool		failed;

	MoveClaimedToFailedMany(call, 1, &id, &token, error, &failed);
	return failed;
}

/*
 * The backoff of the contract: min(1 hour, 10 s * 2^(attempts-1)) times a
 * random factor in [0.5, 1.0], so released jobs of one failure spread out.
 */
static Interval *
BackoffDelay(int32 attempts)
{
	Interval   *span = palloc0(sizeof(Interval));
	int			exponent = Max(attempts - 1, 0);
	int64		base;

	/* 2^9 * 10 s is already past the cap: stop doubling there */
	base = exponent >= 9 ? BACKOFF_CAP_USECS
		: Min(BACKOFF_CAP_USECS, BACKOFF_BASE_USECS << exponent);
	span->time = (int64) (base * (0.5 + 0.5 * pg_prng_double(&pg_global_prng_state)));
	return span;
}

void
ArgIdAndToken(FunctionCallInfo fcinfo, int64 *id, int64 *token)
{
	ArgRequire(fcinfo, 0, "id");
	ArgRequire(fcinfo, 1, "token");
	*id = PG_GETARG_INT64(0);
	*token = PG_GETARG_INT64(1);
}

/*
 * Delete the claimed job (id, token) with the statement, which fires the
 * flow trigger (flow.c: a key's slot, children); returns whether it did.
 * For the jobs the direct way leaves to it (store/direct_delete.c).
 */
bool
DeleteJobWithStatement(const JqCall *call, int64 id, int64 token)
{
	Datum		args[2] = {Int64GetDatum(id), Int64GetDatum(token)};
	bool		deleted;
	JobTable	found;

	SPI_connect();
	/* a completion: flow control (flow.c) need not look for it in the failed table */
	deleted = RemoveJobs(call, JOB_REMOVAL_COMPLETED, &statements[PLAN_DELETE], JOBS_ALL, args,
						 NULL, SPI_OK_DELETE_RETURNING, &found) == 1;
	CountJobsOfRows(1, JOB_COMPLETED);	/* RETURNING queue */
	SPI_finish();
	return deleted;
}

/*
 * A job of queue completed without the statement (store/direct_delete.c):
 * counted, and the slot of its concurrency key it held (slot_key, NULL:
 * none) handed to the key's next job, as the flow trigger does after the
 * statement's delete (flow.c).
 */
void
NoteCompletedDirectly(const JqCall *call, text *queue, text *slot_key)
{
	JqCall		flow_call = *call;

	CountJobs(queue, JOB_COMPLETED, 1);
	if (slot_key == NULL)
		return;
	/* a key's slot is held in a 1.5 schema or later: flow.c's statements are 1.5's */
	flow_call.version = JQ_API_1_5;
	SPI_connect();
	RefillKeySlots(&flow_call, queue, slot_key, 1);
	SPI_finish();
}

/* queue_delete(id, token): the job is done. */
Datum
jobqueue_delete(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64		id;
	int64		token;
	DirectOutcome outcome;
	text	   *queue;
	text	   *slot_key;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_0);
	ArgIdAndToken(fcinfo, &id, &token);
	if (DeleteJobsDirectly(&call, 1, &id, &token, &outcome, &queue, &slot_key))
	{
		if (outcome == DIRECT_DONE)
			NoteCompletedDirectly(&call, queue, slot_key);
		if (outcome != DIRECT_USE_STATEMENT)
			PG_RETURN_BOOL(outcome == DIRECT_DONE);
	}
	PG_RETURN_BOOL(DeleteJobWithStatement(&call, id, token));
}

/* What a release noted of a job it released: to note it due again. */
typedef struct ReleasedJob
{
	text	   *queue;			/* the job's (a copy) */
	int32		priority;
	TimestampTz available_at;	/* due again then */
} ReleasedJob;

/* What a release decides from a claimed row (ReleaseDecided). */
typedef struct ReleaseChange
{
	const JqCall *call;
	Interval   *delay;			/* NULL: backoff */
	text	   *error;
	ReleasedJob *released;		/* out: one for each pair */
} ReleaseChange;

/*
 * The released row's new version (store/direct_update.c's decide), as the
 * release statement writes it; false on the last attempt (the statements
 * then move the job to the failed table).
 */
static bool
ReleaseDecided(TupleTableSlot *row, TupleTableSlot *updated, const PartitionShape *shape,
			   int pair, void *arg)
{
	ReleaseChange *release = arg;
	ReleasedJob *job = &release->released[pair];
	bool		isnull;
	int32		attempts = DatumGetInt32(JobColumnValue(row, shape, JOB_COL_ATTEMPTS, &isnull));

	if (attempts >= DatumGetInt32(JobColumnValue(row, shape, JOB_COL_MAX_ATTEMPTS, &isnull)))
		return false;
	job->queue = DatumGetTextPCopy(JobColumnValue(row, shape, JOB_COL_QUEUE, &isnull));
	job->priority = DatumGetInt32(JobColumnValue(row, shape, JOB_COL_PRIORITY, &isnull));
	job->available_at = QueueTimeAfter(release->call->now, release->delay != NULL ?
									   release->delay : BackoffDelay(attempts));
	SetJobColumn(updated, shape, JOB_COL_READY,
				 BoolGetDatum(job->available_at <= release->call->now), false);
	SetJobColumn(updated, shape, JOB_COL_AVAILABLE_AT,
				 TimestampTzGetDatum(job->available_at), false);
	SetJobColumn(updated, shape, JOB_COL_RESERVED_UNTIL, (Datum) 0, true);
	SetJobColumn(updated, shape, JOB_COL_RESERVED_BY, (Datum) 0, true);
	SetJobColumn(updated, shape, JOB_COL_TOKEN, (Datum) 0, true);
	SetJobColumn(updated, shape, JOB_COL_LAST_ERROR, PointerGetDatum(release->error), false);
	return true;
}

/*
 * The released job id can run again at job->available_at: its queue goes
 * to *wake_queues when that is now (the caller may wake the queue).
 */
static void
NoteReleased(const JqCall *call, int64 id, const ReleasedJob *job, List **wake_queues)
{
	ClaimPosition position = {job->priority, job->available_at, id};

	NoteJobDueAt(job->available_at);	/* due again then; a deadline may come first */
	NoteJobCanRun(job->queue, &position, job->available_at <= call->now, JOB_RELEASED,
				  JOB_WAKE_IF_WANTED, wake_queues);
}

/* A release of the claimed job (id, token) by the statements (see ReleaseClaimedMany). */
static bool
ReleaseWithStatements(const JqCall *call, int64 id, int64 token, Interval *delay,
					  text *error, List **wake_queues)
{
	Datum		args[5];
	int32		attempts;
	int32		max_attempts;
	ReleasedJob job;
	JobTable	table;

	/* Lock the claim first, so attempts cannot change under the decision. */
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	if (ExecuteFindingJob(call, &statements[PLAN_LOCK_CLAIMED], args, NULL, SPI_OK_SELECT, &table) == 0)
		return false;
	attempts = SpiInt32(0, LOCKED_ATTEMPTS);
	max_attempts = SpiInt32(0, LOCKED_MAX_ATTEMPTS);
	job.queue = SpiTextCopy(0, LOCKED_QUEUE);
	job.priority = SpiInt32(0, LOCKED_PRIORITY);

	if (attempts >= max_attempts)
	{
		if (VARSIZE_ANY_EXHDR(error) == 0)
			error = cstring_to_text("released with no attempts left");
		return MoveClaimedToFailed(call, id, token, error);
	}

	job.available_at = QueueTimeAfter(call->now, delay != NULL ? delay : BackoffDelay(attempts));
	args[2] = TimestampTzGetDatum(job.available_at);
	args[3] = TimestampTzGetDatum(call->now);
	args[4] = PointerGetDatum(error);
	QueueExecuteOn(call, &statements[PLAN_RELEASE], table, args, NULL, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		return false;
	NoteReleased(call, id, &job, wake_queues);
	return true;
}

/*
 * Release the claimed jobs of the pairs (ids[k], tokens[k]), count of them,
 * ids ascending, for another attempt after delay (NULL: backoff); released[k]
 * says whether pair k's job was released.  Attempts are not touched: the
 * claim counted this one.  A job with no attempts left goes to the failed
 * table instead (and counts as released).  A pair whose token is not the
 * current claim's, or whose job an earlier pair released, releases
 * nothing.  Without the executor where it may (store/direct_update.c),
 * else by the statements.  The queues of the jobs due again right now are
 * added to *wake_queues (the caller may wake them).  Must be called
 * between SPI_connect and SPI_finish.
 */
void
ReleaseClaimedMany(const JqCall *call, int count, const int64 *ids, const int64 *tokens,
				   Interval *delay, text *error, List **wake_queues, bool *released)
{
	ReleaseChange release = {.call = call, .delay = delay, .error = error};
	ClaimedChange change = {.decide = ReleaseDecided, .arg = &release};
	DirectOutcome *outcomes = palloc(sizeof(DirectOutcome) * Max(count, 1));

	release.released = palloc0(sizeof(ReleasedJob) * Max(count, 1));
	if (!UpdateClaimedManyDirectly(call, count, ids, tokens, &change, outcomes))
		for (int k = 0; k < count; k++)
			outcomes[k] = DIRECT_USE_STATEMENT;
	for (int k = 0; k < count; k++)
	{
		released[k] = outcomes[k] == DIRECT_DONE;
		if (released[k])
			NoteReleased(call, ids[k], &release.released[k], wake_queues);
		else if (outcomes[k] == DIRECT_USE_STATEMENT)
		{
			CHECK_FOR_INTERRUPTS();
			released[k] = ReleaseWithStatements(call, ids[k], tokens[k], delay, error,
												wake_queues);
		}
	}
	pfree(release.released);
	pfree(outcomes);
}

/* queue_release(id, token, delay, error); from 1.1 a job due now wakes its queue. */
static Datum
Release(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	int64		id;
	int64		token;
	Interval   *delay;
	text	   *error;
	List	   *wake_queues = NIL;
	bool		released;

	JqCallBeginWriting(&call, fcinfo, version);
	ArgIdAndToken(fcinfo, &id, &token);
	delay = ArgOptionalDelay(fcinfo, 2, "delay");
	error = ArgErrorText(fcinfo, 3);

	SPI_connect();
	ReleaseClaimedMany(&call, 1, &id, &token, delay, error, &wake_queues, &released);
	if (JqCallSince(&call, JQ_API_1_1))
		WakeQueuesThatWantIt(&call, wake_queues);
	SPI_finish();
	PG_RETURN_BOOL(released);
}

Datum
jobqueue_release(PG_FUNCTION_ARGS)
{
	return Release(fcinfo, JQ_API_1_0);
}

Datum
jobqueue_release_1_1(PG_FUNCTION_ARGS)
{
	return Release(fcinfo, JQ_API_1_1);
}

/*
 * queue_fail(id, token, error): a permanent error; to the failed table now.
 * An empty error stores the job's last recorded error, or says none was given.
 */
Datum
jobqueue_fail(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64		id;
	int64		token;
	text	   *error;
	bool		failed;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_0);
	ArgIdAndToken(fcinfo, &id, &token);
	error = ArgErrorText(fcinfo, 2);

	SPI_connect();
	failed = MoveClaimedToFailed(&call, id, token, error);
	SPI_finish();

	PG_RETURN_BOOL(failed);
}

/* The extended row's new version (store/direct_update.c's decide): held until *arg. */
static bool
ExtendDecided(TupleTableSlot *row, TupleTableSlot *updated, const PartitionShape *shape,
			  int pair, void *arg)
{
	Datum		lease_end = TimestampTzGetDatum(*(TimestampTz *) arg);

	SetJobColumn(updated, shape, JOB_COL_READY, BoolGetDatum(false), false);
	SetJobColumn(updated, shape, JOB_COL_AVAILABLE_AT, lease_end, false);
	SetJobColumn(updated, shape, JOB_COL_RESERVED_UNTIL, lease_end, false);
	return true;
}

/* queue_extend(id, token, lease): the lease now ends lease from now. */
Datum
jobqueue_extend(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64		id;
	int64		token;
	Interval   *lease;
	Datum		args[3];
	TimestampTz lease_end;
	ClaimedChange change = {.decide = ExtendDecided, .arg = &lease_end};
	DirectOutcome outcome;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_0);
	ArgIdAndToken(fcinfo, &id, &token);
	lease = ArgInterval(fcinfo, 2, "lease");
	CheckLeaseInterval(lease, "lease");

	lease_end = QueueTimeAfter(call.now, lease);
	NoteJobDueAt(lease_end);	/* the lease may end sooner */
	outcome = UpdateClaimedDirectly(&call, id, token, &change);
	if (outcome != DIRECT_USE_STATEMENT)
		PG_RETURN_BOOL(outcome == DIRECT_DONE);

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = TimestampTzGetDatum(lease_end);
	PG_RETURN_BOOL(RunAloneFindingJob(&call, &statements[PLAN_EXTEND], args, NULL,
									  SPI_OK_UPDATE) == 1);
}
