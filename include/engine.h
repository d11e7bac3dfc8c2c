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

#include "postgres.h"

#include "common/relpath.h"
#include "storage/block.h"
#include "utils/relcache.h"

/* Where warmed blocks go; warm()'s mode argument names them. */
typedef enum WarmMode
{
	WC_MODE_PREFETCH,			/* posix_fadvise(WILLNEED): OS cache, async */
	WC_MODE_READ,				/* read(2) into private memory: OS cache */
	WC_MODE_BUFFER				/* into shared_buffers */
} WarmMode;

/* A range of consecutive blocks of one relation fork. */
typedef struct WarmRange
{
	BlockNumber start;
	BlockNumber count;
} WarmRange;

/*
 * Pacing of a warming loop.  The engine calls pace() before each I/O chunk
 * with the blocks it finished since the previous call, those now in shared
 * buffers and those only in the OS cache; pace() may sleep, shrink or grow
 * the look-ahead window, or ask the engine to stop.
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
	bool		buffers_full;	/* set by the engine when no_evict hit */
};

extern WarmMode wc_parse_mode(const char *name);
extern const char *wc_mode_name(WarmMode mode);
extern void wc_check_mode_supported(WarmMode mode);
extern int	wc_default_window(void);
extern uint64 wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
							 const WarmRange *ranges, int nranges,
							 WarmPacer *pacer);

#endif							/* PG_WARMCACHE_ENGINE_H */
