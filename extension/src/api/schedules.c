/*-------------------------------------------------------------------------
 *
 * schedules.c
 *	  Recurring schedules (1.2): create, remove, list, and the tick that
 *	  enqueues one job per due window, exactly once.
 *
 * Exactly once, however many sessions tick at the same time: a tick locks
 * each due schedule's row with SKIP LOCKED (a concurrent tick passes it
 * by), pushes the window's job, and moves next_due past the window in the
 * same transaction.  The job also carries the unique key
 * "jobqueue:schedule:<name>:<window, ISO 8601 UTC>", so even a tick working from an old
 * snapshot cannot queue a window twice while its job is in the queue.
 *
 * A tick that finds several windows missed (nobody ticked for a while)
 * enqueues only the latest, unless the schedule asks for catch-up; then it
 * enqueues each missed window, at most CATCH_UP_LIMIT per tick.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_schedule_set);
PG_FUNCTION_INFO_V1(jobqueue_schedule_remove);
PG_FUNCTION_INFO_V1(jobqueue_schedule_list);
PG_FUNCTION_INFO_V1(jobqueue_tick);
PG_FUNCTION_INFO_V1(jobqueue_tick_1_3);
PG_FUNCTION_INFO_V1(jobqueue_cron_next);

/*
 * The statements of schedules.c, run by the statement engine (exec/statements.c);
 * registered once (schedules_statements, from the folder's Init).
 */
enum
{
	PLAN_SCHEDULE_LOCK,
	PLAN_SCHEDULE_UPSERT,
	PLAN_SCHEDULE_REMOVE,
	PLAN_SCHEDULE_LIST,
	PLAN_SCHEDULE_DUE,
	PLAN_SCHEDULE_ADVANCE,
	NUM_SCHEDULES_STATEMENTS
};

static JqStatement statements[NUM_SCHEDULES_STATEMENTS] = {
	[PLAN_SCHEDULE_LOCK] = {.name = "schedule_lock", .text = {
		[JQ_API_1_2] = {
			"SELECT last_window FROM @S@.queue_schedules WHERE name = $1 FOR UPDATE",
			1, {TEXTOID}
		},
	}},
	[PLAN_SCHEDULE_UPSERT] = {.name = "schedule_upsert", .text = {
		[JQ_API_1_2] = {
			"INSERT INTO @S@.queue_schedules AS s"
			" (name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled,"
			"  catch_up, next_due, created_at, updated_at)"
			" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)"
			" ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, job_name = excluded.job_name,"
			"  payload = excluded.payload, queue = excluded.queue, priority = excluded.priority,"
			"  max_attempts = excluded.max_attempts, time_zone = excluded.time_zone,"
			"  enabled = excluded.enabled, catch_up = excluded.catch_up,"
			"  next_due = excluded.next_due, updated_at = excluded.updated_at",
			12, {TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, INT4OID, INT4OID, TEXTOID, BOOLOID,
				BOOLOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_SCHEDULE_REMOVE] = {.name = "schedule_remove", .text = {
		[JQ_API_1_2] = {
			"DELETE FROM @S@.queue_schedules WHERE name = $1",
			1, {TEXTOID}
		},
	}},
	[PLAN_SCHEDULE_LIST] = {.name = "schedule_list", .text = {
		[JQ_API_1_2] = {
			"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled,"
			"  catch_up, next_due, last_window, last_job_id"
			" FROM @S@.queue_schedules ORDER BY name COLLATE \"C\"",
			0, {0}
		},
	}},
	[PLAN_SCHEDULE_DUE] = {.name = "schedule_due", .text = {
		/* Due schedules, locked: a concurrent tick skips them instead of waiting. */
		[JQ_API_1_2] = {
			"SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone,"
			"  catch_up, next_due"
			" FROM @S@.queue_schedules WHERE enabled AND next_due <= $1"
			" ORDER BY next_due LIMIT " SQL_NUMBER(JQ_TICK_BATCH) " FOR UPDATE SKIP LOCKED",
			1, {TIMESTAMPTZOID}
		},
	}},
	[PLAN_SCHEDULE_ADVANCE] = {.name = "schedule_advance", .text = {
		[JQ_API_1_2] = {
			"UPDATE @S@.queue_schedules"
			" SET next_due = $2, last_window = $3, last_job_id = $4, updated_at = $5"
			" WHERE name = $1",
			5, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet schedules_statements = JQ_STATEMENT_SET(statements);

#define CATCH_UP_LIMIT 1000

/* Columns of PLAN_SCHEDULE_DUE. */
enum
{
	DUE_NAME = 1, DUE_CRON, DUE_JOB_NAME, DUE_PAYLOAD, DUE_QUEUE, DUE_PRIORITY,
	DUE_MAX_ATTEMPTS, DUE_TIME_ZONE, DUE_CATCH_UP, DUE_NEXT_DUE
};

/* The parameters of PLAN_SCHEDULE_UPSERT, in their $n order. */
enum
{
	UPSERT_NAME, UPSERT_CRON, UPSERT_JOB_NAME, UPSERT_PAYLOAD, UPSERT_QUEUE,
	UPSERT_PRIORITY, UPSERT_MAX_ATTEMPTS, UPSERT_TIME_ZONE, UPSERT_ENABLED,
	UPSERT_CATCH_UP, UPSERT_NEXT_DUE, UPSERT_NOW, UPSERT_NARGS
};

/* The cron argument: parsed, or 22023 naming the wrong field. */
static char *
ArgCron(FunctionCallInfo fcinfo, int argno, CronSchedule *schedule)
{
	text	   *cron = ArgNameText(fcinfo, argno, "cron", NULL, JQ_CRON_TEXT_MAX);
	char	   *expression = text_to_cstring(cron);

	CronParse(expression, schedule);
	return expression;
}

static char *
ArgZone(FunctionCallInfo fcinfo, int argno, pg_tz **zone)
{
	char	   *name = text_to_cstring(ArgNameText(fcinfo, argno, "time_zone", JQ_DEFAULT_TIME_ZONE,
											   JQ_TIME_ZONE_NAME_MAX));

	*zone = CronZone(name);
	return name;
}

/*
 * queue_schedule_set(name, cron, job_name, payload, queue, priority,
 * max_attempts, time_zone, enabled, catch_up): create or replace a
 * schedule; returns its next due window.  A replaced schedule keeps its
 * last window, so replacing it never enqueues a window again.
 */
Datum
jobqueue_schedule_set(PG_FUNCTION_ARGS)
{
	JqCall		call;
	CronSchedule schedule;
	pg_tz	   *zone;
	TimestampTz from;
	Datum		args[UPSERT_NARGS];

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_2);
	args[UPSERT_NAME] = PointerGetDatum(ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX));
	args[UPSERT_CRON] = CStringGetTextDatum(ArgCron(fcinfo, 1, &schedule));
	args[UPSERT_JOB_NAME] = PointerGetDatum(ArgNameText(fcinfo, 2, "job_name", NULL,
														JQ_JOB_NAME_MAX));
	args[UPSERT_PAYLOAD] = PointerGetDatum(ArgPayload(fcinfo, 3, "payload"));
	args[UPSERT_QUEUE] = PointerGetDatum(ArgNameText(fcinfo, 4, "queue", JQ_DEFAULT_QUEUE,
													 JQ_QUEUE_NAME_MAX));
	args[UPSERT_PRIORITY] = Int32GetDatum(ArgInt(fcinfo, 5, "priority", JQ_DEFAULT_PRIORITY,
												 PG_INT32_MIN, PG_INT32_MAX));
	args[UPSERT_MAX_ATTEMPTS] = Int32GetDatum(ArgInt(fcinfo, 6, "max_attempts",
													 JQ_DEFAULT_MAX_ATTEMPTS, 1,
													 JQ_MAX_ATTEMPTS_LIMIT));
	args[UPSERT_TIME_ZONE] = CStringGetTextDatum(ArgZone(fcinfo, 7, &zone));
	args[UPSERT_ENABLED] = BoolGetDatum(PG_ARGISNULL(8) ? true : PG_GETARG_BOOL(8));
	args[UPSERT_CATCH_UP] = BoolGetDatum(PG_ARGISNULL(9) ? false : PG_GETARG_BOOL(9));
	args[UPSERT_NOW] = TimestampTzGetDatum(call.now);

	SPI_connect();
	/* a replaced schedule's windows continue after its last one */
	from = call.now;
	QueueExecute(&call, &statements[PLAN_SCHEDULE_LOCK], &args[UPSERT_NAME], NULL, SPI_OK_SELECT);
	if (SPI_processed == 1 && !SpiIsNull(0, 1) && SpiTimestampTz(0, 1) > from)
		from = SpiTimestampTz(0, 1);	/* last_window */
	args[UPSERT_NEXT_DUE] = TimestampTzGetDatum(CronNextAfter(&schedule, from, zone));
	QueueExecute(&call, &statements[PLAN_SCHEDULE_UPSERT], args, NULL, SPI_OK_INSERT);
	SPI_finish();

	PG_RETURN_DATUM(args[UPSERT_NEXT_DUE]);
}

/* queue_schedule_remove(name): false when there was no such schedule. */
Datum
jobqueue_schedule_remove(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	bool		removed;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_2);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX));
	removed = RunAlone(&call, &statements[PLAN_SCHEDULE_REMOVE], args, NULL, SPI_OK_DELETE) == 1;
	PG_RETURN_BOOL(removed);
}

/* queue_schedule_list(): every schedule, by name. */
Datum
jobqueue_schedule_list(PG_FUNCTION_ARGS)
{
	JqCall		call;

	JqCallBegin(&call, fcinfo, JQ_API_1_2);
	return ReturnRowsOf(&call, &statements[PLAN_SCHEDULE_LIST], NULL, NULL);
}

/*
 * The latest window of a due schedule not after now.  Searching forward
 * from its first due window could take millions of steps after a long
 * pause, so the search starts from ever longer spans before now (an hour,
 * a day, a month, a year, eight years) and takes the first that holds a
 * window; within it the windows are few, or the span is short.
 */
static TimestampTz
LatestWindow(const CronSchedule *schedule, pg_tz *zone, TimestampTz first, TimestampTz now)
{
	static const int64 spans[] = {
		USECS_PER_HOUR, USECS_PER_DAY, 32 * USECS_PER_DAY, 367 * USECS_PER_DAY,
		8 * 367 * USECS_PER_DAY
	};

	for (int i = 0; i < lengthof(spans); i++)
	{
		TimestampTz from = Max(first - 1, now - spans[i]);
		TimestampTz window = CronNextAfter(schedule, from, zone);
		TimestampTz next;

		if (window > now)
			continue;
		while ((next = CronNextAfter(schedule, window, zone)) <= now)
		{
			CHECK_FOR_INTERRUPTS();
			window = next;
		}
		return window;
	}
	return first;
}

/*
 * The windows of a due schedule to enqueue now: from first (its next_due)
 * up to now; all of them with catch-up (at most CATCH_UP_LIMIT), else only
 * the latest.  Returns how many were written to windows[].
 */
static int
DueWindows(const CronSchedule *schedule, pg_tz *zone, TimestampTz first, TimestampTz now,
		   bool catch_up, TimestampTz *windows)
{
	TimestampTz window = first;
	int			count = 0;

	if (!catch_up)
	{
		windows[0] = LatestWindow(schedule, zone, first, now);
		return 1;
	}
	while (count < CATCH_UP_LIMIT && window <= now)
	{
		CHECK_FOR_INTERRUPTS();
		windows[count++] = window;
		window = CronNextAfter(schedule, window, zone);
	}
	return count;
}

/* A time as ISO 8601 UTC text, the same whatever the session's settings. */
static char *
UtcText(TimestampTz t)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (timestamp2tm(t, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year, tm.tm_mon, tm.tm_mday,
					tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* A due schedule, as PLAN_SCHEDULE_DUE read it. */
typedef struct DueSchedule
{
	char	   *name;
	CronSchedule schedule;
	pg_tz	   *zone;
	bool		catch_up;
	TimestampTz first;			/* its next_due */
	JobSpec		job;			/* the job of each window, but its unique key */
} DueSchedule;

/* Row of the last result (due schedules), copied out of SPI's memory. */
static void
ReadDueSchedule(uint64 row, TimestampTz now, DueSchedule *due)
{
	due->name = text_to_cstring(SpiTextCopy(row, DUE_NAME));
	CronParse(text_to_cstring(SpiTextCopy(row, DUE_CRON)), &due->schedule);
	due->zone = CronZone(text_to_cstring(SpiTextCopy(row, DUE_TIME_ZONE)));
	due->catch_up = SpiBool(row, DUE_CATCH_UP);
	due->first = SpiTimestampTz(row, DUE_NEXT_DUE);
	due->job.name = SpiTextCopy(row, DUE_JOB_NAME);
	due->job.payload = SpiJsonbCopy(row, DUE_PAYLOAD);
	due->job.queue = SpiTextCopy(row, DUE_QUEUE);
	due->job.priority = SpiInt32(row, DUE_PRIORITY);
	due->job.max_attempts = SpiInt32(row, DUE_MAX_ATTEMPTS);
	due->job.available_at = now;
	due->job.has_deadline = false;
	due->job.deadline = 0;
	ClearJobSpecFlow(&due->job);
}

/*
 * Push the job of one window of a schedule.  Returns its id (or the id of
 * the job already holding the window's key).
 */
static int64
PushWindowJob(const JqCall *call, DueSchedule *due, TimestampTz window, List **wake)
{
	bool		inserted;
	bool		wants_wake;		/* checked again, once per queue, by the caller */
	int64		id;

	due->job.unique_key = cstring_to_text(psprintf("jobqueue:schedule:%s:%s", due->name,
												   UtcText(window)));
	id = InsertJob(call, &due->job, &inserted, &wants_wake);
	if (inserted)
		*wake = AddWakeQueue(*wake, due->job.queue);
	return id;
}

/* Enqueue the due windows of one schedule, add them to the result, move it on. */
static void
TickSchedule(const JqCall *call, DueSchedule *due, TimestampTz *windows, List **wake)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) call->fcinfo->resultinfo;
	int			count = DueWindows(&due->schedule, due->zone, due->first, call->now,
								   due->catch_up, windows);
	int64		id = 0;
	Datum		args[5];

	for (int w = 0; w < count; w++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		id = PushWindowJob(call, due, windows[w], wake);
		values[0] = CStringGetTextDatum(due->name);
		values[1] = TimestampTzGetDatum(windows[w]);
		values[2] = Int64GetDatum(id);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	args[0] = CStringGetTextDatum(due->name);
	args[1] = TimestampTzGetDatum(CronNextAfter(&due->schedule, windows[count - 1], due->zone));
	args[2] = TimestampTzGetDatum(windows[count - 1]);
	args[3] = Int64GetDatum(id);
	args[4] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_SCHEDULE_ADVANCE], args, NULL, SPI_OK_UPDATE);
}

/*
 * One batch of due schedules (at most JQ_TICK_BATCH, locked): enqueue their
 * windows, add them to the result, move each schedule on.  Returns how
 * many schedules the batch held.
 */
static uint64
TickDueBatch(const JqCall *call, TimestampTz *windows, List **wake)
{
	Datum		args[1];
	DueSchedule *due;
	uint64		due_count;

	args[0] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_SCHEDULE_DUE], args, NULL, SPI_OK_SELECT);
	due_count = SPI_processed;
	due = palloc(sizeof(DueSchedule) * Max(due_count, 1));
	for (uint64 row = 0; row < due_count; row++)
		ReadDueSchedule(row, call->now, &due[row]);

	for (uint64 i = 0; i < due_count; i++)
	{
		CHECK_FOR_INTERRUPTS();
		TickSchedule(call, &due[i], windows, wake);
	}
	return due_count;
}

/*
 * queue_tick(): enqueue one job per due window of every enabled schedule;
 * returns (schedule, due_at, job_id) for each window enqueued.  Since 1.3
 * it also rotates the storage ring when that is due (rotation.c).
 */
static Datum
Tick(FunctionCallInfo fcinfo, JqApiVersion version)
{
	JqCall		call;
	TimestampTz *windows = palloc(sizeof(TimestampTz) * CATCH_UP_LIMIT);
	List	   *wake = NIL;

	JqCallBeginWriting(&call, fcinfo, version);
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	/* a handled schedule is no longer due, so the next batch holds others */
	while (TickDueBatch(&call, windows, &wake) == JQ_TICK_BATCH)
		;
	WakeQueuesThatWantIt(&call, wake);
	if (JqCallSince(&call, JQ_API_1_3))
		RotateRingIfDue(&call);
	SPI_finish();

	return (Datum) 0;
}

Datum
jobqueue_tick(PG_FUNCTION_ARGS)
{
	return Tick(fcinfo, JQ_API_1_2);
}

Datum
jobqueue_tick_1_3(PG_FUNCTION_ARGS)
{
	return Tick(fcinfo, JQ_API_1_3);
}

/* queue_cron_next(cron, after, time_zone, count): the next count times. */
Datum
jobqueue_cron_next(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CronSchedule schedule;
	pg_tz	   *zone;
	TimestampTz after;
	int32		count;

	ArgCron(fcinfo, 0, &schedule);
	after = PG_ARGISNULL(1) ? QueueNow() : PG_GETARG_TIMESTAMPTZ(1);
	ArgZone(fcinfo, 2, &zone);
	count = ArgInt(fcinfo, 3, "count", JQ_DEFAULT_CRON_COUNT, 1, JQ_CRON_COUNT_LIMIT);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	for (int i = 0; i < count; i++)
	{
		Datum		value;
		bool		isnull = false;

		after = CronNextAfter(&schedule, after, zone);
		value = TimestampTzGetDatum(after);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	return (Datum) 0;
}
