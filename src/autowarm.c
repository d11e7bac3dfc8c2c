/*-------------------------------------------------------------------------
 *
 * autowarm.c
 *		The autowarm worker: the restore at start, periodic and shutdown
 *		dumps, and the restores that warmcache_restore_now() asks for.
 *
 * One worker runs from the time the server is consistent (so on a hot
 * standby too).  At its first start after the shared memory was created
 * it restores the dump file, if pg_warmcache.autowarm is on (or, once, a
 * file imported from the cluster pg_upgrade upgraded: restore.c), then dumps
 * every pg_warmcache.dump_interval seconds and at shutdown.  It leads the
 * restores itself (restore.c), so a dump never runs during one.
 *
 * On a primary it publishes each dump for standbys; on a standby with
 * pg_warmcache.follow_primary on, it fetches what the primary published
 * every WC_FOLLOW_POLL_MS and restores it when it changed, and at
 * promotion it loads it into shared buffers (channel.c).
 *
 * After a restore that did not complete, the saved file holds blocks that
 * are not in the buffer cache, and an automatic dump would lose them: it
 * keeps the file until the cache holds at least as many blocks, counted
 * like with like (unlogged ones too, which only the shutdown dump writes).
 *
 * Signals.  SIGTERM, whoever sends it, makes the worker stop what it does
 * and write its dump (worker.c).  Then it exits with code 0 if the
 * postmaster asked (a shutdown: it is not started again), else with code
 * 1 (pg_terminate_backend() or kill: the postmaster starts it again after
 * bgw_restart_time).  SIGINT (pg_cancel_backend())
 * stops the restore the worker leads, as warmcache_restore_abort() does;
 * the worker goes on, and a cancel at any other time is ignored.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/autowarm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "autowarm.h"
#include "channel.h"
#include "channel_state.h"
#include "dump.h"
#include "dumpfile.h"
#include "restore.h"
#include "restore_shared.h"
#include "settings.h"
#include "operation.h"
#include "worker.h"
#include "workload.h"

/* How often a following standby looks at what the primary published */
#define WC_FOLLOW_POLL_MS		5000

/* How often a following standby looks whether it was promoted */
#define WC_PROMOTION_POLL_MS	250

/* The postmaster starts the worker again this long after it exited with 1 */
#define WC_RESTART_S			10

/*
 * Register the autowarm worker; called from _PG_init.
 */
void
wc_register_autowarm_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = WC_RESTART_S;
	strcpy(worker.bgw_library_name, "pg_warmcache");
	strcpy(worker.bgw_function_name, "pg_warmcache_main");
	strcpy(worker.bgw_name, "pg_warmcache autowarm");
	strcpy(worker.bgw_type, "pg_warmcache autowarm");
	RegisterBackgroundWorker(&worker);
}

/* SIGINT: see the file's header. */
static void
autowarm_cancel_handler(SIGNAL_ARGS)
{
	wc_note_signal(&wc_cancel_pending);
}

/* On exit: no worker any more, and no operation of ours left begun. */
static void
autowarm_worker_exit(int code, Datum arg)
{
	wc_forget_worker();
	if (wc_owns_operation())
		wc_end_operation();
}

/*
 * An automatic dump.  After an incomplete restore it must not replace the
 * saved file with a smaller one.  A dump that fails (a full disk, say) is
 * reported and tried again at the next interval; the worker goes on.
 */
static void
auto_dump(bool shutdown)
{
	MemoryContext cxt = CurrentMemoryContext;
	int64		min_blocks = 0;
	int64		n = 0;
	bool		failed = false;

	if (!wc_begin_dump(false))
		return;
	if (wc_restore_was_incomplete(NULL))
	{
		WarmFileHeader hdr;
		char	   *problem;

		if (wc_check_file(WC_DUMP_FILE, &hdr, &problem) == WC_FILE_OK)
			min_blocks = (int64) hdr.nblocks;
	}

	/*
	 * A promoted server whose load of the followed set did not complete
	 * keeps that file, the fuller set, to load it at the next start: a dump
	 * of fewer blocks does not replace the saved file meanwhile.
	 */
	if (!RecoveryInProgress() && access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		WarmFileHeader hdr;
		char	   *problem;

		if (wc_check_file(WC_FOLLOWED_FILE, &hdr, &problem) == WC_FILE_OK)
			min_blocks = Max(min_blocks, (int64) hdr.nblocks);
	}
	PG_TRY();
	{
		n = wc_dump(shutdown, min_blocks);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		LWLockReleaseAll();
		/* No transaction ends here to close what the dump left open. */
		AtEOXact_Files(false);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("could not dump the buffer cache's block list: %s",
						edata->message),
				 errdetail("The saved block list is unchanged; the next dump tries again.")));
		FreeErrorData(edata);
		failed = true;
	}
	PG_END_TRY();

	if (failed || n == WC_DUMP_STOPPED)
		;						/* the saved file is unchanged */
	else if (n == WC_DUMP_KEPT)
		ereport(LOG,
				(errmsg_plural("kept the saved block list of %lld block",
							   "kept the saved block list of %lld blocks",
							   (unsigned long) min_blocks,
							   (long long) min_blocks),
				 errdetail("The last restore did not complete and the buffer cache holds fewer blocks.")));
	else
	{
		wc_restore_forget_incomplete();
		if (shutdown && wc_server_stopping())
			ereport(LOG,
					(errmsg_plural("dumped %lld block at shutdown",
								   "dumped %lld blocks at shutdown",
								   (unsigned long) n, (long long) n)));
		else if (shutdown)
			ereport(LOG,
					(errmsg_plural("dumped %lld block before the autowarm worker exits",
								   "dumped %lld blocks before the autowarm worker exits",
								   (unsigned long) n, (long long) n)));
	}
	wc_end_operation();
}

/*
 * The time has come to restore the saved file again, for a database a
 * command kept out of the last restore (restore.c): ask for it, unless a
 * restore was asked for already.
 */
static void
retry_restore(void)
{
	if (wc_take_restore_retry())
		ereport(LOG,
				(errmsg("restoring the saved file again"),
				 errdetail("A database-level command kept part of it out of the last restore.")));
}

/*
 * A pass over the followed set, on a standby, in the mode follow_primary
 * says: read, which leaves the blocks in the OS page cache, or buffer.
 * Returns false if a dump runs: the caller comes back.
 */
static bool
follow_pass(void)
{
	if (!wc_begin_follow_pass())
		return false;
	wc_lead_restore(wc_follow_primary == WC_FOLLOW_BUFFER ?
					WC_MODE_BUFFER : WC_MODE_READ, WC_SOURCE_FOLLOWED);
	return true;
}

/*
 * At promotion: load the followed set into shared buffers, hottest first,
 * from the OS page cache that following kept warm; then the set is this
 * server's own and its next dumps say what it is.  Returns whether a load
 * began; if a dump runs, the caller comes back.
 */
static bool
load_at_promotion(void)
{
	bool		complete;
	bool		asked;

	if (wc_follow_primary == WC_FOLLOW_OFF || access(WC_FOLLOWED_FILE, F_OK) != 0)
		return true;
	wc_channel_note_promoted();
	if (!wc_begin_follow_pass())
		return false;
	ereport(LOG,
			(errmsg("loading the primary's hot set into shared buffers"),
			 errdetail("The server has been promoted.")));
	wc_lead_restore(WC_MODE_BUFFER, WC_SOURCE_PROMOTION);

	/*
	 * The followed set is this server's only copy of the primary's hot set
	 * until it is loaded: a load that a shutdown, a termination of this
	 * worker or an error cut short leaves the file, for the next start of
	 * the worker or the server.  Only an abort or a cancel asked for drops
	 * it.
	 */
	complete = !wc_restore_was_incomplete(&asked);
	if (complete || asked)
		(void) durable_unlink(WC_FOLLOWED_FILE, LOG);
	else
		ereport(LOG,
				(errmsg("the primary's hot set is kept in \"%s\"",
						WC_FOLLOWED_FILE),
				 errdetail("Its load at promotion did not complete. It is loaded again when the autowarm worker or the server starts next.")));
	return true;
}

/*
 * Entry point of the autowarm worker.  Its loop reads as one list of what
 * the worker may have to do next (a restore, a dump, a wait), which is why
 * it is not cut up.
 */
void
pg_warmcache_main(Datum arg)
{
	MemoryContext cxt;
	bool		import;
	bool		in_recovery;
	bool		follow_due = false;
	TimestampTz last_dump;
	TimestampTz last_fetch = 0;

	wc_handle_shutdown_requests();
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, autowarm_cancel_handler);
	BackgroundWorkerUnblockSignals();

	before_shmem_exit(autowarm_worker_exit, (Datum) 0);

	/* No database: the leader reads pg_database, a shared catalog. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	cxt = AllocSetContextCreate(TopMemoryContext, "pg_warmcache worker",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	/*
	 * The restore at the server's start reads the old cluster's file if the
	 * administrator copied one in after pg_upgrade, instead of the saved
	 * file; a later restart of this worker does not.
	 */
	import = wc_register_worker(wc_autowarm, (WarmMode) wc_restore_mode) &&
		access(WC_IMPORT_FILE, F_OK) == 0;

	/* Scratch files of a fetch or publication a crash interrupted */
	(void) unlink(WC_FOLLOWED_TMP_FILE);
	(void) unlink(WC_FOLLOWED_PART_FILE);
	(void) unlink(WC_PUBLISHED_TMP_FILE);

	/*
	 * A load at promotion that did not complete left the followed file: it
	 * is done again, as if the promotion came now.
	 */
	in_recovery = RecoveryInProgress() ||
		(wc_follow_primary != WC_FOLLOW_OFF && access(WC_FOLLOWED_FILE, F_OK) == 0);
	last_dump = GetCurrentTimestamp();
	while (!ShutdownRequestPending)
	{
		long		timeout = 60 * 1000L;
		TimestampTz retry_at;

		/* A cancel stops a restore; outside one there is nothing to stop. */
		wc_cancel_pending = false;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		retry_at = wc_restore_retry_at();
		if (retry_at != 0 && GetCurrentTimestamp() >= retry_at)
			retry_restore();

		if (wc_restore_is_requested())
		{
			WarmMode	mode;

			if (wc_begin_requested_restore(&mode))
			{
				wc_lead_restore(mode, import ? WC_SOURCE_IMPORT : WC_SOURCE_SAVED);
				import = false;
				last_dump = GetCurrentTimestamp();
				MemoryContextReset(cxt);
				continue;
			}
			/* A dump runs; it ends soon and wakes us through the latch. */
			timeout = 100;
		}
		else if (in_recovery && !RecoveryInProgress())
		{
			if (load_at_promotion())
			{
				in_recovery = false;
				MemoryContextReset(cxt);
				continue;
			}
			timeout = 100;
		}
		else if (in_recovery && wc_follow_primary != WC_FOLLOW_OFF &&
				 (follow_due ||
				  TimestampDifferenceExceeds(last_fetch, GetCurrentTimestamp(),
											 WC_FOLLOW_POLL_MS)))
		{
			if (!follow_due)
			{
				last_fetch = GetCurrentTimestamp();
				follow_due = wc_fetch_followed();
			}
			if (follow_due && follow_pass())
				follow_due = false;
			MemoryContextReset(cxt);
			if (!follow_due)
				continue;
			timeout = 100;		/* a dump runs; it ends soon */
		}
		else if (!in_recovery && wc_publish_pending())
		{
			wc_publish();
			MemoryContextReset(cxt);
			if (wc_publish_pending())
				timeout = 5000;	/* not now: no standby, or busy */
		}

		if (timeout > 100 && wc_autowarm && wc_dump_interval > 0)
		{
			TimestampTz next = TimestampTzPlusMilliseconds(last_dump,
														   wc_dump_interval * 1000L);
			TimestampTz now = GetCurrentTimestamp();

			if (now >= next)
			{
				auto_dump(false);
				MemoryContextReset(cxt);
				last_dump = GetCurrentTimestamp();
				continue;
			}
			timeout = Min(timeout, (long) ((next - now) / 1000) + 1);
		}
		if (in_recovery && wc_follow_primary != WC_FOLLOW_OFF)
			timeout = Min(timeout, WC_PROMOTION_POLL_MS);
		retry_at = wc_restore_retry_at();
		if (retry_at != 0)
		{
			long		left;

			left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
												   retry_at);
			timeout = Min(timeout, Max(left, 1));
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);

		/* Connected, we must absorb barriers: DROP TABLESPACE waits for them. */
		CHECK_FOR_INTERRUPTS();
	}

	/* Whoever asked, the saved set is written before the worker goes. */
	if (wc_autowarm)
		auto_dump(true);
	if (!wc_server_stopping())
	{
		ereport(LOG,
				(errmsg("the autowarm worker was terminated"),
				 errdetail("It wrote its dump, and it is started again in %d seconds.",
						   WC_RESTART_S)));
		proc_exit(1);
	}
	proc_exit(0);
}
