/*-------------------------------------------------------------------------
 *
 * warm.c
 *		What warm() and warm_table() (sql.c) do once their arguments are
 *		checked: open a relation and check the caller's right to read it,
 *		and warm a table with everything a query on it reads.
 *
 * warm() takes pg_prewarm()'s arguments with the same meaning and checks;
 * warm_table() warms a table with everything a query on it reads: its
 * forks, its indexes, its TOAST table and TOAST index, and for a
 * partitioned table all partitions.  Both check SELECT on the table (for
 * an index, on its table, as pg_prewarm does since 18.1) and hand each
 * relation fork to parallel_warm.c, which warms it with background workers
 * where that pays, else alone through the warming engine (engine.c), at
 * full speed.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/warm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "engine.h"
#include "parallel_warm.h"
#include "warm.h"

/*
 * Open a relation for warming and check that the caller may read it: SELECT
 * on the table, or for an index on its table (as pg_prewarm does since
 * 18.1).  The table of an index is locked before the index.  *privOid gets
 * the relation whose lock the caller must release besides rel's.
 */
Relation
wc_open_for_warming(Oid relOid, Oid *privOid)
{
	Relation	rel;
	char		relkind = get_rel_relkind(relOid);
	AclResult	aclresult;

	*privOid = relOid;
	if (relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX)
	{
		*privOid = IndexGetRelation(relOid, true);
		if (OidIsValid(*privOid))
			LockRelationOid(*privOid, AccessShareLock);
	}

	rel = try_relation_open(relOid, AccessShareLock);
	if (rel == NULL)
	{
		if (*privOid != relOid && OidIsValid(*privOid))
			UnlockRelationOid(*privOid, AccessShareLock);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relOid),
				 errdetail("It may have been dropped concurrently.")));
	}

	/*
	 * The table's OID may have been dropped and reused before we locked it;
	 * then the index no longer points to it.
	 */
	if (!OidIsValid(*privOid) ||
		(*privOid != relOid && *privOid != IndexGetRelation(relOid, true)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not find the table of index \"%s\"",
						RelationGetRelationName(rel))));

	aclresult = pg_class_aclcheck(*privOid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(*privOid)),
					   get_rel_name(*privOid));

	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot warm temporary tables of other sessions")));
	return rel;
}

/* Close what wc_open_for_warming() opened, and release its locks. */
void
wc_close_for_warming(Relation rel, Oid privOid)
{
	Oid			relOid = RelationGetRelid(rel);

	relation_close(rel, AccessShareLock);
	if (privOid != relOid)
		UnlockRelationOid(privOid, AccessShareLock);
}

/*
 * Warm a whole fork if it exists; returns blocks warmed.
 */
static uint64
warm_fork(Relation rel, ForkNumber fork, WarmMode mode)
{
	WarmRange	r;

	if (!smgrexists(RelationGetSmgr(rel), fork))
		return 0;
	r.start = 0;
	r.count = RelationGetNumberOfBlocksInFork(rel, fork);
	return wc_warm_range(rel, fork, mode, &r);
}

/*
 * Warm one table with storage: its forks, its indexes, its TOAST table and
 * the TOAST table's index.  The table is locked by the caller.
 */
static uint64
warm_one_table(Oid relid, WarmMode mode)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	uint64		done = 0;
	List	   *indexes;
	ListCell   *lc;
	Oid			toastid;

	if (rel == NULL)
		return 0;				/* partition dropped concurrently */

	done += warm_fork(rel, MAIN_FORKNUM, mode);
	done += warm_fork(rel, VISIBILITYMAP_FORKNUM, mode);
	indexes = RelationGetIndexList(rel);
	toastid = rel->rd_rel->reltoastrelid;
	foreach(lc, indexes)
	{
		Relation	ind = try_relation_open(lfirst_oid(lc), AccessShareLock);

		if (ind == NULL)
			continue;
		if (RELKIND_HAS_STORAGE(ind->rd_rel->relkind))
			done += warm_fork(ind, MAIN_FORKNUM, mode);
		relation_close(ind, AccessShareLock);
	}
	list_free(indexes);
	relation_close(rel, AccessShareLock);

	if (OidIsValid(toastid))
		done += warm_one_table(toastid, mode);
	return done;
}

/*
 * Warm a table, locked and checked by the caller, whose kind is relkind:
 * with everything a query on it reads, and for a partitioned table all
 * its partitions.  Returns the blocks warmed.
 */
uint64
wc_warm_table(Oid relOid, char relkind, WarmMode mode)
{
	uint64		done = 0;

	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		List	   *parts = find_all_inheritors(relOid, AccessShareLock, NULL);
		ListCell   *lc;

		foreach(lc, parts)
		{
			Oid			part = lfirst_oid(lc);

			CHECK_FOR_INTERRUPTS();
			if (RELKIND_HAS_STORAGE(get_rel_relkind(part)))
				done += warm_one_table(part, mode);
		}
		list_free(parts);
	}
	else
		done = warm_one_table(relOid, mode);
	return done;
}
