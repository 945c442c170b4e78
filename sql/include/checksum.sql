\set ECHO none
-- queue_checksum(): a checksum of everything queued, failed and configured
-- (queue_jobs, queue_failed_jobs, queue_settings), to prove that calls which
-- fail change nothing.  Loaded with \i sql/include/checksum.sql (echo off;
-- pg_temp, see sql/include/try.sql).
CREATE FUNCTION pg_temp.queue_checksum() RETURNS text
LANGUAGE sql AS $fn$
    SELECT md5(coalesce((SELECT string_agg(j::text, '|' ORDER BY j.id) FROM queue_jobs j), '')
               || '#' ||
               coalesce((SELECT string_agg(f::text, '|' ORDER BY f.id) FROM queue_failed_jobs f), '')
               || '#' ||
               coalesce((SELECT string_agg(s::text, '|' ORDER BY s.queue COLLATE "C") FROM queue_settings s), ''))
$fn$;
\set ECHO all
