/*-------------------------------------------------------------------------
 *
 * pubrow.c
 *		What a row of the channel's table may hold.
 *
 * A standby reads the rows of warmcache_published (channel_follow.c): a
 * whole publication's chunks 0, 1, ..., and the deltas -1, -2, ... after
 * it.  What each row holds is checked here, apart from reading the table,
 * so that the checks can be run without a server (test/fuzz): the row's key,
 * dump time and size before its data is read (a size is known before the
 * value is detoasted), then its data.  The header in chunk 0, and the one
 * each delta announces, bound everything read or written after it.
 *
 * Before all of that, a row must be signed with the channel's key: its
 * data ends with an HMAC over what it says (wc_row_signature()).  A role
 * that can write the table cannot make a row that verifies, so what the
 * standby follows is what its primary wrote, whoever could write the
 * table when.  The signature binds the row's chunk number and dump time,
 * so a row cannot be moved to another place or publication either; a whole
 * publication of this primary put back after a later one is refused by its
 * age (channel_follow.c).
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/pubrow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hmac.h"
#include "port/pg_bswap.h"

#include "dumpfile.h"
#include "pubdelta.h"
#include "pubrow.h"
#include "runcodec.h"

/*
 * What a signature is made over before the row's data: this label, then
 * the chunk number and the dump time in network byte order.
 */
#define WC_SIGNATURE_LABEL	"pg_warmcache row 1"

/*
 * The signature of a row of chunk number chunk and dump time dumped_at
 * whose data, before the signature, is the len bytes at data; into
 * signature, WC_SIGNATURE_BYTES of them.  False if the hash failed (out of
 * memory).
 */
bool
wc_row_signature(const uint8 *key, int32 chunk, TimestampTz dumped_at,
				 const char *data, uint64 len, uint8 *signature)
{
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);
	uint32		chunk_be = pg_hton32((uint32) chunk);
	uint64		dumped_be = pg_hton64((uint64) dumped_at);
	bool		ok;

	if (ctx == NULL)
		return false;
	ok = pg_hmac_init(ctx, key, WC_KEY_BYTES) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) WC_SIGNATURE_LABEL,
					   strlen(WC_SIGNATURE_LABEL)) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) &chunk_be, sizeof(chunk_be)) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) &dumped_be, sizeof(dumped_be)) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) data, len) == 0 &&
		pg_hmac_final(ctx, signature, WC_SIGNATURE_BYTES) == 0;
	pg_hmac_free(ctx);
	return ok;
}

/*
 * The size of a row's data without its signature, from the row's size,
 * before the row is read.  False, with *problem, if the row is too small
 * to hold a signature.
 */
bool
wc_row_unsigned_len(int32 chunk, uint64 row_len, uint64 *len, char **problem)
{
	if (row_len < WC_SIGNATURE_BYTES)
	{
		*problem = psprintf("the row of chunk %d holds %llu bytes, too few for a signature",
							chunk, (unsigned long long) row_len);
		return false;
	}
	*len = row_len - WC_SIGNATURE_BYTES;
	return true;
}

/*
 * Whether the row of chunk number chunk and dump time dumped_at, row_len
 * bytes at row (its data, then its signature), is signed with key.  False,
 * with *problem, if not.  The comparison takes the same time wherever the
 * signatures differ.
 */
bool
wc_row_signed(const uint8 *key, int32 chunk, TimestampTz dumped_at,
			  const char *row, uint64 row_len, char **problem)
{
	uint8		expected[WC_SIGNATURE_BYTES];
	const uint8 *found;
	uint64		len;
	uint8		diff = 0;
	int			i;

	if (!wc_row_unsigned_len(chunk, row_len, &len, problem))
		return false;
	if (!wc_row_signature(key, chunk, dumped_at, row, len, expected))
	{
		*problem = pstrdup("out of memory while checking a row's signature");
		return false;
	}
	found = (const uint8 *) row + len;
	for (i = 0; i < WC_SIGNATURE_BYTES; i++)
		diff |= expected[i] ^ found[i];
	if (diff != 0)
	{
		if (chunk < 0)
			*problem = psprintf("delta %d is not signed with this cluster's key", -chunk);
		else
			*problem = psprintf("chunk %d is not signed with this cluster's key", chunk);
		return false;
	}
	return true;
}

/* A size or a range of sizes in bytes, in words for a log line. */
char *
wc_size_words(uint64 min_size, uint64 max_size)
{
	if (min_size == max_size)
		return psprintf("%llu bytes", (unsigned long long) max_size);
	return psprintf("%llu to %llu bytes", (unsigned long long) min_size,
					(unsigned long long) max_size);
}

/*
 * The size of a dump file whose header is hdr, if this server accepts it:
 * between *min_size and the size returned (exactly that up to version 2,
 * whose runs take 28 bytes each; 2 to WC_MAX_ENCODED_RUN bytes a run from
 * version 3 on).  Otherwise 0, with *problem.  The header's counts bound
 * everything that is read or written afterwards, so they are checked
 * first: a file may name at most wc_saved_blocks_limit() blocks, in as
 * many runs at most.
 */
uint64
wc_announced_size(const WarmFileHeader *hdr, uint64 *min_size, char **problem)
{
	uint64		limit = wc_saved_blocks_limit();
	uint64		run_max = hdr->version < 3 ? sizeof(WarmRun) : WC_MAX_ENCODED_RUN;
	uint64		run_min = hdr->version < 3 ? sizeof(WarmRun) : 2;

	if (hdr->magic != WC_DUMP_MAGIC)
	{
		*problem = psprintf("not a pg_warmcache dump file (bad magic number %08X)",
							hdr->magic);
		return 0;
	}
	if (hdr->nruns > limit || hdr->nblocks > limit)
	{
		char	   *size;

		if (hdr->nruns <= (PG_UINT64_MAX - sizeof(WarmFileHeader)) / run_max)
			size = wc_size_words(sizeof(WarmFileHeader) + hdr->nruns * run_min,
								 sizeof(WarmFileHeader) + hdr->nruns * run_max);
		else
			size = "over 2^64 bytes";
		*problem = psprintf("its header announces %llu blocks in %llu runs, a file of %s; this server accepts at most %llu blocks, a file of %s",
							(unsigned long long) hdr->nblocks,
							(unsigned long long) hdr->nruns, size,
							(unsigned long long) limit,
							wc_size_words(sizeof(WarmFileHeader) + limit * run_min,
										  sizeof(WarmFileHeader) + limit * run_max));
		return 0;
	}
	*min_size = sizeof(WarmFileHeader) + hdr->nruns * run_min;
	return sizeof(WarmFileHeader) + hdr->nruns * run_max;
}

/*
 * Chunk n of a whole publication, dumped at dumped_at and of len bytes,
 * before its data is read: the next chunk, of chunk 0's dump, and within
 * the size chunk 0's header announces.  False, with *problem, if not.
 */
bool
wc_chunk_row_key(ChunkRows *cr, int32 n, TimestampTz dumped_at, uint64 len,
				 char **problem)
{
	if (n != cr->expect)
		*problem = psprintf("chunk %d is missing", cr->expect);
	else if (n != 0 && dumped_at != cr->first_dumped_at)
		*problem = psprintf("chunk %d is from another dump than chunk 0", n);
	else if (n == 0 && len < sizeof(WarmFileHeader))
		*problem = psprintf("chunk 0 holds %llu bytes, less than a dump file's header",
							(unsigned long long) len);
	else if (n > 0 && cr->bytes + len > cr->size)
		*problem = psprintf("the rows hold more than the %llu bytes the header announces",
							(unsigned long long) cr->size);
	else if (len > WC_CHUNK_BYTES)
		*problem = psprintf("chunk %d holds %llu bytes, more than %d", n,
							(unsigned long long) len, WC_CHUNK_BYTES);
	else
	{
		if (n == 0)
			cr->first_dumped_at = dumped_at;
		cr->expect++;
		return true;
	}
	return false;
}

/*
 * The data of chunk n, len bytes, after wc_chunk_row_key(): chunk 0's
 * header announces the file's size, and must be of the rows' dump.
 */
bool
wc_chunk_row_data(ChunkRows *cr, int32 n, TimestampTz dumped_at,
				  const char *data, uint64 len, char **problem)
{
	if (n == 0)
	{
		WarmFileHeader hdr;

		memcpy(&hdr, data, sizeof(hdr));
		cr->size = wc_announced_size(&hdr, &cr->min_size, problem);
		if (cr->size == 0)
			return false;
		if (hdr.dumped_at != dumped_at)
		{
			*problem = psprintf("the rows' dump time is not the file's");
			return false;
		}
		if (len > cr->size)
		{
			*problem = psprintf("the rows hold more than the %llu bytes the header announces",
								(unsigned long long) cr->size);
			return false;
		}
	}
	cr->bytes += len;
	return true;
}

/* The chunks read add up to a size chunk 0's header allows. */
bool
wc_chunk_rows_end(const ChunkRows *cr, char **problem)
{
	if (cr->bytes < cr->min_size || cr->bytes > cr->size)
	{
		*problem = psprintf("the rows hold %llu bytes, the header announces %s",
							(unsigned long long) cr->bytes,
							wc_size_words(cr->min_size, cr->size));
		return false;
	}
	return true;
}

/*
 * Delta -expect, found in a row of chunk n dumped at row_dumped_at and of
 * len bytes, before its data is read: it is the one expected, of the
 * publication of dumped_at, and one row at most.
 */
bool
wc_delta_row_key(int32 expect, int32 n, TimestampTz row_dumped_at,
				 TimestampTz dumped_at, uint64 len, char **problem)
{
	if (n != expect || row_dumped_at != dumped_at)
	{
		*problem = psprintf("delta %d is missing", -expect);
		return false;
	}
	if (len > WC_CHUNK_BYTES)
	{
		*problem = psprintf("delta %d holds %llu bytes, more than %d", -expect,
							(unsigned long long) len, WC_CHUNK_BYTES);
		return false;
	}
	return true;
}

/*
 * The data of delta -expect, len bytes: its header (wc_delta_header()),
 * and the file it announces, which this server must accept and which must
 * be of the row's dump.  The header goes to *dh.
 */
bool
wc_delta_row_data(int32 expect, const char *data, uint64 len,
				  TimestampTz row_dumped_at, WarmDeltaHeader *dh,
				  char **problem)
{
	uint64		min_size;

	if (!wc_delta_header(data, len, dh, problem) ||
		wc_announced_size(&dh->result, &min_size, problem) == 0)
		return false;
	if (dh->result.dumped_at != row_dumped_at)
	{
		*problem = psprintf("delta %d is not of its row's dump", -expect);
		return false;
	}
	return true;
}
