/*-------------------------------------------------------------------------
 *
 * exec/exec.h
 *	  Running statements: the call context, the statement engine, results.
 *
 * Every SQL entry point builds a JqCall first (call.c); statements are
 * prepared once per backend and API version (statements.c), their results read
 * with typed readers (results.c), and the hot-path statements keep their
 * index plans whatever the statistics (hotpath.c).
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_EXEC_H
#define JOBQUEUE_EXEC_H

#include "base/base.h"

/*
 * call.c: what every internal function needs to know about the SQL call
 * it serves, resolved once when the call starts.
 */
typedef struct JqCall
{
	FunctionCallInfo fcinfo;
	JqApiVersion version;		/* of the SQL function being called */
	Oid			schema;			/* the extension's: the function's namespace */
	const char *quoted_schema;	/* for statements built at run time */
	TimestampTz now;			/* the queue's clock at the call's start */
	TimestampTz wall;			/* the wall clock then (the storage ring's, kept settings' age) */
} JqCall;

extern void JqCallBegin(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version);
extern void JqCallBeginWriting(JqCall *call, FunctionCallInfo fcinfo, JqApiVersion version);
extern void JqCallReadClock(JqCall *call);
extern bool JqCallSince(const JqCall *call, JqApiVersion version);
extern JqApiVersion InstalledApiVersion(void);

/* kept_ids.c: catalog look-ups kept until the catalog changes */
extern Oid	FunctionSchema(Oid function);
extern Oid	ExtensionRelid(const JqCall *call, const char *name);

/*
 * statements.c: the statement engine.  Each file that runs fixed
 * statements owns a table of them (its JqStatement array, beside the code
 * that reads their results) and registers it once, from its folder's Init
 * (RegisterStatements); the engine prepares each statement once per
 * backend, API version and job table, quotes the extension's schema in,
 * and lists the hot-path ones for the plans test.  A statement may have a
 * text per API version; a call gets the newest text not newer than its own
 * version.
 */
#define JQ_STATEMENT_MAX_ARGS 12

/* One API version's text of a statement. */
typedef struct JqStatementText
{
	const char *sql;			/* NULL: no text of its own for this version */
	int			nargs;
	Oid			argtypes[JQ_STATEMENT_MAX_ARGS];
	bool		per_partition;	/* may run on one partition (QueueExecuteOn) */
} JqStatementText;

/*
 * The tables a statement's jobs can be read from: queue_jobs, or (1.3)
 * one of its partitions (store/ring.c).
 */
typedef enum JobTable
{
	JOBS_ALL,
	JOBS_RING0,
	JOBS_RING1,
	JOBS_LONG,
	NUM_JOB_TABLES
} JobTable;

/* A statement: its name (in listings), its texts, its kept plans. */
typedef struct JqStatement
{
	const char *name;
	JqStatementText text[JQ_API_COUNT];
	SPIPlanPtr	plans[JQ_API_COUNT][NUM_JOB_TABLES];	/* prepared on first use */
} JqStatement;

/* A file's table of statements, as it registers it. */
typedef struct JqStatementSet
{
	JqStatement *statements;
	int			count;
} JqStatementSet;

#define JQ_STATEMENT_SET(array) {(array), lengthof(array)}

extern void RegisterStatements(JqStatementSet *set);

extern const char *JobTableName(JobTable table);
extern const char *QueueSchemaQuoted(Oid schema);
extern int	QueueExecute(const JqCall *call, JqStatement *statement, Datum *values,
						 const char *nulls, int expected);
extern int	QueueExecuteOn(const JqCall *call, JqStatement *statement, JobTable table,
						   Datum *values, const char *nulls, int expected);

/* results.c */
extern ArrayType *Int8ArrayFromDatums(Datum *values, int count);
extern int64 SpiInt8(uint64 row, int column);
extern Oid	SpiOid(uint64 row, int column);
extern int32 SpiInt32(uint64 row, int column);
extern bool SpiBool(uint64 row, int column);
extern TimestampTz SpiTimestampTz(uint64 row, int column);
extern text *SpiTextCopy(uint64 row, int column);
extern text *SpiText(uint64 row, int column);
extern Jsonb *SpiJsonbCopy(uint64 row, int column);
extern bool SpiIsNull(uint64 row, int column);
extern SPITupleTable *SpiTakeResult(void);
extern Datum ReturnRowsOf(const JqCall *call, JqStatement *statement, Datum *values,
						  const char *nulls);
extern uint64 RunAlone(const JqCall *call, JqStatement *statement, Datum *values,
					   const char *nulls, int expected);
extern int	CompareLeadingIds(const void *a, const void *b);

/* hotpath.c: hot-path statements keep index plans whatever the statistics */
#define JQ_HOT_PATH_MARK "/* jobqueue hot path */ "
/* the same for statements that must read indexes but may sort (not hot path) */
#define JQ_INDEX_PLAN_MARK "/* jobqueue index plan */ "
typedef enum PlanRule
{
	PLAN_RULE_NONE,				/* planned as PostgreSQL would */
	PLAN_RULE_HOT_PATH,			/* no sequential or bitmap scan, no sort */
	PLAN_RULE_INDEX				/* no sequential or bitmap scan, no JIT */
} PlanRule;
extern PlanRule PlanRuleOfText(const char *sql);
extern void RememberPlanRule(SPIPlanPtr plan, PlanRule rule);
extern void ForgetPlanRule(SPIPlanPtr plan);
extern void JobqueueInstallPlannerHook(void);

/* searchpath.c: statements parse and run with pg_catalog alone on the path */
typedef CatalogSearchPathToken ExtensionSearchPath;
extern ExtensionSearchPath PushExtensionSearchPath(void);
extern void PopExtensionSearchPath(ExtensionSearchPath pushed);
extern int	SpiExecuteSafelyWithArgs(const char *sql, int nargs, Oid *argtypes, Datum *values,
									 bool read_only);
extern int	SpiExecuteSafely(const char *sql, bool read_only);

/* exec.c */
extern void JqExecInit(void);

#endif							/* JOBQUEUE_EXEC_H */
