/*-------------------------------------------------------------------------
 *
 * advice.h
 *		Whether advice pays, measured while warming (advice.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/advice.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_ADVICE_H
#define PG_WARMCACHE_ADVICE_H

#include "storage/spin.h"

/*
 * Whether advice pays, measured while warming.  Advice costs a system call
 * per piece and a descriptor; it pays only where reads would otherwise wait
 * for the device.  Where the data is in the OS cache already, or where the
 * kernel's own readahead keeps ahead of the copy, it is pure cost.  The
 * engine measures its own rate with and without advice, one phase after the
 * other, and keeps advising only while that is clearly faster; it measures
 * again from time to time, less often each time the answer stays the same.
 * A pacer carries this across calls (the restore's batches, the stripes of
 * a parallel warm); all zero is a fresh start.
 *
 * Processes warming at once share one device: one measuring alone while
 * the others advise would see the device saturated either way.  So the
 * processes of a parallel warm share one WarmAdvice (WarmAdviceShare) and
 * switch together; members is how many, and the phases are as many times
 * longer in the sum of their time.
 */
typedef struct WarmAdvice
{
	bool		on;				/* advising now */
	int			phase;			/* 0 run, 1 measure the current state, 2
								 * measure the other one */
	uint64		consumed;		/* blocks warmed under this state */
	uint64		settle_until;	/* measuring starts at this consumed count */
	uint64		measured_blocks;	/* of the current phase */
	double		measured_us;
	double		rate[2];		/* blocks per microsecond: [0] without, [1]
								 * with advice */
	uint64		measure_start;	/* consumed count when it began */
	uint64		next_probe;		/* consumed count of the next measurement */
	uint64		interval;		/* blocks between measurements; 0 = fresh */
	uint32		probes;			/* measurements made, for debugging */
	uint32		members;		/* processes sharing it (see
								 * WarmAdviceShare); 0 = one */
} WarmAdvice;

/*
 * A WarmAdvice shared by processes, in shared memory.  With count_members,
 * the engine counts the processes in its loop as members, and takes a
 * process out again however it leaves the loop (an exit callback covers a
 * FATAL, which does not unwind); without, the owner sets members (a
 * parallel warm: all it launched, from the start, so that the caller,
 * alone while its workers prefault buffers, measures as long as all of
 * them will).
 */
typedef struct WarmAdviceShare
{
	slock_t		mutex;
	bool		count_members;
	WarmAdvice	advice;
} WarmAdviceShare;

extern bool wc_advice_decide(WarmAdvice *a, WarmAdviceShare *share,
							 bool *measuring);
extern void wc_advice_account(WarmAdvice *a, WarmAdviceShare *share,
							  uint64 blocks, double us, uint64 outstanding,
							  uint64 window);
extern void wc_advice_join(WarmAdviceShare *share);
extern void wc_advice_leave(void);

#endif							/* PG_WARMCACHE_ADVICE_H */
