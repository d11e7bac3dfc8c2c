/*-------------------------------------------------------------------------
 *
 * shmem.h
 *		The module's shared memory: each part's, reserved and attached
 *		together (shmem.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_SHMEM_H
#define PG_WARMCACHE_SHMEM_H

extern void wc_reserve_shared(void);

#endif							/* PG_WARMCACHE_SHMEM_H */
