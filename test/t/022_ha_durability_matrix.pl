# qe: long
# HA fault matrix row 3: what a kill -9 of the primary (its keeper and
# postmaster: the node is lost) loses, for classic and quorum queues and each
# publish durability, with the publisher at the server's synchronous_commit
# (pg_auto_failover sets "on") or at "off" (a publisher that asks for speed).
# One producer and one consumer per combination, all at once, across one
# failover.  A combination whose COMMIT waits for a synchronous standby
# loses nothing; the others may lose what was confirmed shortly before the
# kill and is asserted to lose nothing older than that window.  Each
# combination's figures (confirmed, lost, the window) go to the results file.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use QueueExtHA;

# name => [queue type, durability, publisher's synchronous_commit, waits for a standby]
my %combo = (
	classic_server => [ 'classic', undef, undef, 1 ],
	classic_async => [ 'classic', 'async', 'off', 0 ],
	classic_local => [ 'classic', 'local', 'off', 0 ],
	classic_quorum => [ 'classic', 'quorum', 'off', 1 ],
	quorum_async => [ 'quorum', 'async', 'off', 1 ],
	quorum_local => [ 'quorum', 'local', 'off', 1 ],
	quorum_quorum => [ 'quorum', 'quorum', 'off', 1 ],);
my @names = sort keys %combo;

my $ha = QueueExtHA->new('row3');
my $old = $ha->primary;
is($ha->safe_psql($old, 'SHOW synchronous_commit'), 'on',
	'pg_auto_failover sets synchronous_commit = on');
$ha->safe_psql($old, "SELECT mq.queue_declare('$_', '$combo{$_}[0]')") for @names;

my %load;
for my $n (@names)
{
	$load{$n} = $ha->loadgen_start($n,
		producers => 1,
		consumers => 1,
		rate => 100,
		durability => $combo{$n}[1],
		session_sync => $combo{$n}[2]);
}
$ha->loadgen_wait_confirms($load{$_}, 100, 60) for @names;

my $t_kill = $ha->kill_node($old);
my ($new, $failover) = $ha->wait_for_primary(old => $old, since => $t_kill, timeout => 90);
$ha->figure('failover_seconds', sprintf('%.2f', $failover));
my %before = map { $_ => $ha->loadgen_confirms($load{$_}) } @names;
$ha->loadgen_wait_confirms($load{$_}, $before{$_} + 100, 60) for @names;
my %s = map { $_ => $ha->loadgen_stop($load{$_}) } @names;

for my $n (@names)
{
	my $s = $s{$n};
	my ($type, $dur, $sync, $waits) = @{ $combo{$n} };
	my $what = sprintf('%s queue, durability %s, publisher synchronous_commit %s',
		$type, $dur // 'default', $sync // 'on (server)');
	cmp_ok($s->{confirmed}, '>', 150, "$what: $s->{confirmed} confirmed");
	is($s->{duplicates}, 0, "$what: no duplicates");
	my $window = defined $s->{lost_first_confirm_at}
	  ? sprintf('%.3f', $t_kill - $s->{lost_first_confirm_at}) : '0';
	if ($waits)
	{
		is($s->{lost}, 0, "$what: no confirmed message lost") or diag explain $s->{lost_ids};
	}
	else
	{
		# at most what the standby had not received at the kill: confirmed
		# within the last second (async: the WAL writer's wal_writer_delay,
		# 200 ms, three times over; local: the replication lag on loopback)
		ok($s->{lost} == 0 || $window < 1.0,
			"$what: lost $s->{lost}, all confirmed in the last ${window} s before the kill");
	}
	is($s->{unacked_not_redelivered}, 0, "$what: every unacked message delivered again");
	$ha->figure("$n.confirmed", $s->{confirmed});
	$ha->figure("$n.lost", $s->{lost});
	$ha->figure("$n.lost_window_seconds", $window);
	$ha->figure("$n.longest_publish_stall_seconds", $s->{longest_publish_stall});
}

$ha->down;
done_testing();
