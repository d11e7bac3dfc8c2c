--
-- warm_table(): a table's main and visibility map forks, its indexes, its
-- TOAST table and TOAST index; for a partitioned table, all partitions.
--
CREATE EXTENSION pg_warmcache;

CREATE FUNCTION wc_blocks(rel regclass, fork text DEFAULT 'main') RETURNS int8
LANGUAGE sql AS $$
	SELECT pg_relation_size(rel, fork) / current_setting('block_size')::int8
$$;
CREATE FUNCTION wc_cached(rel regclass, fork text DEFAULT 'main') RETURNS int8
LANGUAGE sql AS $$
	SELECT count(*) FROM pg_buffercache b
	WHERE b.relfilenode = pg_relation_filenode(rel)
	  AND b.reldatabase = (SELECT oid FROM pg_database
						   WHERE datname = current_database())
	  AND b.relforknumber = array_position(ARRAY['main', 'fsm', 'vm', 'init'], fork) - 1
$$;

-- The tables with storage that warm_table(tab) covers: tab, or the leaf
-- partitions under it.
CREATE FUNCTION wc_leaves(tab regclass) RETURNS SETOF regclass
LANGUAGE sql AS $$
	SELECT c.oid::regclass FROM pg_class c
	WHERE c.oid IN (SELECT tab UNION ALL SELECT relid FROM pg_partition_tree(tab))
	  AND c.relkind IN ('r', 'm')
$$;

-- The relation forks warm_table(tab) should warm, named without OIDs.
CREATE FUNCTION wc_members(tab regclass)
RETURNS TABLE (label text, rel regclass, fork text)
LANGUAGE sql AS $$
	WITH heap AS (
		SELECT l::text AS name, l AS rel FROM wc_leaves(tab) l
		UNION ALL
		SELECT l::text || ' toast', c.reltoastrelid::regclass
		FROM wc_leaves(tab) l JOIN pg_class c ON c.oid = l
		WHERE c.reltoastrelid <> 0
	)
	SELECT h.name, h.rel, f FROM heap h, (VALUES ('main'), ('vm')) v(f)
	UNION ALL
	SELECT CASE WHEN h.name LIKE '% toast' THEN h.name || ' index'
				ELSE i.indexrelid::regclass::text END,
		   i.indexrelid::regclass, 'main'
	FROM heap h JOIN pg_index i ON i.indrelid = h.rel
$$;

-- What warm_table(tab) should return.
CREATE FUNCTION wc_member_blocks(tab regclass) RETURNS int8
LANGUAGE sql AS $$
	SELECT coalesce(sum(wc_blocks(rel, fork)), 0)::int8 FROM wc_members(tab)
$$;

-- Whether the relations with blocks among those are cold, warm or partly.
CREATE FUNCTION wc_state(tab regclass) RETURNS TABLE (label text, state text)
LANGUAGE sql AS $$
	SELECT label, CASE sum(wc_cached(rel, fork))
					WHEN 0 THEN 'cold'
					WHEN sum(wc_blocks(rel, fork)) THEN 'warm'
					ELSE 'partly' END
	FROM wc_members(tab) WHERE wc_blocks(rel, fork) > 0
	GROUP BY label ORDER BY label
$$;

-- Make all of that cold: moving a table to another tablespace copies its
-- heap, TOAST table and TOAST index file by file, past shared buffers, and
-- so does moving an index.  Back and forth between two tablespaces.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_wc_ts LOCATION '';
CREATE PROCEDURE wc_make_cold(tab regclass) LANGUAGE plpgsql AS $$
DECLARE
	l regclass;
	i regclass;
	spc text;
BEGIN
	FOR l IN SELECT wc_leaves(tab) LOOP
		SELECT CASE reltablespace WHEN 0 THEN 'regress_wc_ts' ELSE 'pg_default' END
		INTO spc FROM pg_class WHERE oid = l;
		IF (SELECT relkind FROM pg_class WHERE oid = l) = 'm' THEN
			EXECUTE format('ALTER MATERIALIZED VIEW %s SET TABLESPACE %I', l, spc);
		ELSE
			EXECUTE format('ALTER TABLE %s SET TABLESPACE %I', l, spc);
		END IF;
		FOR i IN SELECT indexrelid FROM pg_index WHERE indrelid = l LOOP
			EXECUTE format('ALTER INDEX %s SET TABLESPACE %I', i, spc);
		END LOOP;
	END LOOP;
END
$$;

--
-- A table with two indexes and TOAST, vacuumed so that it has a visibility
-- map (and a free space map, which warm_table() leaves alone).
--
CREATE TABLE wc_tab (id int PRIMARY KEY, n int, doc text)
	WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off);
ALTER TABLE wc_tab ALTER COLUMN doc SET STORAGE EXTERNAL;
CREATE INDEX wc_tab_n ON wc_tab (n);
INSERT INTO wc_tab
	SELECT g, g % 100, CASE WHEN g % 10 = 0 THEN repeat('t', 5000) ELSE 'short' END
	FROM generate_series(1, 3000) g;
VACUUM wc_tab;

CALL wc_make_cold('wc_tab');
SELECT label, fork, wc_blocks(rel, fork) > 0 AS has_blocks,
	   wc_cached(rel, fork) AS cached
FROM wc_members('wc_tab') ORDER BY label, fork;
SELECT wc_blocks('wc_tab', 'fsm') > 0 AS has_fsm, wc_cached('wc_tab', 'fsm') AS fsm_cached;

SELECT warm_table('wc_tab') = wc_member_blocks('wc_tab') AS all_blocks;
SELECT label, fork, wc_cached(rel, fork) = wc_blocks(rel, fork) AS all_cached
FROM wc_members('wc_tab') ORDER BY label, fork;
SELECT wc_cached('wc_tab', 'fsm') AS fsm_cached;
-- Warm already, the count is the same.
SELECT warm_table('wc_tab') = wc_member_blocks('wc_tab') AS all_blocks;

-- Modes read and prefetch leave shared buffers alone.
CALL wc_make_cold('wc_tab');
SELECT warm_table('wc_tab', 'read') = wc_member_blocks('wc_tab') AS all_blocks;
SELECT warm_table('wc_tab', 'prefetch') = wc_member_blocks('wc_tab') AS all_blocks;
SELECT sum(wc_cached(rel, fork)) AS cached FROM wc_members('wc_tab');
SELECT warm_table('wc_tab', 'buffer') = wc_member_blocks('wc_tab') AS all_blocks;
SELECT bool_and(wc_cached(rel, fork) = wc_blocks(rel, fork)) AS all_cached
FROM wc_members('wc_tab');

--
-- A partitioned table: a partition, a partitioned partition with two
-- partitions, a default partition that stays empty, and a foreign table
-- partition, which has no storage and is skipped.  A partitioned index,
-- and an index of one partition of its own.
--
CREATE FOREIGN DATA WRAPPER wc_dummy;
CREATE SERVER wc_server FOREIGN DATA WRAPPER wc_dummy;
CREATE TABLE wc_part (id int, doc text) PARTITION BY RANGE (id);
CREATE TABLE wc_part_1 PARTITION OF wc_part FOR VALUES FROM (0) TO (1000)
	WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off);
CREATE TABLE wc_part_2 PARTITION OF wc_part FOR VALUES FROM (1000) TO (3000)
	PARTITION BY RANGE (id);
CREATE TABLE wc_part_2a PARTITION OF wc_part_2 FOR VALUES FROM (1000) TO (2000)
	WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off);
CREATE TABLE wc_part_2b PARTITION OF wc_part_2 FOR VALUES FROM (2000) TO (3000)
	WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off);
CREATE FOREIGN TABLE wc_part_ft PARTITION OF wc_part FOR VALUES FROM (10000) TO (20000)
	SERVER wc_server;
CREATE TABLE wc_part_def PARTITION OF wc_part DEFAULT
	WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off);
ALTER TABLE wc_part_2a ALTER COLUMN doc SET STORAGE EXTERNAL;
CREATE INDEX wc_part_id ON wc_part (id);
CREATE INDEX wc_part_1_doc ON wc_part_1 (left(doc, 5));
INSERT INTO wc_part
	SELECT g, CASE WHEN g % 20 = 0 THEN repeat('p', 5000) ELSE 'short' END
	FROM generate_series(0, 2999) g;
VACUUM wc_part_1, wc_part_2, wc_part_def;

CALL wc_make_cold('wc_part');
SELECT label, fork, wc_blocks(rel, fork) > 0 AS has_blocks,
	   wc_cached(rel, fork) AS cached
FROM wc_members('wc_part') ORDER BY label, fork;

SELECT warm_table('wc_part') = wc_member_blocks('wc_part') AS all_blocks;
SELECT label, fork, wc_cached(rel, fork) = wc_blocks(rel, fork) AS all_cached
FROM wc_members('wc_part') ORDER BY label, fork;

-- A partitioned partition, and a leaf partition, alone.
CALL wc_make_cold('wc_part');
SELECT warm_table('wc_part_2') = wc_member_blocks('wc_part_2') AS all_blocks;
SELECT * FROM wc_state('wc_part');
SELECT warm_table('wc_part_1') = wc_member_blocks('wc_part_1') AS all_blocks;
SELECT * FROM wc_state('wc_part');
SELECT warm_table('wc_part', 'read') = wc_member_blocks('wc_part') AS all_blocks;
SELECT warm_table('wc_part', 'prefetch') = wc_member_blocks('wc_part') AS all_blocks;

-- Partitioned tables with no partitions, or only empty ones or foreign
-- ones, warm nothing.
CREATE TABLE wc_part_none (id int) PARTITION BY LIST (id);
SELECT warm_table('wc_part_none');
CREATE TABLE wc_part_ftonly (id int) PARTITION BY LIST (id);
CREATE FOREIGN TABLE wc_part_ftonly_1 PARTITION OF wc_part_ftonly FOR VALUES IN (1)
	SERVER wc_server;
SELECT warm_table('wc_part_ftonly');

--
-- Materialized views, tables without indexes, empty tables, temporary
-- tables.
--
CREATE MATERIALIZED VIEW wc_mv WITH (autovacuum_enabled = off)
	AS SELECT id, n FROM wc_tab;
CREATE INDEX wc_mv_n ON wc_mv (n);
VACUUM wc_mv;
CALL wc_make_cold('wc_mv');
SELECT label, fork, wc_blocks(rel, fork) > 0 AS has_blocks,
	   wc_cached(rel, fork) AS cached
FROM wc_members('wc_mv') ORDER BY label, fork;
SELECT warm_table('wc_mv') = wc_member_blocks('wc_mv') AS all_blocks;
SELECT bool_and(wc_cached(rel, fork) = wc_blocks(rel, fork)) AS all_cached
FROM wc_members('wc_mv');

CREATE TABLE wc_bare (a int) WITH (autovacuum_enabled = off);
INSERT INTO wc_bare SELECT generate_series(1, 1000);
SELECT warm_table('wc_bare') = wc_blocks('wc_bare') AS all_blocks;

CREATE TABLE wc_nothing (a int);
SELECT warm_table('wc_nothing');
-- An empty btree has a metapage.
CREATE TABLE wc_nothing_indexed (a int PRIMARY KEY);
SELECT warm_table('wc_nothing_indexed');

CREATE TEMP TABLE wc_temp (id int PRIMARY KEY, doc text);
INSERT INTO wc_temp SELECT g, repeat('t', 3000) FROM generate_series(1, 100) g;
SELECT warm_table('wc_temp') = wc_member_blocks('wc_temp') AS all_blocks;
SELECT warm_table('wc_temp', 'read') = wc_member_blocks('wc_temp') AS all_blocks;

DROP TABLE wc_tab, wc_part, wc_part_none, wc_part_ftonly, wc_bare, wc_nothing,
	wc_nothing_indexed, wc_temp CASCADE;
DROP SERVER wc_server;
DROP FOREIGN DATA WRAPPER wc_dummy;
DROP TABLESPACE regress_wc_ts;
DROP PROCEDURE wc_make_cold;
DROP FUNCTION wc_state, wc_member_blocks, wc_members, wc_leaves, wc_blocks, wc_cached;
DROP EXTENSION pg_warmcache;
