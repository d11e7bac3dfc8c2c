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
 * follow is decided by the primary alone: who may write the table is not
 * asked, since a standby trusts a row only for its signature, made with
 * the key that the primary and its standbys share (channel_key.c).
 *
 * Nothing here waits for a lock: the table, its index, its TOAST table and
 * pg_database are locked only if that is free at once, and otherwise the
 * round is given up and tried again at the next look; lock_timeout bounds
 * the catalog locks of the connection itself.  The autowarm worker, which
 * waits for the channel worker, goes on dumping.
 *
 * The channel is six files.  This one starts the workers and hands each
 * its job; channel_state.c keeps what the channel found and follows, and
 * logs each change once; channel_table.c finds the table and checks that
 * it is the extension's own (the checks above); channel_key.c reads the
 * key that signs its rows; channel_publish.c writes a publication, and
 * channel_follow.c reads one into the followed file, verifying each row.
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
#include "channel_follow.h"
#include "channel_publish.h"
#include "channel_state.h"
#include "channel_table.h"
#include "compat.h"
#include "database.h"
#include "dump.h"
#include "operation.h"
#include "worker.h"

/*
 * The longest a channel worker waits for a lock it cannot take
 * conditionally: those the connection and the catalog lookups take on
 * catalogs (on a standby, replay of a VACUUM FULL of one holds them).
 */
#define WC_CHANNEL_LOCK_TIMEOUT "2s"

/* What a channel worker is started for. */
typedef enum ChannelJob
{
	WC_CHANNEL_PUBLISH,
	WC_CHANNEL_FETCH
} ChannelJob;

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

/*
 * On a primary, after a dump: publish it, if one waits to be and a standby
 * streams from this server.
 */
void
wc_publish(void)
{
	ChannelNotes *notes = wc_channel_notes();
	bool		now;
	bool		exists;
	bool		locked;
	uint64		seq;

	/*
	 * Without a standby now, the dump waits for one to connect; at
	 * wal_level minimal there is never one.
	 */
	now = XLogStandbyInfoActive() && !RecoveryInProgress() &&
		standby_streaming();
	seq = wc_channel_dump_to_publish();
	if (seq == 0 || !now)
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
				wc_channel_note_outcome(notes, WC_PUBLISH_FAILED, NULL);
			if (notes->publish_handled)
			{
				wc_channel_note_published(seq);
			}
			return;
		}
	}
	if (locked)
		wc_channel_note_outcome(notes, WC_PUBLISH_LOCKED, "catalog pg_database");
	if (!exists && !locked)
	{
		/* No database postgres: nowhere to publish. */
		wc_channel_note_published(seq);
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
			wc_channel_set_follow_state(WC_FOLLOW_LOCKED, "catalog pg_database", false);
		else if (!exists)
			wc_channel_set_follow_state(WC_FOLLOW_NO_DATABASE, NULL, false);
		return false;
	}
	if (!run_channel_worker(WC_CHANNEL_FETCH))
		return false;
	/* Cleared when the pass begins (wc_begin_follow_pass()), not here. */
	fresh = wc_follow_pass_is_due();
	return fresh;
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
			wc_channel_note_outcome(notes, WC_PUBLISH_LOCKED, why);
			break;
		case WC_TABLE_REFUSED:
			notes->publish_ended = notes->publish_handled = true;
			wc_channel_note_outcome(notes, WC_PUBLISH_REFUSED, why);
			break;
		case WC_TABLE_OK:
			/* Done once committed: pg_warmcache_channel_main(). */
			*copied = wc_channel_publish_file(ct);
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
			wc_channel_set_follow_state(WC_FOLLOW_NO_TABLE, NULL, false);
			break;
		case WC_TABLE_LOCKED:
			wc_channel_set_follow_state(WC_FOLLOW_LOCKED, why, false);
			break;
		case WC_TABLE_REFUSED:
			wc_channel_set_follow_state(WC_FOLLOW_REFUSED, why, false);
			break;
		case WC_TABLE_OK:
			wc_channel_fetch_file(ct, notes);
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
	ChannelNotes *notes = wc_channel_notes();
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
		before_shmem_exit(wc_remove_published_tmp, (Datum) 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	pgstat_report_activity(STATE_RUNNING, job == WC_CHANNEL_PUBLISH ?
						   "publishing the hot set" :
						   "reading the primary's hot set");

	/* The rows are read with a snapshot taken once the table is locked. */
	status = wc_open_channel_table(job == WC_CHANNEL_PUBLISH ?
								   RowExclusiveLock : AccessShareLock, &ct, &why);
	wc_channel_note_lock_holder(status == WC_TABLE_LOCKED ?
								wc_channel_lock_holder() : 0);
	PushActiveSnapshot(GetTransactionSnapshot());
	if (job == WC_CHANNEL_PUBLISH)
		publish_job(status, &ct, why, notes, &copied);
	else
		fetch_job(status, &ct, why, notes);
	wc_close_channel_table(&ct);

	PopActiveSnapshot();
	CommitTransactionCommand();
	if (job == WC_CHANNEL_PUBLISH && status == WC_TABLE_OK)
	{
		notes->publish_ended = notes->publish_handled = true;
		wc_channel_note_outcome(notes, WC_PUBLISH_DONE, NULL);
	}

	/* What is published now is the base of the next delta. */
	if (copied)
		(void) durable_rename(WC_PUBLISHED_TMP_FILE, WC_PUBLISHED_FILE, LOG);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
