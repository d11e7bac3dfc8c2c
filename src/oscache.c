/*-------------------------------------------------------------------------
 *
 * oscache.c
 *		What the OS page cache holds of a relation file: the residency of
 *		its blocks, and a count of the cached pages of a stretch of it.
 *
 * PostgreSQL has no interface for this; the operating system has two.
 * mincore() says, page by page, which pages of a mapping are resident: a
 * block counts when all of its pages are.  cachestat() (Linux 6.5) counts
 * the cached pages of a range of an open file without mapping it.  The
 * dump's walk of the relation files (oswalk.c), the engine's skipping of
 * cached chunks, the estimate's probe and warmcache_relations() use them.
 * Nothing here reads a page: a mapping is never touched.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/oscache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#include <unistd.h>

#include "oscache.h"
#include "settings.h"

/*
 * Linux's cachestat() (6.5 and later), called by its number where the C
 * library and the headers predate it: 451 on every architecture with the
 * common system call table.
 */
#if defined(__linux__) && !defined(__NR_cachestat) && \
	(defined(__x86_64__) || defined(__aarch64__))
#define __NR_cachestat 451
#endif

/*
 * Which of the n blocks from block off on, of a relation segment mapped
 * read-only at map (never touched), the OS page cache holds: resident[i]
 * for block off + i.  vec is mincore()'s scratch vector,
 * WC_RESIDENCY_VEC(n) bytes.  A block counts when all of its OS pages are
 * resident.  Returns false when that cannot be known: pages that are not
 * a whole fraction of a block, or mincore() refused.
 */
bool
wc_block_residency(const char *map, BlockNumber off, BlockNumber n,
				   unsigned char *vec, bool *resident)
{
	static size_t page_size = 0;
	size_t		per_block;
	BlockNumber b;

	if (page_size == 0)
		page_size = (size_t) sysconf(_SC_PAGESIZE);
	if (page_size < 4096 || BLCKSZ % page_size != 0)
		return false;
	per_block = BLCKSZ / page_size;
	if (mincore((void *) (map + (size_t) off * BLCKSZ), (size_t) n * BLCKSZ,
				vec) != 0)
		return false;
	for (b = 0; b < n; b++)
	{
		size_t		i;

		resident[b] = true;
		for (i = 0; i < per_block && resident[b]; i++)
			resident[b] = (vec[(size_t) b * per_block + i] & 1) != 0;
	}
	return true;
}

/*
 * How much of the len bytes from off on of the open file fd the page cache
 * holds, counted without mapping it: cachestat() counts the cached pages of
 * a range.  Most relation files are cached wholly or not at all, and for
 * those the count is the answer; a walk then spares their mapping and the
 * mincore() calls, half of its cost per file (docs/rationale.md, "Costs at
 * scale").  A page that is being read counts as cached here, while
 * mincore() waits for the read to end: a difference of one moment.  Where
 * the call is missing (an older kernel, another system) or refused, it is
 * not asked again.
 */
SegmentResidency
wc_count_cached_pages(int fd, Size off, Size len)
{
#ifdef __NR_cachestat
	static bool missing = false;
	struct
	{
		uint64		off;
		uint64		len;
	}			range;
	struct
	{
		uint64		nr_cache;
		uint64		nr_dirty;
		uint64		nr_writeback;
		uint64		nr_evicted;
		uint64		nr_recently_evicted;
	}			count;
	long		page_size = sysconf(_SC_PAGESIZE);

	if (missing || !(wc_platform_shortcuts & WC_SHORTCUT_CACHESTAT) ||
		page_size <= 0 || off % page_size != 0 || len % page_size != 0)
		return WC_SEGMENT_SOME;
	range.off = off;
	range.len = len;
	if (syscall(__NR_cachestat, fd, &range, &count, 0) != 0)
	{
		if (errno == ENOSYS || errno == EPERM)
			missing = true;
		return WC_SEGMENT_SOME;
	}
	if (count.nr_cache == 0)
		return WC_SEGMENT_NONE;
	if (count.nr_cache == len / page_size)
		return WC_SEGMENT_ALL;
#endif
	return WC_SEGMENT_SOME;
}
