/*-------------------------------------------------------------------------
 *
 * pg_warmcache.h
 *		Declarations shared by the pg_warmcache source files.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		include/pg_warmcache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARMCACHE_H
#define PG_WARMCACHE_H

#include "postgres.h"

#include "compat.h"
#include "port/atomics.h"
#include "port/pg_crc32c.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

/*---- Warming modes, shared by warm() and the restore ----*/

typedef enum WarmMode
{
	WARM_PREFETCH,				/* posix_fadvise(WILLNEED): OS cache, async */
	WARM_READ,					/* read(2) into private memory: OS cache */
	WARM_BUFFER					/* into shared_buffers */
} WarmMode;

extern WarmMode wc_parse_mode(const char *name);
extern const char *wc_mode_name(WarmMode mode);

/* A run of consecutive blocks of one relation fork. */
typedef struct WarmRange
{
	BlockNumber start;
	BlockNumber count;
} WarmRange;

/*
 * Pacing of a warming loop.  The engine calls pace() before each I/O chunk
 * with the blocks it finished since the previous call, those now in shared
 * buffers and those only in the OS cache; pace() may sleep, shrink or grow
 * the look-ahead window, or ask the engine to stop.  warm() passes no
 * pacer and runs at full speed.
 */
typedef struct WarmPacer WarmPacer;
struct WarmPacer
{
	void		(*pace) (WarmPacer *pacer, uint64 in_buffers, uint64 os_only);
	int			io_blocks;		/* blocks per chunk; 0 = the engine's 32 */
	int			window;			/* advice beyond the chunk, in blocks; 0 =
								 * no advice */
	bool		stop;			/* set by pace(): end the loop now */
	bool		no_evict;		/* buffer mode: never take a used buffer */
	bool		buffers_full;	/* set by the engine when no_evict hit */
};

extern uint64 wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
							 const WarmRange *ranges, int nranges,
							 WarmPacer *pacer);
extern int	wc_default_window(void);

/*---- The dump file ----*/

#define WC_DUMP_FILE		"pg_warmcache.blocks"
#define WC_DUMP_TMP_FILE	"pg_warmcache.blocks.tmp"
#define WC_DUMP_SORT_FILE	"pg_warmcache.blocks.sort"
#define WC_DUMP_BAD_FILE	"pg_warmcache.blocks.corrupt"

#define WC_FILE_MAGIC		0x4D525757	/* "WWRM" little-endian */
#define WC_FILE_VERSION		1
#define WC_MAX_RANK			BM_MAX_USAGE_COUNT

/* On-disk header; all integers in the machine's byte order. */
typedef struct WarmFileHeader
{
	uint32		magic;
	uint32		version;
	uint32		pg_major;		/* PG_VERSION_NUM / 10000 */
	uint32		blcksz;
	uint64		sysid;			/* pg_control system identifier */
	int64		dumped_at;		/* TimestampTz */
	uint64		nblocks;		/* sum of the runs' counts */
	uint64		nruns;
	uint32		flags;			/* reserved, 0 */
	pg_crc32c	crc;			/* CRC-32C of this header up to crc, then
								 * of all run records */
} WarmFileHeader;

/* On-disk run: count consecutive blocks sharing rank and relation fork. */
typedef struct WarmRun
{
	uint32		rank;			/* usage count at dump time, 0..5 */
	Oid			db;				/* 0 for shared catalogs */
	Oid			spc;
	RelFileNumber relnumber;
	uint32		fork;
	BlockNumber start;
	uint32		count;
} WarmRun;

/* Reads a dump file run by run. */
typedef struct WarmFileReader
{
	FILE	   *fp;
	bool		across_xacts;	/* fp is not from AllocateFile() */
	WarmFileHeader hdr;
	uint64		runs_left;
	WarmRun    *buf;
	int			nbuf;
	int			pos;
} WarmFileReader;

/* Result of checking a dump file. */
typedef enum WarmFileStatus
{
	WFS_OK,
	WFS_MISSING,
	WFS_BAD
} WarmFileStatus;

extern int64 wc_dump(bool include_unlogged, int64 min_blocks);
extern WarmFileStatus wc_check_file(WarmFileHeader *hdr, char **problem);
extern void wc_set_aside_bad_file(const char *problem, int elevel);
extern bool wc_reader_open(WarmFileReader *r, bool across_xacts);
extern bool wc_reader_next(WarmFileReader *r, WarmRun *run);
extern void wc_reader_close(WarmFileReader *r);
extern void wc_reader_seek(WarmFileReader *r, uint64 idx, uint64 n);
extern int	wc_run_cmp(const WarmRun *a, const WarmRun *b);
extern int	wc_run_phys_cmp(const WarmRun *a, const WarmRun *b);

/*---- Shared state ----*/

typedef enum WarmState
{
	WC_IDLE,
	WC_DUMPING,
	WC_RESTORING
} WarmState;

#define WC_MAX_RESTORE_WORKERS 32

typedef struct WarmSlot
{
	Oid			db;
	int			pid;
	bool		with_global;	/* also restores shared catalogs (db 0) */
	bool		only_global;	/* restores only shared catalogs */
	int			stripe;			/* this worker's share of the database, */
	int			nstripes;		/* see WC_STRIPE_BLOCKS in worker.c */
	bool		connected;		/* set by the worker once connected */
	pg_atomic_uint64 processed; /* restored + skipped so far, of db */
	pg_atomic_uint64 processed_global;	/* the same, of shared catalogs */
} WarmSlot;

typedef struct WarmShared
{
	LWLock	   *lock;			/* protects the fields below but the atomics */
	ConditionVariable cv;		/* signalled on every state change */

	WarmState	state;
	int			dumping_pid;	/* backend or worker doing the dump */
	int			worker_pid;		/* the autowarm worker */
	Latch	   *worker_latch;
	bool		startup_done;	/* the start-up restore was decided */

	/* last dump */
	TimestampTz last_dump_at;
	int64		last_dump_blocks;
	double		last_dump_seconds;

	/* restore requests, from SQL to the worker */
	bool		restore_requested;
	WarmMode	request_mode;
	bool		abort_requested;

	/* the current or last restore */
	WarmMode	restore_mode;
	bool		restore_incomplete; /* aborted or interrupted */
	TimestampTz restore_started_at;
	TimestampTz restore_finished_at;
	int64		restore_blocks_total;
	pg_atomic_uint64 restore_blocks_done;
	pg_atomic_uint64 restore_blocks_skipped;
	pg_atomic_uint64 restore_blocks_os;	/* of done: OS cache only */

	WarmSlot	slots[WC_MAX_RESTORE_WORKERS];
} WarmShared;

extern WarmShared *wc_shared;

extern void wc_require_shared(void);
extern bool wc_try_begin(WarmState newstate, bool wait);
extern void wc_end(void);
extern bool wc_foreground_reading(void);

/*---- GUCs ----*/

extern bool wc_autowarm;
extern int	wc_dump_interval;
extern int	wc_restore_mode;
extern int	wc_restore_workers;
extern int	wc_max_restore_rate;
extern bool wc_restore_yield;
extern int	wc_sort_chunk;

/*---- Module ----*/

extern void _PG_init(void);

/*---- Workers ----*/

extern PGDLLEXPORT void pg_warmcache_main(Datum arg);
extern PGDLLEXPORT void pg_warmcache_restore_main(Datum arg);
extern void wc_register_main_worker(void);

#endif							/* PG_WARMCACHE_H */
