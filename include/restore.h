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

#include "postgres.h"

#include "port/atomics.h"

#include "engine.h"

#define WC_MAX_RESTORE_WORKERS 32

/*
 * A database restored by several workers is cut into stripes of
 * WC_STRIPE_BLOCKS blocks of each relation fork, dealt round-robin, so each
 * worker still reads long sequential pieces and all follow the rank order.
 */
#define WC_STRIPE_BLOCKS	4096
#define WC_MAX_STRIPES		8

/* What the leader tells one restore worker, and what it reports back. */
typedef struct RestoreSlot
{
	Oid			db;
	int			pid;
	bool		with_global;	/* also restores shared catalogs (db 0) */
	bool		only_global;	/* restores only shared catalogs */
	int			stripe;			/* this worker's share of the database, */
	int			nstripes;		/* see WC_STRIPE_BLOCKS */
	bool		connected;		/* set by the worker once connected */
	pg_atomic_uint64 processed; /* restored + skipped so far, of db */
	pg_atomic_uint64 processed_global;	/* the same, of shared catalogs */
} RestoreSlot;

/* restore.c: the leader, run by the autowarm worker */
extern void wc_lead_restore(WarmMode mode);

/* restore_worker.c: the entry point of a restore worker */
extern PGDLLEXPORT void pg_warmcache_restore_main(Datum arg);

#endif							/* PG_WARMCACHE_RESTORE_H */
