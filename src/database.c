/*-------------------------------------------------------------------------
 *
 * database.c
 *		The databases the workers connect to: which one a worker can
 *		connect to now, and whether a database-level command wants one.
 *
 * A worker connected to a database holds up DROP DATABASE, ALTER DATABASE
 * ... RENAME and the like (up to 18 they fail after 5 s), so the restore's
 * workers and the channel's connect only where no such command waits, and
 * a restore worker leaves its database when one comes (pacer.c).  Such a
 * command takes a lock on the database object before it waits for the
 * sessions; a conditional lock that conflicts with it tells that it is
 * there, and takes nothing from it.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/database.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "database.h"

/*
 * Is a database-level command waiting for the sessions connected to db?
 * Asked by a restore worker between chunks, and before a worker is started
 * there.
 */
bool
wc_database_wanted(Oid db)
{
	LOCKTAG		tag;

	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, db, 0);
	if (LockAcquire(&tag, RowExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, RowExclusiveLock, true);
	return false;
}

/*
 * A database a worker can connect to: one that allows connections, is no
 * template and is not wanted by a command, named name if name is not NULL.
 * InvalidOid if none is free now; *exists says whether there is any.  The
 * shared catalogs' restore worker connects to any; the standby channel's
 * worker to postgres.  A scan of pg_database's heap, not of its name
 * index: the autowarm worker, connected to no database, can read only the
 * heaps of shared catalogs.  With locked, the scan does not wait for a
 * lock on pg_database (a VACUUM FULL of it, or its replay on a standby):
 * *locked then says that nothing could be said.
 */
Oid
wc_connectable_database(const char *name, bool *exists, bool *locked)
{
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			found = InvalidOid;
	MemoryContext cxt = CurrentMemoryContext;

	*exists = false;
	if (locked)
		*locked = false;
	StartTransactionCommand();
	if (locked && !ConditionalLockRelationOid(DatabaseRelationId, AccessShareLock))
	{
		CommitTransactionCommand();
		MemoryContextSwitchTo(cxt);
		*locked = true;
		return InvalidOid;
	}
	rel = table_open(DatabaseRelationId, locked ? NoLock : AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);

		if (form->datistemplate || !form->datallowconn ||
			database_is_invalid_form(form) ||
			(name != NULL && strcmp(NameStr(form->datname), name) != 0))
			continue;
		*exists = true;
		if (!wc_database_wanted(form->oid))
		{
			found = form->oid;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	/* The commit leaves TopMemoryContext current: nothing must go there. */
	MemoryContextSwitchTo(cxt);
	return found;
}
