# queue state on a hot standby follows WAL replay, and a promoted standby
# serves exactly what the primary had settled:
#  1. a read on the standby (browse, mq.queues) while the queue is empty does
#     not freeze what the standby shows: after m1..m5 are published and
#     m1..m3 consumed and acked on the primary, the standby counts 2 ready
#     and browses m4, m5 (the reproduction of the issue);
#  2. reads on the standby during producer/consumer load on the primary:
#     mq.queues and browse agree in every read, and never count more than
#     was published;
#  3. after the load, the standby matches the primary exactly; then
#     failover: the promoted standby delivers exactly the messages the
#     primary had not settled (incl. ones leased at the time, with their
#     delivery counts), never an acked one;
#  4. mq.mqlog_verify of an unlogged relation on the standby: a clear error,
#     and a non-durable queue there is refused clearly, not "could not open
#     file";
#  5. the record of queues found unused (queue_shmem.c, KnownEmpty) is
#     neither set nor read on a standby, whose replay appends without queue
#     states: a never-used queue read there while empty counts what the
#     primary publishes to it after; once promoted, the record works again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $primary = qe_node('sprimary', init => { allows_streaming => 1 }, conf => qq{
wal_keep_size = '1GB'
# no synchronous standby: quorum queues commit locally (test 024 has them)
mq.quorum_unavailable = wait
wal_consistency_checking = 'mqlog'
});
$primary->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SET client_min_messages = error;
SELECT mq.queue_declare('rq', 'quorum');
SELECT mq.queue_declare('lq');
SELECT mq.queue_declare('hq', 'quorum');
SELECT mq.queue_declare('nd', durable => false);
SELECT mq.queue_declare('uq');
SELECT mq.queue_declare('uq2');
});
my $standby = qe_standby($primary, 'sstandby');

sub catchup
{
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	return;
}

my $counts = sub {
	my ($q) = @_;
	return "SELECT ready || '/' || unacked || '/' || total FROM mq.queues WHERE queue = '$q'";
};
my $bodies = sub {
	my ($q) = @_;
	return "SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ',' ORDER BY msg_id), '')"
	  . " FROM mq.browse('$q', 10000)";
};

############################################################################
# 1. the reproduction: a read while empty, then publish, consume, ack
############################################################################
is($standby->safe_psql('postgres', $bodies->('rq')), '', 'standby: rq empty');
is($standby->safe_psql('postgres', $counts->('rq')), '0/0/0', 'standby: rq counts 0/0/0');
$primary->safe_psql('postgres', q{SET client_min_messages = error;
	SELECT mq.send('rq', 'm' || g) FROM generate_series(1, 5) g});
$primary->safe_psql('postgres', q{SET client_min_messages = error; BEGIN;
	SELECT mq.ack('rq', ARRAY(SELECT msg_id FROM mq.consume('rq', 3))); COMMIT;});
catchup();
is($standby->safe_psql('postgres', $counts->('rq')), '2/0/2', 'standby: 2 ready after the acks');
is($standby->safe_psql('postgres', $bodies->('rq')), 'm4,m5', 'standby: browses m4, m5 only');

# 5. a queue without a state read on the standby while empty, and again
is($standby->safe_psql('postgres', $counts->('uq') . '; ' . $counts->('uq')), "0/0/0\n0/0/0",
	'standby: never-used uq counts 0/0/0');
is($standby->safe_psql('postgres', q{SELECT mq._queue_has_state('uq'), mq._queue_known_empty('uq')}), 'f|f',
	'standby: uq has no state and is not recorded as unused');
$primary->safe_psql('postgres', q{SELECT mq.send('uq', 'u1')});
catchup();
is($standby->safe_psql('postgres', $counts->('uq')), '1/0/1', 'standby: uq counts what the primary published');

############################################################################
# 2. reads on the standby during load on the primary
############################################################################
# The load runs in rounds until the standby was read at least 3 times
# while it ran and its counts took 2 values or more (one round, unless the
# machine is loaded; at most 10).
my $round_prod = 1500;
my $nprod = 0;
my $dir = PostgreSQL::Test::Utils::tempdir;
my ($reads, $bad, %seen) = (0, 0);
for my $round (1 .. 10)
{
	open(my $fh, '>', "$dir/prod.sql") or die;
	print $fh "SELECT mq.send('lq', 'p${round}_$_');\n" for 1 .. $round_prod;
	close $fh;
	open($fh, '>', "$dir/cons.sql") or die;
	print $fh "SELECT mq.ack('lq', ARRAY(SELECT msg_id FROM mq.consume('lq', 2)));\n" for 1 .. 600;
	close $fh;
	$nprod += $round_prod;
	my @load;
	for my $f ("$dir/prod.sql", "$dir/cons.sql")
	{
		my ($out, $err) = ('', '');
		push @load, IPC::Run::start(
			[ 'psql', '-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres'), '-f', $f ],
			'<', \undef, '>', \$out, '2>', \$err);
	}
	# Each read sees the standby's state rebuilt from the log as replayed so
	# far: browse returns distinct messages in order, neither it nor mq.queues
	# counts more than was published, and the counts move with the load (the
	# defect froze them at the first read).
	while (grep { $_->pumpable } @load)
	{
		$_->pump_nb for grep { $_->pumpable } @load;
		my $r = $standby->safe_psql('postgres', q{
			SELECT (SELECT ready FROM mq.queues WHERE queue = 'lq') || ' ' || count(*) || ' ' ||
				   count(DISTINCT b.msg_id) || ' ' ||
				   coalesce(array_agg(b.msg_id ORDER BY b.ordinality) = array_agg(b.msg_id ORDER BY b.msg_id), true)::int
			  FROM mq.browse('lq', 10000) WITH ORDINALITY b});
		my ($ready, $browsed, $distinct, $ordered) = split / /, $r;
		$reads++;
		$seen{$ready} = 1;
		if ($browsed != $distinct || !$ordered || $ready > $nprod || $browsed > $nprod)
		{
			$bad++;
			diag("standby read $reads: $r");
		}
	}
	$_->finish for @load;
	last if $reads >= 3 && keys(%seen) >= 2;
}
cmp_ok($reads, '>=', 3, "standby read lq $reads times during the load");
is($bad, 0, 'every standby read: browse in order without duplicates, counts within what was published');
cmp_ok(scalar(keys %seen), '>=', 2, 'the standby counts followed the load: ' . scalar(keys %seen) . ' different values');

############################################################################
# 3. exact state, then failover
############################################################################
# a quorum message delivered twice (the second time it stays leased), and
# one delivered once and leased, by a session that is still connected
$primary->safe_psql('postgres', q{SET client_min_messages = error;
	SELECT mq.send('hq', 'h1'); SELECT mq.send('hq', 'h2');
	SELECT mq.nack('hq', ARRAY(SELECT msg_id FROM mq.consume('hq', 1)));});
my $bg = $primary->background_psql('postgres');
is($bg->query_safe(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || delivery_count, ',' ORDER BY msg_id)
	FROM mq.consume('hq', 2, lease => '1 hour')}), 'h1:2,h2:1', 'primary: h1 delivered twice, h2 once, both leased');
# a commit flushes the delivery records (unflushed WAL until then)
$primary->safe_psql('postgres', q{SELECT mq.send('lq', 'last')});
catchup();

my $pl = $primary->safe_psql('postgres', $bodies->('lq'));
is($standby->safe_psql('postgres', $bodies->('lq')), $pl, 'standby browse(lq) equals the primary\'s');
my $pc = $primary->safe_psql('postgres', $counts->('lq'));
is($standby->safe_psql('postgres', $counts->('lq')), $pc, "standby mq.queues(lq) equals the primary's: $pc");
is($standby->safe_psql('postgres', $counts->('rq')), '2/0/2', 'standby: rq still 2 ready');

$primary->stop('immediate');
eval { $bg->quit };
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 'f', 'standby promoted');

is($standby->safe_psql('postgres', q{SELECT coalesce(string_agg(convert_from(body, 'UTF8'), ',' ORDER BY msg_id), '')
	FROM mq.consume('lq', 10000, auto_ack => true)}), $pl,
	'promoted: lq delivers exactly what the primary had not settled');
is($standby->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered, ',' ORDER BY msg_id)
	FROM mq.consume('rq', 100, auto_ack => true)}), 'm4:false,m5:false',
	'promoted: rq delivers m4, m5 and never the acked m1..m3');
is($standby->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || redelivered || ':' || delivery_count, ',' ORDER BY msg_id)
	FROM mq.consume('hq', 100, auto_ack => true)}), 'h1:true:3,h2:true:2',
	'promoted: leased quorum messages come back redelivered with their delivery counts');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM mq.consume(\'lq\', 10)'), '0', 'nothing delivered twice');
# 5. promoted: a look at never-used uq2 records it (a look made while a
# queue state was made, the worker loading the others, does not: looked
# at until it is)
is($standby->safe_psql('postgres', $counts->('uq')), '1/0/1', 'promoted: uq counts its message');
ok($standby->poll_query_until('postgres',
		q{SELECT bool_and(mq._queue_known_empty(queue)) FROM mq._queue_stats('uq2')}),
	'promoted: a look at never-used uq2 records it');
is($standby->safe_psql('postgres', $counts->('uq2')), '0/0/0', 'promoted: uq2 counts 0/0/0');
$standby->safe_psql('postgres', q{SELECT mq.send('uq2', 'u2')});
is($standby->safe_psql('postgres', $counts->('uq2') . q{; SELECT mq._queue_known_empty('uq2')}), "1/0/1\nf",
	'promoted: a publish to uq2 drops its record and is counted');

############################################################################
# 4. unlogged relations on a standby
############################################################################
# a non-durable message makes an unlogged message log segment
$standby->safe_psql('postgres', q{
SELECT mq.send('nd', 'not on standbys'::text);
SELECT mq.send('lq', 'keyed'::text, key => 'k010');
});
my $standby2 = PostgreSQL::Test::Cluster->new('sstandby2');
$standby->backup('bkp2');
$standby2->init_from_backup($standby, 'bkp2', has_streaming => 1);
$standby2->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'queue_ext'
hot_standby = on
});
$standby2->start;
$standby->wait_for_catchup($standby2, 'replay', $standby->lsn('insert'));
my $ndrel = $standby2->safe_psql('postgres', q{SELECT format('mq_storage.%I', c.relname) FROM mq.cat_queue q
	JOIN pg_class c ON c.oid = q.lanes[1] WHERE q.name = 'nd'});
my ($rc, $out, $err) = ('', '', '');
$rc = $standby2->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM mq.mqlog_verify('$ndrel')",
	stdout => \$out, stderr => \$err);
isnt($rc, 0, 'mqlog_verify of an unlogged relation on a standby fails');
like($err, qr/ERROR:\s+0A000: cannot verify unlogged relation "\S+" during recovery/, '... with a clear message');
unlike($err, qr/could not open file/, '... not a raw file error');
$rc = $standby2->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM mq.browse('nd')",
	stdout => \$out, stderr => \$err);
isnt($rc, 0, 'browse of a non-durable queue on a standby fails');
like($err, qr/ERROR:\s+0A000: queue "nd" is not durable: its messages are not on standbys/, '... with a clear message');
is($standby2->safe_psql('postgres', $counts->('nd')), '0/0/0', 'mq.queues shows the non-durable queue empty there');
is($standby2->safe_psql('postgres', q{SELECT count(*) FROM mq.cat_segment WHERE NOT durable}), '1',
	'an unlogged message log segment exists');
is($standby2->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',') FROM mq.messages_by_key('k010')}),
	'keyed', 'messages_by_key on the standby reads the durable segments, skipping the unlogged one');

$standby2->stop;
$standby->stop;
done_testing();
