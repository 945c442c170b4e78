/*-------------------------------------------------------------------------
 *
 * flow.c
 *	  Flow control (1.5): holding jobs back and letting them go.
 *
 * Two things hold a job back: a concurrency key whose slots are all taken
 * (flow 'key'), and parents that have not completed yet (flow 'parents').
 * A held-back job is not ready and due at infinity, so the claim index and
 * the due search never reach it, however many wait: claims of other jobs
 * cost what they cost without them.  Its own run-at waits in
 * parked_run_at until it is let go.
 *
 * Concurrency keys: at most the key's limit of its jobs hold a slot (flow
 * 'slot') at a time, and only a job holding one can be claimed, so a key
 * never has more live leases than its limit.  A job with a key enters
 * queue_jobs held back (a push, a retry) and takes a slot at once if one
 * is free (AdmitToFreeSlot), else waits; it keeps the slot through
 * claims, releases, retries and expired leases, and gives it up when it
 * leaves queue_jobs (completed, failed, cancelled: the AFTER DELETE
 * trigger), handing it to the key's next waiting job in the same
 * transaction.  The key's row in queue_key_slots is locked by everything
 * that takes or gives a slot, so they change one transaction at a time and
 * a job never waits beside a free slot.  (A push with a key therefore
 * waits for an open transaction that pushed or finished a job of the same
 * key.)
 *
 * Dependencies (dependencies.c registers them at push): when a parent
 * leaves queue_jobs, the AFTER DELETE trigger tells its children how: a
 * completed parent is one fewer to wait for; a failed one (it is in the
 * failed table now) or a cancelled one takes its children to the failed
 * table with it, unless they were pushed to run anyway.  A retried parent
 * brings them back (the failed table's AFTER DELETE trigger).
 *
 * Jobs enter queue_jobs by a few statements, all of them the extension's
 * (push, retry), which hold keyed jobs back themselves; they leave it by
 * many (completion, failure, expiry, deadline, cancel, clear, a parent's
 * failure), so the leaving is seen by one trigger on queue_jobs, and a
 * retried parent by one on the failed table: every path obeys the same
 * rules.  The row trigger has no WHEN clause (PostgreSQL prepares a WHEN
 * again for every statement, which costs more than a call that returns at
 * once for a job without key or children).  A rotation's move (api/rotation.c)
 * only moves rows and says so, and so do cancels (admin.c), which delete
 * held jobs too.
 *
 *-------------------------------------------------------------------------
 */
#include "flow/flow.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(jobqueue_flow_job_removed);
PG_FUNCTION_INFO_V1(jobqueue_flow_failed_removed);
PG_FUNCTION_INFO_V1(jobqueue_flow_jobs_truncated);

/*
 * Held-back jobs (where) let go as flow, at their own run-at (ready if it
 * is by now): what they return is what flow.c notes (LetGoColumn there).
 */
#define LET_GO_SQL(flow, now, where) \
	JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs" \
	" SET flow = " flow ", available_at = parked_run_at, ready = parked_run_at <= " now "," \
	"     parked_run_at = NULL" \
	" WHERE " where \
	" RETURNING queue, priority, available_at, id, ready, " WANTS_WAKEUPS_OF("queue_jobs.queue")

/*
 * A job's flow as a re-check of rows found by id, written so that the
 * partial indexes on flow (the jobs waiting for a key, for parents) cannot
 * serve the statement instead of the primary keys (as STILL_READY).
 */
#define FLOW_IS(value) "coalesce(flow, '') = " value

/*
 * The statements of flow.c, run by the statement engine (exec/statements.c);
 * registered once (flow_statements, from the folder's Init).
 */
enum
{
	PLAN_KEY_TAKE_SLOT,
	PLAN_KEY_LOCK_SLOTS,
	PLAN_KEY_LIMIT_OF,
	PLAN_KEY_SET_RUNNING,
	PLAN_KEY_DROP_SLOTS,
	PLAN_KEY_ADMIT_WAITING,
	PLAN_KEYS_LOCK_COVERED,
	PLAN_KEYS_WAITING,
	PLAN_FLOW_LET_GO,
	PLAN_FLOW_WAIT_FOR_KEY,
	PLAN_JOB_IS_FAILED,
	PLAN_FAILED_SET_KEY,
	PLAN_CHILDREN_DONE,
	PLAN_CHILDREN_FOLLOW,
	PLAN_PARENT_FORGET,
	NUM_FLOW_STATEMENTS
};

static JqStatement statements[NUM_FLOW_STATEMENTS] = {
	[PLAN_KEY_TAKE_SLOT] = {.name = "key_take_slot", .text = {
		/*
		 * Concurrency keys.  Take a slot of key $2 of queue $1 if fewer than
		 * its limit are taken; either way the key's row stays locked until the
		 * transaction ends, so the jobs that hold and wait for the key's slots
		 * change one transaction at a time.
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "INSERT INTO @S@.queue_key_slots AS s (queue, concurrency_key, running)"
			" VALUES ($1, $2, 1)"
			" ON CONFLICT (queue, concurrency_key) DO UPDATE SET running = s.running + 1"
			" WHERE s.running < " KEY_LIMIT("$1", "$2")
			" RETURNING running",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEY_LOCK_SLOTS] = {.name = "key_lock_slots", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT running, " KEY_LIMIT("$1", "$2") " FROM @S@.queue_key_slots"
			" WHERE queue = $1 AND concurrency_key = $2 FOR UPDATE",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEY_LIMIT_OF] = {.name = "key_limit_of", .text = {
		/*
		 * The limit of key $2 of queue $1, read again by a statement of its
		 * own once the key's row is locked (RefillKeySlots): its snapshot sees
		 * a limit changed by the transaction that held the row before.
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT " KEY_LIMIT("$1", "$2"),
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEY_SET_RUNNING] = {.name = "key_set_running", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "UPDATE @S@.queue_key_slots SET running = $3 WHERE queue = $1 AND concurrency_key = $2",
			3, {TEXTOID, TEXTOID, INT4OID}
		},
	}},
	[PLAN_KEY_DROP_SLOTS] = {.name = "key_drop_slots", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "DELETE FROM @S@.queue_key_slots WHERE queue = $1 AND concurrency_key = $2",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEY_ADMIT_WAITING] = {.name = "key_admit_waiting", .text = {
		/*
		 * The next $3 jobs waiting for a slot of the key, in the order they get
		 * one, take a slot and may run at their own run-at ($4: now).  Run after
		 * the key's row is locked, by a statement of its own: its snapshot then
		 * sees every job that waits for the key, and no other session admits
		 * them meanwhile, so the UPDATE needs no re-check of flow (which would
		 * let the waiting index serve it instead of the primary keys).  The
		 * search locks what it finds: a job being cancelled is waited for and,
		 * cancelled, passed by for the next one, as the way without the
		 * executor does (store/direct_slots.c); else the slot would stay free
		 * beside a waiting job.  The way of a table with a trigger of the
		 * user's on UPDATE.
		 */
		[JQ_API_1_5] = {
			LET_GO_SQL("'slot'", "$4",
					   "id = ANY (ARRAY(SELECT w.id FROM @S@.queue_jobs w"
					   "   WHERE w.flow = 'key' AND w.queue = $1 AND w.concurrency_key = $2"
					   "   ORDER BY w.priority DESC, w.parked_run_at, w.id LIMIT $3 FOR UPDATE))"),
			4, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_KEYS_LOCK_COVERED] = {.name = "keys_lock_covered", .text = {
		/*
		 * Lock the rows of the keys of queue $1 starting with $2, in key order
		 * (AdmitWaitingOfKeys): a push that read the old limit holds its key's
		 * row until it commits, and one that comes later waits for the change.
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT concurrency_key FROM @S@.queue_key_slots"
			" WHERE queue = $1 AND pg_catalog.starts_with(concurrency_key, $2)"
			" ORDER BY concurrency_key FOR UPDATE",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_KEYS_WAITING] = {.name = "keys_waiting", .text = {
		/*
		 * The keys of queue $1 starting with $2 that have jobs waiting for a
		 * slot, in the order a limit change locks them (AdmitWaitingOfKeys).
		 */
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "SELECT DISTINCT concurrency_key FROM @S@.queue_jobs"
			" WHERE flow = 'key' AND queue = $1 AND pg_catalog.starts_with(concurrency_key, $2)"
			" ORDER BY concurrency_key",
			2, {TEXTOID, TEXTOID}
		},
	}},
	[PLAN_FLOW_LET_GO] = {.name = "flow_let_go", .text = {
		/*
		 * A held-back job ($1) may run: as flow $3 (NULL, or 'slot' when it
		 * took a slot of its key), at its own run-at.
		 */
		[JQ_API_1_5] = {
			LET_GO_SQL("$3", "$2", "id = $1 AND flow IN ('key', 'parents')"),
			3, {INT8OID, TIMESTAMPTZOID, TEXTOID}
		},
	}},
	[PLAN_FLOW_WAIT_FOR_KEY] = {.name = "flow_wait_for_key", .text = {
		/* A job whose parents are done, now waiting for a slot of its key. */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "UPDATE @S@.queue_jobs SET flow = 'key' WHERE id = $1 AND " FLOW_IS("'parents'"),
			1, {INT8OID}
		},
	}},
	[PLAN_JOB_IS_FAILED] = {.name = "job_is_failed", .text = {
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "SELECT 1 FROM @S@.queue_failed_jobs WHERE id = $1",
			1, {INT8OID}
		},
	}},
	[PLAN_FAILED_SET_KEY] = {.name = "failed_set_key", .text = {
		/* A job with a concurrency key gone to the failed table keeps its key there. */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "UPDATE @S@.queue_failed_jobs SET concurrency_key = $2 WHERE id = $1",
			2, {INT8OID, TEXTOID}
		},
	}},
	[PLAN_CHILDREN_DONE] = {.name = "children_done", .text = {
		/*
		 * Dependencies.  A parent ($1) is done for the children that wait for
		 * it ($2 false: it completed) or that run anyway ($2 true: it failed):
		 * each waits for one parent less.
		 */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "WITH done AS ("
			"  DELETE FROM @S@.queue_job_parents WHERE parent = $1 AND (NOT $2 OR run_anyway)"
			"  RETURNING child"
			")"
			" UPDATE @S@.queue_jobs j SET waiting_parents = j.waiting_parents - 1"
			" WHERE j.id = ANY (ARRAY(SELECT child FROM done)) AND " FLOW_IS("'parents'")
			" RETURNING j.id, j.waiting_parents, j.concurrency_key, j.queue",
			2, {INT8OID, BOOLOID}
		},
	}},
	[PLAN_CHILDREN_FOLLOW] = {.name = "children_follow", .text = {
		/* The children of a failed or cancelled parent ($1) follow it, with error $2 at $3. */
		[JQ_API_1_5] = {
			JQ_HOT_PATH_MARK "WITH moved AS ("
			"  DELETE FROM @S@.queue_jobs"
			"  WHERE id = ANY (ARRAY(SELECT d.child FROM @S@.queue_job_parents d"
			"                        WHERE d.parent = $1 AND NOT d.run_anyway))"
			"   AND " FLOW_IS("'parents'")
			"  RETURNING *"
			")"
			" INSERT INTO @S@.queue_failed_jobs (" FAILED_COLUMNS ", concurrency_key)"
			" SELECT id, id, queue, name, payload, priority, attempts, max_attempts, $2, $3,"
			"  created_at, concurrency_key FROM moved"
			" RETURNING queue",
			3, {INT8OID, TEXTOID, TIMESTAMPTZOID}
		},
	}},
	[PLAN_PARENT_FORGET] = {.name = "parent_forget", .text = {
		[JQ_API_1_5] = {
			JQ_INDEX_PLAN_MARK "DELETE FROM @S@.queue_job_parents WHERE parent = $1",
			1, {INT8OID}
		},
	}},
};

JqStatementSet flow_statements = JQ_STATEMENT_SET(statements);

/*
 * Why jobs are being deleted from queue_jobs now, for the AFTER DELETE
 * trigger (jobqueue_flow_job_removed), which cannot be given arguments:
 * set by RemoveJobs for the one statement it runs, and put back when it
 * returns or raises.  Any other delete is JOB_REMOVAL_FINISHED.
 */
static JobRemoval current_removal = JOB_REMOVAL_FINISHED;

/*
 * Run a statement that deletes jobs from queue_jobs, saying why: on the
 * job table "table" (QueueExecuteOn), or, with found given, looking for the
 * job partition by partition (ExecuteFindingJob, which sets *found).
 * Returns SPI_processed.  Between SPI_connect and SPI_finish.
 */
uint64
RemoveJobs(const JqCall *call, JobRemoval why, JqStatement *statement, JobTable table,
		   Datum *values, const char *nulls, int expected, JobTable *found)
{
	JobRemoval	previous = current_removal;
	uint64		processed;

	current_removal = why;
	PG_TRY();
	{
		if (found != NULL)
			processed = ExecuteFindingJob(call, statement, values, nulls, expected, found);
		else
		{
			QueueExecuteOn(call, statement, table, values, nulls, expected);
			processed = SPI_processed;
		}
	}
	PG_FINALLY();
	{
		current_removal = previous;
	}
	PG_END_TRY();
	return processed;
}

/* From _PG_init: the flow folder's Init, its statements. */
void
JqFlowInit(void)
{
	RegisterStatements(&concurrency_statements);
	RegisterStatements(&dependencies_statements);
	RegisterStatements(&flow_statements);
	RegisterStatements(&ratelimit_statements);
}

/* ---------------------------------------------------------------- slots */

/* Take a slot of the key if one is free; the key's row stays locked either way. */
bool
TakeKeySlot(const JqCall *call, text *queue, text *key)
{
	Datum		args[2] = {PointerGetDatum(queue), PointerGetDatum(key)};

	QueueExecute(call, &statements[PLAN_KEY_TAKE_SLOT], args, NULL, SPI_OK_INSERT_RETURNING);
	return SPI_processed == 1;
}

/* The columns of the statements that let held-back jobs go (LET_GO_SQL above). */
typedef enum LetGoColumn
{
	LET_GO_QUEUE = 1, LET_GO_PRIORITY, LET_GO_AVAILABLE_AT, LET_GO_ID, LET_GO_READY,
	LET_GO_WANTS_WAKEUPS
} LetGoColumn;

/* Note every job the last statement let go (NoteJobCanRun); returns how many. */
static int
NoteJobsLetGo(const JqCall *call)
{
	SPITupleTable *let_go = SpiTakeResult();
	int			count = (int) let_go->numvals;

	for (int row = 0; row < count; row++)
	{
		HeapTuple	tuple = let_go->vals[row];
		TupleDesc	desc = let_go->tupdesc;
		bool		isnull;
		ClaimPosition position;

		position.priority = DatumGetInt32(SPI_getbinval(tuple, desc, LET_GO_PRIORITY, &isnull));
		position.available_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, LET_GO_AVAILABLE_AT,
																  &isnull));
		position.id = DatumGetInt64(SPI_getbinval(tuple, desc, LET_GO_ID, &isnull));
		/* waiting claims and (if the queue wants wake-ups) listeners learn of it */
		NoteJobCanRun(DatumGetTextPCopy(SPI_getbinval(tuple, desc, LET_GO_QUEUE, &isnull)),
					  &position, DatumGetBool(SPI_getbinval(tuple, desc, LET_GO_READY, &isnull)),
					  JOB_EVENT_KINDS,
					  DatumGetBool(SPI_getbinval(tuple, desc, LET_GO_WANTS_WAKEUPS, &isnull)) ?
					  JOB_WAKE_LISTENERS : JOB_WAKE_WAITERS, NULL);
	}
	SPI_freetuptable(let_go);
	return count;
}

/* A held-back job (id) may run, as flow (NULL, or "slot"), at its own run-at. */
static void
LetJobGo(const JqCall *call, int64 id, const char *flow)
{
	Datum		args[3];
	char		nulls[3] = {' ', ' ', flow == NULL ? 'n' : ' '};

	args[0] = Int64GetDatum(id);
	args[1] = TimestampTzGetDatum(call->now);
	args[2] = flow == NULL ? (Datum) 0 : CStringGetTextDatum(flow);
	QueueExecute(call, &statements[PLAN_FLOW_LET_GO], args, nulls, SPI_OK_UPDATE_RETURNING);
	NoteJobsLetGo(call);		/* none if it is not held back any more */
}

/*
 * Lock the row of key in queue_key_slots: true with the slots taken in
 * *running and the key's limit as it is now in *limit, false if the key
 * has no row (no job holds or waits for a slot of it).  Without the
 * executor where it may (store/direct_slots.c), else by statements.
 */
static bool
LockKeySlots(const JqCall *call, text *queue, text *key, int32 *running, int32 *limit)
{
	Datum		args[2] = {PointerGetDatum(queue), PointerGetDatum(key)};

	switch (LockKeySlotsDirectly(call, queue, key, running, limit))
	{
		case DIRECT_NOT_FOUND:
			return false;
		case DIRECT_DONE:
			if (*limit < 0)		/* too many limits in the queue to scan there */
			{
				QueueExecute(call, &statements[PLAN_KEY_LIMIT_OF], args, NULL, SPI_OK_SELECT);
				*limit = SpiInt32(0, 1);
			}
			return true;
		case DIRECT_USE_STATEMENT:
			break;
	}
	QueueExecute(call, &statements[PLAN_KEY_LOCK_SLOTS], args, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	*running = SpiInt32(0, 1);
	*limit = SpiInt32(0, 2);
	if (*running >= *limit)
	{
		/*
		 * The key is full by the limit the lock's statement read, with its
		 * snapshot from before it waited for the row: the transaction that
		 * held the row may have raised the limit and filled the key up to
		 * it (AdmitWaitingOfKeys) before it committed.  A statement of its
		 * own reads the limit as it is now.  (Otherwise only a lowered
		 * limit leaves a key full here: rare, and then one more read.)
		 */
		QueueExecute(call, &statements[PLAN_KEY_LIMIT_OF], args, NULL, SPI_OK_SELECT);
		*limit = SpiInt32(0, 1);
	}
	return true;
}

/*
 * Let the next "count" jobs waiting for a slot of key take one (the key's
 * row locked); returns how many did.  Without the executor where it may
 * (store/direct_slots.c), else by the statement.
 */
static int
AdmitWaiting(const JqCall *call, text *queue, text *key, int count)
{
	Datum		args[4] = {PointerGetDatum(queue), PointerGetDatum(key), Int32GetDatum(count),
	TimestampTzGetDatum(call->now)};
	AdmittedJob *admitted = palloc(sizeof(AdmittedJob) * count);
	int			admitted_count;
	bool		wants_wakeups;

	if (AdmitWaitingDirectly(call, queue, key, count, admitted, &admitted_count,
							 &wants_wakeups) == DIRECT_DONE)
	{
		/* waiting claims and (if the queue wants wake-ups) listeners learn of each */
		for (int i = 0; i < admitted_count; i++)
			NoteJobCanRun(queue, &admitted[i].order, admitted[i].ready, JOB_EVENT_KINDS,
						  wants_wakeups ? JOB_WAKE_LISTENERS : JOB_WAKE_WAITERS, NULL);
		pfree(admitted);
		return admitted_count;
	}
	pfree(admitted);
	QueueExecute(call, &statements[PLAN_KEY_ADMIT_WAITING], args, NULL, SPI_OK_UPDATE_RETURNING);
	return NoteJobsLetGo(call);
}

/*
 * The slots of a key after "given_up" of them were given up: hand free
 * slots to the key's waiting jobs, in their order, and keep the count (the
 * key's row goes when no job holds or waits for a slot).  Also how a
 * raised limit lets more jobs run (given_up 0).  In the usual hand-over,
 * one slot given up and one job waiting: the lock and the waiting job's
 * admission; the count stays as it was.
 */
void
RefillKeySlots(const JqCall *call, text *queue, text *key, int given_up)
{
	Datum		args[3] = {PointerGetDatum(queue), PointerGetDatum(key), 0};
	int32		was_running;
	int32		running;
	int32		limit;

	if (!LockKeySlots(call, queue, key, &was_running, &limit))
		return;					/* no job holds or waits for a slot of the key */
	running = Max(was_running - given_up, 0);
	if (running < limit)
		running += AdmitWaiting(call, queue, key, limit - running);
	args[2] = Int32GetDatum(running);
	if (running == 0)
		QueueExecute(call, &statements[PLAN_KEY_DROP_SLOTS], args, NULL, SPI_OK_DELETE);
	else if (running != was_running)
		QueueExecute(call, &statements[PLAN_KEY_SET_RUNNING], args, NULL, SPI_OK_UPDATE);
}

/*
 * A concurrency limit of queue for key_prefix was set or removed: each key
 * of the queue it may cover (every key starting with key_prefix: a longer
 * prefix's keys too, harmlessly) with jobs waiting for a slot lets as many
 * of them take one as its limit now allows, this transaction's change
 * included (RefillKeySlots, with the key's row locked).  The one way a
 * changed limit reaches the keys: a raised limit (set, or removed so that
 * a shorter prefix's higher limit applies, or 1 is higher) lets waiting
 * jobs run at once, a lowered one admits none.
 *
 * A push racing the change: every key row the change covers is locked
 * first, in key order (so two limit changes cannot deadlock), and only
 * then are the waiting jobs looked for, by a statement whose snapshot
 * comes after the locks: a push that locked its key's row before (its job
 * waits by the old limit) has committed by then, and its job is seen; a
 * push that comes later waits for this transaction and reads the limit
 * again (AdmitToFreeSlot).  Between SPI_connect and SPI_finish, after the
 * limit's statement.
 */
void
AdmitWaitingOfKeys(const JqCall *call, text *queue, text *key_prefix)
{
	Datum		args[2] = {PointerGetDatum(queue), PointerGetDatum(key_prefix)};
	SPITupleTable *keys;

	QueueExecute(call, &statements[PLAN_KEYS_LOCK_COVERED], args, NULL, SPI_OK_SELECT);
	QueueExecute(call, &statements[PLAN_KEYS_WAITING], args, NULL, SPI_OK_SELECT);
	keys = SpiTakeResult();
	for (uint64 row = 0; row < keys->numvals; row++)
	{
		bool		isnull;
		Datum		key = SPI_getbinval(keys->vals[row], keys->tupdesc, 1, &isnull);

		CHECK_FOR_INTERRUPTS();
		RefillKeySlots(call, queue, DatumGetTextPP(key), 0);
	}
	SPI_freetuptable(keys);
}

/*
 * A job waiting for a slot of its key (flow 'key': just pushed, retried, or
 * a child whose parents are done) takes one if one is free and may run.
 *
 * TakeKeySlot's statement reads the key's limit with its snapshot, which
 * is older than a limit change that committed while the statement waited
 * for the key's row (queue_concurrency_set/_remove lock it:
 * AdmitWaitingOfKeys).  So a key found full is looked at again, by
 * statements of their own with the row already held: a raised limit lets
 * the key's waiting jobs, this one among them, run now rather than at the
 * key's next completion.
 */
void
AdmitToFreeSlot(const JqCall *call, int64 id, text *queue, text *key)
{
	if (TakeKeySlot(call, queue, key))
		LetJobGo(call, id, "slot");
	else
		RefillKeySlots(call, queue, key, 0);
}

/*
 * A child whose parents are all done: it runs, or with a key, waits for a
 * slot and takes one if one is free.
 */
void
ReleaseChild(const JqCall *call, int64 id, text *queue, text *key)
{
	Datum		args[1] = {Int64GetDatum(id)};

	if (key == NULL)
		LetJobGo(call, id, NULL);
	else
	{
		QueueExecute(call, &statements[PLAN_FLOW_WAIT_FOR_KEY], args, NULL, SPI_OK_UPDATE);
		AdmitToFreeSlot(call, id, queue, key);
	}
}

/* ------------------------------------------------------------- children */

/* The columns PLAN_CHILDREN_DONE returns. */
enum
{
	DONE_ID = 1, DONE_WAITING, DONE_KEY, DONE_QUEUE
};

/*
 * Parent is done for the children waiting for it (parent_failed: only
 * those pushed to run anyway); those it was the last parent of run.
 */
void
ChildrenParentDone(const JqCall *call, int64 parent, bool parent_failed)
{
	Datum		args[2] = {Int64GetDatum(parent), BoolGetDatum(parent_failed)};
	SPITupleTable *done;

	QueueExecute(call, &statements[PLAN_CHILDREN_DONE], args, NULL, SPI_OK_UPDATE_RETURNING);
	done = SpiTakeResult();
	for (uint64 row = 0; row < done->numvals; row++)
	{
		HeapTuple	tuple = done->vals[row];
		bool		isnull;
		bool		no_key;
		int64		id = DatumGetInt64(SPI_getbinval(tuple, done->tupdesc, DONE_ID, &isnull));
		int32		waiting = DatumGetInt32(SPI_getbinval(tuple, done->tupdesc, DONE_WAITING,
														  &isnull));
		Datum		key = SPI_getbinval(tuple, done->tupdesc, DONE_KEY, &no_key);
		Datum		queue = SPI_getbinval(tuple, done->tupdesc, DONE_QUEUE, &isnull);

		if (waiting == 0)
			ReleaseChild(call, id, DatumGetTextPP(queue), no_key ? NULL : DatumGetTextPP(key));
	}
	SPI_freetuptable(done);
}

/* The children of a failed or cancelled parent that do not run anyway fail with it. */
void
ChildrenFollowParent(const JqCall *call, int64 parent, bool cancelled)
{
	Datum		args[3];
	const char *what = cancelled ? "was cancelled" : "failed";

	args[0] = Int64GetDatum(parent);
	args[1] = CStringGetTextDatum(psprintf("parent job " INT64_FORMAT " %s", parent, what));
	args[2] = TimestampTzGetDatum(call->now);
	QueueExecute(call, &statements[PLAN_CHILDREN_FOLLOW], args, NULL, SPI_OK_INSERT_RETURNING);
	CountJobsOfRows(1, JOB_FAILED);
}

/* ------------------------------------------------------------- triggers */

/* A column of a trigger's row, by name; *isnull says whether it is NULL. */
static Datum
RowColumn(TriggerData *trigger, HeapTuple row, const char *column, bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(trigger->tg_relation);
	int			attno = SPI_fnumber(desc, column);

	if (attno <= 0)
		elog(ERROR, "jobqueue: table %s has no column \"%s\"",
			 RelationGetRelationName(trigger->tg_relation), column);
	return heap_getattr(row, attno, desc, isnull);
}

static TriggerData *
RowTrigger(FunctionCallInfo fcinfo, bool before, TriggerEvent event)
{
	TriggerData *trigger = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_ROW(trigger->tg_event) ||
		TRIGGER_FIRED_BEFORE(trigger->tg_event) != before ||
		(trigger->tg_event & TRIGGER_EVENT_OPMASK) != event)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jobqueue: %s is for the extension's own triggers",
						get_func_name(fcinfo->flinfo->fn_oid))));
	return trigger;
}

/*
 * AFTER DELETE on queue_jobs, for a job that held a slot of its key or
 * has children: the slot goes to the key's next job, the children learn
 * what became of their parent.  A failed job's row in the failed table
 * keeps its concurrency key, for a retry.
 */
Datum
jobqueue_flow_job_removed(PG_FUNCTION_ARGS)
{
	TriggerData *trigger = RowTrigger(fcinfo, false, TRIGGER_EVENT_DELETE);
	HeapTuple	row = trigger->tg_trigtuple;
	JqCall		call;
	bool		isnull;
	bool		no_key;
	bool		no_flow;
	int64		id;
	text	   *queue;
	Datum		key;
	Datum		flow;
	bool		has_children;
	bool		cancelled = current_removal == JOB_REMOVAL_CANCELLED;
	bool		completed = current_removal == JOB_REMOVAL_COMPLETED;
	bool		failed = false;

	if (current_removal == JOB_REMOVAL_MOVED)
		return PointerGetDatum(NULL);
	key = RowColumn(trigger, row, "concurrency_key", &no_key);
	has_children = DatumGetBool(RowColumn(trigger, row, "has_children", &isnull));
	if (no_key && !has_children)
		return PointerGetDatum(NULL);	/* nothing held, nobody waiting */
	flow = RowColumn(trigger, row, "flow", &no_flow);
	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	id = DatumGetInt64(RowColumn(trigger, row, "id", &isnull));
	queue = DatumGetTextPP(RowColumn(trigger, row, "queue", &isnull));

	SPI_connect();
	if (!cancelled && !completed)
	{
		Datum		args[2] = {Int64GetDatum(id), key};

		/* one statement tells whether it failed, and keeps its key if it did */
		if (!no_key)
			QueueExecute(&call, &statements[PLAN_FAILED_SET_KEY], args, NULL, SPI_OK_UPDATE);
		else
			QueueExecute(&call, &statements[PLAN_JOB_IS_FAILED], args, NULL, SPI_OK_SELECT);
		failed = SPI_processed == 1;
	}
	if (!no_flow && !no_key && strcmp(TextDatumGetCString(flow), "slot") == 0)
		RefillKeySlots(&call, queue, DatumGetTextPP(key), 1);
	if (has_children)
	{
		if (cancelled || failed)
		{
			Datum		args[1] = {Int64GetDatum(id)};

			ChildrenParentDone(&call, id, true);
			ChildrenFollowParent(&call, id, cancelled);
			/* a cancelled parent never comes back; a failed one may be retried */
			if (cancelled)
				QueueExecute(&call, &statements[PLAN_PARENT_FORGET], args, NULL, SPI_OK_DELETE);
		}
		else
			ChildrenParentDone(&call, id, false);
	}
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * AFTER DELETE on queue_failed_jobs, per statement (the rows removed as
 * "removed"): of the removed rows, those now in queue_jobs were retried,
 * the others forgotten.  A retried parent brings back the children that
 * failed with it, waiting for it again (and theirs, as each comes back);
 * a retried child runs at once, without its parents; a forgotten row
 * takes its dependencies with it.
 */
Datum
jobqueue_flow_failed_removed(PG_FUNCTION_ARGS)
{
	TriggerData *trigger = (TriggerData *) fcinfo->context;
	JqCall		call;
	const char *s;

	if (!CALLED_AS_TRIGGER(fcinfo) || TRIGGER_FIRED_FOR_ROW(trigger->tg_event) ||
		!TRIGGER_FIRED_BY_DELETE(trigger->tg_event) || trigger->tg_oldtable == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jobqueue: %s is for the extension's own triggers",
						get_func_name(fcinfo->flinfo->fn_oid))));
	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	s = call.quoted_schema;

	SPI_connect();
	if (SPI_register_trigger_data(trigger) != SPI_OK_TD_REGISTER)
		elog(ERROR, "jobqueue: could not read the removed failed rows");
	/* the transition table cannot be in a kept plan: these run as text */
	/* a statement trigger fires for a statement that deleted nothing, too */
	SpiExecuteSafely(psprintf("SELECT 1 WHERE EXISTS (SELECT 1 FROM removed)"
						      " AND EXISTS (SELECT 1 FROM %s.queue_job_parents)", s), true);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return PointerGetDatum(NULL);
	}
	SpiExecuteSafely(psprintf("UPDATE %s.queue_jobs j SET has_children = true FROM removed r"
						      " WHERE j.id = r.id AND NOT j.has_children"
						      "  AND EXISTS (SELECT 1 FROM %s.queue_job_parents d WHERE d.parent = r.id)",
						      s, s), false);
	SpiExecuteSafely(psprintf("DELETE FROM %s.queue_job_parents d USING removed r"
						      " WHERE d.child = r.id AND EXISTS (SELECT 1 FROM %s.queue_jobs j"
						      "  WHERE j.id = r.id AND j.flow IS DISTINCT FROM 'parents')",
						      s, s), false);
	SpiExecuteSafely(psprintf("DELETE FROM %s.queue_job_parents d USING removed r"
						      " WHERE (d.parent = r.id OR d.child = r.id)"
						      "  AND NOT EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = r.id)",
						      s, s), false);
	SpiExecuteSafelyWithArgs(psprintf("WITH revived AS ("
						              "  DELETE FROM %s.queue_failed_jobs f WHERE f.id IN ("
						              "   SELECT d.child FROM %s.queue_job_parents d JOIN removed r ON d.parent = r.id"
						              "   WHERE NOT d.run_anyway"
						              "    AND EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = r.id))"
						              "  RETURNING f.*"
						              ")"
						              " INSERT INTO %s.queue_jobs (id, queue, name, payload, attempts, max_attempts,"
						              "  priority, available_at, ready, last_error, created_at, concurrency_key,"
						              "  flow, parked_run_at, waiting_parents, has_children)"
						              " SELECT v.id, v.queue, v.name, v.payload, 0, v.max_attempts, v.priority,"
						              "  'infinity', false, '', v.created_at, v.concurrency_key, 'parents', $1,"
						              "  (SELECT pg_catalog.count(*) FROM %s.queue_job_parents d WHERE d.child = v.id),"
						              "  EXISTS (SELECT 1 FROM %s.queue_job_parents d WHERE d.parent = v.id)"
						              " FROM revived v RETURNING queue",
						              s, s, s, s, s, s),
							 1, (Oid[]) {TIMESTAMPTZOID},
							 (Datum[]) {TimestampTzGetDatum(call.now)}, false);
	CountJobsOfRows(1, JOB_RETRIED);
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * AFTER TRUNCATE on queue_jobs or queue_failed_jobs (no row trigger fires):
 * after queue_jobs, no job holds or waits for a slot any more; after
 * either, a dependency whose child or parent is in neither table is gone.
 * (A TRUNCATE of both tables runs this after both are empty.)
 */
Datum
jobqueue_flow_jobs_truncated(PG_FUNCTION_ARGS)
{
	TriggerData *trigger = (TriggerData *) fcinfo->context;
	JqCall		call;
	const char *s;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigger->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("jobqueue: %s is for the extension's own triggers",
						get_func_name(fcinfo->flinfo->fn_oid))));
	JqCallBegin(&call, fcinfo, JQ_API_1_5);
	s = call.quoted_schema;
	SPI_connect();
	if (strcmp(RelationGetRelationName(trigger->tg_relation), "queue_jobs") == 0)
		SpiExecuteSafely(psprintf("DELETE FROM %s.queue_key_slots", s), false);
	SpiExecuteSafely(psprintf("DELETE FROM %s.queue_job_parents d"
						      " WHERE NOT (EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = d.child)"
						      "            OR EXISTS (SELECT 1 FROM %s.queue_failed_jobs f WHERE f.id = d.child))"
						      "    OR NOT (EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = d.parent)"
						      "            OR EXISTS (SELECT 1 FROM %s.queue_failed_jobs f WHERE f.id = d.parent))",
						      s, s, s, s, s),
					 false);
	SPI_finish();
	return PointerGetDatum(NULL);
}
