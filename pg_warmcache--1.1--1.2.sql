/* pg_warmcache--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_warmcache UPDATE TO '1.2'" to load this file. \quit

-- The standby channel: in the database postgres, the primary's autowarm
-- worker keeps its last dump file here, in pieces of up to 1 MB, and
-- standbys with pg_warmcache.follow_primary on read it back.  Replication
-- carries it; nothing else uses it.
CREATE TABLE warmcache_published (
	chunk int4 PRIMARY KEY,
	dumped_at timestamptz NOT NULL,
	data bytea NOT NULL
);

REVOKE ALL ON TABLE warmcache_published FROM PUBLIC;
GRANT SELECT ON TABLE warmcache_published TO pg_monitor;

COMMENT ON TABLE warmcache_published IS
	'the primary''s last dump file, for standbys that follow it (pg_warmcache.follow_primary)';

-- warmcache_status() says what a restore read, and on a standby what it
-- follows of the primary's hot set.
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
	OUT restore_skipped_failed int8,
	OUT restore_os_tier_total int8,
	OUT restore_os_tier_done int8,
	OUT restore_source text,
	OUT follow_state text,
	OUT followed_dump_at timestamptz,
	OUT followed_buffer_tier int8,
	OUT followed_os_tier int8,
	OUT followed_buffer_tier_warm int8,
	OUT followed_os_tier_warm int8)
RETURNS record
AS 'MODULE_PATHNAME', 'warmcache_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION warmcache_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION warmcache_status() TO pg_monitor;
