/*-------------------------------------------------------------------------
 *
 * browse.c
 *	  The dashboard's reads (1.4): every queue at a glance, a queue's jobs
 *	  page by page, one job, the live leases.
 *
 * A dashboard polls these every second or so against queues of millions
 * of jobs, so none of them counts or sorts a whole queue (plans.c, "1.4:
 * the dashboard's reads"): the overview counts each state up to a cap,
 * pages are keyset pages in id order, never OFFSET.  Since 1.5 a count
 * that passes the cap is also estimated, from the planner's statistics
 * (OverviewEstimates), so that the overview's cost does not follow the
 * backlog.  The states are those
 * of queue_stats, from the same rules (plans.c, IS_PENDING and its
 * siblings).  No function returns a fencing token.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include <math.h>

#include "funcapi.h"
#include "nodes/params.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(jobqueue_overview);
PG_FUNCTION_INFO_V1(jobqueue_overview_1_5);
PG_FUNCTION_INFO_V1(jobqueue_jobs_page);
PG_FUNCTION_INFO_V1(jobqueue_job);
PG_FUNCTION_INFO_V1(jobqueue_leases);

/*
 * A page is sorted by id from its candidates (the index ranges that can
 * hold jobs of the queue in the state asked for) when there are at most
 * this many; with more, it is read in id order along the primary keys,
 * where it meets at least one such job every (all jobs / this many) ids
 * on average.  Reading this many candidates costs a few milliseconds.
 */
#define PAGE_SORTED_CANDIDATES_MAX 50000

/*
 * queue_overview(count_cap): one row per queue that has jobs, failed rows
 * or settings, by name: paused, each state's count up to count_cap,
 * whether a count stopped there, and when the oldest pending job fell due.
 */
Datum
jobqueue_overview(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];

	JqCallBegin(&call, fcinfo, JQ_API_1_4);
	args[0] = TimestampTzGetDatum(call.now);
	args[1] = Int32GetDatum(ArgInt(fcinfo, 0, "count_cap", JQ_DEFAULT_COUNT_CAP, 1,
								   JQ_COUNT_CAP_LIMIT));
	return ReturnRowsOf(&call, PLAN_OVERVIEW, args, NULL);
}

/*
 * The planner's estimate of how many rows "SELECT 1 FROM table WHERE
 * cond" returns, with the arguments' values known (a custom plan that is
 * never run): the statistics ANALYZE keeps (for queue = $1, the share of
 * the queue among the most common values) scaled to the table's size now
 * (its pages now times the rows per page ANALYZE saw, per partition).  It
 * reads no row, so it costs the same at any size.  Its garbage goes to
 * the caller's memory context.
 */
static double
PlannerRows(const JqCall *call, const char *table, const char *cond, int nargs,
			Oid *types, Datum *values)
{
	char	   *sql = psprintf("SELECT 1 FROM %s.%s WHERE %s", call->quoted_schema, table, cond);
	List	   *parsed = pg_parse_query(sql);
	List	   *queries;
	ParamListInfo params = makeParamList(nargs);
	PlannedStmt *planned;

	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, parsed), sql,
												 types, nargs, NULL);
	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = false;
		params->params[i].pflags = PARAM_FLAG_CONST;	/* folded into the plan */
		params->params[i].ptype = types[i];
	}
	params->numParams = nargs;
	planned = pg_plan_query(linitial_node(Query, queries), sql, 0, params);
	return planned->planTree->plan_rows;
}

/* A row estimate as a count of at least floor. */
static int64
EstimateAtLeast(double rows, int64 floor)
{
	int64		estimate = rows > (double) PG_INT64_MAX / 2 ? PG_INT64_MAX / 2 : (int64) rint(rows);

	return Max(estimate, floor);
}

/* Columns of PLAN_OVERVIEW's 1.5 statement. */
typedef enum OverviewColumn
{
	OV_QUEUE = 1,
	OV_PAUSED,
	OV_PENDING,					/* up to 2 (cap + 1): two ranges */
	OV_READY_DELAYED,			/* up to cap + 1 */
	OV_WAITING_DELAYED,			/* the waiting range due later, read up to cap + 1 */
	OV_WAITING_HELD,
	OV_WAITING_SEEN,
	OV_FAILED,					/* up to cap + 1 */
	OV_OLDEST_PENDING_AT
} OverviewColumn;

/* Columns of queue_overview's 1.5 result. */
enum
{
	OUT_QUEUE,
	OUT_PAUSED,
	OUT_PENDING,
	OUT_DELAYED,
	OUT_RESERVED,
	OUT_FAILED,
	OUT_COUNTS_CAPPED,
	OUT_OLDEST_PENDING_AT,
	OUT_PENDING_ESTIMATE,
	OUT_DELAYED_ESTIMATE,
	OUT_RESERVED_ESTIMATE,
	OUT_FAILED_ESTIMATE,
	OUT_COLUMNS
};

/*
 * One queue's counts: exact where its range ended within the cap, else a
 * lower bound (at most the cap) and an estimate (README, "queue_overview
 * 1.5").  The estimates start from the planner's rows of the queue in
 * queue_jobs and take away what was counted exactly: with only one state
 * past the cap (the usual big backlog of one state), the estimate is the
 * planner's size of the queue minus the exact counts.  The jobs due later
 * (delayed and held) are the planner's rows due later, unless pending was
 * exact; held ones the planner's rows with a token (live or not).
 */
static void
OverviewRow(const JqCall *call, int64 cap, uint64 row, Datum *out, bool *nulls)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;
	HeapTuple	tuple = SPI_tuptable->vals[row];
	bool		isnull;
	int64		pending = SpiInt8(row, OV_PENDING);
	int64		ready_delayed = SpiInt8(row, OV_READY_DELAYED);
	int64		waiting_delayed = SpiInt8(row, OV_WAITING_DELAYED);
	int64		held = SpiInt8(row, OV_WAITING_HELD);
	int64		seen = SpiInt8(row, OV_WAITING_SEEN);
	int64		failed = SpiInt8(row, OV_FAILED);
	bool		pending_exact = pending <= cap;
	bool		later_exact = seen <= cap && ready_delayed <= cap;	/* delayed and reserved */
	Oid			types[2] = {TEXTOID, TIMESTAMPTZOID};
	Datum		args[2];

	out[OUT_QUEUE] = SPI_getbinval(tuple, desc, OV_QUEUE, &isnull);
	out[OUT_PAUSED] = SPI_getbinval(tuple, desc, OV_PAUSED, &isnull);
	out[OUT_OLDEST_PENDING_AT] = SPI_getbinval(tuple, desc, OV_OLDEST_PENDING_AT,
											   &nulls[OUT_OLDEST_PENDING_AT]);
	out[OUT_PENDING] = Int64GetDatum(Min(pending, cap));
	out[OUT_DELAYED] = Int64GetDatum(Min(ready_delayed + waiting_delayed, cap));
	out[OUT_RESERVED] = Int64GetDatum(Min(held, cap));
	out[OUT_FAILED] = Int64GetDatum(Min(failed, cap));
	out[OUT_COUNTS_CAPPED] = BoolGetDatum(!pending_exact || !later_exact || failed > cap);
	nulls[OUT_PENDING_ESTIMATE] = pending_exact;
	nulls[OUT_DELAYED_ESTIMATE] = later_exact;
	nulls[OUT_RESERVED_ESTIMATE] = later_exact;
	nulls[OUT_FAILED_ESTIMATE] = failed <= cap;

	args[0] = out[OUT_QUEUE];
	args[1] = TimestampTzGetDatum(call->now);
	if (!pending_exact || !later_exact)
	{
		double		queue_rows = PlannerRows(call, "queue_jobs", "queue = $1", 1, types, args);
		double		later;		/* delayed and held, estimated or exact */

		if (later_exact)
			later = ready_delayed + waiting_delayed + held;
		else if (pending_exact)
			later = queue_rows - pending;
		else
			later = PlannerRows(call, "queue_jobs", "queue = $1 AND available_at > $2", 2,
								types, args);
		if (!pending_exact)
			out[OUT_PENDING_ESTIMATE] = Int64GetDatum(EstimateAtLeast(queue_rows - later, cap + 1));
		if (!later_exact)
		{
			double		held_rows = PlannerRows(call, "queue_jobs",
												"queue = $1 AND token IS NOT NULL", 1,
												types, args);
			int64		reserved = EstimateAtLeast(Min(held_rows, later), held);

			out[OUT_RESERVED_ESTIMATE] = Int64GetDatum(reserved);
			out[OUT_DELAYED_ESTIMATE] =
				Int64GetDatum(EstimateAtLeast(later - reserved, ready_delayed + waiting_delayed));
		}
	}
	if (failed > cap)
		out[OUT_FAILED_ESTIMATE] =
			Int64GetDatum(EstimateAtLeast(PlannerRows(call, "queue_failed_jobs", "queue = $1",
													  1, types, args),
										  cap + 1));
}

/*
 * queue_overview(count_cap) 1.5: the 1.4 row, each count exact up to
 * count_cap, and beyond it the count stopped there (a lower bound) and an
 * estimate in the state's *_estimate column (NULL: the count is exact).
 */
Datum
jobqueue_overview_1_5(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];
	int32		cap;
	ReturnSetInfo *rsinfo;
	MemoryContext estimates;
	MemoryContext caller;

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	cap = ArgInt(fcinfo, 0, "count_cap", JQ_DEFAULT_COUNT_CAP_1_5, 1, JQ_COUNT_CAP_LIMIT);
	args[0] = TimestampTzGetDatum(call.now);
	args[1] = Int32GetDatum(cap);
	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPI_connect();
	QueueExecute(&call, PLAN_OVERVIEW, args, NULL, SPI_OK_SELECT);
	/* the planner's garbage of one row's estimates, freed row by row */
	estimates = AllocSetContextCreate(CurrentMemoryContext, "jobqueue overview estimates",
									  ALLOCSET_SMALL_SIZES);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		out[OUT_COLUMNS] = {0};
		bool		nulls[OUT_COLUMNS] = {false};

		CHECK_FOR_INTERRUPTS();
		caller = MemoryContextSwitchTo(estimates);
		OverviewRow(&call, cap, row, out, nulls);
		MemoryContextSwitchTo(caller);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		MemoryContextReset(estimates);
	}
	SPI_finish();
	return (Datum) 0;
}

/* The state argument of a page: NULL (every state) or a state's name. */
static text *
ArgJobState(FunctionCallInfo fcinfo, int argno)
{
	char	   *state;

	if (PG_ARGISNULL(argno))
		return NULL;
	state = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(state, "pending") != 0 && strcmp(state, "delayed") != 0 &&
		strcmp(state, "reserved") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"state\" must be 'pending', 'delayed' or 'reserved', got \"%s\"",
						state),
				 errhint("NULL means jobs in every state; queue_failed_rows lists failed jobs.")));
	return PG_GETARG_TEXT_PP(argno);
}

/*
 * queue_jobs_page(queue, state, after_id, max_rows): the jobs of queue (in
 * state, when given) with ids above after_id, at most max_rows, in id
 * order: the next page starts after the last id of this one.
 */
Datum
jobqueue_jobs_page(PG_FUNCTION_ARGS)
{
	JqCall		call;
	text	   *state;
	Datum		after_id;
	int32		max_rows;
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	bool		sorted;

	JqCallBegin(&call, fcinfo, JQ_API_1_4);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = TimestampTzGetDatum(call.now);
	state = ArgJobState(fcinfo, 1);
	args[2] = PointerGetDatum(state);
	nulls[2] = state ? ' ' : 'n';
	after_id = PG_ARGISNULL(2) ? Int64GetDatum(PG_INT64_MIN) : PG_GETARG_DATUM(2);
	max_rows = ArgInt(fcinfo, 3, "max_rows", JQ_DEFAULT_PAGE_ROWS, 1, JQ_PAGE_ROWS_LIMIT);

	/* (queue, now, state, cap) */
	args[3] = Int32GetDatum(PAGE_SORTED_CANDIDATES_MAX);
	SPI_connect();
	QueueExecute(&call, PLAN_PAGE_CANDIDATES, args, nulls, SPI_OK_SELECT);
	sorted = SpiInt8(0, 1) <= PAGE_SORTED_CANDIDATES_MAX;	/* count(*) */
	SPI_finish();

	/* (queue, now, state, after_id, max_rows) */
	args[3] = after_id;
	args[4] = Int32GetDatum(max_rows);
	return ReturnRowsOf(&call, sorted ? PLAN_PAGE_SORTED : PLAN_PAGE_BY_ID, args, nulls);
}

/*
 * queue_job(id): the job, from queue_jobs (pending, delayed, reserved) or
 * from queue_failed_jobs (failed); no row for an unknown id.
 */
Datum
jobqueue_job(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];

	JqCallBegin(&call, fcinfo, JQ_API_1_4);
	ArgRequire(fcinfo, 0, "id");
	args[0] = PG_GETARG_DATUM(0);
	args[1] = TimestampTzGetDatum(call.now);
	return ReturnRowsOf(&call, PLAN_JOB, args, NULL);
}

/* queue_leases(max_rows): the jobs held by a live lease, by worker and lease end. */
Datum
jobqueue_leases(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];

	JqCallBegin(&call, fcinfo, JQ_API_1_4);
	args[0] = TimestampTzGetDatum(call.now);
	args[1] = Int32GetDatum(ArgInt(fcinfo, 0, "max_rows", JQ_DEFAULT_LEASE_ROWS, 1,
								   JQ_LEASE_ROWS_LIMIT));
	return ReturnRowsOf(&call, PLAN_LEASES, args, NULL);
}
