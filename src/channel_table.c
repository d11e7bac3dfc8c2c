/*-------------------------------------------------------------------------
 *
 * channel_table.c
 *		The standby channel's table: finding it, the checks that it is the
 *		extension's own, and reading its rows' fields.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel_table.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "channel_state.h"
#include "channel_table.h"
#include "compat.h"

/* The columns the extension made, in order (pg_warmcache--1.1--1.2.sql). */
static const struct
{
	const char *name;
	Oid			type;
}			channel_columns[] =
{
	{"chunk", INT4OID},
	{"dumped_at", TIMESTAMPTZOID},
	{"data", BYTEAOID}
};

StaticAssertDecl(lengthof(channel_columns) == WC_NCOLS,
				 "channel_table.h numbers each column of the table");

/*
 * The extension's member table of the channel, found through pg_depend, or
 * InvalidOid.  A table of that name that is not a member (a user's, in a
 * schema the extension shares) is never considered.
 */
static Oid
member_table(Oid ext, char **why)
{
	Relation	dep;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			found = InvalidOid;

	dep = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(dep, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend form = (Form_pg_depend) GETSTRUCT(tuple);
		char	   *name;

		if (form->classid != RelationRelationId || form->objsubid != 0 ||
			form->deptype != DEPENDENCY_EXTENSION)
			continue;
		name = get_rel_name(form->objid);
		if (name == NULL || strcmp(name, WC_CHANNEL_TABLE) != 0)
			continue;
		if (OidIsValid(found))
		{
			*why = psprintf("extension pg_warmcache has more than one member named %s",
							WC_CHANNEL_TABLE);
			found = InvalidOid;
			break;
		}
		found = form->objid;
	}
	systable_endscan(scan);
	table_close(dep, AccessShareLock);
	return found;
}

/*
 * The pid of a process that holds a lock on relation relid of this
 * database in a mode that conflicts with mode, as pg_locks shows them
 * (GetLockStatusData()), or 0 if none is seen (it let go meanwhile).  On
 * a standby the startup process holds the locks that replay takes.
 */
static int
lock_holder(Oid relid, LOCKMODE mode)
{
	LockData   *data = GetLockStatusData();
	int			pid = 0;
	int			i;

	for (i = 0; i < data->nelements && pid == 0; i++)
	{
		LockInstanceData *lock = &data->locks[i];
		LOCKMODE	held;

		if (lock->locktag.locktag_type != LOCKTAG_RELATION ||
			lock->locktag.locktag_field1 != MyDatabaseId ||
			lock->locktag.locktag_field2 != relid ||
			lock->pid == MyProcPid)
			continue;
		for (held = 1; held <= MaxLockMode; held++)
			if ((lock->holdMask & LOCKBIT_ON(held)) != 0 &&
				DoLockModesConflict(held, mode))
			{
				pid = lock->pid;
				break;
			}
	}
	return pid;
}

/*
 * Lock relid in mode if that is free now; else say what is locked, and by
 * which process.
 */
/* The holder lock_now() last found, for wc_channel_lock_holder(). */
static int	last_holder = 0;

static bool
lock_now(Oid relid, LOCKMODE mode, char **why)
{
	char	   *name;
	int			holder;

	if (ConditionalLockRelationOid(relid, mode))
		return true;
	name = get_rel_name(relid);
	holder = lock_holder(relid, mode);
	last_holder = holder;
	if (holder != 0)
		*why = psprintf("relation %s, held by the process of pid %d",
						name ? quote_identifier(name) : "(dropped)", holder);
	else
		*why = psprintf("relation %s", name ? quote_identifier(name) : "(dropped)");
	return false;
}

/*
 * Lock the table's TOAST relation and its indexes now, in mode, so that
 * reading or writing the chunks out of line takes no lock that waits.
 */
static bool
lock_toast_now(Relation rel, LOCKMODE mode, char **why)
{
	Oid			toastid = rel->rd_rel->reltoastrelid;
	Relation	toast;
	List	   *indexes;
	ListCell   *lc;

	if (!OidIsValid(toastid))
		return true;
	if (!lock_now(toastid, mode, why))
		return false;
	toast = table_open(toastid, NoLock);
	indexes = RelationGetIndexList(toast);
	table_close(toast, NoLock);
	foreach(lc, indexes)
	{
		if (!lock_now(lfirst_oid(lc), mode, why))
			return false;
	}
	return true;
}

/*
 * Is the open, locked table what the extension made?  False with *why if
 * not.  Its owner is a superuser, so no other role can have given it a
 * trigger, rule, policy, column or index that would run code of theirs.
 */
static bool
table_is_ours(Relation rel, char **why)
{
	Form_pg_class form = rel->rd_rel;
	TupleDesc	desc = RelationGetDescr(rel);
	char	   *name = quote_qualified_identifier(get_namespace_name(form->relnamespace),
												  NameStr(form->relname));
	int			i;

	if (form->relkind != RELKIND_RELATION)
		*why = psprintf("%s is not an ordinary table", name);
	else if (form->relpersistence != RELPERSISTENCE_PERMANENT)
		*why = psprintf("table %s is not a permanent table", name);
	else if (!superuser_arg(form->relowner))
		*why = psprintf("table %s is owned by role \"%s\", which is not a superuser",
						name, GetUserNameFromId(form->relowner, true));
	else if (form->relhastriggers)
		*why = psprintf("table %s has triggers", name);
	else if (form->relhasrules)
		*why = psprintf("table %s has rules", name);
	else if (form->relrowsecurity)
		*why = psprintf("table %s has row-level security", name);
	else if (desc->natts != WC_NCOLS)
		*why = psprintf("table %s has %d columns, not %d", name,
						desc->natts, (int) WC_NCOLS);
	else
	{
		for (i = 0; i < WC_NCOLS; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (att->attisdropped || att->attgenerated != '\0' ||
				att->atttypid != channel_columns[i].type ||
				strcmp(NameStr(att->attname), channel_columns[i].name) != 0)
			{
				*why = psprintf("column %d of table %s is not %s %s", i + 1,
								name, channel_columns[i].name,
								format_type_be(channel_columns[i].type));
				break;
			}
		}
	}
	return *why == NULL;
}

/*
 * Is the open, locked index the table's primary key on chunk, a plain
 * B-tree with the built-in integer operators?
 */
static bool
index_is_ours(Relation rel, Relation index, char **why)
{
	Form_pg_index form = index->rd_index;

	if (!form->indisprimary || !form->indisunique || !form->indisvalid ||
		!form->indisready || !form->indislive || !form->indimmediate ||
		form->indnatts != 1 || form->indnkeyatts != 1 ||
		form->indkey.values[0] != WC_COL_CHUNK + 1 ||
		index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_opfamily[0] != INTEGER_BTREE_FAM_OID ||
		index->rd_opcintype[0] != INT4OID ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
		*why = psprintf("index %s of table %s is not its primary key on chunk",
						quote_identifier(RelationGetRelationName(index)),
						quote_identifier(RelationGetRelationName(rel)));
	return *why == NULL;
}

/*
 * Find the channel's table by catalog access alone, lock it and what
 * reading or writing it touches in mode without waiting, and check that it
 * is what the extension made.  Who may write it is not asked: a standby
 * trusts no row for being in it, only for its signature (pubrow.c).  On
 * WC_TABLE_OK, *ct holds it open.
 */
TableStatus
wc_open_channel_table(LOCKMODE mode, ChannelTable *ct, char **why)
{
	Oid			ext;
	Oid			relid;
	Oid			indexid;
	List	   *indexes;

	last_holder = 0;
	*why = NULL;
	ct->rel = ct->index = NULL;
	ext = get_extension_oid("pg_warmcache", true);
	if (!OidIsValid(ext))
		return WC_TABLE_NONE;
	relid = member_table(ext, why);
	if (*why != NULL)
		return WC_TABLE_REFUSED;
	if (!OidIsValid(relid))
		return WC_TABLE_NONE;

	if (!lock_now(relid, mode, why))
		return WC_TABLE_LOCKED;
	/* Locked, it cannot change any more; it may have gone meanwhile. */
	ct->rel = try_relation_open(relid, NoLock);
	if (ct->rel == NULL)
		return WC_TABLE_NONE;
	if (!table_is_ours(ct->rel, why))
		return WC_TABLE_REFUSED;

	/* The primary key is its only index: no other is to be maintained. */
	indexes = RelationGetIndexList(ct->rel);
	if (list_length(indexes) != 1)
	{
		*why = psprintf("table %s has %d indexes, not its primary key alone",
						quote_identifier(RelationGetRelationName(ct->rel)),
						list_length(indexes));
		return WC_TABLE_REFUSED;
	}
	indexid = linitial_oid(indexes);
	if (!lock_now(indexid, mode, why))
		return WC_TABLE_LOCKED;
	ct->index = index_open(indexid, NoLock);
	if (!index_is_ours(ct->rel, ct->index, why))
		return WC_TABLE_REFUSED;
	if (!lock_toast_now(ct->rel, mode, why))
		return WC_TABLE_LOCKED;
	return WC_TABLE_OK;
}

void
wc_close_channel_table(ChannelTable *ct)
{
	/* The locks are held to the end of the transaction. */
	if (ct->index != NULL)
		index_close(ct->index, NoLock);
	if (ct->rel != NULL)
		table_close(ct->rel, NoLock);
}

/*
 * The pid of the process that held the lock wc_open_channel_table() last
 * found taken (it returned WC_TABLE_LOCKED), or 0 if it was not seen.
 */
int
wc_channel_lock_holder(void)
{
	return last_holder;
}

/*
 * The fields of a row of the table; false if one is null, which no
 * publication writes.
 */
bool
wc_channel_row_fields(HeapTuple tuple, TupleDesc desc, int32 *chunk,
					  TimestampTz *dumped_at, Datum *data)
{
	Datum		values[WC_NCOLS];
	bool		nulls[WC_NCOLS];

	heap_deform_tuple(tuple, desc, values, nulls);
	if (nulls[WC_COL_CHUNK] || nulls[WC_COL_DUMPED] || nulls[WC_COL_DATA])
		return false;
	*chunk = DatumGetInt32(values[WC_COL_CHUNK]);
	*dumped_at = DatumGetTimestampTz(values[WC_COL_DUMPED]);
	*data = values[WC_COL_DATA];
	return true;
}

/* A scan of the table's rows through its key, from chunk 0 or below 0. */
SysScanDesc
wc_channel_scan_chunks(ChannelTable *ct, bool deltas, int32 from)
{
	ScanKeyData key;

	if (deltas)
		ScanKeyInit(&key, 1, BTLessEqualStrategyNumber, F_INT4LE,
					Int32GetDatum(from));
	else
		ScanKeyInit(&key, 1, BTGreaterEqualStrategyNumber, F_INT4GE,
					Int32GetDatum(from));
	return systable_beginscan_ordered(ct->rel, ct->index, GetActiveSnapshot(),
									  1, &key);
}
