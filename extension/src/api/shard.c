/*-------------------------------------------------------------------------
 *
 * shard.c
 *	  Several servers (1.5): the shard's id scheme, for the router
 *	  extension jobqueue_router.
 *
 * A database that is one shard of several hands out job ids that carry its
 * shard number in the bits from JQ_SHARD_ID_BITS up:
 *
 *		id = shard << 48 | n,	1 <= n < 2^48 (shard 0: the ids it always had)
 *
 * so ids are unique across the shards and a router can send
 * queue_delete(id, token) and every other call that names a job to the
 * shard that holds the job, from the id alone.  Failed rows keep their
 * job's id, and fencing tokens do not take part (their high bits are the
 * timeline's, and a token is only ever compared on the job's own shard).
 *
 * queue_shard_setup(shard) fixes the id sequence's MINVALUE, MAXVALUE and
 * next value to the shard's range, and records the shard number in
 * queue_shard_config, which pg_dump saves (it does not save a member
 * sequence's bounds, only its value, which stays within the range: after a
 * restore the ids go on where they were, and queue_shard_setup(queue_shard())
 * puts the bounds back).
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_shard_setup);
PG_FUNCTION_INFO_V1(jobqueue_shard);
PG_FUNCTION_INFO_V1(jobqueue_job_shard);

/* The shard number's place in an id, and the largest number that fits. */
#define JQ_SHARD_ID_BITS	48
#define JQ_SHARD_MAX		32767

/* The first and the last id of a shard's range. */
static int64
ShardFirstId(int32 shard)
{
	return shard == 0 ? 1 : ((int64) shard) << JQ_SHARD_ID_BITS;
}

static int64
ShardLastId(int32 shard)
{
	return ((((int64) shard) + 1) << JQ_SHARD_ID_BITS) - 1;
}

/* Run one statement built for this call; returns SPI_processed. */
static uint64
RunShardStatement(const char *sql, int nargs, Oid *types, Datum *values, int expected)
{
	int			rc = SpiExecuteSafelyWithArgs(sql, nargs, types, values, false);

	if (rc != expected)
		elog(ERROR, "jobqueue: \"%s\" failed: %s", sql, SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * queue_shard_setup(shard): make this database shard number "shard" of a
 * sharded queue.  Takes EXCLUSIVE locks on queue_jobs and queue_failed_jobs
 * (it waits for open pushes and claims to end, and holds new ones until it
 * commits), refuses with 55000 when a job or failed row there has an id
 * outside the shard's range (nothing is changed then), and otherwise sets
 * the id sequence to the range, its next value after every id the range
 * already holds or handed out.  Calling it again with the same number is
 * harmless.  Returns the next id the shard hands out.
 */
Datum
jobqueue_shard_setup(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int32		shard;
	int64		first,
				last,
				next;
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2];
	const char *s;

	JqCallBeginWriting(&call, fcinfo, JQ_API_1_5);
	ArgRequire(fcinfo, 0, "shard");
	shard = ArgInt(fcinfo, 0, "shard", 0, 0, JQ_SHARD_MAX);
	first = ShardFirstId(shard);
	last = ShardLastId(shard);
	values[0] = Int64GetDatum(first);
	values[1] = Int64GetDatum(last);
	s = call.quoted_schema;

	SPI_connect();
	RunShardStatement(psprintf("LOCK TABLE %s.queue_jobs, %s.queue_failed_jobs IN EXCLUSIVE MODE",
							   s, s), 0, NULL, NULL, SPI_OK_UTILITY);

	/* every id that names a job here must lie in the range */
	RunShardStatement(psprintf("SELECT pg_catalog.count(DISTINCT id), pg_catalog.min(id), pg_catalog.max(id) FROM ("
							   " SELECT id FROM %s.queue_jobs WHERE id NOT BETWEEN $1 AND $2"
							   " UNION ALL SELECT id FROM %s.queue_failed_jobs WHERE id NOT BETWEEN $1 AND $2"
							   " UNION ALL SELECT job_id FROM %s.queue_failed_jobs WHERE job_id NOT BETWEEN $1 AND $2"
							   ") outside", s, s, s),
					  2, types, values, SPI_OK_SELECT);
	if (SpiInt8(0, 1) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot make this database shard %d: " INT64_FORMAT " job ids are outside its id range",
						shard, SpiInt8(0, 1)),
				 errdetail("Shard %d's ids are " INT64_FORMAT " to " INT64_FORMAT "; ids from " INT64_FORMAT " to " INT64_FORMAT " are in queue_jobs or queue_failed_jobs.",
						   shard, first, last, SpiInt8(0, 2), SpiInt8(0, 3)),
				 errhint("A database that already holds jobs can only become shard 0, or the shard its ids name.")));

	/* the next id: after every id of the range held or handed out */
	RunShardStatement(psprintf("SELECT pg_catalog.max(used) FROM ("
							   " SELECT pg_catalog.max(id) FROM %s.queue_jobs"
							   " UNION ALL SELECT pg_catalog.max(id) FROM %s.queue_failed_jobs"
							   " UNION ALL SELECT v FROM pg_catalog.pg_sequence_last_value(%s::pg_catalog.regclass) v"
							   "  WHERE v BETWEEN $1 AND $2"
							   ") ids(used)", s, s, quote_literal_cstr(psprintf("%s.queue_jobs_id_seq", s))),
					  2, types, values, SPI_OK_SELECT);
	next = SpiIsNull(0, 1) ? first : SpiInt8(0, 1) + 1;
	if (next > last)
		ereport(ERROR,
				(errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
				 errmsg("shard %d has handed out every id of its range", shard)));

	RunShardStatement(psprintf("ALTER SEQUENCE %s.queue_jobs_id_seq MINVALUE " INT64_FORMAT
							   " MAXVALUE " INT64_FORMAT " START WITH " INT64_FORMAT
							   " RESTART WITH " INT64_FORMAT " NO CYCLE",
							   s, first, last, first, next),
					  0, NULL, NULL, SPI_OK_UTILITY);

	values[0] = Int32GetDatum(shard);
	types[0] = INT4OID;
	values[1] = TimestampTzGetDatum(call.now);
	types[1] = TIMESTAMPTZOID;
	RunShardStatement(psprintf("INSERT INTO %s.queue_shard_config (shard, set_at) VALUES ($1, $2)"
							   " ON CONFLICT (singleton) DO UPDATE SET shard = EXCLUDED.shard, set_at = EXCLUDED.set_at",
							   s),
					  2, types, values, SPI_OK_INSERT);
	SPI_finish();

	PG_RETURN_INT64(next);
}

/* queue_shard(): this database's shard number (0 until queue_shard_setup). */
Datum
jobqueue_shard(PG_FUNCTION_ARGS)
{
	JqCall		call;
	int32		shard = 0;

	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	SPI_connect();
	if (RunShardStatement(psprintf("SELECT shard FROM %s.queue_shard_config", call.quoted_schema),
						  0, NULL, NULL, SPI_OK_SELECT) == 1)
		shard = SpiInt32(0, 1);
	SPI_finish();

	PG_RETURN_INT32(shard);
}

/* queue_job_shard(id): the shard whose range holds the job id. */
Datum
jobqueue_job_shard(PG_FUNCTION_ARGS)
{
	int64		id;

	ArgRequire(fcinfo, 0, "id");
	id = PG_GETARG_INT64(0);
	if (id < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"id\" must be a job id (at least 1), got " INT64_FORMAT, id)));

	PG_RETURN_INT32((int32) (id >> JQ_SHARD_ID_BITS));
}
