--
-- What warm() and warm_table() refuse, and why.
--
CREATE EXTENSION pg_warmcache;
\set VERBOSITY default

-- Ten blocks exactly: each row fills most of a page.
CREATE TABLE wc_t (pad text) WITH (autovacuum_enabled = off);
ALTER TABLE wc_t ALTER COLUMN pad SET STORAGE PLAIN;
INSERT INTO wc_t SELECT repeat('x', 5000) FROM generate_series(1, 10);
CREATE INDEX wc_t_pad ON wc_t (left(pad, 1));
SELECT pg_relation_size('wc_t') / current_setting('block_size')::int AS blocks;
CREATE TABLE wc_empty (a int);

-- NULL relation, mode or fork.
SELECT warm(NULL);
SELECT warm('wc_t', NULL);
SELECT warm('wc_t', 'buffer', NULL);
SELECT warm_table(NULL);
SELECT warm_table('wc_t', NULL);
-- NULL block numbers are not errors: they mean the whole fork.
SELECT warm('wc_t', 'read', 'main', NULL, NULL);

-- Unknown mode.  Mode names are lower case.
SELECT warm('wc_t', 'bogus');
SELECT warm('wc_t', 'BUFFER');
SELECT warm('wc_t', '');
SELECT warm_table('wc_t', 'bogus');

-- Unknown fork name.
SELECT warm('wc_t', 'buffer', 'bogus');

-- Forks that do not exist: init of a logged table, and the visibility map
-- and free space map of a table no VACUUM has seen.
SELECT warm('wc_t', 'buffer', 'init');
SELECT warm('wc_t', 'buffer', 'vm');
SELECT warm('wc_empty', 'read', 'fsm');
SELECT warm('wc_t_pad', 'buffer', 'vm');

-- Block numbers outside the fork, and a reversed range.
SELECT warm('wc_t', first_block => -1);
SELECT warm('wc_t', first_block => 10);
SELECT warm('wc_t', last_block => -1);
SELECT warm('wc_t', last_block => 10);
SELECT warm('wc_t', first_block => 3, last_block => 10);
SELECT warm('wc_t', first_block => -5, last_block => 10);	-- first_block named
SELECT warm('wc_t', first_block => 4294967295);	-- InvalidBlockNumber
SELECT warm('wc_t', first_block => 4294967296);
SELECT warm('wc_t', last_block => 9223372036854775807);
SELECT warm('wc_t', first_block => 5, last_block => 4);
SELECT warm('wc_t', first_block => 9, last_block => 0);
SELECT warm('wc_empty', first_block => 0);
SELECT warm('wc_empty', last_block => 0);
-- The edges are fine.
SELECT warm('wc_t', first_block => 0, last_block => 0);
SELECT warm('wc_t', first_block => 9, last_block => 9);
SELECT warm('wc_t', first_block => 0, last_block => 9);

-- Relations without storage go to warm() in vain.
CREATE VIEW wc_view AS SELECT * FROM wc_t;
CREATE TABLE wc_parted (id int) PARTITION BY RANGE (id);
CREATE TABLE wc_parted_1 PARTITION OF wc_parted FOR VALUES FROM (0) TO (10);
CREATE INDEX wc_parted_id ON wc_parted (id);
CREATE FOREIGN DATA WRAPPER wc_dummy;
CREATE SERVER wc_server FOREIGN DATA WRAPPER wc_dummy;
CREATE FOREIGN TABLE wc_foreign (id int) SERVER wc_server;
CREATE TYPE wc_type AS (a int, b text);
SELECT warm('wc_view');
SELECT warm('wc_parted');
SELECT warm('wc_parted', 'read');
SELECT warm('wc_parted_id');
SELECT warm('wc_foreign');
SELECT warm('wc_type');
-- Their partitions and the partitions' indexes do have storage.
SELECT warm('wc_parted_1'), warm('wc_parted_1_id_idx');

-- warm_table() takes tables, partitioned tables and materialized views.
CREATE SEQUENCE wc_seq;
SELECT warm_table('wc_t_pad');
SELECT warm_table('wc_view');
SELECT warm_table('wc_seq');
SELECT warm_table('wc_parted_id');
SELECT warm_table('wc_foreign');
SELECT warm_table('wc_type');

-- A relation that does not exist, as a concurrently dropped one looks.
SELECT warm(999999::oid::regclass);
SELECT warm(999999::oid::regclass, 'read', 'vm', 0, 0);
SELECT warm_table(999999::oid::regclass);

-- The SQLSTATEs of the above.
\set VERBOSITY sqlstate
SELECT warm(NULL);						-- null_value_not_allowed
SELECT warm_table('wc_t', NULL);
SELECT warm('wc_t', 'bogus');			-- invalid_parameter_value
SELECT warm('wc_t', 'buffer', 'bogus');
SELECT warm('wc_t', 'buffer', 'init');
SELECT warm('wc_t', first_block => 10);
SELECT warm('wc_t', first_block => 5, last_block => 4);
SELECT warm('wc_view');					-- wrong_object_type
SELECT warm('wc_parted');
SELECT warm('wc_parted_id');
SELECT warm('wc_foreign');
SELECT warm_table('wc_t_pad');
SELECT warm_table('wc_seq');
SELECT warm(999999::oid::regclass);		-- undefined_table
SELECT warm_table(999999::oid::regclass);
\set VERBOSITY default

DROP TABLE wc_t, wc_empty, wc_parted CASCADE;
DROP FOREIGN TABLE wc_foreign;
DROP SERVER wc_server;
DROP FOREIGN DATA WRAPPER wc_dummy;
DROP TYPE wc_type;
DROP SEQUENCE wc_seq;
DROP EXTENSION pg_warmcache;
