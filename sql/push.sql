--
-- push: queue_push ids, defaults, delays, unique keys, transactions
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;
\i sql/include/clock.sql
\i sql/include/queued.sql

-- push returns increasing ids
SELECT queue_push('first') AS id1 \gset
SELECT queue_push('second') AS id2 \gset
SELECT queue_push('third') AS id3 \gset
SELECT :id1 < :id2 AND :id2 < :id3 AS ids_increase;

-- defaults: queue 'default', payload '{}', priority 0, max_attempts 3, attempts 0, no error, no key, due now, not held
SELECT queue, name, payload, priority, max_attempts, attempts,
       last_error IS NULL AS last_error_null, unique_key IS NULL AS no_key,
       reserved_until IS NULL AS not_held, reserved_by IS NULL AS no_worker,
       available_at <= clock_timestamp() AS due_now,
       created_at BETWEEN clock_timestamp() - interval '1 minute' AND clock_timestamp() AS created_now
  FROM queue_jobs WHERE id = :id1;

-- every argument given explicitly is stored as given
SELECT queue_push('explicit', '{"a": [1, 2]}', 'mail', '0', 7, 'key-explicit', 5) AS id4 \gset
SELECT queue, name, payload, priority, max_attempts, attempts, unique_key,
       available_at <= clock_timestamp() AS due_now
  FROM queue_jobs WHERE id = :id4;

-- NULL for every defaulted argument means the default
SELECT queue_push('nulls', NULL, NULL, NULL, NULL, NULL, NULL) AS id5 \gset
SELECT queue, name, payload, priority, max_attempts, attempts,
       last_error IS NULL AS last_error_null, unique_key IS NULL AS no_key,
       available_at <= clock_timestamp() AS due_now
  FROM queue_jobs WHERE id = :id5;

-- a job pushed with NULL arguments is claimable from the default queue right away
SELECT queue_pending('default') AS pending_default;

-- delay: available_at lies delay ahead, and the job is neither pending nor claimable
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_push('later', queue => 'delay_q', delay => '10 minutes') AS id6 \gset
SELECT available_at >= :'t0'::timestamptz + interval '10 minutes' AS after_delay,
       available_at <= clock_timestamp() + interval '10 minutes' AS not_beyond_delay,
       created_at <= clock_timestamp() AS created_now
  FROM queue_jobs WHERE id = :id6;
SELECT queue_pending('delay_q') AS pending_delayed;
SELECT count(*) AS claimed_while_delayed FROM queue_reserve('{delay_q}');

-- the delayed job becomes claimable once the queue's clock passes its delay
SET jobqueue.clock_offset = '11 minutes';
SELECT id = :id6 AS same_job, name, attempts FROM queue_reserve('{delay_q}');

-- unique key: the first push inserts
SELECT queue_push('u1', unique_key => 'key-a') AS ua \gset
SELECT count(*) AS rows_with_key_a FROM queue_jobs WHERE unique_key = 'key-a';

-- unique key: a second push with the same key returns the holder's id and inserts nothing
SELECT queue_push('u1-again', '{"x": 2}', unique_key => 'key-a') = :ua AS same_id;
SELECT count(*) AS rows_with_key_a FROM queue_jobs WHERE unique_key = 'key-a';
SELECT name, payload FROM queue_jobs WHERE id = :ua;

-- unique key: the key is global, a push into another queue gets the holder's id too
SELECT queue_push('u1-other', queue => 'other_q', unique_key => 'key-a') = :ua AS same_id_other_queue;
SELECT count(*) AS rows_in_other_q FROM queue_jobs WHERE queue = 'other_q';

-- unique key: a delayed job holds its key
SELECT queue_push('kd', queue => 'kd_q', delay => '1 hour', unique_key => 'key-delayed') AS kd \gset
SELECT queue_push('kd2', queue => 'kd_q', unique_key => 'key-delayed') = :kd AS same_id_delayed;
SELECT count(*) AS rows_in_kd_q FROM queue_jobs WHERE queue = 'kd_q';

-- unique key: a job held by a worker holds its key
SELECT queue_push('kh', queue => 'kh_q', unique_key => 'key-held') AS kh \gset
SELECT id = :kh AS claimed FROM queue_reserve('{kh_q}');
SELECT queue_push('kh2', queue => 'kh_q', unique_key => 'key-held') = :kh AS same_id_held;
SELECT count(*) AS rows_in_kh_q FROM queue_jobs WHERE queue = 'kh_q';

-- unique key: freed when the job is completed (queue_delete); a new push gets a new id
SELECT queue_push('kc', queue => 'kc_q', unique_key => 'key-completed') AS kc \gset
SELECT id AS kc_id, token AS kc_tok FROM queue_reserve('{kc_q}') \gset
SELECT :kc_id = :kc AS claimed, queue_delete(:kc_id, :kc_tok) AS deleted;
SELECT queue_push('kc2', queue => 'kc_q', unique_key => 'key-completed') AS kc2 \gset
SELECT :kc2 <> :kc AS new_id, :kc2 > :kc AS higher_id;
SELECT count(*) AS rows_with_key FROM queue_jobs WHERE unique_key = 'key-completed';

-- unique key: freed when the job fails (queue_fail)
SELECT queue_push('kf', queue => 'kf_q', unique_key => 'key-failed') AS kf \gset
SELECT id AS kf_id, token AS kf_tok FROM queue_reserve('{kf_q}') \gset
SELECT :kf_id = :kf AS claimed, queue_fail(:kf_id, :kf_tok, 'broken') AS failed;
SELECT queue_push('kf2', queue => 'kf_q', unique_key => 'key-failed') AS kf2 \gset
SELECT :kf2 <> :kf AS new_id;
SELECT count(*) AS rows_with_key FROM queue_jobs WHERE unique_key = 'key-failed';

-- unique key: freed when a release with no attempts left moves the job to the failed table
SELECT queue_push('kr', queue => 'kr_q', unique_key => 'key-released', max_attempts => 1) AS kr \gset
SELECT id AS kr_id, token AS kr_tok FROM queue_reserve('{kr_q}') \gset
SELECT :kr_id = :kr AS claimed, queue_release(:kr_id, :kr_tok, '0') AS released;
SELECT count(*) AS kr_failed_rows FROM queue_failed_jobs WHERE id = :kr;
SELECT queue_push('kr2', queue => 'kr_q', unique_key => 'key-released') AS kr2 \gset
SELECT :kr2 <> :kr AS new_id;

-- unique key: freed when the lease of the last attempt runs out and a claim sweeps the job away
SELECT queue_push('kx', queue => 'kx_q', unique_key => 'key-expired', max_attempts => 1) AS kx \gset
SELECT id = :kx AS claimed FROM queue_reserve('{kx_q}', lease => '1 minute');
SELECT queue_push('kx-held', queue => 'kx_q', unique_key => 'key-expired') = :kx AS still_held;
SET jobqueue.clock_offset = '13 minutes';
SELECT count(*) AS claimed_after_expiry FROM queue_reserve('{kx_q}');
SELECT count(*) AS kx_failed_rows FROM queue_failed_jobs WHERE id = :kx;
SELECT queue_push('kx2', queue => 'kx_q', unique_key => 'key-expired') AS kx2 \gset
SELECT :kx2 <> :kx AS new_id;

-- NULL unique keys repeat freely
SELECT queue_push('n', queue => 'nk_q', unique_key => NULL) AS n1 \gset
SELECT queue_push('n', queue => 'nk_q', unique_key => NULL) AS n2 \gset
SELECT :n1 <> :n2 AS different_ids;
SELECT count(*) AS rows_in_nk_q FROM queue_jobs WHERE queue = 'nk_q';

-- a push inside a rolled-back transaction leaves nothing, not even its key
BEGIN;
SELECT pg_temp.queued(queue_push('rolled', queue => 'rb_q', unique_key => 'key-rollback')) AS pushed;
SELECT count(*) AS visible_inside FROM queue_jobs WHERE queue = 'rb_q';
ROLLBACK;
SELECT count(*) AS rows_after_rollback FROM queue_jobs WHERE queue = 'rb_q';
SELECT queue_pending('rb_q') AS pending_after_rollback;
SELECT pg_temp.queued(queue_push('again', queue => 'rb_q', unique_key => 'key-rollback')) AS pushed;
SELECT name FROM queue_jobs WHERE unique_key = 'key-rollback';

-- a push with a held key does not abort the caller's transaction
BEGIN;
SELECT queue_push('dup', unique_key => 'key-a') = :ua AS same_id;
SELECT queue_push('after-dup', queue => 'tx_q') IS NOT NULL AS later_push_works;
SELECT count(*) AS rows_in_tx_q FROM queue_jobs WHERE queue = 'tx_q';
COMMIT;
SELECT count(*) AS rows_in_tx_q_after_commit FROM queue_jobs WHERE queue = 'tx_q';
SELECT count(*) AS rows_with_key_a FROM queue_jobs WHERE unique_key = 'key-a';

-- the same key twice in one transaction: the second push gets the first one's id
BEGIN;
SELECT queue_push('t1', queue => 'same_tx_q', unique_key => 'key-same-tx') AS st1 \gset
SELECT queue_push('t2', queue => 'same_tx_q', unique_key => 'key-same-tx') = :st1 AS same_id;
COMMIT;
SELECT count(*) AS rows_in_same_tx_q FROM queue_jobs WHERE queue = 'same_tx_q';

--------------------------------------------------------------------------
-- a plain push inserts without a plan (1.6, store/direct_insert.c) and
-- keeps what the INSERT statement does: the row's every column as the
-- statement writes it (defaults included, also a default changed after the
-- partition was first written); a trigger of the user's on INSERT fires
-- (the push then takes the statement); the id sequence, the partition the
-- clock says, a rolled-back push leaving nothing
--------------------------------------------------------------------------
TRUNCATE queue_jobs;
SELECT queue_push('plain', '{"a": 1}', 'dp', priority => 3, max_attempts => 4,
                  deadline => now() + interval '1 day') AS dp1 \gset
SELECT name, payload, priority, max_attempts, attempts, ready, token IS NULL AS no_token,
       reserved_until IS NULL AS no_lease, last_error IS NULL AS no_error, deadline IS NOT NULL AS has_deadline,
       unique_key IS NULL AS no_key, flow IS NULL AS no_flow, waiting_parents, has_children,
       ring = queue_current_ring() AS current_ring, tableoid::regclass::text LIKE 'queue_jobs_ring_' AS in_a_ring
FROM queue_jobs WHERE id = :dp1;
ALTER TABLE queue_jobs ALTER COLUMN last_error SET DEFAULT 'no error yet';
SELECT queue_push('after a new default', queue => 'dp') AS dp2 \gset
SELECT last_error FROM queue_jobs WHERE id = :dp2;
ALTER TABLE queue_jobs ALTER COLUMN last_error DROP DEFAULT;
SELECT queue_push('default dropped', queue => 'dp') AS dp3 \gset
SELECT last_error IS NULL AS no_error FROM queue_jobs WHERE id = :dp3;
SELECT :dp2 = :dp1 + 1 AND :dp3 = :dp2 + 1 AS ids_from_the_sequence;
BEGIN;
SELECT queue_push('rolled back', queue => 'dp') IS NOT NULL AS pushed;
ROLLBACK;
SELECT count(*) AS rolled_back_rows FROM queue_jobs WHERE name = 'rolled back';
CREATE FUNCTION pg_temp.mark_push() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN NEW.payload := NEW.payload || '{"marked": true}'; RETURN NEW; END$$;
CREATE TRIGGER regress_jq_mark_push BEFORE INSERT ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.mark_push();
SELECT queue_push('with trigger', '{"b": 2}', 'dp') AS dp4 \gset
SELECT payload FROM queue_jobs WHERE id = :dp4;
SELECT (queue_push_many('[{"name": "batch with trigger", "queue": "dp", "payload": {"c": 3}}]'))[1] AS dp5 \gset
SELECT payload FROM queue_jobs WHERE id = :dp5;
DROP TRIGGER regress_jq_mark_push ON queue_jobs;
-- queue_push_many's plain jobs go the same way, one executor state for the batch
SELECT queue_push_many('[{"name": "b1", "queue": "dpb", "priority": 2, "payload": {"n": 1}},
                         {"name": "b2", "queue": "dpb", "delay": "1 hour", "max_attempts": 5},
                         {"name": "b3", "queue": "dpb", "deadline": "2999-01-01T00:00:00Z"}]') AS batch_ids \gset
SELECT name, payload, priority, max_attempts, attempts, ready, token IS NULL AS no_token,
       deadline IS NOT NULL AS has_deadline, ring = queue_current_ring() AS current_ring,
       id = (:'batch_ids'::bigint[])[1] + row_number() OVER (ORDER BY id) - 1 AS ids_in_order
FROM queue_jobs WHERE queue = 'dpb' ORDER BY id;
-- the partition bound is still checked after the partitions change: with the
-- ring partitions' bounds swapped a push (the direct way's first for that
-- shape) is refused as the INSERT statement would refuse it, and nothing is written
BEGIN;
DELETE FROM queue_jobs;
ALTER TABLE queue_jobs DETACH PARTITION queue_jobs_ring0;
ALTER TABLE queue_jobs DETACH PARTITION queue_jobs_ring1;
ALTER TABLE queue_jobs ATTACH PARTITION queue_jobs_ring0 FOR VALUES IN (1);
ALTER TABLE queue_jobs ATTACH PARTITION queue_jobs_ring1 FOR VALUES IN (0);
DO $$
BEGIN
    PERFORM queue_push('outside its bound', queue => 'dp');
    RAISE NOTICE 'pushed';
EXCEPTION WHEN check_violation THEN
    RAISE NOTICE 'refused: %', SQLSTATE;
END $$;
SELECT count(*) AS written FROM queue_jobs WHERE name = 'outside its bound';
ROLLBACK;
SELECT queue_push('bounds restored', queue => 'dp') IS NOT NULL AS pushed;
SELECT name FROM queue_reserve('{dp}', max_jobs => 10) ORDER BY id;

-- clean up
RESET jobqueue.clock_offset;
TRUNCATE queue_jobs, queue_failed_jobs;
