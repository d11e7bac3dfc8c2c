/*-------------------------------------------------------------------------
 *
 * restore_shared.h
 *		The restore's shared state (restore_shared.c): what the leader
 *		publishes of the current or last restore, what its workers add up,
 *		their shared budgets and the leader's slots for them.
 *
 * The restore is three files: the leader (restore.c), its workers
 * (restore_worker.c) and what a worker does between two chunks (pacer.c).
 * They use RestoreShared directly, as PostgreSQL's buffer manager files
 * use buf_internals.h; every other file calls the functions at the end
 * (test/layering checks that no other object uses wc_restore).
 *
 * Locks:
 * - The plain fields of the status are written only with the status lock
 *   held exclusively (operation.h), by the leader, which runs in the
 *   autowarm worker; readers that report several as of one moment take it
 *   shared (wc_restore_status()), and a worker that reads one to decide
 *   what to do reads it without.
 * - The counters are atomics, added to by the workers and read as they are.
 * - The limit's cut, the source and the mode are written by the leader
 *   before it starts any worker, and only read by the workers.
 * - A slot is filled by the leader before it starts the slot's worker and
 *   read back after the worker has stopped; the worker sets connected,
 *   pid and its outcome.  Others read registered, connected and pid
 *   without a lock, as hints.
 * - advice has its own spinlock (advice.h).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/restore_shared.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_RESTORE_SHARED_H
#define PG_WARMCACHE_RESTORE_SHARED_H

#include "datatype/timestamp.h"
#include "port/atomics.h"

#include "advice.h"
#include "format.h"
#include "settings.h"

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
 * Why blocks were skipped: only the first two prove them gone; all but
 * locked and failed leave nothing to restore.
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
	WC_SKIP_LIMIT,				/* past pg_warmcache.restore_limit, left out
								 * as pg_warmcache.past_restore_limit asks */
	WC_SKIP_CATALOG				/* of an import: a catalog, which pg_upgrade
								 * does not carry over */
} RestoreSkipReason;

#define WC_SKIP_REASONS (WC_SKIP_CATALOG + 1)

/*
 * What a restore reads, and why: the saved file at start or on request,
 * or on a standby the primary's hot set it follows (channel.c), and that
 * set again at promotion, into shared buffers; or, at the first start
 * after pg_upgrade, the old cluster's saved file, imported once.
 */
typedef enum RestoreSource
{
	WC_SOURCE_SAVED,
	WC_SOURCE_FOLLOWED,
	WC_SOURCE_PROMOTION,
	WC_SOURCE_IMPORT
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

typedef struct RestoreShared
{
	/* The status: the status lock's. */
	RestoreSource source;		/* which file, and why */
	WarmMode	mode;
	bool		incomplete;		/* some blocks neither restored nor gone */
	char		incomplete_reason[64];	/* why, in words */
	TimestampTz started_at;
	TimestampTz finished_at;
	int64		blocks_total;
	int64		os_tier_total;	/* of total: the OS tier */
	Oid			waiting_db;		/* a database the restore waits for, a
								 * command wanting it, or InvalidOid */
	TimestampTz waiting_since;	/* since when */
	int			retries;		/* of the restore asked for again, so far */

	/* On a standby: the last pass over the followed set. */
	int64		followed_os_tier;	/* the followed set's OS tier */
	int64		followed_warm;	/* restored by the last pass */
	int64		followed_os_tier_warm;	/* of those, the OS tier's */

	/*
	 * On a standby that follows: the fraction of the followed set that the
	 * last finished pass found cached or read (readiness.c).
	 */
	bool		followed_pass_done;
	double		followed_fraction;

	/* The counters. */
	pg_atomic_uint64 blocks_done;
	pg_atomic_uint64 os_tier_done;	/* of done: the OS tier */
	pg_atomic_uint64 blocks_os; /* of done: OS cache only */
	pg_atomic_uint64 buffer_tier_os;	/* of those: the buffer tier's in
										 * mode buffer */
	pg_atomic_uint64 skipped[WC_SKIP_REASONS];
	pg_atomic_uint64 cpu_us;	/* CPU of the restore workers that ended */
	pg_atomic_uint64 found_cached;	/* blocks in the OS cache already, not
									 * read */
	pg_atomic_uint64 device_bytes;	/* what its workers read from the
									 * device */
	pg_atomic_uint32 device_unknown;	/* a worker could not say */

	/*
	 * The restore limit's cut (restore.h).  limit_used counts the blocks of
	 * the cut's rank put into shared buffers.
	 */
	int			limit_cut;		/* a rank slot, or -1: no cut */
	uint64		limit_at_cut;	/* the cut rank's share of the limit */
	bool		limit_skip;		/* past it, leave blocks out */
	pg_atomic_uint64 limit_used;
	pg_atomic_uint32 db_command_pending;	/* a database-level command
											 * wants a database the restore
											 * wants (restore.c) */

	/*
	 * The shared budgets, as virtual clocks in microseconds: each worker
	 * moves a clock on by what it spent, and sleeps while the clock is
	 * ahead of real time (see pacer.c).
	 */
	pg_atomic_uint64 rate_clock;	/* blocks read, at the rate cap in
									 * force */
	pg_atomic_uint64 cpu_clock;		/* CPU time, while queries are busy */

	/*
	 * The cap on the restore's reads while queries wait for reads, in
	 * blocks a second, 0 until the first spell of the workers' reads is
	 * measured; it follows the device's rate from below (pacer.c).  It is
	 * written, and the current spell kept, under the spinlock.
	 */
	pg_atomic_uint64 blocks_read;	/* read from the device, so far */
	pg_atomic_uint64 wait_cap;
	slock_t		rate_mutex;
	TimestampTz spell_at;		/* when the current spell began, or 0 */
	uint64		spell_blocks;	/* blocks_read then */
	bool		spell_capped;	/* the cap was in force in it */
	int64		spell_slept_us; /* the workers slept for a rate cap */

	/* Whether advice pays, measured by all restore workers together. */
	WarmAdviceShare advice;

	RestoreSlot slots[WC_MAX_RESTORE_WORKERS];
} RestoreShared;

/* Only restore.c, restore_worker.c and pacer.c use it (see above). */
extern RestoreShared *wc_restore;

/* What warmcache_status() and readiness report of the restore. */
typedef struct RestoreStatus
{
	RestoreSource source;
	WarmMode	mode;
	bool		incomplete;
	char		incomplete_reason[64];
	TimestampTz started_at;
	TimestampTz finished_at;
	int64		blocks_total;
	int64		os_tier_total;
	Oid			waiting_db;
	int64		followed_os_tier;
	int64		followed_warm;
	int64		followed_os_tier_warm;
	bool		followed_pass_done;
	double		followed_fraction;
	/* the counters, as they were read */
	uint64		blocks_done;
	uint64		os_tier_done;
	uint64		blocks_os;
	uint64		found_cached;
	uint64		skipped[WC_SKIP_REASONS];
} RestoreStatus;

extern Size wc_restore_shmem_size(void);
extern void wc_restore_shmem_init(void);
extern void wc_restore_status(RestoreStatus *status);
extern double wc_restore_fraction(int64 total);
extern void wc_restore_note_pass_end(void);
extern int	wc_restore_workers_starting(void);
extern bool wc_is_restore_worker(int pid);
extern bool wc_restore_was_incomplete(bool *asked);
extern void wc_restore_forget_incomplete(void);

#endif							/* PG_WARMCACHE_RESTORE_SHARED_H */
