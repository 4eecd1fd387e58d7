# broker: a message consumed (leased) by a session that disconnects becomes
# ready at once (not after its lease), redelivered; also when the session is
# terminated by pg_terminate_backend, and when it exits inside an open
# transaction that had acked it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('broker_session');
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('sess');
SELECT mq.send('sess', 'one'::text);
});

# Wait until backend $pid has exited.  The extension's session-end callback
# (before_shmem_exit, registered at first use) runs before the backend leaves
# pg_stat_activity, so once it is gone its leases must already be released;
# checking right after this (no polling) is what "at once" means.  psql exiting
# does not wait for its backend to finish exiting, hence this wait.
sub wait_backend_gone
{
	my ($pid) = @_;
	$node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $pid)")
	  or die "backend $pid did not exit";
}

# 1. consume with a 1 hour lease, then disconnect (psql exits)
my ($body, $pid1) = split /\|/, $node->safe_psql('postgres',
	q{SELECT convert_from(body, 'UTF8'), pg_backend_pid() FROM mq.consume('sess', lease => '1 hour')});
is($body, 'one', 'consumed by a session that then exits');
wait_backend_gone($pid1);
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'sess'}),
	'1/0', 'ready again at once after disconnect');
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') || ' ' || redelivered || ' ' || delivery_count FROM mq.consume('sess', auto_ack => true)}),
	'one true 2', 'redelivered with delivery_count 2');

# 2. a background session consumes, then is terminated
$node->safe_psql('postgres', q{SELECT mq.send('sess', 'two'::text)});
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{SELECT mq.consume('sess', lease => '1 hour')});
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'sess'}),
	'0/1', 'leased while the session lives');
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
wait_backend_gone($pid);
eval { $bg->quit };
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'sess'}),
	'1/0', 'ready again after pg_terminate_backend');

# 3. consumed and acked in an open transaction, then the session exits
$bg = $node->background_psql('postgres');
$pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_safe('BEGIN');
is($bg->query_safe(q{SELECT mq.ack('sess', ARRAY(SELECT msg_id FROM mq.consume('sess', lease => '1 hour')))}),
	'1', 'consumed and acked inside an open transaction');
$bg->quit;
wait_backend_gone($pid);
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'sess'}),
	'1/0', 'ready again at once after the session exits with an uncommitted ack');
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') || ' ' || redelivered FROM mq.consume('sess', auto_ack => true)}),
	'two true', 'uncommitted ack of an exiting session is undone');

# 4. a committed ack stays acked across disconnect and restart
$node->safe_psql('postgres', q{SELECT mq.send('sess', 'three'::text)});
is($node->safe_psql('postgres', q{SELECT mq.ack('sess', ARRAY(SELECT msg_id FROM mq.consume('sess')))}),
	'1', 'consumed and acked (committed)');
$node->restart;
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('sess', 10)}), '0',
	'acked message not redelivered after restart');

# 5. a nack with a delay survives a restart (a durable timer): not ready
# before it is due, then delivered again with its delivery count
$node->safe_psql('postgres', q{SELECT mq.send('sess', 'four'::text)});
# (the due time from the nack's own transaction: its start is no later
# than the nack, so the message must not come before it; a separate call
# could come late on a loaded machine and make a delivery on time look early)
my ($nacked, $due) = split /\|/, $node->safe_psql('postgres',
		q{SELECT mq.nack('sess', ARRAY(SELECT msg_id FROM mq.consume('sess')), delay => '4 s'),
				 extract(epoch FROM now()) + 4});
is($nacked, '1', 'nacked with a delay');
$node->restart;
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('sess', 10)}), '0',
	'nacked message not ready right after a restart');
is($node->safe_psql('postgres', q{SELECT ready || '/' || delayed FROM mq.queues WHERE queue = 'sess'}),
	'0/1', 'counted as delayed after the restart');
is($node->safe_psql('postgres',
		qq{SELECT convert_from(body, 'UTF8') || ' ' || redelivered || ' ' || delivery_count || ' '
			|| (extract(epoch FROM clock_timestamp()) >= $due - 0.05)
		   FROM mq.consume('sess', wait => '20 s', auto_ack => true)}),
	'four true 2 true', 'delivered again when due, redelivered, second delivery');

$node->stop;
done_testing();
