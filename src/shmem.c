/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		The module's shared memory: the sum of what each part asks for,
 *		and the call that lets each part attach to its own.
 *
 * Each part that keeps state in shared memory owns it: it says how much it
 * needs (its _shmem_size()), makes or attaches to it (its _shmem_init()),
 * and other parts reach it only through its functions.  This file, like
 * PostgreSQL's ipci.c, knows nothing of what they keep.  Without
 * preloading nothing is reserved, and the functions that need the state
 * say so (wc_require_shared()).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "channel_state.h"
#include "dump.h"
#include "dumpfile.h"
#include "estimate.h"
#include "operation.h"
#include "parallel_warm.h"
#include "restore_shared.h"
#include "shmem.h"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void wc_shmem_request(void);
static void wc_shmem_startup(void);

/*
 * Reserve the shared state; called from _PG_init while the library is
 * preloaded.
 */
void
wc_reserve_shared(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = wc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = wc_shmem_startup;
}

static void
wc_shmem_request(void)
{
	Size		size = 0;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	size = add_size(size, wc_operation_shmem_size());
	size = add_size(size, wc_dump_shmem_size());
	size = add_size(size, wc_channel_shmem_size());
	size = add_size(size, wc_restore_shmem_size());
	size = add_size(size, wc_estimate_shmem_size());
	size = add_size(size, wc_warm_workers_shmem_size());
	RequestAddinShmemSpace(size);
	wc_operation_shmem_request();
	wc_warm_workers_shmem_request();
}

static void
wc_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	wc_operation_shmem_init();
	wc_dump_shmem_init();
	wc_channel_shmem_init();
	wc_restore_shmem_init();
	wc_estimate_shmem_init();
	wc_warm_workers_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}
