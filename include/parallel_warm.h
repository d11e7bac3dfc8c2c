/*-------------------------------------------------------------------------
 *
 * parallel_warm.h
 *		Warming one large relation fork with dynamic background workers.
 *
 * warm() and warm_table() hand each relation fork here; it is split among
 * background workers and the caller when that pays and is possible, and
 * warmed by the caller alone otherwise (parallel_warm.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/parallel_warm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PARALLEL_WARM_H
#define PG_WARMCACHE_PARALLEL_WARM_H

#include "engine.h"

extern Size wc_warm_workers_shmem_size(void);
extern void wc_warm_workers_shmem_request(void);
extern void wc_warm_workers_shmem_init(void);
extern uint64 wc_warm_range(Relation rel, ForkNumber fork, WarmMode mode,
							const WarmRange *range);

/* The entry point of a warm worker. */
extern PGDLLEXPORT void pg_warmcache_warm_main(Datum arg);

#endif							/* PG_WARMCACHE_PARALLEL_WARM_H */
