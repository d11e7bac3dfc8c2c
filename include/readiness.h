/*-------------------------------------------------------------------------
 *
 * readiness.h
 *		Whether this server holds what it is warming: one answer for
 *		probes, load balancers and failover managers (readiness.c).
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

#include "postgres.h"

#endif							/* PG_WARMCACHE_READINESS_H */
