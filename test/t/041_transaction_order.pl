# A transaction's messages are delivered in their order even when a consumer
# takes them while that transaction commits.  The rows of one transaction
# stop being in progress at one moment, but a take classifies them one
# after another: without the take's hold (mqlog_hold_begin, src/am/), a
# take racing the commit could find the first message still in progress
# and the second committed, and deliver the second first (seen: 104
# inversions in 62,529 pairs of this load before the fix).  Producers
# publish two messages per transaction, each in a savepoint of its own (as
# the AMQP gateway does, so the rows have different subtransaction ids);
# one consumer records what it receives in order.  Every pair must arrive,
# first message first.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $seconds = $ENV{QE_ORDER_SECONDS} || 15;
my $node = qe_node('order', conf => "log_statement = none\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('ord');
CREATE SEQUENCE ord_seq;
CREATE TABLE got (i bigserial, body text);
});

my $dir = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$dir/prod.sql", q{SELECT nextval('ord_seq') AS n \gset
BEGIN;
SAVEPOINT a;
SELECT mq.send('ord', (:n || '-1')::text);
RELEASE a;
SAVEPOINT b;
SELECT mq.send('ord', (:n || '-2')::text);
RELEASE b;
COMMIT;
});
PostgreSQL::Test::Utils::append_to_file("$dir/cons.sql",
	q{INSERT INTO got (body) SELECT convert_from(body, 'UTF8') FROM mq.consume('ord', 10, wait => '100 ms', auto_ack => true);
});

# pgbench with a script for $secs seconds: the harness
sub load
{
	my ($script, $clients, $secs) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', ($clients > 1 ? 2 : 1), '-T', $secs,
			'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($secs + $PostgreSQL::Test::Utils::timeout_default));
}

my $prod = load("$dir/prod.sql", 4, $seconds);
my $cons = load("$dir/cons.sql", 1, $seconds + 2);
ok(eval { $prod->finish; 1 } && $prod->result == 0, 'producers ran without errors');
ok(eval { $cons->finish; 1 } && $cons->result == 0, 'consumer ran without errors');

# what the consumer's last poll left
for my $round (1 .. 100)
{
	last if $node->safe_psql('postgres', q{
WITH t AS (INSERT INTO got (body)
           SELECT convert_from(body, 'UTF8') FROM mq.consume('ord', 10000, auto_ack => true)
           RETURNING 1)
SELECT count(*) FROM t}) eq '0';
}

my ($sent, $pairs, $inverted, $dups) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT last_value FROM ord_seq),
       (SELECT count(*) FROM got a JOIN got b
          ON split_part(a.body, '-', 1) = split_part(b.body, '-', 1)
         AND a.body LIKE '%-1' AND b.body LIKE '%-2'),
       (SELECT count(*) FROM got a JOIN got b
          ON split_part(a.body, '-', 1) = split_part(b.body, '-', 1)
         AND a.body LIKE '%-1' AND b.body LIKE '%-2' AND a.i > b.i),
       (SELECT count(*) FROM (SELECT body FROM got GROUP BY body HAVING count(*) > 1) d)});
note "transactions: $sent, pairs received: $pairs";
cmp_ok($pairs, '>', 1000, 'the load published and delivered pairs');
is($pairs, $sent, 'every pair delivered');
is($dups, '0', 'no message delivered twice');
is($inverted, '0', "no pair delivered second message first ($pairs pairs)");

done_testing();
