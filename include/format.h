/*-------------------------------------------------------------------------
 *
 * format.h
 *		The dump file's format: its names, its header, its runs and their
 *		ranks.  The files that write and read it (runcodec.c, dumpfile.c,
 *		pubdelta.c) and the tests' own reader (t/WarmCache/DumpFormat.pm)
 *		follow it, and docs/design.md describes it.
 *
 * It is the bottom of the format's layers, with no code of its own, so
 * that the codec below the reader and writer can use its types.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/format.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_FORMAT_H
#define PG_WARMCACHE_FORMAT_H

#include "compat.h"
#include "pg_internals.h"
#include "port/pg_crc32c.h"

#define WC_DUMP_FILE		"pg_warmcache.blocks"
#define WC_DUMP_TMP_FILE	"pg_warmcache.blocks.tmp"
#define WC_DUMP_SORT_FILE	"pg_warmcache.blocks.sort"
#define WC_DUMP_BAD_FILE	"pg_warmcache.blocks.corrupt"

/*
 * The saved file of the cluster this one was upgraded from, copied here by
 * the administrator, restored once at the first start (restore.c).  From
 * 15 on, pg_upgrade keeps relfilenodes and database and tablespace OIDs.
 */
#define WC_IMPORT_FILE		"pg_warmcache.import"
#define WC_IMPORT_MIN_MAJOR	15

/* On a standby: the primary's hot set it follows (channel_follow.c). */
#define WC_FOLLOWED_FILE	"pg_warmcache.followed"
#define WC_FOLLOWED_TMP_FILE "pg_warmcache.followed.tmp"
#define WC_FOLLOWED_PART_FILE "pg_warmcache.followed.part"

/* On a primary: its copy of what it last published (channel_publish.c). */
#define WC_PUBLISHED_FILE	"pg_warmcache.published"
#define WC_PUBLISHED_TMP_FILE "pg_warmcache.published.tmp"

#define WC_DUMP_MAGIC		0x4D525757	/* "WWRM" little-endian */
#define WC_DUMP_VERSION		3	/* 1 (no OS tier) and 2 (runs of 28 bytes)
									 * are still read */
#define WC_MAX_RANK			WC_BUFFER_MAX_USAGE

/*
 * The rank of runs of the OS tier: blocks the OS page cache held, not
 * shared buffers.  They sort after rank 0.
 */
#define WC_RANK_OS			0x100

/* Index of a rank in per-rank arrays: 0..WC_MAX_RANK, then the OS tier. */
#define WC_RANK_SLOT_OS		(WC_MAX_RANK + 1)
#define WC_RANK_SLOTS		(WC_MAX_RANK + 2)
#define wc_rank_slot(rank)	((rank) == WC_RANK_OS ? WC_RANK_SLOT_OS : (int) (rank))

/* On-disk header; all integers in the machine's byte order. */
typedef struct WarmFileHeader
{
	uint32		magic;
	uint32		version;
	uint32		pg_major;		/* PG_VERSION_NUM / 10000 */
	uint32		blcksz;
	uint64		sysid;			/* pg_control system identifier */
	int64		dumped_at;		/* TimestampTz */
	uint64		nblocks;		/* sum of the runs' counts */
	uint64		nruns;
	uint32		flags;			/* reserved, 0 */
	pg_crc32c	crc;			/* CRC-32C of all run records, then of this
								 * header up to crc */
} WarmFileHeader;

/*
 * A run: count consecutive blocks sharing rank and relation fork.  The
 * record of versions 1 and 2 on disk; version 3 encodes it (runcodec.c).
 */
typedef struct WarmRun
{
	uint32		rank;			/* usage count at dump time, 0..5, or
								 * WC_RANK_OS */
	Oid			db;				/* 0 for shared catalogs */
	Oid			spc;
	RelFileNumber relnumber;
	uint32		fork;
	BlockNumber start;
	uint32		count;
} WarmRun;

StaticAssertDecl(sizeof(WarmFileHeader) == 56,
				 "the dump file's header is 56 bytes (docs/design.md)");
StaticAssertDecl(sizeof(WarmRun) == 28,
				 "a run record of the dump file is 28 bytes (docs/design.md)");

#endif							/* PG_WARMCACHE_FORMAT_H */
