/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The call context: what internal functions know of the SQL call.
 *
 * Each SQL entry point fills one JqCall first: which API version it
 * serves (its C symbol says so, nothing else does), the extension's schema
 * resolved once (for the statements of plans.c), and the queue's "now" at
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
#include "jobqueue.h"

#include "access/xlog.h"
#include "utils/lsyscache.h"

void
JqCallBegin(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version)
{
	call->fcinfo = fcinfo;
	call->version = version;
	call->schema = get_func_namespace(fcinfo->flinfo->fn_oid);
	call->quoted_schema = QueueSchemaQuoted(call->schema);
	call->now = QueueNow();
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
