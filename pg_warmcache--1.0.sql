/* pg_warmcache--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_warmcache" to load this file. \quit

-- Warm one relation fork, as pg_prewarm() does; SELECT on the table needed.
CREATE FUNCTION warm(relation regclass,
					 mode text DEFAULT 'buffer',
					 fork text DEFAULT 'main',
					 first_block int8 DEFAULT NULL,
					 last_block int8 DEFAULT NULL)
RETURNS int8
AS 'MODULE_PATHNAME', 'warm'
LANGUAGE C PARALLEL SAFE;

-- Warm a table, its indexes and TOAST, and all partitions of a partitioned one.
CREATE FUNCTION warm_table(tab regclass, mode text DEFAULT 'buffer')
RETURNS int8
AS 'MODULE_PATHNAME', 'warm_table'
LANGUAGE C PARALLEL SAFE;

-- Server-wide operations: not for PUBLIC.
CREATE FUNCTION warmcache_dump_now()
RETURNS int8
AS 'MODULE_PATHNAME', 'warmcache_dump_now'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION warmcache_restore_now(mode text DEFAULT NULL)
RETURNS int8
AS 'MODULE_PATHNAME', 'warmcache_restore_now'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION warmcache_restore_abort()
RETURNS bool
AS 'MODULE_PATHNAME', 'warmcache_restore_abort'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION warmcache_status(
	OUT state text,
	OUT worker_pid int4,
	OUT last_dump_at timestamptz,
	OUT last_dump_blocks int8,
	OUT last_dump_seconds float8,
	OUT restore_mode text,
	OUT restore_started_at timestamptz,
	OUT restore_finished_at timestamptz,
	OUT restore_blocks_total int8,
	OUT restore_blocks_done int8,
	OUT restore_blocks_skipped int8,
	OUT restore_blocks_os_only int8,
	OUT restore_mb_per_s float8,
	OUT restore_seconds_left float8,
	OUT restore_incomplete bool,
	OUT abort_requested bool)
RETURNS record
AS 'MODULE_PATHNAME', 'warmcache_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION warmcache_blocks(
	OUT database oid,
	OUT tablespace oid,
	OUT relfilenode oid,
	OUT fork text,
	OUT block int8,
	OUT rank int4)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'warmcache_blocks'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION warmcache_dump_now() FROM PUBLIC;
REVOKE ALL ON FUNCTION warmcache_restore_now(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION warmcache_restore_abort() FROM PUBLIC;
REVOKE ALL ON FUNCTION warmcache_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION warmcache_blocks() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warmcache_status() TO pg_monitor;
GRANT EXECUTE ON FUNCTION warmcache_blocks() TO pg_monitor;
