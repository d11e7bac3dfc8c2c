--
-- A dump larger than pg_warmcache.sort_chunk is sorted in chunks written
-- to a scratch file and merged.  The result must be the same file as a
-- dump sorted at once: same blocks, same ranks, valid and in order (the
-- file is checked end to end whenever warmcache_blocks() reads it).
--
CREATE EXTENSION pg_warmcache;

CREATE TABLE wc_merge (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO wc_merge SELECT g, repeat('x', 300) FROM generate_series(1, 20000) g;
SELECT warm('wc_merge') = pg_relation_size('wc_merge') / current_setting('block_size')::int
	AS all_blocks;

-- Sorted at once.
SELECT setting::int AS nbuffers FROM pg_settings WHERE name = 'shared_buffers' \gset
SELECT warmcache_dump_now() AS at_once \gset
CREATE TEMP TABLE at_once AS
	SELECT * FROM warmcache_blocks() WHERE relfilenode = pg_relation_filenode('wc_merge');

-- Sorted in chunks of 1024 buffer headers and merged.
SET pg_warmcache.sort_chunk = 1024;
SELECT :nbuffers / 1024 >= 4 AS several_chunks;
SELECT warmcache_dump_now() AS merged \gset
CREATE TEMP TABLE merged AS
	SELECT * FROM warmcache_blocks() WHERE relfilenode = pg_relation_filenode('wc_merge');
RESET pg_warmcache.sort_chunk;

SELECT count(*) FILTER (WHERE fork = 'main') =
		pg_relation_size('wc_merge') / current_setting('block_size')::int
		AS all_of_wc_merge
FROM merged;
SELECT (SELECT count(*) FROM (SELECT * FROM at_once EXCEPT SELECT * FROM merged) a)
		AS only_at_once,
	   (SELECT count(*) FROM (SELECT * FROM merged EXCEPT SELECT * FROM at_once) m)
		AS only_merged;
SELECT abs(:merged - :at_once) < 50 AS same_total;
-- The scratch file is gone.
SELECT count(*) AS scratch_files FROM pg_ls_dir('.') f
WHERE f IN ('pg_warmcache.blocks.sort', 'pg_warmcache.blocks.tmp');

DROP TABLE wc_merge;
DROP EXTENSION pg_warmcache;
