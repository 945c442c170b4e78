/*-------------------------------------------------------------------------
 *
 * push.c
 *	  queue_push: queue one job inside the caller's transaction.
 *
 * A push is a plain INSERT in the caller's transaction, so it commits or
 * rolls back with the caller's work.  A unique key already held is an
 * expected condition, never an error: INSERT ... ON CONFLICT DO NOTHING,
 * then read the holder's id.  If the holder vanished in between (it was
 * completed), insert again.  Batch push (batch.c) shares InsertJob.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_push);
PG_FUNCTION_INFO_V1(jobqueue_push_1_1);
PG_FUNCTION_INFO_V1(jobqueue_push_1_3);

/* Rounds of insert / find-holder before giving up on a key that keeps moving. */
#define UNIQUE_PUSH_ROUNDS 100

/* The parameters of the push plans, in their $n order. */
enum
{
	PUSH_QUEUE, PUSH_NAME, PUSH_PAYLOAD, PUSH_PRIORITY, PUSH_MAX_ATTEMPTS,
	PUSH_AVAILABLE_AT, PUSH_NOW, PUSH_UNIQUE_KEY, PUSH_DEADLINE,
	PUSH_RING,					/* since 1.3 */
	PUSH_NARGS
};

/*
 * A job that falls due later (delayed, or expiring at its deadline) must
 * be found by the claims' due-probe: tell duehint.c.
 */
void
NoteJobSpecDue(const JobSpec *job, TimestampTz now)
{
	if (job->available_at > now)
		NoteJobDueAt(job->available_at);
	if (job->has_deadline)
		NoteJobDueAt(job->deadline);
}

/* An inserted job that is claimable now may come before its queue's claim position. */
void
NoteJobSpecClaimable(const JqCall *call, const JobSpec *job, int64 id)
{
	ClaimPosition position = {job->priority, job->available_at, id};

	if (job->available_at <= call->now && JqCallSince(call, JQ_API_1_1))
		NoteClaimable(job->queue, &position);
}

/* The columns the push plans return: the id and (since 1.1) wants_wakeups. */
enum
{
	PUSHED_ID = 1, PUSHED_WANTS_WAKEUPS
};

/*
 * Insert one job, at the call's "now"; returns its id, or the id of the job
 * holding its unique key (then *inserted is false).  Since 1.1 the job's
 * deadline is stored and *wake says whether the queue wants NOTIFY
 * wake-ups.  Must be called between SPI_connect and SPI_finish.
 */
int64
InsertJob(const JqCall *call, const JobSpec *job, bool *inserted, bool *wake)
{
	Datum		values[PUSH_NARGS];
	char		nulls[PUSH_NARGS];
	JobTable	table;
	TimestampTz now = call->now;
	bool		returns_wake = JqCallSince(call, JQ_API_1_1);

	memset(nulls, ' ', sizeof(nulls));
	values[PUSH_QUEUE] = PointerGetDatum(job->queue);
	values[PUSH_NAME] = PointerGetDatum(job->name);
	values[PUSH_PAYLOAD] = PointerGetDatum(job->payload);
	values[PUSH_PRIORITY] = Int32GetDatum(job->priority);
	values[PUSH_MAX_ATTEMPTS] = Int32GetDatum(job->max_attempts);
	values[PUSH_AVAILABLE_AT] = TimestampTzGetDatum(job->available_at);
	values[PUSH_NOW] = TimestampTzGetDatum(now);
	values[PUSH_UNIQUE_KEY] = PointerGetDatum(job->unique_key);
	if (job->unique_key == NULL)
		nulls[PUSH_UNIQUE_KEY] = 'n';
	values[PUSH_DEADLINE] = TimestampTzGetDatum(job->deadline);
	if (!job->has_deadline)
		nulls[PUSH_DEADLINE] = 'n';
	table = PushTable(call, &values[PUSH_RING]);

	*inserted = true;
	*wake = false;
	NoteJobSpecDue(job, now);
	for (int round = 0; round < UNIQUE_PUSH_ROUNDS; round++)
	{
		CHECK_FOR_INTERRUPTS();
		if (job->unique_key == NULL)
			QueueExecuteOn(call, PLAN_PUSH, table, values, nulls, SPI_OK_INSERT_RETURNING);
		else
			QueueExecute(call, PLAN_PUSH_UNIQUE, values, nulls, SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 1)
		{
			int64		id = SpiInt8(0, PUSHED_ID);

			if (returns_wake)
				*wake = SpiBool(0, PUSHED_WANTS_WAKEUPS);
			NoteJobSpecClaimable(call, job, id);
			CountJobs(job->queue, JOB_PUSHED, 1);
			return id;
		}
		if (job->unique_key == NULL)
			elog(ERROR, "jobqueue: an insert without a unique key inserted nothing");

		/* Each statement takes a fresh snapshot: the holder has committed. */
		QueueExecute(call, PLAN_FIND_UNIQUE_HOLDER, &values[PUSH_UNIQUE_KEY], NULL,
					 SPI_OK_SELECT);
		if (SPI_processed == 1)
		{
			*inserted = false;
			return SpiInt8(0, 1);	/* its only column, the id */
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not push a job with unique_key \"%s\": its holder kept changing",
					text_to_cstring(job->unique_key)),
			 errhint("Retry the transaction.")));
	return 0;					/* not reached */
}

/*
 * A deadline must leave the job some time to run.  (timestamptz_to_str
 * returns a static buffer: each result is copied before the next call.)
 */
void
CheckDeadline(TimestampTz deadline, TimestampTz available_at)
{
	if (deadline <= available_at)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"deadline\" must be later than the time the job becomes due"),
				 errdetail("The job would expire before it could run: deadline %s, due %s.",
						   pstrdup(timestamptz_to_str(deadline)),
						   pstrdup(timestamptz_to_str(available_at)))));
}

/* Reads and checks queue_push's arguments (the deadline only from 1.1 on). */
static void
ArgJobSpec(const JqCall *call, JobSpec *job)
{
	FunctionCallInfo fcinfo = call->fcinfo;
	Interval   *delay;

	job->name = ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX);
	job->payload = ArgPayload(fcinfo, 1, "payload");
	job->queue = ArgNameText(fcinfo, 2, "queue", JQ_DEFAULT_QUEUE, JQ_QUEUE_NAME_MAX);
	delay = ArgOptionalDelay(fcinfo, 3, "delay");
	job->available_at = delay ? QueueTimeAfter(call->now, delay) : call->now;
	job->priority = ArgInt(fcinfo, 4, "priority", JQ_DEFAULT_PRIORITY, PG_INT32_MIN, PG_INT32_MAX);
	job->unique_key = ArgOptionalNameText(fcinfo, 5, "unique_key", JQ_UNIQUE_KEY_MAX);
	job->max_attempts = ArgInt(fcinfo, 6, "max_attempts", JQ_DEFAULT_MAX_ATTEMPTS, 1,
							   JQ_MAX_ATTEMPTS_LIMIT);
	job->has_deadline = JqCallSince(call, JQ_API_1_1) && !PG_ARGISNULL(7);
	job->deadline = job->has_deadline ? PG_GETARG_TIMESTAMPTZ(7) : 0;
	if (job->has_deadline)
		CheckDeadline(job->deadline, job->available_at);
}

static Datum
Push(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	JobSpec		job;
	bool		inserted;
	bool		wake;
	int64		id;

	JqCallBeginWriting(&call, fcinfo, version);
	ArgJobSpec(&call, &job);

	SPI_connect();
	id = InsertJob(&call, &job, &inserted, &wake);
	SPI_finish();

	/* a job due now wakes waiting claims and listeners; a held unique key wakes nobody */
	if (inserted && JqCallSince(&call, JQ_API_1_1) && job.available_at <= call.now)
	{
		MarkJobsDue();
		if (wake)
			WakeQueue(job.queue);
	}

	PG_RETURN_INT64(id);
}

/* queue_push(name, payload, queue, delay, priority, unique_key, max_attempts), 1.0 */
Datum
jobqueue_push(PG_FUNCTION_ARGS)
{
	return Push(fcinfo, JQ_API_1_0);
}

/* queue_push(..., max_attempts, deadline), 1.1: deadlines and wake-ups */
Datum
jobqueue_push_1_1(PG_FUNCTION_ARGS)
{
	return Push(fcinfo, JQ_API_1_1);
}

/* 1.3: a job with a unique key goes to the storage ring's long partition */
Datum
jobqueue_push_1_3(PG_FUNCTION_ARGS)
{
	return Push(fcinfo, JQ_API_1_3);
}
