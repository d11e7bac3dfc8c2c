--
-- Readiness: warmcache_is_warm() and warmcache_wait_warm(); and for
-- monitoring, warmcache_saved_tiers().  The test
-- instance has no standby and no restore running when this starts; the
-- dump file is the one an earlier test left, or none.
--
CREATE EXTENSION pg_warmcache;
\set VERBOSITY default

-- The arguments are checked: a fraction in [0, 1], a wait of 0 s or more.
SELECT warmcache_is_warm(-0.1);
SELECT warmcache_is_warm(1.5);
SELECT warmcache_is_warm('NaN');
SELECT warmcache_wait_warm(0.5, -1);
SELECT warmcache_wait_warm(2);
-- NULL in, NULL out.
SELECT warmcache_is_warm(NULL) IS NULL AS null_in_null_out,
	   warmcache_wait_warm(NULL, 1) IS NULL AS null_fraction,
	   warmcache_wait_warm(0.5, NULL) IS NULL AS null_wait;

-- A fraction of 0 is always held, and a wait for it returns at once.
SELECT warmcache_is_warm(0) AS zero_held,
	   warmcache_wait_warm(0, 0) BETWEEN 0 AND 1 AS a_fraction;

-- A saved set of a table fully cached, restored in the background: the
-- wait returns once the restore holds all of it (or ended short of it:
-- then the fraction says so), and the answer is then ready.
CREATE TABLE wc_ready (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO wc_ready SELECT g, repeat('x', 300) FROM generate_series(1, 2000) g;
SELECT warm('wc_ready') > 0 AS warmed;
SELECT warmcache_dump_now() AS dumped \gset
-- warmcache_saved_tiers(): the saved set per tier, as the dump wrote it
-- (this instance dumps no OS tier), and as warmcache_blocks() lists it.
SELECT tier, blocks = :dumped AS all_dumped, bytes = blocks * current_setting('block_size')::int8 AS bytes_ok
FROM warmcache_saved_tiers() WHERE tier = 'buffer';
SELECT t.tier, t.blocks = count(b.*) AS as_listed
FROM warmcache_saved_tiers() t LEFT JOIN warmcache_blocks() b USING (tier)
GROUP BY t.tier, t.blocks ORDER BY t.tier;
SELECT warmcache_restore_now() > 0 AS restore_asked;
SELECT warmcache_wait_warm(1.0, 120) AS fraction_after_wait;
SELECT warmcache_is_warm() AS warm_default, warmcache_is_warm(1.0) AS warm_all;
-- The wait returns once the blocks are held; the restore's state ends
-- a moment later, when its workers have exited.  Wait for that (60 s at most).
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT state FROM warmcache_status()) <> 'restoring';
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;
SELECT state, restore_blocks_done + restore_skipped_gone + restore_skipped_excluded
		= restore_blocks_total AS all_handled
FROM warmcache_status();
-- The blocks it says it holds are in shared buffers (all of wc_ready's).
SELECT count(*) = pg_relation_size('wc_ready') / current_setting('block_size')::int
		AS wc_ready_cached
FROM pg_buffercache
WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND relfilenode = pg_relation_filenode('wc_ready') AND relforknumber = 0;

-- Revoked from PUBLIC, granted to pg_monitor.
CREATE ROLE regress_wc_ready_user;
CREATE ROLE regress_wc_ready_monitor IN ROLE pg_monitor;
SET ROLE regress_wc_ready_user;
SELECT warmcache_is_warm();
SELECT warmcache_wait_warm(0.9, 0);
RESET ROLE;
SET ROLE regress_wc_ready_monitor;
SELECT warmcache_is_warm() AS monitor_may,
	   warmcache_wait_warm(0.9, 0) >= 0.9 AS monitor_may_wait;
RESET ROLE;
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer,
	   pg_get_function_arguments(p.oid) AS arguments
FROM pg_proc p
WHERE p.proname IN ('warmcache_is_warm', 'warmcache_wait_warm', 'warmcache_saved_tiers')
ORDER BY 1::text;
SET ROLE regress_wc_ready_user;
SELECT * FROM warmcache_saved_tiers();
RESET ROLE;
SET ROLE regress_wc_ready_monitor;
SELECT count(*) AS monitor_may_count FROM warmcache_saved_tiers();
RESET ROLE;

DROP TABLE wc_ready;
DROP ROLE regress_wc_ready_user, regress_wc_ready_monitor;
DROP EXTENSION pg_warmcache;
