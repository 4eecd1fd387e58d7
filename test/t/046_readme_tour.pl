# README.md's SQL runs as pasted: every ```sql block of README.md (the tour
# under "Using it"), in order, in one psql session (-X, ON_ERROR_STOP=1) on
# a fresh database of a server set up as test/demo.sh sets up its own
# (shared_preload_libraries = 'queue_ext', CREATE EXTENSION queue_ext): it
# must end with exit 0 and print no ERROR, no psql error or warning; then a
# few of its outcomes are checked in the database.
#
# Only blocks fenced ```sql are run. An SQL example in README.md that is not
# meant to run as it stands (a fragment, a placeholder) must take another
# fence tag (```text, or none); there is none today.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

my $readme = "$FindBin::RealBin/../../README.md";

# The ```sql blocks of README.md: a list of [first line number, text]
sub sql_blocks
{
	my ($file) = @_;
	open my $fh, '<', $file or die "cannot open $file: $!";
	my (@blocks, $cur);
	while (my $line = <$fh>)
	{
		if (defined $cur)
		{
			if ($line =~ /^```\s*$/)
			{
				push @blocks, $cur;
				undef $cur;
			}
			else
			{
				$cur->[1] .= $line;
			}
		}
		elsif ($line =~ /^```sql\s*$/)
		{
			$cur = [ $. + 1, '' ];
		}
	}
	close $fh;
	die "$file: a ```sql block from line $cur->[0] is not closed" if defined $cur;
	return @blocks;
}

my @blocks = sql_blocks($readme);
ok(@blocks >= 1, 'README.md has ```sql blocks (' . scalar(@blocks) . ')');

my $node = qe_node('readme');
$node->safe_psql('postgres', 'CREATE DATABASE readme');
$node->safe_psql('readme', 'CREATE EXTENSION queue_ext');

my $script = "$PostgreSQL::Test::Utils::tmp_check/readme_tour.sql";
open my $sf, '>', $script or die "cannot write $script: $!";
print $sf "-- README.md line $_->[0]\n$_->[1]\n" for @blocks;
close $sf;

# as a newcomer runs it: psql -f, output aligned as on a terminal
my $out = '';
my $ok = IPC::Run::run(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('readme'), '-f', $script ],
	'<', \undef, '>&', \$out, IPC::Run::timeout(180));
ok($ok, 'psql runs the README\'s SQL to its end with exit 0');
my @bad = grep { /ERROR|error:|warning:/ } split /\n/, $out;
is(join("\n", @bad), '', 'no ERROR, no psql error or warning in its output');
diag("psql output:\n$out") if !$ok || @bad;

# a query's result; a failed query is reported by the test that used it
sub db
{
	my ($rc, $o, $e) = $node->psql('readme', $_[0]);
	return $rc == 0 ? $o : "(failed: $e)";
}

# the work queue: consume delivered the message send returned, ack acked it
my ($job1) = $out =~ /^\s*(\d+) \| \{"job": 1\}\s*$/m;
ok(defined $job1, 'the first consume printed {"job": 1} with its id');
is(db("SELECT string_agg(event, ',' ORDER BY event) FROM mq.trace(${\($job1 // 0)})
	  WHERE event IN ('delivered', 'acked')"),
	'acked,delivered', 'that message was delivered and acked');
is(db(q{SELECT ready || ' ' || unacked || ' ' || delayed FROM mq.queues WHERE queue = 'jobs'}),
	'0 0 1', 'jobs: nothing ready or unacked, the one delayed message not cancelled');
is(db(q{SELECT string_agg(job::text, ',') FROM results}), '{"job": 2}',
	'the exactly-once transaction recorded job 2');
is(db(q{SELECT balance FROM accounts WHERE id = 7}), '90', 'the outbox transaction committed');
is(db(q{SELECT count(*) FROM mq.browse('billing')}), '3',
	'billing holds the two order messages and the committed half message');
is(db(q{SELECT state || ' ' || decided_by FROM mq.half_messages}), 'committed producer',
	'the half message was committed by its producer');
is(db(q{SELECT convert_from(body, 'UTF8') || ' ' || (headers->'x-death'->0->>'reason') FROM mq.browse('dead')}),
	'a job that fails rejected', 'the nacked message was dead-lettered to dead with x-death');
is(db(q{SELECT sum(lag) || ' ' || sum(committed_offset) FROM mq.consumer_groups
	  WHERE queue = 'events' AND group_name = 'billing'}),
	'0 1', 'the stream group acked its one message');
is(db(q{SELECT count(*) FROM mq.bindings WHERE exchange = 'invoices' AND queue = 'invoices.new'}),
	'1', 'the RabbitMQ definitions were imported');

$node->stop;
done_testing();
