/*-------------------------------------------------------------------------
 *
 * hotpath.c
 *	  Plans of the hot-path statements that statistics cannot spoil.
 *
 * The statements a claim, a push or a completion runs are prepared once
 * per backend with generic plans (statements.c).  A generic plan keeps the
 * shape chosen when it was made: made while queue_jobs was empty or never
 * analysed, it may scan the whole table and sort it, and it stays so long
 * after the table has filled (until an ANALYZE happens to invalidate it).
 * Every hot statement has an index that serves it exactly (the claim
 * index in claim order, the primary key, the partial waiting and deadline
 * indexes), so the right shape never depends on the numbers.
 *
 * So a statement whose text holds JQ_HOT_PATH_MARK is planned, each
 * time the planner sees it (prepared, or re-planned after an
 * invalidation), with sequential scans, bitmap scans and explicit sorts
 * ruled out, the way "SET enable_seqscan = off" would rule them out, but
 * only for that statement and only while it is planned: other statements
 * of the session, including ones run from inside ours, are planned as
 * usual.  The mark is a comment, so it changes nothing else.  It is looked
 * for anywhere in the text the planner is given, since for a statement
 * prepared with PREPARE that is the whole PREPARE command: so an EXPLAIN
 * of the same statement (bench/, sql/plans.sql) shows the plan the
 * extension runs.
 *
 * The dashboard's reads (browse.c) are not hot, but they too must stay
 * cheap at millions of jobs on a long-lived connection that may have
 * planned them on an empty table, and each reads index ranges (capped
 * counts, loose index scans) that a sequential or bitmap scan would read
 * whole.  A statement marked JQ_INDEX_PLAN_MARK is planned with those two
 * ruled out; sorts stay allowed (a page is sorted by id, the leases by
 * worker).  Nor are they compiled by JIT: the generic plan's costs of
 * their capped counts (LIMIT $n + 1, n unknown to the planner) run into
 * millions whatever the table holds, far above jit_above_cost, while they
 * run in milliseconds; compiling them took 750 ms a call.  Only
 * JQ_HOT_PATH_MARK statements are listed as hot
 * (jobqueue_hot_path_statements in statements.c).
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "jit/jit.h"
#include "optimizer/cost.h"
#include "optimizer/planner.h"

static planner_hook_type previous_planner_hook = NULL;

static bool
HasMark(const char *query_string, const char *mark)
{
	return query_string != NULL && strstr(query_string, mark) != NULL;
}

static PlannedStmt *
PlanStatement(Query *parse, const char *query_string, int cursor_options,
			  ParamListInfo bound_params)
{
	if (previous_planner_hook != NULL)
		return previous_planner_hook(parse, query_string, cursor_options, bound_params);
	return standard_planner(parse, query_string, cursor_options, bound_params);
}

static PlannedStmt *
HotPathPlanner(Query *parse, const char *query_string, int cursor_options,
			   ParamListInfo bound_params)
{
	bool		saved_seqscan = enable_seqscan;
	bool		saved_bitmapscan = enable_bitmapscan;
	bool		saved_sort = enable_sort;
	/* volatile: read after PG_TRY, where a longjmp may have clobbered a register */
	volatile bool hot = HasMark(query_string, JQ_HOT_PATH_MARK);
	PlannedStmt *result;

	if (!hot && !HasMark(query_string, JQ_INDEX_PLAN_MARK))
		return PlanStatement(parse, query_string, cursor_options, bound_params);

	enable_seqscan = false;
	enable_bitmapscan = false;
	if (hot)
		enable_sort = false;
	PG_TRY();
	{
		result = PlanStatement(parse, query_string, cursor_options, bound_params);
	}
	PG_FINALLY();
	{
		enable_seqscan = saved_seqscan;
		enable_bitmapscan = saved_bitmapscan;
		enable_sort = saved_sort;
	}
	PG_END_TRY();
	if (!hot)
		result->jitFlags = PGJIT_NONE;
	return result;
}

/* From _PG_init: in every backend that loads the library. */
void
JobqueueInstallPlannerHook(void)
{
	previous_planner_hook = planner_hook;
	planner_hook = HotPathPlanner;
}
