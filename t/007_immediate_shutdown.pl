# Copyright (c) 2026, pg_warmcache developers
#
# An immediate shutdown writes no dump: the previous file survives byte for
# byte and is restored at the next start.  A leftover temporary file, as a
# crash in the middle of writing a dump leaves, does no harm: the good file
# is used, and the next dump replaces the temporary one.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore
  relation_blocks cached);
use WarmCache::DumpFormat qw(MAGIC HEADER_SIZE slurp_bin write_bin header
  whole_file);

my $node = start_node('immediate');
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";
my $tmp = "$pgdata/pg_warmcache.blocks.tmp";

# Blocks of table t in the saved file.
sub saved_t
{
	return $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM warmcache_blocks()
		WHERE relfilenode = pg_relation_filenode('t') AND fork = 'main'});
}

# Table t is written out and frozen before the checkpoint, so that crash
# recovery has no WAL record that would read its blocks back: if they are
# in shared buffers after the crash, the restore put them there.
create_extensions($node);
$node->safe_psql(
	'postgres', q{
	CREATE TABLE t (id int, pad text);
	INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g;
	VACUUM (FREEZE) t;
	CHECKPOINT;
});
my $t_blocks = relation_blocks($node, 't');
cmp_ok($t_blocks, '>', 10, 'table t has some blocks');
is(cached($node, 't'), $t_blocks, 'all of t is in shared buffers');

my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $saved = slurp_bin($file);
is(header($saved)->{nblocks}, $n, 'the dump wrote the blocks it returned');
is(saved_t(), $t_blocks, 'the dump holds every block of t');

# Touch more blocks so that a dump now would differ in content too.
$node->safe_psql('postgres',
	'CREATE TABLE u AS SELECT g FROM generate_series(1, 10000) g');

$node->stop('immediate');
ok(-e $file, 'the file is there after an immediate shutdown');
ok(slurp_bin($file) eq $saved,
	'an immediate shutdown leaves the previous file unchanged');
ok(!-e $tmp, 'and writes no temporary file');

my $offset = -s $node->logfile;
$node->start;
wait_for_restore($node);
is( $node->safe_psql(
		'postgres',
		'SELECT restore_blocks_total, restore_incomplete, restore_blocks_done > 0 FROM warmcache_status()'
	),
	"$n|f|t",
	'after the crash the saved file is restored completely');
is(cached($node, 't'), $t_blocks,
	'pg_buffercache shows every block of t back in shared buffers');
my $log = slurp_file($node->logfile, $offset);
like(
	$log,
	qr/restoring $n blocks/,
	'the log shows the restore of the saved blocks');
unlike($log, qr/WARNING/, 'no warning about the file');
ok(slurp_bin($file) eq $saved, 'the restore leaves the file unchanged');

# A crash in the middle of a dump leaves a temporary file behind.  Simulate
# it next to a good file, with a cold cache for t.
$node->stop;
my $good = slurp_bin($file);
my $gh = header($good);
ok(whole_file($good), 'the shutdown dump wrote a complete file');
write_bin($tmp, substr($good, 0, HEADER_SIZE + 7) . 'half-written');

$offset = -s $node->logfile;
$node->start;
wait_for_restore($node);
is( $node->safe_psql(
		'postgres',
		'SELECT restore_blocks_total, restore_incomplete FROM warmcache_status()'
	),
	"$gh->{nblocks}|f",
	'with a leftover temporary file, the good file is restored');
is(cached($node, 't'), $t_blocks,
	'pg_buffercache shows every block of t again');
$log = slurp_file($node->logfile, $offset);
unlike($log, qr/WARNING/, 'the leftover temporary file causes no warning');
ok(!-e "$file.corrupt", 'the good file was not set aside');
ok(slurp_bin($file) eq $good, 'the good file is unchanged');

$n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
ok(!-e $tmp, 'the next dump replaces the temporary file');
my $new = slurp_bin($file);
my $nh = header($new);
ok( $nh->{magic} == MAGIC
	  && $nh->{nblocks} == $n
	  && $nh->{dumped_at} > $gh->{dumped_at}
	  && whole_file($new),
	'the new file is complete and newer');
is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
	$n, 'warmcache_blocks() reads the new file');

$node->stop;
done_testing();
