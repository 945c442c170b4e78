-- queue_reserve's wait (1.2): with nothing due, wait in the server for a job
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/queued.sql

-- a due job is returned at once, wait or not
SELECT pg_temp.queued(queue_push('w1', queue => 'wq')) AS pushed;
SELECT name FROM queue_reserve('{wq}', wait => '5 seconds');

-- nothing due: waits, then returns the empty set
SELECT count(*) AS claimed FROM queue_reserve('{wq}', wait => '0.2 seconds');

-- a wait of 0 (the default) does not wait
SELECT count(*) AS claimed FROM queue_reserve('{wq}');

-- a delayed job falling due during the wait is claimed by it
SELECT pg_temp.queued(queue_push('w2', queue => 'wq', delay => '0.3 seconds')) AS pushed;
SELECT name FROM queue_reserve('{wq}', wait => '5 seconds');

-- NULL means the default (no wait)
SELECT count(*) AS claimed FROM queue_reserve('{wq}', wait => NULL);

-- bad waits
SELECT queue_reserve('{wq}', wait => '-1 second');
SELECT queue_reserve('{wq}', wait => '2 hours');

TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
