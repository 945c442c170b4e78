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
