# qe: long
# (about a minute: a three-node Patroni cluster, one failover; the marker
# line above is what run_all.sh --quick looks for.)  Skipped when QE_QUICK=1
# or when patroni, etcd or etcdctl is not installed.
#
# queue_ext under Patroni, the alternative manager documented in
# docs/operations.md ("High availability", "Patroni"), with the configuration
# in test/ha/patroni/ started by test/ha/patroni.sh:
#  1. the cluster comes up: a leader, two streaming standbys, one synchronous
#     (synchronous_mode, synchronous_node_count 1), CREATE EXTENSION works;
#  2. quorum publishes confirm (no warning: Patroni named a synchronous
#     standby) and consume + ack in one transaction settles some of them;
#  3. kill -9 of the leader (Patroni and postmaster: the machine is lost): a
#     standby becomes leader within the leader lock's ttl; it delivers every
#     confirmed message that was not acked, once, and none that was acked;
#  4. once Patroni has named a synchronous standby on the new leader, a quorum
#     publish with mq.quorum_requires_standby = on confirms;
#  5. the old leader, started again, rejoins as a standby (pg_rewind) and
#     converges: same ready count, mq.mqlog_verify clean on it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run qw(run);
use IO::Socket::INET;
use Time::HiRes qw(time sleep);

plan skip_all => 'QE_QUICK=1: long test skipped' if ($ENV{QE_QUICK} // '') eq '1';
for my $exe (qw(patroni patronictl etcd etcdctl))
{
	plan skip_all => "$exe is not installed (Debian packages patroni, etcd-server, etcd-client)"
	  unless grep { -x "$_/$exe" } split /:/, $ENV{PATH};
}

my $script = "$FindBin::RealBin/../ha/patroni.sh";
my $bindir = `pg_config --bindir`;
chomp $bindir;
my $psql = "$bindir/psql";
my $dir = "$PostgreSQL::Test::Utils::tmp_check/patroni";

# the ports of test/ha/patroni/ shifted by 0, 100, ... until all are free
sub port_free
{
	my $sock = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $_[0],
		Proto => 'tcp',
		ReuseAddr => 0);
	return 0 unless $sock;
	close $sock;
	return 1;
}
my $shift;
for my $s (map { $_ * 100 } 0 .. 9)
{
	if (!grep { !port_free($_ + $s) } (5731 .. 5736, 5740, 5741))
	{
		$shift = $s;
		last;
	}
}
BAIL_OUT('no free set of ports for the Patroni cluster') unless defined $shift;
my @ports = map { $_ + $shift } (5731, 5732, 5733);

$ENV{QE_PATRONI_DIR} = $dir;
$ENV{QE_PATRONI_BINDIR} = $bindir;
$ENV{QE_PATRONI_PORT_SHIFT} = $shift;
$ENV{QE_PATRONI_DB} = 'queue';
$ENV{QE_PATRONI_TIMEOUT} = 120;

my $cs_all = "host=127.0.0.1,127.0.0.1,127.0.0.1 port=" . join(',', @ports)
  . " user=postgres dbname=queue target_session_attrs=read-write connect_timeout=2";

sub patroni
{
	my ($out, $err) = ('', '');
	my $ok = run [ 'bash', $script, @_ ], '>', \$out, '2>', \$err;
	note "patroni.sh @_:\n$out$err";
	return ($ok, $out);
}

# psql -Atq against conninfo; returns (success, stdout, stderr)
sub pq
{
	my ($cs, $sql) = @_;
	my ($out, $err) = ('', '');
	my $ok = run [ $psql, '-X', '-Atq', '-v', 'ON_ERROR_STOP=1', '-d', $cs, '-c', $sql ],
	  '>', \$out, '2>', \$err;
	chomp $out;
	return ($ok, $out, $err);
}

sub q_ok
{
	my ($cs, $sql) = @_;
	my ($ok, $out, $err) = pq($cs, $sql);
	die "psql failed: $sql\n$err" unless $ok;
	return $out;
}

# poll until $check returns true, at most $secs seconds
sub wait_until
{
	my ($secs, $check) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		return 1 if $check->();
		sleep 0.25;
	}
	return 0;
}

END
{
	# stop whatever is left, also after a failure
	run [ 'bash', $script, 'down' ], '>', \my $o, '2>', \my $e if defined $shift;
}

# 1. up
my ($up) = patroni('up');
ok($up, 'patroni.sh up: a leader and two streaming standbys, one synchronous')
  or BAIL_OUT('the Patroni cluster did not come up');
is(q_ok($cs_all, "SELECT extname FROM pg_extension WHERE extname = 'queue_ext'"),
	'queue_ext', 'CREATE EXTENSION queue_ext on the leader');
isnt(q_ok($cs_all, 'SHOW synchronous_standby_names'), '',
	'Patroni set synchronous_standby_names');
is(q_ok($cs_all, 'SHOW shared_preload_libraries'), 'queue_ext', 'queue_ext is preloaded');

# 2. quorum publishes, one per transaction, each confirmed when COMMIT returns
q_ok($cs_all, "SELECT mq.queue_declare('qq', 'quorum')");
my ($ok, $out, $err) = pq($cs_all,
	"SET mq.quorum_requires_standby = on;\n"
	  . join('', map { "SELECT mq.send('qq', 'm$_');\n" } 1 .. 200));
ok($ok, '200 quorum publishes confirmed') or diag $err;
is(scalar(split /\n/, $out), 200, '200 message ids returned');
unlike($err, qr/WARNING/, 'no warning: a synchronous standby was there');

my $acked = q_ok($cs_all, q{
BEGIN;
CREATE TEMP TABLE t AS SELECT msg_id, convert_from(body, 'UTF8') AS b FROM mq.consume('qq', 50);
SELECT count(*) FROM mq.ack('qq', ARRAY(SELECT msg_id FROM t));
SELECT string_agg(b, ',' ORDER BY msg_id) FROM t;
COMMIT;});
my @acked = split /,/, (split /\n/, $acked)[-1];
is(scalar(@acked), 50, '50 messages consumed and acked in one transaction');

# 3. the leader is lost
my (undef, $old) = patroni('leader');
chomp $old;
like($old, qr/^node[123]$/, "the leader is $old");
my ($old_idx) = $old =~ /(\d)$/;
my $old_port = $ports[ $old_idx - 1 ];
my $t0 = time;
patroni('kill', $old);
my $new;
ok( wait_until(
		120,
		sub {
			# the old postmaster may answer for a moment after the kill
			my ($ok, $n) = pq($cs_all, "SELECT current_setting('port')");
			return 0 unless $ok && $n ne $old_port;
			$new = $n;
			return 1;
		}),
	'a new leader accepts writes');
my $failover = time - $t0;
isnt($new, $old_port, 'the new leader is another node');
note sprintf('failover: %.1f s from kill -9 to the first read-write connection', $failover);
cmp_ok($failover, '<', 60, 'failover within the leader lock ttl (20 s) plus detection');

is(q_ok($cs_all, "SELECT ready FROM mq.queues WHERE queue = 'qq'"),
	150, 'the new leader has 150 ready messages');
my %acked = map { $_ => 1 } @acked;
my @got = split /\n/, q_ok($cs_all,
	"SELECT convert_from(body, 'UTF8') FROM mq.consume('qq', 1000)");
my %got;
$got{$_}++ for @got;
is(scalar(@got), 150, '150 deliveries');
is(scalar(keys %got), 150, 'each once');
is(scalar(grep { $acked{$_} } @got), 0, 'no acked message delivered again');
is(scalar(grep { !$got{"m$_"} && !$acked{"m$_"} } 1 .. 200), 0,
	'every confirmed message not acked is delivered');

# 4. Patroni names a synchronous standby on the new leader (until then it
# runs without one: synchronous_mode is not strict); then quorum confirms
ok( wait_until(
		60,
		sub {
			my ($ok, $n) = pq($cs_all,
				"SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'");
			return $ok && $n eq '1';
		}),
	'the new leader has a synchronous standby');
($ok, $out, $err) = pq($cs_all,
	"SET mq.quorum_requires_standby = on; SELECT mq.send('qq', 'after');");
ok($ok, 'a quorum publish on the new leader confirms') or diag $err;

# 5. the old leader rejoins as a standby and converges
patroni('start', $old);
my $old_cs = "host=127.0.0.1 port=$old_port user=postgres dbname=queue connect_timeout=2";
ok( wait_until(
		120,
		sub {
			my ($ok, $n) = pq($cs_all,
				"SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'");
			return $ok && $n eq '2';
		}),
	'the old leader streams from the new one');
is(q_ok($old_cs, 'SELECT pg_is_in_recovery()'), 't', 'the old leader is a standby now');
my $want = q_ok($cs_all, "SELECT ready + unacked FROM mq.queues WHERE queue = 'qq'");
ok( wait_until(
		60,
		sub {
			my ($ok, $n) = pq($old_cs, "SELECT ready + unacked FROM mq.queues WHERE queue = 'qq'");
			return $ok && $n eq $want;
		}),
	"the old leader shows the same $want messages of qq");
is(q_ok($old_cs,
	"SELECT count(*) FROM mq.segments s, mq.mqlog_verify(s.relation) v WHERE s.durable"),
	0, 'mq.mqlog_verify is clean on the rejoined node');

my ($down) = patroni('down', '--purge');
ok($down, 'patroni.sh down');
$shift = undef;

done_testing();
