# pg_dump -Fc / pg_restore and pg_dumpall | psql of a broker, through
# mq.export() before the dump and mq.import() after the restore
# (docs/operations.md, "Backup and restore"):
#  a database with exchanges, bindings, classic (with priorities), quorum
#  and stream queues, a clustering and a broadcast group with acked
#  offsets, ready, unacked (delivered, not acked, its session still
#  open), delayed and half messages is dumped both ways into fresh
#  servers.  The topology is identical, every message not acked is there
#  once (the unacked one ready), the delayed one due at the same time, the
#  half one pending, the groups at their offsets; draining each restored
#  broker gives exactly what draining the source gives.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# (a single server: quorum queues commit locally, warned once)
my $src = qe_node('dumpsrc', conf => "mq.quorum_unavailable = wait\n");
$src->safe_psql('postgres', 'CREATE DATABASE broker');
$src->safe_psql('broker', q{
SET client_min_messages = warning;
CREATE EXTENSION queue_ext;
CREATE ROLE app;
SELECT mq.exchange_declare('ex_topic', 'topic');
SELECT mq.exchange_declare('ex_fan', 'fanout', alternate_exchange => 'ex_topic');
SELECT mq.queue_declare('qc');
SELECT mq.queue_declare('qq', 'quorum');
SELECT mq.queue_declare('qp', arguments => '{"x-max-priority": 5}');
SELECT mq.queue_declare('st', 'stream', arguments => '{"partitions": 2}');
SELECT mq.bind('qc', 'ex_topic', 'a.#');
SELECT mq.bind('qq', 'ex_fan');
SELECT mq.bind('st', 'ex_topic', 's.*');
SELECT mq.grant('consume', 'queue', 'qc', 'app');
SELECT mq.consumer_declare('qc', 'worker', 7);
SELECT mq.group_declare('st', 'gc', start => 'earliest');
SELECT mq.group_declare('st', 'gb', mode => 'broadcast', start => 'earliest');
SELECT mq.publish('ex_topic', 'a.' || g, 'ready' || g, headers => jsonb_build_object('n', g),
				  key => 'k' || g, tag => 't') FROM generate_series(1, 5) g;
SELECT mq.publish('ex_fan', '', 'fan' || g) FROM generate_series(1, 3) g;
SELECT mq.send('qp', 'prio' || g, priority => g) FROM generate_series(1, 3) g;
SELECT mq.publish('ex_topic', 's.x', 'stream' || g, partition => g % 2,
				  message_group => 'm' || g) FROM generate_series(1, 8) g;
SELECT mq.send('qc', 'delayed', delay => '1 hour');
CREATE FUNCTION public.chk(bigint, jsonb, bytea) RETURNS text LANGUAGE sql AS $$SELECT 'unknown'$$;
SELECT mq.producer_group_declare('pg1', 'public.chk(bigint,jsonb,bytea)', check_after => '1 hour');
SELECT mq.publish_half('ex_topic', 'a.half', 'half1', 'pg1');
-- acked: ready1 from qc, the first messages of each group
SELECT mq.ack('qc', ARRAY(SELECT msg_id FROM mq.consume('qc', 1)));
SELECT mq.ack('st', ARRAY(SELECT msg_id FROM mq.consume('st', 3, group_name => 'gc')),
			  group_name => 'gc');
SELECT mq.ack('st', ARRAY(SELECT msg_id FROM mq.consume('st', 1, group_name => 'gb', consumer => 'c1')),
			  group_name => 'gb', consumer => 'c1');
SELECT mq.ack('st', ARRAY(SELECT msg_id FROM mq.consume('st', 6, group_name => 'gb', consumer => 'c2')),
			  group_name => 'gb', consumer => 'c2');
-- acked out of order: of the next three, gc and c2 ack the last two only
CREATE TEMP TABLE t3 AS SELECT msg_id, row_number() OVER () AS rn FROM mq.consume('st', 3, group_name => 'gc');
SELECT mq.ack('st', ARRAY(SELECT msg_id FROM t3 WHERE rn > 1), group_name => 'gc');
CREATE TEMP TABLE t4 AS SELECT msg_id, row_number() OVER () AS rn
  FROM mq.consume('st', 3, group_name => 'gb', consumer => 'c2');
SELECT mq.ack('st', ARRAY(SELECT msg_id FROM t4 WHERE rn > 1), group_name => 'gb', consumer => 'c2');
});

# unacked: ready2 delivered to a session that stays open
my $holder = $src->background_psql('broker');
$holder->query_safe(q{SELECT mq.consume('qc', 1, lease => '1 hour')});
is($src->safe_psql('broker', q{SELECT unacked FROM mq.queues WHERE queue = 'qc'}), '1',
	'source: one message delivered and not acked');

# a second database whose broker is exported while publishers (a third of
# the messages delayed by 300 ms, so timers fire during the export) and
# consumers run; they book what they did in heap tables in the same
# transactions, and the export's transaction records from them, in its
# snapshot, what the restored queue must hold.  The load runs until the
# test stops it (table stop), not for a fixed time: the export is taken
# once messages were published and acked, a message delayed by 20 s is
# published just before it (so that a timer is armed in its snapshot
# however slowly the load's own run), and the load is stopped only after
# it published more (on a loaded machine a fixed sleep saw none of it)
$src->safe_psql('postgres', 'CREATE DATABASE loaded');
# (the queue in the extension's transaction: a worker that starts between
# the two and loads its topology then may never see the queue, and drops
# its timers unfired, a problem of the worker this test is not about)
$src->safe_psql('loaded', q{
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('lq');
COMMIT;
CREATE TABLE pubs (body text);
CREATE TABLE acked (body text);
CREATE TABLE stop ();
});
my @load;
my $pub = $src->background_psql('loaded', on_error_stop => 0);
$pub->query_until(qr/started/, q{
\echo started
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '5 minutes';
	i int := 0;
BEGIN
	WHILE clock_timestamp() < deadline AND NOT EXISTS (SELECT FROM stop) LOOP
		i := i + 1;
		PERFORM mq.send('lq', 'l' || i, delay => CASE WHEN i % 3 = 0 THEN interval '300 ms' END);
		INSERT INTO pubs VALUES ('l' || i);
		COMMIT;
	END LOOP;
END $$;
\echo loaded
});
push @load, $pub;
my $con = $src->background_psql('loaded', on_error_stop => 0);
$con->query_until(qr/started/, q{
\echo started
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '5 minutes';
	ids bigint[];
BEGIN
	WHILE clock_timestamp() < deadline AND NOT EXISTS (SELECT FROM stop) LOOP
		WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS body FROM mq.consume('lq', 3)),
			 r AS (INSERT INTO acked SELECT body FROM c)
		SELECT array_agg(msg_id) INTO ids FROM c;
		IF ids IS NOT NULL THEN
			PERFORM mq.ack('lq', ids);
		END IF;
		COMMIT;
	END LOOP;
END $$;
\echo loaded
});
push @load, $con;
$src->poll_query_until('loaded',
	q{SELECT (SELECT count(*) FROM pubs) >= 20 AND EXISTS (SELECT FROM acked)})
  or die 'the load published or acked nothing';
$src->safe_psql('loaded', q{
SELECT mq.send('lq', 'd-final'::text, delay => interval '20 seconds');
INSERT INTO pubs VALUES ('d-final');});
my $pubs_before = $src->safe_psql('loaded', 'SELECT count(*) FROM pubs');
my $loaded_export = $src->safe_psql('loaded', q{
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT mq.export();
CREATE TABLE expected AS SELECT body FROM pubs EXCEPT ALL SELECT body FROM acked;
CREATE TABLE acked_then AS SELECT body FROM acked;
COMMIT;});
$src->poll_query_until('loaded', qq{SELECT count(*) > $pubs_before FROM pubs})
  or die 'the load published nothing after the export';
$src->safe_psql('loaded', 'INSERT INTO stop DEFAULT VALUES');
for my $s (@load)
{
	$s->query_until(qr/loaded/, '');
	$s->quit;
}
my ($in_export, $in_expected, $published_all, $delayed) = split /\|/, $src->safe_psql('loaded',
	q{SELECT (SELECT count(*) FROM mq.export_message) || '|' || (SELECT count(*) FROM expected)
			 || '|' || (SELECT count(*) FROM pubs) || '|'
			 || (SELECT count(*) FROM mq.export_message WHERE state = 'delayed')});
cmp_ok($delayed, '>', 0, 'export under load: timers were armed at its snapshot');
is($loaded_export, $in_export, 'export under load: the count it returns');
cmp_ok($in_expected, '>', 0, 'export under load: it holds messages');
cmp_ok($in_expected, '<', $published_all, 'export under load: publishing went on after it');
note("export under load: $in_export exported ($delayed delayed), $published_all published in all");

# export (refused outside REPEATABLE READ), then both dumps
my ($ret, $out, $err) = $src->psql('broker', 'SELECT mq.export()');
like($err, qr/needs a REPEATABLE READ/, 'export refuses READ COMMITTED');
is($src->safe_psql('broker', q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT mq.export(); COMMIT;}),
	'20', 'export: 4 (one unacked) + 3 + 3 ready, 8 stream, 1 delayed, 1 half');

my $tmp = PostgreSQL::Test::Utils::tempdir;
$src->command_ok(['pg_dump', '-Fc', '-f', "$tmp/broker.dump", '-d', $src->connstr('broker')],
	'pg_dump -Fc');
$src->command_ok(['pg_dump', '-Fc', '-f', "$tmp/loaded.dump", '-d', $src->connstr('loaded')],
	'pg_dump -Fc of the database exported under load');
$src->command_ok(['pg_dumpall', '-f', "$tmp/all.sql", '-d', $src->connstr('postgres')],
	'pg_dumpall');

my $topology = q{
SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s', exchange, type, durable, alternate_exchange,
						 arguments, owner, predeclared), E'\n' ORDER BY exchange) FROM mq.exchanges;
SELECT string_agg(format('%s|%s|%s|%s', exchange, queue, binding_key, arguments), E'\n'
				  ORDER BY exchange, queue, binding_key) FROM mq.bindings;
SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s|%s|%s', queue, type, durable,
						 ready + coalesce(unacked, 0), delayed, total, arguments, partitions,
						 last_offset, retention), E'\n' ORDER BY queue) FROM mq.queues;
SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s', queue, group_name, mode, partition, consumer,
						 committed_offset, end_offset), E'\n'
				  ORDER BY queue, group_name, consumer, partition) FROM mq.consumer_groups;
SELECT string_agg(format('%s|%s|%s', c.name, k.consumer, k.prefetch), ',')
  FROM mq.cat_consumer k JOIN mq.cat_queue c ON c.id = k.queue_id;
SELECT string_agg(format('%s|%s|%s', c.name, g.grantee::regrole, g.privilege), ',' ORDER BY 1)
  FROM mq.cat_grant g JOIN mq.cat_queue c ON g.object_kind = 'q' AND c.id = g.object_id;
SELECT string_agg(format('%s|%s|%s|%s', producer_group, exchange, routing_key, state), ',')
  FROM mq.half_messages;
SELECT string_agg(format('%s|%s|%s', c.name, t.lane, t.due), ',')
  FROM mq.timer t JOIN mq.cat_queue c ON c.id = t.queue_id;
};
# what the source shows, the unacked message counted as ready
my $want_topology = $src->safe_psql('broker', $topology);

# draining a broker: every classic and quorum queue, each group and
# broadcast consumer, each message as body|exchange|routing_key|headers|
# key|tag|group|partition|published_at, in delivery order per queue
my $drain = q{
CREATE TEMP TABLE got (who text, n serial, m text);
DO $$
DECLARE
	w text;
	k int;
	deadline timestamptz := clock_timestamp() + interval '60 seconds';
BEGIN
	FOREACH w IN ARRAY ARRAY['qc', 'qq', 'qp', 'st/gc', 'st/gb/c1', 'st/gb/c2', 'st/gb/c3'] LOOP
		LOOP
			INSERT INTO got (who, m)
			SELECT w, format('%s|%s|%s|%s|%s|%s|%s|%s|%s', convert_from(c.body, 'UTF8'),
							 c.exchange, c.routing_key, c.headers, c.key, c.tag,
							 c.message_group, c.partition, c.published_at)
			  FROM mq.consume(split_part(w, '/', 1), 100, auto_ack => true,
							  group_name => nullif(split_part(w, '/', 2), ''),
							  consumer => nullif(split_part(w, '/', 3), '')) c;
			GET DIAGNOSTICS k = ROW_COUNT;
			EXIT WHEN k = 0;
			IF clock_timestamp() > deadline THEN
				RAISE EXCEPTION 'drain did not end';
			END IF;
		END LOOP;
	END LOOP;
END $$;
SELECT string_agg(who || ': ' || m, E'\n' ORDER BY who, n) FROM got;
};

my %restored;

# pg_restore into a fresh server
$restored{pg_restore} = qe_node('dumpdst', conf => "mq.quorum_unavailable = wait\n");
$restored{pg_restore}->safe_psql('postgres', 'CREATE ROLE app; CREATE DATABASE broker');
$restored{pg_restore}->command_ok(['pg_restore', '-d', $restored{pg_restore}->connstr('broker'),
	"$tmp/broker.dump"], 'pg_restore into a fresh server');
$restored{pg_restore}->safe_psql('postgres', 'CREATE DATABASE loaded');
$restored{pg_restore}->command_ok(['pg_restore', '-d', $restored{pg_restore}->connstr('loaded'),
	"$tmp/loaded.dump"], 'pg_restore of the database exported under load');

# pg_dumpall | psql into another
$restored{pg_dumpall} = qe_node('dumpall', conf => "mq.quorum_unavailable = wait\n");
$restored{pg_dumpall}->command_ok(['psql', '-X', '-q', '-d', $restored{pg_dumpall}->connstr('postgres'),
	'-f', "$tmp/all.sql"], 'psql < pg_dumpall');

for my $how (sort keys %restored)
{
	my $node = $restored{$how};

	is($node->safe_psql('broker', q{SELECT count(*) FROM mq.cat_queue}), '0',
		"$how: before mq.import() the restored broker is empty");
	is($node->safe_psql('broker', 'SELECT mq.import()'), '20', "$how: mq.import()");
	is($node->safe_psql('broker', q{SELECT count(*) FROM mq.export_message}), '0',
		"$how: the export tables are emptied");
	is($node->safe_psql('broker', $topology), $want_topology,
		"$how: topology, counts, group offsets, half and delayed messages as in the source");
	is($node->safe_psql('broker', q{SELECT count(*) FROM pg_class r, mq.mqlog_verify(r.oid)
			WHERE r.relnamespace = 'mq_storage'::regnamespace AND r.relkind = 'r'
			  AND r.relam = (SELECT oid FROM pg_am WHERE amname = 'mqlog')}), '0',
		"$how: mqlog_verify finds nothing in the restored broker's tables");
	($ret, $out, $err) = $node->psql('broker', 'SELECT mq.import()');
	like($err, qr/needs a database whose broker is empty|nothing to import/,
		"$how: a second import is refused");
}

# drain the source (the holder's session ends first: its delivery is ready again)
$holder->quit;
my $deadline = time + 30;
sleep 0.1 while $src->safe_psql('broker', q{SELECT unacked FROM mq.queues WHERE queue = 'qc'}) ne '0'
  && time < $deadline;
my $want = $src->safe_psql('broker', $drain);
like($want, qr/^qc: ready2\|/m, 'source drain: the unacked message first');
# qc 4, qq 3, qp 3; of the stream's 8: gc 8 - 3 - 2, c1 8 - 1, c2 8 - 6 - 1
# (two were left, it took both and acked one), c3 (new) 8
is(scalar(() = $want =~ /\n/g) + 1, 4 + 3 + 3 + 3 + 7 + 1 + 8,
	'source drain: every message not acked, per queue and consumer');

for my $how (sort keys %restored)
{
	my $got = $restored{$how}->safe_psql('broker', $drain);
	is($got, $want, "$how: each message once, with its exchange, key, headers, publish time, "
		  . 'in the same order, the groups from their offsets');
	is($restored{$how}->safe_psql('broker', q{SELECT mq.send('qc', 'new') IS NOT NULL;
			SELECT string_agg(convert_from(body, 'UTF8'), ',') FROM mq.consume('qc', 10, auto_ack => true)}),
		"t\nnew", "$how: the restored broker serves");
}

# the database exported under load: what was published and not acked in
# the export's snapshot, each once, and nothing else (delayed ones that
# were still timers come when due: wait for them, bounded)
for my $how (sort keys %restored)
{
	my $node = $restored{$how};

	is($node->safe_psql('loaded', 'SELECT mq.import()'), $in_export,
		"$how: import of the database exported under load");
	$node->safe_psql('loaded', 'CREATE TABLE got (body text)');
	my $deadline = time + 30;
	while (time < $deadline)
	{
		$node->safe_psql('loaded', q{INSERT INTO got SELECT convert_from(body, 'UTF8')
									  FROM mq.consume('lq', 1000, auto_ack => true)});
		last if $node->safe_psql('loaded', 'SELECT count(*) FROM got') >= $in_expected
		  && $node->safe_psql('loaded', q{SELECT delayed FROM mq.queues WHERE queue = 'lq'}) eq '0';
		usleep(100_000);
	}
	is($node->safe_psql('loaded', q{SELECT count(*) FROM
			((SELECT body FROM expected EXCEPT ALL SELECT body FROM got)
			 UNION ALL (SELECT body FROM got EXCEPT ALL SELECT body FROM expected)) d}),
		'0', "$how: under load: every message published and not acked in the export's snapshot, once");
	is($node->safe_psql('loaded', q{SELECT count(*) FROM got JOIN acked_then USING (body)}), '0',
		"$how: under load: none acked before the export");
}

done_testing();
