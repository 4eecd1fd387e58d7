# Consumer groups on a stream across a crash:
#  kill -9 of a backend while two sessions publish to a stream and two
#  groups consume and ack it.  After crash recovery every committed
#  message is delivered to every group, nothing a group acked is delivered
#  to it again (only what was in flight at the crash comes back, flagged
#  redelivered), and mq.consumer_groups shows the right committed offsets.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('groupcrash', conf => qq{
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s', 'ga', start => 'earliest');
SELECT mq.group_declare('s', 'gb', start => 'earliest');
CREATE TABLE acked (g text, body text, redelivered boolean);
});

my @pub = map { $node->background_psql('postgres') } 1 .. 2;
my %con = map { $_ => $node->background_psql('postgres') } qw(ga gb);
my %committed;

# consume up to n for group g, ack them in the same transaction as the
# record of what was acked (exactly-once for that work)
sub consume_ack
{
	my ($g, $n) = @_;
	qe_group_consume_ack($con{$g}, 's', $n, $g, group => $g);
	return;
}

for my $i (1 .. 300)
{
	my $body = "m$i";
	my $r = $pub[$i % 2]->query_safe("SELECT mq.send('s', '$body') IS NOT NULL");
	$committed{$body} = 1 if $r eq 't';
	consume_ack('ga', 3) if $i % 4 == 0;
	consume_ack('gb', 5) if $i % 7 == 0;
}
# in flight at the crash: leased, not acked
$con{ga}->query_safe(q{SELECT count(*) FROM mq.consume('s', 4, group_name => 'ga')});
my $inflight = 4;
# its delivery records reach disk with the next commit of any session
$node->safe_psql('postgres', 'CREATE TABLE flush_wal ()');
# and one publish in progress
$pub[0]->query_safe('BEGIN');
$pub[0]->query_safe("SELECT mq.send('s', 'lost')");

my %acked_before;
for my $g (qw(ga gb))
{
	$acked_before{$g} = $node->safe_psql('postgres', "SELECT count(*) FROM acked WHERE g = '$g'");
}
ok($acked_before{ga} > 0 && $acked_before{gb} > 0, 'both groups acked some before the crash');

my $pid = $pub[0]->query_safe('SELECT pg_backend_pid()');
my $logpos = -s $node->logfile;
kill 'KILL', $pid;
eval { $_->quit; } for @pub, values %con;
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains(qr/terminated by signal 9/, $logpos), 'crash recovery ran');

# the committed offsets survive: at least what was acked in order
my $view = $node->safe_psql('postgres',
	q{SELECT group_name, sum(committed_offset), sum(end_offset), sum(lag)
	    FROM mq.consumer_groups WHERE queue = 's' GROUP BY 1 ORDER BY 1});
for my $row (split /\n/, $view)
{
	my ($g, $committed, $end, $lag) = split /\|/, $row;
	# the lost publish's offset is reused if its WAL never reached disk
	ok($end == scalar(keys %committed) || $end == scalar(keys %committed) + 1,
		"$g: end offsets count every message written ($end)");
	# (past the lost publish's offset, when its row reached disk and the
	# group had acked its partition up to it: an aborted row is a gap)
	ok($committed <= $acked_before{$g} + ($end - scalar(keys %committed)),
		"$g: committed offsets do not pass what was acked ($committed)");
	is($lag, $end - $committed, "$g: lag = end - committed");
}

# consume everything that is left, for both groups
for my $g (qw(ga gb))
{
	my $s = $node->background_psql('postgres');
	$con{$g} = $s;
	for (1 .. 100)
	{
		consume_ack($g, 100);
		last if $s->query_safe(q{SELECT count(*) FROM taken}) == 0;
	}
	$s->quit;
}

for my $g (qw(ga gb))
{
	my $got = $node->safe_psql('postgres', "SELECT body FROM acked WHERE g = '$g'");
	my %seen;
	$seen{$_}++ for split /\n/, $got;
	is(scalar(grep { ($seen{$_} // 0) >= 1 } keys %committed), scalar(keys %committed),
		"$g: every committed message delivered");
	is(scalar(grep { $seen{$_} > 1 } keys %seen), 0,
		"$g: nothing acked is delivered again");
	ok(!exists $seen{lost}, "$g: the in-progress publish is a gap");
	my $view = $node->safe_psql('postgres',
		"SELECT sum(lag), sum(in_flight) FROM mq.consumer_groups WHERE queue = 's' AND group_name = '$g'");
	is($view, '0|0', "$g: no lag, nothing in flight once all is acked");
}
my $redelivered = $node->safe_psql('postgres',
	q{SELECT count(*) FROM acked WHERE g = 'ga' AND redelivered});
is($redelivered, $inflight, 'ga: what was in flight came back redelivered, nothing else');

# and again after a clean restart: nothing comes back
$node->restart;
my $more = $node->safe_psql('postgres',
	q{SELECT (SELECT count(*) FROM mq.consume('s', 100, group_name => 'ga'))
	       + (SELECT count(*) FROM mq.consume('s', 100, group_name => 'gb'))});
is($more, '0', 'nothing acked is delivered again after a restart');

$node->stop;
done_testing();
