# Copyright (c) 2026, pg_warmcache developers
#
# The extension image (make image, docs/kubernetes.md) keeps CloudNativePG's
# contract: a server that has nothing of pg_warmcache in its own
# directories, with extension_control_path, dynamic_library_path and
# shared_preload_libraries pointing into the unpacked image, as the operator
# sets them, loads the library, creates the extension, dumps, and after a
# restart on a cold OS cache has the hot set back in shared buffers.
# Kubernetes itself does not run here: the image volume is the image
# unpacked into a directory.
#
# The oracle of the image shares no code with its build: it reads the OCI
# layout's index.json, manifest and config as JSON, checks each blob's
# digest, and untars the layers with tar.  The server is a copy of this
# major's bin, lib and share trees (PostgreSQL finds its share and lib
# relative to its binary) without pg_warmcache's files, which test/run
# installs into the trees before the TAP tests.  From 18 on: below,
# extension_control_path does not exist.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use Digest::SHA ();
use IPC::Run ();
use File::Basename qw(dirname);
use File::Find ();
use File::Path qw(make_path rmtree);
use JSON::PP ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WarmCache::Cluster qw(create_extensions wait_for_restore cached fill_table);
use WarmCache::PageCache qw(evict_files resident_blocks);

# This major's pg_config: the first on the PATH, as make installcheck sets
# it.
my ($pg_config) = grep { -x } map { "$_/pg_config" } split /:/, $ENV{PATH};
die 'no pg_config on the PATH' unless $pg_config;
sub pg_config
{
	my ($opt) = @_;
	my $out = `'$pg_config' --$opt`;
	die "$pg_config --$opt failed" if $? != 0;
	chomp $out;
	return $out;
}
my ($major) = pg_config('version') =~ /^PostgreSQL (\d+)/;
plan skip_all => "PostgreSQL $major has no extension_control_path (18 on)"
  if $major < 18;
plan skip_all => 'umoci, which make image needs, is not installed'
  if system('umoci --version >/dev/null 2>&1') != 0;

my $tmp = PostgreSQL::Test::Utils::tempdir;

# ---- The image, as make image builds it from this tree.
my $layout = "$tmp/layout";
my ($tag, $err);
{
	# The build is a user's: none of the make that runs the tests.
	local $ENV{MAKEFLAGS};
	local $ENV{MAKELEVEL};
	local $ENV{MFLAGS};
	delete @ENV{qw(MAKEFLAGS MAKELEVEL MFLAGS)};
	my $ok = IPC::Run::run(
		[ 'make', '-s', "PG_CONFIG=$pg_config", "IMAGE_DIR=$layout", 'image' ],
		'>', \$tag, '2>', \$err);
	ok($ok, 'make image succeeded') or diag $err;
}
chomp $tag;
like($tag, qr/^pg_warmcache:[0-9.]+-\d{12}-$major-[a-z]+$/,
	"make image printed the tag $tag, <extversion>-<timestamp>-<major>-<distro>");
$tag =~ s/^pg_warmcache://;

my $json = JSON::PP->new;

# The blob of digest $digest, checked against it.
sub blob
{
	my ($digest) = @_;
	my ($hex) = $digest =~ /^sha256:([0-9a-f]{64})$/
	  or die "not a sha256 digest: $digest";
	my $path = "$layout/blobs/sha256/$hex";
	my $got = Digest::SHA->new(256)->addfile($path)->hexdigest;
	die "blob $hex has the digest $got" if $got ne $hex;
	return $path;
}

my $index = $json->decode(slurp_file("$layout/index.json"));
my @entries = grep {
	($_->{annotations}{'org.opencontainers.image.ref.name'} // '') eq $tag
} @{ $index->{manifests} };
is(scalar @entries, 1, 'index.json names the tag once');
is($entries[0]{mediaType}, 'application/vnd.oci.image.manifest.v1+json',
	'the tag names an OCI image manifest');
my $manifest = $json->decode(slurp_file(blob($entries[0]{digest})));
my $config = $json->decode(slurp_file(blob($manifest->{config}{digest})));
is($config->{config}{Labels}{'io.cloudnativepg.image.base.pgmajor'},
	$major, 'the config says the major');

# The layers, untarred in order into $image; what they hold, as "path" and
# "path/" for a directory, without the root.
my $image = "$tmp/extensions/pg_warmcache";
make_path($image);
my %listed;
for my $layer (@{ $manifest->{layers} })
{
	is($layer->{mediaType}, 'application/vnd.oci.image.layer.v1.tar+gzip',
		'a layer is a gzipped tar');
	my $path = blob($layer->{digest});
	my $list = `tar -tzf '$path'`;
	die "tar could not list layer $path" if $? != 0;
	for (split /\n/, $list)
	{
		s{^\./}{};
		$listed{$_} = 1 if $_ ne '' && $_ ne '.' && $_ ne '/';
	}
	system('tar', '-xzf', $path, '-C', $image, '--no-same-owner') == 0
	  or die "tar could not unpack layer $path";
}
# What CloudNativePG's image layout asks for, from the source tree: the
# library, the control file and every SQL script, nothing else.
my @scripts = map { s{.*/}{}r } glob("$FindBin::RealBin/../pg_warmcache--*.sql");
cmp_ok(scalar @scripts, '>=', 1, 'the source tree has SQL scripts');
is_deeply(
	[ sort keys %listed ],
	[
		sort 'lib/', 'lib/pg_warmcache.so', 'share/', 'share/extension/',
		'share/extension/pg_warmcache.control',
		map { "share/extension/$_" } @scripts
	],
	'the image holds lib/pg_warmcache.so, the control file and the SQL scripts, nothing else'
) or diag join(' ', sort keys %listed);

# ---- A server without pg_warmcache: this major's bin, lib and share
# trees, copied below $inst at their own paths, less pg_warmcache's files.
my $inst = "$tmp/inst";
my @trees = map { pg_config($_) } qw(bindir pkglibdir sharedir);
for my $dir (@trees)
{
	make_path(dirname("$inst$dir"));
	system('cp', '-RL', $dir, "$inst$dir") == 0
	  or die "could not copy $dir";
}
# The files and directories of the copied trees named after pg_warmcache.
sub ours
{
	my @found;
	File::Find::find(
		sub { push @found, $File::Find::name if /pg_warmcache/ },
		map { "$inst$_" } @trees);
	return @found;
}
my @ours = ours();
note 'left out of the copy: ' . join(' ', map { s/^\Q$inst\E//r } @ours)
  if @ours;
rmtree($_) for @ours;
is_deeply([ours()], [], 'the server\'s own trees hold nothing of pg_warmcache');

my $node = PostgreSQL::Test::Cluster->new('image',
	install_path => dirname($inst . pg_config('bindir')));
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'pg_warmcache'
extension_control_path = '\$system:$image/share'
pg_warmcache.dump_interval = 0
pg_warmcache.dump_os_cache = off
shared_buffers = 32MB
autovacuum = off
});

# Without the image's lib/ on dynamic_library_path the server finds no
# library to preload: nothing else supplies it.
ok(!$node->start(fail_ok => 1),
	'without the image\'s lib/ the server does not start');
like(slurp_file($node->logfile), qr/could not access file "pg_warmcache"/,
	'it could not find the library');

$node->append_conf('postgresql.conf',
	"dynamic_library_path = '\$libdir:$image/lib'\n");
$node->start;

# Without the image's share/ no control file is found either.
my ($ret, $out, $stderr) = $node->psql('postgres',
	"SET extension_control_path = '\$system'; CREATE EXTENSION pg_warmcache");
isnt($ret, 0, 'without the image\'s share/ CREATE EXTENSION fails');
create_extensions($node);
is( $node->safe_psql(
		'postgres',
		"SELECT e.extversion = a.default_version FROM pg_extension e
		   JOIN pg_available_extensions a ON a.name = e.extname
		  WHERE e.extname = 'pg_warmcache'"),
	't', 'CREATE EXTENSION made the image\'s default version');

# The hot set: a table in shared buffers, dumped.
my $blocks = fill_table($node, 'hot', 8);
my $file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('hot')");
$node->safe_psql('postgres', 'SELECT warmcache_dump_now()');
ok(-s $node->data_dir . '/pg_warmcache.blocks',
	'the saved file is in the data directory');

# Restart on a cold OS cache: the restore alone brings it back.
$node->stop;
evict_files($file);
cmp_ok(resident_blocks($file), '<', $blocks / 10, 'hot left the OS cache');
$node->start;
wait_for_restore($node);
is(cached($node, 'hot'), $blocks,
	"the hot set is back in shared buffers ($blocks blocks)");

$node->stop;
done_testing();
