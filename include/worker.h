/*-------------------------------------------------------------------------
 *
 * worker.h
 *		What the module's background workers share (worker.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_WORKER_H
#define PG_WARMCACHE_WORKER_H

#include <signal.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"

/*
 * A cancel (SIGINT) of the autowarm worker: it stops the restore it leads
 * (restore.c).  Set by the worker's handler (autowarm.c).
 */
extern volatile sig_atomic_t wc_cancel_pending;

/*
 * A shutdown request to the autowarm worker from someone other than the
 * postmaster, after the postmaster's: it cuts the shutdown dump's walk
 * short (oswalk.c).  Set by the worker's SIGTERM handler (worker.c).
 */
extern volatile sig_atomic_t wc_second_request;

extern void wc_note_signal(volatile sig_atomic_t *flag);
extern void wc_init_dynamic_worker(BackgroundWorker *worker,
								   const char *function, const char *type);
extern void wc_handle_shutdown_requests(void);
extern bool wc_server_stopping(void);
extern int	wc_count_processes(BackendType type, const char *except);

#endif							/* PG_WARMCACHE_WORKER_H */
