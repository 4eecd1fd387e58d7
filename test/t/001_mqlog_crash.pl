# mqlog: crash recovery under concurrent appends, unlogged reset, and
# detection of a corrupted page by mq.mqlog_verify().
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = qe_node('main', init => { extra => ['--data-checksums'] }, conf => qq{
wal_consistency_checking = 'mqlog'
max_connections = 20
});

$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
CREATE TABLE log (client int, n int, body text, tag text) USING mqlog;
CREATE INDEX log_cn ON log (client, n);
CREATE UNLOGGED TABLE ulog (n int) USING mqlog;
INSERT INTO ulog SELECT generate_series(1, 1000);
});

# Four clients append numbered rows; psql echoes each number once its
# transaction committed (autocommit: the INSERT returned).  Every tenth
# transaction adds five rows at once (1000000+n*10+k), every 7th is rolled back
# (negative n), every 50th carries a 20 kB value (overflow pages).
my @clients;
for my $c (1 .. 4)
{
	my $script = '';
	for my $i (1 .. 20000)
	{
		if ($i % 7 == 0)
		{
			$script .= "BEGIN; INSERT INTO log VALUES ($c, -$i, 'abort'); ROLLBACK;\n";
		}
		elsif ($i % 10 == 0)
		{
			$script .= "INSERT INTO log SELECT $c, 1000000 + $i * 10 + k, 'multi' FROM generate_series(0, 4) k;\n\\echo committed $c $i multi\n";
		}
		elsif ($i % 50 == 1)
		{
			$script .= "INSERT INTO log VALUES ($c, $i, (SELECT string_agg(md5(g::text), '') FROM generate_series($i, $i + 640) g));\n\\echo committed $c $i\n";
		}
		else
		{
			$script .= "INSERT INTO log VALUES ($c, $i, repeat('x', $i % 300), 't$i');\n\\echo committed $c $i\n";
		}
	}
	my $base = $node->basedir . "/client$c";
	open(my $sf, '>', "$base.sql") or die;
	print $sf $script;
	close($sf);
	# stdout to a file: psql flushes it on exit; ON_ERROR_STOP so that a
	# failed INSERT (server crash) is never followed by its \echo
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'), '-f', "$base.sql"
		],
		'>', "$base.out", '2>', "$base.err");
	push @clients, { h => $h, base => $base, c => $c };
}

# let them run, then crash
my $deadline = time() + 60;
while (time() < $deadline)
{
	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM log');
	last if $rows >= 4000;
	sleep 1;
}
$node->stop('immediate');
$_->{h}->finish for @clients;
$node->start;

# what the clients know was committed
my %expected;
my $ncommitted = 0;
for my $cl (@clients)
{
	for my $line (split /\n/, slurp_file("$cl->{base}.out"))
	{
		next unless $line =~ /^committed (\d+) (\d+)( multi)?$/;
		if ($3)
		{
			$expected{"$1:" . (1000000 + $2 * 10 + $_)} = 1 for 0 .. 4;
		}
		else
		{
			$expected{"$1:$2"} = 1;
		}
		$ncommitted++;
	}
}
cmp_ok($ncommitted, '>', 100, "clients committed transactions before the crash ($ncommitted)")
  or diag(join("\n", map { slurp_file("$_->{base}.err") } @clients));

my %present;
my $dups = 0;
my $aborted = 0;
for my $row (split /\n/,
	$node->safe_psql('postgres', 'SELECT client, n FROM log'))
{
	my ($c, $n) = split /\|/, $row;
	$aborted++ if $n < 0;
	$dups++ if $present{"$c:$n"}++;
}
my @missing = grep { !$present{$_} } keys %expected;
is(scalar(@missing), 0, 'every committed row survived the crash')
  or diag("missing: @missing[0 .. ($#missing < 9 ? $#missing : 9)]");
is($dups, 0, 'no row is present twice');
is($aborted, 0, 'no row of a rolled-back transaction is visible');
# at most the transactions in flight (one per client) may be present
# without their client having seen the commit
my @extra = sort grep { !$expected{$_} } keys %present;
cmp_ok(scalar(@extra), '<=', 4 * 5,
	"at most in-flight rows beyond the acknowledged ones (" . scalar(@extra) . ")")
  or diag("extra: @extra[0 .. 19]");

# rows with and without nulls (tag is NULL except in the 'x' rows) come back
# with every column intact: redo must restore the null bitmap
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM log WHERE n > 0 AND n < 1000000 AND body ~ '^x*$'
	   AND (length(body) <> n % 300 OR tag IS DISTINCT FROM 't' || n)}),
	'0', 'rows replayed with their nulls and values intact');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM log WHERE n > 0 AND body IS NULL}),
	'0', 'no replayed row lost its body');

is($node->safe_psql('postgres', 'SELECT count(*) FROM mq.mqlog_verify(\'log\')'),
	'0', 'verification is clean after recovery');
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM log WHERE client = 1 AND n > 0}),
	$node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM log WHERE client = 1 AND n > 0}),
	'index and table agree after recovery');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ulog'),
	'0', 'unlogged mqlog table is empty after the crash');

# writes work after recovery (new pages and old tail)
$node->safe_psql('postgres', "INSERT INTO log VALUES (9, 1, 'after')");
is($node->safe_psql('postgres', 'SELECT count(*) FROM log WHERE client = 9'),
	'1', 'insert after recovery');

# corruption: overwrite a data page with garbage while the server is down
my $path = $node->safe_psql('postgres', "SELECT pg_relation_filepath('log')");
my $blk = $node->safe_psql('postgres',
	"SELECT (ctid::text::point)[0]::int FROM log WHERE body = 'multi' ORDER BY n LIMIT 1 OFFSET 100");
$node->safe_psql('postgres', 'CHECKPOINT');
$node->stop;
my $file = $node->data_dir . "/$path";
open(my $fh, '+<', $file) or die "open $file: $!";
binmode $fh;
seek($fh, 8192 * $blk + 100, 0) or die;
print $fh ("\xAB" x 300);
close($fh);
$node->start;
my $report = $node->safe_psql('postgres',
	"SELECT blkno, msg FROM mq.mqlog_verify('log') ORDER BY blkno, offnum");
like($report, qr/^$blk\|/m, "verification reports the corrupted block $blk");
unlike($report, qr/^(?!$blk\|)\d+\|/m, 'and no other block');

$node->stop;
done_testing();
