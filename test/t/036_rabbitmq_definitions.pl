# RabbitMQ definitions against a real RabbitMQ (Debian rabbitmq-server),
# started here as this user on loopback ports:
#  1. a topology (classic, quorum and stream queues with arguments, a
#     policy, topic/fanout/headers exchanges with an alternate exchange,
#     bindings, a user with permissions, a second vhost) is declared in
#     RabbitMQ with rabbitmqctl import_definitions, and exported back with
#     rabbitmqctl export_definitions: that export, RabbitMQ's own, is what
#     mq.definitions_import reads;
#  2. the topology in queue_ext is compared with RabbitMQ's (rabbitmqctl
#     list_queues / list_exchanges / list_bindings), and what queue_ext
#     has not (the other vhost, an exchange-to-exchange binding, an
#     unsupported argument) is reported, not dropped;
#  3. mq.definitions_export() is imported into a fresh vhost of RabbitMQ,
#     which then lists the same queues, exchanges and bindings.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);

plan skip_all => qe_rabbitmq_missing() if qe_rabbitmq_missing();

# a private RabbitMQ node: its own ports, directories, cookie and epmd
my $rmq = qe_rabbitmq('qe');
my $dir = $rmq->dir;
pass('RabbitMQ started');

# 1. the topology, declared in RabbitMQ and exported by it
my $topology = {
	vhosts => [ { name => '/' }, { name => 'other' } ],
	users => [ { name => 'app', password_hash => '',
		hashing_algorithm => 'rabbit_password_hashing_sha256', tags => [] } ],
	permissions => [ { user => 'app', vhost => '/', configure => '^$',
		write => '^orders$', read => '^(jobs|events)$' } ],
	policies => [ { vhost => '/', name => 'dlx', pattern => '^jobs$', 'apply-to' => 'queues',
		definition => { 'dead-letter-exchange' => 'dead' }, priority => 0 } ],
	queues => [
		{ name => 'jobs', vhost => '/', durable => JSON::PP::true, auto_delete => JSON::PP::false,
		  arguments => { 'x-queue-type' => 'classic', 'x-max-length' => 1000,
			'x-overflow' => 'reject-publish', 'x-message-ttl' => 60000 } },
		{ name => 'payments', vhost => '/', durable => JSON::PP::true,
		  auto_delete => JSON::PP::false,
		  arguments => { 'x-queue-type' => 'quorum', 'x-delivery-limit' => 5,
			'x-dead-letter-exchange' => 'dead' } },
		{ name => 'events', vhost => '/', durable => JSON::PP::true, auto_delete => JSON::PP::false,
		  arguments => { 'x-queue-type' => 'stream', 'x-max-age' => '7D',
			'x-max-length-bytes' => 1000000000 } },
		{ name => 'dead-letters', vhost => '/', durable => JSON::PP::true,
		  auto_delete => JSON::PP::false, arguments => {} },
		{ name => 'prio', vhost => '/', durable => JSON::PP::true, auto_delete => JSON::PP::false,
		  arguments => { 'x-max-priority' => 10, 'x-queue-mode' => 'lazy' } },
		{ name => 'elsewhere', vhost => 'other', durable => JSON::PP::true,
		  auto_delete => JSON::PP::false, arguments => {} } ],
	exchanges => [
		{ name => 'orders', vhost => '/', type => 'topic', durable => JSON::PP::true,
		  auto_delete => JSON::PP::false, internal => JSON::PP::false,
		  arguments => { 'alternate-exchange' => 'unrouted' } },
		map { { name => $_->[0], vhost => '/', type => $_->[1], durable => JSON::PP::true,
				auto_delete => JSON::PP::false, internal => JSON::PP::false, arguments => {} } }
		  ([ 'unrouted', 'fanout' ], [ 'dead', 'fanout' ], [ 'match', 'headers' ],
			[ 'audit', 'fanout' ]) ],
	bindings => [
		map { { source => $_->[0], vhost => '/', destination => $_->[1],
				destination_type => $_->[2], routing_key => $_->[3], arguments => $_->[4] } }
		  ([ 'orders', 'jobs', 'queue', 'order.*.created', {} ],
			[ 'orders', 'payments', 'queue', 'order.#', {} ],
			[ 'dead', 'dead-letters', 'queue', '', {} ],
			[ 'match', 'prio', 'queue', '', { 'x-match' => 'all', kind => 'a' } ],
			[ 'orders', 'audit', 'exchange', '#', {} ]) ] };
my $json = JSON::PP->new->canonical;
PostgreSQL::Test::Utils::append_to_file("$dir/topology.json", $json->encode($topology));
$rmq->ctl('import_definitions', "$dir/topology.json");

# the import is asynchronous: wait until RabbitMQ lists every queue
my $deadline = time + 60;
my $listed = '';
while (time < $deadline)
{
	$listed = $rmq->ctl('list_queues', '-q', '-p', '/', 'name');
	last if $listed =~ /\bjobs\b/ && $listed =~ /\bprio\b/ && $listed =~ /\bevents\b/
	  && $listed =~ /\bdead-letters\b/ && $listed =~ /\bpayments\b/;
	usleep(250_000);
}
like($listed, qr/payments/, 'RabbitMQ declared the topology');
$rmq->ctl('export_definitions', "$dir/export.json");
my $export = PostgreSQL::Test::Utils::slurp_file("$dir/export.json");
my $rdefs = decode_json($export);
ok(scalar(@{ $rdefs->{queues} }) >= 5, 'RabbitMQ exported its definitions');

# 2. into queue_ext
my $node = qe_node('defs', conf => "mq.quorum_unavailable = wait\n");
$node->safe_psql('postgres', 'CREATE EXTENSION queue_ext');
my $report = $node->safe_psql('postgres', qq{
SELECT kind || '|' || name || '|' || action || '|' || detail
  FROM mq.definitions_import(\$json\$$export\$json\$) ORDER BY 1});
note($report);
my %row;
for (split /\n/, $report)
{
	my ($kind, $name, $action, $detail) = split /\|/, $_, 4;
	$row{"$kind $name"} = [ $action, $detail ];
}
is($row{"queue $_"}[0], 'created', "queue $_ created")
  for qw(jobs payments events dead-letters prio);
is($row{"exchange $_"}[0], 'created', "exchange $_ created") for qw(orders unrouted dead match audit);
is($row{'queue elsewhere'}[0], 'skipped', 'a queue of another vhost is reported, not imported');
is($row{'binding orders -> audit (#)'}[0], 'skipped',
	'an exchange-to-exchange binding is reported, not imported');
like($row{'queue prio'}[1], qr/x-queue-mode is not supported/, 'an unsupported argument is reported');
like($row{'queue jobs'}[1], qr/policy dlx applied/, 'the policy is applied');
is($row{'user app'}[0], 'created', 'the user became a role');

# the same queues, types and arguments as RabbitMQ lists them
my $rq = $rmq->ctl('list_queues', '-q', '--formatter', 'json', '-p', '/', 'name', 'type',
	'arguments', 'durable');
my %rabbit_q = map { $_->{name} => $_ } @{ decode_json($rq) };
my $qe = decode_json($node->safe_psql('postgres',
	q{SELECT jsonb_object_agg(queue, jsonb_build_object('type', type, 'durable', durable, 'arguments', arguments))
		FROM mq.queues}));
is_deeply([ sort keys %$qe ], [ sort keys %rabbit_q ], 'the same queues as RabbitMQ');
for my $q (sort keys %rabbit_q)
{
	is($qe->{$q}{type}, $rabbit_q{$q}{type}, "queue $q: the same type");
	is(!!$qe->{$q}{durable}, !!$rabbit_q{$q}{durable}, "queue $q: the same durability");
	# rabbitmqctl's JSON: [name, AMQP type, value] per argument
	my %rargs = map { ref $_ eq 'ARRAY' ? ($_->[0] => $_->[-1]) : %$_ } @{ $rabbit_q{$q}{arguments} || [] };
	delete @rargs{qw(x-queue-type x-queue-mode)};
	if ($rabbit_q{$q}{type} eq 'stream')
	{
		is($qe->{$q}{arguments}{retention}, '7 days', "stream $q: x-max-age as its retention");
		is($qe->{$q}{arguments}{max_bytes}, $rargs{'x-max-length-bytes'},
			"stream $q: x-max-length-bytes as max_bytes");
	}
	else
	{
		# the policy's DLX is an argument here
		$rargs{'x-dead-letter-exchange'} = 'dead' if $q eq 'jobs';
		is_deeply($qe->{$q}{arguments}, \%rargs, "queue $q: the same arguments");
	}
}
my $rb = $rmq->ctl('list_bindings', '-q', '-p', '/', 'source_name', 'destination_name',
	'destination_kind', 'routing_key');
my @rabbit_b = sort grep { !/^\t/ && /\tqueue\t/ } split /\n/, $rb;
s/\tqueue\t/\t/ for @rabbit_b;
my @qe_b = sort split /\n/, $node->safe_psql('postgres',
	q{SELECT exchange || E'\t' || queue || E'\t' || binding_key FROM mq.bindings WHERE exchange <> ''});
is_deeply(\@qe_b, \@rabbit_b, 'the same queue bindings as RabbitMQ');
is($node->safe_psql('postgres', q{SELECT alternate_exchange FROM mq.exchanges WHERE exchange = 'orders'}),
	'unrouted', 'the alternate exchange');
# routing works as in RabbitMQ: order.eu.created to jobs and payments
$node->safe_psql('postgres', q{SELECT mq.publish('orders', 'order.eu.created', 'o1')});
is($node->safe_psql('postgres',
	q{SELECT string_agg(queue || '=' || ready, ',' ORDER BY queue) FROM mq.queues WHERE ready > 0}),
	'jobs=1,payments=1', 'the imported topology routes');

# 3. queue_ext's export into a fresh vhost of RabbitMQ: the same topology
my $qexport = $node->safe_psql('postgres', 'SELECT mq.definitions_export()');
$qexport =~ s/"vhost": "\/"/"vhost": "back"/g;
$qexport =~ s/\{"name": "\/"\}/{"name": "back"}/;
PostgreSQL::Test::Utils::append_to_file("$dir/back.json", $qexport);
$rmq->ctl('import_definitions', "$dir/back.json");
$deadline = time + 60;
my %back;
while (time < $deadline)
{
	%back = map { $_->{name} => $_ } @{ decode_json($rmq->ctl('list_queues', '-q',
		'--formatter', 'json', '-p', 'back', 'name', 'type', 'arguments', 'durable')) };
	last if keys %back == keys %rabbit_q;
	usleep(250_000);
}
is_deeply([ sort keys %back ], [ sort keys %rabbit_q ], 'RabbitMQ imported queue_ext\'s export');
is($back{$_}{type}, $rabbit_q{$_}{type}, "queue $_ back in RabbitMQ: the same type") for sort keys %back;
my @back_b = sort grep { !/^\t/ && /\tqueue\t/ } split /\n/, $rmq->ctl('list_bindings', '-q',
	'-p', 'back', 'source_name', 'destination_name', 'destination_kind', 'routing_key');
s/\tqueue\t/\t/ for @back_b;
is_deeply(\@back_b, \@qe_b, 'and the same bindings');

done_testing();
