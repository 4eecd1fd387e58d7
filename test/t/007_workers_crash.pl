# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# background workers: delayed messages and undecided half messages survive
# an immediate shutdown (crash) and restart; after recovery every due
# delayed message is delivered exactly once and never early, nothing is
# lost, and undecided half messages are checked back and decided by the
# check function.  Also: workers in pg_stat_activity, lease expiry by the
# worker (no consume call), a slow check function cut by mq.check_timeout
# without killing the worker, a terminated worker restarted by the
# launcher, and no worker staying in a database without the extension.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = qe_node('workers_crash', conf => qq{
mq.launcher_naptime = '1s'
mq.check_timeout = '500ms'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('dq');
SELECT mq.queue_declare('hq');
CREATE TABLE due_of (body text PRIMARY KEY, due timestamptz);
CREATE TABLE got (body text, got_at timestamptz, call int);
CREATE FUNCTION chk(half_id bigint, headers jsonb, body bytea) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	IF convert_from(body, 'UTF8') LIKE 'slow%' THEN
		PERFORM pg_sleep(3);
		RETURN 'commit';
	END IF;
	IF convert_from(body, 'UTF8') LIKE 'hc%' THEN RETURN 'commit'; END IF;
	IF convert_from(body, 'UTF8') LIKE 'hr%' THEN RETURN 'rollback'; END IF;
	RETURN 'unknown';
END $$;
SELECT mq.producer_group_declare('pg1', 'chk(bigint,jsonb,bytea)',
	check_after => '20 s', check_interval => '1 s', max_checks => 5, on_exhausted => 'rollback');
});

# workers are visible
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres'})
  or die 'no queue_ext worker in database postgres';
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'queue_ext launcher'}),
	'1', 'one launcher in pg_stat_activity');

# 1. delayed messages: 10 due in 1 s (due before the crash, not consumed),
# 20 due 3-5 s after publish (due after the crash), 5 due in 1 hour,
# and 3 ready ones.  Half messages: 4 to commit, 4 to roll back, all
# undecided at the crash (their first check is 20 s after publish: a
# loaded machine reaches the crash long before).
$node->safe_psql('postgres', q{
INSERT INTO due_of SELECT 'early' || i, clock_timestamp() + interval '1 s' FROM generate_series(1, 10) i;
INSERT INTO due_of SELECT 'd' || i, clock_timestamp() + interval '3 s' + i * interval '100 ms'
  FROM generate_series(1, 20) i;
INSERT INTO due_of SELECT 'hour' || i, clock_timestamp() + interval '1 hour' FROM generate_series(1, 5) i;
INSERT INTO due_of SELECT 'ready' || i, clock_timestamp() FROM generate_series(1, 3) i;
SELECT count(mq.send('dq', body, deliver_at => due)) FROM due_of;
SELECT count(mq.publish_half('', 'hq', 'hc' || i, producer_group => 'pg1')) FROM generate_series(1, 4) i;
SELECT count(mq.publish_half('', 'hq', 'hr' || i, producer_group => 'pg1')) FROM generate_series(1, 4) i;
});
# What is due is deliverable, and nothing before its time.  On a loaded
# machine some of the 'early' ones may already be due here: the checks
# below count what was taken here with what comes after the crash.
$node->safe_psql('postgres', q{
CREATE TABLE got_before AS
  SELECT convert_from(body, 'UTF8') AS body, clock_timestamp() AS got_at
    FROM mq.consume('dq', 100, auto_ack => true);
});
is($node->safe_psql('postgres', q{SELECT string_agg(body, ',' ORDER BY body) FROM got_before
	WHERE body LIKE 'ready%'}), 'ready1,ready2,ready3', 'the ready messages are deliverable at once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got_before JOIN due_of USING (body)
	WHERE got_at < due OR body LIKE 'hour%'}), '0', '... and nothing before it is due');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.half_messages WHERE state = 'pending'}),
	'8', 'eight undecided half messages');
sleep(1.5);

$node->stop('immediate');
$node->start;

# consume until every due message came (the last is due ~5 s after
# publish; 120 s only guards against a hang); record in which call each
# arrived; ack it in the same transaction
my $deadline = time + 120;
my $call = 0;
while (time < $deadline)
{
	$call++;
	last if $node->safe_psql('postgres', qq{
CREATE TEMP TABLE c AS SELECT msg_id, convert_from(body, 'UTF8') AS body, clock_timestamp() AS got_at
  FROM mq.consume('dq', 100, wait => '1 s');
INSERT INTO got SELECT body, got_at, $call FROM c;
SELECT mq.ack('dq', ARRAY(SELECT msg_id FROM c));
SELECT (SELECT count(*) FROM got) + (SELECT count(*) FROM got_before WHERE body NOT LIKE 'ready%') >= 30;
}) =~ /t$/;
}
my $all = q{(SELECT body, got_at FROM got UNION ALL
			 SELECT body, got_at FROM got_before WHERE body NOT LIKE 'ready%') a};
is($node->safe_psql('postgres', "SELECT count(*) FROM $all"), '30',
	'30 due delayed messages delivered, those not taken before the crash after it');
is($node->safe_psql('postgres', "SELECT count(DISTINCT body) FROM $all"), '30',
	'each exactly once');
is($node->safe_psql('postgres', "SELECT count(*) FROM $all JOIN due_of USING (body)
	WHERE body LIKE 'early%' OR body LIKE 'd%'"), '30', 'and they are the due ones');
is($node->safe_psql('postgres', "SELECT count(*) FROM $all JOIN due_of USING (body) WHERE got_at < due"),
	'0', 'none delivered early');
# after the restart a message is delivered by the first call after it is
# due: none came in a later call than one due after it
is($node->safe_psql('postgres', q{SELECT count(*) FROM got a JOIN due_of da USING (body),
	got b JOIN due_of db ON db.body = b.body WHERE da.due < db.due AND a.call > b.call}),
	'0', 'after the restart: delivered in the order they fell due');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('dq', 100)}), '0',
	'the 1-hour ones are still pending');
is($node->safe_psql('postgres', q{SELECT total FROM mq.queues WHERE queue = 'dq'}), '5',
	'and still in the queue');

# 2. half messages checked back after the crash
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM mq.half_messages WHERE state = 'pending'})
  or die 'half messages not decided after restart';
is($node->safe_psql('postgres', q{SELECT string_agg(state || ':' || decided_by || ':' || n, ',' ORDER BY state)
	FROM (SELECT state, decided_by, count(*) n FROM mq.half_messages GROUP BY 1, 2) s}),
	'committed:check:4,rolled_back:check:4', 'halves decided by the check function');
is($node->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',' ORDER BY 1)
	FROM mq.consume('hq', 100, auto_ack => true)}), 'hc1,hc2,hc3,hc4',
	'committed halves delivered, rolled-back ones not');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('hq', 100)}), '0', 'delivered once');

# 3. lease expiry by the worker: nobody calls consume after the lease
$node->safe_psql('postgres', q{SELECT mq.send('dq', 'leased')});
my $bg = $node->background_psql('postgres');
# (the lease ends 2 s after the server's clock read just before the consume,
# or later: a return earlier than that, by the same clock, is early)
my $lease_from = $bg->query_safe(q{SELECT extract(epoch FROM clock_timestamp() + interval '2 s')});
$bg->query_safe(q{SELECT msg_id FROM mq.consume('dq', lease => '2 s')});
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'dq'}),
	'0/1', 'leased');
my $t0 = time;
ok($node->poll_query_until('postgres', q{SELECT ready = 1 AND unacked = 0 FROM mq.queues WHERE queue = 'dq'}),
	'the lease ran out with nobody calling consume: the worker made the message ready');
my $el = time - $t0;
my $ready_seen = $node->safe_psql('postgres', q{SELECT extract(epoch FROM clock_timestamp())});
cmp_ok($ready_seen, '>=', $lease_from, '... not before the lease ended');
note sprintf('figure: lease returned to ready %.1f s after it was taken', $el);
$bg->quit;
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') || ' ' || redelivered FROM mq.consume('dq', auto_ack => true)}),
	'leased true', 'redelivered');

# 4. a check function running longer than mq.check_timeout counts as
# unknown, is logged, and does not kill the worker
my $wpid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres'});
my $logpos = -s $node->logfile;
$node->safe_psql('postgres', q{
SELECT mq.producer_group_declare('pg_slow', 'chk(bigint,jsonb,bytea)',
	check_after => '0 s', check_interval => '1 s', max_checks => 2, on_exhausted => 'rollback');
SELECT mq.publish_half('', 'hq', 'slow1', producer_group => 'pg_slow');
});
$node->poll_query_until('postgres', q{SELECT state <> 'pending' FROM mq.half_messages WHERE producer_group = 'pg_slow'})
  or die 'slow half not decided';
is($node->safe_psql('postgres', q{SELECT state || ':' || decided_by || ':' || checks || ':' || last_outcome
	FROM mq.half_messages WHERE producer_group = 'pg_slow'}),
	'rolled_back:exhausted:2:unknown', 'timed-out checks count as unknown');
is($node->safe_psql('postgres', q{SELECT last_error FROM mq.half_messages WHERE producer_group = 'pg_slow'}),
	'the check function ran longer than mq.check_timeout (500 ms) and was canceled',
	'last_error of a timed-out check names mq.check_timeout');
is($node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres'}), $wpid, 'same worker still running');
ok($node->log_contains(qr/check of half message \d+ failed/, $logpos), 'the failed check is logged');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('hq', 10)}), '0', 'slow half not delivered');

# 5. a terminated worker is restarted by the launcher (mq.launcher_naptime = 1 s)
$node->safe_psql('postgres', "SELECT pg_terminate_backend($wpid)");
$t0 = time;
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres' AND pid <> $wpid}),
	'a terminated worker is started again by the launcher');
note sprintf('figure: worker restarted after %.1f s', time - $t0);
# and it works: a delayed message is delivered, a lease expires
$node->safe_psql('postgres', q{SELECT mq.send('dq', 'after', delay => '1 s')});
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') FROM mq.consume('dq', wait => '60 s', auto_ack => true)}),
	'after', 'delayed delivery works after the worker restart');

# 6. no worker stays in a database without the extension
# (the launcher may look at it again every naptime: a worker may come and
# go; one that stays would keep the same pid from one look to the next)
$node->safe_psql('postgres', 'CREATE DATABASE noext');
my $noext_workers = q{SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'noext'};
sleep(3);
my %stayed;
for my $i (1 .. 10)
{
	$stayed{$_}++ for grep { $_ ne '' } split /,/, $node->safe_psql('postgres', $noext_workers);
	sleep(0.5);
}
ok($node->poll_query_until('postgres', "SELECT ($noext_workers) = ''"),
	'no worker stays in a database without the extension');
my ($longest_seen) = sort { $b <=> $a } values %stayed;
note sprintf('figure: a worker in noext was seen in at most %d of 10 samples', $longest_seen // 0);

$node->stop;
done_testing();
