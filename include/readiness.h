/*-------------------------------------------------------------------------
 *
 * readiness.h
 *		Whether this server holds what it is warming: one answer for
 *		probes, load balancers and failover managers (readiness.c), which
 *		warmcache_is_warm() and warmcache_wait_warm() give (sql.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/readiness.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_READINESS_H
#define PG_WARMCACHE_READINESS_H

/* What this server holds of its job: see readiness.c for the rules. */
typedef struct Readiness
{
	double		fraction;
	bool		settled;		/* it will not change without a new job */
} Readiness;

extern Readiness wc_readiness(void);
extern double wc_wait_warm(double min_fraction, int32 wait_seconds);
extern void wc_note_waiting(double fraction, double min_fraction);

#endif							/* PG_WARMCACHE_READINESS_H */
