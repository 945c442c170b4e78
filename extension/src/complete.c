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
#include "jobqueue.h"

#include "common/pg_prng.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_delete);
PG_FUNCTION_INFO_V1(jobqueue_release);
PG_FUNCTION_INFO_V1(jobqueue_release_1_1);
PG_FUNCTION_INFO_V1(jobqueue_fail);
PG_FUNCTION_INFO_V1(jobqueue_extend);

#define BACKOFF_BASE_USECS	(10 * USECS_PER_SEC)
#define BACKOFF_CAP_USECS	(3600 * USECS_PER_SEC)

/*
 * Move the claimed job (id, token) to the failed table in one statement.
 * Returns false when the token is not the current claim's.  Must be called
 * between SPI_connect and SPI_finish.
 */
bool
MoveClaimedToFailed(FunctionCallInfo fcinfo, int64 id, int64 token,
					text *error, TimestampTz now)
{
	Datum		args[4];

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = PointerGetDatum(error);
	args[3] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, PLAN_MOVE_TO_FAILED), args, NULL, false,
				 SPI_OK_INSERT_RETURNING);
	return SPI_processed == 1;
}

/*
 * The backoff of API.md: min(1 hour, 10 s * 2^(attempts-1)) times a random
 * factor in [0.5, 1.0], so released jobs of one failure spread out.
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

/* queue_delete(id, token): the job is done. */
Datum
jobqueue_delete(PG_FUNCTION_ARGS)
{
	int64		id;
	int64		token;
	Datum		args[2];
	bool		deleted;

	ArgIdAndToken(fcinfo, &id, &token);
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);

	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, PLAN_DELETE), args, NULL, false, SPI_OK_DELETE);
	deleted = SPI_processed == 1;
	SPI_finish();

	PG_RETURN_BOOL(deleted);
}

/*
 * Release the claimed job (id, token) for another attempt after delay (NULL:
 * backoff).  Attempts are not touched: the claim counted this one.  A job
 * with no attempts left goes to the failed table instead.  Returns false
 * when the token is not the current claim's.  *due_queue is set to the
 * job's queue when the job is due again right now (the caller may wake the
 * queue), else to NULL.  Must be called between SPI_connect and SPI_finish.
 */
bool
ReleaseClaimed(FunctionCallInfo fcinfo, int64 id, int64 token, Interval *delay,
			   text *error, TimestampTz now, text **due_queue)
{
	Datum		args[5];
	bool		isnull;
	int32		attempts;
	int32		max_attempts;
	text	   *queue;
	TimestampTz available_at;

	*due_queue = NULL;

	/* Lock the claim first, so attempts cannot change under the decision. */
	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	QueueExecute(QueuePlan(fcinfo, PLAN_LOCK_CLAIMED), args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	queue = DatumGetTextPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));

	if (attempts >= max_attempts)
	{
		if (VARSIZE_ANY_EXHDR(error) == 0)
			error = cstring_to_text("released with no attempts left");
		return MoveClaimedToFailed(fcinfo, id, token, error, now);
	}

	available_at = QueueTimeAfter(now, delay != NULL ? delay : BackoffDelay(attempts));
	NoteJobDueAt(available_at);	/* due again then; a deadline may come first */
	args[2] = TimestampTzGetDatum(available_at);
	args[3] = TimestampTzGetDatum(now);
	args[4] = PointerGetDatum(error);
	QueueExecute(QueuePlan(fcinfo, PLAN_RELEASE), args, NULL, false, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		return false;
	if (available_at <= now)
		*due_queue = queue;
	return true;
}

/* queue_release(id, token, delay, error); from 1.1 a job due now wakes its queue. */
static Datum
ReleaseFromArgs(FunctionCallInfo fcinfo, bool schema_1_1)
{
	int64		id;
	int64		token;
	Interval   *delay = NULL;
	text	   *error;
	text	   *due_queue;
	bool		released;
	bool		wake = false;

	ArgIdAndToken(fcinfo, &id, &token);
	if (!PG_ARGISNULL(2))
	{
		delay = PG_GETARG_INTERVAL_P(2);
		CheckNonNegativeInterval(delay, "delay");
	}
	error = ArgErrorText(fcinfo, 3);

	SPI_connect();
	released = ReleaseClaimed(fcinfo, id, token, delay, error, QueueNow(), &due_queue);
	if (schema_1_1 && due_queue != NULL)
	{
		MarkJobsDue();
		wake = QueueWantsWakeups(fcinfo, due_queue);
		if (wake)
			WakeQueue(due_queue);	/* queued now: due_queue lives in SPI memory */
	}
	SPI_finish();
	PG_RETURN_BOOL(released);
}

Datum
jobqueue_release(PG_FUNCTION_ARGS)
{
	return ReleaseFromArgs(fcinfo, false);
}

Datum
jobqueue_release_1_1(PG_FUNCTION_ARGS)
{
	return ReleaseFromArgs(fcinfo, true);
}

/*
 * queue_fail(id, token, error): a permanent error; to the failed table now.
 * An empty error stores the job's last recorded error, or says none was given.
 */
Datum
jobqueue_fail(PG_FUNCTION_ARGS)
{
	int64		id;
	int64		token;
	text	   *error;
	bool		failed;

	ArgIdAndToken(fcinfo, &id, &token);
	error = ArgErrorText(fcinfo, 2);

	SPI_connect();
	failed = MoveClaimedToFailed(fcinfo, id, token, error, QueueNow());
	SPI_finish();

	PG_RETURN_BOOL(failed);
}

/* queue_extend(id, token, lease): the lease now ends lease from now. */
Datum
jobqueue_extend(PG_FUNCTION_ARGS)
{
	int64		id;
	int64		token;
	Interval   *lease;
	Datum		args[3];
	bool		extended;

	ArgIdAndToken(fcinfo, &id, &token);
	lease = ArgInterval(fcinfo, 2, "lease", NULL);
	CheckLeaseInterval(lease, "lease");

	args[0] = Int64GetDatum(id);
	args[1] = Int64GetDatum(token);
	args[2] = TimestampTzGetDatum(QueueTimeAfter(QueueNow(), lease));
	NoteJobDueAt(DatumGetTimestampTz(args[2]));	/* the lease may end sooner */

	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, PLAN_EXTEND), args, NULL, false, SPI_OK_UPDATE);
	extended = SPI_processed == 1;
	SPI_finish();

	PG_RETURN_BOOL(extended);
}
