/*-------------------------------------------------------------------------
 *
 * cron.h
 *	  Cron expressions: parsing and the next matching time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_CRON_H
#define JOBQUEUE_CRON_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "pgtime.h"

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

#endif							/* JOBQUEUE_CRON_H */
