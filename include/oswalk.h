/*-------------------------------------------------------------------------
 *
 * oswalk.h
 *		The dump's walk of the relation files for what the OS page cache
 *		holds (oswalk.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/oswalk.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_OSWALK_H
#define PG_WARMCACHE_OSWALK_H

#include "format.h"

/* Receives the runs of cached blocks, one relation file segment at a time. */
typedef void (*OsRunCallback) (void *arg, const WarmRun *run);

extern bool wc_scan_os_cache(bool shutdown, OsRunCallback emit, void *arg);
extern void wc_scan_database_files(Oid db, OsRunCallback emit, void *arg);

#endif							/* PG_WARMCACHE_OSWALK_H */
