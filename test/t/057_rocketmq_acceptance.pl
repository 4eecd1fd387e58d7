# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# An acceptance test of mq-rocketmq (issue 39) from outside: the official
# RocketMQ 5 Node.js client (rocketmq-client-nodejs, pinned by
# test/rocketmq_clients/node/package-lock.json) as a RocketMQ user uses it,
# expecting what a RocketMQ 5 proxy does.
#  - the client's own examples (test/rocketmq_clients/node/examples/,
#    verbatim from apache/rocketmq-clients, given only the endpoint,
#    credentials, namespace and group through the environment variables they
#    read): the normal, FIFO, delay and transactional producers (with a
#    checker), a SimpleConsumer, a FIFO PushConsumer, a PushConsumer and the
#    PushConsumer quick start (unsigned: --insecure-loopback-role);
#  - acceptance.js: every property round-trips (message id, keys, tag,
#    message group, delivery and born timestamps, born host, offsets, user
#    properties, binary, every byte value, empty and 3 MB bodies); tag and SQL92 subscriptions;
#    redelivery after the invisible time, none during its extension; FIFO
#    order with a message group blocked while its head is in flight; delay;
#    transactions committed, rolled back and resolved by check-back; two
#    groups on one topic; two consumers sharing a group (SimpleConsumers,
#    and PushConsumers); 1,000 messages
#    exactly once; the errors a user meets.
# Topics and groups are declared in SQL first, as docs/rocketmq.md says (the
# gateway creates neither, as a RocketMQ 5 proxy does not create topics).
# No timing assertion: a message may come late, never early, twice or out of
# order; each client has a generous timeout so that a hang fails.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use Time::HiRes ();

plan skip_all => qe_node_missing() if qe_node_missing();

my $node = qe_node('rmq_accept');
my $gateway = $node->config_data('--bindir') . '/mq-rocketmq';
ok(-x $gateway, "mq-rocketmq is installed next to pg_config's bindir");
BAIL_OUT("mq-rocketmq is not installed") unless -x $gateway;

# Topics are streams, groups their consumer groups, declared as
# docs/rocketmq.md says; the gateway logs in as a NOINHERIT role without
# privileges and acts as rmq_app, which may publish to and consume from each
my @topics = qw(acc_props acc_filter acc_retry acc_fifo acc_delay acc_tx acc_two acc_shared acc_bulk
  TopicTestForNormal TopicTestForFifo time-topic TopicTestForTransaction yourTopic1);
my %groups = (
	acc_props => [ 'acc_props_g' ],
	acc_filter => [ qw(acc_filter_tag acc_filter_all acc_filter_sql acc_filter_sqltag) ],
	acc_retry => [ 'acc_retry_g' ],
	acc_fifo => [ qw(acc_fifo_g:ordered acc_fifo_push:ordered) ],
	acc_delay => [ 'acc_delay_g' ],
	acc_tx => [ 'acc_tx_g' ],
	acc_two => [ qw(acc_two_g1 acc_two_g2) ],
	acc_shared => [ qw(acc_shared_g acc_push_g) ],
	acc_bulk => [ 'acc_bulk_g' ],
	TopicTestForNormal => [ 'nodejs-unittest-group' ],
	TopicTestForFifo => [ 'nodejs-unittest-group:ordered' ],
	'time-topic' => [ 'GID-time' ],
	TopicTestForTransaction => [ 'nodejs-unittest-group' ],
	yourTopic1 => [ 'yourConsumerGroup' ],);
my $setup = q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE rmq_gw LOGIN NOINHERIT;
	CREATE ROLE rmq_app NOLOGIN;
	GRANT rmq_app TO rmq_gw;
	CREATE FUNCTION rmq_unknown(bigint, jsonb, bytea) RETURNS text
		LANGUAGE sql AS $$ SELECT 'unknown' $$;
	SELECT mq.producer_group_declare('rocketmq', 'rmq_unknown(bigint,jsonb,bytea)');
};
for my $t (@topics)
{
	$setup .= "SELECT mq.queue_declare('$t', type => 'stream', arguments => '{\"partitions\": 4}');\n";
	$setup .= "SELECT mq.grant('publish', 'queue', '$t', 'rmq_app');\n";
	$setup .= "SELECT mq.grant('consume', 'queue', '$t', 'rmq_app');\n";
	for my $g (@{ $groups{$t} })
	{
		my ($name, $ordered) = split /:/, $g;
		$setup .= "SELECT mq.group_declare('$t', '$name', retry_delays => '{1 second}'"
		  . ($ordered ? ', ordered => true' : '') . ");\n";
	}
}
$node->safe_psql('postgres', $setup);

my $creds = $node->basedir . '/rocketmq.credentials';
PostgreSQL::Test::Utils::append_to_file($creds, "AK_APP app-secret rmq_app\n");
chmod 0600, $creds;
# unsigned requests (the quick start example has no credentials) act as rmq_app
my ($gw, $port, $log) = qe_rocketmq($node, flags => [ '--credentials', $creds,
		'--insecure-loopback-role', 'rmq_app', '--transaction-check', '2' ]);
END { $gw->kill_kill if $gw && $gw->pumpable; }
ok(qe_listening($port, tries => 300), "mq-rocketmq listens on 127.0.0.1:$port");

my ($node_dir, $npm_err, $npm_ran) = qe_npm_ci("$FindBin::RealBin/../rocketmq_clients/node",
	"$PostgreSQL::Test::Utils::tmp_check/rocketmq_accept");
ok(defined $node_dir, 'the client and TypeScript are installed (npm ci)') or BAIL_OUT($npm_err // '');

my %signed = (
	ROCKETMQ_NODEJS_CLIENT_ENDPOINTS => "127.0.0.1:$port",
	ROCKETMQ_NODEJS_CLIENT_KEY => 'AK_APP',
	ROCKETMQ_NODEJS_CLIENT_SECRET => 'app-secret',);

# Run an example until its output matches $until or $secs pass (the
# consumers run for ever, some producers never shut down), then, after
# &$settled returned true (tried every 0.2 s, at most 60 s) when given, end
# it: (whether it matched, stdout, stderr)
sub example
{
	my ($file, $env, $until, $secs, $settled) = @_;
	my ($out, $err) = ('', '');
	local %ENV = (%ENV, %$env);
	my $t = IPC::Run::timer($secs);
	my $h = IPC::Run::start([ 'node', "$node_dir/run_example.js", "$node_dir/examples/$file" ],
		'<', \undef, '>', \$out, '2>', \$err, $t);
	$h->pump while $h->pumpable && !$t->is_expired && $out !~ $until;
	my $matched = $out =~ $until;
	if ($matched && $settled)
	{
		for (1 .. 300)
		{
			last if $settled->();
			$h->pump_nb if $h->pumpable;
			Time::HiRes::usleep(200_000);
		}
	}
	if ($h->pumpable) { $h->kill_kill; }
	else { $h->finish; }
	return ($matched, $out, $err);
}

sub count_in
{
	my ($topic, $where) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM generate_series(0, 3) p, mq.read('$topic', p, max_messages => 1000) r
		 WHERE $where});
}

my ($m, $out, $err);
# -- the client's examples, unchanged -----------------------------------------
($m, $out, $err) = example('ProducerNormalMessageExample.ts', \%signed, qr/messageId: '[0-9A-F]{34}'/, 120);
ok($m, 'example ProducerNormalMessageExample sends (its receipt printed)') or diag("$out$err");
is(count_in('TopicTestForNormal', q{tag = 'nodejs-normal' AND convert_from(body, 'UTF8') LIKE '%rocketmq-client-nodejs world%'}),
	'1', 'its message is in the stream TopicTestForNormal, with its tag');

($m, $out, $err) = example('ProducerFifoMessageExample.ts', \%signed, qr/All FIFO messages sent successfully/, 120);
ok($m, 'example ProducerFifoMessageExample sends its 10 FIFO messages') or diag("$out$err");
is(count_in('TopicTestForFifo', q{message_group IN ('Order-001', 'Order-002', 'Account-Alice')}),
	'10', 'they are in TopicTestForFifo with their message groups');

($m, $out, $err) = example('ProducerDelayMessageExample.ts', \%signed, qr/Message sent successfully.*Offset:/s, 120);
ok($m, 'example ProducerDelayMessageExample sends') or diag("$out$err");

($m, $out, $err) = example('ProducerTransactionMessageExample.ts', \%signed, qr/messageId: '[0-9A-F]{34}'/, 120);
ok($m, 'example ProducerTransactionMessageExample sends and commits') or diag("$out$err");
# the commit reaches the stream (EndTransaction answered before the receipt printed)
is(count_in('TopicTestForTransaction', 'true'), '1', 'the committed transactional message is in TopicTestForTransaction');
is($node->safe_psql('postgres', q{SELECT string_agg(state || ' ' || decided_by, ',') FROM mq.half_messages}),
	'committed producer', 'its half message was committed by the producer');

# it prints the message, then acks it: it is ended once the group's
# committed offset has passed it
my $acked = sub {
	$node->safe_psql('postgres', q{SELECT coalesce(sum(lag), -1) = 0 FROM mq.consumer_groups
		WHERE queue = 'TopicTestForNormal' AND group_name = 'nodejs-unittest-group'}) eq 't';
};
($m, $out, $err) = example('SimpleConsumer.ts', \%signed, qr/got \d+ messages.*body=/s, 120, $acked);
ok($m && $out =~ /got 1 messages/ && $out =~ /body='\{"hello":"rocketmq-client-nodejs world/,
	'example SimpleConsumer receives the normal example\'s message') or diag("$out$err");
($m, $out, $err) = example('SimpleConsumer.ts', \%signed, qr/got \d+ messages/, 120);
like($out, qr/got 0 messages/, 'and acked it: run again, it gets nothing') or diag("$out$err");

# the FIFO PushConsumer: each message group in order (sequence 1, 2, ...)
my $fifo_done = qr/(?:processed successfully.*){10}/s;
($m, $out, $err) = example('PushConsumerFifoMessageExample.ts',
	{ %signed, ROCKETMQ_NODEJS_CLIENT_GROUP => 'nodejs-unittest-group' }, $fifo_done, 180);
ok($m, 'example PushConsumerFifoMessageExample consumes the 10 FIFO messages') or diag("$out$err");
my %seq;
while ($out =~ /Sequence number: (\d+) \(group: ([^)]+)\)/g) { push @{ $seq{$2} }, $1; }
is(join(' ', map { "$_:" . join(',', @{ $seq{$_} }) } sort keys %seq),
	'Account-Alice:1,2,3 Order-001:1,2,3,4 Order-002:1,2,3', 'each message group in its order, each message once');

# the quick start PushConsumer, unsigned, consumes the delay example's message
($m, $out, $err) = example('PushConsumerQuickStart.ts', { ROCKETMQ_ENDPOINT => "127.0.0.1:$port" },
	qr/Received messageId :/, 180);
ok($m && $out =~ /Received message: \{"hello":"rocketmq-client-nodejs world/,
	'example PushConsumerQuickStart consumes the delay example\'s message') or diag("$out$err");

# PushConsumer.ts names its own topic and group; messages published in SQL
$node->safe_psql('postgres', q{
	SELECT mq.send('yourTopic1', convert_to('from sql ' || i, 'UTF8'), tag => 'sqltag')
	  FROM generate_series(1, 3) i});
($m, $out, $err) = example('PushConsumer.ts',
	{ ROCKETMQ_ENDPOINT => "127.0.0.1:$port", ROCKETMQ_ACCESS_KEY => 'AK_APP',
	  ROCKETMQ_SECRET_KEY => 'app-secret', ROCKETMQ_NAMESPACE => 'postgres' },
	qr/(?:Received message:.*){3}/s, 180);
ok($m, 'example PushConsumer consumes what SQL sent to yourTopic1 (namespace postgres)') or diag("$out$err");
my @bodies = sort($out =~ /body: '(from sql \d)'/g);
is(join(',', @bodies), 'from sql 1,from sql 2,from sql 3', 'each once, with its body');

# -- acceptance.js --------------------------------------------------------------
my @checks = qw(send_receipt_plain send_receipt_tagged send_receipt_fifo send_receipt_delay send_receipt_empty
  send_receipt_big send_receipt_bytes round_trip_all_received round_trip_plain round_trip_tagged round_trip_fifo
  round_trip_delay round_trip_empty round_trip_big round_trip_bytes body_too_large_refused
  filter_acc_filter_tag filter_acc_filter_all filter_acc_filter_sql filter_acc_filter_sqltag
  redelivery_first extend_invisible_duration redelivered_after_invisible_time stale_receipt_refused
  extension_keeps_invisible ack_after_extension redelivered_after_extension acked_not_redelivered
  fifo_all_consumed fifo_group_blocked_and_ordered fifo_head_redelivered fifo_push_order
  delay_delivered delay_past_timestamp delay_not_before_its_time delay_timestamp_round_trip long_poll_woken_by_send
  transaction_sends transaction_only_committed_delivered transaction_round_trip transaction_check_back
  transaction_check_back_commit_id
  two_groups_acc_two_g1 two_groups_acc_two_g2 shared_group_all shared_group_once push_shared_all push_shared_once
  thousand_sent thousand_exactly_once thousand_first_attempts
  error_topic_not_found error_group_not_found error_subscribe_missing_topic error_bad_selector
  error_ack_bad_receipt error_change_invisible_bad_receipt error_tx_rollback_after_commit);
my $rc;
($rc, $out, $err) = qe_run([ 'node', "$node_dir/acceptance.js" ], 1800,
	{ RMQ_ENDPOINT => "127.0.0.1:$port", RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret' });
my %result;
for my $line (split /\n/, $out)
{
	if ($line =~ /^ok (\S+)$/) { push @{ $result{$1} }, [ 1, '' ]; }
	elsif ($line =~ /^not ok (\S+): (.*)$/) { push @{ $result{$1} }, [ 0, $2 ]; }
}
for my $name (@checks)
{
	my $r = $result{$name};
	ok($r && @$r == 1 && $r->[0][0], "acceptance: $name")
	  or diag($r ? join('; ', map { $_->[1] } @$r) : 'not run');
}
# A RocketMQ proxy's SendResultEntry.offset is the message's queue offset,
# the offset its MessageView shows (mq.message_position); a delay message's
# is 0, as it has none until it is due
push @checks, map { "send_offset_$_" } qw(plain tagged fifo delay empty big bytes);
for my $name (grep { /^send_offset_/ } @checks)
{
	my $r = $result{$name};
	ok($r && @$r == 1 && $r->[0][0], "acceptance: $name")
	  or diag($r ? join('; ', map { $_->[1] } @$r) : 'not run');
}
# once-only checks named per message, and any failure not listed above
my @other = grep { my $n = $_; !grep { $_ eq $n } @checks } sort keys %result;
my @failed = grep { grep { !$_->[0] } @{ $result{$_} } } @other;
is(join(' ', @failed), '', 'no other acceptance check failed')
  or diag(join("\n", map { "$_: " . join('; ', map { $_->[1] } @{ $result{$_} }) } @failed));
like($out, qr/^checks: DONE$/m, 'acceptance.js ran to its end');
is($rc, 0, 'acceptance.js exits 0: no check failed')
  or diag($err);

ok($gw->pumpable, 'mq-rocketmq is still running');
$gw->signal('TERM');
$gw->finish;
is($gw->result(0), 0, 'mq-rocketmq stops on SIGTERM with status 0');
unlike(slurp_file($log), qr/Segmentation|Aborted|out of memory|HTTP\/2 error/, 'no crash or internal error in its log');
$node->stop;
done_testing();
