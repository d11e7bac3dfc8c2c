/*-------------------------------------------------------------------------
 *
 * dumpfile.h
 *		The dump file pg_warmcache.blocks: its format, writing it from the
 *		buffer headers, checking it and reading it run by run.
 *
 * The format is described in docs/design.md; the tests read it too
 * (t/WarmCache.pm), so its sizes are asserted below.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/dumpfile.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_DUMPFILE_H
#define PG_WARMCACHE_DUMPFILE_H

#include <stdio.h>

#include "compat.h"
#include "pg_internals.h"
#include "port/pg_crc32c.h"

#define WC_DUMP_FILE		"pg_warmcache.blocks"
#define WC_DUMP_TMP_FILE	"pg_warmcache.blocks.tmp"
#define WC_DUMP_SORT_FILE	"pg_warmcache.blocks.sort"
#define WC_DUMP_BAD_FILE	"pg_warmcache.blocks.corrupt"

/* On a standby: the primary's hot set it follows (channel.c). */
#define WC_FOLLOWED_FILE	"pg_warmcache.followed"
#define WC_FOLLOWED_TMP_FILE "pg_warmcache.followed.tmp"
#define WC_FOLLOWED_PART_FILE "pg_warmcache.followed.part"

/* On a primary: its copy of what it last published (channel.c). */
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

/*
 * Reads a dump file run by run.  A position (wc_reader_position()) is a
 * file offset where reading can resume, at a rank's first run.
 */
typedef struct WarmFileReader
{
	FILE	   *fp;
	const char *path;
	bool		across_xacts;	/* fp is not from AllocateFile() */
	WarmFileHeader hdr;
	uint64		runs_left;
	/* versions 1 and 2: runs of 28 bytes */
	WarmRun    *buf;
	int			nbuf;
	int			pos;
	uint64		next_index;		/* of the next run in the file */
	/* version 3: runcodec.c */
	struct CompactReader *compact;
} WarmFileReader;

/* What checking the dump file found. */
typedef enum DumpFileStatus
{
	WC_FILE_OK,
	WC_FILE_MISSING,
	WC_FILE_BAD
} DumpFileStatus;

/*
 * The runs of several ranks of one file, merged in physical order: each
 * rank's runs are sorted so, and the merge gives a block's runs of every
 * rank one after another (a restore worker's pass, the count of the saved
 * set's distinct blocks).
 */
typedef struct WarmRunMerge
{
	int			n;
	WarmFileReader r[WC_RANK_SLOTS];
	WarmRun		cur[WC_RANK_SLOTS];
	bool		have[WC_RANK_SLOTS];
} WarmRunMerge;

/* What wc_dump() returns when it wrote no file */
#define WC_DUMP_KEPT		(-1)	/* the saved file holds more: kept */
#define WC_DUMP_STOPPED		(-2)	/* stopped for a shutdown request */

extern int64 wc_dump(bool shutdown, int64 min_blocks);
extern uint64 wc_saved_blocks_limit(void);
extern DumpFileStatus wc_check_file(const char *path, WarmFileHeader *hdr,
									char **problem);
extern void wc_set_aside_bad_file(const char *path, const char *problem,
								  int elevel);
extern bool wc_reader_open(WarmFileReader *reader, const char *path,
						   bool across_xacts);
extern bool wc_reader_next(WarmFileReader *reader, WarmRun *run);
extern uint64 wc_reader_position(const WarmFileReader *reader);
extern void wc_reader_seek(WarmFileReader *reader, uint64 position,
						   uint64 n);
extern void wc_reader_close(WarmFileReader *reader);
extern bool wc_merge_add(WarmRunMerge *merge, const char *path,
						 bool across_xacts, uint64 position, uint64 nruns,
						 const WarmFileHeader *expected);
extern bool wc_merge_next(WarmRunMerge *merge, WarmRun *run);
extern void wc_merge_close(WarmRunMerge *merge);
struct RunWriter;
extern void wc_writer_begin(struct RunWriter *w, const char *path);
extern void wc_writer_finish(struct RunWriter *w, TimestampTz dumped_at,
							 WarmFileHeader *hdr);
extern void wc_writer_header(struct RunWriter *w, TimestampTz dumped_at,
							 WarmFileHeader *hdr);
extern void wc_writer_abandon(struct RunWriter *w);
extern char *wc_check_claims(const WarmFileHeader *hdr);

#endif							/* PG_WARMCACHE_DUMPFILE_H */
