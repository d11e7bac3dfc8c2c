/*-------------------------------------------------------------------------
 *
 * channel.c
 *		The standby channel: how a standby learns the primary's hot set.
 *
 * Physical replication already carries everything a standby has, so the
 * channel is a table, not a new kind of WAL or a connection: the
 * extension's table warmcache_published in the database postgres holds the
 * primary's last dump file, cut into chunks of WC_CHUNK_BYTES.  After each
 * dump on a primary that a standby streams from, the autowarm worker
 * starts a short-lived worker connected to postgres that replaces the rows
 * in one transaction.  Their WAL replays on every standby, cascading ones
 * too, whatever the library does there, and a standby that is behind reads
 * an older, consistent version.  Nothing needs a setting: no connection
 * string, role or pg_hba.conf line, since the standby never connects to
 * the primary.
 *
 * On a standby with pg_warmcache.follow_primary on, the autowarm worker
 * starts such a worker every WC_FOLLOW_POLL_MS; it reads the table and,
 * when the dump time changed, writes the chunks to pg_warmcache.followed
 * (the format of the dump file, checked the same way: it must come from
 * this database system, and be no larger than this server could use).
 * The autowarm worker then restores that file (restore.c).  What the
 * worker finds (no table, nothing published, a file that cannot be used,
 * a table that is locked or not the extension's own) is logged once, when
 * it changes.
 *
 * The worker runs as the bootstrap superuser, so it resolves no name
 * through a search path and runs no SQL: it finds the table through the
 * catalogs (the extension's member in pg_depend, owned by a superuser,
 * without triggers, rules or row security, with the columns and primary
 * key the extension made) and reads and writes it by heap and index
 * access, which call no function a user could define.  What standbys
 * follow is decided by superusers alone: a table that any other role could
 * write (a grant on it or on a column, pg_write_all_data) is refused, on
 * the primary and on every standby, as long as that lasts.
 *
 * Nothing here waits for a lock: the table, its index, its TOAST table and
 * pg_database are locked only if that is free at once, and otherwise the
 * round is given up and tried again at the next look; lock_timeout bounds
 * the catalog locks of the connection itself.  The autowarm worker, which
 * waits for the channel worker, goes on dumping.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel.c
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
#include "catalog/pg_auth_members.h"
#include "catalog/pg_authid.h"
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
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "channel.h"
#include "compat.h"
#include "database.h"
#include "dump.h"
#include "dumpfile.h"
#include "pubdelta.h"
#include "pubrow.h"
#include "runcodec.h"
#include "operation.h"
#include "worker.h"

/*
 * The most deltas published after a full publication: a standby that
 * follows none of them applies them all, one after the other.
 */
#define WC_MAX_DELTAS		32

/*
 * The longest a channel worker waits for a lock it cannot take
 * conditionally: those the connection and the catalog lookups take on
 * catalogs (on a standby, replay of a VACUUM FULL of one holds them).
 */
#define WC_CHANNEL_LOCK_TIMEOUT "2s"

/*
 * The channel's shared state.  Its plain fields are written only with the
 * status lock held exclusively (operation.h), so that warmcache_status()
 * reports them with the rest; the notes are the channel workers' (see
 * channel_notes()).
 */
typedef struct ChannelShared
{
	uint64		published_dumps;	/* the dumps (DumpStatus.dumps) dealt
									 * with: published, or with nowhere to
									 * be published */
	FollowState follow_state;	/* on a standby: what the channel found */
	TimestampTz followed_dumped_at; /* the followed file's dump time, or 0 */
	int64		followed_blocks;	/* the blocks it holds */
	ChannelNotes notes;
} ChannelShared;

static ChannelShared *channel = NULL;

/* What a channel worker is started for. */
typedef enum ChannelJob
{
	WC_CHANNEL_PUBLISH,
	WC_CHANNEL_FETCH
} ChannelJob;

/* What looking for the table found. */
typedef enum TableStatus
{
	WC_TABLE_OK,
	WC_TABLE_NONE,				/* no extension, or one older than 1.2 */
	WC_TABLE_LOCKED,			/* *why names what is locked */
	WC_TABLE_REFUSED,			/* *why says what is wrong with it */
	WC_TABLE_WRITABLE			/* as made, but a role that is no superuser
								 * could write it: *why names one */
} TableStatus;

/* The channel's table and its primary key, open and locked. */
typedef struct ChannelTable
{
	Relation	rel;
	Relation	index;
} ChannelTable;

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

#define WC_COL_CHUNK	0
#define WC_COL_DUMPED	1
#define WC_COL_DATA		2
#define WC_NCOLS		lengthof(channel_columns)

const char *
wc_follow_state_name(FollowState state)
{
	switch (state)
	{
		case WC_FOLLOW_NOT_LOOKED:
			return "starting";
		case WC_FOLLOW_NO_DATABASE:
			return "no database postgres";
		case WC_FOLLOW_NO_TABLE:
			return "nothing published: no extension";
		case WC_FOLLOW_NOTHING_PUBLISHED:
			return "nothing published yet";
		case WC_FOLLOW_UNUSABLE:
			return "published file not usable";
		case WC_FOLLOW_LOCKED:
			return "published table locked";
		case WC_FOLLOW_REFUSED:
			return "published table refused";
		case WC_FOLLOW_WRITABLE:
			return "published table writable by others";
		case WC_FOLLOW_FOLLOWING:
			return "following";
		case WC_FOLLOW_PROMOTED:
			return "promoted";
	}
	return "unknown";
}

/*
 * Note what the channel found; a change is logged, once, and with again
 * the same state too (a new publication found unusable).
 */
static void
set_follow_state(FollowState state, const char *problem, bool again)
{
	FollowState old;

	wc_status_lock(LW_EXCLUSIVE);
	old = channel->follow_state;
	channel->follow_state = state;
	wc_status_unlock();
	if (old == state && !again)
		return;

	switch (state)
	{
		case WC_FOLLOW_NOT_LOOKED:
		case WC_FOLLOW_PROMOTED:
			break;
		case WC_FOLLOW_NO_DATABASE:
			ereport(LOG,
					(errmsg("cannot follow the primary's hot set"),
					 errdetail("Database \"%s\" does not exist or does not allow connections. The primary publishes its hot set in that database.",
							   WC_CHANNEL_DATABASE)));
			break;
		case WC_FOLLOW_NO_TABLE:
			ereport(LOG,
					(errmsg("the primary publishes no hot set to follow"),
					 errdetail("Database \"%s\" has no table %s: extension pg_warmcache 1.2 or later is not installed there.",
							   WC_CHANNEL_DATABASE, WC_CHANNEL_TABLE),
					 errhint("Run CREATE EXTENSION pg_warmcache, or ALTER EXTENSION pg_warmcache UPDATE, in database \"%s\" on the primary.",
							 WC_CHANNEL_DATABASE)));
			break;
		case WC_FOLLOW_NOTHING_PUBLISHED:
			ereport(LOG,
					(errmsg("the primary has not published its hot set yet"),
					 errdetail("Table %s in database \"%s\" is empty.",
							   WC_CHANNEL_TABLE, WC_CHANNEL_DATABASE),
					 errhint("The primary publishes after each dump, with pg_warmcache in \"shared_preload_libraries\", \"pg_warmcache.autowarm\" on and \"pg_warmcache.dump_interval\" above zero; or this standby has not replayed that far yet.")));
			break;
		case WC_FOLLOW_UNUSABLE:
			ereport(LOG,
					(errmsg("the primary's published hot set is not usable: %s",
							problem ? problem : "unknown problem"),
					 errdetail("The standby tries again when the primary publishes its next dump.")));
			break;
		case WC_FOLLOW_LOCKED:
			ereport(LOG,
					(errmsg("cannot read the primary's published hot set now"),
					 errdetail("A session, or the replay of a lock taken on the primary, holds a lock on %s. The standby does not wait: it tries again at each look, and its own dumps go on.",
							   problem ? problem : "its table")));
			break;
		case WC_FOLLOW_WRITABLE:
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the primary's published hot set is not followed: %s",
							problem ? problem : "unknown problem"),
					 errdetail("Only what superusers alone can write is followed. What the table holds now is never followed, even once that is undone; the primary's next publication is."),
					 errhint("Revoke the privilege, or the membership in pg_write_all_data or in the role named, on the primary.")));
			break;
		case WC_FOLLOW_REFUSED:
			ereport(LOG,
					(errmsg("the standby channel's table is not the one the extension made: %s",
							problem ? problem : "unknown problem"),
					 errdetail("Nothing is read from it until that changes.")));
			break;
		case WC_FOLLOW_FOLLOWING:
			ereport(LOG,
					(errmsg("following the primary's hot set")));
			break;
	}
}

/*
 * The channel's notes, in its shared memory.  One channel worker runs at a
 * time, and the autowarm worker that starts it waits for its end, so the
 * notes need no lock.
 */
static ChannelNotes *
channel_notes(void)
{
	return &channel->notes;
}

/*
 * Log what a publication found if it differs from what the last one did
 * (each time without notes).
 */
static void
note_publish_outcome(ChannelNotes *notes, PublishOutcome outcome,
					 const char *what)
{
	if (notes != NULL)
	{
		PublishOutcome old = notes->last_publish;

		notes->last_publish = outcome;
		if (old == outcome)
		{
			if (outcome == WC_PUBLISH_LOCKED)
				elog(DEBUG1, "%s is locked: publication skipped again",
					 what);
			return;
		}
	}

	switch (outcome)
	{
		case WC_PUBLISH_DONE:
			if (notes != NULL)
				ereport(LOG,
						(errmsg("publishing the hot set again")));
			break;
		case WC_PUBLISH_LOCKED:
			ereport(LOG,
					(errmsg("cannot publish the hot set now"),
					 errdetail("A session holds a lock on %s. Publication does not wait: it is tried again every few seconds, and dumps go on.",
							   what)));
			break;
		case WC_PUBLISH_FAILED:
			ereport(LOG,
					(errmsg("could not publish the hot set"),
					 errdetail("The publish worker ended without committing. The dump stays pending and is published at the next look, every 5 s; the worker's error is logged above.")));
			break;
		case WC_PUBLISH_WRITABLE:
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the hot set is not published: %s", what),
					 errdetail("Standbys follow only what superusers alone can write. The dump is published once that is undone."),
					 errhint("Revoke the privilege, or the membership in pg_write_all_data or in the role named.")));
			break;
		case WC_PUBLISH_REFUSED:
			ereport(LOG,
					(errmsg("the standby channel's table is not the one the extension made: %s",
							what),
					 errdetail("Nothing is published until that changes.")));
			break;
	}
}

/*
 * Start a channel worker and wait for it to end.  False if no worker slot
 * was free: the caller tries again later.  It waits on nothing without a
 * bound, so neither does the caller.
 */
static bool
run_channel_worker(ChannelJob job)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	wc_init_dynamic_worker(&worker, "pg_warmcache_channel_main",
						   "pg_warmcache channel");
	strcpy(worker.bgw_name, job == WC_CHANNEL_PUBLISH ?
		   "pg_warmcache publish" : "pg_warmcache follow");
	worker.bgw_main_arg = Int32GetDatum((int32) job);

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return false;
	if (WaitForBackgroundWorkerShutdown(handle) == BGWH_POSTMASTER_DIED)
		proc_exit(1);
	pfree(handle);
	return true;
}

/*
 * Is a standby streaming from this server?  Without one, nobody would read
 * what is published yet: the last dump waits for one to connect.  Any
 * walsender counts (a base backup's or a logical one's too), as
 * pg_stat_replication would list it.
 */
static bool
standby_streaming(void)
{
	return wc_count_processes(B_WAL_SENDER, NULL) > 0;
}

/* The shared memory of the channel (shmem.c). */
Size
wc_channel_shmem_size(void)
{
	return MAXALIGN(sizeof(ChannelShared));
}

/* Attach to it, making it at the first start (shmem.c). */
void
wc_channel_shmem_init(void)
{
	bool		found;

	channel = ShmemInitStruct("pg_warmcache channel", sizeof(ChannelShared),
							  &found);
	if (!found)
		memset(channel, 0, sizeof(ChannelShared));
}

/* What the channel found and follows; the status lock is held. */
void
wc_channel_status(ChannelStatus *status)
{
	status->follow_state = channel->follow_state;
	status->followed_dumped_at = channel->followed_dumped_at;
	status->followed_blocks = channel->followed_blocks;
}

/* The standby was promoted: it follows no primary any more. */
void
wc_channel_note_promoted(void)
{
	wc_status_lock(LW_EXCLUSIVE);
	channel->follow_state = WC_FOLLOW_PROMOTED;
	wc_status_unlock();
}

/* Whether a dump waits to be published. */
bool
wc_publish_pending(void)
{
	DumpStatus	dump;

	wc_status_lock(LW_SHARED);
	wc_dump_status(&dump);
	wc_status_unlock();
	return dump.dumps != channel->published_dumps;
}

/* The dumps up to the seq'th are dealt with, unless later ones were. */
static void
note_published(uint64 seq)
{
	wc_status_lock(LW_EXCLUSIVE);
	if (channel->published_dumps < seq)
		channel->published_dumps = seq;
	wc_status_unlock();
}

/*
 * On a primary, after a dump: publish it, if one waits to be and a standby
 * streams from this server.
 */
void
wc_publish(void)
{
	ChannelNotes *notes = channel_notes();
	DumpStatus	dump;
	bool		now;
	bool		pending;
	bool		exists;
	bool		locked;
	uint64		seq;

	/*
	 * Without a standby now, the dump waits for one to connect; at
	 * wal_level minimal there is never one.
	 */
	now = XLogStandbyInfoActive() && !RecoveryInProgress() &&
		standby_streaming();
	wc_status_lock(LW_EXCLUSIVE);
	wc_dump_status(&dump);
	seq = dump.dumps;
	pending = seq != channel->published_dumps && now;
	if (!XLogStandbyInfoActive())
		channel->published_dumps = seq;
	wc_status_unlock();
	if (!pending)
		return;

	/*
	 * The dump stays pending until a publish worker committed it, or found
	 * nothing to publish it in: one that fails (a lock_timeout on rows a
	 * session holds locked) leaves it for the next look, 5 s later.  A dump
	 * made meanwhile is pending in its own right.
	 */
	if (OidIsValid(wc_connectable_database(WC_CHANNEL_DATABASE, &exists, &locked)))
	{
		notes->publish_ended = notes->publish_handled = false;
		if (run_channel_worker(WC_CHANNEL_PUBLISH))
		{
			if (!notes->publish_ended)
				note_publish_outcome(notes, WC_PUBLISH_FAILED, NULL);
			if (notes->publish_handled)
			{
				note_published(seq);
			}
			return;
		}
	}
	if (locked)
		note_publish_outcome(notes, WC_PUBLISH_LOCKED, "catalog pg_database");
	if (!exists && !locked)
	{
		/* No database postgres: nowhere to publish. */
		note_published(seq);
	}
	/* Else wanted by a command, locked, or no worker slot: at the next look. */
}

/*
 * On a following standby: read the table.  True if it held a dump not
 * followed yet, now in WC_FOLLOWED_FILE.
 */
bool
wc_fetch_followed(void)
{
	bool		exists;
	bool		locked;
	bool		fresh;

	/* Not while a database-level command waits: the worker would delay it. */
	if (!OidIsValid(wc_connectable_database(WC_CHANNEL_DATABASE, &exists, &locked)))
	{
		if (locked)
			set_follow_state(WC_FOLLOW_LOCKED, "catalog pg_database", false);
		else if (!exists)
			set_follow_state(WC_FOLLOW_NO_DATABASE, NULL, false);
		return false;
	}
	if (!run_channel_worker(WC_CHANNEL_FETCH))
		return false;
	/* Cleared when the pass begins (wc_begin_follow_pass()), not here. */
	fresh = wc_follow_pass_is_due();
	return fresh;
}

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

/* Lock relid in mode if that is free now; else say what is locked. */
static bool
lock_now(Oid relid, LOCKMODE mode, char **why)
{
	char	   *name;

	if (ConditionalLockRelationOid(relid, mode))
		return true;
	name = get_rel_name(relid);
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

/* The privileges that change what the table holds. */
#define WC_WRITE_PRIVILEGES \
	(ACL_INSERT | ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE)

/*
 * A role that is no superuser and is a direct member of roleid, or
 * InvalidOid.  Any member, whatever its grant's options, may SET ROLE to
 * roleid or reach it through a role between them.
 */
static Oid
member_not_superuser(Oid roleid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			found = InvalidOid;

	rel = table_open(AuthMemRelationId, NoLock);
	ScanKeyInit(&key, Anum_pg_auth_members_roleid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(roleid));
	scan = systable_beginscan(rel, AuthMemRoleMemIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Oid			member = ((Form_pg_auth_members) GETSTRUCT(tuple))->member;

		if (!superuser_arg(member))
		{
			found = member;
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
	return found;
}

/*
 * Can a role that is not a superuser change what the open, locked table
 * holds?  The table's owner is a superuser, but its ACL, its columns' ACLs
 * and membership in pg_write_all_data can give others that right, and what
 * they write is what standbys would follow.  Every role that is no
 * superuser is asked of the server's own privilege checks, which count all
 * of those and inheritance through other roles.  A role that has the right
 * but cannot log in and has no member but superusers (pg_write_all_data
 * itself, as installed) is no way in.  False, with *why, if it can; false
 * with *locked if pg_authid or pg_auth_members was locked.
 */
static bool
only_superusers_write(Relation rel, bool *locked, char **why)
{
	Oid			relid = RelationGetRelid(rel);
	const char *name = quote_identifier(RelationGetRelationName(rel));
	Relation	authid;
	SysScanDesc scan;
	HeapTuple	tuple;

	*locked = false;
	if (!lock_now(AuthIdRelationId, AccessShareLock, why) ||
		!lock_now(AuthMemRelationId, AccessShareLock, why))
	{
		*locked = true;
		return false;
	}
	authid = table_open(AuthIdRelationId, NoLock);
	scan = systable_beginscan(authid, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_authid form = (Form_pg_authid) GETSTRUCT(tuple);
		Oid			member;

		CHECK_FOR_INTERRUPTS();
		if (form->rolsuper)
			continue;
		if (pg_class_aclmask(relid, form->oid, WC_WRITE_PRIVILEGES,
							 ACLMASK_ANY) == 0 &&
			pg_attribute_aclcheck_all(relid, form->oid,
									  ACL_INSERT | ACL_UPDATE,
									  ACLMASK_ANY) != ACLCHECK_OK)
			continue;
		if (form->rolcanlogin)
		{
			*why = psprintf("table %s can be written by role \"%s\", which is not a superuser",
							name, NameStr(form->rolname));
			break;
		}
		member = member_not_superuser(form->oid);
		if (OidIsValid(member))
		{
			*why = psprintf("table %s can be written by role \"%s\", which is not a superuser, as a member of role \"%s\"",
							name, GetUserNameFromId(member, true),
							NameStr(form->rolname));
			break;
		}
	}
	systable_endscan(scan);
	table_close(authid, NoLock);
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
 * is what the extension made and that only superusers can write it.  On
 * WC_TABLE_OK and WC_TABLE_WRITABLE, *ct holds it open.
 */
static TableStatus
open_channel_table(LOCKMODE mode, ChannelTable *ct, char **why)
{
	Oid			ext;
	Oid			relid;
	Oid			indexid;
	List	   *indexes;
	bool		locked;

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
	if (!only_superusers_write(ct->rel, &locked, why))
		return locked ? WC_TABLE_LOCKED : WC_TABLE_WRITABLE;
	return WC_TABLE_OK;
}

static void
close_channel_table(ChannelTable *ct)
{
	/* The locks are held to the end of the transaction. */
	if (ct->index != NULL)
		index_close(ct->index, NoLock);
	if (ct->rel != NULL)
		table_close(ct->rel, NoLock);
}

/*
 * The fields of a row of the table; false if one is null, which no
 * publication writes.
 */
static bool
row_fields(HeapTuple tuple, TupleDesc desc, int32 *chunk,
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

/*
 * What the table holds: the last full publication in chunks 0, 1, ...,
 * then the deltas published since, -1, -2, ..., each against the
 * publication before it.
 */
typedef struct PublishedRows
{
	bool		have_full;		/* chunk 0 is there */
	uint64		full_bytes;
	int32		ndeltas;		/* the most negative chunk, negated */
	int32		delta_rows;		/* rows of negative chunks */
	uint64		delta_bytes;
	TimestampTz latest_dumped_at;	/* of the last publication */
} PublishedRows;

/* Look at the table's rows, reading no data but their sizes. */
static void
published_rows(ChannelTable *ct, PublishedRows *pr)
{
	SysScanDesc scan;
	HeapTuple	tuple;
	TimestampTz full_dumped_at = 0;

	memset(pr, 0, sizeof(*pr));
	scan = systable_beginscan(ct->rel, InvalidOid, false, GetActiveSnapshot(),
							  0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		int32		n;
		TimestampTz dumped_at;
		Datum		data;
		uint64		len;

		CHECK_FOR_INTERRUPTS();
		if (!row_fields(tuple, RelationGetDescr(ct->rel), &n, &dumped_at, &data))
			continue;
		len = toast_raw_datum_size(data) - VARHDRSZ;
		if (n >= 0)
		{
			pr->full_bytes += len;
			if (n == 0)
			{
				pr->have_full = true;
				full_dumped_at = dumped_at;
			}
		}
		else
		{
			pr->delta_rows++;
			pr->delta_bytes += len;
			if (n == PG_INT32_MIN)
				pr->ndeltas = PG_INT32_MAX;
			else if (-n > pr->ndeltas)
			{
				pr->ndeltas = -n;
				pr->latest_dumped_at = dumped_at;
			}
		}
	}
	systable_endscan(scan);
	if (pr->ndeltas == 0)
		pr->latest_dumped_at = full_dumped_at;
}

/* Insert a row (chunk, dumped_at, data), into the heap and the key. */
static void
insert_row(ChannelTable *ct, IndexInfo *info, int32 chunk,
		   TimestampTz dumped_at, bytea *data)
{
	Datum		values[WC_NCOLS];
	bool		nulls[WC_NCOLS] = {false, false, false};
	HeapTuple	tuple;

	values[WC_COL_CHUNK] = Int32GetDatum(chunk);
	values[WC_COL_DUMPED] = TimestampTzGetDatum(dumped_at);
	values[WC_COL_DATA] = PointerGetDatum(data);
	tuple = heap_form_tuple(RelationGetDescr(ct->rel), values, nulls);
	simple_heap_insert(ct->rel, tuple);
	(void) index_insert(ct->index, &values[WC_COL_CHUNK], &nulls[WC_COL_CHUNK],
						&tuple->t_self, ct->rel, UNIQUE_CHECK_YES, false,
						info);
	heap_freetuple(tuple);
}

/* Read want bytes at offset of the open file fd, named path; all or error. */
static ssize_t
read_exactly(int fd, char *buf, size_t want, off_t offset, const char *path)
{
	ssize_t		len = pg_pread(fd, buf, want, offset);

	if (len < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	if (len != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read file \"%s\": read %zd of %zu bytes",
						path, len, want)));
	return len;
}

/*
 * Copy size bytes of the open file fd (the dump file, which a dump may
 * replace meanwhile) to the scratch file WC_PUBLISHED_TMP_FILE: what is
 * published is read from that copy, and it becomes WC_PUBLISHED_FILE once
 * the publication is committed.
 */
static void
copy_to_scratch(int fd, uint64 size)
{
	char	   *buf = palloc(WC_CHUNK_BYTES);
	int			out;
	uint64		done = 0;

	out = OpenTransientFile(WC_PUBLISHED_TMP_FILE,
							O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (out < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	while (done < size)
	{
		size_t		want = Min(size - done, WC_CHUNK_BYTES);
		ssize_t		len;

		CHECK_FOR_INTERRUPTS();
		len = read_exactly(fd, buf, want, (off_t) done, WC_DUMP_FILE);
		errno = 0;
		if (write(out, buf, len) != len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
		}
		done += len;
	}
	if (pg_fsync(out) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	CloseTransientFile(out);
	pfree(buf);
}

/*
 * The delta from the last publication to the file in WC_PUBLISHED_TMP_FILE,
 * or NULL if the whole file is to be published: the table holds no full
 * publication, or one with WC_MAX_DELTAS deltas or deltas of half its size
 * already; this server's copy of the last publication is not the one in
 * the table (another server published it, or this one stopped before it
 * renamed the copy); or the delta would not fit one row.
 */
static bytea *
delta_to_publish(ChannelTable *ct, PublishedRows *pr)
{
	WarmFileHeader hdr;
	char	   *problem = NULL;
	uint64		budget;

	published_rows(ct, pr);
	if (!pr->have_full || pr->ndeltas >= WC_MAX_DELTAS ||
		pr->delta_rows != pr->ndeltas ||
		pr->delta_bytes >= pr->full_bytes / 2)
		return NULL;
	if (wc_check_file(WC_PUBLISHED_FILE, &hdr, &problem) != WC_FILE_OK ||
		hdr.dumped_at != pr->latest_dumped_at)
		return NULL;
	budget = Min(pr->full_bytes / 2 - pr->delta_bytes,
				 WC_CHUNK_BYTES - sizeof(WarmDeltaHeader));
	return wc_delta_build(WC_PUBLISHED_FILE, WC_PUBLISHED_TMP_FILE, budget);
}

/*
 * Publish the dump file, in the caller's transaction: as a delta against
 * the last publication when one applies (a row inserted), otherwise whole
 * (every row deleted, then the file's chunks inserted into the heap, which
 * moves them out of line into the TOAST table, and into the primary key,
 * as a catalog insert does).  True if WC_PUBLISHED_TMP_FILE holds what was
 * published, to be renamed to WC_PUBLISHED_FILE once committed.
 */
static bool
publish_file(ChannelTable *ct)
{
	int			fd;
	struct stat st;
	WarmFileHeader hdr;
	uint64		size = 0;
	uint64		min_size = 0;
	char	   *problem = NULL;
	SysScanDesc scan;
	HeapTuple	tuple;
	IndexInfo  *info;
	bytea	   *chunk;
	bytea	   *delta;
	PublishedRows pr;
	int32		n = 0;
	uint64		bytes = 0;

	fd = OpenTransientFile(WC_DUMP_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_DUMP_FILE)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", WC_DUMP_FILE)));
	if (read(fd, &hdr, sizeof(hdr)) != sizeof(hdr))
		problem = psprintf("file is truncated: %lld bytes, shorter than its header",
						   (long long) st.st_size);
	else if ((size = wc_announced_size(&hdr, &min_size, &problem)) != 0 &&
			 ((uint64) st.st_size < min_size || (uint64) st.st_size > size))
		problem = psprintf("it has %lld bytes, its header announces %s",
						   (long long) st.st_size, wc_size_words(min_size, size));
	if (problem != NULL)
	{
		/* A dump this server wrote never gets here. */
		ereport(LOG,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("dump file \"%s\" is not published: %s",
						WC_DUMP_FILE, problem),
				 errdetail("Standbys keep following the last publication.")));
		CloseTransientFile(fd);
		return false;
	}
	size = (uint64) st.st_size; /* within what the header allows */
	copy_to_scratch(fd, size);
	CloseTransientFile(fd);

	info = BuildIndexInfo(ct->index);
	delta = delta_to_publish(ct, &pr);
	if (delta != NULL)
	{
		insert_row(ct, info, -(pr.ndeltas + 1), hdr.dumped_at, delta);
		elog(DEBUG1, "published the changes since the last publication in %zu bytes, delta %d of the full publication of %llu bytes",
			 (size_t) (VARSIZE(delta) - VARHDRSZ), pr.ndeltas + 1,
			 (unsigned long long) pr.full_bytes);
		pfree(delta);
		return true;
	}

	scan = systable_beginscan(ct->rel, InvalidOid, false, GetActiveSnapshot(),
							  0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		CHECK_FOR_INTERRUPTS();
		simple_heap_delete(ct->rel, &tuple->t_self);
	}
	systable_endscan(scan);

	fd = OpenTransientFile(WC_PUBLISHED_TMP_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	chunk = palloc(VARHDRSZ + WC_CHUNK_BYTES);
	while (bytes < size)
	{
		size_t		want = Min(size - bytes, WC_CHUNK_BYTES);
		ssize_t		len;

		CHECK_FOR_INTERRUPTS();
		len = read_exactly(fd, VARDATA(chunk), want, (off_t) bytes,
						   WC_PUBLISHED_TMP_FILE);
		SET_VARSIZE(chunk, VARHDRSZ + len);
		insert_row(ct, info, n, hdr.dumped_at, chunk);
		bytes += len;
		n++;
	}
	CloseTransientFile(fd);
	pfree(chunk);
	elog(DEBUG1, "published %llu bytes of the dump file in %d rows",
		 (unsigned long long) bytes, n);
	return true;
}

/* At the publish worker's exit: no scratch copy is left behind. */
static void
remove_published_tmp(int code, Datum arg)
{
	(void) unlink(WC_PUBLISHED_TMP_FILE);
}

/* On error, no half-written file is left behind. */
static void
remove_followed_tmp(int code, Datum arg)
{
	(void) unlink(WC_FOLLOWED_TMP_FILE);
	(void) unlink(WC_FOLLOWED_PART_FILE);
}

/*
 * Write the chunks the scan returns, from the first, to the scratch file;
 * false (with *problem) if they do not follow one another, come from
 * another dump, or do not add up to exactly the size the header in the
 * first announces, or if that is more than this server accepts.  A chunk's
 * size is known before it is read, so reading stops before the total
 * passes the announced size; one chunk is in memory at a time.
 */
static bool
write_chunks(SysScanDesc scan, TupleDesc desc, HeapTuple first,
			 char **problem)
{
	HeapTuple	tuple = first;
	ChunkRows	cr;
	int			fd;

	memset(&cr, 0, sizeof(cr));
	fd = OpenTransientFile(WC_FOLLOWED_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	for (; HeapTupleIsValid(tuple);
		 tuple = systable_getnext_ordered(scan, ForwardScanDirection))
	{
		int32		n;
		TimestampTz dumped_at;
		Datum		datum;
		uint64		len;
		bytea	   *data;

		CHECK_FOR_INTERRUPTS();
		if (!row_fields(tuple, desc, &n, &dumped_at, &datum))
		{
			*problem = psprintf("a row after chunk %d has a null field", cr.expect - 1);
			break;
		}

		/* The size once decompressed and brought in line, without reading it. */
		len = toast_raw_datum_size(datum) - VARHDRSZ;
		if (!wc_chunk_row_key(&cr, n, dumped_at, len, problem))
			break;
		data = DatumGetByteaPP(datum);
		if (!wc_chunk_row_data(&cr, n, dumped_at, VARDATA_ANY(data), len, problem))
			break;

		errno = 0;
		if (write(fd, VARDATA_ANY(data), len) != len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
		}
		if ((Pointer) data != DatumGetPointer(datum))
			pfree(data);
	}
	if (*problem == NULL)
		(void) wc_chunk_rows_end(&cr, problem);
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	CloseTransientFile(fd);
	return *problem == NULL;
}

/* A scan of the table's rows through its key, from chunk 0 or below 0. */
static SysScanDesc
scan_chunks(ChannelTable *ct, bool deltas, int32 from)
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

/*
 * The delta in the row tuple, the publication of dumped_at, checked as a
 * row (pubrow.c): a copy of its bytes, len of them, or NULL, with
 * *problem, if it cannot be used.
 */
static char *
delta_row(HeapTuple tuple, TupleDesc desc, int32 expect,
		  TimestampTz dumped_at, Size *len, char **problem)
{
	int32		n;
	TimestampTz row_dumped_at;
	Datum		datum;
	bytea	   *data;
	WarmDeltaHeader dh;
	char	   *copy = NULL;

	if (!row_fields(tuple, desc, &n, &row_dumped_at, &datum))
	{
		*problem = psprintf("delta %d has a null field", -expect);
		return NULL;
	}
	*len = toast_raw_datum_size(datum) - VARHDRSZ;
	if (!wc_delta_row_key(expect, n, row_dumped_at, dumped_at, *len, problem))
		return NULL;
	data = DatumGetByteaPP(datum);
	if (wc_delta_row_data(expect, VARDATA_ANY(data), *len, row_dumped_at, &dh,
						  problem))
	{
		copy = palloc(*len);
		memcpy(copy, VARDATA_ANY(data), *len);
	}
	if ((Pointer) data != DatumGetPointer(datum))
		pfree(data);
	return copy;
}

/*
 * Make WC_FOLLOWED_TMP_FILE the latest publication, which is the full one
 * and ndeltas deltas after it: from the followed file, if it is one of
 * them, by the deltas after it; otherwise from the full publication's
 * chunks and every delta.  False, with *problem, if the rows cannot be
 * used.  *applied says how many deltas were applied, *whole whether the
 * full publication was read.
 */
static bool
rebuild_followed(ChannelTable *ct, int32 ndeltas, int *applied, bool *whole,
				 char **problem)
{
	TupleDesc	desc = RelationGetDescr(ct->rel);
	TimestampTz times[WC_MAX_DELTAS + 1];
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		n;
	Datum		datum;
	int			from = -1;
	int			i;
	const char *cur = WC_FOLLOWED_FILE;
	WarmFileHeader hdr;
	char	  **datas;
	Size	   *lens;

	Assert(ndeltas >= 0 && ndeltas <= WC_MAX_DELTAS);	/* fetch_file() */
	*applied = 0;
	*whole = false;

	/* The publications' dump times, from the rows' column alone */
	scan = scan_chunks(ct, false, 0);
	tuple = systable_getnext_ordered(scan, ForwardScanDirection);
	if (!HeapTupleIsValid(tuple) ||
		!row_fields(tuple, desc, &n, &times[0], &datum) || n != 0)
		*problem = pstrdup("chunk 0 is missing");
	systable_endscan_ordered(scan);
	if (*problem != NULL)
		return false;
	scan = scan_chunks(ct, true, -1);
	for (i = 1; i <= ndeltas; i++)
	{
		tuple = systable_getnext_ordered(scan, BackwardScanDirection);
		if (!HeapTupleIsValid(tuple) ||
			!row_fields(tuple, desc, &n, &times[i], &datum) || n != -i)
		{
			*problem = psprintf("delta %d is missing", i);
			break;
		}
	}
	systable_endscan_ordered(scan);
	if (*problem != NULL)
		return false;

	/* Is the followed file one of them? */
	if (channel->followed_dumped_at != 0 &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		for (i = ndeltas - 1; i >= 0; i--)
			if (times[i] == channel->followed_dumped_at)
			{
				from = i;
				break;
			}
	}
	if (from < 0)
	{
		/* The full publication, checked whole before a delta reads it */
		scan = scan_chunks(ct, false, 0);
		tuple = systable_getnext_ordered(scan, ForwardScanDirection);
		if (!write_chunks(scan, desc, tuple, problem) ||
			(ndeltas > 0 &&
			 wc_check_file(WC_FOLLOWED_TMP_FILE, &hdr, problem) != WC_FILE_OK))
		{
			systable_endscan_ordered(scan);
			return false;
		}
		systable_endscan_ordered(scan);
		*whole = true;
		cur = WC_FOLLOWED_TMP_FILE;
		from = 0;
	}

	/*
	 * The deltas after it, applied in one pass (pubdelta.c): the file is
	 * read once and the result written once, however many there are.
	 */
	if (from == ndeltas)
		return true;
	datas = palloc0(sizeof(char *) * (ndeltas - from));
	lens = palloc0(sizeof(Size) * (ndeltas - from));
	scan = scan_chunks(ct, true, -(from + 1));
	for (i = from + 1; i <= ndeltas; i++)
	{
		CHECK_FOR_INTERRUPTS();
		tuple = systable_getnext_ordered(scan, BackwardScanDirection);
		if (!HeapTupleIsValid(tuple))
		{
			*problem = psprintf("delta %d is missing", i);
			break;
		}
		datas[i - from - 1] = delta_row(tuple, desc, -i, times[i],
										&lens[i - from - 1], problem);
		if (datas[i - from - 1] == NULL)
			break;
	}
	systable_endscan_ordered(scan);
	if (*problem == NULL &&
		wc_delta_apply(cur, ndeltas - from, (const char *const *) datas, lens,
					   from + 1, WC_FOLLOWED_PART_FILE, problem))
	{
		if (rename(WC_FOLLOWED_PART_FILE, WC_FOLLOWED_TMP_FILE) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rename file \"%s\" to \"%s\": %m",
							WC_FOLLOWED_PART_FILE, WC_FOLLOWED_TMP_FILE)));
		*applied = ndeltas - from;
	}
	for (i = 0; i < ndeltas - from; i++)
		if (datas[i] != NULL)
			pfree(datas[i]);
	pfree(datas);
	pfree(lens);
	return *problem == NULL;
}

/*
 * Read the table into WC_FOLLOWED_FILE if it holds a publication not
 * followed yet, in the caller's transaction.  The first row in the key's
 * order is the latest publication's: its last delta, or else chunk 0 of a
 * full one.
 */
static void
fetch_file(ChannelTable *ct, ChannelNotes *notes)
{
	SysScanDesc scan;
	HeapTuple	first;
	int32		n;
	TimestampTz dumped_at;
	Datum		data;
	WarmFileHeader hdr;
	char	   *problem = NULL;
	bool		usable;
	int			applied = 0;
	bool		whole = false;

	scan = systable_beginscan_ordered(ct->rel, ct->index, GetActiveSnapshot(),
									  0, NULL);
	first = systable_getnext_ordered(scan, ForwardScanDirection);
	if (!HeapTupleIsValid(first))
	{
		systable_endscan_ordered(scan);
		set_follow_state(WC_FOLLOW_NOTHING_PUBLISHED, NULL, false);
		return;
	}
	if (!row_fields(first, RelationGetDescr(ct->rel), &n, &dumped_at, &data))
	{
		systable_endscan_ordered(scan);
		set_follow_state(WC_FOLLOW_UNUSABLE, "its first row has a null field",
						 false);
		return;
	}
	systable_endscan_ordered(scan);
	if (n <= 0 && dumped_at == channel->followed_dumped_at &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		/* Followed already: say so again if the last look could not tell. */
		set_follow_state(WC_FOLLOW_FOLLOWING, NULL, false);
		return;
	}
	if (notes != NULL && dumped_at == notes->refused_dumped_at)
	{
		/* Found unusable and said so already: not read again. */
		set_follow_state(WC_FOLLOW_UNUSABLE,
						 "it is the publication found unusable before", false);
		return;
	}

	/* The first row: chunk 0, or the last of at most WC_MAX_DELTAS deltas */
	if (n > 0)
		problem = pstrdup("chunk 0 is missing");
	else if (n < -WC_MAX_DELTAS)
		problem = psprintf("it has more than %d deltas", WC_MAX_DELTAS);

	PG_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);
	{
		usable = problem == NULL &&
			rebuild_followed(ct, -n, &applied, &whole, &problem) &&
			wc_check_file(WC_FOLLOWED_TMP_FILE, &hdr, &problem) == WC_FILE_OK;
		if (usable && hdr.dumped_at != dumped_at)
		{
			problem = pstrdup("the file rebuilt is not of the latest publication's dump");
			usable = false;
		}
		if (usable)
			(void) durable_rename(WC_FOLLOWED_TMP_FILE, WC_FOLLOWED_FILE, ERROR);
		else
			remove_followed_tmp(0, (Datum) 0);
	}
	PG_END_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);

	if (!usable)
	{
		/* Each publication found unusable is said once. */
		if (notes != NULL)
			notes->refused_dumped_at = dumped_at;
		set_follow_state(WC_FOLLOW_UNUSABLE, problem, notes != NULL);
		return;
	}
	if (whole)
		elog(DEBUG1, "followed the publication of %s: the full publication read; deltas applied: %d",
			 timestamptz_to_str(dumped_at), applied);
	else
		elog(DEBUG1, "followed the publication of %s: the followed file kept; deltas applied: %d",
			 timestamptz_to_str(dumped_at), applied);
	wc_status_lock(LW_EXCLUSIVE);
	channel->followed_dumped_at = hdr.dumped_at;
	channel->followed_blocks = (int64) hdr.nblocks;
	wc_note_follow_pass_due();
	wc_status_unlock();
	set_follow_state(WC_FOLLOW_FOLLOWING, NULL, false);
}

/*
 * The table could be written by a role that is no superuser: what it holds
 * now may be theirs, so it is never followed, even once that is undone,
 * as if found unusable.  The primary's next publication replaces it.  The
 * publication is told by its dump time, as fetch_file does.
 */
static void
distrust_publication(ChannelTable *ct, ChannelNotes *notes)
{
	SysScanDesc scan;
	HeapTuple	first;
	int32		n;
	TimestampTz dumped_at;
	Datum		data;

	if (notes == NULL)
		return;
	scan = systable_beginscan_ordered(ct->rel, ct->index, GetActiveSnapshot(),
									  0, NULL);
	first = systable_getnext_ordered(scan, ForwardScanDirection);
	if (HeapTupleIsValid(first) &&
		row_fields(first, RelationGetDescr(ct->rel), &n, &dumped_at, &data) &&
		dumped_at != channel->followed_dumped_at)
		notes->refused_dumped_at = dumped_at;
	systable_endscan_ordered(scan);
}

/* The publish worker: on a lock, the dump waits for the next look. */
static void
publish_job(TableStatus status, ChannelTable *ct, const char *why,
			ChannelNotes *notes, bool *copied)
{
	/* Nowhere to publish, or refused: the next dump tries again. */
	switch (status)
	{
		case WC_TABLE_NONE:
			notes->publish_ended = notes->publish_handled = true;
			break;
		case WC_TABLE_LOCKED:
			notes->publish_ended = true;
			note_publish_outcome(notes, WC_PUBLISH_LOCKED, why);
			break;
		case WC_TABLE_REFUSED:
			notes->publish_ended = notes->publish_handled = true;
			note_publish_outcome(notes, WC_PUBLISH_REFUSED, why);
			break;
		case WC_TABLE_WRITABLE:
			/* Published at the next look once only superusers can write. */
			notes->publish_ended = true;
			note_publish_outcome(notes, WC_PUBLISH_WRITABLE, why);
			break;
		case WC_TABLE_OK:
			/* Done once committed: pg_warmcache_channel_main(). */
			*copied = publish_file(ct);
			break;
	}
}

static void
fetch_job(TableStatus status, ChannelTable *ct, const char *why,
		  ChannelNotes *notes)
{
	switch (status)
	{
		case WC_TABLE_NONE:
			set_follow_state(WC_FOLLOW_NO_TABLE, NULL, false);
			break;
		case WC_TABLE_LOCKED:
			set_follow_state(WC_FOLLOW_LOCKED, why, false);
			break;
		case WC_TABLE_REFUSED:
			set_follow_state(WC_FOLLOW_REFUSED, why, false);
			break;
		case WC_TABLE_WRITABLE:
			distrust_publication(ct, notes);
			set_follow_state(WC_FOLLOW_WRITABLE, why, false);
			break;
		case WC_TABLE_OK:
			fetch_file(ct, notes);
			break;
	}
}

/*
 * Entry point of a channel worker: one transaction in the database
 * postgres, to publish or to fetch.
 */
void
pg_warmcache_channel_main(Datum arg)
{
	ChannelJob	job = (ChannelJob) DatumGetInt32(arg);
	ChannelNotes *notes = channel_notes();
	ChannelTable ct;
	TableStatus status;
	char	   *why;
	bool		copied = false;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/*
	 * A bound for the locks not taken conditionally, those of the
	 * connection's and catalog lookups; above what a database's or role's
	 * settings may say.
	 */
	SetConfigOption("lock_timeout", WC_CHANNEL_LOCK_TIMEOUT, PGC_SUSET,
					PGC_S_OVERRIDE);

	BackgroundWorkerInitializeConnection(WC_CHANNEL_DATABASE, NULL, 0);
	if (job == WC_CHANNEL_PUBLISH)
		before_shmem_exit(remove_published_tmp, (Datum) 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, job == WC_CHANNEL_PUBLISH ?
						   "publishing the hot set" :
						   "reading the primary's hot set");

	/* The rows are read with a snapshot taken once the table is locked. */
	status = open_channel_table(job == WC_CHANNEL_PUBLISH ?
								RowExclusiveLock : AccessShareLock, &ct, &why);
	PushActiveSnapshot(GetTransactionSnapshot());
	if (job == WC_CHANNEL_PUBLISH)
		publish_job(status, &ct, why, notes, &copied);
	else
		fetch_job(status, &ct, why, notes);
	close_channel_table(&ct);

	PopActiveSnapshot();
	CommitTransactionCommand();
	if (job == WC_CHANNEL_PUBLISH && status == WC_TABLE_OK)
	{
		notes->publish_ended = notes->publish_handled = true;
		note_publish_outcome(notes, WC_PUBLISH_DONE, NULL);
	}

	/* What is published now is the base of the next delta. */
	if (copied)
		(void) durable_rename(WC_PUBLISHED_TMP_FILE, WC_PUBLISHED_FILE, LOG);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
