# broker: the ready bytes of a queue with x-max-length-bytes survive a
# restart and a crash.  Queue state in shared memory is rebuilt from the
# entry logs, which record each message's body size on such queues only;
# unacked messages (delivered before the restart) come back ready and count
# again.  A queue without the limit records no sizes.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('broker_bytes');
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('rej', arguments => '{"x-max-length-bytes": 100, "x-overflow": "reject-publish"}');
SELECT mq.queue_declare('drop', arguments => '{"x-max-length-bytes": 100}');
SELECT mq.queue_declare('plain');
SELECT mq.send('rej', repeat('a', 50));
SELECT mq.send('rej', repeat('b', 30));
SELECT mq.send('drop', repeat('c', 60));
SELECT mq.send('plain', 'p');
});
# one of rej's messages is leased by a live session when the server stops:
# it comes back ready
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{SELECT count(*) FROM mq.consume('rej', 1, lease => '1 hour')});

sub state
{
	my ($q) = @_;
	return $node->safe_psql('postgres',
		"SELECT ready || ' ' || coalesce(ready_bytes::text, 'null') FROM mq.queues WHERE queue = '$q'");
}

sub try_send
{
	my ($q, $n) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT mq.send('$q', repeat('x', $n))");
	return $ret == 0 ? 'ok' : ($err =~ /is full/ ? 'full' : $err);
}

is(state('rej'), '1 30', 'before the restart: one ready of 30 bytes');

$node->restart;
eval { $bg->quit };
is(state('rej'), '2 80', 'after a restart: the unacked one is ready again, 80 bytes');
is(state('drop'), '1 60', 'drop-head queue: 60 bytes');
is(state('plain'), '1 null', 'no sizes recorded without the limit');
is(try_send('rej', 21), 'full', '21 more bytes are refused');
is(try_send('rej', 20), 'ok', '20 more bytes fit');
is(try_send('drop', 41), 'ok', 'drop-head takes 41 more bytes');
is($node->safe_psql('postgres',
	q{SELECT string_agg(length(body)::text, ',' ORDER BY msg_id) FROM mq.browse('drop')}),
	'41', '... and dropped the 60-byte head');

$node->stop('immediate');
$node->start;
is(state('rej'), '3 100', 'after a crash: 100 bytes');
is(state('drop'), '1 41', 'after a crash: the drop-head queue holds 41 bytes');
is(try_send('rej', 1), 'full', 'the full queue still refuses');
$node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('rej', 1, auto_ack => true)});
is(state('rej'), '2 50', 'acking the 50-byte head frees it');
is(try_send('rej', 50), 'ok', '50 bytes fit again');

$node->stop;
done_testing();
