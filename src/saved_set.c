/*-------------------------------------------------------------------------
 *
 * saved_set.c
 *		warmcache_saved_tiers(): the saved set's size per tier, for
 *		monitoring, without a row per block.
 *
 * warmcache_blocks() returns a row per block, too many to count at every
 * scrape of a metrics exporter.  This function reads the dump file's run
 * runs only (a few bytes per run of blocks) and sums them per tier; a
 * backend that asks again for the same file (same dump time and run count
 * in its header) gets the sums it made last time without reading further
 * than the header.  It needs neither the shared state nor a lock: the
 * file is replaced by a rename, so an open file is always a whole one.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/saved_set.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "dumpfile.h"

PG_FUNCTION_INFO_V1(warmcache_saved_tiers);

/* This backend's last sums, and the file header they belong to. */
static bool cached_valid = false;
static int64 cached_dumped_at;
static uint64 cached_nruns;
static int64 cached_buffer_tier;
static int64 cached_os_tier;

static void
sum_tiers(int64 *buffer_tier, int64 *os_tier, bool *found)
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
 * warmcache_saved_tiers(): a row per tier of the saved file (buffer, os)
 * with its blocks and bytes; no rows if there is no file.
 */
Datum
warmcache_saved_tiers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		tiers[2];
	const char *names[2] = {"buffer", "os"};
	bool		found;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	sum_tiers(&tiers[0], &tiers[1], &found);
	if (!found)
		return (Datum) 0;
	for (i = 0; i < 2; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {0};

		values[0] = CStringGetTextDatum(names[i]);
		values[1] = Int64GetDatum(tiers[i]);
		values[2] = Int64GetDatum(tiers[i] * (int64) BLCKSZ);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
