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
#include "api/api.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_push);
PG_FUNCTION_INFO_V1(jobqueue_push_1_1);
PG_FUNCTION_INFO_V1(jobqueue_push_1_3);
PG_FUNCTION_INFO_V1(jobqueue_push_1_5);

/*
 * A push of one job ($1..$7, $9: deadline); and of a batch, from arrays
 * ($1..$6, $8: deadlines; $7: now).  columns/values: what a version adds
 * (1.3: the id and the ring partition, since it inserts into the ring
 * partition itself: a partition has no identity default, and the
 * partitioned table's tuple routing costs as much as the insert).
 */
#define PUSH_SQL(columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @J@" \
	" (queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  deadline" columns ")" \
	" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $9" values ")" \
	" RETURNING id, " WANTS_WAKEUPS

/*
 * A push with a unique key (1.3: into the long partition, whose unique
 * index is the key's arbiter; a partitioned table cannot have one).
 */
#define PUSH_UNIQUE_LONG_SQL(columns, values) \
	PUSH_UNIQUE_LONG_AT_SQL("$6", "$6 <= $7", columns, values)

/* The same with the job's available_at and ready given (1.5: a job held back). */
#define PUSH_UNIQUE_LONG_AT_SQL(available_at, ready, columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs_long" \
	" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  unique_key, deadline, ring" columns ")" \
	" VALUES (pg_catalog.nextval('@S@.queue_jobs_id_seq'), $1, $2, $3, $4, $5, " available_at ", " \
	ready ", $7, $8, $9, " SQL_NUMBER(JQ_RING_LONG) values ")" \
	" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING" \
	" RETURNING id, " WANTS_WAKEUPS

/*
 * The statements of push.c, run by the statement engine (exec/statements.c);
 * registered once (push_statements, from the folder's Init).
 */
enum
{
	PLAN_PUSH,
	PLAN_PUSH_UNIQUE,
	PLAN_FIND_UNIQUE_HOLDER,
	PLAN_PUSH_HELD_BACK,
	PLAN_REPLACE_PENDING,
	NUM_PUSH_STATEMENTS
};

static JqStatement statements[NUM_PUSH_STATEMENTS] = {
	[PLAN_PUSH] = {.name = "push", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "INSERT INTO @J@"
			" (queue, name, payload, priority, max_attempts, available_at, ready, created_at)"
			" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7)"
			" RETURNING id",
			7, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID}
		},
		[JQ_API_1_1] = {
			PUSH_SQL("", ""),
			9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID}
		},
		[JQ_API_1_3] = {
			PUSH_SQL(PUSH_INTO_RING_COLUMNS, NEXT_JOB_ID ", $10"),
			10, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID, INT2OID},
			.per_partition = true
		},
	}},
	[PLAN_PUSH_UNIQUE] = {.name = "push_unique", .text = {
		/* A held key is expected, not an error: DO NOTHING, then find the holder. */
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "INSERT INTO @J@"
			" (queue, name, payload, priority, max_attempts, available_at, ready, created_at, unique_key)"
			" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8)"
			" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
			" RETURNING id",
			8, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}
		},
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "INSERT INTO @J@"
			" (queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
			"  unique_key, deadline)"
			" VALUES ($1, $2, $3, $4, $5, $6, $6 <= $7, $7, $8, $9)"
			" ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING"
			" RETURNING id, " WANTS_WAKEUPS,
			9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID}
		},
		[JQ_API_1_3] = {
			PUSH_UNIQUE_LONG_SQL("", ""),
			9, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID}
		},
		[JQ_API_1_5] = {
			PUSH_UNIQUE_LONG_AT_SQL("CASE WHEN $11 IS NULL THEN $6 ELSE " HELD_BACK_AT " END",
									"$11 IS NULL AND $6 <= $7",
									", concurrency_key, flow, parked_run_at",
									", $11, CASE WHEN $11 IS NOT NULL THEN 'key' END,"
									"  CASE WHEN $11 IS NOT NULL THEN $6 END"),
			11, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID, INT2OID, TEXTOID}
		},
	}},
	[PLAN_FIND_UNIQUE_HOLDER] = {.name = "find_unique_holder", .text = {
		[JQ_API_1_0] = {
			JQ_HOT_PATH_MARK "SELECT id FROM @J@ WHERE unique_key = $1",
			1, {TEXTOID}
		},
		[JQ_API_1_3] = {
			JQ_HOT_PATH_MARK "SELECT id FROM @S@.queue_jobs_long WHERE unique_key = $1",
			1, {TEXTOID}
		},
	}},
	[PLAN_PUSH_HELD_BACK] = {.name = "push_held_back", .text = {
		/*
		 * A push with a concurrency key ($11; $10, the ring, unused) enters held
		 * back: the caller takes it a slot, or leaves it waiting (flow.c).
		 */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "INSERT INTO @S@.queue_jobs"
			" (id, queue, name, payload, priority, max_attempts, available_at, ready, created_at,"
			"  deadline, concurrency_key, flow, parked_run_at)"
			" VALUES (" NEXT_JOB_ID_VALUE ", $1, $2, $3, $4, $5, " HELD_BACK_AT ", false, $7, $9,"
			"  $11, 'key', $6)"
			" RETURNING id, " WANTS_WAKEUPS,
			11, {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
				TEXTOID, TIMESTAMPTZOID, INT2OID, TEXTOID}
		},
	}},
	[PLAN_REPLACE_PENDING] = {.name = "replace_pending", .text = {
		/*
		 * on_duplicate: the pending job holding a unique key ($1) takes the new
		 * push's payload, priority, attempts, deadline and run-at ($2..$6, at
		 * $7); a held job is left as it is.  A held-back job keeps waiting,
		 * with the new run-at kept for when it may run.
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "UPDATE @S@.queue_jobs_long"
			" SET payload = $2, priority = $3, max_attempts = $4, deadline = $5,"
			"     available_at = CASE WHEN flow IN ('key', 'parents') THEN available_at ELSE $6 END,"
			"     parked_run_at = CASE WHEN flow IN ('key', 'parents') THEN $6 END,"
			"     ready = CASE WHEN flow IN ('key', 'parents') THEN false ELSE $6 <= $7 END"
			" WHERE id = $1 AND token IS NULL"
			" RETURNING queue, priority, available_at, ready, " WANTS_WAKEUPS_OF("queue_jobs_long.queue"),
			7, {INT8OID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet push_statements = JQ_STATEMENT_SET(statements);

/* Rounds of insert / find-holder before giving up on a key that keeps moving. */
#define UNIQUE_PUSH_ROUNDS 100

/* The parameters of the push plans, in their $n order. */
enum
{
	PUSH_QUEUE, PUSH_NAME, PUSH_PAYLOAD, PUSH_PRIORITY, PUSH_MAX_ATTEMPTS,
	PUSH_AVAILABLE_AT, PUSH_NOW, PUSH_UNIQUE_KEY, PUSH_DEADLINE,
	PUSH_RING,					/* since 1.3 */
	PUSH_CONCURRENCY_KEY,		/* since 1.5 */
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

/* The columns PLAN_REPLACE_PENDING returns. */
enum
{
	REPLACED_QUEUE = 1, REPLACED_PRIORITY, REPLACED_AVAILABLE_AT, REPLACED_READY,
	REPLACED_WANTS_WAKEUPS
};

/*
 * on_duplicate 'replace' or 'debounce': the job holding the key (id) takes
 * the new push's values if it is not held by a claim.
 */
static void
ReplacePending(const JqCall *call, const JobSpec *job, int64 id)
{
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', job->has_deadline ? ' ' : 'n', ' ', ' '};
	ClaimPosition position;

	args[0] = Int64GetDatum(id);
	args[1] = PointerGetDatum(job->payload);
	args[2] = Int32GetDatum(job->priority);
	args[3] = Int32GetDatum(job->max_attempts);
	args[4] = TimestampTzGetDatum(job->deadline);
	args[5] = TimestampTzGetDatum(job->available_at);
	args[6] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_REPLACE_PENDING], args, nulls, SPI_OK_UPDATE_RETURNING);
	if (SPI_processed != 1)
		return;					/* held by a claim: left as it is */
	position.priority = SpiInt32(0, REPLACED_PRIORITY);
	position.available_at = SpiTimestampTz(0, REPLACED_AVAILABLE_AT);
	position.id = id;
	NoteJobCanRun(SpiTextCopy(0, REPLACED_QUEUE), &position, SpiBool(0, REPLACED_READY),
				  JOB_EVENT_KINDS,
				  SpiBool(0, REPLACED_WANTS_WAKEUPS) ? JOB_WAKE_LISTENERS : JOB_WAKE_WAITERS, NULL);
}

/* The columns the push plans return: the id and (since 1.1) wants_wakeups. */
enum
{
	PUSHED_ID = 1, PUSHED_WANTS_WAKEUPS
};

/* What follows a job's insert: it may run now, or it waits for a slot of its key. */
static void
NotePushed(const JqCall *call, const JobSpec *job, int64 id)
{
	ClaimPosition position = {job->priority, job->available_at, id};

	/* a job with a concurrency key came in held back: a slot, or a wait */
	if (job->concurrency_key != NULL)
	{
		CountJobs(job->queue, JOB_PUSHED, 1);
		AdmitToFreeSlot(call, id, job->queue, job->concurrency_key);
	}
	else if (JqCallSince(call, JQ_API_1_1))
		/* the caller wakes its queue (the push) or its list (a batch, a tick) */
		NoteJobCanRun(job->queue, &position, job->available_at <= call->now, JOB_PUSHED,
					  JOB_WAKE_NOBODY, NULL);
	else
		CountJobs(job->queue, JOB_PUSHED, 1);	/* 1.0: no claim positions */
}

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
	int64		id;

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
	values[PUSH_CONCURRENCY_KEY] = PointerGetDatum(job->concurrency_key);
	if (job->concurrency_key == NULL)
		nulls[PUSH_CONCURRENCY_KEY] = 'n';
	table = PushTable(call, &values[PUSH_RING]);

	*inserted = true;
	*wake = false;
	NoteJobSpecDue(job, now);
	if (job->parent_count > 0)
		return InsertChild(call, job);
	if (JobSpecIsPlain(job) &&
		InsertJobsDirectly(call, job, 1, table, DatumGetInt16(values[PUSH_RING]), &id, wake))
	{
		NotePushed(call, job, id);
		return id;
	}
	for (int round = 0; round < UNIQUE_PUSH_ROUNDS; round++)
	{
		CHECK_FOR_INTERRUPTS();
		if (job->unique_key != NULL)
			QueueExecute(call, &statements[PLAN_PUSH_UNIQUE], values, nulls, SPI_OK_INSERT_RETURNING);
		else if (job->concurrency_key != NULL)
			QueueExecute(call, &statements[PLAN_PUSH_HELD_BACK], values, nulls, SPI_OK_INSERT_RETURNING);
		else
			QueueExecuteOn(call, &statements[PLAN_PUSH], table, values, nulls, SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 1)
		{
			id = SpiInt8(0, PUSHED_ID);
			if (returns_wake)
				*wake = SpiBool(0, PUSHED_WANTS_WAKEUPS);
			NotePushed(call, job, id);
			return id;
		}
		if (job->unique_key == NULL)
			elog(ERROR, "jobqueue: an insert without a unique key inserted nothing");

		/* Each statement takes a fresh snapshot: the holder has committed. */
		QueueExecute(call, &statements[PLAN_FIND_UNIQUE_HOLDER], &values[PUSH_UNIQUE_KEY], NULL,
					 SPI_OK_SELECT);
		if (SPI_processed == 1)
		{
			int64		holder = SpiInt8(0, 1);	/* its only column, the id */

			*inserted = false;
			if (job->on_duplicate != ON_DUPLICATE_KEEP)
				ReplacePending(call, job, holder);
			return holder;
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

/* A job without flow control (the defaults of the 1.5 arguments). */
void
ClearJobSpecFlow(JobSpec *job)
{
	job->concurrency_key = NULL;
	job->on_duplicate = ON_DUPLICATE_KEEP;
	job->parent_count = 0;
	job->parents = NULL;
	job->run_if_parent_fails = false;
}

/* Whether the job needs queue_push's own path (not a batch's plain INSERT). */
bool
JobSpecUsesFlow(const JobSpec *job)
{
	return job->concurrency_key != NULL || job->parent_count > 0;
}

OnDuplicate
ParseOnDuplicate(const char *value, const char *argname)
{
	if (strcmp(value, "keep") == 0)
		return ON_DUPLICATE_KEEP;
	if (strcmp(value, "replace") == 0)
		return ON_DUPLICATE_REPLACE;
	if (strcmp(value, "debounce") == 0)
		return ON_DUPLICATE_DEBOUNCE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"%s\" must be 'keep', 'replace' or 'debounce', got \"%s\"",
					argname, value)));
	return ON_DUPLICATE_KEEP;	/* not reached */
}

/* after_failed: true for 'run' (the child runs anyway), false for 'fail'. */
bool
ParseAfterFailed(const char *value, const char *argname)
{
	if (strcmp(value, "fail") == 0)
		return false;
	if (strcmp(value, "run") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"%s\" must be 'fail' or 'run', got \"%s\"", argname, value)));
	return false;				/* not reached */
}

/* The parents a job waits for: at most JQ_PARENTS_LIMIT ids, each once. */
void
SetJobSpecParents(JobSpec *job, int64 *ids, int count, const char *argname)
{
	int			distinct = 0;

	if (count > JQ_PARENTS_LIMIT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" has %d ids, at most %d are allowed",
						argname, count, JQ_PARENTS_LIMIT)));
	qsort(ids, count, sizeof(int64), CompareLeadingIds);
	for (int i = 0; i < count; i++)
		if (i == 0 || ids[i] != ids[distinct - 1])
			ids[distinct++] = ids[i];
	job->parents = ids;
	job->parent_count = distinct;
}

/* The rules between the flow-control arguments and the others. */
void
CheckJobSpecFlow(const JobSpec *job, TimestampTz now)
{
	if (job->on_duplicate != ON_DUPLICATE_KEEP && job->unique_key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"on_duplicate\" needs a unique_key"),
				 errdetail("'replace' and 'debounce' act on the job that holds the same unique key.")));
	if (job->on_duplicate == ON_DUPLICATE_DEBOUNCE && job->available_at <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"delay\" must be positive with on_duplicate 'debounce'"),
				 errdetail("Each push postpones the job to now + delay, so a burst runs once, after the last push.")));
	if (job->parent_count > 0 && job->unique_key != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a job cannot have both a unique_key and parents (argument \"after\")")));
}

/* queue_push's after argument (1.5): bigint[], no NULL element. */
static void
ArgParents(FunctionCallInfo fcinfo, int argno, JobSpec *job)
{
	ArrayType  *array;
	Datum	   *elems;
	bool	   *elem_nulls;
	int			count;
	int64	   *ids;

	if (PG_ARGISNULL(argno))
		return;
	array = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"after\" must be a one-dimensional array of job ids")));
	deconstruct_array(array, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &elem_nulls, &count);
	ids = palloc(sizeof(int64) * Max(count, 1));
	for (int i = 0; i < count; i++)
	{
		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"after\" must not contain NULL (element %d)", i + 1)));
		ids[i] = DatumGetInt64(elems[i]);
	}
	SetJobSpecParents(job, ids, count, "after");
}

/* Reads and checks queue_push's flow-control arguments (1.5). */
static void
ArgJobSpecFlow(const JqCall *call, JobSpec *job)
{
	FunctionCallInfo fcinfo = call->fcinfo;

	job->concurrency_key = ArgOptionalNameText(fcinfo, 8, "concurrency_key",
											   JQ_CONCURRENCY_KEY_MAX);
	if (!PG_ARGISNULL(9))
		job->on_duplicate = ParseOnDuplicate(text_to_cstring(PG_GETARG_TEXT_PP(9)),
											 "on_duplicate");
	ArgParents(fcinfo, 10, job);
	if (!PG_ARGISNULL(11))
		job->run_if_parent_fails = ParseAfterFailed(text_to_cstring(PG_GETARG_TEXT_PP(11)),
													"after_failed");
	CheckJobSpecFlow(job, call->now);
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
	ClearJobSpecFlow(job);
	if (JqCallSince(call, JQ_API_1_5))
		ArgJobSpecFlow(call, job);
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

/* queue_push(..., concurrency_key, on_duplicate, after, after_failed), 1.5: flow control */
Datum
jobqueue_push_1_5(PG_FUNCTION_ARGS)
{
	return Push(fcinfo, JQ_API_1_5);
}
