/*-------------------------------------------------------------------------
 *
 * ratelimit.c
 *	  Rate limits (1.5): at most max_claims jobs of a queue claimed per
 *	  period, across every session.
 *
 * The limit is a generic cell rate algorithm (GCRA) kept in the queue's
 * settings row: one timestamp, rate_tat, the "theoretical arrival time"
 * of the next claim.  Each claimed job moves it on by the emission
 * interval T = per / max_claims; a claim may take a job while rate_tat is
 * at most now + (per - T), so a queue idle for a period may take a burst
 * of max_claims at once and otherwise one job every T.  A claim of a
 * rate-limited queue locks the row (its candidate search says whether the
 * queue has a limit: no extra statement for queues without one), so
 * claims of that queue take turns until their transactions end, and a
 * claim that rolls back gives its jobs' turns back.  A limited claim hands
 * out fewer jobs (or none); queue_rate_limit_next says when the next one
 * may, and a waiting claim sleeps until then.
 *
 *-------------------------------------------------------------------------
 */
#include "flow/flow.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_rate_limit_set);
PG_FUNCTION_INFO_V1(jobqueue_rate_limit_remove);
PG_FUNCTION_INFO_V1(jobqueue_rate_limits);
PG_FUNCTION_INFO_V1(jobqueue_rate_limit_next);

/*
 * The statements of ratelimit.c, run by the statement engine (exec/statements.c);
 * registered once (ratelimit_statements, from the folder's Init).
 */
enum
{
	PLAN_RATE_SET,
	PLAN_RATE_REMOVE,
	PLAN_RATE_LIST,
	PLAN_RATE_READ,
	PLAN_RATE_LOCK,
	PLAN_RATE_STORE,
	NUM_RATELIMIT_STATEMENTS
};

static JqStatement statements[NUM_RATELIMIT_STATEMENTS] = {
	[PLAN_RATE_SET] = {.name = "rate_set", .text = {
		/* Rate limits (ratelimit.c). */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_settings AS s (queue, rate_max, rate_per, rate_tat, updated_at)"
			" VALUES ($1, $2, $3, NULL, $4)"
			" ON CONFLICT (queue) DO UPDATE SET rate_max = excluded.rate_max,"
			"  rate_per = excluded.rate_per, rate_tat = NULL, updated_at = excluded.updated_at",
			4, {TEXTOID, INT4OID, INTERVALOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_RATE_REMOVE] = {.name = "rate_remove", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "UPDATE @S@.queue_settings SET rate_max = NULL, rate_per = NULL, rate_tat = NULL,"
			"  updated_at = $2"
			" WHERE queue = $1 AND rate_max IS NOT NULL",
			2, {TEXTOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_RATE_LIST] = {.name = "rate_list", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
			" WHERE rate_max IS NOT NULL ORDER BY queue",
			0, {0}
		},
	}},
	[PLAN_RATE_READ] = {.name = "rate_read", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
			" WHERE queue = $1 AND rate_max IS NOT NULL",
			1, {TEXTOID}
		},
	}},
	[PLAN_RATE_LOCK] = {.name = "rate_lock", .text = {
		/* The claims of a rate-limited queue take their turns on its settings row. */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "SELECT queue, rate_max, rate_per, rate_tat FROM @S@.queue_settings"
			" WHERE queue = $1 AND rate_max IS NOT NULL FOR NO KEY UPDATE",
			1, {TEXTOID}
		},
	}},
	[PLAN_RATE_STORE] = {.name = "rate_store", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "UPDATE @S@.queue_settings SET rate_tat = $2 WHERE queue = $1",
			2, {TEXTOID, TIMESTAMPTZOID}
		},
	}},
};

JqStatementSet ratelimit_statements = JQ_STATEMENT_SET(statements);

/* Columns of PLAN_RATE_READ, PLAN_RATE_LOCK and PLAN_RATE_LIST. */
enum
{
	RATE_QUEUE = 1, RATE_MAX, RATE_PER, RATE_TAT
};

/* A rate limit as the algorithm needs it, in microseconds. */
typedef struct RateLimit
{
	int64		interval;		/* T: between two claims at the steady rate */
	int64		burst;			/* per - T: how far ahead of now rate_tat may be */
	TimestampTz tat;			/* the next claim's theoretical arrival, >= now */
} RateLimit;

/* A period as microseconds; fixed lengths only (a month is not). */
static int64
PeriodMicroseconds(Interval *per)
{
	return (int64) per->day * USECS_PER_DAY + per->time;
}

/* The limit of row "row" of the current SPI result, at now. */
static RateLimit
RateLimitOfRow(uint64 row, TimestampTz now)
{
	RateLimit	limit;
	bool		isnull;
	int32		max_claims = SpiInt32(row, RATE_MAX);
	Interval   *per = DatumGetIntervalP(SPI_getbinval(SPI_tuptable->vals[row],
													  SPI_tuptable->tupdesc, RATE_PER, &isnull));
	int64		period = PeriodMicroseconds(per);

	limit.interval = Max(period / max_claims, 1);
	limit.burst = period - limit.interval;
	limit.tat = SpiIsNull(row, RATE_TAT) ? now : Max(SpiTimestampTz(row, RATE_TAT), now);
	return limit;
}

/* How many claims the limit allows at now (0 if none). */
static int
ClaimsAllowed(const RateLimit *limit, TimestampTz now)
{
	if (limit->tat > now + limit->burst)
		return 0;
	return (int) Min((now + limit->burst - limit->tat) / limit->interval + 1, PG_INT32_MAX);
}

/* When the next claim may take a job; 0 when one may now. */
static TimestampTz
NextSlot(const RateLimit *limit, TimestampTz now)
{
	return limit->tat > now + limit->burst ? limit->tat - limit->burst : 0;
}

/*
 * For a claim that found "wanted" jobs of a rate-limited queue: how many
 * it may take, its turns taken (the settings row stays locked until the
 * transaction ends).  When it may take fewer, *next_slot says when the
 * next one may.  Between SPI_connect and SPI_finish.
 */
int
TakeRateLimitedClaims(const JqCall *call, Datum queue, int wanted, TimestampTz *next_slot)
{
	Datum		args[2] = {queue, 0};
	RateLimit	limit;
	int			allowed;

	*next_slot = 0;
	QueueExecute(call, &statements[PLAN_RATE_LOCK], args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return wanted;			/* the limit was lifted meanwhile */
	limit = RateLimitOfRow(0, call->now);
	allowed = Min(ClaimsAllowed(&limit, call->now), wanted);
	limit.tat += (int64) allowed * limit.interval;
	if (allowed < wanted)
		*next_slot = Max(limit.tat - limit.burst, call->now + 1);
	if (allowed > 0)
	{
		args[1] = TimestampTzGetDatum(limit.tat);
		QueueExecute(call, &statements[PLAN_RATE_STORE], args, NULL, SPI_OK_UPDATE);
	}
	return allowed;
}

/* queue_rate_limit_set(queue, max_claims, per) */
Datum
jobqueue_rate_limit_set(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[4];
	Interval   *per;
	int64		period;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_5);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	ArgRequire(fcinfo, 1, "max_claims");
	args[1] = Int32GetDatum(ArgInt(fcinfo, 1, "max_claims", 1, 1, JQ_RATE_CLAIMS_LIMIT));
	per = ArgInterval(fcinfo, 2, "per");
	period = PeriodMicroseconds(per);
	if (per->month != 0 || period < 1000 ||
		period > (int64) JQ_RATE_PERIOD_MAX_SECONDS * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"per\" must be between 1 millisecond and %d seconds",
						JQ_RATE_PERIOD_MAX_SECONDS),
				 errdetail("Months and years have no fixed length; give days, hours, seconds.")));
	args[2] = PointerGetDatum(per);
	args[3] = TimestampTzGetDatum(call.now);
	RunAlone(&call, &statements[PLAN_RATE_SET], args, NULL, SPI_OK_INSERT);
	PG_RETURN_VOID();
}

/* queue_rate_limit_remove(queue): whether the queue had a limit */
Datum
jobqueue_rate_limit_remove(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_5);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = TimestampTzGetDatum(call.now);
	PG_RETURN_BOOL(RunAlone(&call, &statements[PLAN_RATE_REMOVE], args, NULL, SPI_OK_UPDATE) == 1);
}

/* queue_rate_limits() returns (queue, max_claims, per, next_slot) */
Datum
jobqueue_rate_limits(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	JqCall		call;

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	QueueExecute(&call, &statements[PLAN_RATE_LIST], NULL, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		RateLimit	limit = RateLimitOfRow(row, call.now);
		TimestampTz next = NextSlot(&limit, call.now);
		Datum		values[4];
		bool		nulls[4] = {false, false, false, next == 0};
		bool		isnull;

		values[0] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, RATE_QUEUE,
								  &isnull);
		values[1] = Int32GetDatum(SpiInt32(row, RATE_MAX));
		values[2] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, RATE_PER,
								  &isnull);
		values[3] = TimestampTzGetDatum(next);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/* queue_rate_limit_next(queue): when the next claim may take a job; NULL: now */
Datum
jobqueue_rate_limit_next(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	TimestampTz next = 0;

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	SPI_connect();
	QueueExecute(&call, &statements[PLAN_RATE_READ], args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		RateLimit	limit = RateLimitOfRow(0, call.now);

		next = NextSlot(&limit, call.now);
	}
	SPI_finish();
	if (next == 0)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(next);
}
