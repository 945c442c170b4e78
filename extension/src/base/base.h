/*-------------------------------------------------------------------------
 *
 * base/base.h
 *	  The bottom layer: no SPI, no shared memory.
 *
 * The contract's numbers (contract.h), the versions of the SQL API,
 * argument readers and their error text, the queue's clock and cron
 * expressions; the wrappers of what differs between PostgreSQL's major
 * versions (compat.h).  Every other folder's header includes this one.
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_BASE_H
#define JOBQUEUE_BASE_H

#include "postgres.h"

#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "pgtime.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "base/compat.h"
#include "base/contract.h"

/* Room for a queue name in shared memory: JQ_QUEUE_NAME_MAX characters. */
#define JQ_QUEUE_NAME_BYTES (JQ_QUEUE_NAME_MAX * MAX_MULTIBYTE_CHAR_LEN + 1)

/*
 * The versions of the SQL API, as the install and upgrade scripts name
 * them.  A C entry point exists per SQL function and version whose
 * behaviour differs; it only says which version it serves.
 */
typedef enum JqApiVersion
{
	JQ_API_1_0,
	JQ_API_1_1,					/* deadlines, pause, default leases, wake-ups */
	JQ_API_1_2,					/* schedules, queue_reserve's wait */
	JQ_API_1_3,					/* the storage ring */
	JQ_API_1_4,					/* counters and the dashboard's reads */
	JQ_API_1_5,					/* flow control, shards */
	JQ_API_COUNT
} JqApiVersion;

/* settings.c: the queue's clock, and the payload limit */
extern int	jobqueue_max_payload_bytes;
extern void JobqueueDefineSettings(void);
extern TimestampTz QueueNowAt(TimestampTz wall);
extern TimestampTz QueueNow(void);
extern bool QueueClockShifted(void);
extern TimestampTz QueueTimeAfter(TimestampTz base, Interval *span);

/* args.c */
extern bool ParseIntervalQuietly(const char *input, Interval *result);
extern bool ParseTimestampQuietly(const char *input, TimestampTz *result);
extern void ArgRequire(FunctionCallInfo fcinfo, int argno, const char *argname);
extern text *ArgNameText(FunctionCallInfo fcinfo, int argno, const char *argname,
						 const char *default_value, int max_chars);
extern text *ArgOptionalNameText(FunctionCallInfo fcinfo, int argno,
								 const char *argname, int max_chars);
extern void CheckNameText(text *value, const char *argname, int max_chars);
extern text *ArgWorkerText(FunctionCallInfo fcinfo, int argno);
extern int32 ArgInt(FunctionCallInfo fcinfo, int argno, const char *argname,
					int32 default_value, int32 min_value, int32 max_value);
extern Interval *ArgInterval(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *ArgOptionalDelay(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *ArgOptionalLease(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *DefaultLease(void);
extern void CheckNonNegativeInterval(Interval *span, const char *argname);
extern void CheckLeaseInterval(Interval *span, const char *argname);
extern void CheckWaitInterval(Interval *span, const char *argname);
extern Jsonb *EmptyPayload(void);
extern Jsonb *ArgPayload(FunctionCallInfo fcinfo, int argno, const char *argname);
extern void CheckPayload(Jsonb *payload, const char *argname);
extern int	ArgIdTokenArrays(FunctionCallInfo fcinfo, int64 **ids, int64 **tokens);

/* errortext.c */
extern text *ArgErrorText(FunctionCallInfo fcinfo, int argno);
extern text *CutErrorText(const char *message, int len);

/* cron.c: cron expressions, parsing and the next matching time */
/* A parsed expression: five fields as bit sets, or a fixed interval. */
typedef struct CronSchedule
{
	bool		every;			/* "@every <interval>" */
	int64		every_usecs;	/* its length */
	uint64		minutes;		/* bit n: minute n matches (0-59) */
	uint32		hours;			/* 0-23 */
	uint32		days;			/* 1-31 */
	uint16		months;			/* 1-12 */
	uint8		weekdays;		/* 0-6, Sunday = 0 */
	bool		days_restricted;	/* day-of-month field is not "*" */
	bool		weekdays_restricted;	/* day-of-week field is not "*" */
} CronSchedule;

/*
 * Parse expression into *schedule.  On a bad expression raises 22023 with a
 * message naming the field that is wrong.
 */
extern void CronParse(const char *expression, CronSchedule *schedule);

/*
 * The first time after "after" that matches, with the fields read as wall
 * clock time in zone.  Raises 22023 if nothing matches within eight years
 * (e.g. "0 0 30 2 *").
 */
extern TimestampTz CronNextAfter(const CronSchedule *schedule, TimestampTz after, pg_tz *zone);

/* The zone named zone_name, or 22023 when there is no such zone. */
extern pg_tz *CronZone(const char *zone_name);

/* base.c */
extern void JqBaseInit(void);

#endif							/* JOBQUEUE_BASE_H */
