# mqlog: streaming replication.  A hot standby replays the custom WAL
# records (with wal_consistency_checking on the primary), answers the same
# queries as the primary while recovering, survives a primary crash in the
# middle of a load, and replays a FREEZE record.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $primary = qe_node('primary', init => { allows_streaming => 1, extra => ['--data-checksums'] }, conf => qq{
wal_consistency_checking = 'mqlog'
# keep the WAL the standby still needs across the primary's crash restart
wal_keep_size = '1GB'
});
$primary->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
CREATE TABLE log (id int, body text) USING mqlog;
CREATE INDEX log_id ON log (id);
});

my $standby = qe_standby($primary, 'standby');

my $check = q{
SELECT count(*), sum(id), md5(string_agg(id::text || ':' || md5(body), ',' ORDER BY id, md5(body)))
FROM log};

sub compare
{
	my ($what) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my $p = $primary->safe_psql('postgres', $check);
	my $s = $standby->safe_psql('postgres', $check);
	is($s, $p, "standby matches primary: $what");
	my $si = $standby->safe_psql('postgres',
		"SET enable_seqscan = off; SELECT count(*) FROM log WHERE id BETWEEN 100 AND 200");
	my $pi = $primary->safe_psql('postgres',
		"SET enable_seqscan = off; SELECT count(*) FROM log WHERE id BETWEEN 100 AND 200");
	is($si, $pi, "index scan on standby matches: $what");
	return;
}

# every insert path: single rows, multi-row, COPY (multi_insert), large
# values on overflow pages, aborted transactions and savepoints
$primary->safe_psql('postgres', q{
INSERT INTO log VALUES (1, 'one');
INSERT INTO log SELECT g, repeat('m', g % 500) FROM generate_series(2, 3000) g;
COPY log FROM PROGRAM 'seq 3001 6000 | sed s/$/,copied/' (FORMAT csv);
INSERT INTO log SELECT 7000 + g, (SELECT string_agg(md5(h::text), '') FROM generate_series(1, 20000 * g) h)
  FROM generate_series(1, 3) g;
BEGIN; INSERT INTO log VALUES (-1, 'aborted'); ROLLBACK;
BEGIN; SAVEPOINT a; INSERT INTO log VALUES (-2, 'rolled back'); ROLLBACK TO a;
INSERT INTO log VALUES (8000, 'kept'); COMMIT;
});
compare('after inserts');

# rows of many shapes, so that WAL rows logged as deltas against the row
# before them meet NULLs, length changes, long runs (two-byte run lengths)
# and rows that store their cmin
$primary->safe_psql('postgres', q{
CREATE TABLE shapes (a int8, b text, c bytea, d int) USING mqlog;
INSERT INTO shapes
  SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE repeat('k', g % 300) || g END,
		 CASE WHEN g % 5 = 0 THEN NULL ELSE decode(repeat(md5((g / 7)::text), 1 + g % 20), 'hex') END,
		 CASE WHEN g % 2 = 0 THEN g END
  FROM generate_series(1, 3000) g;
COPY shapes (a, b) FROM PROGRAM 'seq 1 2000 | sed s/$/,same-prefix-then-/' (FORMAT csv);
DO $$
BEGIN
	FOR i IN 1..400 LOOP
		INSERT INTO shapes VALUES (i, repeat('x', i * 7 % 1000), CASE WHEN i % 4 = 0 THEN '\x00'::bytea END, i);
	END LOOP;
END $$;
});
my $shapes = q{SELECT count(*), md5(string_agg(a || ':' || coalesce(b, '-') || ':' ||
  coalesce(encode(c, 'hex'), '-') || ':' || coalesce(d::text, '-'), ',' ORDER BY a, b, c, d)) FROM shapes};
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $shapes), $primary->safe_psql('postgres', $shapes),
	'rows of many shapes replay identically');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM mq.mqlog_verify('shapes')}),
	'0', 'verification clean for them on the standby');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
	'standby reads while in recovery');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM log WHERE id < 0'),
	'0', 'no aborted rows on the standby');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM mq.mqlog_verify(\'log\')'),
	'0', 'verification clean on the standby');

# an open transaction on the primary: its rows are invisible on the
# standby until it commits
my $bg = $primary->background_psql('postgres');
$bg->query_safe("BEGIN; INSERT INTO log SELECT g, 'late' FROM generate_series(9001, 9100) g;");
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', "SELECT count(*) FROM log WHERE body = 'late'"),
	'0', 'uncommitted rows invisible on the standby');
$bg->query_safe("COMMIT");
$bg->quit;
compare('after a late commit');

# freezing: burn xids, VACUUM with freeze_min_age 0 on the primary
$primary->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..200 LOOP INSERT INTO log VALUES (10000 + i, 'burn'); COMMIT; END LOOP; END $$;
});
$primary->safe_psql('postgres', 'SET vacuum_freeze_min_age = 0; VACUUM log');
cmp_ok($primary->safe_psql('postgres',
	"SELECT age(relfrozenxid) FROM pg_class WHERE relname = 'log'"),
	'<', 10, 'relfrozenxid advanced on the primary');
compare('after VACUUM freeze');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM mq.mqlog_verify(\'log\')'),
	'0', 'verification clean on the standby after freeze');

# the primary crashes in the middle of a load and restarts
my $script = '';
$script .= "INSERT INTO log SELECT 20000 + $_ * 10 + k, 'crash' FROM generate_series(0, 9) k;\n"
  for 1 .. 5000;
my $sf = $primary->basedir . '/load.sql';
open(my $fh, '>', $sf) or die;
print $fh $script;
close($fh);
my $load = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres'), '-f', $sf ],
	'>', '/dev/null', '2>', '/dev/null');
my $deadline = time() + 60;
while (time() < $deadline)
{
	last if $primary->safe_psql('postgres', "SELECT count(*) FROM log WHERE body = 'crash'") >= 2000;
	select(undef, undef, undef, 0.2);
}
$primary->stop('immediate');
$load->finish;
$primary->start;
cmp_ok($primary->safe_psql('postgres', "SELECT count(*) FROM log WHERE body = 'crash'"),
	'>=', 2000, 'primary kept the committed part of the load');
$primary->safe_psql('postgres', "INSERT INTO log VALUES (99999, 'after crash')");
compare('after a primary crash mid-load');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM mq.mqlog_verify(\'log\')'),
	'0', 'verification clean on the primary after the crash');

$standby->stop;
$primary->stop;
done_testing();
