# Copyright (c) 2026, pg_warmcache developers
#
# The OS tier: a dump records which blocks of the relation files the OS
# page cache holds, and a restart with an empty page cache brings them back
# there.  The oracle is util-linux fincore, which shares nothing with the
# module; the page cache is emptied file by file with posix_fadvise
# (DONTNEED) after a clean shutdown.  Covered: tables larger than
# shared_buffers read only by sequential scans (a ring of buffers, so they
# live in the OS cache alone), a tablespace outside the data directory, a
# second 1 GB segment, a relation dropped and one truncated between dump
# and restore, a second restart (what the restore put back is in the next
# dump), a version 1 file, and pg_warmcache.dump_os_cache = off.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Find;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(start_node create_extensions wait_for_restore_line
  relation_blocks cached);
use WarmCache::DumpFormat qw(FORMAT_VERSION slurp_bin write_bin header runs
  write_dump_file);
use WarmCache::PageCache qw(resident_blocks evict_files);

my $node = start_node(
	'os_tier', q{
shared_buffers = 16MB
pg_warmcache.dump_os_cache = on
pg_warmcache.restore_workers = 1
});
my $pgdata = $node->data_dir;
my $file = "$pgdata/pg_warmcache.blocks";
my $tsdir = PostgreSQL::Test::Utils::tempdir();

create_extensions($node);
$node->safe_psql(
	'postgres', qq{
CREATE TABLESPACE outside LOCATION '$tsdir';
CREATE TABLE big (id int, pad text) WITH (autovacuum_enabled = off);
INSERT INTO big SELECT g, repeat('b', 900) FROM generate_series(1, 24000) g;
CREATE TABLE far (id int, pad text) TABLESPACE outside;
INSERT INTO far SELECT g, repeat('f', 900) FROM generate_series(1, 8000) g;
CREATE TABLE dropme (id int, pad text);
INSERT INTO dropme SELECT g, repeat('d', 900) FROM generate_series(1, 4000) g;
CREATE TABLE truncme (id int, pad text);
INSERT INTO truncme SELECT g, repeat('t', 900) FROM generate_series(1, 4000) g;
-- more than one segment: 1 GB and a little more
CREATE TABLE huge (pad text) WITH (autovacuum_enabled = off, fillfactor = 10);
INSERT INTO huge SELECT repeat('h', 700) FROM generate_series(1, 132072);
CHECKPOINT;
});

sub path_of
{
	my ($rel) = @_;
	return "$pgdata/"
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')");
}

# Every relation file of the cluster, for eviction.
sub relation_files
{
	my @files;
	find(
		sub {
			push @files, $File::Find::name
			  if -f $_ && $File::Find::name =~ m{/(base|global|PG_[^/]+)/(\d+/)?\d+(_\w+)?(\.\d+)?$};
		},
		"$pgdata/base", "$pgdata/global", $tsdir);
	return @files;
}

sub blocks_of
{
	my ($rel) = @_;
	return relation_blocks($node, $rel);
}

my %path = map { $_ => path_of($_) } qw(big far dropme truncme huge);
my $huge_seg1 = "$path{huge}.1";
ok(-f $huge_seg1, 'huge has a second segment');

# Read everything once by sequential scans: it lands in the OS cache, and
# (larger than shared_buffers) mostly not in shared buffers.  Of huge only
# the second segment: with its first gigabyte each restore would take
# seconds at the device's rate, and what it restored first would sit
# untouched for that long, which the machine's memory management may take
# pages of (see OS_CACHE_SHARE in WarmCache::PageCache).
$node->safe_psql('postgres',
	'SELECT count(*) FROM big; SELECT count(*) FROM far; '
	  . 'SELECT count(*) FROM dropme; SELECT count(*) FROM truncme;');
evict_files($path{huge});
$node->safe_psql('postgres',
	q{SELECT count(*) FROM huge WHERE ctid >= '(131072,0)'});
my %rel_blocks = map { $_ => blocks_of($_) } qw(big far dropme truncme huge);
cmp_ok(resident_blocks($path{big}), '>=', 0.95 * $rel_blocks{big},
	'before the dump: the OS cache holds big');
cmp_ok(cached($node, 'big'), '<', 0.5 * $rel_blocks{big},
	'before the dump: shared buffers hold less than half of big');

my $dumped = $node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
my $os_rows = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND rank IS NULL
   AND relfilenode = pg_relation_filenode('big') AND fork = 'main'});
cmp_ok($os_rows, '>=', 0.95 * $rel_blocks{big},
	"the dump's OS tier holds big ($os_rows of $rel_blocks{big} blocks)");
cmp_ok(
	$node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('huge')
   AND block >= 131072}), '>', 0,
	"the dump's OS tier holds blocks of huge's second segment");
cmp_ok(
	$node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('far')
   AND tablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'outside')}),
	'>=', 0.95 * $rel_blocks{far},
	"the dump's OS tier holds the table in the tablespace outside");
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM warmcache_blocks() WHERE tier = 'buffer' AND rank IS NULL}),
	'0', 'blocks of the buffer tier have a rank');

# The file keeps the dump's order: the OS tier after rank 0.
my @runs = runs(slurp_bin($file));
my $seen_os = 0;
my $order_ok = 1;
for my $r (@runs)
{
	$seen_os = 1 if $r->[0] == 0x100;
	$order_ok = 0 if $seen_os && $r->[0] != 0x100;
}
ok($seen_os && $order_ok, 'the OS tier comes last in the file');
is(header(slurp_bin($file))->{version}, FORMAT_VERSION,
	'the file is of the current format version');

# Between the dump and the restart.
$node->safe_psql('postgres', 'DROP TABLE dropme; TRUNCATE truncme;');

# A clean stop writes a shutdown dump: keep the one above instead, so that
# dropme and truncme are in it.
my $saved = slurp_bin($file);
$node->stop;
write_bin($file, $saved);
evict_files(relation_files());
cmp_ok(resident_blocks($path{big}), '<', 0.05 * $rel_blocks{big},
	'after eviction: the OS cache holds (almost) nothing of big');

my $offset = -s $node->logfile;
$node->start;
my $line = wait_for_restore_line($node, $offset);
note $line;
like(
	slurp_file($node->logfile, $offset),
	qr/blocks were in the OS page cache only; they go back there/,
	'the restore says how much of it is the OS tier');

cmp_ok(resident_blocks($path{big}), '>=', 0.95 * $rel_blocks{big},
	'after the restart: the OS cache holds big again');
cmp_ok(resident_blocks($path{far}), '>=', 0.95 * $rel_blocks{far},
	'after the restart: the OS cache holds the table in the tablespace outside');
cmp_ok(resident_blocks($huge_seg1), '>=',
	0.95 * ($rel_blocks{huge} - 131072),
	"after the restart: the OS cache holds huge's second segment");

my ($incomplete, $os_total, $os_done, $gone, $excluded) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT restore_incomplete, restore_os_tier_total, restore_os_tier_done,
       restore_skipped_gone, restore_skipped_excluded
  FROM warmcache_status()});
is($incomplete, 'f', 'the restore is complete');
cmp_ok($os_total, '>', 0, 'status: the OS tier has blocks');
cmp_ok($os_done + $gone + $excluded, '>=', $os_total,
	'status: the OS tier was restored but what is gone or in templates');
cmp_ok($gone, '>=', $rel_blocks{dropme} + $rel_blocks{truncme},
	'the dropped and the truncated table were skipped as gone');
ok(!-e $path{dropme}, 'the dropped table stays dropped');

# Successive restarts: what the restore put in the OS cache is in the next
# dump's OS tier, and comes back after the next restart.
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
cmp_ok(
	$node->safe_psql(
		'postgres', q{
SELECT count(*) FROM warmcache_blocks()
 WHERE tier = 'os' AND relfilenode = pg_relation_filenode('big')}),
	'>=', 0.95 * $rel_blocks{big},
	"the next dump's OS tier holds big again");
$saved = slurp_bin($file);
$node->stop;
write_bin($file, $saved);
evict_files(relation_files());
$offset = -s $node->logfile;
$node->start;
wait_for_restore_line($node, $offset);
cmp_ok(resident_blocks($path{big}), '>=', 0.95 * $rel_blocks{big},
	'after a second restart: the OS cache holds big again');

# A file of format version 2 (runs of 28 bytes) is still read, both tiers:
# a restore worker finds each rank's runs by their record index there, by
# a group's file offset in version 3.
my $h = header($saved);
$node->stop;
write_dump_file($file, { %$h, version => 2 }, [ runs($saved) ]);
evict_files(relation_files());
$offset = -s $node->logfile;
$node->start;
$line = wait_for_restore_line($node, $offset);
like($line, qr/restored \d+ of $h->{nblocks} blocks/, 'a version 2 file is restored');
unlike(slurp_file($node->logfile, $offset), qr/not usable/,
	'a version 2 file is not set aside');
cmp_ok(resident_blocks($path{big}), '>=', 0.95 * $rel_blocks{big},
	'a version 2 file: the OS cache holds big again');

# A file of format version 1 (no OS tier) is still read.
my @v1_runs = grep { $_->[0] != 0x100 } runs($saved);
$node->stop;
write_dump_file($file, { %$h, version => 1 }, \@v1_runs);
$offset = -s $node->logfile;
$node->start;
$line = wait_for_restore_line($node, $offset);
my $v1_blocks = 0;
$v1_blocks += $_->[6] for @v1_runs;
like($line, qr/of $v1_blocks blocks/, 'a version 1 file is restored');
unlike(slurp_file($node->logfile, $offset), qr/not usable/,
	'a version 1 file is not set aside');

# Off: no OS tier in the dump.
$node->append_conf('postgresql.conf', 'pg_warmcache.dump_os_cache = off');
$node->reload;
$node->safe_psql('postgres', 'SELECT count(*) FROM big');
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM warmcache_blocks() WHERE tier = 'os'}),
	'0', 'with dump_os_cache off the dump has no OS tier');

$node->stop;
done_testing();
