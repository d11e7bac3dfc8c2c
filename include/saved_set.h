/*-------------------------------------------------------------------------
 *
 * saved_set.h
 *		The saved set's size per tier (saved_set.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/saved_set.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_SAVED_SET_H
#define PG_WARMCACHE_SAVED_SET_H

extern void wc_sum_saved_tiers(int64 *buffer_tier, int64 *os_tier,
							   bool *found);
extern int64 wc_count_distinct_saved(void);

#endif							/* PG_WARMCACHE_SAVED_SET_H */
