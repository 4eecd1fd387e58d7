# qe: long
# HA fault matrix rows 4 and 5 on the pg_auto_failover cluster (a monitor,
# a primary and two standbys, number_sync_standbys = 1: ANY 1 of the two),
# under load (test/ha/loadgen.py: producers publishing to a quorum queue one
# message per transaction with a dedup_id, consumers consuming and acking):
#  row 4: one standby stopped: publishes keep confirming through the other;
#  row 5: the other stopped too: a quorum publish fails at once with 53000
#     (mq.quorum_unavailable = error) while the standbys named in
#     synchronous_standby_names are gone (pg_auto_failover keeps them named
#     with number_sync_standbys = 1), and after pg_autoctl clears that
#     setting (number_sync_standbys set to 0, as a two-node formation has:
#     wait_primary); a classic publish commits; with
#     mq.quorum_unavailable = wait quorum commits are then local and warned
#     once, not once per transaction (the first try's 15-17k warnings in 8 s);
#  the standbys return: the load resumes, no confirmed message is lost or
#     stored twice, and the three nodes hold the same queues.
# Figures (QueueExtHA::figure): detection times, the row 4 publish stall,
# how fast row 5 fails, the warnings of the wait burst.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);
use QueueExtHA;

my $ha = QueueExtHA->new('row45');
my $p = $ha->primary;
ok(defined $p, "a primary: node$p");
my @sb = grep { $_ != $p } 1 .. 3;
$ha->safe_psql($p, q{SELECT mq.queue_declare('orders', 'quorum'); SELECT mq.queue_declare('plain')});

sub summary
{
	return $ha->safe_psql($p, q{SELECT format('%s/%s/%s', required_sync_standbys,
		connected_sync_standbys, quorum_met) FROM mq.replication LIMIT 1});
}

# psql on the primary with verbose errors, statements on stdin (each its
# own transaction): (rc, stdout, stderr, seconds)
sub psql_v
{
	my ($sql, $timeout) = @_;
	my ($out, $err) = ('', '');
	my $t0 = time;
	my $ok = eval {
		IPC::Run::run(
			[
				"$ha->{bindir}/psql", '-X', '-A', '-t', '-q', '-v', 'VERBOSITY=verbose',
				'-h', '127.0.0.1', '-p', $ha->port($p), '-U', 'postgres', '-d', 'ha', '-f', '-'
			],
			'<', \$sql, '>', \$out, '2>', \$err, IPC::Run::timeout($timeout // 30));
	};
	return ($ok ? 0 : 1, $out, $err, time - $t0);
}

# poll f() until it returns true (bounded); seconds it took, or -1
sub wait_until
{
	my ($f, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < $timeout)
	{
		return time - $t0 if $f->();
		sleep 0.05;
	}
	return -1;
}

is(summary(), '1/2/t', 'mq.replication: ANY 1 of 2 standbys, both streaming, quorum met');

my $load = $ha->loadgen_start('orders', producers => 2, consumers => 2, rate => 40);
$ha->loadgen_wait_confirms($load, 100, 60);

############################################################################
# row 4: one standby lost
############################################################################
my $t4 = time;
$ha->stop_node($sb[0]);
my $seen4 = wait_until(sub { summary() =~ m{^1/1/} }, 60);
cmp_ok($seen4, '>=', 0, "node$sb[0] stopped: mq.replication shows one standby left");
my $c4 = $ha->loadgen_confirms($load);
$ha->loadgen_wait_confirms($load, $c4 + 100, 60);
pass('quorum publishes keep confirming through the other standby');
is(summary(), '1/1/t', 'quorum still met');
my $t4_end = time;
$ha->figure('row4_standby_gone_seen_seconds', sprintf('%.2f', $seen4));
# the longest time without a confirm from 1 s before the stop to now
my @conf = sort { $a <=> $b } map { /^(\d+\.\d+) P\d+ confirm / ? ($1) : () }
  split /\n/, slurp_file("$load->{out}/events.log");
my ($gap, $prev) = (0, undef);
for my $t (grep { $_ >= $t4 - 1 && $_ <= $t4_end } @conf)
{
	$gap = $t - $prev if defined $prev && $t - $prev > $gap;
	$prev = $t;
}
# (confirms going on after the loss is what row 4 asks; a wait for the lost
# standby would last until it comes back, which it does not in this row:
# the bound tells that apart from a loaded machine's pauses)
cmp_ok($gap, '<', 60, sprintf('row 4: longest time without a confirm %.0f ms', $gap * 1000));
$ha->figure('row4_longest_publish_stall_ms', sprintf('%.0f', $gap * 1000));

############################################################################
# row 5: both standbys lost
############################################################################
my $t5 = time;
$ha->stop_node($sb[1]);
my $seen5 = wait_until(sub { summary() =~ m{/f$} }, 60);
cmp_ok($seen5, '>=', 0, "node$sb[1] stopped too: mq.replication says quorum is not met");
is($ha->safe_psql($p, q{SELECT string_agg(format('%s:%s', queue, quorum_met), ',' ORDER BY queue) FROM mq.queues}),
	'orders:f,plain:', 'mq.queues: quorum_met false on the quorum queue');
my $ff = qr/ERROR:\s+53000: quorum commit unavailable/;
# (psql_v's timeout is 20 s: a call that waited for the standbys, which
# do not come back in this row, would end there, without 53000; the time
# taken is a figure)
my ($rc, $out, $err, $took) = psql_v(q{SELECT mq.send('orders', 'r5'::text);}, 20);
like($err, $ff, 'row 5: a quorum publish fails with 53000');
like($err, qr/DETAIL:\s+The transaction is not confirmed/, '... saying it is not confirmed');
cmp_ok($took, '<', 20, sprintf('... at once (%.0f ms)', $took * 1000));
$ha->figure('row5_quorum_publish_fails_ms', sprintf('%.0f', $took * 1000));
($rc, $out, $err, $took) = psql_v(
	q{SET synchronous_commit = local; SELECT mq.send('plain', 'c1'::text) IS NOT NULL;}, 20);
chomp $out;
is($out, 't', 'row 5: a classic publish (synchronous_commit = local) commits');
cmp_ok($took, '<', 20, '... at once');
$ha->figure('row5_standbys_gone_seen_seconds', sprintf('%.2f', $seen5));

# With number_sync_standbys = 1 pg_auto_failover keeps naming the lost
# standbys (writes that wait for them block: here they fail).  With 0, as a
# two-node formation has, it clears synchronous_standby_names (wait_primary):
# the first try's case, where every quorum transaction warned.
my $kept = wait_until(sub { $ha->safe_psql($p, 'SHOW synchronous_standby_names') eq '' }, 10);
is($kept, -1, 'number_sync_standbys = 1: synchronous_standby_names still names the standbys');
$ha->safe_psql(0, q{SELECT pgautofailover.set_formation_number_sync_standbys('default', 0)});
my $cleared = wait_until(sub { $ha->safe_psql($p, 'SHOW synchronous_standby_names') eq '' }, 60);
if ($cleared >= 0)
{
	$ha->figure('row5_nss0_sync_names_cleared_after_seconds', sprintf('%.2f', $cleared));
	($rc, $out, $err, $took) = psql_v(q{SELECT mq.send('orders', 'r5b'::text);}, 20);
	like($err, qr/ERROR:\s+53000: quorum commit unavailable: no synchronous standby is configured/,
		'with synchronous_standby_names cleared: 53000 too');
	cmp_ok($took, '<', 20, '... at once');

	# wait: local commits, one warning for the whole burst
	my $logf = $ha->node_log($p);
	my $logpos = -s $logf;
	my $before = $ha->safe_psql($p, 'SELECT commits_without_quorum FROM mq.replication LIMIT 1');
	my $burst = "SET mq.quorum_unavailable = wait;\n"
	  . join('', map { "SELECT mq.send('plain', 'w$_'::text, durability => 'quorum') IS NOT NULL;\n" } 1 .. 200);
	($rc, $out, $err, $took) = psql_v($burst, 60);
	is($rc, 0, 'wait: 200 quorum transactions commit locally');
	my $warned = () = $err =~ /WARNING:\s+01000: quorum durability requested/g;
	is($warned, 1, 'wait: warned once, not once per transaction');
	is($ha->safe_psql($p, 'SELECT commits_without_quorum FROM mq.replication LIMIT 1') - $before,
		200, 'wait: the 200 counted in mq.replication');
	my $log = slurp_file($logf);
	$log = substr($log, $logpos) if defined $logpos && $logpos <= length($log);
	my $logged = () = $log =~ /quorum durability requested/g;
	cmp_ok($logged, '<=', 1, "wait: at most one such warning in the server log ($logged)");
	$ha->figure('row5_wait_burst_warnings', "$warned for 200 transactions");
}
else
{
	fail('number_sync_standbys = 0: pg_autoctl did not clear synchronous_standby_names within 60 s');
}
$ha->safe_psql(0, q{SELECT pgautofailover.set_formation_number_sync_standbys('default', 1)});
my $c5 = $ha->loadgen_confirms($load);

############################################################################
# the standbys return
############################################################################
my $t_back = time;
$ha->start_node($sb[0]);
$ha->start_node($sb[1]);
$ha->wait_for_healthy(timeout => 180);
my $back = wait_until(sub { summary() eq '1/2/t' }, 120);
cmp_ok($back, '>=', 0, 'standbys back: quorum met again');
$ha->figure('standbys_back_quorum_met_seconds', sprintf('%.2f', time - $t_back));
$ha->loadgen_wait_confirms($load, $c5 + 100, 90);
pass('quorum publishes confirm again');
my $s = $ha->loadgen_stop($load);
note explain $s;
is($s->{lost}, 0, 'no confirmed message lost') or diag explain $s->{lost_ids};
is($s->{duplicates}, 0, 'no message stored twice (dedup_id retries)')
  or diag explain $s->{duplicate_ids};
is($s->{acked_redelivered}, 0, 'no acked message delivered again')
  or diag explain $s->{acked_redelivered_ids};
is($s->{unacked_not_redelivered}, 0, 'every unacked message delivered again')
  or diag explain $s->{unacked_not_redelivered_ids};
ok($s->{errors} > 0, "the producers saw the outage as errors ($s->{errors}), and retried");
my $events = slurp_file("$load->{out}/events.log");
my $n53 = () = $events =~ /quorum commit unavailable/g;
cmp_ok($n53, '>', 0, "... 'quorum commit unavailable' among them ($n53)");
is($ha->safe_psql($p, q{SELECT without_quorum_since IS NULL FROM mq.replication LIMIT 1}), 't',
	'the no-quorum condition is cleared');
$ha->figure('row4_5_confirmed', $s->{confirmed});
$ha->figure('row4_5_producer_errors', $s->{errors});

# the three nodes hold the same queues
my $state_sql = q{SELECT string_agg(format('%s:%s:%s', queue, ready, total), ',' ORDER BY queue) FROM mq.queues};
my $want = $ha->safe_psql($p, $state_sql);
for my $n (@sb)
{
	my $got = '';
	wait_until(sub { ($got = (($ha->psql($n, $state_sql))[1])) eq $want }, 60);
	is($got, $want, "node$n has the primary's queues ($want)");
}

$ha->down;
done_testing();
