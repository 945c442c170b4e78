/*-------------------------------------------------------------------------
 *
 * searchpath.c
 *	  The search path the extension's statements are parsed and run under.
 *
 * The SQL functions run as the extension's owner (SECURITY DEFINER), so a
 * caller's search_path must never decide what a name in their statements
 * means: a schema of the caller's, put first, could otherwise offer its own
 * queue_jobs, or its own "=" for bigint.  Every statement names the
 * extension's objects with its schema; what is left unqualified (operators,
 * types, pg_catalog functions) must resolve in pg_catalog.
 *
 * Up to 1.5 each function said SET search_path = pg_catalog, pg_temp.  That
 * costs every call a setting made and undone, and the search path
 * computed afresh for the call's statements and again for the caller's
 * next one (about 2 to 5 microseconds of a 40 microsecond push).  From 1.6
 * the functions have no SET (jobqueue--1.5--1.6.sql); instead each
 * statement is parsed and run under pg_catalog alone, begun here just for
 * that statement (base/compat.h's BeginCatalogSearchPath: up to 16 an
 * override search path, a list of one element copied, nothing looked up;
 * from 17, which has no override, the setting saved and restricted as the
 * server's maintenance commands do, its list found in the server's cache
 * of search paths).  A kept plan remembers the path it was parsed under
 * and is re-analysed under that same path when it must be re-planned;
 * since the path in force when it runs is the same again, it is never
 * re-planned for the path's sake.
 *
 * An error inside leaves the path to the abort of the (sub)transaction
 * it was pushed in, which pops it without a word (every place that catches
 * an error here rolls a subtransaction back); the normal way pops it at
 * once.  Under a 1.5 schema the
 * functions' own SET is still there as well; this path changes nothing
 * for them.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

/* Parse and run what follows under pg_catalog alone, until the matching end. */
ExtensionSearchPath
PushExtensionSearchPath(void)
{
	return BeginCatalogSearchPath();
}

void
PopExtensionSearchPath(ExtensionSearchPath pushed)
{
	EndCatalogSearchPath(pushed);
}

/*
 * SPI_execute_with_args of a statement built at run time (nargs may be 0),
 * under the extension's search path; returns SPI's result code.
 */
int
SpiExecuteSafelyWithArgs(const char *sql, int nargs, Oid *argtypes, Datum *values,
						 bool read_only)
{
	ExtensionSearchPath pushed = PushExtensionSearchPath();
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, read_only, 0);
	PopExtensionSearchPath(pushed);
	return rc;
}

/* The same without arguments. */
int
SpiExecuteSafely(const char *sql, bool read_only)
{
	return SpiExecuteSafelyWithArgs(sql, 0, NULL, NULL, read_only);
}
