# mqlog: mq.mqlog_verify() finds damage inside a row, not only damaged
# pages.  Without data checksums a flipped byte in a row is not caught when
# the page is read, so the row checks have to find it: a row header claiming
# more attributes than the table has, and a line pointer whose length cuts
# a row's data short.  Each damaged row is reported at its (block, offset)
# and no other row is.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('verify');
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
CREATE TABLE log (id int8, body text) USING mqlog;
INSERT INTO log SELECT g, repeat('b', 20 + g % 10) FROM generate_series(1, 40) g;
CHECKPOINT;
});
is($node->safe_psql('postgres', "SELECT count(*) FROM mq.mqlog_verify('log')"),
	'0', 'a sound table verifies clean');

my $path = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('log')");
my $off5 = $node->safe_psql('postgres',
	"SELECT lp_off FROM mq.mqlog_page_items('log', 0) WHERE lp = 5");
$node->stop;

open(my $fh, '+<', $path) or die "open $path: $!";
binmode $fh;

# row 5: info (bytes 4-5 of the row) = 2047 attributes, no flags
seek($fh, $off5 + 4, 0) or die;
print $fh pack('v', 2047);

# row 9: shorten its line pointer's length by 3 bytes (lp_len is the top
# 15 bits of the 32-bit line pointer at 24 + 4 * (9 - 1))
my $lpoff = 24 + 4 * 8;
seek($fh, $lpoff, 0) or die;
read($fh, my $raw, 4) == 4 or die;
my $lp = unpack('V', $raw);
my $len = $lp >> 17;
$lp = ($lp & 0x1FFFF) | (($len - 3) << 17);
seek($fh, $lpoff, 0) or die;
print $fh pack('V', $lp);
close($fh);

$node->start;
my $report = $node->safe_psql('postgres',
	"SELECT blkno || ',' || offnum || ': ' || msg FROM mq.mqlog_verify('log') ORDER BY offnum");
like($report, qr/^0,5: row has more attributes than its relation$/m,
	'a row header claiming too many attributes is reported');
like($report, qr/^0,9: attribute 2 .* ends past the row's \d+ data bytes$/m,
	'a row cut short by its line pointer is reported');
is(scalar(split /\n/, $report), 2, 'and nothing else');

# reading the damaged row is a clean error, not a copy past its end
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM log');
isnt($ret, 0, 'a scan reaching the damaged row fails');
like($err, qr/corrupted row in mqlog table/, 'with a data-corruption error');

$node->stop;
done_testing();
