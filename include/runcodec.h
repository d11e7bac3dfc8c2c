/*-------------------------------------------------------------------------
 *
 * runcodec.h
 *		The dump file's runs: their order, the checks each run passes, and
 *		their compact encoding (format version 3).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/runcodec.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_RUNCODEC_H
#define PG_WARMCACHE_RUNCODEC_H

#include <stdio.h>

#include "format.h"
#include "lib/stringinfo.h"

/* The longest encoding of one run: a group header and the run itself. */
#define WC_MAX_ENCODED_RUN	(1 + 5 * 5 + 5 + 5)

/* Bytes of a compact file being read, through a buffer. */
#define WC_BYTE_BUF			8192

/* The state the encoding of runs carries from one run to the next. */
typedef struct RunCoder
{
	bool		in_group;		/* key holds the current group's key */
	WarmRun		key;			/* rank and relation fork of the group */
	uint64		prev_end;		/* end of the group's last run */
} RunCoder;

/*
 * Where runs go, in file order: a dump file, the dump's scratch file of
 * fixed-size records, (wc_writer_begin_memory()) bytes in memory, or
 * (wc_writer_begin_counting()) nowhere, only counted.  Runs that touch are
 * merged into one; in the dump file's encoding each run written first
 * passes the reader's checks.
 */
typedef struct RunWriter
{
	FILE	   *fp;
	const char *path;
	StringInfo	mem;			/* if set, the bytes go here, not to fp */
	bool		compact;		/* the dump file's encoding (runcodec.c), not
								 * the scratch file's records */
	RunCoder	coder;
	bool		have;			/* cur holds a run not yet written */
	WarmRun		cur;
	WarmRun		last;			/* the run written last, if nruns > 0 */
	uint64		nruns;
	uint64		nblocks;
	pg_crc32c	crc;
	char	   *problem;		/* why a run in the dump file's encoding
								 * would make it unusable: nothing more is
								 * written (wc_writer_add()) */
} RunWriter;

/* A compact file's bytes, read through a buffer. */
typedef struct ByteSource
{
	FILE	   *fp;
	uint64		offset;			/* file offset of buf[0] */
	uint64		limit;			/* file offset past the last byte to read */
	int			n;				/* bytes in buf */
	int			pos;			/* next byte of buf */
	const uint8 *mem;			/* if set, the bytes are here, not in fp */
	pg_crc32c  *crc;			/* if set, every byte read goes into it */
	uint8		buf[WC_BYTE_BUF];
} ByteSource;

/* What decoding found. */
typedef enum DecodeResult
{
	WC_DECODE_RUN,				/* a run */
	WC_DECODE_END,				/* the end of the bytes, between runs */
	WC_DECODE_CUT,				/* the end of the bytes, within a run */
	WC_DECODE_BAD				/* malformed: *problem says how */
} DecodeResult;

/* Whether two runs are of one rank and relation fork: one group. */
static inline bool
wc_same_group(const WarmRun *a, const WarmRun *b)
{
	return a->rank == b->rank && a->db == b->db && a->spc == b->spc &&
		a->relnumber == b->relnumber && a->fork == b->fork;
}

extern int	wc_run_cmp(const WarmRun *a, const WarmRun *b);
extern int	wc_run_phys_cmp(const WarmRun *a, const WarmRun *b);
extern char *wc_check_run(uint64 i, const WarmRun *run, const WarmRun *prev,
						  uint32 version);
extern int	wc_encode_run(RunCoder *coder, const WarmRun *run, uint8 *out);
extern void wc_byte_source_init(ByteSource *src, FILE *fp, uint64 offset,
								uint64 limit, pg_crc32c *crc);
extern void wc_byte_source_init_memory(ByteSource *src, const uint8 *bytes,
									   uint64 len, pg_crc32c *crc);
extern uint64 wc_byte_source_offset(const ByteSource *src);
extern DecodeResult wc_decode_run(ByteSource *src, RunCoder *coder,
								  WarmRun *run, bool *group_start,
								  const char **problem);
extern void wc_writer_begin_memory(RunWriter *w, StringInfo buf);
extern void wc_writer_begin_counting(RunWriter *w);
extern void wc_writer_add(RunWriter *w, const WarmRun *run);
extern void wc_writer_flush(RunWriter *w);

#endif							/* PG_WARMCACHE_RUNCODEC_H */
