/*-------------------------------------------------------------------------
 *
 * restore_shared.c
 *		The restore's shared state: its place in shared memory, and what
 *		the files outside the restore may ask of it.
 *
 * restore_shared.h says who writes what, and under which lock.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/restore_shared.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "operation.h"
#include "restore_shared.h"

RestoreShared *wc_restore = NULL;

/* The shared memory of the restore (shmem.c). */
Size
wc_restore_shmem_size(void)
{
	return MAXALIGN(sizeof(RestoreShared));
}

/* Attach to it, making it at the first start (shmem.c). */
void
wc_restore_shmem_init(void)
{
	bool		found;
	int			i;

	wc_restore = ShmemInitStruct("pg_warmcache restore", sizeof(RestoreShared),
								 &found);
	if (found)
		return;
	memset(wc_restore, 0, sizeof(RestoreShared));
	pg_atomic_init_u64(&wc_restore->blocks_done, 0);
	pg_atomic_init_u64(&wc_restore->os_tier_done, 0);
	pg_atomic_init_u64(&wc_restore->blocks_os, 0);
	pg_atomic_init_u64(&wc_restore->buffer_tier_os, 0);
	for (i = 0; i < WC_SKIP_REASONS; i++)
		pg_atomic_init_u64(&wc_restore->skipped[i], 0);
	pg_atomic_init_u64(&wc_restore->cpu_us, 0);
	pg_atomic_init_u64(&wc_restore->found_cached, 0);
	pg_atomic_init_u64(&wc_restore->device_bytes, 0);
	pg_atomic_init_u32(&wc_restore->device_unknown, 0);
	wc_restore->limit_cut = -1;
	pg_atomic_init_u64(&wc_restore->limit_used, 0);
	pg_atomic_init_u32(&wc_restore->db_command_pending, 0);
	pg_atomic_init_u64(&wc_restore->rate_clock, 0);
	pg_atomic_init_u64(&wc_restore->cpu_clock, 0);
	pg_atomic_init_u64(&wc_restore->blocks_read, 0);
	pg_atomic_init_u64(&wc_restore->wait_cap, 0);
	SpinLockInit(&wc_restore->rate_mutex);
	SpinLockInit(&wc_restore->advice.mutex);
	wc_restore->advice.count_members = true;
	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		pg_atomic_init_u64(&wc_restore->slots[i].processed, 0);
}

/*
 * The current or last restore, for warmcache_status() and readiness: the
 * status as of one moment (the status lock is held), the counters as they
 * are.
 */
void
wc_restore_status(RestoreStatus *status)
{
	int			r;

	status->source = wc_restore->source;
	status->mode = wc_restore->mode;
	status->incomplete = wc_restore->incomplete;
	memcpy(status->incomplete_reason, wc_restore->incomplete_reason,
		   sizeof(status->incomplete_reason));
	status->started_at = wc_restore->started_at;
	status->finished_at = wc_restore->finished_at;
	status->blocks_total = wc_restore->blocks_total;
	status->os_tier_total = wc_restore->os_tier_total;
	status->waiting_db = wc_restore->waiting_db;
	status->followed_os_tier = wc_restore->followed_os_tier;
	status->followed_warm = wc_restore->followed_warm;
	status->followed_os_tier_warm = wc_restore->followed_os_tier_warm;
	status->followed_pass_done = wc_restore->followed_pass_done;
	status->followed_fraction = wc_restore->followed_fraction;
	status->blocks_done = pg_atomic_read_u64(&wc_restore->blocks_done);
	status->os_tier_done = pg_atomic_read_u64(&wc_restore->os_tier_done);
	status->blocks_os = pg_atomic_read_u64(&wc_restore->blocks_os);
	status->found_cached = pg_atomic_read_u64(&wc_restore->found_cached);
	for (r = 0; r < WC_SKIP_REASONS; r++)
		status->skipped[r] = pg_atomic_read_u64(&wc_restore->skipped[r]);
}

/*
 * The fraction of the current or last restore: blocks restored or found
 * cached over those of its file that can be restored (readiness.c), which
 * leaves out those past the restore limit that the limit skips, and an
 * import's catalogs.  total
 * is its blocks_total; the counters are read as they are.
 */
double
wc_restore_fraction(int64 total)
{
	uint64		done = pg_atomic_read_u64(&wc_restore->blocks_done);
	int64		can;

	can = total -
		(int64) pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_GONE]) -
		(int64) pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_EXCLUDED]) -
		(int64) pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_LIMIT]) -
		(int64) pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_CATALOG]);
	if (can <= 0)
		return 1.0;
	return Min((double) done / (double) can, 1.0);
}

/*
 * At the end of a restore, by its leader, with the status lock held
 * exclusively: a standby's finished pass over the followed set gives its
 * fraction, which readiness.c reports until the next pass ends.  A pass
 * that stopped early (promotion, follow_primary turned off) counted only
 * part of the set; the previous pass's figure stands if it is larger.
 * restore_begun_at is when the restoring state began (operation.h): a
 * restore that never got to count began after it.
 */
void
wc_restore_note_pass_end(void)
{
	double		f;
	uint64		handled;
	int64		total = wc_restore->blocks_total;

	if (wc_restore->source != WC_SOURCE_FOLLOWED ||
		wc_restore->finished_at == 0 ||
		wc_restore->started_at < wc_restore_begun_at())
		return;					/* it ended before it began counting */
	f = wc_restore_fraction(total);
	handled = pg_atomic_read_u64(&wc_restore->blocks_done) +
		pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_GONE]) +
		pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_EXCLUDED]) +
		pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_LOCKED]) +
		pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_FAILED]) +
		pg_atomic_read_u64(&wc_restore->skipped[WC_SKIP_LIMIT]);
	if ((int64) handled < total && wc_restore->followed_pass_done)
		f = Max(f, wc_restore->followed_fraction);
	wc_restore->followed_fraction = f;
	wc_restore->followed_pass_done = true;
}

/*
 * The restore workers registered but not yet connected, which
 * pg_stat_activity does not show yet: for warm()'s count of the worker
 * slots in use (parallel_warm.c).  Read without a lock, as a hint.
 */
int
wc_restore_workers_starting(void)
{
	int			n = 0;
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		if (wc_restore->slots[i].registered && !wc_restore->slots[i].connected)
			n++;
	return n;
}

/*
 * Whether pid is one of the restore's workers (workload.c, which leaves
 * them out of what the queries are doing).  Read without a lock: a worker
 * that starts or ends meanwhile is seen at the next look.
 */
bool
wc_is_restore_worker(int pid)
{
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		if (wc_restore->slots[i].pid == pid)
			return true;
	return false;
}

/*
 * Whether the last restore of the saved file, or the load at promotion,
 * did not complete: the saved file (or the followed file) then holds more
 * than the buffer cache, and must not be replaced by a smaller dump
 * (autowarm.c).  *asked, if given, says whether it was stopped on request
 * (an abort or a cancel).
 */
bool
wc_restore_was_incomplete(bool *asked)
{
	bool		incomplete;

	wc_status_lock(LW_SHARED);
	incomplete = wc_restore->incomplete;
	if (asked)
		*asked = strcmp(wc_restore->incomplete_reason, "aborted") == 0 ||
			strcmp(wc_restore->incomplete_reason, "cancelled") == 0;
	wc_status_unlock();
	return incomplete;
}

/* A dump replaced the saved file: what it holds is the cache's now. */
void
wc_restore_forget_incomplete(void)
{
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->incomplete = false;
	wc_status_unlock();
}
