/* pg_warmcache--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_warmcache UPDATE TO '1.1'" to load this file. \quit

-- A function whose result columns change cannot be replaced in place: the
-- old one is renamed, the new one created, and the old one's privileges
-- (custom GRANTs included) carried over before it is dropped.  Objects that
-- depend on it (a view) would stop the DROP with a misleading hint, so they
-- stop the update first, with a clear one.  This runs as a superuser with
-- the extension's schema, which others may be able to write, as the search
-- path: the extension's own functions are named as they are (nobody else
-- can have a function of that name and signature there), everything else
-- is qualified, operators included.

-- warmcache_status() says why a restore is incomplete, what was skipped for
-- which reason, and how much of the restore is the OS tier.
ALTER FUNCTION warmcache_status() RENAME TO warmcache_status_1_0;

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
	OUT restore_os_tier_done int8)
RETURNS record
AS 'MODULE_PATHNAME', 'warmcache_status'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- warmcache_blocks() says each block's tier: shared buffers, or the OS page
-- cache only (those have no rank).
ALTER FUNCTION warmcache_blocks() RENAME TO warmcache_blocks_1_0;

CREATE FUNCTION warmcache_blocks(
	OUT database oid,
	OUT tablespace oid,
	OUT relfilenode oid,
	OUT fork text,
	OUT block int8,
	OUT rank int4,
	OUT tier text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'warmcache_blocks'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

DO $$
DECLARE
	fn text;
	old_fn pg_catalog.regprocedure;
	new_fn pg_catalog.regprocedure;
	old_acl pg_catalog.aclitem[];
	dependents text;
	g record;
BEGIN
	FOREACH fn IN ARRAY ARRAY['warmcache_status', 'warmcache_blocks']
	LOOP
		old_fn := pg_catalog.format('%s_1_0()', fn)::pg_catalog.regprocedure;
		new_fn := pg_catalog.format('%s()', fn)::pg_catalog.regprocedure;
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
			RAISE EXCEPTION 'cannot update extension pg_warmcache: other objects depend on function %()', fn
				USING ERRCODE = 'dependent_objects_still_exist',
					  DETAIL = pg_catalog.format('%s depends on it, and the update replaces it with a function that returns more columns.', dependents),
					  HINT = 'Drop the dependent objects, run ALTER EXTENSION pg_warmcache UPDATE, then create them again.';
		END IF;

		SELECT p.proacl INTO old_acl
		  FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) old_fn;
		CONTINUE WHEN old_acl IS NULL;	-- default privileges, as the new one has
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
	END LOOP;
END
$$;

DROP FUNCTION warmcache_status_1_0();
DROP FUNCTION warmcache_blocks_1_0();
