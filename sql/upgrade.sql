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
ALTER EXTENSION pg_warmcache UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'pg_warmcache';
SELECT array_length(proallargtypes, 1) AS columns
  FROM pg_proc WHERE proname = 'warmcache_status';
SELECT state IN ('idle', 'restoring', 'dumping') AS state_known,
       restore_incomplete_reason IS NULL AS no_reason
  FROM warmcache_status();
-- The privileges of the new function are those of the old one.
SELECT has_function_privilege('public', 'warmcache_status()', 'EXECUTE') AS public_may,
       has_function_privilege('pg_monitor', 'warmcache_status()', 'EXECUTE') AS monitor_may;
