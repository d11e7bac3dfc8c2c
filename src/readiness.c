/*-------------------------------------------------------------------------
 *
 * readiness.c
 *		Whether this server holds what it is warming: the answer that
 *		warmcache_is_warm() and warmcache_wait_warm() (sql.c) give to
 *		readiness probes, load balancer checks, failover managers'
 *		callbacks and scripts.
 *
 * The answer is one fraction, of the job the server has now, by the first
 * of these that applies:
 *
 * 1. loading the followed set at promotion, or about to (promoted, with a
 *    followed file the autowarm worker has not loaded yet);
 * 2. restoring the saved file or an import, or about to (asked for, or at
 *    start before the worker took it on), if there is one;
 * 3. on a standby with pg_warmcache.follow_primary on: the followed set;
 * 4. the last restore of the saved file or load at promotion, as it ended;
 * 5. nothing: 1.
 *
 * A restore's fraction is the blocks it restored or found cached, over the
 * blocks of its file that can be restored: blocks skipped as gone (dropped,
 * past the end) or excluded (template databases) are out of the count; blocks
 * skipped as locked or unreadable stay in it, since the server does not hold
 * them.  A standby's fraction of the followed set is that of the last finished
 * pass, which its leader notes as it ends (wc_restore_note_pass_end()); during
 * a pass, the larger of it and the pass's own (a pass finds cached what the
 * previous one left, so it starts where the previous one ended, but counts
 * from zero).  Until a first pass ends, 0.
 *
 * Everything is read from shared memory, under the status lock in
 * shared mode for a moment, plus at most one stat() of a file: cheap
 * enough to ask every second.  The waiting variant polls ten times a
 * second on its latch, holding nothing in between.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/readiness.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "channel_state.h"
#include "dumpfile.h"
#include "readiness.h"
#include "restore.h"
#include "restore_shared.h"
#include "settings.h"
#include "operation.h"

/* How often wc_wait_warm() looks again. */
#define WC_READY_POLL_MS	100

/*
 * What this server holds of its job now: see the file header for the
 * order of the rules.
 */
Readiness
wc_readiness(void)
{
	Readiness	r = {1.0, true};
	OperationStatus op;
	RestoreStatus restore;
	ChannelStatus channel;
	WarmState	state;
	RestoreSource source;
	FollowState follow_state;
	TimestampTz started_at;
	int64		total;
	bool		in_recovery = RecoveryInProgress();
	bool		restoring;
	bool		counting;

	wc_status_lock(LW_SHARED);
	wc_operation_status(&op);
	wc_restore_status(&restore);
	wc_channel_status(&channel);
	wc_status_unlock();
	state = op.state;
	source = restore.source;
	follow_state = channel.follow_state;
	started_at = restore.started_at;
	total = restore.blocks_total;

	/*
	 * A restore begins by checking its file; until it has published its
	 * start, the counters are the last restore's.
	 */
	restoring = (state == WC_STATE_RESTORING);
	counting = restoring && started_at != 0 && started_at >= op.restore_begun_at;

	/* 1. The load at promotion, running or about to run. */
	if (restoring && source == WC_SOURCE_PROMOTION)
	{
		r.fraction = counting ? wc_restore_fraction(total) : 0.0;
		r.settled = false;
		return r;
	}
	if (!in_recovery && wc_follow_primary != WC_FOLLOW_OFF &&
		follow_state != WC_FOLLOW_NOT_LOOKED &&
		follow_state != WC_FOLLOW_PROMOTED &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		/* The worker sees the promotion within 250 ms and loads the set. */
		r.fraction = 0.0;
		r.settled = false;
		return r;
	}

	/* 2. The saved file or an import, being restored or about to be. */
	if (restoring && counting &&
		(source == WC_SOURCE_SAVED || source == WC_SOURCE_IMPORT))
	{
		r.fraction = wc_restore_fraction(total);
		r.settled = false;
		return r;
	}
	if (((restoring &&
		  (source == WC_SOURCE_SAVED || source == WC_SOURCE_IMPORT)) ||
		 op.restore_requested || (!op.startup_done && wc_autowarm)) &&
		(access(WC_DUMP_FILE, F_OK) == 0 || access(WC_IMPORT_FILE, F_OK) == 0))
	{
		r.fraction = 0.0;
		r.settled = false;
		return r;
	}

	/* 3. A standby that follows its primary's hot set. */
	if (in_recovery && wc_follow_primary != WC_FOLLOW_OFF)
	{
		r.settled = false;		/* a new pass may come at any time */
		if (restoring && source == WC_SOURCE_FOLLOWED)
		{
			r.fraction = counting ? wc_restore_fraction(total) : 0.0;
			if (restore.followed_pass_done)
				r.fraction = Max(r.fraction, restore.followed_fraction);
		}
		else if (restore.followed_pass_done)
			r.fraction = restore.followed_fraction;
		else if (follow_state == WC_FOLLOW_NOT_LOOKED ||
				 follow_state == WC_FOLLOW_FOLLOWING)
			r.fraction = 0.0;	/* not looked yet, or first pass to come */
		else
		{
			/* Nothing to follow: no extension or nothing published. */
			r.settled = true;
		}
		return r;
	}

	/*
	 * 4. The last restore of the saved file or load at promotion; not
	 * settled while the saved file is to be restored again for a database
	 * a command kept out.
	 */
	if (started_at != 0 && source != WC_SOURCE_FOLLOWED)
	{
		r.fraction = wc_restore_fraction(total);
		r.settled = !restoring && op.restore_retry_at == 0;
		return r;
	}

	/* 5. Nothing to do. */
	return r;
}

/*
 * An answer short of min_fraction while the restore waits for a database
 * that a command wants says so, to the caller only.
 */
void
wc_note_waiting(double fraction, double min_fraction)
{
	OperationStatus op;
	RestoreStatus restore;
	Oid			db;

	if (fraction >= min_fraction)
		return;
	wc_status_lock(LW_SHARED);
	wc_operation_status(&op);
	wc_restore_status(&restore);
	wc_status_unlock();
	db = restore.waiting_db;
	if (op.state != WC_STATE_RESTORING || !OidIsValid(db))
		return;
	ereport(NOTICE,
			(errmsg("the restore is waiting for database %u, which a command wants", db),
			 errdetail("The restore gives the database up after %d s at most and goes on with the rest.",
					   WC_DB_WANTED_MAX_S)));
}

/*
 * Wait until this server holds at least min_fraction of its job, until the
 * job ended short of it (a restore that finished incomplete or was
 * aborted: nothing more will come), or at most wait_seconds; returns the
 * fraction it holds then.  0 seconds: look once.
 */
double
wc_wait_warm(double min_fraction, int32 wait_seconds)
{
	TimestampTz deadline;
	Readiness	r;

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   (int64) wait_seconds * 1000);
	for (;;)
	{
		long		left;

		CHECK_FOR_INTERRUPTS();
		r = wc_readiness();
		if (r.fraction >= min_fraction || r.settled)
			break;
		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left, WC_READY_POLL_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	return r.fraction;
}
