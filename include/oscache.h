/*-------------------------------------------------------------------------
 *
 * oscache.h
 *		Which blocks of the cluster's relation files the OS page cache
 *		holds: the OS tier of a dump, the files of one database for
 *		warmcache_relations(), and the residency of a stretch of one
 *		segment for a follow pass.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/oscache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_OSCACHE_H
#define PG_WARMCACHE_OSCACHE_H

#include "storage/block.h"

/* What the page cache holds of a span of a segment, as far as a count tells. */
typedef enum SegmentResidency
{
	WC_SEGMENT_SOME,			/* some of it, or not known */
	WC_SEGMENT_NONE,
	WC_SEGMENT_ALL,
} SegmentResidency;

/* Bytes of mincore() vector wc_block_residency() needs for n blocks. */
#define WC_RESIDENCY_VEC(n)	((Size) (n) * (BLCKSZ / 4096))

extern SegmentResidency wc_count_cached_pages(int fd, Size off, Size len);
extern bool wc_block_residency(const char *map, BlockNumber off, BlockNumber n,
							   unsigned char *vec, bool *resident);

#endif							/* PG_WARMCACHE_OSCACHE_H */
