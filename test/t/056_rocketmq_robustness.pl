# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# Robustness of mq-rocketmq, the RocketMQ 5 gRPC gateway (rocketmq/,
# docs/rocketmq.md), as test 040 does for mq-amqp.  The clients are
# test/rocketmq_clients/node/robust_check.js: Node's http2 module (nghttp2),
# @grpc/grpc-js and the official client rocketmq-client-nodejs (pinned by
# that directory's package-lock.json); no HTTP/2 or gRPC framing by hand.
#  - its man page is installed (help2man at make install);
#  - bad input: random bytes instead of the connection preface and bad
#    frames in a good session close the connection; gRPC framing errors (a
#    truncated message, a compressed one, a length over the limit, none)
#    end the call with gRPC's status; a protobuf that does not parse is
#    BAD_REQUEST for every RPC (INVALID_ARGUMENT for Telemetry); a body over
#    --max-body-size is MESSAGE_BODY_TOO_LARGE; unknown topics and groups,
#    missing fields and stale receipts answer RocketMQ's codes; after each
#    the gateway still serves;
#  - every RPC of MessagingService answers: the served ones OK, the others
#    NOT_IMPLEMENTED (never a hang);
#  - a client that reads nothing: its output stays bounded, the gateway
#    serves others, and answers it all once it reads;
#  - 2,000 idle connections (fewer if the descriptor limit is lower) and
#    1,000 idle streams: a new client is served meanwhile, every idle one
#    still answers afterwards;
#  - a client that vanishes during a long poll: the message its poll took
#    comes back after the invisible time, once;
#  - a PostgreSQL restart under the official producer (sending) and a
#    SimpleConsumer (long-polling): both see RocketMQ status codes, go on
#    after it, and every send confirmed is received afterwards.
# No timing assertion: each client call has a generous timeout so that a
# hang fails instead of blocking the suite.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use Time::HiRes qw(usleep);

plan skip_all => qe_node_missing() if qe_node_missing();

my $node = qe_node('rocketmq_robust');
my $gateway = $node->config_data('--bindir') . '/mq-rocketmq';
ok(-x $gateway, "mq-rocketmq is installed next to pg_config's bindir ($gateway)");
BAIL_OUT("mq-rocketmq is not installed") unless -x $gateway;

# ---- the man page --------------------------------------------------------------------
{
	my $file = $node->config_data('--mandir') . '/man1/mq-rocketmq.1';
	ok(-f $file, "the man page of mq-rocketmq is installed ($file)");
	my $text = -f $file ? slurp_file($file) : '';
	like($text, qr/^\.TH MQ-ROCKETMQ "1"/m, 'mq-rocketmq.1 is a section 1 page');
	like($text, qr/mq\\?-rocketmq \\- RocketMQ 5 gRPC gateway/, 'mq-rocketmq.1 has its NAME line');
	like($text, qr/\\-\\-max\\-body\\-size/, 'mq-rocketmq.1 has the --help text');
	like($text, qr/^\.SH EXAMPLES/m, 'mq-rocketmq.1 has examples');
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE rmq_gw LOGIN NOINHERIT;
	CREATE ROLE rmq_app NOLOGIN;
	GRANT rmq_app TO rmq_gw;
	SELECT mq.queue_declare(t, type => 'stream', arguments => '{"partitions": 4}')
	  FROM unnest(ARRAY['rmq_robust', 'rmq_vanish', 'rmq_restart', 'rmq_poll']) t;
	SELECT mq.group_declare(t, g, start => 'earliest', retry_delays => '{1 second}')
	  FROM (VALUES ('rmq_robust', 'rmq_rg'), ('rmq_vanish', 'rmq_vg'), ('rmq_restart', 'rmq_restart_g'),
				   ('rmq_poll', 'rmq_poll_g')) v(t, g);
	SELECT mq.grant(p, 'queue', t, 'rmq_app')
	  FROM unnest(ARRAY['rmq_robust', 'rmq_vanish', 'rmq_restart', 'rmq_poll']) t,
		   unnest(ARRAY['publish', 'consume']) p;
});

my $creds = $node->basedir . '/rocketmq.credentials';
PostgreSQL::Test::Utils::append_to_file($creds, "AK_APP app-secret rmq_app\n");
chmod 0600, $creds;
my ($gw, $port, $log) = qe_rocketmq($node, flags => [ '--credentials', $creds ]);
END { $gw->kill_kill if $gw && $gw->pumpable; }
my $gw_pid = $gw->{KIDS}[0]{PID};
ok(qe_listening($port, tries => 300), "mq-rocketmq listens on 127.0.0.1:$port");

my ($node_dir, $npm_err, $npm_ran) = qe_npm_ci("$FindBin::RealBin/../rocketmq_clients/node",
	"$PostgreSQL::Test::Utils::tmp_check/rocketmq_clients_robust");
if ($npm_ran)
{
	ok(defined $node_dir, 'npm ci installs rocketmq-client-nodejs into a scratch copy of test/rocketmq_clients/node')
	  or BAIL_OUT($npm_err);
}

my %env = (RMQ_ENDPOINT => "127.0.0.1:$port", RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret',
	RMQ_GATEWAY_PID => $gw_pid);

# Run robust_check.js MODE; each expected "ok NAME" line is a test
sub robust
{
	my ($mode, $timeout, $env, @expected) = @_;
	my ($rc, $out, $err) = qe_run([ 'sh', '-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec node "$@"', 'node',
			"$node_dir/robust_check.js", $mode ], $timeout, { %env, %$env });
	diag("$mode: $1") while $out =~ /^# (.*)$/mg;
	qe_script_checks($mode, $rc, $out, $err, @expected);
}

# ---- bad input, every RPC --------------------------------------------------------------
robust('checks', 600, { RMQ_TOPIC => 'rmq_robust', RMQ_GROUP => 'rmq_rg' }, qw(
  random_bytes_closed serving_after_random_bytes controlled_session_works bad_frames_closed
  serving_after_bad_frames grpc_truncated_message grpc_compressed_message grpc_length_over_limit
  grpc_no_message grpc_unknown_method unparsable_QueryRoute unparsable_SendMessage
  unparsable_QueryAssignment unparsable_AckMessage unparsable_ForwardMessageToDeadLetterQueue
  unparsable_EndTransaction unparsable_ChangeInvisibleDuration unparsable_ReceiveMessage wrong_wire_type
  unparsable_Telemetry serving_after_bad_messages oversize_body serving_after_oversize
  send_unknown_topic route_unknown_topic assignment_unknown_topic receive_unknown_topic
  receive_unknown_group ack_foreign_receipt send_no_messages send_no_topic route_no_topic
  receive_no_group receive_no_topic receive_no_invisible_duration receive_bad_polling_time
  ack_no_entries change_invisible_no_receipt forward_dlq_no_receipt end_transaction_no_id
  send_illegal_topic_name send_topic_name_too_long send_no_message_id send_tag_with_bar send_blank_tag
  send_tag_control send_blank_key send_key_control send_message_group_64_bytes
  send_message_group_c1_control send_system_property_name send_gateway_header_name
  send_property_value_control
  send_129_properties send_properties_over_16k send_two_topics send_bad_beside_good send_at_the_limits
  route_illegal_topic_name receive_illegal_group_name ack_illegal_group_name
  rpc_QueryRoute rpc_Heartbeat rpc_SendMessage rpc_QueryAssignment rpc_ReceiveMessage
  ack_other_group rpc_ChangeInvisibleDuration rpc_AckMessage rpc_ChangeInvisibleDuration_stale
  rpc_ForwardMessageToDeadLetterQueue_stale rpc_EndTransaction_unknown rpc_NotifyClientTermination
  rpc_Telemetry rpc_UpdateOffset rpc_GetOffset rpc_QueryOffset rpc_RecallMessage
  rpc_SyncLiteSubscription rpc_PullMessage serving_at_the_end));

# a SendMessage refused by RocketMQ's rules stored none of its messages, the
# good ones beside a bad one included; the one at the limits is there
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE substr(r.body, 1, 8) = 'illegal '::bytea) || ' ' ||
		   count(*) FILTER (WHERE r.body = 'legal at the limits'::bytea)
	  FROM generate_series(0, 3) p,
		   LATERAL mq.read('rmq_robust', p, 0, max_messages => 10000) r}), '0 1',
	'refused sends stored nothing, the send at the limits was stored');

# ---- slow and idle clients -----------------------------------------------------------------
robust('slow_reader', 600, { RMQ_TOPIC => 'rmq_robust', RMQ_GROUP => 'rmq_rg' }, qw(
  slow_reader_first_answer slow_reader_not_read slow_reader_memory_bounded slow_reader_others_served
  slow_reader_all_answered));

# 2,000 idle connections need descriptors: the gateway raises its soft limit
# to the hard one, and so does the client (sh's ulimit above)
my $hard = `sh -c 'ulimit -Hn'`;
chomp $hard;
my $idle = 2000;
if ($hard ne 'unlimited' && $hard < $idle + 200)
{
	$idle = $hard - 200;
	diag("the hard descriptor limit is $hard: $idle idle connections, not 2000");
}
robust('idle', 900, { RMQ_TOPIC => 'rmq_robust', RMQ_GROUP => 'rmq_rg', RMQ_IDLE_CONNECTIONS => $idle }, qw(
  idle_connections_open idle_new_client_served idle_new_client_routed idle_streams_end
  idle_connections_answer));

# ---- a client vanishing during a long poll --------------------------------------------------
robust('vanish', 600, { RMQ_TOPIC => 'rmq_vanish', RMQ_GROUP => 'rmq_vg' }, qw(
  vanish_send vanish_not_lost vanish_once));

# ---- a PostgreSQL restart under sends and long polls -------------------------------------------
my $confirmed = $node->basedir . '/confirmed.txt';
my $stop = $node->basedir . '/stop';
sub confirmed_count
{
	return 0 unless -f $confirmed;
	my @lines = split /\n/, slurp_file($confirmed);
	return scalar @lines;
}
my ($load_out, $load_err) = ('', '');
my $load;
{
	local %ENV = (%ENV, %env, RMQ_TOPIC => 'rmq_restart', RMQ_CONFIRMED_FILE => $confirmed,
		RMQ_STOP_FILE => $stop, RMQ_POLL_TOPIC => 'rmq_poll', RMQ_POLL_GROUP => 'rmq_poll_g');
	$load = IPC::Run::start([ 'node', "$node_dir/robust_check.js", 'load' ],
		'<', \undef, '>', \$load_out, '2>', \$load_err);
}
END { $load->kill_kill if $load && $load->pumpable; }
sub wait_confirmed
{
	my ($n) = @_;
	for (1 .. 3000)
	{
		return 1 if confirmed_count() >= $n;
		usleep(100_000);
		$load->pump_nb if $load->pumpable;
	}
	return 0;
}
ok(wait_confirmed(20), 'the producer has 20 sends confirmed before the restart') or diag("$load_out$load_err");
$node->restart;
my $before = confirmed_count();
ok(wait_confirmed($before + 20), 'after the restart the producer has 20 more sends confirmed')
  or diag("$load_out$load_err");
PostgreSQL::Test::Utils::append_to_file($stop, "stop\n");
my $load_rc = eval { $load->finish; $load->result(0) };
my %result;
for my $line (split /\n/, $load_out)
{
	$result{$1} = [ 1, '' ] if $line =~ /^ok (\S+)$/;
	$result{$1} = [ 0, $2 ] if $line =~ /^not ok (\S+): (.*)$/s;
	diag("load: $1") if $line =~ /^# (.*)$/;
}
for my $name (qw(load_no_hang load_sent_errors_seen load_codes))
{
	my $r = $result{$name};
	ok($r && $r->[0], "load: $name") or diag($r ? $r->[1] : 'not run');
}
is($load_rc, 0, 'the producer and the long-polling consumer end') or diag("$load_out$load_err");
robust('drain', 600, { RMQ_TOPIC => 'rmq_restart', RMQ_GROUP => 'rmq_restart_g', RMQ_CONFIRMED_FILE => $confirmed },
	qw(drain_all_confirmed));

# ---- the gateway throughout ---------------------------------------------------------------------
ok($gw->pumpable, 'mq-rocketmq is still running');
$gw->signal('TERM');
$gw->finish;
is($gw->result(0), 0, 'mq-rocketmq stops on SIGTERM with status 0');
my $gwlog = slurp_file($log);
unlike($gwlog, qr/out of memory|HTTP\/2 error/, 'no internal error in the gateway log');
$node->stop;
done_testing();
