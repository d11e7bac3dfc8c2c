/*-------------------------------------------------------------------------
 *
 * channel_table.h
 *		The standby channel's table: finding it, checking it, reading
 *		its rows (channel_table.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel_table.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_TABLE_H
#define PG_WARMCACHE_CHANNEL_TABLE_H

#include "access/genam.h"
#include "access/htup.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "channel_state.h"

/* What looking for the table found. */
typedef enum TableStatus
{
	WC_TABLE_OK,
	WC_TABLE_NONE,				/* no extension, or one older than 1.2 */
	WC_TABLE_LOCKED,			/* *why names what is locked */
	WC_TABLE_REFUSED			/* *why says what is wrong with it */
} TableStatus;

/* The channel's table and its primary key, open and locked. */
typedef struct ChannelTable
{
	Relation	rel;
	Relation	index;
} ChannelTable;

/* The columns the extension made, in order (channel_table.c). */
#define WC_COL_CHUNK	0
#define WC_COL_DUMPED	1
#define WC_COL_DATA		2
#define WC_NCOLS		3

extern TableStatus wc_open_channel_table(LOCKMODE mode, ChannelTable *ct,
										 char **why);
extern void wc_close_channel_table(ChannelTable *ct);
extern int	wc_channel_lock_holder(void);
extern bool wc_channel_row_fields(HeapTuple tuple, TupleDesc desc,
								  int32 *chunk, TimestampTz *dumped_at,
								  Datum *data);
extern SysScanDesc wc_channel_scan_chunks(ChannelTable *ct, bool deltas,
										  int32 from);

#endif							/* PG_WARMCACHE_CHANNEL_TABLE_H */
