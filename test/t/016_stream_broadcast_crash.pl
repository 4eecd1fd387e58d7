# A broadcast consumer group across a crash:
#  two consumers of one broadcast group ack part of a stream at their own
#  pace, each with a few deliveries in flight, and a backend is killed with
#  SIGKILL.  After crash recovery each consumer resumes exactly where it
#  acked: nothing it acked is delivered to it again, what it had in flight
#  comes back flagged redelivered, and every committed message reaches
#  every consumer (one first seen after the crash too).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('bcastcrash', conf => qq{
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s', 'gb', mode => 'broadcast', start => 'earliest');
CREATE TABLE acked (c text, body text, redelivered boolean);
});

my @pub = map { $node->background_psql('postgres') } 1 .. 2;
my %con = map { $_ => $node->background_psql('postgres') } qw(A B);
my %committed;

# consume up to n as consumer c, ack them in the same transaction as the
# record of what was acked
sub consume_ack
{
	my ($c, $n) = @_;
	qe_group_consume_ack($con{$c}, 's', $n, $c, group => 'gb', consumer => $c);
	return;
}

for my $i (1 .. 300)
{
	my $body = "m$i";
	my $r = $pub[$i % 2]->query_safe("SELECT mq.send('s', '$body') IS NOT NULL");
	$committed{$body} = 1 if $r eq 't';
	consume_ack('A', 3) if $i % 4 == 0;
	consume_ack('B', 5) if $i % 9 == 0;
}
# in flight at the crash: leased, not acked
my %inflight = (A => 4, B => 3);
for my $c (qw(A B))
{
	$con{$c}->query_safe(
		"SELECT count(*) FROM mq.consume('s', $inflight{$c}, group_name => 'gb', consumer => '$c')");
}
# their delivery records reach disk with the next commit of any session
$node->safe_psql('postgres', 'CREATE TABLE flush_wal ()');
# and one publish in progress
$pub[0]->query_safe('BEGIN');
$pub[0]->query_safe("SELECT mq.send('s', 'lost')");

my %acked_before;
for my $c (qw(A B))
{
	$acked_before{$c} = $node->safe_psql('postgres', "SELECT count(*) FROM acked WHERE c = '$c'");
}
ok($acked_before{A} > 0 && $acked_before{B} > 0 && $acked_before{A} != $acked_before{B},
	"both consumers acked some before the crash, each at its pace ($acked_before{A}, $acked_before{B})");

my $pid = $pub[0]->query_safe('SELECT pg_backend_pid()');
my $logpos = -s $node->logfile;
kill 'KILL', $pid;
eval { $_->quit; } for @pub, values %con;
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains(qr/terminated by signal 9/, $logpos), 'crash recovery ran');

# each consumer's committed offsets are what it acked (it acked in offset
# order, per partition); one more where a partition it acked to the end
# ends with the aborted publish's gap
my $view = $node->safe_psql('postgres',
	q{SELECT consumer, sum(committed_offset), sum(lag)
	    FROM mq.consumer_groups WHERE queue = 's' AND group_name = 'gb'
	   GROUP BY 1 ORDER BY 1});
my %rows = map { my ($c, @v) = split /\|/; ($c => \@v) } split /\n/, $view;
for my $c (qw(A B))
{
	ok($rows{$c}[0] == $acked_before{$c} || $rows{$c}[0] == $acked_before{$c} + 1,
		"$c: committed offsets are where it acked ($rows{$c}[0])");
}

# consume everything that is left, as A, B and C (first seen now)
for my $c (qw(A B C))
{
	my $s = $node->background_psql('postgres');
	$con{$c} = $s;
	for (1 .. 100)
	{
		consume_ack($c, 100);
		last if $s->query_safe(q{SELECT count(*) FROM taken}) == 0;
	}
	$s->quit;
}

for my $c (qw(A B C))
{
	my $got = $node->safe_psql('postgres', "SELECT body FROM acked WHERE c = '$c'");
	my %seen;
	$seen{$_}++ for split /\n/, $got;
	is(scalar(grep { ($seen{$_} // 0) >= 1 } keys %committed), scalar(keys %committed),
		"$c: every committed message delivered");
	is(scalar(grep { $seen{$_} > 1 } keys %seen), 0, "$c: nothing acked is delivered again");
	ok(!exists $seen{lost}, "$c: the in-progress publish is a gap");
	my $redelivered = $node->safe_psql('postgres',
		"SELECT count(*) FROM acked WHERE c = '$c' AND redelivered");
	is($redelivered, $inflight{$c} // 0, "$c: what was in flight came back redelivered, nothing else");
	my $v = $node->safe_psql('postgres',
		"SELECT sum(lag), sum(in_flight) FROM mq.consumer_groups "
		  . "WHERE queue = 's' AND group_name = 'gb' AND consumer = '$c'");
	is($v, '0|0', "$c: no lag, nothing in flight once all is acked");
}

# and after a clean restart nothing comes back to any of them
$node->restart;
my $more = $node->safe_psql('postgres',
	q{SELECT sum((SELECT count(*) FROM mq.consume('s', 100, group_name => 'gb', consumer => c)))
	    FROM unnest('{A,B,C}'::text[]) c});
is($more, '0', 'nothing acked is delivered again after a restart');

$node->stop;
done_testing();
