/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The extension's shared memory, requested once for all its users.
 *
 * With shared_preload_libraries, several concerns keep state in shared
 * memory (waiting.c, notifier.c, claimpos.c).  Each registers its segment
 * here from _PG_init: a name, a size, where its pointer lives and how to
 * fill a new segment.  One shmem_request_hook asks for all of them and one
 * shmem_startup_hook attaches them (and fills them in the postmaster,
 * where they are new).  Without preload nothing registers, every pointer
 * stays NULL, and each concern falls back to what it does without.
 *
 *-------------------------------------------------------------------------
 */
#include "runtime/runtime.h"

#include "common/hashfn.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#define MAX_SEGMENTS 8

typedef struct SharedSegment
{
	const char *name;
	Size		size;
	void	  **pointer;
	void		(*fill) (void *segment);
} SharedSegment;

static SharedSegment segments[MAX_SEGMENTS];
static int	segment_count = 0;
static shmem_request_hook_type previous_shmem_request = NULL;
static shmem_startup_hook_type previous_shmem_startup = NULL;

static void
RequestSegments(void)
{
	if (previous_shmem_request)
		previous_shmem_request();
	for (int i = 0; i < segment_count; i++)
		RequestAddinShmemSpace(MAXALIGN(segments[i].size));
}

static void
AttachSegments(void)
{
	if (previous_shmem_startup)
		previous_shmem_startup();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (int i = 0; i < segment_count; i++)
	{
		bool		found;
		void	   *segment = ShmemInitStruct(segments[i].name, segments[i].size, &found);

		if (!found)
		{
			memset(segment, 0, segments[i].size);
			if (segments[i].fill != NULL)
				segments[i].fill(segment);
		}
		*segments[i].pointer = segment;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * From _PG_init while shared_preload_libraries is loaded: *pointer is set
 * to the segment (zeroed, then filled by fill if new) once shared memory
 * exists.
 */
void
RegisterSharedSegment(const char *name, Size size, void **pointer, void (*fill) (void *segment))
{
	if (segment_count == MAX_SEGMENTS)
		elog(ERROR, "jobqueue: too many shared memory segments");
	if (segment_count == 0)
	{
		previous_shmem_request = shmem_request_hook;
		shmem_request_hook = RequestSegments;
		previous_shmem_startup = shmem_startup_hook;
		shmem_startup_hook = AttachSegments;
	}
	segments[segment_count].name = name;
	segments[segment_count].size = size;
	segments[segment_count].pointer = pointer;
	segments[segment_count].fill = fill;
	segment_count++;
}

/*
 * Where the probe for a queue's slot starts (modulo the table's size) in
 * the shared tables keyed by database and queue name: the claim positions,
 * the counters and the notifier's queues.  Each caller hashes the name
 * before it takes the table's spinlock, which is then held for the probe
 * alone: with more backends than cores a holder can lose its core, and
 * every other pushing backend then spins and sleeps behind it.
 */
uint32
QueueSlotHash(Oid database, const char *queue)
{
	return hash_combine(hash_bytes_uint32(database),
						hash_bytes((const unsigned char *) queue, strlen(queue)));
}
