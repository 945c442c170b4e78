\set ECHO none
-- try(stmt): runs stmt, then always undoes it (a subtransaction rolled back
-- by a private SQLSTATE); returns 'ok' or 'SQLSTATE: message'.
--
-- Shared by the pg_regress files: each loads it with \i sql/include/try.sql
-- (pg_regress runs psql from the directory make runs in, the top of the
-- tree).  The function lives in pg_temp, so it survives DROP EXTENSION and
-- DROP SCHEMA in the tests and ends with the session (load it again after
-- \c).  Echo is off while it loads, so the expected outputs show the \i line
-- only, not the definition.
CREATE FUNCTION pg_temp.try(stmt text) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    state   text;
    message text;
BEGIN
    EXECUTE stmt;
    RAISE SQLSTATE 'JQ000';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    IF state = 'JQ000' THEN
        RETURN 'ok';
    END IF;
    RETURN state || ': ' || message;
END
$fn$;
\set ECHO all
