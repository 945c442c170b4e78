--
-- schedules: recurring schedules (1.2).  Cron parsing (valid and invalid
-- expressions), the next times of an expression (queue_cron_next) in UTC and
-- in zones with daylight-saving changes, queue_schedule_set / _list /
-- _remove, and queue_tick: one job per due window, exactly once, the latest
-- window only unless catch_up.
--
-- Every time below is explicit, in an explicit zone; the tick tests move
-- the queue's clock with jobqueue.clock_offset (pg_temp.travel_to) to fixed
-- instants in 2030, so the windows printed do not depend on the day the
-- test runs, and nothing sleeps.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings, queue_schedules;

\i sql/include/try.sql

\i sql/include/clock.sql

-- next_times(cron, after, n, zone): the next n times, in UTC, with the
-- weekday, as one line
CREATE FUNCTION pg_temp.next_times(cron text, after timestamptz, n int DEFAULT 4,
                                   zone text DEFAULT 'UTC') RETURNS text
LANGUAGE sql AS $fn$
    SELECT string_agg(to_char(t, 'YYYY-MM-DD HH24:MI Dy'), ', ' ORDER BY i)
    FROM queue_cron_next(cron, after, zone, n) WITH ORDINALITY AS r(t, i)
$fn$;

-- local_times(cron, after, zone, n): the next n times as UTC instants and
-- as the wall-clock time of the zone (for the daylight-saving cases)
CREATE FUNCTION pg_temp.local_times(cron text, after timestamptz, zone text, n int)
RETURNS TABLE (utc text, local_time text)
LANGUAGE sql AS $fn$
    SELECT to_char(t, 'YYYY-MM-DD HH24:MI'), to_char(t AT TIME ZONE zone, 'YYYY-MM-DD HH24:MI Dy')
    FROM queue_cron_next(cron, after, zone, n) WITH ORDINALITY AS r(t, i)
    ORDER BY i
$fn$;

--------------------------------------------------------------------------
-- cron syntax: valid expressions
--------------------------------------------------------------------------

-- each form of a field, counted from Monday 2024-01-01 00:00 UTC:
-- every minute; a step; "a/n" (from a to the end); "a-b/n"; a range; lists;
-- weekday names (any case); month names; blanks and tabs between fields
SELECT cron, pg_temp.next_times(cron, '2024-01-01 00:00+00') AS next_4
FROM (VALUES ('* * * * *'),
             ('*/15 * * * *'),
             ('5/20 * * * *'),
             ('10-30/10 8 * * *'),
             ('0 9-11 * * *'),
             ('0,30 1,13 * * *'),
             ('15 10 * * mon-fri'),
             ('15 10 * * MON-Fri'),
             ('0 0 1 jan,JUL *'),
             ('0 0 1 1,7 *'),
             ('0 6 * feb-mar sat,sun'),
             ('  0   12  *  *  *  '),
             (E'0\t12\t*\t*\t*')) AS v(cron);

-- weekday 7 is Sunday, like 0 and sun; 5-7 is Friday to Sunday
SELECT cron, pg_temp.next_times(cron, '2024-01-01 00:00+00') AS next_4
FROM (VALUES ('0 12 * * 0'), ('0 12 * * 7'), ('0 12 * * sun'), ('0 0 * * 5-7'), ('0 0 * * 0-7')) AS v(cron);

-- the day fields (Vixie cron): only day-of-month restricted -> those days;
-- only day-of-week -> those weekdays; both -> a day matching EITHER
-- (Friday the 5th, 12th, Saturday the 13th, Friday the 19th, ...)
SELECT cron, pg_temp.next_times(cron, '2024-01-01 00:00+00', 6) AS next_6
FROM (VALUES ('0 0 13 * *'), ('0 0 * * fri'), ('0 0 13 * fri'), ('0 0 29 2 mon')) AS v(cron);

-- month ends: the 31st skips the months without one; the 30th skips
-- February only
SELECT cron, pg_temp.next_times(cron, '2024-01-01 00:00+00', 8) AS next_8
FROM (VALUES ('0 0 31 * *'), ('0 0 30 * *')) AS v(cron);

-- leap days: Feb 29 comes every four years; 2100 is not a leap year, so
-- from 2097 the next is 2104
SELECT pg_temp.next_times('0 0 29 2 *', '2023-01-01 00:00+00', 4) AS from_2023,
       pg_temp.next_times('0 0 29 2 *', '2097-01-01 00:00+00', 2) AS from_2097;

-- times are strictly after "after": at an exact match the next one comes;
-- seconds of "after" are dropped to the next whole minute
SELECT pg_temp.next_times('0 * * * *', '2024-01-01 10:00+00', 2) AS after_exact_match,
       pg_temp.next_times('* * * * *', '2024-01-01 10:00:00.5+00', 2) AS after_half_second,
       pg_temp.next_times('* * * * *', '2024-01-01 10:00:59.999999+00', 2) AS after_last_microsecond;

--------------------------------------------------------------------------
-- shorthands
--------------------------------------------------------------------------

-- each shorthand gives the same times as its five fields, in any case
SELECT shorthand, fields,
       (SELECT array_agg(t) FROM queue_cron_next(shorthand, '2024-01-31 12:00+00', 'UTC', 5) t)
     = (SELECT array_agg(t) FROM queue_cron_next(fields, '2024-01-31 12:00+00', 'UTC', 5) t) AS same,
       pg_temp.next_times(shorthand, '2024-01-31 12:00+00', 2) AS next_2
FROM (VALUES ('@yearly', '0 0 1 1 *'), ('@annually', '0 0 1 1 *'), ('@monthly', '0 0 1 * *'),
             ('@weekly', '0 0 * * 0'), ('@daily', '0 0 * * *'), ('@midnight', '0 0 * * *'),
             ('@hourly', '0 * * * *'), ('@DAILY', '0 0 * * *'), ('@Hourly', '0 * * * *'))
     AS v(shorthand, fields);

-- a shorthand is read in the schedule's zone too: @daily in Asia/Kolkata
-- (UTC+05:30) is 18:30 UTC
SELECT pg_temp.next_times('@daily', '2024-01-31 12:00+00', 2, 'Asia/Kolkata') AS daily_kolkata;

-- @every: multiples of the period counted from 2000-01-01 00:00 UTC, so
-- 10 minutes fires at :00, :10, ...; 7 minutes at 00:04, 00:11 on
-- 2024-01-01 (12623040 minutes after 2000 = 7 * 1803291 + 3); 90 minutes
-- and 36 hours at midnight where the day count allows; one second; the
-- interval in ISO 8601 form; the zone does not move it (counted in UTC)
SELECT cron, after, zone, pg_temp.next_times(cron, after::timestamptz, 3, zone) AS next_3
FROM (VALUES ('@every 10 minutes', '2024-01-01 00:07+00', 'UTC'),
             ('@every 7 minutes', '2024-01-01 00:00+00', 'UTC'),
             ('@every 90 minutes', '2024-01-01 00:00+00', 'UTC'),
             ('@every 1 day 12 hours', '2024-01-01 00:00+00', 'UTC'),
             ('@every PT15M', '2024-01-01 00:07+00', 'UTC'),
             ('@EVERY 2 hours', '2024-01-01 00:00+00', 'UTC'),
             ('@every 1 day', '2024-01-01 00:00+00', 'Europe/Berlin'),
             ('@every 1 hour', '2000-01-01 00:00+00', 'UTC')) AS v(cron, after, zone);

-- @every one second: whole seconds, strictly after "after"
SELECT to_char(t, 'HH24:MI:SS.US') AS every_second
FROM queue_cron_next('@every 1 second', '2024-01-01 12:00:00.5+00', 'UTC', 3) t;

-- @every before 2000-01-01 as well: strictly increasing multiples of the
-- period (an exact multiple as "after" gives the next one)
SELECT pg_temp.next_times('@every 1 hour', '1999-12-31 22:30+00', 3) AS from_1999_2230,
       pg_temp.next_times('@every 1 hour', '1999-12-31 23:00+00', 3) AS from_1999_2300;

--------------------------------------------------------------------------
-- cron syntax: invalid expressions (22023, the message names the field)
--------------------------------------------------------------------------

-- a value out of range, a name that is not one, a backwards range, bad
-- steps, stray characters: each names its field and repeats its text
SELECT cron, pg_temp.try(format('SELECT queue_cron_next(%L)', cron)) AS result
FROM (VALUES ('60 * * * *'), ('1,99 * * * *'), ('-1 * * * *'), ('* 24 * * *'),
             ('* * 0 * *'), ('* * 32 * *'), ('* * * 0 *'), ('* * * 13 *'),
             ('* * * foo *'), ('* * * * 8'), ('* * * * funday'), ('* * * * sunday'),
             ('5-1 * * * *'), ('1-* * * * *'), ('*/0 * * * *'), ('*/60 * * * *'),
             ('* */24 * * *'), ('*/x * * * *'), ('1-5/ * * * *'), ('1,,2 * * * *'),
             ('1; * * * *'), ('* * * jan/2x *')) AS v(cron);

-- the wrong number of fields, unknown shorthands, @every without a usable
-- interval, below one second, or with months or years
SELECT cron, pg_temp.try(format('SELECT queue_cron_next(%L)', cron)) AS result
FROM (VALUES ('* * * *'), ('* * * * * *'), ('   '), ('@fortnightly'), ('@daily x'),
             ('@every banana'), ('@every 0 seconds'), ('@every 0.5 seconds'),
             ('@every -5 minutes'), ('@every 1 month'), ('@every 1 year'),
             ('@every 1 day 1 month')) AS v(cron);

-- expressions that never match within eight years (Feb 30; the 31st of
-- 30-day months)
SELECT cron, pg_temp.try(format('SELECT queue_cron_next(%L)', cron)) AS result
FROM (VALUES ('0 0 30 2 *'), ('0 0 31 4,6,9,11 *')) AS v(cron);

--------------------------------------------------------------------------
-- queue_cron_next: arguments
--------------------------------------------------------------------------

-- cron NULL -> 22004; empty -> 22023; over 200 characters -> 54000; an
-- unknown time zone -> 22023
SELECT pg_temp.try($$SELECT queue_cron_next(NULL)$$) AS cron_null,
       pg_temp.try($$SELECT queue_cron_next('')$$) AS cron_empty;
SELECT pg_temp.try(format('SELECT queue_cron_next(%L)', repeat('1,', 100) || '1 * * * *')) AS cron_too_long;
SELECT pg_temp.try($$SELECT queue_cron_next('* * * * *', NULL, 'Mars/Olympus')$$) AS unknown_zone;

-- count: 1 to 1000 (0, 1001 and negative -> 22023); NULL = 1; 1000 times
-- come strictly increasing, one minute apart for '* * * * *'
SELECT pg_temp.try($$SELECT queue_cron_next('* * * * *', count => 0)$$) AS count_0,
       pg_temp.try($$SELECT queue_cron_next('* * * * *', count => 1001)$$) AS count_1001,
       pg_temp.try($$SELECT queue_cron_next('* * * * *', count => -1)$$) AS count_negative;
SELECT count(*) AS count_null_rows FROM queue_cron_next('* * * * *', '2024-01-01 00:00+00', 'UTC', NULL);
SELECT count(*) AS rows_1000, min(t) AS first, max(t) AS last,
       bool_and(t = timestamptz '2024-01-01 00:00+00' + i * interval '1 minute') AS one_minute_apart
FROM queue_cron_next('* * * * *', '2024-01-01 00:00+00', 'UTC', 1000) WITH ORDINALITY AS r(t, i);

-- time_zone NULL = UTC; after NULL = the queue's now (the clock offset
-- travels with it)
SELECT pg_temp.next_times('0 9 * * *', '2024-01-01 00:00+00', 1, NULL) AS zone_null;
SELECT pg_temp.travel_to('2030-06-15 10:20:30+00') AS queue_now;
SELECT t AS next_after_null FROM queue_cron_next('@hourly') t;
SELECT t AS next_after_null_default_args FROM queue_cron_next('*/5 * * * *', NULL, NULL, NULL) t;
RESET jobqueue.clock_offset;

--------------------------------------------------------------------------
-- daylight-saving time
--------------------------------------------------------------------------

-- Europe/Berlin, spring forward on 2024-03-31 (02:00 CET -> 03:00 CEST):
-- a daily 02:30 job runs once that day, at 01:30 UTC (the wall clock says
-- 03:30: the missing 02:30 maps one hour on)
SELECT * FROM pg_temp.local_times('30 2 * * *', '2024-03-29 12:00+00', 'Europe/Berlin', 4);

-- Europe/Berlin, fall back on 2024-10-27 (03:00 CEST -> 02:00 CET): the
-- daily 02:30 job runs once that day (02:30 CET, 01:30 UTC)
SELECT * FROM pg_temp.local_times('30 2 * * *', '2024-10-25 12:00+00', 'Europe/Berlin', 4);

-- the number of runs of the daily 02:30 job on each local day around both
-- changes: one a day
SELECT (t AT TIME ZONE 'Europe/Berlin')::date AS local_day, count(*) AS runs
FROM queue_cron_next('30 2 * * *', '2024-03-29 00:00+00', 'Europe/Berlin', 5) t
GROUP BY 1
UNION ALL
SELECT (t AT TIME ZONE 'Europe/Berlin')::date, count(*)
FROM queue_cron_next('30 2 * * *', '2024-10-25 00:00+00', 'Europe/Berlin', 5) t
GROUP BY 1
ORDER BY 1;

-- hourly through the spring-forward gap: local 02:00 does not exist and
-- maps to 03:00 CEST, the same instant as 03:00 itself: one run, no
-- duplicate instant, one hour apart in UTC
SELECT * FROM pg_temp.local_times('0 * * * *', '2024-03-30 23:30+00', 'Europe/Berlin', 4);

-- every 30 minutes through the repeated hour: each wall-clock time runs
-- once (02:00 and 02:30 once each, in CET; the first pass of 02:xx, CEST,
-- is not run again)
SELECT * FROM pg_temp.local_times('*/30 * * * *', '2024-10-26 23:00+00', 'Europe/Berlin', 6);

-- America/New_York, spring forward on 2024-03-10 (02:00 EST -> 03:00 EDT):
-- a daily 02:30 job runs once, at 07:30 UTC (03:30 EDT)
SELECT * FROM pg_temp.local_times('30 2 * * *', '2024-03-08 12:00+00', 'America/New_York', 4);

-- America/New_York, fall back on 2024-11-03 (02:00 EDT -> 01:00 EST): a
-- daily 01:30 job (in the repeated hour) runs once, at 06:30 UTC (01:30
-- EST); a daily 02:30 job (not repeated) runs once, at 07:30 UTC
SELECT * FROM pg_temp.local_times('30 1 * * *', '2024-11-01 12:00+00', 'America/New_York', 4);
SELECT * FROM pg_temp.local_times('30 2 * * *', '2024-11-01 12:00+00', 'America/New_York', 3);

--------------------------------------------------------------------------
-- queue_schedule_set / queue_schedule_list / queue_schedule_remove
--------------------------------------------------------------------------

-- the queue's clock: Tuesday 2030-01-01 00:00:30 UTC
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;

-- create: every field given; returns the first window after now
SELECT queue_schedule_set('sched_a', '*/10 * * * *', 'report', '{"kind": "a"}', 'sq', 5, 7,
                          'UTC', true, false) AS next_due;
-- the same schedule with catch_up, and one with every default (payload {},
-- queue default, priority 0, max_attempts 3, UTC, enabled, no catch-up)
SELECT queue_schedule_set('sched_c', '*/10 * * * *', 'report_c', '{"kind": "c"}', 'sq',
                          catch_up => true) AS next_due;
SELECT queue_schedule_set('sched_d', '@hourly', 'hourly_job') AS next_due;
-- @every 10 minutes (its own path in the tick); a disabled schedule; one
-- read in America/New_York (09:00 there is 14:00 UTC)
SELECT queue_schedule_set('sched_e', '@every 10 minutes', 'every_job', queue => 'sq') AS next_due;
SELECT queue_schedule_set('sched_off', '* * * * *', 'off_job', queue => 'sq', enabled => false,
                          catch_up => true) AS next_due;
SELECT queue_schedule_set('sched_ny', '0 9 * * *', 'ny_job', time_zone => 'America/New_York') AS next_due;

-- NULL for an argument that has a default means that default
SELECT queue_schedule_set('sched_nulls', '0 0 1 1 *', 'nulls_job', NULL, NULL, NULL, NULL, NULL, NULL, NULL)
       AS next_due;

-- the list, by name, with every column; nothing enqueued yet
SELECT * FROM queue_schedule_list();

-- the table itself: created_at / updated_at are the queue's now
SELECT count(*) AS schedules,
       bool_and(created_at = updated_at) AS created_is_updated,
       bool_and(created_at BETWEEN '2030-01-01 00:00:30+00' AND pg_temp.qnow()) AS created_now
FROM queue_schedules;

-- arguments: NULL where there is no default -> 22004; empty names -> 22023;
-- too long -> 54000; max_attempts out of range, a bad cron, one that never
-- matches, an unknown or empty zone -> 22023; a payload over the limit ->
-- 54000
SELECT pg_temp.try($$SELECT queue_schedule_set(NULL, '* * * * *', 'j')$$) AS name_null,
       pg_temp.try($$SELECT queue_schedule_set('x', NULL, 'j')$$) AS cron_null,
       pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', NULL)$$) AS job_name_null;
SELECT pg_temp.try($$SELECT queue_schedule_set('', '* * * * *', 'j')$$) AS name_empty,
       pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', '')$$) AS job_name_empty,
       pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j', queue => '')$$) AS queue_empty;
SELECT pg_temp.try(format('SELECT queue_schedule_set(%L, %L, %L)', repeat('n', 201), '* * * * *', 'j')) AS name_201,
       pg_temp.try(format('SELECT queue_schedule_set(%L, %L, %L)', 'x', '* * * * *', repeat('j', 201))) AS job_name_201;
SELECT pg_temp.try(format('SELECT queue_schedule_set(%L, %L, %L, queue => %L)', 'x', '* * * * *', 'j',
                          repeat('q', 65))) AS queue_65;
SELECT pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j', max_attempts => 0)$$) AS max_attempts_0,
       pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j', max_attempts => 1000001)$$) AS max_attempts_big;
SELECT pg_temp.try($$SELECT queue_schedule_set('x', '*/10 25 * * *', 'j')$$) AS bad_cron;
SELECT pg_temp.try($$SELECT queue_schedule_set('x', '0 0 30 2 *', 'j')$$) AS never_matches;
SELECT pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j', time_zone => 'Nowhere/Else')$$) AS unknown_zone,
       pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j', time_zone => '')$$) AS empty_zone;
SELECT pg_temp.try($$SELECT queue_schedule_set('x', '* * * * *', 'j',
                          jsonb_build_object('pad', repeat('x', 1100000)))$$) AS payload_too_large;
-- none of them created anything
SELECT count(*) AS schedules_named_x FROM queue_schedules WHERE name = 'x';

-- a failed replace leaves the schedule as it was (a bad cron, an unknown zone)
SELECT pg_temp.try($$SELECT queue_schedule_set('sched_a', '61 * * * *', 'changed')$$) AS bad_replace,
       pg_temp.try($$SELECT queue_schedule_set('sched_a', '* * * * *', 'changed', time_zone => 'Mars/Base')$$)
       AS bad_zone_replace;
SELECT name, cron, job_name, next_due FROM queue_schedule_list() WHERE name = 'sched_a';

-- remove: true once, then false; NULL -> 22004, empty -> 22023
SELECT queue_schedule_set('sched_tmp', '@daily', 'tmp_job') AS next_due;
SELECT queue_schedule_remove('sched_tmp') AS removed, queue_schedule_remove('sched_tmp') AS removed_again,
       queue_schedule_remove('no_such_schedule') AS removed_unknown;
SELECT pg_temp.try($$SELECT queue_schedule_remove(NULL)$$) AS remove_null,
       pg_temp.try($$SELECT queue_schedule_remove('')$$) AS remove_empty;
SELECT string_agg(name, ',' ORDER BY name) AS schedules FROM queue_schedule_list();

--------------------------------------------------------------------------
-- queue_tick
--------------------------------------------------------------------------

-- nothing is due before the first window: at 00:00:30 and at 00:09:59
SELECT count(*) AS enqueued FROM queue_tick();
SELECT pg_temp.travel_to('2030-01-01 00:09:59+00') AS queue_now;
SELECT count(*) AS enqueued FROM queue_tick();
SELECT count(*) AS jobs FROM queue_jobs;

-- at 00:10:30 the 00:10 window of the three 10-minute schedules is due:
-- one job each; the others (hourly, disabled, New York, yearly) not
SELECT pg_temp.travel_to('2030-01-01 00:10:30+00') AS queue_now;
CREATE TEMP TABLE tick1 AS SELECT * FROM queue_tick();
SELECT schedule, due_at FROM tick1 ORDER BY schedule, due_at;

-- each job has the schedule's fields, is due now (ready, available_at is
-- the tick's now), attempts 0, no deadline, and the unique key
-- 'jobqueue:schedule:<name>:<window in UTC>'; job_id is its id
SELECT t.schedule, j.name, j.payload, j.queue, j.priority, j.max_attempts, j.attempts, j.unique_key,
       j.ready, j.available_at BETWEEN '2030-01-01 00:10:30+00' AND pg_temp.qnow() AS due_at_tick_time,
       j.token IS NULL AS unclaimed, j.deadline IS NULL AS no_deadline, j.last_error
FROM tick1 t JOIN queue_jobs j ON j.id = t.job_id
ORDER BY t.schedule;
SELECT count(*) AS jobs FROM queue_jobs;

-- ticking again (the same window) does nothing
SELECT count(*) AS enqueued FROM queue_tick();
SELECT count(*) AS enqueued FROM queue_tick();
SELECT count(*) AS jobs FROM queue_jobs;

-- after the tick: next_due is the next window, last_window the one
-- enqueued, last_job_id its job
SELECT s.name, s.next_due, s.last_window, s.last_job_id = t.job_id AS last_job_is_tick_job
FROM queue_schedule_list() s LEFT JOIN tick1 t ON t.schedule = s.name
ORDER BY s.name;

-- the job is claimed and completed like any other job
SELECT id = (SELECT job_id FROM tick1 WHERE schedule = 'sched_a') AS is_sched_a_job,
       name, attempts, id AS a_id, token AS a_tok
FROM queue_reserve('{sq}', '1 minute', 'sched-worker') \gset
SELECT :'is_sched_a_job' AS is_sched_a_job, :'name' AS name, :'attempts' AS attempts;
SELECT queue_delete(:a_id, :a_tok) AS completed;
SELECT count(*) AS sched_a_jobs_left FROM queue_jobs WHERE name = 'report';

-- an hour passes without a tick (00:20 ... 01:10 missed): at 01:15:30
-- sched_a enqueues only the latest window (01:10); sched_c (catch_up) each
-- of the six missed windows; sched_e (@every) only the latest; sched_d its
-- 01:00 window; one tick notices all four schedules
SELECT pg_temp.travel_to('2030-01-01 01:15:30+00') AS queue_now;
CREATE TEMP TABLE tick2 AS SELECT * FROM queue_tick();
SELECT schedule, due_at FROM tick2 ORDER BY schedule, due_at;
SELECT schedule, count(*) AS windows FROM tick2 GROUP BY schedule ORDER BY schedule;

-- one job per window returned, each its own row with its own key
SELECT count(*) AS rows_returned, count(DISTINCT t.job_id) AS distinct_jobs,
       bool_and(j.unique_key = 'jobqueue:schedule:' || t.schedule || ':'
                || to_char(t.due_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"')) AS keys_name_windows
FROM tick2 t JOIN queue_jobs j ON j.id = t.job_id;
SELECT unique_key FROM queue_jobs WHERE name = 'report_c' ORDER BY unique_key;

-- next_due and last_window moved past the last window enqueued
SELECT s.name, s.next_due, s.last_window,
       s.last_job_id = (SELECT t.job_id FROM tick2 t WHERE t.schedule = s.name
                        ORDER BY t.due_at DESC LIMIT 1) AS last_job_is_latest
FROM queue_schedule_list() s
WHERE s.name IN ('sched_a', 'sched_c', 'sched_d', 'sched_e')
ORDER BY s.name;

-- the disabled schedule never ticked (its windows were due every minute)
SELECT name, enabled, last_window, last_job_id FROM queue_schedule_list() WHERE name = 'sched_off';
SELECT count(*) AS off_jobs FROM queue_jobs WHERE name = 'off_job';

-- enabling it: the next window after now, the disabled time is not caught
-- up (even with catch_up); the next tick enqueues nothing yet
SELECT queue_schedule_set('sched_off', '* * * * *', 'off_job', queue => 'sq', catch_up => true) AS next_due;
SELECT count(*) AS enqueued FROM queue_tick();

-- replacing keeps the last window: back at 00:55 (before sched_a's last
-- window, 01:10), sched_a is replaced with '*/5 * * * *' and a new
-- payload; its next window is 01:15, not 01:00 / 01:05 / 01:10 again;
-- last_window and last_job_id are kept
SELECT pg_temp.travel_to('2030-01-01 00:55:00+00') AS queue_now;
SELECT queue_schedule_set('sched_a', '*/5 * * * *', 'report', '{"kind": "a2"}', 'sq', 5, 7) AS next_due;
SELECT name, cron, payload, next_due, last_window,
       last_job_id = (SELECT job_id FROM tick2 WHERE schedule = 'sched_a') AS last_job_kept
FROM queue_schedule_list() WHERE name = 'sched_a';
SELECT pg_temp.travel_to('2030-01-01 01:15:30+00') AS queue_now;
SELECT schedule, due_at FROM queue_tick() ORDER BY schedule, due_at;
SELECT payload FROM queue_jobs WHERE unique_key = 'jobqueue:schedule:sched_a:2030-01-01T01:15:00Z';

-- a window whose job is still queued is never enqueued twice: sched_d is
-- removed (its 01:00 job stays), re-created at 00:30, and due at 01:00
-- again; the tick returns the queued job's id and adds no job
SELECT job_id AS d_job FROM tick2 WHERE schedule = 'sched_d' \gset
SELECT queue_schedule_remove('sched_d') AS removed;
SELECT count(*) AS d_jobs_after_remove FROM queue_jobs WHERE name = 'hourly_job';
SELECT pg_temp.travel_to('2030-01-01 00:30:00+00') AS queue_now;
SELECT queue_schedule_set('sched_d', '@hourly', 'hourly_job') AS next_due;
SELECT pg_temp.travel_to('2030-01-01 01:15:30+00') AS queue_now;
SELECT schedule, due_at, job_id = :d_job AS same_job FROM queue_tick();
SELECT count(*) AS d_jobs FROM queue_jobs WHERE name = 'hourly_job';

-- removing a schedule keeps the jobs it queued
SELECT count(*) AS c_jobs_before FROM queue_jobs WHERE name = 'report_c';
SELECT queue_schedule_remove('sched_c') AS removed;
SELECT count(*) AS c_jobs_after FROM queue_jobs WHERE name = 'report_c';
SELECT count(*) AS enqueued_without_c FROM queue_tick();

-- a tick in a transaction that rolls back enqueues nothing and leaves the
-- schedule due: the next tick enqueues the window
SELECT pg_temp.travel_to('2030-01-01 01:20:30+00') AS queue_now;
BEGIN;
SELECT schedule, due_at FROM queue_tick() ORDER BY schedule, due_at;
ROLLBACK;
SELECT count(*) AS jobs_1_20 FROM queue_jobs WHERE unique_key LIKE '%T01:20:00Z';
SELECT schedule, due_at FROM queue_tick() ORDER BY schedule, due_at;
SELECT count(*) AS jobs_1_20 FROM queue_jobs WHERE unique_key LIKE '%T01:20:00Z';

-- (the disabled-then-enabled schedule has done its part)
SELECT queue_schedule_remove('sched_off') AS removed;

-- the zone of a schedule: the New York 09:00 job is due at 14:00 UTC
SELECT pg_temp.travel_to('2030-01-01 14:00:30+00') AS queue_now;
SELECT schedule, due_at FROM queue_tick() WHERE schedule = 'sched_ny';
SELECT name, next_due, last_window FROM queue_schedule_list() WHERE name = 'sched_ny';

-- a daily 02:30 Europe/Berlin schedule with catch-up across the 2030
-- spring-forward (2030-03-31): one window a day, the missing 02:30 mapped
-- to 01:30 UTC (03:30 CEST)
SELECT pg_temp.travel_to('2030-03-29 12:00:00+00') AS queue_now;
SELECT queue_schedule_set('sched_berlin', '30 2 * * *', 'berlin_job', queue => 'bq',
                          time_zone => 'Europe/Berlin', catch_up => true) AS next_due;
SELECT pg_temp.travel_to('2030-04-01 12:00:00+00') AS queue_now;
SELECT due_at, to_char(due_at AT TIME ZONE 'Europe/Berlin', 'YYYY-MM-DD HH24:MI') AS berlin
FROM queue_tick() WHERE schedule = 'sched_berlin' ORDER BY due_at;

--------------------------------------------------------------------------
-- @every with catch-up; a long pause without catch-up
--------------------------------------------------------------------------
TRUNCATE queue_jobs, queue_schedules;

-- '@every 1 hour' with catch_up, not ticked for five hours: the five
-- windows 01:00 ... 05:00
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SELECT queue_schedule_set('sched_every_c', '@every 1 hour', 'every_c_job', queue => 'eq', catch_up => true)
       AS next_due;
SELECT pg_temp.travel_to('2030-01-01 05:30:30+00') AS queue_now;
SELECT schedule, due_at FROM queue_tick() ORDER BY due_at;
SELECT next_due, last_window FROM queue_schedule_list();
SELECT queue_schedule_remove('sched_every_c') AS removed;

-- a '* * * * *' schedule (no catch-up) not ticked for two years, over a
-- million missed windows: one tick enqueues only the latest window
-- (2032-01-01 00:00), the next tick nothing
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SELECT queue_schedule_set('sched_pause', '* * * * *', 'pause_job', queue => 'pq') AS next_due;
SELECT pg_temp.travel_to('2032-01-01 00:00:30+00') AS queue_now;
SELECT schedule, due_at FROM queue_tick();
SELECT count(*) AS enqueued FROM queue_tick();
SELECT next_due, last_window FROM queue_schedule_list();
SELECT count(*) AS jobs FROM queue_jobs WHERE queue = 'pq';
SELECT queue_schedule_remove('sched_pause') AS removed;

--------------------------------------------------------------------------
-- tiers: queue_cron_next is producer, queue_tick worker, the schedule
-- functions admin
--------------------------------------------------------------------------
CREATE ROLE regress_jq_sched_producer;
CREATE ROLE regress_jq_sched_worker;
CREATE ROLE regress_jq_sched_admin;
SELECT queue_grant('regress_jq_sched_producer', 'producer');
SELECT queue_grant('regress_jq_sched_worker', 'worker');
SELECT queue_grant('regress_jq_sched_admin', 'admin');

SELECT r AS role,
       has_function_privilege(r, 'queue_cron_next(text,timestamptz,text,integer)', 'EXECUTE') AS cron_next,
       has_function_privilege(r, 'queue_tick()', 'EXECUTE') AS tick,
       has_function_privilege(r, 'queue_schedule_set(text,text,text,jsonb,text,integer,integer,text,boolean,boolean)',
                              'EXECUTE') AS schedule_set,
       has_function_privilege(r, 'queue_schedule_list()', 'EXECUTE') AS schedule_list,
       has_function_privilege(r, 'queue_schedule_remove(text)', 'EXECUTE') AS schedule_remove,
       has_table_privilege(r, 'queue_schedules', 'SELECT, INSERT, UPDATE, DELETE') AS table_access
FROM unnest(ARRAY['regress_jq_sched_producer', 'regress_jq_sched_worker', 'regress_jq_sched_admin',
                  'public']) WITH ORDINALITY AS t(r, n)
ORDER BY n;

-- the producer computes times but may not tick; the worker ticks but may
-- not list; the admin manages schedules (the clock offset set by the
-- superuser stays in force under SET ROLE)
SET ROLE regress_jq_sched_producer;
SELECT pg_temp.next_times('@daily', '2024-01-01 00:00+00', 1) AS producer_cron_next;
SELECT pg_temp.try($$SELECT queue_tick()$$) AS producer_tick;
RESET ROLE;
SELECT pg_temp.travel_to('2030-04-01 12:00:00+00') AS queue_now;
SET ROLE regress_jq_sched_admin;
SELECT queue_schedule_set('sched_role', '*/5 * * * *', 'role_job', queue => 'rq') AS next_due;
SELECT name, next_due FROM queue_schedule_list() WHERE name = 'sched_role';
RESET ROLE;
SELECT pg_temp.travel_to('2030-04-01 12:05:30+00') AS queue_now;
SET ROLE regress_jq_sched_worker;
SELECT pg_temp.try($$SELECT queue_schedule_list()$$) AS worker_list;
SELECT pg_temp.try($$SELECT queue_schedule_set('w', '* * * * *', 'j')$$) AS worker_set;
SELECT schedule, due_at FROM queue_tick() WHERE schedule = 'sched_role';
SELECT count(*) AS claimed_role_job FROM queue_reserve('{rq}') r WHERE queue_delete(r.id, r.token);
RESET ROLE;
SET ROLE regress_jq_sched_admin;
SELECT queue_schedule_remove('sched_role') AS removed;
RESET ROLE;

SELECT queue_revoke(r, 'producer')
FROM unnest(ARRAY['regress_jq_sched_producer', 'regress_jq_sched_worker', 'regress_jq_sched_admin']) AS r;
REVOKE USAGE ON SCHEMA public FROM regress_jq_sched_producer, regress_jq_sched_worker, regress_jq_sched_admin;
DROP ROLE regress_jq_sched_producer, regress_jq_sched_worker, regress_jq_sched_admin;

--------------------------------------------------------------------------
-- catch-up is bounded: at most 1000 windows per tick
--------------------------------------------------------------------------
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings, queue_schedules;

-- in a new session (as a worker's ticking connection would be)
\c
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
\i sql/include/clock.sql

-- a '* * * * *' schedule with catch_up, not ticked for a day (1440
-- windows): the first tick enqueues the first 1000 windows, the next one
-- the remaining 440, then nothing is due; one job per window
SELECT pg_temp.travel_to('2030-01-01 00:00:30+00') AS queue_now;
SELECT queue_schedule_set('sched_min', '* * * * *', 'minute_job', queue => 'mq', catch_up => true) AS next_due;
SELECT pg_temp.travel_to('2030-01-02 00:00:30+00') AS queue_now;
SELECT count(*) AS enqueued, min(due_at) AS first, max(due_at) AS last FROM queue_tick();
SELECT next_due, last_window FROM queue_schedule_list();
SELECT count(*) AS enqueued, min(due_at) AS first, max(due_at) AS last FROM queue_tick();
SELECT count(*) AS enqueued FROM queue_tick();
SELECT count(*) AS jobs, count(DISTINCT unique_key) AS keys FROM queue_jobs WHERE queue = 'mq';

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings, queue_schedules;
