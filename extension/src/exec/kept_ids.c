/*-------------------------------------------------------------------------
 *
 * kept_ids.c
 *	  Catalog look-ups every call repeats, kept by the backend until the
 *	  catalog changes: the schema of a called function, and the relation
 *	  ids of the extension's tables, sequences and indexes by name.
 *
 * Every call finds its function's schema, and a push finds its ring
 * partition and the id sequence by name: each a system cache look-up,
 * which for a name hashes and compares the whole NameData, on the path of
 * a one-job push that is meant to cost no more than the INSERT a user
 * would write (docs/performance.md).  The few answers a
 * backend uses are kept here instead, and all of a kind are forgotten
 * when a row of its catalog changes (the system cache's invalidation of
 * pg_proc or pg_class: a function or relation created, dropped, renamed or
 * moved; VACUUM's statistics too, which only costs a new look-up).
 *
 * A kept answer is as current as the system cache's own: both take other
 * sessions' changes when the backend accepts invalidation messages (at a
 * transaction's start, at each lock taken), and the callers open what
 * they found by id, with a lock, as they did with the cache's answer.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

/*
 * How many of each are kept: a backend's calls use a few functions and
 * about a dozen relations of one schema (a second schema, in a database
 * with two installs, only while the calls alternate between them).
 */
#define KEPT_FUNCTIONS 16
#define KEPT_RELATIONS 24

typedef struct KeptFunctionSchema
{
	Oid			function;
	Oid			schema;
} KeptFunctionSchema;

typedef struct KeptRelid
{
	Oid			schema;
	const char *name;			/* a copy, in TopMemoryContext */
	Oid			relid;
} KeptRelid;

static KeptFunctionSchema kept_functions[KEPT_FUNCTIONS];
static int	kept_function_count = 0;
static KeptRelid kept_relids[KEPT_RELATIONS];
static int	kept_relid_count = 0;
static bool forget_registered = false;

/* pg_proc changed (or the caches were reset): forget every function's schema. */
static void
ForgetFunctionSchemas(Datum arg, int cacheid, uint32 hashvalue)
{
	kept_function_count = 0;
}

/* pg_class changed (or the caches were reset): forget every relation id. */
static void
ForgetRelids(Datum arg, int cacheid, uint32 hashvalue)
{
	for (int i = 0; i < kept_relid_count; i++)
		pfree((char *) kept_relids[i].name);
	kept_relid_count = 0;
}

static void
RegisterForgetting(void)
{
	if (forget_registered)
		return;
	CacheRegisterSyscacheCallback(PROCOID, ForgetFunctionSchemas, (Datum) 0);
	CacheRegisterSyscacheCallback(RELNAMENSP, ForgetRelids, (Datum) 0);
	forget_registered = true;
}

/* The schema of function (get_func_namespace), kept. */
Oid
FunctionSchema(Oid function)
{
	Oid			schema;

	for (int i = 0; i < kept_function_count; i++)
		if (kept_functions[i].function == function)
			return kept_functions[i].schema;
	RegisterForgetting();
	schema = get_func_namespace(function);
	if (OidIsValid(schema) && kept_function_count < KEPT_FUNCTIONS)
	{
		kept_functions[kept_function_count].function = function;
		kept_functions[kept_function_count].schema = schema;
		kept_function_count++;
	}
	return schema;
}

/*
 * The relation named name in the call's schema (get_relname_relid), kept;
 * InvalidOid when there is none (then nothing is kept: an older schema's
 * missing table may be created by its update).
 */
Oid
ExtensionRelid(const JqCall *call, const char *name)
{
	Oid			relid;

	for (int i = 0; i < kept_relid_count; i++)
		if (kept_relids[i].schema == call->schema && strcmp(kept_relids[i].name, name) == 0)
			return kept_relids[i].relid;
	RegisterForgetting();
	relid = get_relname_relid(name, call->schema);
	if (OidIsValid(relid) && kept_relid_count < KEPT_RELATIONS)
	{
		kept_relids[kept_relid_count].schema = call->schema;
		kept_relids[kept_relid_count].name = MemoryContextStrdup(TopMemoryContext, name);
		kept_relids[kept_relid_count].relid = relid;
		kept_relid_count++;
	}
	return relid;
}
