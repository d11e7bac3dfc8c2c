/*-------------------------------------------------------------------------
 *
 * engine.h
 *		The warming engine: brings block ranges of one relation fork into
 *		the OS page cache or shared buffers, with a look-ahead.
 *
 * warm() and warm_table() call it without a pacer and run at full speed;
 * the restore passes a pacer that counts progress, sleeps, yields and
 * stops it.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/engine.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_ENGINE_H
#define PG_WARMCACHE_ENGINE_H

#include "common/relpath.h"
#include "storage/block.h"
#include "storage/spin.h"
#include "utils/relcache.h"

#include "settings.h"

/* A range of consecutive blocks of one relation fork. */
typedef struct WarmRange
{
	BlockNumber start;
	BlockNumber count;
} WarmRange;

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

/*
 * Pacing of a warming loop.  The engine calls pace() before each I/O chunk
 * with the blocks it finished since the previous call, those now in shared
 * buffers and those only in the OS cache; pace() may sleep, shrink or grow
 * the look-ahead window, or ask the engine to stop.
 *
 * The window is in blocks, counted as 256 kB I/Os (32 blocks) as
 * wc_default_window() gives it; the engine issues its advice in pieces as
 * large as the device takes in one I/O and scales a window of at least one
 * such I/O to the same number of those pieces.  A smaller window (the
 * restore's while queries wait) is taken as it is, in pieces of its size.
 * A pacer may leave pace NULL.
 */
typedef struct WarmPacer WarmPacer;
struct WarmPacer
{
	void		(*pace) (WarmPacer *pacer, uint64 in_buffers, uint64 os_only);
	int			io_blocks;		/* blocks per chunk; 0 = the engine's 32 */
	int			window;			/* advice beyond the chunk, in blocks; 0 =
								 * no advice */
	bool		stop;			/* set by pace(): end the loop now */
	bool		no_evict;		/* buffer mode: never take a used buffer */
	bool		prefault;		/* buffer mode: prefault ahead as warm()
								 * does (the restore, a parallel warm) */
	bool		buffers_full;	/* set by the engine when no_evict hit */
	bool		skip_in_buffers;	/* read mode: do not read a chunk whose
									 * blocks are all in shared buffers */
	bool		os_cache_only;	/* buffer mode: read the next chunk into
								 * the OS cache only, as mode read with
								 * skip_in_buffers (set by pace()) */
	bool		skip_cached_chunks;	/* with os_cache_only: leave out a chunk
									 * the OS cache holds already (set by
									 * pace()) */
	bool		skip_os_cached;	/* read mode: leave out the stretches
								 * already in the OS cache (the restore) */
	bool		leave_out;		/* leave out the next chunk: neither read
								 * nor advised (set by pace()) */
	bool		advice_capped;	/* advise no further than advice_cap blocks
								 * beyond the next chunk (set by pace()) */
	uint64		advice_cap;
	uint64		left_out;		/* added to by the engine: blocks left out
								 * so; pace() takes them */
	uint64		found_cached;	/* added to by the engine: blocks of
								 * os_only found in the OS cache and not
								 * read; pace() takes them */
	Relation	rel;			/* if the owner sets it: the relation,
								 * which pace() may close and open again
								 * (the restore's lock probe); the engine
								 * reads through the new one */
	WarmAdvice	advice;			/* kept by the engine across calls */
	WarmAdviceShare *advice_share;	/* used instead, if set */
};

/* Most buffers wc_prefault_buffers() takes at once (2 MB of 8 kB blocks). */
#define WC_PREFAULT_MAX		256

extern WarmMode wc_parse_mode(const char *name);
extern const char *wc_mode_name(WarmMode mode);
extern void wc_check_mode_supported(WarmMode mode);
extern int	wc_default_window(void);
extern uint64 wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
							 const WarmRange *ranges, int nranges,
							 WarmPacer *pacer);
extern uint32 wc_prefault_buffers(int first, int last, bool map,
								  uint32 *unused);

#endif							/* PG_WARMCACHE_ENGINE_H */
