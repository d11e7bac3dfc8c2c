/*-------------------------------------------------------------------------
 *
 * operation.c
 *		What the module is doing, a dump or a restore, the state changes
 *		that begin and end one, and the requests for one.
 *
 * Dumps and restores exclude each other: the state says which one runs, a
 * condition variable wakes whoever waits for it to change.  A dump asked
 * for while another runs waits for it; a dump asked for during a restore
 * is refused, because it would replace the saved set with the part
 * restored so far.  Requests go to the autowarm worker, which leads every
 * restore: SQL asks for a restore of the saved file, or for the running
 * one to stop; the restore asks for itself again later, for a database a
 * command kept out; on a standby, the channel notes that a new followed
 * file waits for its pass.  Beginning a restore takes its request, so
 * that no failure leaves one behind that restarts the restore at every
 * start of the worker.
 *
 * The lock of this state is the status lock: it also guards the plain
 * status fields of the other parts (the last dump's in dump.c, the
 * channel's in channel_state.c, the restore's in restore_shared.h), so that
 * warmcache_status() and readiness report all of them as of one moment.
 * Each part writes its fields with it held exclusively, and nothing is
 * held across I/O.  Loops that look at one field to decide whether to go
 * on (a restore worker at abort_requested) read it without, and see a
 * change at their next look.
 *
 * Nothing here calls any other part: every other part that uses this
 * state sits above this one.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/operation.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "operation.h"

/*
 * The operation's shared state.  Every field but cv is written only with
 * lock held exclusively.  status.restore_begun_at is when the restoring
 * state began: a restore started before it is the last one.
 */
typedef struct OperationShared
{
	LWLock	   *lock;			/* the status lock (see above) */
	ConditionVariable cv;		/* signalled on every state change */
	OperationStatus status;		/* what is reported (operation.h) */
	int			owner_pid;		/* process that began the dump or restore */
	Latch	   *worker_latch;	/* the autowarm worker's */
	WarmMode	request_mode;	/* of status.restore_requested */
	WarmMode	restore_retry_mode; /* of status.restore_retry_at */
} OperationShared;

static OperationShared *op = NULL;

/* The shared memory of this state, and its lock (shmem.c). */
Size
wc_operation_shmem_size(void)
{
	return MAXALIGN(sizeof(OperationShared));
}

void
wc_operation_shmem_request(void)
{
	RequestNamedLWLockTranche("pg_warmcache", 1);
}

/* Attach to this state, making it at the first start (shmem.c). */
void
wc_operation_shmem_init(void)
{
	bool		found;

	op = ShmemInitStruct("pg_warmcache", sizeof(OperationShared), &found);
	if (!found)
	{
		memset(op, 0, sizeof(OperationShared));
		op->lock = &(GetNamedLWLockTranche("pg_warmcache"))->lock;
		ConditionVariableInit(&op->cv);
		op->status.state = WC_STATE_IDLE;
	}
}

/*
 * Functions that need the shared state call this first.
 */
void
wc_require_shared(void)
{
	if (op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_warmcache must be loaded via \"shared_preload_libraries\""),
				 errhint("Add pg_warmcache to \"shared_preload_libraries\" and restart the server.")));
}

/*---- The status lock ----*/

void
wc_status_lock(LWLockMode mode)
{
	LWLockAcquire(op->lock, mode);
}

void
wc_status_unlock(void)
{
	LWLockRelease(op->lock);
}

/* This state as of one moment; the status lock is held. */
void
wc_operation_status(OperationStatus *status)
{
	*status = op->status;
}

/* This state as of one moment, taking the status lock for it. */
static OperationStatus
read_status(void)
{
	OperationStatus status;

	LWLockAcquire(op->lock, LW_SHARED);
	status = op->status;
	LWLockRelease(op->lock);
	return status;
}

/* When the last restoring state began; the status lock is held. */
TimestampTz
wc_restore_begun_at(void)
{
	return op->status.restore_begun_at;
}

/*---- Dumps and restores ----*/

/* What the module is doing now. */
WarmState
wc_operation_state(void)
{
	return read_status().state;
}

/*
 * Begin a dump or a restore: the only way out of the idle state.  A dump
 * begins only if no restore is running or requested (it would replace the
 * saved set with the part restored so far); with wait, it waits for
 * another dump to end instead of giving up.  A restore, which the autowarm
 * worker begins on a request, only needs the idle state.  take_request
 * clears a request for a restore of the saved file, take_follow a pass due
 * over a new followed file: from then on the state says it.  Returns
 * whether the operation began; its process then owns it until
 * wc_end_operation().
 */
static bool
begin_operation(WarmState operation, bool wait, bool take_request,
				bool take_follow, WarmMode *mode)
{
	bool		begun = false;

	Assert(operation != WC_STATE_IDLE);
	for (;;)
	{
		WarmState	cur;

		LWLockAcquire(op->lock, LW_EXCLUSIVE);
		cur = op->status.state;
		if (cur == WC_STATE_IDLE &&
			(operation == WC_STATE_RESTORING || !op->status.restore_requested))
		{
			op->status.state = operation;
			op->owner_pid = MyProcPid;
			if (operation == WC_STATE_RESTORING)
				op->status.restore_begun_at = GetCurrentTimestamp();
			if (take_request)
			{
				op->status.restore_requested = false;	/* taken on */
				*mode = op->request_mode;
			}
			if (take_follow)
				op->status.follow_pass_due = false;
			begun = true;
		}
		LWLockRelease(op->lock);

		if (begun || !wait || cur != WC_STATE_DUMPING ||
			operation != WC_STATE_DUMPING)
			break;
		ConditionVariableSleep(&op->cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return begun;
}

/*
 * Begin a dump, unless a restore runs or was asked for; with wait, after
 * another dump that runs.
 */
bool
wc_begin_dump(bool wait)
{
	return begin_operation(WC_STATE_DUMPING, wait, false, false, NULL);
}

/* Whether a restore of the saved file was asked for. */
bool
wc_restore_is_requested(void)
{
	return read_status().restore_requested;
}

/*
 * Begin the restore of the saved file that was asked for, taking on the
 * request; *mode is the mode it asked for.  False if a dump runs.
 */
bool
wc_begin_requested_restore(WarmMode *mode)
{
	return begin_operation(WC_STATE_RESTORING, false, true, false, mode);
}

/*
 * Begin a standby's pass over the followed set, or the load at promotion,
 * taking on the pass due over a new followed file; a request for a
 * restore of the saved file is left for the next turn of the worker's
 * loop.  False if a dump runs.
 */
bool
wc_begin_follow_pass(void)
{
	return begin_operation(WC_STATE_RESTORING, false, false, true, NULL);
}

/*
 * End the dump or restore this process began: back to idle, and wake
 * whoever waits for the state to change.
 */
void
wc_end_operation(void)
{
	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	Assert(op->owner_pid == MyProcPid);
	op->status.state = WC_STATE_IDLE;
	op->owner_pid = 0;
	LWLockRelease(op->lock);
	ConditionVariableBroadcast(&op->cv);
}

/* Whether this process began the dump or restore that runs. */
bool
wc_owns_operation(void)
{
	bool		owner;

	LWLockAcquire(op->lock, LW_SHARED);
	owner = op->status.state != WC_STATE_IDLE && op->owner_pid == MyProcPid;
	LWLockRelease(op->lock);
	return owner;
}

/*---- The autowarm worker, and what is asked of it ----*/

/*
 * The autowarm worker has started: requests reach it through its latch.
 * At its first start since the server's (the start-up restore is decided
 * once), with restore_first, it asks itself for a restore of the saved
 * file in mode, in the same update, so that readiness never sees the
 * start decided and no restore asked for.  Returns whether it did.
 */
bool
wc_register_worker(bool restore_first, WarmMode mode)
{
	bool		first;

	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	op->status.worker_pid = MyProcPid;
	op->worker_latch = MyLatch;
	first = !op->status.startup_done;
	op->status.startup_done = true;
	if (first && restore_first)
	{
		op->status.restore_requested = true;
		op->request_mode = mode;
	}
	LWLockRelease(op->lock);
	return first && restore_first;
}

/* The autowarm worker exits: nothing can reach it any more. */
void
wc_forget_worker(void)
{
	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	op->status.worker_pid = 0;
	op->worker_latch = NULL;
	LWLockRelease(op->lock);
}

/*
 * Whether pid is the autowarm worker's (workload.c).  Read without the
 * lock: a worker that starts or ends meanwhile is seen at the next look.
 */
bool
wc_is_autowarm_worker(int pid)
{
	return pid != 0 && pid == op->status.worker_pid;
}

/* Wake the autowarm worker, if it runs and is not this process. */
void
wc_wake_worker(void)
{
	Latch	   *latch;

	LWLockAcquire(op->lock, LW_SHARED);
	latch = op->worker_latch;
	LWLockRelease(op->lock);
	if (latch && latch != MyLatch)
		SetLatch(latch);
}

/*
 * Ask the autowarm worker for a restore of the saved file in mode, unless
 * it does not run or a dump or a restore runs or was asked for.
 */
RestoreRequest
wc_request_restore(WarmMode mode)
{
	RestoreRequest result = WC_REQUEST_TAKEN;

	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	if (op->status.worker_pid == 0 || op->worker_latch == NULL)
		result = WC_REQUEST_NO_WORKER;
	else if (op->status.state == WC_STATE_DUMPING)
		result = WC_REQUEST_DUMPING;
	else if (op->status.state != WC_STATE_IDLE || op->status.restore_requested)
		result = WC_REQUEST_RESTORING;
	else
	{
		op->status.restore_requested = true;
		op->request_mode = mode;
		SetLatch(op->worker_latch);
	}
	LWLockRelease(op->lock);
	return result;
}

/*
 * Ask the restore that runs, or was asked for, to stop; false if there is
 * none.
 */
bool
wc_request_abort(void)
{
	bool		running;

	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	running = op->status.state == WC_STATE_RESTORING || op->status.restore_requested;
	if (running)
	{
		op->status.abort_requested = true;
		if (op->worker_latch)
			SetLatch(op->worker_latch);
	}
	LWLockRelease(op->lock);
	return running;
}

/*
 * Whether the restore is asked to stop: read without the lock, by the
 * restore's workers between two chunks and by its leader at each turn.
 */
bool
wc_abort_is_requested(void)
{
	return op->status.abort_requested;
}

/*
 * Set or clear the request to stop (restore.c): set to tell the workers
 * that the restore stops, cleared as it ends, since one left set would
 * stop the next restore at once.  The status lock is held exclusively.
 */
void
wc_set_abort_requested(bool value)
{
	Assert(LWLockHeldByMeInMode(op->lock, LW_EXCLUSIVE));
	op->status.abort_requested = value;
}

/*
 * The restore asks for the saved file to be restored again at the given
 * time, in mode (or, with at 0, no more): for a database a command kept
 * out of it (restore.c).  The status lock is held exclusively.
 */
void
wc_set_restore_retry(TimestampTz at, WarmMode mode)
{
	Assert(LWLockHeldByMeInMode(op->lock, LW_EXCLUSIVE));
	op->status.restore_retry_at = at;
	op->restore_retry_mode = mode;
}

/* When the saved file is to be restored again, or 0. */
TimestampTz
wc_restore_retry_at(void)
{
	return read_status().restore_retry_at;
}

/*
 * The time to restore the saved file again has come (autowarm.c): that
 * becomes a request, unless a restore was asked for already.  Returns
 * whether it did.
 */
bool
wc_take_restore_retry(void)
{
	bool		asked;

	LWLockAcquire(op->lock, LW_EXCLUSIVE);
	op->status.restore_retry_at = 0;
	asked = !op->status.restore_requested;
	if (asked)
	{
		op->status.restore_requested = true;
		op->request_mode = op->restore_retry_mode;
	}
	LWLockRelease(op->lock);
	return asked;
}

/*
 * On a following standby, a new followed file waits for its pass: noted by
 * the channel in the same update, under the status lock held exclusively,
 * that names the new file, and taken on when the pass begins
 * (wc_begin_follow_pass()).
 */
void
wc_note_follow_pass_due(void)
{
	Assert(LWLockHeldByMeInMode(op->lock, LW_EXCLUSIVE));
	op->status.follow_pass_due = true;
}

/* Whether a new followed file waits for its pass. */
bool
wc_follow_pass_is_due(void)
{
	return read_status().follow_pass_due;
}
