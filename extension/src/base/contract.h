/*-------------------------------------------------------------------------
 *
 * contract.h
 *	  The contract's defaults and limits, written once.
 *
 * Every rule of the SQL API that is a number or a fixed text lives here:
 * the C argument checks read it, the SQL statements of the C files quote it
 * (SQL_NUMBER, store/store.h), and the frozen install and upgrade scripts,
 * which state the same defaults in their function signatures, are checked
 * against it by "make contract-check" (scripts/check_contract.py), which
 * also checks that the C statements quote only names defined here and
 * write no span as a literal.  The C++ client
 * states none of them: it leaves an omitted argument NULL, so the server's
 * default applies.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_CONTRACT_H
#define JOBQUEUE_CONTRACT_H

/* Defaults of omitted (or NULL) arguments. */
#define JQ_DEFAULT_QUEUE			"default"
#define JQ_DEFAULT_PRIORITY			0
#define JQ_DEFAULT_MAX_ATTEMPTS		3
#define JQ_DEFAULT_LEASE_SECONDS	60	/* also a queue's lease without a setting */
#define JQ_DEFAULT_MAX_JOBS			1
#define JQ_DEFAULT_FAILED_ROWS		50
#define JQ_DEFAULT_TIME_ZONE		"UTC"
#define JQ_DEFAULT_CRON_COUNT		1
#define JQ_DEFAULT_COUNT_CAP		10000	/* queue_overview (1.4) */
#define JQ_DEFAULT_COUNT_CAP_1_5	1000	/* queue_overview (1.5): exact below, estimated above */
#define JQ_DEFAULT_PAGE_ROWS		50		/* queue_jobs_page (1.4) */
#define JQ_DEFAULT_LEASE_ROWS		200		/* queue_leases (1.4) */
#define JQ_DEFAULT_MAX_RUNNING		1		/* per concurrency key without a limit (1.5) */
#define JQ_DEFAULT_ON_DUPLICATE		"keep"	/* queue_push (1.5) */
#define JQ_DEFAULT_AFTER_FAILED		"fail"	/* queue_push (1.5) */

/* Lengths, in characters (not bytes). */
#define JQ_QUEUE_NAME_MAX		64
#define JQ_JOB_NAME_MAX			200
#define JQ_UNIQUE_KEY_MAX		200
#define JQ_WORKER_NAME_MAX		200		/* longer names are cut, not refused */
#define JQ_CRON_TEXT_MAX		200
#define JQ_TIME_ZONE_NAME_MAX	64
#define JQ_CONCURRENCY_KEY_MAX	200		/* also a key prefix's */

/* Counts. */
#define JQ_MAX_ATTEMPTS_LIMIT	1000000
#define JQ_MAX_JOBS_LIMIT		10000	/* per claim, and per batch call */
#define JQ_CRON_COUNT_LIMIT		1000
#define JQ_COUNT_CAP_LIMIT		10000000	/* queue_overview's count_cap */
#define JQ_PAGE_ROWS_LIMIT		1000	/* queue_jobs_page's max_rows */
#define JQ_LEASE_ROWS_LIMIT		10000	/* queue_leases' max_rows */
#define JQ_PARENTS_LIMIT		1000	/* ids in queue_push's after */
#define JQ_MAX_RUNNING_LIMIT	1000000	/* a concurrency limit */
#define JQ_RATE_CLAIMS_LIMIT	1000000	/* a rate limit's max_claims */

/* Spans. */
#define JQ_LEASE_MIN_SECONDS	1
#define JQ_LEASE_MAX_SECONDS	86400
#define JQ_WAIT_MAX_SECONDS		3600
#define JQ_RATE_PERIOD_MAX_SECONDS	86400	/* a rate limit's period: 1 ms to a day */

/*
 * Stored error text: at most JQ_ERROR_TEXT_MAX bytes, the marker included.
 * Error texts composed in SQL (the C statements) cannot cut at a byte count without
 * splitting a character, so they keep JQ_ERROR_TEXT_SQL_KEEP characters:
 * the most that, at 4 bytes each plus the marker, still fits.
 */
#define JQ_ERROR_TEXT_MAX			60000
#define JQ_TRUNCATED_TAIL			"... truncated"
#define JQ_TRUNCATED_MARKER			"\n" JQ_TRUNCATED_TAIL
#define JQ_ERROR_TEXT_SQL_KEEP		14996

StaticAssertDecl(JQ_ERROR_TEXT_SQL_KEEP * 4 + sizeof(JQ_TRUNCATED_MARKER) - 1 <= JQ_ERROR_TEXT_MAX,
				 "SQL-cut error text must fit JQ_ERROR_TEXT_MAX");
StaticAssertDecl((JQ_ERROR_TEXT_SQL_KEEP + 1) * 4 + sizeof(JQ_TRUNCATED_MARKER) - 1 > JQ_ERROR_TEXT_MAX,
				 "JQ_ERROR_TEXT_SQL_KEEP should be the largest count that fits");

/* Rows a claim's due-probe handles per statement (more wait for the next claim). */
#define JQ_PROMOTE_BATCH		1000
/* Due schedules a tick locks per statement. */
#define JQ_TICK_BATCH			100

/*
 * The storage ring (1.3, store/ring.c): queue_jobs is partitioned by "ring";
 * pushes fill ring partition (epoch seconds / period) % JQ_RING_PARTITIONS,
 * and a rotation empties the other one.  JQ_RING_LONG holds the jobs kept
 * out of the ring (unique keys, long delays and leases), vacuumed as before.
 */
#define JQ_RING_PARTITIONS				2
#define JQ_RING_LONG					(-1)
#define JQ_DEFAULT_RING_PERIOD_SECONDS	10
#define JQ_RING_PERIOD_MIN_SECONDS		1
#define JQ_RING_PERIOD_MAX_SECONDS		3600
#define JQ_DEFAULT_RING_LOCK_TIMEOUT_MS	20
/* A rotation moves at most this many live jobs (more: it leaves the partition be). */
#define JQ_RING_MOVE_MAX				10000
/*
 * A ring partition whose rows are all dead is emptied at the next tick,
 * current or not, once it holds at least this much (rotation.c): at most one
 * TRUNCATE per this many bytes of jobs done.
 */
#define JQ_RING_DEAD_TRUNCATE_BYTES		(1024 * 1024)

#endif							/* JOBQUEUE_CONTRACT_H */
