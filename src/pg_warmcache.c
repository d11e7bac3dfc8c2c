/*-------------------------------------------------------------------------
 *
 * pg_warmcache.c
 *		Module set-up, shared state, and the SQL functions that dump,
 *		restore and report.
 *
 * Loaded through shared_preload_libraries, the module reserves a small
 * shared state (pg_warmcache.h: WarmShared) and registers the autowarm
 * worker (autowarm.c).  Without preloading, warm() and warm_table() work, and
 * the functions that need the shared state say that it is missing.
 *
 * Dumps and restores exclude each other: the state field says which one
 * runs, under the module's LWLock, and a condition variable wakes whoever
 * waits for it to change.  A dump asked for while another runs waits for
 * it; a dump asked for during a restore is refused, because it would
 * replace the saved set with the part restored so far.
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
#include "dumpfile.h"
#include "parallel_warm.h"
#include "pg_warmcache.h"
#include "readiness.h"

WC_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(warmcache_dump_now);
PG_FUNCTION_INFO_V1(warmcache_restore_now);
PG_FUNCTION_INFO_V1(warmcache_restore_abort);
PG_FUNCTION_INFO_V1(warmcache_status);
PG_FUNCTION_INFO_V1(warmcache_blocks);

/*---- GUC variables ----*/

/* A dump's chunk is one allocation: at most MaxAllocSize. */
#define WC_MAX_SORT_CHUNK	((int) (MaxAllocSize / sizeof(WarmRun)))

bool		wc_autowarm = true;
int			wc_dump_interval = 300;
int			wc_restore_mode = WC_MODE_BUFFER;
int			wc_restore_workers = 2;
int			wc_max_restore_rate = 0;
bool		wc_restore_yield = false;
int			wc_sort_chunk = 1024 * 1024;
bool		wc_dump_os_cache = true;
int			wc_follow_primary = WC_FOLLOW_OFF;
int			wc_max_warm_workers = 2;
int			wc_min_parallel_warm_size = 64 * 1024 * 1024 / BLCKSZ;
int			wc_warm_worker_delay = 0;

static const struct config_enum_entry mode_options[] = {
	{"prefetch", WC_MODE_PREFETCH, false},
	{"read", WC_MODE_READ, false},
	{"buffer", WC_MODE_BUFFER, false},
	{NULL, 0, false}
};

static const struct config_enum_entry follow_options[] = {
	{"off", WC_FOLLOW_OFF, false},
	{"os", WC_FOLLOW_OS, false},
	{"buffer", WC_FOLLOW_BUFFER, false},
	{NULL, 0, false}
};

/*---- Shared state ----*/

WarmShared *wc_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void wc_shmem_request(void);
static void wc_shmem_startup(void);

void
_PG_init(void)
{
	DefineCustomBoolVariable("pg_warmcache.autowarm",
							 "Restores the saved blocks at start and dumps them periodically and at shutdown.",
							 NULL,
							 &wc_autowarm,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.dump_interval",
							"Time between dumps of the buffer cache's block list.",
							"0 dumps only at shutdown.",
							&wc_dump_interval,
							300, 0, INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warmcache.restore_mode",
							 "How restored blocks are warmed: into shared buffers, or only into the OS cache.",
							 NULL,
							 &wc_restore_mode,
							 WC_MODE_BUFFER,
							 mode_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.restore_workers",
							"Databases restored at the same time, one worker each.",
							NULL,
							&wc_restore_workers,
							2, 1, WC_MAX_RESTORE_WORKERS,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.max_restore_rate",
							"Upper limit on the restore's read rate, in megabytes per second.",
							"0 sets no limit.",
							&wc_max_restore_rate,
							0, 0, INT_MAX / 2,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warmcache.restore_yield",
							 "Makes the restore read small pieces while queries wait for a read.",
							 "For workloads that read outside the saved set: it halves the restore's rate where I/O operations are the limit.",
							 &wc_restore_yield,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_warmcache.dump_os_cache",
							 "Dumps also which blocks of the relation files the OS page cache holds, and restores them into it.",
							 NULL,
							 &wc_dump_os_cache,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warmcache.follow_primary",
							 "On a standby, keeps the primary's hot set in this server's caches.",
							 "off: no; os: in the OS page cache; buffer: also in free shared buffers. "
							 "At promotion the set is loaded into shared buffers.",
							 &wc_follow_primary,
							 WC_FOLLOW_OFF,
							 follow_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
	/*
	 * The server's budget of warm workers: superuser only, so that no user
	 * can take more worker slots than the DBA allowed.  The threshold may
	 * stay the user's: lowering it only splits smaller relations, among no
	 * more workers than the budget allows.
	 */
	DefineCustomIntVariable("pg_warmcache.max_warm_workers",
							"Background workers that warm() and warm_table() may run at once, in all sessions together.",
							"0 warms in the calling process only.  Takes effect only with the library preloaded.",
							&wc_max_warm_workers,
							2, 0, WC_MAX_WARM_WORKERS,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warmcache.min_parallel_warm_size",
							"Smallest relation fork that warm() and warm_table() split among workers.",
							NULL,
							&wc_min_parallel_warm_size,
							64 * 1024 * 1024 / BLCKSZ, 0, INT_MAX / 3,
							PGC_USERSET,
							GUC_UNIT_BLOCKS,
							NULL, NULL, NULL);

	/* For tests of parallel warming: every process takes its time. */
	DefineCustomIntVariable("pg_warmcache.warm_worker_delay",
							"Time each process of a parallel warm waits before each stripe.",
							NULL,
							&wc_warm_worker_delay,
							0, 0, 60000,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	/* For tests of the merge: chunks smaller than shared_buffers. */
	DefineCustomIntVariable("pg_warmcache.sort_chunk",
							"Buffer headers a dump sorts in memory at once.",
							NULL,
							&wc_sort_chunk,
							1024 * 1024, 1024, WC_MAX_SORT_CHUNK,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("pg_warmcache");

	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = wc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = wc_shmem_startup;

	wc_register_autowarm_worker();
}

static void
wc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(WarmShared)));
	RequestNamedLWLockTranche("pg_warmcache", 1);
}

static void
wc_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	wc_shared = ShmemInitStruct("pg_warmcache", sizeof(WarmShared), &found);
	if (!found)
	{
		int			i;

		memset(wc_shared, 0, sizeof(WarmShared));
		wc_shared->lock = &(GetNamedLWLockTranche("pg_warmcache"))->lock;
		ConditionVariableInit(&wc_shared->cv);
		wc_shared->state = WC_STATE_IDLE;
		pg_atomic_init_u64(&wc_shared->restore_blocks_done, 0);
		pg_atomic_init_u64(&wc_shared->restore_os_tier_done, 0);
		pg_atomic_init_u64(&wc_shared->restore_blocks_os, 0);
		pg_atomic_init_u64(&wc_shared->restore_buffer_tier_os, 0);
		pg_atomic_init_u64(&wc_shared->restore_cpu_us, 0);
		pg_atomic_init_u64(&wc_shared->restore_found_cached, 0);
		pg_atomic_init_u32(&wc_shared->db_command_pending, 0);
		for (i = 0; i < WC_SKIP_REASONS; i++)
			pg_atomic_init_u64(&wc_shared->restore_skipped[i], 0);
		pg_atomic_init_u64(&wc_shared->rate_clock, 0);
		pg_atomic_init_u64(&wc_shared->cpu_clock, 0);
		SpinLockInit(&wc_shared->restore_advice.mutex);
		wc_shared->restore_advice.count_members = true;
		for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
			pg_atomic_init_u64(&wc_shared->slots[i].processed, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Functions that need the shared state call this first.
 */
void
wc_require_shared(void)
{
	if (wc_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_warmcache must be loaded via \"shared_preload_libraries\""),
				 errhint("Add pg_warmcache to \"shared_preload_libraries\" and restart the server.")));
}

/*
 * Begin a dump or a restore: the only way out of the idle state.  A dump
 * begins only if no restore is running or requested (it would replace the
 * saved set with the part restored so far); with wait, it waits for
 * another dump to end instead of giving up.  A restore, which the autowarm
 * worker begins on a request, only needs the idle state.  take_request
 * clears a request for a restore of the saved file, take_follow a pass due
 * over a new followed file: from then on the state says it.  Returns
 * whether the operation began; its process then owns it until
 * wc_end_operation().
 */
static bool
begin_operation(WarmState operation, bool wait, bool take_request,
				bool take_follow)
{
	bool		begun = false;

	Assert(operation != WC_STATE_IDLE);
	for (;;)
	{
		WarmState	cur;

		LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
		cur = wc_shared->state;
		if (cur == WC_STATE_IDLE &&
			(operation == WC_STATE_RESTORING || !wc_shared->restore_requested))
		{
			wc_shared->state = operation;
			wc_shared->owner_pid = MyProcPid;
			if (operation == WC_STATE_RESTORING)
				wc_shared->restore_begun_at = GetCurrentTimestamp();
			if (take_request)
				wc_shared->restore_requested = false;	/* taken on */
			if (take_follow)
				wc_shared->follow_pass_due = false;
			begun = true;
		}
		LWLockRelease(wc_shared->lock);

		if (begun || !wait || cur != WC_STATE_DUMPING ||
			operation != WC_STATE_DUMPING)
			break;
		ConditionVariableSleep(&wc_shared->cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return begun;
}

bool
wc_begin_operation(WarmState operation, bool wait)
{
	return begin_operation(operation, wait, operation == WC_STATE_RESTORING,
						   false);
}

/*
 * Begin a restore of the given source.  Only a restore of the saved file
 * takes on a request for one: a standby's pass over the followed set
 * leaves it for the next turn of the worker's loop.  A pass, or the load at
 * promotion, takes on the pass due over a new followed file.
 */
bool
wc_begin_restore(RestoreSource source)
{
	return begin_operation(WC_STATE_RESTORING, false, source == WC_SOURCE_SAVED,
						   source != WC_SOURCE_SAVED);
}

/*
 * End the dump or restore this process began: back to idle, and wake
 * whoever waits for the state to change.
 */
void
wc_end_operation(void)
{
	LWLockAcquire(wc_shared->lock, LW_EXCLUSIVE);
	Assert(wc_shared->owner_pid == MyProcPid);
	if (wc_shared->state == WC_STATE_RESTORING)
		wc_readiness_note_end();
	wc_shared->state = WC_STATE_IDLE;
	wc_shared->owner_pid = 0;
	LWLockRelease(wc_shared->lock);
	ConditionVariableBroadcast(&wc_shared->cv);
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
