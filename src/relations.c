/*-------------------------------------------------------------------------
 *
 * relations.c
 *		For warmcache_relations() (sql.c): per relation fork of the current
 *		database and of the shared catalogs, the blocks the saved set holds
 *		per rank, those in shared buffers and those in the OS page cache,
 *		and the fork's size.
 *
 * Three passes fill one hash table keyed by the fork's file: the saved
 * file run by run, the buffer headers one by one (each under its header
 * spinlock for a moment, as a dump reads them), and the database's
 * relation files, as the dump's walk of the OS cache reads them (what the
 * page cache holds).  Then the entries' files are sized, and one heap scan
 * of pg_class names the relation of each.  No relation is opened or
 * locked: a census of 20,000 relations would take 20,000 locks, and a DROP
 * would wait behind it.  A file dropped meanwhile counts as it was found.
 *
 * Memory is an entry per relation fork that the saved set, shared buffers
 * or the OS cache hold a block of, whatever the number of files or their
 * sizes; a file that holds none gets no entry.  The entries must fit in
 * work_mem, or the call ends with an error that says how many it needs.
 * The walk runs without the restore's CPU budget: it is the caller's own
 * query, which holds its snapshot until it ends.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/relations.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_tablespace_d.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "compat.h"
#include "dumpfile.h"
#include "oswalk.h"
#include "pg_internals.h"
#include "relations.h"

/* What an entry costs in the hash table, its overhead included. */
#define WC_CENSUS_ENTRY_BYTES	(MAXALIGN(sizeof(CensusEntry)) + 32)

/* The most entries that fit in work_mem; set by wc_relations_census(). */
static long census_limit;

/* The entry of a file, made if it is not there yet. */
static CensusEntry *
census_entry(HTAB *census, Oid db, Oid spc, RelFileNumber relnumber,
			 int fork)
{
	CensusKey	key;
	CensusEntry *entry;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.spc = spc;
	key.relnumber = relnumber;
	key.fork = fork;
	entry = (CensusEntry *) hash_search(census, &key, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;
	if (hash_get_num_entries(census) >= census_limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("warmcache_relations() needs more memory than \"work_mem\" allows"),
				 errdetail("It keeps about %d bytes for each relation fork that the saved set or a cache holds a block of, and more than %ld such forks were found.",
						   (int) WC_CENSUS_ENTRY_BYTES, census_limit),
				 errhint("Raise \"work_mem\" for this call, for example with SET LOCAL in its transaction.")));
	entry = (CensusEntry *) hash_search(census, &key, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) entry + sizeof(CensusKey), 0,
			   sizeof(CensusEntry) - sizeof(CensusKey));
		entry->db = db;
		entry->relid = InvalidOid;
		entry->size_blocks = -1;
	}
	return entry;
}

/* Whether a database OID is this database's or the shared catalogs'. */
static inline bool
ours(Oid db)
{
	return db == MyDatabaseId || db == InvalidOid;
}

/* The saved file's runs of our databases, summed per rank. */
static void
count_saved(HTAB *census)
{
	WarmFileReader r;
	WarmRun		run;
	uint64		n = 0;

	if (!wc_reader_open(&r, WC_DUMP_FILE, false))
		return;
	while (wc_reader_next(&r, &run))
	{
		if ((++n & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		/* The reader decodes; the file's checks are not run here. */
		if (!ours(run.db) || run.fork > MAX_FORKNUM ||
			(run.rank > WC_MAX_RANK && run.rank != WC_RANK_OS))
			continue;
		census_entry(census, run.db, run.spc, run.relnumber,
					 (int) run.fork)->saved[wc_rank_slot(run.rank)] += run.count;
	}
	wc_reader_close(&r);
}

/* The valid buffers of our databases. */
static void
count_buffers(HTAB *census)
{
	int			id;

	for (id = 0; id < NBuffers; id++)
	{
		WcBufferPage page;

		if ((id & 8191) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!wc_buffer_page(id, &page) || !ours(page.db) ||
			page.fork < 0 || page.fork > MAX_FORKNUM)
			continue;
		census_entry(census, page.db, page.spc, page.relnumber,
					 (int) page.fork)->in_buffers++;
	}
}

/* The walk's callback: a run of cached blocks. */
static void
add_cached(void *arg, const WarmRun *run)
{
	census_entry((HTAB *) arg, run->db, run->spc, run->relnumber,
				 (int) run->fork)->in_os_cache += run->count;
}

/*
 * The size of each entry's fork: its segment files, as stat() finds them
 * now; -1 if it has no first segment (dropped, or never made).
 */
static void
size_files(HTAB *census)
{
	HASH_SEQ_STATUS seq;
	CensusEntry *e;

	hash_seq_init(&seq, census);
	while ((e = (CensusEntry *) hash_seq_search(&seq)) != NULL)
	{
		char	   *path;
		uint32		segno;

		CHECK_FOR_INTERRUPTS();
		path = wc_relpath_of(e->db, e->key.spc, e->key.relnumber,
							 (ForkNumber) e->key.fork);
		e->size_blocks = -1;
		for (segno = 0;; segno++)
		{
			char		seg[MAXPGPATH];
			struct stat st;
			uint64		nblocks;

			if (segno == 0)
				strlcpy(seg, path, sizeof(seg));
			else
				snprintf(seg, sizeof(seg), "%s.%u", path, segno);
			if (stat(seg, &st) != 0)
				break;
			nblocks = Min((uint64) st.st_size / BLCKSZ, (uint64) RELSEG_SIZE);
			e->size_blocks = Max(e->size_blocks, 0) + (int64) nblocks;
			if (nblocks < RELSEG_SIZE ||
				(uint64) (segno + 1) * RELSEG_SIZE > (uint64) MaxBlockNumber)
				break;
		}
		pfree(path);
	}
}

/*
 * Name the relation of each file the census found: one heap scan of
 * pg_class, with a snapshot of the catalog, looking up each relation's
 * forks.  Temporary relations have files of their own backend's, which
 * the walk passes over, and no buffers of shared memory.
 */
static void
name_relations(HTAB *census)
{
	Relation	pg_class_rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	uint64		n = 0;

	pg_class_rel = table_open(RelationRelationId, AccessShareLock);
	scan = systable_beginscan(pg_class_rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);
		RelFileNumber relnumber;
		Oid			spc;
		int			fork;

		if ((++n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!RELKIND_HAS_STORAGE(form->relkind) ||
			form->relpersistence == RELPERSISTENCE_TEMP)
			continue;
		relnumber = form->relfilenode;
		if (!RelFileNumberIsValid(relnumber))
			relnumber = RelationMapOidToFilenumber(form->oid, form->relisshared);
		if (!RelFileNumberIsValid(relnumber))
			continue;
		spc = OidIsValid(form->reltablespace) ? form->reltablespace :
			MyDatabaseTableSpace;
		for (fork = 0; fork <= MAX_FORKNUM; fork++)
		{
			CensusKey	key;
			CensusEntry *entry;

			memset(&key, 0, sizeof(key));
			key.spc = spc;
			key.relnumber = relnumber;
			key.fork = fork;
			entry = (CensusEntry *) hash_search(census, &key, HASH_FIND, NULL);
			if (entry != NULL)
				entry->relid = form->oid;
		}
	}
	systable_endscan(scan);
	table_close(pg_class_rel, AccessShareLock);
}

/*
 * The census, in a hash table of CensusEntry in the current memory
 * context.  Entries with nothing saved or cached are in it too: the caller
 * leaves them out.
 */
HTAB *
wc_relations_census(void)
{
	HASHCTL		ctl;
	HTAB	   *census;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(CensusKey);
	ctl.entrysize = sizeof(CensusEntry);
	ctl.hcxt = CurrentMemoryContext;
	census_limit = Max((long) ((double) work_mem * 1024 / WC_CENSUS_ENTRY_BYTES), 1);
	census = hash_create("pg_warmcache relations", 1024, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	count_saved(census);
	count_buffers(census);
	wc_scan_database_files(MyDatabaseId, add_cached, census);
	size_files(census);
	name_relations(census);
	return census;
}
