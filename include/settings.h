/*-------------------------------------------------------------------------
 *
 * settings.h
 *		The module's settings, pg_warmcache.* (settings.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_SETTINGS_H
#define PG_WARMCACHE_SETTINGS_H

/* Where warmed blocks go; warm()'s mode argument names them. */
typedef enum WarmMode
{
	WC_MODE_PREFETCH,			/* posix_fadvise(WILLNEED): OS cache, async */
	WC_MODE_READ,				/* read(2) into private memory: OS cache */
	WC_MODE_BUFFER				/* into shared_buffers */
} WarmMode;

/* What a standby keeps of the primary's hot set: pg_warmcache.follow_primary */
typedef enum FollowMode
{
	WC_FOLLOW_OFF,
	WC_FOLLOW_OS,				/* the OS page cache */
	WC_FOLLOW_BUFFER			/* also shared buffers, as far as free */
} FollowMode;

/* The most workers a restore and a warm() may have: the settings' bounds. */
#define WC_MAX_RESTORE_WORKERS 32
#define WC_MAX_WARM_WORKERS 64

/* Each is pg_warmcache.<name without wc_>. */
extern bool wc_autowarm;
extern int	wc_dump_interval;
extern int	wc_restore_mode;		/* a WarmMode */
extern int	wc_restore_workers;
extern int	wc_max_restore_rate;
extern bool wc_restore_yield;
extern int	wc_restore_headroom;
extern int	wc_sort_chunk;
extern bool wc_dump_os_cache;
extern int	wc_follow_primary;		/* a FollowMode */
extern int	wc_max_warm_workers;
extern int	wc_min_parallel_warm_size;
extern int	wc_warm_worker_delay;

/*
 * pg_warmcache.restore_limit: what a restore may put into shared buffers,
 * a share of them or a number of blocks (wc_restore_limit_blocks()), and
 * pg_warmcache.past_restore_limit: what becomes of the rest of the buffer
 * tier.
 */
typedef enum PastLimit
{
	WC_PAST_LIMIT_OS_CACHE,		/* read into the OS cache only */
	WC_PAST_LIMIT_SKIP			/* left out */
} PastLimit;

extern char *wc_restore_limit_string;
extern int	wc_past_restore_limit;	/* a PastLimit */
extern int64 wc_restore_limit_blocks(void);

/*
 * pg_warmcache.platform_shortcuts, a developer option: which direct uses
 * of the operating system the engine and the dump may make, where
 * PostgreSQL's own interfaces would do without them.  Each is on by
 * default; benchmarks turn one off to measure what it gains.
 */
#define WC_SHORTCUT_PREFAULT		0x01	/* prefault buffers' memory */
#define WC_SHORTCUT_CACHESTAT		0x02	/* count cached pages, not map */
#define WC_SHORTCUT_DEVICE_PIECE	0x04	/* reads sized by the device */
#define WC_SHORTCUT_ALL				0x07
extern int	wc_platform_shortcuts;

extern char *wc_platform_shortcuts_string;

extern void wc_define_settings(void);

#endif							/* PG_WARMCACHE_SETTINGS_H */
