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

/* Runs, from a dump file or from a delta's bytes, one at a time. */
typedef struct RunStream
{
	WarmFileReader *reader;		/* a file, or else */
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
	if (s->reader != NULL)
	{
		s->have = wc_reader_next(s->reader, &s->cur);
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
 * Make out_path from the dump file at base_path and the delta in data (len
 * bytes, its header checked by wc_delta_header()).  False, with *problem,
 * if the delta does not apply to that file or does not make the file it
 * announces; out_path is then removed.  The caller checks the announced
 * header's claims (its size) first: the file written never holds more
 * blocks or runs than it announces.
 */
bool
wc_delta_apply(const char *base_path, const char *data, Size len,
			   const char *out_path, char **problem)
{
	WarmDeltaHeader dh;
	WarmFileReader base;
	RunStream	a;
	RunStream	removed;
	RunStream	added;
	RunWriter	w;
	WarmRun		x;
	bool		have_x = false;
	bool		x_ended = false;
	WarmFileHeader got;
	uint64		n = 0;
	const char *runs;

	if (!wc_delta_header(data, len, &dh, problem))
		return false;
	if (!wc_reader_open(&base, base_path, false))
	{
		*problem = psprintf("file \"%s\", to which it applies, is missing",
							base_path);
		return false;
	}
	if (base.hdr.dumped_at != dh.base_dumped_at)
	{
		*problem = psprintf("it applies to the publication of %s, not to that of %s",
							timestamptz_to_str(dh.base_dumped_at),
							timestamptz_to_str(base.hdr.dumped_at));
		wc_reader_close(&base);
		return false;
	}
	runs = data + sizeof(WarmDeltaHeader);
	stream_init_file(&a, &base);
	stream_init_memory(&removed, runs, dh.removed_bytes, "removed", problem);
	stream_init_memory(&added, runs + dh.removed_bytes, dh.added_bytes,
					   "added", problem);

	/* (base minus removed) merged with added, in file order */
	wc_writer_begin(&w, out_path);
	while (*problem == NULL)
	{
		bool		have_d;
		WarmRun		next;

		if ((++n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!have_x && !x_ended)
		{
			switch (diff_next(&a, &removed, &x))
			{
				case WC_DIFF_ONLY_A:
					have_x = true;
					break;
				case WC_DIFF_ONLY_B:
					if (*problem == NULL)
						*problem = pstrdup("it removes blocks the file does not hold");
					continue;
				case WC_DIFF_END:
					x_ended = true;
					break;
			}
			if (*problem != NULL)
				break;
		}
		have_d = stream_peek(&added);
		if (*problem != NULL)
			break;
		if (!have_x && !have_d)
			break;
		if (have_x && have_d && key_cmp(&x, &added.cur) == 0 &&
			(uint64) x.start + x.count > added.cur.start &&
			(uint64) added.cur.start + added.cur.count > x.start)
		{
			*problem = pstrdup("it adds blocks the file holds");
			break;
		}
		if (have_x && (!have_d || run_before(&x, &added.cur)))
		{
			next = x;
			have_x = false;
		}
		else
			stream_take(&added, added.cur.count, &next);
		wc_writer_add(&w, &next);
		if (w.problem != NULL)
			*problem = psprintf("the file it makes would not be usable: %s",
								w.problem);
		else if (w.nblocks > dh.result.nblocks || w.nruns > dh.result.nruns)
			*problem = psprintf("the file it makes holds more than the %llu blocks in %llu runs it announces",
								(unsigned long long) dh.result.nblocks,
								(unsigned long long) dh.result.nruns);
	}
	wc_reader_close(&base);
	if (*problem != NULL)
	{
		wc_writer_abandon(&w);
		(void) unlink(out_path);
		return false;
	}
	wc_writer_finish(&w, dh.result.dumped_at, &got);
	if (w.problem != NULL)
	{
		*problem = psprintf("the file it makes would not be usable: %s",
							w.problem);
		(void) unlink(out_path);
		return false;
	}
	if (memcmp(&got, &dh.result, sizeof(got)) != 0)
	{
		*problem = psprintf("the file it makes is not the one it announces (%llu blocks in %llu runs, CRC %08X; announced %llu in %llu, %08X)",
							(unsigned long long) got.nblocks,
							(unsigned long long) got.nruns, got.crc,
							(unsigned long long) dh.result.nblocks,
							(unsigned long long) dh.result.nruns,
							dh.result.crc);
		(void) unlink(out_path);
		return false;
	}
	return true;
}
