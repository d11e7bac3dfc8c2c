/*-------------------------------------------------------------------------
 *
 * fuzz_dumpfile.c
 *		libFuzzer harness: the dump file's check, its reader and its writer.
 *
 * The first byte of an input chooses what the rest is:
 *
 * - bit 0 clear: a dump file.  wc_check_file() judges it; a file it
 *   accepts must read without error, and the writer must make the same
 *   file of its runs, byte for byte (version 3; an older version's runs
 *   must make a file the check accepts).  With bit 1 set the harness first
 *   gives the header this system's identity and the right CRC, so that
 *   the runs' own checks are reached.
 * - bit 0 set, bit 1 clear: runs made from the bytes (see next_run()),
 *   given to the writer.  A file the writer finishes without refusing must
 *   be accepted, and runs that are valid (checked here, not by the module)
 *   must never be refused, and keep their blocks.
 * - bits 0 and 1 set: the same runs encoded by the harness's own encoder,
 *   which writes what the module's writer never would (runs that touch, a
 *   group opened again), with a right header: the first case then, so
 *   that a file the check accepts and the writer would not make is found
 *   in seconds, not by chance.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_dumpfile.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "dumpfile.h"
#include "fuzz_support.h"
#include "runcodec.h"

int			LLVMFuzzerTestOneInput(const uint8 *data, size_t size);

/*
 * Read the checked file at path run by run and write its runs with the
 * dump's writer to another file; returns that file's path.
 */
static const char *
rewrite(const char *path, const WarmFileHeader *hdr)
{
	const char *out = fuzz_path("rewritten");
	WarmFileReader reader;
	RunWriter	w;
	WarmRun		run;
	WarmFileHeader got;
	uint64		n = 0;

	if (!wc_reader_open(&reader, path, false))
		fuzz_fail("the file the check accepted is gone");
	wc_writer_begin(&w, out);
	while (wc_reader_next(&reader, &run))
	{
		wc_writer_add(&w, &run);
		n++;
	}
	wc_reader_close(&reader);
	if (n != hdr->nruns)
		fuzz_fail("the reader returned %llu runs of %llu",
				  (unsigned long long) n, (unsigned long long) hdr->nruns);
	wc_writer_finish(&w, hdr->dumped_at, &got);
	if (w.problem != NULL)
		fuzz_fail("the writer refuses the runs of a file the check accepts: %s",
				  w.problem);
	if (got.nblocks != hdr->nblocks)
		fuzz_fail("rewritten, the file holds %llu blocks, not %llu",
				  (unsigned long long) got.nblocks,
				  (unsigned long long) hdr->nblocks);
	return out;
}

static void
check_file(const uint8 *data, size_t size, bool fix)
{
	const char *path = fuzz_path("file");
	uint8	   *bytes = palloc(size + 1);
	WarmFileHeader hdr;
	WarmFileHeader hdr2;
	char	   *problem;
	const char *out;
	uint8	   *again;
	size_t		again_len;

	memcpy(bytes, data, size);
	if (fix)
		fuzz_fix_file(bytes, size, false);
	fuzz_write(path, bytes, size);
	if (wc_check_file(path, &hdr, &problem) != WC_FILE_OK)
	{
		if (problem == NULL)
			fuzz_fail("a file is refused without a reason");
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "refused: %s\n", problem);
		return;
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "accepted: version %u, %llu runs\n", hdr.version,
				(unsigned long long) hdr.nruns);
	out = rewrite(path, &hdr);
	if (wc_check_file(out, &hdr2, &problem) != WC_FILE_OK)
		fuzz_fail("the writer made a file the check refuses: %s", problem);
	again = fuzz_read(out, &again_len);
	if (hdr.version == WC_DUMP_VERSION &&
		(again_len != size || memcmp(again, bytes, size) != 0))
		fuzz_fail("encode(decode(file)) is not the file: %zu bytes, then %zu",
				  size, again_len);
}

/*
 * The next run of a sequence, from 6 bytes: mostly in the file's order,
 * so that the writer sees valid runs, and now and then not.  op & 7:
 * 0 the same group, after a gap; 1 the next relation; 2 the next fork; 3
 * the next database; 4 the next rank; 5 any fields at all; 6 close to the
 * largest block number; 7 a start within the run before.  op & 8 reads
 * the gap as 32 bits, op & 16 the count.
 */
static void
next_run(const uint8 *b, WarmRun *run)
{
	static const uint32 ranks[] = {5, 4, 3, 2, 1, 0, WC_RANK_OS};
	uint32		gap = b[1] | (b[2] << 8);
	uint32		count = (b[3] | (b[4] << 8)) + 1;
	uint64		end = (uint64) run->start + run->count;
	uint8		op = b[0];
	int			r;

	if (op & 8)
		gap |= (uint32) b[5] << 24 | (uint32) b[4] << 16;
	if (op & 16)
		count = (uint32) b[3] << 24 | (uint32) b[5] << 8 | b[4];
	switch (op & 7)
	{
		case 1:
			run->relnumber++;
			end = 0;
			break;
		case 2:
			run->fork = (run->fork + 1) % (MAX_FORKNUM + 2);
			end = 0;
			break;
		case 3:
			run->db++;
			end = 0;
			break;
		case 4:
			for (r = 0; r < lengthof(ranks) - 1 && ranks[r] != run->rank; r++)
				;
			run->rank = ranks[Min(r + 1, lengthof(ranks) - 1)];
			end = 0;
			break;
		case 5:
			run->rank = b[5] < 7 ? ranks[b[5]] : b[5];
			run->db = b[1];
			run->relnumber = b[2];
			run->fork = b[3] & 7;
			end = 0;
			break;
		case 6:
			end = (uint64) MaxBlockNumber - (gap & 0xFFFF);
			gap = 0;
			break;
		case 7:
			end = run->start;
			gap = Min(gap, run->count);
			break;
	}
	run->start = (BlockNumber) (end + gap);
	run->count = count;
}

/* Whether run follows prev (NULL: none) as a valid file's runs do. */
static bool
valid_after(const WarmRun *prev, const WarmRun *run, bool first)
{
	uint64		end = (uint64) run->start + run->count;

	if ((run->rank > 5 && run->rank != WC_RANK_OS) || run->fork > MAX_FORKNUM ||
		run->count == 0 || end > (uint64) MaxBlockNumber + 1)
		return false;
	if (first)
		return true;
	if (wc_run_cmp(prev, run) >= 0)
		return false;
	return !(prev->rank == run->rank && prev->db == run->db &&
			 prev->spc == run->spc && prev->relnumber == run->relnumber &&
			 prev->fork == run->fork &&
			 run->start < (uint64) prev->start + prev->count);
}

static void
write_runs(const uint8 *data, size_t size)
{
	const char *path = fuzz_path("written");
	RunWriter	w;
	WarmRun		run;
	WarmRun		prev;
	WarmFileHeader hdr;
	WarmFileHeader hdr2;
	char	   *problem;
	bool		valid = true;
	uint64		blocks = 0;
	size_t		i;

	memset(&run, 0, sizeof(run));
	run.rank = 5;
	run.spc = 1663;
	wc_writer_begin(&w, path);
	for (i = 0; i + 6 <= size; i += 6)
	{
		prev = run;
		next_run(data + i, &run);
		valid = valid && valid_after(&prev, &run, i == 0);
		blocks += run.count;
		wc_writer_add(&w, &run);
	}
	wc_writer_finish(&w, 0, &hdr);
	if (valid && blocks > wc_saved_blocks_limit())
		valid = false;
	if (w.problem != NULL)
	{
		if (valid)
			fuzz_fail("the writer refuses valid runs: %s", w.problem);
		return;
	}
	if (wc_check_file(path, &hdr2, &problem) != WC_FILE_OK)
		fuzz_fail("the check refuses a file the writer made: %s", problem);
	if (valid && hdr2.nblocks != blocks)
		fuzz_fail("the writer kept %llu blocks of %llu valid ones",
				  (unsigned long long) hdr2.nblocks,
				  (unsigned long long) blocks);
}

static void
put_number(StringInfo buf, uint32 v)
{
	uint8		b;

	while (v >= 0x80)
	{
		b = (uint8) (v | 0x80);
		appendBinaryStringInfo(buf, (const char *) &b, 1);
		v >>= 7;
	}
	b = (uint8) v;
	appendBinaryStringInfo(buf, (const char *) &b, 1);
}

/*
 * The runs of next_run(), encoded here as version 3 describes it, a group
 * header where the key changes, where a run does not move on, or where
 * the op's bit 5 asks; then checked as a file.
 */
static void
encode_runs(const uint8 *data, size_t size)
{
	StringInfoData buf;
	WarmFileHeader hdr;
	WarmRun		run;
	WarmRun		prev;
	uint64		prev_end = 0;
	size_t		i;

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = WC_DUMP_MAGIC;
	hdr.version = WC_DUMP_VERSION;
	hdr.dumped_at = 1;
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (const char *) &hdr, sizeof(hdr));
	memset(&run, 0, sizeof(run));
	run.rank = 5;
	run.spc = 1663;
	for (i = 0; i + 6 <= size; i += 6)
	{
		prev = run;
		next_run(data + i, &run);
		if (run.count == 0 || (uint64) run.start + run.count - 1 > PG_UINT32_MAX)
		{
			run = prev;
			continue;
		}
		if (i == 0 || (data[i] & 32) || run.start < prev_end ||
			run.rank != prev.rank || run.db != prev.db || run.spc != prev.spc ||
			run.relnumber != prev.relnumber || run.fork != prev.fork)
		{
			uint8		tag = 0;

			appendBinaryStringInfo(&buf, (const char *) &tag, 1);
			put_number(&buf, run.rank);
			put_number(&buf, run.db);
			put_number(&buf, run.spc);
			put_number(&buf, run.relnumber);
			put_number(&buf, run.fork);
			prev_end = 0;
		}
		if (run.start - prev_end + 1 > PG_UINT32_MAX)
		{
			run = prev;
			continue;
		}
		put_number(&buf, (uint32) (run.start - prev_end + 1));
		put_number(&buf, run.count - 1);
		prev_end = (uint64) run.start + run.count;
		hdr.nruns++;
		hdr.nblocks += run.count;
	}
	memcpy(buf.data, &hdr, sizeof(hdr));
	check_file((const uint8 *) buf.data, buf.len, true);
}

int
LLVMFuzzerTestOneInput(const uint8 *data, size_t size)
{
	if (size < 1)
		return 0;
	if ((data[0] & 3) == 3)
		encode_runs(data + 1, size - 1);
	else if (data[0] & 1)
		write_runs(data + 1, size - 1);
	else
		check_file(data + 1, size - 1, (data[0] & 2) != 0);
	fuzz_reset();
	return 0;
}
