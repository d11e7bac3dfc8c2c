/*-------------------------------------------------------------------------
 *
 * advice.c
 *		Whether advice pays: the engine's measurement of its own rate with
 *		and without posix_fadvise(WILLNEED) ahead of the copy.
 *
 * Advice costs a system call per piece and a descriptor; it pays only
 * where reads would otherwise wait for the device.  The engine asks before
 * each chunk whether to advise (wc_advice_decide()) and says after it how
 * long it took (wc_advice_account()).  The measurement switches advice on
 * and off, one phase after the other, keeps the state that is clearly
 * faster, and measures again less often each time the answer stays the
 * same (advice.h).  Processes that warm at once share one measurement in
 * shared memory, under its spinlock, and count themselves in it while they
 * warm.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/advice.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/ipc.h"

#include "advice.h"

/*
 * Measuring whether advice pays (WarmAdvice): each state is timed over at
 * least WC_PHASE_BLOCKS blocks and WC_PHASE_US microseconds of the loop
 * (per member of a shared measurement), long enough to see past a device's
 * bursts: a volume capped per time slice answers the first reads of a slice
 * at once.  The advised state is measured once its look-ahead has filled,
 * at the start too.  Advice goes off only where going without is
 * WC_ADVICE_GAIN times as fast: where advice pays it doubles the rate, and
 * where it does not it costs a system call per piece (2-3% of warming a
 * table from the OS cache), so noise in a measurement must not turn it off.
 * The
 * next measurement comes after four times the blocks the last one took, or
 * WC_PROBE_BLOCKS if more, four times later again after each measurement
 * that changed nothing, up to WC_MAX_PROBE_BLOCKS.
 */
#define WC_PHASE_BLOCKS		1024
#define WC_PHASE_US			100000.0
#define WC_ADVICE_GAIN		1.10
#define WC_PROBE_BLOCKS		16384
#define WC_MAX_PROBE_BLOCKS	(1 << 20)

/*
 * Whether to advise for the next chunk: the state the measurements chose,
 * or the one being measured.
 */
static bool
advice_wanted(WarmAdvice *a)
{
	if (a->interval == 0)
	{
		/*
		 * Fresh: advise first.  Where advice pays, going without costs half
		 * the rate or more; where it does not, advising costs a few system
		 * calls per megabyte.
		 */
		a->interval = WC_PROBE_BLOCKS;
		a->on = true;
		a->phase = 1;
		a->settle_until = PG_UINT64_MAX;	/* set by advice_account() */
		a->measured_blocks = 0;
		a->measured_us = 0;
		a->measure_start = a->consumed;
	}
	return a->on;
}

/*
 * Account a chunk of blocks warmed in us microseconds (advice included),
 * and move the measurement on.  outstanding: blocks advised beyond those
 * warmed; window: the look-ahead if advice is switched on.  Returns true
 * when a measurement ended (the caller reports it, outside any spinlock).
 */
static bool
advice_account(WarmAdvice *a, uint64 blocks, double us, uint64 outstanding,
			   uint64 window)
{
	uint32		members = Max(a->members, 1);

	a->consumed += blocks;
	if (a->phase == 0)
	{
		if (a->consumed >= a->next_probe)
		{
			a->phase = 1;
			a->settle_until = a->consumed;
			a->measured_blocks = 0;
			a->measured_us = 0;
			a->measure_start = a->consumed;
		}
		return false;
	}
	/*
	 * At the start, the look-ahead fills first: measured while it fills,
	 * advice looked no faster than none where it doubles the rate (three
	 * processes of a parallel warm on an IOPS-bound volume, on 18).
	 */
	if (a->settle_until == PG_UINT64_MAX)
		a->settle_until = a->consumed - blocks + window * members;
	if (a->consumed - blocks < a->settle_until)
		return false;			/* the switch still shows */
	a->measured_blocks += blocks;
	a->measured_us += us;
	if (a->measured_blocks < WC_PHASE_BLOCKS * members ||
		a->measured_us < WC_PHASE_US * members)
		return false;

	a->rate[a->on ? 1 : 0] = a->measured_blocks / a->measured_us;
	a->measured_blocks = 0;
	a->measured_us = 0;
	if (a->phase == 1)
	{
		/*
		 * Now the other state.  Switching advice off, the blocks advised
		 * already still come fast; switching it on, the look-ahead has to
		 * fill first.  Each member has its own.
		 */
		a->phase = 2;
		a->settle_until = a->consumed + (a->on ? outstanding : window) * members;
		a->on = !a->on;
		return false;
	}
	else
	{
		bool		before = !a->on;	/* the state before phase 1 */
		bool		best = a->rate[0] <= a->rate[1] * WC_ADVICE_GAIN;
		uint64		took = a->consumed - a->measure_start;

		a->probes++;
		if (best == before)
			a->interval = a->interval * 4;
		else
			a->interval = WC_PROBE_BLOCKS;
		a->interval = Min(Max(a->interval, 4 * took),
						  (uint64) WC_MAX_PROBE_BLOCKS);
		a->on = best;
		a->phase = 0;
		a->next_probe = a->consumed + a->interval;
		return true;
	}
}

/* A shared measurement is read and moved on under its spinlock. */
static inline void
advice_lock(WarmAdviceShare *share)
{
	if (share)
		SpinLockAcquire(&share->mutex);
}

static inline void
advice_unlock(WarmAdviceShare *share)
{
	if (share)
		SpinLockRelease(&share->mutex);
}

/*
 * The shared measurement this process is counted in, while it is in the
 * engine's loop; NULL otherwise.  An ERROR leaves it through PG_FINALLY in the
 * engine (wc_warm_ranges()), but a FATAL (a terminated restore worker,
 * postmaster death) calls proc_exit() without unwinding: an exit callback
 * leaves it then, or the other processes would measure for a member that is
 * gone, in phases ever longer, for the rest of the restore.
 */
static WarmAdviceShare *member_of = NULL;
static bool member_exit_registered = false;

/* Leave the shared measurement, if this process is counted in one. */
void
wc_advice_leave(void)
{
	WarmAdviceShare *share = member_of;

	if (share == NULL)
		return;
	member_of = NULL;
	advice_lock(share);
	/* A new restore may have reset it meanwhile: never below zero. */
	if (share->advice.members > 0)
		share->advice.members--;
	advice_unlock(share);
}

static void
leave_share_at_exit(int code, Datum arg)
{
	wc_advice_leave();
}

/*
 * Join a shared measurement (NULL: none), if it is one whose members the
 * engine counts.  A DSM segment (a parallel warm's) is detached after the
 * before_shmem_exit callbacks ran, so the callback may still touch it.
 */
void
wc_advice_join(WarmAdviceShare *share)
{
	uint32		members;

	Assert(member_of == NULL);
	if (share == NULL || !share->count_members)
		return;
	if (!member_exit_registered)
	{
		before_shmem_exit(leave_share_at_exit, (Datum) 0);
		member_exit_registered = true;
	}
	advice_lock(share);
	members = ++share->advice.members;
	advice_unlock(share);
	member_of = share;
	elog(DEBUG2, "processes in the shared measurement of advice: %u",
		 members);
}

/* Report a measurement that advice_account() ended. */
static void
advice_report(const WarmAdvice *a)
{
	if (a->on)
		elog(DEBUG2, "%.0f blocks/ms without advice, %.0f with: advice on (processes: %u)",
			 a->rate[0] * 1000.0, a->rate[1] * 1000.0, Max(a->members, 1));
	else
		elog(DEBUG2, "%.0f blocks/ms without advice, %.0f with: advice off (processes: %u)",
			 a->rate[0] * 1000.0, a->rate[1] * 1000.0, Max(a->members, 1));
}

/*
 * Before a chunk: whether to advise for it.  *measuring says whether the
 * chunk is timed for a measurement, advised or not, so that the caller
 * opens what advice needs.  A shared measurement (share) is read under its
 * spinlock.
 */
bool
wc_advice_decide(WarmAdvice *a, WarmAdviceShare *share, bool *measuring)
{
	bool		advise;

	advice_lock(share);
	advise = advice_wanted(a);
	*measuring = a->phase == 1;
	advice_unlock(share);
	return advise;
}

/*
 * After a chunk: blocks warmed in us microseconds, advice included, with
 * outstanding blocks advised beyond them and window the look-ahead if
 * advice goes on.  A measurement that ends is logged (DEBUG2).
 */
void
wc_advice_account(WarmAdvice *a, WarmAdviceShare *share, uint64 blocks,
				  double us, uint64 outstanding, uint64 window)
{
	WarmAdvice	reported;
	bool		ended;

	advice_lock(share);
	ended = advice_account(a, blocks, us, outstanding, window);
	if (ended)
		reported = *a;
	advice_unlock(share);
	if (ended)
		advice_report(&reported);
}
