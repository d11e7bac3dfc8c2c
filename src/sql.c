/*-------------------------------------------------------------------------
 *
 * sql.c
 *		Every SQL function of the extension: warm() and warm_table(), the
 *		dump and restore controls, the status, the saved set, readiness.
 *
 * This is the top of the module: each function reads and checks its
 * arguments, calls the module that does the work, and forms its result.
 * A function that returns rows checks that the SQL declaration it was
 * called through has as many columns as the library fills (an older
 * version's declaration may have fewer: see warmcache_status()).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/smgr.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "channel_state.h"
#include "dump.h"
#include "dumpfile.h"
#include "engine.h"
#include "estimate.h"
#include "parallel_warm.h"
#include "readiness.h"
#include "relations.h"
#include "restore.h"
#include "restore_shared.h"
#include "saved_set.h"
#include "settings.h"
#include "operation.h"
#include "warm.h"

PG_FUNCTION_INFO_V1(warm);
PG_FUNCTION_INFO_V1(warm_table);
PG_FUNCTION_INFO_V1(warmcache_dump_now);
PG_FUNCTION_INFO_V1(warmcache_restore_now);
PG_FUNCTION_INFO_V1(warmcache_restore_abort);
PG_FUNCTION_INFO_V1(warmcache_status);
PG_FUNCTION_INFO_V1(warmcache_blocks);
PG_FUNCTION_INFO_V1(warmcache_saved_tiers);
PG_FUNCTION_INFO_V1(warmcache_is_warm);
PG_FUNCTION_INFO_V1(warmcache_wait_warm);
PG_FUNCTION_INFO_V1(warmcache_relations);
PG_FUNCTION_INFO_V1(warmcache_estimate);

/*
 * Check that the row type the called SQL function was declared with has
 * one of the column counts that the library's function, symbol, fills:
 * ncols[0..n-1], one per version of the extension that changed it, oldest
 * first.  Another count means the declaration and the library do not
 * match, and the values would go into the wrong columns.
 */
static void
check_result_columns(FunctionCallInfo fcinfo, const char *symbol,
					 TupleDesc tupdesc, const int *ncols, int n)
{
	StringInfoData counts;
	int			k;

	for (k = 0; k < n; k++)
		if (tupdesc->natts == ncols[k])
			return;
	initStringInfo(&counts);
	for (k = 0; k < n; k++)
		appendStringInfo(&counts, "%s%d",
						 k == 0 ? "" : k == n - 1 ? " or " : ", ", ncols[k]);
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("function %s is declared to return %d columns, but the library's %s() returns %s",
					format_procedure(fcinfo->flinfo->fn_oid), tupdesc->natts,
					symbol, counts.data),
			 errdetail("The function's declaration in the database does not match any that a version of the extension makes."),
			 errhint("Bring the extension to the library's version with ALTER EXTENSION pg_warmcache UPDATE.")));
}

/*---- warm() and warm_table() ----*/

#define ARG_NOT_NULL(n, what) \
	do { \
		if (PG_ARGISNULL(n)) \
			ereport(ERROR, \
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
					 errmsg("%s cannot be null", (what)))); \
	} while (0)

/*
 * warm(relation, mode, fork, first_block, last_block): pg_prewarm()'s
 * arguments and meaning, with a look-ahead that keeps the disk busy.  Most
 * of it is pg_prewarm()'s checks, one after the other, each with its error.
 */
Datum
warm(PG_FUNCTION_ARGS)
{
	Oid			relOid;
	Oid			privOid;
	WarmMode	mode;
	char	   *forkString;
	ForkNumber	fork;
	Relation	rel;
	int64		nblocks;
	int64		first_block;
	int64		last_block;
	WarmRange	r;
	uint64		done;

	ARG_NOT_NULL(0, "relation");
	ARG_NOT_NULL(1, "mode");
	ARG_NOT_NULL(2, "fork");
	relOid = PG_GETARG_OID(0);
	mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	forkString = text_to_cstring(PG_GETARG_TEXT_PP(2));
	fork = forkname_to_number(forkString);
	wc_check_mode_supported(mode);

	rel = wc_open_for_warming(relOid, &privOid);

	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation \"%s\" does not have storage",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind),
				 rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
				 errhint("Use warm_table() to warm all partitions.") : 0));

	if (!smgrexists(RelationGetSmgr(rel), fork))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fork \"%s\" does not exist for relation \"%s\"",
						forkString, RelationGetRelationName(rel))));

	nblocks = RelationGetNumberOfBlocksInFork(rel, fork);
	first_block = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT64(3);
	last_block = PG_ARGISNULL(4) ? nblocks - 1 : PG_GETARG_INT64(4);
	if ((!PG_ARGISNULL(3) && (first_block < 0 || first_block >= nblocks)) ||
		(!PG_ARGISNULL(4) && (last_block < 0 || last_block >= nblocks)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("block %lld is out of range for fork \"%s\" of relation \"%s\"",
						(long long) ((!PG_ARGISNULL(3) &&
									  (first_block < 0 || first_block >= nblocks)) ?
									 first_block : last_block),
						forkString, RelationGetRelationName(rel)),
				 nblocks > 0 ?
				 errdetail("Valid block numbers are 0 to %lld.",
						   (long long) (nblocks - 1)) :
				 errdetail("The fork has no blocks.")));
	if (first_block > last_block && !(PG_ARGISNULL(3) && PG_ARGISNULL(4)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("first_block %lld is greater than last_block %lld",
						(long long) first_block, (long long) last_block)));

	done = 0;
	if (nblocks > 0)
	{
		r.start = (BlockNumber) first_block;
		r.count = (BlockNumber) (last_block - first_block + 1);
		done = wc_warm_range(rel, fork, mode, &r);
	}

	wc_close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
}

/*
 * warm_table(table, mode): a table with everything a query on it reads;
 * for a partitioned table, all its partitions.
 */
Datum
warm_table(PG_FUNCTION_ARGS)
{
	Oid			relOid;
	WarmMode	mode;
	Relation	rel;
	Oid			privOid;
	char		relkind;
	uint64		done;

	ARG_NOT_NULL(0, "table");
	ARG_NOT_NULL(1, "mode");
	relOid = PG_GETARG_OID(0);
	mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	wc_check_mode_supported(mode);

	rel = wc_open_for_warming(relOid, &privOid);
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(relkind),
				 errhint("Use warm() to warm a single relation.")));

	done = wc_warm_table(relOid, relkind, mode);
	wc_close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
}

/*---- Dumps and restores ----*/

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
	if (!wc_begin_dump(true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot dump while a restore is in progress"),
				 errdetail("A dump now would replace the saved block list with the part restored so far."),
				 errhint("Wait for the restore to end, or stop it with warmcache_restore_abort().")));

	PG_ENSURE_ERROR_CLEANUP(end_operation_callback, (Datum) 0);
	{
		n = wc_dump(false, 0);
		wc_restore_forget_incomplete();
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

	switch (wc_request_restore(mode))
	{
		case WC_REQUEST_TAKEN:
			break;
		case WC_REQUEST_NO_WORKER:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the pg_warmcache worker is not running"),
					 errhint("Check the server log for why it stopped; it is started again within a minute.")));
			break;
		case WC_REQUEST_DUMPING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot restore while a dump is in progress")));
			break;
		case WC_REQUEST_RESTORING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot restore while a restore is in progress")));
			break;
	}

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
	wc_require_shared();
	PG_RETURN_BOOL(wc_request_abort());
}

/*---- Status ----*/

/*
 * The fields of the shared state that warmcache_status() reports, copied
 * under the lock in one go, so that the row is one moment's.
 */
typedef struct StatusFields
{
	OperationStatus op;
	DumpStatus	dump;
	RestoreStatus restore;
	ChannelStatus channel;
} StatusFields;

/* Each part's status, as of one moment. */
static void
read_status_fields(StatusFields *s)
{
	wc_status_lock(LW_SHARED);
	wc_operation_status(&s->op);
	wc_dump_status(&s->dump);
	wc_restore_status(&s->restore);
	wc_channel_status(&s->channel);
	wc_status_unlock();
}

static Datum
ts_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum(t);
}

/*
 * warmcache_status(): one row describing the worker, the last dump and the
 * current or last restore.  Older versions of the SQL function have the
 * first columns only (status_columns); the row is cut to what the
 * caller's has.  The body is one value per column, in column order, so it
 * grows with the columns.
 */
Datum
warmcache_status(PG_FUNCTION_ARGS)
{
#define STATUS_COLS 33
	/* 1.0, 1.1, 1.2 and 1.3, 1.4, 1.5, 1.6 */
	static const int status_columns[] = {16, 23, 30, 31, 32, STATUS_COLS};
	TupleDesc	tupdesc;
	Datum		values[STATUS_COLS];
	bool		nulls[STATUS_COLS];
	StatusFields s;
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
	check_result_columns(fcinfo, "warmcache_status", tupdesc, status_columns,
						 lengthof(status_columns));

	read_status_fields(&s);
	done = s.restore.blocks_done;
	os = s.restore.blocks_os;
	for (r = 0; r < WC_SKIP_REASONS; r++)
		skipped += skip[r] = s.restore.skipped[r];
	/* An import's catalogs are excluded: no column of their own. */
	skip[WC_SKIP_EXCLUDED] += skip[WC_SKIP_CATALOG];
	started = (s.restore.started_at != 0);

	/*
	 * A new followed file is restored by the pass that follows: from the
	 * moment followed_dump_at names it, the state says restoring, so that
	 * "followed that dump and idle" means its pass ended.  A standby that
	 * stopped following, or was promoted, has no pass due.
	 */
	follow_pass_due = s.op.follow_pass_due && RecoveryInProgress() &&
		wc_follow_primary != WC_FOLLOW_OFF;

	if (started)
	{
		TimestampTz end = s.restore.finished_at ? s.restore.finished_at :
		GetCurrentTimestamp();

		elapsed = (end - s.restore.started_at) / 1000000.0;
		if (elapsed > 0)
		{
			uint64		found = s.restore.found_cached;

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
	state = s.op.state == WC_STATE_DUMPING ? "dumping" :
		(s.op.state == WC_STATE_RESTORING || s.op.restore_requested ||
		 follow_pass_due) ? "restoring" : "idle";
	values[i++] = CStringGetTextDatum(state);
	values[i] = Int32GetDatum(s.op.worker_pid);
	nulls[i++] = (s.op.worker_pid == 0);
	values[i] = ts_or_null(s.dump.last_dump_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.dump.last_dump_blocks);
	nulls[i++] = (s.dump.last_dump_at == 0);
	values[i] = Float8GetDatum(s.dump.last_dump_seconds);
	nulls[i++] = (s.dump.last_dump_at == 0 || s.dump.last_dump_seconds < 0);
	values[i] = CStringGetTextDatum(wc_mode_name(s.restore.mode));
	nulls[i++] = !started;
	values[i] = ts_or_null(s.restore.started_at, &nulls[i]);
	i++;
	values[i] = ts_or_null(s.restore.finished_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.restore.blocks_total);
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
	if (s.op.state == WC_STATE_RESTORING && s.restore.finished_at == 0 && progress > 0)
	{
		double		left = (double) s.restore.blocks_total - done - skipped;

		values[i] = Float8GetDatum(Max(left, 0) * BLCKSZ / (1024.0 * 1024.0) / progress);
	}
	else
		nulls[i] = true;
	i++;
	values[i++] = BoolGetDatum(s.restore.incomplete);
	values[i++] = BoolGetDatum(s.op.abort_requested);

	/* 1.1 */
	values[i] = CStringGetTextDatum(s.restore.incomplete_reason);
	nulls[i++] = !s.restore.incomplete || s.restore.finished_at == 0;
	for (r = WC_SKIP_GONE; r <= WC_SKIP_FAILED; r++)
	{
		values[i] = Int64GetDatum((int64) skip[r]);
		nulls[i++] = !started;
	}
	values[i] = Int64GetDatum(s.restore.os_tier_total);
	nulls[i++] = !started;
	values[i] = Int64GetDatum((int64) s.restore.os_tier_done);
	nulls[i++] = !started;

	/* 1.2: what a restore read, and on a standby what it follows */
	values[i] = CStringGetTextDatum(wc_source_name(s.restore.source));
	nulls[i++] = !started;
	following = wc_follow_primary != WC_FOLLOW_OFF || s.channel.follow_state == WC_FOLLOW_PROMOTED;
	values[i] = CStringGetTextDatum(wc_follow_state_name(s.channel.follow_state));
	nulls[i++] = !following;
	values[i] = ts_or_null(s.channel.followed_dumped_at, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(s.channel.followed_blocks - s.restore.followed_os_tier);
	nulls[i++] = s.channel.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.restore.followed_os_tier);
	nulls[i++] = s.channel.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.restore.followed_warm);
	nulls[i++] = s.channel.followed_dumped_at == 0;
	values[i] = Int64GetDatum(s.restore.followed_os_tier_warm);
	nulls[i++] = s.channel.followed_dumped_at == 0;

	/* 1.4: the database a restore waits for, a command wanting it */
	values[i] = ObjectIdGetDatum(s.restore.waiting_db);
	nulls[i++] = s.op.state != WC_STATE_RESTORING || !OidIsValid(s.restore.waiting_db);

	/* 1.5: the blocks past the restore limit that it left out */
	values[i] = Int64GetDatum((int64) skip[WC_SKIP_LIMIT]);
	nulls[i++] = !started;

	/* 1.6: who holds the lock the channel found taken */
	values[i] = Int32GetDatum(s.channel.lock_holder);
	nulls[i++] = s.channel.lock_holder == 0;
	if (i != STATUS_COLS)
		elog(ERROR, "warmcache_status() filled %d columns, not %d", i, STATUS_COLS);

	tupdesc = BlessTupleDesc(tupdesc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*---- The saved set ----*/

/*
 * warmcache_blocks(): the saved file, a row per block.  From 1.1 a row also
 * says its tier, and blocks of the OS tier have no rank.
 */
Datum
warmcache_blocks(PG_FUNCTION_ARGS)
{
	/* 1.0, and 1.1 on */
	static const int blocks_columns[] = {6, 7};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarmFileHeader hdr;
	WarmFileReader r;
	WarmRun		run;
	char	   *problem;

	/* The 1.0 function has no tier column: the row is cut to its six. */
	InitMaterializedSRF(fcinfo, 0);
	check_result_columns(fcinfo, "warmcache_blocks", rsinfo->setDesc,
						 blocks_columns, lengthof(blocks_columns));

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

/*
 * warmcache_saved_tiers(): a row per tier of the saved file (buffer, os)
 * with its blocks and bytes; no rows if there is no file.
 */
Datum
warmcache_saved_tiers(PG_FUNCTION_ARGS)
{
	static const int saved_tiers_columns[] = {3};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		tiers[2];
	const char *names[2] = {"buffer", "os"};
	bool		found;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	check_result_columns(fcinfo, "warmcache_saved_tiers", rsinfo->setDesc,
						 saved_tiers_columns, lengthof(saved_tiers_columns));
	wc_sum_saved_tiers(&tiers[0], &tiers[1], &found);
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

/*---- Before a restart ----*/

/*
 * warmcache_relations() (1.5): a row per relation fork of the current
 * database and the shared catalogs that the saved set, shared buffers or
 * the OS page cache hold (relations.c).
 */
Datum
warmcache_relations(PG_FUNCTION_ARGS)
{
#define RELATIONS_COLS 10
	static const int relations_columns[] = {RELATIONS_COLS};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HTAB	   *census;
	HASH_SEQ_STATUS seq;
	CensusEntry *e;
	MemoryContext row_cxt;
	MemoryContext old_cxt;

	/* The census reads the saved file and the buffer headers. */
	wc_require_shared();
	InitMaterializedSRF(fcinfo, 0);
	check_result_columns(fcinfo, "warmcache_relations", rsinfo->setDesc,
						 relations_columns, lengthof(relations_columns));
	census = wc_relations_census();

	/* A row's text and array, freed after it: there may be 100,000 rows. */
	row_cxt = AllocSetContextCreate(CurrentMemoryContext,
									"warmcache_relations row",
									ALLOCSET_SMALL_SIZES);
	hash_seq_init(&seq, census);
	while ((e = (CensusEntry *) hash_seq_search(&seq)) != NULL)
	{
		Datum		values[RELATIONS_COLS];
		bool		nulls[RELATIONS_COLS] = {0};
		Datum		by_usage[WC_MAX_RANK + 1];
		int			dims[1] = {WC_MAX_RANK + 1};
		int			lbs[1] = {0};
		int64		buffer_tier = 0;
		int			r;
		int			i = 0;

		for (r = 0; r <= WC_MAX_RANK; r++)
		{
			buffer_tier += e->saved[r];
			by_usage[r] = Int64GetDatum(e->saved[r]);
		}
		if (buffer_tier == 0 && e->saved[WC_RANK_SLOT_OS] == 0 &&
			e->in_buffers == 0 && e->in_os_cache == 0)
			continue;
		MemoryContextReset(row_cxt);
		old_cxt = MemoryContextSwitchTo(row_cxt);
		values[i] = ObjectIdGetDatum(e->relid);
		nulls[i++] = !OidIsValid(e->relid);
		values[i++] = ObjectIdGetDatum(e->key.spc);
		values[i++] = ObjectIdGetDatum(e->key.relnumber);
		values[i++] = CStringGetTextDatum(forkNames[e->key.fork]);
		values[i] = Int64GetDatum(e->size_blocks);
		nulls[i++] = e->size_blocks < 0;
		values[i++] = Int64GetDatum(buffer_tier);
		values[i++] = PointerGetDatum(construct_md_array(by_usage, NULL, 1,
														 dims, lbs, INT8OID,
														 sizeof(int64),
														 FLOAT8PASSBYVAL,
														 TYPALIGN_DOUBLE));
		values[i++] = Int64GetDatum(e->saved[WC_RANK_SLOT_OS]);
		values[i++] = Int64GetDatum(e->in_buffers);
		values[i] = Int64GetDatum(e->in_os_cache);
		nulls[i++] = e->size_blocks < 0;
		MemoryContextSwitchTo(old_cxt);
		if (i != RELATIONS_COLS)
			elog(ERROR, "warmcache_relations() filled %d columns, not %d",
				 i, RELATIONS_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	MemoryContextDelete(row_cxt);
	hash_destroy(census);
	return (Datum) 0;
}

/*
 * warmcache_estimate() (1.5): one row, the saved set's size per tier and
 * its blocks once each, the share of shared_buffers its restore would
 * fill, and the predicted times of its restore and of its pages' coming
 * back by themselves, each with its basis (estimate.c).  Negative figures
 * are not known: NULL.
 */
Datum
warmcache_estimate(PG_FUNCTION_ARGS)
{
#define ESTIMATE_COLS 10
	static const int estimate_columns[] = {ESTIMATE_COLS};
	TupleDesc	tupdesc;
	Datum		values[ESTIMATE_COLS];
	bool		nulls[ESTIMATE_COLS] = {0};
	WarmEstimate est;
	int			i = 0;

	wc_require_shared();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	check_result_columns(fcinfo, "warmcache_estimate", tupdesc,
						 estimate_columns, lengthof(estimate_columns));
	wc_estimate(&est);
	values[i] = Int64GetDatum(est.buffer_tier_blocks * (int64) BLCKSZ);
	nulls[i++] = !est.have_file;
	values[i] = Int64GetDatum(est.os_tier_blocks * (int64) BLCKSZ);
	nulls[i++] = !est.have_file;
	values[i] = Int64GetDatum(est.distinct_blocks * (int64) BLCKSZ);
	nulls[i++] = !est.have_file;
	values[i] = Float8GetDatum(est.shared_buffers_share);
	nulls[i++] = est.shared_buffers_share < 0;
	values[i] = Float8GetDatum(est.restore_seconds);
	nulls[i++] = est.restore_seconds < 0;
	values[i++] = CStringGetTextDatum(est.restore_basis);
	values[i] = Float8GetDatum(est.natural_seconds);
	nulls[i++] = est.natural_seconds < 0;
	values[i++] = CStringGetTextDatum(est.natural_basis);
	values[i] = Float8GetDatum(est.read_mb_per_s);
	nulls[i++] = est.read_mb_per_s < 0;
	values[i] = Float8GetDatum(est.random_read_ms);
	nulls[i++] = est.random_read_ms < 0;
	if (i != ESTIMATE_COLS)
		elog(ERROR, "warmcache_estimate() filled %d columns, not %d",
			 i, ESTIMATE_COLS);
	tupdesc = BlessTupleDesc(tupdesc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*---- Readiness ----*/

static double
get_min_fraction(FunctionCallInfo fcinfo)
{
	double		min_fraction = PG_GETARG_FLOAT8(0);

	if (isnan(min_fraction) || min_fraction < 0.0 || min_fraction > 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"min_fraction\" must be between 0 and 1")));
	return min_fraction;
}

/*
 * warmcache_is_warm(min_fraction float8 DEFAULT 0.9) returns bool: whether
 * this server holds at least min_fraction of what it is restoring,
 * following or loading at promotion; true on a server with nothing to do.
 */
Datum
warmcache_is_warm(PG_FUNCTION_ARGS)
{
	double		min_fraction = get_min_fraction(fcinfo);
	double		fraction;

	wc_require_shared();
	fraction = wc_readiness().fraction;
	wc_note_waiting(fraction, min_fraction);
	PG_RETURN_BOOL(fraction >= min_fraction);
}

/*
 * warmcache_wait_warm(min_fraction float8 DEFAULT 0.9, wait_seconds int4
 * DEFAULT 60) returns float8: waits until this server holds at least
 * min_fraction of its job, until the job ended short of it (a restore that
 * finished incomplete or was aborted: nothing more will come), or at most
 * wait_seconds; returns the fraction it holds then.  0 seconds: look once.
 */
Datum
warmcache_wait_warm(PG_FUNCTION_ARGS)
{
	double		min_fraction = get_min_fraction(fcinfo);
	int32		wait_seconds = PG_GETARG_INT32(1);
	double		fraction;

	if (wait_seconds < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"wait_seconds\" must not be negative")));
	wc_require_shared();

	fraction = wc_wait_warm(min_fraction, wait_seconds);
	wc_note_waiting(fraction, min_fraction);
	PG_RETURN_FLOAT8(fraction);
}
