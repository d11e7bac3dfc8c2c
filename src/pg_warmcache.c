/*-------------------------------------------------------------------------
 *
 * pg_warmcache.c
 *		The library's set-up: _PG_init.
 *
 * Every process that loads the library defines the settings (settings.c).
 * Loaded through shared_preload_libraries, the library also reserves its
 * shared memory (shmem.c) and registers the autowarm worker (autowarm.c).
 * Without preloading, or in binary-upgrade mode (pg_upgrade's servers),
 * warm() and warm_table() work, and the functions that need the shared
 * state say that it is missing.  The SQL functions are in
 * sql.c.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pg_warmcache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "autowarm.h"
#include "compat.h"
#include "settings.h"
#include "shmem.h"

WC_MODULE_MAGIC;

void
_PG_init(void)
{
	wc_define_settings();
	if (!process_shared_preload_libraries_in_progress)
		return;

	/*
	 * pg_upgrade runs the old and the new server in binary-upgrade mode
	 * (-b, parsed before shared_preload_libraries are loaded) with their
	 * own configuration: a worker there would overwrite the old cluster's
	 * saved file with a near-empty dump, or restore into a cluster whose
	 * data files are not there yet.  Neither needs pg_warmcache.
	 */
	if (IsBinaryUpgrade)
		return;
	wc_reserve_shared();
	wc_register_autowarm_worker();
}
