# A consumer group's retry waits survive a restart and a crash (issue 12):
# a message nacked with a long delay is not redelivered after a clean
# restart nor after kill -9 of the postmaster; one nacked with a short
# delay is redelivered, but not before it falls due; a lease that ran out
# (expired by the worker, no consumer calling) waits for the group's retry
# delay across a restart as well.  The due times are RETRY_AT records in
# the group's settlement log (src/queue/queue.h).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = qe_node('groupretry', conf => qq{
restart_after_crash = on
mq.maintenance_naptime = 100
mq.launcher_naptime = 200
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s', 'g', start => 'earliest');
SELECT mq.group_declare('s', 'slow', start => 'earliest', retry_delays => '{1 hour}');
SELECT mq.send('s', 'long', "partition" => 0);
SELECT mq.send('s', 'short', "partition" => 1);
});

# consume for group $g: "body:delivery_count,..." (nothing acked)
sub take
{
	my ($g, $lease) = @_;
	$lease //= '1 hour';
	return $node->safe_psql('postgres', qq{
		SELECT coalesce(string_agg(convert_from(body, 'UTF8') || ':' || delivery_count, ','
								   ORDER BY body), '')
		  FROM mq.consume('s', 10, group_name => '$g', lease => '$lease')});
}

# consume for group g and nack each body with its delay (the others stay
# leased until the session ends); returns a lower bound of each due time,
# in that order.  The server sets a retry due at its clock when the nack
# runs plus the delay, so the server's clock read just before the nack,
# plus the delay, is never later than the due time: a delivery the
# server's clock stamps earlier than that bound was early.  (now() would
# not do: it is the start of a later transaction, after the nack.)
sub take_nack
{
	my (%delays) = @_;
	my $sql = "CREATE TEMP TABLE c AS SELECT msg_id, convert_from(body, 'UTF8') AS b "
	  . "FROM mq.consume('s', 10, group_name => 'g');\n";
	foreach my $b (sort keys %delays)
	{
		$sql .= "SELECT extract(epoch FROM clock_timestamp() + '$delays{$b}'::interval);\n";
		$sql .= "SELECT mq.nack('s', ARRAY(SELECT msg_id FROM c WHERE b = '$b'), "
		  . "delay => '$delays{$b}', group_name => 'g') \\g /dev/null\n";
	}
	return split /\n/, $node->safe_psql('postgres', $sql);
}

# poll (up to 60 s) until group g delivers something; returns it and the time
sub wait_delivery
{
	for (my $i = 0; $i < 600; $i++)
	{
		my $r = $node->safe_psql('postgres', q{
			SELECT coalesce(string_agg(convert_from(body, 'UTF8') || ':' || delivery_count, ','), '')
			       || '|' || extract(epoch FROM clock_timestamp())
			  FROM mq.consume('s', 10, group_name => 'g', lease => '1 hour')});
		my ($got, $at) = split /\|/, $r;
		return ($got, $at) if $got ne '';
		usleep(100_000);
	}
	return ('', 0);
}

# 1. long and short nacks, then a clean restart
my ($long_due, $short_due) = take_nack(long => '1 hour', short => '6 s');
is(take('g'), '', 'both wait for their retry');
$node->restart;
my ($got, $at) = wait_delivery();
is($got, 'short:2', 'after a restart: the short retry comes back, the long one does not');
cmp_ok($at, '>=', $short_due, 'not before it was due');
is($node->safe_psql('postgres', q{
	SELECT sum(retrying) || ',' || sum(in_flight)
	  FROM mq.consumer_groups WHERE group_name = 'g'}), '2,0',
	'the view: both retrying (long, and short, returned by the session end)');

# 2. a short nack again, then kill -9
($short_due) = take_nack(short => '6 s');
$node->stop('immediate');
$node->start;
is(take('g'), '', 'after a crash: neither is redelivered at once');
($got, $at) = wait_delivery();
is($got, 'short:4', 'after a crash: the short retry comes back (the ended session counted once)');
cmp_ok($at, '>=', $short_due, 'not before it was due');

# the long one once more, across a crash and a restart
$node->stop('immediate');
$node->start;
# (a delivery record is not flushed by itself: a crash may forget the last)
like(take('g'), qr/^short:[45]$/, 'after a crash: only what was delivered and not retrying');
$node->restart;
usleep(500_000);
like(take('g'), qr/^short:[56]$/, 'the long retry still waits after a second restart');
cmp_ok($node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())'),
	'<', $long_due, '(its due time is still ahead, by the server\'s clock)');

# 3. a lease that runs out with nobody consuming: the worker makes it a
# retry after the group's delay (1 hour), and a restart keeps that
# (the consuming session stays until then: its end would return them at once)
is($node->safe_psql('postgres', q{
	SELECT coalesce(string_agg(convert_from(body, 'UTF8') || ':' || delivery_count, ','
							   ORDER BY body), '')
	  FROM mq.consume('s', 10, group_name => 'slow', lease => '1 s');
	DO $$
	BEGIN
		FOR i IN 1 .. 300 LOOP
			EXIT WHEN (SELECT sum(retrying) = 2 AND sum(in_flight) = 0
						 FROM mq.consumer_groups WHERE group_name = 'slow');
			PERFORM pg_sleep(0.1);
		END LOOP;
	END $$;
	SELECT sum(retrying) || ',' || sum(in_flight)
	  FROM mq.consumer_groups WHERE group_name = 'slow'}),
	"long:1,short:1\n2,0", 'group slow: both delivered with 1 s leases, the worker expired them');
$node->restart;
is(take('slow'), '', 'after a restart: the expired leases still wait for their retry');
$node->stop('immediate');
$node->start;
is(take('slow'), '', 'and after a crash');

$node->stop;
done_testing();
