# Copyright (c) 2026, pg_warmcache developers
#
# A stray relation file cannot poison the dump.  A file named as the last
# segment of the largest relation a relation can have (99999.32767) and
# 1 GB long, with its last page in the OS page cache, would name block
# 2^32 - 1, which is no block.  The OS tier's walk leaves out what lies
# past the largest block number, and the dump writes no file the reader
# refuses: warmcache_restore_now() reads the file, a restart restores it
# and sets nothing aside.  The oracles are the file on disk, decoded by the
# tests' own reader (t/WarmCache/DumpFormat.pm), util-linux fincore for
# the stray page, and the server log.  A file numbered past the last
# segment is left out too.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions status wait_for_status
  wait_for_restore);
use WarmCache::DumpFormat qw(slurp_bin header runs whole_file);
use WarmCache::PageCache qw(os_cached_bytes_of);

use constant SEGMENT_BYTES => 1024 * 1024 * 1024;

my $node = start_node('stray', "pg_warmcache.dump_os_cache = on\n");
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";
create_extensions($node);
$node->safe_psql(
	'postgres', q{
CREATE TABLE t (id int, pad text);
INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(1, 2000) g;
CHECKPOINT;});
my $db = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $block_size = $node->safe_psql('postgres', 'SHOW block_size');
is($block_size, 8192, 'the server uses 8 kB blocks, 131072 a segment');

# The set-up of the report: a sparse file of 1 GB as the last segment,
# its last page read into the page cache; a second one numbered past it.
my @stray = ("$pgdata/base/$db/99999.32767", "$pgdata/base/$db/99998.32768");
for my $path (@stray)
{
	open(my $fh, '>', $path) or die "could not create \"$path\": $!";
	truncate($fh, SEGMENT_BYTES) or die "could not extend \"$path\": $!";
	close($fh);
	system('dd', "if=$path", 'of=/dev/null', "bs=$block_size",
		'skip=' . (SEGMENT_BYTES / $block_size - 1),
		'count=1', 'status=none') == 0
	  or die "dd could not read the last page of \"$path\"";
}
my $cached = os_cached_bytes_of(@stray);
for my $path (@stray)
{
	cmp_ok($cached->{$path}, '>=', $block_size,
		"the last page of $path is in the OS page cache (fincore)");
}

my $n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok($n, '>', 0, 'warmcache_dump_now() writes a file');
my $bytes = slurp_bin($file);
my $h = header($bytes);
ok(whole_file($bytes),
	'the file holds the runs its header announces, as the tests decode them');
my @runs = runs($bytes);
my @past = grep { $_->[5] + $_->[6] > 0xFFFFFFFF } @runs;
is(scalar(@past), 0, 'no run names a block past the largest block number')
  or diag(explain(\@past));
my @of_stray = grep { $_->[3] == 99999 || $_->[3] == 99998 } @runs;
is(scalar(@of_stray), 0, 'the stray files name no block')
  or diag(explain(\@of_stray));
my ($t_rel) = $node->safe_psql('postgres',
	"SELECT pg_relation_filenode('t')");
ok((grep { $_->[3] == $t_rel && $_->[0] == 0x100 } @runs),
	'the OS tier holds the table that is cached (the walk ran)');

# The reader takes it: restore_now, warmcache_blocks() and the log.
my $offset = -s $node->logfile;
my ($ret, $out, $err) =
  $node->psql('postgres', "SELECT warmcache_restore_now('buffer')");
is("$ret|$out", "0|$h->{nblocks}", 'warmcache_restore_now() accepts the file')
  or diag($err);
wait_for_status($node, "state = 'idle'", 'the restore to end');
is($node->safe_psql('postgres', 'SELECT count(*) FROM warmcache_blocks()'),
	$h->{nblocks}, 'warmcache_blocks() reads every block of the file');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/not usable|is malformed|is corrupt/,
	'the log says nothing is wrong with the file');
like($log, qr/restore of the saved set finished/, 'the restore finished');

# A restart restores the shutdown dump's file and sets nothing aside, with
# the stray page still cached (fincore says so again after the restart).
$offset = -s $node->logfile;
$node->stop;
$bytes = slurp_bin($file);
ok(whole_file($bytes), 'the shutdown dump writes a good file');
$node->start;
wait_for_restore($node);
$log = slurp_file($node->logfile, $offset);
ok(!-e "$file.corrupt", 'the restart set no file aside as .corrupt');
unlike($log, qr/WARNING/, 'the restart logs no WARNING');
is(status($node, 'restore_incomplete, restore_blocks_total'),
	'f|' . header($bytes)->{nblocks}, 'the restart restored the whole file');
cmp_ok(os_cached_bytes_of($stray[0])->{ $stray[0] },
	'>=', $block_size, 'the stray page is still cached after the restart');

# And every later dump is as good.
$n = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
ok(whole_file(slurp_bin($file)), 'the next dump writes a good file too');
is( $node->safe_psql('postgres',
		"SELECT warmcache_restore_now('buffer') > 0"),
	't',
	'and warmcache_restore_now() accepts it');
wait_for_status($node, "state = 'idle'", 'the second restore to end');

unlink(@stray);
$node->stop;
done_testing();
