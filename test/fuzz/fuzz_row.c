/*-------------------------------------------------------------------------
 *
 * fuzz_row.c
 *		libFuzzer harness: the rows of the channel's table, as a standby
 *		reads them (pubrow.c).
 *
 * An input is a list of rows, each a 2-byte length, a chunk number (1
 * byte, signed) and a dump time (1 byte), then its data: a publication's
 * chunks 0, 1, ... go through the checks of a whole publication's rows,
 * and the file they add up to, if the rows are accepted, through the dump
 * file's check (the harness gives chunk 0's header this system's identity
 * and the right CRC when the input's first byte asks); negative chunks go
 * through the checks of a delta's row.  A row the checks accept must never
 * make anything read past its data, and an accepted file's size must be
 * one its header allows.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		test/fuzz/fuzz_row.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "dumpfile.h"
#include "fuzz_support.h"
#include "pubdelta.h"
#include "pubrow.h"

int			LLVMFuzzerTestOneInput(const uint8 *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8 *data, size_t size)
{
	ChunkRows	cr;
	StringInfoData file;
	char	   *problem = NULL;
	bool		fix;
	bool		chunks_ok = true;
	int32		delta = 0;
	size_t		at = 1;

	if (size < 1)
		return 0;
	fix = (data[0] & 1) != 0;
	memset(&cr, 0, sizeof(cr));
	initStringInfo(&file);
	while (at + 4 <= size)
	{
		size_t		len = data[at] | (data[at + 1] << 8);
		int32		n = (int8) data[at + 2];
		TimestampTz dumped_at = data[at + 3];
		char	   *row;

		at += 4;
		len = Min(len, size - at);
		/* A row's value, alone in memory: a read past it is ASan's */
		row = palloc(len);
		memcpy(row, data + at, len);
		at += len;
		if (n >= 0 && chunks_ok && delta == 0)
		{
			if (n == 0 && fix && len >= sizeof(WarmFileHeader))
			{
				WarmFileHeader hdr;

				memcpy(&hdr, row, sizeof(hdr));
				hdr.dumped_at = dumped_at;
				memcpy(row, &hdr, sizeof(hdr));
			}
			problem = NULL;
			chunks_ok = wc_chunk_row_key(&cr, n, dumped_at, len, &problem) &&
				wc_chunk_row_data(&cr, n, dumped_at, row, len, &problem);
			if (!chunks_ok && problem == NULL)
				fuzz_fail("a chunk is refused without a reason");
			if (chunks_ok)
				appendBinaryStringInfo(&file, row, len);
			if (chunks_ok && cr.bytes > cr.size)
				fuzz_fail("the chunks hold %llu bytes, past the %llu announced",
						  (unsigned long long) cr.bytes,
						  (unsigned long long) cr.size);
		}
		else if (n < 0)
		{
			WarmDeltaHeader dh;

			delta++;
			problem = NULL;
			if (wc_delta_row_key(-delta, n, dumped_at, dumped_at, len, &problem) &&
				wc_delta_row_data(-delta, row, len, dumped_at, &dh, &problem))
			{
				if (dh.removed_bytes + dh.added_bytes + sizeof(dh) != len)
					fuzz_fail("a delta's sizes do not add up to its row's");
			}
			else if (problem == NULL)
				fuzz_fail("a delta is refused without a reason");
		}
	}

	/* The file the chunks make, as a standby checks it. */
	problem = NULL;
	if (cr.expect > 0 && chunks_ok && wc_chunk_rows_end(&cr, &problem))
	{
		const char *path = fuzz_path("chunks");
		WarmFileHeader hdr;

		if (file.len < (int) sizeof(WarmFileHeader))
			fuzz_fail("the chunks make %d bytes, less than a header", file.len);
		if (fix)
			fuzz_fix_file((uint8 *) file.data, file.len, false);
		fuzz_write(path, (uint8 *) file.data, file.len);
		problem = NULL;
		if (wc_check_file(path, &hdr, &problem) != WC_FILE_OK && problem == NULL)
			fuzz_fail("a file is refused without a reason");
	}
	fuzz_reset();
	return 0;
}
