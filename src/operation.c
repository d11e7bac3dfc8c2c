/*-------------------------------------------------------------------------
 *
 * operation.c
 *		What the module is doing, a dump or a restore, and the state
 *		changes that begin and end one; with it, for now, the restore's and
 *		the channel's state that other modules have not yet taken over.
 *
 * Loaded through shared_preload_libraries, the module reserves this state
 * (operation.h: WarmShared) with the others' (shmem.c).  Without
 * preloading there is none, and the functions that need it say so
 * (wc_require_shared()).
 *
 * Dumps and restores exclude each other: the state field says which one
 * runs, under the module's LWLock, and a condition variable wakes whoever
 * waits for it to change.  A dump asked for while another runs waits for
 * it; a dump asked for during a restore is refused, because it would
 * replace the saved set with the part restored so far.
 *
 * Nothing here calls any other module: every other module that uses this
 * state sits above this one.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/operation.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "operation.h"

WarmShared *wc_shared = NULL;

/* The shared memory this state needs, and its lock (shmem.c). */
Size
wc_operation_shmem_size(void)
{
	return MAXALIGN(sizeof(WarmShared));
}

void
wc_operation_shmem_request(void)
{
	RequestNamedLWLockTranche("pg_warmcache", 1);
}

/* Attach to this state, making it at the first start (shmem.c). */
void
wc_operation_shmem_init(void)
{
	bool		found;

	wc_shared = ShmemInitStruct("pg_warmcache", sizeof(WarmShared), &found);
	if (!found)
	{
		int			i;

		memset(wc_shared, 0, sizeof(WarmShared));
		wc_shared->lock = &(GetNamedLWLockTranche("pg_warmcache"))->lock;
		ConditionVariableInit(&wc_shared->cv);
		wc_shared->state = WC_STATE_IDLE;
		pg_atomic_init_u64(&wc_shared->restore_blocks_done, 0);
		pg_atomic_init_u64(&wc_shared->restore_os_tier_done, 0);
		pg_atomic_init_u64(&wc_shared->restore_blocks_os, 0);
		pg_atomic_init_u64(&wc_shared->restore_buffer_tier_os, 0);
		pg_atomic_init_u64(&wc_shared->restore_cpu_us, 0);
		pg_atomic_init_u64(&wc_shared->restore_found_cached, 0);
		pg_atomic_init_u64(&wc_shared->restore_device_bytes, 0);
		pg_atomic_init_u32(&wc_shared->restore_device_unknown, 0);
		pg_atomic_init_u32(&wc_shared->db_command_pending, 0);
		for (i = 0; i < WC_SKIP_REASONS; i++)
			pg_atomic_init_u64(&wc_shared->restore_skipped[i], 0);
		pg_atomic_init_u64(&wc_shared->rate_clock, 0);
		pg_atomic_init_u64(&wc_shared->cpu_clock, 0);
		SpinLockInit(&wc_shared->restore_advice.mutex);
		wc_shared->restore_advice.count_members = true;
		for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
			pg_atomic_init_u64(&wc_shared->slots[i].processed, 0);
	}
}

/*
 * Functions that need the shared state call this first.
 */
void
wc_require_shared(void)
{
	if (wc_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_warmcache must be loaded via \"shared_preload_libraries\""),
				 errhint("Add pg_warmcache to \"shared_preload_libraries\" and restart the server.")));
}

/*
 * The status lock: this state's lock, which also guards the plain fields of
 * the other parts' status (the last dump's, dumpfile.c; the channel's,
 * channel.c), so that warmcache_status() and readiness report all of them
 * as of one moment.  Each part writes its fields only with it held
 * exclusively, and nothing is held across I/O.
 */
void
wc_status_lock(LWLockMode mode)
{
	LWLockAcquire(wc_shared->lock, mode);
}

void
wc_status_unlock(void)
{
	LWLockRelease(wc_shared->lock);
}

/*
 * On a following standby, a new followed file waits for its pass: noted by
 * the channel in the same update, under the status lock held exclusively,
 * that names the new file, and taken on when the pass begins
 * (wc_begin_restore()).
 */
void
wc_note_follow_pass_due(void)
{
	Assert(LWLockHeldByMeInMode(wc_shared->lock, LW_EXCLUSIVE));
	wc_shared->follow_pass_due = true;
}

/* Whether a new followed file waits for its pass. */
bool
wc_follow_pass_is_due(void)
{
	bool		due;

	LWLockAcquire(wc_shared->lock, LW_SHARED);
	due = wc_shared->follow_pass_due;
	LWLockRelease(wc_shared->lock);
	return due;
}

/* Wake the autowarm worker, if it runs and is not this process. */
void
wc_wake_worker(void)
{
	Latch	   *latch;

	LWLockAcquire(wc_shared->lock, LW_SHARED);
	latch = wc_shared->worker_latch;
	LWLockRelease(wc_shared->lock);
	if (latch && latch != MyLatch)
		SetLatch(latch);
}

/* What the module is doing now. */
WarmState
wc_operation_state(void)
{
	WarmState	state;

	LWLockAcquire(wc_shared->lock, LW_SHARED);
	state = wc_shared->state;
	LWLockRelease(wc_shared->lock);
	return state;
}

/*
 * Begin a dump or a restore: the only way out of the idle state.  A dump
 * begins only if no restore is running or requested (it would replace the
 * saved set with the part restored so far); with wait, it waits for
 * another dump to end instead of giving up.  A restore, which the autowarm
 * worker begins on a request, only needs the idle state.  take_request
 * clears a request for a restore of the saved file, take_follow a pass due
 * over a new followed file: from then on the state says it.  Returns
 * whether the operation began; its process then owns it until
 * wc_end_operation().
 */
static bool
begin_operation(WarmState operation, bool wait, bool take_request,
				bool take_follow)
{
	bool		begun = false;

	Assert(operation != WC_STATE_IDLE);
	for (;;)
	{
		WarmState	cur;

		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		cur = wc_shared->state;
		if (cur == WC_STATE_IDLE &&
			(operation == WC_STATE_RESTORING || !wc_shared->restore_requested))
		{
			wc_shared->state = operation;
			wc_shared->owner_pid = MyProcPid;
			if (operation == WC_STATE_RESTORING)
				wc_shared->restore_begun_at = GetCurrentTimestamp();
			if (take_request)
				wc_shared->restore_requested = false;	/* taken on */
			if (take_follow)
				wc_shared->follow_pass_due = false;
			begun = true;
		}
		LWLockRelease(wc_shared->lock);

		if (begun || !wait || cur != WC_STATE_DUMPING ||
			operation != WC_STATE_DUMPING)
			break;
		ConditionVariableSleep(&wc_shared->cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return begun;
}

bool
wc_begin_operation(WarmState operation, bool wait)
{
	return begin_operation(operation, wait, operation == WC_STATE_RESTORING,
						   false);
}

/*
 * Begin a restore of the given source.  Only a restore of the saved file
 * takes on a request for one: a standby's pass over the followed set
 * leaves it for the next turn of the worker's loop.  A pass, or the load at
 * promotion, takes on the pass due over a new followed file.
 */
bool
wc_begin_restore(RestoreSource source)
{
	return begin_operation(WC_STATE_RESTORING, false, source == WC_SOURCE_SAVED,
						   source != WC_SOURCE_SAVED);
}

/*
 * The fraction of the current or last restore: blocks restored or found
 * cached over those of its file that can be restored (readiness.c), which
 * leaves out those past the restore limit that the limit skips.  total
 * is its restore_blocks_total; the counters are read as they are.
 */
double
wc_restore_fraction(int64 total)
{
	uint64		done = pg_atomic_read_u64(&wc_shared->restore_blocks_done);
	int64		can;

	can = total -
		(int64) pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_GONE]) -
		(int64) pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_EXCLUDED]) -
		(int64) pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_LIMIT]);
	if (can <= 0)
		return 1.0;
	return Min((double) done / (double) can, 1.0);
}

/*
 * At the end of a restore, in the process that ran it, with the module's
 * lock held exclusively: a standby's finished pass over the followed set
 * gives its fraction, which readiness.c reports until the next pass ends.
 * A pass that stopped early (promotion, follow_primary turned off) counted
 * only part of the set; the previous pass's figure stands if it is larger.
 */
static void
note_followed_pass_end(void)
{
	double		f;
	uint64		handled;
	int64		total = wc_shared->restore_blocks_total;

	if (wc_shared->restore_source != WC_SOURCE_FOLLOWED ||
		wc_shared->restore_finished_at == 0 ||
		wc_shared->restore_started_at < wc_shared->restore_begun_at)
		return;					/* it ended before it began counting */
	f = wc_restore_fraction(total);
	handled = pg_atomic_read_u64(&wc_shared->restore_blocks_done) +
		pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_GONE]) +
		pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_EXCLUDED]) +
		pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_LOCKED]) +
		pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_FAILED]) +
		pg_atomic_read_u64(&wc_shared->restore_skipped[WC_SKIP_LIMIT]);
	if ((int64) handled < total && wc_shared->followed_pass_done)
		f = Max(f, wc_shared->followed_fraction);
	wc_shared->followed_fraction = f;
	wc_shared->followed_pass_done = true;
}

/*
 * End the dump or restore this process began: back to idle, and wake
 * whoever waits for the state to change.
 */
void
wc_end_operation(void)
{
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	Assert(wc_shared->owner_pid == MyProcPid);
	if (wc_shared->state == WC_STATE_RESTORING)
		note_followed_pass_end();
	wc_shared->state = WC_STATE_IDLE;
	wc_shared->owner_pid = 0;
	LWLockRelease(wc_shared->lock);
	ConditionVariableBroadcast(&wc_shared->cv);
}
