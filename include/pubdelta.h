/*-------------------------------------------------------------------------
 *
 * pubdelta.h
 *		Publication deltas: the blocks a dump added to and removed from the
 *		last publication, and the new file rebuilt from them.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/pubdelta.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_PUBDELTA_H
#define PG_WARMCACHE_PUBDELTA_H

#include "dumpfile.h"

#define WC_DELTA_MAGIC		0x44525757	/* "WWRD" little-endian */
#define WC_DELTA_VERSION	1

/*
 * The header of a delta, followed by the removed runs, then the added
 * runs, each in the dump file's encoding of version 3 (runcodec.c).  All
 * integers in the machine's byte order, as in the dump file.
 */
typedef struct WarmDeltaHeader
{
	uint32		magic;
	uint32		version;
	int64		base_dumped_at; /* the publication it applies to */
	uint64		removed_bytes;
	uint64		added_bytes;
	WarmFileHeader result;		/* the header of the file it makes */
	pg_crc32c	crc;			/* CRC-32C of the removed and added bytes,
								 * then of this header up to crc */
	uint32		reserved;		/* 0 */
} WarmDeltaHeader;

StaticAssertDecl(sizeof(WarmDeltaHeader) == 96,
				 "a delta's header is 96 bytes (docs/design.md)");

extern bytea *wc_delta_build(const char *old_path, const char *new_path,
							 Size max_bytes);
extern bool wc_delta_header(const char *data, Size len, WarmDeltaHeader *hdr,
							char **problem);
extern bool wc_delta_apply(const char *base_path, int n,
						   const char *const *data, const Size *len, int first,
						   const char *out_path, char **problem);

#endif							/* PG_WARMCACHE_PUBDELTA_H */
