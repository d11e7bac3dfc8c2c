--
-- warm(): pg_prewarm()'s arguments and meaning.  pg_buffercache tells what
-- is in shared buffers.
--
CREATE EXTENSION pg_warmcache;

-- Blocks of a relation fork, and how many of them shared buffers hold.
CREATE FUNCTION wc_blocks(rel regclass, fork text DEFAULT 'main') RETURNS int8
LANGUAGE sql AS $$
	SELECT pg_relation_size(rel, fork) / current_setting('block_size')::int8
$$;
CREATE FUNCTION wc_cached(rel regclass, fork text DEFAULT 'main') RETURNS int8
LANGUAGE sql AS $$
	SELECT count(*) FROM pg_buffercache b
	WHERE b.relfilenode = pg_relation_filenode(rel)
	  AND b.reldatabase IN (0, (SELECT oid FROM pg_database
								WHERE datname = current_database()))
	  AND b.relforknumber = array_position(ARRAY['main', 'fsm', 'vm', 'init'], fork) - 1
$$;
-- The cached blocks of a fork, by number.
CREATE FUNCTION wc_cached_blocks(rel regclass, fork text DEFAULT 'main')
RETURNS SETOF int8
LANGUAGE sql AS $$
	SELECT b.relblocknumber FROM pg_buffercache b
	WHERE b.relfilenode = pg_relation_filenode(rel)
	  AND b.reldatabase = (SELECT oid FROM pg_database
						   WHERE datname = current_database())
	  AND b.relforknumber = array_position(ARRAY['main', 'fsm', 'vm', 'init'], fork) - 1
$$;

-- A heap larger than warm()'s look-ahead (maintenance_io_concurrency I/Os
-- of 32 blocks), without indexes: VACUUM FULL then writes it anew without
-- going through shared buffers, which leaves it cold.  (With an index, the
-- index rebuild would read the new heap into shared buffers.)
CREATE TABLE wc_heap (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO wc_heap SELECT g, repeat('x', 300) FROM generate_series(1, 20000) g;
SELECT wc_blocks('wc_heap') > current_setting('maintenance_io_concurrency')::int * 32
	AS larger_than_window;

-- The default warms the whole main fork into shared buffers.
SELECT warm('wc_heap') = wc_blocks('wc_heap') AS all_blocks;

VACUUM FULL wc_heap;
SELECT wc_cached('wc_heap') AS cold;

-- Modes read and prefetch warm the OS cache only.
SELECT warm('wc_heap', 'read') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') AS still_cold;
SELECT warm('wc_heap', 'prefetch') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') AS still_cold;

-- Mode buffer brings every block into shared buffers.
SELECT warm('wc_heap', 'buffer') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') = wc_blocks('wc_heap') AS all_cached;
-- Again: the blocks are counted even though they were cached already.
SELECT warm('wc_heap') = wc_blocks('wc_heap') AS all_blocks;

-- Block ranges warm exactly the blocks first_block..last_block.
VACUUM FULL wc_heap;
SELECT wc_cached('wc_heap') AS cold;
SELECT warm('wc_heap', 'buffer', 'main', 10, 19);	-- positional, as pg_prewarm
SELECT array_agg(b ORDER BY b) FROM wc_cached_blocks('wc_heap') b;
SELECT warm('wc_heap', first_block => 100, last_block => 100);
SELECT warm('wc_heap', last_block => 4);	-- from block 0
SELECT warm('wc_heap', first_block => wc_blocks('wc_heap') - 3);	-- to the end
SELECT array_agg(b ORDER BY b) FILTER (WHERE b <= 100) AS head,
	   array_agg(b - wc_blocks('wc_heap') ORDER BY b) FILTER (WHERE b > 100) AS tail_from_end
FROM wc_cached_blocks('wc_heap') b;
-- Overlapping a cached range, the count is still the range's size.
SELECT warm('wc_heap', first_block => 15, last_block => 24);
SELECT count(*) FILTER (WHERE b BETWEEN 10 AND 24) AS blocks_10_to_24,
	   count(*) AS total
FROM wc_cached_blocks('wc_heap') b;
-- Ranges in the other modes leave shared buffers alone.
SELECT warm('wc_heap', 'read', 'main', 200, 263);
SELECT warm('wc_heap', 'prefetch', 'main', 200, 263);
SELECT warm('wc_heap', 'read', first_block => 300) = wc_blocks('wc_heap') - 300 AS from_300;
SELECT count(*) AS total_unchanged FROM wc_cached_blocks('wc_heap') b;
-- A range across all of the fork is the whole fork.
SELECT warm('wc_heap', 'buffer', 'main', 0, wc_blocks('wc_heap') - 1)
	= wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') = wc_blocks('wc_heap') AS all_cached;

-- Without look-ahead (maintenance_io_concurrency 0), the same.
SET maintenance_io_concurrency = 0;
VACUUM FULL wc_heap;
SELECT warm('wc_heap', 'prefetch') = wc_blocks('wc_heap') AS all_blocks;
SELECT warm('wc_heap', 'read') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') AS still_cold;
SELECT warm('wc_heap', 'buffer', 'main', 1, 40);
SELECT warm('wc_heap') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') = wc_blocks('wc_heap') AS all_cached;
RESET maintenance_io_concurrency;

-- NULL block numbers mean the start and the end of the fork, as pg_prewarm.
SELECT warm('wc_heap', 'read', 'main', NULL, NULL) = wc_blocks('wc_heap') AS all_blocks;
SELECT warm('wc_heap', 'read', 'main', 5, NULL) = wc_blocks('wc_heap') - 5 AS from_5;
SELECT warm('wc_heap', 'read', 'main', NULL, 5) AS to_5;

-- Indexes.  REINDEX writes the index without shared buffers.
CREATE INDEX wc_heap_id ON wc_heap (id);
REINDEX INDEX wc_heap_id;
SELECT wc_blocks('wc_heap_id') > 1 AS has_blocks, wc_cached('wc_heap_id') AS cold;
SELECT warm('wc_heap_id', 'read') = wc_blocks('wc_heap_id') AS all_blocks;
SELECT wc_cached('wc_heap_id') AS still_cold;
SELECT warm('wc_heap_id') = wc_blocks('wc_heap_id') AS all_blocks;
SELECT wc_cached('wc_heap_id') = wc_blocks('wc_heap_id') AS all_cached;

-- The visibility map and free space map, once VACUUM made them.  Moving the
-- table to another tablespace copies all its forks past shared buffers.
VACUUM wc_heap;
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_wc_ts LOCATION '';
ALTER TABLE wc_heap SET TABLESPACE regress_wc_ts;
SELECT wc_blocks('wc_heap', 'vm') > 0 AS has_vm, wc_cached('wc_heap', 'vm') AS vm_cold,
	   wc_blocks('wc_heap', 'fsm') > 0 AS has_fsm, wc_cached('wc_heap', 'fsm') AS fsm_cold,
	   wc_cached('wc_heap') AS main_cold;
SELECT warm('wc_heap', 'buffer', 'vm') = wc_blocks('wc_heap', 'vm') AS all_vm_blocks;
SELECT wc_cached('wc_heap', 'vm') = wc_blocks('wc_heap', 'vm') AS vm_cached,
	   wc_cached('wc_heap', 'fsm') AS fsm_cold, wc_cached('wc_heap') AS main_cold;
SELECT warm('wc_heap', fork => 'fsm') = wc_blocks('wc_heap', 'fsm') AS all_fsm_blocks;
SELECT wc_cached('wc_heap', 'fsm') = wc_blocks('wc_heap', 'fsm') AS fsm_cached,
	   wc_cached('wc_heap') AS main_cold;
SELECT warm('wc_heap', 'read', 'fsm', 0, 0) AS first_fsm_block;
SELECT warm('wc_heap', 'prefetch', 'vm') = wc_blocks('wc_heap', 'vm') AS all_vm_blocks;
-- Also in the other tablespace, the main fork warms as before.
SELECT warm('wc_heap', 'read') = wc_blocks('wc_heap') AS all_blocks;
SELECT warm('wc_heap') = wc_blocks('wc_heap') AS all_blocks;
SELECT wc_cached('wc_heap') = wc_blocks('wc_heap') AS all_cached;

-- The init fork of an unlogged table: empty for the heap, a metapage for
-- a btree index.
CREATE UNLOGGED TABLE wc_unlogged (id int PRIMARY KEY);
SELECT warm('wc_unlogged', fork => 'init');
SELECT wc_blocks('wc_unlogged_pkey', 'init') AS init_blocks,
	   wc_cached('wc_unlogged_pkey', 'init') AS init_cold;
SELECT warm('wc_unlogged_pkey', fork => 'init');
SELECT wc_cached('wc_unlogged_pkey', 'init') AS init_cached;
SELECT warm('wc_unlogged_pkey', 'read', 'init');
SELECT warm('wc_unlogged_pkey') = wc_blocks('wc_unlogged_pkey') AS all_blocks;
DROP TABLE wc_unlogged;

-- Catalogs: a mapped one, and a shared one.
SELECT warm('pg_class', 'read') = wc_blocks('pg_class') AS read_all,
	   warm('pg_class') = wc_blocks('pg_class') AS buffer_all;
SELECT wc_cached('pg_class') = wc_blocks('pg_class') AS all_cached;
SELECT warm('pg_database', 'read') = wc_blocks('pg_database') AS read_all,
	   warm('pg_database') = wc_blocks('pg_database') AS buffer_all;
SELECT wc_cached('pg_database') = wc_blocks('pg_database') AS all_cached;

-- Sequences have a block.
CREATE SEQUENCE wc_seq;
SELECT warm('wc_seq'), warm('wc_seq', 'read'), warm('wc_seq', 'prefetch');
SELECT wc_cached('wc_seq') AS cached;

-- An empty table warms nothing, in every mode.
CREATE TABLE wc_empty (a int);
SELECT warm('wc_empty'), warm('wc_empty', 'read'), warm('wc_empty', 'prefetch');

-- A temporary table warms into this session's local buffers, which
-- pg_buffercache does not show.
CREATE TEMP TABLE wc_temp AS SELECT g AS id, repeat('x', 300) AS pad
	FROM generate_series(1, 1000) g;
SELECT wc_blocks('wc_temp') > 32 AS has_blocks;
SELECT warm('wc_temp') = wc_blocks('wc_temp') AS all_blocks;
SELECT warm('wc_temp', 'read') = wc_blocks('wc_temp') AS all_blocks;
SELECT warm('wc_temp', 'prefetch', 'main', 1, 2);
SELECT wc_cached('wc_temp') AS not_in_shared_buffers;

-- A materialized view and a TOAST table are relations like the others.
CREATE MATERIALIZED VIEW wc_mv WITH (autovacuum_enabled = off)
	AS SELECT id FROM wc_heap WITH DATA;
SELECT warm('wc_mv') = wc_blocks('wc_mv') AS all_blocks;
CREATE TABLE wc_toasty (doc text) WITH (autovacuum_enabled = off,
										toast.autovacuum_enabled = off);
ALTER TABLE wc_toasty ALTER COLUMN doc SET STORAGE EXTERNAL;
INSERT INTO wc_toasty SELECT repeat('y', 10000) FROM generate_series(1, 20);
SELECT reltoastrelid::regclass AS toast FROM pg_class WHERE oid = 'wc_toasty'::regclass \gset
ALTER TABLE wc_toasty SET TABLESPACE regress_wc_ts;
SELECT wc_blocks(:'toast') > 20 AS has_blocks, wc_cached(:'toast') AS cold;
SELECT warm(:'toast') = wc_blocks(:'toast') AS all_blocks;
SELECT wc_cached(:'toast') = wc_blocks(:'toast') AS all_cached;

DROP TABLE wc_heap, wc_empty, wc_temp, wc_toasty CASCADE;
DROP SEQUENCE wc_seq;
DROP TABLESPACE regress_wc_ts;
DROP FUNCTION wc_blocks, wc_cached, wc_cached_blocks;
DROP EXTENSION pg_warmcache;
