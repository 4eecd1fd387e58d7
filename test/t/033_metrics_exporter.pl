# The real Prometheus exporter on mq.metrics (docs/metrics.md): Debian's
# prometheus-postgres-exporter runs on 127.0.0.1 against a test server with
# docs/metrics/queries.yaml, a known workload runs, and /metrics must serve
# the queue_ext series with the right labels and values (and again, higher,
# after more traffic).  Then docs/metrics/queue_ext-dashboard.json is parsed
# and every panel's queries must use series the exporter really served.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(usleep);

my $exporter = $ENV{QE_POSTGRES_EXPORTER} // '/usr/bin/prometheus-postgres-exporter';
plan skip_all => "$exporter is not installed (Debian package prometheus-postgres-exporter)"
  unless -x $exporter;

my $docs = "$FindBin::RealBin/../../docs/metrics";
my $node = qe_node('metrics');
$node->safe_psql('postgres', q{
SET client_min_messages = warning;
CREATE EXTENSION queue_ext;
SELECT mq.exchange_declare('dlx', 'fanout');
SELECT mq.queue_declare('dead');
SELECT mq.bind('dead', 'dlx', '');
SELECT mq.queue_declare('work', arguments => '{"x-dead-letter-exchange": "dlx"}');
SELECT mq.queue_declare('st', 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('st', 'g', start => 'earliest');
});

# publish 5, consume 3, ack 2, nack 1 without requeue (dead-lettered);
# a stream of 5 over two partitions, its group consumes 2 and acks 1 (the
# other stays leased after the session: not bound to it)
$node->safe_psql('postgres', q{
SELECT mq.send('work', 'm' || i) FROM generate_series(1, 5) i;
CREATE TABLE d AS SELECT msg_id FROM mq.consume('work', 3);
SELECT mq.ack('work', ARRAY(SELECT msg_id FROM d ORDER BY 1 LIMIT 2));
SELECT mq.nack('work', ARRAY(SELECT max(msg_id) FROM d), requeue => false);
SELECT mq.send('st', 's' || i, "partition" => i % 2) FROM generate_series(0, 4) i;
CREATE TABLE gd AS SELECT msg_id FROM mq.consume('st', 2, group_name => 'g',
	lease => '10 minutes', session_bound => false);
SELECT mq.ack('st', ARRAY(SELECT min(msg_id) FROM gd), group_name => 'g');
});

# the exporter's role, as docs/metrics.md sets it up: a member of
# pg_monitor, which sees every queue's rows of mq.metrics (a role without it
# sees only the queues it holds a privilege on)
$node->safe_psql('postgres', q{
CREATE ROLE prometheus LOGIN;
GRANT pg_monitor TO prometheus;
});

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $user = 'prometheus';
my $log = "$PostgreSQL::Test::Utils::tmp_check/exporter.log";
local $ENV{DATA_SOURCE_NAME} =
  'host=' . $node->host . ' port=' . $node->port . " user=$user dbname=postgres sslmode=disable";
my $h = IPC::Run::start(
	[
		$exporter, "--web.listen-address=127.0.0.1:$port",
		"--extend.query-path=$docs/queries.yaml",
		'--disable-default-metrics', '--disable-settings-metrics'
	],
	'<', \undef, '>&', $log);

my $http = HTTP::Tiny->new(timeout => 10);

# Scrape until the queue_ext series are there (bounded): name => [[labels, value]]
sub scrape
{
	my ($want) = @_;
	my $deadline = time() + 60;
	my $body = '';
	while (time() < $deadline)
	{
		my $r = $http->get("http://127.0.0.1:$port/metrics");
		$body = $r->{content} if $r->{success};
		last if $r->{success} && $body =~ $want;
		usleep(200_000);
	}
	my %series;
	for my $line (split /\n/, $body)
	{
		next if $line =~ /^#/ || $line !~ /^(\w+)(?:\{(.*)\})?\s+(\S+)$/;
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		my %l;
		while ($labels =~ /(\w+)="((?:[^"\\]|\\.)*)"/g)
		{
			$l{$1} = $2 if $2 ne '' && $1 ne 'server';	# '' is no label
		}
		push @{ $series{$name} }, [ \%l, $value ];
	}
	return (\%series, $body);
}

# The value of series name whose labels are exactly %labels (undef: none)
sub value_of
{
	my ($series, $name, %labels) = @_;
	my $key = join ',', map { "$_=$labels{$_}" } sort keys %labels;
	for my $s (@{ $series->{$name} // [] })
	{
		my $k = join ',', map { "$_=$s->[0]{$_}" } sort keys %{ $s->[0] };
		return $s->[1] + 0 if $k eq $key;
	}
	return undef;
}

my ($series, $body) = scrape(qr/^queue_ext_published_total\{[^}]*queue="work"[^}]*\} 5$/m);
ok(defined $series->{queue_ext_published_total}, 'the exporter serves queue_ext series')
  or diag("scrape:\n$body\nexporter log:\n" . slurp_file($log));
my @load = @{ $series->{pg_exporter_user_queries_load_error} // [] };
ok(@load == 1 && $load[0][1] == 0, 'queries.yaml loads');
is(value_of($series, 'pg_exporter_last_scrape_error'), 0, 'no query of it fails');

my %want = (
	queue_ext_published_total => 5,
	queue_ext_delivered_total => 3,
	queue_ext_redelivered_total => 0,
	queue_ext_acked_total => 2,
	queue_ext_nacked_total => 1,
	queue_ext_dead_lettered_total => 1,
	queue_ext_expired_total => 0,
	queue_ext_ready => 2,
	queue_ext_unacked => 0,
	queue_ext_delayed => 0,
	queue_ext_consumers => 0,);
for my $name (sort keys %want)
{
	is(value_of($series, $name, queue => 'work'), $want{$name}, "$name of queue work");
}
my $age = value_of($series, 'queue_ext_oldest_ready_age_seconds', queue => 'work');
ok(defined $age && $age > 0 && $age < 3600, "oldest ready age of work ($age)");
is(value_of($series, 'queue_ext_published_total', queue => 'dead'), 1, 'the dead letter reached dead');
is(value_of($series, 'queue_ext_ready', queue => 'dead'), 1, 'ready in dead');
is(value_of($series, 'queue_ext_published_total', queue => 'st'), 5, 'published to the stream');

# the group: the take goes highest partition first (s1, s3), s1 acked
is(value_of($series, 'queue_ext_delivered_total', queue => 'st', group => 'g'), 2, 'group delivered');
is(value_of($series, 'queue_ext_acked_total', queue => 'st', group => 'g'), 1, 'group acked');
is(value_of($series, 'queue_ext_unacked', queue => 'st', group => 'g'), 1, 'group unacked');
is(value_of($series, 'queue_ext_group_lag', queue => 'st', group => 'g', partition => 0), 3,
	'lag of partition 0');
is(value_of($series, 'queue_ext_group_lag', queue => 'st', group => 'g', partition => 1), 1,
	'lag of partition 1');
is(value_of($series, 'queue_ext_published_total', queue => 'st', group => 'g'), undef,
	'a group has no published series of its own');
ok(!grep({ $_ eq 'NaN' } map { $_->[1] } map { @$_ } values %$series), 'no NaN sample');

# more traffic: the counters grow on the next scrape
$node->safe_psql('postgres', q{
SELECT mq.send('work', 'more' || i) FROM generate_series(1, 2) i;
SELECT count(*) FROM mq.consume('work', 10, auto_ack => true);
});
($series, $body) = scrape(qr/^queue_ext_published_total\{[^}]*queue="work"[^}]*\} 7$/m);
is(value_of($series, 'queue_ext_published_total', queue => 'work'), 7, 'published grew');
is(value_of($series, 'queue_ext_delivered_total', queue => 'work'), 7, 'delivered grew (auto-ack)');
is(value_of($series, 'queue_ext_acked_total', queue => 'work'), 6, 'acked grew');
is(value_of($series, 'queue_ext_ready', queue => 'work'), 0, 'nothing ready');

# the dashboard: valid JSON, and every panel queries served series
my $dash = JSON::PP->new->decode(slurp_file("$docs/queue_ext-dashboard.json"));
my @panels = @{ $dash->{panels} // [] };
ok(@panels >= 8, scalar(@panels) . ' panels');
my %used;
for my $p (@panels)
{
	my @exprs = map { $_->{expr} } @{ $p->{targets} // [] };
	ok(@exprs > 0, "panel \"$p->{title}\" has queries");
	for my $e (@exprs)
	{
		my @names = $e =~ /\b(queue_ext_\w+)/g;
		ok(@names > 0, "panel \"$p->{title}\": $e uses a queue_ext series");
		for my $n (@names)
		{
			$used{$n} = 1;
			ok(exists $series->{$n}, "panel \"$p->{title}\": $n was served");
		}
	}
}
for my $v (@{ $dash->{templating}{list} // [] })
{
	my $q = ref $v->{query} ? $v->{query}{query} : $v->{query};
	next unless defined $q && $q =~ /\b(queue_ext_\w+)/;
	ok(exists $series->{$1}, "variable $v->{name}: $1 was served");
}
# rates of published/delivered/acked, the gauges the issue names
for my $n (qw(queue_ext_published_total queue_ext_delivered_total queue_ext_acked_total
	queue_ext_ready queue_ext_unacked queue_ext_group_lag
	queue_ext_oldest_ready_age_seconds queue_ext_consumers))
{
	ok($used{$n}, "the dashboard shows $n");
}
for my $n (qw(queue_ext_published_total queue_ext_delivered_total queue_ext_acked_total))
{
	ok((grep { $_ =~ /rate\(\s*\Q$n\E\b/ } map { $_->{expr} } map { @{ $_->{targets} } } @panels),
		"the dashboard shows the rate of $n");
}

$h->kill_kill(grace => 5);
$node->stop;
done_testing();
