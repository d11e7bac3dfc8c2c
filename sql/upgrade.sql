--
-- The update from 1.0 to 1.1 (warmcache_status() gains the reasons of an
-- incomplete restore), and the 1.0 functions working with this library.
--
DROP EXTENSION IF EXISTS pg_warmcache;
CREATE EXTENSION pg_warmcache VERSION '1.0';
SELECT pronargs, array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT state IN ('idle', 'restoring', 'dumping') AS state_known,
       restore_incomplete IS NOT NULL AS has_incomplete
  FROM warmcache_status();
-- Custom privileges survive the update.  A view on a function the update
-- replaces stops it with a clear error, and nothing changes.
CREATE ROLE regress_wc_reader;
GRANT EXECUTE ON FUNCTION warmcache_blocks() TO regress_wc_reader;
CREATE VIEW regress_wc_status AS SELECT state FROM warmcache_status();
DO $$
DECLARE
	m text;
	d text;
	h text;
BEGIN
	ALTER EXTENSION pg_warmcache UPDATE TO '1.1';
EXCEPTION WHEN dependent_objects_still_exist THEN
	GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RAISE NOTICE E'%\nDETAIL: %\nHINT: %', m, d, h;
END
$$;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT state IN ('idle', 'restoring', 'dumping') AS view_works FROM regress_wc_status;
DROP VIEW regress_wc_status;
ALTER EXTENSION pg_warmcache UPDATE TO '1.1';
SELECT has_function_privilege('regress_wc_reader', 'warmcache_blocks()', 'EXECUTE') AS reader_may;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT state IN ('idle', 'restoring', 'dumping') AS state_known,
       restore_incomplete_reason IS NULL AS no_reason
  FROM warmcache_status();
-- The privileges of the new function are those of the old one.
SELECT has_function_privilege('public', 'warmcache_status()', 'EXECUTE') AS public_may,
       has_function_privilege('pg_monitor', 'warmcache_status()', 'EXECUTE') AS monitor_may;
-- 1.1 to 1.2: the standby channel's table, and warmcache_status() says what
-- a restore read and what a standby follows.  The 1.1 function works with
-- this library until then.
SELECT state IN ('idle', 'restoring', 'dumping') AS state_known FROM warmcache_status();
GRANT EXECUTE ON FUNCTION warmcache_status() TO regress_wc_reader WITH GRANT OPTION;
CREATE VIEW regress_wc_status AS SELECT state FROM warmcache_status();
DO $$
DECLARE
	m text;
	d text;
	h text;
BEGIN
	ALTER EXTENSION pg_warmcache UPDATE TO '1.2';
EXCEPTION WHEN dependent_objects_still_exist THEN
	GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
	RAISE NOTICE E'%\nDETAIL: %\nHINT: %', m, d, h;
END
$$;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
DROP VIEW regress_wc_status;
ALTER EXTENSION pg_warmcache UPDATE TO '1.2';
SELECT has_function_privilege('regress_wc_reader', 'warmcache_status()', 'EXECUTE WITH GRANT OPTION') AS reader_may_grant,
       has_function_privilege('regress_wc_reader', 'warmcache_blocks()', 'EXECUTE') AS reader_may;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT follow_state IS NULL AS not_following,
       followed_dump_at IS NULL AS nothing_followed
  FROM warmcache_status();
SELECT count(*) AS published_rows FROM warmcache_published;
SELECT has_table_privilege('public', 'warmcache_published', 'SELECT') AS public_may_read,
       has_table_privilege('pg_monitor', 'warmcache_published', 'SELECT') AS monitor_may_read;
-- The table belongs to the extension and goes with it.
SELECT count(*) AS member FROM pg_depend
 WHERE classid = 'pg_class'::regclass AND objid = 'warmcache_published'::regclass
   AND refclassid = 'pg_extension'::regclass AND deptype = 'e';
DROP EXTENSION pg_warmcache;
DROP ROLE regress_wc_reader;
SELECT to_regclass('warmcache_published') IS NULL AS table_gone;
CREATE EXTENSION pg_warmcache;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
-- 1.2 to 1.3: the readiness functions and warmcache_saved_tiers(), revoked
-- from PUBLIC and granted to pg_monitor; nothing else changes.
DROP EXTENSION pg_warmcache;
CREATE EXTENSION pg_warmcache VERSION '1.2';
SELECT count(*) AS new_functions FROM pg_proc
 WHERE proname IN ('warmcache_is_warm', 'warmcache_wait_warm', 'warmcache_saved_tiers');
ALTER EXTENSION pg_warmcache UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT p.oid::regprocedure AS function,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_may,
	   has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS monitor_may
  FROM pg_proc p
 WHERE proname IN ('warmcache_is_warm', 'warmcache_wait_warm', 'warmcache_saved_tiers')
 ORDER BY 1::text;
SELECT warmcache_is_warm(0) AS answers;
-- 1.3 to 1.4: warmcache_status() says which database a restore waits for.
-- The 1.3 function works with this library until then; its privileges
-- survive the update.
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT state IN ('idle', 'restoring', 'dumping') AS state_known FROM warmcache_status();
CREATE ROLE regress_wc_reader;
GRANT EXECUTE ON FUNCTION warmcache_status() TO regress_wc_reader;
ALTER EXTENSION pg_warmcache UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT restore_waiting_for_database IS NULL AS not_waiting FROM warmcache_status();
SELECT has_function_privilege('regress_wc_reader', 'warmcache_status()', 'EXECUTE') AS reader_may,
       has_function_privilege('pg_monitor', 'warmcache_status()', 'EXECUTE') AS monitor_may;
-- 1.4 to 1.5: warmcache_status() counts the blocks left out past the
-- restore limit; warmcache_relations() and warmcache_estimate() come,
-- revoked from PUBLIC and granted to pg_monitor.  The 1.4 function works
-- with this library until then; its privileges survive the update.
SELECT restore_waiting_for_database IS NULL AS not_waiting FROM warmcache_status();
ALTER EXTENSION pg_warmcache UPDATE TO '1.5';
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT coalesce(restore_skipped_limit, 0) = 0 AS none_left_out FROM warmcache_status();
SELECT has_function_privilege('regress_wc_reader', 'warmcache_status()', 'EXECUTE') AS reader_may;
SELECT p.proname,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_may,
       has_function_privilege('pg_monitor', p.oid, 'EXECUTE') AS monitor_may
  FROM pg_proc p
 WHERE proname IN ('warmcache_relations', 'warmcache_estimate')
 ORDER BY 1;
-- 1.5 to 1.6: warmcache_status() names the holder of a lock the channel
-- found taken.  The 1.5 function works with this library until then; its
-- privileges survive the update.
SELECT coalesce(restore_skipped_limit, 0) = 0 AS none_left_out FROM warmcache_status();
ALTER EXTENSION pg_warmcache UPDATE TO '1.6';
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT channel_lock_holder IS NULL AS no_holder FROM warmcache_status();
SELECT has_function_privilege('regress_wc_reader', 'warmcache_status()', 'EXECUTE') AS reader_may;
-- Updating a current extension is a no-op.
ALTER EXTENSION pg_warmcache UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
-- The grant is among the extension's initial privileges: it goes with it.
DROP EXTENSION pg_warmcache;
DROP ROLE regress_wc_reader;
CREATE EXTENSION pg_warmcache;
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
