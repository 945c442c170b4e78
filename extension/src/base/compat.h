/*-------------------------------------------------------------------------
 *
 * base/compat.h
 *	  The server internals that differ between the supported major versions
 *	  of PostgreSQL (15, 16, 17, 18), each behind one named wrapper.
 *
 * The extension is one source tree for every supported version.  Where a
 * server function changed its arguments, a structure its fields or a macro
 * its place, this header says so once and the callers use the wrapper; no
 * other file tests PG_VERSION_NUM.  Each wrapper keeps the meaning the
 * callers were written for (PostgreSQL 15's), and says where a later
 * version's new argument is given the value that keeps it.
 *
 * A part of base/base.h (only that header includes it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_BASE_COMPAT_H
#define JOBQUEUE_BASE_COMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "executor/executor.h"
#include "nodes/bitmapset.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#if PG_VERSION_NUM < 150000
#error "jobqueue needs PostgreSQL 15 or later"
#endif

/*
 * A function that never returns: PostgreSQL 18 marks it before the
 * declaration (pg_noreturn, C11's _Noreturn), older versions after it
 * (pg_attribute_noreturn()).  GCC and Clang take the attribute before the
 * declaration too, so declarations here say "pg_noreturn extern void f(...)".
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * The module's magic block: from 18 it also names the module and its
 * version, which pg_get_loaded_modules() shows.
 */
#if PG_VERSION_NUM >= 180000
#define JQ_MODULE_MAGIC(name_, version_) PG_MODULE_MAGIC_EXT(.name = (name_), .version = (version_))
#else
#define JQ_MODULE_MAGIC(name_, version_) PG_MODULE_MAGIC
#endif

/*
 * Parse and run statements under the search path "pg_catalog" alone (no
 * temporary schema), until the matching end; the token goes back to it.
 * Up to 16 an override search path does it (nothing parsed or looked up);
 * 17 removed those, so from 17 the setting is saved in a new nest level and
 * set as the server's own maintenance commands set it (RestrictSearchPath:
 * "pg_catalog, pg_temp", the temporary schema searched last, and for
 * relations only, which the statements always qualify).  Both are undone by
 * the abort of the (sub)transaction they were begun in.
 */
typedef int CatalogSearchPathToken;

static inline CatalogSearchPathToken
BeginCatalogSearchPath(void)
{
#if PG_VERSION_NUM >= 170000
	int			nest_level = NewGUCNestLevel();

	RestrictSearchPath();
	return nest_level;
#else
	static OverrideSearchPath catalog_only = {NIL, true, false, 0};

	PushOverrideSearchPath(&catalog_only);
	return 0;
#endif
}

static inline void
EndCatalogSearchPath(CatalogSearchPathToken token)
{
#if PG_VERSION_NUM >= 170000
	AtEOXact_GUC(true, token);
#else
	PopOverrideSearchPath();
#endif
}

/*
 * A setting's check hook hands its parsed value on as "extra", which the
 * server frees: up to 15 with free(), from 16 in its own memory context
 * (guc_free).  NULL when out of memory (the check then fails).
 */
static inline void *
AllocSettingExtra(Size size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

static inline void
FreeSettingExtra(void *extra)
{
#if PG_VERSION_NUM >= 160000
	guc_free(extra);
#else
	free(extra);
#endif
}

/* Whether the user owns the extension (16 made the check one for every catalog). */
static inline bool
OwnsExtension(Oid extension, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(ExtensionRelationId, extension, role);
#else
	return pg_extension_ownercheck(extension, role);
#endif
}

/* A table's live and dead row counts in the statistics (renamed in 16). */
#if PG_VERSION_NUM >= 160000
#define STAT_LIVE_TUPLES(entry) ((entry)->live_tuples)
#define STAT_DEAD_TUPLES(entry) ((entry)->dead_tuples)
#else
#define STAT_LIVE_TUPLES(entry) ((entry)->n_live_tuples)
#define STAT_DEAD_TUPLES(entry) ((entry)->n_dead_tuples)
#endif

/*
 * DecodeDateTime, whose callers from 16 pass room for an error's detail;
 * the callers here only want to know whether the text is a timestamp.
 */
static inline int
DecodeDateTimeQuietly(char **field, int *ftype, int nf, int *dtype, struct pg_tm *tm,
					  fsec_t *fsec, int *tz)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tz, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tz);
#endif
}

/*
 * The range table of an executor state for one relation, rte, as logical
 * replication's apply builds it: from 16 the permission entry is apart
 * from the entry (the executor reads the inserted and updated columns from
 * it, for a constraint's error detail), and from 18 the executor is told
 * which entries survived pruning (all: the one).
 */
static inline void
InitRangeTableOfOne(EState *estate, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	List	   *permissions = NIL;

	addRTEPermissionInfo(&permissions, rte);
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, list_make1(rte), permissions, bms_make_singleton(1));
#else
	ExecInitRangeTable(estate, list_make1(rte), permissions);
#endif
#else
	ExecInitRangeTable(estate, list_make1(rte));
#endif
}

/*
 * Which index entries an update must add (table_tuple_update says): up to
 * 15 all or none (none: a heap-only version); from 16 also "the summarizing
 * ones only" (BRIN), the index insertion told so.
 */
#if PG_VERSION_NUM >= 160000
typedef TU_UpdateIndexes IndexesToUpdate;
#define UPDATE_NEEDS_INDEX_ENTRIES(u) ((u) != TU_None)
#define UPDATE_SUMMARIZING_ONLY(u) ((u) == TU_Summarizing)
#else
typedef bool IndexesToUpdate;
#define UPDATE_NEEDS_INDEX_ENTRIES(u) (u)
#define UPDATE_SUMMARIZING_ONLY(u) false
#endif

/*
 * ExecInsertIndexTuples without arbiter indexes or speculative insertion
 * (a plain insert's or update's entries); summarizing_only as above (false
 * for an insert).
 */
static inline List *
InsertIndexEntries(ResultRelInfo *result, TupleTableSlot *slot, EState *estate, bool update,
				   bool summarizing_only)
{
#if PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(result, slot, estate, update, false, NULL, NIL,
								 summarizing_only);
#else
	Assert(!summarizing_only);
	return ExecInsertIndexTuples(result, slot, estate, update, false, NULL, NIL);
#endif
}

/* index_beginscan without instrumentation (18 added the argument). */
static inline IndexScanDesc
BeginIndexScan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

/*
 * The relation's primary key index, InvalidOid without one.  Up to 17 a
 * deferrable primary key is not reported; 18 reports it only when asked
 * (deferrable_ok), which is not asked here: a row looked up by it must be
 * unique at once.
 */
static inline Oid
PrimaryKeyIndex(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

#endif							/* JOBQUEUE_BASE_COMPAT_H */
