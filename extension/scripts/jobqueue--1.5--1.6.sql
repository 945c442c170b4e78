/*
 * jobqueue 1.5 -> 1.6: the functions lose their SET search_path.
 *
 * Up to 1.5 every function of the extension said SET search_path =
 * pg_catalog, pg_temp, so that a caller's search_path could not decide what
 * a name in its statements means (they run as the extension's owner).
 * That setting was made and undone at every call, and made PostgreSQL
 * compute the search path again for the call's statements and for the
 * caller's next one: a few microseconds of every push, claim and
 * completion.  From 1.6 the library parses and runs each of its statements
 * under pg_catalog alone itself (extension/src/exec/searchpath.c), which
 * protects them as the setting did, for a fraction of the cost.  The
 * functions are all LANGUAGE C: no body of theirs reads the search path.
 * They stay SECURITY DEFINER (but queue_grant and queue_revoke, which never
 * were, and the triggers' functions); the tables, the functions' signatures
 * and their C entry points are 1.5's, so a 1.6 database runs with the
 * library that runs 1.5.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.6'" to load this file. \quit

DO $$
DECLARE
    f pg_catalog.regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::pg_catalog.regprocedure
        FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_depend d
          ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
         AND d.objid OPERATOR(pg_catalog.=) p.oid
         AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
         AND d.deptype OPERATOR(pg_catalog.=) 'e'
        JOIN pg_catalog.pg_extension e
          ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'jobqueue'
        WHERE p.proconfig IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('ALTER FUNCTION %s RESET search_path', f);
    END LOOP;
END
$$;
