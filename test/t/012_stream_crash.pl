# Stream offsets across crashes, restarts and on a standby:
#  1. kill -9 of a backend while sessions publish to a stream: after crash
#     recovery every committed message is there once, offsets per partition
#     are unique and increasing, and an in-progress publish is a gap;
#  2. offsets after the crash (and after a clean restart) go on after every
#     offset ever written, never reusing one;
#  3. mq.read on a streaming hot standby returns what the primary returns.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('streamcrash', init => { allows_streaming => 1 }, conf => qq{
restart_after_crash = on
wal_consistency_checking = 'mqlog'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream', arguments => '{"partitions": 2}');
});

# every partition's offsets, in read order: unique and increasing
sub offsets_ok
{
	my ($n, $what) = @_;
	for my $p (0, 1)
	{
		my $res = $n->safe_psql('postgres',
			qq{SELECT coalesce(bool_and(o > prev), true), count(*), count(DISTINCT o)
			     FROM (SELECT "offset" AS o, lag("offset", 1, -1) OVER () AS prev
			             FROM mq.read('s', $p, max_messages => 10000)) r});
		my ($inc, $cnt, $dist) = split /\|/, $res;
		is($inc, 't', "$what: partition $p offsets increase");
		is($cnt, $dist, "$what: partition $p offsets unique");
	}
}

# two publishing sessions, interleaved, each message committed on its own
my @pub = map { $node->background_psql('postgres') } 1 .. 2;
my %committed;
for my $i (1 .. 200)
{
	my $s = $pub[$i % 2];
	my $body = "m$i";
	my $r = $s->query_safe(
		"SELECT mq.send('s', '$body', message_group => 'g' || ($i % 5)) IS NOT NULL");
	$committed{$body} = 1 if $r eq 't';
}
# one publish in progress at the crash, in each partition
$pub[0]->query_safe('BEGIN');
$pub[0]->query_safe("SELECT mq.send('s', 'lost-0', partition => 0)");
$pub[0]->query_safe("SELECT mq.send('s', 'lost-1', partition => 1)");
my $before = $node->safe_psql('postgres',
	q{SELECT string_agg(p || ':' || (SELECT max("offset") FROM mq.read('s', p, max_messages => 10000)), ',' ORDER BY p)
	    FROM generate_series(0, 1) p});

my $pid = $pub[0]->query_safe('SELECT pg_backend_pid()');
my $logpos = -s $node->logfile;
kill 'KILL', $pid;
eval { $_->quit; } for @pub;
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'server did not come back after the crash';
ok($node->log_contains(qr/terminated by signal 9/, $logpos),
	'backend killed: crash recovery ran');

my $got = $node->safe_psql('postgres',
	q{SELECT convert_from(body, 'UTF8') FROM generate_series(0, 1) p,
	         mq.read('s', p, max_messages => 10000)});
my %seen;
$seen{$_}++ for split /\n/, $got;
is(scalar(grep { ($seen{$_} // 0) == 1 } keys %committed), scalar(keys %committed),
	'every committed message is there once after the crash');
ok(!exists $seen{'lost-0'} && !exists $seen{'lost-1'}, 'the in-progress publishes are gone');
offsets_ok($node, 'after the crash');

# new offsets go on after every committed one (an in-progress row whose WAL
# reached disk before the crash stays a gap; one whose WAL did not is gone,
# and its offset, never returned by any read, may be taken again)
$node->safe_psql('postgres', q{
SELECT mq.send('s', 'after-0', partition => 0);
SELECT mq.send('s', 'after-1', partition => 1);
});
my $after = $node->safe_psql('postgres',
	q{SELECT string_agg(p || ':' || (SELECT max("offset") FROM mq.read('s', p, max_messages => 10000)), ',' ORDER BY p)
	    FROM generate_series(0, 1) p});
my %b = map { split /:/ } split /,/, $before;
my %a = map { split /:/ } split /,/, $after;
for my $p (0, 1)
{
	cmp_ok($a{$p}, '>', $b{$p}, "partition $p: the offset after the crash follows the committed ones");
}
offsets_ok($node, 'after publishing again');

# a clean restart: offsets go on too
$node->restart;
$node->safe_psql('postgres', q{SELECT mq.send('s', 'restarted', partition => 0)});
is($node->safe_psql('postgres',
	q{SELECT "offset" FROM mq.read('s', 0, max_messages => 10000) WHERE convert_from(body, 'UTF8') = 'restarted'}),
	$a{0} + 1, 'after a restart the next offset follows the last');

# a hot standby reads the same
my $standby = qe_standby($node, 'streamstandby');
$node->safe_psql('postgres', q{SELECT mq.send('s', 'replicated', partition => 1)});
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
my $q = q{SELECT string_agg("offset" || '=' || convert_from(body, 'UTF8'), ',')
            FROM mq.read('s', 1, max_messages => 10000)};
my $on_primary = $node->safe_psql('postgres', $q);
is($standby->safe_psql('postgres', $q), $on_primary, 'mq.read on the standby returns what the primary does');
like($on_primary, qr/=replicated$/, 'including the newest message');
is($standby->safe_psql('postgres',
	q{SELECT count(*) FROM mq.read('s', 1, from_offset => 0, max_messages => 3)}), '3',
	'reading from an offset works on the standby');

$standby->stop;

# a stream re-created with the same queue id after DROP and CREATE EXTENSION
# (the shared state of the old one is still there) starts again at 0
$node->safe_psql('postgres', q{
DROP EXTENSION queue_ext CASCADE;
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('s', type => 'stream');
SELECT mq.send('s', 'again', partition => 0);
});
is($node->safe_psql('postgres', q{SELECT string_agg("offset" || '=' || convert_from(body, 'UTF8'), ',')
                                  FROM mq.read('s', 0)}),
	'0=again', 'a stream re-created after DROP/CREATE EXTENSION starts at offset 0');

$node->stop;
done_testing();
