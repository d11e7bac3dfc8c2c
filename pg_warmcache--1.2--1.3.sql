/* pg_warmcache--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_warmcache UPDATE TO '1.3'" to load this file. \quit

-- Readiness: whether this server holds what it is restoring, following or
-- loading at promotion, for probes, load balancer checks and failover
-- managers.  Both only read shared memory; the waiting one sleeps on its
-- latch between looks and holds nothing while it waits.

CREATE OR REPLACE FUNCTION warmcache_is_warm(min_fraction float8 DEFAULT 0.9)
RETURNS bool
AS 'MODULE_PATHNAME', 'warmcache_is_warm'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE OR REPLACE FUNCTION warmcache_wait_warm(min_fraction float8 DEFAULT 0.9,
											   wait_seconds int4 DEFAULT 60)
RETURNS float8
AS 'MODULE_PATHNAME', 'warmcache_wait_warm'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION warmcache_is_warm(float8) IS
	'whether this server holds at least min_fraction of what it is restoring, following or loading at promotion';
COMMENT ON FUNCTION warmcache_wait_warm(float8, int4) IS
	'waits at most wait_seconds for warmcache_is_warm(min_fraction); returns the fraction held';

REVOKE ALL ON FUNCTION warmcache_is_warm(float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION warmcache_wait_warm(float8, int4) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warmcache_is_warm(float8) TO pg_monitor;
GRANT EXECUTE ON FUNCTION warmcache_wait_warm(float8, int4) TO pg_monitor;

-- The saved set's size per tier, for monitoring: warmcache_blocks() has a
-- row per block, too many to count at every scrape.
CREATE OR REPLACE FUNCTION warmcache_saved_tiers(OUT tier text, OUT blocks int8,
												 OUT bytes int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'warmcache_saved_tiers'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION warmcache_saved_tiers() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warmcache_saved_tiers() TO pg_monitor;
