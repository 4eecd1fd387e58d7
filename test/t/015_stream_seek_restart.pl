# mq.seek across a restart and a crash: a group that acked everything is
# sought back; after a clean restart, and again after kill -9 of the
# postmaster, it resumes at the sought offset and the messages it had
# acked before the seek are delivered again (the seek emptied the group's
# settlement logs and wrote one FLOOR: no older record survives it).  A
# forward seek in one partition is durable too, and acks after a seek
# are remembered across the restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('seekrestart', conf => qq{
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s', 'g', start => 'earliest');
SELECT mq.group_declare('s', 'other', start => 'earliest');
SELECT count(*) FROM (SELECT mq.send('s', 'm' || i, "partition" => i % 2)
					   FROM generate_series(0, 19) i) x;
});

# consume everything for group g and ack it; returns "partition:offset,..."
sub take_ack
{
	my ($g, $n) = @_;
	$n //= 100;
	return $node->safe_psql('postgres', qq{
		CREATE TEMP TABLE c AS
		  SELECT msg_id, "partition" AS p, "offset" AS o
		    FROM mq.consume('s', $n, group_name => '$g');
		SELECT mq.ack('s', ARRAY(SELECT msg_id FROM c), group_name => '$g')
		 WHERE EXISTS (SELECT 1 FROM c) \\g /dev/null
		SELECT coalesce(string_agg(p || ':' || o, ',' ORDER BY p, o), '') FROM c;});
}

sub committed
{
	return $node->safe_psql('postgres', q{
		SELECT string_agg(committed_offset::text, ',' ORDER BY "partition")
		  FROM mq.consumer_groups WHERE group_name = 'g'});
}

my $all = join(',', (map { "0:$_" } 0 .. 9), (map { "1:$_" } 0 .. 9));
is(take_ack('g'), $all, 'everything delivered once');
is(take_ack('g'), '', 'nothing more');
# (a group serves its highest partition first)
is(take_ack('other', 3), '1:0,1:1,1:2', 'the other group acked three');

# backward over acked messages, then a clean restart
$node->safe_psql('postgres', q{SELECT mq.seek('s', 'g', to_offset => 5)});
is(committed(), '5,5', 'sought back to 5');
$node->restart;
is(committed(), '5,5', 'after a restart: still 5');
is(take_ack('g', 4), '1:5,1:6,1:7,1:8', 'acked-then-sought-back messages come again');
$node->restart;
is(committed(), '5,9', 'acks after the seek survive a restart');
is(take_ack('g'), '0:5,0:6,0:7,0:8,0:9,1:9', 'the rest, once');

# backward again in every partition, and forward in one; then kill -9
$node->safe_psql('postgres', q{
	SELECT mq.seek('s', 'g', to_offset => 2);
	SELECT mq.seek('s', 'g', to_offset => 8, "partition" => 1);});
$node->stop('immediate');
$node->start;
is(committed(), '2,8', 'after a crash: the sought positions');
is(take_ack('g'), '0:2,0:3,0:4,0:5,0:6,0:7,0:8,0:9,1:8,1:9',
	'after a crash: delivered again from the sought offsets, skipped ones never');
is(take_ack('g'), '', 'and only once');

# a seek that rolled back, then a crash: nothing changed
$node->safe_psql('postgres', q{
	BEGIN; SELECT mq.seek('s', 'g', to_offset => 0); ROLLBACK;});
$node->stop('immediate');
$node->start;
is(committed(), '10,10', 'a rolled-back seek left no trace');
is(take_ack('g'), '', 'nothing redelivered');
is(take_ack('other'), join(',', (map { "0:$_" } 0 .. 9), (map { "1:$_" } 3 .. 9)),
	'the other group was never moved');

$node->stop;
done_testing();
