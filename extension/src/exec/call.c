/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The call context: what internal functions know of the SQL call.
 *
 * Each SQL entry point fills one JqCall first: which API version it
 * serves (its C symbol says so, nothing else does), the extension's schema
 * resolved once (for the statements, statements.c), and the queue's "now" at
 * the call's start.  Internal functions take the call instead of fcinfo
 * and version flags; only argument readers (args.c) look at fcinfo.
 *
 * Memory: a call allocates in its SPI connection's context, released at
 * SPI_finish, and each statement releases the previous one's result
 * (QueueExecute).  The loops of batch calls are bounded by
 * JQ_MAX_JOBS_LIMIT jobs; the one loop that is bounded only by time,
 * queue_reserve's wait, runs each round in an SPI connection of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

void
JqCallBegin(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version)
{
	call->fcinfo = fcinfo;
	call->version = version;
	call->schema = FunctionSchema(fcinfo->flinfo->fn_oid);
	call->quoted_schema = QueueSchemaQuoted(call->schema);
	JqCallReadClock(call);
}

/*
 * The call's clocks, read once: the wall clock and the queue's (the wall
 * clock shifted by jobqueue.clock_offset).  A long call (queue_reserve's
 * wait) reads them again each round.
 */
void
JqCallReadClock(JqCall *call)
{
	call->wall = GetCurrentTimestamp();
	call->now = QueueNowAt(call->wall);
}

/*
 * JqCallBegin for a call that writes: on a hot standby it fails at once,
 * before any argument is read or any wait begins, with the SQLSTATE
 * PostgreSQL gives writes there (25006) and a message that says why, so
 * that a client on a standby (a failover, a wrong host in a multi-host
 * connection string) can tell it from any other error and go elsewhere.
 */
void
JqCallBeginWriting(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("jobqueue: %s cannot run on a standby server",
						get_func_name(fcinfo->flinfo->fn_oid)),
				 errdetail("The server is in recovery (a hot standby): jobs are pushed, claimed and finished on the primary."),
				 errhint("Connect to the primary, for example with target_session_attrs=read-write in the connection string.")));
	JqCallBegin(call, fcinfo, version);
}

/* Whether the call's SQL function is of version or later. */
bool
JqCallSince(const JqCall *call, JqApiVersion version)
{
	return call->version >= version;
}

/*
 * The API version of the installed extension's schema (its extversion).
 * A statement that copies whole job rows must name every column the
 * schema has, whichever version's function started the call: a rotation
 * run by a 1.3 function moves the columns 1.5 added too.  Read from the
 * catalog each time: the callers (a rotation, a retry) are rare, and an
 * ALTER EXTENSION UPDATE in another session must be seen at once.
 */
JqApiVersion
InstalledApiVersion(void)
{
	static const char *const names[JQ_API_COUNT] = {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"};
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;
	bool		isnull;
	Datum		datum;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("jobqueue"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		datum = heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);
		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(datum));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	/*
	 * 1.6 changed how the functions are declared, 1.7 the claim index: not
	 * the columns or the functions' behaviour
	 */
	if (version != NULL && (strcmp(version, "1.6") == 0 || strcmp(version, "1.7") == 0))
		return JQ_API_1_5;
	for (int v = JQ_API_COUNT - 1; v >= 0 && version != NULL; v--)
		if (strcmp(version, names[v]) == 0)
			return (JqApiVersion) v;
	elog(ERROR, "jobqueue: the installed extension's version (%s) is not one this library knows",
		 version ? version : "none");
	return JQ_API_1_0;			/* not reached */
}
