/*-------------------------------------------------------------------------
 *
 * autowarm.h
 *		The autowarm worker: restore at start, periodic and shutdown
 *		dumps, and the restores warmcache_restore_now() asks for.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/autowarm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_AUTOWARM_H
#define PG_WARMCACHE_AUTOWARM_H

extern void wc_register_autowarm_worker(void);
extern PGDLLEXPORT void pg_warmcache_main(Datum arg);

#endif							/* PG_WARMCACHE_AUTOWARM_H */
