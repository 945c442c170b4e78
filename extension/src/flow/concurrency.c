/*-------------------------------------------------------------------------
 *
 * concurrency.c
 *	  Concurrency limits (1.5): queue_concurrency_set / _remove / _list,
 *	  and the reads of what flow control holds back (queue_concurrency_keys,
 *	  queue_blocked).  flow.c does the holding back.
 *
 * A limit is set per key prefix within a queue ('' covers every key of
 * the queue); a key takes the limit of its longest prefix with one, else
 * 1: its jobs run one at a time.  A raised limit lets waiting jobs run at
 * once, however it rises (a limit set, or one removed so that a shorter
 * prefix's applies: AdmitWaitingOfKeys in flow.c); a lowered one lets jobs
 * already running finish, and the key's next jobs wait until fewer than
 * the new limit run.
 *
 *-------------------------------------------------------------------------
 */
#include "flow/flow.h"

#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_concurrency_set);
PG_FUNCTION_INFO_V1(jobqueue_concurrency_remove);
PG_FUNCTION_INFO_V1(jobqueue_concurrency_list);
PG_FUNCTION_INFO_V1(jobqueue_concurrency_keys);
PG_FUNCTION_INFO_V1(jobqueue_blocked);

/*
 * The statements of concurrency.c, run by the statement engine (exec/statements.c);
 * registered once (concurrency_statements, from the folder's Init).
 */
enum
{
	PLAN_KEY_LIMIT_SET,
	PLAN_KEY_LIMIT_REMOVE,
	PLAN_KEY_LIMIT_LIST,
	PLAN_KEYS_IN_USE,
	PLAN_BLOCKED,
	NUM_CONCURRENCY_STATEMENTS
};

static JqStatement statements[NUM_CONCURRENCY_STATEMENTS] = {
	[PLAN_KEY_LIMIT_SET] = {.name = "key_limit_set", .text = {
		/* The concurrency limits. */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_key_limits AS l (queue, key_prefix, max_running, updated_at)"
			" VALUES ($1, $2, $3, $4)"
			" ON CONFLICT (queue, key_prefix) DO UPDATE"
			" SET max_running = excluded.max_running, updated_at = excluded.updated_at",
			4, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_KEY_LIMIT_REMOVE] = {.name = "key_limit_remove", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "DELETE FROM @S@.queue_key_limits WHERE queue = $1 AND key_prefix = $2",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEY_LIMIT_LIST] = {.name = "key_limit_list", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT queue, key_prefix, max_running FROM @S@.queue_key_limits"
			" ORDER BY queue, key_prefix",
			0, {0}
		},
	}},
	[PLAN_KEYS_IN_USE] = {.name = "keys_in_use", .text = {
		/* The keys in use (of queue $1, or all): limit, slots taken, jobs waiting. */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "WITH waiting AS ("
			"  SELECT queue, concurrency_key, pg_catalog.count(*) AS jobs FROM @S@.queue_jobs"
			"  WHERE flow = 'key' AND ($1::pg_catalog.text IS NULL OR queue = $1)"
			"  GROUP BY queue, concurrency_key"
			"), taken AS ("
			"  SELECT queue, concurrency_key, running FROM @S@.queue_key_slots"
			"  WHERE $1::pg_catalog.text IS NULL OR queue = $1"
			"), keys AS ("
			"  SELECT coalesce(t.queue, w.queue) AS queue,"
			"   coalesce(t.concurrency_key, w.concurrency_key) AS concurrency_key,"
			"   coalesce(t.running, 0) AS running, coalesce(w.jobs, 0) AS waiting"
			"  FROM taken t FULL JOIN waiting w"
			"   ON t.queue = w.queue AND t.concurrency_key = w.concurrency_key"
			")"
			" SELECT k.queue, k.concurrency_key, " KEY_LIMIT("k.queue", "k.concurrency_key") ","
			"  k.running, k.waiting"
			" FROM keys k ORDER BY k.queue, k.concurrency_key",
			1, {TEXTOID}
		},
	}},
	[PLAN_BLOCKED] = {.name = "blocked", .text = {
		/* Per queue (of $1, or all), the jobs held back by flow control. */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT queue, pg_catalog.count(*) FILTER (WHERE flow = 'key'),"
			"  pg_catalog.count(*) FILTER (WHERE flow = 'parents')"
			" FROM @S@.queue_jobs"
			" WHERE flow IN ('key', 'parents') AND ($1::pg_catalog.text IS NULL OR queue = $1)"
			" GROUP BY queue ORDER BY queue",
			1, {TEXTOID}
		},
	}},
};

JqStatementSet concurrency_statements = JQ_STATEMENT_SET(statements);

/* A key prefix: required, '' (every key) to JQ_CONCURRENCY_KEY_MAX characters. */
static text *
ArgKeyPrefix(FunctionCallInfo fcinfo, int argno)
{
	text	   *prefix;

	ArgRequire(fcinfo, argno, "key_prefix");
	prefix = PG_GETARG_TEXT_PP(argno);
	if (VARSIZE_ANY_EXHDR(prefix) > 0)
		CheckNameText(prefix, "key_prefix", JQ_CONCURRENCY_KEY_MAX);
	return prefix;
}

/*
 * queue_concurrency_set(queue, key_prefix, max_running).  A raised limit
 * lets the waiting jobs of the keys it covers run at once.
 */
Datum
jobqueue_concurrency_set(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[4];

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_5);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = PointerGetDatum(ArgKeyPrefix(fcinfo, 1));
	ArgRequire(fcinfo, 2, "max_running");
	args[2] = Int32GetDatum(ArgInt(fcinfo, 2, "max_running", JQ_DEFAULT_MAX_RUNNING, 1,
								   JQ_MAX_RUNNING_LIMIT));
	args[3] = TimestampTzGetDatum(call.now);

	SPI_connect();
	QueueExecute(&call, &statements[PLAN_KEY_LIMIT_SET], args, NULL, SPI_OK_INSERT);
	AdmitWaitingOfKeys(&call, DatumGetTextPP(args[0]), DatumGetTextPP(args[1]));
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * queue_concurrency_remove(queue, key_prefix): whether there was such a
 * limit.  Keys it covered take a shorter prefix's limit, or 1; jobs
 * running stay running, and if the limit they take now is higher, their
 * waiting jobs run at once.
 */
Datum
jobqueue_concurrency_remove(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[2];
	bool		removed;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_5);
	args[0] = PointerGetDatum(ArgNameText(fcinfo, 0, "queue", NULL, JQ_QUEUE_NAME_MAX));
	args[1] = PointerGetDatum(ArgKeyPrefix(fcinfo, 1));

	SPI_connect();
	QueueExecute(&call, &statements[PLAN_KEY_LIMIT_REMOVE], args, NULL, SPI_OK_DELETE);
	removed = SPI_processed == 1;
	if (removed)
		AdmitWaitingOfKeys(&call, DatumGetTextPP(args[0]), DatumGetTextPP(args[1]));
	SPI_finish();
	PG_RETURN_BOOL(removed);
}

/* queue_concurrency_list() returns (queue, key_prefix, max_running) */
Datum
jobqueue_concurrency_list(PG_FUNCTION_ARGS)
{
	JqCall		call;

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	return ReturnRowsOf(&call, &statements[PLAN_KEY_LIMIT_LIST], NULL, NULL);
}

/* The optional queue argument of the reads: NULL for every queue. */
static void
ArgQueueOrAll(FunctionCallInfo fcinfo, Datum *value, char *null)
{
	text	   *queue = ArgOptionalNameText(fcinfo, 0, "queue", JQ_QUEUE_NAME_MAX);

	*value = PointerGetDatum(queue);
	*null = queue == NULL ? 'n' : ' ';
}

/*
 * queue_concurrency_keys(queue) returns (queue, concurrency_key,
 * max_running, running, waiting): the keys that have jobs holding or
 * waiting for a slot.
 */
Datum
jobqueue_concurrency_keys(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	char		nulls[1];

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	ArgQueueOrAll(fcinfo, &args[0], &nulls[0]);
	return ReturnRowsOf(&call, &statements[PLAN_KEYS_IN_USE], args, nulls);
}

/* queue_blocked(queue) returns (queue, waiting_for_key, waiting_for_parents) */
Datum
jobqueue_blocked(PG_FUNCTION_ARGS)
{
	JqCall		call;
	Datum		args[1];
	char		nulls[1];

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	ArgQueueOrAll(fcinfo, &args[0], &nulls[0]);
	return ReturnRowsOf(&call, &statements[PLAN_BLOCKED], args, nulls);
}
