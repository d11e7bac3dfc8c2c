/*-------------------------------------------------------------------------
 *
 * restore_worker.c
 *		A restore worker: restores its share of the dump file.
 *
 * The leader (restore.c) starts one or more of these per database, and one
 * for the shared catalogs, which connects to some database that allows
 * connections (a shared relation cannot be opened without one).  Each
 * reads its database's runs only, where the leader found them in the file,
 * in the file's order (hottest rank first, then physical order), keeps its
 * stripes of them and restores them in passes, in batches of one relation
 * fork, the OS tier's last.  A batch
 * keeps its tier: one deferred from the buffer tier and retried after the
 * OS tier's pass is still restored, and counted, as the buffer tier's.
 * For each batch, in a short transaction, it looks the relation up by
 * relfilenode, takes AccessShareLock without waiting for it, checks the
 * relfilenode did not change, clips the runs to the current size and hands
 * them to the warming engine (engine.c) with its pacer (pacer.c).
 *
 * Nothing waits for the restore:
 * - a relation whose lock someone wants (or that is locked when a batch
 *   begins) is given up at once and its unread blocks deferred; deferred
 *   batches are retried after each pass and at the end, with growing
 *   pauses, WC_LOCK_ATTEMPTS times in all, before they count as skipped;
 * - when a database-level command wants the worker's database, the worker
 *   leaves it: it writes where it is in its slot (restore.h:
 *   RestorePosition) and exits, and the leader starts another worker where
 *   this one stopped once the command is over.  The blocks of deferred
 *   batches are restored again from the first of them on, but counted
 *   once.
 *
 * An error in a batch (a damaged page, a cancel) ends that batch only: it
 * is logged once per worker, its blocks count as skipped, and the worker
 * goes on.  Blocks of vanished relations and forks, and blocks past the
 * end, are skipped as gone.
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
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "dumpfile.h"
#include "pacer.h"
#include "restore.h"
#include "runcodec.h"
#include "operation.h"
#include "restore_shared.h"
#include "workload.h"

/* Runs handed to the engine at once (one relation fork). */
#define WC_BATCH_RUNS	1024

/* Times a batch is tried while its relation is wanted, and the pauses. */
#define WC_LOCK_ATTEMPTS	10
#define WC_RETRY_FIRST_MS	100
#define WC_RETRY_MAX_MS		2000

/*
 * The longest the connection waits for its lock on the database.  The
 * leader starts a worker only where no command wants the database
 * (database.c), but one may come between that look and the connection,
 * and hold the lock as long as its transaction lasts.  The worker then
 * ends unconnected, and the leader looks again before it starts another,
 * so that the 10-s bound on a wanted database holds.
 */
#define WC_CONNECT_LOCK_TIMEOUT "2s"

/* The ranges of one relation fork handed to the engine at once. */
typedef struct Batch
{
	WarmRun		key;			/* the relation fork */
	WarmRange  *ranges;
	int			nranges;
	uint64		blocks;
	uint64		seq_start;		/* position of its first block */
	bool		counting;		/* not yet counted by an earlier worker */
	bool		os_tier;		/* a batch of the OS tier */
	LimitClass	limit_class;	/* against the restore limit */
	int			attempts;		/* times given up for a wanted lock */
	bool		deferred_copy;	/* one of w->deferred, in batch_cxt */
} Batch;

/* How restore_batch() left a batch. */
typedef enum BatchResult
{
	BATCH_HANDLED,				/* every block restored or skipped */
	BATCH_DEFERRED,				/* the batch now holds what is left */
	BATCH_STOPPED				/* abort or shutdown: left undone */
} BatchResult;

/* The state of this restore worker. */
typedef struct RestoreWorker
{
	RestoreSlot *slot;
	RestorePacer pacer;
	WarmMode	mode;			/* the restore's mode, for the buffer tier */
	bool		pass_os_tier;	/* the current pass is the OS tier's */
	MemoryContext batch_cxt;	/* deferred batches live here */
	List	   *deferred;		/* of Batch * */
	uint64		seq;			/* blocks of the share visited so far */
	RestorePosition start;		/* where the leader told us to begin */
	bool		uncounted_added;	/* start.uncounted added to the progress */
	bool		error_logged;
	bool		leaving_database;	/* the database is wanted: leave */
	bool		stopping;		/* abort or shutdown */
} RestoreWorker;

static int	restore_slot = -1;

/* The relations whose relcache entries a worker keeps: remember_opened(). */
#define WC_RELCACHE_KEEP	1024
static Oid	opened[WC_RELCACHE_KEEP];
static int	opened_count = 0;

/*
 * A rank whose runs (of this worker) are at least this many blocks long on
 * average gets a pass of its own.  Shorter runs would be read at the
 * device's I/O operation rate rather than its bandwidth (a small cloud
 * volume reads 3000 x 8 kB = 24 MB/s but 125 MB/s in large reads), so a
 * sparse rank joins the next lower one, and their runs are read together in
 * physical order.  Hottest first still holds from pass to pass.
 */
#define WC_DENSE_RUN	8

/* Where this database's runs of each rank are, and how many are ours. */
typedef struct RankPlan
{
	uint64		first[WC_RANK_SLOTS];	/* position of its first run */
	uint64		nruns[WC_RANK_SLOTS];	/* its runs of the rank */
	uint64		my_blocks[WC_RANK_SLOTS];
	uint64		my_runs[WC_RANK_SLOTS];
	uint64		share[WC_RANK_SLOTS];	/* of my_blocks, in my stripes */
} RankPlan;

/* The shared catalogs' worker has db 0, as their runs do. */
static bool
slot_owns_run(const RestoreSlot *slot, const WarmRun *run)
{
	return run->db == slot->db;
}

/*
 * The next piece of run's blocks from start on that lies in one stripe
 * (WC_STRIPE_BLOCKS); sets *mine to whether the stripe is this worker's.
 */
static BlockNumber
stripe_piece_end(const RestoreSlot *slot, const WarmRun *run,
				 BlockNumber start, bool *mine)
{
	BlockNumber end = run->start + run->count;
	BlockNumber stripe_no;

	*mine = true;
	if (slot->nstripes <= 1)
		return end;
	stripe_no = start / WC_STRIPE_BLOCKS;
	*mine = (stripe_no + run->relnumber) % slot->nstripes == slot->stripe;
	/* In 64 bits: the last stripe's end is past the largest block number. */
	return (BlockNumber) Min((uint64) end,
							 ((uint64) stripe_no + 1) * WC_STRIPE_BLOCKS);
}

/*
 * Open the file the restore reads.  The leader checked it, and nothing
 * removes it while a restore runs; were it gone, the share could not be
 * restored, and the worker must not end as if it had been.
 */
static void
source_gone(const char *path)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_FILE),
			 errmsg("file \"%s\" is gone during the restore", path)));
}

static void
open_source(WarmFileReader *r)
{
	const char *path = wc_source_file(wc_restore->source);

	if (!wc_reader_open(r, path, true))
		source_gone(path);
}

/*
 * What this worker has of each rank: the leader says where its database's
 * runs of each rank are (restore.c), so it reads those and no other
 * database's.
 */
static void
plan_ranks(const RestoreSlot *slot, RankPlan *plan)
{
	WarmFileReader r;
	WarmRun		run;
	int			rank;

	memset(plan, 0, sizeof(*plan));
	open_source(&r);
	for (rank = 0; rank < WC_RANK_SLOTS; rank++)
	{
		if (slot->nruns[rank] == 0)
			continue;
		plan->first[rank] = slot->first[rank];
		plan->nruns[rank] = slot->nruns[rank];
		wc_reader_seek(&r, slot->first[rank], slot->nruns[rank]);
		while (wc_reader_next(&r, &run))
		{
			BlockNumber start = run.start;

			CHECK_FOR_INTERRUPTS();
			if (!slot_owns_run(slot, &run) || wc_rank_slot(run.rank) != rank)
				continue;
			plan->my_blocks[rank] += run.count;
			plan->my_runs[rank]++;
			while (start < run.start + run.count)
			{
				bool		mine;
				BlockNumber end = stripe_piece_end(slot, &run, start, &mine);

				if (mine)
					plan->share[rank] += end - start;
				start = end;
			}
		}
	}
	wc_reader_close(&r);
}

/* The runs of a pass, merged from its ranks in physical order. */
static void
pass_open(WarmRunMerge *pr, const RankPlan *plan, int hi, int lo)
{
	const char *path = wc_source_file(wc_restore->source);
	int			rank;

	pr->n = 0;
	for (rank = hi; rank >= lo; rank--)
	{
		if (plan->my_blocks[rank] == 0)
			continue;
		if (!wc_merge_add(pr, path, true, plan->first[rank],
						  plan->nruns[rank], NULL))
			source_gone(path);
	}
}

static void
count_skipped(RestoreWorker *w, bool counting, RestoreSkipReason reason,
			  uint64 blocks)
{
	if (!counting || blocks == 0)
		return;
	pg_atomic_fetch_add_u64(&wc_restore->skipped[reason], blocks);
	pg_atomic_fetch_add_u64(&w->slot->processed, blocks);
}

/*
 * Clip the batch's ranges to nblocks, into out; returns how many ranges
 * are left.  What lies past the end is gone.
 */
static int
clip_ranges(const Batch *batch, BlockNumber nblocks, WarmRange *out)
{
	int			i;
	int			n = 0;

	for (i = 0; i < batch->nranges; i++)
	{
		const WarmRange *r = &batch->ranges[i];

		if (r->start >= nblocks)
			continue;
		out[n].start = r->start;
		out[n].count = Min(r->count, nblocks - r->start);
		n++;
	}
	return n;
}

/*
 * Make the batch hold what the engine left of ranges after warming done
 * blocks of them.
 */
static void
keep_remainder(Batch *batch, const WarmRange *ranges, int nranges,
			   uint64 done)
{
	int			i;
	int			n = 0;

	batch->blocks = 0;
	for (i = 0; i < nranges; i++)
	{
		WarmRange	r = ranges[i];

		if (done >= r.count)
		{
			done -= r.count;
			continue;
		}
		r.start += done;
		r.count -= done;
		done = 0;
		batch->ranges[n++] = r;
		batch->blocks += r.count;
	}
	batch->nranges = n;
}

/*
 * Make the pacer read a batch of the buffer tier, or of the OS tier: the
 * OS tier goes into the OS page cache only (mode read, or prefetch if the
 * restore's mode is), and a chunk already in shared buffers is not read
 * again.  Taken from each batch, not from the pass, so that a batch
 * deferred from a pass of the buffer tier and retried after the OS tier's
 * pass is still restored, and counted, as the buffer tier's.
 */
static void
set_tier(RestoreWorker *w, bool os_tier)
{
	w->pacer.os_tier = os_tier;
	w->pacer.base.skip_in_buffers = os_tier;
	if (!os_tier)
		w->pacer.mode = w->mode;
	else
		w->pacer.mode = w->mode == WC_MODE_PREFETCH ?
			WC_MODE_PREFETCH : WC_MODE_READ;
}

/*
 * A relation this worker opened, whose relcache entry it lets go later.  A
 * worker visits each relation once per rank and tier it has blocks in:
 * keeping every entry would grow its memory with the number of relations
 * it restores, some kilobytes each (a database of 200,000 partitions).  So
 * the entries of the last WC_RELCACHE_KEEP relations opened are kept, for
 * their next batches, and then invalidated together, as a change of the
 * relation's definition would: an entry no one has open is freed, and is
 * built again if a later batch opens the relation.  Catalogs' entries
 * serve the look-ups too and are kept; their number is fixed.
 */
static void
remember_opened(Oid relid)
{
	int			i;

	if (relid < FirstNormalObjectId)
		return;
	if (opened_count > 0 && opened[opened_count - 1] == relid)
		return;
	if (opened_count == WC_RELCACHE_KEEP)
	{
		/* None of them is open: each batch closes its relation. */
		for (i = 0; i < opened_count; i++)
			RelationCacheInvalidateEntry(opened[i]);
		opened_count = 0;
	}
	opened[opened_count++] = relid;
}

/*
 * The body of restore_batch(), in a transaction of its own so that the
 * lock is held only while the batch's blocks are read.
 */
static BatchResult
restore_batch_in_xact(RestoreWorker *w, Batch *batch, WarmRange *clipped)
{
	RestorePacer *pacer = &w->pacer;
	Oid			relid;
	Relation	rel = NULL;
	BatchResult result = BATCH_HANDLED;
	uint64		gone = batch->blocks;

	relid = RelidByRelfilenumber(batch->key.spc, batch->key.relnumber);

	/*
	 * A database moved by ALTER DATABASE SET TABLESPACE since the dump: the
	 * relations of its old default tablespace are in the new one.  Not in
	 * an import, whose tablespaces pg_upgrade kept.
	 */
	if (!OidIsValid(relid) && batch->key.spc != GLOBALTABLESPACE_OID &&
		batch->key.spc != MyDatabaseTableSpace &&
		wc_restore->source != WC_SOURCE_IMPORT)
		relid = RelidByRelfilenumber(MyDatabaseTableSpace, batch->key.relnumber);

	/*
	 * An import's catalogs were the old cluster's: pg_upgrade made new ones,
	 * and a file number of this cluster's catalogs names other contents.
	 * Left out, never read.
	 */
	if (OidIsValid(relid) && relid < FirstNormalObjectId &&
		wc_restore->source == WC_SOURCE_IMPORT)
	{
		count_skipped(w, batch->counting, WC_SKIP_CATALOG, batch->blocks);
		return BATCH_HANDLED;
	}
	if (OidIsValid(relid))
	{
		/* Never queue for the lock: whoever holds or wants it goes first. */
		if (!ConditionalLockRelationOid(relid, AccessShareLock))
			return BATCH_DEFERRED;
		rel = try_relation_open(relid, NoLock);
		if (rel == NULL)
			UnlockRelationOid(relid, AccessShareLock);
	}

	/* Rewritten between the look-up and the lock? Then the blocks are gone. */
	if (rel != NULL && wc_rel_filenumber(rel) == batch->key.relnumber &&
		RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		smgrexists(RelationGetSmgr(rel), (ForkNumber) batch->key.fork))
	{
		ForkNumber	fork = (ForkNumber) batch->key.fork;
		BlockNumber nblocks = RelationGetNumberOfBlocksInFork(rel, fork);
		int			n = clip_ranges(batch, nblocks, clipped);
		uint64		kept = 0;
		int			i;

		for (i = 0; i < n; i++)
			kept += clipped[i].count;
		pacer->base.rel = rel;
		pacer->fork = fork;
		pacer->relnumber = batch->key.relnumber;
		pacer->nblocks = nblocks;
		pacer->counting = batch->counting;
		pacer->limit_class = batch->limit_class;
		pacer->batch_done = 0;
		set_tier(w, batch->os_tier);
		wc_warm_ranges(rel, fork, pacer->mode, clipped, n, &pacer->base);

		/*
		 * The lock probe (pacer.c) may have opened it again, or closed it,
		 * having let go of the lock for someone who wants it, or having
		 * found it dropped.
		 */
		rel = pacer->base.rel;
		pacer->base.rel = NULL;
		gone = batch->blocks - kept;
		if (pacer->stopped)
		{
			result = pacer->why == WC_STOP_ABORT ? BATCH_STOPPED : BATCH_DEFERRED;
			keep_remainder(batch, clipped, n, pacer->batch_done);
		}
		else
			gone += kept - pacer->batch_done;	/* shrank while we read */
	}
	count_skipped(w, batch->counting, WC_SKIP_GONE, gone);
	if (rel != NULL)
	{
		relation_close(rel, AccessShareLock);
		remember_opened(relid);
	}
	return result;
}

/*
 * Restore one batch.  An error ends the batch, not the worker: its blocks
 * not warmed yet count as skipped, and the first error is logged.
 */
static BatchResult
restore_batch(RestoreWorker *w, Batch *batch, WarmRange *clipped)
{
	MemoryContext cxt = CurrentMemoryContext;
	BatchResult result = BATCH_HANDLED;

	w->pacer.batch_done = 0;
	StartTransactionCommand();
	PG_TRY();
	{
		result = restore_batch_in_xact(w, batch, clipped);
		CommitTransactionCommand();
		/* The commit leaves TopMemoryContext current: nothing must go there. */
		MemoryContextSwitchTo(cxt);

		/*
		 * Send the relations' read counts on (at most once a second): a
		 * backend does it when idle, a worker never is, and the counts of
		 * every relation it visited would pile up until it exits.
		 */
		(void) pgstat_report_stat(false);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		w->pacer.base.rel = NULL;
		if (!w->error_logged)
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("could not restore blocks of relation %u/%u/%u: %s",
							batch->key.spc, batch->key.db, batch->key.relnumber,
							edata->message),
					 errdetail("The blocks of the batch are skipped; this worker goes on and logs no further errors.")));
		w->error_logged = true;
		FreeErrorData(edata);
		count_skipped(w, batch->counting, WC_SKIP_FAILED,
					  batch->blocks - Min(batch->blocks, w->pacer.batch_done));
		result = BATCH_HANDLED;
	}
	PG_END_TRY();
	return result;
}

/*
 * Learn why the pacer stopped: a wanted database or an abort ends the
 * worker's course, a wanted lock only the batch.  Then let it run again.
 */
static void
take_verdict(RestoreWorker *w)
{
	if (w->pacer.why == WC_STOP_DB_WANTED)
		w->leaving_database = true;
	else if (w->pacer.why == WC_STOP_ABORT)
		w->stopping = true;
	w->pacer.why = WC_STOP_NONE;
	w->pacer.stopped = false;
}

/*
 * Keep what is left of a batch for later: a copy, unless it is a deferred
 * batch already (retry_deferred), whose ranges restore_batch() shrank in
 * place.  So a batch tried WC_LOCK_ATTEMPTS times is copied once.
 */
static void
defer_batch(RestoreWorker *w, Batch *batch)
{
	MemoryContext old = MemoryContextSwitchTo(w->batch_cxt);
	Batch	   *copy = batch;

	if (!batch->deferred_copy)
	{
		copy = palloc(sizeof(Batch));
		*copy = *batch;
		copy->ranges = palloc(sizeof(WarmRange) * Max(batch->nranges, 1));
		memcpy(copy->ranges, batch->ranges, sizeof(WarmRange) * batch->nranges);
		copy->deferred_copy = true;
	}
	w->deferred = lappend(w->deferred, copy);
	MemoryContextSwitchTo(old);
}

/*
 * Restore a batch, or defer what is left of it: true if deferred.  A batch
 * given up for its lock too many times counts as skipped.
 */
static bool
handle_batch(RestoreWorker *w, Batch *batch, WarmRange *clipped)
{
	BatchResult result;

	if (w->stopping)
		return false;
	for (;;)
	{
		bool		paused;

		wc_pacer_wait_for_commands(&w->pacer);
		if (w->leaving_database || wc_pacer_check(&w->pacer))
			result = BATCH_DEFERRED;
		else
			result = restore_batch(w, batch, clipped);
		paused = (w->pacer.why == WC_STOP_PAUSE);
		take_verdict(w);
		/* Paused for a database command: the rest of it, after the wait. */
		if (!paused || result != BATCH_DEFERRED || batch->blocks == 0 ||
			w->stopping || w->leaving_database)
			break;
	}

	if (result != BATCH_DEFERRED || batch->blocks == 0)
		return false;
	if (!w->leaving_database && ++batch->attempts >= WC_LOCK_ATTEMPTS)
	{
		count_skipped(w, batch->counting, WC_SKIP_LOCKED, batch->blocks);
		return false;
	}
	defer_batch(w, batch);
	return true;
}

static void
batch_flush(RestoreWorker *w, Batch *batch, WarmRange *clipped)
{
	/*
	 * A batch wholly past the restore limit, where the blocks past it are
	 * left out: skipped without opening the relation.  (One of the cut's
	 * rank is read until the limit is reached: pacer.c.)
	 */
	if (batch->nranges > 0 && batch->limit_class == WC_LIMIT_PAST &&
		wc_restore->limit_skip)
		count_skipped(w, batch->counting, WC_SKIP_LIMIT, batch->blocks);
	else if (batch->nranges > 0)
		handle_batch(w, batch, clipped);
	batch->nranges = 0;
	batch->blocks = 0;
	batch->attempts = 0;
}

static bool
same_relation_fork(const WarmRun *a, const WarmRun *b)
{
	return a->db == b->db && a->spc == b->spc &&
		a->relnumber == b->relnumber && a->fork == b->fork;
}

/* Add blocks [start, end) of run's fork, at position seq, to the batch. */
static void
add_piece(RestoreWorker *w, Batch *batch, WarmRange *clipped,
		  const WarmRun *run, BlockNumber start, BlockNumber end,
		  uint64 seq, bool counting)
{
	WarmRange  *last;
	LimitClass	limit_class = wc_limit_class(run);

	if (batch->nranges > 0 &&
		(!same_relation_fork(run, &batch->key) || batch->counting != counting ||
		 batch->os_tier != w->pass_os_tier ||
		 batch->limit_class != limit_class ||
		 batch->nranges == WC_BATCH_RUNS))
		batch_flush(w, batch, clipped);
	if (batch->nranges == 0)
	{
		batch->key = *run;
		batch->seq_start = seq;
		batch->counting = counting;
		batch->os_tier = w->pass_os_tier;
		batch->limit_class = limit_class;
	}
	batch->blocks += end - start;
	last = batch->nranges > 0 ? &batch->ranges[batch->nranges - 1] : NULL;
	if (last && last->start + last->count == start)
	{
		/* Touches the previous run (of another rank): one range. */
		last->count += end - start;
		return;
	}
	batch->ranges[batch->nranges].start = start;
	batch->ranges[batch->nranges].count = end - start;
	batch->nranges++;
}

/*
 * Visit blocks [start, end) of run's fork: skip what an earlier worker of
 * this share handled, and do not count again what it counted.
 */
static void
visit_piece(RestoreWorker *w, Batch *batch, WarmRange *clipped,
			const WarmRun *run, BlockNumber start, BlockNumber end)
{
	uint64		seq = w->seq;
	uint64		to = w->start.counted_to;

	w->seq += end - start;
	if (w->seq <= w->start.from)
		return;
	if (seq < w->start.from)
	{
		start += (BlockNumber) (w->start.from - seq);
		seq = w->start.from;
	}
	if (seq < to && w->seq > to)
	{
		BlockNumber mid = start + (BlockNumber) (to - seq);

		add_piece(w, batch, clipped, run, start, mid, seq, false);
		add_piece(w, batch, clipped, run, mid, end, to, true);
	}
	else
		add_piece(w, batch, clipped, run, start, end, seq, seq >= to);

	/* Past where the last worker counted: count what it left uncounted. */
	if (!w->uncounted_added && w->seq >= to)
	{
		w->uncounted_added = true;
		pg_atomic_fetch_add_u64(&wc_restore->blocks_done, w->start.uncounted);
		pg_atomic_fetch_add_u64(&w->slot->processed, w->start.uncounted);
	}
}

/*
 * Restore one pass: the ranks hi down to lo, in physical order, this
 * worker's stripes of them.
 */
static void
restore_pass(RestoreWorker *w, const RankPlan *plan, int hi, int lo,
			 Batch *batch, WarmRange *clipped)
{
	RestoreSlot *slot = w->slot;
	WarmRunMerge pr;
	WarmRun		run;

	w->pass_os_tier = (hi == WC_RANK_SLOT_OS);
	pass_open(&pr, plan, hi, lo);
	while (!w->stopping && !w->leaving_database && wc_merge_next(&pr, &run))
	{
		BlockNumber start = run.start;
		BlockNumber end = run.start + run.count;

		CHECK_FOR_INTERRUPTS();
		if (!slot_owns_run(slot, &run))
			continue;

		/* Keep this worker's stripes of the run. */
		while (start < end && !w->stopping && !w->leaving_database)
		{
			bool		mine;
			BlockNumber piece_end = stripe_piece_end(slot, &run, start, &mine);

			if (mine)
				visit_piece(w, batch, clipped, &run, start, piece_end);
			start = piece_end;
		}
	}
	batch_flush(w, batch, clipped);
	wc_merge_close(&pr);
	wc_pacer_report(&w->pacer, w->pass_os_tier ? "the OS tier" : "the buffer tier");
}

/*
 * Try the deferred batches once more, in order; with pause, first wait a
 * little longer each round, as long as some are left.
 */
static void
retry_deferred(RestoreWorker *w, WarmRange *clipped, bool pause)
{
	long		wait_ms = WC_RETRY_FIRST_MS;

	while (w->deferred != NIL && !w->stopping && !w->leaving_database)
	{
		List	   *batches = w->deferred;
		ListCell   *lc;

		w->deferred = NIL;
		foreach(lc, batches)
		{
			Batch	   *batch = lfirst(lc);

			CHECK_FOR_INTERRUPTS();
			if (w->stopping || w->leaving_database)
				defer_batch(w, batch);
			else if (!handle_batch(w, batch, clipped))
			{
				pfree(batch->ranges);
				pfree(batch);
			}
		}
		list_free(batches);
		if (!pause || w->deferred == NIL)
			break;
		wc_pacer_sleep(&w->pacer, wait_ms);
		take_verdict(w);
		wait_ms = Min(wait_ms * 2, WC_RETRY_MAX_MS);
	}
}

/*
 * Leave the database to a command that wants it: tell the leader where
 * the next worker of this share is to begin.  What was deferred is done
 * again from its first block on; what it held and was never counted is
 * left uncounted, and counted when the next worker passes this one's
 * position.
 */
static void
leave_database(RestoreWorker *w)
{
	RestorePosition pos;
	ListCell   *lc;

	pos.from = w->seq;
	pos.counted_to = Max(w->seq, w->start.counted_to);
	pos.uncounted = w->uncounted_added ? 0 : w->start.uncounted;
	foreach(lc, w->deferred)
	{
		Batch	   *batch = lfirst(lc);

		pos.from = Min(pos.from, batch->seq_start);
		if (batch->counting)
			pos.uncounted += batch->blocks;
	}
	w->slot->resume = pos;
	w->slot->outcome = WC_OUTCOME_LEFT_DATABASE;
	ereport(LOG,
			(errmsg("restore worker leaves database %u", w->slot->db),
			 errdetail("A command wants the database. The restore of the database goes on when the command is done.")));
}

static void
restore_worker_exit(int code, Datum arg)
{
	int64		device_bytes = wc_device_read_bytes();

	/*
	 * What the restore costs, for the leader's last log line, and what it
	 * read from the device, for its rate (restore.c).
	 */
	pg_atomic_fetch_add_u64(&wc_restore->cpu_us,
							(uint64) wc_cpu_time_us());
	if (device_bytes >= 0)
		pg_atomic_fetch_add_u64(&wc_restore->device_bytes,
								(uint64) device_bytes);
	else
		pg_atomic_write_u32(&wc_restore->device_unknown, 1);
	if (restore_slot >= 0)
		wc_restore->slots[restore_slot].pid = 0;
}

/*
 * A worker that began at the start of its share and went through it has
 * restored or skipped every block of it.  Should it ever have handled
 * fewer, the leader only learns that the restore did not complete; say
 * here which worker and tier fell short, for whoever looks into it.
 */
static void
check_share(RestoreWorker *w, const RankPlan *plan)
{
	uint64		buffer_tier = 0;
	uint64		handled;
	int			rank;

	if (w->stopping || w->leaving_database || w->deferred != NIL ||
		w->start.from != 0 || w->start.counted_to != 0 || w->start.uncounted != 0)
		return;
	for (rank = 0; rank <= WC_MAX_RANK; rank++)
		buffer_tier += plan->share[rank];
	handled = pg_atomic_read_u64(&w->slot->processed);
	if (handled < buffer_tier + plan->share[WC_RANK_SLOT_OS])
		ereport(LOG,
				(errmsg_plural("restore worker of database %u handled %llu of the %llu block of its share",
							   "restore worker of database %u handled %llu of the %llu blocks of its share",
							   (unsigned long) (buffer_tier + plan->share[WC_RANK_SLOT_OS]),
							   w->slot->db, (unsigned long long) handled,
							   (unsigned long long) (buffer_tier + plan->share[WC_RANK_SLOT_OS])),
				 errdetail_plural("Its share holds %llu block of the buffer tier and %llu of the OS tier.",
								  "Its share holds %llu blocks of the buffer tier and %llu of the OS tier.",
								  (unsigned long) buffer_tier,
								  (unsigned long long) buffer_tier,
								  (unsigned long long) plan->share[WC_RANK_SLOT_OS])));
}

/*
 * Restore this worker's share: passes, hottest first (a sparse rank joins
 * the next one down), then the OS tier, then the deferred batches.
 */
static void
restore_share(RestoreWorker *w)
{
	RankPlan	plan;
	Batch		batch;
	WarmRange  *clipped = palloc(sizeof(WarmRange) * WC_BATCH_RUNS);
	int			hi = -1;
	int			rank;

	memset(&batch, 0, sizeof(batch));
	batch.ranges = palloc(sizeof(WarmRange) * WC_BATCH_RUNS);
	plan_ranks(w->slot, &plan);
	for (rank = WC_MAX_RANK; rank >= 0 && !w->stopping && !w->leaving_database; rank--)
	{
		if (plan.my_blocks[rank] == 0)
			continue;
		if (hi < 0)
			hi = rank;
		if (plan.my_blocks[rank] >= WC_DENSE_RUN * plan.my_runs[rank] || rank == 0)
		{
			elog(DEBUG1, "restore pass over ranks %d to %d", hi, rank);
			restore_pass(w, &plan, hi, rank, &batch, clipped);
			retry_deferred(w, clipped, false);
			hi = -1;
		}
	}
	if (hi >= 0 && !w->stopping && !w->leaving_database)
	{
		elog(DEBUG1, "restore pass over ranks %d to 0", hi);
		restore_pass(w, &plan, hi, 0, &batch, clipped);
	}

	/* Last, the OS tier: into the OS page cache only (set_tier). */
	if (plan.my_blocks[WC_RANK_SLOT_OS] > 0 && !w->stopping && !w->leaving_database)
	{
		retry_deferred(w, clipped, false);
		elog(DEBUG1, "restore pass over the OS tier");
		restore_pass(w, &plan, WC_RANK_SLOT_OS, WC_RANK_SLOT_OS, &batch, clipped);
	}
	retry_deferred(w, clipped, true);
	check_share(w, &plan);
}

/*
 * Entry point of a restore worker; arg is its slot.
 */
void
pg_warmcache_restore_main(Datum arg)
{
	RestoreWorker w;
	char	   *lock_timeout;

	pqsignal(SIGTERM, wc_restore_sigterm_handler);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	restore_slot = DatumGetInt32(arg);
	memset(&w, 0, sizeof(w));
	w.slot = &wc_restore->slots[restore_slot];
	before_shmem_exit(restore_worker_exit, (Datum) 0);

	/*
	 * A database dropped since the leader looked ends us here, with FATAL;
	 * so does one a command took meanwhile, after WC_CONNECT_LOCK_TIMEOUT.
	 * Once connected, the server's setting is put back: the worker's later
	 * locks are conditional, but for the catalogs' of its lookups, which
	 * wait as a session's do.
	 */
	lock_timeout = pstrdup(GetConfigOption("lock_timeout", false, false));
	SetConfigOption("lock_timeout", WC_CONNECT_LOCK_TIMEOUT, PGC_SUSET,
					PGC_S_OVERRIDE);
	BackgroundWorkerInitializeConnectionByOid(w.slot->connect_db, InvalidOid, 0);
	SetConfigOption("lock_timeout", lock_timeout, PGC_SUSET, PGC_S_OVERRIDE);
	pfree(lock_timeout);
	w.slot->pid = MyProcPid;
	w.slot->connected = true;
	pgstat_report_activity(STATE_RUNNING, "restoring saved blocks");

	w.start = w.slot->resume;
	w.uncounted_added = (w.start.uncounted == 0);
	w.batch_cxt = AllocSetContextCreate(TopMemoryContext,
										"pg_warmcache deferred batches",
										ALLOCSET_DEFAULT_SIZES);
	/* What the worker allocates outside a batch's transaction */
	MemoryContextSwitchTo(AllocSetContextCreate(TopMemoryContext,
												"pg_warmcache restore worker",
												ALLOCSET_DEFAULT_SIZES));
	w.mode = wc_restore->mode;
	wc_pacer_init(&w.pacer, w.slot, w.mode);

	/*
	 * What is in the OS cache already is not read again (engine.c,
	 * drop_os_cached).  A follow pass goes over the whole followed set at
	 * each of the primary's dumps, so that it costs what changed.  A restore
	 * after a restart of the server alone finds the OS tier (in mode read,
	 * the buffer tier too) still in the page cache; copying it again is CPU
	 * taken from queries that are already served.  Only batches in mode
	 * read look: mode buffer must copy into shared buffers anyway.
	 */
	w.pacer.base.skip_os_cached = true;

	restore_share(&w);

	if (w.leaving_database)
		leave_database(&w);
	else if (!w.stopping)
		w.slot->outcome = WC_OUTCOME_DONE;
	proc_exit(0);
}
