/*-------------------------------------------------------------------------
 *
 * claimpos.c
 *	  The claim position: where a queue's claims start their search.
 *
 * A claim searches the claim index (the queue's hash from 1.7, priority
 * DESC, available_at, id) WHERE ready from the head of its queue's range.  Every job claimed or completed leaves
 * an index entry there until VACUUM removes it, and while an old snapshot
 * is held anywhere in the database VACUUM may not: each claim then walks
 * past every earlier claim's entry, and a queue slows down as it works.
 *
 * So, with the library preloaded, each queue has a position in shared
 * memory: no claimable job of the queue comes before it in claim order.
 * A claim starts its search there (reserve.c) instead of at the head, and
 * when it commits, moves the position to the last job it claimed.
 * Everything that makes a job claimable notes the job's position, and at
 * its commit moves the queue's position back to it if it is earlier: a
 * push, a release without delay, a retry of a failed job, a promotion of a
 * delayed job or of one whose lease ran out; and a claim that rolls back
 * moves it back to the first job it had claimed.
 *
 * Races.  A claim reads the position before its search's snapshot, and
 * its advance at commit must not undo a move back it could not see.  So
 * every move back bumps the queue's generation and is kept (as the
 * earliest of its span of generations) for the last few thousand moves;
 * the advance then lands no further than the earliest move since the
 * generation the claim read, and not at all if the kept spans no longer
 * reach back that far.  A job locked by something other than a
 * claim when a claim passes it (plain SQL, or a row lock of the
 * application's) is behind the position without a move back: so a
 * position is trusted for at most MAX_AGE (30 s) after a claim that
 * searched from the head established it, and the next claim then searches
 * from the head again (with an old snapshot held, that one search walks
 * the dead entries, once per MAX_AGE).  No job waits longer than that for a claim that would
 * otherwise have found it.
 *
 * Not used without preload, for a 1.0 schema, with a clock offset set in
 * the session, under REPEATABLE READ or SERIALIZABLE (the snapshot is
 * older than the position read), or for a queue that finds every one of
 * the POSITION_SLOTS slots taken by a queue used within MAX_AGE; the claim
 * then searches from the head, as it always did.  A slot unused for
 * MAX_AGE goes to the next queue that needs one (the least recently used
 * first); the transaction-end lists name slots with their incarnation, so
 * nothing noted for the slot's former queue is applied to the new one.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#define POSITION_SLOTS 256		/* queues (of all databases) with a position */
/*
 * Recent moves back are kept per queue as the earliest of each span of
 * MOVE_SPAN generations, for the last MOVE_SPANS spans: an advance sees
 * every move since the generation it read (and some before, which only
 * makes it more careful) while its claim took fewer than
 * MOVE_SPAN * (MOVE_SPANS - 1) moves back, about 64,000: many seconds of
 * pushes at thousands a second.
 */
#define MOVE_SPAN 1024
#define MOVE_SPANS 64
#define MAX_AGE_USECS (30 * USECS_PER_SEC)

typedef struct MoveSpan
{
	uint64		span;			/* generation / MOVE_SPAN of the moves kept here */
	ClaimPosition earliest;		/* the earliest position they moved to */
} MoveSpan;

typedef struct PositionSlot
{
	Oid			database;		/* InvalidOid: free */
	char		queue[JQ_QUEUE_NAME_BYTES];
	uint64		incarnation;	/* bumped whenever the slot is given to a queue */
	TimestampTz used;			/* last looked up */
	bool		valid;
	ClaimPosition at;
	TimestampTz established;	/* when a search from the head set it */
	TimestampTz refreshing;		/* when a claim began a search from the head, or 0 */
	uint64		generation;		/* moves back so far */
	MoveSpan	spans[MOVE_SPANS];	/* spans[s % MOVE_SPANS]: the moves of span s */
} PositionSlot;

typedef struct PositionShared
{
	slock_t		mutex;
	PositionSlot slots[POSITION_SLOTS];
} PositionShared;

/* What this transaction will do to positions when it ends. */
typedef struct PendingClaim
{
	int			slot;
	ClaimStart	start;
	ClaimPosition first;		/* of the jobs it claimed, in claim order */
	ClaimPosition last;
} PendingClaim;

typedef struct PendingMove
{
	int			slot;
	uint64		incarnation;	/* of the slot when noted */
	ClaimPosition to;
} PendingMove;

static PositionShared *positions = NULL;
static bool claim_positions_enabled = true;
static List *pending_claims = NIL;	/* of PendingClaim *, in TopTransactionContext */
static List *pending_moves = NIL;	/* of PendingMove * */

static void
FillPositions(void *segment)
{
	SpinLockInit(&((PositionShared *) segment)->mutex);
}


/* Give slot i to this database's queue, as new.  Mutex held. */
static int
TakeSlot(int i, const char *queue, TimestampTz now)
{
	PositionSlot *slot = &positions->slots[i];
	uint64		incarnation = slot->incarnation + 1;

	memset(slot, 0, sizeof(PositionSlot));
	for (int s = 0; s < MOVE_SPANS; s++)
		slot->spans[s].span = PG_UINT64_MAX;	/* holds no moves yet */
	slot->database = MyDatabaseId;
	strlcpy(slot->queue, queue, JQ_QUEUE_NAME_BYTES);
	slot->incarnation = incarnation;
	slot->used = now;
	return i;
}

/*
 * The slot of this database's queue, taking a free one, else the least
 * recently used one idle for MAX_AGE; -1 when none.  hash (QueueSlotHash)
 * and now (the clock): read by the caller before it took the mutex.
 * Mutex held.
 */
static int
FindSlot(const char *queue, uint32 hash, TimestampTz now)
{
	uint32		start = hash % POSITION_SLOTS;
	int			idlest = -1;

	for (int probe = 0; probe < POSITION_SLOTS; probe++)
	{
		int			i = (start + probe) % POSITION_SLOTS;
		PositionSlot *slot = &positions->slots[i];

		if (slot->database == MyDatabaseId && strcmp(slot->queue, queue) == 0)
		{
			slot->used = now;
			return i;
		}
		if (slot->database == InvalidOid)
			return TakeSlot(i, queue, now);
		if (now - slot->used >= MAX_AGE_USECS &&
			(idlest < 0 || slot->used < positions->slots[idlest].used))
			idlest = i;
	}
	return idlest < 0 ? -1 : TakeSlot(idlest, queue, now);
}

/* Whether this call's claims may use positions (see the header). */
bool
ClaimPositionsUsable(const JqCall *call)
{
	return positions != NULL && claim_positions_enabled && JqCallSince(call, JQ_API_1_1) &&
		!QueueClockShifted() && !IsolationUsesXactSnapshot();
}

/*
 * Where a claim of queue starts: *start says whether from a position
 * (from_position) or from the head.  Read before the search's snapshot.
 */
void
ReadClaimStart(text *queue, ClaimStart *start)
{
	char	   *name = text_to_cstring(queue);
	uint32		hash = QueueSlotHash(MyDatabaseId, name);
	TimestampTz now = GetCurrentTimestamp();

	memset(start, 0, sizeof(ClaimStart));
	SpinLockAcquire(&positions->mutex);
	start->slot = FindSlot(name, hash, now);
	if (start->slot >= 0)
	{
		PositionSlot *slot = &positions->slots[start->slot];

		start->incarnation = slot->incarnation;
		start->generation = slot->generation;
		start->at = slot->at;
		start->from_position = slot->valid;
		/*
		 * An old position is renewed by one claim searching from the head;
		 * the others keep using it meanwhile (the search can be long while
		 * an old snapshot is held), unless that claim is gone.
		 */
		if (slot->valid && now - slot->established >= MAX_AGE_USECS &&
			(slot->refreshing == 0 || now - slot->refreshing >= MAX_AGE_USECS))
		{
			slot->refreshing = now;
			start->from_position = false;
		}
	}
	SpinLockRelease(&positions->mutex);
	pfree(name);
}

/*
 * A claim starts no later than anything this transaction itself made
 * claimable in the queue (a promotion just before the search): its search
 * sees those rows, and must not step over them.
 */
void
IncludeOwnMoves(ClaimStart *start)
{
	ListCell   *cell;

	if (!start->from_position)
		return;
	foreach(cell, pending_moves)
	{
		PendingMove *move = (PendingMove *) lfirst(cell);

		if (move->slot == start->slot && move->incarnation == start->incarnation &&
			JobOrderBefore(&move->to, &start->at))
			start->at = move->to;
	}
}

static void *
TransactionAlloc(Size size)
{
	return MemoryContextAllocZero(TopTransactionContext, size);
}

/* This transaction claimed jobs first..last (claim order) of start's queue. */
void
NoteClaimed(const ClaimStart *start, const ClaimPosition *first, const ClaimPosition *last)
{
	PendingClaim *claim;
	MemoryContext old;

	if (start->slot < 0)
		return;
	claim = TransactionAlloc(sizeof(PendingClaim));
	claim->slot = start->slot;
	claim->start = *start;
	claim->first = *first;
	claim->last = *last;
	old = MemoryContextSwitchTo(TopTransactionContext);
	pending_claims = lappend(pending_claims, claim);
	MemoryContextSwitchTo(old);
}

/*
 * This transaction made a job of queue claimable at position: the queue's
 * position moves back to it at commit.  One note per queue is kept, the
 * earliest.
 */
void
NoteClaimable(text *queue, const ClaimPosition *position)
{
	char	   *name;
	uint32		hash;
	TimestampTz now;
	int			slot;
	uint64		incarnation = 0;
	ListCell   *cell;
	PendingMove *move;
	MemoryContext old;

	if (positions == NULL)
		return;
	name = text_to_cstring(queue);
	hash = QueueSlotHash(MyDatabaseId, name);
	now = GetCurrentTimestamp();
	SpinLockAcquire(&positions->mutex);
	slot = FindSlot(name, hash, now);
	if (slot >= 0)
		incarnation = positions->slots[slot].incarnation;
	SpinLockRelease(&positions->mutex);
	pfree(name);
	if (slot < 0)
		return;
	foreach(cell, pending_moves)
	{
		move = (PendingMove *) lfirst(cell);
		if (move->slot == slot && move->incarnation == incarnation)
		{
			if (JobOrderBefore(position, &move->to))
				move->to = *position;
			return;
		}
	}
	move = TransactionAlloc(sizeof(PendingMove));
	move->slot = slot;
	move->incarnation = incarnation;
	move->to = *position;
	old = MemoryContextSwitchTo(TopTransactionContext);
	pending_moves = lappend(pending_moves, move);
	MemoryContextSwitchTo(old);
}

/* Move slot's position back to "to" (if earlier), as a new generation.  Mutex held. */
static void
MoveBackLocked(PositionSlot *slot, const ClaimPosition *to)
{
	uint64		span;
	MoveSpan   *kept;

	slot->generation++;
	span = slot->generation / MOVE_SPAN;
	kept = &slot->spans[span % MOVE_SPANS];
	if (kept->span != span)
	{
		kept->span = span;
		kept->earliest = *to;
	}
	else if (JobOrderBefore(to, &kept->earliest))
		kept->earliest = *to;
	if (slot->valid && JobOrderBefore(to, &slot->at))
		slot->at = *to;
}

/*
 * A committed claim's advance to "last", no further than any move back
 * since the generation it read.  Mutex held.
 */
static void
AdvanceLocked(PositionSlot *slot, const PendingClaim *claim, TimestampTz now)
{
	ClaimPosition target = claim->last;

	uint64		first_span = (claim->start.generation + 1) / MOVE_SPAN;
	uint64		last_span = slot->generation / MOVE_SPAN;

	if (slot->generation > claim->start.generation)
	{
		if (last_span - first_span >= MOVE_SPANS)
			return;				/* the spans no longer reach back: stay */
		for (uint64 s = first_span; s <= last_span; s++)
		{
			const MoveSpan *kept = &slot->spans[s % MOVE_SPANS];

			if (kept->span == s && JobOrderBefore(&kept->earliest, &target))
				target = kept->earliest;
		}
	}
	if (!claim->start.from_position)
	{
		/* a search from the head: the position is known afresh */
		slot->valid = true;
		slot->at = target;
		slot->established = now;
		slot->refreshing = 0;
	}
	else if (slot->valid && JobOrderBefore(&slot->at, &target))
		slot->at = target;
}

/*
 * PREPARE TRANSACTION: the moves back are kept for COMMIT PREPARED, the
 * earliest per slot (prepared.c); with no room for one, the positions of
 * the database are distrusted then instead.
 */
static void
CarryMovesToPrepared(PreparedEffects *effects)
{
	ListCell   *cell;

	foreach(cell, pending_moves)
	{
		PendingMove *move = (PendingMove *) lfirst(cell);
		PreparedMove *carried = NULL;

		for (int i = 0; i < effects->move_count && carried == NULL; i++)
			if (effects->moves[i].slot == move->slot &&
				effects->moves[i].incarnation == move->incarnation)
				carried = &effects->moves[i];
		if (carried != NULL)
		{
			if (JobOrderBefore(&move->to, &carried->to))
				carried->to = move->to;
		}
		else if (effects->move_count < PREPARED_QUEUES)
		{
			carried = &effects->moves[effects->move_count++];
			carried->slot = move->slot;
			carried->incarnation = move->incarnation;
			carried->to = move->to;
		}
		else
			effects->overflow = true;
	}
}

/* COMMIT PREPARED: the prepared transaction's moves back. */
void
ClaimPositionsApplyPrepared(const PreparedEffects *effects)
{
	if (positions == NULL)
		return;
	SpinLockAcquire(&positions->mutex);
	for (int i = 0; i < effects->move_count; i++)
	{
		PositionSlot *slot = &positions->slots[effects->moves[i].slot];

		if (slot->incarnation == effects->moves[i].incarnation)
			MoveBackLocked(slot, &effects->moves[i].to);
	}
	if (effects->overflow)
		for (int i = 0; i < POSITION_SLOTS; i++)
			if (positions->slots[i].database == MyDatabaseId)
				positions->slots[i].valid = false;	/* the next claims search from the head */
	SpinLockRelease(&positions->mutex);
}

/*
 * The transaction-end step of claim positions (xact.c).  A prepared
 * transaction's claims are undone as a rollback's are (moving a position
 * back is always safe); its moves wait for COMMIT PREPARED.
 */
void
ClaimPositionsAtTransactionEnd(XactEvent event)
{
	bool		commit = event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT;
	ListCell   *cell;
	TimestampTz now;

	if (event == XACT_EVENT_PRE_PREPARE)
	{
		PreparedEffects *effects = EffectsBeingPrepared();

		if (effects != NULL)
			CarryMovesToPrepared(effects);
		return;
	}
	if (!commit && event != XACT_EVENT_ABORT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	if (pending_claims == NIL && pending_moves == NIL)
		return;
	/* a claim's advance is stamped; a push's move back needs no clock */
	now = pending_claims != NIL ? GetCurrentTimestamp() : 0;
	SpinLockAcquire(&positions->mutex);
	/* the claims first: this transaction's own moves may not be undone by them */
	foreach(cell, pending_claims)
	{
		PendingClaim *claim = (PendingClaim *) lfirst(cell);
		PositionSlot *slot = &positions->slots[claim->slot];

		if (slot->incarnation != claim->start.incarnation)
			continue;			/* given to another queue since */
		if (commit)
			AdvanceLocked(slot, claim, now);
		else
			MoveBackLocked(slot, &claim->first);
	}
	if (commit)
		foreach(cell, pending_moves)
		{
			PendingMove *move = (PendingMove *) lfirst(cell);
			PositionSlot *slot = &positions->slots[move->slot];

			if (slot->incarnation == move->incarnation)
				MoveBackLocked(slot, &move->to);
		}
	SpinLockRelease(&positions->mutex);
	/* the lists lived in TopTransactionContext, which is going away */
	pending_claims = NIL;
	pending_moves = NIL;
}

/*
 * A subtransaction that rolls back undoes its claims: they must not
 * advance at commit.  Turn every claim noted so far into a move back to
 * its first job (a claim of an outer level that survives is then merely
 * not advanced, which is safe).
 */
void
ClaimPositionsAtSubtransactionEnd(SubXactEvent event)
{
	ListCell   *cell;

	if (event != SUBXACT_EVENT_ABORT_SUB || pending_claims == NIL)
		return;
	SpinLockAcquire(&positions->mutex);
	foreach(cell, pending_claims)
	{
		PendingClaim *claim = (PendingClaim *) lfirst(cell);
		PositionSlot *slot = &positions->slots[claim->slot];

		if (slot->incarnation == claim->start.incarnation)
			MoveBackLocked(slot, &claim->first);
	}
	SpinLockRelease(&positions->mutex);
	pending_claims = NIL;
}

PG_FUNCTION_INFO_V1(jobqueue_claim_position);

/*
 * jobqueue_claim_position(queue) returns (trusted, priority, id): the
 * queue's claim position in this database, for the isolation tests of
 * claimpos.c.  Not part of the extension's SQL API: a test creates it
 * from the library.  No row without preload or for a queue with none.
 */
Datum
jobqueue_claim_position(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	bool		found = false;

	ArgRequire(fcinfo, 0, "queue");
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);
	if (positions == NULL)
		return (Datum) 0;
	SpinLockAcquire(&positions->mutex);
	for (int i = 0; i < POSITION_SLOTS; i++)
	{
		PositionSlot *slot = &positions->slots[i];

		if (slot->database != MyDatabaseId || strcmp(slot->queue, queue) != 0 || !slot->valid)
			continue;
		values[0] = BoolGetDatum(GetCurrentTimestamp() - slot->established < MAX_AGE_USECS);
		values[1] = Int32GetDatum(slot->at.priority);
		values[2] = Int64GetDatum(slot->at.id);
		found = true;
	}
	SpinLockRelease(&positions->mutex);
	if (found)
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* From _PG_init: the setting always exists. */
void
JobqueueDefineClaimPositions(void)
{
	DefineCustomBoolVariable("jobqueue.claim_positions",
							 "Whether claims start their search at their queue's claim position.",
							 "Off: every claim searches its queue from the head, as without preload "
							 "(for comparisons). Needs jobqueue in shared_preload_libraries.",
							 &claim_positions_enabled, true, PGC_USERSET, 0, NULL, NULL, NULL);
}

/* From _PG_init while shared_preload_libraries is loaded. */
void
JobqueueRequestClaimPositions(void)
{
	RegisterSharedSegment("jobqueue claim positions", sizeof(PositionShared),
						  (void **) &positions, FillPositions);
}
