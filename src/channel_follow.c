/*-------------------------------------------------------------------------
 *
 * channel_follow.c
 *		Following the primary's publication on a standby: reading the
 *		table into the followed file, rebuilding it from the full
 *		publication and its deltas.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel_follow.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_auth_members.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "channel_follow.h"
#include "channel_key.h"
#include "channel_state.h"
#include "channel_table.h"
#include "compat.h"
#include "dumpfile.h"
#include "operation.h"
#include "pubdelta.h"
#include "pubrow.h"
#include "runcodec.h"

/*
 * The most deltas published after a full publication: a standby that
 * follows none of them applies them all, one after the other.
 */
#define WC_MAX_DELTAS		32

/* On error, no half-written file is left behind. */
static void
remove_followed_tmp(int code, Datum arg)
{
	(void) unlink(WC_FOLLOWED_TMP_FILE);
	(void) unlink(WC_FOLLOWED_PART_FILE);
}

/*
 * What reading the rows needs beyond the table: the key that signed them,
 * and whether a row was found not signed with it.
 */
typedef struct RowReader
{
	uint8		key[WC_KEY_BYTES];
	bool		not_signed;
} RowReader;

/*
 * Whether the row of chunk n and dump time dumped_at, row_len bytes at row,
 * is signed with the reader's key (pubrow.c); notes it if not.
 */
static bool
row_signed(RowReader *reader, int32 n, TimestampTz dumped_at, const char *row,
		   uint64 row_len, char **problem)
{
	if (wc_row_signed(reader->key, n, dumped_at, row, row_len, problem))
		return true;
	reader->not_signed = true;
	return false;
}

/*
 * Write the chunks the scan returns, from the first, to the scratch file;
 * false (with *problem) if they do not follow one another, come from
 * another dump, or do not add up to exactly the size the header in the
 * first announces, or if that is more than this server accepts.  A chunk's
 * size is known before it is read, so reading stops before the total
 * passes the announced size; one chunk is in memory at a time.
 */
static bool
write_chunks(SysScanDesc scan, TupleDesc desc, HeapTuple first,
			 RowReader *reader, char **problem)
{
	HeapTuple	tuple = first;
	ChunkRows	cr;
	int			fd;

	memset(&cr, 0, sizeof(cr));
	fd = OpenTransientFile(WC_FOLLOWED_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	for (; HeapTupleIsValid(tuple);
		 tuple = systable_getnext_ordered(scan, ForwardScanDirection))
	{
		int32		n;
		TimestampTz dumped_at;
		Datum		datum;
		uint64		row_len;
		uint64		len;
		bytea	   *data;

		CHECK_FOR_INTERRUPTS();
		if (!wc_channel_row_fields(tuple, desc, &n, &dumped_at, &datum))
		{
			*problem = psprintf("a row after chunk %d has a null field", cr.expect - 1);
			break;
		}

		/* The size once decompressed and brought in line, without reading it. */
		row_len = toast_raw_datum_size(datum) - VARHDRSZ;
		if (!wc_row_unsigned_len(n, row_len, &len, problem) ||
			!wc_chunk_row_key(&cr, n, dumped_at, len, problem))
			break;
		data = DatumGetByteaPP(datum);
		if (!row_signed(reader, n, dumped_at, VARDATA_ANY(data), row_len,
						problem) ||
			!wc_chunk_row_data(&cr, n, dumped_at, VARDATA_ANY(data), len, problem))
			break;

		errno = 0;
		if (write(fd, VARDATA_ANY(data), len) != len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
		}
		if ((Pointer) data != DatumGetPointer(datum))
			pfree(data);
	}
	if (*problem == NULL)
		(void) wc_chunk_rows_end(&cr, problem);
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", WC_FOLLOWED_TMP_FILE)));
	CloseTransientFile(fd);
	return *problem == NULL;
}

/*
 * The delta in the row tuple, the publication of dumped_at, checked as a
 * row (pubrow.c): a copy of its bytes, len of them, or NULL, with
 * *problem, if it cannot be used.
 */
static char *
delta_row(HeapTuple tuple, TupleDesc desc, int32 expect,
		  TimestampTz dumped_at, RowReader *reader, Size *len, char **problem)
{
	int32		n;
	TimestampTz row_dumped_at;
	Datum		datum;
	uint64		row_len;
	uint64		unsigned_len;
	bytea	   *data;
	WarmDeltaHeader dh;
	char	   *copy = NULL;

	if (!wc_channel_row_fields(tuple, desc, &n, &row_dumped_at, &datum))
	{
		*problem = psprintf("delta %d has a null field", -expect);
		return NULL;
	}
	row_len = toast_raw_datum_size(datum) - VARHDRSZ;
	if (!wc_row_unsigned_len(n, row_len, &unsigned_len, problem) ||
		!wc_delta_row_key(expect, n, row_dumped_at, dumped_at, unsigned_len,
						  problem))
		return NULL;
	*len = unsigned_len;
	data = DatumGetByteaPP(datum);
	if (row_signed(reader, n, row_dumped_at, VARDATA_ANY(data), row_len,
				   problem) &&
		wc_delta_row_data(expect, VARDATA_ANY(data), *len, row_dumped_at, &dh,
						  problem))
	{
		copy = palloc(*len);
		memcpy(copy, VARDATA_ANY(data), *len);
	}
	if ((Pointer) data != DatumGetPointer(datum))
		pfree(data);
	return copy;
}

/*
 * The dump time of the followed file, or 0 if there is none.  The shared
 * state forgets it at a restart: then the file's own header says it, so
 * that rows put back from before it are refused after a restart too.
 */
static TimestampTz
followed_dumped_at(void)
{
	TimestampTz at = wc_channel_followed_dumped_at();
	WarmFileHeader hdr;
	char	   *problem = NULL;

	if (at != 0 || access(WC_FOLLOWED_FILE, F_OK) != 0)
		return at;
	if (wc_check_file(WC_FOLLOWED_FILE, &hdr, &problem) != WC_FILE_OK)
		return 0;
	wc_channel_remember_followed(&hdr);
	return hdr.dumped_at;
}

/*
 * Make WC_FOLLOWED_TMP_FILE the latest publication, which is the full one
 * and ndeltas deltas after it: from the followed file, if it is one of
 * them, by the deltas after it; otherwise from the full publication's
 * chunks and every delta.  False, with *problem, if the rows cannot be
 * used.  *applied says how many deltas were applied, *whole whether the
 * full publication was read.
 */
static bool
rebuild_followed(ChannelTable *ct, RowReader *reader, int32 ndeltas,
				 int *applied, bool *whole, char **problem)
{
	TupleDesc	desc = RelationGetDescr(ct->rel);
	TimestampTz times[WC_MAX_DELTAS + 1];
	SysScanDesc scan;
	HeapTuple	tuple;
	int32		n;
	Datum		datum;
	int			from = -1;
	int			i;
	const char *cur = WC_FOLLOWED_FILE;
	WarmFileHeader hdr;
	char	  **datas;
	Size	   *lens;

	Assert(ndeltas >= 0 && ndeltas <= WC_MAX_DELTAS);	/* wc_channel_fetch_file() */
	*applied = 0;
	*whole = false;

	/* The publications' dump times, from the rows' column alone */
	scan = wc_channel_scan_chunks(ct, false, 0);
	tuple = systable_getnext_ordered(scan, ForwardScanDirection);
	if (!HeapTupleIsValid(tuple) ||
		!wc_channel_row_fields(tuple, desc, &n, &times[0], &datum) || n != 0)
		*problem = pstrdup("chunk 0 is missing");
	systable_endscan_ordered(scan);
	if (*problem != NULL)
		return false;
	scan = wc_channel_scan_chunks(ct, true, -1);
	for (i = 1; i <= ndeltas; i++)
	{
		tuple = systable_getnext_ordered(scan, BackwardScanDirection);
		if (!HeapTupleIsValid(tuple) ||
			!wc_channel_row_fields(tuple, desc, &n, &times[i], &datum) || n != -i)
		{
			*problem = psprintf("delta %d is missing", i);
			break;
		}
	}
	systable_endscan_ordered(scan);
	if (*problem != NULL)
		return false;

	/* Is the followed file one of them? */
	if (followed_dumped_at() != 0 &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		for (i = ndeltas - 1; i >= 0; i--)
			if (times[i] == followed_dumped_at())
			{
				from = i;
				break;
			}
	}
	if (from < 0)
	{
		/* The full publication, checked whole before a delta reads it */
		scan = wc_channel_scan_chunks(ct, false, 0);
		tuple = systable_getnext_ordered(scan, ForwardScanDirection);
		if (!write_chunks(scan, desc, tuple, reader, problem) ||
			(ndeltas > 0 &&
			 wc_check_file(WC_FOLLOWED_TMP_FILE, &hdr, problem) != WC_FILE_OK))
		{
			systable_endscan_ordered(scan);
			return false;
		}
		systable_endscan_ordered(scan);
		*whole = true;
		cur = WC_FOLLOWED_TMP_FILE;
		from = 0;
	}

	/*
	 * The deltas after it, applied in one pass (pubdelta.c): the file is
	 * read once and the result written once, however many there are.
	 */
	if (from == ndeltas)
		return true;
	datas = palloc0(sizeof(char *) * (ndeltas - from));
	lens = palloc0(sizeof(Size) * (ndeltas - from));
	scan = wc_channel_scan_chunks(ct, true, -(from + 1));
	for (i = from + 1; i <= ndeltas; i++)
	{
		CHECK_FOR_INTERRUPTS();
		tuple = systable_getnext_ordered(scan, BackwardScanDirection);
		if (!HeapTupleIsValid(tuple))
		{
			*problem = psprintf("delta %d is missing", i);
			break;
		}
		datas[i - from - 1] = delta_row(tuple, desc, -i, times[i], reader,
										&lens[i - from - 1], problem);
		if (datas[i - from - 1] == NULL)
			break;
	}
	systable_endscan_ordered(scan);
	if (*problem == NULL &&
		wc_delta_apply(cur, ndeltas - from, (const char *const *) datas, lens,
					   from + 1, WC_FOLLOWED_PART_FILE, problem))
	{
		if (rename(WC_FOLLOWED_PART_FILE, WC_FOLLOWED_TMP_FILE) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rename file \"%s\" to \"%s\": %m",
							WC_FOLLOWED_PART_FILE, WC_FOLLOWED_TMP_FILE)));
		*applied = ndeltas - from;
	}
	for (i = 0; i < ndeltas - from; i++)
		if (datas[i] != NULL)
			pfree(datas[i]);
	pfree(datas);
	pfree(lens);
	return *problem == NULL;
}

/*
 * Read the table into WC_FOLLOWED_FILE if it holds a publication not
 * followed yet, in the caller's transaction.  The first row in the key's
 * order is the latest publication's: its last delta, or else chunk 0 of a
 * full one.
 */
void
wc_channel_fetch_file(ChannelTable *ct, ChannelNotes *notes)
{
	SysScanDesc scan;
	HeapTuple	first;
	int32		n;
	TimestampTz dumped_at;
	Datum		data;
	WarmFileHeader hdr;
	char	   *problem = NULL;
	bool		usable;
	int			applied = 0;
	bool		whole = false;
	RowReader	reader;
	ChannelKeySource source;

	scan = systable_beginscan_ordered(ct->rel, ct->index, GetActiveSnapshot(),
									  0, NULL);
	first = systable_getnext_ordered(scan, ForwardScanDirection);
	if (!HeapTupleIsValid(first))
	{
		systable_endscan_ordered(scan);
		wc_channel_set_follow_state(WC_FOLLOW_NOTHING_PUBLISHED, NULL, false);
		return;
	}
	if (!wc_channel_row_fields(first, RelationGetDescr(ct->rel), &n, &dumped_at, &data))
	{
		systable_endscan_ordered(scan);
		wc_channel_set_follow_state(WC_FOLLOW_UNUSABLE, "its first row has a null field",
									false);
		return;
	}
	systable_endscan_ordered(scan);
	if (n <= 0 && dumped_at == followed_dumped_at() &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		/* Followed already: say so again if the last look could not tell. */
		wc_channel_set_follow_state(WC_FOLLOW_FOLLOWING, NULL, false);
		return;
	}
	if (n <= 0 && dumped_at < followed_dumped_at() &&
		access(WC_FOLLOWED_FILE, F_OK) == 0)
	{
		/*
		 * Older than what is followed: the primary's own rows put back, which
		 * verify, but are not its hot set any more.
		 */
		wc_channel_set_follow_state(WC_FOLLOW_UNUSABLE,
									"it is older than the publication followed", false);
		return;
	}
	if (notes != NULL && dumped_at == notes->refused_dumped_at)
	{
		/* Found unusable and said so already: not read again. */
		wc_channel_set_follow_state(WC_FOLLOW_UNUSABLE,
									"it is the publication found unusable before", false);
		return;
	}

	memset(&reader, 0, sizeof(reader));
	if (!wc_channel_key(reader.key, &source, &problem))
	{
		wc_channel_set_follow_state(WC_FOLLOW_NO_KEY, problem, false);
		return;
	}

	/* The first row: chunk 0, or the last of at most WC_MAX_DELTAS deltas */
	if (n > 0)
		problem = pstrdup("chunk 0 is missing");
	else if (n < -WC_MAX_DELTAS)
		problem = psprintf("it has more than %d deltas", WC_MAX_DELTAS);

	PG_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);
	{
		usable = problem == NULL &&
			rebuild_followed(ct, &reader, -n, &applied, &whole, &problem) &&
			wc_check_file(WC_FOLLOWED_TMP_FILE, &hdr, &problem) == WC_FILE_OK;
		if (usable && hdr.dumped_at != dumped_at)
		{
			problem = pstrdup("the file rebuilt is not of the latest publication's dump");
			usable = false;
		}
		if (usable)
			(void) durable_rename(WC_FOLLOWED_TMP_FILE, WC_FOLLOWED_FILE, ERROR);
		else
			remove_followed_tmp(0, (Datum) 0);
	}
	PG_END_ENSURE_ERROR_CLEANUP(remove_followed_tmp, (Datum) 0);

	if (!usable)
	{
		/* Each publication found unusable is said once. */
		if (notes != NULL)
			notes->refused_dumped_at = dumped_at;
		explicit_bzero(reader.key, sizeof(reader.key));
		wc_channel_set_follow_state(reader.not_signed ? WC_FOLLOW_NOT_SIGNED :
									WC_FOLLOW_UNUSABLE, problem, notes != NULL);
		return;
	}
	explicit_bzero(reader.key, sizeof(reader.key));
	if (whole)
		elog(DEBUG1, "followed the publication of %s: the full publication read; deltas applied: %d",
			 timestamptz_to_str(dumped_at), applied);
	else
		elog(DEBUG1, "followed the publication of %s: the followed file kept; deltas applied: %d",
			 timestamptz_to_str(dumped_at), applied);
	wc_channel_note_followed(&hdr);
	wc_channel_set_follow_state(WC_FOLLOW_FOLLOWING, NULL, false);
}
