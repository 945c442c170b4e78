/*-------------------------------------------------------------------------
 *
 * results.c
 *	  Reading the results of the extension's statements.
 *
 * Columns are read by their 1-based number, named by an enum or a comment
 * beside the statement (in the file that runs it).  A column the statement never leaves
 * NULL is read with a typed reader that raises an internal error on NULL
 * (a NULL there is a bug, and turning it into 0 or false would hide it);
 * a column that may be NULL is checked with SpiIsNull first.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"

/* An int8[] of the given values, for "id = ANY ($1)" parameters. */
ArrayType *
Int8ArrayFromDatums(Datum *values, int count)
{
	return construct_array(values, count, INT8OID, sizeof(int64),
						   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

/* The value of a column of the last result that must not be NULL. */
static Datum
SpiValue(uint64 row, int column)
{
	bool		isnull;
	Datum		value;

	if (SPI_tuptable == NULL || row >= SPI_processed)
		elog(ERROR, "jobqueue: row " UINT64_FORMAT " of a result with " UINT64_FORMAT " rows read",
			 row, SPI_processed);
	value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column, &isnull);
	if (isnull)
		elog(ERROR, "jobqueue: column %d of a result row is NULL where it never may be", column);
	return value;
}

bool
SpiIsNull(uint64 row, int column)
{
	bool		isnull;

	(void) SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, column, &isnull);
	return isnull;
}

int64
SpiInt8(uint64 row, int column)
{
	return DatumGetInt64(SpiValue(row, column));
}

Oid
SpiOid(uint64 row, int column)
{
	return DatumGetObjectId(SpiValue(row, column));
}

int32
SpiInt32(uint64 row, int column)
{
	return DatumGetInt32(SpiValue(row, column));
}

bool
SpiBool(uint64 row, int column)
{
	return DatumGetBool(SpiValue(row, column));
}

TimestampTz
SpiTimestampTz(uint64 row, int column)
{
	return DatumGetTimestampTz(SpiValue(row, column));
}

/* A text column, copied out of SPI's memory into the current context. */
text *
SpiTextCopy(uint64 row, int column)
{
	return DatumGetTextPCopy(SpiValue(row, column));
}

/* A text column, valid until the result is released (not copied). */
text *
SpiText(uint64 row, int column)
{
	return DatumGetTextPP(SpiValue(row, column));
}

/* A jsonb column, copied out of SPI's memory into the current context. */
Jsonb *
SpiJsonbCopy(uint64 row, int column)
{
	return DatumGetJsonbPCopy(SpiValue(row, column));
}

/*
 * The last result, now owned by the caller: the next statement will not
 * release it (QueueExecute releases the previous result).  The caller
 * releases it with SPI_freetuptable when done.
 */
SPITupleTable *
SpiTakeResult(void)
{
	SPITupleTable *result = SPI_tuptable;

	SPI_tuptable = NULL;
	return result;
}

/*
 * For the set-returning functions that return what one statement reads:
 * run it and copy every row, as it is, into the call's set result.
 */
Datum
ReturnRowsOf(const JqCall *call, JqStatement *statement, Datum *values, const char *nulls)
{
	ReturnSetInfo *rsinfo;

	InitMaterializedSRF(call->fcinfo, 0);
	rsinfo = (ReturnSetInfo *) call->fcinfo->resultinfo;
	SPI_connect();
	QueueExecute(call, statement, values, nulls, SPI_OK_SELECT);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		CHECK_FOR_INTERRUPTS();
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[row]);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * For the functions that are one statement: run it in an SPI connection of
 * its own; returns how many rows it processed.
 */
uint64
RunAlone(const JqCall *call, JqStatement *statement, Datum *values, const char *nulls, int expected)
{
	uint64		processed;

	SPI_connect();
	QueueExecute(call, statement, values, nulls, expected);
	processed = SPI_processed;
	SPI_finish();
	return processed;
}

/*
 * Orders structs whose first member is an int64 id by that id (qsort and
 * bsearch of claimed or completed jobs).
 */
int
CompareLeadingIds(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}
