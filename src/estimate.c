/*-------------------------------------------------------------------------
 *
 * estimate.c
 *		For warmcache_estimate() (sql.c): how long the restore of the saved
 *		set would take, and how long its pages would take to come back by
 *		themselves, each with the inputs it comes from.
 *
 * The restore reads the saved set sequentially, hottest first, at the
 * device's rate: its time is the set's size over the read rate of this
 * server's last restore of the saved file that read enough from the device
 * (WC_RATE_MIN_BYTES; restore.c reports each), or over a probe's.
 *
 * Without it, queries bring the pages back one miss at a time.  The model
 * is the seed article's: with P pages touched at random, the share cached
 * after i reads of them is 1 - e^(-i/P); each miss is one random read, and
 * 90% of the pages are cached after 0.9 P misses, so the time is 0.9 P
 * times a random read's, one query reading at a time.
 *
 * The probe times both on the saved set's own blocks: up to
 * WC_PROBE_READ_BYTES in the restore's chunks, in file order; then up to
 * WC_PROBE_RANDOM_READS reads of one block each, at blocks drawn at random
 * from the set, the size and call of a backend's miss.  It reads past the
 * OS cache (PG_O_DIRECT), so that it times the device whatever the cache
 * holds (before a planned restart it holds everything) and leaves the
 * cache as it was.  Where the file system refuses that, it reads through
 * the cache the blocks the cache does not hold, and the sequential reads
 * take the restore's look-ahead and half of those blocks, leaving the rest
 * to the random reads.  Each part reads
 * for up to WC_PROBE_PART_MS and counts only what it read after its first
 * WC_PROBE_SETTLE_MS: a volume capped per time slice (a cloud volume, a
 * cgroup's throttle) lets a slice's worth through at once, so a shorter
 * probe times that burst, up to twice the rate a restore or the queries
 * then get.  It reads only
 * blocks a restore would read anyway, and at most once every WC_PROBE_EVERY_S per server: its
 * result is kept in shared memory, so that asking more often makes the
 * server read nothing more.  During a restore it does not run (it would
 * time the two together).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/estimate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "catalog/pg_database.h"
#include "common/pg_prng.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dumpfile.h"
#include "estimate.h"
#include "oscache.h"
#include "saved_set.h"
#include "settings.h"
#include "operation.h"

/* Bytes the probe reads sequentially, at most. */
#define WC_PROBE_READ_BYTES		(128 * 1024 * 1024)

/* Blocks of one sequential read: the restore's chunk, 256 kB. */
#define WC_PROBE_PIECE			32

/* Pieces looked at for the sequential reads, hottest first. */
#define WC_PROBE_PIECE_CANDIDATES	8192

/* Random reads of one block, and the blocks drawn for them. */
#define WC_PROBE_RANDOM_READS	2048
#define WC_PROBE_RANDOM_DRAWN	4096

/* Databases of the saved set the probe looks up, at most. */
#define WC_PROBE_DATABASES		64

/* Pieces advised ahead of the read, at most: files open at once. */
#define WC_PROBE_AHEAD			16

/* A probe's result serves this long; a probe running longer is dead. */
#define WC_PROBE_EVERY_S		600
#define WC_PROBE_STALE_S		60

/*
 * The least a restore of the saved file must read from the device for its
 * rate to time the next one.
 */
#define WC_RATE_MIN_BYTES	((uint64) 64 * 1024 * 1024)

/*
 * What the estimate keeps in shared memory: the read rate of this server's
 * last restore of the saved file that read enough from the device
 * (restore.c reports each, wc_estimate_note_restore_rate()), and the last
 * probe, so that asking more often makes the server read nothing more.
 * The spinlock guards every field; it is held only to copy them, never
 * across I/O or anything that may fail.
 */
typedef struct EstimateShared
{
	slock_t		mutex;
	TimestampTz restore_rate_at;	/* when that restore began, or 0 */
	double		restore_rate_mb_s;
	int64		restore_rate_bytes; /* what it read */
	TimestampTz probe_at;		/* when the last probe began, or 0 */
	TimestampTz probe_running_since;	/* a probe runs (a backend that
										 * exits while it runs leaves it
										 * set: stale after a minute) */
	double		probe_read_mb_s;	/* sequential reads: rate, or -1 */
	int64		probe_read_bytes;
	double		probe_random_ms;	/* random reads: mean time, or -1 */
	int			probe_random_reads;
	bool		probe_direct;	/* it read past the OS cache */
} EstimateShared;

static EstimateShared *estimate_shared = NULL;

/*
 * The longest each part of the probe reads, and how long it reads before
 * it counts: one time slice of a throttle (100 ms), past its burst.  A part
 * that reads less than WC_PROBE_SETTLE_MS after it counts all it read.
 */
#define WC_PROBE_PART_MS		1000
#define WC_PROBE_SETTLE_MS		100

/* A stretch of one relation segment: up to WC_PROBE_PIECE blocks. */
typedef struct ProbePiece
{
	Oid			db;
	Oid			spc;
	RelFileNumber relnumber;
	ForkNumber	fork;
	BlockNumber start;
	int			count;
} ProbePiece;

/* What the probe reads into and asks residency with. */
typedef struct ProbeScratch
{
	bool		direct;			/* read past the OS cache */
	char	   *buf;			/* a piece, aligned for direct reads */
	unsigned char *vec;			/* mincore()'s answer for a piece */
	bool	   *resident;		/* per block of a piece */
} ProbeScratch;

/* What a probe found; negative where it could not time anything. */
typedef struct ProbeResult
{
	double		read_mb_s;
	int64		read_bytes;
	double		random_ms;
	int			random_reads;
	bool		direct;			/* read past the OS cache */
} ProbeResult;

static int
compare_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* The databases draw_probe_blocks() has looked up, and its verdicts. */
typedef struct DatabaseVerdicts
{
	int			n;
	Oid			db[WC_PROBE_DATABASES];
	bool		restorable[WC_PROBE_DATABASES];
} DatabaseVerdicts;

/*
 * Whether a restore would read the database's blocks: the shared catalogs,
 * or a database that exists, allows connections and is no template (as
 * the restore's leader decides, restore.c).  Past WC_PROBE_DATABASES
 * databases looked up, no more are taken.
 */
static bool
database_restorable(DatabaseVerdicts *dbs, Oid db)
{
	HeapTuple	tuple;
	bool		restorable = false;
	int			i;

	if (db == InvalidOid)
		return true;
	for (i = 0; i < dbs->n; i++)
		if (dbs->db[i] == db)
			return dbs->restorable[i];
	if (dbs->n == WC_PROBE_DATABASES)
		return false;
	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(db));
	if (HeapTupleIsValid(tuple))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);

		restorable = !database_is_invalid_form(form) &&
			!form->datistemplate && form->datallowconn;
		ReleaseSysCache(tuple);
	}
	dbs->db[dbs->n] = db;
	dbs->restorable[dbs->n++] = restorable;
	return restorable;
}

/*
 * The probe's blocks, from one pass over the saved file: pieces of the
 * runs in file order (hottest first), and blocks drawn uniformly from all
 * of the set's blocks.  A piece stays within a run and a segment.
 */
static void
draw_probe_blocks(ProbePiece *pieces, int *npieces,
				  ProbePiece *drawn, int *ndrawn)
{
	WarmFileReader r;
	WarmRun		run;
	uint64	   *picks = palloc(sizeof(uint64) * WC_PROBE_RANDOM_DRAWN);
	int			npicks = 0;
	int			next = 0;
	uint64		offset = 0;
	uint64		n = 0;
	DatabaseVerdicts dbs;
	WarmFileHeader checked;
	char	   *problem;

	dbs.n = 0;
	*npieces = *ndrawn = 0;

	/*
	 * Only a file that passes every check causes reads: one of another
	 * cluster, or damaged, is set aside by the next restore, not read here.
	 * One replaced between the check and the open is not read either.
	 */
	if (wc_check_file(WC_DUMP_FILE, &checked, &problem) != WC_FILE_OK ||
		!wc_reader_open(&r, WC_DUMP_FILE, false))
	{
		pfree(picks);
		return;
	}
	if (r.hdr.dumped_at != checked.dumped_at || r.hdr.nruns != checked.nruns ||
		r.hdr.crc != checked.crc)
	{
		wc_reader_close(&r);
		pfree(picks);
		return;
	}
	if (r.hdr.nblocks > 0)
	{
		for (npicks = 0; npicks < WC_PROBE_RANDOM_DRAWN; npicks++)
			picks[npicks] = pg_prng_uint64_range(&pg_global_prng_state, 0,
												 r.hdr.nblocks - 1);
		qsort(picks, npicks, sizeof(uint64), compare_uint64);
	}
	while (wc_reader_next(&r, &run))
	{
		ProbePiece	piece;

		if ((++n & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		/*
		 * The file was checked; only blocks a restore would read: none of a
		 * database it leaves out.
		 */
		if (run.fork > MAX_FORKNUM ||
			(run.rank > WC_MAX_RANK && run.rank != WC_RANK_OS) ||
			!database_restorable(&dbs, run.db))
		{
			while (next < npicks && picks[next] < offset + run.count)
				next++;
			offset += run.count;
			continue;
		}
		piece.db = run.db;
		piece.spc = run.spc;
		piece.relnumber = run.relnumber;
		piece.fork = (ForkNumber) run.fork;
		while (next < npicks && picks[next] < offset + run.count)
		{
			piece.start = run.start + (BlockNumber) (picks[next] - offset);
			piece.count = 1;
			drawn[(*ndrawn)++] = piece;
			next++;
		}
		offset += run.count;
		if (run.count >= WC_PROBE_PIECE / 4)
		{
			BlockNumber b = run.start;
			BlockNumber end = run.start + run.count;

			while (b < end && *npieces < WC_PROBE_PIECE_CANDIDATES)
			{
				BlockNumber to_seg_end = RELSEG_SIZE - b % RELSEG_SIZE;

				piece.start = b;
				piece.count = (int) Min(Min(end - b, WC_PROBE_PIECE), to_seg_end);
				pieces[(*npieces)++] = piece;
				b += piece.count;
			}
		}
	}
	wc_reader_close(&r);
	pfree(picks);
}

/*
 * Open the segment file that holds the piece's blocks, for reads past the
 * OS cache if the scratch says so; -1 if it is gone or does not hold them
 * all.  With check, also -1 unless the OS cache holds none of them
 * (mincore() on a mapping of the file, unmapped before the return, so that
 * no mapping outlives an error).  The caller closes the file: the probe
 * keeps no more than the look-ahead's files open.
 */
static int
open_piece(const ProbePiece *piece, bool check, ProbeScratch *scratch)
{
	char	   *first = wc_relpath_of(piece->db, piece->spc, piece->relnumber,
									  piece->fork);
	BlockNumber segno = piece->start / RELSEG_SIZE;
	char	   *path = segno == 0 ? first : psprintf("%s.%u", first, segno);
	BlockNumber at = piece->start % RELSEG_SIZE;
	struct stat st;
	int			fd;
	bool		uncached = true;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY |
						   (scratch->direct ? PG_O_DIRECT : 0));
	if (path != first)
		pfree(path);
	pfree(first);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 ||
		(uint64) st.st_size < ((uint64) at + piece->count) * BLCKSZ)
	{
		CloseTransientFile(fd);
		return -1;
	}
	if (check)
	{
		size_t		len = (size_t) (at + piece->count) * BLCKSZ;
		char	   *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		int			i;

		if (map == MAP_FAILED)
			uncached = false;
		else
		{
			if (!wc_block_residency(map, at, (BlockNumber) piece->count,
									scratch->vec, scratch->resident))
				uncached = false;
			for (i = 0; uncached && i < piece->count; i++)
				if (scratch->resident[i])
					uncached = false;
			munmap(map, len);
		}
	}
	if (!uncached)
	{
		CloseTransientFile(fd);
		return -1;
	}
	return fd;
}

/* Milliseconds since start. */
static double
ms_since(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * Read single blocks drawn at random (through the cache, only those it
 * does not hold), in random order, one at a time, and time each read; the mean counts the reads begun after the
 * first WC_PROBE_SETTLE_MS (all of them, if fewer than 64 were).
 */
static void
time_random_reads(ProbePiece *drawn, int ndrawn, ProbeScratch *scratch,
				  ProbeResult *result)
{
	double		total_ms = 0;
	double		settled_ms = 0;
	int			reads = 0;
	int			settled = 0;
	int			i;
	instr_time	begun;

	INSTR_TIME_SET_CURRENT(begun);
	for (i = ndrawn - 1; i > 0; i--)
	{
		int			j = (int) pg_prng_uint64_range(&pg_global_prng_state, 0, i);
		ProbePiece	t = drawn[i];

		drawn[i] = drawn[j];
		drawn[j] = t;
	}
	for (i = 0; i < ndrawn && reads < WC_PROBE_RANDOM_READS; i++)
	{
		int			fd;
		ssize_t		got;
		instr_time	start;

		bool		past_settle;

		CHECK_FOR_INTERRUPTS();
		if (ms_since(begun) > WC_PROBE_PART_MS)
			break;
		fd = open_piece(&drawn[i], !scratch->direct, scratch);
		if (fd < 0)
			continue;
		past_settle = ms_since(begun) >= WC_PROBE_SETTLE_MS;
		INSTR_TIME_SET_CURRENT(start);
		got = pg_pread(fd, scratch->buf, BLCKSZ,
					   (off_t) (drawn[i].start % RELSEG_SIZE) * BLCKSZ);
		if (got == BLCKSZ)
		{
			double		ms = ms_since(start);

			total_ms += ms;
			reads++;
			if (past_settle)
			{
				settled_ms += ms;
				settled++;
			}
		}
		CloseTransientFile(fd);
	}
	result->random_reads = reads;
	if (settled >= 64)
		result->random_ms = settled_ms / settled;
	else
		result->random_ms = reads > 0 ? total_ms / reads : -1;
}

/*
 * Read pieces in file order and time them together: from the first piece
 * read after WC_PROBE_SETTLE_MS to the last, or all of them if that is
 * less than WC_PROBE_SETTLE_MS more.  Through the cache, only pieces it
 * holds none of, with advice for the next ones ahead
 * (maintenance_io_concurrency of them, up to WC_PROBE_AHEAD, as the
 * restore's look-ahead); a piece's file is open from its advice to its
 * read: no more files than the look-ahead's.  Past the cache, advice
 * would fill the cache, so there is none.
 */
static void
time_sequential_reads(ProbePiece *pieces, int npieces, ProbeScratch *scratch,
					  ProbeResult *result)
{
	int			ahead = scratch->direct ? 0 :
		Min(Max(maintenance_io_concurrency, 0), WC_PROBE_AHEAD);
	int			max_pieces = WC_PROBE_READ_BYTES / (WC_PROBE_PIECE * BLCKSZ);
	int			fds[WC_PROBE_AHEAD + 1];
	int			chosen = 0;
	int			opened = 0;
	int64		bytes = 0;
	int64		settle_bytes = -1;
	double		settle_ms = 0;
	int			i;
	double		ms;
	instr_time	start;

	/*
	 * Through the cache, the pieces it holds none of, up to the probe's
	 * bytes and half of them: the random reads that follow need uncached
	 * blocks too.
	 */
	if (scratch->direct)
		chosen = Min(npieces, max_pieces);
	else
	{
		for (i = 0; i < npieces; i++)
		{
			int			fd;

			CHECK_FOR_INTERRUPTS();
			fd = open_piece(&pieces[i], true, scratch);
			if (fd < 0)
				continue;
			CloseTransientFile(fd);
			pieces[chosen++] = pieces[i];
		}
		chosen = Min(chosen / 2, max_pieces);
	}

	INSTR_TIME_SET_CURRENT(start);
	for (i = 0; i < chosen; i++)
	{
		size_t		len = (size_t) pieces[i].count * BLCKSZ;
		int			fd;

		CHECK_FOR_INTERRUPTS();
		for (; opened < chosen && opened <= i + ahead; opened++)
		{
			fd = open_piece(&pieces[opened], false, scratch);
			fds[opened % (WC_PROBE_AHEAD + 1)] = fd;
#ifdef USE_PREFETCH
			if (fd >= 0 && !scratch->direct)
				(void) posix_fadvise(fd,
									 (off_t) (pieces[opened].start % RELSEG_SIZE) * BLCKSZ,
									 (off_t) pieces[opened].count * BLCKSZ,
									 POSIX_FADV_WILLNEED);
#endif
		}
		fd = fds[i % (WC_PROBE_AHEAD + 1)];
		if (fd < 0)
			continue;
		if (pg_pread(fd, scratch->buf, len,
					 (off_t) (pieces[i].start % RELSEG_SIZE) * BLCKSZ) == (ssize_t) len)
			bytes += len;
		CloseTransientFile(fd);
		ms = ms_since(start);
		if (settle_bytes < 0 && ms >= WC_PROBE_SETTLE_MS)
		{
			settle_bytes = bytes;
			settle_ms = ms;
		}
		if (ms > WC_PROBE_PART_MS)
		{
			/* Close the files opened ahead. */
			for (i++; i < opened; i++)
				if (fds[i % (WC_PROBE_AHEAD + 1)] >= 0)
					CloseTransientFile(fds[i % (WC_PROBE_AHEAD + 1)]);
			break;
		}
	}
	ms = ms_since(start);
	result->read_bytes = bytes;
	if (settle_bytes >= 0 && ms - settle_ms >= WC_PROBE_SETTLE_MS &&
		bytes > settle_bytes)
		result->read_mb_s = (bytes - settle_bytes) / (1024.0 * 1024.0) /
			((ms - settle_ms) / 1000.0);
	else
		result->read_mb_s = bytes > 0 && ms >= 1.0 ?
			bytes / (1024.0 * 1024.0) / (ms / 1000.0) : -1;
}

/*
 * Whether the file system reads the piece's file past the OS cache: one
 * block read with PG_O_DIRECT, untimed.  A file system that cannot (tmpfs)
 * refuses the open or the read with EINVAL.
 */
static bool
direct_reads_work(const ProbePiece *piece, ProbeScratch *scratch)
{
	int			fd;
	bool		works;

	if (PG_O_DIRECT == 0)
		return false;
	scratch->direct = true;
	fd = open_piece(piece, false, scratch);
	scratch->direct = false;
	if (fd < 0)
		return false;
	works = pg_pread(fd, scratch->buf, BLCKSZ,
					 (off_t) (piece->start % RELSEG_SIZE) * BLCKSZ) == BLCKSZ;
	CloseTransientFile(fd);
	return works;
}

/*
 * Time the device on the saved set's blocks: past the OS cache where the
 * file system allows it, else on the blocks the cache does not hold.
 */
static void
probe_device(ProbeResult *result)
{
	ProbePiece *pieces = palloc(sizeof(ProbePiece) * WC_PROBE_PIECE_CANDIDATES);
	ProbePiece *drawn = palloc(sizeof(ProbePiece) * WC_PROBE_RANDOM_DRAWN);
	ProbeScratch scratch;
	int			npieces;
	int			ndrawn;

	result->read_mb_s = result->random_ms = -1;
	result->read_bytes = 0;
	result->random_reads = 0;
	draw_probe_blocks(pieces, &npieces, drawn, &ndrawn);
	/* Direct reads need a buffer aligned as the device's blocks are. */
	scratch.buf = (char *) TYPEALIGN(PG_IO_ALIGN_SIZE,
									 palloc(WC_PROBE_PIECE * BLCKSZ + PG_IO_ALIGN_SIZE));
	scratch.direct = false;		/* until direct_reads_work() says */
	scratch.direct = (npieces > 0 && direct_reads_work(&pieces[0], &scratch)) ||
		(ndrawn > 0 && direct_reads_work(&drawn[0], &scratch));
	result->direct = scratch.direct;
	scratch.vec = palloc(WC_RESIDENCY_VEC(WC_PROBE_PIECE));
	scratch.resident = palloc(sizeof(bool) * WC_PROBE_PIECE);
	/* Sequential first: random reads would leave few pieces uncached. */
	time_sequential_reads(pieces, npieces, &scratch, result);
	time_random_reads(drawn, ndrawn, &scratch, result);
}

/* The shared memory of the estimate (shmem.c). */
Size
wc_estimate_shmem_size(void)
{
	return MAXALIGN(sizeof(EstimateShared));
}

/* Attach to it, making it at the first start (shmem.c). */
void
wc_estimate_shmem_init(void)
{
	bool		found;

	estimate_shared = ShmemInitStruct("pg_warmcache estimate",
									  sizeof(EstimateShared), &found);
	if (!found)
	{
		memset(estimate_shared, 0, sizeof(EstimateShared));
		SpinLockInit(&estimate_shared->mutex);
	}
}

/*
 * A restore of the saved file, begun at started, made the kernel read
 * bytes from the device in seconds (restore.c, which calls only where it
 * knows that, and where no rate cap set the rate): if it read enough for
 * its rate to say something of the device, the next estimate times the
 * saved set by it.  A restore that found most of its blocks in a cache
 * reads too little.
 */
void
wc_estimate_note_restore_rate(TimestampTz started, uint64 bytes,
							  double seconds)
{
	if (bytes < WC_RATE_MIN_BYTES || seconds <= 0.001)
		return;
	SpinLockAcquire(&estimate_shared->mutex);
	estimate_shared->restore_rate_at = started;
	estimate_shared->restore_rate_bytes = (int64) bytes;
	estimate_shared->restore_rate_mb_s = bytes / (1024.0 * 1024.0) / seconds;
	SpinLockRelease(&estimate_shared->mutex);
}

/*
 * The probe's figures: the last probe's if it began less than
 * WC_PROBE_EVERY_S ago, else a new one, unless a restore or another probe
 * runs.  A probe counts from its start, whether it timed anything, was
 * cancelled or failed: so asking again, or cancelling and asking again,
 * makes the server read nothing more.  *why says why there is no figure.
 */
static void
get_probe(ProbeResult *result, TimestampTz *at, const char **why)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		restoring = wc_operation_state() == WC_STATE_RESTORING;
	TimestampTz running_since;
	bool		fresh;
	bool		run = false;

	*why = NULL;
	SpinLockAcquire(&estimate_shared->mutex);
	*at = estimate_shared->probe_at;
	running_since = estimate_shared->probe_running_since;
	result->read_mb_s = estimate_shared->probe_read_mb_s;
	result->read_bytes = estimate_shared->probe_read_bytes;
	result->random_ms = estimate_shared->probe_random_ms;
	result->random_reads = estimate_shared->probe_random_reads;
	result->direct = estimate_shared->probe_direct;
	fresh = *at != 0 &&
		!TimestampDifferenceExceeds(*at, now, WC_PROBE_EVERY_S * 1000);
	if (!fresh && !restoring)
	{
		/* Counted from now, whatever becomes of it. */
		estimate_shared->probe_at = *at = now;
		estimate_shared->probe_running_since = now;
		estimate_shared->probe_read_mb_s = estimate_shared->probe_random_ms = -1;
		estimate_shared->probe_read_bytes = 0;
		estimate_shared->probe_random_reads = 0;
		run = true;
	}
	SpinLockRelease(&estimate_shared->mutex);

	if (fresh)
	{
		if (running_since != 0 &&
			!TimestampDifferenceExceeds(running_since, now,
										WC_PROBE_STALE_S * 1000))
			*why = "another session is timing the device: ask again in a few seconds";
		else if (result->read_mb_s < 0 && result->random_ms < 0)
			*why = psprintf("the probe begun at %s timed nothing (the OS cache held the saved set, or it was cancelled); the next may begin at %s",
							timestamptz_to_str(*at),
							timestamptz_to_str(TimestampTzPlusMilliseconds(*at, WC_PROBE_EVERY_S * 1000)));
	}
	else if (restoring)
		*why = "a restore is running, and a probe would time the two together";
	if (!run)
		return;

	PG_TRY();
	{
		probe_device(result);
	}
	PG_FINALLY();
	{
		SpinLockAcquire(&estimate_shared->mutex);
		estimate_shared->probe_running_since = 0;
		SpinLockRelease(&estimate_shared->mutex);
	}
	PG_END_TRY();

	SpinLockAcquire(&estimate_shared->mutex);
	estimate_shared->probe_read_mb_s = result->read_mb_s;
	estimate_shared->probe_read_bytes = result->read_bytes;
	estimate_shared->probe_random_ms = result->random_ms;
	estimate_shared->probe_random_reads = result->random_reads;
	estimate_shared->probe_direct = result->direct;
	SpinLockRelease(&estimate_shared->mutex);
	if (result->read_mb_s < 0 && result->random_ms < 0)
		*why = "the OS cache holds the saved set's blocks, so there is nothing to time";
}

/* A size in words: MB below 10 GB, GB above. */
static char *
size_words(int64 bytes)
{
	if (bytes < INT64CONST(10) * 1024 * 1024 * 1024)
		return psprintf("%.0f MB", bytes / (1024.0 * 1024.0));
	return psprintf("%.1f GB", bytes / (1024.0 * 1024.0 * 1024.0));
}

/*
 * The estimate for the saved set as it stands.
 */
void
wc_estimate(WarmEstimate *est)
{
	int64		buffer_tier;
	int64		os_tier;
	int64		distinct;
	int64		limit = wc_restore_limit_blocks();
	int64		bytes;
	TimestampTz rate_at;
	double		rate_mb_s;
	int64		rate_bytes;
	ProbeResult probe;
	TimestampTz probe_at;
	const char *why;
	WarmFileHeader hdr;
	char	   *problem;

	memset(est, 0, sizeof(*est));
	est->read_mb_per_s = est->restore_seconds = -1;
	est->random_read_ms = est->natural_seconds = -1;
	est->shared_buffers_share = -1;
	switch (wc_check_file(WC_DUMP_FILE, &hdr, &problem))
	{
		case WC_FILE_OK:
			break;
		case WC_FILE_MISSING:
			est->restore_basis = est->natural_basis = "no saved file";
			return;
		case WC_FILE_BAD:
			est->restore_basis = est->natural_basis =
				psprintf("no usable saved file: %s", problem);
			return;
	}
	wc_sum_saved_tiers(&buffer_tier, &os_tier, &est->have_file);
	distinct = est->have_file ? wc_count_distinct_saved() : -1;
	if (!est->have_file || distinct < 0)
	{
		est->have_file = false;
		est->restore_basis = est->natural_basis = "no saved file";
		return;
	}
	est->buffer_tier_blocks = buffer_tier;
	est->os_tier_blocks = os_tier;
	est->distinct_blocks = distinct;
	est->shared_buffers_share =
		(double) Min(buffer_tier, limit > 0 ? Min(limit, NBuffers) : NBuffers) /
		NBuffers;
	bytes = distinct * BLCKSZ;

	SpinLockAcquire(&estimate_shared->mutex);
	rate_at = estimate_shared->restore_rate_at;
	rate_mb_s = estimate_shared->restore_rate_mb_s;
	rate_bytes = estimate_shared->restore_rate_bytes;
	SpinLockRelease(&estimate_shared->mutex);

	get_probe(&probe, &probe_at, &why);

	/* The restore: the last restore's rate, else the probe's. */
	if (rate_at != 0)
	{
		est->read_mb_per_s = rate_mb_s;
		est->restore_basis =
			psprintf("%s, the saved set's blocks once each, all read from the device as after a reboot, at %.1f MB/s, the rate of this server's restore begun at %s (%s read from the device over its duration)",
					 size_words(bytes), rate_mb_s, timestamptz_to_str(rate_at),
					 size_words(rate_bytes));
	}
	else if (probe.read_mb_s > 0)
	{
		est->read_mb_per_s = probe.read_mb_s;
		est->restore_basis =
			probe.direct ?
			psprintf("%s, the saved set's blocks once each, all read from the device as after a reboot, at %.1f MB/s, a probe begun at %s that read %s of the saved set's blocks in 256 kB reads past the OS cache, one at a time; no restore since the start has read enough from the device to time it",
					 size_words(bytes), probe.read_mb_s,
					 timestamptz_to_str(probe_at), size_words(probe.read_bytes)) :
			psprintf("%s, the saved set's blocks once each, all read from the device as after a reboot, at %.1f MB/s, a probe begun at %s that read %s of the saved set's blocks that the OS cache did not hold, in 256 kB reads with the restore's look-ahead; no restore since the start has read enough from the device to time it",
					 size_words(bytes), probe.read_mb_s,
					 timestamptz_to_str(probe_at), size_words(probe.read_bytes));
	}
	else
		est->restore_basis = why ? psprintf("no read rate: %s", why) :
			"no read rate: the OS cache holds the saved set's blocks, so there is nothing to time";
	if (est->read_mb_per_s > 0)
		est->restore_seconds = bytes / (1024.0 * 1024.0) / est->read_mb_per_s;

	/* The pages by themselves: 0.9 P random reads. */
	if (probe.random_ms > 0)
	{
		est->random_read_ms = probe.random_ms;
		est->natural_seconds = 0.9 * distinct * probe.random_ms / 1000.0;
		est->natural_basis = probe.direct ?
			psprintf("0.9 x " INT64_FORMAT " pages (the saved set's, once each) x %.3f ms, the mean of %d reads of one block of the saved set each, past the OS cache, by a probe begun at %s; one query reading at a time: n queries reading at once take up to n times less, as far as the device serves them together",
					 distinct, probe.random_ms, probe.random_reads,
					 timestamptz_to_str(probe_at)) :
			psprintf("0.9 x " INT64_FORMAT " pages (the saved set's, once each) x %.3f ms, the mean of %d reads of one block of the saved set each that the OS cache did not hold, by a probe begun at %s; one query reading at a time: n queries reading at once take up to n times less, as far as the device serves them together",
					 distinct, probe.random_ms, probe.random_reads,
					 timestamptz_to_str(probe_at));
	}
	else
		est->natural_basis = why ? psprintf("no random read time: %s", why) :
			"no random read time: the OS cache holds the saved set's blocks, so there is nothing to time";
}
