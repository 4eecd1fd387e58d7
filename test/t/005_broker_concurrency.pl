# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# broker: 4 producers and 4 consumers run concurrently; producers publish
# numbered bodies in transactions of which some ROLLBACK; consumers
# consume + record the body in a heap table + ack in ONE transaction, of
# which some ROLLBACK.  Invariant: every committed body is in done exactly
# once, no rolled-back body ever is.  Phase 2 repeats it with an immediate
# shutdown (kill -9 equivalent) in the middle of the load: committed acks are
# not redelivered, uncommitted ones are, no committed publish is lost.
#
# The load runs as two pgbench processes (4 producer clients, 4 consumer
# clients) whose scripts choose ROLLBACK at random; pgbench exits non-zero if
# any client hits an error.  (Feeding psql scripts through IPC::Run::start
# did not work: start() does not feed stdin until the harness is pumped, so
# the sessions sat idle and no load was produced.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

# (log_statement = none: the load runs tens of thousands of statements)
my $node = qe_node('broker', conf => qq{
max_connections = 40
log_statement = none
# tiny log segments and lane generations, so that the load crosses many of
# them: switching generations, retiring segments and dropping settled
# generations all happen under concurrency and across the crash
mq.segment_size = '128kB'
mq.lane_segment_size = '16kB'
mq.maintenance_naptime = '100ms'
mq.retire_interval = '500ms'
# crash recovery compares each replayed mqlog record with a page image
wal_consistency_checking = 'mqlog'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('conc');
CREATE TABLE done (body text);
CREATE TABLE sent (body text);
CREATE SEQUENCE body_seq;
});

my $duration = $ENV{QE_BROKER_SECONDS} || 20;
my $dir = PostgreSQL::Test::Utils::tempdir;

# The load runs as pgbench scripts (time-bounded, random choices, a client
# that hits an error aborts and makes pgbench exit non-zero).
#
# Producer transaction: publish body "ph<phase>-<n>" (n from a sequence, so
# unique) and record it in sent, in the same transaction; one in 5 (at
# random) rolls back.
sub producer_script
{
	my ($phase) = @_;
	return qq{\\set r random(1, 5)
BEGIN;
SELECT nextval('body_seq') AS n \\gset
SELECT mq.send('conc', ('ph$phase-' || :n)::text);
INSERT INTO sent VALUES ('ph$phase-' || :n);
\\if :r = 1
ROLLBACK;
\\else
COMMIT;
\\endif
};
}

# Consumer transaction: consume up to 5, record their bodies in done, ack
# them, all in one transaction; one in 4 (at random) rolls back.
my $consumer_script = q{\set r random(1, 4)
BEGIN;
CREATE TEMP TABLE IF NOT EXISTS got (msg_id bigint, body text);
DELETE FROM got;
INSERT INTO got SELECT msg_id, convert_from(body, 'UTF8') FROM mq.consume('conc', 5, wait => '200 ms', lease => '5 min');
INSERT INTO done SELECT body FROM got;
SELECT mq.ack('conc', ARRAY(SELECT msg_id FROM got));
\if :r = 1
ROLLBACK;
\else
COMMIT;
\endif
};

# Start 4 producers and 4 consumers (two pgbench runs of 4 clients each)
# for $seconds; returns the handles and the stderr file names.
sub start_load
{
	my ($phase, $seconds) = @_;
	my (@h, @err);
	for my $role ('producer', 'consumer')
	{
		my $script = "$dir/$role$phase.sql";
		PostgreSQL::Test::Utils::append_to_file($script,
			$role eq 'producer' ? producer_script($phase) : $consumer_script);
		my $out = "$dir/$role$phase.out";
		my $err = "$dir/$role$phase.err";
		local $ENV{PGOPTIONS} = '-c client_min_messages=warning';
		push @h, IPC::Run::start(
			[
				'pgbench', '-n', '-c', '4', '-j', '4', '-T', $seconds,
				'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
			],
			'<', \undef, '>', $out, '2>', $err,
			IPC::Run::timeout($seconds + $PostgreSQL::Test::Utils::timeout_default));
		push @err, $err;
	}
	return (\@h, \@err);
}

# wait for the load programs to exit (they end by themselves)
sub finish_load
{
	my ($h) = @_;
	my @ok;
	for my $run (@$h)
	{
		my $ok = eval { $run->finish; 1 };
		if (!$ok)
		{
			$run->kill_kill;
			push @ok, 0;
		}
		else
		{
			push @ok, $run->result == 0 ? 1 : 0;
		}
	}
	return @ok;
}

# The load clients have disconnected, but their backends may still be
# exiting (a backend ends its session, and so releases its leases, after its
# client has gone): wait until no other client backend is left.
sub wait_sessions_gone
{
	$node->poll_query_until('postgres', q{
SELECT count(*) = 0 FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()})
	  or die 'load sessions did not end';
}

# drain what is left, exactly like a consumer (with commit)
sub drain
{
	for my $round (1 .. 1000)
	{
		my $n = $node->safe_psql('postgres', q{
BEGIN;
CREATE TEMP TABLE got AS SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('conc', 1000, lease => '5 min');
INSERT INTO done SELECT body FROM got;
SELECT mq.ack('conc', ARRAY(SELECT msg_id FROM got));
COMMIT;
});
		return if $n eq '0';
	}
	die 'queue did not drain';
}

sub check_invariant
{
	my ($label) = @_;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT body FROM done GROUP BY body HAVING count(*) > 1) d'),
		'0', "$label: no body acked twice");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM done d WHERE NOT EXISTS (SELECT 1 FROM sent s WHERE s.body = d.body)'),
		'0', "$label: no rolled-back body delivered");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM sent s WHERE NOT EXISTS (SELECT 1 FROM done d WHERE d.body = s.body)'),
		'0', "$label: every committed body delivered");
	my ($nsent, $ndone) = split /\|/, $node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM sent), (SELECT count(*) FROM done)');
	is($ndone, $nsent, "$label: counts match ($nsent)");
	is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'conc'}),
		'0/0', "$label: queue empty");
}

# ---- phase 1: steady load for $duration seconds ----
my ($h, $err) = start_load(1, $duration);
my @ok = finish_load($h);
for my $i (0 .. 1)
{
	ok($ok[$i], "phase 1: load client $i ran without errors")
	  or diag(PostgreSQL::Test::Utils::slurp_file($err->[$i]));
}
# sessions ended: their leases are released at session end
wait_sessions_gone();
drain();
check_invariant('phase 1');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM sent'), '>', 100,
	'phase 1: some load was produced');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM done'), '>', 100,
	'phase 1: some load was consumed');

# ---- phase 2: immediate shutdown in the middle of the load ----
$node->safe_psql('postgres', 'TRUNCATE done, sent');
($h, $err) = start_load(2, 2 * $duration);
sleep($duration / 2);
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM sent'), '>', 0,
	'phase 2: load running before the crash');
$node->stop('immediate');
finish_load($h);    # the clients fail when the server goes away
$node->start;
wait_sessions_gone();
drain();
check_invariant('phase 2 (after crash)');

$node->stop;
done_testing();
