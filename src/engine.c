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
 * large contiguous pieces (lookahead.c), so that the reads the consumer
 * then does are page cache hits, and only while advice pays (advice.c).
 * Mode read reads whole I/O chunks at once; mode buffer loads blocks one
 * by one (15, 16) or through a read stream (17+), prefaulting the memory
 * of the buffers it is about to fill (prefault.c).  The window is sized
 * from maintenance_io_concurrency.
 *
 * The loop goes chunk by chunk.  Before each, it asks its pacer, if it has
 * one, one question (engine.h: pace()), telling what it did since it last
 * asked; the answer says what to do with the chunk (warm it, read it into
 * the OS cache only, leave it out, or stop) and how far to advise beyond
 * it.  The restore's pacer (pacer.c) sleeps for its budgets in there;
 * warm() and warm_table() (sql.c, warm.c) have none and run at full speed.
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

/* A window scaled to large pieces stays within this, unless asked for more. */
#define WC_MAX_SCALED_WINDOW	8192

/* Blocks whose OS-cache residency one mincore() call asks for. */
#define WC_RESIDENCY_SPAN	256


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

/* A plan to warm every chunk, advising window blocks beyond it. */
ChunkPlan
wc_default_plan(int window)
{
	ChunkPlan	plan;

	plan.action = WC_CHUNK_WARM;
	plan.io_blocks = 0;
	plan.window = window;
	plan.advice_cap = -1;
	return plan;
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

	if (wc_cursor_done(c))
		return InvalidBlockNumber;
	block = wc_cursor_block(c);
	wc_cursor_advance(c, 1);
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
 * never through a read stream: a stream allocates the buffers of a combined
 * read at once, after its callback looked at the free list, so it can evict up
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
	if (wc_seg_file(sf, block) < 0 || sf->unmappable)
		return false;
	if (sf->map == NULL)
	{
		char	   *path = wc_seg_path(sf, sf->segno);
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
 * the CPUs busy asks before it reads (WC_CHUNK_OS_CACHE_UNCACHED): its aim
 * is the OS cache, and where that holds the chunk already, reading it is a
 * copy, CPU taken from queries that are using all of it.  Not where that
 * cannot be known.
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
 * and with done after the last range too, not reported yet; the pacer is
 * told they were found cached, so it does not charge them to the rate cap.
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
	File		f = wc_seg_file(sf, block);
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
		File		f = wc_cursor_done(&job->adv) ? -1 :
			wc_seg_file(&job->sf[1], wc_cursor_block(&job->adv));

		job->piece = f >= 0 && (wc_platform_shortcuts & WC_SHORTCUT_DEVICE_PIECE) ?
			wc_device_piece(f) : WC_IO_BLOCKS;
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

static double
elapsed_us(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MICROSEC(now);
}

/*
 * Warm the n blocks of the chunk from block on, and add what became of
 * them to *report; *warmed is how many were handled (fewer than n where
 * shared buffers filled up).  os_cache_only: the pacer wants the chunk in
 * the OS cache only; chunk_cached: the OS cache holds it already, and
 * advised_earlier: because of our advice.  Returns false if the relation
 * is shorter than the chunk.
 */
static bool
warm_chunk(WarmJob *job, BlockNumber block, BlockNumber n, bool os_cache_only,
		   bool chunk_cached, bool advised_earlier, BlockNumber *warmed,
		   ChunkReport *report)
{
	WarmPacer  *pacer = job->pacer;

	if (job->mode == WC_MODE_BUFFER && !os_cache_only)
	{
		*warmed = load_buffers(job, block, n);
		report->in_buffers += *warmed;
		return true;
	}
	*warmed = n;
	if (job->mode == WC_MODE_PREFETCH)
		report->os_only += n;	/* the advice was the work */
	else if ((os_cache_only || (pacer && pacer->skip_in_buffers)) &&
			 all_in_buffers(job, block, n))
	{
		/* In shared buffers already: where buffers were the aim, done. */
		if (job->mode == WC_MODE_BUFFER)
			report->in_buffers += n;
		else
			report->os_only += n;
	}
	else if (chunk_cached)
	{
		/*
		 * In the OS cache already: done.  Not charged to the rate cap, unless
		 * it was our advice that read it.
		 */
		if (!advised_earlier)
			report->found_cached += n;
		report->os_only += n;
	}
	else if (!read_os(job, block, n))
		return false;
	else
		report->os_only += n;
	return true;
}

/* One chunk of the loop, as it goes. */
typedef struct ChunkStep
{
	BlockNumber block;			/* its first block */
	BlockNumber n;				/* and its length */
	bool		measure;		/* timed for the measurement of advice */
	instr_time	start;
	bool		advise;			/* advised ahead of */
	uint64		window;			/* the look-ahead, in blocks */
	bool		advised_earlier;	/* our advice of earlier chunks reached it */
	bool		cached;			/* left out: the OS cache holds it */
} ChunkStep;

/*
 * Before the chunk step describes, in this order: decide whether to advise
 * (where advice is not the work itself, it is timed with the chunk and
 * issued only while it pays), ask whether the OS cache holds the chunk if
 * the plan may leave it out so, then advise ahead.
 */
static void
advise_ahead(WarmJob *job, const ChunkPlan *plan, uint64 done, ChunkStep *step)
{
	WarmAdviceShare *share = job->pacer ? job->pacer->advice_share : NULL;
	BlockNumber piece = 0;

	step->measure = job->mode != WC_MODE_PREFETCH && plan->window > 0;
	step->advise = false;
	step->window = 0;
	if (step->measure)
	{
		bool		measuring;

		INSTR_TIME_SET_CURRENT(step->start);
		step->advise = wc_advice_decide(job->advice, share, &measuring);
		/* The advice file is opened only once advice is wanted. */
		if (step->advise || measuring)
			step->window = scaled_window(job, plan->window, &piece);
	}

	/*
	 * Before this round's advice: mincore() counts a page once its read is
	 * done, so what it finds now was there, or came in by advice of an
	 * earlier round.
	 */
	step->advised_earlier = job->advised > done;
	step->cached = plan->action == WC_CHUNK_OS_CACHE_UNCACHED &&
		job->mode == WC_MODE_BUFFER &&
		chunk_in_os_cache(job, step->block, step->n);

	if (job->mode == WC_MODE_PREFETCH)
		wc_advise_until(&job->adv, &job->advised, done + step->n, &job->sf[1],
						job_piece(job));
	else if (step->advise)
	{
		if (plan->advice_cap >= 0)
			step->window = Min(step->window, (uint64) plan->advice_cap);
		wc_advise_until(&job->adv, &job->advised, done + step->n + step->window,
						&job->sf[1], piece);
	}
}

/*
 * The loop of wc_warm_ranges(): chunk by chunk, ask the pacer, advise
 * ahead, warm the chunk, account for it.  Returns the blocks warmed.
 */
static uint64
warm_loop(WarmJob *job)
{
	WarmPacer  *pacer = job->pacer;
	WarmAdviceShare *share = pacer ? pacer->advice_share : NULL;
	ChunkPlan	plan = pacer ? pacer->plan : wc_default_plan(wc_default_window());
	ChunkReport report;			/* since the pacer last asked */
	uint64		done = 0;
	uint64		dropped = 0;	/* left out as in the OS cache already */
	uint64		gap;

	memset(&report, 0, sizeof(report));
	while (!wc_cursor_done(&job->cur))
	{
		ChunkStep	step;
		BlockNumber warmed;

		CHECK_FOR_INTERRUPTS();
		gap = dropped_until_cursor(job, false);
		report.os_only += gap;
		report.found_cached += gap;
		dropped += gap;
		if (pacer && pacer->pace)
		{
			plan = pacer->pace(pacer, &report);
			memset(&report, 0, sizeof(report));
			if (plan.action == WC_CHUNK_STOP)
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
		 * passed over: no read, no advice, reported.
		 */
		if (plan.action == WC_CHUNK_LEAVE_OUT)
		{
			BlockNumber n = wc_cursor_piece(&job->cur, WC_IO_BLOCKS);

			report.left_out += n;
			done += n;
			wc_cursor_advance(&job->cur, n);
			if (job->advised < done)
			{
				job->adv = job->cur;
				job->advised = done;
			}
			continue;
		}

		step.n = wc_cursor_piece(&job->cur, plan.io_blocks > 0 ?
								 Min(plan.io_blocks, WC_IO_BLOCKS) : WC_IO_BLOCKS);
		step.block = wc_cursor_block(&job->cur);
		advise_ahead(job, &plan, done, &step);
		if (!warm_chunk(job, step.block, step.n,
						plan.action == WC_CHUNK_OS_CACHE ||
						plan.action == WC_CHUNK_OS_CACHE_UNCACHED,
						step.cached, step.advised_earlier, &warmed, &report))
			break;				/* the relation shrank under us */
		done += warmed;
		wc_cursor_advance(&job->cur, warmed);
		if (step.measure)
		{
			/* Advice no longer issued is skipped over, not caught up. */
			if (!step.advise && job->advised < done)
			{
				job->adv = job->cur;
				job->advised = done;
			}
			wc_advice_account(job->advice, share, warmed,
							  elapsed_us(step.start), job->advised - done,
							  step.window);
		}
		if (warmed < step.n)
		{
			/* Out of free buffers: the rest goes to the OS cache. */
			pacer->buffers_full = true;
			job->mode = WC_MODE_READ;
		}
	}
	if (wc_cursor_done(&job->cur))
	{
		gap = dropped_until_cursor(job, true);
		report.os_only += gap;
		report.found_cached += gap;
		dropped += gap;
	}
	if (pacer && pacer->pace &&
		(report.in_buffers > 0 || report.os_only > 0 || report.left_out > 0))
		(void) pacer->pace(pacer, &report);
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
	wc_cursor_advance(&job.cur, 0);	/* skip empty ranges */
	wc_cursor_advance(&job.adv, 0);
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
	wc_advice_join(pacer ? pacer->advice_share : NULL);
	PG_TRY();
	{
		if (pacer && pacer->skip_os_cached && job.mode == WC_MODE_READ)
		{
			drop_os_cached(&job, ranges, nranges);
			wc_cursor_advance(&job.cur, 0);
			wc_cursor_advance(&job.adv, 0);
		}
		done = warm_loop(&job);
	}
	PG_FINALLY();
	{
		wc_seg_close(&job.sf[0]);
		wc_seg_close(&job.sf[1]);
		wc_advice_leave();
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
