/*-------------------------------------------------------------------------
 *
 * statements.c
 *	  The statement engine: the extension's fixed statements, prepared
 *	  once per backend.
 *
 * Each file that runs fixed statements owns them: a table of JqStatement
 * (name, a text per API version, kept plans) beside the code that reads
 * their results, registered once from its folder's Init.  The engine keeps
 * the registry, for what must see every statement: forgetting every plan
 * when the schema changes, and the listing of hot-path statements.
 *
 * Each statement is written with "@S@" where the extension's schema goes,
 * and "@J@" where the job table goes: queue_jobs itself, or (1.3) one of
 * its partitions, so that a statement that finds a job by id can look in
 * one partition at a time (store/ring.c: a statement on the partitioned table
 * costs several times one on a partition to start).  The schema is the
 * namespace of the SQL function being called (it is the extension's
 * schema, resolved once per call in call.c) and quoted in.  Together with the
 * functions' fixed search_path this keeps a caller's search_path from
 * redirecting any query.  Plans are kept with SPI_keepplan; if the schema
 * changes (extension dropped and created elsewhere), all are rebuilt.
 * "@QUEUE_IS(column, value)@" is a search of one queue in the claim index,
 * written for the index the schema has (1.7: its hash first, see below);
 * when that index is built again, all plans are rebuilt too.
 *
 * A statement whose text changed with an API version has one entry per
 * version that changed it, under [statement][version]; a call uses the
 * newest entry not newer than the version of the SQL function it serves,
 * so a 1.2 call runs the 1.1 text of a statement 1.2 left alone, and a
 * statement that only exists since 1.1 cannot run for a 1.0 schema.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* The job tables a statement's "@J@" can name (JobTable). */
static const char *const job_table_names[NUM_JOB_TABLES] = {
	[JOBS_ALL] = "queue_jobs",
	[JOBS_RING0] = "queue_jobs_ring0",
	[JOBS_RING1] = "queue_jobs_ring1",
	[JOBS_LONG] = "queue_jobs_long",
};

/* Every registered table of statements (a few dozen at most). */
#define MAX_STATEMENT_SETS 32
static JqStatementSet *statement_sets[MAX_STATEMENT_SETS];
static int	num_statement_sets = 0;

/* From a folder's Init (in _PG_init): a file's table of statements, once. */
void
RegisterStatements(JqStatementSet *set)
{
	if (num_statement_sets == MAX_STATEMENT_SETS)
		elog(ERROR, "jobqueue: more than %d tables of statements", MAX_STATEMENT_SETS);
	statement_sets[num_statement_sets++] = set;
}

static Oid	cached_schema = InvalidOid;
static char *cached_schema_name = NULL;

/*
 * Whether the cached schema's claim index leads with the queue's hash, as
 * the kept plans were written for; checked again when queue_jobs changes
 * (an ALTER EXTENSION UPDATE in any session builds the index again).
 */
static bool cached_claim_by_hash = false;
static bool claim_index_checked = false;
static Oid	cached_job_table = InvalidOid;
static bool job_table_callback_registered = false;

/*
 * Since 1.7 the claim index leads with the queue's hash
 * (jobqueue--1.6--1.7.sql).  A statement that searches it for one queue
 * says "@QUEUE_IS(column, value)@": the index's condition on the hashes
 * and the name's own comparison (two names may hash alike) when the
 * schema's claim index leads with the hash, the comparison alone before.
 */
#define QUEUE_IS_OPEN "@QUEUE_IS("
#define QUEUE_IS_CLOSE ")@"

/* Append what "@QUEUE_IS(column, value)@" at token stands for; returns what follows it. */
static const char *
AppendQueueIs(StringInfo buf, const char *token, bool claim_by_hash)
{
	const char *args = token + strlen(QUEUE_IS_OPEN);
	const char *end = strstr(args, QUEUE_IS_CLOSE);
	const char *comma = strchr(args, ',');
	char	   *column;
	char	   *value;

	if (end == NULL || comma == NULL || comma > end)
		elog(ERROR, "jobqueue: malformed " QUEUE_IS_OPEN " in a statement");
	column = pnstrdup(args, comma - args);
	for (comma++; *comma == ' '; comma++)
		;
	value = pnstrdup(comma, end - comma);
	if (claim_by_hash)
		appendStringInfo(buf, "(pg_catalog.hashtext(%s) = pg_catalog.hashtext(%s) AND %s = %s)",
						 column, value, column, value);
	else
		appendStringInfo(buf, "%s = %s", column, value);
	return end + strlen(QUEUE_IS_CLOSE);
}

/*
 * Replace every "@S@" in sql with the quoted schema, every "@J@" with the
 * job table, every "@QUEUE_IS(column, value)@" as above.
 */
static char *
QualifySql(const char *sql, const char *quoted_schema, JobTable table, bool claim_by_hash)
{
	StringInfoData buf;
	const char *p = sql;
	const char *hit;

	initStringInfo(&buf);
	while ((hit = strchr(p, '@')) != NULL)
	{
		appendBinaryStringInfo(&buf, p, hit - p);
		if (strncmp(hit, "@S@", 3) == 0)
			appendStringInfoString(&buf, quoted_schema);
		else if (strncmp(hit, "@J@", 3) == 0)
			appendStringInfo(&buf, "%s.%s", quoted_schema, job_table_names[table]);
		else if (strncmp(hit, QUEUE_IS_OPEN, strlen(QUEUE_IS_OPEN)) == 0)
		{
			p = AppendQueueIs(&buf, hit, claim_by_hash);
			continue;
		}
		else
		{
			appendStringInfoChar(&buf, '@');
			p = hit + 1;
			continue;
		}
		p = hit + 3;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

/* Whether the claim index of schema's queue_jobs leads with the queue's hash (1.7 on). */
static bool
ClaimIndexLeadsWithHash(Oid schema)
{
	Oid			index = get_relname_relid("queue_jobs_claim_idx", schema);
	HeapTuple	tuple;
	bool		by_hash;

	if (!OidIsValid(index))
		return false;
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tuple))
		return false;
	/* an expression, not a column: pg_catalog.hashtext(queue) */
	by_hash = ((Form_pg_index) GETSTRUCT(tuple))->indkey.values[0] == 0;
	ReleaseSysCache(tuple);
	return by_hash;
}

/* Forget every kept plan. */
static void
ForgetPlans(void)
{
	for (int s = 0; s < num_statement_sets; s++)
		for (int i = 0; i < statement_sets[s]->count; i++)
		{
			JqStatement *statement = &statement_sets[s]->statements[i];

			for (int v = 0; v < JQ_API_COUNT; v++)
				for (int t = 0; t < NUM_JOB_TABLES; t++)
				{
					if (statement->plans[v][t] != NULL)
					{
						ForgetPlanRule(statement->plans[v][t]);
						SPI_freeplan(statement->plans[v][t]);
					}
					statement->plans[v][t] = NULL;
				}
		}
}

/* queue_jobs (or every relation) changed: its claim index is looked at again. */
static void
JobTableChanged(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == cached_job_table)
		claim_index_checked = false;
}

/*
 * The extension's schema is schema: forget every kept plan if it was
 * another, or if its claim index changed since they were written (see
 * cached_claim_by_hash).
 */
static void
UseSchema(Oid schema)
{
	char	   *name;
	bool		claim_by_hash;

	if (schema == cached_schema && claim_index_checked)
		return;
	if (!job_table_callback_registered)
	{
		CacheRegisterRelcacheCallback(JobTableChanged, (Datum) 0);
		job_table_callback_registered = true;
	}
	claim_by_hash = ClaimIndexLeadsWithHash(schema);
	if (schema == cached_schema && claim_by_hash == cached_claim_by_hash)
	{
		claim_index_checked = true;
		return;
	}
	name = get_namespace_name(schema);
	if (name == NULL)
		elog(ERROR, "jobqueue: schema %u of the called function does not exist", schema);
	ForgetPlans();
	if (cached_schema_name != NULL)
		pfree(cached_schema_name);
	cached_schema_name = MemoryContextStrdup(TopMemoryContext, quote_identifier(name));
	cached_schema = schema;
	cached_job_table = get_relname_relid("queue_jobs", schema);
	cached_claim_by_hash = claim_by_hash;
	claim_index_checked = true;
}

/*
 * The quoted name of the extension's schema, kept for the backend's life
 * (and renewed, with every plan, when the schema changes).
 */
const char *
QueueSchemaQuoted(Oid schema)
{
	UseSchema(schema);
	return cached_schema_name;
}

/*
 * The kept plan of a statement for the call's version on a job table,
 * prepared on first use.  Must be called between SPI_connect and
 * SPI_finish.
 */
static SPIPlanPtr
QueuePlanOn(const JqCall *call, JqStatement *statement, JobTable table)
{
	int			version = call->version;
	const JqStatementText *def;
	SPIPlanPtr	plan;
	char	   *sql;

	UseSchema(call->schema);
	while (version > 0 && statement->text[version].sql == NULL)
		version--;
	def = &statement->text[version];
	if (def->sql == NULL)
		elog(ERROR, "jobqueue: statement %s does not exist in API version %d",
			 statement->name, (int) call->version);
	if (table != JOBS_ALL && !def->per_partition)
		elog(ERROR, "jobqueue: statement %s does not run on one partition", statement->name);
	if (statement->plans[version][table] != NULL)
		return statement->plans[version][table];

	sql = QualifySql(def->sql, cached_schema_name, table, cached_claim_by_hash);
	/*
	 * A generic plan, always: the statements are short and their best plan
	 * does not depend on the values, while planning a custom plan for every
	 * call would cost more than running it.
	 */
	plan = SPI_prepare_cursor(sql, def->nargs, (Oid *) def->argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "jobqueue: SPI_prepare failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "jobqueue: SPI_keepplan failed");
	RememberPlanRule(plan, PlanRuleOfText(def->sql));
	pfree(sql);
	statement->plans[version][table] = plan;
	return plan;
}

/* The name of a job table (unqualified). */
const char *
JobTableName(JobTable table)
{
	return job_table_names[table];
}

/*
 * Run a statement for the call; anything but the expected SPI result is a
 * bug.  The previous result of this SPI connection is released first: a
 * call that runs statements in a loop (a batch, a wait) must not keep
 * every result it has read until SPI_finish.
 */
int
QueueExecute(const JqCall *call, JqStatement *statement, Datum *values, const char *nulls,
			 int expected)
{
	return QueueExecuteOn(call, statement, JOBS_ALL, values, nulls, expected);
}

/* QueueExecute, with "@J@" naming the given job table (a partition, since 1.3). */
int
QueueExecuteOn(const JqCall *call, JqStatement *statement, JobTable table, Datum *values,
			   const char *nulls, int expected)
{
	ExtensionSearchPath pushed;
	SPIPlanPtr	plan;
	int			rc;

	SPI_freetuptable(SPI_tuptable);
	pushed = PushExtensionSearchPath();
	plan = QueuePlanOn(call, statement, table);
	rc = SPI_execute_plan(plan, values, nulls, false, 0);
	PopExtensionSearchPath(pushed);
	if (rc != expected)
		elog(ERROR, "jobqueue: statement %s returned %s, expected %s", statement->name,
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return rc;
}

/* "PREPARE name(types) AS sql" for a statement on a job table, qualified with schema. */
static char *
PrepareText(const char *name, const JqStatementText *def, const char *quoted_schema,
			JobTable table, bool claim_by_hash)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "PREPARE %s", name);
	for (int a = 0; a < def->nargs; a++)
		appendStringInfo(&buf, "%s%s", a == 0 ? "(" : ", ", format_type_be(def->argtypes[a]));
	appendStringInfo(&buf, "%s AS %s", def->nargs > 0 ? ")" : "",
					 QualifySql(def->sql, quoted_schema, table, claim_by_hash));
	return buf.data;
}

/* "EXECUTE name(NULL, ...)": the arguments do not matter to a generic plan. */
static char *
ExecuteText(const char *name, const JqStatementText *def)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "EXECUTE %s", name);
	for (int a = 0; a < def->nargs; a++)
		appendStringInfoString(&buf, a == 0 ? "(NULL" : ", NULL");
	if (def->nargs > 0)
		appendStringInfoChar(&buf, ')');
	return buf.data;
}

/* The rows of jobqueue_hot_path_statements for one statement. */
static void
ListStatement(ReturnSetInfo *rsinfo, const JqStatement *statement, Oid schema,
			  const char *quoted_schema)
{
	static const char *const version_names[JQ_API_COUNT] = {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"};

	for (int v = 0; v < JQ_API_COUNT; v++)
		for (int t = 0; t < NUM_JOB_TABLES; t++)
		{
			const JqStatementText *def = &statement->text[v];
			char	   *name;
			Datum		values[4];
			bool		nulls[4] = {false, false, false, false};

			if (def->sql == NULL ||
				PlanRuleOfText(def->sql) != PLAN_RULE_HOT_PATH)
				continue;
			if (t != JOBS_ALL &&
				(!def->per_partition ||
				 !OidIsValid(get_relname_relid(job_table_names[t], schema))))
				continue;
			name = psprintf("jq_%s_%d_%d", statement->name, v, t);
			values[0] = CStringGetTextDatum(t == JOBS_ALL ? statement->name
											: psprintf("%s on %s", statement->name,
													   job_table_names[t]));
			values[1] = CStringGetTextDatum(version_names[v]);
			values[2] = CStringGetTextDatum(PrepareText(name, def, quoted_schema, t,
															ClaimIndexLeadsWithHash(schema)));
			values[3] = CStringGetTextDatum(ExecuteText(name, def));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

PG_FUNCTION_INFO_V1(jobqueue_hot_path_statements);

/*
 * jobqueue_hot_path_statements(schema) returns (statement, version, prepare,
 * execute): every registered hot-path statement as the installed extension
 * runs it in that schema, to be PREPAREd and EXPLAINed (plan_cache_mode =
 * force_generic_plan) by the plan-shape test and the bench.  A statement
 * that may run on one partition is listed once more per partition of
 * queue_jobs the schema has ("delete on queue_jobs_ring0").
 * Not part of the extension's SQL API: a test creates it from the library.
 */
Datum
jobqueue_hot_path_statements(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			schema;
	const char *quoted_schema;

	ArgRequire(fcinfo, 0, "schema");
	schema = PG_GETARG_OID(0);
	quoted_schema = quote_identifier(get_namespace_name(schema));

	InitMaterializedSRF(fcinfo, 0);
	for (int s = 0; s < num_statement_sets; s++)
		for (int id = 0; id < statement_sets[s]->count; id++)
			ListStatement(rsinfo, &statement_sets[s]->statements[id], schema, quoted_schema);
	return (Datum) 0;
}
