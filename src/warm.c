/*-------------------------------------------------------------------------
 *
 * warm.c
 *		warm() and warm_table(), and the warming engine the restore uses.
 *
 * The engine takes a relation fork and a list of block ranges and brings
 * them into the OS page cache (modes prefetch and read) or shared buffers
 * (mode buffer).  What makes it fast on a cold cache is that it keeps the
 * disk busy ahead of the copy: it advises the kernel (posix_fadvise
 * WILLNEED) about a window of blocks ahead of the one being consumed, in
 * large contiguous pieces, so that the reads the consumer then does are
 * page cache hits.  Mode read reads whole I/O chunks at once; mode buffer
 * loads blocks one by one (15, 16) or through a read stream (17+).  The
 * window is sized from maintenance_io_concurrency.
 *
 * A pacer (see pg_warmcache.h) lets the restore change the window and sleep
 * between chunks; warm() runs at full speed.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/warm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_inherits.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "pg_warmcache.h"

PG_FUNCTION_INFO_V1(warm);
PG_FUNCTION_INFO_V1(warm_table);

/* Blocks in one I/O: what mode read reads at once and advice is cut to. */
#define WC_IO_BLOCKS	32

/* One open segment file of the fork being warmed. */
typedef struct SegFile
{
	const char *path;			/* of segment 0 */
	BlockNumber segno;
	File		file;
} SegFile;

/* Position in a range list. */
typedef struct RangeCursor
{
	const WarmRange *ranges;
	int			nranges;
	int			ri;				/* current range */
	BlockNumber off;			/* blocks of it already passed */
} RangeCursor;


/*
 * Mode names, as warm() and pg_warmcache.restore_mode spell them.
 */
WarmMode
wc_parse_mode(const char *name)
{
	if (strcmp(name, "prefetch") == 0)
		return WARM_PREFETCH;
	if (strcmp(name, "read") == 0)
		return WARM_READ;
	if (strcmp(name, "buffer") == 0)
		return WARM_BUFFER;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid warm mode \"%s\"", name),
			 errhint("Valid modes are \"prefetch\", \"read\" and \"buffer\".")));
	pg_unreachable();
}

const char *
wc_mode_name(WarmMode mode)
{
	switch (mode)
	{
		case WARM_PREFETCH:
			return "prefetch";
		case WARM_READ:
			return "read";
		case WARM_BUFFER:
			return "buffer";
	}
	return "?";
}

/*
 * Look-ahead used when nobody paces us: maintenance_io_concurrency I/Os of
 * WC_IO_BLOCKS each.  Zero turns advice off, as it does for PostgreSQL.
 */
int
wc_default_window(void)
{
	return maintenance_io_concurrency * WC_IO_BLOCKS;
}

static bool
cursor_done(RangeCursor *c)
{
	return c->ri >= c->nranges;
}

/*
 * Length of the next piece at the cursor: at most max blocks, within one
 * range and one segment file.
 */
static BlockNumber
cursor_piece(RangeCursor *c, BlockNumber max)
{
	const WarmRange *r = &c->ranges[c->ri];
	BlockNumber block = r->start + c->off;
	BlockNumber n = r->count - c->off;
	BlockNumber to_seg_end = RELSEG_SIZE - block % RELSEG_SIZE;

	n = Min(n, to_seg_end);
	return Min(n, max);
}

static void
cursor_advance(RangeCursor *c, BlockNumber n)
{
	c->off += n;
	while (c->ri < c->nranges && c->off >= c->ranges[c->ri].count)
	{
		c->ri++;
		c->off = 0;
	}
}

static BlockNumber
cursor_block(RangeCursor *c)
{
	return c->ranges[c->ri].start + c->off;
}

/*
 * The open file of the segment holding block, opening it when needed.
 * Returns -1 if the segment does not exist (the relation shrank).
 */
static File
seg_file(SegFile *sf, BlockNumber block)
{
	BlockNumber segno = block / RELSEG_SIZE;

	if (sf->file >= 0 && sf->segno == segno)
		return sf->file;
	if (sf->file >= 0)
		FileClose(sf->file);
	sf->file = -1;
	sf->segno = segno;
	if (segno == 0)
		sf->file = PathNameOpenFile(sf->path, O_RDONLY | PG_BINARY);
	else
	{
		char	   *p = psprintf("%s.%u", sf->path, segno);

		sf->file = PathNameOpenFile(p, O_RDONLY | PG_BINARY);
		pfree(p);
	}
	if (sf->file < 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\" (segment %u): %m",
						sf->path, segno)));
	return sf->file;
}

static void
seg_close(SegFile *sf)
{
	if (sf->file >= 0)
		FileClose(sf->file);
	sf->file = -1;
}

/*
 * Advise the kernel about blocks from the advice cursor on, until it is
 * target blocks past the start of the list.  Ranges separated by gaps of
 * at most WC_ADVICE_GAP blocks are advised as one: the device then sees one
 * large read instead of many small ones, which matters on volumes that
 * limit I/O operations per second.  The gaps only reach the OS cache.
 */
#define WC_ADVICE_GAP	16

static void
advise_flush(SegFile *sf, BlockNumber start, BlockNumber end)
{
	File		f;

	if (end <= start)
		return;
	f = seg_file(sf, start);
	if (f >= 0)
		(void) FilePrefetch(f, (off_t) (start % RELSEG_SIZE) * BLCKSZ,
							(off_t) (end - start) * BLCKSZ,
							WAIT_EVENT_DATA_FILE_PREFETCH);
}

static void
advise_until(RangeCursor *adv, uint64 *advised, uint64 target, SegFile *sf)
{
	BlockNumber pstart = 0;
	BlockNumber pend = 0;		/* pending advice [pstart, pend) */

	while (*advised < target && !cursor_done(adv))
	{
		BlockNumber n = cursor_piece(adv, (BlockNumber) Min(target - *advised,
															(uint64) RELSEG_SIZE));
		BlockNumber block = cursor_block(adv);

		if (pend > pstart &&
			block / RELSEG_SIZE == pstart / RELSEG_SIZE &&
			block >= pend && block - pend <= WC_ADVICE_GAP)
			pend = block + n;
		else
		{
			advise_flush(sf, pstart, pend);
			pstart = block;
			pend = block + n;
		}
		cursor_advance(adv, n);
		*advised += n;
	}
	advise_flush(sf, pstart, pend);
}

#ifdef WC_HAVE_READ_STREAM
/*
 * Read stream callback: the next block of the range list.
 */
static BlockNumber
stream_next_block(ReadStream *stream, void *private_data, void *per_buffer_data)
{
	RangeCursor *c = private_data;
	BlockNumber block;

	if (cursor_done(c))
		return InvalidBlockNumber;
	block = cursor_block(c);
	cursor_advance(c, 1);
	return block;
}
#endif

/*
 * Load n blocks from block on into shared buffers one at a time.  Returns
 * how many were loaded: fewer if the pacer forbids eviction and no free
 * buffer is left.
 *
 * NB: a paced loop (the restore) always loads this way, never through a
 * read stream: a stream allocates the buffers of a combined read at once,
 * after its callback looked at the free list, so it can evict up to
 * io_combine_limit buffers when the free list runs dry.  Our advice has
 * started the reads already; this loop mostly copies from the OS cache.
 */
static BlockNumber
load_plain(Relation rel, ForkNumber fork, BlockNumber block, BlockNumber n,
		   WarmPacer *pacer)
{
	BlockNumber i;

	for (i = 0; i < n; i++)
	{
		if (pacer && pacer->no_evict && !wc_have_free_buffer())
			break;
		ReleaseBuffer(ReadBufferExtended(rel, fork, block + i, RBM_NORMAL, NULL));
	}
	return i;
}

/*
 * Read n blocks from block on into private memory: the OS cache keeps them.
 * Returns false if the file is shorter than that (the relation shrank).
 */
static bool
read_os(SegFile *sf, BlockNumber block, BlockNumber n, char **iobuf)
{
	File		f = seg_file(sf, block);
	int			nread;

	if (f < 0)
		return false;
	if (*iobuf == NULL)
		*iobuf = palloc(WC_IO_BLOCKS * BLCKSZ);
	nread = FileRead(f, *iobuf, (size_t) n * BLCKSZ,
					 (off_t) (block % RELSEG_SIZE) * BLCKSZ,
					 WAIT_EVENT_DATA_FILE_READ);
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read blocks %u..%u of file \"%s\": %m",
						block, block + n - 1, sf->path)));
	return nread == (int) (n * BLCKSZ);
}

/* What wc_warm_ranges() was asked to do. */
typedef struct WarmJob
{
	Relation	rel;
	ForkNumber	fork;
	WarmMode	mode;
	const WarmRange *ranges;
	int			nranges;
	WarmPacer  *pacer;
	SegFile		sf[2];			/* 0 for reads, 1 for advice */
	uint64		done;
} WarmJob;

/*
 * The loop of wc_warm_ranges().  The segment files it opens are in job->sf
 * so that run_job() can close them on error.
 */
static uint64
warm_loop(WarmJob *job)
{
	Relation	rel = job->rel;
	ForkNumber	fork = job->fork;
	WarmMode	mode = job->mode;
	WarmPacer  *pacer = job->pacer;
	SegFile    *sf = job->sf;
	RangeCursor cur = {job->ranges, job->nranges, 0, 0};
	RangeCursor adv = {job->ranges, job->nranges, 0, 0};
	uint64		done = 0;
	uint64		advised = 0;
	uint64		in_buffers = 0; /* since the last pace() */
	uint64		os_only = 0;
	char	   *iobuf = NULL;
#ifdef WC_HAVE_READ_STREAM
	ReadStream *stream = NULL;
	RangeCursor scur;
#endif

	cursor_advance(&cur, 0);	/* skip empty ranges */
	cursor_advance(&adv, 0);

	while (!cursor_done(&cur))
	{
		BlockNumber n;
		BlockNumber block;
		int			window;

		CHECK_FOR_INTERRUPTS();
		if (pacer)
		{
			pacer->pace(pacer, in_buffers, os_only);
			in_buffers = os_only = 0;
			if (pacer->stop)
				break;
		}
		window = pacer ? pacer->window : wc_default_window();

		n = cursor_piece(&cur, (pacer && pacer->io_blocks > 0) ?
						 Min(pacer->io_blocks, WC_IO_BLOCKS) : WC_IO_BLOCKS);
		block = cursor_block(&cur);

		/* In prefetch mode the advice is the work. */
		if (mode == WARM_PREFETCH)
			advise_until(&adv, &advised, done + n, &sf[1]);
		else if (window > 0)
			advise_until(&adv, &advised, done + n + window, &sf[1]);

		if (mode == WARM_BUFFER)
		{
			BlockNumber i;

#ifdef WC_HAVE_READ_STREAM
			if (pacer == NULL)
			{
				if (stream == NULL)
				{
					scur = cur;
					stream = read_stream_begin_relation(WC_READ_STREAM_FLAGS,
														NULL, rel, fork,
														stream_next_block,
														&scur, 0);
				}
				for (i = 0; i < n; i++)
					ReleaseBuffer(read_stream_next_buffer(stream, NULL));
			}
			else
#endif
				i = load_plain(rel, fork, block, n, pacer);
			in_buffers += i;
			done += i;
			cursor_advance(&cur, i);
			if (i < n)
			{
				/* Out of free buffers: the rest goes to the OS cache. */
				pacer->buffers_full = true;
				mode = WARM_READ;
			}
			continue;
		}

		if (mode == WARM_READ && !read_os(&sf[0], block, n, &iobuf))
			break;				/* the relation shrank under us */
		os_only += n;
		done += n;
		cursor_advance(&cur, n);
	}
	if (pacer && (in_buffers > 0 || os_only > 0))
		pacer->pace(pacer, in_buffers, os_only);

#ifdef WC_HAVE_READ_STREAM
	if (stream)
	{
		Assert(read_stream_next_buffer(stream, NULL) == InvalidBuffer);
		read_stream_end(stream);
	}
#endif
	if (iobuf)
		pfree(iobuf);
	return done;
}

static uint64
run_job(WarmJob *job)
{
	PG_TRY();
	{
		job->done = warm_loop(job);
	}
	PG_FINALLY();
	{
		seg_close(&job->sf[0]);
		seg_close(&job->sf[1]);
	}
	PG_END_TRY();

	pfree((char *) job->sf[0].path);
	return job->done;
}

/*
 * Bring the given ranges of one fork into the cache in the given mode.
 * The caller holds a lock on rel and has checked that the ranges lie
 * within the fork.  Returns the number of blocks warmed.  With a pacer that
 * forbids eviction, blocks that do not fit in shared buffers any more are
 * read into the OS cache instead, and pacer->buffers_full is set.
 */
uint64
wc_warm_ranges(Relation rel, ForkNumber fork, WarmMode mode,
			   const WarmRange *ranges, int nranges, WarmPacer *pacer)
{
	WarmJob		job;

	job.rel = rel;
	job.fork = fork;
	job.mode = (pacer && pacer->buffers_full && mode == WARM_BUFFER) ?
		WARM_READ : mode;
	job.ranges = ranges;
	job.nranges = nranges;
	job.pacer = pacer;
	job.sf[0].path = job.sf[1].path = wc_relpath(rel, fork);
	job.sf[0].file = job.sf[1].file = -1;
	job.sf[0].segno = job.sf[1].segno = 0;
	job.done = 0;
	return run_job(&job);
}

/*
 * Open a relation for warming and check that the caller may read it: SELECT
 * on the table, or for an index on its table (as pg_prewarm does since
 * 18.1).  The table of an index is locked before the index.  *privOid gets
 * the relation whose lock the caller must release besides rel's.
 */
static Relation
open_for_warming(Oid relOid, Oid *privOid)
{
	Relation	rel;
	char		relkind = get_rel_relkind(relOid);
	AclResult	aclresult;

	*privOid = relOid;
	if (relkind == RELKIND_INDEX || relkind == RELKIND_PARTITIONED_INDEX)
	{
		*privOid = IndexGetRelation(relOid, true);
		if (OidIsValid(*privOid))
			LockRelationOid(*privOid, AccessShareLock);
	}

	rel = try_relation_open(relOid, AccessShareLock);
	if (rel == NULL)
	{
		if (*privOid != relOid && OidIsValid(*privOid))
			UnlockRelationOid(*privOid, AccessShareLock);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relOid),
				 errdetail("It may have been dropped concurrently.")));
	}

	/*
	 * The table's OID may have been dropped and reused before we locked it;
	 * then the index no longer points to it.
	 */
	if (!OidIsValid(*privOid) ||
		(*privOid != relOid && *privOid != IndexGetRelation(relOid, true)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not find the table of index \"%s\"",
						RelationGetRelationName(rel))));

	aclresult = pg_class_aclcheck(*privOid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(*privOid)),
					   get_rel_name(*privOid));

	if (RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot warm temporary tables of other sessions")));
	return rel;
}

static void
close_for_warming(Relation rel, Oid privOid)
{
	Oid			relOid = RelationGetRelid(rel);

	relation_close(rel, AccessShareLock);
	if (privOid != relOid)
		UnlockRelationOid(privOid, AccessShareLock);
}

static void
check_prefetch_supported(WarmMode mode)
{
#ifndef USE_PREFETCH
	if (mode == WARM_PREFETCH)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("prefetch is not supported by this build"),
				 errhint("Use mode \"read\" to warm the operating system cache.")));
#endif
}

/*
 * Warm a whole fork if it exists; returns blocks warmed.
 */
static uint64
warm_fork(Relation rel, ForkNumber fork, WarmMode mode)
{
	WarmRange	r;

	if (!smgrexists(RelationGetSmgr(rel), fork))
		return 0;
	r.start = 0;
	r.count = RelationGetNumberOfBlocksInFork(rel, fork);
	return wc_warm_ranges(rel, fork, mode, &r, 1, NULL);
}

#define ARG_NOT_NULL(n, what) \
	do { \
		if (PG_ARGISNULL(n)) \
			ereport(ERROR, \
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), \
					 errmsg("%s cannot be null", (what)))); \
	} while (0)

/*
 * warm(relation, mode, fork, first_block, last_block): pg_prewarm()'s
 * arguments and meaning, with a look-ahead that keeps the disk busy.
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
	check_prefetch_supported(mode);

	rel = open_for_warming(relOid, &privOid);

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
		done = wc_warm_ranges(rel, fork, mode, &r, 1, NULL);
	}

	close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
}

/*
 * Warm one table with storage: its forks, its indexes, its TOAST table and
 * the TOAST table's index.  The table is locked by the caller.
 */
static uint64
warm_one_table(Oid relid, WarmMode mode)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	uint64		done = 0;
	List	   *indexes;
	ListCell   *lc;
	Oid			toastid;

	if (rel == NULL)
		return 0;				/* partition dropped concurrently */

	done += warm_fork(rel, MAIN_FORKNUM, mode);
	done += warm_fork(rel, VISIBILITYMAP_FORKNUM, mode);
	indexes = RelationGetIndexList(rel);
	toastid = rel->rd_rel->reltoastrelid;
	foreach(lc, indexes)
	{
		Relation	ind = try_relation_open(lfirst_oid(lc), AccessShareLock);

		if (ind == NULL)
			continue;
		if (RELKIND_HAS_STORAGE(ind->rd_rel->relkind))
			done += warm_fork(ind, MAIN_FORKNUM, mode);
		relation_close(ind, AccessShareLock);
	}
	list_free(indexes);
	relation_close(rel, AccessShareLock);

	if (OidIsValid(toastid))
		done += warm_one_table(toastid, mode);
	return done;
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
	uint64		done = 0;

	ARG_NOT_NULL(0, "table");
	ARG_NOT_NULL(1, "mode");
	relOid = PG_GETARG_OID(0);
	mode = wc_parse_mode(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	check_prefetch_supported(mode);

	rel = open_for_warming(relOid, &privOid);
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(relkind),
				 errhint("Use warm() to warm a single relation.")));

	if (relkind == RELKIND_PARTITIONED_TABLE)
	{
		List	   *parts = find_all_inheritors(relOid, AccessShareLock, NULL);
		ListCell   *lc;

		foreach(lc, parts)
		{
			Oid			part = lfirst_oid(lc);

			CHECK_FOR_INTERRUPTS();
			if (RELKIND_HAS_STORAGE(get_rel_relkind(part)))
				done += warm_one_table(part, mode);
		}
		list_free(parts);
	}
	else
		done = warm_one_table(relOid, mode);

	close_for_warming(rel, privOid);
	PG_RETURN_INT64((int64) done);
}
