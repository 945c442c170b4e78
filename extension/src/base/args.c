/*-------------------------------------------------------------------------
 *
 * args.c
 *	  Argument checks shared by every SQL function.
 *
 * The functions are declared non-STRICT so a NULL can be answered with a
 * clear error instead of a silent NULL result.  The rules (docs/sql-api.md,
 * "Common rules"; the numbers are in contract.h):
 *   - NULL for an argument that has a default means that default;
 *   - NULL for an argument without a default raises 22004;
 *   - a bad value raises 22023, an over-long one 54000;
 *   - the message names the argument and says what is allowed.
 * All checks run before anything is written, so a failed call changes
 * nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "base/base.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/datetime.h"

/*
 * Parse an interval without throwing: a GUC check hook must report bad input
 * through its return value, and a field of a JSON job deserves an error
 * that names it.
 */
bool
ParseIntervalQuietly(const char *input, Interval *result)
{
	char		workbuf[256];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	struct pg_itm_in itm;
	int			rc;

	rc = ParseDateTime(input, workbuf, sizeof(workbuf), field, ftype,
					   MAXDATEFIELDS, &nf);
	if (rc == 0)
		rc = DecodeInterval(field, ftype, nf, INTERVAL_FULL_RANGE, &dtype, &itm);
	if (rc == DTERR_BAD_FORMAT)
		rc = DecodeISO8601Interval(unconstify(char *, input), &dtype, &itm);
	if (rc != 0 || dtype != DTK_DELTA)
		return false;
	return itmin2interval(&itm, result) == 0;
}

/* Parse a timestamptz without throwing; of the special values, 'infinity'
 * and '-infinity' are taken, as timestamptz_in takes them. */
bool
ParseTimestampQuietly(const char *input, TimestampTz *result)
{
	char		workbuf[256];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;

	if (ParseDateTime(input, workbuf, sizeof(workbuf), field, ftype,
					  MAXDATEFIELDS, &nf) != 0)
		return false;
	if (DecodeDateTimeQuietly(field, ftype, nf, &dtype, &tm, &fsec, &tz) != 0)
		return false;
	if (dtype == DTK_LATE || dtype == DTK_EARLY)
	{
		if (dtype == DTK_LATE)
			TIMESTAMP_NOEND(*result);
		else
			TIMESTAMP_NOBEGIN(*result);
		return true;
	}
	if (dtype != DTK_DATE)
		return false;
	/* DecodeDateTimeQuietly has set tz: the text's zone, or the session's */
	return tm2timestamp(&tm, fsec, &tz, result) == 0 && IS_VALID_TIMESTAMP(*result);
}

/* 22004 when a required argument is NULL. */
void
ArgRequire(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be NULL", argname)));
}

/* A name-like text: 1 to max_chars characters. */
void
CheckNameText(text *value, const char *argname, int max_chars)
{
	int			bytes = VARSIZE_ANY_EXHDR(value);
	int			chars;

	if (bytes == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be empty", argname),
				 errdetail("It must be 1 to %d characters long.", max_chars)));
	/* a character is at least one byte: only long inputs need counting */
	if (bytes <= max_chars)
		return;
	chars = pg_mbstrlen_with_len(VARDATA_ANY(value), bytes);
	if (chars > max_chars)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too long (%d characters)", argname, chars),
				 errdetail("It must be 1 to %d characters long.", max_chars)));
}

/* A required name; NULL is 22004, or the default when there is one. */
text *
ArgNameText(FunctionCallInfo fcinfo, int argno, const char *argname,
			const char *default_value, int max_chars)
{
	text	   *value;

	if (PG_ARGISNULL(argno))
	{
		if (default_value == NULL)
			ArgRequire(fcinfo, argno, argname);
		return cstring_to_text(default_value);
	}
	value = PG_GETARG_TEXT_PP(argno);
	CheckNameText(value, argname, max_chars);
	return value;
}

/* A name whose default is NULL (no value). */
text *
ArgOptionalNameText(FunctionCallInfo fcinfo, int argno, const char *argname,
					int max_chars)
{
	text	   *value;

	if (PG_ARGISNULL(argno))
		return NULL;
	value = PG_GETARG_TEXT_PP(argno);
	CheckNameText(value, argname, max_chars);
	return value;
}

/* A worker's name is informative only: NULL is '', a long one is cut. */
text *
ArgWorkerText(FunctionCallInfo fcinfo, int argno)
{
	text	   *value;
	int			bytes;
	int			keep;

	if (PG_ARGISNULL(argno))
		return cstring_to_text("");
	value = PG_GETARG_TEXT_PP(argno);
	bytes = VARSIZE_ANY_EXHDR(value);
	if (bytes <= JQ_WORKER_NAME_MAX)
		return value;
	keep = pg_mbcharcliplen(VARDATA_ANY(value), bytes, JQ_WORKER_NAME_MAX);
	return cstring_to_text_with_len(VARDATA_ANY(value), keep);
}

/* An integer within [min_value, max_value]; NULL means the default. */
int32
ArgInt(FunctionCallInfo fcinfo, int argno, const char *argname,
	   int32 default_value, int32 min_value, int32 max_value)
{
	int32		value;

	if (PG_ARGISNULL(argno))
		return default_value;
	value = PG_GETARG_INT32(argno);
	if (value < min_value || value > max_value)
	{
		if (max_value == PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" must be at least %d, got %d",
							argname, min_value, value)));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be between %d and %d, got %d",
						argname, min_value, max_value, value)));
	}
	return value;
}

static int
IntervalCompare(Interval *a, Interval *b)
{
	return DatumGetInt32(DirectFunctionCall2(interval_cmp,
											 IntervalPGetDatum(a),
											 IntervalPGetDatum(b)));
}

static char *
IntervalText(Interval *span)
{
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   IntervalPGetDatum(span)));
}

/* A required interval argument. */
Interval *
ArgInterval(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	ArgRequire(fcinfo, argno, argname);
	return PG_GETARG_INTERVAL_P(argno);
}

/*
 * An optional interval argument, checked by check; NULL when the argument
 * is NULL (the caller knows what that means).
 */
static Interval *
ArgOptionalIntervalChecked(FunctionCallInfo fcinfo, int argno, const char *argname,
						   void (*check) (Interval *span, const char *argname))
{
	Interval   *span;

	if (PG_ARGISNULL(argno))
		return NULL;
	span = PG_GETARG_INTERVAL_P(argno);
	check(span, argname);
	return span;
}

/* A delay, zero or more; NULL when the argument is NULL. */
Interval *
ArgOptionalDelay(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	return ArgOptionalIntervalChecked(fcinfo, argno, argname, CheckNonNegativeInterval);
}

/* A lease within the contract's bounds; NULL when the argument is NULL. */
Interval *
ArgOptionalLease(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	return ArgOptionalIntervalChecked(fcinfo, argno, argname, CheckLeaseInterval);
}

/* The contract's default lease, for a 1.0 claim given none. */
Interval *
DefaultLease(void)
{
	Interval   *lease = palloc0(sizeof(Interval));

	lease->time = JQ_DEFAULT_LEASE_SECONDS * USECS_PER_SEC;
	return lease;
}

/* A delay: zero or more. */
void
CheckNonNegativeInterval(Interval *span, const char *argname)
{
	Interval	zero = {0, 0, 0};

	/* no part negative (a push's default delay): not negative, without the comparison */
	if (span->month >= 0 && span->day >= 0 && span->time >= 0)
		return;
	if (IntervalCompare(span, &zero) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be negative, got %s",
						argname, IntervalText(span))));
}

/* A lease: from JQ_LEASE_MIN_SECONDS (1 second) to JQ_LEASE_MAX_SECONDS (1 day). */
void
CheckLeaseInterval(Interval *span, const char *argname)
{
	Interval	shortest = {JQ_LEASE_MIN_SECONDS * USECS_PER_SEC, 0, 0};
	Interval	longest = {JQ_LEASE_MAX_SECONDS * USECS_PER_SEC, 0, 0};

	StaticAssertStmt(JQ_LEASE_MIN_SECONDS == 1 && JQ_LEASE_MAX_SECONDS == 86400,
					 "the message below names the lease bounds");
	if (IntervalCompare(span, &shortest) < 0 ||
		IntervalCompare(span, &longest) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be between 1 second and 1 day, got %s",
						argname, IntervalText(span))));
}

/* A wait: zero to JQ_WAIT_MAX_SECONDS (1 hour). */
void
CheckWaitInterval(Interval *span, const char *argname)
{
	Interval	longest = {JQ_WAIT_MAX_SECONDS * USECS_PER_SEC, 0, 0};

	StaticAssertStmt(JQ_WAIT_MAX_SECONDS == 3600, "the message below names the bound");
	CheckNonNegativeInterval(span, argname);
	if (IntervalCompare(span, &longest) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be at most 1 hour", argname)));
}

/* The payload of a job given none: '{}'. */
Jsonb *
EmptyPayload(void)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
}

/*
 * A payload: NULL means '{}'; at most jobqueue.max_payload_bytes as text.
 * The text form is measured: the binary one can be far smaller (1e100000
 * prints as a hundred thousand digits) or larger (per-element headers).
 */
Jsonb *
ArgPayload(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	Jsonb	   *payload;

	if (PG_ARGISNULL(argno))
		return EmptyPayload();
	payload = PG_GETARG_JSONB_P(argno);
	CheckPayload(payload, argname);
	return payload;
}

/*
 * The most characters a byte of a payload's binary form can print as, and
 * then some.  A number prints the most: at most 131,072 digits before its
 * point and 16,383 after (numeric's limits) and a sign, 147,457
 * characters, from a binary form of 11 bytes at least (its entry in the
 * container, 4, and a numeric of the long format: a varlena header of 1
 * byte at least, 4 of its own and one digit of 2 bytes), 13,406 characters
 * a byte.  A string prints at most 6 characters a byte ("\u0001"), and the
 * punctuation between elements, keys and values (", ", ": ") fewer than
 * their entries' 4 bytes.  So a payload of at most max_payload_bytes /
 * 16,384 bytes (64 bytes at the default 1 MB) is within the limit as
 * text, and is not printed to be measured: a push's payload mostly is.
 */
#define MAX_PAYLOAD_TEXT_PER_BINARY_BYTE 16384

/* A payload's size rule, for payloads that do not come from an argument. */
void
CheckPayload(Jsonb *payload, const char *argname)
{
	int			binary_bytes = VARSIZE(payload) - VARHDRSZ;
	char	   *rendered;
	size_t		text_bytes;

	/* small enough that no text form of it can be too large: not printed */
	if ((int64) binary_bytes * MAX_PAYLOAD_TEXT_PER_BINARY_BYTE <= jobqueue_max_payload_bytes)
		return;
	rendered = JsonbToCString(NULL, &payload->root, binary_bytes);
	text_bytes = strlen(rendered);
	pfree(rendered);
	if (text_bytes > (size_t) jobqueue_max_payload_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too large (more than %d bytes as text)",
						argname, jobqueue_max_payload_bytes),
				 errdetail("Payloads are limited to jobqueue.max_payload_bytes = %d bytes.",
						   jobqueue_max_payload_bytes)));
}

/*
 * The ids and tokens arrays of a batch call: both given, one-dimensional,
 * the same length (at most JQ_MAX_JOBS_LIMIT), no NULL element.
 */
int
ArgIdTokenArrays(FunctionCallInfo fcinfo, int64 **ids, int64 **tokens)
{
	const char *names[2] = {"ids", "tokens"};
	int64	   *out[2];
	int			counts[2];

	for (int a = 0; a < 2; a++)
	{
		ArrayType  *array;
		Datum	   *elems;
		bool	   *nulls;

		ArgRequire(fcinfo, a, names[a]);
		array = PG_GETARG_ARRAYTYPE_P(a);
		if (ARR_NDIM(array) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" must be a one-dimensional array", names[a])));
		deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &nulls, &counts[a]);
		if (counts[a] > JQ_MAX_JOBS_LIMIT)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("argument \"%s\" has %d elements, at most %d are allowed",
							names[a], counts[a], JQ_MAX_JOBS_LIMIT)));
		out[a] = palloc(sizeof(int64) * Max(counts[a], 1));
		for (int i = 0; i < counts[a]; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("argument \"%s\" must not contain NULL (element %d)",
								names[a], i + 1)));
			out[a][i] = DatumGetInt64(elems[i]);
		}
	}
	if (counts[0] != counts[1])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("arguments \"ids\" and \"tokens\" must have the same length, got %d and %d",
						counts[0], counts[1])));
	*ids = out[0];
	*tokens = out[1];
	return counts[0];
}
