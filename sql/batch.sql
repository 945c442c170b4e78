--
-- batch: queue_push_many, queue_delete_many, queue_release_many and
-- queue_fail_many (1.1).  Ids come back in input order; every job of a push
-- is checked before anything is written; completion calls are fenced per
-- job by its own token.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/try.sql

-- try_context(stmt): the error context of a failing stmt ('' when it succeeds)
CREATE FUNCTION pg_temp.try_context(stmt text) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    context text;
BEGIN
    EXECUTE stmt;
    RETURN '';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS context = PG_EXCEPTION_CONTEXT;
    RETURN context;
END
$fn$;

\i sql/include/clock.sql
\i sql/include/queued.sql

-- every job ever seen in queue_jobs, so that ids can be shown as names
-- after the jobs are gone
CREATE TEMP TABLE seen (id bigint PRIMARY KEY, name text NOT NULL);
CREATE FUNCTION pg_temp.remember() RETURNS void LANGUAGE sql AS
$$ INSERT INTO seen SELECT id, name FROM queue_jobs ON CONFLICT DO NOTHING $$;
-- names(ids): the names of the jobs ids, in the order given ('?' if unknown)
CREATE FUNCTION pg_temp.names(ids bigint[]) RETURNS text LANGUAGE sql AS
$$ SELECT coalesce(string_agg(coalesce(s.name, '?'), ',' ORDER BY u.n), '(none)')
   FROM unnest(ids) WITH ORDINALITY AS u(id, n) LEFT JOIN seen s ON s.id = u.id $$;

--------------------------------------------------------------------------
-- queue_push_many
--------------------------------------------------------------------------

-- the ids come back in input order, one per job, all distinct and new
SELECT queue_push_many('[{"name": "pm_1"}, {"name": "pm_2"}, {"name": "pm_3"}]') AS ids \gset
SELECT pg_temp.remember();
SELECT cardinality(:'ids'::bigint[]) AS ids,
       (SELECT count(DISTINCT id) FROM unnest(:'ids'::bigint[]) AS u(id)) AS distinct_ids,
       pg_temp.names(:'ids') AS names_in_order;

-- a field left out takes queue_push's default: payload {}, queue 'default',
-- due now, priority 0, no unique key, max_attempts 3, no deadline
SELECT (queue_push_many('[{"name": "pm_defaults"}]'))[1] AS d_id \gset
SELECT name, payload, queue, priority, unique_key IS NULL AS no_key, max_attempts,
       attempts, ready, available_at = created_at AS due_at_push, deadline IS NULL AS no_deadline,
       token IS NULL AS not_held, last_error IS NULL AS no_error
FROM queue_jobs WHERE id = :d_id;

-- a field given as JSON null takes the default too
SELECT (queue_push_many('[{"name": "pm_nulls", "payload": null, "queue": null, "delay": null,
                           "priority": null, "unique_key": null, "max_attempts": null,
                           "deadline": null}]'))[1] AS n_id \gset
SELECT name, payload, queue, priority, unique_key IS NULL AS no_key, max_attempts,
       ready, available_at = created_at AS due_at_push, deadline IS NULL AS no_deadline
FROM queue_jobs WHERE id = :n_id;

-- every field is honoured: payload, queue, delay (interval string), priority,
-- unique_key, max_attempts and deadline
SELECT pg_temp.qnow() + interval '3 hours' AS all_deadline, pg_temp.qnow() AS t0 \gset
SELECT (queue_push_many(jsonb_build_array(jsonb_build_object(
            'name', 'pm_all', 'payload', '{"k": [1, 2], "s": "x"}'::jsonb, 'queue', 'pm_all_q',
            'delay', '5 minutes', 'priority', -7, 'unique_key', 'pm_all_key',
            'max_attempts', 9, 'deadline', :'all_deadline'::timestamptz))))[1] AS all_id \gset
SELECT name, payload, queue, priority, unique_key, max_attempts, attempts,
       ready AS ready_now,
       available_at >= :'t0'::timestamptz + interval '5 minutes' AS at_least_5min,
       available_at <= pg_temp.qnow() + interval '5 minutes' AS at_most_5min,
       deadline = :'all_deadline'::timestamptz AS deadline_kept
FROM queue_jobs WHERE id = :all_id;
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'pm_all_q';

-- delay as a number of seconds (whole and fractional), beside an interval string
SELECT pg_temp.qnow() AS t0 \gset
SELECT queue_push_many('[{"name": "pm_d90", "queue": "pm_delay_q", "delay": 90},
                         {"name": "pm_d1.5", "queue": "pm_delay_q", "delay": 1.5},
                         {"name": "pm_d0", "queue": "pm_delay_q", "delay": 0},
                         {"name": "pm_d2h", "queue": "pm_delay_q", "delay": "2 hours"},
                         {"name": "pm_dzero", "queue": "pm_delay_q", "delay": "0"}]') AS ids \gset
SELECT name, ready AS ready_now,
       available_at - created_at AS delay
FROM queue_jobs WHERE queue = 'pm_delay_q' ORDER BY id;
SELECT bool_and(available_at >= :'t0'::timestamptz + (available_at - created_at)
                AND created_at >= :'t0'::timestamptz
                AND created_at <= pg_temp.qnow()) AS stored_from_queue_clock
FROM queue_jobs WHERE queue = 'pm_delay_q';
SELECT pending, delayed, total FROM queue_stats() WHERE queue = 'pm_delay_q';

-- payloads of every JSON kind are stored as given: arrays, numbers,
-- strings, booleans, nested objects
SELECT queue_push_many('[{"name": "pl_array",  "queue": "pm_payload_q", "payload": [1, {"x": 2}, null]},
                         {"name": "pl_number", "queue": "pm_payload_q", "payload": 12.5},
                         {"name": "pl_string", "queue": "pm_payload_q", "payload": "text"},
                         {"name": "pl_bool",   "queue": "pm_payload_q", "payload": false},
                         {"name": "pl_nested", "queue": "pm_payload_q", "payload": {"a": {"b": [true]}}},
                         {"name": "pl_empty",  "queue": "pm_payload_q", "payload": []}]') AS ids \gset
SELECT pg_temp.remember();
SELECT name, payload, jsonb_typeof(payload) AS kind
FROM unnest(:'ids'::bigint[]) WITH ORDINALITY AS u(id, n) JOIN queue_jobs j USING (id)
ORDER BY u.n;

-- priorities and max_attempts at their limits are accepted
SELECT queue_push_many('[{"name": "pm_lim_hi", "queue": "pm_lim_q", "priority": 2147483647, "max_attempts": 1000000},
                         {"name": "pm_lim_lo", "queue": "pm_lim_q", "priority": -2147483648, "max_attempts": 1},
                         {"name": "pm_lim_whole", "queue": "pm_lim_q", "priority": 5.0}]') AS ids \gset
SELECT name, priority, max_attempts
FROM unnest(:'ids'::bigint[]) WITH ORDINALITY AS u(id, n) JOIN queue_jobs j USING (id)
ORDER BY u.n;
-- the claim order of the batch follows priority
SELECT name FROM queue_reserve('{pm_lim_q}', max_jobs => 3);

-- names at their limits (64-character queue, 200-character name and key) are accepted
SELECT (queue_push_many(jsonb_build_array(jsonb_build_object(
            'name', repeat('ü', 200), 'queue', repeat('é', 64),
            'unique_key', repeat('ß', 200)))))[1] AS long_id \gset
SELECT length(name) AS name_chars, length(queue) AS queue_chars, length(unique_key) AS key_chars
FROM queue_jobs WHERE id = :long_id;

-- unique keys: a key held by an existing job gives the holder's id; a key
-- given twice in one batch gives the first element's id to the second;
-- jobs without a key in the same batch are inserted as usual
SELECT queue_push('uk_existing', queue => 'pm_uk_q', unique_key => 'uk_held') AS held_id \gset
SELECT queue_push_many('[{"name": "uk_first",  "queue": "pm_uk_q", "unique_key": "uk_new"},
                         {"name": "uk_plain",  "queue": "pm_uk_q"},
                         {"name": "uk_second", "queue": "pm_uk_q", "unique_key": "uk_new"},
                         {"name": "uk_dup",    "queue": "pm_uk_q", "unique_key": "uk_held"},
                         {"name": "uk_other",  "queue": "pm_uk_q", "unique_key": "uk_other"}]') AS ids \gset
SELECT pg_temp.remember();
SELECT cardinality(:'ids'::bigint[]) AS ids,
       (:'ids'::bigint[])[1] = (:'ids'::bigint[])[3] AS second_gets_first,
       (:'ids'::bigint[])[4] = :held_id AS dup_gets_holder,
       (:'ids'::bigint[])[2] NOT IN (:held_id, (:'ids'::bigint[])[1], (:'ids'::bigint[])[5]) AS plain_new,
       pg_temp.names(:'ids') AS names_in_order;
-- the holders were not changed, the duplicates not inserted
SELECT name, unique_key FROM queue_jobs WHERE queue = 'pm_uk_q' ORDER BY name;
-- once the holder is completed its key is free again: a new job, a new id
SELECT id AS h_id, token AS h_tok FROM queue_reserve('{pm_uk_q}') \gset
SELECT name AS claimed_name FROM seen WHERE id = :h_id;
SELECT queue_delete(:h_id, :h_tok) AS completed;
SELECT (queue_push_many('[{"name": "uk_again", "queue": "pm_uk_q", "unique_key": "uk_held"}]'))[1] <> :held_id
       AS new_holder;

-- an empty array: nothing pushed, an empty array back
SELECT count(*) AS jobs_before FROM queue_jobs \gset
SELECT queue_push_many('[]') AS empty_result, cardinality(queue_push_many('[]')) AS n;
SELECT count(*) - :jobs_before AS jobs_added FROM queue_jobs;

--------------------------------------------------------------------------
-- queue_push_many: bad input (every call undone by try())
--------------------------------------------------------------------------

-- the argument: NULL is 22004; not a JSON array (object, scalar, string) is 22023
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many(NULL)$$,
    $$SELECT queue_push_many('{"name": "x"}')$$,
    $$SELECT queue_push_many('5')$$,
    $$SELECT queue_push_many('"[]"')$$,
    $$SELECT queue_push_many('null')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- elements: not an object (22023), name missing or null (22004), unknown
-- field (22023, also for a key differing only in case)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[5]')$$,
    $$SELECT queue_push_many('[{"name": "ok"}, "job"]')$$,
    $$SELECT queue_push_many('[{"name": "ok"}, [{"name": "nested"}]]')$$,
    $$SELECT queue_push_many('[null]')$$,
    $$SELECT queue_push_many('[{}]')$$,
    $$SELECT queue_push_many('[{"payload": {}}]')$$,
    $$SELECT queue_push_many('[{"name": null}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "prio": 1}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "Name": "y"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "token": 1}]')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- wrong JSON types: 22023 naming the field
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[{"name": 1}]')$$,
    $$SELECT queue_push_many('[{"name": ["x"]}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "queue": true}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": true}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": {"minutes": 5}}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "priority": "5"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "priority": 1.5}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "unique_key": 7}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": "3"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": 2.5}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "deadline": 5}]')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- values queue_push rejects: empty names (22023), negative delays (22023),
-- integers out of range (22023), names too long (54000), a payload over
-- 1 MiB (54000), a deadline not later than the moment the job becomes due (22023)
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[{"name": ""}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "queue": ""}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "unique_key": ""}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": -1}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": "-5 minutes"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "priority": 2147483648}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "priority": -2147483649}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": 0}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": 1000001}]')$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', repeat('n', 201))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', repeat('ü', 201))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'queue', repeat('q', 65))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'unique_key', repeat('k', 201))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'payload', repeat('x', 1048577))))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'deadline', clock_timestamp() - interval '1 minute')))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'delay', '2 hours', 'deadline', clock_timestamp() + interval '1 hour')))$$,
    $$SELECT queue_push_many(jsonb_build_array(jsonb_build_object('name', 'x', 'delay', 7200, 'deadline', clock_timestamp() + interval '1 hour')))$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- values that cannot be read are bad values too (22023 naming the field):
-- integers far out of range, delays and deadlines that are no interval or
-- timestamp, a number of seconds beyond any interval
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[{"name": "x", "priority": 1e20}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": 99999999999999999999}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": "5 minuts"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "delay": 1e400}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "deadline": "next tuesday"}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "deadline": "infinity"}]')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- a number that is not whole is refused even when it is very close to a
-- whole one (JSON numbers are exact; SQLSTATE only, the wording is free)
SELECT n, call, left(pg_temp.try(call), 5) AS sqlstate
FROM unnest(ARRAY[
    $$SELECT queue_push_many('[{"name": "x", "priority": 1.00000000000000001}]')$$,
    $$SELECT queue_push_many('[{"name": "x", "max_attempts": 2.000000000000000001}]')$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- the error names the element it comes from (context, hidden by VERBOSITY terse)
SELECT position('in element 3 of the jobs array' IN
                pg_temp.try_context($$SELECT queue_push_many('[{"name": "a"}, {"name": "b"}, {"name": ""}]')$$)) > 0
       AS names_element_3;

-- more than 10000 jobs in one call: 54000; exactly 10000 are accepted
SELECT pg_temp.try($$SELECT queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'big', 'queue', 'pm_big_q'))
                                             FROM generate_series(1, 10001)))$$) AS over_limit;
SELECT cardinality(queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'big', 'queue', 'pm_big_q'))
                                    FROM generate_series(1, 10000)))) AS at_limit;
SELECT count(*) AS big_jobs FROM queue_jobs WHERE queue = 'pm_big_q';
DELETE FROM queue_jobs WHERE queue = 'pm_big_q';

-- a failed batch writes NOTHING, not even its valid first elements (with
-- and without unique keys): the row count is unchanged, and not a single
-- id was drawn from the identity sequence (the next push gets the next id)
SELECT count(*) AS jobs_before FROM queue_jobs \gset
SELECT queue_push('pm_before', queue => 'pm_atomic_q') AS before_id \gset
SELECT queue_push_many('[{"name": "pm_valid_1", "queue": "pm_atomic_q"},
                         {"name": "pm_valid_2", "queue": "pm_atomic_q", "unique_key": "pm_atomic_key"},
                         {"name": "pm_valid_3", "queue": "pm_atomic_q", "delay": 60},
                         {"name": "pm_bad",     "queue": "pm_atomic_q", "max_attempts": 0}]');
SELECT pg_temp.try($$SELECT queue_push_many('[{"name": "pm_valid_4", "queue": "pm_atomic_q"},
                                               {"name": "pm_valid_5", "queue": "pm_atomic_q", "unique_key": "pm_atomic_key"},
                                               {"name": "pm_bad",     "queue": "pm_atomic_q", "colour": "red"}]')$$) AS caught;
SELECT queue_push('pm_after', queue => 'pm_atomic_q') AS after_id \gset
SELECT :after_id = :before_id + 1 AS no_id_drawn,
       count(*) - :jobs_before AS jobs_added,
       count(*) FILTER (WHERE name LIKE 'pm_valid%' OR name = 'pm_bad') AS batch_rows,
       count(*) FILTER (WHERE unique_key = 'pm_atomic_key') AS key_rows
FROM queue_jobs;

--------------------------------------------------------------------------
-- queue_delete_many
--------------------------------------------------------------------------
TRUNCATE queue_jobs, queue_failed_jobs;

-- fixtures: five jobs claimed in one call
SELECT cardinality(queue_push_many('[{"name": "dm_a", "queue": "dm_q", "priority": 5},
                                     {"name": "dm_b", "queue": "dm_q", "priority": 4},
                                     {"name": "dm_c", "queue": "dm_q", "priority": 3},
                                     {"name": "dm_d", "queue": "dm_q", "priority": 2},
                                     {"name": "dm_e", "queue": "dm_q", "priority": 1}]')) AS pushed;
SELECT pg_temp.remember();
CREATE TEMP TABLE dm AS SELECT name, id, token FROM queue_reserve('{dm_q}', max_jobs => 5);
SELECT string_agg(name, ',' ORDER BY name) AS claimed FROM dm;
SELECT id AS a_id, token AS a_tok FROM dm WHERE name = 'dm_a' \gset
SELECT id AS b_id, token AS b_tok FROM dm WHERE name = 'dm_b' \gset
SELECT id AS c_id, token AS c_tok FROM dm WHERE name = 'dm_c' \gset
SELECT id AS d_id, token AS d_tok FROM dm WHERE name = 'dm_d' \gset
SELECT id AS e_id, token AS e_tok FROM dm WHERE name = 'dm_e' \gset

-- only the matching pairs are completed, and their ids come back in input
-- order; a wrong token (another job's), an unknown id are left alone
SELECT pg_temp.names(queue_delete_many(ARRAY[:c_id, :b_id, :a_id, -1],
                                       ARRAY[:c_tok, :a_tok, :a_tok, :a_tok])) AS completed;
SELECT string_agg(name, ',' ORDER BY name) AS left_in_queue FROM queue_jobs WHERE queue = 'dm_q';

-- a stale token (the claim was released and the job claimed again) is left
-- alone: the row is still there; the current token completes it
SELECT queue_release(:b_id, :b_tok, '0') AS released;
SELECT id = :b_id AS same_job, token <> :b_tok AS new_token FROM queue_reserve('{dm_q}') \gset
SELECT :'same_job' AS same_job, :'new_token' AS new_token;
SELECT token AS b_tok2 FROM queue_jobs WHERE id = :b_id \gset
SELECT cardinality(queue_delete_many(ARRAY[:b_id], ARRAY[:b_tok])) AS completed_with_stale;
SELECT count(*) AS b_still_there FROM queue_jobs WHERE id = :b_id;
SELECT pg_temp.names(queue_delete_many(ARRAY[:b_id], ARRAY[:b_tok2])) AS completed_with_current;

-- a job whose lease ran out but that nobody claimed since: its token still completes it
SET jobqueue.clock_offset = '2 minutes';
SELECT pg_temp.names(queue_delete_many(ARRAY[:e_id], ARRAY[:e_tok])) AS completed_after_lease;
RESET jobqueue.clock_offset;

-- an id given twice completes once (and is listed once)
SELECT pg_temp.names(queue_delete_many(ARRAY[:d_id, :d_id], ARRAY[:d_tok, :d_tok])) AS completed_twice_given;
SELECT count(*) AS dm_left FROM queue_jobs WHERE queue = 'dm_q';

-- a job not held by anybody (pending) matches no token
SELECT queue_push('dm_pending', queue => 'dm_q') AS p_id \gset
SELECT cardinality(queue_delete_many(ARRAY[:p_id], ARRAY[:a_tok])) AS completed_pending,
       (SELECT count(*) FROM queue_jobs WHERE id = :p_id) AS still_there;

-- the same id twice with a wrong token first and the right one second: completed once
SELECT id AS p_id, token AS p_tok FROM queue_reserve('{dm_q}') \gset
SELECT pg_temp.remember();
SELECT pg_temp.names(queue_delete_many(ARRAY[:p_id, :p_id], ARRAY[:p_tok + 1000, :p_tok])) AS completed;

-- empty arrays: nothing to do, an empty array back
SELECT queue_delete_many('{}', '{}') AS empty_result;

-- bad input: NULL arrays 22004; mismatched lengths, NULL elements and
-- multi-dimensional arrays 22023; more than 10000 pairs 54000
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_delete_many(NULL, '{1}')$$,
    $$SELECT queue_delete_many('{1}', NULL)$$,
    $$SELECT queue_delete_many('{1,2}', '{1}')$$,
    $$SELECT queue_delete_many('{}', '{1}')$$,
    $$SELECT queue_delete_many('{1,NULL}', '{1,2}')$$,
    $$SELECT queue_delete_many('{1,2}', '{NULL,2}')$$,
    $$SELECT queue_delete_many('{{1,2},{3,4}}', '{{1,2},{3,4}}')$$,
    $$SELECT queue_delete_many(array_agg(i), array_agg(i)) FROM generate_series(1, 10001) i$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

-- a failed call changes nothing: a claimed job stays claimed after a batch
-- that names it with its right token beside a NULL element
SELECT pg_temp.queued(queue_push('dm_keep', queue => 'dm_keep_q')) AS pushed;
SELECT id AS k_id, token AS k_tok FROM queue_reserve('{dm_keep_q}') \gset
SELECT queue_delete_many(ARRAY[:k_id, NULL], ARRAY[:k_tok, 1]);
SELECT count(*) AS still_claimed FROM queue_jobs WHERE id = :k_id AND token = :k_tok;

-- a batch of 1000 claimed with max_jobs => 1000 is completed in one call
SELECT cardinality(queue_push_many((SELECT jsonb_agg(jsonb_build_object('name', 'k' || i, 'queue', 'dm_1000_q'))
                                    FROM generate_series(1, 1000) i))) AS pushed;
CREATE TEMP TABLE dm1000 AS SELECT id, token FROM queue_reserve('{dm_1000_q}', max_jobs => 1000);
SELECT count(*) AS claimed FROM dm1000;
SELECT cardinality(done) AS completed,
       done = (SELECT array_agg(id ORDER BY id DESC) FROM dm1000) AS input_order
FROM (SELECT queue_delete_many(array_agg(id ORDER BY id DESC), array_agg(token ORDER BY id DESC)) AS done
      FROM dm1000) d;
SELECT count(*) AS left_in_queue FROM queue_jobs WHERE queue = 'dm_1000_q';
SELECT queue_failed_count() AS failed_rows;

-- the jobs are deleted without the executor (1.6, store/direct_delete.c);
-- a keyed job among them hands its key's slot to the job waiting for it, as
-- the flow trigger does after the statement; a trigger of the user's on
-- DELETE makes every job take the statements, and fires for each
SELECT queue_push('dm_key_1', queue => 'dm_key_q', concurrency_key => 'k') AS key1 \gset
SELECT queue_push('dm_key_2', queue => 'dm_key_q', concurrency_key => 'k') AS key2 \gset
SELECT queue_push('dm_plain', queue => 'dm_key_q') AS plain1 \gset
CREATE TEMP TABLE dmk AS SELECT id, token, name FROM queue_reserve('{dm_key_q}', max_jobs => 10);
SELECT name FROM dmk ORDER BY name;
SELECT cardinality(queue_delete_many(ARRAY(SELECT id FROM dmk ORDER BY name),
                                     ARRAY(SELECT token FROM dmk ORDER BY name))) AS completed;
SELECT name FROM queue_reserve('{dm_key_q}', max_jobs => 10) AS slot_handed_over;
CREATE TABLE pg_temp.dm_deleted (name text);
CREATE FUNCTION pg_temp.dm_log() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO pg_temp.dm_deleted VALUES (OLD.name); RETURN OLD; END$$;
CREATE TRIGGER regress_jq_dm_log AFTER DELETE ON queue_jobs
    FOR EACH ROW EXECUTE FUNCTION pg_temp.dm_log();
SELECT cardinality(queue_push_many('[{"name": "dm_t1", "queue": "dm_trig_q"}, {"name": "dm_t2", "queue": "dm_trig_q"}]')) AS pushed;
CREATE TEMP TABLE dmt AS SELECT id, token FROM queue_reserve('{dm_trig_q}', max_jobs => 10);
SELECT cardinality(queue_delete_many(ARRAY(SELECT id FROM dmt), ARRAY(SELECT token FROM dmt))) AS completed;
DROP TRIGGER regress_jq_dm_log ON queue_jobs;
SELECT name FROM pg_temp.dm_deleted ORDER BY name;

--------------------------------------------------------------------------
-- queue_release_many
--------------------------------------------------------------------------
TRUNCATE queue_jobs, queue_failed_jobs;

-- fixtures: four jobs claimed in one call (rm_x has a single attempt)
SELECT cardinality(queue_push_many('[{"name": "rm_a", "queue": "rm_q", "priority": 4},
                                     {"name": "rm_b", "queue": "rm_q", "priority": 3},
                                     {"name": "rm_c", "queue": "rm_q", "priority": 2},
                                     {"name": "rm_x", "queue": "rm_q", "priority": 1, "max_attempts": 1}]')) AS pushed;
SELECT pg_temp.remember();
CREATE TEMP TABLE rm AS SELECT name, id, token FROM queue_reserve('{rm_q}', worker => 'w', max_jobs => 4);
SELECT string_agg(name, ',' ORDER BY name) AS claimed FROM rm;
SELECT id AS a_id, token AS a_tok FROM rm WHERE name = 'rm_a' \gset
SELECT id AS b_id, token AS b_tok FROM rm WHERE name = 'rm_b' \gset
SELECT id AS c_id, token AS c_tok FROM rm WHERE name = 'rm_c' \gset
SELECT id AS x_id, token AS x_tok FROM rm WHERE name = 'rm_x' \gset

-- release with delay 0: the matching pairs come back in input order, a
-- wrong token is left alone; released jobs are claimable at once, attempts
-- kept, the error recorded, the claim cleared
SELECT pg_temp.names(queue_release_many(ARRAY[:c_id, :b_id, :a_id], ARRAY[:c_tok, :c_tok, :a_tok],
                                        '0', 'try again')) AS released;
SELECT name, attempts, last_error, ready, token IS NULL AS no_token,
       reserved_until IS NULL AS no_lease, reserved_by IS NULL AS no_worker,
       available_at <= pg_temp.qnow() AS due_now
FROM queue_jobs WHERE queue = 'rm_q' ORDER BY name;
SELECT queue_pending('rm_q') AS pending;
-- the old tokens of the released jobs are dead
SELECT cardinality(queue_release_many(ARRAY[:a_id, :c_id], ARRAY[:a_tok, :c_tok], '0')) AS released_again;
-- ... and the released jobs are handed out again, attempt 2
SELECT name, attempts, last_error FROM queue_reserve('{rm_q}', max_jobs => 2);

-- release of a job with no attempts left fails it, and counts as released
SELECT pg_temp.names(queue_release_many(ARRAY[:x_id, :b_id], ARRAY[:x_tok, :b_tok], '0', 'gave up'))
       AS released;
SELECT name, attempts, max_attempts, error FROM queue_failed_jobs WHERE id = :x_id;
SELECT count(*) AS x_in_queue FROM queue_jobs WHERE id = :x_id;
-- with an empty error it says why
SELECT queue_push('rm_y', queue => 'rm_y_q', max_attempts => 1) AS y_id \gset
SELECT pg_temp.remember();
SELECT id AS y_id, token AS y_tok FROM queue_reserve('{rm_y_q}') \gset
SELECT pg_temp.names(queue_release_many(ARRAY[:y_id], ARRAY[:y_tok])) AS released;
SELECT error FROM queue_failed_jobs WHERE id = :y_id;

-- release with a delay: delayed for that long, not claimable meanwhile
SELECT id AS a2_id, token AS a2_tok FROM queue_jobs WHERE name = 'rm_a' \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT pg_temp.names(queue_release_many(ARRAY[:a2_id], ARRAY[:a2_tok], '10 minutes')) AS released;
SELECT ready, last_error = '' AS error_empty,
       available_at >= :'t0'::timestamptz + interval '10 minutes' AS at_least_10min,
       available_at <= pg_temp.qnow() + interval '10 minutes' AS at_most_10min
FROM queue_jobs WHERE id = :a2_id;

-- release with NULL delay: backoff after attempt 2, between 10 and 20 seconds
SELECT id AS c2_id, token AS c2_tok, attempts AS c2_attempts FROM queue_jobs WHERE name = 'rm_c' \gset
SELECT pg_temp.qnow() AS t0 \gset
SELECT pg_temp.names(queue_release_many(ARRAY[:c2_id], ARRAY[:c2_tok], NULL, NULL)) AS released;
SELECT :c2_attempts AS attempts, last_error = '' AS error_empty,
       available_at >= :'t0'::timestamptz + interval '10 seconds' AS at_least_10s,
       available_at <= pg_temp.qnow() + interval '20 seconds' AS at_most_20s
FROM queue_jobs WHERE id = :c2_id;
SELECT pending, delayed, reserved, total FROM queue_stats() WHERE queue = 'rm_q';

-- an id given twice is released once
SELECT pg_temp.queued(queue_push('rm_twice', queue => 'rm_t_q')) AS pushed;
SELECT pg_temp.remember();
SELECT id AS t_id, token AS t_tok FROM queue_reserve('{rm_t_q}') \gset
SELECT pg_temp.names(queue_release_many(ARRAY[:t_id, :t_id], ARRAY[:t_tok, :t_tok], '0')) AS released;
SELECT attempts, ready FROM queue_jobs WHERE id = :t_id;
-- ... and so is one named by a stale pair first, then by its current one
SELECT id AS t_id, token AS t_tok FROM queue_reserve('{rm_t_q}') \gset
SELECT pg_temp.names(queue_release_many(ARRAY[:t_id, :t_id], ARRAY[0, :t_tok], '0')) AS released;
SELECT attempts, ready, token IS NULL AS no_token FROM queue_jobs WHERE id = :t_id;

-- empty arrays: an empty array back
SELECT queue_release_many('{}', '{}') AS empty_result;

-- bad input: NULL arrays 22004; mismatched lengths, NULL elements, a
-- negative delay 22023; more than 10000 pairs 54000
SELECT id AS t_id, token AS t_tok FROM queue_reserve('{rm_t_q}') \gset
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_release_many(NULL, '{1}')$$,
    $$SELECT queue_release_many('{1}', NULL)$$,
    $$SELECT queue_release_many('{1,2}', '{1}')$$,
    $$SELECT queue_release_many('{NULL}', '{1}')$$,
    $$SELECT queue_release_many('{1}', '{NULL}')$$,
    $$SELECT queue_release_many(ARRAY[id], ARRAY[token], '-1 second') FROM queue_jobs WHERE queue = 'rm_t_q'$$,
    $$SELECT queue_release_many(array_agg(i), array_agg(i)) FROM generate_series(1, 10001) i$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;
-- the failed calls left the claim alone
SELECT count(*) AS still_claimed FROM queue_jobs WHERE id = :t_id AND token = :t_tok;

--------------------------------------------------------------------------
-- queue_fail_many
--------------------------------------------------------------------------
TRUNCATE queue_jobs, queue_failed_jobs;

-- fixtures: three jobs claimed in one call; fm_c carries an earlier error
SELECT cardinality(queue_push_many('[{"name": "fm_a", "queue": "fm_q", "priority": 3, "payload": {"n": 1}},
                                     {"name": "fm_b", "queue": "fm_q", "priority": 2},
                                     {"name": "fm_c", "queue": "fm_q", "priority": 1}]')) AS pushed;
SELECT pg_temp.remember();
CREATE TEMP TABLE fm AS SELECT name, id, token FROM queue_reserve('{fm_q}', max_jobs => 3);
SELECT id AS a_id, token AS a_tok FROM fm WHERE name = 'fm_a' \gset
SELECT id AS b_id, token AS b_tok FROM fm WHERE name = 'fm_b' \gset
SELECT id AS c_id, token AS c_tok FROM fm WHERE name = 'fm_c' \gset

-- the matching pairs move to the failed table with the error, ids in input
-- order; a wrong token is left alone (still in queue_jobs)
SELECT pg_temp.names(queue_fail_many(ARRAY[:b_id, :a_id, :c_id], ARRAY[:b_tok, :a_tok, :a_tok], 'boom'))
       AS failed;
SELECT name, job_id = id AS keyed_by_job_id, error, attempts, payload
FROM queue_failed_jobs ORDER BY name;
SELECT name, token = :c_tok AS still_claimed FROM queue_jobs WHERE queue = 'fm_q';
-- the failed jobs are gone from queue_jobs and their tokens are dead
SELECT cardinality(queue_fail_many(ARRAY[:a_id, :b_id], ARRAY[:a_tok, :b_tok], 'again')) AS failed_again;
SELECT count(*) AS failed_rows FROM queue_failed_jobs;

-- an empty error stores the job's last error, or says none was given
SELECT queue_release(:c_id, :c_tok, '0', 'earlier trouble') AS released;
SELECT id AS c_id, token AS c_tok FROM queue_reserve('{fm_q}') \gset
SELECT pg_temp.queued(queue_push('fm_d', queue => 'fm_q')) AS pushed;
SELECT pg_temp.remember();
SELECT id AS d_id, token AS d_tok FROM queue_reserve('{fm_q}') \gset
SELECT pg_temp.names(queue_fail_many(ARRAY[:c_id, :d_id], ARRAY[:c_tok, :d_tok])) AS failed;
SELECT name, error FROM queue_failed_jobs WHERE id IN (:c_id, :d_id) ORDER BY name;

-- an id given twice is failed once
SELECT pg_temp.queued(queue_push('fm_e', queue => 'fm_q')) AS pushed;
SELECT pg_temp.remember();
SELECT id AS e_id, token AS e_tok FROM queue_reserve('{fm_q}') \gset
SELECT pg_temp.names(queue_fail_many(ARRAY[:e_id, :e_id], ARRAY[:e_tok, :e_tok], NULL)) AS failed;
SELECT count(*) AS e_failed_rows FROM queue_failed_jobs WHERE id = :e_id;
-- ... and so is one named by a stale pair first, then by its current one,
-- in a batch whose other job comes first in the order given
SELECT pg_temp.queued(queue_push('fm_f', queue => 'fm_q')) AS pushed;
SELECT pg_temp.queued(queue_push('fm_g', queue => 'fm_q')) AS pushed;
SELECT pg_temp.remember();
CREATE TEMP TABLE fm_fg AS SELECT name, id, token FROM queue_reserve('{fm_q}', max_jobs => 2);
SELECT id AS f_id, token AS f_tok FROM fm_fg WHERE name = 'fm_f' \gset
SELECT id AS g_id, token AS g_tok FROM fm_fg WHERE name = 'fm_g' \gset
SELECT pg_temp.names(queue_fail_many(ARRAY[:g_id, :f_id, :f_id], ARRAY[:g_tok, 0, :f_tok], 'x'))
       AS failed;
SELECT name, count(*) AS failed_rows FROM queue_failed_jobs WHERE id IN (:f_id, :g_id)
GROUP BY name ORDER BY name;

-- empty arrays: an empty array back
SELECT queue_fail_many('{}', '{}') AS empty_result;

-- bad input: NULL arrays 22004; mismatched lengths, NULL elements 22023;
-- more than 10000 pairs 54000
SELECT n, call, pg_temp.try(call) AS outcome
FROM unnest(ARRAY[
    $$SELECT queue_fail_many(NULL, '{1}')$$,
    $$SELECT queue_fail_many('{1}', NULL)$$,
    $$SELECT queue_fail_many('{1}', '{1,2}')$$,
    $$SELECT queue_fail_many('{NULL}', '{1}')$$,
    $$SELECT queue_fail_many('{1}', '{NULL}')$$,
    $$SELECT queue_fail_many(array_agg(i), array_agg(i)) FROM generate_series(1, 10001) i$$
]) WITH ORDINALITY AS t(call, n) ORDER BY n;

TRUNCATE queue_jobs, queue_failed_jobs;
