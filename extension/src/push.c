/*-------------------------------------------------------------------------
 *
 * push.c
 *	  queue_push: queue one job inside the caller's transaction.
 *
 * A push is a plain INSERT in the caller's transaction, so it commits or
 * rolls back with the caller's work.  A unique key already held is an
 * expected condition, never an error: INSERT ... ON CONFLICT DO NOTHING,
 * then read the holder's id.  If the holder vanished in between (it was
 * completed), insert again.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(jobqueue_push);

/* Rounds of insert / find-holder before giving up on a key that keeps moving. */
#define UNIQUE_PUSH_ROUNDS 100

static int64
FirstInt8(void)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

	return DatumGetInt64(d);
}

/*
 * Insert with a unique key; returns the new id or the holder's id.
 * values[0..7] are PLAN_PUSH_UNIQUE's parameters.
 */
static int64
PushUnique(FunctionCallInfo fcinfo, Datum *values)
{
	SPIPlanPtr	insert_plan = QueuePlan(fcinfo, PLAN_PUSH_UNIQUE);
	SPIPlanPtr	holder_plan = QueuePlan(fcinfo, PLAN_FIND_UNIQUE_HOLDER);

	for (int round = 0; round < UNIQUE_PUSH_ROUNDS; round++)
	{
		CHECK_FOR_INTERRUPTS();
		QueueExecute(insert_plan, values, NULL, false, SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 1)
			return FirstInt8();

		/* Each statement takes a fresh snapshot: the holder has committed. */
		QueueExecute(holder_plan, &values[7], NULL, false, SPI_OK_SELECT);
		if (SPI_processed == 1)
			return FirstInt8();
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not push a job with unique_key \"%s\": its holder kept changing",
					TextDatumGetCString(values[7])),
			 errhint("Retry the transaction.")));
	return 0;					/* not reached */
}

/*
 * queue_push(name, payload, queue, delay, priority, unique_key, max_attempts)
 * returns the job's id.
 */
Datum
jobqueue_push(PG_FUNCTION_ARGS)
{
	text	   *name = ArgNameText(fcinfo, 0, "name", NULL, JQ_JOB_NAME_MAX);
	Jsonb	   *payload = ArgPayload(fcinfo, 1, "payload");
	text	   *queue = ArgNameText(fcinfo, 2, "queue", "default", JQ_QUEUE_NAME_MAX);
	Interval   *delay = ArgInterval(fcinfo, 3, "delay", "0");
	int32		priority = ArgInt(fcinfo, 4, "priority", 0, PG_INT32_MIN, PG_INT32_MAX);
	text	   *unique_key = ArgOptionalNameText(fcinfo, 5, "unique_key", JQ_UNIQUE_KEY_MAX);
	int32		max_attempts = ArgInt(fcinfo, 6, "max_attempts", 3, 1, JQ_MAX_ATTEMPTS_LIMIT);
	TimestampTz now;
	TimestampTz available_at;
	Datum		values[8];
	int64		id;

	CheckNonNegativeInterval(delay, "delay");
	now = QueueNow();
	available_at = QueueTimeAfter(now, delay);

	values[0] = PointerGetDatum(queue);
	values[1] = PointerGetDatum(name);
	values[2] = PointerGetDatum(payload);
	values[3] = Int32GetDatum(priority);
	values[4] = Int32GetDatum(max_attempts);
	values[5] = TimestampTzGetDatum(available_at);
	values[6] = TimestampTzGetDatum(now);

	SPI_connect();
	if (unique_key == NULL)
	{
		QueueExecute(QueuePlan(fcinfo, PLAN_PUSH), values, NULL, false,
					 SPI_OK_INSERT_RETURNING);
		id = FirstInt8();
	}
	else
	{
		values[7] = PointerGetDatum(unique_key);
		id = PushUnique(fcinfo, values);
	}
	SPI_finish();

	PG_RETURN_INT64(id);
}
