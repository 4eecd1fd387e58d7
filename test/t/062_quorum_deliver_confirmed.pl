# A consume of a quorum queue hands out only messages the synchronous
# standbys have.  A commit becomes visible before its standbys confirmed it
# when its wait for them ends early: the publisher's session is cancelled
# or terminated, or the postmaster dies (a kill -9 of a primary leaves its
# backends running a moment).  Such a message is lost at a failover, and
# its publisher, which saw no confirmation, publishes it again: a consumer
# that got the first copy gets it twice (HA row 2, test 021, failed so in
# CI).  Here the publisher's wait is cancelled while the only synchronous
# standby is down:
#  - with mq.quorum_unavailable = wait, a consume waits for the standby
#    (its statement_timeout ends it; nothing is handed out);
#  - with mq.quorum_unavailable = error, it fails at once with 53000;
#  - classic queues and the quorum queue's other commits are not held up;
#  - once the standby is back, a waiting consume gets the message, and the
#    standby has it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = qe_node('qdprimary', init => { allows_streaming => 1 }, conf => qq{
wal_keep_size = '1GB'
synchronous_commit = local
mq.quorum_unavailable = wait
});
$primary->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('qq', 'quorum');
SELECT mq.queue_declare('cq');
});
my $s1 = qe_standby($primary, 's1');
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 's1'\n");
$primary->reload;
$primary->poll_query_until('postgres',
	q{SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'}, '1')
  or die 's1 did not become a synchronous standby';

# (exit code, stdout, stderr) of sql with verbose errors
sub psql_v
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $primary->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, timeout => 180);
	return ($rc, $out, $err);
}

# with the standby there, a quorum message is consumed as always
$primary->safe_psql('postgres', q{SELECT mq.send('qq', 'a'::text)});
is($primary->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',')
	FROM mq.consume('qq', 10, auto_ack => true)}), 'a', 'standby there: the message is consumed');

# the standby goes; a publisher's COMMIT waits for it and is cancelled
$s1->stop('immediate');
$primary->poll_query_until('postgres',
	q{SELECT count(*) FROM pg_stat_replication}, '0')
  or die 's1 did not go';
my $p = $primary->background_psql('postgres', on_error_stop => 0);
my $ppid = $p->query_safe('SELECT pg_backend_pid()');
$p->query_until(qr/sending/, "\\echo sending\nSELECT mq.send('qq', 'b'::text);\n");
$primary->poll_query_until('postgres',
	qq{SELECT wait_event FROM pg_stat_activity WHERE pid = $ppid}, 'SyncRep')
  or die 'the publisher does not wait for the standby';
$primary->safe_psql('postgres', "SELECT pg_cancel_backend($ppid)");
$primary->poll_query_until('postgres',
	qq{SELECT state FROM pg_stat_activity WHERE pid = $ppid}, 'idle')
  or die 'the publisher did not end its wait';
$p->quit;
like($p->{stderr}, qr/canceling wait for synchronous replication/,
	'the publisher was told its commit may not be on the standby');
is($primary->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',')
	FROM mq.browse('qq', 10)}), 'b', 'the message is committed here, not on the standby');
my $bid = $primary->safe_psql('postgres', q{SELECT msg_id FROM mq.browse('qq', 10)});

# wait mode: the consume waits for the standby; its statement timeout ends it
my ($rc, $out, $err) = psql_v(q{SET statement_timeout = '3s';
	SELECT convert_from(body, 'UTF8') FROM mq.consume('qq', 10)});
isnt($rc, 0, 'wait mode: the consume does not hand the message out') or diag($out);
like($err, qr/ERROR:\s+57014: canceling statement due to statement timeout/,
	'... it waits for the standby until its statement timeout');

# error mode: it fails at once
($rc, $out, $err) = psql_v(q{SET mq.quorum_unavailable = error;
	SELECT convert_from(body, 'UTF8') FROM mq.consume('qq', 10, wait => '10 s')});
isnt($rc, 0, 'error mode: the consume does not hand the message out') or diag($out);
like($err, qr/ERROR:\s+53000: quorum commit unavailable: 0 synchronous standbys connected, 1 needed/,
	'... it fails with 53000');
like($err, qr/DETAIL:\s+A message of quorum queue "qq" was committed without reaching the synchronous standbys/,
	'... saying why');
is($primary->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'qq'}),
	'1/0', 'the failed consumes left the message ready, not leased');

# classic queues are not held up
$primary->safe_psql('postgres', q{SELECT mq.send('cq', 'c'::text)});
is($primary->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',')
	FROM mq.consume('cq', 10, auto_ack => true)}), 'c', 'a classic queue is consumed meanwhile');

# a consumer waits; the standby comes back; it gets the message
my $c = $primary->background_psql('postgres', on_error_stop => 0);
my $cpid = $c->query_safe('SELECT pg_backend_pid()');
$c->query_until(qr/consuming/, "\\echo consuming\n"
	  . "SELECT 'got:' || string_agg(convert_from(body, 'UTF8'), ',') FROM mq.consume('qq', 10, auto_ack => true);\n\\echo consumed\n");
$primary->poll_query_until('postgres',
	qq{SELECT state = 'active' AND query LIKE '%mq.consume%' FROM pg_stat_activity WHERE pid = $cpid})
  or die 'the consumer is not in its consume';
$s1->start;
$primary->poll_query_until('postgres',
	qq{SELECT count(*) FROM pg_stat_activity WHERE pid = $cpid AND state = 'idle'}, '1')
  or die 'the consume did not return once the standby was back';
like($c->query_until(qr/consumed/, ''), qr/got:b\n/, 'standby back: the waiting consume gets the message');
$c->quit;
$primary->wait_for_catchup($s1, 'replay', $primary->lsn('insert'));
is($s1->safe_psql('postgres', qq{SELECT convert_from(body, 'UTF8') FROM mq.message($bid)}), 'b',
	'the standby has the message');

# and the quorum queue works as before
$primary->safe_psql('postgres', q{SELECT mq.send('qq', 'd'::text)});
is($primary->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',')
	FROM mq.consume('qq', 10, auto_ack => true)}), 'd', 'a quorum message published now is consumed');

$s1->stop;
$primary->stop;
done_testing();
