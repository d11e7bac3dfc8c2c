/* pg_warmcache--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_warmcache UPDATE TO '1.6'" to load this file. \quit

-- warmcache_status() names the process that holds a lock the standby
-- channel found taken.  The function is replaced with its privileges, as
-- in 1.4 to 1.5.
ALTER FUNCTION warmcache_status() RENAME TO warmcache_status_1_5;

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
	OUT followed_os_tier_warm int8,
	OUT restore_waiting_for_database oid,
	OUT restore_skipped_limit int8,
	OUT channel_lock_holder int4)
RETURNS record
AS 'MODULE_PATHNAME', 'warmcache_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

DO $$
DECLARE
	old_fn pg_catalog.regprocedure := 'warmcache_status_1_5()';
	new_fn pg_catalog.regprocedure := 'warmcache_status()';
	old_acl pg_catalog.aclitem[];
	dependents text;
	g record;
BEGIN
	SELECT pg_catalog.string_agg(CASE WHEN r.oid IS NULL
				THEN pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
				ELSE pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, r.ev_class, 0) END,
			', ')
	  INTO dependents
	  FROM pg_catalog.pg_depend d
	  LEFT JOIN pg_catalog.pg_rewrite r
		ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
	   AND r.oid OPERATOR(pg_catalog.=) d.objid
	 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
	   AND d.refobjid OPERATOR(pg_catalog.=) old_fn
	   AND d.deptype OPERATOR(pg_catalog.<>) 'e';
	IF dependents IS NOT NULL THEN
		RAISE EXCEPTION 'cannot update extension pg_warmcache: other objects depend on function warmcache_status()'
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = pg_catalog.format('%s depends on it, and the update replaces it with a function that returns more columns.', dependents),
				  HINT = 'Drop the dependent objects, run ALTER EXTENSION pg_warmcache UPDATE, then create them again.';
	END IF;

	SELECT p.proacl INTO old_acl
	  FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) old_fn;
	IF old_acl IS NULL THEN
		RETURN;					-- default privileges, as the new one has
	END IF;
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', new_fn);
	FOR g IN
		SELECT a.grantee, a.is_grantable
		  FROM pg_catalog.aclexplode(old_acl) a
		 WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new_fn,
			CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
				 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
			CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;

DROP FUNCTION warmcache_status_1_5();
