# The client examples in examples/ (examples/README.md) run against a test
# server, each checking its own outcome, and the database is checked after
# them:
#  - python (psycopg 3, /usr/bin/python3): producer.py; worker.py alone
#    with batches rolled back on purpose, then two workers competing; the
#    RPC server and client (replies matched by correlation_id, the private
#    reply queue deleted after, requests nobody can be answered dropped);
#    stream_consumer.py (a 3-partition stream, a consumer group, committed
#    offsets);
#  - node (npm pg, installed with npm ci into a scratch copy of
#    examples/node when it has no node_modules): producer.js, worker.js;
#    skipped only when node or npm is not installed;
#  - C (libpq): worker.c built with its Makefile in a scratch copy.
# Each worker's work table must hold every message once; and each worker's
# own check must be able to fail (a message recorded twice, fewer messages
# than --count): exit 1 and FAILED.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use File::Copy qw(copy);
use File::Path qw(make_path rmtree);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

my $examples = "$FindBin::RealBin/../../examples";
my $python = '/usr/bin/python3';
my $scratch = "$PostgreSQL::Test::Utils::tmp_check/examples";
rmtree($scratch);
make_path($scratch);

my $node = qe_node('examples');
$node->safe_psql('postgres', 'CREATE EXTENSION queue_ext');

# the examples connect through the libpq environment variables, or a DSN
local $ENV{PGHOST} = $node->host;
local $ENV{PGPORT} = $node->port;
local $ENV{PGDATABASE} = 'postgres';
local $ENV{PGUSER} = scalar getpwuid($<);
my $dsn = $node->connstr('postgres');

# Run an example to its end (at most $timeout seconds, default 60):
# (exit code, stdout); shows its output when the code is not $expect (0)
sub run_example
{
	my ($cmd, $timeout, $expect) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start($cmd, '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout // 60));
	my $rc = eval { $h->finish; $h->result(0) };
	if (!defined $rc)
	{
		$h->kill_kill;
		$rc = -1;
		$err .= "\n(killed after ${\($timeout // 60)}s: $@)";
	}
	diag(join(' ', @$cmd) . " exited $rc:\n$out$err") if $rc != ($expect // 0);
	return ($rc, $out);
}

# The lines of $out that match $re
sub lines { my ($out, $re) = @_; return grep { /$re/ } split /\n/, $out; }

# The msg_ids of the "did" lines of a worker's output
sub did_ids
{
	my ($out) = @_;
	return map { /: did (\d+) \S+-\d+( \(redelivered\))?$/ ? $1 : () } split /\n/, $out;
}

sub psql { return $node->safe_psql('postgres', $_[0]); }

# ---------------------------------------------------------------------------
# Python: producer, a worker with rollbacks, two competing workers
# ---------------------------------------------------------------------------
my ($rc, $out) = run_example([ $python, "$examples/python/producer.py", '--count', '40' ]);
is($rc, 0, 'producer.py exits 0');
my @published = map { /published (\d+) job-/ ? $1 : () } split /\n/, $out;
is(scalar @published, 40, 'producer.py prints 40 published messages');
like($out,
	qr/^producer: published 40 messages to exchange examples \(routing key jobs\) in one transaction: OK$/m,
	'producer.py summary');
is(psql(q{SELECT ready || ' ' || unacked FROM mq.queues WHERE queue = 'jobs'}),
	'40 0', 'the 40 messages are ready in jobs');
is(psql(q{SELECT count(*) FROM mq.bindings WHERE exchange = 'examples' AND queue = 'jobs'}),
	'1', 'producer.py bound jobs to exchange examples');

($rc, $out) = run_example([ $python, "$examples/python/worker.py", '--name', 'py-a',
	'--count', '20', '--batch', '4', '--fail-every', '2' ]);
is($rc, 0, 'worker.py with --count 20 --fail-every 2 exits 0');
my @did_a = did_ids($out);
is(scalar @did_a, 20, 'it did 20 messages');
my @rolled = lines($out, qr/rolled back a batch of \d+ on purpose/);
ok(@rolled >= 2, 'it rolled back batches on purpose (' . scalar(@rolled) . ')');
ok(scalar(lines($out, qr/: did \d+ job-\d+ \(redelivered\)$/)) >= 4,
	'the rolled back messages came again, flagged redelivered');
like($out,
	qr/^worker py-a: did 20 messages \(\d+ redelivered\), \d+ batches rolled back on purpose; example_work holds 20 rows for it, 20 distinct, 0 messages done twice: OK$/m,
	'worker.py summary');

# two competing workers drain the other 20, then stop when idle
my (%kid, %kout);
for my $w ('py-b', 'py-c')
{
	$kout{$w} = '';
	$kid{$w} = IPC::Run::start(
		[ $python, "$examples/python/worker.py", '--name', $w, '--idle-timeout', '2',
			'--batch', '3' ],
		'<', \undef, '>', \$kout{$w}, '2>&1', IPC::Run::timeout(60));
}
my @did_bc;
for my $w ('py-b', 'py-c')
{
	my $ok = eval { $kid{$w}->finish; 1 };
	$kid{$w}->kill_kill unless $ok;
	is($ok && $kid{$w}->result(0), 0, "competing worker $w exits 0")
	  or diag($kout{$w});
	like($kout{$w}, qr/^worker $w: did \d+ messages .*: OK$/m, "$w summary OK");
	push @did_bc, did_ids($kout{$w});
}
is(scalar @did_bc, 20, 'the competing workers did the other 20 between them');
is(join(',', sort(@did_a, @did_bc)), join(',', sort @published),
	'the workers did exactly the published messages, each once');
is(psql(q{SELECT count(*) || ' ' || count(DISTINCT msg_id) || ' '
		 || (count(*) FILTER (WHERE redelivered) > 0) FROM example_work}),
	'40 40 true', 'example_work: 40 rows, 40 messages, some done after a redelivery');
is(psql(q{SELECT count(*) FROM example_work WHERE headers->>'producer' = 'python'
		   AND body = 'job-' || (headers->>'seq')}),
	'40', 'each row has the body and headers the producer published');
is(psql(q{SELECT ready || ' ' || unacked FROM mq.queues WHERE queue = 'jobs'}),
	'0 0', 'jobs is empty: everything acked');

# ---------------------------------------------------------------------------
# Python: RPC (reply_to, correlation_id)
# ---------------------------------------------------------------------------
psql(q{SELECT mq.queue_declare('rpc_requests')});
# two requests the server cannot answer: no reply_to; a reply queue that is gone
psql(q{SELECT mq.send('rpc_requests', '{"fib": 3}'::jsonb, correlation_id => 'lost-1')});
psql(q{SELECT mq.send('rpc_requests', '{"fib": 4}'::jsonb, correlation_id => 'lost-2',
					  reply_to => 'amq.gen-gone')});
my $server_out = '';
my $server = IPC::Run::start(
	[ $python, "$examples/python/rpc_server.py", '--count', '7', '--idle-timeout', '20' ],
	'<', \undef, '>', \$server_out, '2>&1', IPC::Run::timeout(60));
($rc, $out) = run_example([ $python, "$examples/python/rpc_client.py", '--count', '5' ]);
is($rc, 0, 'rpc_client.py exits 0');
my %fib = (10 => 55, 11 => 89, 12 => 144, 13 => 233, 14 => 377);
for my $n (sort keys %fib)
{
	like($out, qr/^rpc_client: fib\($n\) = $fib{$n} \(correlation_id [0-9a-f-]{36}, \d+ ms\)$/m,
		"rpc_client.py got fib($n)");
}
like($out, qr/^rpc_client: 5 calls, 5 matching correct replies: OK$/m, 'rpc_client.py summary');
my ($reply_queue) = $out =~ /^rpc_client: reply queue (amq\.gen-\S+)$/m;
ok(defined $reply_queue, 'rpc_client.py used a server-named reply queue');
my $server_ok = eval { $server->finish; 1 };
$server->kill_kill unless $server_ok;
is($server_ok && $server->result(0), 0, 'rpc_server.py exits 0') or diag($server_out);
like($server_out, qr/^rpc_server: answered 5 requests, dropped 2: OK$/m, 'rpc_server.py summary');
like($server_out, qr/has no reply_to or correlation_id: dropped$/m,
	'rpc_server.py dropped the request without reply_to');
like($server_out, qr/reply queue amq\.gen-gone is gone: request \d+ dropped$/m,
	'rpc_server.py dropped the request whose reply queue is gone');
my @answers = lines($server_out, qr/^rpc_server: fib\(\d+\) = \d+ -> \Q$reply_queue\E \(correlation_id/);
is(scalar @answers, 5, 'rpc_server.py replied 5 times to the client\'s reply queue');
# the client's correlation ids are the server's
my @cc = sort($out =~ /correlation_id ([0-9a-f-]{36}),/g);
my @sc = sort($server_out =~ /-> \S+ \(correlation_id ([0-9a-f-]{36})\)/g);
is(join(',', @sc), join(',', @cc), 'the server answered each call with its correlation_id');
is(psql(q{SELECT ready || ' ' || unacked FROM mq.queues WHERE queue = 'rpc_requests'}),
	'0 0', 'rpc_requests is empty');
is(psql(q{SELECT count(*) FROM mq.queues WHERE queue LIKE 'amq.gen-%'}),
	'0', 'the client deleted its reply queue');

# ---------------------------------------------------------------------------
# Python: a stream with a consumer group
# ---------------------------------------------------------------------------
($rc, $out) = run_example([ $python, "$examples/python/stream_consumer.py", '--publish', '30' ]);
is($rc, 0, 'stream_consumer.py exits 0');
is(scalar(lines($out, qr/^stream_consumer: partition \d offset \d+ \w+ seq \d+$/)),
	30, 'it received 30 messages');
my $committed = 0;
for my $p (0 .. 2)
{
	my ($c, $e) = $out =~ /^stream_consumer:   partition $p: committed_offset (\d+) end_offset (\d+) lag 0$/m;
	ok(defined $c && $c == $e && $c > 0,
		"partition $p: committed offset printed, at the end of the partition (lag 0)");
	$committed += $c // 0;
}
is($committed, 30, 'the committed offsets add up to the 30 messages');
like($out, qr/^stream_consumer: received and acked 30 of 30 messages once each, in order: OK$/m,
	'stream_consumer.py summary');
is(psql(q{SELECT count(*) || ' ' || sum(committed_offset) || ' ' || max(lag)
			FROM mq.consumer_groups WHERE queue = 'events' AND group_name = 'example-group'}),
	'3 30 0', 'mq.consumer_groups: 3 partitions, 30 committed, no lag');

# ---------------------------------------------------------------------------
# Node: producer.js, worker.js
# ---------------------------------------------------------------------------
sub which
{
	my ($prog) = @_;
	for my $d (split /:/, $ENV{PATH} // '')
	{
		return "$d/$prog" if $d ne '' && -x "$d/$prog";
	}
	return undef;
}
my ($node_bin, $npm_bin) = (which('node'), which('npm'));
my $node_ok = 0;
SKIP:
{
	skip 'node or npm is not installed (test/lib/cluster.sh installs nodejs and npm)', 8
	  unless $node_bin && $npm_bin;

	my $dir = "$scratch/node";
	PostgreSQL::Test::RecursiveCopy::copypath("$examples/node", $dir);
	if (!-d "$dir/node_modules")
	{
		# as the unprivileged test user: npm's cache in the scratch dir
		local $ENV{npm_config_cache} = "$scratch/npm-cache";
		local $ENV{npm_config_update_notifier} = 'false';
		local $ENV{npm_config_fund} = 'false';
		local $ENV{npm_config_audit} = 'false';
		# trust the system's certificates too: node has a CA bundle of its own,
		# and the test's clean environment has no NODE_EXTRA_CA_CERTS
		my $system_cas = '/etc/ssl/certs/ca-certificates.crt';
		local $ENV{NODE_EXTRA_CA_CERTS} = $ENV{NODE_EXTRA_CA_CERTS}
		  // (-r $system_cas ? $system_cas : '');
		my ($nrc) = run_example([ $npm_bin, 'ci', '--prefix', $dir, '--no-progress' ], 240);
		is($nrc, 0, 'npm ci installs pg into a scratch copy of examples/node');
	}
	else
	{
		pass('examples/node has node_modules already');
	}

	($rc, $out) = run_example([ $node_bin, "$dir/producer.js", '--queue', 'jobs_node',
		'--count', '30', '--prefix', 'node' ]);
	is($rc, 0, 'producer.js exits 0');
	like($out,
		qr/^producer: published 30 messages to exchange examples \(routing key jobs_node\) in one transaction: OK$/m,
		'producer.js summary');
	(my $uri = "postgresql:///postgres?host=$ENV{PGHOST}&port=$ENV{PGPORT}") =~ s/ /%20/g;
	($rc, $out) = run_example([ $node_bin, "$dir/worker.js", '--dsn', $uri, '--queue', 'jobs_node',
		'--name', 'node-w', '--count', '30', '--batch', '4', '--fail-every', '3' ]);
	is($rc, 0, 'worker.js (connected by a URI) exits 0');
	is(scalar(did_ids($out)), 30, 'worker.js did 30 messages');
	ok(scalar(lines($out, qr/rolled back a batch of \d+ on purpose/)) >= 2,
		'worker.js rolled back batches on purpose');
	like($out,
		qr/^worker node-w: did 30 messages \(\d+ redelivered\), \d+ batches rolled back on purpose; example_work holds 30 rows for it, 30 distinct, 0 messages done twice: OK$/m,
		'worker.js summary');
	is(psql(q{SELECT count(DISTINCT msg_id) || ' ' || (count(*) FILTER (WHERE redelivered) > 0)
				|| ' ' || bool_and(headers->>'producer' = 'node' AND body = 'node-' || (headers->>'seq'))
				FROM example_work WHERE worker = 'node-w'}),
		'30 true true', 'example_work: 30 messages of the node producer, some redelivered');
	$node_ok = 1;
}

# ---------------------------------------------------------------------------
# C: worker.c built with its Makefile
# ---------------------------------------------------------------------------
my $cdir = "$scratch/c";
PostgreSQL::Test::RecursiveCopy::copypath("$examples/c", $cdir);
unlink "$cdir/worker";
($rc, $out) = run_example([ 'make', '-C', $cdir, 'PG_CONFIG=' . ($ENV{PG_CONFIG} // 'pg_config') ], 120);
is($rc, 0, 'make -C examples/c builds the C worker');
ok(-x "$cdir/worker", 'the worker binary is there');

($rc, $out) = run_example([ $python, "$examples/python/producer.py", '--queue', 'jobs_c',
	'--count', '25', '--prefix', 'c' ]);
is($rc, 0, 'producer.py for the C worker exits 0');
($rc, $out) = run_example([ "$cdir/worker", '--dsn', $dsn, '--queue', 'jobs_c', '--name', 'c-w',
	'--count', '25', '--batch', '4', '--fail-every', '3' ]);
is($rc, 0, 'the C worker (connected by a conninfo string) exits 0');
is(scalar(did_ids($out)), 25, 'the C worker did 25 messages');
ok(scalar(lines($out, qr/rolled back a batch of \d+ on purpose/)) >= 2,
	'the C worker rolled back batches on purpose');
like($out,
	qr/^worker c-w: did 25 messages \(\d+ redelivered\), \d+ batches rolled back on purpose; example_work holds 25 rows for it, 25 distinct, 0 messages done twice: OK$/m,
	'the C worker summary');
is(psql(q{SELECT count(DISTINCT msg_id) || ' ' || (count(*) FILTER (WHERE redelivered) > 0)
			|| ' ' || bool_and(body = 'c-' || (headers->>'seq'))
			FROM example_work WHERE worker = 'c-w'}),
	'25 true true', 'example_work: the 25 messages, some redelivered');
is(psql(q{SELECT string_agg(ready || ' ' || unacked, ',') FROM mq.queues
			WHERE queue IN ('jobs', 'jobs_c', 'jobs_node')}) =~ s/,?0 0//gr,
	'', 'every work queue is empty');

# ---------------------------------------------------------------------------
# The workers' own checks fail when they should
# ---------------------------------------------------------------------------
($rc, $out) = run_example([ $python, "$examples/python/worker.py", '--name', 'py-short',
	'--count', '1', '--idle-timeout', '1' ], 60, 1);
is($rc, 1, 'worker.py exits 1 when fewer than --count messages came');
like($out, qr/^worker py-short: did 0 messages .*: FAILED \(only 0 of 1 before the idle timeout\)$/m,
	'worker.py says why');
($rc, $out) = run_example([ "$cdir/worker", '--name', 'c-short', '--count', '1', '--idle-timeout', '1' ], 60, 1);
is($rc, 1, 'the C worker exits 1 when fewer than --count messages came');
like($out, qr/FAILED \(only 0 of 1 before the idle timeout\)$/m, 'the C worker says why');

# a message recorded twice (as a worker without the transaction would)
psql(q{INSERT INTO example_work (msg_id, worker, body)
		SELECT msg_id, 'intruder', body FROM example_work WHERE worker = 'py-a' LIMIT 1});
for my $w ([ 'worker.py', $python, "$examples/python/worker.py" ],
	[ 'the C worker', "$cdir/worker" ],
	$node_ok ? [ 'worker.js', $node_bin, "$scratch/node/worker.js" ] : ())
{
	my ($label, @cmd) = @$w;
	($rc, $out) = run_example([ @cmd, '--idle-timeout', '1' ], 60, 1);
	is($rc, 1, "$label exits 1 when a message was done twice");
	like($out, qr/, 1 messages done twice: FAILED$/m, "$label reports it");
}

$node->stop;
done_testing();
