# HA fault matrix, row 1: the client's connection is lost (the seed's
# "access node" loss), with a real client library (DBD::Pg).
#  a. the backend is terminated (pg_terminate_backend from another session)
#     a1. while the publisher's transaction is open (published, not
#         committed): COMMIT fails with a clear error, nothing was stored;
#     a2. while the publish statement itself waits (behind another
#         transaction on a reject-publish queue);
#     a3. while COMMIT waits for a synchronous standby: the transaction had
#         committed locally before the connection died;
#     in each case the client reconnects, retries with the same dedup_id and
#     exactly one message exists (a3: the retry returns the first id).
#  b. pgbouncer in front (session pooling, then transaction pooling) is
#     killed and restarted three times while two clients publish, each
#     retrying every failed publish with its dedup_id: every message exists
#     exactly once.
#  c. what pooling does to per-session deliveries: a delivery belongs to
#     the server session that consumed it, not to the pgbouncer client.
# Figures: the errors clients saw and the longest publish stall.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);

# CI installs both (test/lib/cluster.sh); QE_SKIP_DEPS=1 on a machine
# without them skips this test, as the other HA tests do
if (my $missing = qe_pgbouncer_missing()) { plan skip_all => $missing; }
DBD::Pg->import(':async');

# allows_streaming: with max_wal_senders = 0 a COMMIT never waits for a standby
# (mq.quorum_unavailable = wait: a3 needs a COMMIT that waits for a standby,
# PostgreSQL's own behaviour; the default fails such a publish at once, 024)
my $node = qe_node('clost', init => { allows_streaming => 1 },
	conf => "max_connections = 40\nmq.quorum_unavailable = wait\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SET client_min_messages = error;
SELECT mq.queue_declare('rq');
SELECT mq.queue_declare('lim', arguments => '{"x-max-length": 1000, "x-overflow": "reject-publish"}');
SELECT mq.queue_declare('qq', 'quorum');
SELECT mq.queue_declare('bq_session');
SELECT mq.queue_declare('bq_transaction');
SELECT mq.queue_declare('dq');
});
my $osuser = $node->safe_psql('postgres', 'SELECT current_user');

# A DBD::Pg connection to the node, or to pgbouncer on 127.0.0.1:port;
# errors are returned, not raised, as a client that handles them does.
sub client
{
	my (%opt) = @_;
	my $dsn = defined $opt{port}
	  ? "dbi:Pg:dbname=$opt{db};host=127.0.0.1;port=$opt{port}"
	  : 'dbi:Pg:dbname=postgres;host=' . $node->host . ';port=' . $node->port;
	# no server-side prepared statements: transaction pooling cannot keep them
	return DBI->connect($dsn, $osuser, '',
		{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0,
		  pg_server_prepare => 0 });
}

sub count_body
{
	my ($q, $body) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM mq.browse('$q', 10000) WHERE convert_from(body, 'UTF8') = '$body'");
}

sub wait_for
{
	my ($sql, $what) = @_;
	$node->poll_query_until('postgres', $sql) or die "timed out waiting for $what";
	return;
}

# A measured figure: a "# figure: name = value" line, and a line in the
# results file of the HA tests (as QueueExtHA's figure)
sub figure
{
	my ($name, $value) = @_;
	my $file = $ENV{QE_HA_RESULTS} // "$PostgreSQL::Test::Utils::tmp_check/ha_results.txt";
	diag "figure: $name = $value";
	if (open my $fh, '>>', $file)
	{
		printf $fh "%s %s %s %s\n", scalar(gmtime), 'row1', $name, $value;
		close $fh;
	}
	return;
}

my $lost_re = qr/terminating connection due to administrator command|server closed the connection unexpectedly|no connection to the server/;

############################################################################
# a1. terminated with the transaction open: not stored; the retry stores it
############################################################################
my $c = client();
ok($c, 'a1: client connected');
$c->begin_work;
my ($id1) = $c->selectrow_array(q{SELECT mq.send('rq', 'a1', dedup_id => 'd-a1')});
ok($id1, "a1: published $id1 inside an open transaction");
my $pid = $c->{pg_pid};
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
wait_for("SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $pid)", 'a1 backend exit');
$c->commit;    # DBD::Pg returns true here, but sets err
ok($c->err, 'a1: COMMIT fails');
like($c->errstr // '', $lost_re, 'a1: with a clear error: ' . (($c->errstr // '') =~ s/\s+/ /gr));
note('a1: SQLSTATE ' . ($c->state // ''));
is(count_body('rq', 'a1'), '0', 'a1: nothing was stored');
$c = client();
my ($id1b) = $c->selectrow_array(q{SELECT mq.send('rq', 'a1', dedup_id => 'd-a1')});
ok($id1b, "a1: the retry after reconnecting publishes $id1b");
is(count_body('rq', 'a1'), '1', 'a1: exactly one message');
my ($again) = $c->selectrow_array(q{SELECT mq.send('rq', 'a1', dedup_id => 'd-a1')});
is($again, $id1b, 'a1: a second retry returns the same id (dedup window)');
is(count_body('rq', 'a1'), '1', 'a1: still one message');

############################################################################
# a2. terminated while the publish statement waits
############################################################################
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{SET client_min_messages = error; BEGIN; SELECT mq.send('lim', 'holder')});
$c = client();
$pid = $c->{pg_pid};
$c->do(q{SELECT mq.send('lim', 'a2', dedup_id => 'd-a2')}, { pg_async => DBD::Pg::PG_ASYNC() });
wait_for("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid", 'a2 publish to wait');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
my $r = $c->pg_result;
ok(!$r && $c->err, 'a2: the waiting publish fails');
like($c->errstr // '', $lost_re, 'a2: with a clear error: ' . (($c->errstr // '') =~ s/\s+/ /gr));
$holder->query_safe('COMMIT');
$holder->quit;
$c = client();
my ($id2) = $c->selectrow_array(q{SELECT mq.send('lim', 'a2', dedup_id => 'd-a2')});
ok($id2, "a2: the retry publishes $id2");
is(count_body('lim', 'a2'), '1', 'a2: exactly one message');

############################################################################
# a3. terminated while COMMIT waits for a synchronous standby that never
#     answers: committed locally before the connection died
############################################################################
$node->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_standby_names = 'nosuch'; SELECT pg_reload_conf()});
wait_for(q{SELECT current_setting('synchronous_standby_names') = 'nosuch'}, 'reload');
$c = client();
$pid = $c->{pg_pid};
# (libpq prints the server's WARNING "canceling the wait for synchronous
# replication ... The transaction has already committed locally" to stderr)
$c->do(q{SELECT mq.send('qq', 'a3', dedup_id => 'd-a3')}, { pg_async => DBD::Pg::PG_ASYNC() });
wait_for("SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $pid",
	'a3 COMMIT to wait for the standby');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
$r = $c->pg_result;
ok(!$r && $c->err, 'a3: the publish (its COMMIT) fails for the client');
like($c->errstr // '', $lost_re, 'a3: with a clear error: ' . (($c->errstr // '') =~ s/\s+/ /gr));
$node->safe_psql('postgres', q{ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf()});
wait_for(q{SELECT current_setting('synchronous_standby_names') = ''}, 'reload');
my $stored = $node->safe_psql('postgres',
	q{SELECT msg_id FROM mq.browse('qq', 100) WHERE convert_from(body, 'UTF8') = 'a3'});
ok($stored, "a3: yet the message was committed (id $stored)");
$c = client();
my ($id3) = $c->selectrow_array(q{SET client_min_messages = error; SELECT mq.send('qq', 'a3', dedup_id => 'd-a3')});
is($id3, $stored, 'a3: the retry returns the id of the committed message');
is(count_body('qq', 'a3'), '1', 'a3: exactly one message');
$c->disconnect;

############################################################################
# b. pgbouncer restarts while clients publish
############################################################################
my $bdir = PostgreSQL::Test::Utils::tempdir;
# db "session", "transaction": pools of 4; "<mode>1": one server connection
# (test/lib/QueueExtTest.pm)
my $pgb = qe_pgbouncer($node, 'session', 4, databases => {
	session => [ 'session', 4 ], transaction => [ 'transaction', 4 ],
	session1 => [ 'session', 1 ], transaction1 => [ 'transaction', 1 ] });
my $bport = $pgb->port;
ok(client(port => $bport, db => 'session'), 'pgbouncer accepts connections');

# A publisher process: publishes messages "<tag>-<i>" (i = 1, 2, ...) to
# queue bq_<db>, one per transaction, each with dedup_id "<tag>-<i>": n of
# them, then one every 10 ms until the file $stop exists, so that the
# restarts fall while it publishes however fast this machine is (bounded by
# a deadline).  A publish that fails is retried with the same dedup_id
# after reconnecting.  Writes "ok i id", "err i message" and "stall
# seconds" lines to its log.
sub publisher
{
	my ($db, $tag, $n, $stop, $log) = @_;
	my $pidc = fork();
	die "fork: $!" unless defined $pidc;
	return $pidc if $pidc;
	open(my $out, '>', $log) or POSIX::_exit(2);
	$out->autoflush(1);
	my $deadline = time + 90;
	my $dbh;
	my $i = 1;
	my $failed_at;
	while (($i <= $n || !-e $stop) && time < $deadline)
	{
		$dbh //= client(port => $bport, db => $db);
		if (!$dbh)
		{
			sleep 0.02;
			next;
		}
		sleep 0.01 if $i > $n;
		my ($id) = $dbh->selectrow_array(
			"SELECT mq.send('bq_$db', '$tag-$i', dedup_id => '$tag-$i')");
		if (defined $id)
		{
			print $out "ok $i $id\n";
			printf $out "stall %.3f\n", time - $failed_at if defined $failed_at;
			undef $failed_at;
			$i++;
			next;
		}
		my $e = ($dbh->errstr // 'undef') =~ s/\s+/ /gr;
		print $out "err $i $e\n";
		$failed_at //= time;
		undef $dbh;    # reconnect
	}
	close $out;
	POSIX::_exit($i > $n ? 0 : 1);
}

my $pub_per_client = 1500;
for my $mode ('session', 'transaction')
{
	my $t0 = time;
	my $stop = "$bdir/$mode.stop";
	my %kids;
	for my $k (1, 2)
	{
		my $tag = "$mode$k";
		$kids{ publisher($mode, $tag, $pub_per_client, $stop, "$bdir/$tag.log") } = $tag;
	}
	# three restarts while they publish: wait for some progress each time
	for my $restart (1 .. 3)
	{
		my $want = $restart * 250;
		my $deadline = time + 60;
		while (time < $deadline)
		{
			last if $node->safe_psql('postgres',
				"SELECT count(*) >= $want FROM mq.browse('bq_$mode', 10000) WHERE convert_from(body, 'UTF8') LIKE '${mode}2-%'") eq 't';
			sleep 0.05;
		}
		$pgb->kill;
		sleep 0.2;
		$pgb->start;
	}
	open(my $sf, '>', $stop) or die "$stop: $!";
	close $sf;
	is(qe_reap(\%kids, 100), 0, "b ($mode pooling): both publishers finished");

	my ($errs, $stall, $published, %errtext) = (0, 0, 0);
	my %confirmed;
	for my $k (1, 2)
	{
		my $last = 0;
		open(my $fh, '<', "$bdir/$mode$k.log") or die;
		while (<$fh>)
		{
			if (/^ok (\d+) (\d+)/) { $confirmed{"$mode$k-$1"} = $2; $last = $1; }
			elsif (/^err \d+ (.*)/) { $errs++; $errtext{ $1 =~ s/\d+/N/gr }++; }
			elsif (/^stall (\S+)/) { $stall = $1 if $1 > $stall; }
		}
		$published += $last;
	}
	cmp_ok($published, '>=', 2 * $pub_per_client, "b ($mode pooling): $published messages published");
	is(scalar(keys %confirmed), $published, "b ($mode pooling): every publish confirmed");
	cmp_ok($errs, '>=', 3, "b ($mode pooling): the clients saw the restarts ($errs failed publishes)");
	note("b ($mode): error '$_' x $errtext{$_}") for sort keys %errtext;
	my $stored = $node->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || count(DISTINCT convert_from(body, 'UTF8'))
		  FROM mq.browse('bq_$mode', 10000) WHERE convert_from(body, 'UTF8') LIKE '$mode%'});
	is($stored, "$published $published",
		"b ($mode pooling): every message stored exactly once");
	my $mismatch = $node->safe_psql('postgres',
		"SELECT count(*) FROM mq.browse('bq_$mode', 10000) WHERE convert_from(body, 'UTF8') LIKE '$mode%' AND msg_id NOT IN ("
		  . join(',', values %confirmed) . ')');
	is($mismatch, '0', "b ($mode pooling): the ids clients were given are the stored ones");
	figure("pgbouncer_${mode}_failed_publishes", $errs);
	figure("pgbouncer_${mode}_longest_stall_ms", sprintf('%.0f', $stall * 1000));
	figure("pgbouncer_${mode}_seconds", sprintf('%.1f', time - $t0));
}

############################################################################
# c. deliveries belong to the server session, not to the pooled client
############################################################################
$node->safe_psql('postgres', q{SELECT mq.send('dq', 'd' || g) FROM generate_series(1, 4) g});
for my $mode ('session', 'transaction')
{
	# client A consumes (not acked) and disconnects; with one server
	# connection, client B gets A's backend: the delivery was not returned
	# at A's disconnect, and B may ack it
	my $a = client(port => $bport, db => "${mode}1");
	my ($mid, $apid) = $a->selectrow_array(q{SELECT msg_id, pg_backend_pid() FROM mq.consume('dq', lease => '1 hour')});
	ok($mid, "c ($mode): client A consumed $mid through pgbouncer");
	$a->disconnect;
	my $b = client(port => $bport, db => "${mode}1");
	my ($bpid) = $b->selectrow_array('SELECT pg_backend_pid()');
	is($bpid, $apid, "c ($mode): client B is served by the same backend");
	is($node->safe_psql('postgres', q{SELECT unacked FROM mq.queues WHERE queue = 'dq'}), '1',
		"c ($mode): A's delivery is still leased after A disconnected (no session end)");
	my ($acked) = $b->selectrow_array("SELECT mq.ack('dq', ARRAY[$mid]::bigint[])");
	is($acked, 1, "c ($mode): client B could ack client A's delivery");
	$b->disconnect;
}
# transaction pooling, two client connections at once on one server
# connection: consume in one transaction, ack in the next works only
# because both ran on that backend; consume + ack in one transaction is
# the pattern that works with any pooling
{
	my $a = client(port => $bport, db => 'transaction1');
	my $b = client(port => $bport, db => 'transaction1');
	my ($mid) = $a->selectrow_array(q{SELECT msg_id FROM mq.consume('dq', lease => '1 hour')});
	my ($acked) = $b->selectrow_array("SELECT mq.ack('dq', ARRAY[$mid]::bigint[])");
	is($acked, 1, 'c (transaction): a concurrent other client acks it too');
	my $err = $b->selectrow_array("SELECT mq.ack('dq', ARRAY[$mid]::bigint[])");
	like($b->errstr // '', qr/not delivered to this session|not currently delivered|55000/i,
		'c (transaction): acked once only: ' . ($b->errstr // ''));
	$a->begin_work;
	my ($mid2) = $a->selectrow_array(q{SELECT msg_id FROM mq.consume('dq')});
	my ($n2) = $a->selectrow_array("SELECT mq.ack('dq', ARRAY[$mid2]::bigint[])");
	ok($a->commit && $n2 == 1, 'c (transaction): consume and ack in one transaction');
}
# a pgbouncer restart ends the server sessions: their deliveries come back
$node->safe_psql('postgres', q{SELECT mq.send('dq', 'e1')});
{
	my $a = client(port => $bport, db => 'session');
	my ($mid) = $a->selectrow_array(q{SELECT msg_id FROM mq.consume('dq', lease => '1 hour')});
	ok($mid, 'c: consumed through pgbouncer');
	$pgb->kill;
	wait_for(q{SELECT unacked = 0 AND ready = 1 FROM mq.queues WHERE queue = 'dq'},
		'the delivery to return after pgbouncer died');
	is($node->safe_psql('postgres', q{SELECT redelivered FROM mq.consume('dq', auto_ack => true)}),
		't', 'c: pgbouncer killed: the server session ended and the delivery came back, redelivered');
}

$node->stop;
done_testing();
