/*-------------------------------------------------------------------------
 *
 * oswalk.c
 *		The OS tier of a dump: which blocks of the cluster's relation files
 *		the OS page cache holds, found by walking the files.
 *
 * Most servers keep the larger part of their working set in the OS page
 * cache, which a host reboot empties too.  A dump therefore also walks the
 * relation files of every database and of the shared catalogs (base/,
 * global/, pg_tblspc/), counts the cached pages of each segment 32 MB at a
 * time where the kernel has such a count, maps read-only only a segment
 * cached in part, asks mincore() which of its pages are resident (both
 * through oscache.c), and hands the runs of resident blocks to the dump.
 * A block counts when all of its OS pages are resident.
 *
 * Nothing here takes a lock or reads a page: the mapping is never touched,
 * so a file dropped or truncated meanwhile is at worst a run that the
 * restore skips as gone.  Memory is one residency vector of WC_OS_SCAN_SPAN
 * blocks (8 kB, and 4 kB of flags), whatever the size of the database.
 * Temporary relations and init forks are left out, and unlogged relations
 * (those with an init fork) unless asked for, as the buffer tier does.
 * The blocks also in shared buffers are not taken out: the restore finds
 * them in the page cache, at no I/O cost.  While queries keep every CPU
 * busy a dump's walk keeps to the restore's CPU budget; a backend's walk
 * for warmcache_relations() does not, since it is the caller's own query.
 *
 * The walk's time grows with the cluster's files, so it has bounds.  A
 * periodic dump's walk stops at the autowarm worker's shutdown request
 * (the dump is then abandoned: the shutdown dump follows at once).  The
 * shutdown dump's walk runs after that request by design; it stops after
 * WC_SHUTDOWN_WALK_MS, or at a second stop request (one that comes a
 * second or more after the first: worker.c), and the
 * dump keeps what it found until then, so that a fast shutdown of a huge
 * cluster is not held up without bound.  Any walk ends the process when the postmaster dies.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/oswalk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_tablespace_d.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "oscache.h"
#include "oswalk.h"
#include "settings.h"
#include "worker.h"
#include "workload.h"

/*
 * Blocks of a segment one count of cached pages or one mincore() call asks
 * about: 32 MB of file, a vector of 8 kB (4 kB pages), so that a 1 GB
 * segment takes 32 calls.
 */
#define WC_OS_SCAN_SPAN		4096

/* CPU the walk spends between two looks at the queries, in microseconds */
#define WC_SCAN_SLICE_US	5000

/*
 * Work between two readings of the process's CPU time: files, and spans of
 * WC_OS_SCAN_SPAN blocks.  Reading it is a system call that sums the
 * process's threads, an eighth of the walk's CPU when it came after each
 * file of one block; 16 such files take about 0.2 ms, well inside a slice,
 * and a 1 GB segment still counts 33.
 */
#define WC_SCAN_WORK_PER_LOOK	16

/*
 * The longest the shutdown dump walks the relation files, in ms.  A fast
 * shutdown waits for the autowarm worker before its checkpoint, and pg_ctl
 * gives up waiting after 60 s by default.
 */
#define WC_SHUTDOWN_WALK_MS	10000

/* What a scan of the relation files needs at hand. */
typedef struct OsScan
{
	bool		shutdown;		/* the shutdown dump's walk */
	bool		unpaced;		/* no CPU budget: a caller's own query */
	bool		include_unlogged;
	bool		stopped;		/* cut short: see walk_stopped() */
	TimestampTz started;
	OsRunCallback emit;
	void	   *arg;
	Oid			db;				/* wc_scan_database_files()'s database */
	char	   *map;			/* the segment mapped, or NULL */
	Size		map_len;
	unsigned char *vec;			/* mincore()'s vector for WC_OS_SCAN_SPAN */
	bool	   *resident;		/* per block of that span */
	int64		cpu_at;			/* CPU time when the scan last yielded */
	int			work;			/* since CPU time was last read */
} OsScan;

/*
 * Parse a relation file name: "<relnumber>[_<fork>][.<segno>]".  Returns
 * false for anything else (temporary relations, other files).
 */
static bool
parse_relation_file(const char *name, RelFileNumber *relnumber,
					ForkNumber *fork, uint64 *segno)
{
	const char *p = name;
	uint64		num = 0;

	if (!isdigit((unsigned char) *p))
		return false;
	while (isdigit((unsigned char) *p))
	{
		num = num * 10 + (*p++ - '0');
		if (num > PG_UINT32_MAX)
			return false;		/* no relation file number: a stray file */
	}
	*relnumber = (RelFileNumber) num;
	*fork = MAIN_FORKNUM;
	*segno = 0;
	if (*p == '_')
	{
		int			len = 0;

		p++;
		while (p[len] != '\0' && p[len] != '.')
			len++;
		if (len == 3 && strncmp(p, "fsm", 3) == 0)
			*fork = FSM_FORKNUM;
		else if (len == 2 && strncmp(p, "vm", 2) == 0)
			*fork = VISIBILITYMAP_FORKNUM;
		else if (len == 4 && strncmp(p, "init", 4) == 0)
			*fork = INIT_FORKNUM;
		else
			return false;
		p += len;
	}
	if (*p == '.')
	{
		num = 0;
		p++;
		if (!isdigit((unsigned char) *p))
			return false;
		while (isdigit((unsigned char) *p))
		{
			num = num * 10 + (*p++ - '0');
			if (num > PG_UINT32_MAX)
				return false;
		}
		*segno = num;
	}
	return *p == '\0';
}

/* Does the relation have an init fork, that is, is it unlogged? */
static bool
is_unlogged(const char *dir, RelFileNumber relnumber)
{
	char		path[MAXPGPATH];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%u_init", dir, relnumber);
	return stat(path, &st) == 0;
}

/*
 * The runs of blocks of an open segment that the page cache holds, handed
 * to emit but for the last, which is left in *run.  The count of cached
 * pages (wc_count_cached_pages()) goes first, span by span; from the first
 * span cached in part, the segment is mapped (scan->map) and asked page by
 * page.
 */
static void
scan_segment_spans(OsScan *scan, int fd, WarmRun *run, BlockNumber first_block,
				   BlockNumber nblocks)
{
	Size		len = (Size) nblocks * BLCKSZ;
	bool		counting = true;
	BlockNumber off;

	for (off = 0; off < nblocks; off += WC_OS_SCAN_SPAN)
	{
		BlockNumber n = Min(nblocks - off, WC_OS_SCAN_SPAN);
		BlockNumber b;

		if (counting)
		{
			switch (wc_count_cached_pages(fd, (Size) off * BLCKSZ,
										  (Size) n * BLCKSZ))
			{
				case WC_SEGMENT_NONE:
					if (run->count > 0)
						scan->emit(scan->arg, run);
					run->count = 0;
					continue;
				case WC_SEGMENT_ALL:
					if (run->count == 0)
						run->start = first_block + off;
					run->count += n;
					continue;
				case WC_SEGMENT_SOME:
					counting = false;
					break;
			}
		}
		if (scan->map == NULL)
		{
			char	   *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

			if (map == MAP_FAILED)
				break;
			scan->map = map;
			scan->map_len = len;
		}
		if (!wc_block_residency(scan->map, off, n, scan->vec, scan->resident))
			break;
		for (b = 0; b < n; b++)
		{
			if (scan->resident[b])
			{
				if (run->count == 0)
					run->start = first_block + off + b;
				run->count++;
				continue;
			}
			if (run->count > 0)
				scan->emit(scan->arg, run);
			run->count = 0;
		}
	}
}

/*
 * Hand the runs of cached blocks of one segment file to the callback.
 *
 * Span by span, the count of cached pages answers first: a span cached
 * whole extends the current run, one not cached at all ends it.  At the
 * first span cached in part the segment is mapped, and that span and the
 * rest of the segment are asked page by page: residency scattered in one
 * span is mostly scattered in the next, where the count would only add
 * its own walk of the pages to mincore()'s (a quarter more CPU for a
 * gigabyte cached every other 64 kB, measured).
 */
static void
scan_segment(OsScan *scan, const char *path, const WarmRun *key,
			 BlockNumber first_block)
{
	int			fd;
	struct stat st;
	BlockNumber nblocks;
	WarmRun		run = *key;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return;					/* dropped meanwhile */
	if (fstat(fd, &st) != 0)
	{
		CloseTransientFile(fd);
		return;
	}
	run.start = first_block;
	run.count = 0;
	if (st.st_size < BLCKSZ)
	{
		CloseTransientFile(fd);
		return;
	}
	/*
	 * A segment holds at most RELSEG_SIZE blocks, and none past the largest
	 * block number: a stray file, such as a large last segment, or a
	 * segment number past the largest relation, names no block beyond it
	 * (first_block + nblocks computed in 64 bits).
	 */
	nblocks = (BlockNumber) Min(Min((uint64) st.st_size / BLCKSZ,
									(uint64) RELSEG_SIZE),
								(uint64) MaxBlockNumber + 1 - first_block);

	/*
	 * The callbacks may raise an error (out of memory, say) while the
	 * segment is mapped, and the dump's process lives on after one: the
	 * mapping must not outlive it.  The file closes with the transaction.
	 */
	PG_TRY();
	{
		scan_segment_spans(scan, fd, &run, first_block, nblocks);
	}
	PG_FINALLY();
	{
		if (scan->map != NULL)
			munmap(scan->map, scan->map_len);
		scan->map = NULL;
	}
	PG_END_TRY();
	CloseTransientFile(fd);
	scan->work += nblocks / WC_OS_SCAN_SPAN;
	if (run.count > 0)
		scan->emit(scan->arg, &run);
}

/*
 * While queries keep every CPU busy, the walk takes at most
 * WC_BUSY_CPU_PERCENT of a core, as the restore does: after each
 * WC_SCAN_SLICE_US of CPU it sleeps for as long as that share asks.  Idle,
 * or at shutdown, it runs.  Called after each file; the CPU time is read
 * after every WC_SCAN_WORK_PER_LOOK of work.
 */
static void
yield_cpu(OsScan *scan)
{
	int64		spent;
	bool		reading;
	bool		on_cpu;
	long		ms;

	if (++scan->work < WC_SCAN_WORK_PER_LOOK || scan->shutdown ||
		scan->unpaced)
		return;
	scan->work = 0;
	spent = wc_cpu_time_us() - scan->cpu_at;
	if (spent < WC_SCAN_SLICE_US)
		return;
	wc_look_at_backends(&reading, &on_cpu);
	ms = (long) (spent * (100 - WC_BUSY_CPU_PERCENT) / WC_BUSY_CPU_PERCENT / 1000);
	while (on_cpu && ms > 0 && !ShutdownRequestPending)
	{
		long		slice = Min(ms, 100);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 slice, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		ms -= slice;
	}
	scan->cpu_at = wc_cpu_time_us();
}

/*
 * Whether the walk is to stop before its end (see the file's header):
 * looked at before each file.  A shutdown request is the autowarm
 * worker's (SIGTERM); the shutdown dump runs after one, so there only a
 * second one counts.  In a backend, whose SIGTERM is a FATAL at the next
 * CHECK_FOR_INTERRUPTS(), neither comes.
 */
static bool
walk_stopped(OsScan *scan)
{
	if (scan->stopped)
		return true;
	CHECK_FOR_INTERRUPTS();
	if (!PostmasterIsAlive())
	{
		if (MyBackendType == B_BG_WORKER)
			proc_exit(1);		/* the dump's exit callback removes its files */
		ereport(FATAL,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("terminating connection due to unexpected postmaster exit")));
	}
	if (scan->shutdown ? wc_second_request : ShutdownRequestPending)
		scan->stopped = true;
	else if (scan->shutdown &&
			 TimestampDifferenceExceeds(scan->started, GetCurrentTimestamp(),
										WC_SHUTDOWN_WALK_MS))
		scan->stopped = true;
	if (scan->stopped && scan->shutdown)
		ereport(LOG,
				(errmsg("the shutdown dump stopped walking the relation files for the OS page cache"),
				 wc_second_request ?
				 errdetail("A second shutdown request came. The dump's OS tier holds the blocks found until then.") :
				 errdetail("The walk reached its limit of %d s. The dump's OS tier holds the blocks found until then.",
						   WC_SHUTDOWN_WALK_MS / 1000)));
	else if (scan->stopped)
		elog(DEBUG1, "a dump was abandoned for a shutdown request");
	return scan->stopped;
}

/*
 * Scan the relation files of one directory: db and spc name what it holds.
 */
static void
scan_directory(OsScan *scan, const char *dir, Oid db, Oid spc)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while (!walk_stopped(scan) && (de = ReadDirExtended(d, dir, LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		WarmRun		key;
		RelFileNumber relnumber;
		ForkNumber	fork;
		uint64		segno;

		/*
		 * The largest relation has (MaxBlockNumber + 1) / RELSEG_SIZE
		 * segments, rounded up: a file numbered past them holds no block a
		 * relation can have, and is left out.
		 */
		if (!parse_relation_file(de->d_name, &relnumber, &fork, &segno) ||
			fork == INIT_FORKNUM ||
			segno * RELSEG_SIZE > (uint64) MaxBlockNumber)
			continue;
		if (!scan->include_unlogged && is_unlogged(dir, relnumber))
			continue;
		memset(&key, 0, sizeof(key));
		key.rank = WC_RANK_OS;
		key.db = db;
		key.spc = spc;
		key.relnumber = relnumber;
		key.fork = (uint32) fork;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		scan_segment(scan, path, &key, (BlockNumber) (segno * RELSEG_SIZE));
		yield_cpu(scan);
	}
	FreeDir(d);
}

/* What for_each_oid_entry() does with each entry: path, its OID, spc. */
typedef void (*OidEntryFn) (OsScan *scan, const char *path, Oid oid, Oid spc);

/*
 * Call fn for each entry of dir whose name is an OID, with the path of the
 * entry (and below it, if given).
 */
static void
for_each_oid_entry(OsScan *scan, const char *dir, const char *below, Oid spc,
				   OidEntryFn fn)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while (!walk_stopped(scan) && (de = ReadDirExtended(d, dir, LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		Oid			oid = (Oid) strtoul(de->d_name, NULL, 10);

		if (!isdigit((unsigned char) de->d_name[0]) || !OidIsValid(oid))
			continue;
		snprintf(path, sizeof(path), "%s/%s%s%s", dir, de->d_name,
				 below ? "/" : "", below ? below : "");
		fn(scan, path, oid, spc);
	}
	FreeDir(d);
}

/* A database directory: base/<db>, or a tablespace's. */
static void
scan_database(OsScan *scan, const char *path, Oid db, Oid spc)
{
	scan_directory(scan, path, db, spc);
}

/* A tablespace: the database directories below its version directory. */
static void
scan_tablespace(OsScan *scan, const char *path, Oid spc, Oid unused)
{
	for_each_oid_entry(scan, path, NULL, spc, scan_database);
}

/* A tablespace's directory of wc_scan_database_files()'s database. */
static void
scan_database_in_tablespace(OsScan *scan, const char *path, Oid spc,
							Oid unused)
{
	scan_directory(scan, path, scan->db, spc);
}

/*
 * Walk the relation files of database db and of the shared catalogs,
 * unlogged relations' too, and hand the runs of blocks the OS page cache
 * holds to emit.  Without the CPU budget (see the file's header).
 */
void
wc_scan_database_files(Oid db, OsRunCallback emit, void *arg)
{
	OsScan		scan;
	char		below[MAXPGPATH];
	char		dir[MAXPGPATH];

	memset(&scan, 0, sizeof(scan));
	scan.include_unlogged = true;
	scan.started = GetCurrentTimestamp();
	scan.unpaced = true;
	scan.emit = emit;
	scan.arg = arg;
	scan.db = db;
	scan.cpu_at = wc_cpu_time_us();
	scan.vec = palloc(WC_RESIDENCY_VEC(WC_OS_SCAN_SPAN));
	scan.resident = palloc(sizeof(bool) * WC_OS_SCAN_SPAN);

	scan_directory(&scan, "global", InvalidOid, GLOBALTABLESPACE_OID);
	snprintf(dir, sizeof(dir), "base/%u", db);
	scan_directory(&scan, dir, db, DEFAULTTABLESPACE_OID);
	snprintf(below, sizeof(below), "%s/%u", TABLESPACE_VERSION_DIRECTORY, db);
	for_each_oid_entry(&scan, "pg_tblspc", below, InvalidOid,
					   scan_database_in_tablespace);
	pfree(scan.vec);
	pfree(scan.resident);
}

/*
 * Walk the cluster's relation files and hand every run of blocks that the
 * OS page cache holds to emit, as runs of rank WC_RANK_OS, in no
 * particular order.  The shutdown dump's walk (shutdown) includes
 * unlogged relations, runs without the CPU budget and stops after a time
 * limit or at a second shutdown request; another stops at the worker's
 * shutdown request.  Returns whether the walk reached its end.
 */
bool
wc_scan_os_cache(bool shutdown, OsRunCallback emit, void *arg)
{
	OsScan		scan;

	memset(&scan, 0, sizeof(scan));
	scan.shutdown = shutdown;
	scan.include_unlogged = shutdown;
	scan.started = GetCurrentTimestamp();
	scan.emit = emit;
	scan.arg = arg;
	scan.cpu_at = wc_cpu_time_us();
	scan.vec = palloc(WC_RESIDENCY_VEC(WC_OS_SCAN_SPAN));
	scan.resident = palloc(sizeof(bool) * WC_OS_SCAN_SPAN);

	scan_directory(&scan, "global", InvalidOid, GLOBALTABLESPACE_OID);
	for_each_oid_entry(&scan, "base", NULL, DEFAULTTABLESPACE_OID,
					   scan_database);
	for_each_oid_entry(&scan, "pg_tblspc", TABLESPACE_VERSION_DIRECTORY,
					   InvalidOid, scan_tablespace);
	pfree(scan.vec);
	pfree(scan.resident);
	return !scan.stopped;
}
