/*-------------------------------------------------------------------------
 *
 * restore.c
 *		The restore leader: checks the dump file, starts restore workers,
 *		starts them again where they left off, and reports.
 *
 * The autowarm worker (autowarm.c) leads every restore; it is connected
 * to no database, which lets it read pg_database.  It checks the file end
 * to end and counts its blocks per database: a share for the shared
 * catalogs (restored first, by a worker connected to any database that
 * allows connections) and one per database, largest first.  With workers to spare, a database is cut
 * into stripes among several (restore.h).  At most
 * pg_warmcache.restore_workers run at a time.
 *
 * Before it starts a worker in a database, the leader looks the database
 * up: one that is gone has its blocks skipped as gone; a template, or one
 * that does not allow connections, has them skipped as excluded (a worker
 * there would make CREATE DATABASE fail, or could not connect).  While a
 * database-level command wants the database, the leader waits, for
 * WC_DB_WANTED_MAX_S at most: then the database is given up, the rest of
 * the restore goes on, and the saved file is restored again later.  A
 * worker that left its database to such a command is started again where it
 * stopped;
 * one that died before connecting is tried again; a launch that finds no
 * free worker slot is retried until WC_LAUNCH_PATIENCE_S passed without
 * one.
 *
 * A restore is complete when every block of the file was restored or
 * skipped for a reason that proves it gone or excluded.  Otherwise (abort,
 * cancel, shutdown, a worker that died, no worker slot, blocks given up
 * for a lock or an error) restore_incomplete is set with the first reason,
 * and automatic dumps keep the saved file until the buffer cache holds as
 * many blocks (autowarm.c).
 *
 * That holds on every way out of the leader: an ERROR is caught here (the
 * autowarm worker goes on), and an exit (a FATAL, the postmaster's death)
 * runs an exit callback that does the same.  Either way the workers are
 * terminated and waited for (a while), the restore is reported incomplete
 * with a reason, abort_requested is cleared and the restoring state ends,
 * so that the next restore starts clean.  A worker that outlives that wait
 * keeps its slot until it is gone (stale_handles): it may still write
 * into it.
 *
 * The file is long because it is one loop over one struct, RestoreLeader:
 * the plan of shares and stripes, the workers' launches and ends, the
 * waits for database commands and the end's report all read and write it
 * at each turn.  Each is a section of its own below; cut into files, they
 * would share the leader's struct through a header and call each other
 * both ways.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/restore.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "database.h"
#include "dump.h"
#include "dumpfile.h"
#include "estimate.h"
#include "pacer.h"
#include "restore.h"
#include "settings.h"
#include "operation.h"
#include "restore_shared.h"
#include "worker.h"

/* Without any worker slot for this long, the restore gives up. */
#define WC_LAUNCH_PATIENCE_S	60

/* A worker that dies before connecting is started this often at most. */
#define WC_CONNECT_ATTEMPTS		3

/*
 * The restore pauses for a database-level command at most this long, in
 * seconds: a command in a transaction left open (ALTER DATABASE ... RENAME
 * holds its lock until commit) must not stop the restore for good.
 */
#define WC_COMMAND_PAUSE_MAX_S	30

/*
 * WC_DB_WANTED_MAX_S (restore.h): twice the 5 s that DROP, RENAME, SET
 * TABLESPACE and CREATE ... TEMPLATE wait for sessions to leave, so a
 * command that runs through is waited for, while one left open in a
 * transaction holds dumps, publications and readiness for no longer.  The
 * restore of the saved file run again later (WC_DB_RETRY_S) finds what it
 * restored already at the cost of a look-up, and reads what the command
 * kept out.
 */

/* After an abort, workers get this long to stop by themselves, in ms. */
#define WC_STOP_GRACE_MS		5000

/*
 * On an error or at exit the leader terminates its workers and waits this
 * long at most for them to be gone, in ms: a worker left running would
 * count into the next restore's figures.
 */
#define WC_EXIT_WAIT_MS			10000

/* Where one stripe of a share is. */
typedef enum StripeState
{
	STRIPE_PENDING,				/* to be started */
	STRIPE_RUNNING,
	STRIPE_LEFT_DATABASE,		/* to be started again where it stopped */
	STRIPE_DONE,				/* its worker handled every block */
	STRIPE_GIVEN_UP				/* what is left of it is not restored */
} StripeState;

typedef struct Stripe
{
	StripeState state;
	RestorePosition resume;
	int			failed_connects;
} Stripe;

/* What the file holds of one database, or of the shared catalogs (db 0). */
typedef struct DbShare
{
	Oid			db;
	uint64		blocks;			/* in the file */
	uint64		first[WC_RANK_SLOTS];	/* position of its first run of each
										 * rank (wc_reader_position()) */
	uint64		nruns[WC_RANK_SLOTS];	/* its runs of each rank */
	uint64		processed;		/* by its workers that ended */
	int			nstripes;
	Stripe		stripes[WC_MAX_STRIPES];
	bool		closed;			/* every stripe ended, the rest accounted */
	TimestampTz wanted_since;	/* a command wanted it, its workers to be
								 * started, since; or 0 */
	bool		wanted_out;		/* given up: a command kept wanting it */
} DbShare;

/* What the leader keeps track of while a restore runs. */
typedef struct RestoreLeader
{
	RestoreSource source;
	WarmFileHeader hdr;			/* of the checked file */
	TimestampTz started;
	bool		published;		/* its start is in shared memory */
	DbShare    *shares;			/* shared catalogs first, then largest */
	int			nshares;
	int			ndbs;			/* of the shares, databases */
	uint64		os_tier_blocks; /* of all blocks, the OS tier's */
	uint64		rank_blocks[WC_RANK_SLOTS]; /* of all blocks, each rank's */
	int			running;		/* workers running */
	uint64		counted;		/* runs counted by count_shares() */
	bool		stopped;		/* aborted or shutting down */
	TimestampTz stopped_at;
	TimestampTz no_slot_since;	/* launches failing since, or 0 */
	TimestampTz command_since;	/* a database command wanted a database
								 * of the restore since, or 0 */
	bool		no_slot_warned;
	char		reason[64];		/* first reason the restore is incomplete */
	BackgroundWorkerHandle *handles[WC_MAX_RESTORE_WORKERS];
	int			slot_share[WC_MAX_RESTORE_WORKERS];
	int			slot_stripe[WC_MAX_RESTORE_WORKERS];
} RestoreLeader;

/*
 * The restore this process leads, for the exit callback; NULL when none.
 * Static, not on the stack: an ERROR unwinds the stack.
 */
static RestoreLeader the_leader;
static RestoreLeader *leading = NULL;
static bool leader_exit_registered = false;

/*
 * The handles of restore workers that did not stop when a restore ended
 * (one that ignores SIGTERM, or is stopped): their slots are not used
 * again until they are gone, since such a worker may still write into its
 * slot.  In this process's memory, across restores.
 */
static BackgroundWorkerHandle *stale_handles[WC_MAX_RESTORE_WORKERS];

/* What the leader finds of a database in pg_database. */
typedef enum DbVerdict
{
	DB_RESTORE,
	DB_GONE,
	DB_EXCLUDED,
	DB_CATALOG					/* the shared catalogs, in an import */
} DbVerdict;

static void leader_check_stop(RestoreLeader *leader);
static bool still_wanted(RestoreLeader *leader, DbShare *share);

static void
note_incomplete(RestoreLeader *leader, const char *reason)
{
	if (leader->reason[0] == '\0')
		strlcpy(leader->reason, reason, sizeof(leader->reason));
}

/*---- The plan: a share per database, cut into stripes ----*/

static int
share_cmp(const void *a, const void *b)
{
	const DbShare *x = a;
	const DbShare *y = b;

	/* The shared catalogs first: few blocks, and every session reads them. */
	if ((x->db == InvalidOid) != (y->db == InvalidOid))
		return x->db == InvalidOid ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->db < y->db ? -1 : (x->db > y->db ? 1 : 0);
}

/* Which share a database's runs go to, while count_shares() reads. */
typedef struct ShareEntry
{
	Oid			db;				/* the hash key */
	int			index;			/* into leader->shares */
} ShareEntry;

/*
 * Count the file's blocks per database, and where each database's runs of
 * each rank are: the file is sorted by rank, then database, so they follow
 * one another, and a worker reads its own runs only (restore_worker.c),
 * whatever the number of databases.  One pass over the file, a hash look-up
 * per run: linear in the file.  Memory: an entry per database.
 */
static void
count_shares(RestoreLeader *leader)
{
	WarmFileReader reader;
	WarmRun		run;
	HASHCTL		ctl;
	HTAB	   *byoid;
	int			cap = 0;
	int			i;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(ShareEntry);
	ctl.hcxt = CurrentMemoryContext;
	byoid = hash_create("pg_warmcache restore shares", 64, &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (wc_reader_open(&reader, wc_source_file(wc_restore->source), false))
	{
		while (!leader->stopped && wc_reader_next(&reader, &run))
		{
			int			rank = wc_rank_slot(run.rank);
			ShareEntry *entry;
			DbShare    *share;
			bool		found;

			if ((++leader->counted & 1023) == 0)
				leader_check_stop(leader);
			entry = hash_search(byoid, &run.db, HASH_ENTER, &found);
			if (!found)
			{
				if (leader->nshares == cap)
				{
					cap = cap ? cap * 2 : 8;
					leader->shares = leader->shares ?
						repalloc(leader->shares, cap * sizeof(DbShare)) :
						palloc(cap * sizeof(DbShare));
				}
				entry->index = leader->nshares++;
				share = &leader->shares[entry->index];
				memset(share, 0, sizeof(DbShare));
				share->db = run.db;
				if (run.db != InvalidOid)
					leader->ndbs++;
			}
			share = &leader->shares[entry->index];
			if (share->nruns[rank]++ == 0)
				share->first[rank] = wc_reader_position(&reader);
			share->blocks += run.count;
			leader->rank_blocks[rank] += run.count;
			if (run.rank == WC_RANK_OS)
				leader->os_tier_blocks += run.count;
		}
		wc_reader_close(&reader);
	}
	hash_destroy(byoid);
	if (leader->nshares > 1)
		qsort(leader->shares, leader->nshares, sizeof(DbShare), share_cmp);

	/* Workers to spare split the databases into stripes. */
	for (i = 0; i < leader->nshares; i++)
		leader->shares[i].nstripes = leader->shares[i].db == InvalidOid ? 1 :
			Max(1, Min(wc_restore_workers / Max(leader->ndbs, 1), WC_MAX_STRIPES));
}

/*
 * Where pg_warmcache.restore_limit cuts the saved set's buffer tier, in mode
 * buffer: the hottest rank whose blocks, with those of the hotter ranks,
 * pass the limit, and what is left of the limit for it.  The limit and
 * what becomes of the blocks past it are read once, as the restore
 * begins.  Blocks of excluded or dropped databases count: the leader
 * learns of those later.
 */
static void
plan_limit(RestoreLeader *leader, WarmMode mode)
{
	int64		limit = wc_restore_limit_blocks();
	uint64		within = 0;
	int			r;

	wc_restore->limit_cut = -1;
	wc_restore->limit_at_cut = 0;
	wc_restore->limit_skip =
		(wc_past_restore_limit == WC_PAST_LIMIT_SKIP);
	pg_atomic_write_u64(&wc_restore->limit_used, 0);
	if (mode != WC_MODE_BUFFER || limit <= 0)
		return;
	for (r = WC_MAX_RANK; r >= 0; r--)
	{
		if (within + leader->rank_blocks[r] > (uint64) limit)
		{
			wc_restore->limit_cut = r;
			wc_restore->limit_at_cut = (uint64) limit - within;
			return;
		}
		within += leader->rank_blocks[r];
	}
}

/*---- Databases and their shares ----*/

/* Look a database up in pg_database. */
static DbVerdict
check_database(Oid db)
{
	HeapTuple	tuple;
	DbVerdict	verdict = DB_RESTORE;
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(db));
	if (!HeapTupleIsValid(tuple))
		verdict = DB_GONE;
	else
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tuple);

		if (database_is_invalid_form(form))
			verdict = DB_GONE;	/* a DROP DATABASE that was interrupted */
		else if (form->datistemplate || !form->datallowconn)
			verdict = DB_EXCLUDED;
		ReleaseSysCache(tuple);
	}
	CommitTransactionCommand();
	/* The commit leaves TopMemoryContext current: nothing must go there. */
	MemoryContextSwitchTo(cxt);
	return verdict;
}

/*
 * When no stripe of a share is running or will run, account for what its
 * workers did not process.
 */
static void
close_share(RestoreLeader *leader, DbShare *share, DbVerdict verdict)
{
	uint64		rest;
	int			k;

	if (share->closed)
		return;
	for (k = 0; k < share->nstripes; k++)
		if (share->stripes[k].state != STRIPE_DONE &&
			share->stripes[k].state != STRIPE_GIVEN_UP)
			return;
	share->closed = true;
	rest = share->blocks - Min(share->blocks, share->processed);
	if (rest == 0)
		return;
	if (share->wanted_out)
		pg_atomic_fetch_add_u64(&wc_restore->skipped[WC_SKIP_LOCKED], rest);
	else if (verdict == DB_GONE)
		pg_atomic_fetch_add_u64(&wc_restore->skipped[WC_SKIP_GONE], rest);
	else if (verdict == DB_EXCLUDED)
		pg_atomic_fetch_add_u64(&wc_restore->skipped[WC_SKIP_EXCLUDED], rest);
	else if (verdict == DB_CATALOG)
		pg_atomic_fetch_add_u64(&wc_restore->skipped[WC_SKIP_CATALOG], rest);
	else
	{
		note_incomplete(leader, "a restore worker did not finish");
		if (!leader->stopped && OidIsValid(share->db))
			ereport(LOG,
					(errmsg_plural("the restore of database %u left %llu of its %llu block unhandled",
								   "the restore of database %u left %llu of its %llu blocks unhandled",
								   (unsigned long) share->blocks,
								   share->db,
								   (unsigned long long) rest,
								   (unsigned long long) share->blocks)));
		else if (!leader->stopped)
			ereport(LOG,
					(errmsg_plural("the restore of the shared catalogs left %llu of its %llu block unhandled",
								   "the restore of the shared catalogs left %llu of its %llu blocks unhandled",
								   (unsigned long) share->blocks,
								   (unsigned long long) rest,
								   (unsigned long long) share->blocks)));
	}
}

/* Give up the stripes of a share that have not started or were left. */
static void
give_up_share(RestoreLeader *leader, DbShare *share, DbVerdict verdict)
{
	int			k;

	for (k = 0; k < share->nstripes; k++)
		if (share->stripes[k].state == STRIPE_PENDING ||
			share->stripes[k].state == STRIPE_LEFT_DATABASE)
			share->stripes[k].state = STRIPE_GIVEN_UP;
	close_share(leader, share, verdict);
}

/*---- The workers ----*/

static bool
launch_restore_worker(int slotno, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;
	Oid			db = wc_restore->slots[slotno].db;
	MemoryContext old;
	bool		registered;

	wc_init_dynamic_worker(&worker, "pg_warmcache_restore_main",
						   "pg_warmcache restore");
	if (OidIsValid(db))
		snprintf(worker.bgw_name, BGW_MAXLEN,
				 "pg_warmcache restore of database %u", db);
	else
		strcpy(worker.bgw_name, "pg_warmcache restore of shared catalogs");
	worker.bgw_main_arg = Int32GetDatum(slotno);

	/*
	 * The leader polls the handle; it does not wait for the start here.
	 * The handle may outlive the restore (stale_handles): it is freed
	 * explicitly, never with the autowarm worker's context.
	 */
	old = MemoryContextSwitchTo(TopMemoryContext);
	registered = RegisterDynamicBackgroundWorker(&worker, handle);
	MemoryContextSwitchTo(old);
	return registered;
}

/*
 * A slot no worker of this restore uses, and no worker left from an
 * earlier one may still write into; -1 if there is none.
 */
static int
free_slot(RestoreLeader *leader)
{
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
	{
		pid_t		pid;

		if (leader->handles[i] != NULL)
			continue;
		if (stale_handles[i] == NULL)
			return i;
		if (GetBackgroundWorkerPid(stale_handles[i], &pid) != BGWH_STOPPED)
			continue;
		pfree(stale_handles[i]);
		stale_handles[i] = NULL;
		wc_restore->slots[i].registered = false;
		ereport(LOG,
				(errmsg("the restore worker left in slot %d has ended", i),
				 errdetail("The slot is used again.")));
		return i;
	}
	return -1;
}

/*
 * Keep the handles of workers still running as stale (their slots are not
 * used again until they are gone), free the others: the restore ends
 * without them.
 */
static void
forget_workers(RestoreLeader *leader)
{
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
	{
		pid_t		pid = 0;

		if (leader->handles[i] == NULL)
			continue;
		if (GetBackgroundWorkerPid(leader->handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(leader->handles[i]);
			wc_restore->slots[i].registered = false;
		}
		else
		{
			ereport(WARNING,
					(errmsg("restore worker with PID %d in slot %d did not stop when asked",
							(int) pid, i),
					 errdetail("The restore ends without it. Its slot is not used again until it is gone.")));
			stale_handles[i] = leader->handles[i];
		}
		leader->handles[i] = NULL;
	}
	leader->running = 0;
}

/*
 * Start the worker of stripe k of a share in slot i, free.  Returns false if
 * no worker could be registered.
 */
static bool
start_stripe(RestoreLeader *leader, int share_no, int k, Oid connect_db,
			 int i)
{
	DbShare    *share = &leader->shares[share_no];
	Stripe	   *stripe = &share->stripes[k];
	RestoreSlot *slot;

	Assert(i >= 0 && i < WC_MAX_RESTORE_WORKERS && leader->handles[i] == NULL);
	elog(DEBUG1, "starting the restore worker of stripe %d of database %u in slot %d",
		 k, share->db, i);
	slot = &wc_restore->slots[i];
	slot->db = share->db;
	slot->connect_db = connect_db;
	slot->stripe = k;
	slot->nstripes = share->nstripes;
	slot->connected = false;
	slot->outcome = WC_OUTCOME_RUNNING;
	slot->resume = stripe->resume;
	memcpy(slot->first, share->first, sizeof(slot->first));
	memcpy(slot->nruns, share->nruns, sizeof(slot->nruns));
	slot->pid = 0;
	pg_atomic_write_u64(&slot->processed, 0);

	/* Before registering: a warm() counting slots sees it a moment early. */
	slot->registered = true;
	if (!launch_restore_worker(i, &leader->handles[i]))
	{
		slot->registered = false;
		leader->handles[i] = NULL;
		return false;
	}
	leader->slot_share[i] = share_no;
	leader->slot_stripe[i] = k;
	stripe->state = STRIPE_RUNNING;
	leader->running++;
	return true;
}

/*
 * Collect the workers that ended, and learn from each how its stripe
 * stands.
 */
static void
reap_workers(RestoreLeader *leader)
{
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
	{
		RestoreSlot *slot = &wc_restore->slots[i];
		DbShare    *share;
		Stripe	   *stripe;
		pid_t		pid;

		if (leader->handles[i] == NULL ||
			GetBackgroundWorkerPid(leader->handles[i], &pid) != BGWH_STOPPED)
			continue;
		share = &leader->shares[leader->slot_share[i]];
		stripe = &share->stripes[leader->slot_stripe[i]];
		share->processed += pg_atomic_read_u64(&slot->processed);

		if (slot->outcome == WC_OUTCOME_DONE)
			stripe->state = STRIPE_DONE;
		else if (slot->outcome == WC_OUTCOME_LEFT_DATABASE &&
				 share->wanted_out)
			stripe->state = STRIPE_GIVEN_UP;	/* its database was given up */
		else if (slot->outcome == WC_OUTCOME_LEFT_DATABASE)
		{
			stripe->state = STRIPE_LEFT_DATABASE;
			stripe->resume = slot->resume;
		}
		else if (!slot->connected && !leader->stopped &&
				 ++stripe->failed_connects < WC_CONNECT_ATTEMPTS)
			stripe->state = STRIPE_PENDING; /* the leader looks again first */
		else
		{
			stripe->state = STRIPE_GIVEN_UP;
			if (!leader->stopped && slot->connected)
				note_incomplete(leader, "a restore worker ended early");
		}
		pfree(leader->handles[i]);
		leader->handles[i] = NULL;
		slot->pid = 0;
		slot->registered = false;
		leader->running--;
		close_share(leader, share,
					OidIsValid(share->db) && !slot->connected ?
					check_database(share->db) : DB_RESTORE);
	}
}

/*
 * Where the worker of a share is to connect: its database, once it was
 * looked up and no command wants it, or for the shared catalogs any
 * database that allows connections.  InvalidOid: not now, or, with the
 * share given up, never.  An import's shared catalogs are another
 * cluster's: never.
 */
static Oid
database_to_connect(RestoreLeader *leader, DbShare *share)
{
	DbVerdict	verdict;
	bool		exists;
	Oid			db;

	if (!OidIsValid(share->db) && leader->source == WC_SOURCE_IMPORT)
	{
		give_up_share(leader, share, DB_CATALOG);
		return InvalidOid;
	}
	if (!OidIsValid(share->db))
	{
		db = wc_connectable_database(NULL, &exists, NULL);
		if (!exists)
			give_up_share(leader, share, DB_EXCLUDED);
		return db;
	}
	verdict = check_database(share->db);
	if (verdict != DB_RESTORE)
	{
		give_up_share(leader, share, verdict);
		return InvalidOid;
	}
	return still_wanted(leader, share) ? InvalidOid : share->db;
}

/*---- Messages that name what is restored ----*/

/*
 * The primary messages that name what a restore reads: one message each for
 * the saved set, the followed set, the load at promotion and the import,
 * so that none splices a word in.  Each is called inside ereport(), as errmsg() is.
 */
static int
errmsg_gives_up(RestoreSource source, Oid db)
{
	switch (source)
	{
		case WC_SOURCE_FOLLOWED:
			return errmsg("the pass over the followed set gives up database %u",
						  db);
		case WC_SOURCE_PROMOTION:
			return errmsg("the load of the primary's hot set at promotion gives up database %u",
						  db);
		case WC_SOURCE_IMPORT:
			return errmsg("the import gives up database %u", db);
		case WC_SOURCE_SAVED:
			break;
	}
	return errmsg("the restore of the saved set gives up database %u", db);
}

static int
errmsg_error(RestoreSource source, const char *message)
{
	switch (source)
	{
		case WC_SOURCE_FOLLOWED:
			return errmsg("the pass over the followed set stopped on an error: %s",
						  message);
		case WC_SOURCE_PROMOTION:
			return errmsg("the load of the primary's hot set at promotion stopped on an error: %s",
						  message);
		case WC_SOURCE_IMPORT:
			return errmsg("the import stopped on an error: %s", message);
		case WC_SOURCE_SAVED:
			break;
	}
	return errmsg("the restore of the saved set stopped on an error: %s",
				  message);
}

/* The end of a restore: stopped, incomplete or finished, with its figures. */
static int
errmsg_end(RestoreSource source, bool stopped, bool incomplete,
		   uint64 done, uint64 total, uint64 os, uint64 skipped,
		   double elapsed)
{
	unsigned long long d = done;
	unsigned long long t = total;
	unsigned long long o = os;
	unsigned long long s = skipped;
	unsigned long n = (unsigned long) total;
	double		rate;

	rate = elapsed > 0 ? done * (double) BLCKSZ / (1024.0 * 1024.0) / elapsed : 0.0;
	switch (source)
	{
		case WC_SOURCE_FOLLOWED:
			if (stopped)
				return errmsg_plural("pass over the followed set stopped: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 "pass over the followed set stopped: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			if (incomplete)
				return errmsg_plural("pass over the followed set incomplete: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 "pass over the followed set incomplete: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			return errmsg_plural("pass over the followed set finished: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
								 "pass over the followed set finished: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
								 n, d, t, o, s, elapsed, rate);
		case WC_SOURCE_PROMOTION:
			if (stopped)
				return errmsg_plural("load of the primary's hot set at promotion stopped: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 "load of the primary's hot set at promotion stopped: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			if (incomplete)
				return errmsg_plural("load of the primary's hot set at promotion incomplete: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 "load of the primary's hot set at promotion incomplete: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			return errmsg_plural("load of the primary's hot set at promotion finished: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
								 "load of the primary's hot set at promotion finished: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
								 n, d, t, o, s, elapsed, rate);
		case WC_SOURCE_IMPORT:
			if (stopped)
				return errmsg_plural("import stopped: restored %llu of %llu block (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
									 "import stopped: restored %llu of %llu blocks (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			if (incomplete)
				return errmsg_plural("import incomplete: restored %llu of %llu block (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
									 "import incomplete: restored %llu of %llu blocks (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
									 n, d, t, o, s, elapsed, rate);
			return errmsg_plural("import finished: restored %llu of %llu block (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
								 "import finished: restored %llu of %llu blocks (%llu into the OS cache only), left out %llu, in %.2f s, %.1f MB/s",
								 n, d, t, o, s, elapsed, rate);
		case WC_SOURCE_SAVED:
			break;
	}
	if (stopped)
		return errmsg_plural("restore of the saved set stopped: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
							 "restore of the saved set stopped: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
							 n, d, t, o, s, elapsed, rate);
	if (incomplete)
		return errmsg_plural("restore of the saved set incomplete: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
							 "restore of the saved set incomplete: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
							 n, d, t, o, s, elapsed, rate);
	return errmsg_plural("restore of the saved set finished: restored %llu of %llu block (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
						 "restore of the saved set finished: restored %llu of %llu blocks (%llu into the OS cache only), skipped %llu, in %.2f s, %.1f MB/s",
						 n, d, t, o, s, elapsed, rate);
}

/*---- Database-level commands ----*/

/*
 * Does a command want the database of a share whose workers wait to start?
 * One that keeps wanting it for WC_DB_WANTED_MAX_S has the share given up.
 */
static bool
still_wanted(RestoreLeader *leader, DbShare *share)
{
	TimestampTz now;

	if (!wc_database_wanted(share->db))
	{
		share->wanted_since = 0;
		return false;
	}
	now = GetCurrentTimestamp();
	if (share->wanted_since == 0)
		share->wanted_since = now;
	else if (TimestampDifferenceExceeds(share->wanted_since, now,
										WC_DB_WANTED_MAX_S * 1000))
	{
		char		reason[64];

		snprintf(reason, sizeof(reason),
				 "database %u stayed wanted by a command", share->db);
		note_incomplete(leader, reason);
		ereport(LOG,
				(errmsg_gives_up(leader->source, share->db),
				 errdetail("A command has wanted it for %d s. The rest of the restore goes on; the blocks of the database left are counted as skipped (locked).",
						   WC_DB_WANTED_MAX_S),
				 leader->source == WC_SOURCE_SAVED ?
				 errhint("The saved file is restored again %d s after this restore ends.",
						 WC_DB_RETRY_S) : 0));
		share->wanted_out = true;
		share->wanted_since = 0;
		give_up_share(leader, share, DB_RESTORE);
	}
	return true;
}

/* Does a share have stripes whose workers wait to start? */
static bool
share_waits(const DbShare *share)
{
	int			k;

	if (share->closed)
		return false;
	for (k = 0; k < share->nstripes; k++)
		if (share->stripes[k].state == STRIPE_PENDING ||
			share->stripes[k].state == STRIPE_LEFT_DATABASE)
			return true;
	return false;
}

/*
 * Say in shared memory which database the restore waits for, if any: the
 * share a command has kept longest from starting its workers.  Gives up
 * those it kept for WC_DB_WANTED_MAX_S, whether a worker slot is free or
 * not (the other workers pause meanwhile).
 */
static void
publish_waiting(RestoreLeader *leader)
{
	Oid			db = InvalidOid;
	TimestampTz since = 0;
	int			s;

	for (s = 0; s < leader->nshares && !leader->stopped; s++)
	{
		DbShare    *share = &leader->shares[s];

		/* Bounded whether or not a worker could start now. */
		if (OidIsValid(share->db) && share_waits(share))
			(void) still_wanted(leader, share);
		if (!share->closed && share->wanted_since != 0 &&
			(since == 0 || share->wanted_since < since))
		{
			db = share->db;
			since = share->wanted_since;
		}
	}
	if (db == wc_restore->waiting_db &&
		since == wc_restore->waiting_since)
		return;
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->waiting_db = db;
	wc_restore->waiting_since = since;
	wc_status_unlock();
}

/*
 * Start the stripes that wait, in share order, while there are free places.
 */
static void
launch_workers(RestoreLeader *leader)
{
	int			s;

	for (s = 0; s < leader->nshares && !leader->stopped; s++)
	{
		DbShare    *share = &leader->shares[s];
		Oid			connect_db = InvalidOid;
		int			slotno;
		int			k;

		for (k = 0; k < share->nstripes && !share->closed; k++)
		{
			Stripe	   *stripe = &share->stripes[k];

			if (stripe->state != STRIPE_PENDING &&
				stripe->state != STRIPE_LEFT_DATABASE)
				continue;
			if (leader->running >= wc_restore_workers)
				return;
			if (!OidIsValid(connect_db) &&
				!OidIsValid(connect_db = database_to_connect(leader, share)))
				break;
			if ((slotno = free_slot(leader)) < 0)
			{
				/* A worker left from an earlier restore holds it. */
				if (leader->no_slot_since == 0)
					leader->no_slot_since = GetCurrentTimestamp();
				return;
			}
			if (!start_stripe(leader, s, k, connect_db, slotno))
			{
				if (leader->no_slot_since == 0)
					leader->no_slot_since = GetCurrentTimestamp();
				if (!leader->no_slot_warned)
					ereport(WARNING,
							(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
							 errmsg("could not start a restore worker"),
							 errdetail("All background worker slots are in use; the restore tries again as they free up."),
							 errhint("Consider raising \"max_worker_processes\".")));
				leader->no_slot_warned = true;
				return;
			}
			leader->no_slot_since = 0;
		}
	}
}

/*
 * Without any worker running, and none startable for
 * WC_LAUNCH_PATIENCE_S, give up what is left.
 */
static void
check_patience(RestoreLeader *leader)
{
	int			s;

	if (leader->running > 0 || leader->no_slot_since == 0 ||
		!TimestampDifferenceExceeds(leader->no_slot_since, GetCurrentTimestamp(),
									WC_LAUNCH_PATIENCE_S * 1000))
		return;
	note_incomplete(leader, "no free background worker slot");
	for (s = 0; s < leader->nshares; s++)
		give_up_share(leader, &leader->shares[s], DB_RESTORE);
}

/*
 * Does a database-level command want a database whose restore waits for it
 * (a stripe whose worker left it, or one not started)?
 */
static bool
command_wants_restore_database(RestoreLeader *leader)
{
	int			s;

	for (s = 0; s < leader->nshares; s++)
	{
		DbShare    *share = &leader->shares[s];

		if (share_waits(share) && OidIsValid(share->db) &&
			wc_database_wanted(share->db))
			return true;
	}
	return false;
}

/*
 * Whether the workers pause now (pacer.c): CREATE DATABASE copies its
 * template, ALTER DATABASE SET TABLESPACE moves the files, bulk I/O that
 * the user waits for, and the restore's other workers would halve its
 * bandwidth.  For at most WC_COMMAND_PAUSE_MAX_S while commands keep
 * wanting databases of the restore, then not until none does.
 */
static bool
pause_for_commands(RestoreLeader *leader)
{
	TimestampTz now;

	if (leader->stopped || !command_wants_restore_database(leader))
	{
		leader->command_since = 0;
		return false;
	}
	now = GetCurrentTimestamp();
	if (leader->command_since == 0)
		leader->command_since = now;
	return !TimestampDifferenceExceeds(leader->command_since, now,
									   WC_COMMAND_PAUSE_MAX_S * 1000);
}

/* After an abort, end the workers that did not stop by themselves. */
static void
stop_workers(RestoreLeader *leader)
{
	int			i;

	if (leader->stopped_at == 0)
		leader->stopped_at = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(leader->stopped_at, GetCurrentTimestamp(),
									WC_STOP_GRACE_MS))
		return;
	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		if (leader->handles[i] != NULL)
			TerminateBackgroundWorker(leader->handles[i]);
}

static bool
all_closed(const RestoreLeader *leader)
{
	int			s;

	for (s = 0; s < leader->nshares; s++)
		if (!leader->shares[s].closed)
			return false;
	return true;
}

/*---- The status, and the report at the end ----*/

/*
 * Publish the start of a restore of the checked file.  From here on, every
 * way out reports its end (report_end()), so that an incomplete restore of
 * the saved file is known as such.
 */
static void
publish_start(RestoreLeader *leader, WarmMode mode)
{
	const WarmFileHeader *hdr = &leader->hdr;
	RestoreSource source = leader->source;
	int			r;

	wc_status_lock(LW_EXCLUSIVE);
	if (source == WC_SOURCE_SAVED)
		wc_note_saved_dump(hdr);
	wc_restore->mode = mode;
	if (source != WC_SOURCE_FOLLOWED)
	{
		wc_restore->incomplete = false;
		wc_restore->incomplete_reason[0] = '\0';
	}
	wc_restore->started_at = leader->started;
	wc_restore->finished_at = 0;
	wc_restore->blocks_total = (int64) hdr->nblocks;
	wc_restore->os_tier_total = 0;	/* publish_os_tier() */
	pg_atomic_write_u64(&wc_restore->blocks_done, 0);
	pg_atomic_write_u64(&wc_restore->os_tier_done, 0);
	pg_atomic_write_u64(&wc_restore->blocks_os, 0);
	pg_atomic_write_u64(&wc_restore->buffer_tier_os, 0);
	pg_atomic_write_u64(&wc_restore->cpu_us, 0);
	pg_atomic_write_u64(&wc_restore->device_bytes, 0);
	pg_atomic_write_u32(&wc_restore->device_unknown, 0);
	pg_atomic_write_u64(&wc_restore->found_cached, 0);
	pg_atomic_write_u32(&wc_restore->db_command_pending, 0);
	pg_atomic_write_u64(&wc_restore->wait_cap, 0);
	SpinLockAcquire(&wc_restore->rate_mutex);
	wc_restore->spell_at = 0;
	SpinLockRelease(&wc_restore->rate_mutex);
	SpinLockAcquire(&wc_restore->advice.mutex);
	memset(&wc_restore->advice.advice, 0, sizeof(WarmAdvice));
	SpinLockRelease(&wc_restore->advice.mutex);
	for (r = 0; r < WC_SKIP_REASONS; r++)
		pg_atomic_write_u64(&wc_restore->skipped[r], 0);
	wc_status_unlock();
	leader->published = true;
}

/* Publish the OS tier's share of the file, once counted. */
static void
publish_os_tier(RestoreLeader *leader)
{
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->os_tier_total = (int64) leader->os_tier_blocks;
	if (leader->source == WC_SOURCE_FOLLOWED ||
		leader->source == WC_SOURCE_PROMOTION)
		wc_restore->followed_os_tier = (int64) leader->os_tier_blocks;
	wc_status_unlock();
}

/* Was a share given up because a command kept wanting its database? */
static bool
any_wanted_out(const RestoreLeader *leader)
{
	int			s;

	for (s = 0; s < leader->nshares; s++)
		if (leader->shares[s].wanted_out)
			return true;
	return false;
}

/*
 * Publish the end of the restore and log its figures.
 */
static void
report_end(RestoreLeader *leader)
{
	const WarmFileHeader *hdr = &leader->hdr;
	RestoreSource source = leader->source;
	TimestampTz started = leader->started;
	uint64		done = pg_atomic_read_u64(&wc_restore->blocks_done);
	uint64		os = pg_atomic_read_u64(&wc_restore->blocks_os);
	uint64		skip[WC_SKIP_REASONS];
	uint64		skipped = 0;
	TimestampTz finished = GetCurrentTimestamp();
	long		secs;
	int			usecs;
	double		elapsed;
	int			r;
	bool		incomplete;

	for (r = 0; r < WC_SKIP_REASONS; r++)
		skipped += skip[r] = pg_atomic_read_u64(&wc_restore->skipped[r]);
	if (skip[WC_SKIP_LOCKED] > 0)
		note_incomplete(leader, "blocks skipped: their relation was locked");
	if (skip[WC_SKIP_FAILED] > 0)
		note_incomplete(leader, "blocks skipped: errors while reading them");
	incomplete = leader->stopped ||
		done + skip[WC_SKIP_GONE] + skip[WC_SKIP_EXCLUDED] +
		skip[WC_SKIP_LIMIT] + skip[WC_SKIP_CATALOG] < hdr->nblocks;
	if (incomplete)
		note_incomplete(leader, "a restore worker did not finish");

	TimestampDifference(started, finished, &secs, &usecs);
	elapsed = secs + usecs / 1000000.0;

	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->finished_at = finished;

	/*
	 * The saved file's restore and the load at promotion decide whether
	 * automatic dumps may replace the saved file (and the load whether the
	 * followed file is kept: autowarm.c); a pass over the followed set, the
	 * primary's, fetched again anyway, does not.
	 */
	if (source != WC_SOURCE_FOLLOWED)
	{
		wc_restore->incomplete = incomplete;
		if (incomplete)
			strlcpy(wc_restore->incomplete_reason, leader->reason,
					sizeof(wc_restore->incomplete_reason));
	}
	if (source == WC_SOURCE_SAVED)
	{
		uint64		read = pg_atomic_read_u64(&wc_restore->device_bytes);

		/*
		 * What warmcache_estimate() predicts the next restore by: what the
		 * workers read from the device over the restore's duration.  Not
		 * where that is not known, nor under a rate cap, which sets the
		 * rate.
		 */
		if (pg_atomic_read_u32(&wc_restore->device_unknown) == 0 &&
			wc_max_restore_rate == 0)
			wc_estimate_note_restore_rate(started, read, elapsed);

		/* Come back to what a command kept out, a few times. */
		wc_set_restore_retry(0, wc_restore->mode);
		if (!any_wanted_out(leader))
			wc_restore->retries = 0;
		else if (!leader->stopped &&
				 wc_restore->retries < WC_DB_RETRIES)
		{
			wc_restore->retries++;
			wc_set_restore_retry(TimestampTzPlusMilliseconds(finished, WC_DB_RETRY_S * 1000),
								 wc_restore->mode);
		}
	}
	else if (source != WC_SOURCE_IMPORT)
	{
		uint64		os_tier = pg_atomic_read_u64(&wc_restore->os_tier_done);
		uint64		missed = pg_atomic_read_u64(&wc_restore->buffer_tier_os);

		/*
		 * The buffer tier is warm where the mode aims: in mode buffer, its
		 * blocks that went into the OS cache only (while the CPUs were
		 * busy, or shared buffers full) are not.
		 */
		wc_restore->followed_warm = (int64) (done - os_tier -
											Min(missed, done - os_tier));
		wc_restore->followed_os_tier_warm = (int64) os_tier;
	}
	wc_set_abort_requested(false);
	wc_status_unlock();

	/* What an import left out, and why, is its point: said apart. */
	if (source == WC_SOURCE_IMPORT)
		ereport(LOG,
				(errmsg_end(source, leader->stopped, incomplete,
							done, hdr->nblocks, os, skipped, elapsed),
				 errdetail("Left out: %llu of catalogs, %llu of relations this cluster does not have with that file number or past their end, %llu in databases that do not allow connections, %llu past the restore limit; skipped: %llu locked, %llu unreadable. The restore workers used %.2f s of CPU.",
						   (unsigned long long) skip[WC_SKIP_CATALOG],
						   (unsigned long long) skip[WC_SKIP_GONE],
						   (unsigned long long) skip[WC_SKIP_EXCLUDED],
						   (unsigned long long) skip[WC_SKIP_LIMIT],
						   (unsigned long long) skip[WC_SKIP_LOCKED],
						   (unsigned long long) skip[WC_SKIP_FAILED],
						   pg_atomic_read_u64(&wc_restore->cpu_us) / 1000000.0)));
	else

		/*
		 * A pass over the followed set comes with each of the primary's
		 * dumps.
		 */
		ereport(source == WC_SOURCE_FOLLOWED && !incomplete ? DEBUG1 : LOG,
			(errmsg_end(source, leader->stopped, incomplete,
						done, hdr->nblocks, os, skipped, elapsed),
			 incomplete ?
			 errdetail("Skipped: %llu gone, %llu in excluded databases, %llu locked, %llu unreadable, %llu past the restore limit. In the OS cache already, not read again: %llu. The restore workers used %.2f s of CPU. The saved block list is kept: %s.",
					   (unsigned long long) skip[WC_SKIP_GONE],
					   (unsigned long long) skip[WC_SKIP_EXCLUDED],
					   (unsigned long long) skip[WC_SKIP_LOCKED],
					   (unsigned long long) skip[WC_SKIP_FAILED],
					   (unsigned long long) skip[WC_SKIP_LIMIT],
					   (unsigned long long) pg_atomic_read_u64(&wc_restore->found_cached),
					   pg_atomic_read_u64(&wc_restore->cpu_us) / 1000000.0,
					   leader->reason) :
			 errdetail("Skipped: %llu gone, %llu in excluded databases, %llu locked, %llu unreadable, %llu past the restore limit. In the OS cache already, not read again: %llu. The restore workers used %.2f s of CPU.",
					   (unsigned long long) skip[WC_SKIP_GONE],
					   (unsigned long long) skip[WC_SKIP_EXCLUDED],
					   (unsigned long long) skip[WC_SKIP_LOCKED],
					   (unsigned long long) skip[WC_SKIP_FAILED],
					   (unsigned long long) skip[WC_SKIP_LIMIT],
					   (unsigned long long) pg_atomic_read_u64(&wc_restore->found_cached),
					   pg_atomic_read_u64(&wc_restore->cpu_us) / 1000000.0)));
}

/* The file a restore reads. */
const char *
wc_source_file(RestoreSource source)
{
	switch (source)
	{
		case WC_SOURCE_SAVED:
			return WC_DUMP_FILE;
		case WC_SOURCE_IMPORT:
			return WC_IMPORT_FILE;
		case WC_SOURCE_FOLLOWED:
		case WC_SOURCE_PROMOTION:
			break;
	}
	return WC_FOLLOWED_FILE;
}

/* What a restore is, in words, for status and log lines. */
const char *
wc_source_name(RestoreSource source)
{
	switch (source)
	{
		case WC_SOURCE_SAVED:
			return "restore";
		case WC_SOURCE_FOLLOWED:
			return "follow";
		case WC_SOURCE_PROMOTION:
			return "promotion";
		case WC_SOURCE_IMPORT:
			return "import";
	}
	return "restore";
}

/*---- Stopping and ending ----*/

/*
 * Set abort_requested, which the workers look at between chunks (pacer.c)
 * and warmcache_status() reports, under the lock.
 */
static void
set_abort_requested(bool value)
{
	wc_status_lock(LW_EXCLUSIVE);
	wc_set_abort_requested(value);
	wc_status_unlock();
}

/*
 * Why a restore stops before its end, if it is to: the server shuts down,
 * the autowarm worker is terminated, an abort or a cancel (SIGINT) was
 * asked for, or a pass over the followed set is no longer wanted.  Then
 * the workers are told (abort_requested) and, after WC_STOP_GRACE_MS,
 * terminated.  Looked at in each of the leader's loops; the postmaster's
 * death ends the process.
 */
static void
leader_check_stop(RestoreLeader *leader)
{
	const char *reason = NULL;

	CHECK_FOR_INTERRUPTS();
	if (!PostmasterIsAlive())
		proc_exit(1);			/* leader_exit() reports the end */
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	if (ShutdownRequestPending)
		reason = wc_server_stopping() ? "the server shut down" :
			"the autowarm worker was terminated";
	else if (wc_abort_is_requested())
		reason = "aborted";
	else if (wc_cancel_pending)
		reason = "cancelled";
	else if (wc_restore->source == WC_SOURCE_FOLLOWED &&
			 (!RecoveryInProgress() || wc_follow_primary == WC_FOLLOW_OFF))
		reason = "no longer following";
	if (reason == NULL && !leader->stopped)
		return;
	if (!leader->stopped)
	{
		note_incomplete(leader, reason);
		leader->stopped = true;
	}
	set_abort_requested(true);	/* the workers look at it */
	stop_workers(leader);
}

/*
 * On an error or at exit: terminate the workers at once and wait, for
 * WC_EXIT_WAIT_MS at most, until they are gone, so that none of them
 * counts into the next restore.  Runs in an exit callback too: it neither
 * checks for interrupts nor exits on the postmaster's death (the workers
 * then leave by themselves).
 */
static void
end_workers_now(RestoreLeader *leader)
{
	TimestampTz since = GetCurrentTimestamp();
	int			i;

	for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
		if (leader->handles[i] != NULL)
			TerminateBackgroundWorker(leader->handles[i]);
	for (;;)
	{
		int			alive = 0;
		pid_t		pid;

		for (i = 0; i < WC_MAX_RESTORE_WORKERS; i++)
			if (leader->handles[i] != NULL &&
				GetBackgroundWorkerPid(leader->handles[i], &pid) != BGWH_STOPPED)
				alive++;
		if (alive == 0 || !PostmasterIsAlive() ||
			TimestampDifferenceExceeds(since, GetCurrentTimestamp(),
									   WC_EXIT_WAIT_MS))
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	forget_workers(leader);
}

/*
 * The end of every restore, on every way out: workers that may still run
 * are ended, the end is reported (a restore stopped early is incomplete,
 * with its reason), abort_requested is cleared and the restoring state
 * ends.
 */
static void
end_restore(RestoreLeader *leader, bool workers_may_run)
{
	leading = NULL;
	if (workers_may_run && leader->running > 0)
	{
		set_abort_requested(true);
		end_workers_now(leader);
	}
	pg_atomic_write_u32(&wc_restore->db_command_pending, 0);
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->waiting_db = InvalidOid;
	wc_restore->waiting_since = 0;
	wc_status_unlock();
	if (leader->published)
		report_end(leader);		/* clears abort_requested */
	else
		set_abort_requested(false);
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore_note_pass_end();
	wc_status_unlock();
	wc_end_operation();
}

/*
 * At exit during a restore (a FATAL, the postmaster's death): proc_exit()
 * does not unwind, so the leader's state is still there to end.  Runs
 * before the transaction, if any, is aborted.
 */
static void
leader_exit(int code, Datum arg)
{
	RestoreLeader *leader = leading;

	if (leader == NULL)
		return;
	LWLockReleaseAll();
	if (!leader->stopped)
	{
		note_incomplete(leader, PostmasterIsAlive() ?
						"the autowarm worker exited" : "the postmaster died");
		leader->stopped = true;
	}
	end_restore(leader, true);
}

/*---- Leading ----*/

/*
 * The leader's loop: start workers, collect them, until every share is
 * closed or the restore stopped and its workers ended.
 */
static void
lead_workers(RestoreLeader *leader)
{
	for (;;)
	{
		leader_check_stop(leader);
		reap_workers(leader);
		launch_workers(leader);
		publish_waiting(leader);
		check_patience(leader);
		pg_atomic_write_u32(&wc_restore->db_command_pending,
							pause_for_commands(leader) ? 1 : 0);
		if (leader->running == 0 && (leader->stopped || all_closed(leader)))
			break;

		/* Workers that ignore being terminated are not waited for. */
		if (leader->stopped && leader->stopped_at != 0 &&
			TimestampDifferenceExceeds(leader->stopped_at, GetCurrentTimestamp(),
									   WC_STOP_GRACE_MS + WC_EXIT_WAIT_MS))
		{
			forget_workers(leader);
			break;
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Restore the dump file.  Runs in the autowarm worker, which has begun the
 * restoring state; ends it on every way out.  An ERROR (which a cancel is
 * not: see autowarm.c) is reported, ends the restore as incomplete and is
 * not raised further: the autowarm worker goes on.
 */
void
wc_lead_restore(WarmMode mode, RestoreSource source)
{
	RestoreLeader *leader = &the_leader;
	MemoryContext cxt = CurrentMemoryContext;
	char	   *problem;
	DumpFileStatus status;

	if (!leader_exit_registered)
	{
		before_shmem_exit(leader_exit, (Datum) 0);
		leader_exit_registered = true;
	}
	memset(leader, 0, sizeof(*leader));
	leader->source = source;
	wc_status_lock(LW_EXCLUSIVE);
	wc_restore->source = source;
	wc_status_unlock();
	leading = leader;

	PG_TRY();
	{
		if (source == WC_SOURCE_IMPORT)
			status = wc_check_import(WC_IMPORT_FILE, &leader->hdr, &problem);
		else
			status = wc_check_file(wc_source_file(source), &leader->hdr, &problem);
		if (status == WC_FILE_OK)
		{
			leader->started = GetCurrentTimestamp();
			publish_start(leader, mode);
			count_shares(leader);
			plan_limit(leader, mode);
			publish_os_tier(leader);
			ereport(source == WC_SOURCE_FOLLOWED ? DEBUG1 : LOG,
					(errmsg_plural("restoring %llu blocks (%.1f MB) of %d database in mode %s, from \"%s\"",
								   "restoring %llu blocks (%.1f MB) of %d databases in mode %s, from \"%s\"",
								   (unsigned long) leader->ndbs,
								   (unsigned long long) leader->hdr.nblocks,
								   leader->hdr.nblocks * (double) BLCKSZ / (1024.0 * 1024.0),
								   leader->ndbs, wc_mode_name(mode),
								   wc_source_file(source)),
					 leader->os_tier_blocks > 0 ?
					 errdetail_plural("%llu of the blocks was in the OS page cache only; it goes back there.",
									  "%llu of the blocks were in the OS page cache only; they go back there.",
									  (unsigned long) leader->os_tier_blocks,
									  (unsigned long long) leader->os_tier_blocks) : 0));
			lead_workers(leader);
		}
		else if (status == WC_FILE_BAD && source == WC_SOURCE_IMPORT)
			wc_set_aside_bad_import(WC_IMPORT_FILE, problem);
		else if (status == WC_FILE_BAD)
			wc_set_aside_bad_file(wc_source_file(source), problem, WARNING);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		LWLockReleaseAll();
		ConditionVariableCancelSleep();
		/* Outside a transaction, what the counting had open */
		AtEOXact_Files(false);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg_error(source, edata->message),
				 errdetail("The saved block list is kept; the autowarm worker goes on.")));
		FreeErrorData(edata);
		if (!leader->stopped)
		{
			note_incomplete(leader, "an error in the restore leader");
			leader->stopped = true;
		}
	}
	PG_END_TRY();

	end_restore(leader, true);
	if (leader->shares)
		pfree(leader->shares);

	/*
	 * An import is used once, however its restore ended: the next start
	 * restores this cluster's own saved file.  (An exit that cuts the
	 * leader short leaves it, for the next start to import.)
	 */
	if (source == WC_SOURCE_IMPORT && access(WC_IMPORT_FILE, F_OK) == 0 &&
		durable_unlink(WC_IMPORT_FILE, LOG) == 0)
		ereport(LOG,
				(errmsg("removed the imported file \"%s\"", WC_IMPORT_FILE),
				 errdetail("An import is restored once.")));
}
