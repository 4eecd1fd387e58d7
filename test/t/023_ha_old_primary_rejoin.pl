# qe: long
# HA fault matrix row 6: the old primary comes back.  The primary is killed
# (keeper and postmaster, kill -9) while quorum-queue load runs and an
# asynchronous publisher (synchronous_commit = off) writes WAL the standbys
# may not have; after the failover its pg_autoctl is started again: it is
# rewound (pg_rewind) and rejoins as a standby of the new primary.  Its data
# converges: on all three nodes every queue's counts, every mqlog table's
# row count and mq.mqlog_verify (no problem anywhere) are the same.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use QueueExtHA;

my $ha = QueueExtHA->new('row6');
my $old = $ha->primary;
$ha->safe_psql($old, q{
SET client_min_messages = warning;
SELECT mq.queue_declare('c_keep', 'classic');
SELECT mq.queue_declare('q_keep', 'quorum');
SELECT mq.queue_declare('s_keep', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s_keep', 'g', start => 'earliest');
SELECT mq.queue_declare('q_load', 'quorum');
SELECT mq.queue_declare('c_async', 'classic');
SELECT count(mq.send('c_keep', 'c' || g)) FROM generate_series(1, 500) g;
SELECT count(mq.send('q_keep', 'q' || g)) FROM generate_series(1, 300) g;
SELECT count(mq.send('s_keep', 's' || g, key => g::text)) FROM generate_series(1, 400) g;
});
# (a transaction of its own: a consume sees only committed publishes)
$ha->safe_psql($old, q{
SELECT mq.ack('q_keep', ARRAY(SELECT msg_id FROM mq.consume('q_keep', 100)));
SELECT mq.ack('s_keep', ARRAY(SELECT msg_id FROM mq.consume('s_keep', 150, group_name => 'g')),
              group_name => 'g');
});

my $load = $ha->loadgen_start('q_load', producers => 2, consumers => 2, rate => 50);
my $async = $ha->loadgen_start('c_async', producers => 2, consumers => 1, rate => 0,
	durability => 'async', session_sync => 'off');
$ha->loadgen_wait_confirms($_, 200, 60) for $load, $async;

my $t_kill = $ha->kill_node($old);
my ($new, $failover) = $ha->wait_for_primary(old => $old, since => $t_kill, timeout => 90);
$ha->figure('failover_seconds', sprintf('%.2f', $failover));
my $n0 = $ha->loadgen_confirms($load);
$ha->loadgen_wait_confirms($load, $n0 + 100, 60);

# the old primary comes back while the load goes on
my $logpos = -s $ha->node_log($old);
$ha->start_node($old);
my $rejoin = $ha->wait_for_state($old, 'secondary', timeout => 120);
$ha->figure('rejoin_seconds', sprintf('%.2f', $rejoin));
my $log = PostgreSQL::Test::Utils::slurp_file($ha->node_log($old), $logpos);
like($log, qr/Rewinding PostgreSQL to follow new primary/, "node$old was rewound to follow node$new");
# pg_autoctl logs pg_rewind's output line by line
my ($rewind) = $log =~ /(servers diverged at WAL location \S+|no rewind required)/;
ok(defined $rewind && $log =~ /\bDone!|no rewind required/, 'pg_rewind finished: ' . ($rewind // 'no'));
$ha->figure('pg_rewind', defined $rewind ? $rewind =~ s/ /_/gr : 'none');
unlike($log, qr{bin/pg_basebackup}, 'no new base backup was needed');

my $s = $ha->loadgen_stop($load);
my $sa = $ha->loadgen_stop($async);
is($s->{lost}, 0, 'quorum load: no confirmed message lost');
is($s->{duplicates}, 0, 'quorum load: no duplicates');
$ha->figure('async_lost', $sa->{lost});
$ha->wait_for_healthy(timeout => 120);

# every standby has replayed everything the primary wrote
$new = $ha->primary;
my $lsn = $ha->safe_psql($new, 'SELECT pg_current_wal_lsn()');
for my $n (grep { $_ != $new } 1 .. 3)
{
	my $deadline = QueueExtHA::deadline(60);
	my $ok = 0;
	while (time < $deadline)
	{
		my ($rc, $out) = $ha->psql($n, "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
		last if $ok = ($rc == 0 && $out eq 't');
		sleep 0.2;
	}
	ok($ok, "node$n replayed up to $lsn");
}

my $queues = q{SELECT queue, type, ready, unacked, delayed, total
                 FROM mq.queues ORDER BY queue};
my $groups = q{SELECT queue, group_name, sum(committed_offset), sum(end_offset)
                 FROM mq.consumer_groups GROUP BY 1, 2 ORDER BY 1, 2};
# the permanent ones: unlogged (non-durable queues) are not replicated
my $mqlog = q{SELECT c.oid::regclass, (SELECT count(*) FROM mq.mqlog_verify(c.oid))
                FROM pg_class c JOIN pg_am a ON a.oid = c.relam
               WHERE a.amname = 'mqlog' AND c.relpersistence = 'p' ORDER BY 1::text};
my %want = (
	queues => $ha->safe_psql($new, $queues),
	groups => $ha->safe_psql($new, $groups),
	mqlog => $ha->safe_psql($new, $mqlog));
like($want{queues}, qr/^c_keep\|classic\|500\|0\|0\|500$/m, 'c_keep keeps its 500 messages');
like($want{queues}, qr/^q_keep\|quorum\|200\|0\|0\|200$/m, 'q_keep keeps its 200 unacked messages');
like($want{groups}, qr/^s_keep\|g\|150\|400$/m, "s_keep's group keeps its committed offsets");
unlike($want{mqlog}, qr/\|[1-9]/, 'mq.mqlog_verify finds no problem on the primary');
# row counts of every mqlog table (same on all nodes)
my @rels = map { (split /\|/)[0] } split /\n/, $want{mqlog};
my $counts = join(' UNION ALL ', map { "SELECT '$_', count(*) FROM $_" } @rels);
$want{counts} = $ha->safe_psql($new, "$counts ORDER BY 1");

for my $n (grep { $_ != $new } 1 .. 3)
{
	my $who = $n == $old ? "node$n (the old primary)" : "node$n";
	is($ha->safe_psql($n, $queues), $want{queues}, "$who: mq.queues as on the primary");
	is($ha->safe_psql($n, $groups), $want{groups}, "$who: consumer group offsets as on the primary");
	is($ha->safe_psql($n, $mqlog), $want{mqlog}, "$who: mq.mqlog_verify: no problem in any mqlog table");
	is($ha->safe_psql($n, "$counts ORDER BY 1"), $want{counts}, "$who: every mqlog table has the primary's rows");
}

$ha->down;
done_testing();
