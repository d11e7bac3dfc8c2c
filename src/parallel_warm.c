/*-------------------------------------------------------------------------
 *
 * parallel_warm.c
 *		Warming one large relation fork with dynamic background workers.
 *
 * Copying pages from the OS cache into shared buffers is CPU work, and a
 * single process does it at one core's speed.  With the library preloaded,
 * warm() and warm_table() split a relation fork of at least
 * pg_warmcache.min_parallel_warm_size into stripes (as the restore splits a
 * database) and warm it with up to pg_warmcache.max_warm_workers dynamic
 * background workers and the caller, each claiming the next stripe from a
 * counter in a dynamic shared memory segment.  Without preloading, without
 * free worker slots, for a small relation, for the caller's own temporary
 * tables (local buffers), for storage created in the caller's transaction
 * (which other processes cannot see yet), in mode prefetch (the advice is
 * the work and costs little) and inside a parallel query, the caller warms
 * alone, as before; never an error.
 *
 * Right after a start, most of the cost of mode buffer is the kernel's, not
 * the copy's: the first write to each page of shared memory allocates and
 * zeroes it, and processes doing that at once contend for the locks of the
 * one shared memory file.  So in mode buffer the workers first prefault the
 * memory of the unused buffers the warm is about to fill, in bulk, while
 * the caller copies blocks into buffers already faulted in; then they take
 * stripes too.  Not where I/O workers copy the blocks (18, io_method =
 * worker): they fault the pages in themselves, and prefaulting beside them
 * only took CPU from them.
 *
 * The result is the single process's: the caller checked privileges and
 * holds its locks; the workers count the blocks of the stripes they
 * finished, and whatever stripe a worker did not finish (it failed, or
 * could not open the relation) the caller warms again at the end, so an
 * error in a stripe reaches the caller as it would have alone.
 *
 * Locking: the caller holds AccessShareLock while the workers open the
 * relation.  Were an AccessExclusiveLock request queued in between, a
 * worker waiting behind it would wait for the caller, who waits for the
 * worker: a deadlock that no detector sees.  So the caller becomes a lock
 * group leader and the workers join its group before taking any lock, as
 * parallel query does; members of a group go ahead of such a waiter.
 *
 * Budget: the workers are of PostgreSQL's parallel class, so that they
 * count against max_parallel_workers together with parallel query's, and
 * pg_warmcache.max_warm_workers (superuser only) caps how many run at once
 * in the whole server, whoever calls.  A worker is also registered only
 * while more slots of max_worker_processes are free than the restore
 * (pg_warmcache.restore_workers) and the standby channel (one) need: the
 * caller counts the slots in use, its own kind's from pg_warmcache's own
 * bookkeeping and the others' from what pg_stat_activity shows, and
 * registers under that bookkeeping's lock, so that concurrent calls cannot
 * both take the last slot they may (see "The budget's bookkeeping" below).
 *
 * Interrupts: workers check for interrupts in the engine's loop and while
 * prefaulting, and end with the postmaster.  The caller waits until each
 * worker has said that it let go of the relation and its stripes, or is
 * gone, not for the postmaster to notice its exit.  If the caller fails or
 * is cancelled, an error cleanup callback terminates its workers and waits
 * until they are gone, for a bounded time, before the error reaches the
 * caller: they are in its lock group, so its own session could otherwise
 * drop or truncate the relation while one still reads it.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/parallel_warm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "parallel_warm.h"
#include "restore_shared.h"
#include "settings.h"
#include "worker.h"

/* Stripes: at most this many blocks, at least WC_MIN_WARM_STRIPE. */
#define WC_WARM_STRIPE		4096
#define WC_MIN_WARM_STRIPE	64

/* Buffers a worker prefaults at a time. */
#define WC_PREFAULT_CHUNK	WC_PREFAULT_MAX

/* How long a failed call waits for its workers to exit. */
#define WC_WORKER_EXIT_TIMEOUT_MS	10000

/* A warm worker's type, as pg_stat_activity shows it. */
#define WC_WARM_WORKER_TYPE	"pg_warmcache warm"

/* Stripe states. */
#define STRIPE_FREE		0
#define STRIPE_CLAIMED	1
#define STRIPE_DONE		2

/*
 * A warm worker that some warm() call registered and that may still hold
 * a slot of max_worker_processes: the server-wide count of warm workers is
 * the number of these in use.
 */
typedef struct WarmWorkerEntry
{
	int			caller_pid;		/* the call's process; 0: entry free */
	int			pid;			/* the worker's, once the call has returned
								 * before the worker was gone; else 0 */
} WarmWorkerEntry;

/*
 * The warm workers that warm() calls registered, in the whole server: the
 * bookkeeping of "The budget's bookkeeping" below.  Its lock is held to
 * count the entries, take one or give one back, and to register a worker;
 * nothing else is done under it.  NULL without preloading: warm() then
 * warms alone.
 */
typedef struct WarmWorkerTable
{
	LWLock	   *lock;
	WarmWorkerEntry entries[WC_MAX_WARM_WORKERS];
} WarmWorkerTable;

static WarmWorkerTable *worker_table = NULL;

/* One stripe: its state, and once done, the blocks warmed. */
typedef struct WarmStripe
{
	pg_atomic_uint32 state;		/* STRIPE_* */
	uint64		warmed;			/* written before state becomes done */
} WarmStripe;

/* What the caller and its workers share, in a DSM segment. */
typedef struct ParallelWarm
{
	Oid			db;
	Oid			relid;
	RelFileNumber relnumber;	/* the storage the caller sees */
	ForkNumber	fork;
	WarmMode	mode;
	int			window;			/* the caller's look-ahead */
	int			io_concurrency; /* the caller's maintenance_io_concurrency */
	int			delay_ms;		/* pg_warmcache.warm_worker_delay */
	PGPROC	   *leader;			/* for BecomeLockGroupMember() */
	int			leader_pid;
	Latch	   *leader_latch;	/* the caller's MyLatch */
	BlockNumber start;			/* of the range */
	BlockNumber count;
	BlockNumber stripe_blocks;
	uint32		nstripes;
	pg_atomic_uint32 next_stripe;	/* the next one to claim */
	bool		prefault;		/* workers prefault buffers first */
	pg_atomic_uint32 next_chunk;	/* the next WC_PREFAULT_CHUNK to prefault */
	pg_atomic_uint32 free_seen; /* unused buffers the workers passed */
	pg_atomic_uint32 prefaulted;	/* buffers whose memory they faulted in */
	WarmAdviceShare advice;		/* whether advice pays, measured together */
	pg_atomic_uint32 finished[WC_MAX_WARM_WORKERS]; /* set by worker i when
													 * it has let go of all */
	pg_atomic_uint32 worker_pid[WC_MAX_WARM_WORKERS];	/* set by worker i as
														 * it starts */
	WarmStripe	stripe[FLEXIBLE_ARRAY_MEMBER];
} ParallelWarm;

/* The caller's side, for the error cleanup. */
typedef struct WarmLeader
{
	ParallelWarm *pw;
	int			nworkers;		/* registered, with a handle */
	int			nclaimed;		/* given an entry in worker_table */
	BackgroundWorkerHandle *handles[WC_MAX_WARM_WORKERS];
	int			entry[WC_MAX_WARM_WORKERS]; /* worker n's entry in
											 * worker_table, or -1 once
											 * given back or left */
} WarmLeader;

/*
 * How many workers to ask for: none unless the library is preloaded and
 * the relation fork is large enough and visible to other processes.
 */
static int
planned_workers(Relation rel, WarmMode mode, BlockNumber count)
{
	if (worker_table == NULL || wc_max_warm_workers <= 0 ||
		mode == WC_MODE_PREFETCH ||
		count < (BlockNumber) Max(wc_min_parallel_warm_size, 2 * WC_MIN_WARM_STRIPE) ||
		RelationUsesLocalBuffers(rel) || wc_rel_storage_is_new(rel) ||
		IsInParallelMode() || !IsUnderPostmaster ||
		(MyProc->lockGroupLeader != NULL && MyProc->lockGroupLeader != MyProc))
		return 0;
	return Min(wc_max_warm_workers,
			   (int) (count / WC_MIN_WARM_STRIPE) - 1);
}

/* Blocks of stripe i. */
static WarmRange
stripe_range(const ParallelWarm *pw, uint32 i)
{
	WarmRange	r;
	BlockNumber off = i * pw->stripe_blocks;

	r.start = pw->start + off;
	r.count = Min(pw->stripe_blocks, pw->count - off);
	return r;
}

/* Claim the next free stripe; false if none is left. */
static bool
claim_stripe(ParallelWarm *pw, uint32 *i)
{
	uint32		n = pg_atomic_fetch_add_u32(&pw->next_stripe, 1);

	if (n >= pw->nstripes)
		return false;
	pg_atomic_write_u32(&pw->stripe[n].state, STRIPE_CLAIMED);
	*i = n;
	return true;
}

/*
 * pg_warmcache.warm_worker_delay, for tests: every process of a parallel
 * warm waits this long before each stripe, so that all take part.
 */
static void
stripe_delay(const ParallelWarm *pw)
{
	if (pw->delay_ms <= 0)
		return;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 pw->delay_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Record a stripe as done, with the blocks it warmed. */
static void
finish_stripe(ParallelWarm *pw, uint32 i, uint64 warmed)
{
	pw->stripe[i].warmed = warmed;
	pg_write_barrier();
	pg_atomic_write_u32(&pw->stripe[i].state, STRIPE_DONE);
}

/*
 * Prefault the memory of the unused buffers in one chunk of buffer IDs.
 */
static void
prefault_chunk(ParallelWarm *pw, uint32 chunk)
{
	int			first = chunk * WC_PREFAULT_CHUNK;
	uint32		unused = 0;
	uint32		faulted;

	faulted = wc_prefault_buffers(first, Min(NBuffers, first + WC_PREFAULT_CHUNK),
								  false, &unused);
	pg_atomic_fetch_add_u32(&pw->free_seen, unused);
	pg_atomic_fetch_add_u32(&pw->prefaulted, faulted);
}

/*
 * A worker's first task in mode buffer: fault in the memory of the unused
 * buffers the warm will fill, ahead of the processes that fill them.
 *
 * Right after a start, most of the time of warming from the OS cache goes
 * to the kernel allocating and zeroing the pages of shared memory that each
 * buffer's first write touches; the copy and PostgreSQL's own work are the
 * smaller part.  Processes that fault pages of the one shared memory file
 * at the same time contend for its locks, so splitting the reads among
 * processes gains little.  Instead, the workers fault the pages in, in
 * bulk, while the caller reads: the free list hands out unused buffers in
 * the order of their IDs, so the workers go through the IDs in chunks,
 * from the first, skipping buffers in use and memory already resident,
 * until they have passed as many unused buffers as the range has blocks,
 * or every stripe is taken.  Then they take stripes like the caller.  A
 * guess that turns out wrong (another backend took the buffers) only makes
 * memory resident that shared buffers would have used anyway.
 */
static void
prefault_buffers(ParallelWarm *pw)
{
	uint32		nchunks = (NBuffers + WC_PREFAULT_CHUNK - 1) / WC_PREFAULT_CHUNK;

	if (!pw->prefault || !wc_have_free_buffer())
		return;
	pgstat_report_activity(STATE_RUNNING, "prefaulting shared buffers");
	for (;;)
	{
		uint32		chunk;

		CHECK_FOR_INTERRUPTS();
		if (pg_atomic_read_u32(&pw->free_seen) >= pw->count ||
			pg_atomic_read_u32(&pw->next_stripe) >= pw->nstripes)
			break;
		chunk = pg_atomic_fetch_add_u32(&pw->next_chunk, 1);
		if (chunk >= nchunks)
			break;
		prefault_chunk(pw, chunk);
	}
}

/*
 * The budget's bookkeeping.  PostgreSQL has no function that counts the
 * free slots of max_worker_processes, so the caller counts the slots in
 * use in two parts:
 *
 * - The warm workers, exactly: each registration takes an entry of
 *   worker_table under its lock, and the entry is
 *   given back once the caller sees the worker stopped
 *   (GetBackgroundWorkerPid() with its own handle: the postmaster has then
 *   freed the slot).  A caller returns once its workers have let go of the
 *   relation, before the postmaster has noticed their exit; it leaves their
 *   entries with their pids, and the next count gives back those whose
 *   process the postmaster no longer knows (GetBackgroundWorkerTypeByPid()).
 *   An entry whose caller ended without giving it back (which only a crash,
 *   and so a reset of shared memory, should allow) is given back too.
 *
 * - Every other worker, roughly: the background workers in the backend-status
 *   snapshot, which is what pg_stat_activity shows, less the warm workers,
 *   plus the restore's workers registered but not yet connected
 *   (wc_restore_workers_starting()).  That misses a worker of another kind
 *   registered but not yet started (a parallel query's, launched at that
 *   moment) and a worker that never connects, which has no entry in the
 *   snapshot.  Then the count is a slot or two short, and a restore worker
 *   started next may find no slot and wait for one, as it does when the slots
 *   are taken by others.
 */

/* The shared memory of the bookkeeping, and its lock (shmem.c). */
Size
wc_warm_workers_shmem_size(void)
{
	return MAXALIGN(sizeof(WarmWorkerTable));
}

void
wc_warm_workers_shmem_request(void)
{
	RequestNamedLWLockTranche("pg_warmcache warm workers", 1);
}

/* Attach to the bookkeeping, making it at the first start (shmem.c). */
void
wc_warm_workers_shmem_init(void)
{
	bool		found;

	worker_table = ShmemInitStruct("pg_warmcache warm workers",
								   sizeof(WarmWorkerTable), &found);
	if (!found)
	{
		memset(worker_table, 0, sizeof(WarmWorkerTable));
		worker_table->lock =
			&(GetNamedLWLockTranche("pg_warmcache warm workers"))->lock;
	}
}

/* Whether pid is a warm worker whose slot the postmaster still holds. */
static bool
is_warm_worker(int pid)
{
	const char *type = GetBackgroundWorkerTypeByPid((pid_t) pid);

	return type != NULL && strcmp(type, WC_WARM_WORKER_TYPE) == 0;
}

/*
 * The warm workers that may hold a slot, in the whole server; entries no
 * worker holds any more are given back first.  its lock is held
 * exclusively.
 */
static int
count_warm_workers(void)
{
	int			n = 0;
	int			i;

	for (i = 0; i < WC_MAX_WARM_WORKERS; i++)
	{
		WarmWorkerEntry *e = &worker_table->entries[i];

		if (e->caller_pid == 0)
			continue;
		if (e->pid != 0 ? !is_warm_worker(e->pid) :
			BackendPidGetProc(e->caller_pid) == NULL)
		{
			e->caller_pid = 0;
			e->pid = 0;
			continue;
		}
		n++;
	}
	return n;
}

/*
 * The slots of max_worker_processes that the rest of the server holds, as
 * far as can be seen (see above).  Called once per call, without
 * the bookkeeping's lock: the snapshot copies every backend's status.  It
 * replaces the snapshot the caller's transaction may hold, so that a
 * pg_stat_activity read later in it is fresh.
 */
static int
count_other_workers(void)
{
	int			n;

	/*
	 * The restore's first: one that connects meanwhile is then counted
	 * twice rather than not at all.
	 */
	n = wc_restore_workers_starting();
	return n + wc_count_processes(B_BG_WORKER, WC_WARM_WORKER_TYPE);
}

/*
 * Take a free entry for the caller's worker n; false if none is free.
 * The bookkeeping's lock is held exclusively.
 */
static bool
claim_entry(WarmLeader *leader, int n)
{
	int			e;

	for (e = 0; e < WC_MAX_WARM_WORKERS; e++)
	{
		if (worker_table->entries[e].caller_pid != 0)
			continue;
		worker_table->entries[e].caller_pid = MyProcPid;
		worker_table->entries[e].pid = 0;
		leader->entry[n] = e;
		leader->nclaimed = n + 1;
		return true;
	}
	return false;
}

/* Give back the entry of the caller's worker n. */
static void
give_back_entry(WarmLeader *leader, int n)
{
	WarmWorkerEntry *e = &worker_table->entries[leader->entry[n]];

	Assert(e->caller_pid == MyProcPid);
	e->caller_pid = 0;
	e->pid = 0;
	leader->entry[n] = -1;
}

/*
 * Give back the entries of the caller's workers that have stopped.  With
 * leave, the caller is done with the others: their entries keep their
 * pids, for the next count to give back once they are gone.
 */
static void
give_back_workers(WarmLeader *leader, bool leave)
{
	bool		locked = false;
	int			n;

	for (n = 0; n < leader->nclaimed; n++)
	{
		pid_t		pid = 0;
		BgwHandleStatus status = BGWH_STOPPED;

		if (leader->entry[n] < 0)
			continue;
		/* An entry without a handle: the registration failed. */
		if (n < leader->nworkers)
			status = GetBackgroundWorkerPid(leader->handles[n], &pid);
		if (status == BGWH_NOT_YET_STARTED && leader->pw != NULL)
			pid = (pid_t) pg_atomic_read_u32(&leader->pw->worker_pid[n]);
		if (!leave && status != BGWH_STOPPED &&
			status != BGWH_POSTMASTER_DIED)
			continue;
		if (!locked)
		{
			LWLockAcquire(worker_table->lock, LW_EXCLUSIVE);
			locked = true;
		}
		if (status == BGWH_STOPPED || status == BGWH_POSTMASTER_DIED)
			give_back_entry(leader, n);
		else
		{
			/* Left with pid 0 (never started), the caller's exit frees it. */
			worker_table->entries[leader->entry[n]].pid = (int) pid;
			leader->entry[n] = -1;
		}
	}
	if (locked)
		LWLockRelease(worker_table->lock);
}

/*
 * Register the caller's next warm worker, if the budget allows: fewer
 * than pg_warmcache.max_warm_workers warm workers in the server, more free
 * slots than the restore and the channel need, and (PostgreSQL checks it)
 * fewer parallel workers than max_parallel_workers.  others is what
 * count_other_workers() said.  Counting and registering happen under
 * the bookkeeping's lock, so that two calls do not both see the last slot
 * they may take.  *why says why not, for the log.
 */
static bool
launch_worker(dsm_segment *seg, WarmLeader *leader, Oid relid, int others,
			  const char **why)
{
	BackgroundWorker worker;
	int			n = leader->nworkers;
	int			reserve = wc_restore_workers + 1;
	int			warm_workers;
	int			free_slots;
	bool		ok = false;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION | BGWORKER_CLASS_PARALLEL;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strcpy(worker.bgw_library_name, "pg_warmcache");
	strcpy(worker.bgw_function_name, "pg_warmcache_warm_main");
	snprintf(worker.bgw_name, BGW_MAXLEN,
			 "pg_warmcache warm of relation %u for PID %d", relid, MyProcPid);
	strcpy(worker.bgw_type, WC_WARM_WORKER_TYPE);
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;
	memcpy(worker.bgw_extra, &n, sizeof(n));

	LWLockAcquire(worker_table->lock, LW_EXCLUSIVE);
	warm_workers = count_warm_workers();
	free_slots = max_worker_processes - others - warm_workers;
	if (warm_workers >= wc_max_warm_workers)
		*why = "pg_warmcache.max_warm_workers run already";
	else if (free_slots <= reserve)
		*why = "the last free worker slots are the restore's and the channel's";
	else if (!claim_entry(leader, n))
		*why = "pg_warmcache.max_warm_workers run already";	/* not reached */
	else if ((ok = RegisterDynamicBackgroundWorker(&worker, &leader->handles[n])))
		leader->nworkers = n + 1;
	else
	{
		give_back_entry(leader, n);
		leader->nclaimed = n;
		*why = "max_parallel_workers run already, or no slot is free";
	}
	LWLockRelease(worker_table->lock);
	return ok;
}

/*
 * The caller failed or was cancelled: its workers stop too, and it waits
 * until they are gone.  They are members of its lock group, whose locks do
 * not conflict with one another: were the error to reach the caller while
 * one still ran, the same session could drop or truncate the relation
 * under it.  Interrupts are held, so that a second cancel cannot cut the
 * wait short; the wait is bounded instead.  A worker still there after
 * that (it does not answer its SIGTERM) ends the session, which then can
 * no longer touch the relation, unless the session is ending already.
 */
static void
terminate_workers(int code, Datum arg)
{
	WarmLeader *leader = (WarmLeader *) DatumGetPointer(arg);
	TimestampTz deadline;
	int			alive = 0;
	int			i;

	/* An error while registering: the lock is still held. */
	if (LWLockHeldByMe(worker_table->lock))
		LWLockRelease(worker_table->lock);

	HOLD_INTERRUPTS();
	for (i = 0; i < leader->nworkers; i++)
		TerminateBackgroundWorker(leader->handles[i]);

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   WC_WORKER_EXIT_TIMEOUT_MS);
	for (;;)
	{
		long		left;
		int			rc;

		alive = 0;
		for (i = 0; i < leader->nworkers; i++)
		{
			pid_t		pid;

			if (GetBackgroundWorkerPid(leader->handles[i], &pid) != BGWH_STOPPED)
				alive++;
		}
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (alive == 0 || left <= 0)
			break;

		/* The postmaster tells of each exit (bgw_notify_pid): the latch. */
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
					   Min(left, 100), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);

		/* The workers end with the postmaster. */
		if (rc & WL_POSTMASTER_DEATH)
		{
			alive = 0;
			break;
		}
	}
	RESUME_INTERRUPTS();

	/* Those still there keep their entries until they are gone. */
	give_back_workers(leader, true);

	if (alive > 0 && !proc_exit_inprogress)
		ereport(FATAL,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg_plural("%d warm worker did not exit within %d s after the call failed",
								"%d warm workers did not exit within %d s after the call failed",
								(unsigned long) alive,
								alive, WC_WORKER_EXIT_TIMEOUT_MS / 1000),
				 errdetail("The session ends so that it cannot change the relation while they read it.")));
	if (alive > 0)
		ereport(LOG,
				(errmsg_plural("%d warm worker did not exit within %d s",
							   "%d warm workers did not exit within %d s",
							   (unsigned long) alive,
							   alive, WC_WORKER_EXIT_TIMEOUT_MS / 1000)));
}

/*
 * Wait until every worker has let go of the relation and its stripes: it
 * said so, or it is gone.  Waiting for the postmaster to notice that the
 * workers exited would add tens of milliseconds to every call.
 */
static void
wait_for_workers(ParallelWarm *pw, WarmLeader *leader)
{
	for (;;)
	{
		bool		all = true;
		int			i;

		give_back_workers(leader, false);
		for (i = 0; i < leader->nworkers; i++)
		{
			pid_t		pid;

			if (pg_atomic_read_u32(&pw->finished[i]) == 0 &&
				GetBackgroundWorkerPid(leader->handles[i], &pid) != BGWH_STOPPED)
				all = false;
		}
		if (all)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	/* What a worker wrote before it said so, after its saying so. */
	pg_read_barrier();
}

/*
 * Warm the fork with the workers: the caller takes stripes too, then waits
 * for the workers and warms what they left.
 */
static uint64
warm_with_workers(Relation rel, ParallelWarm *pw, WarmLeader *leader)
{
	WarmPacer	pacer;
	uint64		done = 0;
	uint32		mine = 0;
	uint32		again = 0;
	uint32		i;

	memset(&pacer, 0, sizeof(pacer));
	pacer.plan = wc_default_plan(pw->window);
	pacer.prefault = true;
	pacer.advice_share = &pw->advice;

	while (claim_stripe(pw, &i))
	{
		WarmRange	r = stripe_range(pw, i);

		stripe_delay(pw);
		mine++;
		finish_stripe(pw, i, wc_warm_ranges(rel, pw->fork, pw->mode, &r, 1,
											&pacer));
	}

	wait_for_workers(pw, leader);

	/*
	 * All workers have let go.  What one claimed and did not finish, the
	 * caller warms now: an error there is the caller's, as if alone.
	 */
	for (i = 0; i < pw->nstripes; i++)
	{
		bool		is_done = pg_atomic_read_u32(&pw->stripe[i].state) == STRIPE_DONE;

		/* A stripe's count, written before its state (finish_stripe()). */
		pg_read_barrier();
		if (!is_done)
		{
			WarmRange	r = stripe_range(pw, i);

			elog(DEBUG1, "warming stripe %u of \"%s\" again",
				 i, RelationGetRelationName(rel));
			again++;
			finish_stripe(pw, i, wc_warm_ranges(rel, pw->fork, pw->mode, &r, 1,
												&pacer));
		}
		done += pw->stripe[i].warmed;
	}
	elog(DEBUG1, "the workers warmed %u of %u stripes and prefaulted %u buffers",
		 pw->nstripes - mine - again, pw->nstripes,
		 pg_atomic_read_u32(&pw->prefaulted));
	return done;
}

/*
 * Warm a range of one relation fork, with workers where that pays and is
 * possible, else alone.  The caller holds a lock on rel and has checked the
 * range and its privileges.  Returns the blocks warmed.  Its length is the
 * life of one parallel warm in order: decide, set up, launch, work, wait,
 * redo what a worker left, clean up.
 */
uint64
wc_warm_range(Relation rel, ForkNumber fork, WarmMode mode,
			  const WarmRange *range)
{
	int			planned = planned_workers(rel, mode, range->count);
	int			nprocs;
	BlockNumber stripe_blocks;
	uint32		nstripes;
	Size		size;
	dsm_segment *seg;
	ParallelWarm *pw;
	WarmLeader	leader;
	uint64		done = 0;
	uint32		i;

	if (planned == 0)
		return wc_warm_ranges(rel, fork, mode, range, 1, NULL);

	/* Some four stripes per process, within the bounds. */
	nprocs = planned + 1;
	stripe_blocks = range->count / (4 * nprocs);
	stripe_blocks = Max(WC_MIN_WARM_STRIPE, Min(WC_WARM_STRIPE, stripe_blocks));
	nstripes = (range->count + stripe_blocks - 1) / stripe_blocks;

	size = add_size(offsetof(ParallelWarm, stripe),
					mul_size(nstripes, sizeof(WarmStripe)));
	seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
		return wc_warm_ranges(rel, fork, mode, range, 1, NULL);
	pw = dsm_segment_address(seg);
	memset(pw, 0, size);
	pw->db = MyDatabaseId;
	pw->relid = RelationGetRelid(rel);
	pw->relnumber = wc_rel_filenumber(rel);
	pw->fork = fork;
	pw->mode = mode;
	pw->window = wc_default_window();
	pw->io_concurrency = maintenance_io_concurrency;
	pw->delay_ms = wc_warm_worker_delay;
	pw->leader = MyProc;
	pw->leader_pid = MyProcPid;
	pw->leader_latch = MyLatch;
	pw->start = range->start;
	pw->count = range->count;
	pw->stripe_blocks = stripe_blocks;
	pw->nstripes = nstripes;
	pg_atomic_init_u32(&pw->next_stripe, 0);
	pw->prefault = (mode == WC_MODE_BUFFER && WC_STREAM_COPIES_HERE() &&
					(wc_platform_shortcuts & WC_SHORTCUT_PREFAULT));
	pg_atomic_init_u32(&pw->next_chunk, 0);
	pg_atomic_init_u32(&pw->free_seen, 0);
	pg_atomic_init_u32(&pw->prefaulted, 0);
	SpinLockInit(&pw->advice.mutex);
	pw->advice.count_members = false;
	pw->advice.advice.members = nprocs;
	for (i = 0; i < WC_MAX_WARM_WORKERS; i++)
	{
		pg_atomic_init_u32(&pw->finished[i], 0);
		pg_atomic_init_u32(&pw->worker_pid[i], 0);
	}
	for (i = 0; i < nstripes; i++)
		pg_atomic_init_u32(&pw->stripe[i].state, STRIPE_FREE);

	/* Before any worker can try to join the group. */
	BecomeLockGroupLeader();

	memset(&leader, 0, sizeof(leader));
	leader.pw = pw;
	PG_ENSURE_ERROR_CLEANUP(terminate_workers, PointerGetDatum(&leader));
	{
		const char *why = NULL;
		int			others = count_other_workers();

		while (leader.nworkers < planned &&
			   launch_worker(seg, &leader, pw->relid, others, &why))
			;
		if (why != NULL)
			elog(DEBUG1, "no more warm workers: %s", why);

		SpinLockAcquire(&pw->advice.mutex);
		pw->advice.advice.members = leader.nworkers + 1;
		SpinLockRelease(&pw->advice.mutex);

		elog(DEBUG1, "warming %u blocks of \"%s\" in %u stripes with %d of %d workers",
			 range->count, RelationGetRelationName(rel), nstripes,
			 leader.nworkers, planned);

		if (leader.nworkers == 0)
			done = wc_warm_ranges(rel, fork, mode, range, 1, NULL);
		else
			done = warm_with_workers(rel, pw, &leader);
	}
	PG_END_ENSURE_ERROR_CLEANUP(terminate_workers, PointerGetDatum(&leader));

	give_back_workers(&leader, true);
	for (i = 0; i < (uint32) leader.nworkers; i++)
		pfree(leader.handles[i]);
	dsm_detach(seg);
	return done;
}

/*
 * A worker has released its locks and finished its stripes: it tells the
 * caller, which need not wait for it to exit, and exits (no return).
 */
static void
worker_finish(ParallelWarm *pw, int n, dsm_segment *seg)
{
	/* The stripes' counts and states first (wait_for_workers() reads). */
	pg_write_barrier();
	pg_atomic_write_u32(&pw->finished[n], 1);
	SetLatch(pw->leader_latch);
	dsm_detach(seg);
	proc_exit(0);
}

/* Pacer of a warm worker: it goes when the postmaster goes. */
static ChunkPlan
pace_worker(WarmPacer *pacer, const ChunkReport *done)
{
	if (!PostmasterIsAlive())
		proc_exit(1);
	return pacer->plan;
}

/*
 * Entry point of a warm worker; arg is the handle of the caller's DSM
 * segment.  Joining the caller's lock group, connecting and opening the
 * relation must happen in this order, which is why it is one function.
 */
void
pg_warmcache_warm_main(Datum arg)
{
	dsm_segment *seg;
	ParallelWarm *pw;
	Relation	rel;
	WarmPacer	pacer;
	uint32		i;
	int			n;
	char		value[16];

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* The caller may be done already: then there is nothing to do. */
	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		proc_exit(0);
	pw = dsm_segment_address(seg);
	memcpy(&n, MyBgworkerEntry->bgw_extra, sizeof(n));
	pg_atomic_write_u32(&pw->worker_pid[n], (uint32) MyProcPid);

	/* Join the caller's lock group before taking any lock. */
	if (!BecomeLockGroupMember(pw->leader, pw->leader_pid))
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(pw->db, InvalidOid,
											  BGWORKER_BYPASS_ALLOWCONN);
	snprintf(value, sizeof(value), "%d", pw->io_concurrency);
	SetConfigOption("maintenance_io_concurrency", value, PGC_USERSET,
					PGC_S_SESSION);

	prefault_buffers(pw);

	/* Every stripe taken already: nothing to open the relation for. */
	if (pg_atomic_read_u32(&pw->next_stripe) >= pw->nstripes)
		worker_finish(pw, n, seg);

	StartTransactionCommand();
	rel = try_relation_open(pw->relid, AccessShareLock);

	/* Not the caller's storage: leave all to the caller. */
	if (rel == NULL || wc_rel_filenumber(rel) != pw->relnumber ||
		!smgrexists(RelationGetSmgr(rel), pw->fork))
	{
		if (rel != NULL)
			relation_close(rel, AccessShareLock);
		CommitTransactionCommand();
		worker_finish(pw, n, seg);
	}

	memset(&pacer, 0, sizeof(pacer));
	pacer.pace = pace_worker;
	pacer.plan = wc_default_plan(pw->window);
	pacer.prefault = true;
	pacer.advice_share = &pw->advice;
	while (claim_stripe(pw, &i))
	{
		WarmRange	r = stripe_range(pw, i);
		char		activity[64];

		snprintf(activity, sizeof(activity), "warming stripe %u of relation %u",
				 i, pw->relid);
		pgstat_report_activity(STATE_RUNNING, activity);
		stripe_delay(pw);
		finish_stripe(pw, i, wc_warm_ranges(rel, pw->fork, pw->mode, &r, 1,
											&pacer));
	}

	relation_close(rel, AccessShareLock);
	CommitTransactionCommand();
	worker_finish(pw, n, seg);
}
