/*-------------------------------------------------------------------------
 *
 * pg_warmcache.c
 *		The library's set-up: _PG_init.
 *
 * Every process that loads the library defines the settings (settings.c).
 * Loaded through shared_preload_libraries, the library also reserves its
 * shared memory (shmem.c) and registers the autowarm worker (autowarm.c).
 * Without preloading, warm() and warm_table() work, and the functions that
 * need the shared state say that it is missing.  The SQL functions are in
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
	wc_reserve_shared();
	wc_register_autowarm_worker();
}
