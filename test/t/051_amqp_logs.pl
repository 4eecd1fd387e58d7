# mq-amqp's logs (issue 37, "Logs"; docs/amqp.md, "The log"), driven by
# Debian's pika (test/amqp/logs_client.py):
#  1. normal client churn -- consumers cancelled with basic.cancel (waiting
#     in their long poll, holding unacked deliveries, woken by a second
#     consumer of their queue), a channel closed under its consumers, a
#     queue deleted under its consumer, a refused login, clean closes,
#     clients killed or exiting without connection.close, a client whose
#     heartbeats stop, the gateway stopped under a consumer -- leaves no
#     ERROR or FATAL line in PostgreSQL's log (the gateway wakes a long
#     poll with mq._consume_wake instead of cancelling it, and ends a
#     session only once it is idle);
#  2. the gateway's log has, by default, each connection accepted (peer
#     and local address), logged in (user, vhost, role, database), refused
#     (why), and closed with why: the client's connection.close, the socket
#     dropped, missed heartbeats, the server's close with its code, the
#     gateway shutting down;
#  3. --quiet logs none of that but what went wrong; --log-level checks its
#     value;
#  4. mq._consume_wake: only a role with the privileges of the session's
#     role may wake it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(usleep);

my $python = '/usr/bin/python3';
plan skip_all => 'python3-pika is not installed (Debian package python3-pika)'
  unless system("$python -c 'import pika' >/dev/null 2>&1") == 0;

my $node = qe_node('amqplogs', conf => "max_connections = 100\n");
my $gateway = $node->config_data('--bindir') . '/mq-amqp';
my $client = "$FindBin::RealBin/../amqp/logs_client.py";

$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE amqp_logs LOGIN PASSWORD 'logs-secret';
	CREATE ROLE amqp_other LOGIN;
	GRANT CREATE ON SCHEMA mq TO amqp_logs;
});
qe_hba_first($node, "local all amqp_logs scram-sha-256\n");

# PostgreSQL's log from here on is what the gateway's clients leave
my $pg_log_start = -s $node->logfile;

sub start_gateway
{
	my ($name, @flags) = @_;
	my ($h, $port, $log) =
	  qe_gateway($node, log => $node->basedir . "/mq-amqp-$name.log", flags => \@flags);

	ok(qe_listening($port, tries => 300), "mq-amqp ($name) listens on 127.0.0.1:$port");
	return ($h, $port, $log);
}

# wait (without a bound on how long it takes, but for a minute on a loaded
# machine) until the gateway's log matches re
sub wait_for_log
{
	my ($log, $re) = @_;
	for (1 .. 1200)
	{
		return 1 if -f $log && slurp_file($log) =~ $re;
		usleep(100_000);
	}
	return 0;
}

# a client that holds a consumer in its long poll; returns the harness and
# the client's port
sub hold
{
	my ($port, @more) = @_;
	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start([ $python, $client, 'hold', $port, 'amqp_logs', 'logs-secret', @more ],
		'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	$h->pump until $out =~ /consuming (\d+)/ || !$h->pumpable;
	like($out, qr/consuming \d+/, 'a client holds a consumer') or diag($err);
	return ($h, $out =~ /consuming (\d+)/ ? $1 : 0);
}

my ($gw, $port, $log) = start_gateway('default');

# 1. churn
my ($out, $err) = ('', '');
IPC::Run::run([ $python, $client, 'churn', $port, 'amqp_logs', 'logs-secret' ],
	'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
is($out, "ok churn\n", 'the churn ran: cancels, channel close, queue delete, refused login, close')
  or diag($err);

# a client killed with its consumer in a long poll
my ($k, $kport) = hold($port);
$k->signal('KILL');
eval { $k->finish };
# one that exits without connection.close
my ($e, $eport) = hold($port);
eval { $e->finish };
# one whose heartbeats stop (1 s: the gateway drops it after two intervals;
# an open connection without channels)
my ($hb, $hbport) = hold($port, 1);
ok(wait_for_log($log, qr/127\.0\.0\.1:$hbport: closing AMQP connection .*: missed heartbeats from client, timeout: 1s/),
	'a client without heartbeats: "missed heartbeats from client" in the log');
$hb->signal('KILL');
eval { $hb->finish };

# 2. what the log says of each
ok(wait_for_log($log, qr/127\.0\.0\.1:$eport: closing AMQP connection/),
	'the exited client is closed');
my $l = slurp_file($log);
like($l, qr/127\.0\.0\.1:(\d+): accepting AMQP connection \(127\.0\.0\.1:\1 -> 127\.0\.0\.1:$port\)/,
	'a connection accepted: peer and local address');
like($l,
	qr/127\.0\.0\.1:\d+: user 'amqp_logs' authenticated and granted access to vhost '\/' \(PostgreSQL role "amqp_logs", database "postgres"\)/,
	'a login: user, vhost, role and database');
like($l, qr/127\.0\.0\.1:\d+: login of "amqp_logs" refused: .*password authentication failed/,
	'a refused login and why');
unlike($l, qr/wrong/, 'without the password it tried');
like($l,
	qr/closing AMQP connection \(127\.0\.0\.1:\d+ -> 127\.0\.0\.1:$port, user 'amqp_logs', before connection\.open-ok\): closed by the server: 403 ACCESS_REFUSED - Login was refused/,
	'its close: by the server, 403');
like($l,
	qr/closing AMQP connection \(127\.0\.0\.1:\d+ -> 127\.0\.0\.1:$port, vhost '\/', user 'amqp_logs'\): client closed the connection \(connection\.close 200 Normal shutdown\)/,
	'a clean close: the client\'s connection.close');
like($l, qr/127\.0\.0\.1:$kport: closing AMQP connection \(.*vhost '\/', user 'amqp_logs'\): client unexpectedly closed TCP connection/,
	'a killed client: the socket closed without connection.close');
like($l, qr/127\.0\.0\.1:$eport: closing AMQP connection \(.*\): client unexpectedly closed TCP connection/,
	'a client that exited without connection.close');

# the gateway stopped under a consumer in its long poll
my ($s, $sport) = hold($port);
$gw->signal('TERM');
$gw->finish;
eval { $s->finish };
$l = slurp_file($log);
like($l, qr/127\.0\.0\.1:$sport: closing AMQP connection \(.*\): the gateway is shutting down/,
	'SIGTERM: each connection closed because the gateway is shutting down');
like($l, qr/127\.0\.0\.1:\d+: closing AMQP connection \(127\.0\.0\.1:\d+ -> 127\.0\.0\.1:$port, before login\): client closed TCP connection before sending anything/,
	'a port check (connect, close): closed before sending anything');
unlike($l, qr/Segmentation|Aborted|AddressSanitizer|out of memory/, 'no crash in its log');
# each line has its level word, as RabbitMQ's [info] and [warning]
like($l, qr/UTC mq-amqp: \[info\] 127\.0\.0\.1:\d+: accepting AMQP connection/, 'an accept is [info]');
like($l, qr/UTC mq-amqp: \[info\] 127\.0\.0\.1:\d+: user 'amqp_logs' authenticated/, 'a login is [info]');
like($l, qr/UTC mq-amqp: \[warning\] 127\.0\.0\.1:\d+: login of "amqp_logs" refused/, 'a refused login is [warning]');
like($l, qr/UTC mq-amqp: \[info\] 127\.0\.0\.1:\d+: closing AMQP connection .*connection\.close 200/,
	'a clean close is [info]');
like($l, qr/UTC mq-amqp: \[warning\] 127\.0\.0\.1:$kport: closing AMQP connection .*client unexpectedly closed TCP connection/,
	'a dropped socket is [warning]');
like($l, qr/UTC mq-amqp: \[info\] 127\.0\.0\.1:$sport: closing AMQP connection .*the gateway is shutting down/,
	'a close at shutdown is [info]');
like($l, qr/UTC mq-amqp: \[info\] listening on /, 'the start is [info]');
my @nolevel = grep { !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC mq-amqp: \[(?:info|warning|debug)\] / } split /\n/, $l;
is(scalar(@nolevel), 0, 'every line of the log has a level word') or diag(join("\n", @nolevel));

# every session the gateway had has ended; PostgreSQL logged no error
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'mq-amqp'}),
	'the gateway\'s sessions have ended');
my $pg_log = slurp_file($node->logfile);
$pg_log = substr($pg_log, $pg_log_start);
unlike($pg_log, qr/canceling statement due to user request/,
	'no "canceling statement due to user request" in PostgreSQL\'s log (basic.cancel)');
unlike($pg_log, qr/connection to client lost/,
	'no "connection to client lost" in PostgreSQL\'s log (consumers gone)');
my @errors = grep { /\b(ERROR|FATAL|PANIC):/ && !/password authentication failed/ }
  split /\n/, $pg_log;
is(scalar(@errors), 0, 'no other ERROR or FATAL line either (but the refused login\'s)')
  or diag(join("\n", @errors));

# 3. --quiet: what went wrong only
my ($q, $qport, $qlog) = start_gateway('quiet', '--quiet');
my ($qh) = hold($qport);
eval { $qh->finish };
ok(wait_for_log($qlog, qr/user 'amqp_logs'\): client unexpectedly closed TCP connection/),
	'--quiet: a dropped socket is still logged (a warning)');
my $ql = slurp_file($qlog);
unlike($ql, qr/accepting AMQP connection|authenticated and granted access/,
	'--quiet: accepts and logins are not');
$q->signal('TERM');
$q->finish;
IPC::Run::run([ $gateway, '--log-level', 'loud' ], '<', \undef, '>', \$out, '2>', \$err);
is($? >> 8, 2, 'an unknown --log-level exits 2');
like($err, qr/invalid value "loud" for log_level \(warning, info or debug\)/, 'and says why');

# 4. who may wake a session's mq.consume
my $bg = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
my ($ret, $wout, $werr) = $node->psql('postgres', "SELECT mq._consume_wake($pid)",
	extra_params => [ '-U', 'amqp_other' ]);
like($werr, qr/permission denied to wake the session of process $pid/,
	'another role may not wake a session');
is($node->safe_psql('postgres', "SELECT mq._consume_wake($pid)"), 't',
	'a superuser may');
# a wake that came while the session did not wait ends its next wait at once,
# with nothing and no error
$node->safe_psql('postgres', q{SELECT mq.queue_declare('logs_wake')});
is($bg->query_safe(q{SELECT count(*) FROM mq.consume('logs_wake', 1, wait => '10 minutes')}), '0',
	'the woken mq.consume returns, empty');
$bg->quit;
is($node->safe_psql('postgres', 'SELECT mq._consume_wake(0)'), 'f', 'no such backend: false');

done_testing();
