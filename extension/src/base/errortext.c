/*-------------------------------------------------------------------------
 *
 * errortext.c
 *	  Error text stored with a job: at most JQ_ERROR_TEXT_MAX bytes.
 *
 * A handler's error can be a whole stack trace; the stored text is cut at a
 * UTF-8 character boundary and ends with a marker saying it was cut, the
 * marker included in the limit.
 *
 *-------------------------------------------------------------------------
 */
#include "base/base.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"



/* message[0..len) as text, cut to the limit when longer. */
text *
CutErrorText(const char *message, int len)
{
	int			room;
	int			keep;
	text	   *result;

	if (len <= JQ_ERROR_TEXT_MAX)
		return cstring_to_text_with_len(message, len);

	room = JQ_ERROR_TEXT_MAX - (int) strlen(JQ_TRUNCATED_MARKER);
	keep = pg_mbcliplen(message, len, room);
	result = (text *) palloc(VARHDRSZ + keep + strlen(JQ_TRUNCATED_MARKER));
	SET_VARSIZE(result, VARHDRSZ + keep + strlen(JQ_TRUNCATED_MARKER));
	memcpy(VARDATA(result), message, keep);
	memcpy(VARDATA(result) + keep, JQ_TRUNCATED_MARKER, strlen(JQ_TRUNCATED_MARKER));
	return result;
}

/* An "error" argument: NULL means '' (its default); cut when too long. */
text *
ArgErrorText(FunctionCallInfo fcinfo, int argno)
{
	text	   *value;

	if (PG_ARGISNULL(argno))
		return cstring_to_text("");
	value = PG_GETARG_TEXT_PP(argno);
	return CutErrorText(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
}
