/*-------------------------------------------------------------------------
 *
 * browse.c
 *	  The dashboard's reads (1.4): every queue at a glance, a queue's jobs
 *	  page by page, one job, the live leases.
 *
 * A dashboard polls these every second or so against queues of millions
 * of jobs, so none of them counts or sorts a whole queue (the statements
 * below, "1.4: the dashboard's reads"): the overview counts each state up to a cap,
 * pages are keyset pages in id order, never OFFSET.  Since 1.5 a count
 * that passes the cap is also estimated, from the statistics ANALYZE keeps
 * (OverviewRow), so that the overview's cost does not follow the
 * backlog.  The states are those
 * of queue_stats, from the same rules (store/store.h, IS_PENDING and its
 * siblings).  No function returns a fencing token.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_statistic.h"
#include "funcapi.h"
#include "optimizer/plancat.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(jobqueue_overview);
PG_FUNCTION_INFO_V1(jobqueue_overview_1_5);
PG_FUNCTION_INFO_V1(jobqueue_jobs_page);
PG_FUNCTION_INFO_V1(jobqueue_job);
PG_FUNCTION_INFO_V1(jobqueue_leases);

/* The state's name; the three rules cover every job, so it is never NULL. */
#define JOB_STATE(now) \
	"CASE WHEN " IS_PENDING(now) " THEN 'pending' WHEN " IS_DELAYED(now) " THEN 'delayed'" \
	" WHEN " IS_RESERVED(now) " THEN 'reserved' END"

/*
 * ---- 1.4: the dashboard's reads (browse.c) ----
 *
 * They must stay cheap at millions of jobs, so no statement counts or
 * sorts a whole queue: every row they read comes from an index range
 * (JQ_INDEX_PLAN_MARK keeps sequential and bitmap scans out of their plans
 * whatever the statistics, hotpath.c), and counts stop at a cap.
 */

/* The rows of from_where counted up to cap + 1: exact up to cap. */
#define CAPPED_COUNT(from_where, cap) \
	"(SELECT pg_catalog.count(*) FROM (SELECT 1 FROM " from_where " LIMIT " cap " + 1) capped)"

/*
 * name(queue): the distinct queues of table's rows that satisfy cond, one
 * index descent each (a loose index scan over an index that leads with
 * queue: the claim index for ready jobs, the waiting index for the
 * others, the failed table's queue index), and a NULL row last.
 */
#define LOOSE_QUEUES(name, table, cond) \
	name "(queue) AS (" \
	" SELECT (SELECT pg_catalog.min(t.queue) FROM " table " t WHERE " cond ")" \
	" UNION ALL" \
	" SELECT (SELECT pg_catalog.min(t.queue) FROM " table " t WHERE " cond " AND t.queue > l.queue)" \
	" FROM " name " l WHERE l.queue IS NOT NULL)"

/*
 * priorities(priority): the distinct priorities of queue's ready jobs,
 * highest first, one descent of the claim index each, and a NULL row
 * last.  The claim index orders a queue's ready jobs by priority, then
 * available_at: so within one priority the jobs due by a moment, or after
 * it, are one range of it.
 */
#define READY_PRIORITIES(queue) \
	"priorities(priority) AS (" \
	" SELECT (SELECT j.priority FROM @J@ j WHERE j.ready AND @QUEUE_IS(j.queue, " queue ")@" \
	"   ORDER BY j.priority DESC LIMIT 1)" \
	" UNION ALL" \
	" SELECT (SELECT j.priority FROM @J@ j WHERE j.ready AND @QUEUE_IS(j.queue, " queue ")@" \
	"   AND j.priority < p.priority ORDER BY j.priority DESC LIMIT 1)" \
	" FROM priorities p WHERE p.priority IS NOT NULL)"

/*
 * The ready jobs of queue that satisfy cond, as j: one claim-index range
 * per priority of "priorities".  tail (a LIMIT, or OFFSET 0) keeps each
 * range a scan of its own: a join the planner could flatten would read
 * the queue's whole range of the index.
 */
#define READY_BY_PRIORITY(columns, queue, cond, tail) \
	"priorities p CROSS JOIN LATERAL (SELECT " columns " FROM @J@ j" \
	" WHERE j.ready AND @QUEUE_IS(j.queue, " queue ")@ AND j.priority = p.priority AND " cond tail ") j"

/*
 * The candidates of a page of queue $1's jobs in state $3 (NULL: every
 * state) at time $2: the jobs of the index ranges that can hold such jobs,
 * each arm run only for the states it serves (a condition on $3 alone is
 * a one-time filter).  A superset of the state: the caller keeps the rows
 * whose JOB_STATE is $3.  Pending: the queue's ready jobs, and its waiting
 * ones due by $2; delayed or reserved: its waiting jobs due after $2 and
 * (delayed) its ready ones due after $2, which only a clock set back
 * leaves behind.  A ready job is never held.
 */
#define PAGE_CANDIDATES(columns, ready_tail) \
	"WITH RECURSIVE " READY_PRIORITIES("$1") \
	" SELECT " columns " FROM @J@ j WHERE j.ready AND @QUEUE_IS(j.queue, $1)@" \
	"   AND ($3 IS NULL OR $3 = 'pending')" \
	" UNION ALL" \
	" SELECT " columns " FROM " READY_BY_PRIORITY(columns, "$1", IS_DELAYED("$2"), ready_tail) \
	"   WHERE $3 = 'delayed'" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND $3 IS NULL" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND " IS_PENDING("$2") \
	"   AND $3 = 'pending'" \
	" UNION ALL" \
	" SELECT " columns " FROM @J@ j WHERE NOT j.ready AND j.queue = $1 AND NOT " IS_PENDING("$2") \
	"   AND $3 IN ('delayed', 'reserved')"

/* What queue_jobs_page returns of a job at time $2, and its state filter $3. */
#define PAGE_COLUMNS \
	"j.id, j.name, " JOB_STATE("$2") ", j.priority, j.attempts, j.max_attempts, j.available_at," \
	" j.reserved_by, j.reserved_until, j.unique_key, j.deadline, j.created_at"

#define PAGE_IN_STATE "($3 IS NULL OR " JOB_STATE("$2") " = $3)"

/*
 * The statements of browse.c, run by the statement engine (exec/statements.c);
 * registered once (browse_statements, from the folder's Init).
 */
enum
{
	PLAN_OVERVIEW,
	PLAN_PAGE_CANDIDATES,
	PLAN_PAGE_SORTED,
	PLAN_PAGE_BY_ID,
	PLAN_JOB,
	PLAN_LEASES,
	NUM_BROWSE_STATEMENTS
};

static JqStatement statements[NUM_BROWSE_STATEMENTS] = {
	[PLAN_OVERVIEW] = {.name = "overview", .text = {
		/*
		 * Every queue that has jobs, failed rows or settings, with its backlog
		 * at $1 counted up to the cap $2 (columns as queue_overview returns
		 * them).  The oldest pending job is the one due first: the least
		 * available_at of the queue's waiting jobs due by $1 (the head of the
		 * waiting index) and of the head of each of its priorities.
		 */
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "WITH RECURSIVE "
			LOOSE_QUEUES("ready_queues", "@J@", "t.ready") ", "
			LOOSE_QUEUES("waiting_queues", "@J@", "NOT t.ready") ", "
			LOOSE_QUEUES("failed_queues", "@S@.queue_failed_jobs", "true") ", "
			"queues(queue) AS ("
			"  SELECT queue FROM ready_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM failed_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM @S@.queue_settings)"
			" SELECT q.queue, coalesce(s.paused, false),"
			"  least(c.pending, $2), least(c.delayed, $2), least(c.reserved, $2), least(c.failed, $2),"
			"  greatest(c.pending, c.delayed, c.reserved, c.failed) > $2, c.oldest_pending_at"
			" FROM queues q"
			" LEFT JOIN @S@.queue_settings s ON s.queue = q.queue"
			" CROSS JOIN LATERAL (WITH RECURSIVE " READY_PRIORITIES("q.queue")
			"  SELECT "
			CAPPED_COUNT("@J@ j WHERE j.ready AND @QUEUE_IS(j.queue, q.queue)@ AND " IS_PENDING("$1"), "$2") " + "
			CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2")
			"   AS pending, "
			CAPPED_COUNT(READY_BY_PRIORITY("1", "q.queue", IS_DELAYED("$1"), " LIMIT $2 + 1"), "$2") " + "
			CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_DELAYED("$1"), "$2")
			"   AS delayed, "
			CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_RESERVED("$1"), "$2")
			"   AS reserved, "
			CAPPED_COUNT("@S@.queue_failed_jobs f WHERE f.queue = q.queue", "$2") " AS failed,"
			"  least((SELECT pg_catalog.min(j.available_at) FROM "
			READY_BY_PRIORITY("j.available_at", "q.queue", IS_PENDING("$1"),
							  " ORDER BY j.available_at LIMIT 1") "),"
			"   (SELECT j.available_at FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue AND "
			IS_PENDING("$1") " ORDER BY j.available_at LIMIT 1)) AS oldest_pending_at"
			" ) c"
			" ORDER BY q.queue COLLATE \"C\"",
			2, {TIMESTAMPTZOID, INT4OID}
		},
		/*
		 * 1.5: the same queues, each count read up to the cap $2 + 1 only, for
		 * browse.c to tell exact counts from the ones it estimates.  The jobs
		 * due later that wait (delayed or held) are one range of the waiting
		 * index, counted once up to the cap from the index alone; only when
		 * they are within the cap are their rows read, to tell them apart by
		 * their token (a waiting job due later is held exactly when it has
		 * one; "n.seen <= $2" is a one-time filter).  Counting each state of
		 * that range up to the cap separately read every job of the other
		 * state that sorts first; reading their rows past the cap, rows whose
		 * states are estimated anyway.  Columns: queue, paused, pending (two
		 * ranges, each up to $2 + 1), ready jobs due later (delayed: only a
		 * clock set back leaves them), the waiting range's delayed and held
		 * jobs (0 past the cap) and its entries read, failed rows, the oldest
		 * pending job's available_at.
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "WITH RECURSIVE "
			LOOSE_QUEUES("ready_queues", "@J@", "t.ready") ", "
			LOOSE_QUEUES("waiting_queues", "@J@", "NOT t.ready") ", "
			LOOSE_QUEUES("failed_queues", "@S@.queue_failed_jobs", "true") ", "
			"queues(queue) AS ("
			"  SELECT queue FROM ready_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM failed_queues WHERE queue IS NOT NULL"
			"  UNION SELECT queue FROM @S@.queue_settings)"
			" SELECT q.queue, coalesce(s.paused, false), c.pending, c.ready_delayed,"
			"  w.delayed, w.held, w.seen, c.failed, c.oldest_pending_at"
			" FROM queues q"
			" LEFT JOIN @S@.queue_settings s ON s.queue = q.queue"
			" CROSS JOIN LATERAL (WITH RECURSIVE " READY_PRIORITIES("q.queue")
			"  SELECT "
			CAPPED_COUNT("@J@ j WHERE j.ready AND @QUEUE_IS(j.queue, q.queue)@ AND " IS_PENDING("$1"), "$2") " + "
			CAPPED_COUNT("@J@ j WHERE NOT j.ready AND j.queue = q.queue AND " IS_PENDING("$1"), "$2")
			"   AS pending, "
			CAPPED_COUNT(READY_BY_PRIORITY("1", "q.queue", IS_DELAYED("$1"), " LIMIT $2 + 1"), "$2")
			"   AS ready_delayed, "
			CAPPED_COUNT("@S@.queue_failed_jobs f WHERE f.queue = q.queue", "$2") " AS failed,"
			"  least((SELECT pg_catalog.min(j.available_at) FROM "
			READY_BY_PRIORITY("j.available_at", "q.queue", IS_PENDING("$1"),
							  " ORDER BY j.available_at LIMIT 1") "),"
			"   (SELECT j.available_at FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue AND "
			IS_PENDING("$1") " ORDER BY j.available_at LIMIT 1)) AS oldest_pending_at"
			" ) c"
			" CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS seen"
			"  FROM (SELECT 1 FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue"
			"   AND j.available_at > $1 LIMIT $2 + 1) l) n"
			" CROSS JOIN LATERAL (SELECT n.seen,"
			"  pg_catalog.count(*) FILTER (WHERE l.token IS NULL) AS delayed,"
			"  pg_catalog.count(*) FILTER (WHERE l.token IS NOT NULL) AS held"
			"  FROM (SELECT j.token FROM @J@ j WHERE NOT j.ready AND j.queue = q.queue"
			"   AND j.available_at > $1 AND n.seen <= $2) l) w"
			" ORDER BY q.queue COLLATE \"C\"",
			2, {TIMESTAMPTZOID, INT4OID}
		},
	}},
	[PLAN_PAGE_CANDIDATES] = {.name = "page_candidates", .text = {
		/*
		 * A page of queue $1's jobs in state $3 at $2, after id $4, at most $5:
		 * from its candidates sorted by id when they are few (counted up to
		 * the cap $4 first), else in id order along the primary keys, reading
		 * every queue's jobs from $4 on until $5 of queue $1 are found.
		 */
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "SELECT pg_catalog.count(*) FROM ("
			PAGE_CANDIDATES("1", " LIMIT $4 + 1") " LIMIT $4 + 1) candidates",
			4, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT4OID}
		},
	}},
	[PLAN_PAGE_SORTED] = {.name = "page_sorted", .text = {
		/*
		 * OFFSET 0 keeps "id > $4" out of the arms: there it would let the
		 * planner take a partition's primary key for one, where the statistics
		 * of a partition holding one big queue make "queue = $1" look useless.
		 */
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "SELECT " PAGE_COLUMNS
			" FROM (" PAGE_CANDIDATES("j.*", " OFFSET 0") " OFFSET 0) j"
			" WHERE j.id > $4 AND " PAGE_IN_STATE " ORDER BY j.id LIMIT $5",
			5, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, INT4OID}
		},
	}},
	[PLAN_PAGE_BY_ID] = {.name = "page_by_id", .text = {
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "SELECT " PAGE_COLUMNS " FROM @J@ j"
			" WHERE j.queue = $1 AND j.id > $4 AND " PAGE_IN_STATE " ORDER BY j.id LIMIT $5",
			5, {TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, INT4OID}
		},
	}},
	[PLAN_JOB] = {.name = "job", .text = {
		/* One job by id at $2, live or failed (a job is never in both tables); no token. */
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "SELECT id, queue, name, " JOB_STATE("$2") ", payload, priority, attempts,"
			"  max_attempts, available_at, reserved_by, reserved_until, unique_key, deadline,"
			"  last_error, created_at, NULL::pg_catalog.timestamptz"
			" FROM @J@ WHERE id = $1"
			" UNION ALL"
			" SELECT id, queue, name, 'failed', payload, priority, attempts, max_attempts,"
			"  NULL, NULL, NULL, NULL, NULL, error, created_at, failed_at"
			" FROM @S@.queue_failed_jobs WHERE id = $1",
			2, {INT8OID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_LEASES] = {.name = "leases", .text = {
		/* The jobs held by a live lease at $1 (along the waiting index), at most $2; no token. */
		[JQ_API_1_4] = {
			JQ_INDEX_PLAN_MARK "SELECT reserved_by, queue, id, name, attempts, reserved_until FROM @J@"
			" WHERE NOT ready AND " IS_RESERVED("$1")
			" ORDER BY reserved_by COLLATE \"C\", reserved_until, id LIMIT $2",
			2, {TIMESTAMPTZOID, INT4OID}
		},
	}},
};

JqStatementSet browse_statements = JQ_STATEMENT_SET(statements);

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
	return ReturnRowsOf(&call, &statements[PLAN_OVERVIEW], args, NULL);
}

/*
 * ---- 1.5: the estimates past the cap ----
 *
 * Made from the statistics ANALYZE keeps in pg_statistic (autovacuum's,
 * or an explicit ANALYZE), as the planner would make its row estimates,
 * but read directly: a planning per estimate would cost more than the
 * counts it replaces.  Per partition of queue_jobs: its rows now (its
 * pages now times the rows per page of the last ANALYZE, so a table that
 * grew since is followed), the share of those that are the queue's (the
 * most common values of queue, or the average share of the others), and
 * the shares due later and with a token (independent of the queue, as the
 * planner assumes).  No row is read: the cost is a few catalog look-ups.
 */

/* What the statistics say of one table of jobs (a partition, or queue_failed_jobs). */
typedef struct TableStats
{
	Oid			relid;
	double		rows;			/* rows now */
	double		later;			/* share with available_at after now */
	double		held;			/* share with a token */
} TableStats;

typedef struct OverviewStats
{
	bool		loaded;
	int			ntables;
	TableStats	jobs[NUM_JOB_TABLES];	/* queue_jobs' partitions */
	TableStats	failed;
} OverviewStats;

/* The pg_statistic row of relid's column (release it), or NULL. */
static HeapTuple
ColumnStats(Oid relid, const char *column)
{
	AttrNumber	att = get_attnum(relid, column);

	if (att == InvalidAttrNumber)
		return NULL;
	return SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid), Int16GetDatum(att),
						   BoolGetDatum(false));
}

/*
 * The table's rows now: ANALYZE's rows per page times its pages now; never
 * analysed (or emptied since), the planner's guess from its pages.
 */
static double
RowsNow(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	BlockNumber pages = RelationGetNumberOfBlocks(rel);
	double		rows;

	if (pages == 0)
		rows = 0;
	else if (rel->rd_rel->relpages > 0 && rel->rd_rel->reltuples >= 0)
		rows = rel->rd_rel->reltuples / rel->rd_rel->relpages * pages;
	else
	{
		BlockNumber estimated_pages;
		double		allvisfrac;

		estimate_rel_size(rel, NULL, &estimated_pages, &rows, &allvisfrac);
	}
	table_close(rel, AccessShareLock);
	return rows;
}

/* The share of relid's rows whose available_at is after now (planner's default without statistics). */
static double
LaterShare(Oid relid, TimestampTz now)
{
	HeapTuple	stats = ColumnStats(relid, "available_at");
	AttStatsSlot slot;
	double		share;
	double		in_mcv = 0;

	if (!HeapTupleIsValid(stats))
		return DEFAULT_INEQ_SEL;
	share = 0;
	/* the most common values (a batch of jobs pushed together shares its moment) */
	if (get_attstatsslot(&slot, stats, STATISTIC_KIND_MCV, InvalidOid,
						 ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		for (int i = 0; i < slot.nvalues; i++)
		{
			in_mcv += slot.numbers[i];
			if (DatumGetTimestampTz(slot.values[i]) > now)
				share += slot.numbers[i];
		}
		free_attstatsslot(&slot);
	}
	/* the others: the histogram's buckets after now, the one holding now in part */
	if (get_attstatsslot(&slot, stats, STATISTIC_KIND_HISTOGRAM, InvalidOid, ATTSTATSSLOT_VALUES))
	{
		int			n = slot.nvalues;
		double		above = 0;

		if (n >= 2)
		{
			TimestampTz first = DatumGetTimestampTz(slot.values[0]);
			TimestampTz last = DatumGetTimestampTz(slot.values[n - 1]);

			if (now < first)
				above = 1;
			else if (now >= last)
				above = 0;
			else
				for (int i = 0; i < n - 1; i++)
				{
					TimestampTz lo = DatumGetTimestampTz(slot.values[i]);
					TimestampTz hi = DatumGetTimestampTz(slot.values[i + 1]);

					if (now >= lo && now < hi)
					{
						above = (n - 1 - i - (double) (now - lo) / (double) (hi - lo)) / (n - 1);
						break;
					}
				}
		}
		share += Max(1.0 - ((Form_pg_statistic) GETSTRUCT(stats))->stanullfrac - in_mcv, 0) * above;
		free_attstatsslot(&slot);
	}
	ReleaseSysCache(stats);
	return share;
}

/* The share of relid's rows whose token is set (none without statistics). */
static double
HeldShare(Oid relid)
{
	HeapTuple	stats = ColumnStats(relid, "token");
	double		share = 0;

	if (HeapTupleIsValid(stats))
	{
		share = 1.0 - ((Form_pg_statistic) GETSTRUCT(stats))->stanullfrac;
		ReleaseSysCache(stats);
	}
	return share;
}

/*
 * The share of a table's rows (rows of them now) that are queue's: its
 * frequency among the most common values of queue, else the rest shared
 * evenly among the other distinct queues, at most the least common of
 * the most common ones (as the planner's var_eq_const).
 */
static double
QueueShare(const TableStats *table, text *queue)
{
	HeapTuple	stats = ColumnStats(table->relid, "queue");
	Form_pg_statistic form;
	AttStatsSlot slot;
	double		rest;
	double		distinct;
	double		least_common = 1;
	int			common = 0;
	double		share = -1;

	if (!HeapTupleIsValid(stats))
		return DEFAULT_EQ_SEL;
	form = (Form_pg_statistic) GETSTRUCT(stats);
	rest = 1.0 - form->stanullfrac;
	if (get_attstatsslot(&slot, stats, STATISTIC_KIND_MCV, InvalidOid,
						 ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
	{
		for (int i = 0; i < slot.nvalues; i++)
		{
			text	   *value = DatumGetTextPP(slot.values[i]);

			/* bytewise: queue names compare with the "C" rules everywhere */
			if (VARSIZE_ANY_EXHDR(value) == VARSIZE_ANY_EXHDR(queue) &&
				memcmp(VARDATA_ANY(value), VARDATA_ANY(queue), VARSIZE_ANY_EXHDR(queue)) == 0)
				share = slot.numbers[i];
			rest -= slot.numbers[i];
			least_common = Min(least_common, slot.numbers[i]);
		}
		common = slot.nvalues;
		free_attstatsslot(&slot);
	}
	if (share < 0)
	{
		distinct = form->stadistinct < 0 ? -form->stadistinct * table->rows : form->stadistinct;
		share = distinct > common ? Max(rest, 0) / (distinct - common) : 0;
		share = Min(share, least_common);
	}
	ReleaseSysCache(stats);
	return share;
}

/* The tables' statistics, read once per call, when the first estimate needs them. */
static void
LoadOverviewStats(const JqCall *call, OverviewStats *stats)
{
	if (stats->loaded)
		return;
	stats->ntables = 0;
	for (int t = JOBS_RING0; t <= JOBS_LONG; t++)
	{
		Oid			relid = ExtensionRelid(call, JobTableName(t));
		TableStats *table = &stats->jobs[stats->ntables];

		if (!OidIsValid(relid))
			continue;
		table->relid = relid;
		table->rows = RowsNow(relid);
		table->later = LaterShare(relid, call->now);
		table->held = HeldShare(relid);
		stats->ntables++;
	}
	stats->failed.relid = ExtensionRelid(call, "queue_failed_jobs");
	if (!OidIsValid(stats->failed.relid))
		elog(ERROR, "jobqueue: queue_failed_jobs not found in the extension's schema");
	stats->failed.rows = RowsNow(stats->failed.relid);
	stats->loaded = true;
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
 * lower bound (at most the cap) and an estimate (docs/sql-api.md,
 * "queue_overview").  The estimates start from the queue's rows in queue_jobs by the
 * statistics and take away what was counted exactly: with only one state
 * past the cap (the usual big backlog of one state), the estimate is the
 * queue's size less the exact counts.  The jobs due later (delayed and
 * held) are the statistics' rows due later, unless pending was exact;
 * held ones its rows with a token (live or not).
 */
static void
OverviewRow(const JqCall *call, OverviewStats *stats, int64 cap, uint64 row, Datum *out,
			bool *nulls)
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
	text	   *queue;

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
	if (pending_exact && later_exact && failed <= cap)
		return;

	LoadOverviewStats(call, stats);
	queue = DatumGetTextPP(out[OUT_QUEUE]);
	if (!pending_exact || !later_exact)
	{
		double		queue_rows = 0;
		double		later_rows = 0;
		double		held_rows = 0;
		double		later;		/* delayed and held, estimated or exact */

		for (int t = 0; t < stats->ntables; t++)
		{
			const TableStats *table = &stats->jobs[t];
			double		rows = table->rows * QueueShare(table, queue);

			queue_rows += rows;
			later_rows += rows * table->later;
			held_rows += rows * table->held;
		}
		if (later_exact)
			later = ready_delayed + waiting_delayed + held;
		else if (pending_exact)
			later = queue_rows - pending;
		else
			later = later_rows;
		if (!pending_exact)
			out[OUT_PENDING_ESTIMATE] = Int64GetDatum(EstimateAtLeast(queue_rows - later, cap + 1));
		if (!later_exact)
		{
			int64		reserved = EstimateAtLeast(Min(held_rows, later), held);

			out[OUT_RESERVED_ESTIMATE] = Int64GetDatum(reserved);
			out[OUT_DELAYED_ESTIMATE] =
				Int64GetDatum(EstimateAtLeast(later - reserved, ready_delayed + waiting_delayed));
		}
	}
	if (failed > cap)
		out[OUT_FAILED_ESTIMATE] =
			Int64GetDatum(EstimateAtLeast(stats->failed.rows * QueueShare(&stats->failed, queue),
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
	OverviewStats stats = {.loaded = false};

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	cap = ArgInt(fcinfo, 0, "count_cap", JQ_DEFAULT_COUNT_CAP_1_5, 1, JQ_COUNT_CAP_LIMIT);
	args[0] = TimestampTzGetDatum(call.now);
	args[1] = Int32GetDatum(cap);
	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPI_connect();
	QueueExecute(&call, &statements[PLAN_OVERVIEW], args, NULL, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		out[OUT_COLUMNS] = {0};
		bool		nulls[OUT_COLUMNS] = {false};

		CHECK_FOR_INTERRUPTS();
		OverviewRow(&call, &stats, cap, row, out, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
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
	QueueExecute(&call, &statements[PLAN_PAGE_CANDIDATES], args, nulls, SPI_OK_SELECT);
	sorted = SpiInt8(0, 1) <= PAGE_SORTED_CANDIDATES_MAX;	/* count(*) */
	SPI_finish();

	/* (queue, now, state, after_id, max_rows) */
	args[3] = after_id;
	args[4] = Int32GetDatum(max_rows);
	return ReturnRowsOf(&call, sorted ? &statements[PLAN_PAGE_SORTED] : &statements[PLAN_PAGE_BY_ID], args, nulls);
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
	return ReturnRowsOf(&call, &statements[PLAN_JOB], args, NULL);
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
	return ReturnRowsOf(&call, &statements[PLAN_LEASES], args, NULL);
}
