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
 * relation files, as the dump's walk of the OS cache reads them (their
 * sizes and what the page cache holds).  Then one heap scan of pg_class
 * names the relation of each file.  No relation is opened or locked: a
 * census of 20,000 relations would take 20,000 locks, and a DROP would
 * wait behind it.  A file dropped meanwhile counts as it was found.
 * Memory is an entry per relation fork, whatever the sizes.
 *
 * Copyright (c) 2026, pg_warmcache developers
 *
 * IDENTIFICATION
 *		src/relations.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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

/* The walk's callbacks: a segment's size, and a run of cached blocks. */
static void
add_segment(void *arg, const WarmRun *key, BlockNumber nblocks)
{
	CensusEntry *entry = census_entry((HTAB *) arg, key->db, key->spc,
									  key->relnumber, (int) key->fork);

	entry->size_blocks = Max(entry->size_blocks, 0) + nblocks;
}

static void
add_cached(void *arg, const WarmRun *run)
{
	census_entry((HTAB *) arg, run->db, run->spc, run->relnumber,
				 (int) run->fork)->in_os_cache += run->count;
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
	census = hash_create("pg_warmcache relations", 1024, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	count_saved(census);
	count_buffers(census);
	wc_scan_database_files(MyDatabaseId, add_cached, add_segment, census);
	name_relations(census);
	return census;
}
