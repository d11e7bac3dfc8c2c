/*-------------------------------------------------------------------------
 *
 * restore.c
 *		The restore leader: checks the dump file, starts restore workers
 *		and reports.
 *
 * The autowarm worker (autowarm.c) leads every restore.  It checks the
 * file end to end, counts its blocks per database, and starts dynamic
 * restore workers (restore_worker.c), largest database first, at most
 * pg_warmcache.restore_workers at a time; with workers to spare, each
 * database is split into stripes among several.  The blocks of shared
 * catalogs go with the first worker started, or, if its database turns out
 * to be gone, with a later one.  The leader then polls the workers until
 * all ended, counts what they left unprocessed as skipped, and logs the
 * result.
 *
 * A restore that did not finish (aborted, or interrupted by shutdown)
 * leaves restore_incomplete set: automatic dumps then keep the saved file
 * unless the new one holds at least as many blocks.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/restore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "dumpfile.h"
#include "pg_warmcache.h"
#include "restore.h"

/* One database of the dump file, as the leader deals it out. */
typedef struct DbShare
{
	Oid			db;
	uint64		blocks;			/* in the file */
	uint64		processed;		/* by its workers that ended */
	int			launched;		/* stripes started */
	int			running;
} DbShare;

/* What the leader keeps track of while a restore runs. */
typedef struct RestoreLeader
{
	DbShare    *dbs;			/* largest first */
	int			ndbs;
	int			next_db;		/* next database to start a stripe of */
	int			nstripes;		/* workers per database */
	uint64		global_blocks;	/* of shared catalogs */
	uint64		global_processed;
	bool		global_pending; /* shared catalogs wait for a worker */
	Oid			good_db;		/* a database a worker connected to */
	bool		stopped;		/* aborted or shutting down */
	int			running;		/* workers running */
	BackgroundWorkerHandle *handles[WC_MAX_RESTORE_WORKERS];
	int			slot_db[WC_MAX_RESTORE_WORKERS];	/* index in dbs, or -1 */
} RestoreLeader;

static int
db_share_cmp(const void *a, const void *b)
{
	const DbShare *x = a;
	const DbShare *y = b;

	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->db < y->db ? -1 : (x->db > y->db ? 1 : 0);
}

/*
 * Count the file's blocks per database, largest first; shared catalogs (db
 * 0) are counted apart.  The list is short: one entry per database.
 */
static void
count_databases(RestoreLeader *leader)
{
	WarmFileReader reader;
	WarmRun		run;
	int			cap = 0;

	if (wc_reader_open(&reader, false))
	{
		while (wc_reader_next(&reader, &run))
		{
			int			i;

			CHECK_FOR_INTERRUPTS();
			if (run.db == InvalidOid)
			{
				leader->global_blocks += run.count;
				continue;
			}
			for (i = 0; i < leader->ndbs && leader->dbs[i].db != run.db; i++)
				;
			if (i == leader->ndbs)
			{
				if (leader->ndbs == cap)
				{
					cap = cap ? cap * 2 : 8;
					leader->dbs = leader->dbs ?
						repalloc(leader->dbs, cap * sizeof(DbShare)) :
						palloc(cap * sizeof(DbShare));
				}
				memset(&leader->dbs[i], 0, sizeof(DbShare));
				leader->dbs[i].db = run.db;
				leader->ndbs++;
			}
			leader->dbs[i].blocks += run.count;
		}
		wc_reader_close(&reader);
	}
	if (leader->ndbs > 1)
		qsort(leader->dbs, leader->ndbs, sizeof(DbShare), db_share_cmp);
}

/*
 * When every stripe of a database has ended, what its workers did not
 * process was skipped (a dropped database ends its workers as they
 * connect).
 */
static void
count_rest_as_skipped(RestoreLeader *leader, DbShare *share)
{
	if (!leader->stopped && share->running == 0 &&
		share->launched == leader->nstripes && share->processed < share->blocks)
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped,
								share->blocks - share->processed);
}

static bool
launch_restore_worker(int slotno, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strcpy(worker.bgw_library_name, "pg_warmcache");
	strcpy(worker.bgw_function_name, "pg_warmcache_restore_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_warmcache restore of database %u",
			 wc_shared->slots[slotno].db);
	strcpy(worker.bgw_type, "pg_warmcache restore");
	worker.bgw_main_arg = Int32GetDatum(slotno);
	worker.bgw_notify_pid = MyProcPid;

	/* The leader polls the handle; it does not wait for the start here. */
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

/*
 * Collect the workers that ended.  Shared catalogs whose worker could not
 * connect wait for another worker.
 */
static void
reap_workers(RestoreLeader *leader)
{
	int			i;

	leader->running = 0;
	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
	{
		RestoreSlot *slot = &wc_shared->slots[i];
		pid_t		pid;

		if (leader->handles[i] == NULL)
			continue;
		if (GetBackgroundWorkerPid(leader->handles[i], &pid) != BGWH_STOPPED)
		{
			leader->running++;
			continue;
		}
		if (slot->connected)
			leader->good_db = slot->db;
		leader->global_processed += pg_atomic_read_u64(&slot->processed_global);
		if (slot->with_global && !slot->connected)
			leader->global_pending = true;
		if (leader->slot_db[i] >= 0)
		{
			DbShare    *share = &leader->dbs[leader->slot_db[i]];

			share->processed += pg_atomic_read_u64(&slot->processed);
			share->running--;
			count_rest_as_skipped(leader, share);
		}
		pfree(leader->handles[i]);
		leader->handles[i] = NULL;
		slot->pid = 0;
	}
}

/*
 * Start one more worker: the next stripe of the next database, or, when
 * all databases are started, one of its own for the shared catalogs in a
 * database known to exist.  Returns false if no worker could be started.
 */
static bool
launch_next_worker(RestoreLeader *leader)
{
	bool		only_global = leader->next_db >= leader->ndbs;
	RestoreSlot *slot;
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS && leader->handles[i] != NULL; i++)
		;
	Assert(i < WC_MAX_RESTORE_WORKERS);
	slot = &wc_shared->slots[i];
	slot->db = only_global ? leader->good_db : leader->dbs[leader->next_db].db;
	slot->with_global = leader->global_pending;
	slot->only_global = only_global;
	slot->stripe = only_global ? 0 : leader->dbs[leader->next_db].launched;
	slot->nstripes = leader->nstripes;
	slot->connected = false;
	slot->pid = 0;
	pg_atomic_write_u64(&slot->processed, 0);
	pg_atomic_write_u64(&slot->processed_global, 0);
	leader->slot_db[i] = only_global ? -1 : leader->next_db;
	leader->global_pending = false;
	if (!only_global && ++leader->dbs[leader->next_db].launched == leader->nstripes)
		leader->next_db++;

	if (launch_restore_worker(i, &leader->handles[i]))
	{
		if (leader->slot_db[i] >= 0)
			leader->dbs[leader->slot_db[i]].running++;
		leader->running++;
		return true;
	}

	ereport(WARNING,
			(errmsg("pg_warmcache: could not start a restore worker for database %u",
					slot->db),
			 errhint("Consider raising \"max_worker_processes\".")));
	leader->handles[i] = NULL;
	leader->global_pending = slot->with_global;
	if (leader->slot_db[i] >= 0)
		count_rest_as_skipped(leader, &leader->dbs[leader->slot_db[i]]);
	return false;
}

/* Start workers while there are free places and work for them. */
static void
launch_workers(RestoreLeader *leader)
{
	while (!leader->stopped && leader->running < wc_restore_workers &&
		   (leader->next_db < leader->ndbs ||
			(leader->global_pending && OidIsValid(leader->good_db))))
	{
		bool		only_global = leader->next_db >= leader->ndbs;

		/* Shared catalogs alone: no use trying again at once. */
		if (!launch_next_worker(leader) && only_global &&
			leader->global_pending)
			break;
	}
}

/*
 * Publish the start of a restore of the checked file with header hdr.
 */
static void
publish_start(const WarmFileHeader *hdr, WarmMode mode, TimestampTz started)
{
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	if (wc_shared->last_dump_at == 0)
	{
		/* The dump was written before this start: show it. */
		wc_shared->last_dump_at = hdr->dumped_at;
		wc_shared->last_dump_blocks = (int64) hdr->nblocks;
		wc_shared->last_dump_seconds = -1;	/* not known: shown as null */
	}
	wc_shared->restore_requested = false;
	wc_shared->restore_mode = mode;
	wc_shared->restore_incomplete = false;
	wc_shared->restore_started_at = started;
	wc_shared->restore_finished_at = 0;
	wc_shared->restore_blocks_total = (int64) hdr->nblocks;
	pg_atomic_write_u64(&wc_shared->restore_blocks_done, 0);
	pg_atomic_write_u64(&wc_shared->restore_blocks_skipped, 0);
	pg_atomic_write_u64(&wc_shared->restore_blocks_os, 0);
	LWLockRelease(wc_shared->lock);
}

/*
 * Publish the end of the restore and log its figures.
 */
static void
report_end(const RestoreLeader *leader, const WarmFileHeader *hdr,
		   TimestampTz started)
{
	uint64		done = pg_atomic_read_u64(&wc_shared->restore_blocks_done);
	uint64		skipped = pg_atomic_read_u64(&wc_shared->restore_blocks_skipped);
	uint64		os = pg_atomic_read_u64(&wc_shared->restore_blocks_os);
	TimestampTz finished = GetCurrentTimestamp();
	long		secs;
	int			usecs;
	double		elapsed;

	TimestampDifference(started, finished, &secs, &usecs);
	elapsed = secs + usecs / 1000000.0;

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	wc_shared->restore_finished_at = finished;
	wc_shared->restore_incomplete = leader->stopped;
	wc_shared->abort_requested = false;
	LWLockRelease(wc_shared->lock);

	ereport(LOG,
			(errmsg("pg_warmcache: %s: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
					leader->stopped ? "restore stopped" : "restore finished",
					(unsigned long long) done,
					(unsigned long long) hdr->nblocks,
					(unsigned long long) os,
					(unsigned long long) skipped,
					elapsed,
					elapsed > 0 ? done * (double) BLCKSZ / (1024.0 * 1024.0) / elapsed : 0.0)));
}

/*
 * Restore the dump file.  Runs in the autowarm worker, which has begun the
 * restoring state; ends it before returning.
 */
void
wc_lead_restore(WarmMode mode)
{
	RestoreLeader leader;
	WarmFileHeader hdr;
	char	   *problem;
	DumpFileStatus status;
	TimestampTz started;

	status = wc_check_file(&hdr, &problem);
	if (status != WC_FILE_OK)
	{
		if (status == WC_FILE_BAD)
			wc_set_aside_bad_file(problem, WARNING);
		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		wc_shared->restore_requested = false;
		wc_shared->abort_requested = false;
		LWLockRelease(wc_shared->lock);
		wc_end_operation();
		return;
	}

	memset(&leader, 0, sizeof(leader));
	count_databases(&leader);
	leader.global_pending = leader.global_blocks > 0;
	/* Workers to spare split the databases into stripes. */
	leader.nstripes = leader.ndbs > 0 ?
		Max(1, Min(wc_restore_workers / leader.ndbs, WC_MAX_STRIPES)) : 1;
	started = GetCurrentTimestamp();
	publish_start(&hdr, mode, started);

	ereport(LOG,
			(errmsg("pg_warmcache: restoring %llu blocks (%.1f MB) of %d database(s) in mode %s",
					(unsigned long long) hdr.nblocks,
					hdr.nblocks * (double) BLCKSZ / (1024.0 * 1024.0),
					leader.ndbs, wc_mode_name(mode))));

	for (;;)
	{
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (ShutdownRequestPending || wc_shared->abort_requested)
		{
			leader.stopped = true;
			wc_shared->abort_requested = true;	/* the workers look at it */
		}

		reap_workers(&leader);
		launch_workers(&leader);
		if (leader.running == 0 &&
			(leader.stopped || leader.next_db >= leader.ndbs))
			break;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/* Shared catalogs no worker could read are skipped too. */
	if (!leader.stopped && leader.global_processed < leader.global_blocks)
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped,
								leader.global_blocks - leader.global_processed);

	report_end(&leader, &hdr, started);
	wc_end_operation();
	if (leader.dbs)
		pfree(leader.dbs);
}
