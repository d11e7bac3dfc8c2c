/*-------------------------------------------------------------------------
 *
 * pubdelta.c
 *		Publication deltas: the blocks a dump added to and removed from the
 *		last publication, and the new file rebuilt from them.
 *
 * A primary publishes each dump to its standbys (channel.c).  Between two
 * dumps a hot set mostly stays: publishing the whole file each time costs
 * WAL in proportion to the set, where what standbys need is the change.
 * So a publication can be a delta against the one before it: the blocks
 * the new file has and the old one has not ("added"), and the other way
 * round ("removed"), a block of another rank counting as another block.
 * Both lists are runs in the file order and the dump file's encoding, so
 * a delta is as compact as a file of the changed blocks.
 *
 * Building one merges the two files, both sorted, run by run; rebuilding
 * the new file merges the old one, minus the removed runs, with the added
 * ones, and writes it with the dump file's writer.  The writer merges runs
 * that touch, as the dump does, so the file rebuilt is the dump's, byte
 * for byte: the delta carries the new file's header, CRC included, and a
 * rebuilt file whose header differs is refused.  A delta read back from
 * the table is checked before it is used (its sizes, its CRC, the order of
 * its runs), and the rebuilt file is bounded by the header it announces.
 *
 * Memory: the readers' and writers' buffers, and the delta's bytes (the
 * caller bounds them: one row of the table).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pubdelta.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dumpfile.h"
#include "pubdelta.h"
#include "runcodec.h"

struct DeltaStage;

/*
 * Runs, from a dump file, from the file a delta makes of its input, or
 * from a delta's bytes, one at a time.
 */
typedef struct RunStream
{
	WarmFileReader *reader;		/* a file, or else */
	struct DeltaStage *stage;	/* the runs a delta makes, or else */
	ByteSource	src;			/* bytes in memory */
	RunCoder	coder;
	const char *what;			/* "removed" or "added", for problems */
	char	  **problem;
	bool		have;			/* cur is the next run, or its rest */
	bool		ended;
	bool		any;			/* last holds the run read before */
	WarmRun		cur;
	WarmRun		last;
} RunStream;

/*
 * A delta applied to the runs of its input as they are pulled, making the
 * runs of the file it announces; its writer, which writes nothing but for
 * the last delta of a chain, merges, checks and counts them as the dump's
 * writer does, so that the file's header is known at the end without the
 * file being written.
 */
typedef struct DeltaStage
{
	int			number;			/* of the delta, for problems */
	WarmDeltaHeader dh;
	RunStream  *input;
	RunStream	removed;
	RunStream	added;
	RunWriter	w;
	WarmRun		x;				/* the next run of input minus removed */
	bool		have_x;
	bool		x_ended;
	bool		done;
	char	  **problem;
} DeltaStage;

static bool stage_next(DeltaStage *st, WarmRun *out);

/* What the merge of two streams found next. */
typedef enum DiffPart
{
	WC_DIFF_END,
	WC_DIFF_ONLY_A,				/* blocks of the first stream alone */
	WC_DIFF_ONLY_B				/* blocks of the second stream alone */
} DiffPart;

/* Rank and relation fork, in file order; the blocks are left out. */
static int
key_cmp(const WarmRun *a, const WarmRun *b)
{
	WarmRun		x = *a;
	WarmRun		y = *b;

	x.start = y.start = 0;
	return wc_run_cmp(&x, &y);
}

static void
stream_init_file(RunStream *s, WarmFileReader *reader)
{
	memset(s, 0, sizeof(*s));
	s->reader = reader;
}

static void
stream_init_stage(RunStream *s, DeltaStage *stage)
{
	memset(s, 0, sizeof(*s));
	s->stage = stage;
}

static void
stream_init_memory(RunStream *s, const char *bytes, uint64 len,
				   const char *what, char **problem)
{
	memset(s, 0, sizeof(*s));
	wc_byte_source_init_memory(&s->src, (const uint8 *) bytes, len, NULL);
	s->what = what;
	s->problem = problem;
}

/*
 * True if the stream has a run left, now in s->cur.  A delta's runs must
 * come in file order and not overlap: a malformed one ends the stream with
 * *s->problem set.  A dump file was checked when it was written or
 * fetched; its reader raises an error if it is damaged since.
 */
static bool
stream_peek(RunStream *s)
{
	const char *problem = NULL;
	bool		group_start;

	if (s->have)
		return true;
	if (s->ended)
		return false;
	if (s->reader != NULL || s->stage != NULL)
	{
		s->have = s->reader != NULL ? wc_reader_next(s->reader, &s->cur) :
			stage_next(s->stage, &s->cur);
		s->ended = !s->have;
		return s->have;
	}
	switch (wc_decode_run(&s->src, &s->coder, &s->cur, &group_start, &problem))
	{
		case WC_DECODE_RUN:
			if (s->any &&
				(key_cmp(&s->last, &s->cur) > 0 ||
				 (key_cmp(&s->last, &s->cur) == 0 &&
				  (uint64) s->last.start + s->last.count > s->cur.start)))
			{
				*s->problem = psprintf("its %s runs are not in the file's order",
									   s->what);
				break;
			}
			s->last = s->cur;
			s->any = true;
			s->have = true;
			return true;
		case WC_DECODE_END:
			break;
		case WC_DECODE_CUT:
		case WC_DECODE_BAD:
			*s->problem = psprintf("its %s runs are malformed: %s", s->what,
								   problem);
			break;
	}
	s->ended = true;
	return false;
}

/* Take the first n blocks of the stream's current run. */
static void
stream_take(RunStream *s, uint32 n, WarmRun *out)
{
	if (out != NULL)
	{
		*out = s->cur;
		out->count = n;
	}
	s->cur.start += n;
	s->cur.count -= n;
	if (s->cur.count == 0)
		s->have = false;
}

/*
 * The next blocks in file order that one of the two streams has and the
 * other has not, as a run in *out; blocks both have are passed over.
 */
static DiffPart
diff_next(RunStream *a, RunStream *b, WarmRun *out)
{
	for (;;)
	{
		bool		ha = stream_peek(a);
		bool		hb = stream_peek(b);
		int			c;
		uint64		a_end;
		uint64		b_end;

		if (!ha && !hb)
			return WC_DIFF_END;
		if (!hb)
		{
			stream_take(a, a->cur.count, out);
			return WC_DIFF_ONLY_A;
		}
		if (!ha)
		{
			stream_take(b, b->cur.count, out);
			return WC_DIFF_ONLY_B;
		}
		c = key_cmp(&a->cur, &b->cur);
		a_end = (uint64) a->cur.start + a->cur.count;
		b_end = (uint64) b->cur.start + b->cur.count;
		if (c < 0 || (c == 0 && a_end <= b->cur.start))
		{
			stream_take(a, a->cur.count, out);
			return WC_DIFF_ONLY_A;
		}
		if (c > 0 || (c == 0 && b_end <= a->cur.start))
		{
			stream_take(b, b->cur.count, out);
			return WC_DIFF_ONLY_B;
		}
		/* The same relation fork and rank, and the runs overlap. */
		if (a->cur.start < b->cur.start)
		{
			stream_take(a, b->cur.start - a->cur.start, out);
			return WC_DIFF_ONLY_A;
		}
		if (b->cur.start < a->cur.start)
		{
			stream_take(b, a->cur.start - b->cur.start, out);
			return WC_DIFF_ONLY_B;
		}
		{
			uint32		common = Min(a->cur.count, b->cur.count);

			stream_take(a, common, NULL);
			stream_take(b, common, NULL);
		}
	}
}

/* The CRC of a delta: of its runs' bytes, then of its header up to crc. */
static pg_crc32c
delta_crc(const WarmDeltaHeader *hdr, const char *runs, Size len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, runs, len);
	COMP_CRC32C(crc, hdr, offsetof(WarmDeltaHeader, crc));
	FIN_CRC32C(crc);
	return crc;
}

/*
 * The delta that makes the dump file at new_path from the one at
 * old_path, as the bytes of a bytea; NULL if its runs would take more
 * than max_bytes (the caller then publishes the whole file), or if there
 * is no file at old_path.  Both files are this server's own.
 */
bytea *
wc_delta_build(const char *old_path, const char *new_path, Size max_bytes)
{
	WarmFileReader old_file;
	WarmFileReader new_file;
	RunStream	a;
	RunStream	b;
	StringInfoData removed;
	StringInfoData added;
	RunWriter	rw;
	RunWriter	aw;
	WarmRun		run;
	DiffPart	part;
	uint64		n = 0;
	WarmDeltaHeader hdr;
	bytea	   *result = NULL;
	char	   *p;

	if (!wc_reader_open(&old_file, old_path, false))
		return NULL;
	if (!wc_reader_open(&new_file, new_path, false))
	{
		wc_reader_close(&old_file);
		return NULL;
	}
	stream_init_file(&a, &old_file);
	stream_init_file(&b, &new_file);
	initStringInfo(&removed);
	initStringInfo(&added);
	wc_writer_begin_memory(&rw, &removed);
	wc_writer_begin_memory(&aw, &added);
	while ((part = diff_next(&a, &b, &run)) != WC_DIFF_END)
	{
		if ((++n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		wc_writer_add(part == WC_DIFF_ONLY_A ? &rw : &aw, &run);
		if ((Size) removed.len + added.len > max_bytes)
			break;
	}
	wc_writer_flush(&rw);
	wc_writer_flush(&aw);

	/* A writer's problem is the new file's: it is then published whole. */
	if (part == WC_DIFF_END && (Size) removed.len + added.len <= max_bytes &&
		rw.problem == NULL && aw.problem == NULL)
	{
		memset(&hdr, 0, sizeof(hdr));
		hdr.magic = WC_DELTA_MAGIC;
		hdr.version = WC_DELTA_VERSION;
		hdr.base_dumped_at = old_file.hdr.dumped_at;
		hdr.removed_bytes = removed.len;
		hdr.added_bytes = added.len;
		hdr.result = new_file.hdr;

		result = palloc(VARHDRSZ + sizeof(hdr) + removed.len + added.len);
		SET_VARSIZE(result, VARHDRSZ + sizeof(hdr) + removed.len + added.len);
		p = VARDATA(result) + sizeof(hdr);
		memcpy(p, removed.data, removed.len);
		memcpy(p + removed.len, added.data, added.len);
		hdr.crc = delta_crc(&hdr, p, removed.len + added.len);
		memcpy(VARDATA(result), &hdr, sizeof(hdr));
	}
	pfree(removed.data);
	pfree(added.data);
	wc_reader_close(&old_file);
	wc_reader_close(&new_file);
	return result;
}

/*
 * The header of the delta in data (len bytes), checked: its kind, its
 * sizes against len, its CRC.  False, with *problem, if it fails.
 */
bool
wc_delta_header(const char *data, Size len, WarmDeltaHeader *hdr,
				char **problem)
{
	if (len < sizeof(WarmDeltaHeader))
	{
		*problem = psprintf("a delta of %zu bytes is shorter than its header", len);
		return false;
	}
	memcpy(hdr, data, sizeof(WarmDeltaHeader));
	if (hdr->magic != WC_DELTA_MAGIC || hdr->version != WC_DELTA_VERSION)
	{
		*problem = psprintf("a delta is not of a kind this version reads (magic %08X, version %u)",
							hdr->magic, hdr->version);
		return false;
	}
	if (hdr->removed_bytes > len - sizeof(WarmDeltaHeader) ||
		hdr->added_bytes != len - sizeof(WarmDeltaHeader) - hdr->removed_bytes)
	{
		*problem = psprintf("a delta of %zu bytes announces %llu and %llu bytes of runs",
							len, (unsigned long long) hdr->removed_bytes,
							(unsigned long long) hdr->added_bytes);
		return false;
	}
	if (!EQ_CRC32C(delta_crc(hdr, data + sizeof(WarmDeltaHeader),
							 len - sizeof(WarmDeltaHeader)), hdr->crc))
	{
		*problem = pstrdup("a delta's checksum does not match");
		return false;
	}
	return true;
}

/* True if run a begins before run b in file order. */
static bool
run_before(const WarmRun *a, const WarmRun *b)
{
	int			c = key_cmp(a, b);

	return c < 0 || (c == 0 && a->start < b->start);
}

/*
 * The next run of the stage's input minus its removed runs, merged with its
 * added runs, in file order, before the writer merges those that touch:
 * false at the end or on a problem.
 */
static bool
stage_merge_next(DeltaStage *st, WarmRun *next)
{
	char	  **problem = st->problem;
	bool		have_d;

	if (!st->have_x && !st->x_ended)
	{
		switch (diff_next(st->input, &st->removed, &st->x))
		{
			case WC_DIFF_ONLY_A:
				st->have_x = true;
				break;
			case WC_DIFF_ONLY_B:
				if (*problem == NULL)
					*problem = psprintf("delta %d: it removes blocks the file does not hold",
										st->number);
				return false;
			case WC_DIFF_END:
				st->x_ended = true;
				break;
		}
		if (*problem != NULL)
			return false;
	}
	have_d = stream_peek(&st->added);
	if (*problem != NULL || (!st->have_x && !have_d))
		return false;
	if (st->have_x && have_d && key_cmp(&st->x, &st->added.cur) == 0 &&
		(uint64) st->x.start + st->x.count > st->added.cur.start &&
		(uint64) st->added.cur.start + st->added.cur.count > st->x.start)
	{
		*problem = psprintf("delta %d: it adds blocks the file holds",
							st->number);
		return false;
	}
	if (st->have_x && (!have_d || run_before(&st->x, &st->added.cur)))
	{
		*next = st->x;
		st->have_x = false;
	}
	else
		stream_take(&st->added, st->added.cur.count, next);
	return true;
}

/*
 * The stage's input is spent: the file its runs make must be the one its
 * delta announces, header and CRC.  The last stage's writer writes that
 * file.
 */
static void
stage_end(DeltaStage *st)
{
	WarmFileHeader got;

	if (st->w.fp != NULL)
		wc_writer_finish(&st->w, st->dh.result.dumped_at, &got);
	else
		wc_writer_header(&st->w, st->dh.result.dumped_at, &got);
	if (*st->problem != NULL)
		return;
	if (st->w.problem != NULL)
		*st->problem = psprintf("the file delta %d makes would not be usable: %s",
								st->number, st->w.problem);
	else if (memcmp(&got, &st->dh.result, sizeof(got)) != 0)
		*st->problem = psprintf("the file delta %d makes is not the one it announces (%llu blocks in %llu runs, CRC %08X; announced %llu in %llu, %08X)",
								st->number,
								(unsigned long long) got.nblocks,
								(unsigned long long) got.nruns, got.crc,
								(unsigned long long) st->dh.result.nblocks,
								(unsigned long long) st->dh.result.nruns,
								st->dh.result.crc);
}

/*
 * The next run of the file the stage's delta makes, as its writer writes
 * it (merged where runs touch); false at its end or on a problem.  The
 * writer holds back one run, which it writes when the next does not touch
 * it: that is the run returned.
 */
static bool
stage_next(DeltaStage *st, WarmRun *out)
{
	for (;;)
	{
		WarmRun		held = st->w.cur;
		uint64		before = st->w.nruns;
		WarmRun		next;

		if (st->done || *st->problem != NULL)
			return false;
		if (!stage_merge_next(st, &next))
		{
			if (*st->problem != NULL)
				return false;
			st->done = true;
			wc_writer_flush(&st->w);
			stage_end(st);
			if (*st->problem != NULL || st->w.nruns == before)
				return false;
			*out = held;
			return true;
		}
		wc_writer_add(&st->w, &next);
		if (st->w.problem != NULL)
			*st->problem = psprintf("the file delta %d makes would not be usable: %s",
									st->number, st->w.problem);
		else if (st->w.nblocks > st->dh.result.nblocks ||
				 st->w.nruns > st->dh.result.nruns)
			*st->problem = psprintf("the file delta %d makes holds more than the %llu blocks in %llu runs it announces",
									st->number,
									(unsigned long long) st->dh.result.nblocks,
									(unsigned long long) st->dh.result.nruns);
		if (*st->problem != NULL)
			return false;
		if (st->w.nruns > before)
		{
			*out = held;
			return true;
		}
	}
}

/*
 * Make out_path from the dump file at base_path and the n deltas in
 * data[i] (len[i] bytes each), applied one after the other; they are
 * deltas number first, first + 1, ... for problems.  False, with *problem,
 * if a delta does not apply to the file the one before makes or does not
 * make the file it announces; out_path is then removed.  The caller checks
 * each announced header's claims (its size) first.
 *
 * The deltas are applied in one pass: each is a stage that pulls the runs
 * of the one before (the first, of the file), so the file is read once and
 * the last file written once, whatever the number of deltas, and what a
 * delta makes is never larger than its header announces.  Before that,
 * each delta's announced runs are bounded by what its bytes can change: a
 * run removed or added, 2 bytes at least in the delta, adds at most one run
 * to the file, so a delta of a few bytes cannot announce a file far larger
 * than the one it applies to.  Memory: the deltas (the caller's) and a
 * reader and writer buffer per stage.
 */
bool
wc_delta_apply(const char *base_path, int n, const char *const *data,
			   const Size *len, int first, const char *out_path,
			   char **problem)
{
	WarmFileReader base;
	RunStream	file;
	DeltaStage *stages;
	WarmRun		run;
	uint64		pulled = 0;
	int			i;

	Assert(n >= 1);
	if (!wc_reader_open(&base, base_path, false))
	{
		*problem = psprintf("file \"%s\", to which it applies, is missing",
							base_path);
		return false;
	}
	stages = palloc0(sizeof(DeltaStage) * n);
	for (i = 0; i < n && *problem == NULL; i++)
	{
		DeltaStage *st = &stages[i];
		const WarmFileHeader *in = i == 0 ? &base.hdr : &stages[i - 1].dh.result;
		const char *runs;

		st->number = first + i;
		st->problem = problem;
		if (!wc_delta_header(data[i], len[i], &st->dh, problem))
			break;
		if (in->dumped_at != st->dh.base_dumped_at)
			*problem = psprintf("delta %d applies to the publication of %s, not to that of %s",
								st->number,
								timestamptz_to_str(st->dh.base_dumped_at),
								timestamptz_to_str(in->dumped_at));
		else if (st->dh.result.nruns > in->nruns +
				 (st->dh.removed_bytes + st->dh.added_bytes) / 2)
			*problem = psprintf("delta %d announces a file of %llu runs, but its %llu bytes of runs can make at most %llu of the %llu it applies to",
								st->number,
								(unsigned long long) st->dh.result.nruns,
								(unsigned long long) (st->dh.removed_bytes + st->dh.added_bytes),
								(unsigned long long) (in->nruns +
													  (st->dh.removed_bytes + st->dh.added_bytes) / 2),
								(unsigned long long) in->nruns);
		if (*problem != NULL)
			break;
		runs = data[i] + sizeof(WarmDeltaHeader);
		if (i == 0)
		{
			stream_init_file(&file, &base);
			st->input = &file;
		}
		else
		{
			st->input = palloc(sizeof(RunStream));
			stream_init_stage(st->input, &stages[i - 1]);
		}
		stream_init_memory(&st->removed, runs, st->dh.removed_bytes,
						   "removed", problem);
		stream_init_memory(&st->added, runs + st->dh.removed_bytes,
						   st->dh.added_bytes, "added", problem);
		if (i < n - 1)
			wc_writer_begin_counting(&st->w);
		else
			wc_writer_begin(&st->w, out_path);
	}

	/* Pull every run through the stages: the last one writes them. */
	while (*problem == NULL && stage_next(&stages[n - 1], &run))
	{
		if ((++pulled & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (*problem == NULL && !stages[n - 1].done)
		*problem = psprintf("delta %d was not applied to its end", first + n - 1);
	wc_reader_close(&base);
	if (*problem != NULL)
	{
		wc_writer_abandon(&stages[n - 1].w);
		(void) unlink(out_path);
	}
	for (i = 1; i < n; i++)
		if (stages[i].input != NULL)
			pfree(stages[i].input);
	pfree(stages);
	return *problem == NULL;
}
