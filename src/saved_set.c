/*-------------------------------------------------------------------------
 *
 * saved_set.c
 *		The saved set's size per tier, for warmcache_saved_tiers() (sql.c):
 *		for monitoring, without a row per block.
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

