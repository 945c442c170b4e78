/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  Batch calls: push many jobs, and complete, release or fail many claimed
 *	  jobs, in one call each.  Batching is where a queue's throughput comes
 *	  from: one round trip, and for pushes and deletions one statement,
 *	  instead of hundreds.
 *
 * queue_push_many takes a JSON array of job objects with the fields of
 * queue_push; jobs without a unique key go in with one INSERT, jobs with one
 * through queue_push's own path (so duplicates, also within the batch, get
 * the holder's id), as do jobs with flow control (1.5).  The completion calls are fenced per job by its own
 * token, and return the ids they acted on.  queue_delete_many locks and
 * deletes in two statements; queue_release_many and queue_fail_many take
 * the one-job path per job (two statements each), since each job's attempts
 * decide what happens to it.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(jobqueue_push_many);
PG_FUNCTION_INFO_V1(jobqueue_push_many_1_3);
PG_FUNCTION_INFO_V1(jobqueue_push_many_1_5);
PG_FUNCTION_INFO_V1(jobqueue_delete_many);
PG_FUNCTION_INFO_V1(jobqueue_release_many);
PG_FUNCTION_INFO_V1(jobqueue_fail_many);

#define PUSH_BATCH_SQL(columns, values) \
	JQ_HOT_PATH_MARK "INSERT INTO @J@" \
	" (queue, name, payload, priority, max_attempts, available_at, ready, created_at," \
	"  deadline" columns ")" \
	" SELECT q, n, p, pr, ma, av, av <= $7, $7, dl" values \
	" FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)," \
	"   pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)," \
	"   pg_catalog.unnest($8)) AS u(q, n, p, pr, ma, av, dl)" \
	" RETURNING id"

/*
 * The statements of batch.c, run by the statement engine (exec/statements.c);
 * registered once (batch_statements, from the folder's Init).
 */
enum
{
	PLAN_PUSH_BATCH,
	PLAN_LOCK_CLAIMED_MANY,
	PLAN_DELETE_IDS,
	NUM_BATCH_STATEMENTS
};

static JqStatement statements[NUM_BATCH_STATEMENTS] = {
	[PLAN_PUSH_BATCH] = {.name = "push_batch", .text = {
		/* Jobs without unique keys, in one statement; ids come back in input order. */
		[JQ_API_1_1] = {
			PUSH_BATCH_SQL("", ""),
			8, {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
				TIMESTAMPTZARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID}
		},
		[JQ_API_1_3] = {
			PUSH_BATCH_SQL(PUSH_INTO_RING_COLUMNS, NEXT_JOB_ID ", $9"),
			9, {TEXTARRAYOID, TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
				TIMESTAMPTZARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZARRAYOID, INT2OID},
			.per_partition = true
		},
	}},
	[PLAN_LOCK_CLAIMED_MANY] = {.name = "lock_claimed_many", .text = {
		/* Batch completion: lock the jobs, pair tokens in C, then delete. */
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "SELECT id, token, queue FROM @J@ WHERE id = ANY ($1) ORDER BY id FOR UPDATE",
			1, {INT8ARRAYOID},
			.per_partition = true
		},
	}},
	[PLAN_DELETE_IDS] = {.name = "delete_ids", .text = {
		[JQ_API_1_1] = {
			JQ_HOT_PATH_MARK "DELETE FROM @J@ WHERE id = ANY ($1)",
			1, {INT8ARRAYOID},
			.per_partition = true
		},
	}},
};

JqStatementSet batch_statements = JQ_STATEMENT_SET(statements);

/* The fields of a job object, in the order of the hint below; since 1.5 also the flow fields. */
typedef enum JobFieldId
{
	FIELD_NAME,
	FIELD_PAYLOAD,
	FIELD_QUEUE,
	FIELD_DELAY,
	FIELD_PRIORITY,
	FIELD_UNIQUE_KEY,
	FIELD_MAX_ATTEMPTS,
	FIELD_DEADLINE,
	FIELD_CONCURRENCY_KEY,		/* the first flow field (1.5) */
	FIELD_ON_DUPLICATE,
	FIELD_AFTER,
	FIELD_AFTER_FAILED,
	NUM_JOB_FIELDS
} JobFieldId;

#define FIRST_FLOW_FIELD FIELD_CONCURRENCY_KEY

static const char *const job_field_names[NUM_JOB_FIELDS] = {
	"name", "payload", "queue", "delay", "priority", "unique_key", "max_attempts",
	"deadline", "concurrency_key", "on_duplicate", "after", "after_failed"
};

/* The fields given in one job object (JSON null: not given), read in one pass. */
typedef struct JobFields
{
	JsonbValue	values[NUM_JOB_FIELDS];
	bool		given[NUM_JOB_FIELDS];
} JobFields;

/* Names the element being read in any error raised while reading it. */
static void
JobElementContext(void *arg)
{
	errcontext("in element %d of the jobs array", *(int *) arg + 1);
}

/* The value of field id, or NULL when the job object does not give it. */
static JsonbValue *
JobField(JobFields *fields, JobFieldId id)
{
	return fields->given[id] ? &fields->values[id] : NULL;
}

static char *
FieldString(JsonbValue *value, const char *field)
{
	if (value->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be a JSON string", field)));
	return pnstrdup(value->val.string.val, value->val.string.len);
}

static text *
FieldText(JsonbValue *value, const char *field)
{
	if (value->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be a JSON string", field)));
	return cstring_to_text_with_len(value->val.string.val, value->val.string.len);
}

static Numeric
Int32Numeric(int32 value)
{
	return DatumGetNumeric(DirectFunctionCall1(int4_numeric, Int32GetDatum(value)));
}

/* A whole number within [min_value, max_value], else 22023 naming the field. */
static int32
FieldInteger(JsonbValue *value, const char *field, int32 min_value, int32 max_value)
{
	Datum		number;
	Datum		whole;

	if (value->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be a JSON number", field)));
	/* exact decimal comparisons: JSON numbers are exact */
	number = NumericGetDatum(value->val.numeric);
	whole = DirectFunctionCall2(numeric_trunc, number, Int32GetDatum(0));
	if (!DatumGetBool(DirectFunctionCall2(numeric_eq, number, whole)) ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, number,
										 NumericGetDatum(Int32Numeric(min_value)))) ||
		DatumGetBool(DirectFunctionCall2(numeric_gt, number,
										 NumericGetDatum(Int32Numeric(max_value)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be a whole number between %d and %d", field,
						min_value, max_value)));
	return DatumGetInt32(DirectFunctionCall1(numeric_int4, number));
}

/* Longest delay a number of seconds may ask for: 100 years. */
#define MAX_DELAY_SECONDS (100.0 * 365.25 * 86400.0)

/* A delay: an interval string ('5 minutes') or a number of seconds. */
static Interval *
FieldInterval(JsonbValue *value, const char *field)
{
	Interval   *result = palloc0(sizeof(Interval));

	if (value->type == jbvNumeric)
	{
		double		seconds = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
																 NumericGetDatum(value->val.numeric)));

		if (!(fabs(seconds) <= MAX_DELAY_SECONDS))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("field \"%s\" is out of range: at most 100 years", field)));
		result->time = (int64) rint(seconds * USECS_PER_SEC);
		return result;
	}
	if (!ParseIntervalQuietly(FieldString(value, field), result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be an interval such as \"5 minutes\" or a number of seconds",
						field)));
	return result;
}

/* A time: timestamptz text such as "2030-01-01 12:00+00". */
static TimestampTz
FieldTimestamp(JsonbValue *value, const char *field)
{
	TimestampTz result;

	if (!ParseTimestampQuietly(FieldString(value, field), &result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be a timestamp such as \"2030-01-01 12:00:00+00\"",
						field)));
	return result;
}

/* The field a key names (NUM_JOB_FIELDS: none). */
static JobFieldId
FieldNamed(const JsonbValue *key)
{
	for (int id = 0; id < NUM_JOB_FIELDS; id++)
		if (strlen(job_field_names[id]) == (size_t) key->val.string.len &&
			memcmp(job_field_names[id], key->val.string.val, key->val.string.len) == 0)
			return id;
	return NUM_JOB_FIELDS;
}

/*
 * The fields of a job object, in one pass over its keys.  Every key must be
 * one queue_push knows (the flow fields since 1.5): typos fail loudly.
 */
static void
ReadJobFields(JsonbContainer *object, bool flow, JobFields *fields)
{
	JsonbIterator *it = JsonbIteratorInit(object);
	JsonbValue	value;
	JsonbIteratorToken token;
	JobFieldId	field = NUM_JOB_FIELDS;

	memset(fields->given, 0, sizeof(fields->given));
	while ((token = JsonbIteratorNext(&it, &value, true)) != WJB_DONE)
	{
		if (token == WJB_KEY)
		{
			field = FieldNamed(&value);
			if (field == NUM_JOB_FIELDS || (!flow && field >= FIRST_FLOW_FIELD))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown field \"%.*s\"", value.val.string.len, value.val.string.val),
						 errhint("A job object may have: name, payload, queue, delay, priority, unique_key, max_attempts, deadline%s.",
								 flow ? ", concurrency_key, on_duplicate, after, after_failed" : "")));
		}
		else if (token == WJB_VALUE && value.type != jbvNull)
		{
			fields->values[field] = value;
			fields->given[field] = true;
		}
	}
}

/* A job id: a whole JSON number within bigint. */
static int64
FieldJobId(JsonbValue *value, const char *field)
{
	Datum		number;
	bool		whole;

	if (value->type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must be an array of job ids (JSON numbers)", field)));
	number = NumericGetDatum(value->val.numeric);
	whole = DatumGetBool(DirectFunctionCall2(numeric_eq, number,
											 DirectFunctionCall2(numeric_trunc, number,
																 Int32GetDatum(0))));
	if (!whole ||
		DatumGetBool(DirectFunctionCall2(numeric_lt, number,
										 DirectFunctionCall1(int8_numeric, Int64GetDatum(PG_INT64_MIN)))) ||
		DatumGetBool(DirectFunctionCall2(numeric_gt, number,
										 DirectFunctionCall1(int8_numeric, Int64GetDatum(PG_INT64_MAX)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("field \"%s\" must hold whole numbers (job ids)", field)));
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, number));
}

/* The flow-control fields of a job object (1.5), with queue_push's rules. */
static void
ReadJobSpecFlow(JobFields *fields, JobSpec *job, TimestampTz now)
{
	JsonbValue *value;

	if ((value = JobField(fields, FIELD_CONCURRENCY_KEY)) != NULL)
	{
		job->concurrency_key = FieldText(value, "concurrency_key");
		CheckNameText(job->concurrency_key, "concurrency_key", JQ_CONCURRENCY_KEY_MAX);
	}
	if ((value = JobField(fields, FIELD_ON_DUPLICATE)) != NULL)
		job->on_duplicate = ParseOnDuplicate(FieldString(value, "on_duplicate"), "on_duplicate");
	if ((value = JobField(fields, FIELD_AFTER_FAILED)) != NULL)
		job->run_if_parent_fails = ParseAfterFailed(FieldString(value, "after_failed"),
													"after_failed");
	if ((value = JobField(fields, FIELD_AFTER)) != NULL)
	{
		JsonbContainer *array;
		int			count;
		int64	   *ids;

		if (value->type != jbvBinary || !JsonContainerIsArray(value->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("field \"after\" must be an array of job ids")));
		array = value->val.binary.data;
		count = JsonContainerSize(array);
		if (count > JQ_PARENTS_LIMIT)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("field \"after\" has %d ids, at most %d are allowed",
							count, JQ_PARENTS_LIMIT)));
		ids = palloc(sizeof(int64) * Max(count, 1));
		for (int i = 0; i < count; i++)
			ids[i] = FieldJobId(getIthJsonbValueFromContainer(array, i), "after");
		SetJobSpecParents(job, ids, count, "after");
	}
	CheckJobSpecFlow(job, now);
}

/* One element of the jobs array as a checked JobSpec, with queue_push's rules. */
static void
ReadJobSpec(JsonbValue *element, JobSpec *job, TimestampTz now, bool flow)
{
	JobFields	fields;
	JsonbValue *value;
	Interval   *delay;

	if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("each job must be a JSON object")));
	ReadJobFields(element->val.binary.data, flow, &fields);

	if ((value = JobField(&fields, FIELD_NAME)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("field \"name\" must be given")));
	job->name = FieldText(value, "name");
	CheckNameText(job->name, "name", JQ_JOB_NAME_MAX);

	value = JobField(&fields, FIELD_PAYLOAD);
	job->payload = value ? JsonbValueToJsonb(value) : EmptyPayload();
	CheckPayload(job->payload, "payload");

	value = JobField(&fields, FIELD_QUEUE);
	job->queue = value ? FieldText(value, "queue") : cstring_to_text(JQ_DEFAULT_QUEUE);
	CheckNameText(job->queue, "queue", JQ_QUEUE_NAME_MAX);

	value = JobField(&fields, FIELD_DELAY);
	delay = value ? FieldInterval(value, "delay") : palloc0(sizeof(Interval));
	CheckNonNegativeInterval(delay, "delay");
	job->available_at = QueueTimeAfter(now, delay);

	value = JobField(&fields, FIELD_PRIORITY);
	job->priority = value ? FieldInteger(value, "priority", PG_INT32_MIN, PG_INT32_MAX)
		: JQ_DEFAULT_PRIORITY;

	value = JobField(&fields, FIELD_UNIQUE_KEY);
	job->unique_key = value ? FieldText(value, "unique_key") : NULL;
	if (job->unique_key)
		CheckNameText(job->unique_key, "unique_key", JQ_UNIQUE_KEY_MAX);

	value = JobField(&fields, FIELD_MAX_ATTEMPTS);
	job->max_attempts = value ? FieldInteger(value, "max_attempts", 1, JQ_MAX_ATTEMPTS_LIMIT)
		: JQ_DEFAULT_MAX_ATTEMPTS;

	value = JobField(&fields, FIELD_DEADLINE);
	job->has_deadline = value != NULL;
	job->deadline = 0;
	if (value)
	{
		job->deadline = FieldTimestamp(value, "deadline");
		CheckDeadline(job->deadline, job->available_at);
	}
	ClearJobSpecFlow(job);
	if (flow)
		ReadJobSpecFlow(&fields, job, now);
}

static Datum
Int8ArrayResult(int64 *values, int count)
{
	Datum	   *datums = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		datums[i] = Int64GetDatum(values[i]);
	PG_RETURN_ARRAYTYPE_P(Int8ArrayFromDatums(datums, count));
}

/*
 * Insert specs[first..first+count), none with a unique key, in one
 * statement; their ids go to ids[first..], in input order.
 */
static void
InsertPlainRunStatement(const JqCall *call, const JobSpec *specs, int first, int count,
						JobTable table, Datum ring, int64 *ids)
{
	static const Oid types[6] = {TEXTOID, TEXTOID, JSONBOID, INT4OID, INT4OID, TIMESTAMPTZOID};
	Datum	   *columns[7];
	Datum		args[9];		/* [8]: the ring partition (1.3) */
	bool	   *deadline_nulls = palloc(sizeof(bool) * count);
	int			dims[1] = {count};
	int			lbs[1] = {1};

	for (int c = 0; c < 7; c++)
		columns[c] = palloc(sizeof(Datum) * count);
	for (int row = 0; row < count; row++)
	{
		const JobSpec *job = &specs[first + row];

		columns[0][row] = PointerGetDatum(job->queue);
		columns[1][row] = PointerGetDatum(job->name);
		columns[2][row] = PointerGetDatum(job->payload);
		columns[3][row] = Int32GetDatum(job->priority);
		columns[4][row] = Int32GetDatum(job->max_attempts);
		columns[5][row] = TimestampTzGetDatum(job->available_at);
		columns[6][row] = TimestampTzGetDatum(job->deadline);
		deadline_nulls[row] = !job->has_deadline;
	}
	for (int c = 0; c < 6; c++)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(types[c], &typlen, &typbyval, &typalign);
		args[c] = PointerGetDatum(construct_array(columns[c], count, types[c],
												  typlen, typbyval, typalign));
	}
	args[6] = TimestampTzGetDatum(call->now);
	args[7] = PointerGetDatum(construct_md_array(columns[6], deadline_nulls, 1, dims, lbs,
												 TIMESTAMPTZOID, sizeof(TimestampTz),
												 true, TYPALIGN_DOUBLE));
	args[8] = ring;
	QueueExecuteOn(call, &statements[PLAN_PUSH_BATCH], table, args, NULL,
				   SPI_OK_INSERT_RETURNING);
	if (SPI_processed != (uint64) count)
		elog(ERROR, "jobqueue: batch insert returned " UINT64_FORMAT " rows for %d jobs",
			 SPI_processed, count);
	/* RETURNING gives the rows in insertion order, which is input order */
	for (int row = 0; row < count; row++)
		ids[first + row] = SpiInt8(row, 1);	/* RETURNING id */
}

/*
 * Insert specs[first..first+count), none with a unique key or flow
 * control: without a plan where the partition allows (store/direct_insert.c),
 * else in one statement.  Their ids go to ids[first..], in input order;
 * queues with a job due now are added to *due_queues.
 */
static void
InsertPlainRun(const JqCall *call, const JobSpec *specs, int first, int count,
			   int64 *ids, List **due_queues)
{
	TimestampTz now = call->now;
	Datum		ring = (Datum) 0;
	JobTable	table = PushTable(call, &ring);

	if (!InsertJobsDirectly(call, &specs[first], count, table, DatumGetInt16(ring), &ids[first],
							NULL))
		InsertPlainRunStatement(call, specs, first, count, table, ring, ids);
	for (int row = 0; row < count; row++)
	{
		const JobSpec *job = &specs[first + row];
		ClaimPosition position = {job->priority, job->available_at, ids[first + row]};

		NoteJobSpecDue(job, now);
		NoteJobCanRun(job->queue, &position, job->available_at <= now, JOB_PUSHED,
					  JOB_WAKE_IF_WANTED, due_queues);
	}
}

/*
 * queue_push_many(jobs jsonb) returns bigint[]: the id of each job, in the
 * order given (for a held unique key, the holder's id).  Jobs are inserted
 * in input order, so equal jobs are claimed in that order too: each run of
 * jobs without a unique key in one statement, a job with one by itself.
 */
static Datum
PushMany(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	Jsonb	   *jobs;
	int			count;
	JobSpec    *specs;
	int64	   *ids;
	ErrorContextCallback context;
	int			element = 0;
	int			run_start = 0;
	List	   *due_queues = NIL;

	JqCallBeginWriting(&call, fcinfo, version);
	ArgRequire(fcinfo, 0, "jobs");
	jobs = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_ARRAY(jobs) || JB_ROOT_IS_SCALAR(jobs))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"jobs\" must be a JSON array of job objects")));
	count = JB_ROOT_COUNT(jobs);
	if (count > JQ_MAX_JOBS_LIMIT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"jobs\" has %d jobs, at most %d are allowed in one call",
						count, JQ_MAX_JOBS_LIMIT)));

	/* Check every job before writing anything. */
	specs = palloc(sizeof(JobSpec) * Max(count, 1));
	context.callback = JobElementContext;
	context.arg = &element;
	context.previous = error_context_stack;
	error_context_stack = &context;
	for (element = 0; element < count; element++)
		ReadJobSpec(getIthJsonbValueFromContainer(&jobs->root, element), &specs[element],
					call.now, JqCallSince(&call, JQ_API_1_5));
	error_context_stack = context.previous;

	ids = palloc(sizeof(int64) * Max(count, 1));
	SPI_connect();
	for (int i = 0; i <= count; i++)
	{
		bool		inserted;
		bool		wants_wake;

		if (i < count && specs[i].unique_key == NULL && !JobSpecUsesFlow(&specs[i]))
			continue;
		if (i > run_start)
			InsertPlainRun(&call, specs, run_start, i - run_start, ids, &due_queues);
		run_start = i + 1;
		if (i == count)
			break;
		CHECK_FOR_INTERRUPTS();
		ids[i] = InsertJob(&call, &specs[i], &inserted, &wants_wake);
		if (inserted && specs[i].available_at <= call.now)
			due_queues = AddWakeQueue(due_queues, specs[i].queue);
	}
	WakeQueuesThatWantIt(&call, due_queues);
	SPI_finish();

	return Int8ArrayResult(ids, count);
}

Datum
jobqueue_push_many(PG_FUNCTION_ARGS)
{
	return PushMany(fcinfo, JQ_API_1_1);
}

/* 1.3: jobs with a unique key go to the storage ring's long partition */
Datum
jobqueue_push_many_1_3(PG_FUNCTION_ARGS)
{
	return PushMany(fcinfo, JQ_API_1_3);
}

/* 1.5: jobs may have the flow-control fields */
Datum
jobqueue_push_many_1_5(PG_FUNCTION_ARGS)
{
	return PushMany(fcinfo, JQ_API_1_5);
}

typedef struct IdToken
{
	int64		id;				/* first: sorted with CompareLeadingIds */
	int64		token;
	bool		taken;			/* an id given twice completes once */
	JobTable	table;			/* where it was found */
	text	   *queue;			/* the job's */
} IdToken;

/*
 * Lock the jobs of ids (count of them) and read their current claims into
 * current (room for count); returns how many are held by a claim.  Since
 * 1.3 on each partition in turn, with the ids not found yet: a statement
 * on the partitioned table would look for every id in every partition.
 */
static int
LockCurrentClaims(const JqCall *call, Datum *ids, int count, IdToken *current)
{
	JobTable	tables[3];
	int			table_count;
	Datum	   *left;
	int			left_count = count;
	int			found = 0;

	if (count <= 0)
		return 0;
	table_count = JobTablesToSearch(call, tables);
	left = palloc(sizeof(Datum) * count);
	memcpy(left, ids, sizeof(Datum) * count);
	for (int t = 0; t < table_count && left_count > 0; t++)
	{
		Datum		args[1];

		args[0] = PointerGetDatum(Int8ArrayFromDatums(left, left_count));
		QueueExecuteOn(call, &statements[PLAN_LOCK_CLAIMED_MANY], tables[t], args, NULL, SPI_OK_SELECT);
		for (uint64 row = 0; row < SPI_processed; row++)
		{
			int64		id = SpiInt8(row, 1);

			/* columns: id, token (NULL while nobody holds the job), queue */
			for (int i = 0; i < left_count; i++)
				if (DatumGetInt64(left[i]) == id)
					left[i--] = left[--left_count];
			if (SpiIsNull(row, 2))
				continue;
			current[found].id = id;
			current[found].token = SpiInt8(row, 2);
			current[found].taken = false;
			current[found].table = tables[t];
			current[found].queue = SpiTextCopy(row, 3);
			found++;
			NoteJobFoundIn(tables[t]);
		}
	}
	qsort(current, found, sizeof(IdToken), CompareLeadingIds);
	return found;
}

/*
 * queue_delete_many's statements: the jobs are locked, each (id, token)
 * pair is checked against the current claim, and only the matching ones are
 * deleted.
 */
static Datum
DeleteManyWithStatements(JqCall *call, int64 *ids, int64 *tokens, int count)
{
	Datum	   *id_datums;
	IdToken    *current;
	int			current_count;
	int64	   *done;
	Datum	   *done_datums;
	int			done_count = 0;
	JobTable   *done_tables;

	id_datums = palloc(sizeof(Datum) * count);
	for (int i = 0; i < count; i++)
		id_datums[i] = Int64GetDatum(ids[i]);
	/* the result outlives SPI_finish: allocate it before SPI_connect */
	done = palloc(sizeof(int64) * count);
	done_datums = palloc(sizeof(Datum) * count);
	done_tables = palloc(sizeof(JobTable) * count);

	SPI_connect();
	/* the current claims, sorted by id; a job nobody holds matches no pair */
	current = palloc(sizeof(IdToken) * count);
	current_count = LockCurrentClaims(call, id_datums, count, current);

	for (int i = 0; i < count; i++)
	{
		IdToken		key = {ids[i], 0, false};
		IdToken    *match = bsearch(&key, current, current_count, sizeof(IdToken),
									CompareLeadingIds);

		if (match == NULL || match->taken || match->token != tokens[i])
			continue;
		match->taken = true;
		CountJobs(match->queue, JOB_COMPLETED, 1);
		done[done_count] = ids[i];
		done_tables[done_count] = match->table;
		done_count++;
	}

	/* one DELETE per table the done jobs were found in */
	for (JobTable t = JOBS_ALL; t < NUM_JOB_TABLES; t++)
	{
		int			in_table = 0;
		Datum		args[1];

		for (int i = 0; i < done_count; i++)
			if (done_tables[i] == t)
				done_datums[in_table++] = Int64GetDatum(done[i]);
		if (in_table == 0)
			continue;
		args[0] = PointerGetDatum(Int8ArrayFromDatums(done_datums, in_table));
		RemoveJobs(call, JOB_REMOVAL_COMPLETED, &statements[PLAN_DELETE_IDS], t, args, NULL,
				   SPI_OK_DELETE, NULL);
	}
	SPI_finish();

	return Int8ArrayResult(done, done_count);
}

/* A pair of queue_delete_many's arguments, for putting them in id order. */
typedef struct PairAt
{
	int64		id;
	int			position;		/* in the arguments */
} PairAt;

static int
ComparePairs(const void *a, const void *b)
{
	const PairAt *x = a;
	const PairAt *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->position - y->position;
}

/*
 * The pairs (ids[i], tokens[i]) in id order, the order the batch calls lock
 * jobs in (pairs of one id in the order given): returns where each came
 * from, and sets *sorted_ids and *sorted_tokens.
 */
static PairAt *
PairsInIdOrder(const int64 *ids, const int64 *tokens, int count, int64 **sorted_ids,
			   int64 **sorted_tokens)
{
	PairAt	   *order = palloc(sizeof(PairAt) * Max(count, 1));

	for (int i = 0; i < count; i++)
		order[i] = (PairAt) {ids[i], i};
	qsort(order, count, sizeof(PairAt), ComparePairs);
	*sorted_ids = palloc(sizeof(int64) * Max(count, 1));
	*sorted_tokens = palloc(sizeof(int64) * Max(count, 1));
	for (int k = 0; k < count; k++)
	{
		(*sorted_ids)[k] = ids[order[k].position];
		(*sorted_tokens)[k] = tokens[order[k].position];
	}
	return order;
}

/*
 * The ids of the pairs done (done_in_id_order[k]: the k-th pair of
 * PairsInIdOrder's order), in the order given.
 */
static Datum
DoneIdsInGivenOrder(const int64 *ids, int count, const PairAt *order,
					const bool *done_in_id_order)
{
	bool	   *done = palloc0(sizeof(bool) * Max(count, 1));
	int64	   *result = palloc(sizeof(int64) * Max(count, 1));
	int			done_count = 0;

	for (int k = 0; k < count; k++)
		done[order[k].position] = done_in_id_order[k];
	for (int i = 0; i < count; i++)
		if (done[i])
			result[done_count++] = ids[i];
	return Int8ArrayResult(result, done_count);
}

/*
 * queue_delete_many(ids, tokens) returns bigint[]: the ids completed, in the
 * order given.  Each job is fenced by its own token; a job is completed once
 * however many pairs name it.  Without the executor where the partitions
 * allow (store/direct_delete.c), in id order (the order the statements lock
 * the jobs in), a key's slot handed on after the deletes; a job the direct
 * way leaves to the statement (children) takes queue_delete's; else the
 * statements.
 */
Datum
jobqueue_delete_many(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64	   *ids;
	int64	   *tokens;
	int			count;
	PairAt	   *order;
	int64	   *sorted_ids;
	int64	   *sorted_tokens;
	DirectOutcome *outcomes;
	text	  **queues;
	text	  **slot_keys;
	bool	   *done;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	count = ArgIdTokenArrays(fcinfo, &ids, &tokens);
	if (count == 0)
		return Int8ArrayResult(NULL, 0);

	order = PairsInIdOrder(ids, tokens, count, &sorted_ids, &sorted_tokens);
	outcomes = palloc(sizeof(DirectOutcome) * count);
	queues = palloc(sizeof(text *) * count);
	slot_keys = palloc(sizeof(text *) * count);
	if (!DeleteJobsDirectly(&call, count, sorted_ids, sorted_tokens, outcomes, queues, slot_keys))
		return DeleteManyWithStatements(&call, ids, tokens, count);

	done = palloc0(sizeof(bool) * count);
	for (int k = 0; k < count; k++)
	{
		if (outcomes[k] == DIRECT_DONE)
		{
			NoteCompletedDirectly(&call, queues[k], slot_keys[k]);
			done[k] = true;
		}
		else if (outcomes[k] == DIRECT_USE_STATEMENT)
			done[k] = DeleteJobWithStatement(&call, sorted_ids[k], sorted_tokens[k]);
	}
	return DoneIdsInGivenOrder(ids, count, order, done);
}

/*
 * queue_release_many(ids, tokens, delay, error) returns bigint[]: the ids
 * released (or, with no attempts left, failed), in the order given.  The
 * jobs are released in id order (api/complete.c's ReleaseClaimedMany),
 * each once however many pairs name it.
 */
Datum
jobqueue_release_many(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64	   *ids;
	int64	   *tokens;
	int			count;
	Interval   *delay;
	text	   *error;
	PairAt	   *order;
	int64	   *sorted_ids;
	int64	   *sorted_tokens;
	bool	   *released;
	List	   *due_queues = NIL;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	count = ArgIdTokenArrays(fcinfo, &ids, &tokens);
	error = ArgErrorText(fcinfo, 3);
	delay = ArgOptionalDelay(fcinfo, 2, "delay");
	if (count == 0)
		return Int8ArrayResult(NULL, 0);

	order = PairsInIdOrder(ids, tokens, count, &sorted_ids, &sorted_tokens);
	released = palloc(sizeof(bool) * count);
	SPI_connect();
	ReleaseClaimedMany(&call, count, sorted_ids, sorted_tokens, delay, error, &due_queues,
					   released);
	WakeQueuesThatWantIt(&call, due_queues);
	SPI_finish();

	return DoneIdsInGivenOrder(ids, count, order, released);
}

/*
 * queue_fail_many(ids, tokens, error) returns bigint[]: the ids failed, in
 * the order given.  The jobs are failed in id order, each once however many
 * pairs name it (api/complete.c's MoveClaimedToFailedMany).
 */
Datum
jobqueue_fail_many(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int64	   *ids;
	int64	   *tokens;
	int			count;
	text	   *error;
	PairAt	   *order;
	int64	   *sorted_ids;
	int64	   *sorted_tokens;
	bool	   *failed;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_1);
	count = ArgIdTokenArrays(fcinfo, &ids, &tokens);
	error = ArgErrorText(fcinfo, 2);
	if (count == 0)
		return Int8ArrayResult(NULL, 0);

	order = PairsInIdOrder(ids, tokens, count, &sorted_ids, &sorted_tokens);
	failed = palloc(sizeof(bool) * count);
	SPI_connect();
	MoveClaimedToFailedMany(&call, count, sorted_ids, sorted_tokens, error, failed);
	SPI_finish();

	return DoneIdsInGivenOrder(ids, count, order, failed);
}
