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

#include "dumpfile.h"

/* Receives the runs of cached blocks, one relation file segment at a time. */
typedef void (*OsRunCallback) (void *arg, const WarmRun *run);

/*
 * Receives each segment file's size in blocks (key's start is the
 * segment's first block, its count 0), before the segment's runs.
 */
typedef void (*OsSegmentCallback) (void *arg, const WarmRun *key,
								   BlockNumber nblocks);

/* Bytes of mincore() vector wc_block_residency() needs for n blocks. */
#define WC_RESIDENCY_VEC(n)	((Size) (n) * (BLCKSZ / 4096))

extern bool wc_scan_os_cache(bool shutdown, OsRunCallback emit, void *arg);
extern void wc_scan_database_files(Oid db, OsRunCallback emit,
								   OsSegmentCallback sized, void *arg);
extern bool wc_block_residency(const char *map, BlockNumber off, BlockNumber n,
							   unsigned char *vec, bool *resident);

#endif							/* PG_WARMCACHE_OSCACHE_H */
