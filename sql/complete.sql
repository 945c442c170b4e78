--
-- complete: queue_delete, queue_release (delays, backoff), queue_fail, queue_extend,
-- fencing by token, and the cut of long error texts
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;
\i sql/include/clock.sql
-- valid UTF-8 round trip (convert_from raises on a broken sequence)
CREATE FUNCTION pg_temp.valid_utf8(t text) RETURNS boolean LANGUAGE sql AS
$$ SELECT convert_from(convert_to(t, 'UTF8'), 'UTF8') = t $$;
-- The clock only moves forward in this file (offsets grow).

-- queue_delete with the right id and token: true, the job is gone
SELECT queue_push('del', queue => 'del_q') AS dj \gset
SELECT queue_push('other', queue => 'del_q') AS dj2 \gset
SELECT id AS d_id, token AS d_tok FROM queue_reserve('{del_q}') \gset
SELECT id AS d2_id, token AS d2_tok FROM queue_reserve('{del_q}') \gset
SELECT :d_id = :dj AS first_job, :d2_id = :dj2 AS second_job;
-- a wrong token (another claim's) and a wrong id: false, nothing deleted
SELECT queue_delete(:dj, :d2_tok) AS wrong_token;
SELECT queue_delete(:dj, -1) AS unknown_token;
SELECT queue_delete(:dj2 + 1000, :d2_tok) AS wrong_id;
SELECT count(*) AS both_still_there FROM queue_jobs WHERE id IN (:dj, :dj2);
SELECT queue_delete(:dj, :d_tok) AS deleted;
SELECT count(*) AS rows_left FROM queue_jobs WHERE id = :dj;
-- deleting twice: false the second time
SELECT queue_delete(:dj, :d_tok) AS deleted_again;
SELECT queue_delete(:dj2, :d2_tok) AS second_deleted;
SELECT count(*) AS rows_in_del_q, queue_failed_count() AS failed_rows FROM queue_jobs WHERE queue = 'del_q';

-- queue_release with delay 0: claimable again at once, attempts kept, error recorded, claim cleared
SELECT queue_push('rel0', queue => 'rel0_q') AS r0 \gset
SELECT id AS r0_id, token AS r0_tok FROM queue_reserve('{rel0_q}', worker => 'w1') \gset
SELECT queue_release(:r0_id, :r0_tok, '0', 'transient') AS released;
SELECT attempts, last_error, token IS NULL AS no_token, reserved_until IS NULL AS no_lease,
       reserved_by IS NULL AS no_worker, available_at <= pg_temp.qnow() AS due_now
  FROM queue_jobs WHERE id = :r0;
SELECT queue_pending('rel0_q') AS pending;
-- the released claim's token is dead: delete, release and extend with it give false
SELECT queue_delete(:r0, :r0_tok) AS old_delete, queue_release(:r0, :r0_tok, '0') AS old_release,
       queue_extend(:r0, :r0_tok, '1 minute') AS old_extend;
-- the next claim sees the recorded error and counts attempt 2
SELECT id = :r0 AS same_job, attempts, last_error FROM queue_reserve('{rel0_q}');

-- queue_release with an empty error: released on purpose, last_error ''
SELECT id AS r0_id, token AS r0_tok FROM queue_jobs WHERE id = :r0 \gset
SELECT queue_release(:r0_id, :r0_tok, '0') AS released;
SELECT attempts, last_error = '' AS empty_error FROM queue_jobs WHERE id = :r0;

-- queue_release with delay '10 minutes': not claimable, counted as delayed
SELECT queue_push('rel10', queue => 'rel10_q') AS r10 \gset
SELECT id AS r10_id, token AS r10_tok FROM queue_reserve('{rel10_q}') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_release(:r10_id, :r10_tok, '10 minutes', 'later please') AS released;
SELECT attempts, last_error,
       available_at >= :'t0'::timestamptz + interval '10 minutes' AS at_least_delay,
       available_at <= pg_temp.qnow() + interval '10 minutes' AS at_most_delay
  FROM queue_jobs WHERE id = :r10;
SELECT count(*) AS claimed FROM queue_reserve('{rel10_q}');
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'rel10_q';

-- queue_release with NULL delay: backoff; after attempt 1 between 5 and 10 seconds
SELECT queue_push('backoff', queue => 'bo_q', max_attempts => 5) AS bo \gset
SELECT id AS bo_id, token AS bo_tok, attempts AS bo_att FROM queue_reserve('{bo_q}') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_release(:bo_id, :bo_tok, NULL, 'e1') AS released;
SELECT :bo_att AS attempt,
       available_at >= :'t0'::timestamptz + interval '5 seconds' AS at_least_5s,
       available_at <= pg_temp.qnow() + interval '10 seconds' AS at_most_10s
  FROM queue_jobs WHERE id = :bo;
SELECT count(*) AS claimable_during_backoff FROM queue_reserve('{bo_q}');

-- backoff after attempt 2 (delay omitted): between 10 and 20 seconds
SET jobqueue.clock_offset = '11 seconds';
SELECT id AS bo_id, token AS bo_tok, attempts AS bo_att FROM queue_reserve('{bo_q}') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_release(:bo_id, :bo_tok) AS released;
SELECT :bo_att AS attempt,
       available_at >= :'t0'::timestamptz + interval '10 seconds' AS at_least_10s,
       available_at <= pg_temp.qnow() + interval '20 seconds' AS at_most_20s
  FROM queue_jobs WHERE id = :bo;

-- backoff after attempt 3: between 20 and 40 seconds
SET jobqueue.clock_offset = '32 seconds';
SELECT id AS bo_id, token AS bo_tok, attempts AS bo_att FROM queue_reserve('{bo_q}') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_release(:bo_id, :bo_tok, delay => NULL) AS released;
SELECT :bo_att AS attempt,
       available_at >= :'t0'::timestamptz + interval '20 seconds' AS at_least_20s,
       available_at <= pg_temp.qnow() + interval '40 seconds' AS at_most_40s
  FROM queue_jobs WHERE id = :bo;
SET jobqueue.clock_offset = '73 seconds';
SELECT id = :bo AS same_job, attempts FROM queue_reserve('{bo_q}');

-- backoff is capped at 1 hour: after attempt 12 (uncapped: 10240 s or more) between 30 and 60 minutes
SELECT queue_push('capped', queue => 'cap_q', max_attempts => 100) AS cap \gset
DO $$
DECLARE
    r record;
BEGIN
    FOR i IN 1..11 LOOP
        SELECT * INTO STRICT r FROM queue_reserve('{cap_q}');
        IF NOT queue_release(r.id, r.token, '0') THEN
            RAISE EXCEPTION 'release % failed', i;
        END IF;
    END LOOP;
END $$;
SELECT id AS cap_id, token AS cap_tok, attempts AS cap_att FROM queue_reserve('{cap_q}') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_release(:cap_id, :cap_tok, NULL) AS released;
SELECT :cap_att AS attempt,
       available_at >= :'t0'::timestamptz + interval '30 minutes' AS at_least_30min,
       available_at <= pg_temp.qnow() + interval '1 hour' AS at_most_1h
  FROM queue_jobs WHERE id = :cap;

-- release with no attempts left: true, the job moves to the failed table with the given error
SELECT queue_push('last', '{"n": 1}', queue => 'last_q', max_attempts => 1) AS la \gset
SELECT id AS la_id, token AS la_tok FROM queue_reserve('{last_q}') \gset
SELECT queue_release(:la_id, :la_tok, '0', 'gave up') AS released;
SELECT count(*) AS in_queue_jobs FROM queue_jobs WHERE id = :la;
SELECT name, payload, attempts, error FROM queue_failed_jobs WHERE id = :la;
SELECT queue_delete(:la_id, :la_tok) AS old_token_delete;

-- release with no attempts left and no error: 'released with no attempts left' (a delay does not matter)
SELECT queue_push('last-2', queue => 'last_q', max_attempts => 2) AS la2 \gset
SELECT id AS la2_id, token AS la2_tok FROM queue_reserve('{last_q}') \gset
SELECT queue_release(:la2_id, :la2_tok, '0', 'first failure') AS released;
SELECT id AS la2_id, token AS la2_tok FROM queue_reserve('{last_q}') \gset
SELECT queue_release(:la2_id, :la2_tok, '10 minutes') AS released;
SELECT count(*) AS in_queue_jobs FROM queue_jobs WHERE id = :la2;
SELECT attempts, error FROM queue_failed_jobs WHERE id = :la2;

-- release with no attempts left, NULL delay and NULL error: also failed with the default text
SELECT queue_push('last-3', queue => 'last_q', max_attempts => 1) AS la3 \gset
SELECT id AS la3_id, token AS la3_tok FROM queue_reserve('{last_q}') \gset
SELECT queue_release(:la3_id, :la3_tok, NULL, NULL) AS released;
SELECT attempts, error FROM queue_failed_jobs WHERE id = :la3;

-- a stale token (the job was claimed again after the lease ran out): release, fail, extend give false, change nothing
SELECT queue_push('stale', queue => 'stale_q') AS st \gset
SELECT token AS st_tok1 FROM queue_reserve('{stale_q}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '3 minutes';
SELECT token AS st_tok2, attempts FROM queue_reserve('{stale_q}', lease => '1 minute', worker => 'second') \gset
SELECT md5(j::text) AS st_row FROM queue_jobs j WHERE id = :st \gset
SELECT queue_release(:st, :st_tok1, '0', 'stale release') AS stale_release;
SELECT queue_fail(:st, :st_tok1, 'stale fail') AS stale_fail;
SELECT queue_extend(:st, :st_tok1, '1 hour') AS stale_extend;
SELECT queue_delete(:st, :st_tok1) AS stale_delete;
SELECT md5(j::text) = :'st_row' AS row_unchanged, attempts, token = :st_tok2 AS current_token,
       last_error IS NULL AS no_error, reserved_by
  FROM queue_jobs j WHERE id = :st;
SELECT count(*) AS failed_rows FROM queue_failed_jobs WHERE id = :st;
-- the current token still works
SELECT queue_delete(:st, :st_tok2) AS current_delete;

-- queue_fail moves the job to the failed table in one step, keeping what it was
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_push('fragile', '{"to": "x@example.com"}', queue => 'fail_q', priority => 4, max_attempts => 5) AS fj \gset
SELECT created_at AS fj_created FROM queue_jobs WHERE id = :fj \gset
SELECT id AS f_id, token AS f_tok FROM queue_reserve('{fail_q}') \gset
SELECT queue_fail(:f_id, :f_tok, 'permanent: bad address') AS failed;
SELECT count(*) AS in_queue_jobs FROM queue_jobs WHERE id = :fj;
SELECT id = :fj AS same_id, job_id = :fj AS same_job_id, queue, name, payload, priority, attempts,
       max_attempts, error, created_at = :'fj_created'::timestamptz AS same_created_at,
       failed_at >= :'t0'::timestamptz AND failed_at <= pg_temp.qnow() AS failed_now
  FROM queue_failed_jobs WHERE id = :fj;
SELECT queue_failed_count() AS failed_count;
-- the token is dead afterwards
SELECT queue_fail(:f_id, :f_tok, 'again') AS fail_again, queue_delete(:f_id, :f_tok) AS delete_after;

-- queue_fail with an empty error and nothing recorded before: 'failed by the worker (no error given)'
SELECT queue_push('no-reason', queue => 'fail_q') AS fe \gset
SELECT id AS fe_id, token AS fe_tok FROM queue_reserve('{fail_q}') \gset
SELECT queue_fail(:fe_id, :fe_tok, '') AS failed;
SELECT attempts, error FROM queue_failed_jobs WHERE id = :fe;

-- queue_fail with an empty error keeps the last recorded error
SELECT queue_push('had-reason', queue => 'fail_q') AS fr \gset
SELECT id AS fr_id, token AS fr_tok FROM queue_reserve('{fail_q}') \gset
SELECT queue_release(:fr_id, :fr_tok, '0', 'timeout talking to smtp') AS released;
SELECT id AS fr_id, token AS fr_tok FROM queue_reserve('{fail_q}') \gset
SELECT queue_fail(:fr_id, :fr_tok) AS failed;
SELECT attempts, error FROM queue_failed_jobs WHERE id = :fr;

-- queue_extend pushes reserved_until forward; the job stays held past its old lease end
SELECT queue_push('long', queue => 'ext_q') AS ex \gset
SELECT id AS ex_id, token AS ex_tok FROM queue_reserve('{ext_q}', lease => '1 minute') \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_extend(:ex_id, :ex_tok, '10 minutes') AS extended;
SELECT reserved_until >= :'t0'::timestamptz + interval '10 minutes' AS at_least_lease,
       reserved_until <= pg_temp.qnow() + interval '10 minutes' AS at_most_lease,
       attempts, token = :ex_tok AS same_token
  FROM queue_jobs WHERE id = :ex;
SET jobqueue.clock_offset = '6 minutes';
SELECT count(*) AS claimed_past_old_lease FROM queue_reserve('{ext_q}');
SELECT queue_pending('ext_q') AS pending;
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'ext_q';
SELECT queue_delete(:ex_id, :ex_tok) AS deleted;

-- queue_extend after the lease ran out, nobody claimed it since: true, and the job is held again
SELECT queue_push('late-heartbeat', queue => 'ext_q') AS el \gset
SELECT id AS el_id, token AS el_tok FROM queue_reserve('{ext_q}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '8 minutes';
SELECT queue_pending('ext_q') AS pending_after_expiry;
SELECT queue_extend(:el_id, :el_tok, '5 minutes') AS extended;
SELECT count(*) AS claimed FROM queue_reserve('{ext_q}');
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'ext_q';
SELECT queue_delete(:el_id, :el_tok) AS deleted;

-- queue_extend after the lease ran out and a claim call made the job due again (without claiming it): still true
SELECT queue_push('first-served', queue => 'ext_a') AS ea \gset
SELECT queue_push('late-heartbeat-2', queue => 'ext_b') AS eb \gset
SELECT id AS eb_id, token AS eb_tok FROM queue_reserve('{ext_b}', lease => '1 minute') \gset
SET jobqueue.clock_offset = '10 minutes';
SELECT queue, name FROM queue_reserve('{ext_a,ext_b}', max_jobs => 1);
SELECT queue_extend(:eb_id, :eb_tok, '5 minutes') AS extended;
SELECT count(*) AS claimed FROM queue_reserve('{ext_b}');
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'ext_b';
SELECT queue_delete(:eb_id, :eb_tok) AS deleted;

-- error text over 60000 bytes (3-byte characters): cut at a character boundary, ends with the marker
SELECT queue_push('long-error', queue => 'err_q', max_attempts => 10) AS er \gset
SELECT id AS er_id, token AS er_tok FROM queue_reserve('{err_q}') \gset
SELECT queue_release(:er_id, :er_tok, '0', repeat('€', 25000)) AS released;
SELECT octet_length(last_error) <= 60000 AS within_limit,
       octet_length(last_error) > 59900 AS not_cut_short,
       right(last_error, 14) = E'\n... truncated' AS has_marker,
       left(last_error, length(last_error) - 14) = repeat('€', length(last_error) - 14) AS prefix_of_input,
       pg_temp.valid_utf8(last_error) AS valid_utf8
  FROM queue_jobs WHERE id = :er;

-- error text over 60000 bytes with an odd offset (2-byte characters after one ASCII byte), through queue_fail
SELECT id AS er_id, token AS er_tok FROM queue_reserve('{err_q}') \gset
SELECT queue_fail(:er_id, :er_tok, 'x' || repeat('é', 40000)) AS failed;
SELECT octet_length(error) <= 60000 AS within_limit,
       octet_length(error) > 59900 AS not_cut_short,
       right(error, 14) = E'\n... truncated' AS has_marker,
       left(error, length(error) - 14) = 'x' || repeat('é', length(error) - 15) AS prefix_of_input,
       pg_temp.valid_utf8(error) AS valid_utf8
  FROM queue_failed_jobs WHERE id = :er;

-- a 59000-byte error is stored intact
SELECT queue_push('mid-error', queue => 'err_q', max_attempts => 10) AS em \gset
SELECT id AS em_id, token AS em_tok FROM queue_reserve('{err_q}') \gset
SELECT queue_release(:em_id, :em_tok, '0', repeat('é', 29500)) AS released;
SELECT octet_length(last_error) AS bytes, last_error = repeat('é', 29500) AS intact
  FROM queue_jobs WHERE id = :em;

-- exactly 60000 bytes is stored intact; 60001 bytes is cut
SELECT id AS em_id, token AS em_tok FROM queue_reserve('{err_q}') \gset
SELECT queue_release(:em_id, :em_tok, '0', repeat('€', 20000)) AS released;
SELECT octet_length(last_error) AS bytes, last_error = repeat('€', 20000) AS intact
  FROM queue_jobs WHERE id = :em;
SELECT id AS em_id, token AS em_tok FROM queue_reserve('{err_q}') \gset
SELECT queue_release(:em_id, :em_tok, '0', 'a' || repeat('€', 20000)) AS released;
SELECT octet_length(last_error) <= 60000 AS within_limit,
       right(last_error, 14) = E'\n... truncated' AS has_marker,
       pg_temp.valid_utf8(last_error) AS valid_utf8
  FROM queue_jobs WHERE id = :em;

-- a long error given to a release with no attempts left is cut in the failed row too
SELECT queue_push('last-long', queue => 'err3_q', max_attempts => 1) AS el2 \gset
SELECT id AS el2_id, token AS el2_tok FROM queue_reserve('{err3_q}') \gset
SELECT :el2_id = :el2 AS same_job, queue_release(:el2_id, :el2_tok, '0', repeat('€', 30000)) AS released;
SELECT octet_length(error) <= 60000 AS within_limit,
       right(error, 14) = E'\n... truncated' AS has_marker,
       pg_temp.valid_utf8(error) AS valid_utf8
  FROM queue_failed_jobs WHERE id = :el2;

-- the error stored when the last attempt's lease runs out is held to the same 60000-byte limit
SELECT queue_push('expire-long', queue => 'err2_q', max_attempts => 2) AS xl \gset
SELECT id AS xl_id, token AS xl_tok FROM queue_reserve('{err2_q}') \gset
SELECT queue_release(:xl_id, :xl_tok, '0', repeat('€', 19990)) AS released;
SELECT octet_length(last_error) AS recorded_bytes FROM queue_jobs WHERE id = :xl;
SELECT attempts FROM queue_reserve('{err2_q}', lease => '1 minute');
SET jobqueue.clock_offset = '12 minutes';
SELECT count(*) AS handed_out FROM queue_reserve('{err2_q}');
SELECT octet_length(error) <= 60000 AS within_limit,
       left(error, 45) = 'lease expired after the last attempt (2 of 2)' AS says_why,
       right(error, 14) = E'\n... truncated' AS has_marker,
       pg_temp.valid_utf8(error) AS valid_utf8
  FROM queue_failed_jobs WHERE id = :xl;

RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;

--------------------------------------------------------------------------
-- a completion deletes without the executor (1.6, store/direct_delete.c) but
-- keeps what the DELETE statement does: a trigger of the user's on
-- queue_jobs fires for the deleted row; a job claimed and completed in one
-- transaction; a completion that deleted is not repeated; a job claimed
-- twice in one transaction keeps only the newest token
--------------------------------------------------------------------------
CREATE TABLE pg_temp.deleted_log (id bigint, queue text);
CREATE FUNCTION pg_temp.log_delete() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.deleted_log VALUES (OLD.id, OLD.queue); RETURN OLD; END$$;
CREATE TRIGGER regress_jq_log_delete AFTER DELETE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_delete();
SELECT queue_push('logged', queue => 'dq') AS dq_id \gset
SELECT id AS dq_claimed, token AS dq_tok FROM queue_reserve('{dq}') \gset
SELECT queue_delete(:dq_claimed, :dq_tok) AS deleted;
SELECT id = :dq_id AS logged_the_job, queue FROM pg_temp.deleted_log;
DROP TRIGGER regress_jq_log_delete ON queue_jobs;

-- a trigger on one partition only (the long one, where a job with a unique
-- key goes): the completion opens each partition when it first looks in it
-- (1.7), deletes a job of another partition without the executor (nothing
-- logged) and leaves the job in that one to the statement (logged); one
-- call at a time and in one queue_delete_many
TRUNCATE pg_temp.deleted_log;
SELECT queue_push('probe', queue => 'dq_probe', unique_key => 'dq-probe') AS dq_probe_id \gset
SELECT tableoid::regclass AS dq_long_partition FROM queue_jobs WHERE id = :dq_probe_id \gset
CREATE TRIGGER regress_jq_log_delete AFTER DELETE ON :dq_long_partition
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_delete();
CREATE TEMP TABLE dq_pushed AS
SELECT queue_push('ring job', queue => 'dq') AS ring_id,
       queue_push('long job', queue => 'dq', unique_key => 'dq-long') AS long_id;
SELECT (SELECT tableoid::regclass FROM queue_jobs WHERE id = ring_id) <> :'dq_long_partition'::regclass
       AS ring_job_elsewhere,
       (SELECT tableoid::regclass FROM queue_jobs WHERE id = long_id) = :'dq_long_partition'::regclass
       AS long_job_there
FROM dq_pushed;
CREATE TEMP TABLE dq_claims AS SELECT id, token FROM queue_reserve('{dq}', NULL, 'w', 2);
SELECT count(*) AS claimed, bool_and(queue_delete(id, token)) AS all_deleted FROM dq_claims;
SELECT count(*) AS logged, bool_and(id = (SELECT long_id FROM dq_pushed)) AS only_the_long_job
FROM pg_temp.deleted_log;
TRUNCATE pg_temp.deleted_log, dq_claims;
SELECT queue_push('ring job 2', queue => 'dq') IS NOT NULL AS pushed,
       queue_push('long job 2', queue => 'dq', unique_key => 'dq-long-2') IS NOT NULL AS pushed_long;
INSERT INTO dq_claims SELECT id, token FROM queue_reserve('{dq}', NULL, 'w', 2);
SELECT cardinality(queue_delete_many(array_agg(id), array_agg(token))) AS deleted_many FROM dq_claims;
SELECT count(*) AS logged, bool_and(queue = 'dq') AS from_dq FROM pg_temp.deleted_log;
SELECT count(*) AS left_in_dq FROM queue_jobs WHERE queue = 'dq';
DROP TRIGGER regress_jq_log_delete ON :dq_long_partition;

-- without it: one queue_delete_many over jobs of both partitions, each id
-- given twice, a stale token before its own: every job is completed once,
-- listed once in the order given (1.7: each partition's jobs are looked up
-- in one scan of its primary key)
TRUNCATE dq_claims;
SELECT count(queue_push('ring job 3', queue => 'dq')) AS pushed FROM generate_series(1, 3);
SELECT count(queue_push('long job 3', queue => 'dq', unique_key => 'dq-long-3-' || i)) AS pushed_long
FROM generate_series(1, 2) i;
INSERT INTO dq_claims SELECT id, token FROM queue_reserve('{dq}', NULL, 'w', 10);
SELECT count(*) AS claimed, count(DISTINCT tableoid) AS partitions
FROM queue_jobs WHERE id IN (SELECT id FROM dq_claims);
SELECT cardinality(done) AS completed,
       done = ARRAY(SELECT id FROM dq_claims ORDER BY id DESC) AS each_once_in_order
FROM (SELECT queue_delete_many(array_agg(id ORDER BY id DESC, n), array_agg(token ORDER BY id DESC, n)) AS done
      FROM (SELECT id, token - 1000 AS token, 1 AS n FROM dq_claims
            UNION ALL SELECT id, token, 2 FROM dq_claims) pairs) d;
SELECT count(*) AS left_in_dq FROM queue_jobs WHERE queue = 'dq';

BEGIN;
SELECT queue_push('same transaction', queue => 'dq') AS dq2_id \gset
SELECT id AS dq2_claimed, token AS dq2_tok FROM queue_reserve('{dq}') \gset
SELECT queue_delete(:dq2_claimed, :dq2_tok) AS deleted_in_the_same_transaction;
SELECT queue_delete(:dq2_claimed, :dq2_tok) AS deleted_twice;
SELECT count(*) AS left_in_transaction FROM queue_jobs WHERE id = :dq2_id;
COMMIT;

SELECT queue_push('claimed twice', queue => 'dq') AS dq3_id \gset
BEGIN;
SELECT id AS dq3_first, token AS dq3_tok1 FROM queue_reserve('{dq}', lease => '1 second') \gset
SET LOCAL jobqueue.clock_offset = '1 minute';
SELECT id AS dq3_second, token AS dq3_tok2 FROM queue_reserve('{dq}') \gset
SELECT queue_delete(:dq3_first, :dq3_tok1) AS old_token_deletes,
       queue_delete(:dq3_second, :dq3_tok2) AS new_token_deletes;
COMMIT;
SELECT count(*) AS left FROM queue_jobs WHERE queue = 'dq';

--------------------------------------------------------------------------
-- a release and an extend change the claimed row without the executor
-- (1.6, store/direct_update.c) as their statements do: the same columns
-- each way, for jobs in ring0, ring1 and long.  The statements are made to
-- run by a trigger of the user's on UPDATE (the direct way steps aside for
-- it), which fires once per change.  A release on the last attempt still
-- moves the job to the failed table; a stale token changes nothing.
--------------------------------------------------------------------------
CREATE FUNCTION pg_temp.change_fixture(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    j bigint;
BEGIN
    j := queue_push('extended', queue => q, priority => 3);
    UPDATE queue_jobs SET ring = 0 WHERE id = j;
    j := queue_push('released-later', queue => q, priority => 2);
    UPDATE queue_jobs SET ring = 1 WHERE id = j;
    j := queue_push('released-now', queue => q, priority => 1);
    UPDATE queue_jobs SET ring = -1 WHERE id = j;
    PERFORM queue_push('last-attempt', queue => q, max_attempts => 1);
END $$;

-- claim the fixture's jobs, change each, and show what each change wrote
CREATE FUNCTION pg_temp.change_all(q text) RETURNS TABLE (name text, partition text, changed boolean,
    stale_changed boolean, ready boolean, due_in_minutes numeric, held_until_due boolean,
    worker text, token_cleared boolean, last_error text, attempts int, failed_with text)
LANGUAGE plpgsql AS $$
DECLARE
    c queue_job;
    ok boolean;
    stale boolean;
BEGIN
    FOR c IN SELECT * FROM queue_reserve(ARRAY[q], '1 minute', 'w-' || q, 10) LOOP
        stale := CASE c.name WHEN 'extended' THEN queue_extend(c.id, c.token + 1000, '1 hour')
                             ELSE queue_release(c.id, c.token + 1000, '1 hour', 'stale') END;
        ok := CASE c.name
                WHEN 'extended' THEN queue_extend(c.id, c.token, '5 minutes')
                WHEN 'released-later' THEN queue_release(c.id, c.token, '10 minutes', 'again later')
                WHEN 'released-now' THEN queue_release(c.id, c.token, '0', 'again now')
                ELSE queue_release(c.id, c.token, '0', 'no attempts left') END;
        RETURN QUERY
        SELECT c.name, replace(j.tableoid::regclass::text, 'queue_jobs_', ''), ok, stale, j.ready,
               round(extract(epoch FROM j.available_at - pg_temp.qnow()) / 60),
               j.reserved_until IS NOT DISTINCT FROM j.available_at,
               j.reserved_by, j.token IS NULL, j.last_error, j.attempts,
               (SELECT f.error FROM queue_failed_jobs f WHERE f.job_id = c.id)
        FROM (SELECT 1) one LEFT JOIN queue_jobs j ON j.id = c.id;
    END LOOP;
END $$;

SELECT pg_temp.change_fixture('cdirect');
SELECT count(DISTINCT tableoid) AS partitions_used FROM queue_jobs WHERE queue = 'cdirect';
CREATE TEMP TABLE direct_changes AS SELECT * FROM pg_temp.change_all('cdirect');
SELECT * FROM direct_changes ORDER BY name;

CREATE TABLE pg_temp.changed_log (name text, old_token bigint, new_ready boolean);
CREATE FUNCTION pg_temp.log_change() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.changed_log VALUES (NEW.name, OLD.token, NEW.ready); RETURN NEW; END$$;
SELECT pg_temp.change_fixture('cstmt');
CREATE TRIGGER regress_jq_log_change AFTER UPDATE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_change();
CREATE TEMP TABLE stmt_changes AS SELECT * FROM pg_temp.change_all('cstmt');
DROP TRIGGER regress_jq_log_change ON queue_jobs;
SELECT count(*) AS claimed_rows_changed_by_statement FROM pg_temp.changed_log
 WHERE old_token IS NOT NULL;
SELECT count(*) AS changed_each_way,
       count(*) FILTER (WHERE (d.partition, d.changed, d.stale_changed, d.ready, d.due_in_minutes,
                               d.held_until_due, d.token_cleared, d.last_error, d.attempts,
                               d.failed_with)
                        IS NOT DISTINCT FROM
                              (s.partition, s.changed, s.stale_changed, s.ready, s.due_in_minutes,
                               s.held_until_due, s.token_cleared, s.last_error, s.attempts,
                               s.failed_with)) AS the_same
  FROM direct_changes d FULL JOIN stmt_changes s USING (name);

--------------------------------------------------------------------------
-- a failure moves the job to the failed table without the executor (1.6,
-- store/direct_delete.c) and writes the row its statement writes: the
-- worker's error, else the last one recorded, else the default text; the
-- statements are made to run by a trigger of the user's on DELETE, which
-- fires once per failure
--------------------------------------------------------------------------
CREATE FUNCTION pg_temp.fail_all(q text) RETURNS TABLE (name text, failed boolean, stale_failed boolean,
    left_in_jobs bigint, error text, attempts int, max_attempts int, priority int, payload jsonb,
    same_id boolean, created_kept boolean, failed_now boolean)
LANGUAGE plpgsql AS $$
DECLARE
    c queue_job;
    ok boolean;
    stale boolean;
    created timestamptz;
BEGIN
    PERFORM queue_push('given', '{"k": 1}', q, priority => 4, max_attempts => 5);
    PERFORM queue_push('recorded', '{"k": 2}', q, priority => 5);
    PERFORM queue_push('none', '{"k": 3}', q, priority => 2);
    -- 'recorded' fails on its second attempt, with the first attempt's error kept
    SELECT * INTO c FROM queue_reserve(ARRAY[q], '1 minute', 'w', 1);
    PERFORM queue_release(c.id, c.token, '0', 'first attempt failed');
    FOR c IN SELECT * FROM queue_reserve(ARRAY[q], '1 minute', 'w', 10) LOOP
        SELECT j.created_at INTO created FROM queue_jobs j WHERE j.id = c.id;
        stale := queue_fail(c.id, c.token + 1000, 'stale');
        ok := queue_fail(c.id, c.token, CASE c.name WHEN 'given' THEN 'it broke' ELSE '' END);
        RETURN QUERY
        SELECT c.name, ok, stale, (SELECT count(*) FROM queue_jobs j WHERE j.id = c.id),
               f.error, f.attempts, f.max_attempts, f.priority, f.payload, f.id = c.id AND f.job_id = c.id,
               f.created_at = created, f.failed_at > pg_temp.qnow() - interval '1 minute'
        FROM queue_failed_jobs f WHERE f.job_id = c.id;
    END LOOP;
END $$;

CREATE TEMP TABLE direct_failures AS SELECT * FROM pg_temp.fail_all('fdirect');
SELECT * FROM direct_failures ORDER BY name;

CREATE TABLE pg_temp.fail_log (name text);
CREATE FUNCTION pg_temp.log_fail() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.fail_log VALUES (OLD.name); RETURN OLD; END$$;
CREATE TRIGGER regress_jq_log_fail AFTER DELETE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_fail();
CREATE TEMP TABLE stmt_failures AS SELECT * FROM pg_temp.fail_all('fstmt');
DROP TRIGGER regress_jq_log_fail ON queue_jobs;
SELECT string_agg(name, ' ' ORDER BY name) AS deleted_by_statement FROM pg_temp.fail_log;
SELECT count(*) AS failed_each_way,
       count(*) FILTER (WHERE (d.failed, d.stale_failed, d.left_in_jobs, d.error, d.attempts,
                               d.max_attempts, d.priority, d.payload, d.same_id, d.created_kept,
                               d.failed_now)
                        IS NOT DISTINCT FROM
                              (s.failed, s.stale_failed, s.left_in_jobs, s.error, s.attempts,
                               s.max_attempts, s.priority, s.payload, s.same_id, s.created_kept,
                               s.failed_now)) AS the_same
  FROM direct_failures d FULL JOIN stmt_failures s USING (name);

-- clean up
TRUNCATE queue_jobs, queue_failed_jobs;
