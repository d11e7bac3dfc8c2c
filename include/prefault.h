/*-------------------------------------------------------------------------
 *
 * prefault.h
 *		Faulting in the memory of unused shared buffers (prefault.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/prefault.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PREFAULT_H
#define PG_WARMCACHE_PREFAULT_H

/* Most buffers wc_prefault_buffers() takes at once (2 MB of 8 kB blocks). */
#define WC_PREFAULT_MAX		256

extern uint32 wc_prefault_buffers(int first, int last, bool map,
								  uint32 *unused);

#endif							/* PG_WARMCACHE_PREFAULT_H */
