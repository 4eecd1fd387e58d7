# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# mq-rocketmq, the RocketMQ 5 gRPC gateway (rocketmq/, docs/rocketmq.md),
# against a test node, with the official RocketMQ 5 Node.js client
# (rocketmq-client-nodejs, pinned by test/rocketmq_clients/node/
# package-lock.json, installed by npm ci into a scratch copy) run unchanged:
#  - start-up refusals: a credentials file others may read, an unsigned
#    development role on a non-loopback address;
#  - the gateway logs in as a role that has no privileges of its own and
#    acts as the role each access key maps to (SET ROLE): a wrong secret,
#    an unknown key and no signature are UNAUTHORIZED, a role without
#    privileges on the stream cannot send (FORBIDDEN) or see its route;
#  - gateway_checks.js: a producer sends normal, FIFO and delay messages
#    with keys, tag and user properties; a SimpleConsumer receives each
#    once, every property round-trips, acks; a message made visible again
#    by changeInvisibleDuration comes back with delivery attempt 2; an
#    acked receipt is INVALID_RECEIPT_HANDLE; a missing topic is
#    TOPIC_NOT_FOUND; ForwardMessageToDeadLetterQueue puts a message into
#    %DLQ%<group>, once; an RPC not implemented answers NOT_IMPLEMENTED and an
#    unknown method gRPC's UNIMPLEMENTED (neither hangs);
#  - push_check.js: a PushConsumer consumes each message once and a
#    message its listener fails once comes back with delivery attempt 2;
#  - filter_check.js: SimpleConsumers subscribing with a tag expression and
#    a SQL92 selector get exactly what their expression matches; a bad
#    selector is ILLEGAL_FILTER_EXPRESSION;
#  - batch_check.js: sends and acks arriving together, which the gateway
#    puts into one statement, each get their own status: 56 sends OK and
#    received once each beside 8 to a missing topic (TOPIC_NOT_FOUND); of 56
#    acks at once, only the one acked before is INVALID_RECEIPT_HANDLE;
#  - tx_check.js: a transactional message committed reaches the group, one
#    rolled back never does; a rollback after the commit and an unknown
#    transaction id are INVALID_TRANSACTION_ID; orphaned halves are
#    resolved by the producer's checker, asked through Telemetry;
#  - a connection that never speaks, or sends bad frames, is closed;
#  - a namespace is a database (the x-mq-namespace header), "" --dbname's;
#  - after a PostgreSQL restart under it, the gateway routes and sends again.
# No timing assertion: each client call has a generous timeout so that a
# hang fails instead of blocking the suite.  mq-rocketmq missing is a
# failure, not a skip.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

plan skip_all => qe_node_missing() if qe_node_missing();

my $node = qe_node('rocketmq');
my $gateway = $node->config_data('--bindir') . '/mq-rocketmq';
ok(-x $gateway, "mq-rocketmq is installed next to pg_config's bindir ($gateway)");
BAIL_OUT("mq-rocketmq is not installed") unless -x $gateway;

# the gateway's login role has no privileges of its own (NOINHERIT): it
# acts as the roles the access keys map to
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE rmq_gw LOGIN NOINHERIT;
	CREATE ROLE rmq_app NOLOGIN;
	CREATE ROLE rmq_nobody NOLOGIN;
	GRANT rmq_app, rmq_nobody TO rmq_gw;
	SELECT mq.queue_declare('rmq_topic', type => 'stream', arguments => '{"partitions": 4}');
	SELECT mq.group_declare('rmq_topic', 'rmq_group', start => 'earliest',
							retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_topic', 'rmq_push', retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_topic', 'rmq_tag', retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_topic', 'rmq_tx', retry_delays => '{1 second}');
	-- the producer group of transactional messages (--producer-group): its
	-- SQL check function leaves every undecided half to its producer
	CREATE FUNCTION rmq_unknown(bigint, jsonb, bytea) RETURNS text
		LANGUAGE sql AS $$ SELECT 'unknown' $$;
	SELECT mq.producer_group_declare('rocketmq', 'rmq_unknown(bigint,jsonb,bytea)');
	SELECT mq.group_declare('rmq_topic', 'rmq_sql', retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_topic', 'rmq_batch', retry_delays => '{1 second}');
	SELECT mq.grant('publish', 'queue', 'rmq_topic', 'rmq_app');
	SELECT mq.grant('consume', 'queue', 'rmq_topic', 'rmq_app');
	-- push_policy_check.js: groups' retry policies and FIFO in the Settings
	SELECT mq.queue_declare('rmq_policy', type => 'stream', arguments => '{"partitions": 2}');
	SELECT mq.group_declare('rmq_policy', 'rmq_retry', max_retries => 2,
							retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_policy', 'rmq_fifo', ordered => true, max_retries => 2,
							retry_delays => '{1 second}');
	SELECT mq.group_declare('rmq_policy', 'rmq_mixed', retry_delays => '{1 second}');
	SELECT mq.grant('publish', 'queue', 'rmq_policy', 'rmq_app');
	SELECT mq.grant('consume', 'queue', 'rmq_policy', 'rmq_app');
});

# a second database: namespace "rmq_ns", with a topic of its own
$node->safe_psql('postgres', 'CREATE DATABASE rmq_ns');
$node->safe_psql('rmq_ns', q{
	CREATE EXTENSION queue_ext;
	SELECT mq.queue_declare('ns_topic', type => 'stream', arguments => '{"partitions": 2}');
	SELECT mq.grant('publish', 'queue', 'ns_topic', 'rmq_app');
	SELECT mq.grant('consume', 'queue', 'ns_topic', 'rmq_app');
});

my ($rc, $out, $err);
($rc, $out, $err) = qe_run([ $gateway, '--help' ], 30);
is($rc, 0, '--help exits 0');
like($out, qr/--listen=HOST:PORT.*--credentials=FILE.*--insecure-loopback-role/s, '--help shows the flags');

my $creds = $node->basedir . '/rocketmq.credentials';
PostgreSQL::Test::Utils::append_to_file($creds,
	"# access_key secret_key role\nAK_APP app-secret rmq_app\nAK_NOBODY nobody-secret rmq_nobody\n");
chmod 0644, $creds;
($rc, $out, $err) = qe_run([ $gateway, '--credentials', $creds ], 30);
isnt($rc, 0, 'a credentials file others may read is refused');
like($err, qr/group or world access/, 'and says why');
chmod 0600, $creds;
($rc, $out, $err) = qe_run([ $gateway, '--listen', '0.0.0.0:1', '--insecure-loopback-role', 'rmq_app' ], 30);
isnt($rc, 0, '--insecure-loopback-role on a non-loopback address is refused');
like($err, qr/needs a loopback --listen address/, 'and says why');

my ($gw, $port, $log) = qe_rocketmq($node,
	flags => [ '--credentials', $creds, '--transaction-check', '2', '--push-invisible-time', '10' ]);
# a test that dies leaves no gateway behind
END { $gw->kill_kill if $gw && $gw->pumpable; }
ok(qe_listening($port, tries => 300), "mq-rocketmq listens on 127.0.0.1:$port");

# a client that never sends the HTTP/2 preface, and one that sends garbage,
# are disconnected (no hang, no crash: the clients below still run)
my $silent = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
ok((qe_closed_by_peer($silent))[0], 'a connection that never speaks is closed by the gateway');
my $garbage = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
syswrite($garbage, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . ("\xff\x00\x13garbage" x 500));
ok((qe_closed_by_peer($garbage))[0], 'a connection sending bad HTTP/2 frames is closed');

# the client from npm, pinned, in a scratch copy (as test 037 does for amqplib)
my $clients = "$FindBin::RealBin/../rocketmq_clients";
# (a tree whose client is installed already, by npm ci in
# test/rocketmq_clients/node, lends it)
my ($node_dir, $npm_err, $npm_ran) =
  qe_npm_ci("$clients/node", "$PostgreSQL::Test::Utils::tmp_check/rocketmq_clients");
if ($npm_ran)
{
	ok(defined $node_dir, 'npm ci installs rocketmq-client-nodejs into a scratch copy of test/rocketmq_clients/node')
	  or BAIL_OUT($npm_err);
}

my %env = (RMQ_ENDPOINT => "127.0.0.1:$port", RMQ_TOPIC => 'rmq_topic', RMQ_GROUP => 'rmq_group');

# Signatures and privileges: "<rpc> <status code>" lines
my @auth = (
	[ 'AK_APP', 'app-secret', qr/^queryRoute 20000\nsendMessage 20000 20000$/, 'the right secret' ],
	[ 'AK_APP', 'wrong', qr/^queryRoute 40100\nsendMessage 40100 $/, 'a wrong secret: UNAUTHORIZED' ],
	[ 'AK_UNKNOWN', 'x', qr/^queryRoute 40100\nsendMessage 40100 $/, 'an unknown access key: UNAUTHORIZED' ],
	[ '', '', qr/^queryRoute 40100\nsendMessage 40100 $/, 'no signature: UNAUTHORIZED' ],
	[ 'AK_NOBODY', 'nobody-secret', qr/^queryRoute 40402\nsendMessage 40300 40300$/,
	  'a role without privileges on the stream: no route (TOPIC_NOT_FOUND), no send (FORBIDDEN)' ],
);
for my $a (@auth)
{
	my ($ak, $sk, $expect, $what) = @$a;
	($rc, $out, $err) = qe_run([ 'node', "$node_dir/auth_check.js" ], 120,
		{ %env, RMQ_ACCESS_KEY => $ak, RMQ_SECRET_KEY => $sk });
	like($out, $expect, "signed requests: $what") or diag("$out$err");
}

# A namespace is a database: ns_topic exists in rmq_ns only
($rc, $out, $err) = qe_run([ 'node', "$node_dir/auth_check.js" ], 120,
	{ %env, RMQ_TOPIC => 'ns_topic', RMQ_NAMESPACE => 'rmq_ns', RMQ_ACCESS_KEY => 'AK_APP',
	  RMQ_SECRET_KEY => 'app-secret' });
like($out, qr/^queryRoute 20000\nsendMessage 20000 20000$/, 'namespace rmq_ns is database rmq_ns')
  or diag("$out$err");
($rc, $out, $err) = qe_run([ 'node', "$node_dir/auth_check.js" ], 120,
	{ %env, RMQ_TOPIC => 'ns_topic', RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
like($out, qr/^queryRoute 40402\nsendMessage 40402 40402$/, 'the default namespace is --dbname\'s database')
  or diag("$out$err");
is($node->safe_psql('rmq_ns', q{SELECT (SELECT count(*) FROM mq.read('ns_topic', 0)) +
	(SELECT count(*) FROM mq.read('ns_topic', 1))}),
	'1', 'the message sent in namespace rmq_ns is in that database');

# The client, unchanged, as AK_APP
my @expected = qw(producer_start send_normal send_fifo1 send_fifo2 send_delay send_again
  topic_not_found consumer_start change_invisible_duration
  not_duplicated_normal not_duplicated_fifo1 not_duplicated_fifo2 not_duplicated_delay
  not_duplicated_again received_all round_trip_normal round_trip_fifo1 round_trip_fifo2
  round_trip_delay round_trip_again fifo_order redelivered_after_invisible_time
  ack_stale_receipt received_dlq_message forward_to_dlq forward_to_dlq_again not_implemented_status
  unknown_method_unimplemented
  query_route_topic_not_found);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/gateway_checks.js" ], 600,
	{ %env, RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('gateway_checks', $rc, $out, $err, @expected);

# The PushConsumer (QueryAssignment, auto-renew receives without a
# duration, a failed message retried by the client's ChangeInvisibleDuration)
my @push = qw(push_consumer_start push_all_consumed push_once_each push_retried_after_failure);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/push_check.js" ], 600,
	{ %env, RMQ_PUSH_GROUP => 'rmq_push', RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('push_check', $rc, $out, $err, @push);

# A group's retry policy and FIFO flag in the Settings, max attempts, lease
# renewal, FIFO PushConsumer (on its own topic: the counts below are rmq_topic's)
my @policy = qw(settings_retry_group settings_fifo_group settings_backoff push_policy_all_consumed
  retried_up_to_max_attempts lease_renewed_for_slow_listener fifo_retried_in_place
  fifo_order_after_dead_letter);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/push_policy_check.js" ], 600,
	{ %env, RMQ_TOPIC => 'rmq_policy', RMQ_RETRY_GROUP => 'rmq_retry', RMQ_FIFO_GROUP => 'rmq_fifo',
	  RMQ_SLOW_MS => 25000, RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('push_policy_check', $rc, $out, $err, @policy);
# the message failed max_retries + 1 times is in the group's DLQ, dead-lettered
# by the group; the FIFO consumer's forwarded its own
ok($node->poll_query_until('postgres', q{
	SELECT string_agg(convert_from(body, 'UTF8') || ' ' || (headers->>'x-dlq-reason'), ',')
	  FROM mq.browse('%DLQ%rmq_retry', 10)}, 'fails-always max_retries'),
	'the message failed 3 times (max_retries 2) is in %DLQ%rmq_retry');
is($node->safe_psql('postgres', q{
	SELECT string_agg(convert_from(body, 'UTF8') || ' ' || (headers->>'x-dlq-reason'), ',')
	  FROM mq.browse('%DLQ%rmq_fifo', 10)}),
	'f1 nack', 'the FIFO consumer forwarded its failed message to %DLQ%rmq_fifo');

# Subscription filters (tag, SQL92) of groups without a filter of their own
my @filter = qw(tag_filter sql92_filter bad_selector_refused);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/filter_check.js" ], 600,
	{ %env, RMQ_TAG_GROUP => 'rmq_tag', RMQ_SQL_GROUP => 'rmq_sql',
	  RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('filter_check', $rc, $out, $err, @filter);

# Sends and acks that arrive together (one statement for several of them):
# each still gets its own status, each message is stored once
my @batch = qw(batch_sends_ok batch_sends_missing_topic batch_sends_received_once batch_acks);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/batch_check.js" ], 600,
	{ %env, RMQ_BATCH_GROUP => 'rmq_batch', RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('batch_check', $rc, $out, $err, @batch);

# Consumers of one group that subscribe with different expressions: each
# receive applies its own (as a Proxy's pop), the gateway logs the disagreement
my @mixed = qw(mixed_subscriptions_own_expression mixed_subscriptions_rejected_settled_for_group);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/subscription_check.js" ], 600,
	{ %env, RMQ_TOPIC => 'rmq_policy', RMQ_MIXED_GROUP => 'rmq_mixed',
	  RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('subscription_check', $rc, $out, $err, @mixed);
like(PostgreSQL::Test::Utils::slurp_file($log),
	qr/consumer group "rmq_mixed" of topic "rmq_policy": client "[^"]+" subscribes with TAG "TagB", another consumer of the group with TAG "TagA"/,
	'the gateway logs that the consumers of a group disagree');

# Transactional messages: commit, rollback, EndTransaction's refusals
my @tx = qw(transaction_send transaction_rollback transaction_commit transaction_round_trip
  transaction_committed_only transaction_check_back transaction_slow_checker_asked_once
  transaction_check_back_answers_taken transaction_rollback_after_commit_refused transaction_unknown_id_refused);
($rc, $out, $err) = qe_run([ 'node', "$node_dir/tx_check.js" ], 600,
	{ %env, RMQ_TX_GROUP => 'rmq_tx', RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
qe_script_checks('tx_check', $rc, $out, $err, @tx);
is($node->safe_psql('postgres', q{
	SELECT string_agg(state || ' ' || decided_by, ',' ORDER BY state) FROM mq.half_messages
	 WHERE producer_group = 'rocketmq'}),
	'committed producer,committed producer,committed producer,rolled_back producer,rolled_back producer',
	'the half messages were decided by their producer, the orphans after a check-back');

# what the client sent is in the stream, with its x-rocketmq header
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM generate_series(0, 3) p,
		   mq.read('rmq_topic', p, max_messages => 100) r
	 WHERE r.headers ? 'x-rocketmq' AND r.headers->'x-rocketmq'->>'id' <> ''
	   AND r.tag IS DISTINCT FROM 'TagBatch'}),
	'18', 'the 18 messages sent through the gateway (the committed half messages too; batch_check.js\'s TagBatch ones aside) are in the stream, each with its RocketMQ id');
is($node->safe_psql('postgres', q{
	SELECT string_agg(concat_ws(' ', headers->>'x-dlq-reason', headers->>'x-dlq-origin-group',
							   headers->'x-rocketmq'->'keys'->>0), ',')
	  FROM mq.browse('%DLQ%rmq_group', 10)}),
	'nack rmq_group dead', 'ForwardMessageToDeadLetterQueue put the message into %DLQ%rmq_group');

# PostgreSQL restarts under the gateway: its pooled sessions are gone, the
# next requests connect again
$node->restart;
($rc, $out, $err) = qe_run([ 'node', "$node_dir/auth_check.js" ], 120,
	{ %env, RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
like($out, qr/^queryRoute 20000\nsendMessage 20000 20000$/,
	'after a PostgreSQL restart the gateway routes and sends again') or diag("$out$err");

$gw->signal('TERM');
$gw->finish;
is($gw->result(0), 0, 'mq-rocketmq stops on SIGTERM with status 0');
my $gwlog = PostgreSQL::Test::Utils::slurp_file($log);
unlike($gwlog, qr/out of memory|HTTP\/2 error/, 'no internal error in the gateway log');
$node->stop;
done_testing();
