/*-------------------------------------------------------------------------
 *
 * browse.c
 *	  The dashboard's reads (1.4): every queue at a glance, a queue's jobs
 *	  page by page, one job, the live leases.
 *
 * A dashboard polls these every second or so against queues of millions
 * of jobs, so none of them counts or sorts a whole queue (plans.c, "1.4:
 * the dashboard's reads"): the overview counts each state up to a cap,
 * pages are keyset pages in id order, never OFFSET.  The states are those
 * of queue_stats, from the same rules (plans.c, IS_PENDING and its
 * siblings).  No function returns a fencing token.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_overview);
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
