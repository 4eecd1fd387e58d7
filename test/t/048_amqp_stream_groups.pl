# mq-amqp: a stream consumer's consumer group mq-amqp.<hex> (and its
# dead-letter queue, made when the consumer nacks without requeue) goes
# with the consumer however it goes: basic.cancel, channel.close,
# connection.close, a client that vanishes without a word.  A gateway
# killed with -9 deletes nothing: the groups it leaves are swept by the
# next stream consumer of the stream (through any gateway), once their
# sessions are gone (docs/amqp.md, "Streams").  Driven by Debian's pika.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use IPC::Run ();

my $python = '/usr/bin/python3';
plan skip_all => 'python3-pika is not installed (Debian package python3-pika)'
  unless system("$python -c 'import pika' >/dev/null 2>&1") == 0;

my $node = qe_node('amqp_groups', conf => "max_connections = 100\n");
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE amqp_app LOGIN PASSWORD 'amqp-secret';
	SELECT mq.queue_declare('gs', 'stream');
	SELECT mq.grant(p, 'queue', 'gs', 'amqp_app')
	  FROM unnest(ARRAY['configure', 'consume', 'publish']) p;
	SELECT count(mq.send('gs', 'm' || i)) FROM generate_series(1, 5) i;
});
# the gateway logs in with a password the server checks
qe_hba_first($node, "local all amqp_app scram-sha-256\nhost all amqp_app 127.0.0.1/32 scram-sha-256\n");

my $port = PostgreSQL::Test::Cluster::get_free_port();

# a gateway on $port (the second one after the first is killed)
sub start_gateway
{
	my ($gw) = qe_gateway($node, port => $port);

	return $gw if qe_listening($port);
	die "mq-amqp does not listen on 127.0.0.1:$port";
}

# A stream consumer from the first offset that nacks its first delivery
# without requeue (a dead letter: its group's DLQ is made) and acks the
# other four (a cancelled consumer's session stays while it has unacked
# deliveries, and its group with it), says "ready",
# waits for a line, then goes as argv[2] says, says "gone" and waits for
# another line (a client that vanishes just exits).
my $client = q{
import os, sys, pika
mode = sys.argv[2]
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'))
conn = pika.BlockingConnection(p)
ch = conn.channel()
ch.basic_qos(prefetch_count=10)
got = []
def on_message(c, m, props, body):
    if not got:
        c.basic_nack(m.delivery_tag, requeue=False)
    else:
        c.basic_ack(m.delivery_tag)
    got.append(body)
tag = ch.basic_consume('gs', on_message, arguments={'x-stream-offset': 'first'})
while len(got) < 5:
    conn.process_data_events(time_limit=0.1)
print('ready', flush=True)
sys.stdin.readline()
if mode == 'cancel':
    ch.basic_cancel(tag)
elif mode == 'channel_close':
    ch.close()
elif mode == 'connection_close':
    conn.close()
elif mode == 'vanish':
    os._exit(0)
print('gone', flush=True)
sys.stdin.readline()
};

my $groups = q{SELECT count(*) FROM mq.cat_group WHERE name LIKE 'mq-amqp.%'};
my $dlqs = q{SELECT count(*) FROM mq.cat_queue WHERE name LIKE '\%DLQ\%mq-amqp.%'};

# Run a client in mode up to "ready": its group and its DLQ (with the dead
# letter) are there
sub client_ready
{
	my ($mode) = @_;
	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start([ $python, '-c', $client, $port, $mode ],
		'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	$h->pump until $out =~ /ready/ || !$h->pumpable;
	like($out, qr/ready/, "$mode: the consumer got the stream's messages") or diag($err);
	ok($node->poll_query_until('postgres', "SELECT ($groups) = 1 AND ($dlqs) = 1"),
		"$mode: its group and its dead-letter queue are there")
	  or diag($node->safe_psql('postgres', "SELECT ($groups), ($dlqs)"));
	is($node->safe_psql('postgres',
			q{SELECT ready FROM mq.queues WHERE queue LIKE '\%DLQ\%mq-amqp.%'}),
		'1', "$mode: with the dead letter");
	return ($h, \$in, \$out, \$err);
}

my $gw = start_gateway();

# 1. each way a consumer goes takes its group and its DLQ along
for my $mode (qw(cancel channel_close connection_close vanish))
{
	my ($h, $in, $out, $err) = client_ready($mode);
	$$in .= "\n";
	$h->pump until $$out =~ /gone/ || !$h->pumpable;
	ok($node->poll_query_until('postgres', "SELECT ($groups) = 0 AND ($dlqs) = 0"),
		"$mode: the group and its dead-letter queue are gone")
	  or diag($node->safe_psql('postgres', "SELECT ($groups), ($dlqs)"));
	$$in .= "\n";
	$h->finish;
}

# 2. a gateway killed with -9 deletes nothing ...
my ($h, $in, $out, $err) = client_ready('cancel');
my $gwpid = $gw->{KIDS}[0]{PID};
kill 'KILL', $gwpid;
$gw->finish;
$h->kill_kill;
# ... and its sessions end (a long poll's when it ends)
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'mq-amqp'}),
	'the killed gateway\'s sessions are gone');
is($node->safe_psql('postgres', "SELECT ($groups), ($dlqs)"), '1|1',
	'its consumer\'s group and dead-letter queue are left');

# 3. the next stream consumer of the stream sweeps them, and its own goes
# as usual
$gw = start_gateway();
($h, $in, $out, $err) = client_ready_swept();

sub client_ready_swept
{
	my ($cin, $cout, $cerr) = ('', '', '');
	my $c = IPC::Run::start([ $python, '-c', $client, $port, 'cancel' ],
		'<', \$cin, '>', \$cout, '2>', \$cerr, IPC::Run::timeout(300));
	$c->pump until $cout =~ /ready/ || !$c->pumpable;
	like($cout, qr/ready/, 'a new consumer on a new gateway') or diag($cerr);
	return ($c, \$cin, \$cout, \$cerr);
}
ok($node->poll_query_until('postgres', "SELECT ($groups) = 1 AND ($dlqs) = 1"),
	'the left-over group and dead-letter queue are swept: only the new consumer\'s are there')
  or diag($node->safe_psql('postgres', "SELECT ($groups), ($dlqs)"));
$$in .= "\n";
$h->pump until $$out =~ /gone/ || !$h->pumpable;
ok($node->poll_query_until('postgres', "SELECT ($groups) = 0 AND ($dlqs) = 0"),
	'and it goes with its consumer');
$$in .= "\n";
$h->finish;

$gw->signal('TERM');
$gw->finish;
$node->stop;
done_testing();
