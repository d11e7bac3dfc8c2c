/*-------------------------------------------------------------------------
 *
 * operation.h
 *		What the module is doing, and the state changes that begin and end
 *		a dump or a restore (operation.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/operation.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_OPERATION_H
#define PG_WARMCACHE_OPERATION_H

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "engine.h"
#include "restore.h"

/* What the module is doing; dumps and restores exclude each other. */
typedef enum WarmState
{
	WC_STATE_IDLE,
	WC_STATE_DUMPING,
	WC_STATE_RESTORING
} WarmState;

/*
 * The shared state.
 *
 * The fields from state to followed_fraction are the lock's: they are written
 * only with it held exclusively.  A reader that reports several of them as
 * of one moment takes it in shared mode (warmcache_status(), readiness.c);
 * a loop that looks at one of them to decide whether to go on (a restore
 * worker at abort_requested, say) reads it without, and sees a change at
 * its next look.
 *
 * The rest is not the lock's: the counters are atomics, restore_advice has
 * its own spinlock, a restore slot is filled by the leader before it
 * starts the slot's worker and read back after the worker has stopped (a
 * warm() counting worker slots reads its registered and connected flags as
 * they are, as a hint), and the channel's notes are written by the
 * autowarm worker and the channel worker it starts and waits for, one at a
 * time.
 */
typedef struct WarmShared
{
	LWLock	   *lock;			/* see above */
	ConditionVariable cv;		/* signalled on every state change */

	WarmState	state;
	int			owner_pid;		/* process that began the dump or restore */
	int			worker_pid;		/* the autowarm worker */
	Latch	   *worker_latch;
	bool		startup_done;	/* the start-up restore was decided */

	/* restore requests, from SQL to the worker */
	bool		restore_requested;
	WarmMode	request_mode;
	bool		abort_requested;

	/* the current or last restore */
	RestoreSource restore_source;	/* which file, and why */
	WarmMode	restore_mode;
	bool		restore_incomplete; /* some blocks neither restored nor gone */
	char		incomplete_reason[64];	/* why, in words */
	TimestampTz restore_begun_at;	/* when the restoring state began: a
									 * restore_started_at before it is the
									 * last restore's */
	TimestampTz restore_started_at;
	TimestampTz restore_finished_at;
	int64		restore_blocks_total;
	int64		restore_os_tier_total;	/* of total: the OS tier */
	Oid			restore_waiting_db; /* a database the restore waits for, a
									 * command wanting it, or InvalidOid */
	TimestampTz restore_waiting_since;	/* since when */
	TimestampTz restore_retry_at;	/* when the saved file is restored again,
									 * for what a command kept out, or 0 */
	WarmMode	restore_retry_mode;
	int			restore_retries;	/* of that restore, so far */

	/* On a standby: a new followed file waits for its pass (channel.c). */
	bool		follow_pass_due;
	int64		followed_os_tier;	/* of those, the OS tier's */
	int64		followed_warm;	/* restored by the last pass */
	int64		followed_os_tier_warm;	/* of those, the OS tier's */

	/*
	 * On a standby that follows: the fraction of the followed set that the
	 * last finished pass found cached or read (readiness.c).
	 */
	bool		followed_pass_done;
	double		followed_fraction;

	/* Not the lock's from here on. */

	pg_atomic_uint64 restore_blocks_done;
	pg_atomic_uint64 restore_os_tier_done;	/* of done: the OS tier */
	pg_atomic_uint64 restore_blocks_os;	/* of done: OS cache only */
	pg_atomic_uint64 restore_buffer_tier_os;	/* of those: the buffer tier's
												 * in mode buffer */
	pg_atomic_uint64 restore_skipped[WC_SKIP_REASONS];
	pg_atomic_uint64 restore_cpu_us;	/* CPU of the restore workers that
										 * ended */
	pg_atomic_uint64 restore_found_cached;	/* a restore's blocks in the OS
											 * cache already, not read */
	pg_atomic_uint64 restore_device_bytes;	/* what its workers read from
											 * the device */
	pg_atomic_uint32 restore_device_unknown;	/* a worker could not say */
	/*
	 * The restore limit's cut (restore.h): written by the leader before it
	 * starts the workers, read by them.  restore_limit_used counts the
	 * blocks of the cut's rank put into shared buffers.
	 */
	int			restore_limit_cut;	/* a rank slot, or -1: no cut */
	uint64		restore_limit_at_cut;	/* the cut rank's share of the limit */
	bool		restore_limit_skip; /* past it, leave blocks out */
	pg_atomic_uint64 restore_limit_used;
	pg_atomic_uint32 db_command_pending;	/* a database-level command
											 * wants a database the restore
											 * wants (restore.c) */

	/*
	 * The restore's shared budgets, as virtual clocks in microseconds: each
	 * worker moves a clock on by what it spent, and sleeps while the clock
	 * is ahead of real time (see pacer.c).
	 */
	pg_atomic_uint64 rate_clock;	/* bytes read, at max_restore_rate */
	pg_atomic_uint64 cpu_clock;		/* CPU time, while queries are busy */

	/* Whether advice pays, measured by all restore workers together. */
	WarmAdviceShare restore_advice;

	RestoreSlot slots[WC_MAX_RESTORE_WORKERS];

} WarmShared;

extern WarmShared *wc_shared;

extern Size wc_operation_shmem_size(void);
extern void wc_operation_shmem_request(void);
extern void wc_operation_shmem_init(void);
extern void wc_require_shared(void);
extern void wc_status_lock(LWLockMode mode);
extern void wc_status_unlock(void);
extern void wc_note_follow_pass_due(void);
extern bool wc_follow_pass_is_due(void);
extern void wc_wake_worker(void);
extern WarmState wc_operation_state(void);
extern bool wc_begin_operation(WarmState operation, bool wait);
extern bool wc_begin_restore(RestoreSource source);
extern void wc_end_operation(void);
extern double wc_restore_fraction(int64 total);

#endif							/* PG_WARMCACHE_OPERATION_H */
