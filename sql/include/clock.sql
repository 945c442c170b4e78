\set ECHO none
-- The queue's clock as the tests see and move it (loaded with
-- \i sql/include/clock.sql, echo off; the functions live in pg_temp, see
-- sql/include/try.sql).

-- qnow(): the queue's "now" (the wall clock plus jobqueue.clock_offset)
CREATE FUNCTION pg_temp.qnow() RETURNS timestamptz LANGUAGE sql AS
$$ SELECT clock_timestamp()
        + coalesce(nullif(current_setting('jobqueue.clock_offset', true), ''), '0')::interval $$;

-- travel_to(t): sets jobqueue.clock_offset so that the queue's "now" is t
-- (plus the few milliseconds the next statements take); returns the queue's
-- now to the second, so the output shows where the test is.
CREATE FUNCTION pg_temp.travel_to(t timestamptz) RETURNS timestamptz
LANGUAGE sql AS $fn$
    SELECT set_config('jobqueue.clock_offset', (t - clock_timestamp())::text, false);
    SELECT date_trunc('second', pg_temp.qnow());
$fn$;
\set ECHO all
