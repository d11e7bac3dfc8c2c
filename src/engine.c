/*-------------------------------------------------------------------------
 *
 * engine.c
 *		The warming engine: block ranges of one relation fork into the OS
 *		page cache or shared buffers.
 *
 * The engine takes a relation fork and a list of block ranges and brings
 * them into the OS page cache (modes prefetch and read) or shared buffers
 * (mode buffer).  What makes it fast on a cold cache is that it keeps the
 * disk busy ahead of the copy: it advises the kernel (posix_fadvise
 * WILLNEED) about a window of blocks ahead of the one being consumed, in
 * large contiguous pieces, so that the reads the consumer then does are
 * page cache hits.  Mode read reads whole I/O chunks at once; mode buffer
 * loads blocks one by one (15, 16) or through a read stream (17+).  The
 * window is sized from maintenance_io_concurrency.
 *
 * Where the data is in the OS cache already, the copy is cheap and most of
 * the cost of mode buffer right after a start is the kernel's: the first
 * write to each page of shared memory faults it in, allocating and zeroing
 * it.  warm() and the restore fault the memory of the buffers they are
 * about to fill in bulk ahead of the copies (wc_prefault_buffers), which
 * costs less than one fault per page, and the workers of a parallel warm do
 * it for the caller (parallel_warm.c).
 *
 * A pacer (engine.h) lets the restore change the window and sleep between
 * chunks; warm() and warm_table() (sql.c, warm.c) run at full speed.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/engine.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#include <sys/sysmacros.h>
#endif

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/rel.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "engine.h"
#include "oscache.h"
#include "pg_internals.h"
#include "settings.h"

/* Blocks in one read of mode read, and the unit of a window. */
#define WC_IO_BLOCKS	32

/*
 * Advice pieces: as large as the device takes in one I/O (its
 * max_sectors_kb), within these bounds; WC_IO_BLOCKS where it is not known.
 * The kernel reads at most max(max_sectors_kb, read_ahead_kb) of one
 * posix_fadvise(WILLNEED) call and drops the rest, so a piece must never be
 * larger than that.
 */
#define WC_MIN_PIECE	4
#define WC_MAX_PIECE	512
/* A window scaled to large pieces stays within this, unless asked for more. */
#define WC_MAX_SCALED_WINDOW	8192

/* Blocks whose OS-cache residency one mincore() call asks for. */
#define WC_RESIDENCY_SPAN	256

/*
 * Measuring whether advice pays (WarmAdvice): each state is timed over at
 * least WC_PHASE_BLOCKS blocks and WC_PHASE_US microseconds of the loop
 * (per member of a shared measurement), long enough to see past a device's
 * bursts: a volume capped per time slice answers the first reads of a slice
 * at once.  The advised state is measured once its look-ahead has filled,
 * at the start too.  Advice goes off only where going without is
 * WC_ADVICE_GAIN times as fast: where advice pays it doubles the rate, and
 * where it does not it costs a system call per piece (2-3% of warming a
 * table from the OS cache), so noise in a measurement must not turn it off.
 * The
 * next measurement comes after four times the blocks the last one took, or
 * WC_PROBE_BLOCKS if more, four times later again after each measurement
 * that changed nothing, up to WC_MAX_PROBE_BLOCKS.
 */
#define WC_PHASE_BLOCKS		1024
#define WC_PHASE_US			100000.0
#define WC_ADVICE_GAIN		1.10
#define WC_PROBE_BLOCKS		16384
#define WC_MAX_PROBE_BLOCKS	(1 << 20)

/* Linux 5.14; older kernels refuse it, and the pages are read instead. */
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif

/* One open segment file of the fork being warmed. */
typedef struct SegFile
{
	const char *path;			/* of segment 0 */
	BlockNumber segno;
	File		file;
	char	   *map;			/* the segment mapped for mincore(), never
								 * touched; NULL = not mapped yet */
	bool		unmappable;		/* mapping it failed: take it as uncached */
} SegFile;

/* Position in a range list. */
typedef struct RangeCursor
{
	const WarmRange *ranges;
	int			nranges;
	int			ri;				/* current range */
	BlockNumber off;			/* blocks of it already passed */
} RangeCursor;


/*
 * Mode names, as warm() and pg_warmcache.restore_mode spell them.
 */
WarmMode
wc_parse_mode(const char *name)
{
	if (strcmp(name, "prefetch") == 0)
		return WC_MODE_PREFETCH;
	if (strcmp(name, "read") == 0)
		return WC_MODE_READ;
	if (strcmp(name, "buffer") == 0)
		return WC_MODE_BUFFER;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid warm mode \"%s\"", name),
			 errhint("Valid modes are \"prefetch\", \"read\" and \"buffer\".")));
	pg_unreachable();
}

const char *
wc_mode_name(WarmMode mode)
{
	switch (mode)
	{
		case WC_MODE_PREFETCH:
			return "prefetch";
		case WC_MODE_READ:
			return "read";
		case WC_MODE_BUFFER:
			return "buffer";
	}
	return "?";
}

/*
 * Refuse prefetch on a build without posix_fadvise(), as pg_prewarm() does.
 */
void
wc_check_mode_supported(WarmMode mode)
{
#ifndef USE_PREFETCH
	if (mode == WC_MODE_PREFETCH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("prefetch is not supported by this build"),
				 errhint("Use mode \"read\" to warm the operating system cache.")));
#endif
}

/*
 * Look-ahead used when nobody paces us: maintenance_io_concurrency I/Os of
 * WC_IO_BLOCKS each.  Zero turns advice off, as it does for PostgreSQL.
 */
int
wc_default_window(void)
{
	return maintenance_io_concurrency * WC_IO_BLOCKS;
}

static bool
cursor_done(RangeCursor *c)
{
	return c->ri >= c->nranges;
}

/*
 * Length of the next piece at the cursor: at most max blocks, within one
 * range and one segment file.
 */
static BlockNumber
cursor_piece(RangeCursor *c, BlockNumber max)
{
	const WarmRange *r = &c->ranges[c->ri];
	BlockNumber block = r->start + c->off;
	BlockNumber n = r->count - c->off;
	BlockNumber to_seg_end = RELSEG_SIZE - block % RELSEG_SIZE;

	n = Min(n, to_seg_end);
	return Min(n, max);
}

static void
cursor_advance(RangeCursor *c, BlockNumber n)
{
	c->off += n;
	while (c->ri < c->nranges && c->off >= c->ranges[c->ri].count)
	{
		c->ri++;
		c->off = 0;
	}
}

static BlockNumber
cursor_block(RangeCursor *c)
{
	return c->ranges[c->ri].start + c->off;
}

static void seg_close(SegFile *sf);

/* The path of a segment file, palloc'd. */
static char *
seg_path(SegFile *sf, BlockNumber segno)
{
	return segno == 0 ? pstrdup(sf->path) : psprintf("%s.%u", sf->path, segno);
}

/*
 * The open file of the segment holding block, opening it when needed.
 * Returns -1 if the segment does not exist (the relation shrank).
 */
static File
seg_file(SegFile *sf, BlockNumber block)
{
	BlockNumber segno = block / RELSEG_SIZE;
	char	   *p;

	if (sf->file >= 0 && sf->segno == segno)
		return sf->file;
	seg_close(sf);
	sf->segno = segno;
	p = seg_path(sf, segno);
	sf->file = PathNameOpenFile(p, O_RDONLY | PG_BINARY);
	pfree(p);
	if (sf->file < 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\" (segment %u): %m",
						sf->path, segno)));
	return sf->file;
}

static void
seg_close(SegFile *sf)
{
	if (sf->file >= 0)
		FileClose(sf->file);
	sf->file = -1;
#ifdef __linux__
	if (sf->map != NULL)
		munmap(sf->map, (Size) RELSEG_SIZE * BLCKSZ);
#endif
	sf->map = NULL;
	sf->unmappable = false;
}

/*
 * Blocks the device of an open file takes in one I/O: its max_sectors_kb,
 * from sysfs (the queue of the device, or of the disk of a partition).
 * Where that is not known (another system, a file system without a block
 * device of its own), WC_IO_BLOCKS.  Remembered for the last device.
 */
static BlockNumber
device_piece(File f)
{
	static dev_t last_dev = 0;
	static BlockNumber last_piece = 0;
	BlockNumber piece = WC_IO_BLOCKS;
#ifdef __linux__
	struct stat st;
	int			fd = FileGetRawDesc(f);

	if (fd < 0 || fstat(fd, &st) != 0)
		return WC_IO_BLOCKS;
	if (last_piece != 0 && st.st_dev == last_dev)
		return last_piece;
	{
		static const char *const fmt[] = {
			"/sys/dev/block/%u:%u/queue/max_sectors_kb",
			"/sys/dev/block/%u:%u/../queue/max_sectors_kb"
		};
		int			i;

		for (i = 0; i < lengthof(fmt); i++)
		{
			char		path[MAXPGPATH];
			FILE	   *fp;
			long		kb = 0;

			snprintf(path, sizeof(path), fmt[i],
					 major(st.st_dev), minor(st.st_dev));
			fp = AllocateFile(path, "r");
			if (fp == NULL)
				continue;
			if (fscanf(fp, "%ld", &kb) == 1 && kb > 0)
				piece = (BlockNumber) Max(WC_MIN_PIECE,
										  Min(WC_MAX_PIECE, kb * 1024 / BLCKSZ));
			FreeFile(fp);
			break;
		}
	}
	last_dev = st.st_dev;
	last_piece = piece;
#endif
	return piece;
}

/*
 * Ranges separated by gaps of at most this many blocks are advised as one:
 * the device then sees one large read instead of many small ones, which
 * matters on volumes that limit I/O operations per second.  The gaps only
 * reach the OS cache.
 */
#define WC_ADVICE_GAP	16

/* Advise the kernel about blocks [start, end) of one segment. */
static void
advise_flush(SegFile *sf, BlockNumber start, BlockNumber end)
{
	File		f;

	if (end <= start)
		return;
	f = seg_file(sf, start);
	if (f >= 0)
		(void) FilePrefetch(f, (off_t) (start % RELSEG_SIZE) * BLCKSZ,
							(off_t) (end - start) * BLCKSZ,
							WAIT_EVENT_DATA_FILE_PREFETCH);
}

/*
 * Advise the kernel about blocks from the advice cursor on, until it is
 * target blocks past the start of the range list or beyond, in pieces of
 * at most piece blocks (the last one may end past target), bridging gaps
 * of up to WC_ADVICE_GAP blocks.
 */
static void
advise_until(RangeCursor *adv, uint64 *advised, uint64 target, SegFile *sf,
			 BlockNumber piece)
{
	BlockNumber pstart = 0;
	BlockNumber pend = 0;		/* pending advice [pstart, pend) */

	while (*advised < target && !cursor_done(adv))
	{
		BlockNumber block = cursor_block(adv);
		BlockNumber room = piece;
		BlockNumber n;

		if (pend > pstart &&
			block / RELSEG_SIZE == pstart / RELSEG_SIZE &&
			block >= pend && block - pend <= WC_ADVICE_GAP &&
			block - pstart < piece)
			room = piece - (block - pstart);
		else
		{
			advise_flush(sf, pstart, pend);
			pstart = block;
		}
		n = cursor_piece(adv, room);
		pend = block + n;
		cursor_advance(adv, n);
		*advised += n;
	}
	advise_flush(sf, pstart, pend);
}

/*
 * Fault in the memory of [start, start + len) of shared buffers where it is
 * not resident yet, or with map all of it, mapping it into this process;
 * returns the bytes faulted in.  MADV_POPULATE_WRITE maps the pages without
 * writing to them, so a buffer that another process takes meanwhile keeps
 * its contents; where the kernel lacks it, reading one byte per page faults
 * the page in just as well (shared memory has no zero page), again without
 * writing.
 */
static Size
prefault_memory(char *start, Size len, bool map)
{
	static Size pagesize = 0;
	static bool populate_works = true;
	char	   *first;
	char	   *end;
	char	   *p;
	Size		faulted = 0;
#ifdef __linux__
	unsigned char vec[WC_PREFAULT_MAX * BLCKSZ / 4096 + 2];
	Size		npages;
	Size		i;
#endif

	if (pagesize == 0)
		pagesize = (Size) sysconf(_SC_PAGESIZE);
	first = (char *) TYPEALIGN_DOWN(pagesize, start);
	end = (char *) TYPEALIGN(pagesize, start + len);

#ifdef __linux__
	npages = (end - first) / pagesize;
	if (map || npages > lengthof(vec) ||
		mincore(first, end - first, vec) != 0)
		memset(vec, 0, sizeof(vec));	/* all of it */
	for (i = 0; i < npages && i < lengthof(vec); i++)
	{
		Size		run;

		if (vec[i] & 1)
			continue;
		for (run = 1; i + run < npages && !(vec[i + run] & 1); run++)
			;
		p = first + i * pagesize;
		if (!populate_works ||
			madvise(p, run * pagesize, MADV_POPULATE_WRITE) != 0)
		{
			populate_works = false;
			for (; p < first + (i + run) * pagesize; p += pagesize)
				(void) *(volatile char *) p;
		}
		faulted += run * pagesize;
		i += run;
	}
#else
	for (p = first; p < end; p += pagesize)
		(void) *(volatile char *) p;
	faulted = end - first;
#endif
	return faulted;
}

/*
 * Prefault the memory of the unused buffers among buffer IDs [first, last),
 * in runs of consecutive ones, at most WC_PREFAULT_MAX of them.  *unused
 * gets the number of unused buffers.  With map, the pages are also mapped
 * into this process, resident or not (it is about to fill them); else
 * resident ones are skipped.  Returns the buffers faulted in (with map,
 * all unused ones).
 *
 * Right after a start, most of the time of warming from the OS cache goes
 * to the kernel allocating and zeroing the pages of shared memory that each
 * buffer's first write touches, one page fault at a time.  In bulk, ahead
 * of the reads, that costs less, and another process can do it meanwhile.
 * The free list hands out unused buffers in the order of their IDs, so the
 * next ones to be filled are known well enough; a wrong guess only makes
 * memory resident that shared buffers would have used anyway.
 */
uint32
wc_prefault_buffers(int first, int last, bool map, uint32 *unused)
{
	int			run_start = -1;
	Size		faulted = 0;
	int			id;

	Assert(last - first <= WC_PREFAULT_MAX);
	*unused = 0;
	for (id = first; id <= last; id++)
	{
		bool		free_buf = id < last &&
			wc_buffer_unused(id);

		if (free_buf)
		{
			(*unused)++;
			if (run_start < 0)
				run_start = id;
		}
		else if (run_start >= 0)
		{
			faulted += prefault_memory(BufferBlocks + (Size) run_start * BLCKSZ,
									   (Size) (id - run_start) * BLCKSZ, map);
			run_start = -1;
		}
	}
	return (uint32) (faulted / BLCKSZ);
}

/* What wc_warm_ranges() was asked to do, and where it is. */
typedef struct WarmJob
{
	Relation	rel;
	ForkNumber	fork;
	WarmMode	mode;
	WarmPacer  *pacer;
	RangeCursor cur;			/* next block to warm */
	RangeCursor adv;			/* next block to advise */
	uint64		advised;		/* blocks advised so far */
	SegFile		sf[2];			/* 0 for reads, 1 for advice */
	BlockNumber piece;			/* blocks per advice call; 0 = not known yet */
	char	   *iobuf;			/* mode read: one I/O chunk */
	bool		use_stream;		/* mode buffer, 17+, eviction allowed */
	ReadStream *stream;
	RangeCursor stream_cur;		/* the stream's own position */
	WarmAdvice *advice;			/* the pacer's, or local_advice */
	WarmAdvice	local_advice;
	WarmRange  *kept_ranges;	/* skip_os_cached: the ranges left to warm */
	uint32	   *dropped_before; /* skip_os_cached: per range left, the
								 * blocks left out just before it */
	uint64		dropped_after;	/* and after the last one */
	int			dropped_ri;		/* ranges whose dropped_before is counted */
	unsigned char *residency;	/* skip_os_cached: mincore()'s vector */
	bool		prefault;		/* mode buffer, shared buffers */
	int			prefault_next;	/* buffer ID after the prefaulted ones */
	uint64		prefault_left;	/* unused buffers the rest may need */
} WarmJob;

/*
 * Read stream callback: the next block of the range list.
 */
static BlockNumber
stream_next_block(ReadStream *stream, void *private_data, void *per_buffer_data)
{
	RangeCursor *c = private_data;
	BlockNumber block;

	if (cursor_done(c))
		return InvalidBlockNumber;
	block = cursor_block(c);
	cursor_advance(c, 1);
	return block;
}

/*
 * Prefault ahead of the buffers being filled (see wc_prefault_buffers):
 * when the last one filled comes within WC_PREFAULT_MAX of the end of the
 * prefaulted stretch, the next WC_PREFAULT_MAX buffer IDs (after a jump,
 * those after the last one), no more than the job may still need.  Where none
 * of them is unused, the free list is empty and the job goes on without.
 * The pages are mapped into this process, which copies the blocks.
 */
static void
prefault_ahead(WarmJob *job, Buffer last)
{
	int			id = last - 1;
	int			first;
	uint32		unused;

	bool		near;

	if (!job->prefault || last == InvalidBuffer || BufferIsLocal(last))
		return;
	/* Within the prefaulted stretch, or at most WC_PREFAULT_MAX after it. */
	near = id < job->prefault_next && id >= job->prefault_next - 2 * WC_PREFAULT_MAX;
	if (near && id + WC_PREFAULT_MAX < job->prefault_next)
		return;
	first = near ? job->prefault_next : id + 1;
	job->prefault_next = Min(NBuffers,
							 first + (int) Min((uint64) WC_PREFAULT_MAX,
											   job->prefault_left));
	if (first >= job->prefault_next)
		return;
	(void) wc_prefault_buffers(first, job->prefault_next, true, &unused);
	if (unused == 0 || unused >= job->prefault_left)
		job->prefault = false;
	else
		job->prefault_left -= unused;
}

/*
 * Load n blocks from block on into shared buffers.  Returns how many were
 * loaded: fewer if the pacer forbids eviction and no free buffer is left.
 *
 * NB: a loop that must not evict (the restore) loads one block at a time,
 * never through a read stream: a stream allocates the buffers of a combined read
 * at once, after its callback looked at the free list, so it can evict up
 * to io_combine_limit buffers when the free list runs dry.  Our advice has
 * started the reads already; this loop mostly copies from the OS cache.
 */
static BlockNumber
load_buffers(WarmJob *job, BlockNumber block, BlockNumber n)
{
	WarmPacer  *pacer = job->pacer;
	BlockNumber i;

	if (job->use_stream)
	{
		if (job->stream == NULL)
		{
			job->stream_cur = job->cur;
			job->stream = read_stream_begin_relation(WC_READ_STREAM_FLAGS,
													 NULL, job->rel, job->fork,
													 stream_next_block,
													 &job->stream_cur, 0);
		}
		for (i = 0; i < n; i++)
		{
			Buffer		buf = read_stream_next_buffer(job->stream, NULL);

			wc_check_buffer_reading(job->rel, job->fork,
									BufferGetBlockNumber(buf), buf);
			prefault_ahead(job, buf);
			ReleaseBuffer(buf);
		}
		return n;
	}

	for (i = 0; i < n; i++)
	{
		Buffer		buf;

		if (pacer && pacer->no_evict && !wc_have_free_buffer())
			break;
		buf = ReadBufferExtended(job->rel, job->fork, block + i, RBM_NORMAL,
								 NULL);
		wc_check_buffer_reading(job->rel, job->fork, block + i, buf);
		prefault_ahead(job, buf);
		ReleaseBuffer(buf);
	}
	return i;
}

/*
 * Are the n blocks from block on all in shared buffers?  The OS tier of a
 * dump holds the blocks of shared buffers too (PostgreSQL reads through the
 * page cache); after the buffer tier was restored, reading them again would
 * be CPU spent for nothing.  The first block not there ends the look.
 */
static bool
all_in_buffers(WarmJob *job, BlockNumber block, BlockNumber n)
{
	BlockNumber i;

	for (i = 0; i < n; i++)
		if (!wc_block_in_buffers(job->rel, job->fork, block + i))
			return false;
	return true;
}

/*
 * Which of the n blocks from block on (within one segment, at most
 * WC_RESIDENCY_SPAN) are in the OS page cache: resident[i] for block + i.
 * mincore() on a read-only mapping of the segment says which pages are
 * resident without touching them; the mapping is made once per segment and
 * never read, so a file truncated meanwhile costs nothing.  A block counts
 * when all its pages are resident (wc_block_residency).  False where that
 * cannot be known (the segment is not there or cannot be mapped, or no
 * mincore()): then the blocks are to be read.
 */
static bool
span_residency(WarmJob *job, BlockNumber block, BlockNumber n, bool *resident)
{
#ifdef __linux__
	SegFile    *sf = &job->sf[0];

	Assert(n <= WC_RESIDENCY_SPAN && block / RELSEG_SIZE == (block + n - 1) / RELSEG_SIZE);
	if (seg_file(sf, block) < 0 || sf->unmappable)
		return false;
	if (sf->map == NULL)
	{
		char	   *path = seg_path(sf, sf->segno);
		int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
		void	   *map = MAP_FAILED;

		pfree(path);
		if (fd >= 0)
		{
			map = mmap(NULL, (Size) RELSEG_SIZE * BLCKSZ, PROT_READ,
					   MAP_SHARED, fd, 0);
			CloseTransientFile(fd);
		}
		if (map == MAP_FAILED)
		{
			sf->unmappable = true;
			return false;
		}
		sf->map = map;
	}
	if (job->residency == NULL)
		job->residency = palloc(WC_RESIDENCY_VEC(WC_RESIDENCY_SPAN));
	return wc_block_residency(sf->map, block % RELSEG_SIZE, n,
							  job->residency, resident);
#else
	return false;
#endif
}

/*
 * Is the chunk of n blocks from block on (within one segment, at most an
 * I/O chunk) in the OS page cache?  A chunk read while the queries keep
 * the CPUs busy asks before it reads (skip_cached_chunks): its aim is the
 * OS cache, and where that holds the chunk already, reading it is a copy,
 * CPU taken from queries that are using all of it.  Not where that cannot
 * be known.
 */
static bool
chunk_in_os_cache(WarmJob *job, BlockNumber block, BlockNumber n)
{
	bool		resident[WC_IO_BLOCKS];
	BlockNumber i;

	StaticAssertStmt(WC_IO_BLOCKS <= WC_RESIDENCY_SPAN,
					 "an I/O chunk must fit in one residency span");
	Assert(n <= WC_IO_BLOCKS);
	if (!span_residency(job, block, n, resident))
		return false;
	for (i = 0; i < n; i++)
		if (!resident[i])
			return false;
	return true;
}

/*
 * A growing list of the ranges left to warm, adjacent ones merged, and per
 * range the blocks left out just before it (in the order of the ranges
 * given): the engine reports those as done when it comes to the range, so
 * that what it reports done is always a leading part of the ranges given,
 * as the restore's remainder of a stopped batch expects.
 */
typedef struct RangeList
{
	WarmRange  *r;
	uint32	   *dropped_before;
	int			n;
	int			cap;
	uint64		dropped;		/* left out since the last range kept */
} RangeList;

static void
keep_range(RangeList *l, BlockNumber start, BlockNumber count)
{
	if (count == 0)
		return;
	if (l->n > 0 && l->dropped == 0 &&
		l->r[l->n - 1].start + l->r[l->n - 1].count == start)
	{
		l->r[l->n - 1].count += count;
		return;
	}
	if (l->n == l->cap)
	{
		l->cap *= 2;
		l->r = repalloc(l->r, sizeof(WarmRange) * l->cap);
		l->dropped_before = repalloc(l->dropped_before, sizeof(uint32) * l->cap);
	}
	l->r[l->n].start = start;
	l->r[l->n].count = count;
	l->dropped_before[l->n] = (uint32) l->dropped;
	l->dropped = 0;
	l->n++;
}

/*
 * A stretch of resident blocks [start, end) of a range ended: left out if
 * it is at an edge of the range (edge) or at least an I/O chunk long, else
 * kept with its neighbours, to be read.
 */
static void
close_stretch(RangeList *l, BlockNumber start, BlockNumber end, bool edge)
{
	if (edge || end - start >= WC_IO_BLOCKS)
		l->dropped += end - start;
	else
		keep_range(l, start, end - start);
}

/*
 * The ranges without their stretches in the OS page cache (skip_os_cached):
 * sets job's cursors to the blocks left, and notes where the blocks left
 * out were.  A follow pass goes over the whole followed set at each of the
 * primary's dumps, and most of it is cached since the pass before: reading
 * it again would copy every block for nothing, a cost that grows with the
 * set, not with what changed.  The look is taken before any advice, so that
 * what the pass's own look-ahead brings in is not taken for what was there.
 * A resident stretch inside a range and shorter than an I/O chunk is read
 * with its neighbours: the list then holds at most the ranges given and one
 * more per chunk of blocks, in the caller's memory context.
 */
static void
drop_os_cached(WarmJob *job, const WarmRange *ranges, int nranges)
{
	RangeList	kept;
	bool		resident[WC_RESIDENCY_SPAN];
	int			i;

	kept.cap = nranges + 16;
	kept.n = 0;
	kept.dropped = 0;
	kept.r = palloc(sizeof(WarmRange) * kept.cap);
	kept.dropped_before = palloc(sizeof(uint32) * kept.cap);
	for (i = 0; i < nranges; i++)
	{
		BlockNumber b = ranges[i].start;
		BlockNumber end = ranges[i].start + ranges[i].count;
		BlockNumber stretch = InvalidBlockNumber;	/* resident from here */

		while (b < end)
		{
			BlockNumber n = Min(end - b, WC_RESIDENCY_SPAN);
			BlockNumber j;

			CHECK_FOR_INTERRUPTS();
			n = Min(n, RELSEG_SIZE - b % RELSEG_SIZE);
			if (!span_residency(job, b, n, resident))
				memset(resident, 0, sizeof(bool) * n);
			for (j = 0; j < n; j++)
			{
				if (resident[j])
				{
					if (stretch == InvalidBlockNumber)
						stretch = b + j;
					continue;
				}
				if (stretch != InvalidBlockNumber)
					close_stretch(&kept, stretch, b + j,
								  stretch == ranges[i].start);
				stretch = InvalidBlockNumber;
				keep_range(&kept, b + j, 1);
			}
			b += n;
		}
		if (stretch != InvalidBlockNumber)
			close_stretch(&kept, stretch, end, true);
	}
	job->cur.ranges = job->adv.ranges = kept.r;
	job->cur.nranges = job->adv.nranges = kept.n;
	job->kept_ranges = kept.r;
	job->dropped_before = kept.dropped_before;
	job->dropped_after = kept.dropped;
}

/*
 * The blocks left out (drop_os_cached) before the range the cursor is in,
 * and with done after the last range too, not reported yet; they are
 * counted for the pacer, which does not charge them to the rate cap.
 */
static uint64
dropped_until_cursor(WarmJob *job, bool done)
{
	uint64		n = 0;
	int			last = done ? job->cur.nranges - 1 : job->cur.ri;

	if (job->dropped_before == NULL)
		return 0;
	for (; job->dropped_ri <= last; job->dropped_ri++)
		n += job->dropped_before[job->dropped_ri];
	if (done)
	{
		n += job->dropped_after;
		job->dropped_after = 0;
	}
	job->pacer->found_cached += n;
	return n;
}

/*
 * Read n blocks from block on into private memory: the OS cache keeps them.
 * Returns false if the file is shorter than that (the relation shrank).
 */
static bool
read_os(WarmJob *job, BlockNumber block, BlockNumber n)
{
	SegFile    *sf = &job->sf[0];
	File		f = seg_file(sf, block);
	int			nread;

	if (f < 0)
		return false;
	if (job->iobuf == NULL)
		job->iobuf = palloc(WC_IO_BLOCKS * BLCKSZ);
	nread = FileRead(f, job->iobuf, (size_t) n * BLCKSZ,
					 (off_t) (block % RELSEG_SIZE) * BLCKSZ,
					 WAIT_EVENT_DATA_FILE_READ);
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read blocks %u..%u of file \"%s\": %m",
						block, block + n - 1, sf->path)));
	return nread == (int) (n * BLCKSZ);
}

/*
 * Blocks per advice call, found out from the advice file's device when
 * first needed.
 */
static BlockNumber
job_piece(WarmJob *job)
{
	if (job->piece == 0)
	{
		File		f = cursor_done(&job->adv) ? -1 :
			seg_file(&job->sf[1], cursor_block(&job->adv));

		job->piece = f >= 0 && (wc_platform_shortcuts & WC_SHORTCUT_DEVICE_PIECE) ?
			device_piece(f) : WC_IO_BLOCKS;
	}
	return job->piece;
}

/*
 * The look-ahead for a window of the pacer's (or the default one): a
 * window of at least one WC_IO_BLOCKS I/O counts its I/Os, each as large as
 * the device takes; a smaller one is taken as it is.  Sets *piece to the
 * size of the advice calls.
 */
static uint64
scaled_window(WarmJob *job, int window, BlockNumber *piece)
{
	uint64		ios;
	uint64		scaled;

	if (window <= 0)
	{
		*piece = 0;
		return 0;
	}
	*piece = job_piece(job);
	if (window < WC_IO_BLOCKS)
	{
		*piece = Min(*piece, (BlockNumber) window);
		return window;
	}
	ios = window / WC_IO_BLOCKS;
	scaled = ios * *piece;
	if (scaled > WC_MAX_SCALED_WINDOW)
		scaled = Max((uint64) window, (uint64) WC_MAX_SCALED_WINDOW);
	return scaled;
}

/*
 * Whether to advise for the next chunk: the state the measurements chose,
 * or the one being measured.
 */
static bool
advice_wanted(WarmAdvice *a)
{
	if (a->interval == 0)
	{
		/*
		 * Fresh: advise first.  Where advice pays, going without costs half
		 * the rate or more; where it does not, advising costs a few system
		 * calls per megabyte.
		 */
		a->interval = WC_PROBE_BLOCKS;
		a->on = true;
		a->phase = 1;
		a->settle_until = PG_UINT64_MAX;	/* set by advice_account() */
		a->measured_blocks = 0;
		a->measured_us = 0;
		a->measure_start = a->consumed;
	}
	return a->on;
}

/*
 * Account a chunk of blocks warmed in us microseconds (advice included),
 * and move the measurement on.  outstanding: blocks advised beyond those
 * warmed; window: the look-ahead if advice is switched on.  Returns true
 * when a measurement ended (the caller reports it, outside any spinlock).
 */
static bool
advice_account(WarmAdvice *a, uint64 blocks, double us, uint64 outstanding,
			   uint64 window)
{
	uint32		members = Max(a->members, 1);

	a->consumed += blocks;
	if (a->phase == 0)
	{
		if (a->consumed >= a->next_probe)
		{
			a->phase = 1;
			a->settle_until = a->consumed;
			a->measured_blocks = 0;
			a->measured_us = 0;
			a->measure_start = a->consumed;
		}
		return false;
	}
	/*
	 * At the start, the look-ahead fills first: measured while it fills,
	 * advice looked no faster than none where it doubles the rate (three
	 * processes of a parallel warm on an IOPS-bound volume, on 18).
	 */
	if (a->settle_until == PG_UINT64_MAX)
		a->settle_until = a->consumed - blocks + window * members;
	if (a->consumed - blocks < a->settle_until)
		return false;			/* the switch still shows */
	a->measured_blocks += blocks;
	a->measured_us += us;
	if (a->measured_blocks < WC_PHASE_BLOCKS * members ||
		a->measured_us < WC_PHASE_US * members)
		return false;

	a->rate[a->on ? 1 : 0] = a->measured_blocks / a->measured_us;
	a->measured_blocks = 0;
	a->measured_us = 0;
	if (a->phase == 1)
	{
		/*
		 * Now the other state.  Switching advice off, the blocks advised
		 * already still come fast; switching it on, the look-ahead has to
		 * fill first.  Each member has its own.
		 */
		a->phase = 2;
		a->settle_until = a->consumed + (a->on ? outstanding : window) * members;
		a->on = !a->on;
		return false;
	}
	else
	{
		bool		before = !a->on;	/* the state before phase 1 */
		bool		best = a->rate[0] <= a->rate[1] * WC_ADVICE_GAIN;
		uint64		took = a->consumed - a->measure_start;

		a->probes++;
		if (best == before)
			a->interval = a->interval * 4;
		else
			a->interval = WC_PROBE_BLOCKS;
		a->interval = Min(Max(a->interval, 4 * took),
						  (uint64) WC_MAX_PROBE_BLOCKS);
		a->on = best;
		a->phase = 0;
		a->next_probe = a->consumed + a->interval;
		return true;
	}
}

/* A shared measurement is read and moved on under its spinlock. */
static inline void
advice_lock(WarmAdviceShare *share)
{
	if (share)
		SpinLockAcquire(&share->mutex);
}

static inline void
advice_unlock(WarmAdviceShare *share)
{
	if (share)
		SpinLockRelease(&share->mutex);
}

/*
 * The shared measurement this process is counted in, while it is in the
 * engine's loop; NULL otherwise.  An ERROR leaves it through PG_FINALLY in
 * wc_warm_ranges(), but a FATAL (a terminated restore worker, postmaster
 * death) calls proc_exit() without unwinding: an exit callback leaves it
 * then, or the other processes would measure for a member that is gone,
 * in phases ever longer, for the rest of the restore.
 */
static WarmAdviceShare *member_of = NULL;
static bool member_exit_registered = false;

/* Leave the shared measurement, if this process is counted in one. */
static void
leave_share(void)
{
	WarmAdviceShare *share = member_of;

	if (share == NULL)
		return;
	member_of = NULL;
	advice_lock(share);
	/* A new restore may have reset it meanwhile: never below zero. */
	if (share->advice.members > 0)
		share->advice.members--;
	advice_unlock(share);
}

static void
leave_share_at_exit(int code, Datum arg)
{
	leave_share();
}

/*
 * Join a pacer's shared measurement, if it has one whose members the engine
 * counts.  A DSM segment (a parallel warm's) is detached after the
 * before_shmem_exit callbacks ran, so the callback may still touch it.
 */
static void
join_share(WarmPacer *pacer)
{
	WarmAdviceShare *share = pacer ? pacer->advice_share : NULL;
	uint32		members;

	Assert(member_of == NULL);
	if (share == NULL || !share->count_members)
		return;
	if (!member_exit_registered)
	{
		before_shmem_exit(leave_share_at_exit, (Datum) 0);
		member_exit_registered = true;
	}
	advice_lock(share);
	members = ++share->advice.members;
	advice_unlock(share);
	member_of = share;
	elog(DEBUG2, "processes in the shared measurement of advice: %u",
		 members);
}

/* Report a measurement that advice_account() ended. */
static void
advice_report(const WarmAdvice *a)
{
	if (a->on)
		elog(DEBUG2, "%.0f blocks/ms without advice, %.0f with: advice on (processes: %u)",
			 a->rate[0] * 1000.0, a->rate[1] * 1000.0, Max(a->members, 1));
	else
		elog(DEBUG2, "%.0f blocks/ms without advice, %.0f with: advice off (processes: %u)",
			 a->rate[0] * 1000.0, a->rate[1] * 1000.0, Max(a->members, 1));
}

static double
elapsed_us(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MICROSEC(now);
}

/*
 * The loop of wc_warm_ranges(): chunk by chunk, advise ahead where advice
 * pays, then warm the chunk.  Returns the blocks warmed.  One chunk's steps
 * in order (pace, measure, advise, warm); cut up, the order of the steps,
 * which is the point, would no longer be seen at once.
 */
static uint64
warm_loop(WarmJob *job)
{
	WarmPacer  *pacer = job->pacer;
	WarmAdvice *advice = job->advice;
	WarmAdviceShare *share = pacer ? pacer->advice_share : NULL;
	WarmAdvice	reported;
	uint64		done = 0;
	uint64		in_buffers = 0; /* since the last pace() */
	uint64		os_only = 0;
	uint64		dropped = 0;	/* left out as in the OS cache already */
	uint64		gap;

	while (!cursor_done(&job->cur))
	{
		BlockNumber n;
		BlockNumber block;
		BlockNumber piece = 0;
		uint64		window = 0;
		int			pacer_window;
		BlockNumber warmed;
		bool		measure;
		bool		advise = false;
		bool		advised_earlier;
		bool		chunk_cached = false;
		instr_time	start;

		CHECK_FOR_INTERRUPTS();
		gap = dropped_until_cursor(job, false);
		os_only += gap;
		dropped += gap;
		if (pacer && pacer->pace)
		{
			pacer->pace(pacer, in_buffers, os_only);
			in_buffers = os_only = 0;
			if (pacer->stop)
				break;
			if (pacer->rel != NULL && pacer->rel != job->rel)
			{
				/* A read stream would still hold the old one. */
				Assert(!job->use_stream);
				job->rel = pacer->rel;
			}
		}

		/*
		 * A chunk the pacer leaves out (the restore past its limit) is
		 * passed over: no read, no advice, counted for pace().
		 */
		if (pacer && pacer->leave_out)
		{
			n = cursor_piece(&job->cur, WC_IO_BLOCKS);
			pacer->left_out += n;
			done += n;
			cursor_advance(&job->cur, n);
			if (job->advised < done)
			{
				job->adv = job->cur;
				job->advised = done;
			}
			continue;
		}
		pacer_window = pacer ? pacer->window : wc_default_window();

		n = cursor_piece(&job->cur, (pacer && pacer->io_blocks > 0) ?
						 Min(pacer->io_blocks, WC_IO_BLOCKS) : WC_IO_BLOCKS);
		block = cursor_block(&job->cur);

		/*
		 * In prefetch mode the advice is the work.  Otherwise advice is
		 * timed with the chunk, and issued only while it pays.
		 */
		measure = job->mode != WC_MODE_PREFETCH && pacer_window > 0;
		if (measure)
		{
			bool		measuring;

			INSTR_TIME_SET_CURRENT(start);
			advice_lock(share);
			advise = advice_wanted(advice);
			measuring = advice->phase == 1;
			advice_unlock(share);
			/* The advice file is opened only once advice is wanted. */
			if (advise || measuring)
				window = scaled_window(job, pacer_window, &piece);
		}

		/*
		 * A chunk that may be left out (skip_cached_chunks) asks whether the
		 * OS cache holds it before this round's advice: mincore() counts a
		 * page once its read is done, so what it finds now was there, or
		 * came in by advice of an earlier round.
		 */
		advised_earlier = job->advised > done;
		if (pacer && pacer->os_cache_only && pacer->skip_cached_chunks &&
			job->mode == WC_MODE_BUFFER)
			chunk_cached = chunk_in_os_cache(job, block, n);

		if (job->mode == WC_MODE_PREFETCH)
			advise_until(&job->adv, &job->advised, done + n, &job->sf[1],
						 job_piece(job));
		else if (advise)
		{
			if (pacer && pacer->advice_capped)
				window = Min(window, pacer->advice_cap);
			advise_until(&job->adv, &job->advised, done + n + window,
						 &job->sf[1], piece);
		}

		if (job->mode == WC_MODE_BUFFER && !(pacer && pacer->os_cache_only))
		{
			warmed = load_buffers(job, block, n);
			in_buffers += warmed;
		}
		else
		{
			warmed = n;
			if (job->mode == WC_MODE_PREFETCH)
				os_only += n;	/* the advice was the work */
			else if (pacer && (pacer->skip_in_buffers || pacer->os_cache_only) &&
					 all_in_buffers(job, block, n))
			{
				/* In shared buffers already: where buffers were the aim, done. */
				if (job->mode == WC_MODE_BUFFER)
					in_buffers += n;
				else
					os_only += n;
			}
			else if (chunk_cached)
			{
				/*
				 * In the OS cache already: done.  Not charged to the rate
				 * cap, unless it was our advice that read it.
				 */
				if (!advised_earlier)
					pacer->found_cached += n;
				os_only += n;
			}
			else if (!read_os(job, block, n))
				break;			/* the relation shrank under us */
			else
				os_only += n;
		}
		done += warmed;
		cursor_advance(&job->cur, warmed);
		if (measure)
		{
			double		us = elapsed_us(start);
			bool		ended;

			/* Advice no longer issued is skipped over, not caught up. */
			if (!advise && job->advised < done)
			{
				job->adv = job->cur;
				job->advised = done;
			}
			advice_lock(share);
			ended = advice_account(advice, warmed, us, job->advised - done,
								   window);
			if (ended)
				reported = *advice;
			advice_unlock(share);
			if (ended)
				advice_report(&reported);
		}
		if (warmed < n)
		{
			/* Out of free buffers: the rest goes to the OS cache. */
			pacer->buffers_full = true;
			job->mode = WC_MODE_READ;
		}
	}
	if (cursor_done(&job->cur))
	{
		gap = dropped_until_cursor(job, true);
		os_only += gap;
		dropped += gap;
	}
	if (pacer && pacer->pace &&
		(in_buffers > 0 || os_only > 0 || pacer->left_out > 0))
		pacer->pace(pacer, in_buffers, os_only);
	return done + dropped;
}

/*
 * Bring the given ranges of one fork into the cache in the given mode.
 * The caller holds a lock on rel and has checked that the ranges lie
 * within the fork.  Returns the number of blocks warmed.  With a pacer that
 * forbids eviction, blocks that do not fit in shared buffers any more are
 * read into the OS cache instead, and pacer->buffers_full is set.
 */
uint64
wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
			   const WarmRange *ranges, int nranges, WarmPacer *pacer)
{
	WarmJob		job;
	uint64		done = 0;
	char	   *path = wc_relpath(rel, fork);
	int			i;

	memset(&job, 0, sizeof(job));
	job.rel = rel;
	job.fork = fork;
	job.mode = (pacer && pacer->buffers_full && mode == WC_MODE_BUFFER) ?
		WC_MODE_READ : mode;
	job.pacer = pacer;
	job.use_stream = WC_HAVE_READ_STREAM && job.mode == WC_MODE_BUFFER &&
		!(pacer && pacer->no_evict);
	job.advice = !pacer ? &job.local_advice :
		pacer->advice_share ? &pacer->advice_share->advice : &pacer->advice;
	job.cur.ranges = job.adv.ranges = ranges;
	job.cur.nranges = job.adv.nranges = nranges;
	cursor_advance(&job.cur, 0);	/* skip empty ranges */
	cursor_advance(&job.adv, 0);
	job.sf[0].path = job.sf[1].path = path;
	job.sf[0].file = job.sf[1].file = -1;
	/*
	 * Prefault where this process copies the blocks; where I/O workers copy
	 * them, prefaulting would only contend with theirs.  The restore does it
	 * too: under its CPU budget, every cycle a fault costs is one that its
	 * reads cannot have.
	 */
	job.prefault = job.mode == WC_MODE_BUFFER &&
		!RelationUsesLocalBuffers(rel) &&
		(pacer == NULL || pacer->prefault) &&
		(wc_platform_shortcuts & WC_SHORTCUT_PREFAULT) &&
		(!job.use_stream || WC_STREAM_COPIES_HERE());
	for (i = 0; i < nranges; i++)
		job.prefault_left += ranges[i].count;

	/*
	 * The segment files are ours to close, whatever happens; a shared
	 * measurement counts the processes in their loops, and this one leaves
	 * it on every way out (see member_of).
	 */
	join_share(pacer);
	PG_TRY();
	{
		if (pacer && pacer->skip_os_cached && job.mode == WC_MODE_READ)
		{
			drop_os_cached(&job, ranges, nranges);
			cursor_advance(&job.cur, 0);
			cursor_advance(&job.adv, 0);
		}
		done = warm_loop(&job);
	}
	PG_FINALLY();
	{
		seg_close(&job.sf[0]);
		seg_close(&job.sf[1]);
		leave_share();
	}
	PG_END_TRY();

	if (job.stream)
	{
		Assert(read_stream_next_buffer(job.stream, NULL) == InvalidBuffer);
		read_stream_end(job.stream);
	}
	if (job.iobuf)
		pfree(job.iobuf);
	if (job.kept_ranges)
	{
		pfree(job.kept_ranges);
		pfree(job.dropped_before);
	}
	if (job.residency)
		pfree(job.residency);
	pfree(path);
	return done;
}
