/*-------------------------------------------------------------------------
 *
 * pacer.h
 *		What a restore worker does between two chunks of its reads:
 *		progress, abort, the shared rate cap and CPU budget, yielding to
 *		queries that wait for reads, and noticing that a lock the restore
 *		holds, or its database, is wanted by others (pacer.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/pacer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PACER_H
#define PG_WARMCACHE_PACER_H

#include "utils/relcache.h"
#include "utils/timestamp.h"

#include "engine.h"
#include "restore_shared.h"

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

/* Why a pacer stopped the engine. */
typedef enum PacerStop
{
	WC_STOP_NONE,
	WC_STOP_LOCK_WANTED,		/* a lock request waits for our relation */
	WC_STOP_REL_CHANGED,		/* rewritten or truncated while its lock was
								 * let go */
	WC_STOP_DB_WANTED,			/* a database-level command waits for us */
	WC_STOP_PAUSE,				/* one wants another database of the
								 * restore: wait, outside the batch */
	WC_STOP_ABORT				/* abort or shutdown */
} PacerStop;

/* The pacer of a restore worker; base is what the engine sees. */
typedef struct RestorePacer
{
	WarmPacer	base;
	RestoreSlot *slot;
	WarmMode	mode;
	bool		stopped;		/* the engine is told to stop, and why: */
	PacerStop	why;

	/*
	 * The relation fork being warmed: restore_worker.c sets them, and
	 * base.rel to the open relation (NULL between batches, and once the
	 * lock probe closed it for good).
	 */
	ForkNumber	fork;
	RelFileNumber relnumber;	/* its storage when the batch began */
	BlockNumber nblocks;		/* the fork's size then */
	bool		counting;		/* count the batch's blocks in the progress */
	bool		os_tier;		/* reading the OS tier */
	LimitClass	limit_class;	/* the batch's, against the restore limit */
	uint64		batch_done;		/* blocks of the current batch warmed */

	/* when each probe last ran */
	TimestampTz lock_probe_at;
	TimestampTz db_probe_at;
	TimestampTz fg_probe_at;

	/* what the last look at the other backends found */
	bool		fg_reading;		/* some wait for a data file read */
	TimestampTz fg_read_at;		/* when some were last seen reading */
	double		fg_busy_share;	/* share of recent looks that found every
								 * CPU running our backends, 0 to 1 */
	TimestampTz fg_busy_look_at;	/* when that share was last updated */
	int			looks;			/* looks since wc_pacer_report() */
	int			busy_looks;		/* of them, those that found every CPU busy */
	int64		cpu_used;		/* this process's CPU time at the last pace */
	TimestampTz cpus_busy_since;	/* since when the CPUs are busy, or 0 */

	/* where the time went since wc_pacer_report(), in microseconds */
	TimestampTz paced_at;		/* the last pace */
	bool		was_cpus_busy;	/* what the last pace decided */
	bool		was_yielding;
	bool		was_capped;		/* the cap for waiting queries in force */
	bool		budget_sleep;	/* sleeping for the CPU budget */
	int64		cpus_busy_us;	/* spent with the CPUs busy */
	int64		yield_us;		/* spent in small reads for a waiting query */
	int64		capped_us;		/* spent under the cap for waiting queries */
	int64		budget_sleep_us;	/* slept for the CPU budget */
	int64		rate_sleep_us;	/* slept for the rate cap */
} RestorePacer;

extern void wc_pacer_init(RestorePacer *pacer, RestoreSlot *slot,
						  WarmMode mode);
extern bool wc_pacer_check(RestorePacer *pacer);
extern void wc_pacer_sleep(RestorePacer *pacer, long ms);
extern void wc_pacer_wait_for_commands(RestorePacer *pacer);
extern void wc_restore_sigterm_handler(SIGNAL_ARGS);
extern void wc_pacer_report(RestorePacer *pacer, const char *what);
extern LimitClass wc_limit_class(const WarmRun *run);

#endif							/* PG_WARMCACHE_PACER_H */
