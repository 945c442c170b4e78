--
-- shard: the id scheme of a database that is one shard of several (1.5):
-- queue_shard_setup, queue_shard, queue_job_shard, and their tiers.
-- (The router, jobqueue_router, is tested by tests/shards on three servers.)
--
\set VERBOSITY terse
TRUNCATE queue_jobs, queue_failed_jobs;

\i sql/include/try.sql
\i sql/include/allowed.sql

-- a database is shard 0 until set up otherwise
SELECT queue_shard() AS shard;

-- bad arguments: NULL, out of range
SELECT pg_temp.try('SELECT queue_shard_setup(NULL)');
SELECT pg_temp.try('SELECT queue_shard_setup(-1)');
SELECT pg_temp.try('SELECT queue_shard_setup(32768)');
SELECT pg_temp.try('SELECT queue_job_shard(NULL)');
SELECT pg_temp.try('SELECT queue_job_shard(0)');

-- queue_job_shard is the id's bits from 48 up
SELECT queue_job_shard(1) AS s0, queue_job_shard((1::bigint << 48) - 1) AS still_s0,
       queue_job_shard(1::bigint << 48) AS s1, queue_job_shard((5::bigint << 48) | 7) AS s5;

-- an empty database becomes shard 3: its ids start at 3 << 48
SELECT queue_shard_setup(3) = 3::bigint << 48 AS next_is_first_of_range;
SELECT queue_shard() AS shard;
SELECT queue_push('a', queue => 'sq') AS a_id \gset
SELECT :a_id = 3::bigint << 48 AS first_id, queue_job_shard(:a_id) AS job_shard;
SELECT min_value = 3::bigint << 48 AS min_ok, max_value = (4::bigint << 48) - 1 AS max_ok
FROM pg_sequences WHERE sequencename = 'queue_jobs_id_seq';

-- failed rows keep their job's id, so they name the shard too
SELECT id AS r_id, token AS r_tok FROM queue_reserve('{sq}') \gset
SELECT queue_fail(:r_id, :r_tok, 'broken') AS failed;
SELECT queue_job_shard(id) AS failed_row_shard, id = job_id AS same_id FROM queue_failed_rows();

-- another number while jobs of this range exist: refused, nothing changed
SELECT queue_push('b', queue => 'sq') AS b_id \gset
SELECT pg_temp.try('SELECT queue_shard_setup(2)');
SELECT pg_temp.try('SELECT queue_shard_setup(0)');
SELECT queue_shard() AS shard_unchanged;

-- the same number again: the next id comes after every id handed out
SELECT queue_shard_setup(3) = :b_id + 1 AS goes_on;
SELECT queue_push('c', queue => 'sq') = :b_id + 1 AS next_id;

-- once the range is empty another number is allowed
TRUNCATE queue_jobs, queue_failed_jobs;
SELECT queue_shard_setup(1) = 1::bigint << 48 AS moved;
SELECT queue_shard() AS shard;

-- tiers: the application may ask (producer), setting up is administration
CREATE ROLE regress_jq_sh_producer;
CREATE ROLE regress_jq_sh_admin;
SELECT queue_grant('regress_jq_sh_producer', 'producer');
SELECT queue_grant('regress_jq_sh_admin', 'admin');
SELECT pg_temp.allowed('regress_jq_sh_producer', ARRAY['queue_shard', 'queue_job_shard', 'queue_shard_setup']) AS producer;
SELECT pg_temp.allowed('regress_jq_sh_admin', ARRAY['queue_shard', 'queue_job_shard', 'queue_shard_setup']) AS admin;
SET ROLE regress_jq_sh_producer;
SELECT queue_shard() AS shard_as_producer, queue_job_shard(1::bigint << 48) AS job_shard_as_producer;
SELECT pg_temp.try('SELECT queue_shard_setup(1)');
RESET ROLE;
SELECT queue_revoke('regress_jq_sh_producer', 'producer');
SELECT queue_revoke('regress_jq_sh_admin', 'producer');
REVOKE USAGE ON SCHEMA public FROM regress_jq_sh_producer, regress_jq_sh_admin;
DROP ROLE regress_jq_sh_producer, regress_jq_sh_admin;

-- back to a fresh single server for the files that follow
DROP EXTENSION jobqueue;
CREATE EXTENSION jobqueue;
