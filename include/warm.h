/*-------------------------------------------------------------------------
 *
 * warm.h
 *		Opening a relation for warm() and warm_table(), and warming a
 *		table with everything a query on it reads (warm.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/warm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_WARM_H
#define PG_WARMCACHE_WARM_H

#include "utils/relcache.h"

#include "engine.h"

extern Relation wc_open_for_warming(Oid relOid, Oid *privOid);
extern void wc_close_for_warming(Relation rel, Oid privOid);
extern uint64 wc_warm_table(Oid relOid, char relkind, WarmMode mode);

#endif							/* PG_WARMCACHE_WARM_H */
