/*-------------------------------------------------------------------------
 *
 * cron.c
 *	  Cron expressions for recurring schedules.
 *
 * Syntax: the five standard fields "minute hour day-of-month month
 * day-of-week", each "*", a number, a range "a-b", a step "*\/n", "a-b/n"
 * or "a/n", or a comma-separated list of those; months and weekdays also
 * by name (jan-dec, sun-sat); weekday 7 is Sunday too.  As in Vixie cron,
 * when both day fields are restricted a day matches if either does.
 * Shorthands: @yearly (@annually), @monthly, @weekly, @daily (@midnight),
 * @hourly, and "@every <interval>" (a fixed period of at least one second,
 * counted from 2000-01-01 00:00 UTC).
 *
 * Times are matched as wall-clock time in the schedule's zone, minute by
 * minute of the local calendar, so a daylight-saving change neither runs a
 * schedule twice (the repeated hour is walked once) nor skips it (a local
 * time that does not exist maps, as PostgreSQL maps it, to the instant one
 * hour on).
 *
 *-------------------------------------------------------------------------
 */
#include "base/base.h"

#include <ctype.h>

#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

typedef struct CronField
{
	const char *name;			/* for error messages */
	int			min;
	int			max;
	const char *const *names;	/* names of min.., or NULL */
} CronField;

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL
};
static const char *const weekday_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL
};

static const CronField cron_fields[5] = {
	{"minute", 0, 59, NULL},
	{"hour", 0, 23, NULL},
	{"day of month", 1, 31, NULL},
	{"month", 1, 12, month_names},
	{"day of week", 0, 7, weekday_names},
};

static void
FieldError(const CronField *field, const char *text, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid cron expression: %s field \"%s\" %s", field->name, text, why),
			 errhint("Fields are: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec) day-of-week (0-7 or sun-sat).")));
}

/* A number or a name of field; *end is set past it. */
static int
ParseValue(const CronField *field, const char *text, const char *start, const char **end)
{
	if (isdigit((unsigned char) *start))
	{
		long		value = 0;
		const char *p = start;

		while (isdigit((unsigned char) *p) && value < 1000)
			value = value * 10 + (*p++ - '0');
		*end = p;
		if (value < field->min || value > field->max)
			FieldError(field, text, psprintf("is out of range (%d-%d)", field->min, field->max));
		return (int) value;
	}
	if (field->names != NULL)
	{
		for (int i = 0; field->names[i] != NULL; i++)
			if (pg_strncasecmp(start, field->names[i], 3) == 0 && !isalpha((unsigned char) start[3]))
			{
				*end = start + 3;
				return field->min + i;
			}
	}
	FieldError(field, text, "is not a number or a name");
	return 0;					/* not reached */
}

/* One field's text as a bit set of matching values. */
static uint64
ParseField(const CronField *field, const char *text)
{
	uint64		bits = 0;
	const char *p = text;

	for (;;)
	{
		int			low;
		int			high;
		int			step = 1;
		bool		single = false;

		if (*p == '*')
		{
			low = field->min;
			high = field->max;
			p++;
		}
		else
		{
			low = ParseValue(field, text, p, &p);
			high = low;
			single = *p != '-';
			if (*p == '-')
			{
				high = ParseValue(field, text, p + 1, &p);
				if (high < low)
					FieldError(field, text, "has a range that ends before it starts");
			}
		}
		if (*p == '/')
		{
			const char *q = p + 1;
			long		value = 0;

			if (!isdigit((unsigned char) *q))
				FieldError(field, text, "has a step that is not a number");
			while (isdigit((unsigned char) *q) && value < 1000)
				value = value * 10 + (*q++ - '0');
			if (value < 1 || value > field->max)
				FieldError(field, text, "has a step out of range");
			step = (int) value;
			/* "a/n" means from a to the end of the range */
			if (single)
				high = field->max;
			p = q;
		}
		for (int v = low; v <= high; v += step)
			bits |= UINT64CONST(1) << v;
		if (*p == '\0')
			break;
		if (*p != ',')
			FieldError(field, text, "has an unexpected character");
		p++;
	}
	return bits;
}

/* "@every <interval>": a fixed period of 1 second to 10 years. */
static void
ParseEvery(const char *expression, CronSchedule *schedule)
{
	Interval   *span;

	span = palloc(sizeof(Interval));
	if (expression[6] == '\0' || !ParseIntervalQuietly(expression + 7, span))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: \"@every\" needs an interval, such as \"@every 10 minutes\"")));
	if (span->month != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: \"@every\" takes days, hours, minutes or seconds, not months or years")));
	schedule->every = true;
	/* at most ten years: keeps the arithmetic below far from overflow */
	if (span->day > 3660 || span->time > 3660 * USECS_PER_DAY ||
		(int64) span->day * USECS_PER_DAY + span->time > 3660 * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: \"@every\" allows at most 10 years")));
	schedule->every_usecs = (int64) span->day * USECS_PER_DAY + span->time;
	if (schedule->every_usecs < USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: \"@every\" needs at least 1 second")));
}

/* Shorthands that stand for a five-field expression. */
static const char *
ExpandShorthand(const char *expression)
{
	static const struct
	{
		const char *name;
		const char *fields;
	}			shorthands[] = {
		{"@yearly", "0 0 1 1 *"},
		{"@annually", "0 0 1 1 *"},
		{"@monthly", "0 0 1 * *"},
		{"@weekly", "0 0 * * 0"},
		{"@daily", "0 0 * * *"},
		{"@midnight", "0 0 * * *"},
		{"@hourly", "0 * * * *"},
	};

	for (int i = 0; i < lengthof(shorthands); i++)
		if (pg_strcasecmp(expression, shorthands[i].name) == 0)
			return shorthands[i].fields;
	return NULL;
}

void
CronParse(const char *expression, CronSchedule *schedule)
{
	char	   *copy;
	char	   *fields[5];
	int			count = 0;
	const char *expanded;
	char	   *save = NULL;

	memset(schedule, 0, sizeof(CronSchedule));
	while (isspace((unsigned char) *expression))
		expression++;
	{
		char	   *trimmed = pstrdup(expression);
		size_t		length = strlen(trimmed);

		while (length > 0 && isspace((unsigned char) trimmed[length - 1]))
			trimmed[--length] = '\0';
		expression = trimmed;
	}
	if (expression[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: it is empty"),
				 errhint("Fields are: minute hour day-of-month month day-of-week, e.g. \"*/5 9-17 * * mon-fri\".")));

	if (pg_strncasecmp(expression, "@every", 6) == 0 &&
		(expression[6] == '\0' || isspace((unsigned char) expression[6])))
	{
		ParseEvery(expression, schedule);
		return;
	}

	expanded = expression[0] == '@' ? ExpandShorthand(expression) : expression;
	if (expanded == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: unknown shorthand \"%s\"", expression),
				 errhint("Known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <interval>.")));

	copy = pstrdup(expanded);
	for (char *token = strtok_r(copy, " \t", &save); token != NULL; token = strtok_r(NULL, " \t", &save))
	{
		if (count == 5)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid cron expression: more than five fields in \"%s\"", expression)));
		fields[count++] = token;
	}
	if (count != 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid cron expression: %d fields in \"%s\", expected five", count, expression),
				 errhint("Fields are: minute hour day-of-month month day-of-week, e.g. \"*/5 9-17 * * mon-fri\".")));

	schedule->minutes = ParseField(&cron_fields[0], fields[0]);
	schedule->hours = (uint32) ParseField(&cron_fields[1], fields[1]);
	schedule->days = (uint32) ParseField(&cron_fields[2], fields[2]);
	schedule->months = (uint16) ParseField(&cron_fields[3], fields[3]);
	{
		uint64		weekdays = ParseField(&cron_fields[4], fields[4]);

		/* 7 is Sunday too */
		if (weekdays & (UINT64CONST(1) << 7))
			weekdays |= 1;
		schedule->weekdays = (uint8) (weekdays & 0x7F);
	}
	/* as in Vixie cron, a day field starting with "*" (also "*\/2") is unrestricted */
	schedule->days_restricted = fields[2][0] != '*';
	schedule->weekdays_restricted = fields[4][0] != '*';
}

pg_tz *
CronZone(const char *zone_name)
{
	pg_tz	   *zone = pg_tzset(zone_name);

	if (zone == NULL || !pg_tz_acceptable(zone))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown time zone \"%s\"", zone_name),
				 errhint("Use a name from pg_timezone_names, such as 'UTC' or 'Europe/Berlin'.")));
	return zone;
}

static bool
DayMatches(const CronSchedule *s, const struct pg_tm *tm)
{
	bool		day = (s->days >> tm->tm_mday) & 1;
	bool		weekday = (s->weekdays >> tm->tm_wday) & 1;

	if (s->days_restricted && s->weekdays_restricted)
		return day || weekday;
	return day && weekday;
}

/* Day of week (0 = Sunday) of a calendar date. */
static int
WeekdayOf(int year, int month, int day)
{
	return j2day(date2j(year, month, day));
}

/* Move tm to the start of the next day / hour / minute of the local calendar. */
static void
NextDay(struct pg_tm *tm)
{
	int			julian = date2j(tm->tm_year, tm->tm_mon, tm->tm_mday) + 1;

	j2date(julian, &tm->tm_year, &tm->tm_mon, &tm->tm_mday);
	tm->tm_hour = 0;
	tm->tm_min = 0;
}

static void
NextHour(struct pg_tm *tm)
{
	tm->tm_min = 0;
	if (++tm->tm_hour == 24)
		NextDay(tm);
}

static void
NextMinute(struct pg_tm *tm)
{
	if (++tm->tm_min == 60)
		NextHour(tm);
}

/*
 * @every: the multiples of the period since 2000-01-01 00:00 UTC, so a
 * period that divides a day ticks at the same clock times every day.
 */
static TimestampTz
EveryNextAfter(const CronSchedule *s, TimestampTz after)
{
	int64		periods = after / s->every_usecs;
	TimestampTz next;

	/* floor division, also before 2000 (negative times) */
	if (after < 0 && after % s->every_usecs != 0)
		periods--;
	next = (periods + 1) * s->every_usecs;
	if (!IS_VALID_TIMESTAMP(next))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	return next;
}

TimestampTz
CronNextAfter(const CronSchedule *s, TimestampTz after, pg_tz *zone)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			start_year;

	if (s->every)
		return EveryNextAfter(s, after);

	if (timestamp2tm(after, &tz, &tm, &fsec, NULL, zone) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range")));
	/* the next whole minute of local time */
	tm.tm_sec = 0;
	NextMinute(&tm);
	start_year = tm.tm_year;

	while (tm.tm_year <= start_year + 8)
	{
		TimestampTz candidate;
		int			offset;

		CHECK_FOR_INTERRUPTS();
		if (!((s->months >> tm.tm_mon) & 1))
		{
			tm.tm_mday = 1;
			tm.tm_hour = 0;
			tm.tm_min = 0;
			if (++tm.tm_mon > 12)
			{
				tm.tm_mon = 1;
				tm.tm_year++;
			}
			continue;
		}
		tm.tm_wday = WeekdayOf(tm.tm_year, tm.tm_mon, tm.tm_mday);
		if (!DayMatches(s, &tm))
		{
			NextDay(&tm);
			continue;
		}
		if (!((s->hours >> tm.tm_hour) & 1))
		{
			NextHour(&tm);
			continue;
		}
		if (!((s->minutes >> tm.tm_min) & 1))
		{
			NextMinute(&tm);
			continue;
		}

		/* local wall-clock time -> instant, as PostgreSQL maps it */
		offset = DetermineTimeZoneOffset(&tm, zone);
		if (tm2timestamp(&tm, 0, &offset, &candidate) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
					 errmsg("timestamp out of range")));
		/* a repeated local hour can map behind "after": keep walking */
		if (candidate > after)
			return candidate;
		NextMinute(&tm);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("cron expression never matches"),
			 errdetail("No time within eight years matches its fields (is the day valid for the month?).")));
	return 0;					/* not reached */
}
