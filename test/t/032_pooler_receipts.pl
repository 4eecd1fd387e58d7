# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# Behind a transaction-mode pooler (issue 14): a real pgbouncer
# (pool_mode = transaction, 2 server connections) in front of the node,
# DBD::Pg clients through it.
#  a. a receipt from client A's consume acks from client B on another server
#     session (classic and quorum queue): the message is gone, never back;
#  b. the issue's failure: 6 clients x 30 consume-then-ack pairs in separate
#     statements through 2 server connections: acks by msg_id fail
#     ("leased by another consumer"), acks by receipt all succeed;
#  c. session_bound => false: a disconnected client's delivery comes back
#     after its lease and not before, and another client may settle it by
#     receipt meanwhile; session_bound => true through the
#     pooler stays leased too (the server session lives); on a direct
#     connection session_bound => true returns at once, false does not;
#  d. a receipt of an expired delivery is refused (55000) and does not
#     settle the redelivery; an ack by receipt that rolls back keeps it;
#     settled, malformed and other queue's receipts;
#  e. 8 clients consuming (batches of 1-5) and acking by receipt in separate
#     transactions through 2 server connections, recording what they acked
#     in the ack's transaction: every message acked once, none lost
#     (session_bound false, then the default);
#  f. consume + work + ack in one transaction through the pooler is
#     exactly-once under kill -9 of the postmaster;
#  g. a stream group's receipt acks from another client; nack,
#     extend_lease and reject by receipt.
# Figures (diag "figure: ..."): the failed msg_id acks of b, errors seen in f.
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

if (my $missing = qe_pgbouncer_missing()) { plan skip_all => $missing; }

# QE_032_ONLY=b,f runs only those subtests (while debugging one)
my %only = map { $_ => 1 } split /,/, $ENV{QE_032_ONLY} // '';
sub want { return !%only || $only{ $_[0] }; }

my $t_start = time;
my $node = qe_node('pool', conf => "max_connections = 60\nmq.quorum_unavailable = wait\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SET client_min_messages = error;
SELECT mq.queue_declare('qa');
SELECT mq.queue_declare('qaq', 'quorum');
SELECT mq.queue_declare('b_ids');
SELECT mq.queue_declare('b_receipts');
SELECT mq.queue_declare(q) FROM unnest(ARRAY['c_free', 'c_bound', 'c_dbound', 'c_dfree']) q;
SELECT mq.queue_declare('d');
SELECT mq.queue_declare('d_other');
SELECT mq.queue_declare('e_free');
SELECT mq.queue_declare('e_bound');
SELECT mq.queue_declare('f');
SELECT mq.queue_declare('gx');
SELECT mq.queue_declare('gs', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('gs', 'g1', start => 'earliest', retry_delays => ARRAY['1 second'::interval]);
CREATE TABLE work_log (q text, msg_id bigint, body text, pid int DEFAULT pg_backend_pid());
CREATE TABLE work (msg_id bigint, redelivered boolean);
});
my $pgb = qe_pgbouncer($node, 'transaction', 2);

# ready and unacked of queue q, "ready unacked"
sub counts
{
	my ($q) = @_;
	return $node->safe_psql('postgres',
		"SELECT ready || ' ' || unacked FROM mq.queues WHERE queue = '$q'");
}

# one-line form of a client's last error
sub errline
{
	my ($dbh) = @_;
	return (($dbh->state // '') . ' ' . ($dbh->errstr // '')) =~ s/\s+/ /gr;
}

sub sleep_until
{
	my ($t) = @_;
	my $d = $t - time;
	sleep($d) if $d > 0;
	return;
}

# Consume one message of $q through $dbh as soon as there is one (a lease
# has run out: when exactly depends on the machine's load); 60 s guards
# against a hang.  Returns the row of $cols.
sub consume_when_back
{
	my ($dbh, $q, $cols, $args) = @_;
	my $deadline = time + 60;
	while (1)
	{
		my @row = $dbh->selectrow_array("SELECT $cols FROM mq.consume('$q'$args)");
		return @row if @row || time > $deadline;
		sleep 0.1;
	}
}

my $consume_cols = 'msg_id, receipt, redelivered, delivery_count, pg_backend_pid()';

############################################################################
# a. a receipt acks from another client, on another server session
############################################################################
want('a') and subtest 'a. a receipt from client A acks from client B on another backend' => sub {
	for my $q ('qa', 'qaq')
	{
		$node->safe_psql('postgres', "SELECT mq.send('$q', 'a-$q')");
		my $A = $pgb->connect;
		my ($mid, $receipt, undef, undef, $apid) = $A->selectrow_array(
			"SELECT $consume_cols FROM mq.consume('$q', lease => '8 seconds')");
		my $t_consumed = time;
		ok($mid && defined $receipt, "$q: A consumed $mid in autocommit, receipt given")
		  or diag(errline($A));
		# B's transaction holds a server connection; if it is the one A's
		# consume ran on, C (autocommit) is served by the other one, else B
		# acks itself
		my $B = $pgb->connect;
		my $C = $pgb->connect;
		$B->begin_work;
		my ($bpid) = $B->selectrow_array('SELECT pg_backend_pid()');
		my $acker = $bpid == $apid ? $C : $B;
		my ($acked, $ackpid) = $acker->selectrow_array(
			'SELECT mq.ack(?, receipts => ?::text[]), pg_backend_pid()', undef, $q, [$receipt]);
		my $ackerr = errline($acker);
		ok($B->commit, "$q: B's transaction commits");
		is($acked, 1, "$q: the ack by receipt from another client settles it") or diag($ackerr);
		ok(defined $ackpid && $ackpid != $apid,
			"$q: that ack ran on backend " . ($ackpid // 'none') . ", the consume on $apid");
		is(counts($q), '0 0', "$q: ready 0, unacked 0");
		sleep_until($t_consumed + 8.5);
		my ($n) = $C->selectrow_array("SELECT count(*) FROM mq.consume('$q', 10)");
		is($n, 0, "$q: not redelivered after its lease");
		$_->disconnect for $A, $B, $C;
	}
};

############################################################################
# b. the issue's failure and its fix: consume, then ack in the next
#    statement, 6 clients through 2 server connections
############################################################################
# Fork a client process that writes its log lines to $log: the parent gets
# its pid, the child runs $body->($out) and exits with what it returns
sub log_child
{
	my ($log, $body) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	open(my $out, '>', $log) or POSIX::_exit(2);
	$out->autoflush(1);
	my $rc = $body->($out);
	close $out;
	POSIX::_exit($rc);
}

# A client process: 30 times consume one message of q (autocommit), work on
# it for 2 ms, then ack it in the next statement by msg_id ($by eq 'ids') or
# by receipt.  Log
# lines: "ok <msg_id> <acked>", "err <msg_id> <error>", "none <error>".
sub pairs_client
{
	my ($q, $by, $log) = @_;
	return log_child($log, sub {
		my ($out) = @_;
		my $dbh = $pgb->connect or POSIX::_exit(3);
		for my $i (1 .. 30)
		{
			my ($mid, $r) = $dbh->selectrow_array(
				'SELECT msg_id, ' . ($by eq 'ids' ? 'NULL' : 'receipt')
				  . " FROM mq.consume(?, lease => '5 minutes')", undef, $q);
			if (!defined $mid)
			{
				print $out 'none ', errline($dbh), "\n";
				next;
			}
			sleep 0.002;    # the client's work on it
			my ($acked) = $by eq 'ids'
			  ? $dbh->selectrow_array('SELECT mq.ack(?, ARRAY[?::bigint])', undef, $q, $mid)
			  : $dbh->selectrow_array('SELECT mq.ack(?, receipts => ?::text[])', undef, $q, [$r]);
			print $out defined $acked ? "ok $mid $acked\n" : "err $mid " . errline($dbh) . "\n";
		}
		return 0;
	});
}

my $bdir = PostgreSQL::Test::Utils::tempdir;
want('b') and subtest 'b. 6 clients x 30 consume-then-ack pairs through 2 server connections' => sub {
	my %res;
	for my $by ('ids', 'receipts')
	{
		my $q = "b_$by";
		$node->safe_psql('postgres', "SELECT mq.send_batch('$q', ARRAY(SELECT 'b' || g FROM generate_series(1, 180) g))");
		my %kids;
		$kids{ pairs_client($q, $by, "$bdir/b_$by.$_.log") } = $_ for 1 .. 6;
		is(qe_reap(\%kids, 90), 0, "$by: the 6 clients finished");
		my ($ok, $acked, $leased, $other, %seen) = (0, 0, 0, 0);
		for my $k (1 .. 6)
		{
			open(my $fh, '<', "$bdir/b_$by.$k.log") or die;
			while (<$fh>)
			{
				if (/^ok (\d+) (\d+)/) { $ok++; $acked += $2; $seen{$1}++; }
				elsif (/^err (\d+) (.*)/)
				{
					$seen{$1}++;
					if ($2 =~ /leased by another consumer/) { $leased++; }
					else { $other++; note("$by: ack error: $2"); }
				}
				else { $other++; note("$by: $_") if $other <= 5; }
			}
		}
		$res{$by} = [ $ok, $acked, $leased, $other, scalar(keys %seen), counts($q) ];
	}
	my ($ok, $acked, $leased, $other, $distinct, $counts) = @{ $res{ids} };
	diag("figure: b_msg_id_acks_failed = $leased of 180 ('leased by another consumer'), other errors $other");
	is($distinct, 180, 'ids: 180 distinct messages consumed');
	cmp_ok($leased, '>', 0,
		"ids: acks by msg_id in a later statement fail through the pooler ($leased of 180, 'leased by another consumer')");
	is($counts, '0 ' . (180 - $acked), "ids: the $leased messages whose ack failed stay unacked");
	($ok, $acked, $leased, $other, $distinct, $counts) = @{ $res{receipts} };
	is($leased + $other, 0, 'receipts: no ack failed');
	is($acked, 180, 'receipts: all 180 acked');
	is($distinct, 180, 'receipts: 180 distinct messages');
	is($counts, '0 0', 'receipts: queue empty, nothing unacked');
};

############################################################################
# c. a disconnected client's deliveries: through the pooler and direct
############################################################################
want('c') and subtest 'c. a disconnected consumer: lease, session_bound, pooler or direct' => sub {
	$node->safe_psql('postgres', "SELECT mq.send(q, 'c-' || q) FROM unnest(ARRAY['c_free', 'c_bound', 'c_dbound', 'c_dfree']) q");
	# through pgbouncer: session_bound false and true, lease 12 s (the
	# leases end 12 s or more after $t0, which is read before the consumes)
	my $A1 = $pgb->connect;
	my $A2 = $pgb->connect;
	my $t0 = time;
	my ($m1) = $A1->selectrow_array(
		q{SELECT msg_id FROM mq.consume('c_free', lease => '12 seconds', session_bound => false)});
	my ($m2) = $A2->selectrow_array(
		q{SELECT msg_id FROM mq.consume('c_bound', lease => '12 seconds', session_bound => true)});
	ok($m1 && $m2, 'pooler: consumed with session_bound false and true') or diag(errline($A1), errline($A2));
	$A1->disconnect;
	$A2->disconnect;
	sleep_until($t0 + 1.5);
	my $B = $pgb->connect;
	for my $q ('c_free', 'c_bound')
	{
		my ($n) = $B->selectrow_array("SELECT count(*) FROM mq.consume('$q', 10, lease => '1 minute')");
		is($n, 0, "pooler, $q: 1.5 s after the disconnect another client gets nothing");
		is(counts($q), '0 1', "pooler, $q: still unacked");
	}
	cmp_ok(time - $t0, '<', 12, 'pooler: (those checks ran before the lease ended)');
	sleep_until($t0 + 12);
	for my $q ('c_free', 'c_bound')
	{
		my ($mid, $red, $dc) = consume_when_back($B, $q, 'msg_id, redelivered, delivery_count',
			', auto_ack => true');
		is(($mid // 'none') . " $red $dc", ($q eq 'c_free' ? $m1 : $m2) . ' 1 2',
			"pooler, $q: after the lease delivered again, redelivered, delivery_count 2");
	}
	# what a client that disconnected leaves for the lease, another one
	# settles by receipt
	$node->safe_psql('postgres', q{SELECT mq.send('c_free', 'c-ack')});
	my $A3 = $pgb->connect;
	my ($m3, $r3) = $A3->selectrow_array(
		q{SELECT msg_id, receipt FROM mq.consume('c_free', lease => '1 minute', session_bound => false)});
	$A3->disconnect;
	my ($x) = $B->selectrow_array(q{SELECT mq.ack('c_free', receipts => ?::text[])}, undef, [$r3]);
	is($x, 1, 'pooler: after the consumer disconnected, another client acks by its receipt')
	  or diag(errline($B));
	is(counts('c_free'), '0 0', 'pooler: nothing left');
	$B->disconnect;

	# direct connections: session_bound true returns at once on disconnect,
	# false waits for its lease (12 s, from after $t1)
	my $dsn = 'dbi:Pg:dbname=postgres;host=' . $node->host . ';port=' . $node->port;
	my %attr = (AutoCommit => 1, RaiseError => 0, PrintError => 0);
	my $D1 = DBI->connect($dsn, $pgb->user, '', \%attr);
	my $D2 = DBI->connect($dsn, $pgb->user, '', \%attr);
	my $t1 = time;
	my ($d1, $p1) = $D1->selectrow_array(
		q{SELECT msg_id, pg_backend_pid() FROM mq.consume('c_dbound', lease => '1 minute')});
	my ($d2, $p2) = $D2->selectrow_array(
		q{SELECT msg_id, pg_backend_pid() FROM mq.consume('c_dfree', lease => '12 seconds', session_bound => false)});
	ok($d1 && $d2, 'direct: consumed with session_bound true (lease 1 min) and false (12 s)');
	$D1->disconnect;
	$D2->disconnect;
	ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid IN ($p1, $p2)"), 'direct: both backends exited')
	  if $p1 && $p2;
	my $deadline = time + 10;
	sleep 0.05 while counts('c_dbound') ne '1 0' && time < $deadline;
	is(counts('c_dbound'), '1 0', 'direct, session_bound true: back to ready at the session end');
	# (its lease ends a minute or more after $t1: ready before that is at the end)
	cmp_ok(time - $t1, '<', 60, 'direct, session_bound true: before its 1 min lease ended');
	sleep_until($t1 + 2);
	my $C = $pgb->connect;
	my ($n) = $C->selectrow_array(q{SELECT count(*) FROM mq.consume('c_dfree', lease => '1 minute')});
	is($n, 0, 'direct, session_bound false: 2 s after the session ended nobody gets it');
	is(counts('c_dfree'), '0 1', 'direct, session_bound false: still unacked');
	my $D3 = DBI->connect($dsn, $pgb->user, '', \%attr);
	my ($x2) = $D3->selectrow_array("SELECT mq.ack('c_dfree', ARRAY[$d2]::bigint[])");
	ok(!defined $x2 && ($D3->state // '') eq '55000',
		'direct, session_bound false: a new session cannot ack it by id: ' . errline($D3));
	$D3->disconnect;
	cmp_ok(time - $t1, '<', 12, 'direct: (checked before its lease ended)');
	sleep_until($t1 + 12);
	my ($mid, $red, $dc) = consume_when_back($C, 'c_dfree', 'msg_id, redelivered, delivery_count',
		', auto_ack => true');
	is(($mid // 'none') . " $red $dc", "$d2 1 2",
		'direct, session_bound false: after the lease delivered again, redelivered, delivery_count 2');
	$C->disconnect;
};

############################################################################
# d. receipts of expired, settled, foreign and malformed deliveries
############################################################################
want('d') and subtest 'd. a receipt of an expired delivery is refused and settles nothing' => sub {
	my $A = $pgb->connect;
	my $B = $pgb->connect;
	$node->safe_psql('postgres', q{SELECT mq.send('d', 'd1')});
	my ($mid, $r1) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('d', lease => '1 second')});
	my $t0 = time;
	ok($mid && $r1, "A consumed $mid with a 1 s lease");
	sleep_until($t0 + 1.5);
	my ($mid2, $r2, $red, $dc) = $B->selectrow_array(
		q{SELECT msg_id, receipt, redelivered, delivery_count FROM mq.consume('d', lease => '1 minute')});
	is(($mid2 // 'none') . ' ' . ($red // '') . ' ' . ($dc // ''), "$mid 1 2",
		'after the lease B gets it again, redelivered, delivery_count 2');
	ok(defined $r2 && $r2 ne $r1, 'with a new receipt');
	my ($x) = $A->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r1]);
	ok(!defined $x && ($A->state // '') eq '55000', 'ack with the first receipt: 55000');
	like($A->errstr // '', qr/receipt/, 'the message says "receipt": ' . errline($A));
	is(counts('d'), '0 1', "B's redelivery is not settled by it");
	($x) = $A->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r2]);
	is($x, 1, 'ack with the second receipt (from A) settles it') or diag(errline($A));
	is(counts('d'), '0 0', 'queue empty');
	($x) = $B->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r2]);
	ok(!defined $x && ($B->state // '') eq '55000', 'the receipt of a settled delivery: ' . errline($B));

	# expired, nobody consumed it again yet (the worker may or may not have
	# returned it): refused, and the message is still there
	$node->safe_psql('postgres', q{SELECT mq.send('d', 'd2')});
	my ($mid3, $r3) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('d', lease => '1 second')});
	$t0 = time;
	sleep_until($t0 + 1.5);
	($x) = $B->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r3]);
	ok(!defined $x && ($B->state // '') eq '55000', 'ack of an expired lease before any redelivery: 55000');
	like($B->errstr // '', qr/receipt/, 'naming the receipt: ' . errline($B));
	my ($mid4, $r4, $red4, $dc4) = $B->selectrow_array(
		q{SELECT msg_id, receipt, redelivered, delivery_count FROM mq.consume('d')});
	is(($mid4 // 'none') . ' ' . ($red4 // '') . ' ' . ($dc4 // ''), "$mid3 1 2",
		'the message was not settled: delivered again');
	($x) = $A->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r4]);
	is($x, 1, 'and acked by its new receipt') or diag(errline($A));

	# an ack by receipt that rolls back leaves the delivery leased, and the
	# receipt good
	$node->safe_psql('postgres', q{SELECT mq.send('d', 'd3')});
	my ($mid5, $r5) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('d', lease => '1 minute')});
	$B->begin_work;
	($x) = $B->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r5]);
	is($x, 1, 'B acks by receipt in a transaction') or diag(errline($B));
	$B->rollback;
	is(counts('d'), '0 1', 'B rolled back: still leased');
	my ($none) = $B->selectrow_array(q{SELECT count(*) FROM mq.consume('d')});
	is($none, 0, 'not consumable meanwhile');
	($x) = $A->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$r5]);
	is($x, 1, 'the same receipt acks it afterwards') or diag(errline($A));

	# malformed; of another queue
	($x) = $A->selectrow_array(q{SELECT mq.ack('d', receipts => ARRAY['not a receipt'])});
	is($A->state // '', '22P02', 'a malformed receipt: 22P02 ' . errline($A));
	$node->safe_psql('postgres', q{SELECT mq.send('d_other', 'o')});
	my ($mo, $ro) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('d_other')});
	($x) = $B->selectrow_array(q{SELECT mq.ack('d', receipts => ?::text[])}, undef, [$ro]);
	is($B->state // '', '22023', 'a receipt of another queue: 22023 ' . errline($B));
	is(counts('d_other'), '0 1', 'and it settled nothing');
	($x) = $B->selectrow_array(q{SELECT mq.ack('d_other', receipts => ?::text[])}, undef, [$ro]);
	is($x, 1, 'on its own queue it acks') or diag(errline($B));
	$_->disconnect for $A, $B;
};

############################################################################
# e. 8 clients, consume and ack by receipt in separate transactions
############################################################################
# A client: until the queue is empty, consume 1-5, then in one transaction
# record them in work_log and ack them by receipt.  Log lines: "ok <n>",
# "err <where> <error>".
sub receipt_client
{
	my ($q, $bound, $log) = @_;
	return log_child($log, sub {
		my ($out) = @_;
		srand($$);
		my $dbh = $pgb->connect or POSIX::_exit(3);
		my $deadline = time + 100;
		while (time < $deadline)
		{
			my $rows = $dbh->selectall_arrayref(
				q{SELECT msg_id, convert_from(body, 'UTF8'), receipt
				    FROM mq.consume(?, ?::int, session_bound => ?::boolean)},
				undef, $q, 1 + int(rand(5)), $bound);
			if (!$rows)
			{
				print $out 'err consume ', errline($dbh), "\n";
				sleep 0.05;
				next;
			}
			if (!@$rows)
			{
				my ($left) = $dbh->selectrow_array(
					'SELECT ready + unacked FROM mq.queues WHERE queue = ?', undef, $q);
				last if defined $left && $left == 0;
				sleep 0.02;
				next;
			}
			$dbh->begin_work;
			my $ins = $dbh->do(
				'INSERT INTO work_log (q, msg_id, body) SELECT ?, unnest(?::bigint[]), unnest(?::text[])',
				undef, $q, [ map { $_->[0] } @$rows ], [ map { $_->[1] } @$rows ]);
			my ($acked) = $ins
			  ? $dbh->selectrow_array('SELECT mq.ack(?, receipts => ?::text[])',
				undef, $q, [ map { $_->[2] } @$rows ])
			  : (undef);
			if (!defined $acked || $acked != @$rows)
			{
				print $out 'err ack ', errline($dbh), "\n";
				$dbh->rollback;
				next;
			}
			if (!$dbh->commit)
			{
				print $out 'err commit ', errline($dbh), "\n";
				next;
			}
			print $out 'ok ', scalar(@$rows), "\n";
		}
		return time < $deadline ? 0 : 1;
	});
}

want('e') and subtest 'e. 8 clients ack by receipt in separate transactions through 2 connections' => sub {
	for my $bound ('false', 'true')
	{
		my $q = $bound eq 'false' ? 'e_free' : 'e_bound';
		$node->safe_psql('postgres',
			"SELECT count(*) FROM mq.send_batch('$q', ARRAY(SELECT 'e-' || g FROM generate_series(1, 2000) g))");
		my $t0 = time;
		my %kids;
		$kids{ receipt_client($q, $bound, "$bdir/e_$q.$_.log") } = $_ for 1 .. 8;
		is(qe_reap(\%kids, 110), 0, "session_bound $bound: the 8 clients drained the queue");
		my ($ok, $errs) = (0, 0);
		for my $k (1 .. 8)
		{
			open(my $fh, '<', "$bdir/e_$q.$k.log") or die;
			while (<$fh>)
			{
				if (/^ok (\d+)/) { $ok += $1; }
				else { $errs++; note("session_bound $bound: $_") if $errs <= 10; }
			}
		}
		is($errs, 0, "session_bound $bound: no consume or ack error");
		is($ok, 2000, "session_bound $bound: the clients acked 2000");
		is($node->safe_psql('postgres', qq{
			SELECT count(*) || ' ' || count(DISTINCT msg_id) || ' ' || count(DISTINCT body)
			  || ' ' || count(*) FILTER (WHERE body IN (SELECT 'e-' || g FROM generate_series(1, 2000) g))
			  FROM work_log WHERE q = '$q'}),
			'2000 2000 2000 2000', "session_bound $bound: each of the 2000 messages acked exactly once");
		cmp_ok($node->safe_psql('postgres', "SELECT count(DISTINCT pid) FROM work_log WHERE q = '$q'"),
			'<=', 2, "session_bound $bound: on at most 2 server connections");
		is(counts($q), '0 0', "session_bound $bound: queue empty");
		diag(sprintf('figure: e_%s_seconds = %.1f', $q, time - $t0));
	}
};

############################################################################
# f. consume + work + ack in one transaction, kill -9 of the postmaster
############################################################################
my $fN = 3000;

# A client: BEGIN; consume 1-10; INSERT INTO work; ack; COMMIT through the
# pooler, reconnecting after any error, until the queue is drained.
sub xact_client
{
	my ($log) = @_;
	return log_child($log, sub {
		my ($out) = @_;
		srand($$);
		my $deadline = time + 120;
		my $dbh;
		while (time < $deadline)
		{
			$dbh //= $pgb->connect;
			if (!$dbh)
			{
				sleep 0.1;
				next;
			}
			my $fail = sub {
				print $out "err $_[0] ", errline($dbh), "\n";
				$dbh->disconnect;
				undef $dbh;
				sleep 0.05;
			};
			$dbh->begin_work;
			my $ids = $dbh->selectall_arrayref(
				q{SELECT msg_id, redelivered FROM mq.consume('f', ?::int)}, undef, 1 + int(rand(10)));
			if (!$ids) { $fail->('consume'); next; }
			if (!@$ids)
			{
				$dbh->rollback;
				my ($left) = $dbh->selectrow_array(
					q{SELECT ready + unacked FROM mq.queues WHERE queue = 'f'});
				if (!defined $left) { $fail->('left'); next; }
				last if $left == 0;
				sleep 0.02;
				next;
			}
			# the work: a row per message, and 10 ms
			my $ok = $dbh->do('INSERT INTO work SELECT unnest(?::bigint[]), unnest(?::boolean[]) FROM pg_sleep(0.01)',
				undef, [ map { $_->[0] } @$ids ], [ map { $_->[1] ? 'true' : 'false' } @$ids ]);
			if (!$ok) { $fail->('insert'); next; }
			my ($n) = $dbh->selectrow_array(q{SELECT mq.ack('f', ?::bigint[])},
				undef, [ map { $_->[0] } @$ids ]);
			if (!defined $n) { $fail->('ack'); next; }
			if (!$dbh->commit) { $fail->('commit'); next; }
			print $out 'ok ', scalar(@$ids), "\n";
		}
		return time < $deadline ? 0 : 1;
	});
}

want('f') and subtest 'f. consume + work + ack in one transaction: exactly-once under kill -9' => sub {
	$node->safe_psql('postgres',
		"SELECT count(*) FROM mq.send_batch('f', ARRAY(SELECT 'f-' || g FROM generate_series(1, $fN) g))");
	my %kids;
	$kids{ xact_client("$bdir/f.$_.log") } = $_ for 1 .. 4;
	$node->poll_query_until('postgres', 'SELECT count(*) >= ' . int($fN / 10) . ' FROM work')
	  or die 'the clients made no progress';
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM work');
	# kill -9 the postmaster; start again once it and its children are gone
	my @pids = ($node->{_pid},
		split(/\n/, $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity')));
	$node->kill9;
	my $deadline = time + 30;
	sleep 0.1 while time < $deadline && grep { kill 0, $_ } @pids;
	my $started = 0;
	for (1 .. 60)
	{
		last if $started = $node->start(fail_ok => 1);
		$node->{_pid} = undef;    # (a failed start may have read a dying postmaster's pid)
		sleep 0.5;
	}
	ok($started, "postmaster killed with $before of $fN done, restarted");
	cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM work'), '<', $fN,
		'(the crash came before the clients were done)');
	is(qe_reap(\%kids, 110), 0, 'the 4 clients reconnected through pgbouncer and drained the queue');
	my ($errs, %kinds) = (0);
	for my $k (1 .. 4)
	{
		open(my $fh, '<', "$bdir/f.$k.log") or die;
		while (<$fh>)
		{
			next unless /^err (\S+) (.*)/;
			$errs++;
			$kinds{ "$1: " . ($2 =~ s/\d+/N/gr) }++;
		}
	}
	cmp_ok($errs, '>', 0, "the clients saw the crash ($errs errors)");
	note("f: $kinds{$_} x $_") for sort keys %kinds;
	diag("figure: f_client_errors = $errs");
	is($node->safe_psql('postgres', 'SELECT count(*) || \' \' || count(DISTINCT msg_id) FROM work'),
		"$fN $fN", 'work has every message exactly once');
	is(counts('f'), '0 0', 'queue empty');
	note('f: redelivered after the crash: '
		  . $node->safe_psql('postgres', 'SELECT count(*) FROM work WHERE redelivered'));
};

############################################################################
# g. a stream group's receipt; nack, extend_lease, reject by receipt
############################################################################
want('g') and subtest 'g. group receipts; nack, extend_lease and reject by receipt' => sub {
	my $A = $pgb->connect;
	my $B = $pgb->connect;
	my $C = $pgb->connect;
	$node->safe_psql('postgres', q{
		SELECT mq.send('gs', 'p0', partition => 0);
		SELECT mq.send('gs', 'p1', partition => 1);});
	my $rows = $A->selectall_arrayref(
		q{SELECT partition, receipt FROM mq.consume('gs', 10, group_name => 'g1') ORDER BY partition});
	is(join(',', map { $_->[0] } @{ $rows // [] }), '0,1', 'A consumed one message of each partition')
	  or diag(errline($A));
	my ($x) = $B->selectrow_array(q{SELECT mq.ack('gs', group_name => 'g1', receipts => ?::text[])},
		undef, [ map { $_->[1] } @$rows ]);
	is($x, 2, 'B acks both by receipt') or diag(errline($B));
	is($node->safe_psql('postgres',
		q{SELECT sum(lag) || ' ' || sum(in_flight) || ' ' || sum(retrying) FROM mq.consumer_groups WHERE queue = 'gs' AND group_name = 'g1'}),
		'0 0 0', 'the group has nothing left, in flight or retrying');
	# a group nack by receipt: retried after the group's 1 s retry delay
	$node->safe_psql('postgres', q{SELECT mq.send('gs', 'p0b', partition => 0)});
	my ($gm, $gr) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('gs', group_name => 'g1')});
	($x) = $B->selectrow_array(q{SELECT mq.nack('gs', group_name => 'g1', receipts => ?::text[])}, undef, [$gr]);
	is($x, 1, 'B nacks a group delivery by receipt') or diag(errline($B));
	my $deadline = time + 10;
	my @again;
	while (time < $deadline)
	{
		@again = $C->selectrow_array(
			q{SELECT msg_id, receipt, reconsume_times FROM mq.consume('gs', group_name => 'g1')});
		last if @again;
		sleep 0.1;
	}
	is(($again[0] // 'none') . ' ' . ($again[2] // ''), "$gm 1", 'it is retried, reconsume_times 1');
	($x) = $A->selectrow_array(q{SELECT mq.ack('gs', group_name => 'g1', receipts => ?::text[])}, undef, [ $again[1] ]);
	is($x, 1, 'and acked by the retry\'s receipt from A') or diag(errline($A));

	# classic queue: nack by receipt
	$node->safe_psql('postgres', q{SELECT mq.send('gx', 'x1')});
	my ($m, $r) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('gx')});
	($x) = $B->selectrow_array(q{SELECT mq.nack('gx', receipts => ?::text[])}, undef, [$r]);
	is($x, 1, 'B nacks by receipt') or diag(errline($B));
	is(counts('gx'), '1 0', 'back to ready');
	# (the old lease ends at most 8 s after $t0, read after the consume; the
	# extended one 60 s or more after it, read before the extend)
	my ($m2, $r2, $red, $dc) = $C->selectrow_array(
		q{SELECT msg_id, receipt, redelivered, delivery_count FROM mq.consume('gx', lease => '8 seconds')});
	my $t0 = time;
	is("$m2 $red $dc", "$m 1 2", 'C gets it again, redelivered, delivery_count 2');
	# extend_lease by receipt: still leased after the old lease end
	($x) = $B->selectrow_array(q{SELECT mq.extend_lease('gx', lease => '60 seconds', receipts => ?::text[])},
		undef, [$r2]);
	is($x, 1, 'B extends its lease by receipt to 60 s') or diag(errline($B));
	sleep_until($t0 + 9);
	my ($n) = $A->selectrow_array(q{SELECT count(*) FROM mq.consume('gx', 10)});
	is($n, 0, 'after the old lease of 8 s nobody gets it');
	is(counts('gx'), '0 1', 'still unacked');
	($x) = $A->selectrow_array(q{SELECT mq.ack('gx', receipts => ?::text[])}, undef, [$r2]);
	is($x, 1, 'the receipt still acks it') or diag(errline($A));
	# reject by receipt: requeue, then dead-letter (no DLX: dropped)
	$node->safe_psql('postgres', q{SELECT mq.send('gx', 'x2')});
	($m, $r) = $A->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('gx')});
	($x) = $B->selectrow_array(q{SELECT mq.reject('gx', receipt => ?)}, undef, $r);
	is($x, 1, 'B rejects by receipt (requeue)') or diag(errline($B));
	is(counts('gx'), '1 0', 'back to ready');
	($m2, $r2) = $C->selectrow_array(q{SELECT msg_id, receipt FROM mq.consume('gx')});
	is($m2, $m, 'C gets it again');
	($x) = $A->selectrow_array(q{SELECT mq.reject('gx', receipt => ?, requeue => false)}, undef, $r2);
	is($x, 1, 'A rejects it by receipt without requeue') or diag(errline($A));
	is(counts('gx'), '0 0', 'gone');
	$_->disconnect for $A, $B, $C;
};

my $secs = time - $t_start;
note(sprintf('032 took %.0f s', $secs));
$node->stop;
done_testing();
