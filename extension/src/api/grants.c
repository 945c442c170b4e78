/*-------------------------------------------------------------------------
 *
 * grants.c
 *	  queue_grant / queue_revoke: the producer, worker and admin tiers.
 *
 * The tables are closed to PUBLIC and the functions run as the extension's
 * owner, so a role's rights are exactly the functions it may EXECUTE.  The
 * tiers nest: producer < worker < admin.  A tier is granted as EXECUTE on
 * every function of that tier and the tiers below it; revoking a tier takes
 * it and the tiers above it.  Functions are found through the extension's
 * membership, so functions added by later versions join their tier without
 * changes here beyond naming them below.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "catalog/namespace.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_grant);
PG_FUNCTION_INFO_V1(jobqueue_revoke);

/*
 * The statements of grants.c, run by the statement engine (exec/statements.c);
 * registered once (grants_statements, from the folder's Init).
 */
enum
{
	PLAN_TIER_FUNCTIONS,
	NUM_GRANTS_STATEMENTS
};

static JqStatement statements[NUM_GRANTS_STATEMENTS] = {
	[PLAN_TIER_FUNCTIONS] = {.name = "tier_functions", .text = {
		/* The extension's own functions, by name, as text signatures. */
		[JQ_API_1_0] = {
			"SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, p.proname::pg_catalog.text"
			" FROM pg_catalog.pg_depend d"
			" JOIN pg_catalog.pg_proc p ON p.oid = d.objid"
			" WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
			"   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass"
			"   AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'jobqueue')"
			"   AND d.deptype = 'e'"
			" ORDER BY 1",
			0, {0}
		},
	}},
};

JqStatementSet grants_statements = JQ_STATEMENT_SET(statements);

typedef enum QueueTier
{
	TIER_PRODUCER = 1,
	TIER_WORKER = 2,
	TIER_ADMIN = 3,
	TIER_OWNER = 4				/* never granted: owner or superuser only */
} QueueTier;

/* Pushing and looking at the backlog. */
static const char *const producer_functions[] = {
	"queue_push", "queue_push_many", "queue_pending", "queue_stats",
	"queue_failed_count", "queue_list", "queue_cron_next", "queue_counters",
	"queue_overview", "queue_concurrency_list", "queue_concurrency_keys", "queue_rate_limits",
	"queue_blocked", "queue_shard", "queue_job_shard", NULL
};

/* Claiming and finishing jobs. */
static const char *const worker_functions[] = {
	"queue_reserve", "queue_delete", "queue_delete_many", "queue_release",
	"queue_release_many", "queue_fail", "queue_fail_many", "queue_extend", "queue_tick",
	"queue_rate_limit_next", NULL
};

/* The flow-control triggers' functions are run by their tables only. */
static const char *const owner_functions[] = {
	"queue_grant", "queue_revoke", "queue_flow_job_removed", "queue_flow_failed_removed",
	"queue_flow_jobs_truncated", NULL
};

static bool
NameInList(const char *name, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(name, *list) == 0)
			return true;
	return false;
}

/* Every other function of the extension is administration. */
static QueueTier
FunctionTier(const char *proname)
{
	if (NameInList(proname, producer_functions))
		return TIER_PRODUCER;
	if (NameInList(proname, worker_functions))
		return TIER_WORKER;
	if (NameInList(proname, owner_functions))
		return TIER_OWNER;
	return TIER_ADMIN;
}

static QueueTier
ArgTier(FunctionCallInfo fcinfo, int argno)
{
	char	   *tier;

	ArgRequire(fcinfo, argno, "tier");
	tier = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(tier, "producer") == 0)
		return TIER_PRODUCER;
	if (strcmp(tier, "worker") == 0)
		return TIER_WORKER;
	if (strcmp(tier, "admin") == 0)
		return TIER_ADMIN;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("argument \"tier\" must be 'producer', 'worker' or 'admin', got \"%s\"", tier)));
	return TIER_PRODUCER;		/* not reached */
}

/* The role argument, which must name an existing role. */
static char *
ArgRole(FunctionCallInfo fcinfo, int argno)
{
	char	   *role;

	ArgRequire(fcinfo, argno, "role");
	role = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!OidIsValid(get_role_oid(role, true)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" does not exist", role)));
	return role;
}

static void
RequireOwner(void)
{
	Oid			extension = get_extension_oid("jobqueue", false);

	if (!superuser() && !OwnsExtension(extension, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only the owner of extension jobqueue or a superuser may grant or revoke its tiers")));
}

/*
 * GRANT (or REVOKE) EXECUTE on each function of the extension that
 * selected() picks by tier.
 */
static void
ApplyTier(const JqCall *call, const char *role, QueueTier tier, bool grant)
{
	const char *quoted_role = quote_identifier(role);
	uint64		count;
	SPITupleTable *functions;

	SPI_connect();
	QueueExecute(call, &statements[PLAN_TIER_FUNCTIONS], NULL, NULL, SPI_OK_SELECT);
	count = SPI_processed;
	functions = SpiTakeResult();

	if (grant)
	{
		char	   *sql = psprintf("GRANT USAGE ON SCHEMA %s TO %s",
								   call->quoted_schema, quoted_role);

		if (SpiExecuteSafely(sql, false) != SPI_OK_UTILITY)
			elog(ERROR, "jobqueue: \"%s\" failed", sql);
	}

	for (uint64 row = 0; row < count; row++)
	{
		char	   *signature = SPI_getvalue(functions->vals[row], functions->tupdesc, 1);
		char	   *proname = SPI_getvalue(functions->vals[row], functions->tupdesc, 2);
		QueueTier	function_tier = FunctionTier(proname);
		bool		selected;
		char	   *sql;

		CHECK_FOR_INTERRUPTS();
		if (function_tier == TIER_OWNER)
			continue;
		/* grant: this tier and below; revoke: this tier and above */
		selected = grant ? function_tier <= tier : function_tier >= tier;
		if (!selected)
			continue;
		sql = psprintf(grant ? "GRANT EXECUTE ON FUNCTION %s TO %s"
					   : "REVOKE EXECUTE ON FUNCTION %s FROM %s",
					   signature, quoted_role);
		if (SpiExecuteSafely(sql, false) != SPI_OK_UTILITY)
			elog(ERROR, "jobqueue: \"%s\" failed", sql);
		pfree(sql);
	}
	SPI_finish();
}

/*
 * ApplyTier as a grant of the user's, also inside an extension script.  The
 * upgrade scripts re-grant each role its tier (queue_grant in ALTER
 * EXTENSION UPDATE) so that the version's new functions join it.  Made
 * while the script runs, the server would record those grants as the
 * extension's initial privileges (pg_init_privs): pg_dump would then leave
 * them out of a dump, so a restore would lose the role's tier, and from
 * PostgreSQL 17 on, which ties initial privileges to the role, the role
 * could no longer be dropped without DROP OWNED.  They are the user's, so
 * they are made as outside the script, on every version.
 */
static void
ApplyTierAsUsersGrant(const JqCall *call, const char *role, QueueTier tier, bool grant)
{
	bool		in_extension_script = creating_extension;

	creating_extension = false;
	PG_TRY();
	{
		ApplyTier(call, role, tier, grant);
	}
	PG_FINALLY();
	{
		creating_extension = in_extension_script;
	}
	PG_END_TRY();
}

/* queue_grant / queue_revoke: check the caller, the role and the tier, then apply. */
static Datum
GrantOrRevoke(FunctionCallInfo fcinfo, bool grant)
{
	JqCall		call;
	char	   *role;
	QueueTier	tier;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_0);
	RequireOwner();
	role = ArgRole(fcinfo, 0);
	tier = ArgTier(fcinfo, 1);
	ApplyTierAsUsersGrant(&call, role, tier, grant);
	PG_RETURN_VOID();
}

/* queue_grant(role, tier) */
Datum
jobqueue_grant(PG_FUNCTION_ARGS)
{
	return GrantOrRevoke(fcinfo, true);
}

/* queue_revoke(role, tier) */
Datum
jobqueue_revoke(PG_FUNCTION_ARGS)
{
	return GrantOrRevoke(fcinfo, false);
}
