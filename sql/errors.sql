--
-- errors: the argument checks of every SQL function (API.md, "Precise rules").
--   NULL for an argument without a default: 22004, naming the argument;
--   NULL for an argument with a default: that default;
--   bad values 22023, over-long values 54000; a failed call changes nothing.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/try.sql

\i sql/include/checksum.sql
\i sql/include/queued.sql

--------------------------------------------------------------------------
-- Part 1: NULL for a defaulted argument means the default (real calls)
--------------------------------------------------------------------------

-- queue_push: NULL payload, queue, delay, priority, unique_key, max_attempts
-- are '{}', 'default', 0 (due now), 0, none, 3
SELECT queue_push('defaults', NULL, NULL, NULL, NULL, NULL, NULL) AS first_id \gset
SELECT queue_push('second', NULL, NULL, NULL, NULL, NULL, NULL) AS second_id \gset
SELECT queue, name, payload, priority, unique_key IS NULL AS no_key, max_attempts,
       attempts, ready, available_at = created_at AS due_at_push
FROM queue_jobs ORDER BY id;

-- queue_reserve(NULL, NULL, NULL, NULL): queues '{default}', lease 60 seconds,
-- worker '', max_jobs 1 (one job of the two, the older one)
SELECT clock_timestamp() AS t0 \gset
CREATE TEMP TABLE claimed AS SELECT * FROM queue_reserve(NULL, NULL, NULL, NULL);
SELECT count(*) AS claimed, bool_and(id = :first_id) AS is_first,
       bool_and(attempts = 1) AS attempt_1
FROM claimed;
SELECT reserved_by = '' AS worker_empty,
       reserved_until BETWEEN :'t0'::timestamptz + interval '60 seconds'
                          AND clock_timestamp() + interval '60 seconds' AS lease_60s
FROM queue_jobs WHERE id = :first_id;

-- queue_release(id, token, NULL, NULL): backoff 10 s x [0.5, 1.0] on the
-- first attempt, error '' (released on purpose)
SELECT clock_timestamp() AS t0 \gset
SELECT queue_release(id, token, NULL, NULL) AS released FROM claimed;
SELECT last_error = '' AS error_empty, ready, token IS NULL AS token_cleared,
       available_at BETWEEN :'t0'::timestamptz + interval '5 seconds'
                        AND clock_timestamp() + interval '10 seconds' AS backoff
FROM queue_jobs WHERE id = :first_id;

-- queue_fail(id, token, NULL): error '' stores 'failed by the worker (no error given)'
TRUNCATE claimed;
INSERT INTO claimed SELECT * FROM queue_reserve('{default}');
SELECT count(*) AS claimed, bool_and(id = :second_id) AS is_second FROM claimed;
SELECT queue_fail(id, token, NULL) AS failed FROM claimed;
SELECT job_id = :second_id AS same_job, error FROM queue_failed_jobs;

-- queue_failed_rows(NULL) is max_rows 50
SELECT count(*) AS failed_rows FROM queue_failed_rows(NULL);

-- queue_retry_failed(NULL, NULL): every failed job, max_attempts 3
SELECT queue_retry_failed(NULL, NULL) AS retried;
SELECT attempts, max_attempts, ready FROM queue_jobs WHERE id = :second_id;

-- queue_pending(NULL) counts every queue (the released job waits for its backoff)
SELECT pg_temp.queued(queue_push('elsewhere', queue => 'other')) AS pushed;
SELECT queue_pending(NULL) AS pending_all, queue_pending('default') AS pending_default;

--------------------------------------------------------------------------
-- Part 2: limits at their boundary are accepted and stored intact (real calls)
--------------------------------------------------------------------------

-- a 64-character queue name (128 bytes: characters count, not bytes), a
-- 200-character name and unique key, max_attempts 1000000
SELECT queue_push(repeat('ü', 200), queue => repeat('é', 64),
                  unique_key => repeat('ß', 200), max_attempts => 1000000) AS big_id \gset
SELECT length(queue) AS queue_chars, octet_length(queue) AS queue_bytes,
       length(name) AS name_chars, length(unique_key) AS key_chars, max_attempts
FROM queue_jobs WHERE id = :big_id;

-- the same 200-character unique key returns the holder's id
SELECT queue_push('again', unique_key => repeat('ß', 200)) = :big_id AS same_id;

-- 1-character names and max_attempts 1 are accepted
SELECT pg_temp.queued(queue_push('n', queue => 'q', unique_key => 'k', max_attempts => 1)) AS pushed;

-- a payload of exactly 1 MiB (1048576 bytes as text) is accepted and kept whole
SELECT queue_push('mib', to_jsonb(repeat('x', 1048574)), queue => 'payloads') AS mib_id \gset
SELECT octet_length(payload::text) AS payload_bytes FROM queue_jobs WHERE id = :mib_id;

-- a superuser raising jobqueue.max_payload_bytes allows a bigger payload
SET jobqueue.max_payload_bytes = '2MB';
SELECT queue_push('big', to_jsonb(repeat('y', 1500000)), queue => 'payloads') AS big_payload_id \gset
SELECT octet_length(payload::text) AS payload_bytes FROM queue_jobs WHERE id = :big_payload_id;
RESET jobqueue.max_payload_bytes;

-- a worker name longer than 200 characters is cut to 200 characters, not an error
SELECT count(*) AS claimed
FROM queue_reserve(ARRAY[repeat('é', 64)], worker => repeat('é', 250));
SELECT length(reserved_by) AS worker_chars, octet_length(reserved_by) AS worker_bytes
FROM queue_jobs WHERE id = :big_id;

-- fixtures for the calls below: a claimed job and a failed job
SELECT pg_temp.queued(queue_push('held', queue => 'errq')) AS pushed;
CREATE TEMP TABLE held AS SELECT id, token FROM queue_reserve('{errq}');
SELECT count(*) AS held FROM held;
SELECT pg_temp.queued(queue_push('dead', queue => 'errq')) AS pushed;
CREATE TEMP TABLE dead AS SELECT id, token FROM queue_reserve('{errq}');
SELECT queue_fail(id, token, 'fixture') AS failed FROM dead;
SELECT queue_failed_count() AS failed_count;

--------------------------------------------------------------------------
-- Part 3: the error battery (every call undone by try(); the checksum
-- taken now must be the same at the end)
--------------------------------------------------------------------------
CREATE TEMP TABLE before_battery AS SELECT pg_temp.queue_checksum() AS sum;

-- NULL for an argument without a default: 22004 naming the argument
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push(NULL)$$,
    $$SELECT queue_push(NULL, '{}', 'default', '0', 0, NULL, 3)$$,
    $$SELECT queue_delete(NULL, token) FROM held$$,
    $$SELECT queue_delete(id, NULL) FROM held$$,
    $$SELECT queue_release(NULL, token) FROM held$$,
    $$SELECT queue_release(id, NULL) FROM held$$,
    $$SELECT queue_fail(NULL, token) FROM held$$,
    $$SELECT queue_fail(id, NULL) FROM held$$,
    $$SELECT queue_extend(NULL, token, '1 minute') FROM held$$,
    $$SELECT queue_extend(id, NULL, '1 minute') FROM held$$,
    $$SELECT queue_extend(id, token, NULL) FROM held$$,
    $$SELECT queue_grant(NULL, 'producer')$$,
    $$SELECT queue_grant(current_user::text, NULL)$$,
    $$SELECT queue_revoke(NULL, 'producer')$$,
    $$SELECT queue_revoke(current_user::text, NULL)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- NULL for a defaulted argument means the default: these succeed
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', NULL, NULL, NULL, NULL, NULL, NULL)$$,
    $$SELECT * FROM queue_reserve(NULL, NULL, NULL, NULL)$$,
    $$SELECT queue_release(id, token, NULL, NULL) FROM held$$,
    $$SELECT queue_fail(id, token, NULL) FROM held$$,
    $$SELECT queue_pending(NULL)$$,
    $$SELECT * FROM queue_failed_rows(NULL)$$,
    $$SELECT queue_retry_failed(NULL, NULL)$$,
    $$SELECT queue_retry_failed(id, NULL) FROM dead$$,
    $$SELECT queue_forget_failed(id, NULL, NULL) FROM dead$$,
    $$SELECT queue_forget_failed(NULL, now(), NULL)$$,
    $$SELECT queue_forget_failed(NULL, NULL, true)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue names: 1 to 64 characters (counted in characters), never empty
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', queue => repeat('é', 64))$$,
    $$SELECT queue_push('n', queue => repeat('é', 65))$$,
    $$SELECT queue_push('n', queue => repeat('q', 64))$$,
    $$SELECT queue_push('n', queue => repeat('q', 65))$$,
    $$SELECT queue_push('n', queue => '')$$,
    $$SELECT * FROM queue_reserve(ARRAY[repeat('é', 64)])$$,
    $$SELECT * FROM queue_reserve(ARRAY['default', repeat('é', 65)])$$,
    $$SELECT * FROM queue_reserve(ARRAY['default', ''])$$,
    $$SELECT queue_pending(repeat('é', 64))$$,
    $$SELECT queue_pending(repeat('é', 65))$$,
    $$SELECT queue_pending('')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- job names and unique keys: 1 to 200 characters, never empty
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push(repeat('ü', 200))$$,
    $$SELECT queue_push(repeat('ü', 201))$$,
    $$SELECT queue_push(repeat('n', 201))$$,
    $$SELECT queue_push('')$$,
    $$SELECT queue_push('n', unique_key => repeat('ß', 199) || 'x')$$,
    $$SELECT queue_push('n', unique_key => repeat('ß', 201))$$,
    $$SELECT queue_push('n', unique_key => repeat('k', 201))$$,
    $$SELECT queue_push('n', unique_key => '')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- max_attempts: 1 to 1000000 (queue_push and queue_retry_failed)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', max_attempts => 0)$$,
    $$SELECT queue_push('n', max_attempts => 1)$$,
    $$SELECT queue_push('n', max_attempts => 1000000)$$,
    $$SELECT queue_push('n', max_attempts => 1000001)$$,
    $$SELECT queue_push('n', max_attempts => -1)$$,
    $$SELECT queue_retry_failed(id, 0) FROM dead$$,
    $$SELECT queue_retry_failed(id, 1) FROM dead$$,
    $$SELECT queue_retry_failed(id, 1000000) FROM dead$$,
    $$SELECT queue_retry_failed(id, 1000001) FROM dead$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- max_jobs: 1 to 10000
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_reserve('{default}', max_jobs => 0)$$,
    $$SELECT * FROM queue_reserve('{default}', max_jobs => 1)$$,
    $$SELECT * FROM queue_reserve('{default}', max_jobs => 10000)$$,
    $$SELECT * FROM queue_reserve('{default}', max_jobs => 10001)$$,
    $$SELECT * FROM queue_reserve('{default}', max_jobs => -1)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- lease: 1 second to 1 day (queue_reserve and queue_extend)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_reserve('{default}', lease => '0.999 s')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '1 s')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '1 day')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '24 hours')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '1 day 1 second')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '1 mon')$$,
    $$SELECT * FROM queue_reserve('{default}', lease => '-1 minute')$$,
    $$SELECT queue_extend(id, token, '0.999 s') FROM held$$,
    $$SELECT queue_extend(id, token, '1 s') FROM held$$,
    $$SELECT queue_extend(id, token, '1 day') FROM held$$,
    $$SELECT queue_extend(id, token, '1 day 1 second') FROM held$$,
    $$SELECT queue_extend(id, token, '1 mon') FROM held$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- delay: zero or more (queue_push and queue_release)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('n', delay => '0')$$,
    $$SELECT queue_push('n', delay => '-1 second')$$,
    $$SELECT queue_push('n', delay => '1 day -25 hours')$$,
    $$SELECT queue_push('n', delay => '1 day -24 hours')$$,
    $$SELECT queue_release(id, token, '0') FROM held$$,
    $$SELECT queue_release(id, token, '-1 second') FROM held$$,
    $$SELECT queue_release(id, token, '1 day -25 hours') FROM held$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- max_rows: at least 1; queues: non-empty, no NULL element
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT * FROM queue_failed_rows(0)$$,
    $$SELECT * FROM queue_failed_rows(-5)$$,
    $$SELECT * FROM queue_failed_rows(1)$$,
    $$SELECT * FROM queue_reserve('{}')$$,
    $$SELECT * FROM queue_reserve('{a,NULL}')$$,
    $$SELECT * FROM queue_reserve(ARRAY[NULL]::text[])$$,
    $$SELECT * FROM queue_reserve('{a}')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- payload: at most jobqueue.max_payload_bytes (1 MiB) as text
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('p', to_jsonb(repeat('x', 1048574)))$$,
    $$SELECT queue_push('p', to_jsonb(repeat('x', 1048575)))$$,
    $$SELECT queue_push('p', to_jsonb(repeat('y', 1500000)))$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- a payload of 170 bytes that prints as 1,048,632 (eight numbers of 131,072
-- digits) is measured as text and refused, alone and in a batch
SELECT ('{' || string_agg(format('"%s": 1e131071', k), ', ') || '}') AS wide_numbers
FROM unnest(ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) AS k \gset
SELECT pg_column_size(:'wide_numbers'::jsonb) < 200 AS small_binary,
       octet_length(:'wide_numbers'::jsonb::text) AS text_bytes;
SELECT n, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    format($$SELECT queue_push('p', %L)$$, :'wide_numbers'),
    format($$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'p', 'payload', %L::jsonb)))$$,
           :'wide_numbers')
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- the raised limit is the new bound, in the message too
SET jobqueue.max_payload_bytes = '2MB';
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push('p', to_jsonb(repeat('y', 1500000)))$$,
    $$SELECT queue_push('p', to_jsonb(repeat('y', 2097150)))$$,
    $$SELECT queue_push('p', to_jsonb(repeat('y', 2097151)))$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
RESET jobqueue.max_payload_bytes;

-- queue_forget_failed: exactly one of id, before, all_rows => true
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_forget_failed()$$,
    $$SELECT queue_forget_failed(NULL, NULL, NULL)$$,
    $$SELECT queue_forget_failed(all_rows => false)$$,
    $$SELECT queue_forget_failed(id => 1, before => now())$$,
    $$SELECT queue_forget_failed(id => 1, all_rows => true)$$,
    $$SELECT queue_forget_failed(before => now(), all_rows => true)$$,
    $$SELECT queue_forget_failed(1, now(), true)$$,
    $$SELECT queue_forget_failed(id => 1)$$,
    $$SELECT queue_forget_failed(id => 1, all_rows => false)$$,
    $$SELECT queue_forget_failed(before => now())$$,
    $$SELECT queue_forget_failed(all_rows => true)$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- queue_grant / queue_revoke: tier must be producer|worker|admin (22023),
-- the role must exist (42704)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_grant(current_user::text, 'owner')$$,
    $$SELECT queue_grant(current_user::text, 'Producer')$$,
    $$SELECT queue_grant(current_user::text, '')$$,
    $$SELECT queue_grant('regress_jq_no_such_role', 'producer')$$,
    $$SELECT queue_revoke(current_user::text, 'superuser')$$,
    $$SELECT queue_revoke('regress_jq_no_such_role', 'admin')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- the same errors at top level (message shown as a client sees it)
SELECT queue_push(NULL);
SELECT queue_push('n', queue => repeat('é', 65));
SELECT * FROM queue_reserve('{}');

-- nothing queued or failed changed during the whole battery
SELECT pg_temp.queue_checksum() = sum AS unchanged FROM before_battery;
SELECT count(*) AS jobs FROM queue_jobs;
SELECT count(*) AS failed FROM queue_failed_jobs;

-- clean up
TRUNCATE queue_jobs, queue_failed_jobs;
