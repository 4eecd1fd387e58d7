# pgmq's JavaScript client, pgmq-js 1.3.1 from npm (pinned by
# test/pgmq_clients/node/package-lock.json, installed with npm ci into a
# scratch copy, as test 037 installs amqplib), used unchanged against
# queue_ext_pgmq (docs/pgmq.md): test/pgmq_clients/node/pgmq_js.js calls
# every method of its API (queue.create, createUnlogged, list, drop, purge,
# detachArchive, getMetrics, getAllMetrics; msg.send, sendBatch, read,
# readBatch, pop, archive, archiveBatch, delete, deleteBatch, setVt) and
# prints one line per call; each line must be what pgmq 1.12 gives.
# setVt sends three untyped parameters, which pgmq's four set_vt forms make
# ambiguous: it fails with 42725 as it does against pgmq.
# Skipped only when node or npm is not installed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

plan skip_all => qe_node_missing() if qe_node_missing();

# pgmq-js into a scratch copy of test/pgmq_clients/node
my ($node_dir, $npm_err, $npm_ran) =
  qe_npm_ci("$FindBin::RealBin/../pgmq_clients/node", "$PostgreSQL::Test::Utils::tmp_check/pgmq_clients");
if ($npm_ran)
{
	ok(defined $node_dir, 'npm ci installs pgmq-js into a scratch copy of test/pgmq_clients/node')
	  or BAIL_OUT($npm_err);
}
my ($vrc, $version) = qe_run([ 'node', '-p', "require('$node_dir/node_modules/pgmq-js/package.json').version" ], 60);
chomp $version;
is($version, '1.3.1', 'pgmq-js is 1.3.1');

my $node = qe_node('pgmq_js');
$node->safe_psql('postgres', 'CREATE DATABASE pgmq_js');
$node->safe_psql('pgmq_js', 'CREATE EXTENSION queue_ext_pgmq CASCADE');

# what pgmq 1.12 gives, call by call
my @expected = (
	'list js_fast:false:true:true,js_jobs:false:false:true',
	'send 1',
	'send delay 0 2',
	'sendBatch 3,4,5',
	'send delayed 6',
	'sendBatch delayed 1,2',
	'read 1 1 {"n":1} true',
	'readBatch 2:1:{"n":2},3:1:{"n":3}',
	'read none 0',
	'read default vt true',
	'delete true false',
	'deleteBatch 2',
	'archive true false',
	'archiveBatch 4',
	'setVt error 42725 function pgmq.set_vt(unknown, unknown, unknown) is not unique',
	'pop 5 0 {"n":5}',
	'pop empty true',
	'metrics js_jobs 1 6 true true',
	'allMetrics js_fast:2:2,js_jobs:1:6',
	'purge 0',
	'detachArchive done',
	'list after drop 0',
	'pgmq_js: OK');

my $user = `id -un`;
chomp $user;
my ($rc, $out, $err) = qe_run([ 'node', "$node_dir/pgmq_js.js", $node->host, $node->port, 'pgmq_js', $user ], 120);
is($rc, 0, 'pgmq_js.js exits 0') or diag("$out$err");
my @got = split /\n/, $out;
for my $i (0 .. $#expected)
{
	my ($call) = $expected[$i] =~ /^(\S+)/;
	is($got[$i], $expected[$i], "pgmq-js $call");
}
is(scalar(@got), scalar(@expected), 'pgmq_js.js prints one line per call');

# what the client left: nothing but pgmq's tables
is($node->safe_psql('pgmq_js', "SELECT count(*) FROM mq.queues WHERE queue LIKE 'pgmq.%'"),
	'0', 'the queues pgmq-js dropped are gone from queue_ext');

$node->stop;
done_testing();
