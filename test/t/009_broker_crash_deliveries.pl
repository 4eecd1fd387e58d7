# delivery state across crashes (kill -9 of a backend: the postmaster
# resets shared memory and runs crash recovery, as after a segfault):
#  1. classic queue: every message delivered and not acked before the crash
#     comes back redelivered = true;
#  2. quorum queue: delivery counts survive crash after crash (1, 2, 3, ...),
#     including a delivery whose transaction rolled back, and one whose
#     delivery record reached disk only through the WAL writer (no commit);
#  3. x-delivery-limit: a poison message that crashes the server each time
#     it is delivered is dead-lettered once over the limit (reason
#     delivery_limit), not redelivered forever;
#  4. settled messages stay settled and counts in mq.queues are right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = qe_node('crashdeliv', conf => qq{
restart_after_crash = on
# no standby here: quorum queues commit locally (test 024 has standbys)
mq.quorum_unavailable = wait
wal_consistency_checking = 'mqlog'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SET client_min_messages = error;
SELECT mq.queue_declare('cq');
SELECT mq.queue_declare('fq');
SELECT mq.queue_declare('qq', 'quorum');
SELECT mq.exchange_declare('dlx', 'fanout');
SELECT mq.queue_declare('dead');
SELECT mq.bind('dead', 'dlx');
SELECT mq.queue_declare('pq', arguments => '{"x-delivery-limit": 2, "x-dead-letter-exchange": "dlx"}');
});

# Crash the server the way a poison message would: kill -9 the backend
# holding the deliveries, then wait for crash recovery to finish.
sub crash
{
	my ($bg) = @_;
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	my $logpos = -s $node->logfile;

	kill 'KILL', $pid;
	eval { $bg->quit; };

	# the postmaster may accept a connection before it has noticed the
	# death: wait for it to say so, then for the restart to end
	my $deadline = time + 60;
	sleep 0.1 until $node->log_contains(qr/terminated by signal 9/, $logpos)
	  || time > $deadline;
	ok($node->log_contains(qr/terminated by signal 9/, $logpos),
		"backend $pid killed: the server went through crash recovery");
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'server did not come back after the crash';
	return;
}

# A commit of another session: the delivery records (unflushed WAL) reach
# disk with the next commit, as the design says
sub other_commit
{
	$node->safe_psql('postgres', q{SELECT mq.send('fq', 'flush')});
	return;
}

############################################################################
# 1. classic: delivered before the crash => redelivered after it
############################################################################
$node->safe_psql('postgres', q{SELECT mq.send('cq', 'c' || g) FROM generate_series(1, 5) g});
my $bg = $node->background_psql('postgres');
my $got = $bg->query_safe(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ',' ORDER BY msg_id)
	FROM mq.consume('cq', 2)});
is($got, 'c1:false,c2:false', 'classic: two messages delivered, first time');
other_commit();
crash($bg);
$got = $node->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ',' ORDER BY msg_id)
	FROM mq.consume('cq', 2, auto_ack => true)});
is($got, 'c1:true,c2:true', 'classic: both come back redelivered after the crash');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('cq', 100, auto_ack => true)}), '3',
	'classic: the rest (c3..c5) still there, once');

############################################################################
# 2. quorum: delivery counts survive crashes
############################################################################
$node->safe_psql('postgres', q{SET client_min_messages = error; SELECT mq.send('qq', 'q1'); SELECT mq.send('qq', 'q2')});
for my $round (1 .. 3)
{
	$bg = $node->background_psql('postgres');
	$got = $bg->query_safe(q{SELECT convert_from(body, 'UTF8') || ':' || redelivered || ':' || delivery_count
		FROM mq.consume('qq', 1)});
	is($got, 'q1:' . ($round > 1 ? 'true' : 'false') . ":$round", "quorum: delivery $round of q1 before crash $round");
	other_commit();
	crash($bg);
}

# a delivery whose consuming transaction rolled back counts too
$node->safe_psql('postgres', q{BEGIN; SELECT msg_id FROM mq.consume('qq', 1); ROLLBACK;});
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') || ':' || delivery_count
	FROM mq.browse('qq', 1)}), 'q1:4', 'quorum: a rolled-back delivery counted (3 + the rollback)');

# a delivery record that only the WAL writer flushed (no commit follows)
$bg = $node->background_psql('postgres');
$got = $bg->query_safe(q{SELECT convert_from(body, 'UTF8') || ':' || delivery_count FROM mq.consume('qq', 1)});
is($got, 'q1:5', 'quorum: fifth delivery of q1');
# wal_writer_delay is 200 ms
sleep(2);
crash($bg);
is($node->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered || ':' || delivery_count, ',' ORDER BY msg_id)
	FROM mq.consume('qq', 10, auto_ack => true)}), 'q1:true:6,q2:false:1',
	'quorum: q1 delivered a sixth time after the crash, q2 never delivered before');
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked || '/' || total FROM mq.queues WHERE queue = 'qq'}),
	'0/0/0', 'quorum: nothing left');

############################################################################
# 3. x-delivery-limit: a poison message that crashes the server
############################################################################
$node->safe_psql('postgres', q{SELECT mq.send('pq', 'poison'); SELECT mq.send('pq', 'fine')});
# x-delivery-limit 2 (as RabbitMQ): dead-lettered when returned more than
# twice, i.e. delivered at most three times
for my $round (1 .. 4)
{
	$bg = $node->background_psql('postgres');
	$got = $bg->query_safe(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || delivery_count, ',')
		FROM mq.consume('pq', 1)});
	if ($round <= 3)
	{
		is($got, "poison:$round", "poison message delivered ($round) and crashes the server");
		other_commit();
		crash($bg);
	}
	else
	{
		is($got, 'fine:1', 'after three crashing deliveries the poison message is not delivered again');
		$bg->quit;
	}
}
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') || ':' || (headers->'x-death'->0->>'reason')
	FROM mq.consume('dead', 10, auto_ack => true)}), 'poison:delivery_limit',
	'the poison message was dead-lettered with reason delivery_limit');

############################################################################
# 4. settled before the crash stays settled
############################################################################
$node->safe_psql('postgres', q{SELECT mq.send('cq', 's' || g) FROM generate_series(1, 3) g});
$node->safe_psql('postgres', q{SELECT mq.ack('cq', ARRAY(SELECT msg_id FROM mq.consume('cq', 2)))});
$bg = $node->background_psql('postgres');
$bg->query_safe(q{SELECT msg_id FROM mq.consume('cq', 1)});
other_commit();
crash($bg);
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked || '/' || total FROM mq.queues WHERE queue = 'cq'}),
	'1/0/1', 'classic: acked messages not counted after the crash');
is($node->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ',' ORDER BY msg_id)
	FROM mq.consume('cq', 10, auto_ack => true)}), 's3:true',
	'classic: the unacked one redelivered; acked ones gone');

my $verify = $node->safe_psql('postgres', q{SELECT count(*) FROM pg_class c, LATERAL mq.mqlog_verify(c.oid)
	WHERE c.relam = (SELECT oid FROM pg_am WHERE amname = 'mqlog')});
is($verify, '0', 'mq.mqlog_verify finds no problem in any mqlog relation (frozen delivery rows included)');

$node->stop;
done_testing();
