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
 * this database system).  The autowarm worker then restores that file
 * (restore.c).  What the worker finds (no table, nothing published, a
 * file that cannot be used) is logged once, when it changes.
 *
 * Both workers stay connected for one short transaction, so a command on
 * the database postgres waits for them at most that long; the autowarm
 * worker does not start one while such a command waits.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/spin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "channel.h"
#include "compat.h"
#include "dumpfile.h"
#include "pg_warmcache.h"

/* The size of a row's piece of the file. */
#define WC_CHUNK_BYTES		(1024 * 1024)

/* What a channel worker is started for. */
typedef enum ChannelJob
{
	WC_CHANNEL_PUBLISH,
	WC_CHANNEL_FETCH
} ChannelJob;

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
		case WC_FOLLOW_FOLLOWING:
			return "following";
		case WC_FOLLOW_PROMOTED:
			return "promoted";
	}
	return "unknown";
}

/*
 * Note what the channel found; a change is logged, once.
 */
static void
set_follow_state(FollowState state, const char *problem)
{
	FollowState old;

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	old = wc_shared->follow_state;
	wc_shared->follow_state = state;
	LWLockRelease(wc_shared->lock);
	if (old == state)
		return;

	switch (state)
	{
		case WC_FOLLOW_NOT_LOOKED:
		case WC_FOLLOW_PROMOTED:
			break;
		case WC_FOLLOW_NO_DATABASE:
			ereport(LOG,
					(errmsg("pg_warmcache: cannot follow the primary's hot set: database \"%s\" does not exist or does not allow connections",
							WC_CHANNEL_DATABASE),
					 errdetail("The primary publishes its hot set in that database.")));
			break;
		case WC_FOLLOW_NO_TABLE:
			ereport(LOG,
					(errmsg("pg_warmcache: the primary publishes no hot set to follow"),
					 errdetail("Database \"%s\" has no table %s: extension pg_warmcache 1.2 or later is not installed there.",
							   WC_CHANNEL_DATABASE, WC_CHANNEL_TABLE),
					 errhint("Run CREATE EXTENSION pg_warmcache, or ALTER EXTENSION pg_warmcache UPDATE, in database \"%s\" on the primary.",
							 WC_CHANNEL_DATABASE)));
			break;
		case WC_FOLLOW_NOTHING_PUBLISHED:
			ereport(LOG,
					(errmsg("pg_warmcache: the primary has not published its hot set yet"),
					 errdetail("Table %s in database \"%s\" is empty.",
							   WC_CHANNEL_TABLE, WC_CHANNEL_DATABASE),
					 errhint("The primary publishes after each dump, with pg_warmcache in \"shared_preload_libraries\", \"pg_warmcache.autowarm\" on and \"pg_warmcache.dump_interval\" above zero; or this standby has not replayed that far yet.")));
			break;
		case WC_FOLLOW_UNUSABLE:
			ereport(LOG,
					(errmsg("pg_warmcache: the primary's published hot set is not usable: %s",
							problem ? problem : "unknown problem"),
					 errdetail("The standby tries again when the primary publishes its next dump.")));
			break;
		case WC_FOLLOW_FOLLOWING:
			ereport(LOG,
					(errmsg("pg_warmcache: following the primary's hot set")));
			break;
	}
}

/*
 * Start a channel worker and wait for it to end.  False if no worker slot
 * was free: the caller tries again later.
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
 * what is published yet: the last dump waits for one to connect.
 */
static bool
standby_streaming(void)
{
	int			i;

	if (WalSndCtl == NULL)
		return false;
	for (i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		SpinLockRelease(&walsnd->mutex);
		if (pid != 0)
			return true;
	}
	return false;
}

/*
 * On a primary, after a dump: publish it, if one waits to be and a standby
 * streams from this server.
 */
void
wc_publish(void)
{
	bool		now;
	bool		pending;
	bool		exists;

	/*
	 * Without a standby now, the dump waits for one to connect; at
	 * wal_level minimal there is never one.
	 */
	now = XLogStandbyInfoActive() && !RecoveryInProgress() &&
		standby_streaming();
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	pending = wc_shared->publish_pending && now;
	if (pending || !XLogStandbyInfoActive())
		wc_shared->publish_pending = false;
	LWLockRelease(wc_shared->lock);
	if (!pending)
		return;
	if (OidIsValid(wc_connectable_database(WC_CHANNEL_DATABASE, &exists)) &&
		run_channel_worker(WC_CHANNEL_PUBLISH))
		return;
	if (exists)
	{
		/* Wanted by a command, or no worker slot: at the next look. */
		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		wc_shared->publish_pending = true;
		LWLockRelease(wc_shared->lock);
	}
}

/*
 * On a following standby: read the table.  True if it held a dump not
 * followed yet, now in WC_FOLLOWED_FILE.
 */
bool
wc_fetch_followed(void)
{
	bool		exists;
	bool		fresh;

	/* Not while a database-level command waits: the worker would delay it. */
	if (!OidIsValid(wc_connectable_database(WC_CHANNEL_DATABASE, &exists)))
	{
		if (!exists)
			set_follow_state(WC_FOLLOW_NO_DATABASE, NULL);
		return false;
	}
	if (!run_channel_worker(WC_CHANNEL_FETCH))
		return false;
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	fresh = wc_shared->followed_fresh;
	wc_shared->followed_fresh = false;
	LWLockRelease(wc_shared->lock);
	return fresh;
}

/*
 * The table's qualified name, in this database, or NULL if the extension
 * is missing or older than the table.
 */
static char *
channel_table(void)
{
	bool		isnull;
	Datum		d;

	if (SPI_execute("SELECT quote_ident(n.nspname) || '." WC_CHANNEL_TABLE "'"
					"  FROM pg_extension e"
					"  JOIN pg_namespace n ON n.oid = e.extnamespace"
					"  JOIN pg_class c ON c.relnamespace = n.oid"
					"       AND c.relname = '" WC_CHANNEL_TABLE "'"
					" WHERE e.extname = 'pg_warmcache'", true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the table of the standby channel");
	if (SPI_processed == 0)
		return NULL;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

/*
 * Replace the table's rows with the dump file, in the caller's
 * transaction.
 */
static void
publish_file(const char *table)
{
	FILE	   *fp;
	WarmFileHeader hdr;
	SPIPlanPtr	plan;
	Oid			argtypes[3] = {INT4OID, TIMESTAMPTZOID, BYTEAOID};
	bytea	   *chunk;
	int32		n = 0;
	size_t		len;
	uint64		bytes = 0;

	fp = AllocateFile(WC_DUMP_FILE, PG_BINARY_R);
	if (fp == NULL)
	{
		if (errno == ENOENT)
			return;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_DUMP_FILE)));
	}
	if (fread(&hdr, sizeof(hdr), 1, fp) != 1 || hdr.magic != WC_DUMP_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("dump file \"%s\" is not usable", WC_DUMP_FILE)));
	rewind(fp);

	if (SPI_execute(psprintf("DELETE FROM %s", table), false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not empty %s", table);
	plan = SPI_prepare(psprintf("INSERT INTO %s (chunk, dumped_at, data) VALUES ($1, $2, $3)",
								table), 3, argtypes);
	if (plan == NULL)
		elog(ERROR, "could not prepare the insert into %s", table);

	chunk = palloc(VARHDRSZ + WC_CHUNK_BYTES);
	while ((len = fread(VARDATA(chunk), 1, WC_CHUNK_BYTES, fp)) > 0)
	{
		Datum		values[3];

		CHECK_FOR_INTERRUPTS();
		SET_VARSIZE(chunk, VARHDRSZ + len);
		values[0] = Int32GetDatum(n++);
		values[1] = TimestampTzGetDatum(hdr.dumped_at);
		values[2] = PointerGetDatum(chunk);
		if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into %s", table);
		bytes += len;
	}
	if (ferror(fp))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", WC_DUMP_FILE)));
	FreeFile(fp);
	pfree(chunk);
	elog(DEBUG1, "pg_warmcache: published %llu bytes of the dump file in %d rows",
		 (unsigned long long) bytes, n);
}

/* On error, no half-written file is left behind. */
static void
remove_followed_tmp(int code, Datum arg)
{
	(void) unlink(WC_FOLLOWED_TMP_FILE);
}

/*
 * Write the table's chunks, in order, to the scratch file; false (with
 * *problem) if they do not follow one another.  One row at a time, so
 * memory stays at one chunk whatever the file's size.
 */
static bool
write_chunks(const char *table, char **problem)
{
	Portal		portal;
	int			fd;
	int32		expect = 0;

	fd = OpenTransientFile(WC_FOLLOWED_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	portal = SPI_cursor_open_with_args(NULL,
									   psprintf("SELECT chunk, data FROM %s ORDER BY chunk", table),
									   0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		bool		isnull;
		int32		n;
		bytea	   *data;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, 1);
		if (SPI_processed == 0)
			break;
		n = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										SPI_tuptable->tupdesc, 1, &isnull));
		if (n != expect++)
		{
			*problem = psprintf("chunk %d is missing", expect - 1);
			break;
		}
		data = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 2, &isnull));
		errno = 0;
		if (write(fd, VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data)) !=
			VARSIZE_ANY_EXHDR(data))
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	CloseTransientFile(fd);
	return *problem == NULL;
}

/*
 * Read the table into WC_FOLLOWED_FILE if it holds a dump not followed
 * yet, in the caller's transaction.
 */
static void
fetch_file(const char *table)
{
	TimestampTz dumped_at;
	bool		isnull;
	WarmFileHeader hdr;
	char	   *problem = NULL;
	bool		usable;

	if (table == NULL)
	{
		set_follow_state(WC_FOLLOW_NO_TABLE, NULL);
		return;
	}
	if (SPI_execute(psprintf("SELECT max(dumped_at) FROM %s", table), true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read %s", table);
	dumped_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
	{
		set_follow_state(WC_FOLLOW_NOTHING_PUBLISHED, NULL);
		return;
	}
	if (dumped_at == wc_shared->followed_dumped_at &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
		return;					/* followed already */

	PG_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);
	{
		usable = write_chunks(table, &problem) &&
			wc_check_file(WC_FOLLOWED_TMP_FILE, &hdr, &problem) == WC_FILE_OK;
		if (usable)
			(void) durable_rename(WC_FOLLOWED_TMP_FILE, WC_FOLLOWED_FILE, ERROR);
		else
			remove_followed_tmp(0, (Datum) 0);
	}
	PG_END_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);

	if (!usable)
	{
		set_follow_state(WC_FOLLOW_UNUSABLE, problem);
		return;
	}
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	wc_shared->followed_dumped_at = hdr.dumped_at;
	wc_shared->followed_blocks = (int64) hdr.nblocks;
	wc_shared->followed_fresh = true;
	LWLockRelease(wc_shared->lock);
	set_follow_state(WC_FOLLOW_FOLLOWING, NULL);
}

/*
 * Entry point of a channel worker: one transaction in the database
 * postgres, to publish or to fetch.
 */
void
pg_warmcache_channel_main(Datum arg)
{
	ChannelJob	job = (ChannelJob) DatumGetInt32(arg);
	char	   *table;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(WC_CHANNEL_DATABASE, NULL, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, job == WC_CHANNEL_PUBLISH ?
						   "publishing the hot set" :
						   "reading the primary's hot set");

	table = channel_table();
	if (job == WC_CHANNEL_PUBLISH)
	{
		if (table != NULL)
			publish_file(table);
	}
	else
		fetch_file(table);

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
