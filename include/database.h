/*-------------------------------------------------------------------------
 *
 * database.h
 *		The databases the workers connect to (database.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/database.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_DATABASE_H
#define PG_WARMCACHE_DATABASE_H

extern bool wc_database_wanted(Oid db);
extern Oid	wc_connectable_database(const char *name, bool *exists,
									bool *locked);

#endif							/* PG_WARMCACHE_DATABASE_H */
