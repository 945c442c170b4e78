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
 * once for a job without key or children).  A rotation's move (ring.c)
 * only moves rows and says so, and so do cancels (admin.c), which delete
 * held jobs too.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

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

/* Why jobs are being deleted from queue_jobs now; reset when a (sub)transaction aborts. */
static JobRemoval current_removal = JOB_REMOVAL_FINISHED;

JobRemoval
SetJobRemoval(JobRemoval removal)
{
	JobRemoval	previous = current_removal;

	current_removal = removal;
	return previous;
}

static void
ResetRemovalAtAbort(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		current_removal = JOB_REMOVAL_FINISHED;
}

static void
ResetRemovalAtSubAbort(SubXactEvent event, SubTransactionId sub, SubTransactionId parent,
					   void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		current_removal = JOB_REMOVAL_FINISHED;
}

void
JobqueueDefineFlow(void)
{
	RegisterXactCallback(ResetRemovalAtAbort, NULL);
	RegisterSubXactCallback(ResetRemovalAtSubAbort, NULL);
}

/* ---------------------------------------------------------------- slots */

/* Take a slot of the key if one is free; the key's row stays locked either way. */
bool
TakeKeySlot(const JqCall *call, text *queue, text *key)
{
	Datum		args[2] = {PointerGetDatum(queue), PointerGetDatum(key)};

	QueueExecute(call, PLAN_KEY_TAKE_SLOT, args, NULL, SPI_OK_INSERT_RETURNING);
	return SPI_processed == 1;
}

/* The columns of the statements that let held-back jobs go (LET_GO_SQL in plans.c). */
typedef enum LetGoColumn
{
	LET_GO_QUEUE = 1, LET_GO_PRIORITY, LET_GO_AVAILABLE_AT, LET_GO_ID, LET_GO_READY,
	LET_GO_WANTS_WAKEUPS
} LetGoColumn;

/* Note every job the last statement let go (NoteJobMayRun); returns how many. */
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
		NoteJobMayRun(call, DatumGetTextPCopy(SPI_getbinval(tuple, desc, LET_GO_QUEUE, &isnull)),
					  &position, DatumGetBool(SPI_getbinval(tuple, desc, LET_GO_READY, &isnull)),
					  DatumGetBool(SPI_getbinval(tuple, desc, LET_GO_WANTS_WAKEUPS, &isnull)));
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
	QueueExecute(call, PLAN_FLOW_LET_GO, args, nulls, SPI_OK_UPDATE_RETURNING);
	NoteJobsLetGo(call);		/* none if it is not held back any more */
}

/*
 * A job of queue may run from position's moment (ready: now): claims that
 * start their search after it must find it, waiting claims and (if the
 * queue wants wake-ups, as the statement that let it go read) listeners
 * learn of it when it is due.
 */
void
NoteJobMayRun(const JqCall *call, text *queue, const ClaimPosition *position, bool ready,
			  bool wants_wakeups)
{
	if (!ready)
	{
		NoteJobDueAt(position->available_at);
		return;
	}
	NoteClaimable(queue, position);
	MarkJobsDue();
	if (wants_wakeups)
		WakeQueue(queue);
}

/*
 * The slots of a key after "given_up" of them were given up: hand free
 * slots to the key's waiting jobs, in their order, and keep the count (the
 * key's row goes when no job holds or waits for a slot).  Also how a
 * raised limit lets more jobs run (given_up 0).  In the usual hand-over,
 * one slot given up and one job waiting, two statements: the lock, and the
 * waiting job's admission; the count stays as it was.
 */
void
RefillKeySlots(const JqCall *call, text *queue, text *key, int given_up)
{
	Datum		args[4] = {PointerGetDatum(queue), PointerGetDatum(key), 0, 0};
	int32		was_running;
	int32		running;
	int32		limit;

	QueueExecute(call, PLAN_KEY_LOCK_SLOTS, args, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		return;					/* no job holds or waits for a slot of the key */
	was_running = SpiInt32(0, 1);
	running = Max(was_running - given_up, 0);
	limit = SpiInt32(0, 2);
	if (running >= limit)
	{
		/*
		 * The key is full by the limit the lock's statement read, with its
		 * snapshot from before it waited for the row: the transaction that
		 * held the row may have raised the limit and filled the key up to
		 * it (AdmitWaitingOfKeys) before it committed.  A statement of its
		 * own reads the limit as it is now.  (Otherwise only a lowered
		 * limit leaves a key full here: rare, and then one more read.)
		 */
		QueueExecute(call, PLAN_KEY_LIMIT_OF, args, NULL, SPI_OK_SELECT);
		limit = SpiInt32(0, 1);
	}
	if (running < limit)
	{
		args[2] = Int32GetDatum(limit - running);
		args[3] = TimestampTzGetDatum(call->now);
		QueueExecute(call, PLAN_KEY_ADMIT_WAITING, args, NULL, SPI_OK_UPDATE_RETURNING);
		running += NoteJobsLetGo(call);
	}
	args[2] = Int32GetDatum(running);
	if (running == 0)
		QueueExecute(call, PLAN_KEY_DROP_SLOTS, args, NULL, SPI_OK_DELETE);
	else if (running != was_running)
		QueueExecute(call, PLAN_KEY_SET_RUNNING, args, NULL, SPI_OK_UPDATE);
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
 * The keys are locked in their order, so two limit changes cannot
 * deadlock.  Between SPI_connect and SPI_finish, after the limit's
 * statement.
 */
void
AdmitWaitingOfKeys(const JqCall *call, text *queue, text *key_prefix)
{
	Datum		args[2] = {PointerGetDatum(queue), PointerGetDatum(key_prefix)};
	SPITupleTable *keys;

	QueueExecute(call, PLAN_KEYS_WAITING, args, NULL, SPI_OK_SELECT);
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
 * A job held back for a slot of its key (just pushed or retried) takes one
 * if one is free and may run; returns whether it did.
 */
bool
AdmitToFreeSlot(const JqCall *call, int64 id, text *queue, text *key)
{
	if (!TakeKeySlot(call, queue, key))
		return false;
	LetJobGo(call, id, "slot");
	return true;
}

/*
 * A child whose parents are all done: it runs, or with a key whose slots
 * are taken, waits for a slot.
 */
void
ReleaseChild(const JqCall *call, int64 id, text *queue, text *key)
{
	Datum		args[1] = {Int64GetDatum(id)};

	if (key == NULL)
		LetJobGo(call, id, NULL);
	else if (!AdmitToFreeSlot(call, id, queue, key))
		QueueExecute(call, PLAN_FLOW_WAIT_FOR_KEY, args, NULL, SPI_OK_UPDATE);
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

	QueueExecute(call, PLAN_CHILDREN_DONE, args, NULL, SPI_OK_UPDATE_RETURNING);
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
	QueueExecute(call, PLAN_CHILDREN_FOLLOW, args, NULL, SPI_OK_INSERT_RETURNING);
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
			QueueExecute(&call, PLAN_FAILED_SET_KEY, args, NULL, SPI_OK_UPDATE);
		else
			QueueExecute(&call, PLAN_JOB_IS_FAILED, args, NULL, SPI_OK_SELECT);
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
				QueueExecute(&call, PLAN_PARENT_FORGET, args, NULL, SPI_OK_DELETE);
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
	SPI_execute(psprintf("SELECT 1 WHERE EXISTS (SELECT 1 FROM removed)"
						 " AND EXISTS (SELECT 1 FROM %s.queue_job_parents)", s), true, 0);
	if (SPI_processed == 0)
	{
		SPI_finish();
		return PointerGetDatum(NULL);
	}
	SPI_execute(psprintf("UPDATE %s.queue_jobs j SET has_children = true FROM removed r"
						 " WHERE j.id = r.id AND NOT j.has_children"
						 "  AND EXISTS (SELECT 1 FROM %s.queue_job_parents d WHERE d.parent = r.id)",
						 s, s), false, 0);
	SPI_execute(psprintf("DELETE FROM %s.queue_job_parents d USING removed r"
						 " WHERE d.child = r.id AND EXISTS (SELECT 1 FROM %s.queue_jobs j"
						 "  WHERE j.id = r.id AND j.flow IS DISTINCT FROM 'parents')",
						 s, s), false, 0);
	SPI_execute(psprintf("DELETE FROM %s.queue_job_parents d USING removed r"
						 " WHERE (d.parent = r.id OR d.child = r.id)"
						 "  AND NOT EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = r.id)",
						 s, s), false, 0);
	SPI_execute_with_args(psprintf("WITH revived AS ("
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
						  (Datum[]) {TimestampTzGetDatum(call.now)}, NULL, false, 0);
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
		SPI_execute(psprintf("DELETE FROM %s.queue_key_slots", s), false, 0);
	SPI_execute(psprintf("DELETE FROM %s.queue_job_parents d"
						 " WHERE NOT (EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = d.child)"
						 "            OR EXISTS (SELECT 1 FROM %s.queue_failed_jobs f WHERE f.id = d.child))"
						 "    OR NOT (EXISTS (SELECT 1 FROM %s.queue_jobs j WHERE j.id = d.parent)"
						 "            OR EXISTS (SELECT 1 FROM %s.queue_failed_jobs f WHERE f.id = d.parent))",
						 s, s, s, s, s),
				false, 0);
	SPI_finish();
	return PointerGetDatum(NULL);
}
