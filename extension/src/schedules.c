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
#include "jobqueue.h"

#include "cron.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_schedule_set);
PG_FUNCTION_INFO_V1(jobqueue_schedule_remove);
PG_FUNCTION_INFO_V1(jobqueue_schedule_list);
PG_FUNCTION_INFO_V1(jobqueue_tick);
PG_FUNCTION_INFO_V1(jobqueue_cron_next);

#define CATCH_UP_LIMIT 1000
#define DUE_BATCH 100			/* the LIMIT of PLAN_SCHEDULE_DUE */
#define CRON_TEXT_MAX 200

/* The cron argument: parsed, or 22023 naming the wrong field. */
static char *
ArgCron(FunctionCallInfo fcinfo, int argno, CronSchedule *schedule)
{
	text	   *cron = ArgNameText(fcinfo, argno, "cron", NULL, CRON_TEXT_MAX);
	char	   *expression = text_to_cstring(cron);

	CronParse(expression, schedule);
	return expression;
}

static char *
ArgZone(FunctionCallInfo fcinfo, int argno, pg_tz **zone)
{
	char	   *name = text_to_cstring(ArgNameText(fcinfo, argno, "time_zone", "UTC", 64));

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
	text	   *name = ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX);
	CronSchedule schedule;
	char	   *cron = ArgCron(fcinfo, 1, &schedule);
	text	   *job_name = ArgNameText(fcinfo, 2, "job_name", NULL, JQ_JOB_NAME_MAX);
	Jsonb	   *payload = ArgPayload(fcinfo, 3, "payload");
	text	   *queue = ArgNameText(fcinfo, 4, "queue", "default", JQ_QUEUE_NAME_MAX);
	int32		priority = ArgInt(fcinfo, 5, "priority", 0, PG_INT32_MIN, PG_INT32_MAX);
	int32		max_attempts = ArgInt(fcinfo, 6, "max_attempts", 3, 1, JQ_MAX_ATTEMPTS_LIMIT);
	pg_tz	   *zone;
	char	   *zone_name = ArgZone(fcinfo, 7, &zone);
	bool		enabled = PG_ARGISNULL(8) ? true : PG_GETARG_BOOL(8);
	bool		catch_up = PG_ARGISNULL(9) ? false : PG_GETARG_BOOL(9);
	TimestampTz now = QueueNow();
	TimestampTz from = now;
	TimestampTz next_due;
	Datum		args[12];

	SPI_connect();
	args[0] = PointerGetDatum(name);
	QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_LOCK), args, NULL, false, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull && DatumGetTimestampTz(last) > from)
			from = DatumGetTimestampTz(last);
	}
	next_due = CronNextAfter(&schedule, from, zone);

	args[1] = CStringGetTextDatum(cron);
	args[2] = PointerGetDatum(job_name);
	args[3] = PointerGetDatum(payload);
	args[4] = PointerGetDatum(queue);
	args[5] = Int32GetDatum(priority);
	args[6] = Int32GetDatum(max_attempts);
	args[7] = CStringGetTextDatum(zone_name);
	args[8] = BoolGetDatum(enabled);
	args[9] = BoolGetDatum(catch_up);
	args[10] = TimestampTzGetDatum(next_due);
	args[11] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_UPSERT), args, NULL, false, SPI_OK_INSERT);
	SPI_finish();

	PG_RETURN_TIMESTAMPTZ(next_due);
}

/* queue_schedule_remove(name): false when there was no such schedule. */
Datum
jobqueue_schedule_remove(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	bool		removed;

	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX));
	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_REMOVE), args, NULL, false, SPI_OK_DELETE);
	removed = SPI_processed == 1;
	SPI_finish();
	PG_RETURN_BOOL(removed);
}

/* queue_schedule_list(): every schedule, by name. */
Datum
jobqueue_schedule_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_LIST), NULL, NULL, false, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		CHECK_FOR_INTERRUPTS();
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[row]);
	}
	SPI_finish();
	return (Datum) 0;
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

/*
 * Push the job of one window of a schedule (row of the due query).
 * Returns its id (or the id of the job already holding the window's key).
 */
static int64
PushWindowJob(FunctionCallInfo fcinfo, HeapTuple row, TupleDesc desc, const char *name,
			  TimestampTz window, TimestampTz now, List **wake)
{
	JobSpec		job;
	bool		isnull;
	bool		inserted;
	bool		wants_wake;		/* checked again, once per queue, by the caller */
	int64		id;

	job.name = DatumGetTextPCopy(SPI_getbinval(row, desc, 3, &isnull));
	job.payload = DatumGetJsonbPCopy(SPI_getbinval(row, desc, 4, &isnull));
	job.queue = DatumGetTextPCopy(SPI_getbinval(row, desc, 5, &isnull));
	job.priority = DatumGetInt32(SPI_getbinval(row, desc, 6, &isnull));
	job.max_attempts = DatumGetInt32(SPI_getbinval(row, desc, 7, &isnull));
	job.unique_key = cstring_to_text(psprintf("jobqueue:schedule:%s:%s", name, UtcText(window)));
	job.available_at = now;
	job.has_deadline = false;
	job.deadline = 0;
	id = InsertJob(fcinfo, &job, now, true, &inserted, &wants_wake);
	if (inserted)
		*wake = AddWakeQueue(*wake, job.queue);
	return id;
}

/*
 * One batch of due schedules (at most DUE_BATCH, locked): enqueue their
 * windows, add them to the result, move each schedule on.  Returns how
 * many schedules the batch held.
 */
static uint64
TickDueBatch(FunctionCallInfo fcinfo, TimestampTz now, TimestampTz *windows, List **wake)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		args[5];
	SPITupleTable *due;
	uint64		due_count;

	args[0] = TimestampTzGetDatum(now);
	QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_DUE), args, NULL, false, SPI_OK_SELECT);
	due = SPI_tuptable;
	due_count = SPI_processed;

	for (uint64 row = 0; row < due_count; row++)
	{
		HeapTuple	tuple = due->vals[row];
		bool		isnull;
		char	   *name = TextDatumGetCString(SPI_getbinval(tuple, due->tupdesc, 1, &isnull));
		char	   *cron = TextDatumGetCString(SPI_getbinval(tuple, due->tupdesc, 2, &isnull));
		char	   *zone_name = TextDatumGetCString(SPI_getbinval(tuple, due->tupdesc, 8, &isnull));
		bool		catch_up = DatumGetBool(SPI_getbinval(tuple, due->tupdesc, 9, &isnull));
		TimestampTz first = DatumGetTimestampTz(SPI_getbinval(tuple, due->tupdesc, 10, &isnull));
		CronSchedule schedule;
		pg_tz	   *zone;
		int			count;
		int64		id = 0;

		CHECK_FOR_INTERRUPTS();
		CronParse(cron, &schedule);
		zone = CronZone(zone_name);
		count = DueWindows(&schedule, zone, first, now, catch_up, windows);
		for (int w = 0; w < count; w++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			id = PushWindowJob(fcinfo, tuple, due->tupdesc, name, windows[w], now, wake);
			values[0] = CStringGetTextDatum(name);
			values[1] = TimestampTzGetDatum(windows[w]);
			values[2] = Int64GetDatum(id);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}

		args[0] = CStringGetTextDatum(name);
		args[1] = TimestampTzGetDatum(CronNextAfter(&schedule, windows[count - 1], zone));
		args[2] = TimestampTzGetDatum(windows[count - 1]);
		args[3] = Int64GetDatum(id);
		args[4] = TimestampTzGetDatum(now);
		QueueExecute(QueuePlan(fcinfo, PLAN_SCHEDULE_ADVANCE), args, NULL, false, SPI_OK_UPDATE);
	}
	SPI_freetuptable(due);
	return due_count;
}

/*
 * queue_tick(): enqueue one job per due window of every enabled schedule;
 * returns (schedule, due_at, job_id) for each window enqueued.
 */
Datum
jobqueue_tick(PG_FUNCTION_ARGS)
{
	TimestampTz now = QueueNow();
	TimestampTz *windows = palloc(sizeof(TimestampTz) * CATCH_UP_LIMIT);
	List	   *wake = NIL;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	/* a handled schedule is no longer due, so the next batch holds others */
	while (TickDueBatch(fcinfo, now, windows, &wake) == DUE_BATCH)
		;
	WakeQueuesThatWantIt(fcinfo, wake);
	SPI_finish();

	return (Datum) 0;
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
	count = ArgInt(fcinfo, 3, "count", 1, 1, 1000);

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
