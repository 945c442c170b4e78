--
-- ring: the storage ring (1.3).  queue_jobs is partitioned; a rotation
-- moves the live jobs of a ring partition forward, unchanged, and empties
-- it with TRUNCATE.  Which ring partition takes new jobs depends on the
-- clock (queue_current_ring()), so the jobs are placed by hand here
-- (UPDATE ... SET ring, a plain column) and every rotation names its
-- partition.  Concurrency (rotation racing claims, completions and pushes)
-- is in the isolation specs.
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

\i sql/include/try.sql

--------------------------------------------------------------------------
-- the layout
--------------------------------------------------------------------------

SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'queue_jobs'::regclass ORDER BY c.relname;
SELECT pg_get_partkeydef('queue_jobs'::regclass) AS partition_key;
SELECT queue_current_ring() IN (0, 1) AS current_ring_is_0_or_1;

--------------------------------------------------------------------------
-- queue_rotate's argument
--------------------------------------------------------------------------

SELECT pg_temp.try($$SELECT * FROM queue_rotate(2)$$) AS ring_2;
SELECT pg_temp.try($$SELECT * FROM queue_rotate(-1)$$) AS ring_minus_1;

-- an empty partition: nothing to do, and nothing written (no TRUNCATE: same relfilenode)
TRUNCATE queue_jobs;
SELECT pg_relation_filenode('queue_jobs_ring0') AS empty_node \gset
SELECT * FROM queue_rotate(0);
SELECT pg_relation_filenode('queue_jobs_ring0') = :empty_node AS empty_not_truncated;

--------------------------------------------------------------------------
-- a rotation moves every live job, unchanged, to long, and empties the partition
--------------------------------------------------------------------------

SELECT queue_push('pending', queue => 'rq', priority => 5) AS pending_id \gset
SELECT queue_push('soon', queue => 'rq', delay => '2 seconds') AS soon_id \gset
SELECT queue_push('later', queue => 'rq', delay => '1 hour') AS later_id \gset
SELECT queue_push('held', queue => 'rq', priority => 9) AS held_id \gset
SELECT id AS claimed_id, token AS held_token FROM queue_reserve('{rq}', lease => '10 minutes') \gset
SELECT :claimed_id = :held_id AS claimed_the_held_one;
-- a finished job leaves a dead row behind
SELECT queue_push('done', queue => 'rq') AS done_id \gset
DELETE FROM queue_jobs WHERE id = :done_id;
UPDATE queue_jobs SET ring = 0 WHERE queue = 'rq';

CREATE TEMP TABLE before_rotation AS
SELECT id, queue, name, payload, attempts, max_attempts, priority, available_at,
       reserved_until, reserved_by, token, ready, created_at
FROM queue_jobs WHERE queue = 'rq';

SELECT * FROM queue_rotate(0);

-- ring 0 is empty and has no pages left, dead rows included
SELECT count(*) AS in_ring0, pg_relation_size('queue_jobs_ring0') AS ring0_bytes
FROM queue_jobs_ring0;
-- every live job went to long, held or pending, due soon or later: moved once, it stays there
SELECT name, tableoid::regclass AS partition FROM queue_jobs WHERE queue = 'rq' ORDER BY name;
-- every column but ring is what it was
SELECT count(*) AS unchanged_rows FROM before_rotation b JOIN queue_jobs j ON j.id = b.id
WHERE (b.queue, b.name, b.payload, b.attempts, b.max_attempts, b.priority, b.available_at,
       b.reserved_until, b.reserved_by, b.token, b.ready, b.created_at)
      IS NOT DISTINCT FROM
      (j.queue, j.name, j.payload, j.attempts, j.max_attempts, j.priority, j.available_at,
       j.reserved_until, j.reserved_by, j.token, j.ready, j.created_at);

-- the held job completes with its token; the pending one is claimed next
SELECT queue_extend(:held_id, :held_token, '5 minutes') AS extended;
SELECT queue_delete(:held_id, :held_token) AS deleted;
SELECT name FROM queue_reserve('{rq}');
SELECT queue_cancel(:later_id) AS cancelled_from_long;
-- nothing moves back: ring 1 has nothing live (truncated, moving nothing, or empty when the
-- clock put no push in it), ring 0 no pages (nothing to do, no TRUNCATE); the jobs stay in long
SELECT rotated, moved, outcome IN ('truncated', 'empty') AS nothing_kept FROM queue_rotate(1);
SELECT rotated, moved, truncated, outcome FROM queue_rotate(0);
SELECT name, tableoid::regclass AS partition FROM queue_jobs WHERE queue = 'rq' ORDER BY name;

--------------------------------------------------------------------------
-- a 1.5 database as the 1.5 library left it: live jobs of every state in
-- both ring partitions (it moved them from one to the other).  The new
-- library needs no ALTER EXTENSION: the first rotation of each partition
-- moves its live jobs to long, once, unchanged, and each keeps working
--------------------------------------------------------------------------

TRUNCATE queue_jobs, queue_failed_jobs;
SELECT queue_push('pending', queue => 'uq15') AS u_pending \gset
SELECT queue_push('delayed', queue => 'uq15', delay => '1 hour') AS u_delayed \gset
SELECT queue_push('deadline', queue => 'uq15', deadline => now() + interval '1 hour') AS u_deadline \gset
SELECT queue_push('held', queue => 'uq15h') AS u_held \gset
SELECT id AS u_held_id, token AS u_held_token FROM queue_reserve('{uq15h}', lease => '10 minutes') \gset
SELECT queue_push('key holder', queue => 'uq15k', concurrency_key => 'k') AS u_key_holder \gset
SELECT queue_push('key waiter', queue => 'uq15k', concurrency_key => 'k') AS u_key_waiter \gset
SELECT queue_push('parent', queue => 'uq15p') AS u_parent \gset
SELECT queue_push('child', queue => 'uq15p', after => ARRAY[:u_parent]::bigint[]) AS u_child \gset
SELECT queue_push('paused', queue => 'uq15z') AS u_paused \gset
SELECT queue_pause('uq15z');
-- placed by hand, with the flow trigger off: an UPDATE that moves a row to
-- another partition deletes it from the first one, which would look to
-- the trigger like the key holder and the parent finishing
SET session_replication_role = replica;
UPDATE queue_jobs SET ring = CASE WHEN id % 2 = 0 THEN 0 ELSE 1 END WHERE unique_key IS NULL;
RESET session_replication_role;
SELECT count(*) FILTER (WHERE ring = 0) > 0 AND count(*) FILTER (WHERE ring = 1) > 0 AS in_both_rings
FROM queue_jobs;

CREATE TEMP TABLE before_upgrade AS SELECT * FROM queue_jobs;
SELECT rotated, outcome FROM queue_rotate(0);
SELECT rotated, outcome FROM queue_rotate(1);
-- all in long, every column but ring as it was
SELECT count(*) AS moved_to_long FROM queue_jobs_long;
SELECT count(*) AS unchanged_but_ring
FROM before_upgrade b JOIN queue_jobs j ON j.id = b.id
WHERE (to_jsonb(b) - 'ring') = (to_jsonb(j) - 'ring') AND j.ring = -1;
-- each state still works: the held job completes with its token; the
-- pending and deadline jobs are claimed, the delayed one is not; the key's
-- waiter gets the slot its holder gives up; the child runs after its
-- parent; the paused queue gives nothing until resumed
SELECT queue_delete(:u_held_id, :u_held_token) AS held_completed;
SELECT name FROM queue_reserve('{uq15}', max_jobs => 10) ORDER BY name;
SELECT id AS u_kh, token AS u_kh_token FROM queue_reserve('{uq15k}') \gset
SELECT :u_kh = :u_key_holder AS holder_claimed, count(*) AS waiter_not_claimable
FROM queue_reserve('{uq15k}');
SELECT queue_delete(:u_kh, :u_kh_token) AS holder_completed;
SELECT name FROM queue_reserve('{uq15k}');
SELECT id AS u_p, token AS u_p_token FROM queue_reserve('{uq15p}') \gset
SELECT :u_p = :u_parent AS parent_first, count(*) AS child_not_yet FROM queue_reserve('{uq15p}');
SELECT queue_delete(:u_p, :u_p_token) AS parent_completed;
SELECT name FROM queue_reserve('{uq15p}');
SELECT count(*) AS from_paused FROM queue_reserve('{uq15z}');
SELECT queue_resume('uq15z');
SELECT name FROM queue_reserve('{uq15z}');
TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;

--------------------------------------------------------------------------
-- unique keys live in the long partition
--------------------------------------------------------------------------

SELECT queue_push('keyed', queue => 'uq', unique_key => 'ring-key') AS keyed_id \gset
SELECT queue_push('keyed again', queue => 'uq', unique_key => 'ring-key') = :keyed_id AS same_holder;
SELECT tableoid::regclass AS partition FROM queue_jobs WHERE id = :keyed_id;
-- also when inserted into queue_jobs by hand (a restore of an older dump does)
INSERT INTO queue_jobs (queue, name, available_at, created_at, unique_key, ring)
VALUES ('uq', 'by hand', now(), now(), 'hand-key', 0);
SELECT tableoid::regclass AS partition, ring FROM queue_jobs WHERE unique_key = 'hand-key';
SELECT pg_temp.try($$INSERT INTO queue_jobs (queue, name, available_at, created_at, unique_key)
                    VALUES ('uq', 'dup', now(), now(), 'ring-key')$$) AS duplicate_key;

--------------------------------------------------------------------------
-- a rotation inside a transaction that holds the partition's rows: still
-- its own; a release in the same transaction sees the moved job
--------------------------------------------------------------------------

TRUNCATE queue_jobs;
SELECT queue_push('mine', queue => 'tq') AS mine_id \gset
SELECT id AS mine_id, token AS mine_token FROM queue_reserve('{tq}') \gset
UPDATE queue_jobs SET ring = 1 WHERE id = :mine_id;
BEGIN;
SELECT rotated, moved, outcome FROM queue_rotate(1);
SELECT queue_release(:mine_id, :mine_token, '0') AS released;
COMMIT;
SELECT name, attempts, ready, tableoid::regclass AS partition FROM queue_jobs WHERE id = :mine_id;

TRUNCATE queue_jobs, queue_failed_jobs, queue_settings;
