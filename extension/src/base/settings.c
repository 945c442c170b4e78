/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The base folder's settings (GUCs) and the queue's clock.
 *
 * The other folders define their own settings, from their Init
 * (extension/src/README.md lists them all).
 *
 * One clock: the server's clock_timestamp(), shifted by the superuser-only
 * jobqueue.clock_offset so tests can travel in time instead of sleeping.
 * Every time the queue stores or compares comes from QueueNow().
 *
 *-------------------------------------------------------------------------
 */
#include "base/base.h"

#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

int			jobqueue_max_payload_bytes = 1024 * 1024;

static char *clock_offset_setting = NULL;
static Interval clock_offset = {0, 0, 0};

static bool
CheckClockOffset(char **newval, void **extra, GucSource source)
{
	Interval   *parsed;

	/* the server releases it: allocated where it expects (base/compat.h) */
	parsed = (Interval *) AllocSettingExtra(sizeof(Interval));
	if (parsed == NULL)
		return false;
	if (*newval == NULL || (*newval)[0] == '\0')
		memset(parsed, 0, sizeof(Interval));
	else if (!ParseIntervalQuietly(*newval, parsed))
	{
		FreeSettingExtra(parsed);
		GUC_check_errdetail("jobqueue.clock_offset must be an interval, such as '2 hours' or '-30 seconds'.");
		return false;
	}
	*extra = parsed;
	return true;
}

static void
AssignClockOffset(const char *newval, void *extra)
{
	clock_offset = *(Interval *) extra;
}

/* Called once from _PG_init; _PG_init reserves the prefix after all are defined. */
void
JobqueueDefineSettings(void)
{
	DefineCustomStringVariable("jobqueue.clock_offset",
							   "Shifts the queue's clock by this interval (for tests).",
							   "Every time jobqueue stores or compares is clock_timestamp() plus this offset.",
							   &clock_offset_setting,
							   "0",
							   PGC_SUSET,
							   0,
							   CheckClockOffset,
							   AssignClockOffset,
							   NULL);

	DefineCustomIntVariable("jobqueue.max_payload_bytes",
							"Largest job payload accepted, in bytes of its text form.",
							NULL,
							&jobqueue_max_payload_bytes,
							1024 * 1024,
							1024,
							MaxAllocSize - 1,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
}

/* Whether span is zero in each of its parts (months, days, time). */
static bool
IntervalIsZero(const Interval *span)
{
	return span->month == 0 && span->day == 0 && span->time == 0;
}

/* base + span, with PostgreSQL's own calendar arithmetic and range checks. */
TimestampTz
QueueTimeAfter(TimestampTz base, Interval *span)
{
	/* no span (a push's default delay, the unshifted clock): base itself */
	if (IntervalIsZero(span))
		return base;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(base),
												   PointerGetDatum(span)));
}

/* Whether this session's queue clock is shifted from the wall clock. */
bool
QueueClockShifted(void)
{
	return !IntervalIsZero(&clock_offset);
}

/* The queue's clock at the wall-clock time "wall": wall plus the offset. */
TimestampTz
QueueNowAt(TimestampTz wall)
{
	return QueueTimeAfter(wall, &clock_offset);
}

/* The queue's "now": the wall clock (not the transaction start) plus offset. */
TimestampTz
QueueNow(void)
{
	return QueueNowAt(GetCurrentTimestamp());
}
