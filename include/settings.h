/*-------------------------------------------------------------------------
 *
 * settings.h
 *		The module's settings, pg_warmcache.* (settings.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_SETTINGS_H
#define PG_WARMCACHE_SETTINGS_H

/* Each is pg_warmcache.<name without wc_>. */
extern bool wc_autowarm;
extern int	wc_dump_interval;
extern int	wc_restore_mode;		/* a WarmMode */
extern int	wc_restore_workers;
extern int	wc_max_restore_rate;
extern bool wc_restore_yield;
extern int	wc_sort_chunk;
extern bool wc_dump_os_cache;
extern int	wc_follow_primary;		/* a FollowMode */
extern int	wc_max_warm_workers;
extern int	wc_min_parallel_warm_size;
extern int	wc_warm_worker_delay;

extern void wc_define_settings(void);

#endif							/* PG_WARMCACHE_SETTINGS_H */
