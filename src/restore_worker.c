/*-------------------------------------------------------------------------
 *
 * restore_worker.c
 *		A restore worker: restores its database's share of the dump file.
 *
 * The leader (restore.c) starts one or more of these per database.  Each
 * reads the file in its order (hottest rank first, then physical order),
 * keeps its own runs (its database's, or its stripes of them; the shared
 * catalogs' if it was given them) and restores them in passes.  For each
 * relation fork it looks the relation up by relfilenode, takes
 * AccessShareLock in a short transaction, checks the relfilenode did not
 * change, clips the runs to the current size and hands them to the warming
 * engine (engine.c), whose pacer here counts progress, honours abort and
 * shutdown, caps the rate and yields to queries waiting for reads.  Blocks
 * of vanished relations and forks, and blocks past the end, are skipped
 * and counted.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/restore_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dumpfile.h"
#include "pg_warmcache.h"
#include "restore.h"

/* Blocks per read while queries wait for reads: 64 kB. */
#define WC_YIELD_IO_BLOCKS	8

/* Runs handed to the engine at once (one relation fork, one rank). */
#define WC_BATCH_RUNS	1024

/* Pacer of a restore worker. */
typedef struct RestorePacer
{
	WarmPacer	base;
	RestoreSlot *slot;
	WarmMode	mode;
	TimestampTz started;
	uint64		done;			/* blocks warmed by this worker */
	pg_atomic_uint64 *processed;	/* the slot's counter for this batch */
} RestorePacer;

static int	restore_slot = -1;

/*
 * Is some backend waiting for a data file read right now?  The restore's
 * own workers do not count.  wait_event_info is read without a lock, as
 * pg_stat_activity does: a stale value only delays the reaction by one
 * chunk.  Auxiliary processes (18's I/O workers among them) sit above
 * MaxBackends and are not looked at: they read on others' behalf.
 */
static bool
foreground_reading(void)
{
	int			i;

	for (i = 0; i < MaxBackends; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		int			pid = proc->pid;
		int			s;
		bool		ours = false;

		if (pid == 0 || pid == MyProcPid ||
			!wc_is_read_wait(UINT32_ACCESS_ONCE(proc->wait_event_info)))
			continue;
		for (s = 0; s < WC_MAX_RESTORE_WORKERS; s++)
		{
			if (wc_shared->slots[s].pid == pid)
			{
				ours = true;
				break;
			}
		}
		if (!ours)
			return true;
	}
	return false;
}


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
	if (wc_restore_yield && foreground_reading())
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
slot_owns_run(const RestoreSlot *slot, const WarmRun *run)
{
	if (run->db == InvalidOid)
		return slot->with_global;
	return run->db == slot->db && !slot->only_global;
}

static void
plan_ranks(const RestoreSlot *slot, RankPlan *plan)
{
	WarmFileReader r;
	WarmRun		run;
	uint64		idx = 0;

	memset(plan, 0, sizeof(*plan));
	if (!wc_reader_open(&r, true))
		return;
	while (wc_reader_next(&r, &run))
	{
		CHECK_FOR_INTERRUPTS();
		if (plan->nruns[run.rank]++ == 0)
			plan->first[run.rank] = idx;
		if (slot_owns_run(slot, &run))
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

/* The ranges of one relation fork gathered for restore_batch(). */
typedef struct Batch
{
	WarmRun		key;			/* the relation fork */
	WarmRange  *ranges;			/* WC_BATCH_RUNS of them */
	int			nranges;
	uint64		blocks;
} Batch;

static void
batch_flush(RestorePacer *p, Batch *batch)
{
	if (batch->nranges > 0 && !p->base.stop)
		restore_batch(p, &batch->key, batch->ranges, batch->nranges,
					  batch->blocks);
	batch->nranges = 0;
	batch->blocks = 0;
}

/* Add blocks [start, end) of the batch's relation fork. */
static void
batch_add(RestorePacer *p, Batch *batch, BlockNumber start, BlockNumber end)
{
	WarmRange  *last = batch->nranges > 0 ?
		&batch->ranges[batch->nranges - 1] : NULL;

	if (last && last->start + last->count == start)
	{
		/* Touches the previous run (of another rank): one range. */
		last->count += end - start;
		batch->blocks += end - start;
		return;
	}
	if (batch->nranges == WC_BATCH_RUNS)
		batch_flush(p, batch);
	batch->ranges[batch->nranges].start = start;
	batch->ranges[batch->nranges].count = end - start;
	batch->nranges++;
	batch->blocks += end - start;
}

static bool
same_relation_fork(const WarmRun *a, const WarmRun *b)
{
	return a->db == b->db && a->spc == b->spc &&
		a->relnumber == b->relnumber && a->fork == b->fork;
}

/*
 * Restore one pass: the ranks hi down to lo, in physical order, this
 * worker's stripes of them.
 */
static void
restore_pass(RestorePacer *p, const RankPlan *plan, int hi, int lo,
			 WarmRange *ranges)
{
	RestoreSlot *slot = p->slot;
	PassReader	pr;
	WarmRun		run;
	Batch		batch = {{0}, ranges, 0, 0};

	pass_open(&pr, plan, hi, lo);
	while (!p->base.stop && pass_next(&pr, &run))
	{
		BlockNumber start = run.start;
		BlockNumber end = run.start + run.count;

		CHECK_FOR_INTERRUPTS();
		if (!slot_owns_run(slot, &run))
			continue;
		if (!same_relation_fork(&run, &batch.key))
			batch_flush(p, &batch);
		batch.key = run;

		/* Keep this worker's stripes of the run; shared catalogs whole. */
		while (start < end)
		{
			BlockNumber piece_end = end;

			if (run.db != InvalidOid && slot->nstripes > 1)
			{
				BlockNumber stripe_no = start / WC_STRIPE_BLOCKS;

				piece_end = Min(end, (stripe_no + 1) * WC_STRIPE_BLOCKS);
				if ((stripe_no + run.relnumber) % slot->nstripes != slot->stripe)
				{
					start = piece_end;
					continue;
				}
			}
			batch_add(p, &batch, start, piece_end);
			start = piece_end;
		}
	}
	batch_flush(p, &batch);
	pass_close(&pr);
}

/*
 * Entry point of a restore worker; arg is its slot.
 */
void
pg_warmcache_restore_main(Datum arg)
{
	RestoreSlot *slot;
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
