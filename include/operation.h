/*-------------------------------------------------------------------------
 *
 * operation.h
 *		What the module is doing, a dump or a restore, the requests for
 *		one, and the status lock (operation.c).
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

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

#include "settings.h"

/* What the module is doing; dumps and restores exclude each other. */
typedef enum WarmState
{
	WC_STATE_IDLE,
	WC_STATE_DUMPING,
	WC_STATE_RESTORING
} WarmState;

/* What warmcache_status() and readiness report of it. */
typedef struct OperationStatus
{
	WarmState	state;
	int			worker_pid;		/* the autowarm worker's, or 0 */
	bool		startup_done;	/* the start-up restore was decided */
	bool		restore_requested;
	bool		abort_requested;
	bool		follow_pass_due;
	TimestampTz restore_begun_at;	/* when the last restoring state began */
	TimestampTz restore_retry_at;	/* a restore asked for then, or 0 */
} OperationStatus;

/* What wc_request_restore() found. */
typedef enum RestoreRequest
{
	WC_REQUEST_TAKEN,
	WC_REQUEST_NO_WORKER,		/* the autowarm worker does not run */
	WC_REQUEST_DUMPING,			/* a dump runs */
	WC_REQUEST_RESTORING		/* a restore runs or was asked for */
} RestoreRequest;

extern Size wc_operation_shmem_size(void);
extern void wc_operation_shmem_request(void);
extern void wc_operation_shmem_init(void);
extern void wc_require_shared(void);

/* The status lock, and the status as of one moment under it. */
extern void wc_status_lock(LWLockMode mode);
extern void wc_status_unlock(void);
extern void wc_operation_status(OperationStatus *status);
extern TimestampTz wc_restore_begun_at(void);

/* Dumps and restores: beginning and ending one. */
extern WarmState wc_operation_state(void);
extern bool wc_begin_dump(bool wait);
extern bool wc_restore_is_requested(void);
extern bool wc_begin_requested_restore(WarmMode *mode);
extern bool wc_begin_follow_pass(void);
extern void wc_end_operation(void);
extern bool wc_owns_operation(void);

/* The autowarm worker, and what is asked of it. */
extern bool wc_register_worker(bool restore_first, WarmMode mode);
extern void wc_forget_worker(void);
extern bool wc_is_autowarm_worker(int pid);
extern void wc_wake_worker(void);
extern RestoreRequest wc_request_restore(WarmMode mode);
extern bool wc_request_abort(void);
extern bool wc_abort_is_requested(void);
extern void wc_set_abort_requested(bool value);
extern void wc_set_restore_retry(TimestampTz at, WarmMode mode);
extern TimestampTz wc_restore_retry_at(void);
extern bool wc_take_restore_retry(void);
extern void wc_note_follow_pass_due(void);
extern bool wc_follow_pass_is_due(void);

#endif							/* PG_WARMCACHE_OPERATION_H */
