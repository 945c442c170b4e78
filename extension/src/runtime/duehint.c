/*-------------------------------------------------------------------------
 *
 * duehint.c
 *	  Letting a claim skip the due-probe when nothing can be due.
 *
 * Before it claims, queue_reserve probes for delayed and held jobs whose
 * moment has come and for ready jobs past their deadline (reserve.c,
 * PromoteDueJobs).  Nearly always that finds nothing, yet it is two of the
 * claim's four statements.  So a backend remembers, per queues argument,
 * "nothing of these queues falls due before <until>", and skips the probe
 * until then.  The memory must not miss a row another session writes
 * later, which takes shared memory (shared_preload_libraries):
 *
 *   - a probe that found nothing due also reads the earliest moment any row
 *     of those queues falls due within the next LOOKAHEAD (one index range
 *     each); "until" is that moment, or now + LOOKAHEAD;
 *   - every transaction that writes a row which falls due later (a delayed
 *     push, a lease, a release, a deadline) notes the earliest such moment,
 *     and when it commits with that moment less than LOOKAHEAD away, bumps a
 *     shared counter, after its rows are visible;
 *   - the remembered "until" holds only while the counter has not moved
 *     since before the probe's snapshot was taken.
 *
 * A row the probe could not see was committed after its snapshot, so its
 * writer bumped the counter after the probe read it, unless the row falls
 * due after commit time + LOOKAHEAD, which is after "until".  Writes that
 * bypass these functions (plain SQL on queue_jobs, a restore) are seen at
 * the latest LOOKAHEAD later.  Without preload, or with a clock offset set
 * in the session (tests travelling in time), every claim probes.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "utils/memutils.h"

#define LOOKAHEAD_USECS USECS_PER_SEC

/* What a probe found: nothing of these queues is due before until. */
typedef struct ProbeMemory
{
	bool		valid;
	uint64		generation;		/* the shared counter before the probe */
	TimestampTz until;
	ArrayType  *queues;			/* in TopMemoryContext */
} ProbeMemory;

static ProbeMemory remembered;	/* committed: usable by the next claims */
static ProbeMemory pending;		/* this transaction's probe, kept at commit */

/* This transaction wrote a row that falls due at note_at. */
static bool note_set = false;
static TimestampTz note_at = 0;

static void
ForgetProbe(ProbeMemory *memory)
{
	if (memory->queues != NULL)
		pfree(memory->queues);
	memset(memory, 0, sizeof(ProbeMemory));
}

/* A row this transaction wrote becomes claimable (or expires) at moment. */
void
NoteJobDueAt(TimestampTz moment)
{
	if (!note_set || moment < note_at)
		note_at = moment;
	note_set = true;
}

/*
 * Whether the probe can be skipped for queues at now.  Own uncommitted
 * writes count too: they are not in the shared counter yet.
 */
bool
DueProbeCanBeSkipped(ArrayType *queues, TimestampTz now)
{
	pg_atomic_uint64 *counter = SharedDueWritesCounter();

	if (counter == NULL || QueueClockShifted() || !remembered.valid)
		return false;
	if (now >= remembered.until || (note_set && note_at < remembered.until))
		return false;
	if (pg_atomic_read_u64(counter) != remembered.generation)
		return false;
	return VARSIZE(queues) == VARSIZE(remembered.queues) &&
		memcmp(queues, remembered.queues, VARSIZE(queues)) == 0;
}

/*
 * Whether a probe should look ahead and be remembered; if so, *generation
 * is the shared counter now, read before the probe's statements take their
 * snapshots (READ COMMITTED: one per statement).
 */
bool
DueProbeCanBeRemembered(uint64 *generation)
{
	pg_atomic_uint64 *counter = SharedDueWritesCounter();

	/* each statement must take a snapshot later than the counter's reading */
	if (counter == NULL || QueueClockShifted() || IsolationUsesXactSnapshot())
		return false;
	*generation = pg_atomic_read_u64(counter);
	return true;
}

/* The end of the look-ahead window of a probe made at now. */
TimestampTz
DueProbeHorizon(TimestampTz now)
{
	return now + LOOKAHEAD_USECS;
}

/*
 * A probe at now found nothing due, and nothing of queues falls due before
 * until (at most the horizon).  Kept when the transaction commits: if it
 * rolls back, what it promoted or failed is back and must be found again.
 */
void
RememberDueProbe(ArrayType *queues, uint64 generation, TimestampTz now, TimestampTz until)
{
	ForgetProbe(&pending);
	if (until <= now)
		return;
	pending.queues = MemoryContextAlloc(TopMemoryContext, VARSIZE(queues));
	memcpy(pending.queues, queues, VARSIZE(queues));
	pending.generation = generation;
	pending.until = until;
	pending.valid = true;
}

/* Rows written by a committed transaction fall due at moment: announce them if soon. */
static void
AnnounceDueAt(TimestampTz moment)
{
	pg_atomic_uint64 *counter = SharedDueWritesCounter();

	if (counter != NULL &&
		(QueueClockShifted() || moment < GetCurrentTimestamp() + LOOKAHEAD_USECS))
		pg_atomic_fetch_add_u64(counter, 1);
}

/* COMMIT PREPARED: the prepared transaction's rows are visible now. */
void
DueHintApplyPrepared(const PreparedEffects *effects)
{
	if (effects->due_noted)
		AnnounceDueAt(effects->due_at);
}

/*
 * At commit (the rows are visible by now): announce rows falling due soon,
 * and keep this transaction's probe.  At abort: forget both.  PREPARE
 * leaves the announcement to COMMIT PREPARED and forgets the probe (what it
 * promoted is not visible to others until then).
 */
void
DueHintAtTransactionEnd(XactEvent event)
{
	if (event == XACT_EVENT_PRE_PREPARE && note_set && EffectsBeingPrepared() != NULL)
	{
		EffectsBeingPrepared()->due_noted = true;
		EffectsBeingPrepared()->due_at = note_at;
	}
	if (event == XACT_EVENT_COMMIT)
	{
		if (note_set)
			AnnounceDueAt(note_at);
		if (pending.valid)
		{
			ForgetProbe(&remembered);
			remembered = pending;
			memset(&pending, 0, sizeof(ProbeMemory));
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		ForgetProbe(&pending);
		note_set = false;
	}
}
