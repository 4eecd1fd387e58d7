# streams: the shared hash of generation summaries (queue_shmem.c) holds
# max(1024, 2 x mq.max_queues) entries.  With mq.max_queues = 16 it holds
# 1024, and five streams of 256 partitions have 1280 generations: summing
# them all fills it, it is emptied and filled again, and every session,
# new or not, still gets each stream's bytes right, before and after more
# messages, with the worker summing the same streams at its own passes.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use QueueExtTest;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = qe_node('summary_cache',
	conf => "mq.max_queues = 16\nmq.retire_interval = '200ms'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION queue_ext');
for my $i (1 .. 5)
{
	$node->safe_psql('postgres', qq{
SELECT mq.queue_declare('pp$i', type => 'stream', arguments => '{"partitions": 256}');
SELECT count(*) FROM mq.send_batch('pp$i', array(SELECT 'm' || g FROM generate_series(1, 512) g));
});
}
# 'm1' .. 'm512': 1940 bytes a stream, two messages in each partition
my $want = join("\n", map { "pp$_|512|1940" } 1 .. 5);
my $q = q{SELECT queue, ready, ready_bytes FROM mq.queues WHERE queue LIKE 'pp%' ORDER BY 1};

is($node->safe_psql('postgres', $q), $want, 'first session: every stream summed');
# the same session again, and new sessions (each takes over what is shared)
my $bg = $node->background_psql('postgres');
is($bg->query_safe($q), $want, 'a second session');
is($bg->query_safe($q), $want, 'its second look');
for my $i (1 .. 3)
{
	is($node->safe_psql('postgres', $q), $want, "new session $i");
}

# more messages: counted by sessions that had summed the streams before
$node->safe_psql('postgres',
	q{SELECT count(*) FROM mq.send_batch('pp3', array(SELECT 'x' || g FROM generate_series(1, 300) g))});
# 'x1' .. 'x300': 1092 bytes
(my $more = $want) =~ s/pp3\|512\|1940/pp3|812|3032/;
is($bg->query_safe($q), $more, 'the second session sees what was appended');
is($node->safe_psql('postgres', $q), $more, 'a new session too');

# a deleted stream's generations go; a stream of the same name starts empty
$node->safe_psql('postgres', q{
SELECT mq.queue_delete('pp1');
SELECT mq.queue_declare('pp1', type => 'stream', arguments => '{"partitions": 256}');
SELECT mq.send('pp1', 'abc');
});
(my $again = $more) =~ s/pp1\|512\|1940/pp1|1|3/;
is($node->safe_psql('postgres', $q), $again, 'a stream declared again starts from nothing');
is($bg->query_safe($q), $again, 'in a session that had summed the old one too');
$bg->quit;

# the worker summed the same streams meanwhile: nothing crashed
my $log = slurp_file($node->logfile);
unlike($log, qr/PANIC|TRAP|terminated by signal/, 'no crash or failed assertion in the server log');

$node->stop;
done_testing();
