/*-------------------------------------------------------------------------
 *
 * warm.c
 *		The SQL functions warm() and warm_table().
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
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "engine.h"
#include "parallel_warm.h"

PG_FUNCTION_INFO_V1(warm);
PG_FUNCTION_INFO_V1(warm_table);

/*
 * Open a relation for warming and check that the caller may read it: SELECT
 * on the table, or for an index on its table (as pg_prewarm does since
 * 18.1).  The table of an index is locked before the index.  *privOid gets
 * the relation whose lock the caller must release besides rel's.
 */
static Relation
open_for_warming(Oid relOid, Oid *privOid)
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

static void
close_for_warming(Relation rel, Oid privOid)
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

#define ARG_NOT_NULL(n, what) \
	do { \
		if (PG_ARGISNULL(n)) \
			ereport(ERROR, \
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
					 errmsg("%s cannot be null", (what)))); \
	} while (0)

/*
 * warm(relation, mode, fork, first_block, last_block): pg_prewarm()'s
 * arguments and meaning, with a look-ahead that keeps the disk busy.  Most
 * of it is pg_prewarm()'s checks, one after the other, each with its error.
 */
Datum
warm(PG_FUNCTION_ARGS)
{
	Oid			relOid;
	Oid			privOid;
	WarmMode	mode;
	char	   *forkString;
	ForkNumber	fork;
	Relation	rel;
	int64		nblocks;
	int64		first_block;
	int64		last_block;
	WarmRange	r;
	uint64		done;

	ARG_NOT_NULL(0, "relation");
	ARG_NOT_NULL(1, "mode");
	ARG_NOT_NULL(2, "fork");
	relOid = PG_GETARG_OID(0);
	mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	forkString = text_to_cstring(PG_GETARG_TEXT_PP(2));
	fork = forkname_to_number(forkString);
	wc_check_mode_supported(mode);

	rel = open_for_warming(relOid, &privOid);

	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation \"%s\" does not have storage",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind),
				 rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
				 errhint("Use warm_table() to warm all partitions.") : 0));

	if (!smgrexists(RelationGetSmgr(rel), fork))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fork \"%s\" does not exist for relation \"%s\"",
						forkString, RelationGetRelationName(rel))));

	nblocks = RelationGetNumberOfBlocksInFork(rel, fork);
	first_block = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3);
	last_block = PG_ARGISNULL(4) ? nblocks - 1 : PG_GETARG_INT64(4);
	if ((!PG_ARGISNULL(3) && (first_block < 0 || first_block >= nblocks)) ||
		(!PG_ARGISNULL(4) && (last_block < 0 || last_block >= nblocks)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block %lld is out of range for fork \"%s\" of relation \"%s\"",
						(long long) ((!PG_ARGISNULL(3) &&
									  (first_block < 0 || first_block >= nblocks)) ?
									 first_block : last_block),
						forkString, RelationGetRelationName(rel)),
				 nblocks > 0 ?
				 errdetail("Valid block numbers are 0 to %lld.",
						   (long long) (nblocks - 1)) :
				 errdetail("The fork has no blocks.")));
	if (first_block > last_block && !(PG_ARGISNULL(3) && PG_ARGISNULL(4)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("first_block %lld is greater than last_block %lld",
						(long long) first_block, (long long) last_block)));

	done = 0;
	if (nblocks > 0)
	{
		r.start = (BlockNumber) first_block;
		r.count = (BlockNumber) (last_block - first_block + 1);
		done = wc_warm_range(rel, fork, mode, &r);
	}

	close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
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
 * warm_table(table, mode): a table with everything a query on it reads;
 * for a partitioned table, all its partitions.
 */
Datum
warm_table(PG_FUNCTION_ARGS)
{
	Oid			relOid;
	WarmMode	mode;
	Relation	rel;
	Oid			privOid;
	char		relkind;
	uint64		done = 0;

	ARG_NOT_NULL(0, "table");
	ARG_NOT_NULL(1, "mode");
	relOid = PG_GETARG_OID(0);
	mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	wc_check_mode_supported(mode);

	rel = open_for_warming(relOid, &privOid);
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(relkind),
				 errhint("Use warm() to warm a single relation.")));

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

	close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
}
