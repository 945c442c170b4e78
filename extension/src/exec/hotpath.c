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
 * So a statement the extension declares hot (its text, in its statements
 * table, starts with JQ_HOT_PATH_MARK) is planned, each time the planner
 * sees it (first run, or re-planned after an invalidation), with
 * sequential scans, bitmap scans and explicit sorts ruled out, the way
 * "SET enable_seqscan = off" would rule them out, but only for that
 * statement and only while it is planned: other statements of the session,
 * including ones run from inside ours, are planned as usual.
 *
 * Which statements those are is decided by the extension, never by the
 * text a planner is given: when the engine keeps a plan (statements.c) it
 * registers the query string of each of the plan's sources here, and the
 * planner passes exactly that string back when it plans the source.  A
 * user's query, whatever it contains (the mark in a string literal, a
 * marked statement before it in the same query string), is planned as if
 * the extension were not there.  The one exception is for tests and
 * benchmarks that must see the plan the extension runs without running it:
 * with jobqueue.plan_marked_text on (superuser only, off by default) a
 * statement whose text holds a mark is planned by the rule, so an EXPLAIN
 * of a PREPAREd copy of a statement (sql/plans.sql) shows the extension's
 * plan.
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
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/plancache.h"

static planner_hook_type previous_planner_hook = NULL;

/* jobqueue.plan_marked_text: plan marked text by the rule (tests, bench/) */
static bool plan_marked_text = false;

/*
 * The query strings of the kept plans' sources, by address, with their
 * rule.  The strings live as long as their plans (ForgetPlanRule is called
 * before a plan is freed), so an address is never one of another string.
 */
typedef struct PlanRuleEntry
{
	const char *query_string;	/* the key: the address, not the text */
	PlanRule	rule;
} PlanRuleEntry;

static HTAB *plan_rules = NULL;

/* The rule a statement's text declares: its leading mark, if any. */
PlanRule
PlanRuleOfText(const char *sql)
{
	if (strncmp(sql, JQ_HOT_PATH_MARK, strlen(JQ_HOT_PATH_MARK)) == 0)
		return PLAN_RULE_HOT_PATH;
	if (strncmp(sql, JQ_INDEX_PLAN_MARK, strlen(JQ_INDEX_PLAN_MARK)) == 0)
		return PLAN_RULE_INDEX;
	return PLAN_RULE_NONE;
}

static void
SetPlanRules(SPIPlanPtr plan, PlanRule rule, bool remember)
{
	ListCell   *cell;

	if (remember ? rule == PLAN_RULE_NONE : plan_rules == NULL)
		return;
	if (plan_rules == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(const char *);
		ctl.entrysize = sizeof(PlanRuleEntry);
		plan_rules = hash_create("jobqueue plan rules", 256, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	foreach(cell, SPI_plan_get_plan_sources(plan))
	{
		CachedPlanSource *source = (CachedPlanSource *) lfirst(cell);
		const char *key = source->query_string;
		PlanRuleEntry *entry;

		if (remember)
		{
			entry = hash_search(plan_rules, &key, HASH_ENTER, NULL);
			entry->rule = rule;
		}
		else
			hash_search(plan_rules, &key, HASH_REMOVE, NULL);
	}
}

/* A kept plan of the extension's: its sources are planned by the rule. */
void
RememberPlanRule(SPIPlanPtr plan, PlanRule rule)
{
	SetPlanRules(plan, rule, true);
}

/* Before a kept plan is freed: its strings' addresses may be reused. */
void
ForgetPlanRule(SPIPlanPtr plan)
{
	SetPlanRules(plan, PLAN_RULE_NONE, false);
}

/* The rule for the statement the planner was given. */
static PlanRule
RuleOfPlanned(const char *query_string)
{
	PlanRuleEntry *entry;

	if (query_string == NULL)
		return PLAN_RULE_NONE;
	if (plan_rules != NULL &&
		(entry = hash_search(plan_rules, &query_string, HASH_FIND, NULL)) != NULL)
		return entry->rule;
	if (!plan_marked_text)
		return PLAN_RULE_NONE;
	if (strstr(query_string, JQ_HOT_PATH_MARK) != NULL)
		return PLAN_RULE_HOT_PATH;
	if (strstr(query_string, JQ_INDEX_PLAN_MARK) != NULL)
		return PLAN_RULE_INDEX;
	return PLAN_RULE_NONE;
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
	volatile PlanRule rule = RuleOfPlanned(query_string);
	PlannedStmt *result;

	if (rule == PLAN_RULE_NONE)
		return PlanStatement(parse, query_string, cursor_options, bound_params);

	enable_seqscan = false;
	enable_bitmapscan = false;
	if (rule == PLAN_RULE_HOT_PATH)
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
	if (rule == PLAN_RULE_INDEX)
		result->jitFlags = PGJIT_NONE;
	return result;
}

/* From _PG_init: in every backend that loads the library. */
void
JobqueueInstallPlannerHook(void)
{
	DefineCustomBoolVariable("jobqueue.plan_marked_text",
							 "Plans any statement whose text carries the extension's plan mark as the extension plans its own (for tests and benchmarks).",
							 "Off: only the extension's own kept statements are planned by its rule, whatever a query's text holds.",
							 &plan_marked_text,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	previous_planner_hook = planner_hook;
	planner_hook = HotPathPlanner;
}
