/*-------------------------------------------------------------------------
 *
 * lookahead.h
 *		Where the engine is in its block ranges, and its look-ahead
 *		(lookahead.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/lookahead.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_LOOKAHEAD_H
#define PG_WARMCACHE_LOOKAHEAD_H

#include "storage/block.h"
#include "storage/fd.h"

/* A range of consecutive blocks of one relation fork. */
typedef struct WarmRange
{
	BlockNumber start;
	BlockNumber count;
} WarmRange;

/* Blocks in one read of mode read, and the unit of a window. */
#define WC_IO_BLOCKS	32

/* One open segment file of the fork being warmed. */
typedef struct SegFile
{
	const char *path;			/* of segment 0 */
	BlockNumber segno;
	File		file;
	char	   *map;			/* the segment mapped for mincore(), never
								 * touched; NULL = not mapped yet */
	bool		unmappable;		/* mapping it failed: take it as uncached */
} SegFile;

/* Position in a range list. */
typedef struct RangeCursor
{
	const WarmRange *ranges;
	int			nranges;
	int			ri;				/* current range */
	BlockNumber off;			/* blocks of it already passed */
} RangeCursor;

static inline bool
wc_cursor_done(RangeCursor *c)
{
	return c->ri >= c->nranges;
}

/*
 * Length of the next piece at the cursor: at most max blocks, within one
 * range and one segment file.
 */
static inline BlockNumber
wc_cursor_piece(RangeCursor *c, BlockNumber max)
{
	const WarmRange *r = &c->ranges[c->ri];
	BlockNumber block = r->start + c->off;
	BlockNumber n = r->count - c->off;
	BlockNumber to_seg_end = RELSEG_SIZE - block % RELSEG_SIZE;

	n = Min(n, to_seg_end);
	return Min(n, max);
}

static inline void
wc_cursor_advance(RangeCursor *c, BlockNumber n)
{
	c->off += n;
	while (c->ri < c->nranges && c->off >= c->ranges[c->ri].count)
	{
		c->ri++;
		c->off = 0;
	}
}

static inline BlockNumber
wc_cursor_block(RangeCursor *c)
{
	return c->ranges[c->ri].start + c->off;
}

extern char *wc_seg_path(SegFile *sf, BlockNumber segno);
extern File wc_seg_file(SegFile *sf, BlockNumber block);
extern void wc_seg_close(SegFile *sf);
extern BlockNumber wc_device_piece(File f);
extern void wc_advise_until(RangeCursor *adv, uint64 *advised, uint64 target,
							SegFile *sf, BlockNumber piece);

#endif							/* PG_WARMCACHE_LOOKAHEAD_H */
