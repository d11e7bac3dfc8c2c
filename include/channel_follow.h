/*-------------------------------------------------------------------------
 *
 * channel_follow.h
 *		Following the primary's publication (channel_follow.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel_follow.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_FOLLOW_H
#define PG_WARMCACHE_CHANNEL_FOLLOW_H

#include "channel_state.h"
#include "channel_table.h"

extern void wc_channel_fetch_file(ChannelTable *ct, ChannelNotes *notes);

#endif							/* PG_WARMCACHE_CHANNEL_FOLLOW_H */
