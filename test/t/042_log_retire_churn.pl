# Message log retirement while queues are deleted and declared again: a
# stream and a classic queue hold messages in old segments ("keep",
# "keepq") while a stream and a classic queue beside them are deleted,
# declared, and published to (single messages and batches), segments roll
# over every few hundred messages and the worker tries to retire every
# 100 ms.  Retirement drops the segments below the oldest one any queue
# refers to.  A queue's answer changes from moment to moment: a classic
# queue with a publish in progress answers 0 ("keep everything"), a real
# segment once it committed.  Until 2026-12-02 the pass folded the answers
# with Min(m, queue_min_segno(q)), a macro that evaluated the call twice:
# a first answer of 0 won the comparison and the second, higher one was
# kept, past keep's segment, and keep's messages were gone.  A script of
# these rounds lost keep in 3 of 5 tries (after 4 to 30 rounds); this test
# is that workload in 12 rounds, and did not hit the race in the two runs
# made against the old code, so it guards retirement under churn rather
# than reproducing that race every time.  Checked: keep and keepq keep
# every message, and retirement still drops segments once they are free.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = qe_node('churn', conf => qq{
max_connections = 40
log_statement = none
mq.maintenance_naptime = '50ms'
mq.retire_interval = '100ms'
mq.launcher_naptime = '200ms'
mq.lane_segment_size = '32kB'
mq.segment_size = '128kB'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('keep', type => 'stream', arguments => '{"partitions": 4}');
SELECT mq.queue_declare('keepq');
SELECT count(*) FROM mq.send_batch('keep', ARRAY(SELECT 'keep ' || i FROM generate_series(1, 400) i));
SELECT count(*) FROM mq.send_batch('keepq', ARRAY(SELECT 'keepq ' || i FROM generate_series(1, 400) i));
CREATE FUNCTION ch_cycle(i int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN PERFORM mq.queue_delete('ch_s' || i); EXCEPTION WHEN undefined_object THEN NULL; END;
  BEGIN PERFORM mq.queue_delete('ch_c' || i); EXCEPTION WHEN undefined_object THEN NULL; END;
  PERFORM mq.queue_declare('ch_s' || i, type => 'stream', arguments => '{"partitions": 4}');
  PERFORM mq.queue_declare('ch_c' || i);
EXCEPTION WHEN undefined_object OR unique_violation OR object_not_in_prerequisite_state THEN NULL;
END $$;
SELECT ch_cycle(1);
});
my $first = $node->safe_psql('postgres', 'SELECT min(segno) FROM mq.cat_segment WHERE durable');

# Rounds as in the reproduction: delete both churn queues (with what was
# published to them) and declare them again, then publish single
# messages and batches to the stream, then single messages to the classic
# queue, with keep checked after every round.
my $rounds = $ENV{QE_CHURN_ROUNDS} || 12;
my $dir = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$dir/one.sql", "SELECT mq.send('ch_s1', md5(random()::text));\n");
PostgreSQL::Test::Utils::append_to_file("$dir/batch.sql",
	"SELECT count(*) FROM mq.send_batch('ch_s1', ARRAY(SELECT md5(random()::text) FROM generate_series(1, 100)));\n");
PostgreSQL::Test::Utils::append_to_file("$dir/classic.sql", "SELECT mq.send('ch_c1', md5(random()::text));\n");

sub pgbench_phase
{
	my ($script, $seconds) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			'pgbench', '-n', '-c', 4, '-j', 2, '-T', $seconds, '-f', "$dir/$script",
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'<', \undef, '>', \$out, '2>', \$err);
	my ($n) = $out =~ /number of transactions actually processed: (\d+)/;
	return $n // 0;
}

sub keep_count
{
	my ($out, $err) = ('', '');
	$node->psql('postgres', q{
SELECT sum((SELECT count(*) FROM mq.read('keep', p, 0, 1000))) FROM generate_series(0, 3) p},
		stdout => \$out, stderr => \$err);
	return ($out, $err);
}

my ($sent, $lost_in) = (0, 0);
for my $round (1 .. $rounds)
{
	$node->safe_psql('postgres', 'SELECT ch_cycle(1); CHECKPOINT;');
	$sent += pgbench_phase('one.sql', 3);
	$sent += 100 * pgbench_phase('batch.sql', 3);
	$sent += pgbench_phase('classic.sql', 2);
	my ($n) = keep_count();
	if ($n ne '400')
	{
		$lost_in = $round;
		last;
	}
}
note("$sent messages published to the churn queues");
ok($sent > 0, 'the churn queues were published to');
is($lost_in, 0, 'keep had all its messages after every round');

my ($out, $err) = keep_count();
is($out, '400', 'every message of the stream kept its body');
is($err, '', 'no message of the stream is missing from the log');
($out, $err) = ('', '');
$node->psql('postgres', q{
BEGIN;
SELECT count(*) FROM mq.consume('keepq', 1000);
ROLLBACK;}, stdout => \$out, stderr => \$err);
is($out, '400', 'every message of the classic queue kept its body');
is($err, '', 'no message of the classic queue is missing from the log');

# and retirement was not simply off: with the queues gone, the segments go
$node->safe_psql('postgres', q{
SELECT mq.queue_delete(q) FROM unnest(ARRAY['keep', 'keepq', 'ch_s1', 'ch_c1']) q});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) <= 2 FROM mq.cat_segment WHERE durable AND segno >= $first"),
	'the segments are retired once no queue refers to them');
$node->stop;
done_testing();
