/*-------------------------------------------------------------------------
 *
 * estimate.h
 *		For the saved set as it stands: how long its restore would take,
 *		and how long its pages would take to come back by themselves
 *		(estimate.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/estimate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_ESTIMATE_H
#define PG_WARMCACHE_ESTIMATE_H

#include "datatype/timestamp.h"

/* A figure that is not known is negative; each basis says why. */
typedef struct WarmEstimate
{
	bool		have_file;		/* a saved file: else only that is said */
	int64		buffer_tier_blocks;
	int64		os_tier_blocks;
	int64		distinct_blocks;	/* both tiers, each block once */
	double		shared_buffers_share;	/* what the restore would fill */
	double		read_mb_per_s;	/* the device's read rate, as timed */
	double		restore_seconds;
	char	   *restore_basis;
	double		random_read_ms; /* one random read of a block, as timed */
	double		natural_seconds;
	char	   *natural_basis;
} WarmEstimate;

extern Size wc_estimate_shmem_size(void);
extern void wc_estimate_shmem_init(void);
extern void wc_estimate_note_restore_rate(TimestampTz started, uint64 bytes,
										  double seconds);
extern void wc_estimate(WarmEstimate *est);

#endif							/* PG_WARMCACHE_ESTIMATE_H */
