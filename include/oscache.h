/*-------------------------------------------------------------------------
 *
 * oscache.h
 *		Which blocks of the cluster's relation files the OS page cache
 *		holds: the OS tier of a dump, and the residency of a stretch of
 *		one segment for a follow pass.
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

#include "dumpfile.h"

/* Receives the runs of cached blocks, one relation file segment at a time. */
typedef void (*OsRunCallback) (void *arg, const WarmRun *run);

/* Bytes of mincore() vector wc_block_residency() needs for n blocks. */
#define WC_RESIDENCY_VEC(n)	((Size) (n) * (BLCKSZ / 4096))

extern bool wc_scan_os_cache(bool shutdown, OsRunCallback emit, void *arg);
extern bool wc_block_residency(const char *map, BlockNumber off, BlockNumber n,
							   unsigned char *vec, bool *resident);

#endif							/* PG_WARMCACHE_OSCACHE_H */
