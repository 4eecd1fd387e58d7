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
CREATE TABLE got (body text, got_at timestamptz);
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
	check_after => '3 s', check_interval => '1 s', max_checks => 5, on_exhausted => 'rollback');
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
# undecided at the crash.
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
is($node->safe_psql('postgres', q{SELECT string_agg(convert_from(body, 'UTF8'), ',' ORDER BY 1)
	FROM mq.consume('dq', 100, auto_ack => true)}), 'ready1,ready2,ready3',
	'only the ready messages are deliverable at once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.half_messages WHERE state = 'pending'}),
	'8', 'eight undecided half messages');
sleep(1.5);

$node->stop('immediate');
$node->start;

# consume for up to 12 s (the last is due ~5 s after publish); record when
# each message arrived; ack it in the same transaction
my $deadline = time + 12;
while (time < $deadline)
{
	$node->safe_psql('postgres', q{
CREATE TEMP TABLE c AS SELECT msg_id, convert_from(body, 'UTF8') AS body, clock_timestamp() AS got_at
  FROM mq.consume('dq', 100, wait => '1 s');
INSERT INTO got SELECT body, got_at FROM c;
SELECT mq.ack('dq', ARRAY(SELECT msg_id FROM c));
});
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM got}), '30',
	'30 due delayed messages delivered after the crash');
is($node->safe_psql('postgres', q{SELECT count(DISTINCT body) FROM got}), '30',
	'each exactly once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got JOIN due_of USING (body)
	WHERE body LIKE 'early%' OR body LIKE 'd%'}), '30', 'and they are the due ones');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got JOIN due_of USING (body) WHERE got_at < due}),
	'0', 'none delivered early');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got JOIN due_of USING (body)
	WHERE body LIKE 'd%' AND got_at > due + interval '1 s'}),
	'0', 'those due after the restart delivered within 1 s of due');
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
$bg->query_safe(q{SELECT msg_id FROM mq.consume('dq', lease => '2 s')});
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'dq'}),
	'0/1', 'leased');
my $t0 = time;
$node->poll_query_until('postgres', q{SELECT ready = 1 AND unacked = 0 FROM mq.queues WHERE queue = 'dq'})
  or die 'lease did not expire';
my $el = time - $t0;
ok($el >= 1.5 && $el < 6, sprintf('lease returned to ready by the worker after %.1f s', $el));
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
is($node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres'}), $wpid, 'same worker still running');
ok($node->log_contains(qr/check of half message \d+ failed/, $logpos), 'the failed check is logged');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.consume('hq', 10)}), '0', 'slow half not delivered');

# 5. a terminated worker is restarted by the launcher (mq.launcher_naptime = 1 s)
$node->safe_psql('postgres', "SELECT pg_terminate_backend($wpid)");
$t0 = time;
$node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'queue_ext worker' AND datname = 'postgres' AND pid <> $wpid})
  or die 'worker not restarted';
$el = time - $t0;
ok($el < 5, sprintf('worker restarted after %.1f s', $el));
# and it works: a delayed message is delivered, a lease expires
$node->safe_psql('postgres', q{SELECT mq.send('dq', 'after', delay => '1 s')});
is($node->safe_psql('postgres', q{SELECT convert_from(body, 'UTF8') FROM mq.consume('dq', wait => '5 s', auto_ack => true)}),
	'after', 'delayed delivery works after the worker restart');

# 6. no worker stays in a database without the extension
$node->safe_psql('postgres', 'CREATE DATABASE noext');
sleep(3);
my $seen = 0;
for (1 .. 10)
{
	$seen += $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'queue_ext worker' AND datname = 'noext'});
	sleep(0.5);
}
ok($seen <= 2, "no worker stays in a database without the extension (seen in $seen of 10 samples)");

$node->stop;
done_testing();
