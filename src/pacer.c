/*-------------------------------------------------------------------------
 *
 * pacer.c
 *		What a restore worker does between two chunks of its reads.
 *
 * The warming engine asks the pacer before each chunk (32 blocks, or 8
 * while yielding) what to do with it, telling what it did since it last
 * asked (engine.h: pace()).  The pacer:
 *
 * - counts progress into shared memory (count_done());
 * - stops the engine on abort, and when someone wants what the restore
 *   holds: a lock request that conflicts with our AccessShareLock on the
 *   relation being read (probed every 10 ms), or a database-level command
 *   on our database (probed every 100 ms); and when the relation was
 *   rewritten or truncated while the probe had let go of its lock;
 * - stops the engine, for the worker to wait between batches, while a
 *   database-level command wants a database that the restore wants too
 *   (CREATE DATABASE copying its template, say);
 * - reads at full size while queries wait for data file reads: what they
 *   wait for is, after a restart, mostly the saved set, which is their
 *   working set from before, and the sooner it is read the sooner they
 *   stop waiting.  (Smaller pieces let one query's read pass ours, but
 *   cost an I/O operation per 64 kB: where operations are the limit, the
 *   queries' own reads take most of them, the restore's rate halves, and
 *   the queries, which wait for what the restore reads, wait about twice
 *   as long.  pg_warmcache.restore_yield brings small pieces back for
 *   workloads that read outside the saved set.)
 * - while queries keep every CPU busy and none waits for a read, reads the
 *   buffer tier into the OS cache only, leaving the copy into shared
 *   buffers to the first query that wants a block (where dumps record the
 *   OS cache, pg_warmcache.dump_os_cache, so that the saved set keeps it),
 *   and after a second of that leaves out the chunks the OS cache holds
 *   (plan_chunk(), which also applies the restore limit);
 * - while queries wait for reads, reads at most (100 -
 *   pg_warmcache.restore_headroom)% of what the device gives it: a volume
 *   serves reads in turn, and a restore that asks for all it can keeps a
 *   queue that every read of a query waits behind, 40 MB of look-ahead at
 *   the start.  A restore that asks for less than the device gives lets
 *   the queue drain (note_read_rate(), rate_cap());
 * - keeps two budgets that all restore workers share: the rate cap
 *   (pg_warmcache.max_restore_rate, or the one above if lower) and, while
 *   queries keep every CPU busy and none waits for a read, a CPU budget of
 *   WC_BUSY_CPU_PERCENT of one core.  Each is a virtual clock in shared
 *   memory that a worker moves on by its cost; a worker whose charge puts
 *   the clock more than a short burst ahead of real time sleeps until it is
 *   not.  Time spent idle is not saved up for later beyond that burst
 *   (sleep_for_budgets()).
 *
 * A relation is probed by letting go of our AccessShareLock on it and
 * asking for it again without waiting.  Only AccessExclusiveLock conflicts
 * with it, and the lock manager refuses a conditional request when a
 * conflicting lock is held or a conflicting request waits in the queue
 * ("conflictTab[lockmode] & waitMask" in lock.c).  So the request fails
 * exactly when someone waits for AccessExclusiveLock on the relation, a
 * query's or, on a standby, replay's (the startup process waits in the
 * same queue), or got it in the moment we held nothing; either way the
 * restore stops the batch and defers the rest of it.  The lock must be let
 * go first: a process that already holds a lock on the object is put ahead
 * of the waiters it blocks (from 17 on even a conditional request, in
 * JoinWaitQueue()), and asking again for a lock it holds only counts it
 * again.  A waiter for AccessExclusiveLock has also turned off the fast
 * path for the relation (FastPathStrongRelationLocks), so our request goes
 * to the main lock table, where the queue is.  LockHasWaitersRelation()
 * cannot be used: our lock is usually a fast-path one, which it does not
 * handle.  Letting go also lets a command that got the lock meanwhile
 * change the relation: after taking it again, the probe checks that the
 * relation kept its storage and its size (probe_relation()).
 *
 * What it costs: every 10 ms at most, a lock release and a conditional
 * request (with no strong locker about, both on the fast path, under this
 * process's own LWLock), a look at the invalidation queue, a syscache and
 * a relcache look-up to open the relation again, and one lseek() for its
 * size: a few microseconds, against the 32 blocks read in between.  No
 * other process is looked at, and no shared lock is taken that anyone
 * else needs, until a strong locker turns the fast path off.
 *
 * A database is probed with a conditional RowExclusiveLock on its database
 * object, the lock a new connection takes: DROP DATABASE, ALTER DATABASE
 * RENAME and SET TABLESPACE hold AccessExclusiveLock on it, CREATE DATABASE
 * holds ShareLock on its template, each while it waits for other sessions
 * to leave the database.  Neither probe makes anyone wait.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pacer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "catalog/pg_database_d.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/pmsignal.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "database.h"
#include "pacer.h"
#include "settings.h"
#include "operation.h"
#include "restore_shared.h"
#include "worker.h"
#include "workload.h"

/* Blocks per read while queries wait for reads: 64 kB. */
#define WC_YIELD_IO_BLOCKS	8

/* How often the probes run, in ms. */
#define WC_LOCK_PROBE_MS	10
#define WC_DB_PROBE_MS		100
#define WC_FG_PROBE_MS		2

/* A query seen reading this recently means the queries wait for reads; ms. */
#define WC_READ_MEMORY_MS	200

/*
 * The CPUs are busy with the queries when at least WC_BUSY_SHARE_MIN of
 * the looks of about the last WC_BUSY_SHARE_MS found every CPU running one
 * of our backends, and no look counts for more than WC_BUSY_LOOK_MAX of
 * that share, so that no one look decides: see look_at_backends.  Not
 * most of the looks: two clients that keep two CPUs busy, each waiting
 * for its client between queries, are both seen running in only about one
 * look in five.
 */
#define WC_BUSY_SHARE_MS	100
#define WC_BUSY_LOOK_MAX	0.05
#define WC_BUSY_SHARE_MIN	0.1

/*
 * The cap for waiting queries moves after each spell of WC_RATE_SPELL_MS of
 * the workers' reads (note_read_rate()): up by WC_CAP_GROWTH after a spell
 * in which the workers slept for it at least WC_CAP_HELD of the time.
 * WC_CAP_MIN: blocks a second, 1 MB/s.
 */
#define WC_RATE_SPELL_MS	500
#define WC_CAP_HELD			0.05
#define WC_CAP_GROWTH		1.25
#define WC_CAP_MIN			(1024.0 * 1024.0 / BLCKSZ)

/*
 * How long the CPUs must have been busy before a chunk that the OS cache
 * holds is left out, in ms: see pace_restore.
 */
#define WC_CPUS_BUSY_SKIP_MS	1000


/* How far ahead of real time a budget's clock may run, in microseconds. */
#define WC_BUDGET_BURST_US	100000

/* Longest single sleep between two looks at the probes, in ms. */
#define WC_SLEEP_SLICE_MS	20

static ChunkPlan pace_restore(WarmPacer *base, const ChunkReport *done);
static void look_at_backends(RestorePacer *pacer, TimestampTz now);

void
wc_pacer_init(RestorePacer *pacer, RestoreSlot *slot, WarmMode mode)
{
	memset(pacer, 0, sizeof(*pacer));
	pacer->base.pace = pace_restore;
	pacer->base.plan = wc_default_plan(wc_default_window());
	pacer->base.no_evict = true;
	pacer->base.prefault = true;
	/* The workers read from one device: see WarmAdvice. */
	pacer->base.advice_share = &wc_restore->advice;
	pacer->slot = slot;
	pacer->mode = mode;
	pacer->counting = true;
	pacer->fg_busy_look_at = GetCurrentTimestamp();
}

/*
 * SIGTERM of a restore worker.  From 19, a database-level command that
 * wants the worker's database terminates it (BGWORKER_INTERRUPTIBLE),
 * where up to 18 the worker sees the command itself (wc_pacer_check());
 * either way the worker is to leave the database to the command and the
 * restore to come back to it, not to give up what is left of its share.
 * So the handler only notes the request; the next check tells a command,
 * which holds its lock on the database until the worker is gone, from a
 * shutdown, an abort or pg_terminate_backend(), and hands those on to the
 * standard handler, die().
 */
static volatile sig_atomic_t terminate_pending = false;

void
wc_restore_sigterm_handler(SIGNAL_ARGS)
{
	wc_note_signal(&terminate_pending);
}

/*
 * Does someone want the relation being warmed, or did it change while we
 * let go of its lock?  Returns why the batch must stop, or WC_STOP_NONE.
 * See the file header for why the lock is let go and taken again.
 *
 * Called between two chunks, when the engine holds no buffer pin (the
 * restore loads one block at a time and never uses a read stream), so a
 * command that gets the lock meanwhile finds nothing of ours in its way.
 *
 * Our relcache reference goes with the lock.  Taking the lock again
 * processes the invalidation messages sent meanwhile, and an entry still
 * referenced then is rebuilt on the spot, which fails with an error for a
 * relation that a DROP TABLE removed in that moment.  An entry nobody
 * references is only thrown away.  So the relation is opened again,
 * perhaps at another address, and base.rel tells the engine.
 */
static PacerStop
probe_relation(RestorePacer *pacer)
{
	Oid			relid = RelationGetRelid(pacer->base.rel);
	Relation	rel;

	relation_close(pacer->base.rel, NoLock);
	pacer->base.rel = NULL;
	UnlockRelationOid(relid, AccessShareLock);
	if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return WC_STOP_LOCK_WANTED;

	/* Dropped meanwhile: the batch's commit releases the lock. */
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
		return WC_STOP_REL_CHANGED;
	pacer->base.rel = rel;

	/*
	 * A TRUNCATE, VACUUM FULL or CLUSTER gave it new storage: our blocks are
	 * gone, and the retry of the batch finds that.  A VACUUM that truncated
	 * it in place made some of our ranges lie past the end: the retry clips
	 * them.  (smgr closed what changed when the messages were processed.)
	 */
	if (wc_rel_filenumber(rel) != pacer->relnumber ||
		RelationGetNumberOfBlocksInFork(rel, pacer->fork) < pacer->nblocks)
		return WC_STOP_REL_CHANGED;
	return WC_STOP_NONE;
}

static bool
elapsed_ms(TimestampTz since, TimestampTz now, int ms)
{
	return now - since >= (TimestampTz) ms * 1000;
}

/*
 * Stop the engine if the restore must stop or someone wants what it holds;
 * returns whether it is stopped.  Runs the probes that are due.
 */
bool
wc_pacer_check(RestorePacer *pacer)
{
	TimestampTz now;

	if (pacer->stopped)
		return true;
	if (terminate_pending)
	{
		terminate_pending = false;
		if (!wc_database_wanted(pacer->slot->connect_db))
		{
			/* The request again, to the standard handler, which ends us. */
			pqsignal(SIGTERM, die);
			kill(MyProcPid, SIGTERM);
			CHECK_FOR_INTERRUPTS();
		}
		pacer->why = WC_STOP_DB_WANTED;
	}
	else if (wc_abort_is_requested())
		pacer->why = WC_STOP_ABORT;
	else
	{
		now = GetCurrentTimestamp();
		if (elapsed_ms(pacer->db_probe_at, now, WC_DB_PROBE_MS))
		{
			pacer->db_probe_at = now;
			if (wc_database_wanted(pacer->slot->connect_db))
				pacer->why = WC_STOP_DB_WANTED;
		}
		if (pacer->why == WC_STOP_NONE && pacer->base.rel != NULL &&
			elapsed_ms(pacer->lock_probe_at, now, WC_LOCK_PROBE_MS))
		{
			pacer->lock_probe_at = now;
			pacer->why = probe_relation(pacer);
		}
	}
	pacer->stopped = (pacer->why != WC_STOP_NONE);
	return pacer->stopped;
}

/*
 * Sleep for ms, in slices, waking early when the pacer must stop.
 */
void
wc_pacer_sleep(RestorePacer *pacer, long ms)
{
	while (ms > 0)
	{
		long		slice = Min(ms, WC_SLEEP_SLICE_MS);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 slice, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (wc_pacer_check(pacer))
			return;
		ms -= slice;

		/*
		 * A sleep for the CPU budget ends when a query is seen reading: the
		 * queries miss the cache again, and the restore is what serves them.
		 * A look is a pass over the PGPROCs, once a slice.
		 */
		if (pacer->budget_sleep)
		{
			TimestampTz now = GetCurrentTimestamp();

			pacer->fg_probe_at = now;
			look_at_backends(pacer, now);
			if (pacer->fg_reading)
				return;
		}
	}
}

/*
 * Take a look at the other backends.  Whether every CPU runs one of them
 * goes into a share that decays with time: one look is a moment, and two
 * short queries that happen to run at the same moment do not keep the
 * CPUs busy.  Where a look that found the CPUs busy decided alone, a
 * restore that started in such a moment would send its whole buffer tier
 * to the OS cache only (a small one is over before the moment ends).  A
 * look weighs as much as the time since the last one, but never more than
 * WC_BUSY_LOOK_MAX, so that after a pause (a lock wait, a sleep) the next
 * look does not decide alone either.
 */
static void
look_at_backends(RestorePacer *pacer, TimestampTz now)
{
	bool		on_cpu;
	double		since_ms;
	double		weight;

	wc_look_at_backends(&pacer->fg_reading, &on_cpu);
	if (pacer->fg_reading)
		pacer->fg_read_at = now;

	since_ms = Max(now - pacer->fg_busy_look_at, 0) / 1000.0;
	weight = Min(1.0 - exp(-since_ms / WC_BUSY_SHARE_MS), WC_BUSY_LOOK_MAX);
	pacer->fg_busy_share += weight * ((on_cpu ? 1.0 : 0.0) - pacer->fg_busy_share);
	pacer->fg_busy_look_at = now;
	pacer->looks++;
	if (on_cpu)
		pacer->busy_looks++;
}

/*
 * Charge cost_us to a shared budget's clock; returns how long to sleep, in
 * microseconds, for the clock to be at most a burst ahead of now.
 */
static int64
charge_budget(pg_atomic_uint64 *clock, int64 cost_us, TimestampTz now)
{
	uint64		old = pg_atomic_read_u64(clock);
	uint64		new;

	do
	{
		new = Max(old, (uint64) now) + (uint64) cost_us;
	} while (!pg_atomic_compare_exchange_u64(clock, &old, new));
	return Max((int64) (new - (uint64) now) - WC_BUDGET_BURST_US, 0);
}

static void
count_progress(RestorePacer *pacer, uint64 in_buffers, uint64 os_only)
{
	uint64		blocks = in_buffers + os_only;

	pacer->batch_done += blocks;
	if (pacer->limit_class == WC_LIMIT_AT_CUT && in_buffers > 0)
		pg_atomic_fetch_add_u64(&wc_restore->limit_used, in_buffers);
	if (!pacer->counting || blocks == 0)
		return;
	pg_atomic_fetch_add_u64(&wc_restore->blocks_done, blocks);
	pg_atomic_fetch_add_u64(&pacer->slot->processed, blocks);
	if (pacer->os_tier)
		pg_atomic_fetch_add_u64(&wc_restore->os_tier_done, blocks);
	if (os_only > 0)
		pg_atomic_fetch_add_u64(&wc_restore->blocks_os, os_only);
	if (os_only > 0 && !pacer->os_tier && pacer->mode == WC_MODE_BUFFER)
		pg_atomic_fetch_add_u64(&wc_restore->buffer_tier_os, os_only);
}

/*
 * The blocks the engine left out past the restore limit: handled, as the
 * batch counts them, and skipped for the limit.
 */
static void
count_left_out(RestorePacer *pacer, uint64 blocks)
{
	pacer->batch_done += blocks;
	if (!pacer->counting || blocks == 0)
		return;
	pg_atomic_fetch_add_u64(&wc_restore->skipped[WC_SKIP_LIMIT], blocks);
	pg_atomic_fetch_add_u64(&pacer->slot->processed, blocks);
}

/* Where a run stands against the restore limit: see LimitClass. */
LimitClass
wc_limit_class(const WarmRun *run)
{
	int			cut = wc_restore->limit_cut;
	int			rank;

	if (cut < 0 || run->rank == WC_RANK_OS)
		return WC_LIMIT_WITHIN;
	rank = wc_rank_slot(run->rank);
	return rank > cut ? WC_LIMIT_WITHIN :
		rank == cut ? WC_LIMIT_AT_CUT : WC_LIMIT_PAST;
}

/*
 * Whether the next chunk is past pg_warmcache.restore_limit: by the batch's
 * rank against the leader's cut, and in the cut's rank by what all workers
 * put into shared buffers of it.  Each worker looks before each chunk, so
 * the limit is passed by at most a chunk per worker.
 */
static bool
past_restore_limit(RestorePacer *pacer)
{
	switch (pacer->limit_class)
	{
		case WC_LIMIT_WITHIN:
			return false;
		case WC_LIMIT_PAST:
			return true;
		case WC_LIMIT_AT_CUT:
			return pg_atomic_read_u64(&wc_restore->limit_used) >=
				wc_restore->limit_at_cut;
	}
	return false;
}

/*
 * Charge the time since the last pace to what that pace decided.
 */
static void
account_time(RestorePacer *pacer)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		spent = pacer->paced_at != 0 ? now - pacer->paced_at : 0;

	pacer->paced_at = now;
	if (pacer->was_cpus_busy)
		pacer->cpus_busy_us += spent;
	if (pacer->was_yielding)
		pacer->yield_us += spent;
	if (pacer->was_capped)
		pacer->capped_us += spent;
}

/*
 * Say at DEBUG1 where the time of what (a pass) went: how long the restore
 * found the CPUs busy, read small pieces for a waiting query, slept for the
 * CPU budget or for the rate cap.  Then start counting again.
 */
void
wc_pacer_report(RestorePacer *pacer, const char *what)
{
	account_time(pacer);
	elog(DEBUG1, "pacer over %s: CPUs busy %.1f s, yielding %.1f s, capped for waiting queries %.1f s (the cap now %.1f MB/s), slept %.1f s for the CPU budget and %.1f s for the rate; %d of %d looks found every CPU running a backend",
		 what, pacer->cpus_busy_us / 1e6, pacer->yield_us / 1e6,
		 pacer->capped_us / 1e6,
		 pg_atomic_read_u64(&wc_restore->wait_cap) * (BLCKSZ / (1024.0 * 1024.0)),
		 pacer->budget_sleep_us / 1e6, pacer->rate_sleep_us / 1e6,
		 pacer->busy_looks, pacer->looks);
	pacer->cpus_busy_us = pacer->yield_us = pacer->capped_us = 0;
	pacer->looks = pacer->busy_looks = 0;
	pacer->budget_sleep_us = pacer->rate_sleep_us = 0;
	pacer->paced_at = 0;
}

/* The answer that ends the engine's loop. */
static ChunkPlan
stop_plan(void)
{
	ChunkPlan	plan = wc_default_plan(0);

	plan.action = WC_CHUNK_STOP;
	return plan;
}

/*
 * What the engine did since it last asked: the progress, the blocks left
 * out past the restore limit, and those found in the OS cache.  Returns
 * the blocks read from the device: the rate cap is about the device, and
 * blocks found cached cost it nothing.
 */
static uint64
count_done(RestorePacer *pacer, const ChunkReport *done)
{
	uint64		blocks = done->in_buffers + done->os_only;

	count_progress(pacer, done->in_buffers, done->os_only);
	count_left_out(pacer, done->left_out);
	if (done->found_cached > 0)
	{
		uint64		cached = Min(done->found_cached, blocks);

		if (pacer->counting)
			pg_atomic_fetch_add_u64(&wc_restore->found_cached, cached);
		blocks -= cached;
	}
	return blocks;
}

/*
 * Whether the queries keep the CPUs busy now: enough recent looks found
 * every CPU running one of them, and none was seen reading lately.  Then
 * shared buffers serve them, and every cycle we take is one of theirs.  ("Lately": a read that the page cache answers
 * takes microseconds, so queries that miss shared buffers show up in some
 * looks, not in each.)  While they miss the cache the device, or the
 * copying, is what counts, and we keep at it.  After a promotion the
 * queries miss shared buffers whatever they wait for: the followed set is
 * in the OS cache, and loading it is the CPU work that serves them.
 */
static bool
queries_busy(RestorePacer *pacer, TimestampTz now)
{
	return elapsed_ms(pacer->fg_read_at, now, WC_READ_MEMORY_MS) &&
		wc_restore->source != WC_SOURCE_PROMOTION &&
		pacer->fg_busy_share >= WC_BUSY_SHARE_MIN;
}

/*
 * Whether queries wait for reads: one was seen reading lately.  After a
 * promotion their reads are of the OS cache, which no cap would help.
 */
static bool
queries_wait(RestorePacer *pacer, TimestampTz now)
{
	return pacer->fg_read_at != 0 &&
		!elapsed_ms(pacer->fg_read_at, now, WC_READ_MEMORY_MS) &&
		wc_restore->source != WC_SOURCE_PROMOTION;
}

/*
 * Count the blocks read from the device into the current spell of the
 * workers' reads, and at its end move the cap for waiting queries:
 *
 * - a spell in which the workers slept for the cap (WC_CAP_HELD of it) was
 *   held back by the cap: the device may give more, and the cap grows by
 *   WC_CAP_GROWTH;
 * - any other was held back by the device (or by the queries' share of it,
 *   or by nothing): the cap is what it read, less the headroom.
 *
 * So the cap follows the rate of what is being read (scattered blocks come
 * at a fraction of the rate of a file's stretch) from just below: a cap
 * that grows past the device's rate stops holding the workers back, and
 * the next spell sets it below again.  Each spell either lets the queue
 * drain or measures the device.
 */
static void
note_read_rate(uint64 read_blocks, bool capped, int64 slept_us,
			   TimestampTz now)
{
	uint64		total;

	total = pg_atomic_add_fetch_u64(&wc_restore->blocks_read, read_blocks);
	SpinLockAcquire(&wc_restore->rate_mutex);
	if (wc_restore->spell_at == 0 || now < wc_restore->spell_at)
	{
		wc_restore->spell_at = now;
		wc_restore->spell_blocks = total - read_blocks;
		wc_restore->spell_capped = capped;
		wc_restore->spell_slept_us = slept_us;
	}
	else
	{
		wc_restore->spell_capped |= capped;
		wc_restore->spell_slept_us += slept_us;
		if (elapsed_ms(wc_restore->spell_at, now, WC_RATE_SPELL_MS))
		{
			int64		spell_us = now - wc_restore->spell_at;
			double		rate = (total - wc_restore->spell_blocks) * 1000000.0 /
				spell_us;
			double		cap = pg_atomic_read_u64(&wc_restore->wait_cap);

			if (wc_restore->spell_capped && cap > 0 &&
				wc_restore->spell_slept_us >= spell_us * WC_CAP_HELD)
				cap *= WC_CAP_GROWTH;
			else
				cap = rate * (100 - wc_restore_headroom) / 100.0;
			pg_atomic_write_u64(&wc_restore->wait_cap,
								(uint64) Max(cap, WC_CAP_MIN));
			wc_restore->spell_at = now;
			wc_restore->spell_blocks = total;
			wc_restore->spell_capped = false;
			wc_restore->spell_slept_us = 0;
		}
	}
	SpinLockRelease(&wc_restore->rate_mutex);
}

/*
 * The rate cap in force, in blocks a second, or 0: pg_warmcache.
 * max_restore_rate, and while queries wait for reads the cap for them (see
 * note_read_rate()), whichever is lower.  Notes which one it is.
 */
static double
rate_cap(RestorePacer *pacer, TimestampTz now)
{
	double		cap = 0;

	pacer->was_capped = false;
	if (wc_max_restore_rate > 0)
		cap = wc_max_restore_rate * (1024.0 * 1024.0 / BLCKSZ);
	if (wc_restore_headroom > 0 && queries_wait(pacer, now))
	{
		double		wait_cap = pg_atomic_read_u64(&wc_restore->wait_cap);

		if (wait_cap > 0 && (cap == 0 || wait_cap < cap))
		{
			cap = wait_cap;
			pacer->was_capped = true;
		}
	}
	return cap;
}

/*
 * What to do with the next chunk, and how far to advise, as the queries
 * and the restore limit stand.
 */
static ChunkPlan
plan_chunk(RestorePacer *pacer, bool cpus_busy, TimestampTz now)
{
	ChunkPlan	plan = wc_default_plan(wc_default_window());

	if (wc_restore_yield && pacer->fg_reading)
	{
		plan.io_blocks = WC_YIELD_IO_BLOCKS;
		plan.window = Min(wc_default_window(), WC_YIELD_IO_BLOCKS);
	}

	/*
	 * While the CPUs are busy, copying a block into shared buffers (a
	 * buffer to find, its memory to fault in, the copy) is CPU spent now
	 * for a block no query has asked for yet, while its read from the device
	 * is the part that only the restore can do ahead of time.  So the buffer
	 * tier goes into the OS cache only, and the copy is left to the first
	 * query that wants the block: a page cache hit.  Only where dumps record
	 * the OS cache, so that the saved set keeps those blocks (in its OS
	 * tier).
	 */
	if (cpus_busy && pacer->mode == WC_MODE_BUFFER && wc_dump_os_cache)
		plan.action = WC_CHUNK_OS_CACHE;

	/*
	 * A chunk read while the CPUs are busy aims at the OS cache: where that
	 * holds it already, reading it again is a copy, CPU that the queries
	 * were using, and a stretch of the device's time that the host charges
	 * to them.  So it is left out, but only once the CPUs have been busy for
	 * a second.  A chunk left out costs nothing, so such a spell passes over
	 * as many as the kernel's read-ahead holds: a moment's look at busy CPUs
	 * beside a free one (a machine starting a process, say) must not send a
	 * whole stretch of the buffer tier past shared buffers.
	 */
	if (!cpus_busy)
		pacer->cpus_busy_since = 0;
	else if (pacer->cpus_busy_since == 0)
		pacer->cpus_busy_since = now;
	if (plan.action == WC_CHUNK_OS_CACHE &&
		elapsed_ms(pacer->cpus_busy_since, now, WC_CPUS_BUSY_SKIP_MS))
		plan.action = WC_CHUNK_OS_CACHE_UNCACHED;

	/*
	 * Past the restore limit the rest of the buffer tier goes to the OS
	 * cache only, passing over what it holds already (for good: unlike busy
	 * CPUs, the limit does not end), or is left out.
	 */
	if (past_restore_limit(pacer))
		plan.action = wc_restore->limit_skip ? WC_CHUNK_LEAVE_OUT :
			WC_CHUNK_OS_CACHE_UNCACHED;
	else if (pacer->limit_class == WC_LIMIT_AT_CUT &&
			 wc_restore->limit_skip)
	{
		uint64		used = pg_atomic_read_u64(&wc_restore->limit_used);
		uint64		at_cut = wc_restore->limit_at_cut;

		/*
		 * What is left out past the limit must not be read by advice
		 * either: the look-ahead ends where what is left of the limit does.
		 */
		plan.advice_cap = used < at_cut ? (int64) (at_cut - used) : 0;
	}
	return plan;
}

/*
 * Charge the shared budgets, the rate cap (cap blocks a second, 0: none)
 * with the blocks read from the device and, while the queries keep the
 * CPUs busy, the CPU budget with this process's CPU time since the last
 * pace; then sleep for the one further ahead of real time.  Returns how
 * long it slept for the rate cap, in microseconds.
 */
static int64
sleep_for_budgets(RestorePacer *pacer, uint64 read_blocks, double cap,
				  bool cpus_busy, int64 cpu_spent, TimestampTz now)
{
	int64		rate_us = 0;
	int64		budget_us = 0;
	int64		sleep_us;
	int64		slept_us;
	TimestampTz before;

	if (cap > 0 && read_blocks > 0)
		rate_us = charge_budget(&wc_restore->rate_clock,
								(int64) (read_blocks * 1000000.0 / cap), now);
	if (cpus_busy && cpu_spent > 0)
		budget_us = charge_budget(&wc_restore->cpu_clock,
								  cpu_spent * 100 / WC_BUSY_CPU_PERCENT,
								  now);
	sleep_us = Max(rate_us, budget_us);
	if (sleep_us < 1000)
		return 0;
	before = GetCurrentTimestamp();
	pacer->budget_sleep = (budget_us > rate_us);
	wc_pacer_sleep(pacer, (long) (sleep_us / 1000));
	pacer->budget_sleep = false;
	slept_us = GetCurrentTimestamp() - before;
	if (budget_us > rate_us)
	{
		pacer->budget_sleep_us += slept_us;
		return 0;
	}
	pacer->rate_sleep_us += slept_us;
	return slept_us;
}

/*
 * The engine's pacer: see the file header.
 */
static ChunkPlan
pace_restore(WarmPacer *base, const ChunkReport *done)
{
	RestorePacer *pacer = (RestorePacer *) base;
	ChunkPlan	plan;
	int64		cpu_now = wc_cpu_time_us();
	int64		cpu_spent = cpu_now - pacer->cpu_used;
	uint64		read_blocks;
	bool		cpus_busy;
	double		cap;
	int64		slept_us;
	TimestampTz now;

	pacer->cpu_used = cpu_now;
	read_blocks = count_done(pacer, done);
	account_time(pacer);

	if (!PostmasterIsAlive())
		proc_exit(1);
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	if (wc_pacer_check(pacer))
		return stop_plan();

	now = GetCurrentTimestamp();
	if (elapsed_ms(pacer->fg_probe_at, now, WC_FG_PROBE_MS))
	{
		pacer->fg_probe_at = now;
		look_at_backends(pacer, now);
	}
	cpus_busy = queries_busy(pacer, now);
	cap = rate_cap(pacer, now);
	plan = plan_chunk(pacer, cpus_busy, now);
	pacer->was_cpus_busy = cpus_busy;
	pacer->was_yielding = (plan.io_blocks != 0);
	slept_us = sleep_for_budgets(pacer, read_blocks, cap, cpus_busy,
								 cpu_spent, now);
	note_read_rate(read_blocks, pacer->was_capped, slept_us, now);

	/*
	 * A database-level command wants a database that the restore wants too
	 * (restore.c): it copies or moves that database, or is about to, and
	 * the user waits for it.  Our reads would halve its bandwidth.  Stop
	 * the batch: the worker waits outside its transaction, holding no lock
	 * and no snapshot, and goes on with the batch afterwards.
	 */
	if (pg_atomic_read_u32(&wc_restore->db_command_pending) != 0 &&
		!pacer->stopped)
	{
		pacer->why = WC_STOP_PAUSE;
		pacer->stopped = true;
	}
	return pacer->stopped ? stop_plan() : plan;
}

/*
 * Between batches: wait while a database-level command wants a database
 * of the restore (see pace_restore), or until the pacer must stop.
 */
void
wc_pacer_wait_for_commands(RestorePacer *pacer)
{
	if (pg_atomic_read_u32(&wc_restore->db_command_pending) == 0)
		return;
	elog(DEBUG1, "restore worker pauses for a database command");
	while (pg_atomic_read_u32(&wc_restore->db_command_pending) != 0 &&
		   !wc_pacer_check(pacer))
		wc_pacer_sleep(pacer, WC_SLEEP_SLICE_MS);
}
