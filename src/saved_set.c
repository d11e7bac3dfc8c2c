/*-------------------------------------------------------------------------
 *
 * saved_set.c
 *		The saved set's size per tier, for warmcache_saved_tiers() (sql.c):
 *		for monitoring, without a row per block; and its distinct blocks,
 *		for warmcache_estimate() (estimate.c).
 *
 * warmcache_blocks() returns a row per block, too many to count at every
 * scrape of a metrics exporter.  This reads the dump file's runs only (a
 * few bytes per run of blocks) and sums them per tier; a backend that
 * asks again for the same file (same dump time and run count in its
 * header) gets the sums it made last time without reading further than
 * the header.  It needs neither the shared state nor a lock: the file is
 * replaced by a rename, so an open file is always a whole one.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/saved_set.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "dumpfile.h"
#include "saved_set.h"

/* This backend's last sums, and the file header they belong to. */
static bool cached_valid = false;
static int64 cached_dumped_at;
static uint64 cached_nruns;
static int64 cached_buffer_tier;
static int64 cached_os_tier;
static int64 cached_distinct_dumped_at;
static uint64 cached_distinct_nruns;
static int64 cached_distinct = -1;	/* not counted yet */

/* count_distinct_once(): a dump replaced the file while it was read. */
#define WC_FILE_REPLACED	(-2)

/*
 * The blocks of each tier of the saved file; *found says whether there is
 * one.
 */
void
wc_sum_saved_tiers(int64 *buffer_tier, int64 *os_tier, bool *found)
{
	WarmFileReader r;
	WarmRun		run;
	uint64		n = 0;

	*found = wc_reader_open(&r, WC_DUMP_FILE, false);
	if (!*found)
		return;
	if (cached_valid && r.hdr.dumped_at == cached_dumped_at &&
		r.hdr.nruns == cached_nruns)
	{
		*buffer_tier = cached_buffer_tier;
		*os_tier = cached_os_tier;
		wc_reader_close(&r);
		return;
	}
	*buffer_tier = *os_tier = 0;
	while (wc_reader_next(&r, &run))
	{
		if ((++n & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		if (run.rank == WC_RANK_OS)
			*os_tier += run.count;
		else
			*buffer_tier += run.count;
	}
	cached_dumped_at = r.hdr.dumped_at;
	cached_nruns = r.hdr.nruns;
	cached_buffer_tier = *buffer_tier;
	cached_os_tier = *os_tier;
	cached_valid = true;
	wc_reader_close(&r);
}

/*
 * One count for wc_count_distinct_saved(): -1 if there is no saved file,
 * WC_FILE_REPLACED if a dump replaced it between the passes.
 */
static int64
count_distinct_once(void)
{
	WarmFileReader r;
	WarmFileHeader hdr;
	WarmRunMerge merge;
	WarmRun		run;
	WarmRun		key;
	uint64		first[WC_RANK_SLOTS];
	uint64		nruns[WC_RANK_SLOTS];
	uint64		covered = 0;	/* of the key, blocks below are counted */
	int64		distinct = 0;
	uint64		n = 0;
	bool		have_key = false;
	int			slot;

	/* Where each rank's runs begin. */
	if (!wc_reader_open(&r, WC_DUMP_FILE, false))
		return -1;
	hdr = r.hdr;
	if (cached_distinct >= 0 && hdr.dumped_at == cached_distinct_dumped_at &&
		hdr.nruns == cached_distinct_nruns)
	{
		wc_reader_close(&r);
		return cached_distinct;
	}
	memset(nruns, 0, sizeof(nruns));
	while (wc_reader_next(&r, &run))
	{
		if ((++n & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		if (run.rank > WC_MAX_RANK && run.rank != WC_RANK_OS)
			continue;			/* the reader does not check ranks */
		slot = wc_rank_slot(run.rank);
		if (nruns[slot]++ == 0)
			first[slot] = wc_reader_position(&r);
	}
	wc_reader_close(&r);

	merge.n = 0;
	for (slot = WC_RANK_SLOTS - 1; slot >= 0; slot--)
	{
		if (nruns[slot] == 0)
			continue;
		if (!wc_merge_add(&merge, WC_DUMP_FILE, false, first[slot],
						  nruns[slot], &hdr))
		{
			wc_merge_close(&merge);
			return WC_FILE_REPLACED;
		}
	}
	while (wc_merge_next(&merge, &run))
	{
		uint64		end = (uint64) run.start + run.count;

		if ((++n & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!have_key || run.db != key.db || run.spc != key.spc ||
			run.relnumber != key.relnumber || run.fork != key.fork)
		{
			key = run;
			have_key = true;
			covered = 0;
		}
		if (end > covered)
		{
			distinct += end - Max(covered, (uint64) run.start);
			covered = end;
		}
	}
	wc_merge_close(&merge);
	cached_distinct_dumped_at = hdr.dumped_at;
	cached_distinct_nruns = hdr.nruns;
	cached_distinct = distinct;
	return distinct;
}

/*
 * The saved set's distinct blocks, both tiers together: a block may stand
 * in the OS tier and in the buffer tier (the page cache holds most of what
 * shared buffers hold, as PostgreSQL reads through it), and, moved while
 * the dump scanned, in two ranks of the buffer tier.  What a restore reads
 * from the device, and what queries bring back by themselves, is each
 * block once.  -1 if there is no saved file.
 *
 * The runs of each rank are in physical order, so the ranks merged give
 * each relation fork's runs in order of their start, and their union is
 * counted in one pass with memory for one reader per rank.
 */
int64
wc_count_distinct_saved(void)
{
	int			attempt;

	for (attempt = 0; attempt < 3; attempt++)
	{
		int64		distinct = count_distinct_once();

		if (distinct != WC_FILE_REPLACED)
			return distinct;
	}
	return -1;
}
