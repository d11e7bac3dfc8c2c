/*-------------------------------------------------------------------------
 *
 * dumpfile.h
 *		The dump file pg_warmcache.blocks and the files of its format:
 *		writing, checking and reading them (dumpfile.c).
 *
 * The format itself is format.h's.
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

#include "format.h"
#include "runcodec.h"

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

extern FILE *wc_open_for_writing(const char *path);
extern uint64 wc_saved_blocks_limit(void);
extern DumpFileStatus wc_check_file(const char *path, WarmFileHeader *hdr,
									char **problem);
extern void wc_set_aside_bad_file(const char *path, const char *problem,
								  int elevel);
extern DumpFileStatus wc_check_import(const char *path, WarmFileHeader *hdr,
									  char **problem);
extern void wc_set_aside_bad_import(const char *path, const char *problem);
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
extern void wc_writer_begin(RunWriter *w, const char *path);
extern void wc_writer_finish(RunWriter *w, TimestampTz dumped_at,
							 WarmFileHeader *hdr);
extern void wc_writer_header(RunWriter *w, TimestampTz dumped_at,
							 WarmFileHeader *hdr);
extern void wc_writer_abandon(RunWriter *w);
extern char *wc_check_claims(const WarmFileHeader *hdr);

#endif							/* PG_WARMCACHE_DUMPFILE_H */
