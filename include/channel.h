/*-------------------------------------------------------------------------
 *
 * channel.h
 *		The standby channel: a primary publishes its dump file in a table
 *		of its database postgres, and a standby that follows it reads the
 *		table back into a file of its own.  channel.c starts the workers
 *		that do it (channel_publish.c, channel_follow.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/channel.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_CHANNEL_H
#define PG_WARMCACHE_CHANNEL_H

/* Called by the autowarm worker. */
extern void wc_publish(void);
extern bool wc_fetch_followed(void);

/* The entry point of the short-lived worker that reads or writes the table */
extern PGDLLEXPORT void pg_warmcache_channel_main(Datum arg);

#endif							/* PG_WARMCACHE_CHANNEL_H */
