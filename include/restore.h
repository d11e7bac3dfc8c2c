/*-------------------------------------------------------------------------
 *
 * restore.h
 *		The restore: a leader in the autowarm worker (restore.c) and
 *		dynamic restore workers, one or more per database
 *		(restore_worker.c), which share a slot each in shared memory.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/restore.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_RESTORE_H
#define PG_WARMCACHE_RESTORE_H

#include "dumpfile.h"
#include "engine.h"
#include "restore_shared.h"

/*
 * A database restored by several workers is cut into stripes of
 * WC_STRIPE_BLOCKS blocks of each relation fork, dealt round-robin, so each
 * worker still reads long sequential pieces and all follow the rank order.
 */
#define WC_STRIPE_BLOCKS	4096
#define WC_MAX_STRIPES		8

/* restore.c: the leader, run by the autowarm worker */
extern void wc_lead_restore(WarmMode mode, RestoreSource source);
extern const char *wc_source_file(RestoreSource source);
extern const char *wc_source_name(RestoreSource source);

/*
 * A database that a command keeps wanting is given up after this long, in
 * seconds (restore.c), and the saved file is restored again WC_DB_RETRY_S
 * after the restore ended, WC_DB_RETRIES times in a row at most.
 */
#define WC_DB_WANTED_MAX_S		10
#define WC_DB_RETRY_S			30
#define WC_DB_RETRIES			5

/* restore_worker.c: the entry point of a restore worker */
extern PGDLLEXPORT void pg_warmcache_restore_main(Datum arg);

#endif							/* PG_WARMCACHE_RESTORE_H */
