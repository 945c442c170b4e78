-- jobqueue demo: a queue inside PostgreSQL, driven from plain SQL.
\pset footer off
\set QUIET on

\echo '== 1. Push jobs: two queues, priorities, a delay, and a unique key pushed twice.'
SELECT queue_push('send_email', '{"to": "ada@example.com"}')                      AS email_1,
       queue_push('send_email', '{"to": "bob@example.com"}', priority => 10)      AS email_urgent,
       queue_push('resize_image', '{"file": "cat.png"}', queue => 'images')        AS image,
       queue_push('send_report', '{}', delay => '1 hour')                          AS report_later,
       queue_push('sync_account', '{"id": 42}', unique_key => 'sync:42')           AS sync,
       queue_push('sync_account', '{"id": 42}', unique_key => 'sync:42')           AS sync_again_same_id;

\echo '== 2. A push rolled back with its transaction never happened.'
BEGIN;
SELECT queue_push('charge_card', '{"amount": 100}') AS pushed_then_rolled_back;
ROLLBACK;
SELECT * FROM queue_stats();

\echo '== 3. A worker claims two jobs from the default queue: the urgent one first. Each claim has a lease and a fencing token.'
CREATE TEMP TABLE claimed AS
SELECT row_number() OVER () AS n, id, name, payload, attempts, token
FROM queue_reserve('{default}', lease => '30 seconds', worker => 'demo-worker', max_jobs => 2);
SELECT n AS claim_order, id, name, payload, attempts, token IS NOT NULL AS has_token FROM claimed ORDER BY n;
SELECT * FROM queue_stats();

\echo '== 4. It completes the urgent job; a wrong (stale) token cannot touch the other one.'
SELECT queue_delete(id, token) AS completed FROM claimed WHERE n = 1;
SELECT queue_delete(id, token + 1000) AS stale_token_rejected FROM claimed WHERE n = 2;

\echo '== 5. It releases the other for a retry in 5 minutes, recording why.'
SELECT queue_release(id, token, delay => '5 minutes', error => 'smtp timeout') AS released FROM claimed WHERE n = 2;

\echo '== 6. Another worker takes the image job and fails it for good.'
SELECT name, queue_fail(id, token, 'image is corrupt') AS failed
FROM queue_reserve('{images}', worker => 'image-worker');

\echo '== 7. The backlog and the dead letters.'
SELECT * FROM queue_stats();
SELECT id, queue, name, attempts, error FROM queue_failed_rows();

\echo '== 8. Retry the failed job: back in its queue under its original id.'
SELECT queue_retry_failed(id) AS retried FROM queue_failed_rows();
SELECT * FROM queue_stats();
SELECT queue_failed_count() AS failed_rows_left;
