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

#include "postgres.h"

#include <signal.h>

/* A cancel (SIGINT) of the autowarm worker: it stops the restore it leads. */
extern volatile sig_atomic_t wc_cancel_pending;

extern void wc_register_autowarm_worker(void);
extern bool wc_server_stopping(void);
extern PGDLLEXPORT void pg_warmcache_main(Datum arg);

#endif							/* PG_WARMCACHE_AUTOWARM_H */
