# qe: long
# HA fault matrix row 2: the primary is killed (kill -9 of its pg_autoctl
# keeper and its postmaster: the node is lost) while 4 producers publish to
# a quorum queue (1 message per transaction, confirmed when COMMIT returns,
# each with a dedup_id retried after a reconnect) and 4 consumers consume
# and ack.  pg_auto_failover promotes a standby; then: no confirmed message
# is lost, none is stored twice, no message whose ack had returned is
# delivered again, every unacked one is delivered again and the queue ends
# empty.  The failover time, the longest publish stall and the longest
# delivery gap are printed as "# figure:" lines and written to the results
# file (QueueExtHA::figure).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use QueueExtHA;

my $ha = QueueExtHA->new('row2');
my $old = $ha->primary;
ok(defined $old, "a primary: node$old");
$ha->safe_psql($old, q{SELECT mq.queue_declare('orders', 'quorum')});
like($ha->safe_psql($old, 'SHOW synchronous_standby_names'),
	qr/^ANY 1 \(pgautofailover_standby_\d, pgautofailover_standby_\d\)$/,
	'quorum commit: ANY 1 of the two standbys');

my $load = $ha->loadgen_start('orders', producers => 4, consumers => 4, rate => 40);
$ha->loadgen_wait_confirms($load, 300, 60);

my $t_kill = $ha->kill_node($old);
my ($new, $failover) = $ha->wait_for_primary(old => $old, since => $t_kill, timeout => 90);
isnt($new, $old, "node$new promoted after node$old was killed");
$ha->figure('failover_seconds', sprintf('%.2f', $failover));

# go on for a while on the new primary
my $before = $ha->loadgen_confirms($load);
$ha->loadgen_wait_confirms($load, $before + 300, 60);
my $s = $ha->loadgen_stop($load);
note explain $s;

cmp_ok($s->{confirmed}, '>', 600, "confirmed $s->{confirmed} messages");
ok($s->{errors} > 0, "the clients saw the failover ($s->{errors} errors, then reconnected)");
is($s->{lost}, 0, 'no confirmed message lost') or diag explain $s->{lost_ids};
is($s->{duplicates}, 0, 'no message stored twice (dedup_id retries)')
  or diag explain $s->{duplicate_ids};
is($s->{acked_redelivered}, 0, 'no message whose ack had returned was delivered again')
  or diag explain $s->{acked_redelivered_ids};
is($s->{unacked_not_redelivered}, 0, 'every unacked message was delivered again')
  or diag explain $s->{unacked_not_redelivered_ids};
is($ha->safe_psql($new, q{SELECT ready + unacked + delayed FROM mq.queues WHERE queue = 'orders'}),
	'0', 'the queue ends empty (every ack whose result was lost did commit or was redone)');

$ha->figure('confirmed', $s->{confirmed});
$ha->figure('client_errors', $s->{errors});
$ha->figure('longest_publish_stall_seconds', $s->{longest_publish_stall});
$ha->figure('longest_delivery_gap_seconds', $s->{longest_delivery_gap});
$ha->figure('stall_started_after_kill_seconds', sprintf('%.2f', $s->{stall_started_at} - $t_kill));

$ha->down;
done_testing();
