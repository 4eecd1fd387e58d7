# A second pgmq client, @waiting/pgmq-js 6.9.0 from npm (TypeScript on knex
# and pg; pinned by test/pgmq_clients/waiting/package-lock.json, installed
# with npm ci into a scratch copy, as test 055 installs pgmq-js), used
# unchanged against queue_ext_pgmq (docs/pgmq.md):
# test/pgmq_clients/waiting/waiting_pgmq_js.mjs calls every method of its
# API -- the instance (getCurrentTime, getTimestamp, setTimeZone,
# tableExists, startTransaction, sendMsg, sendRouteMsg, syncQueueMeta,
# destroy), queue (create, createUnlogged, hasQueue, getOne, list, drop,
# purge, detachArchive, getMetrics, getAllMetrics), msg (send, sendBatch,
# read, readBatch, readWithPoll, pop, delete, deleteBatch, archive,
# archiveBatch, setVt), queueMeta (count, getById, getByName, list, create,
# hasQueueMeta, update, delete, truncate), router (create, createMatch,
# count, getOne, list, getAll, delete, truncate), routeMsg.send, partition
# (createPartitioned, showPartitions, runMaintenance) -- and prints one line
# per call; each line must be what pgmq 1.12 gives (the same script against
# pgmq 1.12.0's SQL prints exactly these lines).  The client keeps its own
# tables pgmq.tb_queue_meta and pgmq.tb_route (client_tables.sql) and calls
# pg_partman's functions in schema pgmq, so both are made first.  Its setVt
# sends three untyped parameters: 42725, as against pgmq.
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

my $src = "$FindBin::RealBin/../pgmq_clients/waiting";
my ($node_dir, $npm_err, $npm_ran) =
  qe_npm_ci($src, "$PostgreSQL::Test::Utils::tmp_check/pgmq_client2");
if ($npm_ran)
{
	ok(defined $node_dir, 'npm ci installs @waiting/pgmq-js into a scratch copy of test/pgmq_clients/waiting')
	  or BAIL_OUT($npm_err);
}
my ($vrc, $version) =
  qe_run([ 'node', '-p', "require('$node_dir/node_modules/\@waiting/pgmq-js/package.json').version" ], 60);
chomp $version;
is($version, '6.9.0', '@waiting/pgmq-js is 6.9.0');

my $node = qe_node('pgmq_client2');
$node->safe_psql('postgres', 'CREATE DATABASE pgmq_client2');
$node->safe_psql('pgmq_client2', 'CREATE EXTENSION queue_ext_pgmq CASCADE');
$node->safe_psql('pgmq_client2', 'CREATE EXTENSION pg_partman SCHEMA pgmq');
$node->safe_psql('pgmq_client2', slurp_file("$src/client_tables.sql"));

# what pgmq 1.12 gives, call by call
my @expected = (
	'getCurrentTime true',
	'getTimestamp true',
	'setTimeZone UTC',
	'tableExists true false',
	'queue.create true',
	'queue.create again error - Queue \'w_jobs\' already exists',
	'queue.createUnlogged done',
	'queue.hasQueue true false',
	'queue.getOne w_fast false true true',
	'queue.list w_fast:false:true,w_jobs:false:false',
	'queueMeta.count 2',
	'queueMeta.getByName w_jobs jobs.main true',
	'queueMeta.getById w_jobs',
	'queueMeta.list w_jobs,w_fast',
	'queueMeta.update {"owner":"ci"}',
	'queueMeta.hasQueueMeta true false',
	'msg.send 1',
	'sendMsg 2',
	'msg.send delayed 3',
	'msg.send at 1',
	'msg.send to two queues 4,2',
	'msg.sendBatch 5,6,7',
	'msg.sendBatch headers 8',
	'msg.sendBatch at 3',
	'msg.sendBatch to two queues 9,4',
	'msg.read 1 1 {"n":1} true',
	'msg.readBatch 2:1:{"n":2}:{"k":"v"},4:1:{"n":4}:null',
	'msg.readBatch conditional 6:{"n":6}',
	'msg.readBatch fast {"n":4},{"n":9}',
	'msg.read none true',
	'msg.readWithPoll 5:{"n":5}',
	'msg.readWithPoll empty 0',
	'msg.pop 7 {"n":7}',
	'msg.delete 1 0',
	'msg.deleteBatch 2',
	'msg.archive 4 0',
	'msg.archiveBatch 3',
	'msg.setVt error 42725 function pgmq.set_vt(unknown, unknown, unknown) is not unique',
	'startTransaction rollback 10 0',
	'startTransaction commit 8 {"n":8}',
	'queue.getMetrics w_jobs 4 11 true',
	'queue.getAllMetrics w_fast:4:4,w_jobs:4:11',
	'router.create true true',
	'router.count 2',
	'router.getOne 2 r_jobs',
	'router.list r_both,r_jobs',
	'router.getAll r_both',
	'sendRouteMsg w_fast:5,w_jobs:12',
	'routeMsg.send w_fast,w_jobs',
	'router.delete 1',
	'router.truncate 0',
	'partition.createPartitioned true',
	'partition.showPartitions true',
	'partition.runMaintenance done',
	'partition send 1',
	'queue.purge 6',
	'queue.detachArchive done',
	'queue.drop true true true',
	'queue.drop missing false',
	'queueMeta.count after drop 0',
	'queueMeta.create+delete 0',
	'queueMeta.truncate 0',
	'syncQueueMeta w_sync',
	'queue.drop last true',
	'queue.list after drop 0',
	'waiting_pgmq_js: OK');

my $user = `id -un`;
chomp $user;
my ($rc, $out, $err) =
  qe_run([ 'node', "$node_dir/waiting_pgmq_js.mjs", $node->host, $node->port, 'pgmq_client2', $user ], 180);
is($rc, 0, 'waiting_pgmq_js.mjs exits 0') or diag("$out$err");
my @got = split /\n/, $out;
for my $i (0 .. $#expected)
{
	my ($call) = $expected[$i] =~ /^(\S+)/;
	is($got[$i], $expected[$i], "\@waiting/pgmq-js $call");
}
is(scalar(@got), scalar(@expected), 'waiting_pgmq_js.mjs prints one line per call');

# what the client left: none of its queues in queue_ext
is($node->safe_psql('pgmq_client2', "SELECT count(*) FROM mq.queues WHERE queue LIKE 'pgmq.%'"),
	'0', 'the queues the client dropped are gone from queue_ext');

$node->stop;
done_testing();
