/* pg_warmcache--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_warmcache UPDATE TO '1.1'" to load this file. \quit

-- warmcache_status() says why a restore is incomplete and what was skipped
-- for which reason.
DROP FUNCTION warmcache_status();

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
	OUT abort_requested bool,
	OUT restore_incomplete_reason text,
	OUT restore_skipped_gone int8,
	OUT restore_skipped_excluded int8,
	OUT restore_skipped_locked int8,
	OUT restore_skipped_failed int8)
RETURNS record
AS 'MODULE_PATHNAME', 'warmcache_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION warmcache_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warmcache_status() TO pg_monitor;
