/*-------------------------------------------------------------------------
 *
 * relations.h
 *		Per relation fork of the current database: what the saved set,
 *		shared buffers and the OS page cache hold of it (relations.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/relations.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_RELATIONS_H
#define PG_WARMCACHE_RELATIONS_H

#include "utils/hsearch.h"

#include "dumpfile.h"

/* A relation fork's file, as the dump file and buffer tags name it. */
typedef struct CensusKey
{
	Oid			spc;
	RelFileNumber relnumber;
	int32		fork;			/* a ForkNumber */
} CensusKey;

/* What the census found of one relation fork. */
typedef struct CensusEntry
{
	CensusKey	key;			/* the hash key: first */
	Oid			db;				/* 0 for the shared catalogs */
	Oid			relid;			/* its pg_class row, or InvalidOid */
	int64		saved[WC_RANK_SLOTS];	/* saved blocks, by rank slot */
	int64		in_buffers;		/* valid buffers holding its blocks */
	int64		size_blocks;	/* of its segment files; -1: no file */
	int64		in_os_cache;	/* of those, cached by the OS */
} CensusEntry;

extern HTAB *wc_relations_census(void);

#endif							/* PG_WARMCACHE_RELATIONS_H */
