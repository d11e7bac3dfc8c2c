/*-------------------------------------------------------------------------
 *
 * channel_publish.h
 *		Publishing the dump file in the channel's table
 *		(channel_publish.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel_publish.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_PUBLISH_H
#define PG_WARMCACHE_CHANNEL_PUBLISH_H

#include "channel_table.h"

extern bool wc_channel_publish_file(ChannelTable *ct);
extern void wc_remove_published_tmp(int code, Datum arg);

#endif							/* PG_WARMCACHE_CHANNEL_PUBLISH_H */
