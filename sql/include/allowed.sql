\set ECHO none
-- allowed(role, names): those of the named functions (in the order given)
-- that exist in the extension's schema and that role may execute; '(none)'
-- when it may execute none of them.  Loaded with \i sql/include/allowed.sql
-- (echo off; pg_temp, see sql/include/try.sql).
CREATE FUNCTION pg_temp.allowed(role_name text, names text[]) RETURNS text
LANGUAGE sql AS $fn$
    SELECT coalesce(string_agg(f, ' ' ORDER BY n), '(none)')
    FROM unnest(names) WITH ORDINALITY AS t(f, n)
    WHERE EXISTS (SELECT FROM pg_proc p
                  WHERE p.proname = t.f
                    AND p.pronamespace = (SELECT extnamespace FROM pg_extension
                                          WHERE extname = 'jobqueue')
                    AND has_function_privilege(role_name, p.oid, 'EXECUTE'))
$fn$;
\set ECHO all
