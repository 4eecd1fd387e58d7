# Settlement runs of a consumer group across a crash:
#  a consume call's deliveries and an ack call's settlements at consecutive
#  positions are recorded as DELIVERED_RUN / ACK_RUN records (one per run
#  within an entry-log page, queue.h).  A group consumes runs, acks part of
#  them (so the runs are split), nacks members of a delivered run (one for
#  at once and delivered again, one for an hour), holds more in flight, and
#  a backend is killed with SIGKILL.  After crash recovery exactly the
#  unacked ones come back, redelivered, with their delivery counts; no
#  acked one does; the one nacked for an hour waits.  Then a seek back and
#  a clean restart: the runs written after the seek replay the same way.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('runscrash', conf => qq{
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('s', 'g', start => 'earliest',
						retry_delays => ARRAY['1 ms']::interval[]);
SELECT count(*) FROM (SELECT mq.send('s', 'm' || i, "partition" => i % 2)
						FROM generate_series(0, 999) i) x;
CREATE TABLE got (msg_id bigint, body text, p int, o bigint, redelivered boolean,
				  dc int, phase text, done boolean NOT NULL DEFAULT false);
CREATE TABLE acked (body text, phase text);
-- what was acked before the crash
CREATE VIEW acked_before AS SELECT body FROM acked WHERE phase IN ('a', 'b', 'c');
-- the group's settlement records by kind (runs: 11 DELIVERED_RUN, 12 ACK_RUN)
CREATE FUNCTION records() RETURNS TABLE (kind bigint, n bigint, covered numeric)
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	CREATE TEMP TABLE IF NOT EXISTS recs (settlement int8, arg int8);
	TRUNCATE recs;
	FOR r IN SELECT c.relname FROM pg_class c, mq.cat_group g, mq.cat_queue q
			  WHERE q.name = 's' AND g.queue_id = q.id AND g.name = 'g'
				AND c.relnamespace = 'mq_storage'::regnamespace
				AND c.relname LIKE 'g' || q.id || '\_' || g.id || '\_%'
	LOOP
		EXECUTE format('INSERT INTO recs SELECT * FROM mq_storage.%I', r.relname);
	END LOOP;
	RETURN QUERY SELECT settlement >> 56, count(*),
						sum(CASE WHEN settlement >> 56 IN (11, 12) THEN arg ELSE 1 END)
				   FROM recs GROUP BY 1 ORDER BY 1;
END $$;
});

my $c = $node->background_psql('postgres');

# consume n in one call, recorded in got with phase
sub take
{
	my ($n, $phase) = @_;
	$c->query_safe(qq{
		INSERT INTO got SELECT msg_id, convert_from(body, 'UTF8'), "partition", "offset",
			   redelivered, delivery_count, '$phase'
		  FROM mq.consume('s', $n, group_name => 'g', lease => '1 hour');});
	return;
}

# ack what phase delivered, not acked yet, and cond selects (over got's
# columns), in a transaction of its own unless $in_txn
sub ack_where
{
	my ($phase, $cond, $in_txn) = @_;
	my ($begin, $commit) = $in_txn ? ('', '') : ('BEGIN;', 'COMMIT;');
	$c->query_safe(qq{
		SET client_min_messages = warning;
		$begin
		CREATE TEMP TABLE IF NOT EXISTS a (msg_id bigint, body text);
		TRUNCATE a;
		WITH u AS (UPDATE got SET done = true
					WHERE phase = '$phase' AND NOT done AND ($cond) RETURNING msg_id, body)
		INSERT INTO a SELECT * FROM u;
		INSERT INTO acked SELECT body, '$phase' FROM a;
		SELECT mq.ack('s', ARRAY(SELECT msg_id FROM a), group_name => 'g')
		 WHERE EXISTS (SELECT 1 FROM a);
		$commit});
	return;
}

# 1. a run of 300 delivered (partition 1 first: the highest lane), most acked in one call: split ACK runs
take(300, 'a');
ack_where('a', 'o % 7 NOT IN (3, 4)');
# 2. two unacked members of run a nacked: one at once (delivered again
#    below, a third delivery after the crash), one for an hour
my ($again, $hour) = split /\|/, $node->safe_psql('postgres', q{
	SELECT (SELECT body FROM got WHERE phase = 'a' AND p = 1 AND o = 3),
		   (SELECT body FROM got WHERE phase = 'a' AND p = 1 AND o = 4)});
$c->query_safe(qq{
	SELECT mq.nack('s', ARRAY(SELECT msg_id FROM got WHERE body = '$again'), group_name => 'g');
	SELECT mq.nack('s', ARRAY(SELECT msg_id FROM got WHERE body = '$hour'), delay => '1 hour',
				   group_name => 'g');});
$c->query_safe('SELECT pg_sleep(0.05)');
$c->query_safe('SELECT pg_sleep(0.05)');	# its retry delay: 1 ms
take(1, 'again');
is($node->safe_psql('postgres', q{SELECT body || ' ' || dc FROM got WHERE phase = 'again'}),
	"$again 2", 'the nacked member is delivered again at once');
# 3. a run wholly acked in the consuming transaction
$c->query_safe('BEGIN');
take(100, 'b');
ack_where('b', 'true', 1);
$c->query_safe('COMMIT');
# 4. a run in flight at the crash
take(150, 'c');
# 5. one acked in the middle of run c (an ACK inside a DELIVERED_RUN)
ack_where('c', 'p = 1 AND o = (SELECT min(o) + 10 FROM got WHERE phase = \'c\' AND p = 1)');

my %rec = map { my ($k, $n, $cov) = split /\|/; ($k => [ $n, $cov ]) }
  split /\n/, $node->safe_psql('postgres', 'SELECT * FROM records()');
ok(exists $rec{11} && exists $rec{12}, 'DELIVERED_RUN and ACK_RUN records were written');
is($rec{11}[1] + ($rec{6} ? $rec{6}[1] : 0), 551, 'the delivery records cover every delivery');
is($rec{12}[1] + ($rec{1} ? $rec{1}[1] : 0),
	$node->safe_psql('postgres', 'SELECT count(*) FROM acked'),
	'the ack records cover every ack');
ok($rec{11}[0] + ($rec{6} ? $rec{6}[0] : 0) < 60, "far fewer delivery rows than deliveries ($rec{11}[0] runs)");

# their delivery records reach disk with the next commit of any session
$node->safe_psql('postgres', 'CREATE TABLE flush_wal ()');

my $pid = $c->query_safe('SELECT pg_backend_pid()');
my $logpos = -s $node->logfile;
kill 'KILL', $pid;
eval { $c->quit; };
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains(qr/terminated by signal 9/, $logpos), 'crash recovery ran');

# consume everything left (bounded), acking it
sub drain
{
	my ($phase) = @_;
	$c = $node->background_psql('postgres');
	for (1 .. 100)
	{
		my $before = $node->safe_psql('postgres', "SELECT count(*) FROM got WHERE phase = '$phase'");
		take(100, $phase);
		ack_where($phase, 'true');
		last if $node->safe_psql('postgres', "SELECT count(*) FROM got WHERE phase = '$phase'") == $before;
	}
	$c->quit;
	return;
}
drain('after');

is($node->safe_psql('postgres', q{
	SELECT count(*) FROM got WHERE phase = 'after' AND body IN (SELECT body FROM acked_before)}),
	'0', 'no acked message is delivered again');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT body FROM got WHERE phase = 'after' GROUP BY 1 HAVING count(*) > 1) x}),
	'0', 'each message once after the crash');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM (SELECT 'm' || i FROM generate_series(0, 999) i
						  EXCEPT SELECT body FROM acked_before
						  EXCEPT SELECT '$hour'
						  EXCEPT SELECT body FROM got WHERE phase = 'after') x}), '0',
	'every message not acked before the crash comes back (but the one nacked for an hour)');
is($node->safe_psql('postgres', "SELECT count(*) FROM got WHERE phase = 'after' AND body = '$hour'"),
	'0', 'the message nacked for an hour waits');
is($node->safe_psql('postgres', q{SELECT retrying FROM mq.consumer_groups
	WHERE queue = 's' AND group_name = 'g' AND "partition" = 1}), '1',
	'and it is retrying');
# redelivered exactly those delivered before and not acked, with their counts
is($node->safe_psql('postgres', q{
	WITH before AS (SELECT body, count(*) n FROM got WHERE phase IN ('a', 'again', 'b', 'c')
					 AND body NOT IN (SELECT body FROM acked_before) GROUP BY 1),
		 after AS (SELECT body, redelivered, dc FROM got WHERE phase = 'after')
	SELECT count(*) FROM after LEFT JOIN before USING (body)
	 WHERE redelivered IS DISTINCT FROM (before.n IS NOT NULL)
		OR dc <> coalesce(before.n, 0) + 1}), '0',
	'after the crash: redelivered and delivery_count as before it');
is($node->safe_psql('postgres', qq{SELECT dc FROM got WHERE phase = 'after' AND body = '$again'}),
	'3', 'the member delivered twice before comes back with its third delivery');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got WHERE phase = 'after' AND redelivered}),
	$node->safe_psql('postgres', q{SELECT count(DISTINCT body) FROM got WHERE phase IN ('a', 'c')
		AND body NOT IN (SELECT body FROM acked_before)}) - 1,
	'the redelivered ones are the unacked ones of before (but the one nacked for an hour)');

# a seek back on partition 0, runs after it, a clean restart
$node->safe_psql('postgres', q{SELECT mq.seek('s', 'g', to_offset => 100, "partition" => 0)});
$c = $node->background_psql('postgres');
take(50, 'seek');
ack_where('seek', 'o % 3 = 0');
$c->quit;
$node->restart;
drain('restart');
is($node->safe_psql('postgres', q{
	SELECT string_agg(o::text || ':' || redelivered || ':' || dc, ',' ORDER BY o)
	  FROM got WHERE phase = 'restart' AND p = 0 AND o < 150}),
	$node->safe_psql('postgres', q{
	SELECT string_agg(o::text || ':true:2', ',' ORDER BY o)
	  FROM got WHERE phase = 'seek' AND o % 3 <> 0}),
	'after a seek and a restart: the unacked of the runs after the seek come back');
is($node->safe_psql('postgres', q{SELECT count(*) FROM got WHERE phase = 'restart' AND p = 0}),
	'384', 'and the rest of partition 0 from the seek on, once');

$node->stop;
done_testing();
