/*-------------------------------------------------------------------------
 *
 * oscache.h
 *		Which blocks of the cluster's relation files the OS page cache
 *		holds: the OS tier of a dump.
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

#include "postgres.h"

#include "dumpfile.h"

/* Receives the runs of cached blocks, one relation file segment at a time. */
typedef void (*OsRunCallback) (void *arg, const WarmRun *run);

extern bool wc_scan_os_cache(bool shutdown, OsRunCallback emit, void *arg);

#endif							/* PG_WARMCACHE_OSCACHE_H */
