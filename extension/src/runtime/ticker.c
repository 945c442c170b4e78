/*-------------------------------------------------------------------------
 *
 * ticker.c
 *	  A background worker that calls queue_tick() on its own.
 *
 * Only when the library is in shared_preload_libraries and
 * jobqueue.tick_database names a database: the worker connects to it and,
 * at every multiple of jobqueue.tick_interval on the clock, runs the
 * extension's queue_tick() in a transaction of its own.  A database without the extension (or with a
 * version before 1.2) is simply checked again next time.  Without preload
 * nothing here runs; workers or pg_cron call queue_tick() instead.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

PGDLLEXPORT void jobqueue_ticker_main(Datum main_arg);

static char *tick_database = NULL;
static int	tick_interval_ms = 1000;

/* The qualified name of queue_tick() in this database, or NULL. */
static char *
FindQueueTick(void)
{
	const char *sql =
		"SELECT pg_catalog.format('%I.queue_tick', n.nspname)"
		" FROM pg_catalog.pg_extension e"
		" JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace"
		" WHERE e.extname = 'jobqueue'"
		"   AND EXISTS (SELECT 1 FROM pg_catalog.pg_proc p"
		"               WHERE p.proname = 'queue_tick' AND p.pronamespace = n.oid)";

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* One tick, in a transaction of its own. */
static void
TickOnce(void)
{
	char	   *function;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "jobqueue: queue_tick()");

	function = FindQueueTick();
	if (function != NULL &&
		SPI_execute(psprintf("SELECT pg_catalog.count(*) FROM %s()", function), false, 0) != SPI_OK_SELECT)
		elog(ERROR, "jobqueue ticker: queue_tick() failed");

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	/*
	 * A backend reports its table statistics when it goes idle; a
	 * background worker never does by itself, and a rotation's TRUNCATE
	 * would then not reset the partition's dead-row count, on which
	 * autovacuum (whose vacuum makes the next rotation wait) decides.
	 */
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * The next tick is at the next multiple of tick_interval on the clock (a
 * few milliseconds into it, so a window starting on that second has begun),
 * not tick_interval after the last tick ended: a tick's own time must not
 * add up, or a schedule without catch_up, whose tick enqueues the latest
 * window only, would skip a window each time the ticks drift past one.
 */
#define TICK_AFTER_BOUNDARY_US 5000

static void
WaitForNextTick(void)
{
	int64		interval = (int64) tick_interval_ms * 1000;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next = (now / interval + 1) * interval + TICK_AFTER_BOUNDARY_US;

	while ((now = GetCurrentTimestamp()) < next)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) ((next - now + 999) / 1000), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			return;				/* a new interval: tick now, then on its boundaries */
		}
	}
}

void
jobqueue_ticker_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(tick_database, NULL, 0);
	elog(LOG, "jobqueue ticker: ticking database \"%s\" every %d ms", tick_database, tick_interval_ms);

	for (;;)
	{
		WaitForNextTick();
		TickOnce();
	}
}

/*
 * From _PG_init: the ticker's settings always exist (so a postgresql.conf
 * naming them is valid in every backend; SIGHUP, since a POSTMASTER setting
 * cannot be defined by a library loaded later); the worker is registered
 * only while shared_preload_libraries is being loaded, so the database is
 * read at server start.
 */
void
JobqueueDefineTicker(bool preloading)
{
	BackgroundWorker worker;

	DefineCustomStringVariable("jobqueue.tick_database",
							   "Database whose schedules the background ticker runs (empty: no ticker).",
							   "Needs jobqueue in shared_preload_libraries; read at server start.",
							   &tick_database, "", PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("jobqueue.tick_interval",
							"How often the background ticker calls queue_tick().",
							NULL, &tick_interval_ms, 1000, 100, 3600 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	if (!preloading || tick_database == NULL || tick_database[0] == '\0')
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 10;	/* after an error, tick again in 10 s */
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "jobqueue");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "jobqueue_ticker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "jobqueue ticker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "jobqueue ticker");
	RegisterBackgroundWorker(&worker);
}
