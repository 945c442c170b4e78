--
-- flow: flow control (1.5): concurrency keys, rate limits, unique-key
-- modes (on_duplicate), dependencies (after).  The races are in the
-- isolation specs flow_*.spec; a stress run under 8 workers is
-- tests/stress/flow_stress.py.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings, queue_key_slots, queue_key_limits,
         queue_job_parents;
\i sql/include/try.sql
\i sql/include/checksum.sql

-- What flow control shows of a queue's jobs: flow, ready, held back (due at infinity).
CREATE FUNCTION pg_temp.jobs(q text) RETURNS TABLE(name text, key text, flow text, ready boolean,
    held_back boolean, waiting_parents integer)
LANGUAGE sql AS $$
    SELECT name, concurrency_key, flow, ready, available_at = 'infinity', waiting_parents
    FROM queue_jobs WHERE queue = q ORDER BY id
$$;
-- Claim every job of a queue that can be claimed now; their names.
CREATE FUNCTION pg_temp.claim(q text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(name, ' ' ORDER BY id), '(none)')
    FROM queue_reserve(ARRAY[q], max_jobs => 100)
$$;
-- Complete a claimed job by name.
CREATE FUNCTION pg_temp.complete(q text, n text) RETURNS boolean LANGUAGE sql AS $$
    SELECT queue_delete(id, token) FROM queue_jobs WHERE queue = q AND name = n
$$;
CREATE FUNCTION pg_temp.fail(q text, n text, why text DEFAULT 'boom') RETURNS boolean LANGUAGE sql AS $$
    SELECT queue_fail(id, token, why) FROM queue_jobs WHERE queue = q AND name = n
$$;
CREATE FUNCTION pg_temp.id_of(q text, n text) RETURNS bigint LANGUAGE sql AS $$
    SELECT id FROM queue_jobs WHERE queue = q AND name = n
    UNION ALL SELECT id FROM queue_failed_jobs WHERE queue = q AND name = n
$$;

--------------------------------------------------------------------------
-- concurrency keys: one job of a key at a time by default
--------------------------------------------------------------------------

SELECT queue_push('k1-a', queue => 'ck', concurrency_key => 'customer:1') > 0 AS pushed;
SELECT queue_push('k1-b', queue => 'ck', concurrency_key => 'customer:1') > 0 AS pushed;
SELECT queue_push('k1-c', queue => 'ck', concurrency_key => 'customer:1') > 0 AS pushed;
SELECT queue_push('k2-a', queue => 'ck', concurrency_key => 'customer:2') > 0 AS pushed;
SELECT queue_push('free', queue => 'ck') > 0 AS pushed;
-- k1-b and k1-c wait: not ready, due at infinity, out of every claim's way
SELECT * FROM pg_temp.jobs('ck');
SELECT * FROM queue_concurrency_keys('ck');
SELECT * FROM queue_blocked();
SELECT pg_temp.claim('ck');
-- nothing more while k1-a runs
SELECT pg_temp.claim('ck');
-- its completion hands the slot to k1-b at once
SELECT pg_temp.complete('ck', 'k1-a');
SELECT * FROM pg_temp.jobs('ck');
SELECT pg_temp.claim('ck');
-- a release keeps the slot (the job runs again), so k1-c still waits
SELECT queue_release(id, token, delay => '0') FROM queue_jobs WHERE name = 'k1-b';
SELECT pg_temp.claim('ck');
-- a failure (to the failed table) gives it up: k1-c gets it
SELECT pg_temp.fail('ck', 'k1-b', 'disk full');
SELECT name, error, concurrency_key FROM queue_failed_jobs;
SELECT * FROM pg_temp.jobs('ck');
-- the failed job keeps its key: retried, it waits for a slot again
SELECT queue_retry_failed(pg_temp.id_of('ck', 'k1-b'));
SELECT * FROM pg_temp.jobs('ck');
SELECT pg_temp.claim('ck');
-- cancelling the one that holds the slot (forced: it is running) lets the retried one run
SELECT queue_cancel(pg_temp.id_of('ck', 'k1-c'), force => true);
SELECT * FROM pg_temp.jobs('ck');
SELECT pg_temp.claim('ck');
-- an expired lease keeps the slot: the same job is claimed again, no other
SELECT queue_push('k1-d', queue => 'ck', concurrency_key => 'customer:1') > 0 AS pushed;
SET jobqueue.clock_offset = '2 minutes';
SELECT pg_temp.claim('ck');
SELECT attempts FROM queue_jobs WHERE name = 'k1-b';
SELECT pg_temp.complete('ck', 'k1-b');
SELECT pg_temp.claim('ck');
SELECT pg_temp.complete('ck', 'k1-d'), pg_temp.complete('ck', 'k2-a'), pg_temp.complete('ck', 'free');
RESET jobqueue.clock_offset;
-- the batch completions hand slots on too
SELECT count(*) FROM (SELECT queue_push('b' || n, queue => 'ck', concurrency_key => 'batch:' || (n % 2))
                      FROM generate_series(1, 6) n) p;
SELECT pg_temp.claim('ck');
SELECT cardinality(queue_delete_many(array_agg(id), array_agg(token))) AS completed
FROM queue_jobs WHERE queue = 'ck' AND token IS NOT NULL;
SELECT pg_temp.claim('ck');
SELECT cardinality(queue_fail_many(array_agg(id), array_agg(token), 'batch failure')) AS failed
FROM queue_jobs WHERE queue = 'ck' AND token IS NOT NULL;
SELECT pg_temp.claim('ck');
SELECT cardinality(queue_delete_many(array_agg(id), array_agg(token))) AS completed
FROM queue_jobs WHERE queue = 'ck' AND token IS NOT NULL;
SELECT count(*) AS left_in_queue FROM queue_jobs WHERE queue = 'ck';
TRUNCATE queue_failed_jobs;
-- a key with nothing running or waiting leaves no row behind
SELECT count(*) AS key_rows FROM queue_key_slots;

--------------------------------------------------------------------------
-- limits per key prefix (longest prefix wins), raised and lowered
--------------------------------------------------------------------------

SELECT queue_concurrency_set('cl', '', 1);
SELECT queue_concurrency_set('cl', 'api:', 2);
SELECT queue_concurrency_set('cl', 'api:slow:', 1);
SELECT * FROM queue_concurrency_list();
SELECT count(*) FROM (SELECT queue_push('api-' || n, queue => 'cl', concurrency_key => 'api:x')
                      FROM generate_series(1, 5) n) p;
SELECT count(*) FROM (SELECT queue_push('slow-' || n, queue => 'cl', concurrency_key => 'api:slow:y')
                      FROM generate_series(1, 3) n) p;
SELECT * FROM queue_concurrency_keys('cl');
SELECT pg_temp.claim('cl');
-- raising the limit lets waiting jobs run at once
SELECT queue_concurrency_set('cl', 'api:', 4);
SELECT * FROM queue_concurrency_keys('cl');
SELECT pg_temp.claim('cl');
-- lowering it lets the running ones finish; the next waits until fewer run
SELECT queue_concurrency_set('cl', 'api:', 1);
SELECT pg_temp.complete('cl', 'api-1');
SELECT * FROM queue_concurrency_keys('cl') WHERE concurrency_key = 'api:x';
SELECT queue_concurrency_remove('cl', 'api:slow:'), queue_concurrency_remove('cl', 'api:slow:');
-- 'api:slow:y' now falls back to 'api:' (1)
SELECT * FROM queue_concurrency_keys('cl') WHERE concurrency_key = 'api:slow:y';
SELECT queue_clear('cl');
SELECT count(*) AS key_rows FROM queue_key_slots;

--------------------------------------------------------------------------
-- every way a key's limit rises lets its waiting jobs run at once, as
-- many as the new limit allows, no more (AdmitWaitingOfKeys in flow.c)
--------------------------------------------------------------------------

SELECT queue_concurrency_set('fpre', '', 3);
SELECT queue_concurrency_set('fpre', 'tenant:', 1);
SELECT queue_concurrency_set('fpre', 'tenant:vip:', 1);
SELECT count(*) FROM (SELECT queue_push(k || '-' || n, queue => 'fpre', concurrency_key => k)
                      FROM unnest(ARRAY['tenant:a', 'tenant:vip:z']) k,
                           generate_series(1, 5) n ORDER BY k, n) p;
-- the same key in another queue, whose limit does not change
SELECT count(*) FROM (SELECT queue_push('other-' || n, queue => 'fpre2', concurrency_key => 'tenant:a')
                      FROM generate_series(1, 3) n) p;
SELECT pg_temp.claim('fpre'), pg_temp.claim('fpre2');
SELECT * FROM queue_concurrency_keys() WHERE queue LIKE 'fpre%';
-- a narrower prefix removed: its keys take the broader limit (3) at once,
-- two of tenant:a's four waiting jobs run, not more; tenant:vip:z keeps
-- its own limit (1) and fpre2 its own
SELECT queue_concurrency_remove('fpre', 'tenant:');
SELECT * FROM queue_concurrency_keys() WHERE queue LIKE 'fpre%';
SELECT pg_temp.claim('fpre'), pg_temp.claim('fpre2');
-- a completion hands its slot on within the new limit
SELECT pg_temp.complete('fpre', 'tenant:a-1');
SELECT pg_temp.claim('fpre');
SELECT * FROM queue_concurrency_keys('fpre');
-- removing the narrowest prefix: tenant:vip:z takes the queue-wide 3
SELECT queue_concurrency_remove('fpre', 'tenant:vip:');
SELECT * FROM queue_concurrency_keys('fpre');
SELECT pg_temp.claim('fpre');
-- a queue-wide change (the '' prefix) raised: every key of the queue
SELECT queue_concurrency_set('fpre', '', 5);
SELECT * FROM queue_concurrency_keys('fpre');
SELECT pg_temp.claim('fpre');
-- a removal that lowers the limit (the queue-wide one, back to 1) admits nothing,
-- and neither does a removal of a limit that was not there
SELECT pg_temp.complete('fpre', 'tenant:a-2');
SELECT queue_concurrency_remove('fpre', ''), queue_concurrency_remove('fpre', 'nothing:');
SELECT * FROM queue_concurrency_keys('fpre');
SELECT pg_temp.claim('fpre');
-- a removal rolled back admits nothing
SELECT queue_concurrency_set('fpre2', 'tenant:', 1);
SELECT queue_concurrency_set('fpre2', '', 3);
BEGIN;
SELECT queue_concurrency_remove('fpre2', 'tenant:');
SELECT * FROM queue_concurrency_keys('fpre2');
ROLLBACK;
SELECT * FROM queue_concurrency_keys('fpre2');
-- removed for good: fpre2's waiting jobs run
SELECT queue_concurrency_remove('fpre2', 'tenant:');
SELECT pg_temp.claim('fpre2');
SELECT queue_clear('fpre'), queue_clear('fpre2');
SELECT queue_concurrency_remove('fpre2', '');
SELECT count(*) AS key_rows FROM queue_key_slots;

--------------------------------------------------------------------------
-- unique-key modes
--------------------------------------------------------------------------

SELECT queue_push('u', '{"v":1}', 'uq', unique_key => 'report:7') AS u1 \gset
-- keep (the default): the first push's job and payload stay
SELECT queue_push('u', '{"v":2}', 'uq', unique_key => 'report:7') = :u1 AS same_id;
SELECT payload FROM queue_jobs WHERE id = :u1;
-- replace: the pending job takes the new payload, priority and run-at
SELECT queue_push('u', '{"v":3}', 'uq', delay => '1 hour', priority => 5,
                  unique_key => 'report:7', on_duplicate => 'replace') = :u1 AS same_id;
SELECT payload, priority, ready, available_at > clock_timestamp() + interval '59 minutes' AS later
FROM queue_jobs WHERE id = :u1;
SELECT queue_push('u', '{"v":4}', 'uq', unique_key => 'report:7', on_duplicate => 'replace') = :u1 AS same_id;
SELECT payload, ready FROM queue_jobs WHERE id = :u1;
-- debounce: each push postpones the job to now + delay
SELECT queue_push('u', '{"v":5}', 'uq', delay => '10 minutes', unique_key => 'report:7',
                  on_duplicate => 'debounce') = :u1 AS same_id;
SELECT payload, ready, available_at BETWEEN clock_timestamp() + interval '9 minutes'
                                       AND clock_timestamp() + interval '10 minutes' AS postponed
FROM queue_jobs WHERE id = :u1;
-- a held job is left as it is: the holder's id comes back, its payload stays
SELECT queue_push('u', '{"v":6}', 'uq', unique_key => 'report:7', on_duplicate => 'replace') = :u1;
SELECT count(*) AS claimed FROM queue_reserve('{uq}');
SELECT queue_push('u', '{"v":7}', 'uq', unique_key => 'report:7', on_duplicate => 'replace') = :u1 AS same_id;
SELECT payload FROM queue_jobs WHERE id = :u1;
-- push_many knows the modes too
SELECT queue_push_many('[{"name": "m", "queue": "uq", "unique_key": "m:1", "payload": {"v": 1}},
                         {"name": "m", "queue": "uq", "unique_key": "m:1", "payload": {"v": 2},
                          "on_duplicate": "replace"}]') AS ids \gset
SELECT (:'ids'::bigint[])[1] = (:'ids'::bigint[])[2] AS same_id,
       (SELECT payload FROM queue_jobs WHERE unique_key = 'm:1') AS payload;
SELECT queue_clear('uq');

--------------------------------------------------------------------------
-- dependencies
--------------------------------------------------------------------------

SELECT queue_push('parent-1', queue => 'dq') AS p1 \gset
SELECT queue_push('parent-2', queue => 'dq') AS p2 \gset
SELECT queue_push('child', queue => 'dq', after => ARRAY[:p1, :p2, :p1]) AS c \gset
SELECT queue_push('grandchild', queue => 'dq', after => ARRAY[:c]) AS g \gset
SELECT * FROM pg_temp.jobs('dq');
SELECT * FROM queue_blocked('dq');
SELECT pg_temp.claim('dq');
SELECT pg_temp.complete('dq', 'parent-1');
-- one parent left: the child still waits
SELECT pg_temp.claim('dq');
SELECT pg_temp.complete('dq', 'parent-2');
SELECT * FROM pg_temp.jobs('dq');
SELECT pg_temp.claim('dq');
SELECT pg_temp.complete('dq', 'child');
SELECT pg_temp.claim('dq');
SELECT pg_temp.complete('dq', 'grandchild');
SELECT count(*) AS dependency_rows FROM queue_job_parents;

-- a failed parent takes its children (and theirs) to the failed table ...
SELECT queue_push('p', queue => 'df', max_attempts => 1) AS fp \gset
SELECT queue_push('c-fail', queue => 'df', after => ARRAY[:fp]) AS fc \gset
SELECT queue_push('c-run', queue => 'df', after => ARRAY[:fp], after_failed => 'run') AS fr \gset
SELECT queue_push('g-fail', queue => 'df', after => ARRAY[:fc]) AS fg \gset
SELECT pg_temp.claim('df');
SELECT pg_temp.fail('df', 'p', 'disk full');
-- (ids shown as N: they depend on the tests before)
SELECT name, regexp_replace(error, '[0-9]+', 'N') AS error FROM queue_failed_jobs WHERE queue = 'df' ORDER BY id;
-- ... except the one pushed to run anyway
SELECT * FROM pg_temp.jobs('df');
SELECT pg_temp.claim('df');
SELECT pg_temp.complete('df', 'c-run');
-- a retried parent brings them back, waiting for it again
SELECT queue_retry_failed(:fp);
SELECT * FROM pg_temp.jobs('df');
SELECT count(*) AS failed_rows FROM queue_failed_jobs WHERE queue = 'df';
SELECT pg_temp.claim('df');
SELECT pg_temp.complete('df', 'p');
SELECT pg_temp.claim('df');
SELECT pg_temp.complete('df', 'c-fail');
SELECT pg_temp.claim('df');
SELECT pg_temp.complete('df', 'g-fail');
SELECT count(*) AS dependency_rows FROM queue_job_parents;

-- a cancelled parent takes its children too, for good
SELECT queue_push('p', queue => 'dc') AS cp \gset
SELECT queue_push('c', queue => 'dc', after => ARRAY[:cp]) AS cc \gset
SELECT queue_cancel(:cp);
SELECT name, regexp_replace(error, '[0-9]+', 'N') AS error FROM queue_failed_jobs WHERE queue = 'dc';
SELECT count(*) AS dependency_rows FROM queue_job_parents;
-- a parent already in the failed table: the child fails at once, or runs anyway
SELECT queue_push('c2', queue => 'dc', after => ARRAY[:cc]) > 0 AS pushed;
SELECT name, error = 'parent job ' || :cc || ' failed' AS names_parent FROM queue_failed_jobs WHERE queue = 'dc' AND name = 'c2';
SELECT queue_push('c3', queue => 'dc', after => ARRAY[:cc], after_failed => 'run') > 0 AS pushed;
SELECT * FROM pg_temp.jobs('dc');
-- a child with a concurrency key waits for its parents, then for a slot
SELECT queue_push('busy', queue => 'dk', concurrency_key => 'k') > 0 AS pushed;
SELECT queue_push('p', queue => 'dk') AS kp \gset
SELECT queue_push('c', queue => 'dk', concurrency_key => 'k', after => ARRAY[:kp]) > 0 AS pushed;
SELECT pg_temp.claim('dk');
SELECT pg_temp.complete('dk', 'p');
SELECT * FROM pg_temp.jobs('dk');
SELECT pg_temp.complete('dk', 'busy');
SELECT * FROM pg_temp.jobs('dk');
SELECT queue_clear('dc'), queue_clear('dk');
TRUNCATE queue_failed_jobs;

--------------------------------------------------------------------------
-- rate limits
--------------------------------------------------------------------------

SELECT queue_rate_limit_set('rq', 3, '1 hour');
SELECT queue, max_claims, per, next_slot FROM queue_rate_limits();
SELECT count(*) FROM (SELECT queue_push('r' || n, queue => 'rq') FROM generate_series(1, 5) n) p;
SELECT queue_rate_limit_next('rq') IS NULL AS slot_free;
-- a burst of 3, then nothing until a slot opens (every 20 minutes)
SELECT count(*) AS claimed FROM queue_reserve('{rq}', max_jobs => 2);
SELECT count(*) AS claimed FROM queue_reserve('{rq}', max_jobs => 2);
SELECT count(*) AS claimed FROM queue_reserve('{rq}', max_jobs => 2);
SELECT queue_rate_limit_next('rq') BETWEEN clock_timestamp() + interval '19 minutes'
                                       AND clock_timestamp() + interval '20 minutes' AS next_in_20_minutes;
-- a limited queue passes the claim on to the next queue in precedence order
SELECT queue_push('other', queue => 'rq2') > 0 AS pushed;
SELECT name FROM queue_reserve('{rq,rq2}', max_jobs => 2);
-- a rolled-back claim gives its turns back
SELECT queue_rate_limit_set('rq', 1, '1 hour');
BEGIN;
SELECT count(*) AS claimed FROM queue_reserve('{rq}');
ROLLBACK;
SELECT count(*) AS claimed FROM queue_reserve('{rq}');
SELECT queue_rate_limit_remove('rq'), queue_rate_limit_remove('rq');
SELECT count(*) AS claimed FROM queue_reserve('{rq}', max_jobs => 10);
SELECT queue_clear('rq'), queue_clear('rq2');

--------------------------------------------------------------------------
-- TRUNCATE queue_jobs takes the slots and dependencies of its jobs along
--------------------------------------------------------------------------

SELECT queue_push('t1', queue => 'tq', concurrency_key => 'k') AS t1 \gset
SELECT queue_push('t2', queue => 'tq', concurrency_key => 'k', after => ARRAY[:t1]) > 0 AS pushed;
SELECT (SELECT count(*) FROM queue_key_slots) AS slots, (SELECT count(*) FROM queue_job_parents) AS parents;
TRUNCATE queue_jobs;
SELECT (SELECT count(*) FROM queue_key_slots) AS slots, (SELECT count(*) FROM queue_job_parents) AS parents;
-- the next job of the key takes its slot as if the key were new
SELECT queue_push('t3', queue => 'tq', concurrency_key => 'k') > 0 AS pushed;
SELECT * FROM pg_temp.jobs('tq');
SELECT queue_clear('tq');

--------------------------------------------------------------------------
-- a key's slot is handed on without the executor (1.6,
-- store/direct_slots.c) to the job the statements hand it to: waiting
-- jobs spread over both ring partitions and long, merged in the order
-- they get a slot (priority first, then their run-at, then id).  The
-- statements are made to run by a trigger of the user's on UPDATE (the
-- direct way steps aside for it), which also shows that such a trigger
-- fires for each admission.  A job whose run-at is still ahead takes its
-- slot but is not ready until then.
--------------------------------------------------------------------------

CREATE FUNCTION pg_temp.waiting_fixture(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    j bigint;
BEGIN
    PERFORM queue_push('running', queue => q, concurrency_key => 'hk');
    -- name: partition, priority, run-at
    j := queue_push('long-p1', queue => q, concurrency_key => 'hk', priority => 1);
    UPDATE queue_jobs SET ring = -1 WHERE id = j;
    j := queue_push('ring0-p1', queue => q, concurrency_key => 'hk', priority => 1);
    UPDATE queue_jobs SET ring = 0 WHERE id = j;
    j := queue_push('ring1-p5', queue => q, concurrency_key => 'hk', priority => 5);
    UPDATE queue_jobs SET ring = 1 WHERE id = j;
    j := queue_push('ring0-p0', queue => q, concurrency_key => 'hk');
    UPDATE queue_jobs SET ring = 0 WHERE id = j;
    j := queue_push('ring1-p0-older', queue => q, concurrency_key => 'hk');
    UPDATE queue_jobs SET ring = 1, parked_run_at = parked_run_at - interval '1 hour' WHERE id = j;
    j := queue_push('long-p-1-later', queue => q, concurrency_key => 'hk', priority => -1,
                    delay => '1 day');
    UPDATE queue_jobs SET ring = -1 WHERE id = j;
END $$;

-- claim and complete the key's jobs one by one: the order they got the slot in
CREATE FUNCTION pg_temp.handover_order(q text) RETURNS TABLE (step int, name text, partition text)
LANGUAGE plpgsql AS $$
DECLARE
    claimed queue_job;
BEGIN
    step := 0;
    LOOP
        SELECT * INTO claimed FROM queue_reserve(ARRAY[q], '1 minute', 'w', 1);
        EXIT WHEN claimed.id IS NULL;
        step := step + 1;
        SELECT claimed.name, replace(j.tableoid::regclass::text, 'queue_jobs_', '')
          INTO name, partition FROM queue_jobs j WHERE j.id = claimed.id;
        RETURN NEXT;
        PERFORM queue_delete(claimed.id, claimed.token);
    END LOOP;
END $$;

-- the last one holds the slot, due at its own run-at, not ready yet
CREATE FUNCTION pg_temp.last_waiting(q text) RETURNS TABLE (name text, flow text, ready boolean,
    due_at_run_at boolean, slots integer)
LANGUAGE sql AS $$
    SELECT name, flow, ready, available_at > now() + interval '23 hours' AND parked_run_at IS NULL,
           (SELECT running FROM queue_key_slots s WHERE s.queue = q)
    FROM queue_jobs WHERE queue = q
$$;

SELECT pg_temp.waiting_fixture('hdirect');
SELECT count(DISTINCT tableoid) AS partitions_used FROM queue_jobs WHERE queue = 'hdirect';
-- (the running job's partition is the ring of the moment: not shown)
SELECT step, name, CASE WHEN name <> 'running' THEN partition END AS partition
  FROM pg_temp.handover_order('hdirect');
SELECT * FROM pg_temp.last_waiting('hdirect');

CREATE TABLE pg_temp.admitted_log (name text, old_flow text, new_flow text);
CREATE FUNCTION pg_temp.log_admission() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.admitted_log VALUES (NEW.name, OLD.flow, NEW.flow); RETURN NEW; END$$;
-- the same fixture twice more: with the statements, and the direct way again to compare
SELECT pg_temp.waiting_fixture('hstmt'), pg_temp.waiting_fixture('hdirect_again');
CREATE TRIGGER regress_jq_log_admission AFTER UPDATE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.log_admission();
CREATE TEMP TABLE stmt_order AS SELECT * FROM pg_temp.handover_order('hstmt');
DROP TRIGGER regress_jq_log_admission ON queue_jobs;
SELECT count(*) FILTER (WHERE d.name IS NOT DISTINCT FROM s.name
                          AND d.partition IS NOT DISTINCT FROM s.partition) AS the_same,
       count(*) AS steps
  FROM pg_temp.handover_order('hdirect_again') d FULL JOIN stmt_order s USING (step);
SELECT string_agg(name, ' ' ORDER BY name) AS admitted_by_statement FROM pg_temp.admitted_log
 WHERE old_flow = 'key' AND new_flow = 'slot';
SELECT * FROM pg_temp.last_waiting('hstmt');
SELECT queue_clear('hdirect'), queue_clear('hstmt');

-- a queue with more limits than the direct hand-over scans (64): the key's
-- limit (the longest of its prefixes among them) is read by the statement
SELECT count(queue_concurrency_set('hmany', 'other' || n || ':', 3)) AS limits
  FROM generate_series(1, 70) n;
SELECT queue_concurrency_set('hmany', 'hk', 2), queue_concurrency_set('hmany', 'h', 5);
SELECT count(*) FROM (SELECT queue_push('m' || n, queue => 'hmany', concurrency_key => 'hkey')
                      FROM generate_series(1, 4) n) p;
SELECT pg_temp.claim('hmany');
SELECT pg_temp.complete('hmany', 'm1');
SELECT pg_temp.claim('hmany');
SELECT running FROM queue_key_slots WHERE queue = 'hmany';
SELECT queue_clear('hmany');
SELECT count(queue_concurrency_remove('hmany', key_prefix)) AS removed
  FROM queue_key_limits WHERE queue = 'hmany';

--------------------------------------------------------------------------
-- bad input: a clear error naming the argument, nothing changed
--------------------------------------------------------------------------

SELECT queue_push('keep-me', queue => 'bad', unique_key => 'bad:1') > 0 AS pushed;
SELECT pg_temp.queue_checksum() AS before \gset
SELECT pg_temp.try($$SELECT queue_push('x', concurrency_key => '')$$);
SELECT pg_temp.try($$SELECT queue_push('x', concurrency_key => repeat('k', 201))$$);
SELECT pg_temp.try($$SELECT queue_push('x', unique_key => 'bad:1', on_duplicate => 'merge')$$);
SELECT pg_temp.try($$SELECT queue_push('x', on_duplicate => 'replace')$$);
SELECT pg_temp.try($$SELECT queue_push('x', unique_key => 'bad:1', on_duplicate => 'debounce')$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => ARRAY[NULL]::bigint[])$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => ARRAY[987654321])$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => ARRAY[[1],[2]])$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => (SELECT array_agg(n) FROM generate_series(1, 1001) n))$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => ARRAY[1], after_failed => 'ignore')$$);
SELECT pg_temp.try($$SELECT queue_push('x', after => ARRAY[(SELECT id FROM queue_jobs WHERE unique_key = 'bad:1')], unique_key => 'bad:2')$$);
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "x", "after": [1.5]}]')$$);
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "x", "after": 7}]')$$);
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "x", "concurrency_key": 7}]')$$);
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "x", "on_duplicate": "merge", "unique_key": "u"}]')$$);
SELECT pg_temp.try($$SELECT queue_concurrency_set('q', 'p', 0)$$);
SELECT pg_temp.try($$SELECT queue_concurrency_set('q', NULL, 1)$$);
SELECT pg_temp.try($$SELECT queue_concurrency_set(NULL, 'p', 1)$$);
SELECT pg_temp.try($$SELECT queue_concurrency_set('q', 'p', NULL)$$);
SELECT pg_temp.try($$SELECT queue_concurrency_remove('q', repeat('p', 201))$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_set('q', 0, '1 second')$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_set('q', 1, '1 month')$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_set('q', 1, '0.5 ms')$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_set('q', 1, '2 days')$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_set('q', 1, NULL)$$);
SELECT pg_temp.try($$SELECT queue_rate_limit_next(NULL)$$);
SELECT pg_temp.try($$SELECT queue_concurrency_keys('')$$);
-- the trigger functions are the tables' own
SELECT pg_temp.try($$SELECT queue_flow_job_removed()$$);
SELECT pg_temp.queue_checksum() = :'before' AS unchanged;
SELECT queue_clear('bad');
