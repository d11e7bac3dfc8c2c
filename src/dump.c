/*-------------------------------------------------------------------------
 *
 * dump.c
 *		Taking a dump: the blocks in shared buffers and the OS page cache,
 *		written to the dump file pg_warmcache.blocks.
 *
 * A dump walks the buffer headers, each under its own header spinlock and
 * never a buffer mapping lock, and, with pg_warmcache.dump_os_cache, the
 * relation files for what the OS page cache holds (oswalk.c: the OS
 * tier).  It writes the blocks it finds as sorted runs of consecutive
 * blocks: hottest rank first (the usage count), the OS tier last, then
 * database, tablespace, relation, fork and block, which is the order the
 * restore reads them in.  Memory is bounded whatever shared_buffers or the
 * database is: entries are gathered in chunks of at most
 * pg_warmcache.sort_chunk (1M by default, 28 MB), each chunk is sorted and
 * written as runs to a scratch file, and the chunks are then merged.  The
 * result goes to a temporary file that is fsynced and renamed over the old
 * one (dumpfile.c writes it), so a crash leaves either the old or the new
 * file.  The scratch and temporary files are removed on every way out: an
 * ERROR, and a FATAL or postmaster death through an exit callback
 * registered while they exist.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/dump.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "dump.h"
#include "dumpfile.h"
#include "operation.h"
#include "oswalk.h"
#include "runcodec.h"
#include "settings.h"

/* Runs read from a scratch chunk at once, in the merge. */
#define WC_MERGE_BUF		256

/*
 * The last dump's figures, for warmcache_status() and for the channel,
 * which publishes each new dump to standbys.  Written under the status lock
 * held exclusively (operation.h), by the process that dumped.
 */
static DumpStatus *dump_status = NULL;


/* One sorted chunk being merged. */
typedef struct MergeInput
{
	off_t		pos;			/* next unread byte in the scratch file */
	uint64		left;			/* runs not yet read from the file */
	WarmRun		buf[WC_MERGE_BUF];
	int			n;
	int			i;
} MergeInput;

typedef struct MergeState
{
	int			fd;
	MergeInput *inputs;
} MergeState;

static int
run_qsort_cmp(const void *a, const void *b)
{
	return wc_run_cmp((const WarmRun *) a, (const WarmRun *) b);
}

/*
 * Sort a chunk of single-block runs and hand them to the writer, which
 * merges neighbours.
 */
static void
write_chunk(WarmRun *entries, int n, RunWriter *w)
{
	int			i;

	qsort(entries, n, sizeof(WarmRun), run_qsort_cmp);
	for (i = 0; i < n; i++)
	{
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		wc_writer_add(w, &entries[i]);
	}
	wc_writer_flush(w);
}

static bool
merge_fill(MergeState *ms, MergeInput *in)
{
	ssize_t		want;
	ssize_t		got;

	if (in->i < in->n)
		return true;
	if (in->left == 0)
		return false;
	want = Min(in->left, (uint64) WC_MERGE_BUF);
	got = pg_pread(ms->fd, in->buf, want * sizeof(WarmRun), in->pos);
	if (got != (ssize_t) (want * sizeof(WarmRun)))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", WC_DUMP_SORT_FILE)));
	in->pos += got;
	in->left -= want;
	in->n = want;
	in->i = 0;
	return true;
}

/* binaryheap keeps the largest first; we want the smallest run. */
static int
merge_cmp(Datum a, Datum b, void *arg)
{
	MergeState *ms = arg;
	MergeInput *x = &ms->inputs[DatumGetInt32(a)];
	MergeInput *y = &ms->inputs[DatumGetInt32(b)];

	return -wc_run_cmp(&x->buf[x->i], &y->buf[y->i]);
}

/*
 * Merge the sorted chunks of the scratch file into the writer.  The
 * scratch file's descriptor goes in *fd, for the caller to close on error.
 */
static void
merge_chunks(List *chunks, RunWriter *out, int *fd)
{
	MergeState	ms;
	binaryheap *heap;
	int			k = list_length(chunks);
	int			i;
	uint64		merged = 0;
	off_t		pos = 0;
	ListCell   *lc;

	*fd = ms.fd = OpenTransientFile(WC_DUMP_SORT_FILE, O_RDONLY | PG_BINARY);
	if (ms.fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_DUMP_SORT_FILE)));
	ms.inputs = palloc0(sizeof(MergeInput) * k);
	heap = binaryheap_allocate(k, merge_cmp, &ms);
	i = 0;
	foreach(lc, chunks)
	{
		uint64		nruns = (uint64) lfirst_int(lc);

		ms.inputs[i].pos = pos;
		ms.inputs[i].left = nruns;
		pos += nruns * sizeof(WarmRun);
		if (merge_fill(&ms, &ms.inputs[i]))
			binaryheap_add_unordered(heap, Int32GetDatum(i));
		i++;
	}
	binaryheap_build(heap);

	while (!binaryheap_empty(heap))
	{
		int			top = DatumGetInt32(binaryheap_first(heap));
		MergeInput *in = &ms.inputs[top];

		wc_writer_add(out, &in->buf[in->i]);
		in->i++;
		if (merge_fill(&ms, in))
			binaryheap_replace_first(heap, Int32GetDatum(top));
		else
			(void) binaryheap_remove_first(heap);
		/* Counted in blocks: neighbours merge into one run. */
		if ((++merged & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	wc_writer_flush(out);
	binaryheap_free(heap);
	pfree(ms.inputs);
	*fd = -1;
	CloseTransientFile(ms.fd);
}

/* A dump in progress: what must be closed and removed if it fails. */
typedef struct DumpJob
{
	bool		include_unlogged;
	WarmRun    *entries;		/* a chunk of single-block runs */
	int			cap;
	int			n;
	List	   *chunks;			/* runs per chunk in the scratch file */
	RunWriter	sortw;			/* the scratch file */
	RunWriter	out;			/* the new dump file */
	int			merge_fd;
	uint64		left_out;		/* unlogged blocks not written */
} DumpJob;

static void
spill_chunk(DumpJob *job)
{
	if (job->sortw.fp == NULL)
	{
		job->sortw.path = WC_DUMP_SORT_FILE;
		job->sortw.fp = wc_open_for_writing(WC_DUMP_SORT_FILE);
	}
	job->sortw.nruns = 0;
	write_chunk(job->entries, job->n, &job->sortw);
	job->chunks = lappend_int(job->chunks, (int) job->sortw.nruns);
	job->n = 0;
}

/*
 * Walk the buffer headers, each under its own header spinlock and never a
 * mapping lock; chunks that fill up while more buffers follow are spilled.
 */
static void
scan_buffers(DumpJob *job)
{
	int			i;

	for (i = 0; i < NBuffers; i++)
	{
		WcBufferPage page;
		WarmRun    *e;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!wc_buffer_page(i, &page))
			continue;
		if (!page.permanent && !job->include_unlogged)
		{
			job->left_out++;
			continue;
		}
		e = &job->entries[job->n++];
		e->db = page.db;
		e->spc = page.spc;
		e->relnumber = page.relnumber;
		e->fork = (uint32) page.fork;
		e->start = page.block;
		e->rank = (uint32) page.usage;
		e->count = 1;
		if (job->n == job->cap)
			spill_chunk(job);
	}
}

/* Take a run of the OS tier: see oswalk.c. */
static void
add_os_run(void *arg, const WarmRun *run)
{
	DumpJob    *job = arg;

	job->entries[job->n++] = *run;
	if (job->n == job->cap)
		spill_chunk(job);
}

/* Write the runs, sorted and merged, to the temporary file. */
static void
write_runs(DumpJob *job)
{
	wc_writer_begin(&job->out, WC_DUMP_TMP_FILE);

	if (job->sortw.fp == NULL)
	{
		write_chunk(job->entries, job->n, &job->out);
		return;
	}
	if (job->n > 0)
		spill_chunk(job);
	if (FreeFile(job->sortw.fp) != 0)
	{
		job->sortw.fp = NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", WC_DUMP_SORT_FILE)));
	}
	job->sortw.fp = NULL;
	merge_chunks(job->chunks, &job->out, &job->merge_fd);
	(void) unlink(WC_DUMP_SORT_FILE);
}

/*
 * On error, or when the old file is kept: close what is open and remove
 * the scratch and temporary files.
 */
static void
discard_job(DumpJob *job)
{
	if (job->merge_fd >= 0)
		CloseTransientFile(job->merge_fd);
	if (job->sortw.fp != NULL)
		FreeFile(job->sortw.fp);
	if (job->out.fp != NULL)
		FreeFile(job->out.fp);
	job->merge_fd = -1;
	job->sortw.fp = job->out.fp = NULL;
	(void) unlink(WC_DUMP_SORT_FILE);
	(void) unlink(WC_DUMP_TMP_FILE);
}

/*
 * The same on an ERROR and at exit (a FATAL, such as a terminated
 * warmcache_dump_now(), or the postmaster's death), which skips any
 * PG_CATCH: PG_ENSURE_ERROR_CLEANUP calls it in both cases.  At exit the
 * dump's stack frame is still there: proc_exit() does not unwind.
 */
static void
discard_job_callback(int code, Datum arg)
{
	discard_job((DumpJob *) DatumGetPointer(arg));
}

/*
 * The dump is given up, and the saved file kept, if the reader would refuse
 * the new one: a writer never leaves a file that every reader, and every
 * restart, then sets aside.
 */
static void
refuse_if_unusable(const RunWriter *w)
{
	if (w->problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("the new dump file would not be usable: %s", w->problem),
				 errdetail("The saved block list \"%s\" is unchanged.",
						   WC_DUMP_FILE)));
}

/* The shared memory of the last dump's figures (shmem.c). */
Size
wc_dump_shmem_size(void)
{
	return MAXALIGN(sizeof(DumpStatus));
}

/* Attach to them, making them at the first start (shmem.c). */
void
wc_dump_shmem_init(void)
{
	bool		found;

	dump_status = ShmemInitStruct("pg_warmcache dump", sizeof(DumpStatus),
								  &found);
	if (!found)
		memset(dump_status, 0, sizeof(DumpStatus));
}

/* The last dump's figures; the status lock is held. */
void
wc_dump_status(DumpStatus *status)
{
	*status = *dump_status;
}

/*
 * The saved file that a restore found, written before this start: the
 * status shows it as the last dump, with no duration, until a dump of this
 * start replaces it.  The status lock is held exclusively.
 */
void
wc_note_saved_dump(const WarmFileHeader *hdr)
{
	if (dump_status->last_dump_at != 0)
		return;
	dump_status->last_dump_at = hdr->dumped_at;
	dump_status->last_dump_blocks = (int64) hdr->nblocks;
	dump_status->last_dump_seconds = -1;	/* not known: shown as null */
}

/*
 * Dump the identities of the blocks in shared buffers to the dump file.
 * The shutdown dump includes unlogged relations' blocks (after a crash
 * they are reset anyway), and its walk of the OS page cache is bounded
 * (oswalk.c).  If the buffer cache holds fewer than min_blocks blocks,
 * counted like with like (unlogged ones too), the old file is kept and
 * WC_DUMP_KEPT is returned; if a periodic dump's walk stopped for a
 * shutdown request, WC_DUMP_STOPPED; otherwise the number of blocks
 * written.  The caller has begun the dumping state.  No scratch or
 * temporary file outlives an error or the process.
 */
int64
wc_dump(bool shutdown, int64 min_blocks)
{
	TimestampTz start = GetCurrentTimestamp();
	DumpJob		job;
	int64		result = 0;
	long		secs;
	int			usecs;

	memset(&job, 0, sizeof(job));
	job.include_unlogged = shutdown;
	job.cap = Min(NBuffers, wc_sort_chunk);
	job.merge_fd = -1;
	job.entries = palloc(sizeof(WarmRun) * job.cap);

	PG_ENSURE_ERROR_CLEANUP(discard_job_callback, PointerGetDatum(&job));
	{
		scan_buffers(&job);
		if (wc_dump_os_cache && !wc_scan_os_cache(shutdown, add_os_run, &job) &&
			!shutdown)
			result = WC_DUMP_STOPPED;
		else
		{
			write_runs(&job);
			refuse_if_unusable(&job.out);
			if ((int64) (job.out.nblocks + job.left_out) < min_blocks)
				result = WC_DUMP_KEPT;
		}
		if (result < 0)
			discard_job(&job);
		else
		{
			WarmFileHeader hdr;

			wc_writer_finish(&job.out, start, &hdr);
			refuse_if_unusable(&job.out);
			/* fsync it, rename it over the old one, fsync the directory */
			(void) durable_rename(WC_DUMP_TMP_FILE, WC_DUMP_FILE, ERROR);
		}
	}
	PG_END_ENSURE_ERROR_CLEANUP(discard_job_callback, PointerGetDatum(&job));
	pfree(job.entries);
	if (result < 0)
		return result;

	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	wc_status_lock(LW_EXCLUSIVE);
	dump_status->last_dump_at = start;
	dump_status->last_dump_blocks = (int64) job.out.nblocks;
	dump_status->last_dump_seconds = secs + usecs / 1000000.0;
	dump_status->dumps++;		/* for standbys: the channel publishes it */
	wc_status_unlock();
	wc_wake_worker();

	ereport(DEBUG1,
			(errmsg_internal("dumped %llu blocks in %llu runs in %.3f s",
							 (unsigned long long) job.out.nblocks,
							 (unsigned long long) job.out.nruns,
							 secs + usecs / 1000000.0)));
	return (int64) job.out.nblocks;
}
