/*-------------------------------------------------------------------------
 *
 * runcodec.c
 *		The dump file's runs: their order, the checks each run passes, and
 *		their compact encoding (format version 3).
 *
 * Versions 1 and 2 of the file store each run as seven 32-bit fields, 28
 * bytes, whatever it holds.  A fragmented cache (every other block cached)
 * is one run per block, so 28 bytes a block: 1.7 GB of file, and of WAL
 * at each publication to standbys, per terabyte of shared buffers.
 * Version 3 stores what the sort order makes small:
 *
 * - Runs of one rank and relation fork follow one another in the file.
 *   They form a group, which begins with a group header: a 0 byte, then
 *   rank, database, tablespace, relation and fork.
 * - Each run of a group is two numbers: the gap from the end of the run
 *   before it (from block 0 for the first), plus one, so that it is never
 *   0; then its block count minus one.
 *
 * Numbers are unsigned LEB128: 7 bits a byte, the lowest first, the high
 * bit set on every byte but the last; at most 5 bytes for 32 bits, and
 * always the shortest form.  Single-block runs one block apart take 2
 * bytes a block; a long run takes 2 to 10 bytes in all.  A relation fork
 * costs its header once per rank it has blocks in: 6 to 26 bytes.
 *
 * Decoding checks the shape of the bytes (a number too long or cut off, a
 * run before any group header, a header without a run, a run past the
 * largest block number) and returns the problem in words; what the runs
 * mean (order, disjointness, ranks, forks) wc_check_run() checks, here,
 * as for every version: the reader of the file (dumpfile.c) and the
 * writer below both call it.  Memory: one buffer of WC_BYTE_BUF bytes per
 * reader.
 *
 * The writer of runs (RunWriter) is here too: it merges runs that touch,
 * encodes them, and hands the bytes to a file or to memory; dumpfile.c
 * adds the file's header.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/runcodec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "runcodec.h"

/*---- The order of runs, and what a run may be ----*/

/*
 * Physical order of runs: database, tablespace, relation, fork, start.
 */
int
wc_run_phys_cmp(const WarmRun *a, const WarmRun *b)
{
	if (a->db != b->db)
		return a->db < b->db ? -1 : 1;
	if (a->spc != b->spc)
		return a->spc < b->spc ? -1 : 1;
	if (a->relnumber != b->relnumber)
		return a->relnumber < b->relnumber ? -1 : 1;
	if (a->fork != b->fork)
		return a->fork < b->fork ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return 0;
}

/*
 * Order of runs in the file: hottest rank first, the OS tier last, then
 * physical order.
 */
int
wc_run_cmp(const WarmRun *a, const WarmRun *b)
{
	int			ra = wc_rank_slot(a->rank);
	int			rb = wc_rank_slot(b->rank);

	if (ra != rb)
	{
		if (ra == WC_RANK_SLOT_OS || rb == WC_RANK_SLOT_OS)
			return ra == WC_RANK_SLOT_OS ? 1 : -1;
		return ra > rb ? -1 : 1;
	}
	return wc_run_phys_cmp(a, b);
}

/* The rank of a run, in words for a log line. */
static char *
rank_words(uint32 rank)
{
	return rank == WC_RANK_OS ? pstrdup("the OS tier") :
		psprintf("rank %u", rank);
}

/*
 * Check run i of a file of the given version against itself and against
 * prev, the run before it (NULL for the first).  Returns the problem, or
 * NULL.  The reader (dumpfile.c) checks every run it reads with it, and
 * the writer each run it writes (writer_emit()), so that it never writes a
 * file the reader would refuse.
 *
 * The file is sorted, so runs of one relation fork and rank follow one
 * another by start; each must begin at or after the end of the one before,
 * which, by induction, ends past every earlier one.  Ordering alone would
 * let them overlap, and overlapping runs make a restore read the same
 * blocks again and again: 300 runs over one table, each to its end, read
 * it 300 times.  From version 3 on they may not touch either: the writer
 * merges runs that touch, so a file of such runs is not one it wrote, and
 * every file accepted is the one its runs encode, byte for byte.
 */
char *
wc_check_run(uint64 i, const WarmRun *run, const WarmRun *prev,
			 uint32 version)
{
	/* In 64 bits: start + count must not wrap around 2^32. */
	uint64		end = (uint64) run->start + run->count;

	if ((run->rank > WC_MAX_RANK &&
		 (run->rank != WC_RANK_OS || version < 2)) ||
		run->fork > MAX_FORKNUM ||
		run->count == 0 ||
		(prev != NULL && wc_run_cmp(prev, run) >= 0))
		return psprintf("run %llu is invalid or out of order",
						(unsigned long long) i);
	if (end > (uint64) MaxBlockNumber + 1)
		return psprintf("run %llu ends past the largest possible relation: blocks %u to %llu, but a relation has at most %llu blocks",
						(unsigned long long) i, run->start,
						(unsigned long long) (end - 1),
						(unsigned long long) MaxBlockNumber + 1);
	if (prev != NULL && wc_same_group(prev, run) &&
		run->start < (uint64) prev->start + prev->count)
		return psprintf("runs %llu and %llu overlap: both name block %u of relation %u/%u/%u fork %u in %s",
						(unsigned long long) (i - 1),
						(unsigned long long) i,
						run->start, run->spc, run->db, run->relnumber,
						run->fork, rank_words(run->rank));
	if (version >= 3 && prev != NULL && wc_same_group(prev, run) &&
		run->start == (uint64) prev->start + prev->count)
		return psprintf("runs %llu and %llu touch at block %u of relation %u/%u/%u fork %u in %s, where the writer makes one run",
						(unsigned long long) (i - 1),
						(unsigned long long) i,
						run->start, run->spc, run->db, run->relnumber,
						run->fork, rank_words(run->rank));
	return NULL;
}

/*---- The encoding ----*/

/* The first byte of a group header. */
#define WC_GROUP_TAG	0

static int
put_number(uint8 *out, uint32 v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		out[n++] = (uint8) (v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8) v;
	return n;
}

/*
 * Encode run, which follows the runs coder has seen in file order, into
 * out (at least WC_MAX_ENCODED_RUN bytes); returns the bytes written.
 */
int
wc_encode_run(RunCoder *coder, const WarmRun *run, uint8 *out)
{
	int			n = 0;

	if (!coder->in_group || !wc_same_group(&coder->key, run))
	{
		out[n++] = WC_GROUP_TAG;
		n += put_number(out + n, run->rank);
		n += put_number(out + n, run->db);
		n += put_number(out + n, run->spc);
		n += put_number(out + n, run->relnumber);
		n += put_number(out + n, run->fork);
		coder->key = *run;
		coder->in_group = true;
		coder->prev_end = 0;
	}

	/* The writer merges what touches or overlaps: runs only move on. */
	if (run->start < coder->prev_end || run->count == 0)
		elog(ERROR, "run of relation %u at block %u is out of order",
			 run->relnumber, run->start);
	n += put_number(out + n, (uint32) (run->start - coder->prev_end) + 1);
	n += put_number(out + n, run->count - 1);
	coder->prev_end = (uint64) run->start + run->count;
	return n;
}

void
wc_byte_source_init(ByteSource *src, FILE *fp, uint64 offset, uint64 limit,
					pg_crc32c *crc)
{
	src->fp = fp;
	src->mem = NULL;
	src->offset = offset;
	src->limit = limit;
	src->n = src->pos = 0;
	src->crc = crc;
}

/* Bytes in memory, len of them, read as a file's from offset 0. */
void
wc_byte_source_init_memory(ByteSource *src, const uint8 *bytes, uint64 len,
						   pg_crc32c *crc)
{
	wc_byte_source_init(src, NULL, 0, len, crc);
	src->mem = bytes;
}

/* The file offset of the next byte to be read. */
uint64
wc_byte_source_offset(const ByteSource *src)
{
	return src->offset + src->pos;
}

/* The next byte, or -1 at the limit. */
static int
next_byte(ByteSource *src)
{
	if (src->pos >= src->n)
	{
		uint64		left;
		size_t		want;
		size_t		got;

		src->offset += src->n;
		src->n = src->pos = 0;
		left = src->limit > src->offset ? src->limit - src->offset : 0;
		if (left == 0)
			return -1;
		want = (size_t) Min(left, (uint64) WC_BYTE_BUF);
		if (src->mem != NULL)
		{
			memcpy(src->buf, src->mem + src->offset, want);
			got = want;
		}
		else
			got = fread(src->buf, 1, want, src->fp);
		if (got == 0)
		{
			if (ferror(src->fp))
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not read dump file: %m")));
			src->limit = src->offset;	/* the end of the file */
			return -1;
		}
		if (src->crc)
			COMP_CRC32C(*src->crc, src->buf, got);
		src->n = (int) got;
	}
	return src->buf[src->pos++];
}

/* What reading a number found. */
typedef enum NumberResult
{
	NUMBER_OK,
	NUMBER_END,					/* the limit, before its first byte */
	NUMBER_CUT,					/* the limit, within it */
	NUMBER_BAD					/* longer than 32 bits, or not in its
								 * shortest form */
} NumberResult;

static NumberResult
get_number(ByteSource *src, uint32 *v)
{
	uint64		value = 0;
	int			i;

	for (i = 0; i < 5; i++)
	{
		int			b = next_byte(src);

		if (b < 0)
			return i == 0 ? NUMBER_END : NUMBER_CUT;
		value |= (uint64) (b & 0x7F) << (7 * i);
		if ((b & 0x80) == 0)
		{
			if ((b == 0 && i > 0) || value > PG_UINT32_MAX)
				return NUMBER_BAD;
			*v = (uint32) value;
			return NUMBER_OK;
		}
	}
	return NUMBER_BAD;
}

/*
 * A number within a run's encoding: the limit there means the bytes were
 * cut off.  Returns the result for wc_decode_run(), or WC_DECODE_RUN if
 * the number was read.
 */
static DecodeResult
get_inner_number(ByteSource *src, uint32 *v, const char *what,
				 const char **problem)
{
	switch (get_number(src, v))
	{
		case NUMBER_OK:
			return WC_DECODE_RUN;
		case NUMBER_END:
		case NUMBER_CUT:
			*problem = psprintf("%s is cut off", what);
			return WC_DECODE_CUT;
		case NUMBER_BAD:
			break;
	}
	*problem = psprintf("%s is longer than 32 bits or not in its shortest form",
						what);
	return WC_DECODE_BAD;
}

/*
 * Decode the next run into *run.  *group_start says whether it began a
 * group (a rank's first run always does: the rank is part of the group's
 * key).  On WC_DECODE_BAD or WC_DECODE_CUT, *problem says what is wrong.
 */
DecodeResult
wc_decode_run(ByteSource *src, RunCoder *coder, WarmRun *run,
			  bool *group_start, const char **problem)
{
	uint32		head;
	uint32		less_one;
	uint64		start;
	DecodeResult r;

	*group_start = false;
	switch (get_number(src, &head))
	{
		case NUMBER_OK:
			break;
		case NUMBER_END:
			return WC_DECODE_END;
		case NUMBER_CUT:
			*problem = "a run is cut off";
			return WC_DECODE_CUT;
		case NUMBER_BAD:
			*problem = "a run's first number is longer than 32 bits or not in its shortest form";
			return WC_DECODE_BAD;
	}
	if (head == WC_GROUP_TAG)
	{
		/* Constant words: a string made per group would pile up. */
		static const char *const field[5] = {"a group header's rank",
			"a group header's database", "a group header's tablespace",
		"a group header's relation", "a group header's fork"};
		uint32		f[5];
		int			i;

		for (i = 0; i < 5; i++)
			if ((r = get_inner_number(src, &f[i], field[i], problem)) != WC_DECODE_RUN)
				return r;
		memset(&coder->key, 0, sizeof(coder->key));
		coder->key.rank = f[0];
		coder->key.db = f[1];
		coder->key.spc = f[2];
		coder->key.relnumber = f[3];
		coder->key.fork = f[4];
		coder->in_group = true;
		coder->prev_end = 0;
		*group_start = true;
		if ((r = get_inner_number(src, &head, "a run's gap", problem)) != WC_DECODE_RUN)
			return r;
		if (head == WC_GROUP_TAG)
		{
			*problem = "a group header is not followed by a run";
			return WC_DECODE_BAD;
		}
	}
	else if (!coder->in_group)
	{
		*problem = "a run comes before any group header";
		return WC_DECODE_BAD;
	}
	if ((r = get_inner_number(src, &less_one, "a run's block count", problem)) != WC_DECODE_RUN)
		return r;
	start = coder->prev_end + (head - 1);
	if (start > MaxBlockNumber || less_one == PG_UINT32_MAX)
	{
		*problem = "a run begins past the largest possible block, or holds more blocks than a relation can";
		return WC_DECODE_BAD;
	}
	*run = coder->key;
	run->start = (BlockNumber) start;
	run->count = less_one + 1;
	coder->prev_end = start + run->count;
	return WC_DECODE_RUN;
}

/*
 * Begin runs in the file's encoding in memory, appended to buf: no header,
 * no CRC of their own.
 */
void
wc_writer_begin_memory(RunWriter *w, StringInfo buf)
{
	memset(w, 0, sizeof(*w));
	w->mem = buf;
	w->compact = true;
	INIT_CRC32C(w->crc);
}

/*
 * Begin runs in the file's encoding that go nowhere: the writer merges,
 * checks and counts them, and wc_writer_header() gives the header of the
 * file they would make.
 */
void
wc_writer_begin_counting(RunWriter *w)
{
	memset(w, 0, sizeof(*w));
	w->compact = true;
	INIT_CRC32C(w->crc);
}

/*
 * Write a run.  In the dump file's encoding the run first passes the
 * reader's checks (wc_check_run()), against the run written before it: one
 * that fails would make the whole file unusable, so nothing more is
 * written and w->problem says why; the caller does not use the file.
 */
static void
writer_emit(RunWriter *w, const WarmRun *run)
{
	uint8		bytes[WC_MAX_ENCODED_RUN];
	const void *data = run;
	size_t		len = sizeof(WarmRun);

	if (w->problem != NULL)
		return;
	if (w->compact)
	{
		w->problem = wc_check_run(w->nruns, run, w->nruns > 0 ? &w->last : NULL,
								  WC_DUMP_VERSION);
		if (w->problem != NULL)
			return;
		len = wc_encode_run(&w->coder, run, bytes);
		data = bytes;
	}
	if (w->mem != NULL)
		appendBinaryStringInfo(w->mem, data, len);
	else if (w->fp != NULL && fwrite(data, len, 1, w->fp) != 1)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", w->path)));
	COMP_CRC32C(w->crc, data, len);
	w->last = *run;
	w->nruns++;
	w->nblocks += run->count;
}

/*
 * Add a run, merging it into the previous one when they touch.  Runs come
 * in file order; a block seen twice (it moved between buffers while we
 * scanned) is kept once.
 */
void
wc_writer_add(RunWriter *w, const WarmRun *run)
{
	if (w->have && wc_same_group(&w->cur, run) &&
		run->start <= w->cur.start + w->cur.count)
	{
		uint64		end = Max((uint64) w->cur.start + w->cur.count,
							  (uint64) run->start + run->count);

		if (end - w->cur.start <= PG_UINT32_MAX)
		{
			w->cur.count = (uint32) (end - w->cur.start);
			return;
		}
	}
	if (w->have)
		writer_emit(w, &w->cur);
	w->cur = *run;
	w->have = true;
}

void
wc_writer_flush(RunWriter *w)
{
	if (w->have)
		writer_emit(w, &w->cur);
	w->have = false;
}

