--
-- The server-wide functions: warmcache_dump_now(), warmcache_blocks(),
-- warmcache_status(), warmcache_restore_now(), warmcache_restore_abort().
-- The test instance dumps only at shutdown (pg_warmcache.dump_interval 0),
-- so until this test dumps there is no dump file.
--
CREATE EXTENSION pg_warmcache;
\set VERBOSITY default

-- Nothing saved yet: no blocks, nothing to restore, nothing to abort.
SELECT count(*) AS saved_blocks FROM warmcache_blocks();
SELECT warmcache_restore_now();
SELECT warmcache_restore_now('read');
SELECT warmcache_restore_abort();
SELECT state, worker_pid IS NOT NULL AS worker_running,
	   last_dump_at IS NULL AS never_dumped, last_dump_blocks, last_dump_seconds
FROM warmcache_status();
-- The mode is checked before anything else.
SELECT warmcache_restore_now('bogus');
SELECT warmcache_restore_now('');

-- A table fully in shared buffers.
CREATE TABLE wc_fn (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO wc_fn SELECT g, repeat('x', 300) FROM generate_series(1, 2000) g;
SELECT warm('wc_fn') = pg_relation_size('wc_fn') / current_setting('block_size')::int
	AS all_blocks;

-- The dump writes a block for each valid buffer of a permanent relation;
-- no unlogged table exists here, so that is all valid buffers, give or
-- take the catalog blocks the queries around it read.
SELECT count(*) AS before FROM pg_buffercache WHERE relfilenode IS NOT NULL \gset
SELECT warmcache_dump_now() AS dumped \gset
SELECT count(*) AS after FROM pg_buffercache WHERE relfilenode IS NOT NULL \gset
SELECT :dumped > 0 AS dumped_some,
	   :dumped BETWEEN :before - 5 AND :after + 5 AS as_many_as_buffers,
	   :after - :before < 50 AS few_loaded_meanwhile;

-- warmcache_blocks() lists the file: as many rows as the dump wrote.
SELECT count(*) = :dumped AS same_count FROM warmcache_blocks();

-- Every block of wc_fn is in it, with its usage count as rank.
SELECT count(*) = pg_relation_size('wc_fn') / current_setting('block_size')::int
		AS all_of_wc_fn,
	   count(DISTINCT block) = count(*) AS no_duplicates,
	   min(block) = 0 AS from_block_0
FROM warmcache_blocks()
WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND relfilenode = pg_relation_filenode('wc_fn') AND fork = 'main';
SELECT count(*) AS rank_differs
FROM warmcache_blocks() w JOIN pg_buffercache b
  ON b.reldatabase = w.database AND b.reltablespace = w.tablespace
 AND b.relfilenode = w.relfilenode AND b.relblocknumber = w.block
 AND b.relforknumber = array_position(ARRAY['main', 'fsm', 'vm', 'init'], w.fork) - 1
WHERE w.relfilenode = pg_relation_filenode('wc_fn') AND w.rank <> b.usagecount;

-- The rows of this database and of shared catalogs are relations of
-- pg_class; the tablespaces exist.
WITH rels AS (
	SELECT pg_relation_filenode(oid) AS filenode FROM pg_class
	WHERE pg_relation_filenode(oid) IS NOT NULL
)
SELECT count(*) > 0 AS some_here,
	   count(*) FILTER (WHERE w.relfilenode NOT IN (SELECT filenode FROM rels))
		AS not_in_pg_class
FROM warmcache_blocks() w
WHERE w.database IN (0, (SELECT oid FROM pg_database
						 WHERE datname = current_database()));
SELECT count(*) FILTER (WHERE tablespace NOT IN (SELECT oid FROM pg_tablespace))
		AS unknown_tablespace,
	   count(*) FILTER (WHERE database <> 0 AND
						database NOT IN (SELECT oid FROM pg_database))
		AS unknown_database,
	   count(*) FILTER (WHERE fork NOT IN ('main', 'fsm', 'vm', 'init'))
		AS unknown_fork
FROM warmcache_blocks();

-- Ranks are usage counts, 0 to 5, hottest first in the file.
SELECT min(rank) >= 0 AND max(rank) <= 5 AS rank_0_to_5
FROM warmcache_blocks();
SELECT bool_and(rank <= prev) AS hottest_first
FROM (SELECT rank, lag(rank) OVER (ORDER BY n) AS prev
	  FROM warmcache_blocks() WITH ORDINALITY
		AS w(database, tablespace, relfilenode, fork, block, rank, n)) s
WHERE prev IS NOT NULL;

-- The status tells of the dump.
SELECT state, worker_pid IS NOT NULL AS worker_running,
	   last_dump_at BETWEEN now() - interval '1 hour' AND clock_timestamp()
		AS dumped_just_now,
	   last_dump_blocks = :dumped AS blocks_as_returned,
	   last_dump_seconds >= 0 AS seconds_ok
FROM warmcache_status();
-- No restore has run.
SELECT restore_mode, restore_started_at, restore_finished_at,
	   restore_blocks_total, restore_blocks_done, restore_blocks_skipped,
	   restore_blocks_os_only, restore_mb_per_s, restore_seconds_left,
	   restore_incomplete, abort_requested
FROM warmcache_status();
SELECT warmcache_restore_abort();

-- Bad modes are still refused, now that there is a file to restore.
SELECT warmcache_restore_now('bogus');
SELECT warmcache_restore_now('Buffer');

-- A second dump replaces the file: a dropped table's blocks are gone, and
-- an unlogged table's, which a restart empties, are left out.
SELECT pg_relation_filenode('wc_fn') AS wc_fn_filenode \gset
DROP TABLE wc_fn;
CREATE UNLOGGED TABLE wc_fn_unlogged (id int) WITH (autovacuum_enabled = off);
INSERT INTO wc_fn_unlogged SELECT generate_series(1, 10000);
SELECT warm('wc_fn_unlogged') > 0 AS warmed;
SELECT count(*) > 0 AS unlogged_cached FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('wc_fn_unlogged');
SELECT warmcache_dump_now() AS dumped_again \gset
SELECT count(*) = :dumped_again AS same_count,
	   count(*) FILTER (WHERE relfilenode = :wc_fn_filenode
						AND database = (SELECT oid FROM pg_database
										WHERE datname = current_database()))
		AS wc_fn_blocks,
	   count(*) FILTER (WHERE relfilenode = pg_relation_filenode('wc_fn_unlogged')
						AND database = (SELECT oid FROM pg_database
										WHERE datname = current_database()))
		AS unlogged_blocks
FROM warmcache_blocks();
DROP TABLE wc_fn_unlogged;
SELECT last_dump_blocks = :dumped_again AS blocks_as_returned FROM warmcache_status();

DROP EXTENSION pg_warmcache;
