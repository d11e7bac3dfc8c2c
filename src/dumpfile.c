/*-------------------------------------------------------------------------
 *
 * dumpfile.c
 *		The dump file pg_warmcache.blocks and the files of its format:
 *		writing one, checking one, and reading one run by run.
 *
 * A file is written to a temporary file, its header last, and renamed
 * over the old one by its writer (dump.c, the channel); a reader checks
 * every run, and the header's claims against this server, before any of
 * it causes I/O.  The format is format.h's, described in docs/design.md;
 * the fuzz harnesses (test/fuzz) run this file without a server.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/dumpfile.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/timestamp.h"

#include "dumpfile.h"
#include "runcodec.h"

/* Runs of a file of version 1 or 2 read at once. */
#define WC_READ_BUF		256

static void
header_crc(WarmFileHeader *hdr, pg_crc32c *crc)
{
	COMP_CRC32C(*crc, hdr, offsetof(WarmFileHeader, crc));
	FIN_CRC32C(*crc);
	hdr->crc = *crc;
}

/* Open path for writing, or fail. */
FILE *
wc_open_for_writing(const char *path)
{
	FILE	   *fp = AllocateFile(path, PG_BINARY_W);

	if (fp == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	return fp;
}

/* Sort the chunk of entries and write it to the scratch file. */
/*
 * Begin a dump file at path: a placeholder for the header, then the runs
 * wc_writer_add() is given, in file order; wc_writer_finish() completes it.
 */
void
wc_writer_begin(RunWriter *w, const char *path)
{
	WarmFileHeader hdr;

	memset(w, 0, sizeof(*w));
	w->path = path;
	w->compact = true;
	w->fp = wc_open_for_writing(path);
	memset(&hdr, 0, sizeof(hdr));	/* written again at the end */
	if (fwrite(&hdr, sizeof(hdr), 1, w->fp) != 1)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	INIT_CRC32C(w->crc);
}

/*
 * Fill in the header of a file begun by wc_writer_begin(), write it over
 * the placeholder and close the file; the header goes to *hdr too.  If
 * w->problem is then set, the reader would refuse the file: the caller
 * must not use it.
 */
void
wc_writer_finish(RunWriter *w, TimestampTz dumped_at, WarmFileHeader *hdr)
{
	FILE	   *fp = w->fp;

	wc_writer_header(w, dumped_at, hdr);
	w->fp = NULL;
	if (fseeko(fp, 0, SEEK_SET) != 0 ||
		fwrite(hdr, sizeof(*hdr), 1, fp) != 1 ||
		FreeFile(fp) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", w->path)));
}

/*
 * The header of the file of the runs given to w, which is flushed: what
 * wc_writer_finish() writes, or, for a writer begun by
 * wc_writer_begin_counting(), the header of the file it would make.  If
 * w->problem is then set, the reader would refuse that file.
 */
void
wc_writer_header(RunWriter *w, TimestampTz dumped_at, WarmFileHeader *hdr)
{
	pg_crc32c	crc;

	wc_writer_flush(w);
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = WC_DUMP_MAGIC;
	hdr->version = WC_DUMP_VERSION;
	hdr->pg_major = PG_VERSION_NUM / 10000;
	hdr->blcksz = BLCKSZ;
	hdr->sysid = GetSystemIdentifier();
	hdr->dumped_at = dumped_at;
	hdr->nblocks = w->nblocks;
	hdr->nruns = w->nruns;
	hdr->flags = 0;
	crc = w->crc;				/* the runs' CRC, if asked for again */
	header_crc(hdr, &crc);
	if (w->problem == NULL)
		w->problem = wc_check_claims(hdr);
}

/* Close a file begun by wc_writer_begin() without finishing it. */
void
wc_writer_abandon(RunWriter *w)
{
	if (w->fp != NULL)
		FreeFile(w->fp);
	w->fp = NULL;
}

/*
 * The most blocks a usable dump file may name: what this server's memory,
 * or that of a primary with up to twice its memory (a standby follows the
 * primary's file), could hold in both tiers.  Shared buffers and the OS
 * page cache each hold at most the machine's memory, and shared buffers
 * may be configured past it.  A file or publication that names more is
 * hostile or damaged, and is refused before it causes any I/O.
 */
uint64
wc_saved_blocks_limit(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		pagesize = sysconf(_SC_PAGESIZE);
	uint64		memory_blocks = 0;

	if (pages > 0 && pagesize > 0)
		memory_blocks = (uint64) pages * (uint64) pagesize / BLCKSZ;
	return 4 * Max(memory_blocks, (uint64) NBuffers);
}

/*
 * What the header claims, before any run is read: a file that names more
 * blocks than this server could ever hold (both tiers, see
 * wc_saved_blocks_limit()), or more runs than blocks, is refused on its
 * header alone, whatever its size.  Returns the problem, or NULL.
 */
char *
wc_check_claims(const WarmFileHeader *hdr)
{
	uint64		limit = wc_saved_blocks_limit();

	if (hdr->nblocks > limit)
		return psprintf("the header announces %llu blocks, more than this server could ever hold (at most %llu blocks of %u bytes)",
						(unsigned long long) hdr->nblocks,
						(unsigned long long) limit, BLCKSZ);
	if (hdr->nruns > hdr->nblocks)
		return psprintf("the header announces %llu runs for %llu blocks, but every run holds at least one block",
						(unsigned long long) hdr->nruns,
						(unsigned long long) hdr->nblocks);
	return NULL;
}

/*
 * The runs of a file of version 1 or 2: nruns records of 28 bytes, and
 * nothing after them.  Adds their bytes to *crc and their blocks to
 * *blocks; returns the problem, or NULL.
 */
static char *
check_fixed_runs(FILE *fp, off_t size, const WarmFileHeader *hdr,
				 pg_crc32c *crc, uint64 *blocks)
{
	uint64		body = (uint64) size - sizeof(WarmFileHeader);
	WarmRun		prev;
	WarmRun		run;
	uint64		i;
	char	   *bad;

	if (hdr->nruns > body / sizeof(WarmRun))
		return psprintf("file is truncated: %lld bytes, the header announces %llu runs",
						(long long) size, (unsigned long long) hdr->nruns);
	if (body != hdr->nruns * sizeof(WarmRun))
		return psprintf("file has %llu bytes of trailing data",
						(unsigned long long) (body - hdr->nruns * sizeof(WarmRun)));
	for (i = 0; i < hdr->nruns; i++)
	{
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (fread(&run, sizeof(run), 1, fp) != 1)
			return psprintf("could not read run %llu", (unsigned long long) i);
		COMP_CRC32C(*crc, &run, sizeof(run));
		if ((bad = wc_check_run(i, &run, i > 0 ? &prev : NULL, hdr->version)) != NULL)
			return bad;
		*blocks += run.count;
		prev = run;
	}
	return NULL;
}

/*
 * The runs of a file of version 3 (runcodec.c): as many as the header
 * announces, each well formed, and nothing after them.  Each run takes 2
 * to WC_MAX_ENCODED_RUN bytes, which bounds the file's size by its header
 * before anything is decoded.  Adds the bytes to *crc and the blocks to
 * *blocks; returns the problem, or NULL.
 */
static char *
check_compact_runs(FILE *fp, off_t size, const WarmFileHeader *hdr,
				   pg_crc32c *crc, uint64 *blocks)
{
	uint64		body = (uint64) size - sizeof(WarmFileHeader);
	ByteSource *src;
	RunCoder	coder;
	WarmRun		prev;
	WarmRun		run;
	uint64		i = 0;
	bool		group_start;
	const char *malformed;
	char	   *bad = NULL;

	if (body < 2 * hdr->nruns)
		return psprintf("file is truncated: %lld bytes, the header announces %llu runs",
						(long long) size, (unsigned long long) hdr->nruns);
	if (body > WC_MAX_ENCODED_RUN * hdr->nruns)
		return psprintf("file has %llu bytes, more than %llu runs can take",
						(unsigned long long) body,
						(unsigned long long) hdr->nruns);
	src = palloc(sizeof(ByteSource));
	memset(&coder, 0, sizeof(coder));
	wc_byte_source_init(src, fp, sizeof(WarmFileHeader), (uint64) size, crc);
	for (;;)
	{
		DecodeResult r;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (i == hdr->nruns)
		{
			uint64		at = wc_byte_source_offset(src);

			/* Nothing may follow the last run. */
			if (at < (uint64) size)
				bad = psprintf("file has %llu bytes of trailing data",
							   (unsigned long long) ((uint64) size - at));
			break;
		}
		r = wc_decode_run(src, &coder, &run, &group_start, &malformed);
		if (r == WC_DECODE_END || r == WC_DECODE_CUT)
			break;				/* fewer runs than announced: truncated */
		if (r == WC_DECODE_BAD)
			bad = psprintf("run %llu is malformed: %s",
						   (unsigned long long) i, malformed);
		else
			bad = wc_check_run(i, &run, i > 0 ? &prev : NULL, hdr->version);
		/* The encoder opens a group only for another key. */
		if (bad == NULL && group_start && i > 0 && wc_same_group(&prev, &run))
			bad = psprintf("run %llu opens a group for the relation fork and rank of the group before it",
						   (unsigned long long) i);
		if (bad != NULL)
			break;
		*blocks += run.count;
		prev = run;
		i++;
	}
	pfree(src);
	if (bad == NULL && i != hdr->nruns)
		bad = psprintf("file is truncated: %lld bytes, it holds %llu of the %llu runs its header announces",
					   (long long) size, (unsigned long long) i,
					   (unsigned long long) hdr->nruns);
	return bad;
}

/*
 * Check the dump file from end to end, before anything reads it: a file
 * that fails any check is unusable as a whole.  On WC_FILE_BAD, *problem
 * says what is wrong in words for a log line.  The checks are one list, in
 * the order of the file's bytes; that is its length.
 *
 * Cost: linear in the file, one sequential read of all runs; no run is
 * read before the header's claims are bounded.  Memory: constant, the
 * stdio buffer, whatever the file claims.
 *
 * Runs are disjoint within each rank, and so within the OS tier.  The same
 * block may stand in two ranks of the buffer tier: it moved to another
 * buffer, with another usage count, while the dump scanned them, and only
 * runs of one rank are merged.  That is not refused: it happens to honest
 * dumps of busy servers, and costs at most one repeat per rank, each a
 * cache hit, within the header's bound.
 */
static DumpFileStatus
check_file(const char *path, bool import, WarmFileHeader *hdr, char **problem)
{
	FILE	   *fp;
	struct stat st;
	pg_crc32c	crc;
	uint64		blocks = 0;
	WarmFileHeader copy;
	char	   *bad;

	*problem = NULL;
	fp = AllocateFile(path, PG_BINARY_R);
	if (fp == NULL)
	{
		if (errno == ENOENT)
			return WC_FILE_MISSING;

		/* Unreadable is unusable: said once, never an error loop. */
		*problem = psprintf("could not open it: %m");
		return WC_FILE_BAD;
	}

#define BAD(...) \
	do { *problem = psprintf(__VA_ARGS__); FreeFile(fp); return WC_FILE_BAD; } while (0)
#define BAD_IF(found) \
	do { if ((bad = (found)) != NULL) BAD("%s", bad); } while (0)

	if (fstat(fileno(fp), &st) != 0)
		BAD("could not stat it: %m");
	if (st.st_size < (off_t) sizeof(WarmFileHeader) ||
		fread(hdr, sizeof(WarmFileHeader), 1, fp) != 1)
		BAD("file is truncated: %lld bytes, shorter than its header",
			(long long) st.st_size);
	if (hdr->magic != WC_DUMP_MAGIC)
		BAD("not a pg_warmcache dump file (bad magic number %08X)", hdr->magic);
	if (hdr->version < 1 || hdr->version > WC_DUMP_VERSION)
		BAD("unsupported format version %u, expected 1 to %u",
			hdr->version, WC_DUMP_VERSION);
	if (import &&
		(hdr->pg_major < WC_IMPORT_MIN_MAJOR ||
		 hdr->pg_major > PG_VERSION_NUM / 10000))
		BAD("written by PostgreSQL major version %u, an import must come from %u to %u",
			hdr->pg_major, WC_IMPORT_MIN_MAJOR, PG_VERSION_NUM / 10000);
	if (!import && hdr->pg_major != PG_VERSION_NUM / 10000)
		BAD("written by PostgreSQL major version %u, this server is %u",
			hdr->pg_major, PG_VERSION_NUM / 10000);
	if (hdr->blcksz != BLCKSZ)
		BAD("written with block size %u, this server uses %u",
			hdr->blcksz, BLCKSZ);
	if (hdr->flags != 0)
		BAD("the header's flags are %08X, no version writes any", hdr->flags);
	if (!import && hdr->sysid != GetSystemIdentifier())
		BAD("written by another database system (system identifier %llu, this one is %llu)",
			(unsigned long long) hdr->sysid,
			(unsigned long long) GetSystemIdentifier());
	BAD_IF(wc_check_claims(hdr));
	INIT_CRC32C(crc);
	BAD_IF(hdr->version < 3 ?
		   check_fixed_runs(fp, st.st_size, hdr, &crc, &blocks) :
		   check_compact_runs(fp, st.st_size, hdr, &crc, &blocks));
	copy = *hdr;
	header_crc(&copy, &crc);
	if (copy.crc != hdr->crc)
		BAD("checksum mismatch (stored %08X, computed %08X)", hdr->crc, copy.crc);
	if (blocks != hdr->nblocks)
		BAD("the runs hold %llu blocks, the header announces %llu",
			(unsigned long long) blocks, (unsigned long long) hdr->nblocks);
#undef BAD_IF
#undef BAD

	FreeFile(fp);
	return WC_FILE_OK;
}

DumpFileStatus
wc_check_file(const char *path, WarmFileHeader *hdr, char **problem)
{
	return check_file(path, false, hdr, problem);
}

/*
 * Check a file copied from the cluster that pg_upgrade upgraded into this
 * one: every check of wc_check_file() but two.  Its system identifier is
 * the old cluster's, so it is not compared; its major may be older, from
 * the first whose pg_upgrade keeps relfilenodes and database OIDs.  What
 * it names is then matched against this cluster's relations by the
 * restore (restore_worker.c), which is what binds it to this cluster.
 */
DumpFileStatus
wc_check_import(const char *path, WarmFileHeader *hdr, char **problem)
{
	return check_file(path, true, hdr, problem);
}

/*
 * Keep an unusable dump file aside for a human to look at, and say so once.
 */
static bool
set_aside(const char *path, char *bad)
{
	snprintf(bad, MAXPGPATH, "%s.corrupt", path);

	/*
	 * durable_rename() first opens the file to fsync it, which fails on a
	 * file that cannot be opened, the very case of an unreadable one: then
	 * a plain rename, which needs only the directory.
	 */
	return durable_rename(path, bad, LOG) == 0 || rename(path, bad) == 0;
}

void
wc_set_aside_bad_file(const char *path, const char *problem, int elevel)
{
	char		bad[MAXPGPATH];
	bool		renamed;

	renamed = set_aside(path, bad);
	ereport(elevel,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("dump file \"%s\" is not usable: %s",
					path, problem),
			 renamed ?
			 errdetail("It has been renamed to \"%s\"; the next dump writes a new file.",
					   bad) :
			 errdetail("It could not be renamed to \"%s\": %m.", bad)));
}

/* The same for an import, which no dump replaces: nothing is imported. */
void
wc_set_aside_bad_import(const char *path, const char *problem)
{
	char		bad[MAXPGPATH];
	bool		renamed;

	renamed = set_aside(path, bad);
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("file to import \"%s\" is not usable: %s",
					path, problem),
			 renamed ?
			 errdetail("It has been renamed to \"%s\"; nothing is imported.",
					   bad) :
			 errdetail("It could not be renamed to \"%s\": %m.", bad)));
}

/* What a reader of a file of version 3 keeps. */
typedef struct CompactReader
{
	ByteSource	src;
	RunCoder	coder;
	uint64		group_offset;	/* of the last run's group header */
	bool		group_start;	/* the last run began its group */
} CompactReader;

/*
 * Open the dump file for reading run by run.  Returns false if there is
 * none.  Callers check the file first; the reader trusts its checks, but
 * what it cannot decode is still an error, never a wrong run.
 *
 * NB: a file from AllocateFile() is closed at the end of the transaction.
 * A reader that lives across transactions (the restore worker's) passes
 * across_xacts and gets a plain stdio file, which the process's exit closes
 * if an error ends it.
 */
bool
wc_reader_open(WarmFileReader *reader, const char *path, bool across_xacts)
{
	memset(reader, 0, sizeof(*reader));
	reader->path = path;
	reader->across_xacts = across_xacts;
	if (across_xacts)
		reader->fp = fopen(path, PG_BINARY_R);
	else
		reader->fp = AllocateFile(path, PG_BINARY_R);
	if (reader->fp == NULL)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fread(&reader->hdr, sizeof(reader->hdr), 1, reader->fp) != 1 ||
		reader->hdr.magic != WC_DUMP_MAGIC || reader->hdr.version < 1 ||
		reader->hdr.version > WC_DUMP_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("dump file \"%s\" is not usable", path)));
	reader->runs_left = reader->hdr.nruns;
	if (reader->hdr.version < 3)
		reader->buf = palloc(sizeof(WarmRun) * WC_READ_BUF);
	else
	{
		reader->compact = palloc0(sizeof(CompactReader));
		wc_byte_source_init(&reader->compact->src, reader->fp,
							sizeof(WarmFileHeader), PG_UINT64_MAX, NULL);
	}
	return true;
}

/*
 * Where the run last returned begins, for wc_reader_seek(): in a file of
 * version 3, only the first run of a group has a position of its own, and
 * a rank's first run is always one.
 */
uint64
wc_reader_position(const WarmFileReader *reader)
{
	if (reader->compact == NULL)
	{
		Assert(reader->next_index > 0);
		return sizeof(WarmFileHeader) +
			(reader->next_index - 1) * sizeof(WarmRun);
	}
	Assert(reader->compact->group_start);
	return reader->compact->group_offset;
}

/*
 * Make the reader return the n runs from position (wc_reader_position())
 * on, or fewer if the file ends first.
 */
void
wc_reader_seek(WarmFileReader *reader, uint64 position, uint64 n)
{
	uint64		idx = 0;

	if (reader->compact == NULL)
		idx = (position - sizeof(WarmFileHeader)) / sizeof(WarmRun);
	if (position < sizeof(WarmFileHeader) || idx > reader->hdr.nruns)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("position %llu is not within file \"%s\"",
						(unsigned long long) position, reader->path)));
	if (fseeko(reader->fp, (off_t) position, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek in file \"%s\": %m", reader->path)));
	if (reader->compact == NULL)
	{
		reader->runs_left = Min(n, reader->hdr.nruns - idx);
		reader->next_index = idx;
		reader->nbuf = reader->pos = 0;
		return;
	}
	reader->runs_left = n;
	memset(&reader->compact->coder, 0, sizeof(RunCoder));
	wc_byte_source_init(&reader->compact->src, reader->fp, position,
						PG_UINT64_MAX, NULL);
}

static bool
reader_next_compact(WarmFileReader *reader, WarmRun *run)
{
	CompactReader *c = reader->compact;
	uint64		at = wc_byte_source_offset(&c->src);
	const char *problem = NULL;

	switch (wc_decode_run(&c->src, &c->coder, run, &c->group_start, &problem))
	{
		case WC_DECODE_RUN:
			if (c->group_start)
				c->group_offset = at;
			return true;
		case WC_DECODE_END:
			return false;
		case WC_DECODE_CUT:
		case WC_DECODE_BAD:
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("dump file \"%s\" is corrupt: %s", reader->path, problem)));
	return false;				/* keep the compiler quiet */
}

bool
wc_reader_next(WarmFileReader *reader, WarmRun *run)
{
	if (reader->runs_left == 0)
		return false;
	if (reader->compact != NULL)
	{
		if (!reader_next_compact(reader, run))
			return false;
		reader->runs_left--;
		return true;
	}
	if (reader->pos >= reader->nbuf)
	{
		size_t		want = Min(reader->runs_left, (uint64) WC_READ_BUF);

		if (fread(reader->buf, sizeof(WarmRun), want, reader->fp) != want)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("dump file \"%s\" is truncated", reader->path)));
		reader->nbuf = (int) want;
		reader->pos = 0;
	}
	*run = reader->buf[reader->pos++];
	reader->runs_left--;
	reader->next_index++;
	return true;
}

void
wc_reader_close(WarmFileReader *reader)
{
	if (reader->fp && reader->across_xacts)
		fclose(reader->fp);
	else if (reader->fp)
		FreeFile(reader->fp);
	reader->fp = NULL;
	if (reader->buf)
		pfree(reader->buf);
	reader->buf = NULL;
	if (reader->compact)
		pfree(reader->compact);
	reader->compact = NULL;
}

/*
 * Add to the merge the nruns runs of one rank that begin at position
 * (wc_reader_position()).  False if the file cannot be opened, or, given
 * the expected header, is another file than the one the position is of (a
 * dump replaced it).  Call wc_merge_close() even then, for the ranks added
 * before.
 */
bool
wc_merge_add(WarmRunMerge *merge, const char *path, bool across_xacts,
			 uint64 position, uint64 nruns, const WarmFileHeader *expected)
{
	int			k = merge->n;

	Assert(k < WC_RANK_SLOTS);
	if (!wc_reader_open(&merge->r[k], path, across_xacts))
		return false;
	merge->n++;
	if (expected != NULL &&
		(merge->r[k].hdr.dumped_at != expected->dumped_at ||
		 merge->r[k].hdr.nruns != expected->nruns ||
		 merge->r[k].hdr.crc != expected->crc))
		return false;
	wc_reader_seek(&merge->r[k], position, nruns);
	merge->have[k] = wc_reader_next(&merge->r[k], &merge->cur[k]);
	return true;
}

/* The next run in physical order, of whichever rank; false at the end. */
bool
wc_merge_next(WarmRunMerge *merge, WarmRun *run)
{
	int			best = -1;
	int			k;

	for (k = 0; k < merge->n; k++)
		if (merge->have[k] &&
			(best < 0 ||
			 wc_run_phys_cmp(&merge->cur[k], &merge->cur[best]) < 0))
			best = k;
	if (best < 0)
		return false;
	*run = merge->cur[best];
	merge->have[best] = wc_reader_next(&merge->r[best], &merge->cur[best]);
	return true;
}

void
wc_merge_close(WarmRunMerge *merge)
{
	int			k;

	for (k = 0; k < merge->n; k++)
		wc_reader_close(&merge->r[k]);
	merge->n = 0;
}
