# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# mq-amqp's channels and their PostgreSQL sessions (docs/amqp.md, Channels
# and sessions), driven by Debian's pika (test/amqp/channel_checks.py):
#  1. channels reuse one pooled session: 100 channels taken and closed one
#     after another, each with a publish, and 50 publishing channels left
#     open (confirms) share one session; it ends once it has been idle in
#     the pool for a while, the channels still open;
#  2. the checks: 1,000 channel open/close pairs complete, 256 channels
#     opened at once all work, a closed channel's unacked deliveries (of a
#     consumer and of a basic.get) are ready again and redelivered, a tx
#     channel's uncommitted publishes vanish and its uncommitted acks are
#     undone at its close, a pooled session carries no prefetch and serves
#     no other role, and a session that cannot be had (a role limited to
#     one connection) closes the channel with 541, not the connection;
#  3. the gateway is still running and logged no crash.
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

# 256 channels with a session each at once, and the checks' others
my $node = qe_node('amqp_channels', conf => "max_connections = 400\n");

# amqp_app makes the queues; amqp_other has no privilege on them;
# amqp_one may hold one session, and consume from ch_one_q (one message)
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	SET password_encryption = 'scram-sha-256';
	CREATE ROLE amqp_app LOGIN PASSWORD 'amqp-secret';
	GRANT CREATE ON SCHEMA mq TO amqp_app;
	CREATE ROLE amqp_other LOGIN PASSWORD 'other-secret';
	CREATE ROLE amqp_one LOGIN PASSWORD 'one-secret' CONNECTION LIMIT 1;
	SELECT mq.queue_declare('ch_one_q');
	SELECT mq.grant('consume', 'queue', 'ch_one_q', 'amqp_one');
	SELECT mq.send('ch_one_q', 'for amqp_one'::text);
});
qe_hba_first($node, "local all amqp_app,amqp_other,amqp_one scram-sha-256\n");

my ($gw, $port, $log) = qe_gateway($node);
ok(qe_listening($port), "mq-amqp listens on 127.0.0.1:$port");

# 1. one pooled session serves channels one after another
my $sessions =
  q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mq-amqp' AND usename = 'amqp_app'};
my $churn_client = q{
import sys, pika
p = pika.ConnectionParameters('127.0.0.1', int(sys.argv[1]), '/',
    pika.PlainCredentials('amqp_app', 'amqp-secret'))
c = pika.BlockingConnection(p)
d = c.channel()
d.queue_declare('ch_churn')
d.close()
for i in range(100):
    ch = c.channel()
    ch.basic_publish('', 'ch_churn', b'x')
    ch.close()
# 50 publishing channels left open: each confirm comes once its statement
# is done, and the session is free again
kept = []
for i in range(50):
    ch = c.channel()
    ch.confirm_delivery()
    ch.basic_publish('', 'ch_churn', b'y')
    kept.append(ch)
print('churned', flush=True)
sys.stdin.readline()
c.close()
print('closed', flush=True)
};
my ($cin, $cout, $cerr) = ('', '', '');
my $churn = IPC::Run::start([ $python, '-c', $churn_client, $port ],
	'<', \$cin, '>', \$cout, '2>', \$cerr, IPC::Run::timeout(300));
$churn->pump until $cout =~ /churned/ || !$churn->pumpable;
like($cout, qr/churned/,
	'100 channels taken and closed, one after another, and 50 publishing channels open')
  or diag($cerr);
# (the login's control session ends by itself a moment after open-ok)
ok($node->poll_query_until('postgres', "SELECT ($sessions) = 1"),
	'they share one PostgreSQL session: the pool\'s')
  or diag($node->safe_psql('postgres', $sessions));
is($node->safe_psql('postgres', q{SELECT ready FROM mq.queues WHERE queue = 'ch_churn'}), '150', 'all published');
ok($node->poll_query_until('postgres', "SELECT ($sessions) = 0"),
	'an idle pooled session ends after a while, the channels still open');
$cin .= "\n";
$churn->finish;
like($cout, qr/closed/, 'the connection closed') or diag($cerr);

# 2. the checks: one line per check
my @expected = qw(
  open_close_1000_pairs channels_256_at_once closed_channel_deliveries_redelivered
  tx_channel_close_rolls_back pooled_session_carries_no_state
  session_failure_closes_the_channel);
my $checks = "$FindBin::RealBin/../amqp/channel_checks.py";
local $ENV{GW_LIMITED} = 'amqp_one:one-secret';
local $ENV{GW_LIMITED_QUEUE} = 'ch_one_q';
local $ENV{GW_OTHER} = 'amqp_other:other-secret';
qe_amqp_checks([ $python, $checks, $port, 'amqp_app', 'amqp-secret' ], \@expected, timeout => 1200);

# 3. the gateway is alive and logged no crash
my $gwlog = qe_gateway_stop($gw, $log);
like($gwlog, qr/channel \d+: INTERNAL_ERROR - no PostgreSQL session: .*too many connections for role "amqp_one"/,
	'the channel that had no session is in the log, with the server\'s reason');

done_testing();
