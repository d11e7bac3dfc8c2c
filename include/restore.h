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

#include "port/atomics.h"

#include "dumpfile.h"
#include "engine.h"

/*
 * A database restored by several workers is cut into stripes of
 * WC_STRIPE_BLOCKS blocks of each relation fork, dealt round-robin, so each
 * worker still reads long sequential pieces and all follow the rank order.
 */
#define WC_STRIPE_BLOCKS	4096
#define WC_MAX_STRIPES		8

/*
 * Where a restore worker is in its share of the file, counted in blocks of
 * its share in restore order (its traversal is the same every time it is
 * started).  A worker that leaves its database to a database-level
 * command leaves these for the worker that takes over after the command.
 */
typedef struct RestorePosition
{
	uint64		from;			/* every block before this one was handled */
	uint64		counted_to;		/* every block before this one was counted
								 * in the progress figures, but uncounted
								 * of them */
	uint64		uncounted;		/* blocks before counted_to not yet counted */
} RestorePosition;

/* How a restore worker ended; a worker that died leaves it running. */
typedef enum RestoreOutcome
{
	WC_OUTCOME_RUNNING,
	WC_OUTCOME_DONE,			/* every block of its share handled */
	WC_OUTCOME_LEFT_DATABASE	/* its database was wanted: see resume */
} RestoreOutcome;

/*
 * Why blocks were skipped: only the first two prove them gone; the first
 * two and the last leave nothing to restore.
 */
typedef enum RestoreSkipReason
{
	WC_SKIP_GONE,				/* database, relation or fork dropped, or
								 * past the end of the relation */
	WC_SKIP_EXCLUDED,			/* a template database, or one that does not
								 * allow connections */
	WC_SKIP_LOCKED,				/* its relation was wanted by others every
								 * time the restore came back to it */
	WC_SKIP_FAILED,				/* an error while reading them */
	WC_SKIP_LIMIT				/* past pg_warmcache.restore_limit, left out
								 * as pg_warmcache.past_restore_limit asks */
} RestoreSkipReason;

#define WC_SKIP_REASONS (WC_SKIP_LIMIT + 1)

/*
 * What a restore reads, and why: the saved file at start or on request,
 * or on a standby the primary's hot set it follows (channel.c), and that
 * set again at promotion, into shared buffers.
 */
typedef enum RestoreSource
{
	WC_SOURCE_SAVED,
	WC_SOURCE_FOLLOWED,
	WC_SOURCE_PROMOTION
} RestoreSource;

/* What the leader tells one restore worker, and what it reports back. */
typedef struct RestoreSlot
{
	Oid			db;				/* InvalidOid: the shared catalogs */
	Oid			connect_db;		/* the database it connects to */
	int			pid;
	bool		registered;		/* the leader registered its worker and has
								 * not seen it stop: it holds a slot of
								 * max_worker_processes (parallel_warm.c) */
	int			stripe;			/* this worker's share of the database, */
	int			nstripes;		/* see WC_STRIPE_BLOCKS */
	bool		connected;		/* set by the worker once connected */
	RestoreOutcome outcome;		/* set by the worker as it ends */
	RestorePosition resume;		/* in: where to start; out: where to go on */
	uint64		first[WC_RANK_SLOTS];	/* in: where its database's runs of
										 * each rank are in the file */
	uint64		nruns[WC_RANK_SLOTS];	/* in: how many */
	pg_atomic_uint64 processed; /* blocks restored or skipped */
} RestoreSlot;

/*
 * Where the runs of a rank stand against pg_warmcache.restore_limit: the
 * leader finds the rank at which the saved set's buffer tier, hottest
 * first, reaches the limit (the cut); hotter ranks are within it, colder
 * ones past it, and the blocks of the cut's rank go into shared buffers
 * while its share of the limit lasts (pacer.c).
 */
typedef enum LimitClass
{
	WC_LIMIT_WITHIN,			/* no limit, the OS tier, or hotter than
								 * the cut */
	WC_LIMIT_AT_CUT,
	WC_LIMIT_PAST
} LimitClass;

/* restore.c: the leader, run by the autowarm worker */
extern void wc_lead_restore(WarmMode mode, RestoreSource source);
extern int	wc_restore_workers_starting(void);
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
extern Oid	wc_connectable_database(const char *name, bool *exists);

/* restore_worker.c: the entry point of a restore worker */
extern PGDLLEXPORT void pg_warmcache_restore_main(Datum arg);

#endif							/* PG_WARMCACHE_RESTORE_H */
