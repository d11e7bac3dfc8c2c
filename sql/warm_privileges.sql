--
-- Who may warm what.  warm() and warm_table() need SELECT on the table (for
-- an index, on its table); the server-wide functions are not for PUBLIC.
--
CREATE EXTENSION pg_warmcache;
\set VERBOSITY default

CREATE FUNCTION wc_blocks(rel regclass, fork text DEFAULT 'main') RETURNS int8
LANGUAGE sql AS $$
	SELECT pg_relation_size(rel, fork) / current_setting('block_size')::int8
$$;

CREATE ROLE regress_wc_user;
CREATE ROLE regress_wc_monitor IN ROLE pg_monitor;
CREATE ROLE regress_wc_readall IN ROLE pg_read_all_data;

CREATE TABLE wc_priv (id int PRIMARY KEY, doc text)
	WITH (autovacuum_enabled = off);
INSERT INTO wc_priv SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g;
CREATE TABLE wc_priv_parted (id int) PARTITION BY LIST (id);
CREATE TABLE wc_priv_parted_1 PARTITION OF wc_priv_parted FOR VALUES IN (1);
INSERT INTO wc_priv_parted VALUES (1);

-- Without SELECT: the table, its index, and warm_table(), in every mode.
SET ROLE regress_wc_user;
SELECT warm('wc_priv');
SELECT warm('wc_priv', 'read');
SELECT warm('wc_priv', 'prefetch', 'main', 0, 0);
SELECT warm('wc_priv_pkey');
SELECT warm('wc_priv_pkey', 'read');
SELECT warm_table('wc_priv');
SELECT warm_table('wc_priv', 'prefetch');
SELECT warm_table('wc_priv_parted');
SELECT warm('wc_priv_parted_1');
-- Errors about the arguments come first, whoever asks.
SELECT warm('wc_priv', 'bogus');
RESET ROLE;

-- With SELECT on the table: the table and its index.
GRANT SELECT ON wc_priv TO regress_wc_user;
SET ROLE regress_wc_user;
SELECT warm('wc_priv') = wc_blocks('wc_priv') AS all_blocks;
SELECT warm('wc_priv', 'read') = wc_blocks('wc_priv') AS all_blocks;
SELECT warm('wc_priv_pkey') = wc_blocks('wc_priv_pkey') AS all_blocks;
SELECT warm('wc_priv_pkey', 'prefetch') = wc_blocks('wc_priv_pkey') AS all_blocks;
-- The heap and its index, and the index of the (empty) TOAST table.
SELECT warm_table('wc_priv') = wc_blocks('wc_priv') + wc_blocks('wc_priv_pkey')
	+ (SELECT wc_blocks(i.indexrelid) FROM pg_class c JOIN pg_index i
	   ON i.indrelid = c.reltoastrelid WHERE c.oid = 'wc_priv'::regclass)
	AS all_blocks;
RESET ROLE;

-- A column privilege is not SELECT on the table.
REVOKE SELECT ON wc_priv FROM regress_wc_user;
GRANT SELECT (id) ON wc_priv TO regress_wc_user;
SET ROLE regress_wc_user;
SELECT warm('wc_priv');
SELECT warm('wc_priv_pkey');
RESET ROLE;

-- SELECT on a partitioned table covers its partitions, as for a query on
-- it; a partition alone still needs its own.
GRANT SELECT ON wc_priv_parted TO regress_wc_user;
SET ROLE regress_wc_user;
SELECT warm_table('wc_priv_parted') = wc_blocks('wc_priv_parted_1') AS all_blocks;
SELECT warm('wc_priv_parted_1');
RESET ROLE;

-- pg_read_all_data may read, and so warm, every table.
SET ROLE regress_wc_readall;
SELECT warm('wc_priv') = wc_blocks('wc_priv') AS all_blocks;
SELECT warm('wc_priv_pkey') = wc_blocks('wc_priv_pkey') AS all_blocks;
SELECT warm_table('wc_priv') > 0 AS warmed;
RESET ROLE;

-- The server-wide functions: not for PUBLIC.
SET ROLE regress_wc_user;
SELECT warmcache_dump_now();
SELECT warmcache_restore_now();
SELECT warmcache_restore_now('read');
SELECT warmcache_restore_abort();
SELECT * FROM warmcache_status();
SELECT * FROM warmcache_blocks();
RESET ROLE;

-- pg_monitor may look at the status and the saved blocks, and do no more.
SET ROLE regress_wc_monitor;
SELECT state IS NOT NULL AS has_state FROM warmcache_status();
SELECT count(*) >= 0 AS can_list FROM warmcache_blocks();
SELECT warmcache_dump_now();
SELECT warmcache_restore_now();
SELECT warmcache_restore_abort();
-- Nor does pg_monitor make a table readable.
SELECT warm('wc_priv');
RESET ROLE;

-- The grants as the extension made them.
SELECT p.oid::regprocedure AS function,
	   has_function_privilege('regress_wc_user', p.oid, 'EXECUTE') AS public,
	   has_function_privilege('regress_wc_monitor', p.oid, 'EXECUTE') AS pg_monitor
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
WHERE d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_warmcache')
ORDER BY p.proname;

-- The warm workers' budget is the DBA's: a user can neither raise nor
-- lower it, in the session or as its role's default.  The size threshold
-- stays the user's: lowering it splits smaller relations among no more
-- workers than the budget allows.
SET ROLE regress_wc_user;
SET pg_warmcache.max_warm_workers = 64;
SET pg_warmcache.max_warm_workers = 0;
ALTER ROLE regress_wc_user SET pg_warmcache.max_warm_workers = 64;
SHOW pg_warmcache.max_warm_workers;
SET pg_warmcache.min_parallel_warm_size = '1MB';
SHOW pg_warmcache.min_parallel_warm_size;
RESET pg_warmcache.min_parallel_warm_size;
RESET ROLE;
SELECT name, context FROM pg_settings
WHERE name IN ('pg_warmcache.max_warm_workers',
			   'pg_warmcache.min_parallel_warm_size',
			   'pg_warmcache.warm_worker_delay')
ORDER BY name;

DROP TABLE wc_priv, wc_priv_parted;
DROP ROLE regress_wc_user, regress_wc_monitor, regress_wc_readall;
DROP FUNCTION wc_blocks;
DROP EXTENSION pg_warmcache;
