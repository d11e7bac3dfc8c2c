/*-------------------------------------------------------------------------
 *
 * dump.h
 *		Taking a dump, and the last dump's figures (dump.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/dump.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_DUMP_H
#define PG_WARMCACHE_DUMP_H

#include "dumpfile.h"

/* The last dump of this start, or the saved file a restore found. */
typedef struct DumpStatus
{
	TimestampTz last_dump_at;	/* or 0: none known */
	int64		last_dump_blocks;
	double		last_dump_seconds;	/* or -1: not known */
	uint64		dumps;			/* written since the start */
} DumpStatus;

/* What wc_dump() returns when it wrote no file */
#define WC_DUMP_KEPT		(-1)	/* the saved file holds more: kept */
#define WC_DUMP_STOPPED		(-2)	/* stopped for a shutdown request */

extern Size wc_dump_shmem_size(void);
extern void wc_dump_shmem_init(void);
extern void wc_dump_status(DumpStatus *status);
extern void wc_note_saved_dump(const WarmFileHeader *hdr);
extern int64 wc_dump(bool shutdown, int64 min_blocks);

#endif							/* PG_WARMCACHE_DUMP_H */
