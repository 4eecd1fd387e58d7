# broker over real streaming replication:
#  1. a hot standby shows the same queues, browse order and messages as the
#     primary (classic queue, fanout into two queues, acks, a rollback);
#  2. consume / send / ack on the standby raise 25006;
#  3. quorum queues: without synchronous standbys 53000 (the default
#     mq.quorum_unavailable = error, and 0.1's mq.quorum_requires_standby),
#     or with wait a local commit warned once per condition and counted in
#     mq.replication; with one standby, mq.replication shows it, and when it
#     is gone error fails fast while wait makes COMMIT wait for it (even
#     under synchronous_commit = local) and complete once it is back;
#  4. failover: the promoted standby delivers exactly the unacked messages
#     (never-delivered, and delivered-but-unacked ones flagged redelivered),
#     never the acked ones, and
#     accepts publishing and consuming; its log segment verifies clean.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $primary = qe_node('primary', init => { allows_streaming => 1 }, conf => qq{
wal_keep_size = '1GB'
# every mqlog record carries a page image the standby compares its replay
# with (linked message + entry records included)
wal_consistency_checking = 'mqlog'
});
$primary->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('cq');
SELECT mq.exchange_declare('fan', 'fanout');
SELECT mq.queue_declare('f1');
SELECT mq.queue_declare('f2');
SELECT mq.bind('f1', 'fan');
SELECT mq.bind('f2', 'fan');
SELECT mq.queue_declare('qq', 'quorum');
SELECT mq.queue_declare('fo');
});

my $standby = qe_standby($primary, 'standby');

sub catchup
{
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	return;
}

# psql with verbose errors: returns (exit code, stdout, stderr)
sub psql_verbose
{
	my ($node, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err);
	return ($rc, $out, $err);
}

my $queues_sql = 'SELECT queue, ready, total FROM mq.queues ORDER BY 1';
sub bodies_sql
{
	my ($q) = @_;
	return "SELECT string_agg(convert_from(b.body, 'UTF8'), ',' ORDER BY b.ordinality)"
	  . " FROM mq.browse('$q', 1000) WITH ORDINALITY b";
}

############################################################################
# 1. the standby reads what the primary has
############################################################################
$primary->safe_psql('postgres', q{
SELECT mq.send('cq', 'c' || g) FROM generate_series(1, 10) g;
SELECT mq.publish('fan', '', 'f' || g) FROM generate_series(1, 5) g;
BEGIN; SELECT mq.send('cq', 'rolled back'::text); SELECT mq.publish('fan', '', 'rolled back'::text); ROLLBACK;
});
# settle two messages of cq and one of f2 (committed acks)
is($primary->safe_psql('postgres',
	q{SELECT mq.ack('cq', ARRAY(SELECT msg_id FROM mq.consume('cq', 2)))}),
	'2', 'primary: two cq messages consumed and acked');
is($primary->safe_psql('postgres',
	q{SELECT mq.ack('f2', ARRAY(SELECT msg_id FROM mq.consume('f2', 1)))}),
	'1', 'primary: one f2 message consumed and acked');
catchup();

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'standby is in recovery');
my $pq = $primary->safe_psql('postgres', $queues_sql);
is($pq, "cq|8|8\nf1|5|5\nf2|4|4\nfo|0|0\nqq|0|0", 'primary queue counts as expected');
is($standby->safe_psql('postgres', $queues_sql), $pq, 'standby mq.queues matches the primary');

for my $q (qw(cq f1 f2))
{
	my $p = $primary->safe_psql('postgres', bodies_sql($q));
	is($standby->safe_psql('postgres', bodies_sql($q)), $p, "standby browse('$q') matches the primary: $p");
}
is($primary->safe_psql('postgres', bodies_sql('cq')), 'c3,c4,c5,c6,c7,c8,c9,c10',
	'primary browse(cq) in publish order without acked and rolled-back messages');
is($primary->safe_psql('postgres', bodies_sql('f2')), 'f2,f3,f4,f5',
	'primary browse(f2) without the acked message');

my $some_id = $primary->safe_psql('postgres', q{SELECT msg_id FROM mq.browse('cq', 1)});
my $msg_sql = "SELECT msg_id, exchange, routing_key, convert_from(body, 'UTF8'), headers,"
  . " published_at, key, tag, message_group, priority, properties FROM mq.message($some_id)";
my $pm = $primary->safe_psql('postgres', $msg_sql);
like($pm, qr/^$some_id\|\|cq\|c3\|/, 'mq.message(id) on the primary: default exchange, key cq, body c3');
is($standby->safe_psql('postgres', $msg_sql), $pm, 'mq.message(id) on the standby returns the same row');

############################################################################
# 2. no consuming, publishing or settling on the standby
############################################################################
my $ro_re = qr/ERROR:\s+25006:/;
my ($rc, $out, $err) = psql_verbose($standby, q{SELECT * FROM mq.consume('cq')});
isnt($rc, 0, 'consume on the standby fails');
like($err, $ro_re, 'consume on the standby: SQLSTATE 25006');

($rc, $out, $err) = psql_verbose($standby, q{SELECT mq.send('cq', 'from standby'::text)});
isnt($rc, 0, 'send on the standby fails');
like($err, $ro_re, 'send on the standby: SQLSTATE 25006');

($rc, $out, $err) = psql_verbose($standby, qq{SELECT mq.ack('cq', ARRAY[$some_id]::bigint[])});
isnt($rc, 0, 'ack on the standby fails');
like($err, $ro_re, 'ack on the standby: SQLSTATE 25006');

($rc, $out, $err) = psql_verbose($standby, q{SELECT mq.publish('fan', '', 'from standby'::text)});
isnt($rc, 0, 'publish on the standby fails');
like($err, $ro_re, 'publish on the standby: SQLSTATE 25006');

is($standby->safe_psql('postgres', $queues_sql), $pq, 'standby unchanged by the failed calls');

############################################################################
# 3. quorum queues
############################################################################
# no synchronous standby configured: 53000; with wait a local commit,
# warned once (this server has not had the condition before)
($rc, $out, $err) = psql_verbose($primary, q{SELECT mq.send('qq', 'w0'::text)});
isnt($rc, 0, 'quorum publish without synchronous standbys fails (mq.quorum_unavailable = error)');
like($err, qr/ERROR:\s+53000: quorum commit unavailable: no synchronous standby is configured/,
	'... with 53000 and the message');
like($err, qr/DETAIL:\s+The transaction is not confirmed: it is rolled back/,
	'... saying that the transaction is not confirmed');
like($err, qr/HINT:\s+.*ALTER SYSTEM SET mq\.quorum_unavailable = 'wait'; SELECT pg_reload_conf\(\);/,
	'... and how a server without replicas makes it work');
($rc, $out, $err) = psql_verbose($primary,
	q{SET mq.quorum_unavailable = wait; SELECT mq.send('qq', 'w1'::text)});
is($rc, 0, 'with mq.quorum_unavailable = wait it commits locally');
like($err, qr/WARNING:\s+01000: quorum durability requested but no synchronous standbys are configured/,
	'... with the warning');
($rc, $out, $err) = psql_verbose($primary,
	q{SET mq.quorum_unavailable = wait; BEGIN; SELECT mq.send('qq', 'w1b'::text); ROLLBACK;});
is($rc, 0, 'a second wait publish (rolled back) works');
unlike($err, qr/WARNING/, '... and is not warned again (once per condition, server-wide)');
($rc, $out, $err) = psql_verbose($primary,
	q{SET mq.quorum_unavailable = wait; SET mq.quorum_requires_standby = on; SELECT mq.send('qq', 'w2'::text)});
isnt($rc, 0, 'quorum publish with mq.quorum_requires_standby = on fails');
like($err, qr/ERROR:\s+53000: quorum commit unavailable/, '... with 53000');
is($primary->safe_psql('postgres', bodies_sql('qq')), 'w1', 'only the local commit is stored');
is($primary->safe_psql('postgres', q{SELECT format('%s/%s/%s/%s', required_sync_standbys,
	quorum_met, commits_without_quorum, without_quorum_since IS NOT NULL) FROM mq.replication}),
	'0/f/1/t', 'mq.replication: no quorum, one commit without it, since the warning');

# a synchronous standby: its application_name is the node name
is($primary->safe_psql('postgres', 'SELECT application_name FROM pg_stat_replication'),
	'standby', 'standby connects with application_name = its node name');
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'standby'\n");
$primary->reload;
$primary->poll_query_until('postgres',
	"SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'", 'sync')
  or die 'standby did not become synchronous';

($rc, $out, $err) = psql_verbose($primary, q{SELECT mq.send('qq', 'q1'::text)});
is($rc, 0, 'quorum publish with a synchronous standby commits');
unlike($err, qr/WARNING/, '... without a warning');
is($primary->safe_psql('postgres', q{SELECT format('%s/%s/%s/%s/%s/%s', application_name, sync_state,
	required_sync_standbys, connected_sync_standbys, quorum_met, without_quorum_since IS NULL)
	FROM mq.replication}),
	'standby/sync/1/1/t/t', 'mq.replication: the standby, quorum met, the condition cleared');
is($primary->safe_psql('postgres', q{SELECT quorum_met FROM mq.queues WHERE queue = 'qq'}), 't',
	'mq.queues: quorum_met');
is($primary->safe_psql('postgres',
	"SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'"),
	'sync', 'pg_stat_replication: sync_state sync');
catchup();
is($standby->safe_psql('postgres', bodies_sql('qq')), 'w1,q1', 'standby has the quorum messages');

# the synchronous standby goes away
$standby->stop;
$primary->poll_query_until('postgres', 'SELECT count(*) FROM pg_stat_replication', '0')
  or die 'walsender did not go away';

# a classic publish under synchronous_commit = local does not wait ...
($rc, $out, $err) = psql_verbose($primary,
	q{SET synchronous_commit = local; SELECT mq.send('cq', 'c11'::text)});
is($rc, 0, 'classic publish with synchronous_commit = local commits without the standby');

# ... a quorum one fails at once (mq.quorum_unavailable = error) ...
($rc, $out, $err) = psql_verbose($primary, q{SELECT mq.send('qq', 'q-lost'::text)});
isnt($rc, 0, 'quorum publish with the synchronous standby gone fails');
like($err, qr/ERROR:\s+53000: quorum commit unavailable: 0 synchronous standbys connected, 1 needed/,
	'... with 53000 at once');
is($primary->safe_psql('postgres', q{SELECT quorum_met FROM mq.queues WHERE queue = 'qq'}), 'f',
	'mq.queues: quorum not met');
# standbys configured but gone is an HA server's passing state: a quorum
# queue declared now is not warned (only "none configured" is, issue 34)
($rc, $out, $err) = psql_verbose($primary,
	q{SET synchronous_commit = local; SELECT mq.queue_declare('qq2', 'quorum'); SELECT mq.queue_delete('qq2')});
is($rc, 0, 'a quorum queue declared (and deleted) with the synchronous standby gone');
unlike($err, qr/WARNING/, '... without a warning');

# ... or, with wait, waits
my ($qout, $qerr) = ('', '');
my $start = time();
my $h = IPC::Run::start(
	[
		'psql', '-X', '-Atq', '-v', 'ON_ERROR_STOP=1',
		'-d', $primary->connstr('postgres') . ' application_name=quorum_pub',
		'-c', 'SET synchronous_commit = local',
		'-c', 'SET mq.quorum_unavailable = wait',
		'-c', q{SELECT mq.send('qq', 'q2'::text)}
	],
	'<', \undef, '>', \$qout, '2>', \$qerr);
$primary->poll_query_until('postgres',
	"SELECT wait_event FROM pg_stat_activity WHERE application_name = 'quorum_pub'", 'SyncRep')
  or die 'quorum publish is not waiting for the synchronous standby';
is($primary->safe_psql('postgres', bodies_sql('qq')), 'w1,q1',
	'waiting quorum publish is not visible to others');
my $left = 5 - (time() - $start);
sleep($left) if $left > 0;
$h->pump_nb;
ok($h->pumpable, 'quorum COMMIT has not returned after 5 s without the synchronous standby');
is($primary->safe_psql('postgres',
	"SELECT wait_event FROM pg_stat_activity WHERE application_name = 'quorum_pub'"),
	'SyncRep', '... and is still waiting for SyncRep');

$standby->start;
ok($h->finish, 'quorum publish returns once the standby is back') or diag($qerr);
like($qout, qr/^\d+$/, '... with the message id');
is($primary->safe_psql('postgres', bodies_sql('qq')), 'w1,q1,q2',
	'the quorum message is committed and visible on the primary');
catchup();
is($standby->safe_psql('postgres', bodies_sql('qq')), 'w1,q1,q2',
	'... and on the standby');

############################################################################
# 4. failover
############################################################################
my @ids = split /\n/, $primary->safe_psql('postgres',
	q{SELECT mq.send('fo', 'm' || lpad(g::text, 2, '0')) FROM generate_series(1, 20) g});
is(scalar(@ids), 20, 'published 20 messages to fo');

# a session leases m01..m05 and stays connected (no ack) ...
my $bg = $primary->background_psql('postgres');
is($bg->query_safe(q{SELECT string_agg(convert_from(body, 'UTF8'), ',' ORDER BY msg_id)
	FROM mq.consume('fo', 5, lease => '1 hour')}),
	'm01,m02,m03,m04,m05', 'leased m01..m05 without acking');
# ... another consumes and acks m06..m10
is($primary->safe_psql('postgres', q{
WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS b FROM mq.consume('fo', 5, lease => '1 hour'))
SELECT string_agg(b, ',' ORDER BY msg_id) || ' ' || mq.ack('fo', array_agg(msg_id)) FROM c}),
	'm06,m07,m08,m09,m10 5', 'consumed and acked m06..m10');
is($primary->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'fo'}),
	'10/5', 'primary: 10 ready, 5 unacked');
catchup();

$primary->stop('immediate');
eval { $bg->quit };
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'standby promoted');

is($standby->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'fo'}),
	'15/0', 'new primary: the 15 unacked messages are ready');
# the leased ones may have been seen by their consumer: redelivered = true
# (never-delivered ones just after them may be flagged too, as RabbitMQ allows)
my $got = $standby->safe_psql('postgres', q{
WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS b, redelivered FROM mq.consume('fo', 100))
SELECT string_agg(b, ',' ORDER BY b) || ' ' || bool_and(redelivered) FILTER (WHERE b <= 'm05')
	|| ' ' || mq.ack('fo', array_agg(msg_id)) FROM c});
is($got,
	'm01,m02,m03,m04,m05,m11,m12,m13,m14,m15,m16,m17,m18,m19,m20 true 15',
	'new primary delivers exactly the 15 unacked messages, the leased ones redelivered, never the acked ones');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('fo', 100)}), '0',
	'nothing more to deliver');

# the promoted node accepts publishing and consuming
$standby->safe_psql('postgres', q{SELECT mq.send('fo', 'after failover'::text)});
is($standby->safe_psql('postgres', q{
WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS b FROM mq.consume('fo'))
SELECT b || ' ' || mq.ack('fo', array_agg(msg_id)) FROM c GROUP BY b}),
	'after failover 1', 'publish and consume on the promoted node');
is($standby->safe_psql('postgres', $queues_sql),
	"cq|9|9\nf1|5|5\nf2|4|4\nfo|0|0\nqq|3|3", 'other queues intact after failover');

my @segs = split /\n/, $standby->safe_psql('postgres',
	"SELECT relation FROM mq.segments WHERE $ids[0] BETWEEN first_msg_id AND last_msg_id"
	  . " OR $ids[-1] BETWEEN first_msg_id AND last_msg_id");
ok(@segs >= 1, "fo's log segment found: @segs");
for my $seg (@segs)
{
	is($standby->safe_psql('postgres', "SELECT count(*) FROM mq.mqlog_verify('$seg')"),
		'0', "mqlog_verify($seg) clean on the promoted node");
}

$standby->stop;
done_testing();
