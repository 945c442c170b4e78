--
-- errors_1_1: the argument checks of every function 1.1 adds or changes
-- (API.md, "Precise rules"; design-1.1):
--   NULL for an argument without a default: 22004, naming the argument;
--   NULL for an argument with a default: that default;
--   bad values 22023, over-long / too many 54000; a failed call changes
--   nothing (queue_jobs, queue_failed_jobs and queue_settings).
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql

\i sql/include/checksum.sql
\i sql/include/queued.sql

--------------------------------------------------------------------------
-- Part 1: NULL for a defaulted argument means the default (real calls)
--------------------------------------------------------------------------

-- queue_push with all eight arguments NULL but the name: no deadline
SELECT queue_push('defaults', NULL, NULL, NULL, NULL, NULL, NULL, NULL) AS push_id \gset
SELECT queue, payload, priority, max_attempts, unique_key IS NULL AS no_key,
       deadline IS NULL AS no_deadline, ready
FROM queue_jobs WHERE id = :push_id;

-- queue_push_many: JSON null for every optional field means its default
SELECT queue_push_many('[{"name": "many-defaults", "payload": null, "queue": null, "delay": null,
                          "priority": null, "unique_key": null, "max_attempts": null,
                          "deadline": null}]') AS many_ids \gset
SELECT queue, payload, priority, max_attempts, unique_key IS NULL AS no_key,
       deadline IS NULL AS no_deadline, ready, available_at = created_at AS due_at_push
FROM queue_jobs WHERE id = (:'many_ids'::bigint[])[1];
-- an empty array pushes nothing and returns an empty array
SELECT queue_push_many('[]') AS none_pushed;
TRUNCATE queue_jobs;

-- queue_reserve with lease NULL: 60 seconds for a queue without a default lease
SELECT pg_temp.queued(queue_push('lease-60', queue => 'lq0')) AS pushed;
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS claimed FROM queue_reserve('{lq0}', NULL);
SELECT reserved_until BETWEEN :'t0'::timestamptz + interval '60 seconds'
                          AND clock_timestamp() + interval '60 seconds' AS lease_60s
FROM queue_jobs WHERE queue = 'lq0';

-- ... the queue's default lease when it has one; from a list of queues each
-- queue's claim uses its own default
SELECT queue_set_default_lease('lq1', '5 minutes');
SELECT queue_set_default_lease('lq2', '2 hours');
SELECT pg_temp.queued(queue_push('lease-5m', queue => 'lq1')) AS pushed;
SELECT pg_temp.queued(queue_push('lease-2h', queue => 'lq2')) AS pushed;
SELECT pg_temp.queued(queue_push('lease-60s', queue => 'lq3')) AS pushed;
SELECT clock_timestamp() AS t0 \gset
SELECT queue, reserved_until BETWEEN :'t0'::timestamptz + l.lease
                                 AND clock_timestamp() + l.lease AS default_lease_used
FROM queue_reserve('{lq1,lq2,lq3}', NULL, NULL, 3) r
JOIN (VALUES ('lq1', interval '5 minutes'), ('lq2', interval '2 hours'),
             ('lq3', interval '60 seconds')) AS l(q, lease) ON l.q = r.queue
ORDER BY queue;

-- ... and a lease given explicitly wins over the queue's default
SELECT pg_temp.queued(queue_push('explicit', queue => 'lq1')) AS pushed;
SELECT clock_timestamp() AS t0 \gset
SELECT reserved_until BETWEEN :'t0'::timestamptz + interval '10 seconds'
                          AND clock_timestamp() + interval '10 seconds' AS lease_10s
FROM queue_reserve('{lq1}', '10 seconds');

-- queue_set_default_lease(queue, NULL) goes back to 60 seconds
SELECT queue_set_default_lease('lq1', NULL);
SELECT queue, default_lease FROM queue_list() WHERE queue IN ('lq1', 'lq2') ORDER BY queue;
SELECT pg_temp.queued(queue_push('back-to-60', queue => 'lq1')) AS pushed;
SELECT clock_timestamp() AS t0 \gset
SELECT reserved_until BETWEEN :'t0'::timestamptz + interval '60 seconds'
                          AND clock_timestamp() + interval '60 seconds' AS lease_60s
FROM queue_reserve('{lq1}');
TRUNCATE queue_jobs, queue_settings;

-- queue_release_many(ids, tokens, NULL, NULL): backoff 10 s x [0.5, 1.0]
-- on the first attempt, error '' (released on purpose)
SELECT pg_temp.queued(queue_push_many('[{"name": "r1", "queue": "bq"}, {"name": "r2", "queue": "bq"}]')) AS pushed;
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve('{bq}', max_jobs => 2);
SELECT clock_timestamp() AS t0 \gset
SELECT cardinality(queue_release_many(array_agg(id), array_agg(token), NULL, NULL)) AS released
FROM claimed;
SELECT count(*) AS jobs, bool_and(last_error = '') AS error_empty, bool_and(token IS NULL) AS tokens_cleared,
       bool_and(available_at BETWEEN :'t0'::timestamptz + interval '5 seconds'
                                 AND clock_timestamp() + interval '10 seconds') AS backoff
FROM queue_jobs WHERE queue = 'bq';

-- queue_fail_many(ids, tokens, NULL): error '' stores the job's last error,
-- or 'failed by the worker (no error given)'
SET jobqueue.clock_offset = '1 minute';
TRUNCATE claimed;
INSERT INTO claimed SELECT * FROM queue_reserve('{bq}', max_jobs => 2);
SELECT count(*) AS claimed FROM claimed;
SELECT cardinality(queue_fail_many(array_agg(id), array_agg(token), NULL)) AS failed FROM claimed;
SELECT name, error FROM queue_failed_jobs ORDER BY name;
RESET jobqueue.clock_offset;
TRUNCATE queue_failed_jobs;

-- an error text over 60000 bytes is no error: queue_release_many and
-- queue_fail_many store it cut at a character boundary, marked as cut
SELECT pg_temp.queued(queue_push_many('[{"name": "long-1", "queue": "bq"}, {"name": "long-2", "queue": "bq"}]')) AS pushed;
TRUNCATE claimed;
INSERT INTO claimed SELECT * FROM queue_reserve('{bq}', max_jobs => 2);
SELECT cardinality(queue_release_many(array_agg(id), array_agg(token), '0', repeat('é', 40000))) AS released
FROM claimed WHERE name = 'long-1';
SELECT cardinality(queue_fail_many(array_agg(id), array_agg(token), repeat('é', 40000))) AS failed
FROM claimed WHERE name = 'long-2';
SELECT octet_length(last_error) <= 60000 AS within_limit, last_error LIKE E'%é\n... truncated' AS marked
FROM queue_jobs WHERE name = 'long-1';
SELECT octet_length(error) <= 60000 AS within_limit, error LIKE E'%é\n... truncated' AS marked
FROM queue_failed_jobs WHERE name = 'long-2';
TRUNCATE queue_jobs, queue_failed_jobs;

-- queue_cancel(id, NULL): force false, so a job held by a live claim stays
-- (false) and a pending one is cancelled (true)
SELECT queue_push('held', queue => 'cq') AS held_id \gset
TRUNCATE claimed;
INSERT INTO claimed SELECT * FROM queue_reserve('{cq}');
SELECT queue_push('pending', queue => 'cq') AS pending_id \gset
SELECT queue_cancel(:held_id, NULL) AS cancelled_held, queue_cancel(:pending_id, NULL) AS cancelled_pending;
SELECT name FROM queue_jobs;
TRUNCATE queue_jobs;
DROP TABLE claimed;

--------------------------------------------------------------------------
-- fixtures for the battery: two claimed jobs, a failed job, settings
--------------------------------------------------------------------------
SELECT pg_temp.queued(queue_push_many('[{"name": "held-1", "queue": "errq"}, {"name": "held-2", "queue": "errq"}]')) AS pushed;
CREATE TEMP TABLE held AS SELECT id, token FROM queue_reserve('{errq}', max_jobs => 2);
SELECT count(*) AS held FROM held;
SELECT pg_temp.queued(queue_push('dead', queue => 'errq')) AS pushed;
SELECT queue_fail(id, token, 'fixture') AS failed FROM queue_reserve('{errq}');
SELECT pg_temp.queued(queue_push('waiting', queue => 'errq', delay => '1 hour', deadline => clock_timestamp() + interval '2 hours')) AS pushed;
SELECT queue_set_default_lease('errq', '5 minutes');
SELECT queue_set_notify('errq', false);
SELECT queue_pause('paused-q');
SELECT queue, paused, default_lease, notify, pending, delayed, reserved, total FROM queue_list();
SELECT queue_failed_count() AS failed_count;

--------------------------------------------------------------------------
-- Part 2: the error battery (every call undone by try(); the checksum
-- taken now must be the same at the end)
--------------------------------------------------------------------------
CREATE TEMP TABLE before_battery AS SELECT pg_temp.queue_checksum() AS sum;

-- NULL for an argument without a default: 22004 naming the argument
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push(NULL, deadline => clock_timestamp() + interval '1 hour')$$,
    $$SELECT queue_push_many(NULL)$$,
    $$SELECT queue_push_many('[{"queue": "q"}]')$$,
    $$SELECT queue_push_many('[{"name": null}]')$$,
    $$SELECT queue_delete_many(NULL, array_agg(token)) FROM held$$,
    $$SELECT queue_delete_many(array_agg(id), NULL) FROM held$$,
    $$SELECT queue_delete_many(NULL, NULL)$$,
    $$SELECT queue_release_many(NULL, array_agg(token)) FROM held$$,
    $$SELECT queue_release_many(array_agg(id), NULL) FROM held$$,
    $$SELECT queue_release_many(NULL, NULL, '0', 'e')$$,
    $$SELECT queue_fail_many(NULL, array_agg(token)) FROM held$$,
    $$SELECT queue_fail_many(array_agg(id), NULL) FROM held$$,
    $$SELECT queue_fail_many(NULL, NULL, 'e')$$,
    $$SELECT queue_cancel(NULL)$$,
    $$SELECT queue_cancel(NULL, true)$$,
    $$SELECT queue_clear(NULL)$$,
    $$SELECT queue_pause(NULL)$$,
    $$SELECT queue_resume(NULL)$$,
    $$SELECT queue_set_default_lease(NULL, '1 minute')$$,
    $$SELECT queue_set_notify(NULL, true)$$,
    $$SELECT queue_set_notify('errq', NULL)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- NULL for a defaulted argument means the default: these succeed
-- (queue_set_default_lease's NULL lease means "back to 60 seconds")
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$,
    $$SELECT queue_push('n', deadline => NULL)$$,
    $$SELECT queue_push_many('[{"name": "n", "payload": null, "queue": null, "delay": null, "priority": null, "unique_key": null, "max_attempts": null, "deadline": null}]')$$,
    $$SELECT * FROM queue_reserve('{errq}', NULL)$$,
    $$SELECT * FROM queue_reserve(NULL, NULL, NULL, NULL)$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token), NULL, NULL) FROM held$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token)) FROM held$$,
    $$SELECT queue_fail_many(array_agg(id), array_agg(token), NULL) FROM held$$,
    $$SELECT queue_fail_many(array_agg(id), array_agg(token)) FROM held$$,
    $$SELECT queue_cancel(min(id), NULL) FROM held$$,
    $$SELECT queue_cancel(min(id)) FROM held$$,
    $$SELECT queue_set_default_lease('errq', NULL)$$,
    $$SELECT * FROM queue_list()$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token), '0', repeat('x', 70000)) FROM held$$,
    $$SELECT queue_fail_many(array_agg(id), array_agg(token), repeat('x', 70000)) FROM held$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_push_many: jobs must be a JSON array of objects with known fields;
-- at most 10000 jobs per call (54000)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many('{"name": "n"}')$$,
    $$SELECT queue_push_many('"n"')$$,
    $$SELECT queue_push_many('5')$$,
    $$SELECT queue_push_many('null')$$,
    $$SELECT queue_push_many('[]')$$,
    $$SELECT queue_push_many('[1]')$$,
    $$SELECT queue_push_many('["n"]')$$,
    $$SELECT queue_push_many('[[]]')$$,
    $$SELECT queue_push_many('[null]')$$,
    $$SELECT queue_push_many('[{"name": "n"}, 2]')$$,
    $$SELECT queue_push_many('[{"name": "n", "nmae": "x"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "Queue": "x"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "token": 1}]')$$,
    $$SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'n'))) FROM generate_series(1, 10000)$$,
    $$SELECT queue_push_many(jsonb_agg(jsonb_build_object('name', 'n'))) FROM generate_series(1, 10001)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_push_many's fields: the rules and limits of queue_push's arguments,
-- with the JSON type checked
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', repeat('ü', 200))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', repeat('ü', 201))))$$,
    $$SELECT queue_push_many('[{"name": ""}]')$$,
    $$SELECT queue_push_many('[{"name": 5}]')$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'n', 'queue', repeat('é', 64))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'n', 'queue', repeat('é', 65))))$$,
    $$SELECT queue_push_many('[{"name": "n", "queue": ""}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "queue": ["q"]}]')$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'n', 'unique_key', repeat('ß', 200))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'n', 'unique_key', repeat('ß', 201))))$$,
    $$SELECT queue_push_many('[{"name": "n", "unique_key": ""}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "unique_key": 7}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 0}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 1}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 1000000}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 1000001}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": -1}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 2.5}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": "3"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": 2147483647}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": -2147483648}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": 2147483648}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": -2147483649}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": 1.5}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": "1"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": 0}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": "0"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": 1.5}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": "5 minutes"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": -1}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": "-1 second"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": "1 day -25 hours"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": true}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "deadline": 5}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "deadline": "2000-01-01 00:00:00+00"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "deadline": "infinity"}]')$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'p', 'payload', to_jsonb(repeat('x', 1048574)))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'p', 'payload', to_jsonb(repeat('x', 1048575)))))$$,
    $$SELECT queue_push_many('[{"name": "ok"}, {"name": "n", "max_attempts": 0}]')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- bad values the contract also says are 22023 with a message naming the
-- field: numbers out of any range, and strings that are no interval or
-- timestamp (printed as SQLSTATE and whether the field is named)
SELECT n, call, split_part(pg_temp.try(call), ':', 1) AS sqlstate,
       position('"' || field || '"' IN pg_temp.try(call)) > 0 AS names_field
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[{"name": "n", "max_attempts": 1e30}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "priority": 1e30}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": 1e30}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "delay": "soon"}]')$$,
    $$SELECT queue_push_many('[{"name": "n", "deadline": "tomorrow-ish"}]')$$
], ARRAY['max_attempts', 'priority', 'delay', 'delay', 'deadline']) WITH ORDINALITY AS t(call, field, n)
ORDER BY n;

-- queue_push's deadline: later than the moment the job becomes due
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', deadline => clock_timestamp())$$,
    $$SELECT queue_push('n', deadline => '-infinity')$$,
    $$SELECT queue_push('n', deadline => clock_timestamp() + interval '1 minute')$$,
    $$SELECT queue_push('n', delay => '1 hour', deadline => clock_timestamp() + interval '30 minutes')$$,
    $$SELECT queue_push('n', delay => '1 hour', deadline => clock_timestamp() + interval '2 hours')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_delete_many, queue_release_many, queue_fail_many: ids and tokens
-- one-dimensional, the same length, no NULL element, at most 10000
SELECT f.n AS f, c.n AS c, format(c.tmpl, f.fn) AS call, pg_temp.try(format(c.tmpl, f.fn)) AS outcome
FROM unnest(ARRAY['queue_delete_many', 'queue_release_many', 'queue_fail_many'])
     WITH ORDINALITY AS f(fn, n)
CROSS JOIN unnest(ARRAY[
    $$SELECT %s('{}', '{}')$$,
    $$SELECT %s(array_agg(id), array_agg(token)) FROM held$$,
    $$SELECT %s('{1}', '{1,2}')$$,
    $$SELECT %s('{1,2}', '{}')$$,
    $$SELECT %s('{1,NULL}', '{1,2}')$$,
    $$SELECT %s('{1,2}', '{NULL,2}')$$,
    $$SELECT %s('{{1},{2}}', '{1,2}')$$,
    $$SELECT %s('{1,2}', '{{1},{2}}')$$,
    $$SELECT %s(array_agg(g), array_agg(g)) FROM generate_series(1, 10000) g$$,
    $$SELECT %s(array_agg(g), array_agg(g)) FROM generate_series(1, 10001) g$$,
    $$SELECT %s(array_agg(g) FILTER (WHERE g <= 10000), array_agg(g)) FROM generate_series(1, 10001) g$$
]) WITH ORDINALITY AS c(tmpl, n)
ORDER BY f.n, c.n;

-- queue_release_many's delay: zero or more
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_release_many(array_agg(id), array_agg(token), '0') FROM held$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token), '-1 second') FROM held$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token), '1 day -25 hours') FROM held$$,
    $$SELECT queue_release_many(array_agg(id), array_agg(token), '1 day -24 hours') FROM held$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_cancel: an unknown id is no error (false)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_cancel(-1)$$,
    $$SELECT queue_cancel(9223372036854775807, true)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue names of queue_clear, queue_pause, queue_resume,
-- queue_set_default_lease, queue_set_notify: 1 to 64 characters
SELECT f.n AS f, c.n AS c, format(c.tmpl, f.fn, f.extra) AS call,
       pg_temp.try(format(c.tmpl, f.fn, f.extra)) AS outcome
FROM unnest(ARRAY['queue_clear', 'queue_pause', 'queue_resume',
                  'queue_set_default_lease', 'queue_set_notify'],
            ARRAY['', '', '', ', ''1 minute''', ', true'])
     WITH ORDINALITY AS f(fn, extra, n)
CROSS JOIN unnest(ARRAY[
    $$SELECT %s(repeat('é', 64)%s)$$,
    $$SELECT %s(repeat('é', 65)%s)$$,
    $$SELECT %s(repeat('q', 65)%s)$$,
    $$SELECT %s(''%s)$$
]) WITH ORDINALITY AS c(tmpl, n)
ORDER BY f.n, c.n;

-- queue_set_default_lease's lease: 1 second to 1 day
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_set_default_lease('errq', '0')$$,
    $$SELECT queue_set_default_lease('errq', '0.999 s')$$,
    $$SELECT queue_set_default_lease('errq', '1 s')$$,
    $$SELECT queue_set_default_lease('errq', '1 day')$$,
    $$SELECT queue_set_default_lease('errq', '24 hours')$$,
    $$SELECT queue_set_default_lease('errq', '1 day 1 second')$$,
    $$SELECT queue_set_default_lease('errq', '1 mon')$$,
    $$SELECT queue_set_default_lease('errq', '-1 minute')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_reserve's explicit lease keeps its limits when a queue has a default
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_reserve('{errq}', '0.5 s')$$,
    $$SELECT * FROM queue_reserve('{errq}', '2 days')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- the same errors at top level (message shown as a client sees it)
SELECT queue_push_many(NULL);
SELECT queue_push_many('{"name": "n"}');
SELECT queue_push_many('[{"name": "n", "retries": 3}]');
SELECT queue_delete_many('{1}', '{1,2}');
SELECT queue_release_many('{1}', '{1}', '-1 minute');
SELECT queue_fail_many('{1,NULL}', '{1,2}');
SELECT queue_clear('');
SELECT queue_pause(repeat('q', 65));
SELECT queue_set_default_lease('errq', '2 days');
SELECT queue_set_notify('errq', NULL);
SELECT queue_cancel(NULL);
SELECT queue_push('n', deadline => clock_timestamp() - interval '1 second');

-- nothing queued, failed or configured changed during the whole battery
SELECT pg_temp.queue_checksum() = sum AS unchanged FROM before_battery;
SELECT count(*) AS jobs FROM queue_jobs;
SELECT count(*) AS failed FROM queue_failed_jobs;
SELECT queue, paused, default_lease, notify FROM queue_settings ORDER BY queue COLLATE "C";

-- clean up
DROP TABLE held, before_battery;
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
