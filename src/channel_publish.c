/*-------------------------------------------------------------------------
 *
 * channel_publish.c
 *		Publishing the dump file in the standby channel's table, on a
 *		primary: whole, or as a delta against the last publication.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/channel_publish.c
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

#include "channel_key.h"
#include "channel_publish.h"
#include "channel_state.h"
#include "channel_table.h"
#include "compat.h"
#include "dumpfile.h"
#include "pubdelta.h"
#include "pubrow.h"
#include "runcodec.h"

/*
 * The most deltas published after a full publication: a standby that
 * follows none of them applies them all, one after the other.
 */
#define WC_MAX_DELTAS		32

/*
 * What the table holds: the last full publication in chunks 0, 1, ...,
 * then the deltas published since, -1, -2, ..., each against the
 * publication before it.
 */
typedef struct PublishedRows
{
	bool		have_full;		/* chunk 0 is there */
	uint64		full_bytes;
	int32		ndeltas;		/* the most negative chunk, negated */
	int32		delta_rows;		/* rows of negative chunks */
	uint64		delta_bytes;
	TimestampTz latest_dumped_at;	/* of the last publication */
	bool		all_signed;		/* every row is signed with the key */
} PublishedRows;

/*
 * Look at the table's rows: their sizes, and whether each is signed with
 * key (not if a release before 1.6 wrote them, the key changed since, or
 * another role wrote them).  A row longer than any the primary writes is
 * not read: it is not signed.  A delta is added only on rows that all
 * verify, so that a standby never meets a chain it cannot follow.
 */
static void
published_rows(ChannelTable *ct, const uint8 *key, PublishedRows *pr)
{
	SysScanDesc scan;
	HeapTuple	tuple;
	TimestampTz full_dumped_at = 0;

	memset(pr, 0, sizeof(*pr));
	pr->all_signed = true;
	scan = systable_beginscan(ct->rel, InvalidOid, false, GetActiveSnapshot(),
							  0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		int32		n;
		TimestampTz dumped_at;
		Datum		data;
		uint64		len;

		CHECK_FOR_INTERRUPTS();
		if (!wc_channel_row_fields(tuple, RelationGetDescr(ct->rel), &n, &dumped_at, &data))
			continue;
		len = toast_raw_datum_size(data) - VARHDRSZ;
		if (len > WC_CHUNK_BYTES + WC_SIGNATURE_BYTES)
			pr->all_signed = false;
		else if (pr->all_signed)
		{
			bytea	   *row = DatumGetByteaPP(data);
			char	   *problem = NULL;

			pr->all_signed = wc_row_signed(key, n, dumped_at,
										   VARDATA_ANY(row), len, &problem);
			if ((Pointer) row != DatumGetPointer(data))
				pfree(row);
		}
		if (n >= 0)
		{
			pr->full_bytes += len;
			if (n == 0)
			{
				pr->have_full = true;
				full_dumped_at = dumped_at;
			}
		}
		else
		{
			pr->delta_rows++;
			pr->delta_bytes += len;
			if (n == PG_INT32_MIN)
				pr->ndeltas = PG_INT32_MAX;
			else if (-n > pr->ndeltas)
			{
				pr->ndeltas = -n;
				pr->latest_dumped_at = dumped_at;
			}
		}
	}
	systable_endscan(scan);
	if (pr->ndeltas == 0)
		pr->latest_dumped_at = full_dumped_at;
}

/*
 * Insert a row (chunk, dumped_at, data), into the heap and the key.  data
 * has room for the signature after its bytes: it is signed with key
 * (pubrow.c) and its size set to include it.
 */
static void
insert_row(ChannelTable *ct, IndexInfo *info, const uint8 *key, int32 chunk,
		   TimestampTz dumped_at, bytea *data, Size len)
{
	Datum		values[WC_NCOLS];
	bool		nulls[WC_NCOLS] = {false, false, false};
	HeapTuple	tuple;

	if (!wc_row_signature(key, chunk, dumped_at, VARDATA(data), len,
						  (uint8 *) VARDATA(data) + len))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	SET_VARSIZE(data, VARHDRSZ + len + WC_SIGNATURE_BYTES);
	values[WC_COL_CHUNK] = Int32GetDatum(chunk);
	values[WC_COL_DUMPED] = TimestampTzGetDatum(dumped_at);
	values[WC_COL_DATA] = PointerGetDatum(data);
	tuple = heap_form_tuple(RelationGetDescr(ct->rel), values, nulls);
	simple_heap_insert(ct->rel, tuple);
	(void) index_insert(ct->index, &values[WC_COL_CHUNK], &nulls[WC_COL_CHUNK],
						&tuple->t_self, ct->rel, UNIQUE_CHECK_YES, false,
						info);
	heap_freetuple(tuple);
}

/* Read want bytes at offset of the open file fd, named path; all or error. */
static ssize_t
read_exactly(int fd, char *buf, size_t want, off_t offset, const char *path)
{
	ssize_t		len = pg_pread(fd, buf, want, offset);

	if (len < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	if (len != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read file \"%s\": read %zd of %zu bytes",
						path, len, want)));
	return len;
}

/*
 * Copy size bytes of the open file fd (the dump file, which a dump may
 * replace meanwhile) to the scratch file WC_PUBLISHED_TMP_FILE: what is
 * published is read from that copy, and it becomes WC_PUBLISHED_FILE once
 * the publication is committed.
 */
static void
copy_to_scratch(int fd, uint64 size)
{
	char	   *buf = palloc(WC_CHUNK_BYTES);
	int			out;
	uint64		done = 0;

	out = OpenTransientFile(WC_PUBLISHED_TMP_FILE,
							O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (out < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	while (done < size)
	{
		size_t		want = Min(size - done, WC_CHUNK_BYTES);
		ssize_t		len;

		CHECK_FOR_INTERRUPTS();
		len = read_exactly(fd, buf, want, (off_t) done, WC_DUMP_FILE);
		errno = 0;
		if (write(out, buf, len) != len)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
		}
		done += len;
	}
	if (pg_fsync(out) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	CloseTransientFile(out);
	pfree(buf);
}

/*
 * The delta from the last publication to the file in WC_PUBLISHED_TMP_FILE,
 * or NULL if the whole file is to be published: the table holds no full
 * publication signed with key, or one with WC_MAX_DELTAS deltas or deltas of half its size
 * already; this server's copy of the last publication is not the one in
 * the table (another server published it, or this one stopped before it
 * renamed the copy); or the delta would not fit one row.
 */
static bytea *
delta_to_publish(ChannelTable *ct, const uint8 *key, PublishedRows *pr)
{
	WarmFileHeader hdr;
	char	   *problem = NULL;
	uint64		budget;

	published_rows(ct, key, pr);
	if (!pr->have_full || !pr->all_signed || pr->ndeltas >= WC_MAX_DELTAS ||
		pr->delta_rows != pr->ndeltas ||
		pr->delta_bytes >= pr->full_bytes / 2)
		return NULL;
	if (wc_check_file(WC_PUBLISHED_FILE, &hdr, &problem) != WC_FILE_OK ||
		hdr.dumped_at != pr->latest_dumped_at)
		return NULL;
	budget = Min(pr->full_bytes / 2 - pr->delta_bytes,
				 WC_CHUNK_BYTES - sizeof(WarmDeltaHeader));
	return wc_delta_build(WC_PUBLISHED_FILE, WC_PUBLISHED_TMP_FILE, budget);
}

/*
 * Publish the dump file, in the caller's transaction: as a delta against
 * the last publication when one applies (a row inserted), otherwise whole
 * (every row deleted, then the file's chunks inserted into the heap, which
 * moves them out of line into the TOAST table, and into the primary key,
 * as a catalog insert does).  True if WC_PUBLISHED_TMP_FILE holds what was
 * published, to be renamed to WC_PUBLISHED_FILE once committed.
 */
bool
wc_channel_publish_file(ChannelTable *ct)
{
	int			fd;
	struct stat st;
	WarmFileHeader hdr;
	uint64		size = 0;
	uint64		min_size = 0;
	char	   *problem = NULL;
	SysScanDesc scan;
	HeapTuple	tuple;
	IndexInfo  *info;
	bytea	   *chunk;
	bytea	   *delta;
	PublishedRows pr;
	int32		n = 0;
	uint64		bytes = 0;
	uint8		key[WC_KEY_BYTES];
	ChannelKeySource source;

	fd = OpenTransientFile(WC_DUMP_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_DUMP_FILE)));
	}
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", WC_DUMP_FILE)));
	if (read(fd, &hdr, sizeof(hdr)) != sizeof(hdr))
		problem = psprintf("file is truncated: %lld bytes, shorter than its header",
						   (long long) st.st_size);
	else if ((size = wc_announced_size(&hdr, &min_size, &problem)) != 0 &&
			 ((uint64) st.st_size < min_size || (uint64) st.st_size > size))
		problem = psprintf("it has %lld bytes, its header announces %s",
						   (long long) st.st_size, wc_size_words(min_size, size));
	if (problem != NULL)
	{
		/* A dump this server wrote never gets here. */
		ereport(LOG,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("dump file \"%s\" is not published: %s",
						WC_DUMP_FILE, problem),
				 errdetail("Standbys keep following the last publication.")));
		CloseTransientFile(fd);
		return false;
	}
	if (!wc_channel_key(key, &source, &problem))
	{
		ereport(LOG,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("the hot set is not published: %s", problem),
				 errdetail("The key file, when it exists, is the only key that signs publications. Standbys keep following the last publication."),
				 errhint("Write 64 hexadecimal digits into \"%s\", owned by the server's user and readable by it alone, or remove the file.",
						 WC_KEY_FILE)));
		CloseTransientFile(fd);
		return false;
	}
	size = (uint64) st.st_size; /* within what the header allows */
	copy_to_scratch(fd, size);
	CloseTransientFile(fd);

	info = BuildIndexInfo(ct->index);
	delta = delta_to_publish(ct, key, &pr);
	if (delta != NULL)
	{
		Size		len = VARSIZE(delta) - VARHDRSZ;
		bytea	   *row = palloc(VARHDRSZ + len + WC_SIGNATURE_BYTES);

		memcpy(VARDATA(row), VARDATA(delta), len);
		insert_row(ct, info, key, -(pr.ndeltas + 1), hdr.dumped_at, row, len);
		explicit_bzero(key, sizeof(key));
		elog(DEBUG1, "published the changes since the last publication in %zu bytes, delta %d of the full publication of %llu bytes",
			 len, pr.ndeltas + 1, (unsigned long long) pr.full_bytes);
		pfree(row);
		pfree(delta);
		return true;
	}

	scan = systable_beginscan(ct->rel, InvalidOid, false, GetActiveSnapshot(),
							  0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		CHECK_FOR_INTERRUPTS();
		simple_heap_delete(ct->rel, &tuple->t_self);
	}
	systable_endscan(scan);

	fd = OpenTransientFile(WC_PUBLISHED_TMP_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", WC_PUBLISHED_TMP_FILE)));
	chunk = palloc(VARHDRSZ + WC_CHUNK_BYTES + WC_SIGNATURE_BYTES);
	while (bytes < size)
	{
		size_t		want = Min(size - bytes, WC_CHUNK_BYTES);
		ssize_t		len;

		CHECK_FOR_INTERRUPTS();
		len = read_exactly(fd, VARDATA(chunk), want, (off_t) bytes,
						   WC_PUBLISHED_TMP_FILE);
		insert_row(ct, info, key, n, hdr.dumped_at, chunk, len);
		bytes += len;
		n++;
	}
	CloseTransientFile(fd);
	pfree(chunk);
	explicit_bzero(key, sizeof(key));
	elog(DEBUG1, "published %llu bytes of the dump file in %d rows",
		 (unsigned long long) bytes, n);
	return true;
}

/* At the publish worker's exit: no scratch copy is left behind. */
void
wc_remove_published_tmp(int code, Datum arg)
{
	(void) unlink(WC_PUBLISHED_TMP_FILE);
}
