/*-------------------------------------------------------------------------
 *
 * channel_key.h
 *		The key that signs the standby channel's rows.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel_key.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_KEY_H
#define PG_WARMCACHE_CHANNEL_KEY_H

#include "pubrow.h"

/* The key file a DBA may write to replace the cluster's own key. */
#define WC_KEY_FILE			"pg_warmcache.key"

/* Where the key came from. */
typedef enum ChannelKeySource
{
	WC_KEY_CLUSTER,				/* derived from pg_control's nonce */
	WC_KEY_FILE_SOURCE,			/* read from WC_KEY_FILE */
} ChannelKeySource;

extern bool wc_channel_key(uint8 *key, ChannelKeySource *source,
						   char **problem);

#endif							/* PG_WARMCACHE_CHANNEL_KEY_H */
