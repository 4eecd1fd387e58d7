# Physical copies of a broker (docs/operations.md, "Backup and restore"):
#  1. a pg_basebackup copy starts as a server of its own and serves:
#     what the primary held at the backup is there (the unacked message
#     ready again), and it publishes and consumes.
#  2. point-in-time recovery from a base backup and the WAL archive to a
#     time taken while publishers and consumers run gives a consistent
#     broker: every message published (committed) before the target and
#     not acked before it is there once, none acked before it is, and
#     mqlog_verify finds nothing wrong in any of the broker's tables.
#     Publishers and consumers record what they did in heap tables in the
#     same transactions (exactly-once bookkeeping), so the recovered
#     tables say what the recovered broker must hold.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# (no standby: quorum queues commit locally, warned once)
my $node = qe_node('pitrsrc', init => { allows_streaming => 1, has_archiving => 1 },
	conf => "mq.quorum_unavailable = wait\n");
$node->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('cq');
SELECT mq.queue_declare('qq', 'quorum');
CREATE TABLE pubs (q text, body text, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE acked (q text, body text, at timestamptz DEFAULT clock_timestamp());
WITH p AS (SELECT 'cq' AS q, 'b' || g AS body FROM generate_series(1, 5) g)
INSERT INTO pubs (q, body) SELECT q, body FROM p WHERE mq.send(q, body) IS NOT NULL;
});

# an unacked delivery at the time of the backup
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{SELECT mq.consume('cq', 1, lease => '1 hour')});

# 1. base backup copy: a server of its own (archiving off: it must not
# write into the primary's archive, which recovery below reads)
$node->backup('copy');
my $copy = PostgreSQL::Test::Cluster->new('pitrcopy');
$copy->init_from_backup($node, 'copy');
$copy->append_conf('postgresql.conf', "archive_mode = off\n");
$copy->start;
is($copy->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'cq'}),
	'5/0', 'copy: the five messages, the unacked one ready again');
is($copy->safe_psql('postgres', q{SELECT mq.send('cq', 'on-copy') IS NOT NULL;
		SELECT string_agg(convert_from(body, 'UTF8'), ',') FROM mq.consume('cq', 10, auto_ack => true)}),
	"t\nb1,b2,b3,b4,b5,on-copy", 'copy: publishes and consumes, every message once');
is($node->safe_psql('postgres', q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'cq'}),
	'4/1', 'the primary is untouched by the copy');
$copy->stop;
$holder->quit;

# 2. PITR: a base backup, then a load of publishers and consumers
$node->safe_psql('postgres', 'CHECKPOINT');
$node->backup('pitr');

my $seconds = 4;
my @load;
for my $q ('cq', 'qq')
{
	my $pub = $node->background_psql('postgres', on_error_stop => 0);
	$pub->query_until(qr/started/, qq{
\\echo started
DO \$\$
DECLARE
	i int := 0;
	deadline timestamptz := clock_timestamp() + interval '$seconds seconds';
BEGIN
	WHILE clock_timestamp() < deadline LOOP
		i := i + 1;
		PERFORM mq.send('$q', '$q-' || i);
		INSERT INTO pubs (q, body) VALUES ('$q', '$q-' || i);
		COMMIT;
	END LOOP;
END \$\$;
\\echo loaded
});
	push @load, $pub;

	my $con = $node->background_psql('postgres', on_error_stop => 0);
	$con->query_until(qr/started/, qq{
\\echo started
DO \$\$
DECLARE
	ids bigint[];
	deadline timestamptz := clock_timestamp() + interval '$seconds seconds';
BEGIN
	WHILE clock_timestamp() < deadline LOOP
		WITH c AS (SELECT msg_id, convert_from(body, 'UTF8') AS body
					 FROM mq.consume('$q', 3, lease => '1 hour')),
			 r AS (INSERT INTO acked (q, body) SELECT '$q', body FROM c)
		SELECT array_agg(msg_id) INTO ids FROM c;
		IF ids IS NOT NULL THEN
			PERFORM mq.ack('$q', ids);
		END IF;
		COMMIT;
		-- and one message left delivered, not acked, now and then
		PERFORM mq.consume('$q', 1, lease => '1 hour') WHERE random() < 0.05;
		COMMIT;
	END LOOP;
END \$\$;
\\echo loaded
});
	push @load, $con;
}

usleep(int($seconds / 2 * 1_000_000));
my $target = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
for my $s (@load)
{
	$s->query_until(qr/loaded/, '');
	$s->quit;
}
my $published = $node->safe_psql('postgres', 'SELECT count(*) FROM pubs');
my $seg = $node->safe_psql('postgres', q{SELECT pg_walfile_name(pg_switch_wal())});
ok($node->poll_query_until('postgres',
		qq{SELECT last_archived_wal >= '$seg' FROM pg_stat_archiver}),
	'the WAL up to the end of the load is archived');

my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($node, 'pitr', has_restoring => 1, standby => 0);
$pitr->append_conf('postgresql.conf', qq{
archive_mode = off
recovery_target_time = '$target'
recovery_target_action = 'promote'
});
$pitr->start;
ok($pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'recovered to the target time and promoted');

my $p = sub { $pitr->safe_psql('postgres', $_[0]) };
my ($before, $recovered) = split /\|/, $p->(qq{SELECT count(*) FILTER (WHERE at <= '$target') || '|' || count(*) FROM pubs});
is($before, $recovered, 'nothing published after the target is there');
cmp_ok($recovered, '>', 5, 'messages published during the load before the target are there');
cmp_ok($recovered, '<', $published, 'and the target was before the end of the load');

is($p->(q{SELECT count(*) FROM pg_class r, mq.mqlog_verify(r.oid)
		   WHERE r.relnamespace = 'mq_storage'::regnamespace AND r.relkind = 'r'
			 AND r.relam = (SELECT oid FROM pg_am WHERE amname = 'mqlog')}),
	'0', 'mqlog_verify finds nothing in any of the broker\'s tables');
is($p->(q{SELECT count(*) FROM (SELECT q, body FROM acked GROUP BY 1, 2 HAVING count(*) > 1) d}),
	'0', 'no message was acked twice before the target');

# drain: exactly what was published and not acked before the target
$p->(q{
CREATE TABLE got (q text, body text);
DO $$
DECLARE
	k int;
	w text;
	deadline timestamptz := clock_timestamp() + interval '60 seconds';
BEGIN
	FOREACH w IN ARRAY ARRAY['cq', 'qq'] LOOP
		LOOP
			INSERT INTO got SELECT w, convert_from(body, 'UTF8')
			  FROM mq.consume(w, 1000, auto_ack => true);
			GET DIAGNOSTICS k = ROW_COUNT;
			-- auto-acks settle at commit: one transaction would hold them
			-- all, and stop at mq.max_in_flight (65536) on a fast machine
			COMMIT;
			EXIT WHEN k = 0;
			IF clock_timestamp() > deadline THEN
				RAISE EXCEPTION 'drain did not end';
			END IF;
		END LOOP;
	END LOOP;
END $$;
});
is($p->(q{SELECT count(*) FROM got g JOIN acked a USING (q, body)}), '0',
	'no message both acked and delivered again');
is($p->(q{SELECT count(*) FROM (SELECT q, body FROM got GROUP BY 1, 2 HAVING count(*) > 1) d}), '0',
	'each message once');
is($p->(q{SELECT count(*) FROM
		   ((SELECT q, body FROM pubs EXCEPT SELECT q, body FROM acked)
			EXCEPT SELECT q, body FROM got) missing}), '0',
	'every message published and not acked before the target is there');
is($p->(q{SELECT count(*) FROM (SELECT q, body FROM got EXCEPT SELECT q, body FROM pubs) extra}), '0',
	'and nothing else');
note($p->(q{SELECT format('published before the target %s (of %s in all), acked %s, recovered and drained %s',
				(SELECT count(*) FROM pubs), } . $published . q{, (SELECT count(*) FROM acked),
				(SELECT count(*) FROM got))}));
is($p->(q{SELECT mq.send('cq', 'after') IS NOT NULL;
		  SELECT string_agg(convert_from(body, 'UTF8'), ',') FROM mq.consume('cq', 10, auto_ack => true)}),
	"t\nafter", 'the recovered broker serves');

my $log = slurp_file($pitr->logfile);
unlike($log, qr/TRAP:|PANIC:/, 'no crash in the recovered server\'s log');
done_testing();
