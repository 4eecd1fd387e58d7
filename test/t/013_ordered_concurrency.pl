# Ordered queue under 16 concurrent consumers (pgbench): 64 message groups
# of 20 messages each.  Every message is delivered and acked exactly once,
# the deliveries of each group come in publish order and never overlap (one
# at a time), and more than 4 consumers hold deliveries at the same time
# (the parallelism is the number of groups, not one).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $groups = 64;
my $per_group = 20;
my $total = $groups * $per_group;

my $node = PostgreSQL::Test::Cluster->new('ordered');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'queue_ext'
max_connections = 40
});
$node->start;
$node->safe_psql('postgres', qq{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('oq', arguments => '{"ordered": true}');
-- one row per delivery: id orders deliveries, xid finds this transaction's
CREATE TABLE olog (id bigserial, xid xid8 DEFAULT pg_current_xact_id(),
	msg_id bigint, grp text, seq int, client int,
	got_at timestamptz DEFAULT clock_timestamp(), acked_at timestamptz);
-- publish round robin over the groups, so that they interleave in the log
DO \$\$
BEGIN
	FOR s IN 1 .. $per_group LOOP
		FOR g IN 1 .. $groups LOOP
			PERFORM mq.send('oq', s::text, message_group => 'g' || g);
		END LOOP;
	END LOOP;
END \$\$;
});

# each transaction: take up to 4, hold them a moment, ack them, commit
$node->pgbench(
	'--no-vacuum --client=16 --jobs=4 --transactions=150',
	0,
	[qr{processed: 2400/2400}],
	[qr{^$}],
	'16 consumers on an ordered queue',
	{
		'013_consume' => q{
BEGIN;
INSERT INTO olog (msg_id, grp, seq, client)
	SELECT msg_id, message_group, convert_from(body, 'UTF8')::int, :client_id
	  FROM mq.consume('oq', 4, wait => '20 ms');
SELECT pg_sleep(0.003);
UPDATE olog SET acked_at = clock_timestamp() WHERE xid = pg_current_xact_id();
SELECT mq.ack('oq', ARRAY(SELECT msg_id FROM olog WHERE xid = pg_current_xact_id()));
COMMIT;
}
	});

# whatever pgbench left (its clients may stop before the queue is empty)
my $left = $node->safe_psql('postgres', q{
WITH c AS (SELECT msg_id, message_group, convert_from(body, 'UTF8')::int AS seq
			 FROM mq.consume('oq', 10000, auto_ack => true))
INSERT INTO olog (msg_id, grp, seq, client, acked_at)
SELECT msg_id, message_group, seq, -1, clock_timestamp() FROM c
RETURNING 1});
note "left after pgbench: " . scalar(() = $left =~ /1/g);

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT msg_id) FROM olog'),
	"$total|$total", 'every message delivered exactly once');
is($node->safe_psql('postgres',
	q{SELECT ready, unacked, total FROM mq.queues WHERE queue = 'oq'}),
	'0|0|0', 'all settled');

# per group: deliveries in publish order, 1..20
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (
	SELECT grp, array_agg(seq ORDER BY id) AS seqs FROM olog GROUP BY grp) s
 WHERE seqs <> (SELECT array_agg(i) FROM generate_series(1, 20) i)}),
	'0', 'every group delivered in publish order');

# one at a time: a group's next delivery starts after the previous ack
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (
	SELECT got_at, lag(acked_at) OVER (PARTITION BY grp ORDER BY id) AS prev_acked
	  FROM olog) s
 WHERE got_at < prev_acked}),
	'0', 'no two deliveries of a group overlap');

# parallelism: the most consumers holding deliveries at one moment
my $overlap = $node->safe_psql('postgres', q{
SELECT max(n) FROM (
	SELECT (SELECT count(DISTINCT b.client) FROM olog b
			 WHERE b.client >= 0 AND b.got_at <= a.got_at AND b.acked_at > a.got_at) AS n
	  FROM olog a WHERE a.client >= 0) s});
note "most consumers holding deliveries at once: $overlap";
cmp_ok($overlap, '>', 4, 'more than 4 consumers hold deliveries at the same time');

$node->stop;
done_testing();
