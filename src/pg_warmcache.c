/*-------------------------------------------------------------------------
 *
 * pg_warmcache.c
 *		Module set-up (_PG_init), and the SQL functions that dump, restore
 *		and report.
 *
 * The settings are in settings.c, the shared state and its state changes
 * in shmem.c.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pg_warmcache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "autowarm.h"
#include "compat.h"
#include "dumpfile.h"
#include "parallel_warm.h"
#include "settings.h"
#include "shmem.h"

WC_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(warmcache_dump_now);
PG_FUNCTION_INFO_V1(warmcache_restore_now);
PG_FUNCTION_INFO_V1(warmcache_restore_abort);
PG_FUNCTION_INFO_V1(warmcache_status);
PG_FUNCTION_INFO_V1(warmcache_blocks);

void
_PG_init(void)
{
	wc_define_settings();
	if (!process_shared_preload_libraries_in_progress)
		return;
	wc_reserve_shared();
	wc_register_autowarm_worker();
}

static void
end_operation_callback(int code, Datum arg)
{
	wc_end_operation();
}

/*
 * warmcache_dump_now(): dump now, in this backend; returns blocks written.
 */
Datum
warmcache_dump_now(PG_FUNCTION_ARGS)
{
	int64		n = 0;

	wc_require_shared();
	if (!wc_begin_operation(WC_STATE_DUMPING, true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot dump while a restore is in progress"),
				 errdetail("A dump now would replace the saved block list with the part restored so far."),
				 errhint("Wait for the restore to end, or stop it with warmcache_restore_abort().")));

	PG_ENSURE_ERROR_CLEANUP(end_operation_callback, (Datum) 0);
	{
		n = wc_dump(false, 0);
		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		wc_shared->restore_incomplete = false;
		LWLockRelease(wc_shared->lock);
	}
	PG_END_ENSURE_ERROR_CLEANUP(end_operation_callback, (Datum) 0);
	wc_end_operation();
	PG_RETURN_INT64(n);
}

/*
 * warmcache_restore_now(mode): ask the worker to restore the saved blocks;
 * returns how many blocks the file holds.
 */
Datum
warmcache_restore_now(PG_FUNCTION_ARGS)
{
	WarmMode	mode;
	WarmFileHeader hdr;
	char	   *problem;
	WarmState	state;
	bool		requested;

	wc_require_shared();
	if (PG_ARGISNULL(0))
		mode = (WarmMode) wc_restore_mode;
	else
		mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	wc_check_mode_supported(mode);

	switch (wc_check_file(WC_DUMP_FILE, &hdr, &problem))
	{
		case WC_FILE_MISSING:
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("there is no dump file \"%s\" to restore", WC_DUMP_FILE),
					 errhint("Run warmcache_dump_now() first.")));
			break;
		case WC_FILE_BAD:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("dump file \"%s\" is not usable: %s", WC_DUMP_FILE, problem),
					 errhint("Run warmcache_dump_now() to write a new one.")));
			break;
		case WC_FILE_OK:
			break;
	}

	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	state = wc_shared->state;
	requested = wc_shared->restore_requested;
	if (wc_shared->worker_pid == 0 || wc_shared->worker_latch == NULL)
	{
		LWLockRelease(wc_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the pg_warmcache worker is not running"),
				 errhint("Check the server log for why it stopped; it is started again within a minute.")));
	}
	if (state != WC_STATE_IDLE || requested)
	{
		LWLockRelease(wc_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot restore while a %s is in progress",
						(state == WC_STATE_DUMPING) ? "dump" : "restore")));
	}
	wc_shared->restore_requested = true;
	wc_shared->request_mode = mode;
	SetLatch(wc_shared->worker_latch);
	LWLockRelease(wc_shared->lock);

	PG_RETURN_INT64((int64) hdr.nblocks);
}

/*
 * warmcache_restore_abort(): stop the running restore.  The saved file is
 * kept: automatic dumps do not replace it with a smaller one until a dump
 * is asked for or a restore completes.
 */
Datum
warmcache_restore_abort(PG_FUNCTION_ARGS)
{
	bool		running;

	wc_require_shared();
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	running = wc_shared->state == WC_STATE_RESTORING || wc_shared->restore_requested;
	if (running)
	{
		wc_shared->abort_requested = true;
		if (wc_shared->worker_latch)
			SetLatch(wc_shared->worker_latch);
	}
	LWLockRelease(wc_shared->lock);
	PG_RETURN_BOOL(running);
}

static Datum
ts_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum(t);
}

/*
 * warmcache_status(): one row describing the worker, the last dump and the
 * current or last restore.  The 1.0 version of the SQL function has the
 * first 16 columns only; the row is cut to what the caller's has.  The body
 * is one value per column, in column order, so it grows with the columns.
 */
Datum
warmcache_status(PG_FUNCTION_ARGS)
{
#define STATUS_COLS 31
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS];
	bool		nulls[STATUS_COLS];
	WarmShared	s;
	uint64		done;
	uint64		os;
	uint64		skip[WC_SKIP_REASONS];
	uint64		skipped = 0;
	double		elapsed = 0;
	double		rate = 0;
	double		progress = 0;
	const char *state;
	bool		started;
	bool		following;
	bool		follow_pass_due;
	int			i = 0;
	int			r;

	wc_require_shared();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(wc_shared->lock, LW_SHARED);
	memcpy(&s, wc_shared, offsetof(WarmShared, restore_blocks_done));
	LWLockRelease(wc_shared->lock);
	done = pg_atomic_read_u64(&wc_shared->restore_blocks_done);
	os = pg_atomic_read_u64(&wc_shared->restore_blocks_os);
	for (r = 0; r < WC_SKIP_REASONS; r++)
		skipped += skip[r] = pg_atomic_read_u64(&wc_shared->restore_skipped[r]);
	started = (s.restore_started_at != 0);

	/*
	 * A new followed file is restored by the pass that follows: from the
	 * moment followed_dump_at names it, the state says restoring, so that
	 * "followed that dump and idle" means its pass ended.  A standby that
	 * stopped following, or was promoted, has no pass due.
	 */
	follow_pass_due = s.follow_pass_due && RecoveryInProgress() &&
		wc_follow_primary != WC_FOLLOW_OFF;

	if (started)
	{
		TimestampTz end = s.restore_finished_at ? s.restore_finished_at :
		GetCurrentTimestamp();

		elapsed = (end - s.restore_started_at) / 1000000.0;
		if (elapsed > 0)
		{
			uint64		found = pg_atomic_read_u64(&wc_shared->restore_found_cached);

			/*
			 * The rate is what was read: blocks found in the OS cache cost
			 * the device nothing (and the rate cap does not count them).
			 * The time left goes by all the blocks done.
			 */
			rate = (done - Min(found, done)) * (double) BLCKSZ /
				(1024.0 * 1024.0) / elapsed;
			progress = done * (double) BLCKSZ / (1024.0 * 1024.0) / elapsed;
		}
	}

	memset(nulls, 0, sizeof(nulls));
	state = s.state == WC_STATE_DUMPING ? "dumping" :
		(s.state == WC_STATE_RESTORING || s.restore_requested ||
		 follow_pass_due) ? "restoring" : "idle";
	values[i++] = CStringGetTextDatum(state);
	values[i] = Int32GetDatum(s.worker_pid);
	nulls[i++] = (s.worker_pid == 0);
	values[i] = ts_or_null(s.last_dump_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.last_dump_blocks);
	nulls[i++] = (s.last_dump_at == 0);
	values[i] = Float8GetDatum(s.last_dump_seconds);
	nulls[i++] = (s.last_dump_at == 0 || s.last_dump_seconds < 0);
	values[i] = CStringGetTextDatum(wc_mode_name(s.restore_mode));
	nulls[i++] = !started;
	values[i] = ts_or_null(s.restore_started_at, &nulls[i]);
	i++;
	values[i] = ts_or_null(s.restore_finished_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.restore_blocks_total);
	nulls[i++] = !started;
	values[i] = Int64GetDatum((int64) done);
	nulls[i++] = !started;
	values[i] = Int64GetDatum((int64) skipped);
	nulls[i++] = !started;
	values[i] = Int64GetDatum((int64) os);
	nulls[i++] = !started;
	values[i] = Float8GetDatum(rate);
	nulls[i++] = !started;
	/* seconds left, at the pace so far; only while running */
	if (s.state == WC_STATE_RESTORING && s.restore_finished_at == 0 && progress > 0)
	{
		double		left = (double) s.restore_blocks_total - done - skipped;

		values[i] = Float8GetDatum(Max(left, 0) * BLCKSZ / (1024.0 * 1024.0) / progress);
	}
	else
		nulls[i] = true;
	i++;
	values[i++] = BoolGetDatum(s.restore_incomplete);
	values[i++] = BoolGetDatum(s.abort_requested);

	/* 1.1 */
	values[i] = CStringGetTextDatum(s.incomplete_reason);
	nulls[i++] = !s.restore_incomplete || s.restore_finished_at == 0;
	for (r = 0; r < WC_SKIP_REASONS; r++)
	{
		values[i] = Int64GetDatum((int64) skip[r]);
		nulls[i++] = !started;
	}
	values[i] = Int64GetDatum(s.restore_os_tier_total);
	nulls[i++] = !started;
	values[i] = Int64GetDatum((int64) pg_atomic_read_u64(&wc_shared->restore_os_tier_done));
	nulls[i++] = !started;

	/* 1.2: what a restore read, and on a standby what it follows */
	values[i] = CStringGetTextDatum(wc_source_name(s.restore_source));
	nulls[i++] = !started;
	following = wc_follow_primary != WC_FOLLOW_OFF || s.follow_state == WC_FOLLOW_PROMOTED;
	values[i] = CStringGetTextDatum(wc_follow_state_name(s.follow_state));
	nulls[i++] = !following;
	values[i] = ts_or_null(s.followed_dumped_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.followed_blocks - s.followed_os_tier);
	nulls[i++] = s.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.followed_os_tier);
	nulls[i++] = s.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.followed_warm);
	nulls[i++] = s.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.followed_os_tier_warm);
	nulls[i++] = s.followed_dumped_at == 0;

	/* 1.4: the database a restore waits for, a command wanting it */
	values[i] = ObjectIdGetDatum(s.restore_waiting_db);
	nulls[i++] = s.state != WC_STATE_RESTORING || !OidIsValid(s.restore_waiting_db);
	Assert(i == STATUS_COLS);
	Assert(tupdesc->natts <= STATUS_COLS);

	tupdesc = BlessTupleDesc(tupdesc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * warmcache_blocks(): the saved file, a row per block.  From 1.1 a row also
 * says its tier, and blocks of the OS tier have no rank.
 */
Datum
warmcache_blocks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarmFileHeader hdr;
	WarmFileReader r;
	WarmRun		run;
	char	   *problem;

	/* The 1.0 function has no tier column: the row is cut to its six. */
	InitMaterializedSRF(fcinfo, 0);
	Assert(rsinfo->setDesc->natts <= 7);

	switch (wc_check_file(WC_DUMP_FILE, &hdr, &problem))
	{
		case WC_FILE_MISSING:
			return (Datum) 0;
		case WC_FILE_BAD:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("dump file \"%s\" is not usable: %s", WC_DUMP_FILE, problem)));
			break;
		case WC_FILE_OK:
			break;
	}

	if (!wc_reader_open(&r, WC_DUMP_FILE, false))
		return (Datum) 0;
	while (wc_reader_next(&r, &run))
	{
		bool		os = (run.rank == WC_RANK_OS);
		uint32		b;

		for (b = 0; b < run.count; b++)
		{
			Datum		values[7];
			bool		nulls[7] = {0};

			if ((b & 1023) == 0)
				CHECK_FOR_INTERRUPTS();
			values[0] = ObjectIdGetDatum(run.db);
			values[1] = ObjectIdGetDatum(run.spc);
			values[2] = ObjectIdGetDatum(run.relnumber);
			values[3] = CStringGetTextDatum(forkNames[run.fork]);
			values[4] = Int64GetDatum((int64) run.start + b);
			values[5] = Int32GetDatum((int32) run.rank);
			nulls[5] = os;
			values[6] = CStringGetTextDatum(os ? "os" : "buffer");
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	wc_reader_close(&r);
	return (Datum) 0;
}
