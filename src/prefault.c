/*-------------------------------------------------------------------------
 *
 * prefault.c
 *		Faulting in the memory of unused shared buffers ahead of the
 *		copies that will fill them.
 *
 * Right after a start, most of the time of warming from the OS cache goes
 * to the kernel allocating and zeroing the pages of shared memory that
 * each buffer's first write touches, one page fault at a time.  In bulk,
 * ahead of the reads, that costs less, and another process can do it
 * meanwhile: warm() and the restore prefault the buffers they are about to
 * fill (engine.c), and the workers of a parallel warm do it for the caller
 * (parallel_warm.c).  pg_warmcache.platform_shortcuts turns it off.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/prefault.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "storage/bufmgr.h"

#include "pg_internals.h"
#include "prefault.h"

/* Linux 5.14; older kernels refuse it, and the pages are read instead. */
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif

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
