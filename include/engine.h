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
#include "utils/relcache.h"

#include "advice.h"
#include "lookahead.h"
#include "prefault.h"
#include "settings.h"

/*
 * Pacing of a warming loop.  Before each chunk the engine asks its pacer
 * one question, pace(), with what it did since it last asked; the answer
 * says what to do with the next chunk and how far to advise beyond it.
 * After the last chunk the engine reports once more, and ignores the
 * answer.
 *
 * The window is in blocks, counted as 256 kB I/Os (32 blocks) as
 * wc_default_window() gives it; the engine issues its advice in pieces as
 * large as the device takes in one I/O and scales a window of at least one
 * such I/O to the same number of those pieces.  A smaller window (the
 * restore's while queries wait) is taken as it is, in pieces of its size.
 */

/* What to do with the next chunk. */
typedef enum ChunkAction
{
	WC_CHUNK_WARM,				/* warm it in the engine's mode */
	WC_CHUNK_OS_CACHE,			/* mode buffer: read it into the OS cache
								 * only, as mode read does, unless shared
								 * buffers hold all of it */
	WC_CHUNK_OS_CACHE_UNCACHED, /* the same, but leave it out if the OS
								 * cache holds it already */
	WC_CHUNK_LEAVE_OUT,			/* neither read nor advise it */
	WC_CHUNK_STOP				/* end the loop now */
} ChunkAction;

/* The pacer's answer. */
typedef struct ChunkPlan
{
	ChunkAction action;
	int			io_blocks;		/* blocks of the chunk; 0 = the engine's 32 */
	int			window;			/* advice beyond the chunk, in blocks; 0 =
								 * none */
	int64		advice_cap;		/* advise no further than this many blocks
								 * beyond the chunk, whatever the window; -1
								 * = no cap */
} ChunkPlan;

/* What the engine did since it last asked, in blocks. */
typedef struct ChunkReport
{
	uint64		in_buffers;		/* now in shared buffers */
	uint64		os_only;		/* now in the OS cache only */
	uint64		found_cached;	/* of os_only: in the OS cache already, and
								 * not read */
	uint64		left_out;		/* left out as the plan asked */
} ChunkReport;

typedef struct WarmPacer WarmPacer;
struct WarmPacer
{
	/* The question; NULL: every chunk follows plan. */
	ChunkPlan	(*pace) (WarmPacer *pacer, const ChunkReport *done);
	ChunkPlan	plan;			/* without pace(), the plan of every chunk */

	/* How the owner wants its chunks warmed, for all of them. */
	bool		no_evict;		/* buffer mode: never take a used buffer */
	bool		prefault;		/* buffer mode: prefault ahead as warm()
								 * does (the restore, a parallel warm) */
	bool		skip_in_buffers;	/* read mode: do not read a chunk whose
									 * blocks are all in shared buffers */
	bool		skip_os_cached; /* read mode: leave out the stretches
								 * already in the OS cache (the restore) */
	Relation	rel;			/* if the owner sets it: the relation,
								 * which pace() may close and open again
								 * (the restore's lock probe); the engine
								 * reads through the new one */

	/* What the engine keeps from one call to the next. */
	bool		buffers_full;	/* no_evict found no free buffer: from then
								 * on, mode read */
	WarmAdvice	advice;			/* whether advice pays */
	WarmAdviceShare *advice_share;	/* used instead, if the owner sets it */
};

extern WarmMode wc_parse_mode(const char *name);
extern const char *wc_mode_name(WarmMode mode);
extern void wc_check_mode_supported(WarmMode mode);
extern int	wc_default_window(void);
extern ChunkPlan wc_default_plan(int window);
extern uint64 wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
							 const WarmRange *ranges, int nranges,
							 WarmPacer *pacer);

#endif							/* PG_WARMCACHE_ENGINE_H */
