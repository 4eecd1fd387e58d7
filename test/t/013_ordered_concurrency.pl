# Ordered consumption under 16 concurrent consumers (pgbench): 64 message
# groups of 20 messages each, on two targets that share one load and one
# set of checks:
#	1. an ordered classic queue;
#	2. an ordered consumer group of a 4-partition stream (issue 12): the
#	   parallelism is the number of message groups, not of partitions.
# Every message is delivered and acked exactly once, the deliveries of each
# group come in publish order and never overlap (one at a time), and more
# than 4 consumers hold deliveries at the same time.
# 3. The stream's group after a restart: the heads in flight before it
#    come back first, redelivered, and nothing behind them.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $groups = 64;
my $per_group = 20;
my $total = $groups * $per_group;

my $node = qe_node('ordered', conf => qq{
max_connections = 40
});
$node->safe_psql('postgres', qq{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('oq', arguments => '{"ordered": true}');
SELECT mq.queue_declare('os', 'stream', arguments => '{"partitions": 4}');
SELECT mq.group_declare('os', 'og', start => 'earliest', ordered => true);
-- one row per delivery: id orders deliveries, xid finds this transaction's
CREATE TABLE olog (id bigserial, target text, xid xid8 DEFAULT pg_current_xact_id(),
	msg_id bigint, grp text, seq int, client int,
	got_at timestamptz DEFAULT clock_timestamp(), acked_at timestamptz);
});

# The load and the checks, for one target: $consume is the mq.consume call
# without its closing parenthesis, $group the group_name argument of mq.ack
# ('' for a queue).
sub ordered_load
{
	my ($target, $queue, $group) = @_;
	my $gname = $group eq '' ? '' : ", group_name => '$group'";
	my $consume = "mq.consume('$queue', %d, wait => '20 ms'$gname%s)";

	qe_publish_groups($node, $queue, $groups, $per_group);

	# each transaction: take up to 4, hold them a moment, ack them, commit
	my $take = sprintf($consume, 4, '');
	$node->pgbench(
		'--no-vacuum --client=16 --jobs=4 --transactions=150',
		0,
		[qr{processed: 2400/2400}],
		[qr{^$}],
		"16 consumers on $target",
		{
			"013_consume_$queue" => qq{
BEGIN;
INSERT INTO olog (target, msg_id, grp, seq, client)
	SELECT '$target', msg_id, message_group, convert_from(body, 'UTF8')::int, :client_id
	  FROM $take;
SELECT pg_sleep(0.003);
UPDATE olog SET acked_at = clock_timestamp() WHERE xid = pg_current_xact_id();
SELECT mq.ack('$queue', ARRAY(SELECT msg_id FROM olog WHERE xid = pg_current_xact_id())$gname);
COMMIT;
}
		});

	# whatever pgbench left (its clients may stop before the queue is
	# empty): one message per group and call, so call until nothing comes
	my $drain = sprintf($consume, 10000, ', auto_ack => true');
	my $left = 0;
	for (;;)
	{
		my $n = $node->safe_psql('postgres', qq{
WITH c AS (SELECT msg_id, message_group, convert_from(body, 'UTF8')::int AS seq FROM $drain),
	 i AS (INSERT INTO olog (target, msg_id, grp, seq, client, acked_at)
		   SELECT '$target', msg_id, message_group, seq, -1, clock_timestamp() FROM c
		   RETURNING 1)
SELECT count(*) FROM i});
		last if $n == 0;
		$left += $n;
	}
	note "$target: left after pgbench: $left";

	is($node->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT msg_id) FROM olog WHERE target = '$target'"),
		"$total|$total", "$target: every message delivered exactly once");

	# per group: deliveries in publish order, 1..20
	is(qe_groups_out_of_order($node, 'olog', 'grp', "target = '$target'", $per_group),
		'0', "$target: every group delivered in publish order");

	# one at a time: a group's next delivery starts after the previous ack
	is($node->safe_psql('postgres', qq{
SELECT count(*) FROM (
	SELECT got_at, lag(acked_at) OVER (PARTITION BY grp ORDER BY id) AS prev_acked
	  FROM olog WHERE target = '$target') s
 WHERE got_at < prev_acked}),
		'0', "$target: no two deliveries of a group overlap");

	# parallelism: the most consumers holding deliveries at one moment
	my $overlap = $node->safe_psql('postgres', qq{
SELECT max(n) FROM (
	SELECT (SELECT count(DISTINCT b.client) FROM olog b
			 WHERE b.target = a.target AND b.client >= 0 AND b.got_at <= a.got_at
			   AND b.acked_at > a.got_at) AS n
	  FROM olog a WHERE a.target = '$target' AND a.client >= 0) s});
	diag "$target: most consumers holding deliveries at once: $overlap";
	cmp_ok($overlap, '>', 4,
		"$target: more than 4 consumers hold deliveries at the same time");
}

ordered_load('ordered queue', 'oq', '');
is($node->safe_psql('postgres',
	q{SELECT ready, unacked, total FROM mq.queues WHERE queue = 'oq'}),
	'0|0|0', 'ordered queue: all settled');

ordered_load('ordered group of a 4-partition stream', 'os', 'og');
is($node->safe_psql('postgres', q{
SELECT sum(lag), sum(in_flight), sum(retrying), sum(dead_lettered)
  FROM mq.consumer_groups WHERE queue = 'os' AND group_name = 'og'}),
	'0|0|0|0', 'stream group: all settled');

# 3. after a restart, the heads in flight come back first: four groups of
# three; the heads are taken, one of them is acked, then a restart
$node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT mq.send('os', s::text, message_group => 'r' || g)
						FROM generate_series(1, 3) s, generate_series(1, 4) g
					   ORDER BY s, g) x});
# (a session of its own holds the leases until the restart)
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{
CREATE TABLE rheads AS
SELECT msg_id, message_group, convert_from(body, 'UTF8') AS seq
  FROM mq.consume('os', 100, group_name => 'og', lease => '1 hour')});
is($bg->query_safe(q{
SELECT string_agg(message_group || ':' || seq, ',' ORDER BY message_group) FROM rheads}),
	'r1:1,r2:1,r3:1,r4:1', 'restart: the four heads delivered');
# r1's head waits for its retry (10 s), r2's is acked, r3's and r4's leased
$bg->query_safe(q{
SELECT mq.nack('os', ARRAY(SELECT msg_id FROM rheads WHERE message_group = 'r1'),
			   group_name => 'og')});
$bg->query_safe(q{
SELECT mq.ack('os', ARRAY(SELECT msg_id FROM rheads WHERE message_group = 'r2'),
			  group_name => 'og')});
$node->restart;
eval { $bg->quit };
is($node->safe_psql('postgres', q{
SELECT string_agg(message_group || ':' || convert_from(body, 'UTF8') || ':' || redelivered,
				  ',' ORDER BY message_group)
  FROM mq.consume('os', 100, group_name => 'og', auto_ack => true)}),
	'r2:2:false,r3:1:true,r4:1:true',
	'restart: the unsettled heads come back first, redelivered; an acked one lets its group go on; the nacked one still waits for its retry');
is($node->safe_psql('postgres', q{
SELECT string_agg(message_group || ':' || convert_from(body, 'UTF8'), ',' ORDER BY message_group)
  FROM mq.consume('os', 100, group_name => 'og', auto_ack => true)}),
	'r2:3,r3:2,r4:2',
	'restart: then the next of each group, but none of r1 while its head waits (the retry time is durable)');

$node->stop;
done_testing();
