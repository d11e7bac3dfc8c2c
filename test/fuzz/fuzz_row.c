/*-------------------------------------------------------------------------
 *
 * fuzz_row.c
 *		libFuzzer harness: the rows of the channel's table, as a standby
 *		reads them (pubrow.c).
 *
 * An input is a list of rows, each a 2-byte length, a chunk number (1
 * byte, signed) and a dump time (1 byte), then its data, which ends with
 * the row's signature (the harness signs each row with its own key when
 * the input's first byte asks, after fixing what it fixes): a publication's
 * chunks 0, 1, ... go through the checks of a whole publication's rows,
 * and the file they add up to, if the rows are accepted, through the dump
 * file's check (the harness gives chunk 0's header this system's identity
 * and the right CRC when the input's first byte asks); negative chunks go
 * through the checks of a delta's row.  A row the checks accept must never
 * make anything read past its data, and an accepted file's size must be
 * one its header allows.  A row whose signature verifies must stop
 * verifying when any one byte of it, or its chunk number or dump time,
 * changes.
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

/* The harness's channel key. */
static const uint8 fuzz_key[WC_KEY_BYTES] = {
	0x70, 0x67, 0x5f, 0x77, 0x61, 0x72, 0x6d, 0x63,
	0x61, 0x63, 0x68, 0x65, 0x20, 0x66, 0x75, 0x7a,
	0x7a, 0x20, 0x6b, 0x65, 0x79, 0x00, 0x01, 0x02,
	0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a
};

/*
 * Check the signature of the row, row_len bytes, and that one that
 * verifies stops verifying when a byte, the chunk or the dump time
 * changes (the byte is picked by the row's own contents).
 */
static bool
row_signed(int32 n, TimestampTz dumped_at, char *row, uint64 row_len,
		   char **problem)
{
	char	   *ignored = NULL;
	size_t		at;

	if (!wc_row_signed(fuzz_key, n, dumped_at, row, row_len, problem))
		return false;
	if (wc_row_signed(fuzz_key, n + 1, dumped_at, row, row_len, &ignored) ||
		wc_row_signed(fuzz_key, n, dumped_at + 1, row, row_len, &ignored))
		fuzz_fail("a row's signature verifies for another chunk or dump");
	at = (size_t) ((uint8) row[0]) % row_len;
	row[at] ^= 1;
	if (wc_row_signed(fuzz_key, n, dumped_at, row, row_len, &ignored))
		fuzz_fail("a row's signature verifies with byte %zu changed", at);
	row[at] ^= 1;
	return true;
}

/* Sign the row in place: its last WC_SIGNATURE_BYTES are the signature. */
static void
sign_row(int32 n, TimestampTz dumped_at, char *row, uint64 row_len)
{
	if (row_len < WC_SIGNATURE_BYTES)
		return;
	if (!wc_row_signature(fuzz_key, n, dumped_at, row,
						  row_len - WC_SIGNATURE_BYTES,
						  (uint8 *) row + row_len - WC_SIGNATURE_BYTES))
		fuzz_fail("a row could not be signed");
}

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
		uint64		unsigned_len = 0;

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
			if (fix)
				sign_row(n, dumped_at, row, len);
			problem = NULL;
			chunks_ok = wc_row_unsigned_len(n, len, &unsigned_len, &problem) &&
				wc_chunk_row_key(&cr, n, dumped_at, unsigned_len, &problem) &&
				row_signed(n, dumped_at, row, len, &problem) &&
				wc_chunk_row_data(&cr, n, dumped_at, row, unsigned_len, &problem);
			if (!chunks_ok && problem == NULL)
				fuzz_fail("a chunk is refused without a reason");
			if (chunks_ok)
				appendBinaryStringInfo(&file, row, unsigned_len);
			if (chunks_ok && cr.bytes > cr.size)
				fuzz_fail("the chunks hold %llu bytes, past the %llu announced",
						  (unsigned long long) cr.bytes,
						  (unsigned long long) cr.size);
		}
		else if (n < 0)
		{
			WarmDeltaHeader dh;

			delta++;
			if (fix)
				sign_row(n, dumped_at, row, len);
			problem = NULL;
			if (wc_row_unsigned_len(n, len, &unsigned_len, &problem) &&
				wc_delta_row_key(-delta, n, dumped_at, dumped_at, unsigned_len,
								 &problem) &&
				row_signed(n, dumped_at, row, len, &problem) &&
				wc_delta_row_data(-delta, row, unsigned_len, dumped_at, &dh,
								  &problem))
			{
				if (dh.removed_bytes + dh.added_bytes + sizeof(dh) != unsigned_len)
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
