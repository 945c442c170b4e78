\set ECHO none
-- queued(id), queued(ids): the names of the jobs queue_push / queue_push_many
-- returned, read back from queue_jobs (in the order given; '(none: id)' for
-- an id no job has), so a push's output shows that the id it returned is
-- the job it queued.  Reads the extension's own table whatever the
-- search_path (the tests shadow queue_jobs and operators on purpose), and
-- as its owner
-- (the tests push as roles that may not read the table).  Loaded with
-- \i sql/include/queued.sql (echo off; pg_temp, see sql/include/try.sql).
CREATE FUNCTION pg_temp.queued(job_ids bigint[]) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
DECLARE
    names text;
BEGIN
    EXECUTE format('SELECT string_agg(coalesce(j.name, ''(none: '' || t.id || '')''), '', '' ORDER BY t.n)
                    FROM unnest($1) WITH ORDINALITY AS t(id, n)
                    LEFT JOIN %I.queue_jobs j ON j.id = t.id',
                   (SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'jobqueue'))
    INTO names USING job_ids;
    RETURN names;
END
$fn$;
CREATE FUNCTION pg_temp.queued(job_id bigint) RETURNS text
LANGUAGE sql SET search_path = pg_catalog AS $fn$ SELECT pg_temp.queued(ARRAY[job_id]) $fn$;
\set ECHO all
