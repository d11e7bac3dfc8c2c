/*-------------------------------------------------------------------------
 *
 * fuzz_delta.c
 *		libFuzzer harness: applying publication deltas (pubdelta.c).
 *
 * An input is a flags byte, a 4-byte length and a dump file, then deltas,
 * each a 2-byte length and its bytes.  The harness gives the file this
 * system's identity and its CRC, and each delta its kind and CRC; with
 * flag bit 0 it also chains them (each delta applies to the dump time the
 * one before announces), so that the merges are reached.  A file the check
 * refuses is not a base (the standby applies deltas only to a checked
 * file).  Properties: applying the deltas in one pass succeeds exactly
 * when applying them one at a time does, and makes the same bytes; what
 * it makes is the file the last delta announces, header and CRC, and the
 * check accepts it.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_delta.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "dumpfile.h"
#include "fuzz_support.h"
#include "pubdelta.h"

int			LLVMFuzzerTestOneInput(const uint8 *data, size_t size);

#define MAX_DELTAS	8

/* Give the delta its kind and CRC, and, if asked, chain it to prev_at. */
static void
fix_delta(char *bytes, size_t len, bool chain, TimestampTz prev_at)
{
	WarmDeltaHeader dh;
	pg_crc32c	crc;
	uint64		runs = len - sizeof(dh);

	memcpy(&dh, bytes, sizeof(dh));
	dh.magic = WC_DELTA_MAGIC;
	dh.version = WC_DELTA_VERSION;
	if (dh.removed_bytes > runs)
		dh.removed_bytes %= runs + 1;
	dh.added_bytes = runs - dh.removed_bytes;
	dh.result.magic = WC_DUMP_MAGIC;
	dh.result.version = WC_DUMP_VERSION;
	dh.result.pg_major = PG_VERSION_NUM / 10000;
	dh.result.blcksz = BLCKSZ;
	dh.result.sysid = FUZZ_SYSID;
	if (chain)
		dh.base_dumped_at = prev_at;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, bytes + sizeof(dh), runs);
	COMP_CRC32C(crc, &dh, offsetof(WarmDeltaHeader, crc));
	FIN_CRC32C(crc);
	dh.crc = crc;
	memcpy(bytes, &dh, sizeof(dh));
}

int
LLVMFuzzerTestOneInput(const uint8 *data, size_t size)
{
	const char *base = fuzz_path("base");
	const char *out = fuzz_path("out");
	const char *step[2] = {fuzz_path("step0"), fuzz_path("step1")};
	uint8		flags;
	size_t		base_len;
	uint8	   *file;
	char	   *deltas[MAX_DELTAS];
	Size		lens[MAX_DELTAS];
	int			n = 0;
	size_t		at;
	WarmFileHeader hdr;
	char	   *problem = NULL;
	char	   *step_problem = NULL;
	bool		ok;
	bool		step_ok = true;
	const char *cur;
	int			i;

	if (size < 5)
		return 0;
	flags = data[0];
	memcpy(&base_len, data + 1, 4);
	base_len = Min(base_len & 0xFFFFFFFF, size - 5);
	if (base_len < sizeof(WarmFileHeader))
		return 0;
	file = palloc(base_len);
	memcpy(file, data + 5, base_len);
	fuzz_fix_file(file, base_len, true);
	fuzz_write(base, file, base_len);
	if (wc_check_file(base, &hdr, &problem) != WC_FILE_OK)
	{
		fuzz_reset();
		return 0;
	}
	for (at = 5 + base_len; at + 2 <= size && n < MAX_DELTAS;)
	{
		size_t		len = data[at] | (data[at + 1] << 8);

		at += 2;
		len = Min(len, size - at);
		if (len < sizeof(WarmDeltaHeader))
			break;
		/* Each delta alone in memory: a read past it is ASan's */
		deltas[n] = palloc(len);
		memcpy(deltas[n], data + at, len);
		fix_delta(deltas[n], len, (flags & 1) != 0,
				  n == 0 ? hdr.dumped_at :
				  ((WarmDeltaHeader *) deltas[n - 1])->result.dumped_at);
		lens[n] = len;
		n++;
		at += len;
	}
	if (n == 0)
	{
		fuzz_reset();
		return 0;
	}

	problem = NULL;
	ok = wc_delta_apply(base, n, (const char *const *) deltas, lens, 1, out,
						&problem);
	if (!ok && problem == NULL)
		fuzz_fail("deltas are refused without a reason");
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "%d deltas: %s\n", n, ok ? "applied" : problem);

	/* One at a time, as the standby did before */
	cur = base;
	for (i = 0; i < n && step_ok; i++)
	{
		step_ok = wc_delta_apply(cur, 1, (const char *const *) &deltas[i],
								 &lens[i], i + 1, step[i % 2], &step_problem);
		cur = step[i % 2];
	}
	if (ok != step_ok)
		fuzz_fail("in one pass the deltas %s (%s), one at a time they %s (%s)",
				  ok ? "apply" : "do not apply", problem ? problem : "",
				  step_ok ? "apply" : "do not apply",
				  step_problem ? step_problem : "");
	if (ok)
	{
		size_t		len1;
		size_t		len2;
		uint8	   *one = fuzz_read(out, &len1);
		uint8	   *steps = fuzz_read(cur, &len2);
		WarmDeltaHeader *last = (WarmDeltaHeader *) deltas[n - 1];

		if (len1 != len2 || memcmp(one, steps, len1) != 0)
			fuzz_fail("one pass and one at a time make different files");
		if (len1 < sizeof(WarmFileHeader) ||
			memcmp(one, &last->result, sizeof(WarmFileHeader)) != 0)
			fuzz_fail("the file made is not the one the last delta announces");
		problem = NULL;
		if (wc_check_file(out, &hdr, &problem) != WC_FILE_OK)
			fuzz_fail("the check refuses the file the deltas make: %s", problem);
	}
	else if (access(out, F_OK) == 0)
		fuzz_fail("deltas that do not apply leave their file");
	unlink(out);
	fuzz_reset();
	return 0;
}
