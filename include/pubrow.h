/*-------------------------------------------------------------------------
 *
 * pubrow.h
 *		What a row of the channel's table may hold: the checks a standby
 *		applies to the rows it reads, callable without a server.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/pubrow.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PUBROW_H
#define PG_WARMCACHE_PUBROW_H

#include "datatype/timestamp.h"
#include "dumpfile.h"
#include "pubdelta.h"

/* The size of a row's piece of the file, and the most a delta takes. */
#define WC_CHUNK_BYTES		(1024 * 1024)

/*
 * Each row's data ends with its signature: HMAC-SHA256, keyed by the
 * channel's key (channel_key.c), over the row's chunk number, its dump time
 * and the data before it.
 */
#define WC_KEY_BYTES		32
#define WC_SIGNATURE_BYTES	32

/* The chunks of a whole publication read so far, 0, 1, ... */
typedef struct ChunkRows
{
	int32		expect;			/* the next chunk's number */
	TimestampTz first_dumped_at;	/* chunk 0's */
	uint64		min_size;		/* the file's size, as chunk 0's header */
	uint64		size;			/* announces it: between these */
	uint64		bytes;			/* in the chunks so far */
} ChunkRows;

extern bool wc_row_signature(const uint8 *key, int32 chunk,
							 TimestampTz dumped_at, const char *data,
							 uint64 len, uint8 *signature);
extern bool wc_row_unsigned_len(int32 chunk, uint64 row_len, uint64 *len,
								char **problem);
extern bool wc_row_signed(const uint8 *key, int32 chunk, TimestampTz dumped_at,
						  const char *row, uint64 row_len, char **problem);
extern char *wc_size_words(uint64 min_size, uint64 max_size);
extern uint64 wc_announced_size(const WarmFileHeader *hdr, uint64 *min_size,
								char **problem);
extern bool wc_chunk_row_key(ChunkRows *cr, int32 n, TimestampTz dumped_at,
							 uint64 len, char **problem);
extern bool wc_chunk_row_data(ChunkRows *cr, int32 n, TimestampTz dumped_at,
							  const char *data, uint64 len, char **problem);
extern bool wc_chunk_rows_end(const ChunkRows *cr, char **problem);
extern bool wc_delta_row_key(int32 expect, int32 n, TimestampTz row_dumped_at,
							 TimestampTz dumped_at, uint64 len, char **problem);
extern bool wc_delta_row_data(int32 expect, const char *data, uint64 len,
							  TimestampTz row_dumped_at, WarmDeltaHeader *dh,
							  char **problem);

#endif							/* PG_WARMCACHE_PUBROW_H */
