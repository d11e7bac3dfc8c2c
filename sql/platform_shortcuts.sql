--
-- pg_warmcache.platform_shortcuts: a developer option for the benchmarks.
-- What it takes, what it refuses, and who may set it.
--
SHOW pg_warmcache.platform_shortcuts;
SET pg_warmcache.platform_shortcuts = 'prefault, DEVICE_PIECE';
SHOW pg_warmcache.platform_shortcuts;
SET pg_warmcache.platform_shortcuts = '';
SHOW pg_warmcache.platform_shortcuts;
SET pg_warmcache.platform_shortcuts = 'all';
SET pg_warmcache.platform_shortcuts = 'prefault, read_twice';
SET pg_warmcache.platform_shortcuts = 'prefault,,cachestat';
CREATE ROLE wc_shortcut_user;
SET ROLE wc_shortcut_user;
SET pg_warmcache.platform_shortcuts = 'cachestat';
RESET ROLE;
DROP ROLE wc_shortcut_user;
RESET pg_warmcache.platform_shortcuts;
SHOW pg_warmcache.platform_shortcuts;
