/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The autowarm worker: periodic and shutdown dumps, and the restore.
 *
 * One worker runs from the time the server is consistent (so on a hot
 * standby too).  At its first start it restores the dump file, then dumps
 * every pg_warmcache.dump_interval seconds and at shutdown, and runs the
 * restores that warmcache_restore_now() asks for.
 *
 * A restore is led by this worker and done by one dynamic worker per
 * database, at most pg_warmcache.restore_workers at a time, largest
 * database first.  Each reads the file in its order (hottest rank first,
 * then physical order) and keeps the runs of its own database; the blocks
 * of shared catalogs go with the first database.  For each relation fork it
 * looks the relation up by relfilenode, takes AccessShareLock in a short
 * transaction, checks the relfilenode did not change, clips the runs to
 * the current size and hands them to the warming engine (warm.c), whose
 * pacer here counts progress, honours abort and shutdown, caps the rate
 * and yields to queries waiting for reads.  Blocks of vanished databases,
 * relations and forks, and blocks past the end, are skipped and counted.
 *
 * A restore that did not finish (aborted, or interrupted by shutdown)
 * leaves restore_incomplete set: automatic dumps then keep the saved file
 * unless the new one holds at least as many blocks.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "pg_warmcache.h"

/* Blocks per read while queries wait for reads: 64 kB. */
#define WC_YIELD_IO_BLOCKS	8

/* Runs handed to the engine at once (one relation fork, one rank). */
#define WC_BATCH_RUNS	1024

typedef struct DbCount
{
	Oid			db;
	uint64		blocks;			/* in the file, shared catalogs included for
								 * the first */
	uint64		processed;		/* by its workers that ended */
	int			launched;		/* stripes started */
	int			running;
} DbCount;

/*
 * A database restored by several workers is cut into stripes of
 * WC_STRIPE_BLOCKS blocks of each relation fork, dealt round-robin, so each
 * worker still reads long sequential pieces and all follow the rank order.
 */
#define WC_STRIPE_BLOCKS	4096
#define WC_MAX_STRIPES		8

/* Pacer of a restore worker. */
typedef struct RestorePacer
{
	WarmPacer	base;
	WarmSlot   *slot;
	WarmMode	mode;
	TimestampTz started;
	uint64		done;			/* blocks warmed by this worker */
	pg_atomic_uint64 *processed;	/* the slot's counter for this batch */
} RestorePacer;

static int	restore_slot = -1;

/*
 * Register the autowarm worker; called from _PG_init.
 */
void
wc_register_main_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 10;
	strcpy(worker.bgw_library_name, "pg_warmcache");
	strcpy(worker.bgw_function_name, "pg_warmcache_main");
	strcpy(worker.bgw_name, "pg_warmcache autowarm");
	strcpy(worker.bgw_type, "pg_warmcache autowarm");
	RegisterBackgroundWorker(&worker);
}

/*---- The restore worker of one database ----*/

static void
pace_restore(WarmPacer *base, uint64 in_buffers, uint64 os_only)
{
	RestorePacer *p = (RestorePacer *) base;
	uint64		blocks = in_buffers + os_only;

	if (blocks > 0)
	{
		p->done += blocks;
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_done, blocks);
		pg_atomic_fetch_add_u64(p->processed, blocks);
	}
	if (os_only > 0)
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_os, os_only);

	if (wc_shared->abort_requested)
	{
		p->base.stop = true;
		return;
	}
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}

	/*
	 * Queries waiting for a read go first: read in small pieces with one
	 * more ahead, so that theirs queue behind at most 128 kB of ours (1 ms
	 * on a 125 MB/s volume) while the device stays busy.  Idle, read in
	 * large pieces far ahead.
	 */
	if (wc_restore_yield && wc_foreground_reading())
	{
		p->base.io_blocks = WC_YIELD_IO_BLOCKS;
		p->base.window = Min(wc_default_window(), WC_YIELD_IO_BLOCKS);
	}
	else
	{
		p->base.io_blocks = 0;
		p->base.window = wc_default_window();
	}

	/* Hard cap: sleep until the rate so far is back under the limit. */
	if (wc_max_restore_rate > 0)
	{
		double		allowed_us = (double) p->done * BLCKSZ /
		(wc_max_restore_rate * 1024.0 * 1024.0) * 1000000.0;
		TimestampTz due = p->started + (TimestampTz) allowed_us;
		TimestampTz now = GetCurrentTimestamp();

		if (due > now)
		{
			long		ms = (long) ((due - now) / 1000);

			if (ms > 0)
			{
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 ms, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
			}
		}
	}
}

/*
 * Restore one batch of runs of one relation fork, in a transaction of its
 * own so that the lock is held only while its blocks are read.
 */
static void
restore_batch(RestorePacer *p, const WarmRun *key, WarmRange *ranges,
			  int nranges, uint64 blocks)
{
	Oid			relid;
	Relation	rel = NULL;
	uint64		skipped = blocks;
	uint64		before = p->done;

	p->processed = key->db == InvalidOid ? &p->slot->processed_global :
		&p->slot->processed;
	StartTransactionCommand();
	relid = RelidByRelfilenumber(key->spc, key->relnumber);
	if (OidIsValid(relid))
		rel = try_relation_open(relid, AccessShareLock);

	/* Rewritten between the look-up and the lock? Then the blocks are gone. */
	if (rel != NULL && wc_rel_filenumber(rel) == key->relnumber &&
		RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		smgrexists(RelationGetSmgr(rel), (ForkNumber) key->fork))
	{
		BlockNumber nblocks = RelationGetNumberOfBlocksInFork(rel, (ForkNumber) key->fork);
		int			i;
		int			n = 0;

		for (i = 0; i < nranges; i++)
		{
			if (ranges[i].start >= nblocks)
				continue;
			ranges[n].start = ranges[i].start;
			ranges[n].count = Min(ranges[i].count, nblocks - ranges[i].start);
			n++;
		}
		wc_warm_ranges(rel, (ForkNumber) key->fork, p->mode, ranges, n,
					   &p->base);
		skipped = p->base.stop ? 0 : blocks - (p->done - before);
	}
	if (rel != NULL)
		relation_close(rel, AccessShareLock);
	CommitTransactionCommand();

	if (skipped > 0)
	{
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped, skipped);
		pg_atomic_fetch_add_u64(p->processed, skipped);
	}
}

static void
restore_worker_exit(int code, Datum arg)
{
	if (restore_slot >= 0)
		wc_shared->slots[restore_slot].pid = 0;
}

/*
 * A rank whose runs (of this worker) are at least this many blocks long on
 * average gets a pass of its own.  Shorter runs would be read at the
 * device's I/O operation rate rather than its bandwidth (a small cloud
 * volume reads 3000 x 8 kB = 24 MB/s but 125 MB/s in large reads), so a
 * sparse rank joins the next lower one, and their runs are read together in
 * physical order.  Hottest first still holds from pass to pass.
 */
#define WC_DENSE_RUN	8

/* Where each rank's runs are in the file, and how many are ours. */
typedef struct RankPlan
{
	uint64		first[WC_MAX_RANK + 1]; /* index of the rank's first run */
	uint64		nruns[WC_MAX_RANK + 1]; /* runs of the rank in the file */
	uint64		my_blocks[WC_MAX_RANK + 1];
	uint64		my_runs[WC_MAX_RANK + 1];
} RankPlan;

/* The runs of a pass, merged from its ranks in physical order. */
typedef struct PassReader
{
	int			n;
	WarmFileReader r[WC_MAX_RANK + 1];
	WarmRun		cur[WC_MAX_RANK + 1];
	bool		have[WC_MAX_RANK + 1];
} PassReader;

static bool
run_is_mine(const WarmSlot *slot, const WarmRun *run)
{
	if (run->db == InvalidOid)
		return slot->with_global;
	return run->db == slot->db && !slot->only_global;
}

static void
plan_ranks(const WarmSlot *slot, RankPlan *plan)
{
	WarmFileReader r;
	WarmRun		run;
	uint64		idx = 0;

	memset(plan, 0, sizeof(*plan));
	if (!wc_reader_open(&r, true))
		return;
	while (wc_reader_next(&r, &run))
	{
		if (plan->nruns[run.rank]++ == 0)
			plan->first[run.rank] = idx;
		if (run_is_mine(slot, &run))
		{
			plan->my_blocks[run.rank] += run.count;
			plan->my_runs[run.rank]++;
		}
		idx++;
	}
	wc_reader_close(&r);
}

static void
pass_open(PassReader *pr, const RankPlan *plan, int hi, int lo)
{
	int			rank;

	pr->n = 0;
	for (rank = hi; rank >= lo; rank--)
	{
		int			k = pr->n;

		if (plan->my_blocks[rank] == 0)
			continue;
		if (!wc_reader_open(&pr->r[k], true))
			break;
		wc_reader_seek(&pr->r[k], plan->first[rank], plan->nruns[rank]);
		pr->have[k] = wc_reader_next(&pr->r[k], &pr->cur[k]);
		pr->n++;
	}
}

static bool
pass_next(PassReader *pr, WarmRun *run)
{
	int			best = -1;
	int			k;

	for (k = 0; k < pr->n; k++)
		if (pr->have[k] &&
			(best < 0 || wc_run_phys_cmp(&pr->cur[k], &pr->cur[best]) < 0))
			best = k;
	if (best < 0)
		return false;
	*run = pr->cur[best];
	pr->have[best] = wc_reader_next(&pr->r[best], &pr->cur[best]);
	return true;
}

static void
pass_close(PassReader *pr)
{
	int			k;

	for (k = 0; k < pr->n; k++)
		wc_reader_close(&pr->r[k]);
	pr->n = 0;
}

/*
 * Restore one pass: the ranks hi down to lo, in physical order, this
 * worker's stripes of them.
 */
static void
restore_pass(RestorePacer *p, const RankPlan *plan, int hi, int lo,
			 WarmRange *ranges)
{
	WarmSlot   *slot = p->slot;
	PassReader	pr;
	WarmRun		run;
	WarmRun		key = {0};
	int			nranges = 0;
	uint64		blocks = 0;

	pass_open(&pr, plan, hi, lo);
	while (!p->base.stop && pass_next(&pr, &run))
	{
		BlockNumber start = run.start;
		BlockNumber end = run.start + run.count;
		bool		global = (run.db == InvalidOid);

		if (!run_is_mine(slot, &run))
			continue;
		if (nranges > 0 &&
			(run.db != key.db || run.spc != key.spc ||
			 run.relnumber != key.relnumber || run.fork != key.fork))
		{
			restore_batch(p, &key, ranges, nranges, blocks);
			nranges = 0;
			blocks = 0;
		}
		key = run;

		/* Keep this worker's stripes of the run; shared catalogs whole. */
		while (start < end)
		{
			BlockNumber piece_end = end;

			if (!global && slot->nstripes > 1)
			{
				BlockNumber stripe_no = start / WC_STRIPE_BLOCKS;

				piece_end = Min(end, (stripe_no + 1) * WC_STRIPE_BLOCKS);
				if ((stripe_no + run.relnumber) % slot->nstripes != slot->stripe)
				{
					start = piece_end;
					continue;
				}
			}
			blocks += piece_end - start;
			if (nranges > 0 &&
				ranges[nranges - 1].start + ranges[nranges - 1].count == start)
			{
				/* Touches the previous run (of another rank): one range. */
				ranges[nranges - 1].count += piece_end - start;
				start = piece_end;
				continue;
			}
			if (nranges == WC_BATCH_RUNS)
			{
				restore_batch(p, &key, ranges, nranges, blocks - (piece_end - start));
				nranges = 0;
				blocks = piece_end - start;
			}
			ranges[nranges].start = start;
			ranges[nranges].count = piece_end - start;
			nranges++;
			start = piece_end;
		}
	}
	if (nranges > 0 && !p->base.stop)
		restore_batch(p, &key, ranges, nranges, blocks);
	pass_close(&pr);
}

/*
 * Entry point of a restore worker; arg is its slot.
 */
void
pg_warmcache_restore_main(Datum arg)
{
	WarmSlot   *slot;
	RestorePacer p;
	RankPlan	plan;
	WarmRange  *ranges;
	int			hi = -1;
	int			rank;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	restore_slot = DatumGetInt32(arg);
	slot = &wc_shared->slots[restore_slot];
	before_shmem_exit(restore_worker_exit, (Datum) 0);

	/* A database dropped since the dump ends us here, with FATAL. */
	BackgroundWorkerInitializeConnectionByOid(slot->db, InvalidOid, 0);
	slot->pid = MyProcPid;
	slot->connected = true;
	pgstat_report_activity(STATE_RUNNING, "restoring saved blocks");

	memset(&p, 0, sizeof(p));
	p.base.pace = pace_restore;
	p.base.window = wc_default_window();
	p.base.no_evict = true;
	p.slot = slot;
	p.mode = wc_shared->restore_mode;
	p.started = GetCurrentTimestamp();
	p.processed = &slot->processed;
	ranges = palloc(sizeof(WarmRange) * WC_BATCH_RUNS);

	/* Passes, hottest first; a sparse rank joins the next one down. */
	plan_ranks(slot, &plan);
	for (rank = WC_MAX_RANK; rank >= 0 && !p.base.stop; rank--)
	{
		if (plan.my_blocks[rank] == 0)
			continue;
		if (hi < 0)
			hi = rank;
		if (plan.my_blocks[rank] >= WC_DENSE_RUN * plan.my_runs[rank] || rank == 0)
		{
			elog(DEBUG1, "pg_warmcache: restore pass over ranks %d to %d", hi, rank);
			restore_pass(&p, &plan, hi, rank, ranges);
			hi = -1;
		}
	}
	if (hi >= 0 && !p.base.stop)
		restore_pass(&p, &plan, hi, 0, ranges);

	proc_exit(0);
}

/*---- The leader ----*/

static int
dbcount_cmp(const void *a, const void *b)
{
	const DbCount *x = a;
	const DbCount *y = b;

	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->db < y->db ? -1 : (x->db > y->db ? 1 : 0);
}

/*
 * Blocks per database in the file; shared catalogs (db 0) come back in
 * *global.  The list is short: one entry per database.
 */
static DbCount *
count_databases(int *ndbs, uint64 *global)
{
	WarmFileReader r;
	WarmRun		run;
	DbCount    *dbs = NULL;
	int			n = 0;
	int			cap = 0;

	*global = 0;
	if (wc_reader_open(&r, false))
	{
		while (wc_reader_next(&r, &run))
		{
			int			i;

			if (run.db == InvalidOid)
			{
				*global += run.count;
				continue;
			}
			for (i = 0; i < n && dbs[i].db != run.db; i++)
				;
			if (i == n)
			{
				if (n == cap)
				{
					cap = cap ? cap * 2 : 8;
					dbs = dbs ? repalloc(dbs, cap * sizeof(DbCount)) :
						palloc(cap * sizeof(DbCount));
				}
				memset(&dbs[n], 0, sizeof(DbCount));
				dbs[n].db = run.db;
				n++;
			}
			dbs[i].blocks += run.count;
		}
		wc_reader_close(&r);
	}
	if (n > 1)
		qsort(dbs, n, sizeof(DbCount), dbcount_cmp);
	*ndbs = n;
	return dbs;
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
 * Restore the dump file.  Runs in the autowarm worker, which has set the
 * state to restoring; returns with the state idle.
 */
static void
run_restore(WarmMode mode)
{
	WarmFileHeader hdr;
	char	   *problem;
	WarmFileStatus st;
	DbCount    *dbs;
	int			ndbs;
	uint64		global;
	int			next = 0;		/* next database to start a stripe of */
	int			nstripes;
	BackgroundWorkerHandle *handles[WC_MAX_RESTORE_WORKERS] = {0};
	int			slot_db[WC_MAX_RESTORE_WORKERS] = {0};
	bool		global_pending;	/* shared catalogs wait for a worker */
	uint64		global_processed = 0;
	Oid			good_db = InvalidOid;	/* a database a worker connected to */
	bool		stopped = false;
	uint64		done;
	uint64		skipped;
	uint64		os;
	long		secs;
	int			usecs;
	double		elapsed;
	TimestampTz started;

	st = wc_check_file(&hdr, &problem);
	if (st != WFS_OK)
	{
		if (st == WFS_BAD)
			wc_set_aside_bad_file(problem, WARNING);
		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		wc_shared->restore_requested = false;
		wc_shared->abort_requested = false;
		LWLockRelease(wc_shared->lock);
		wc_end();
		return;
	}

	dbs = count_databases(&ndbs, &global);
	global_pending = global > 0;
	/* Workers to spare split the databases into stripes. */
	nstripes = ndbs > 0 ? Max(1, Min(wc_restore_workers / ndbs, WC_MAX_STRIPES)) : 1;
	started = GetCurrentTimestamp();

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	if (wc_shared->last_dump_at == 0)
	{
		/* The dump was written before this start: show it. */
		wc_shared->last_dump_at = hdr.dumped_at;
		wc_shared->last_dump_blocks = (int64) hdr.nblocks;
		wc_shared->last_dump_seconds = -1;	/* not known: shown as null */
	}
	wc_shared->restore_requested = false;
	wc_shared->restore_mode = mode;
	wc_shared->restore_incomplete = false;
	wc_shared->restore_started_at = started;
	wc_shared->restore_finished_at = 0;
	wc_shared->restore_blocks_total = (int64) hdr.nblocks;
	pg_atomic_write_u64(&wc_shared->restore_blocks_done, 0);
	pg_atomic_write_u64(&wc_shared->restore_blocks_skipped, 0);
	pg_atomic_write_u64(&wc_shared->restore_blocks_os, 0);
	LWLockRelease(wc_shared->lock);

	ereport(LOG,
			(errmsg("pg_warmcache: restoring %llu blocks (%.1f MB) of %d database(s) in mode %s",
					(unsigned long long) hdr.nblocks,
					hdr.nblocks * (double) BLCKSZ / (1024.0 * 1024.0),
					ndbs, wc_mode_name(mode))));

	for (;;)
	{
		int			running = 0;
		int			i;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (ShutdownRequestPending || wc_shared->abort_requested)
		{
			stopped = true;
			wc_shared->abort_requested = true;	/* the workers look at it */
		}

		/*
		 * Reap workers that ended.  When all stripes of a database have
		 * ended, what they did not process was skipped (a dropped database
		 * ends its workers as they connect).  Shared catalogs whose worker
		 * could not connect wait for another.
		 */
		for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		{
			WarmSlot   *slot = &wc_shared->slots[i];
			pid_t		pid;

			if (handles[i] == NULL)
				continue;
			if (GetBackgroundWorkerPid(handles[i], &pid) != BGWH_STOPPED)
			{
				running++;
				continue;
			}
			if (slot->connected)
				good_db = slot->db;
			global_processed += pg_atomic_read_u64(&slot->processed_global);
			if (slot->with_global && !slot->connected)
				global_pending = true;
			if (slot_db[i] >= 0)
			{
				DbCount    *d = &dbs[slot_db[i]];

				d->processed += pg_atomic_read_u64(&slot->processed);
				d->running--;
				if (!stopped && d->running == 0 && d->launched == nstripes &&
					d->processed < d->blocks)
					pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped,
											d->blocks - d->processed);
			}
			pfree(handles[i]);
			handles[i] = NULL;
			slot->pid = 0;
		}

		/*
		 * Start more: the stripes of one database, then the next; shared
		 * catalogs go with the next worker started, or, when all databases
		 * are started, with a worker of their own in a database known to
		 * exist.
		 */
		while (!stopped && running < wc_restore_workers &&
			   (next < ndbs || (global_pending && OidIsValid(good_db))))
		{
			WarmSlot   *slot;
			bool		only_global = next >= ndbs;

			for (i = 0; i < WC_MAX_RESTORE_WORKERS && handles[i] != NULL; i++)
				;
			Assert(i < WC_MAX_RESTORE_WORKERS);
			slot = &wc_shared->slots[i];
			slot->db = only_global ? good_db : dbs[next].db;
			slot->with_global = global_pending;
			slot->only_global = only_global;
			slot->stripe = only_global ? 0 : dbs[next].launched;
			slot->nstripes = nstripes;
			slot->connected = false;
			slot->pid = 0;
			pg_atomic_write_u64(&slot->processed, 0);
			pg_atomic_write_u64(&slot->processed_global, 0);
			slot_db[i] = only_global ? -1 : next;
			global_pending = false;
			if (!only_global && ++dbs[next].launched == nstripes)
				next++;
			if (launch_restore_worker(i, &handles[i]))
			{
				if (slot_db[i] >= 0)
					dbs[slot_db[i]].running++;
				running++;
			}
			else
			{
				ereport(WARNING,
						(errmsg("pg_warmcache: could not start a restore worker for database %u",
								slot->db),
						 errhint("Consider raising \"max_worker_processes\".")));
				handles[i] = NULL;
				global_pending = slot->with_global;
				if (global_pending && only_global)
					break;		/* no use trying again at once */
				if (slot_db[i] >= 0)
				{
					DbCount    *d = &dbs[slot_db[i]];

					if (d->running == 0 && d->launched == nstripes &&
						d->processed < d->blocks)
						pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped,
												d->blocks - d->processed);
				}
			}
		}

		if (running == 0 && (stopped || next >= ndbs))
			break;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	/* Shared catalogs no worker could read are skipped too. */
	if (!stopped && global_processed < global)
		pg_atomic_fetch_add_u64(&wc_shared->restore_blocks_skipped,
								global - global_processed);

	done = pg_atomic_read_u64(&wc_shared->restore_blocks_done);
	skipped = pg_atomic_read_u64(&wc_shared->restore_blocks_skipped);
	os = pg_atomic_read_u64(&wc_shared->restore_blocks_os);
	TimestampDifference(started, GetCurrentTimestamp(), &secs, &usecs);
	elapsed = secs + usecs / 1000000.0;

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	wc_shared->restore_finished_at = GetCurrentTimestamp();
	wc_shared->restore_incomplete = stopped;
	wc_shared->abort_requested = false;
	LWLockRelease(wc_shared->lock);
	wc_end();

	ereport(LOG,
			(errmsg("pg_warmcache: %s: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
					stopped ? "restore stopped" : "restore finished",
					(unsigned long long) done,
					(unsigned long long) hdr.nblocks,
					(unsigned long long) os,
					(unsigned long long) skipped,
					elapsed,
					elapsed > 0 ? done * (double) BLCKSZ / (1024.0 * 1024.0) / elapsed : 0.0)));
	if (dbs)
		pfree(dbs);
}

/*---- The autowarm worker ----*/

static void
main_worker_exit(int code, Datum arg)
{
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	wc_shared->worker_pid = 0;
	wc_shared->worker_latch = NULL;
	if (wc_shared->state != WC_IDLE &&
		(wc_shared->dumping_pid == MyProcPid || wc_shared->state == WC_RESTORING))
	{
		wc_shared->state = WC_IDLE;
		wc_shared->dumping_pid = 0;
	}
	LWLockRelease(wc_shared->lock);
	ConditionVariableBroadcast(&wc_shared->cv);
}

/*
 * An automatic dump.  After an incomplete restore it must not replace the
 * saved file with a smaller one.
 */
static void
auto_dump(bool shutdown)
{
	int64		min_blocks = 0;
	int64		n;

	if (!wc_try_begin(WC_DUMPING, false))
		return;
	if (wc_shared->restore_incomplete)
	{
		WarmFileHeader hdr;
		char	   *problem;

		if (wc_check_file(&hdr, &problem) == WFS_OK)
			min_blocks = (int64) hdr.nblocks;
	}
	n = wc_dump(shutdown, min_blocks);
	if (n < 0)
		ereport(LOG,
				(errmsg("pg_warmcache: kept the saved block list of %lld blocks",
						(long long) min_blocks),
				 errdetail("The last restore did not finish and the buffer cache holds fewer blocks.")));
	else
	{
		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		wc_shared->restore_incomplete = false;
		LWLockRelease(wc_shared->lock);
		if (shutdown)
			ereport(LOG,
					(errmsg("pg_warmcache: dumped %lld blocks at shutdown", (long long) n)));
	}
	wc_end();
}

void
pg_warmcache_main(Datum arg)
{
	MemoryContext cxt;
	bool		first;
	TimestampTz last_dump;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	before_shmem_exit(main_worker_exit, (Datum) 0);
	cxt = AllocSetContextCreate(TopMemoryContext, "pg_warmcache worker",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	wc_shared->worker_pid = MyProcPid;
	wc_shared->worker_latch = MyLatch;
	first = !wc_shared->startup_done;
	wc_shared->startup_done = true;
	if (first && wc_autowarm)
	{
		wc_shared->restore_requested = true;
		wc_shared->request_mode = (WarmMode) wc_restore_mode;
	}
	LWLockRelease(wc_shared->lock);

	last_dump = GetCurrentTimestamp();
	while (!ShutdownRequestPending)
	{
		long		timeout = 60 * 1000L;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		if (wc_shared->restore_requested)
		{
			bool		go;
			WarmMode	mode;

			LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
			go = wc_shared->state == WC_IDLE;
			mode = wc_shared->request_mode;
			if (go)
				wc_shared->state = WC_RESTORING;
			LWLockRelease(wc_shared->lock);
			if (go)
			{
				run_restore(mode);
				last_dump = GetCurrentTimestamp();
				MemoryContextReset(cxt);
				continue;
			}
			/* A dump runs; it ends soon and wakes us through the latch. */
			timeout = 100;
		}
		else if (wc_autowarm && wc_dump_interval > 0)
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

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}

	if (wc_autowarm)
		auto_dump(true);
	proc_exit(0);
}
