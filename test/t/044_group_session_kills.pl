# Consumer groups while their consumers' sessions are killed: 8 consumer
# loops read a 4-partition stream through two groups at once, each
# recording what it takes in a table and acking in the same transaction,
# while another session terminates one of their backends (pg_terminate_
# backend) every 0.3 s until both groups have settled everything.  The
# issue's rule: session end returns a group's deliveries at once, so the
# work done in the killed transaction is undone with them and redone by
# another consumer.
#	1. an ordered group: every message recorded exactly once, and each
#	   message group's messages in publish order;
#	2. a clustering group that nacks a fifth of its deliveries, with
#	   max_retries 2: every message recorded exactly once or dead-lettered,
#	   and the group's dead_lettered counts match %DLQ%;
#	3. no internal error (XX000) and no crashed backend in the server log.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;

my $groups = 64;
my $per_group = 40;
my $total = $groups * $per_group;
my $consumers = 8;

my $node = qe_node('kills', conf => qq{
max_connections = 40
log_line_prefix = '%m [%p] %e '
});
$node->safe_psql('postgres', qq{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('sk', 'stream', arguments => '{"partitions": 4}');
SELECT mq.group_declare('sk', 'og', start => 'earliest', ordered => true,
	retry_delays => '{100 ms}');
SELECT mq.group_declare('sk', 'cg', start => 'earliest', max_retries => 2,
	retry_delays => '{50 ms}');
CREATE TABLE rec (id bigserial, grp_name text, mgroup text, seq int, msg_id bigint,
	delivery_count int);

-- take up to 4, record them, hold them a moment, ack them: one transaction
CREATE FUNCTION sk_ordered(c text) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
	r record;
	ids bigint[] := '{}';
BEGIN
	FOR r IN SELECT * FROM mq.consume('sk', 4, group_name => 'og', consumer => c) LOOP
		INSERT INTO rec (grp_name, mgroup, seq, msg_id, delivery_count)
			VALUES ('og', r.message_group, convert_from(r.body, 'UTF8')::int, r.msg_id,
					r.delivery_count);
		ids := ids || r.msg_id;
	END LOOP;
	IF cardinality(ids) > 0 THEN
		PERFORM pg_sleep(0.02 + random() * 0.02);
		PERFORM mq.ack('sk', ids, group_name => 'og');
	END IF;
	RETURN cardinality(ids);
END \$\$;

-- the same, but a fifth of the deliveries fail (nack: a retry, then %DLQ%cg)
CREATE FUNCTION sk_nacking(c text) RETURNS int LANGUAGE plpgsql AS \$\$
DECLARE
	r record;
	n int := 0;
	ids bigint[] := '{}';
	bad bigint[] := '{}';
BEGIN
	FOR r IN SELECT * FROM mq.consume('sk', 4, group_name => 'cg', consumer => c) LOOP
		n := n + 1;
		IF random() < 0.2 THEN
			bad := bad || r.msg_id;
		ELSE
			INSERT INTO rec (grp_name, mgroup, seq, msg_id, delivery_count)
				VALUES ('cg', r.message_group, convert_from(r.body, 'UTF8')::int, r.msg_id,
						r.delivery_count);
			ids := ids || r.msg_id;
		END IF;
	END LOOP;
	IF n > 0 THEN
		PERFORM pg_sleep(0.02 + random() * 0.02);
	END IF;
	IF cardinality(ids) > 0 THEN
		PERFORM mq.ack('sk', ids, group_name => 'cg');
	END IF;
	IF cardinality(bad) > 0 THEN
		PERFORM mq.nack('sk', bad, group_name => 'cg');
	END IF;
	RETURN n;
END \$\$;
});
qe_publish_groups($node, 'sk', $groups, $per_group);

# the consumer loops: psql runs 100 calls, is killed or ends, and starts again
my $dir = PostgreSQL::Test::Utils::tempdir;
my $stop = "$dir/stop";
my %kids;
for my $i (1 .. $consumers)
{
	my $file = "$dir/consume$i.sql";
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh "SELECT sk_ordered('c$i');\nSELECT sk_nacking('c$i');\n" for 1 .. 50;
	close($fh);
	my $psql = join(' ', 'psql', '-X', '-q', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-f', $file);
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		exec('bash', '-c', "while [ ! -e '$stop' ]; do $psql >/dev/null 2>&1; sleep 0.05; done");
		exit 1;
	}
	$kids{$pid} = 1;
}

# the killer, while either group has something left to settle
my $kills = 0;
my $until = Time::HiRes::time() + 60;
while (Time::HiRes::time() < $until)
{
	Time::HiRes::sleep(0.3);
	my $left = $node->safe_psql('postgres', q{
SELECT sum(lag + in_flight + retrying) FROM mq.consumer_groups WHERE queue = 'sk'});
	last if $left == 0;
	$kills += $node->safe_psql('postgres', q{
SELECT count(*) FROM (
	SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity
	 WHERE query ~ 'sk_(ordered|nacking)' AND pid <> pg_backend_pid()
	 ORDER BY random() LIMIT 1) s
 WHERE t});
}
open(my $fh, '>', $stop) or die "$stop: $!";
close($fh);
is(qe_reap(\%kids, 120), 0, 'the consumer loops stopped');
diag "consumer backends terminated: $kills";
cmp_ok($kills, '>=', 5, 'consumers were killed while messages were left');

# drain what is left, without kills (retries are due within 100 ms)
my $idle = 0;
for (my $round = 0; $round < 600 && $idle < 3; $round++)
{
	my $n = $node->safe_psql('postgres',
		"SELECT sum(sk_ordered('d' || g)) + sum(sk_nacking('d' || g)) FROM generate_series(1, 8) g");
	$idle = $n == 0 ? $idle + 1 : 0;
	Time::HiRes::sleep(0.1) if $n == 0;
}
diag 'progress at the end: ' . $node->safe_psql('postgres', q{
SELECT string_agg(format('%s: committed %s, end %s, in flight %s, retrying %s, dead %s',
	group_name, sum_c, sum_e, inf, ret, dead), '; ')
  FROM (SELECT group_name, sum(committed_offset) sum_c, sum(end_offset) sum_e,
			   sum(in_flight) inf, sum(retrying) ret, sum(dead_lettered) dead
		  FROM mq.consumer_groups WHERE queue = 'sk' GROUP BY group_name) s});
diag 'redelivered records: ' . $node->safe_psql('postgres',
	"SELECT count(*) FROM rec WHERE delivery_count > 1");

# 1. the ordered group
is($node->safe_psql('postgres',
	"SELECT count(*), count(DISTINCT msg_id) FROM rec WHERE grp_name = 'og'"),
	"$total|$total", 'ordered group: every message recorded exactly once');
is(qe_groups_out_of_order($node, 'rec', 'mgroup', "grp_name = 'og'", $per_group),
	'0', 'ordered group: each message group in publish order');
is($node->safe_psql('postgres', q{
SELECT sum(lag), sum(in_flight), sum(retrying)
  FROM mq.consumer_groups WHERE queue = 'sk' AND group_name = 'og'}),
	'0|0|0', 'ordered group: all settled');

# 2. the nacking group: recorded once or dead-lettered, never both, never lost
my $dead = $node->safe_psql('postgres',
	q{SELECT count(*) FROM mq.browse('%DLQ%cg', 10000)});
is($node->safe_psql('postgres', qq{
SELECT count(*) + $dead, count(DISTINCT msg_id) = count(*),
	   count(*) FILTER (WHERE msg_id IN (SELECT (h.headers->>'x-dlq-origin-msg-id')::bigint
										   FROM mq.browse('%DLQ%cg', 10000) h))
  FROM rec WHERE grp_name = 'cg'}),
	"$total|t|0", 'nacking group: every message recorded once or dead-lettered');
is($node->safe_psql('postgres', q{
SELECT sum(dead_lettered), sum(lag), sum(in_flight), sum(retrying)
  FROM mq.consumer_groups WHERE queue = 'sk' AND group_name = 'cg'}),
	"$dead|0|0|0", 'nacking group: its dead_lettered counts what %DLQ%cg holds');
cmp_ok($dead, '>', 0, 'nacking group: some messages were dead-lettered');

# 3. the server log
my $log = slurp_file($node->logfile);
my @internal = $log =~ /^.* XX000 .*$/mg;
is(scalar(@internal), 0, 'no internal error in the server log')
  or diag join("\n", @internal[0 .. ($#internal < 4 ? $#internal : 4)]);
unlike($log, qr/terminated by signal/, 'no backend crashed');

done_testing();
