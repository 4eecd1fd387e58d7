# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# mq-amqp, the AMQP 0-9-1 gateway (gateway/, docs/amqp.md), as the real
# binary in front of a test server, driven by Debian's pika:
#  1. test/amqp/gateway_checks.py: the six RabbitMQ tutorials, properties and
#     headers round trip, confirms (one refused publish nacked alone),
#     mandatory returns, get/ack/nack/reject, channel close requeueing only
#     its deliveries, a bad delivery tag closing only its channel (406),
#     404 on passive declares, 403 bad password, 530 unknown vhost, vhost =
#     database, exclusive (405) and auto-delete queues, consumer cancel
#     notification, tx, 540 NOT_IMPLEMENTED (an unknown method: the
#     connection), a role with only some privileges (basic.consume refused
#     before consume-ok, a passive declare 403 without a privilege), binds on
#     the default exchange 403, heartbeats, bad and oversize frames and
#     methods that cannot be decoded (501), random frames;
#  2. 200 idle connections hold no PostgreSQL session;
#  3. the PostgreSQL server restarting under a connected client: the client
#     gets a connection error (320), and new connections work afterwards;
#  4. a quorum queue on this server without synchronous standbys (issue 34):
#     the declare's WARNING is in the gateway's log with its hint, and a
#     publish closes the channel with 406 and the 53000 error's hint;
#  5. the gateway is still running and logged no crash.
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

# each AMQP connection takes a session, and one per channel and consumer
my $node = qe_node('amqp', conf => "max_connections = 200\n");
my $gateway = $node->config_data('--bindir') . '/mq-amqp';
ok(-x $gateway, "mq-amqp is installed next to pg_config's bindir ($gateway)");

# a login role with a password, checked by the server (scram), that may
# create queues and exchanges; a second database is a second vhost
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE amqp_app LOGIN PASSWORD 'amqp-secret';
	GRANT CREATE ON SCHEMA mq TO amqp_app;
	CREATE DATABASE amqp_vhost OWNER amqp_app;
});
$node->safe_psql('amqp_vhost', q{
	CREATE EXTENSION queue_ext;
	GRANT CREATE ON SCHEMA mq TO amqp_app;
});
# a role with only the privileges granted here, on queues it does not own
# (gateway_checks.py's consume_refused_before_consume_ok and
# passive_declare_needs_a_privilege): none, consume, configure
$node->safe_psql('postgres', q{
	CREATE ROLE amqp_limited LOGIN PASSWORD 'limited-secret';
	SELECT mq.queue_declare('gw_priv_none');
	SELECT mq.queue_declare('gw_priv_consume');
	SELECT mq.queue_declare('gw_priv_configure');
	SELECT mq.grant('consume', 'queue', 'gw_priv_consume', 'amqp_limited');
	SELECT mq.grant('configure', 'queue', 'gw_priv_configure', 'amqp_limited');
	SELECT mq.send('gw_priv_none', 'not for amqp_limited'::text);
	SELECT mq.send('gw_priv_configure', 'one'::text);
});
qe_hba_first($node, "local all amqp_app scram-sha-256\nlocal all amqp_limited scram-sha-256\n");

my $conninfo = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';

# --help and bad flags
my ($out, $err);
IPC::Run::run([ $gateway, '--help' ], '>', \$out, '2>', \$err);
is($?, 0, '--help exits 0');
like($out, qr/--listen HOST:PORT.*--dbname CONNINFO/s, '--help shows the flags');
IPC::Run::run([ $gateway, '--listen', 'nonsense' ], '>', \$out, '2>', \$err);
is($? >> 8, 2, 'a bad --listen exits 2');
like($err, qr/--listen must be HOST:PORT/, 'and says why');

# a config file, overridden by flags
my $conf = $node->basedir . '/mq-amqp.conf';
PostgreSQL::Test::Utils::append_to_file($conf,
	"# mq-amqp settings\nlisten = 127.0.0.1:1\ndbname = '$conninfo'\nheartbeat = 30\n");
my ($gw, $port, $log) = qe_gateway($node, config => $conf);
ok(qe_listening($port), "mq-amqp listens on 127.0.0.1:$port");

# 1. the checks: one line per check
my @expected = qw(
  tutorial_hello_world tutorial_work_queues tutorial_publish_subscribe tutorial_routing
  tutorial_topics tutorial_rpc properties_round_trip publisher_confirms confirms_batched_async
  confirms_refused_publish_nacked_alone
  mandatory_return basic_get_and_counts nack_reject_requeue_and_dead_letter ack_multiple
  channel_close_requeues_only_its_deliveries bad_delivery_tag_closes_only_the_channel
  passive_declare_not_found redeclare_with_other_settings login_refused unknown_vhost
  vhost_is_a_database exclusive_queue_locked_and_deleted_on_close
  auto_delete_queue_goes_with_last_consumer consumer_cancel_notification_on_queue_delete
  cancel_keeps_unacked_deliveries_ackable transactions not_implemented user_id_checked
  large_message_many_frames fast_publisher_then_close_all_arrive
  alternate_exchange_and_headers_exchange ttl_length_limits_and_delay
  flow_recover_and_global_qos exclusive_consumer_and_tag_reuse no_ack_consumer priority_queue stream_queue_with_offsets
  stream_max_age_as_rabbitmq
  heartbeats_keep_idle_connection
  bad_frame_end_is_frame_error oversize_frame_is_frame_error malformed_method_is_frame_error
  unknown_class_is_not_implemented random_frames_never_crash wrong_protocol_header
  unfinished_handshake_is_dropped silent_client_is_dropped
  x_arguments_any_integer_type round_robin_prefetch_1_alternates queue_expires_unused
  delete_if_empty_refused_keeps_consumers
  consume_refused_before_consume_ok passive_declare_needs_a_privilege
  bind_to_default_exchange_refused unknown_method_is_connection_error);
my $checks = "$FindBin::RealBin/../amqp/gateway_checks.py";
local $ENV{GW_LIMITED} = 'amqp_limited:limited-secret';
qe_amqp_checks([ $python, $checks, $port, 'amqp_app', 'amqp-secret', 'amqp_vhost' ], \@expected);

# 2. idle connections cost no PostgreSQL session (the login's is closed after
# connection.open-ok); a channel costs one
my $idle_client = q{
import sys, pika
# heartbeats off: a blocking connection answers them only while the client
# calls into it, and on a loaded machine this script waits longer than the
# gateway's heartbeat timeout between its steps
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'), heartbeat=0)
conns = [pika.BlockingConnection(p) for _ in range(200)]
print('opened %d' % len(conns), flush=True)
sys.stdin.readline()
ch = conns[0].channel()
ch.queue_declare('idle_check')  # done by the channel's session
print('channel', flush=True)
sys.stdin.readline()
for c in conns:
    c.close()
print('closed', flush=True)
};
my ($iin, $iout, $ierr) = ('', '', '');
my $idle = IPC::Run::start([ $python, '-c', $idle_client, $port ],
	'<', \$iin, '>', \$iout, '2>', \$ierr, IPC::Run::timeout(120));
$idle->pump until $iout =~ /opened/ || !$idle->pumpable;
like($iout, qr/opened 200/, '200 AMQP connections open');
my $sessions = q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mq-amqp'};
# (the sessions of the checks above end by themselves, a backend's exit
# taking a moment on a loaded machine: 200 sessions would not)
ok($node->poll_query_until('postgres', "SELECT ($sessions) = 0"), 'and hold no PostgreSQL session')
  or diag($node->safe_psql('postgres', $sessions));
$iin .= "\n";
$idle->pump until $iout =~ /channel/ || !$idle->pumpable;
is($node->safe_psql('postgres', $sessions), '1', 'a channel holds one');
$iin .= "\n";
$idle->finish;
like($iout, qr/closed/, 'all closed') or diag($ierr);

# 3. the server restarting under a connected client: a connection error,
# not a hang; the gateway serves new connections once it is back
my $restart_client = q{
import sys, time, pika
from pika.exceptions import ConnectionClosedByBroker, AMQPConnectionError
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'))
c = pika.BlockingConnection(p)
ch = c.channel()
ch.queue_declare('restart_q')
ch.basic_consume('restart_q', lambda *a: None)
print('ready', flush=True)
t0 = time.time()
try:
    while time.time() - t0 < 60:
        c.process_data_events(time_limit=0.5)
    print('still open')
except ConnectionClosedByBroker as e:
    print('closed %d %s' % (e.reply_code, e.reply_text))
except AMQPConnectionError as e:
    print('connection error %r' % (e,))
};
my ($rin, $rout, $rerr) = ('', '', '');
my $client = IPC::Run::start([ $python, '-c', $restart_client, $port ],
	'<', \$rin, '>', \$rout, '2>', \$rerr, IPC::Run::timeout(120));
$client->pump until $rout =~ /ready/ || !$client->pumpable;
like($rout, qr/ready/, 'a client consumes through the gateway');
$node->restart(mode => 'fast');
$client->finish;
like($rout, qr/closed 320 CONNECTION_FORCED/,
	'the server restart closes the client connection with 320');

my $after = q{
import sys, pika
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'))
c = pika.BlockingConnection(p)
ch = c.channel()
ch.queue_declare('restart_q')
ch.basic_publish('', 'restart_q', b'after restart')
print(ch.basic_get('restart_q', auto_ack=True)[2].decode())
c.close()
};
IPC::Run::run([ $python, '-c', $after, $port ], '<', \undef, '>', \$out, '2>', \$err,
	IPC::Run::timeout(60));
is($out, "after restart\n", 'new connections work after the restart') or diag($err);

# 4. a quorum queue where no synchronous standby is configured (and
# mq.quorum_unavailable = error, the default): AMQP cannot show the
# declare's warning, the gateway logs it; the publish's 53000 closes the
# channel, its reply text carrying the remedy
my $quorum_client = q{
import sys, pika
from pika.exceptions import ChannelClosedByBroker
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'))
c = pika.BlockingConnection(p)
ch = c.channel()
ch.queue_declare('lone_qq', durable=True, arguments={'x-queue-type': 'quorum'})
print('declared', flush=True)
ch.confirm_delivery()
try:
    ch.basic_publish('', 'lone_qq', b'q1')
    print('published')
except ChannelClosedByBroker as e:
    print('closed %d %s' % (e.reply_code, e.reply_text))
c.close()
};
IPC::Run::run([ $python, '-c', $quorum_client, $port ], '<', \undef, '>', \$out, '2>', \$err,
	IPC::Run::timeout(60));
like($out, qr/^declared\n/, 'quorum queue declared through the gateway') or diag($err);
like($out, qr/^closed 406 PRECONDITION_FAILED - quorum commit unavailable: no synchronous standby is configured\. HINT: .*ALTER SYSTEM SET mq\.quorum_unavailable = 'wait'; SELECT pg_reload_conf\(\);$/m,
	'its publish closes the channel: 406, the reply text with the hint') or diag($out);
like(PostgreSQL::Test::Utils::slurp_file($log),
	qr/mq-amqp: \[warning\] server warning: publishes and acks on queue "lone_qq" will fail: no synchronous standby is configured HINT: .*ALTER SYSTEM SET mq\.quorum_unavailable = 'wait'; SELECT pg_reload_conf\(\);/,
	'the declare\'s warning is in the gateway\'s log, with its hint');

# 5. the gateway is alive and logged no crash
my $gwlog = qe_gateway_stop($gw, $log);
like($gwlog, qr/received signal 15, shutting down/, 'SIGTERM stops it cleanly');

done_testing();
