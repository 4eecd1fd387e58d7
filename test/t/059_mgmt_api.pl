# The management HTTP API of mq-amqp (issue 41, docs/management.md),
# compared call by call with Debian's RabbitMQ 3.10 and its management
# plugin, started here as test 037 starts RabbitMQ:
#  1. rabbitmqadmin from Debian's rabbitmq-server, unchanged, against each:
#     declare, list, publish, get (both ack modes), purge, delete, export
#     and import definitions, a wrong password, a missing object;
#  2. curl against each: 401 and 404 shapes, 405, 400 (not JSON, an
#     inequivalent redeclare), vhost %2F and %2f, booleans and counts as
#     strings, publish unroutable, reject_requeue_true, health checks,
#     aliveness-test, a login without privileges refused (401);
#  3. queue_ext alone: its own paths (/api/queue-ext/...), what a role
#     without privileges sees, the password rule (a trust login refused),
#     static files (Content-Type, no directory traversal).
# Each compared check has one expected value that both servers must give
# (without RabbitMQ, queue_ext alone must).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use File::Path qw(make_path);
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

my $admin = '/usr/bin/rabbitmqadmin';
my $curl = '/usr/bin/curl';
unless (-x $curl && -f $admin)
{
	fail('curl and rabbitmq-server (rabbitmqadmin) are installed (test/lib/cluster.sh installs them)');
	done_testing();
	exit 0;
}
my $json = JSON::PP->new->canonical->allow_nonref;

# ---------------------------------------------------------------------------
# queue_ext behind mq-amqp: roles with passwords (scram), the API on a free port
# ---------------------------------------------------------------------------

my $node = qe_node('mgmt', conf => "mq.quorum_unavailable = 'wait'\n");
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	SET password_encryption = 'scram-sha-256';
	CREATE ROLE mgmt_admin LOGIN SUPERUSER PASSWORD 'admin-pw';
	CREATE ROLE mgmt_user LOGIN PASSWORD 'user-pw';
	CREATE ROLE mgmt_nopriv LOGIN PASSWORD 'nopriv-pw';
	CREATE ROLE mgmt_trust LOGIN;
	GRANT CREATE ON SCHEMA mq TO mgmt_user;
});
qe_hba_first($node,
	"local all mgmt_admin,mgmt_user,mgmt_nopriv,mu_new,mu_lock1,mu_lock2,mu_lock3 scram-sha-256\n"
	  . "local all mgmt_trust trust\n");

my $www = PostgreSQL::Test::Utils::tempdir('www');
make_path("$www/js");
PostgreSQL::Test::Utils::append_to_file("$www/index.html", "<!doctype html><title>queue_ext</title>\n");
PostgreSQL::Test::Utils::append_to_file("$www/js/app.js", "console.log('ui');\n");
PostgreSQL::Test::Utils::append_to_file(PostgreSQL::Test::Utils::tempdir('secret') . '/s', "secret\n");

my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my ($gw, $amqp_port, $log) = qe_gateway($node,
	flags => [ '--http-listen', "127.0.0.1:$http_port", '--http-www', $www ]);
ok(qe_listening($http_port, handle => $gw), 'mq-amqp serves the management API');

my %qe = (name => 'queue_ext', port => $http_port);
my @servers = (\%qe);

# ---------------------------------------------------------------------------
# RabbitMQ 3.10 with its management plugin, the same users
# ---------------------------------------------------------------------------

my $rmq;
if (my $why = qe_rabbitmq_missing())
{
	diag("RabbitMQ is not compared: $why");
}
else
{
	$rmq = qe_rabbitmq('qemgmt', management => 1);
	ok(qe_listening($rmq->mgmt_port, tries => 600), 'RabbitMQ\'s management plugin listens');
	$rmq->ctl('add_user', 'mgmt_admin', 'admin-pw');
	$rmq->ctl('set_user_tags', 'mgmt_admin', 'administrator');
	$rmq->ctl('set_permissions', '-p', '/', 'mgmt_admin', '.*', '.*', '.*');
	$rmq->ctl('add_user', 'mgmt_user', 'user-pw');
	$rmq->ctl('set_user_tags', 'mgmt_user', 'management');
	$rmq->ctl('set_permissions', '-p', '/', 'mgmt_user', '.*', '.*', '.*');
	$rmq->ctl('add_user', 'mgmt_nopriv', 'nopriv-pw');
	$rmq->ctl('set_user_tags', 'mgmt_nopriv', 'management');
	$rmq->ctl('set_permissions', '-p', '/', 'mgmt_nopriv', '^$', '^$', '^$');
	unshift @servers, { name => 'RabbitMQ', port => $rmq->mgmt_port };
}

my %pw = (mgmt_admin => 'admin-pw', mgmt_user => 'user-pw', mgmt_nopriv => 'nopriv-pw',
	mu_new => 'mu-pw');

# rabbitmqadmin as user against srv: (exit code, stdout, stderr)
sub admin
{
	my ($srv, $user, @args) = @_;
	return qe_run([ '/usr/bin/python3', $admin, '-H', '127.0.0.1', '-P', $srv->{port},
		'-u', $user, '-p', $pw{$user} // 'wrong', '-V', '/', @args ], 120);
}

# curl: (status, body, headers text); opt user (undef: no auth), body
sub http
{
	my ($srv, $method, $path, %opt) = @_;
	my @auth = exists $opt{user}
	  ? (defined $opt{user} ? ('-u', "$opt{user}:" . ($opt{password} // $pw{ $opt{user} })) : ())
	  : ('-u', 'mgmt_user:user-pw');
	my @body = defined $opt{body}
	  ? ('-H', 'content-type: application/json', '--data-binary', $opt{body})
	  : ();
	my ($rc, $out, $err) = qe_run([ $curl, '-s', '-S', '-i', '--path-as-is', '-X', $method,
		@auth, @body, "http://127.0.0.1:$srv->{port}$path" ], 60);
	return (0, $err, '') if $rc != 0;
	my ($head, $body) = split /\r\n\r\n/, $out, 2;
	my ($status) = $head =~ m{^HTTP/\S+ (\d+)};
	return ($status, $body // '', $head);
}

# the JSON of a body, or undef
sub dec
{
	my ($text) = @_;
	return eval { $json->decode($text) };
}

# Run check (a sub given a server, returning a value) against each server
# and test its value against expected (a string, compared as JSON)
sub compare
{
	my ($name, $expected, $check) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	for my $srv (@servers)
	{
		my $got = $check->($srv);
		is(ref $got ? $json->encode($got) : $got, $expected, "$name ($srv->{name})");
	}
}

# poll (up to 30 s) until check gives expected: RabbitMQ's statistics lag
sub eventually
{
	my ($srv, $expected, $check) = @_;
	my $got;
	for (1 .. 60)
	{
		$got = $check->();
		$got = $json->encode($got) if ref $got;
		return $got if defined $got && $got eq $expected;
		select(undef, undef, undef, 0.5);
	}
	return $got;
}

# ---------------------------------------------------------------------------
# 1. rabbitmqadmin
# ---------------------------------------------------------------------------

compare('rabbitmqadmin declare queue', '0 queue declared', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'declare', 'queue', 'name=ta_q', 'durable=true');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin declare exchange', '0 exchange declared', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'declare', 'exchange', 'name=ta_x', 'type=topic');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin declare binding', '0 binding declared', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'declare', 'binding', 'source=ta_x',
		'destination=ta_q', 'routing_key=a.#');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin list queues', '{"durable":true,"name":"ta_q"}', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'list', 'queues', 'name', 'durable', '-f', 'raw_json');
	my ($q) = grep { $_->{name} eq 'ta_q' } @{ dec($out) // [] };
	return $q ? { name => $q->{name}, durable => $q->{durable} } : "$rc $out";
});
compare('rabbitmqadmin list exchanges', '{"name":"ta_x","type":"topic"}', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'list', 'exchanges', 'name', 'type', '-f', 'raw_json');
	my ($x) = grep { $_->{name} eq 'ta_x' } @{ dec($out) // [] };
	return $x ? { name => $x->{name}, type => $x->{type} } : "$rc $out";
});
compare('rabbitmqadmin list bindings',
	'[{"destination":"ta_q","routing_key":"a.#","source":"ta_x"}]', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'list', 'bindings', 'source', 'destination',
		'routing_key', '-f', 'raw_json');
	return [ map { { source => $_->{source}, destination => $_->{destination},
			  routing_key => $_->{routing_key} } }
		  grep { $_->{source} eq 'ta_x' } @{ dec($out) // [] } ];
});
compare('rabbitmqadmin publish through the topic exchange', '0 Message published', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'publish', 'exchange=ta_x', 'routing_key=a.b',
		'payload=hello');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin publish to the default exchange', '0 Message published', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'publish', 'routing_key=ta_q', 'payload=second');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin list queues counts both', '2', sub {
	my $srv = $_[0];
	return eventually($srv, '2', sub {
		my ($rc, $out) = admin($srv, 'mgmt_user', 'list', 'queues', 'name', 'messages',
			'-f', 'raw_json');
		my ($q) = grep { $_->{name} eq 'ta_q' } @{ dec($out) // [] };
		return $q ? $q->{messages} // 'none' : "$rc $out";
	});
});
compare('rabbitmqadmin get ack_requeue_true',
	'[{"message_count":1,"payload":"hello","payload_bytes":5,"payload_encoding":"string","redelivered":false,"routing_key":"a.b"}]',
	sub {
		my ($rc, $out) = admin($_[0], 'mgmt_user', 'get', 'queue=ta_q', 'ackmode=ack_requeue_true',
			'-f', 'raw_json');
		return [ map { my $m = $_; +{ map { $_ => $m->{$_} }
				  qw(payload payload_bytes payload_encoding redelivered routing_key message_count) } }
			  @{ dec($out) // [] } ] // "$rc $out";
	});
compare('rabbitmqadmin get ack_requeue_false count=2',
	'[{"payload":"hello","redelivered":true},{"payload":"second","redelivered":false}]', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'get', 'queue=ta_q', 'ackmode=ack_requeue_false',
		'count=2', '-f', 'raw_json');
	my $l = dec($out);
	return ref $l ? [ map { { payload => $_->{payload}, redelivered => $_->{redelivered} } } @$l ]
	  : "$rc $out";
});
compare('rabbitmqadmin get on the emptied queue', '0', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'get', 'queue=ta_q', 'ackmode=ack_requeue_false',
		'-f', 'raw_json');
	my $l = dec($out);
	return ref $l ? scalar(@$l) : "$rc $out";
});
compare('rabbitmqadmin purge queue', '0 queue purged', sub {
	my $srv = $_[0];
	admin($srv, 'mgmt_user', 'publish', 'routing_key=ta_q', "payload=p$_") for 1 .. 3;
	my ($rc, $out) = admin($srv, 'mgmt_user', 'purge', 'queue', 'name=ta_q');
	return "$rc $out" =~ s/\s+$//r;
});
compare('after the purge nothing is left to get', '0', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'get', 'queue=ta_q', 'ackmode=ack_requeue_false',
		'-f', 'raw_json');
	my $l = dec($out);
	return ref $l ? scalar(@$l) : "$rc $out";
});
compare('rabbitmqadmin list vhosts', '["/"]', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_user', 'list', 'vhosts', 'name', '-f', 'raw_json');
	my $l = dec($out);
	return ref $l ? [ map { $_->{name} } @$l ] : "$rc $out";
});
compare('rabbitmqadmin show overview', '0', sub {
	my ($rc, $out, $err) = admin($_[0], 'mgmt_user', 'show', 'overview');
	diag("$out$err") if $rc != 0;
	return $rc;
});

# export and import definitions: delete what was declared, import it back
my %defs;
compare('rabbitmqadmin export', '{"binding":1,"exchange":1,"queue":1}', sub {
	my $srv = $_[0];
	my $file = PostgreSQL::Test::Utils::tempdir('defs') . '/defs.json';
	my ($rc, $out, $err) = admin($srv, 'mgmt_admin', 'export', $file);
	return "$rc $out $err" unless $rc == 0 && -f $file;
	$defs{ $srv->{name} } = $file;
	my $d = dec(PostgreSQL::Test::Utils::slurp_file($file)) // {};
	return {
		queue => scalar(grep { $_->{name} eq 'ta_q' } @{ $d->{queues} // [] }),
		exchange => scalar(grep { $_->{name} eq 'ta_x' && $_->{type} eq 'topic' } @{ $d->{exchanges} // [] }),
		binding => scalar(grep { $_->{source} eq 'ta_x' && $_->{destination} eq 'ta_q' } @{ $d->{bindings} // [] }),
	};
});
compare('rabbitmqadmin delete binding, queue, exchange', '0 0 0', sub {
	my $srv = $_[0];
	my ($r1) = admin($srv, 'mgmt_user', 'delete', 'binding', 'source=ta_x', 'destination_type=queue',
		'destination=ta_q', 'properties_key=a.#');
	my ($r2) = admin($srv, 'mgmt_user', 'delete', 'queue', 'name=ta_q');
	my ($r3) = admin($srv, 'mgmt_user', 'delete', 'exchange', 'name=ta_x');
	return "$r1 $r2 $r3";
});
compare('rabbitmqadmin delete of a missing queue: Not found', '1 Not found: /api/queues/%2F/ta_q', sub {
	my ($rc, $out, $err) = admin($_[0], 'mgmt_user', 'delete', 'queue', 'name=ta_q');
	return "$rc $out$err" =~ s/\*\*\* //r =~ s/\s+$//r;
});
compare('rabbitmqadmin import brings them back', '0 ta_q ta_x', sub {
	my $srv = $_[0];
	my ($rc, $out, $err) = admin($srv, 'mgmt_admin', 'import', $defs{ $srv->{name} } // '/nonexistent');
	# (in queue_ext the queue is the importing role's: its owner sees it)
	my ($s1, $b1) = http($srv, 'GET', '/api/queues/%2F/ta_q', user => 'mgmt_admin');
	my ($s2, $b2) = http($srv, 'GET', '/api/exchanges/%2F/ta_x', user => 'mgmt_admin');
	return join(' ', $rc, (dec($b1) // {})->{name} // $s1, (dec($b2) // {})->{name} // $s2)
	  . ($rc ? " $out$err" : '');
});
compare('rabbitmqadmin with a wrong password: Access refused',
	'1 Access refused: /api/queues/%2F?columns=name,messages', sub {
	my ($rc, $out, $err) = admin($_[0], 'mgmt_badpw', 'list', 'queues');
	return "$rc $out$err" =~ s/\*\*\* //r =~ s/\s+$//r;
});

# ---------------------------------------------------------------------------
# 2. curl: shapes and edge cases
# ---------------------------------------------------------------------------

compare('no Authorization: 401, WWW-Authenticate, empty body', '401|Basic realm="RabbitMQ Management"|', sub {
	my ($s, $b, $h) = http($_[0], 'GET', '/api/overview', user => undef);
	my ($wa) = $h =~ /^www-authenticate: (.*?)\r?$/mi;
	return join('|', $s, $wa // '', $b);
});
compare('wrong password: 401 not_authorized', '401 {"error":"not_authorized","reason":"Login failed"}', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/queues', user => 'mgmt_user', password => 'nope');
	return "$s " . $json->encode(dec($b));
});
compare('unknown queue: 404 shape', '404 {"error":"Object Not Found","reason":"Not Found"}', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/queues/%2F/no_such_queue');
	return "$s " . $json->encode(dec($b));
});
compare('unknown vhost: 404 shape', '404 {"error":"Object Not Found","reason":"Not Found"}', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/queues/no_such_vhost');
	return "$s " . $json->encode(dec($b));
});
compare('unknown exchange: 404', '404', sub { (http($_[0], 'GET', '/api/exchanges/%2F/no_such_x'))[0] });
compare('DELETE of an unknown queue: 404', '404', sub { (http($_[0], 'DELETE', '/api/queues/%2F/no_such_q'))[0] });
compare('PATCH /api/queues: 405 with Allow', '405 1', sub {
	my ($s, $b, $h) = http($_[0], 'PATCH', '/api/queues');
	return "$s " . ($h =~ /^allow: .*GET/mi ? 1 : 0);
});
compare('a body that is not JSON: 400 not_json', '400 {"error":"bad_request","reason":"not_json"}', sub {
	my ($s, $b) = http($_[0], 'PUT', '/api/queues/%2F/cq1', body => '{bad');
	return "$s " . $json->encode(dec($b));
});
compare('PUT queue with string booleans: 201, then 204', '201 204', sub {
	my ($s1) = http($_[0], 'PUT', '/api/queues/%2F/cq1', body => '{"durable":"true","auto_delete":"false","arguments":{}}');
	my ($s2) = http($_[0], 'PUT', '/api/queues/%2f/cq1', body => '{"durable":"true"}');
	return "$s1 $s2";
});
compare('an inequivalent redeclare: 400 bad_request', '400 bad_request', sub {
	my ($s, $b) = http($_[0], 'PUT', '/api/queues/%2F/cq1', body => '{"durable":"false"}');
	return "$s " . ((dec($b) // {})->{error} // $b);
});
compare('vhost %2f and %2F name the same queue', '200 cq1 / 200 cq1 /', sub {
	my ($s1, $b1) = http($_[0], 'GET', '/api/queues/%2f/cq1');
	my ($s2, $b2) = http($_[0], 'GET', '/api/queues/%2F/cq1');
	my ($o1, $o2) = (dec($b1) // {}, dec($b2) // {});
	return "$s1 " . ($o1->{name} // '') . ' ' . ($o1->{vhost} // '') . " $s2 " . ($o2->{name} // '') . ' ' . ($o2->{vhost} // '');
});
compare('the queue object has RabbitMQ\'s fields',
	'["arguments","auto_delete","consumers","durable","exclusive","messages","messages_ready","messages_unacknowledged","name","node","state","type","vhost"]',
	sub {
		# RabbitMQ adds the counts at its first statistics emission (every
		# 5 s, later on a loaded machine): ask until they are there
		my @want = qw(arguments auto_delete consumers durable exclusive
		  messages messages_ready messages_unacknowledged name node state type vhost);
		my $deadline = time + 120;
		my @have;
		while (1)
		{
			my ($s, $b) = http($_[0], 'GET', '/api/queues/%2F/cq1');
			my $o = dec($b) // {};
			@have = grep { exists $o->{$_} } @want;
			last if @have == @want || time > $deadline;
			sleep 1;
		}
		return \@have;
	});
compare('publish routed', '200 {"routed":true}', sub {
	my ($s, $b) = http($_[0], 'POST', '/api/exchanges/%2F/amq.default/publish',
		body => '{"routing_key":"cq1","payload":"aGVsbG8=","payload_encoding":"base64","properties":{"headers":{"h":"v"},"content_type":"text/plain"}}');
	return "$s " . $json->encode(dec($b));
});
compare('publish unroutable', '200 {"routed":false}', sub {
	my ($s, $b) = http($_[0], 'POST', '/api/exchanges/%2F/amq.direct/publish',
		body => '{"routing_key":"nowhere","payload":"x","payload_encoding":"string","properties":{}}');
	return "$s " . $json->encode(dec($b));
});
compare('get reject_requeue_true with count as a string, then it is redelivered',
	'hello text/plain v false | hello true', sub {
	my ($s1, $b1) = http($_[0], 'POST', '/api/queues/%2F/cq1/get',
		body => '{"count":"1","ackmode":"reject_requeue_true","encoding":"auto","truncate":"50000"}');
	my ($s2, $b2) = http($_[0], 'POST', '/api/queues/%2F/cq1/get',
		body => '{"count":"1","ackmode":"ack_requeue_false","encoding":"auto"}');
	my ($m1) = @{ dec($b1) // [ {} ] };
	my ($m2) = @{ dec($b2) // [ {} ] };
	return join(' ', $m1->{payload} // $b1, $m1->{properties}{content_type} // '-',
		$m1->{properties}{headers}{h} // '-', $json->encode($m1->{redelivered}), '|',
		$m2->{payload} // $b2, $json->encode($m2->{redelivered}));
});
compare('purge through /contents: 204', '204', sub { (http($_[0], 'DELETE', '/api/queues/%2F/cq1/contents'))[0] });
compare('health check alarms', '200 {"status":"ok"}', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/health/checks/alarms');
	return "$s " . $json->encode(dec($b));
});
compare('aliveness-test', '200 {"status":"ok"}', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/aliveness-test/%2F', user => 'mgmt_admin');
	return "$s " . $json->encode(dec($b));
});
compare('whoami', 'mgmt_admin administrator', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/whoami', user => 'mgmt_admin');
	my $o = dec($b) // {};
	return ($o->{name} // $b) . ' ' . (ref $o->{tags} ? $o->{tags}[0] : $o->{tags} // '');
});

# users: rabbitmqadmin's declare, list and delete user; a user that is not an
# administrator is refused as RabbitMQ refuses it
compare('rabbitmqadmin declare user', '0 user declared', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'declare', 'user', 'name=mu_new', 'password=mu-pw',
		'tags=monitoring');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin list users', '{"name":"mu_new","tags":["monitoring"]}', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'list', 'users', 'name', 'tags', '-f', 'raw_json');
	my ($u) = grep { $_->{name} eq 'mu_new' } @{ dec($out) // [] };
	return $u ? { name => $u->{name}, tags => $u->{tags} } : "$rc $out";
});
compare('one user\'s fields', '200 hashing_algorithm,limits,name,password_hash,tags', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/users/mu_new', user => 'mgmt_admin');
	return "$s " . join(',', sort keys %{ dec($b) // {} });
});
compare('the new user logs in, with its tags', 'mu_new monitoring', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/whoami', user => 'mu_new');
	my $o = dec($b) // {};
	return ($o->{name} // "$s $b") . ' ' . join(',', @{ $o->{tags} // [] });
});
for my $call ([ 'GET', '/api/users' ], [ 'GET', '/api/users/mu_new' ],
	[ 'PUT', '/api/users/mu_other', '{"password":"x","tags":""}' ],
	[ 'DELETE', '/api/users/mu_new' ], [ 'GET', '/api/permissions' ])
{
	compare("$call->[0] $call->[1] by a user that is not an administrator: 401",
		'401 {"error":"not_authorised","reason":"Not administrator user"}', sub {
		my ($s, $b) = http($_[0], $call->[0], $call->[1], body => $call->[2]);
		return "$s " . $json->encode(dec($b));
	});
}
compare('an unknown user: 404', '404', sub { (http($_[0], 'GET', '/api/users/mu_nobody', user => 'mgmt_admin'))[0] });
compare('a PUT without tags: 400', '400', sub {
	(http($_[0], 'PUT', '/api/users/mu_other', user => 'mgmt_admin', body => '{"password":"x"}'))[0];
});
compare('rabbitmqadmin declare user again: a new password and tags', '0 user declared | 401 | mu_new management', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'declare', 'user', 'name=mu_new', 'password=mu-pw2',
		'tags=management');
	my ($s1) = http($_[0], 'GET', '/api/whoami', user => 'mu_new', password => 'mu-pw');
	my ($s2, $b) = http($_[0], 'GET', '/api/whoami', user => 'mu_new', password => 'mu-pw2');
	my $o = dec($b) // {};
	return ("$rc $out" =~ s/\s+$//r) . " | $s1 | " . ($o->{name} // "$s2 $b") . ' '
	  . join(',', @{ $o->{tags} // [] });
});
$pw{mu_new} = 'mu-pw2';

# permissions: RabbitMQ's patterns naming the objects one by one are grants
compare('no permission yet: 404', '404', sub { (http($_[0], 'GET', '/api/permissions/%2F/mu_new', user => 'mgmt_admin'))[0] });
compare('objects to grant on', '201 201 201', sub {
	my ($s1) = http($_[0], 'PUT', '/api/queues/%2F/pm_q', body => '{"durable":true}');
	my ($s2) = http($_[0], 'PUT', '/api/exchanges/%2F/pm_x', body => '{"type":"topic","durable":true}');
	my ($s3) = http($_[0], 'POST', '/api/bindings/%2F/e/pm_x/q/pm_q', body => '{"routing_key":"#","arguments":{}}');
	return "$s1 $s2 $s3";
});
compare('rabbitmqadmin declare permission', '0 permission declared', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'declare', 'permission', 'vhost=/', 'user=mu_new',
		'configure=^$', 'write=^(pm_q|pm_x)$', 'read=^(pm_q)$');
	return "$rc $out" =~ s/\s+$//r;
});
compare('rabbitmqadmin list permissions',
	'{"configure":"^$","read":"^(pm_q)$","user":"mu_new","vhost":"/","write":"^(pm_q|pm_x)$"}', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'list', 'permissions', '-f', 'raw_json');
	my ($p) = grep { $_->{user} eq 'mu_new' } @{ dec($out) // [] };
	return $p ? $p : "$rc $out";
});
compare('a user\'s permissions, a vhost\'s, one', '200 1 200 1 200 ^(pm_q|pm_x)$', sub {
	my ($s1, $b1) = http($_[0], 'GET', '/api/users/mu_new/permissions', user => 'mgmt_admin');
	my ($s2, $b2) = http($_[0], 'GET', '/api/vhosts/%2F/permissions', user => 'mgmt_admin');
	my ($s3, $b3) = http($_[0], 'GET', '/api/permissions/%2F/mu_new', user => 'mgmt_admin');
	return join ' ', $s1, scalar(@{ dec($b1) // [] }), $s2,
	  scalar(grep { $_->{user} eq 'mu_new' } @{ dec($b2) // [] }), $s3, (dec($b3) // {})->{write} // $b3;
});
compare('the permission lets the user publish and get, not configure',
	'{"routed":true} | granted | 401', sub {
	my $srv = $_[0];
	my ($s1, $b1) = http($srv, 'POST', '/api/exchanges/%2F/pm_x/publish', user => 'mu_new',
		body => '{"routing_key":"a.b","payload":"granted","payload_encoding":"string","properties":{}}');
	my $got = eventually($srv, 'granted', sub {
		my ($s, $b) = http($srv, 'POST', '/api/queues/%2F/pm_q/get', user => 'mu_new',
			body => '{"count":1,"ackmode":"ack_requeue_false","encoding":"auto"}');
		my ($m) = @{ dec($b) // [] };
		return $m ? $m->{payload} : "$s $b";
	});
	my ($s3) = http($srv, 'DELETE', '/api/queues/%2F/pm_q', user => 'mu_new');
	return join(' | ', $json->encode(dec($b1) // $b1), $got, $s3);
});
compare('DELETE the permission: 204, then 404', '204 404', sub {
	my ($s1) = http($_[0], 'DELETE', '/api/permissions/%2F/mu_new', user => 'mgmt_admin');
	my ($s2) = http($_[0], 'GET', '/api/permissions/%2F/mu_new', user => 'mgmt_admin');
	return "$s1 $s2";
});
compare('rabbitmqadmin delete user', '0 user deleted | 404', sub {
	my ($rc, $out) = admin($_[0], 'mgmt_admin', 'delete', 'user', 'name=mu_new');
	my ($s) = http($_[0], 'GET', '/api/users/mu_new', user => 'mgmt_admin');
	return ("$rc $out" =~ s/\s+$//r) . " | $s";
});
http($_, 'DELETE', '/api/exchanges/%2F/pm_x') for @servers;
http($_, 'DELETE', '/api/queues/%2F/pm_q') for @servers;

# policies and parameters: none in queue_ext, none set in RabbitMQ
for my $what ('policies', 'parameters', 'operator_policies')
{
	compare("rabbitmqadmin list $what", '0 No items', sub {
		my ($rc, $out) = admin($_[0], 'mgmt_admin', 'list', $what);
		return "$rc $out" =~ s/\s+$//r;
	});
}
compare('GET an unknown policy: 404', '404', sub { (http($_[0], 'GET', '/api/policies/%2F/nope', user => 'mgmt_admin'))[0] });

# paging of exchanges and vhosts, as of queues
compare('exchanges paged, filtered by name',
	'200 total>=filtered item_count=2 filtered_count=3 page=1 page_size=2 page_count=2 px_1,px_2', sub {
	my $srv = $_[0];
	http($srv, 'PUT', "/api/exchanges/%2F/px_$_", body => '{"type":"fanout","durable":true}') for 1 .. 3;
	my ($s, $b) = http($srv, 'GET', '/api/exchanges/%2F?page=1&page_size=2&name=px_&sort=name&columns=name');
	http($srv, 'DELETE', "/api/exchanges/%2F/px_$_") for 1 .. 3;
	my $o = dec($b);
	return "$s $b" unless ref $o eq 'HASH';
	return join ' ', $s, ($o->{total_count} >= $o->{filtered_count} ? 'total>=filtered' : 'total<filtered'),
	  map({ "$_=$o->{$_}" } qw(item_count filtered_count page page_size page_count)),
	  join(',', map { $_->{name} } @{ $o->{items} });
});
compare('vhosts paged', '200 1 1 /', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/vhosts?page=1&columns=name');
	my $o = dec($b) // {};
	return join ' ', $s, $o->{filtered_count} // '-', $o->{item_count} // '-',
	  join(',', map { $_->{name} } @{ $o->{items} // [] });
});
compare('connections: a page out of range', '400 page_out_of_range', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/connections?page=5&page_size=1', user => 'mgmt_admin');
	return "$s " . ((dec($b) // {})->{error} // $b);
});
compare('bindings are not paged (RabbitMQ 3.10)', 'ARRAY', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/bindings/%2F?page=1');
	return ref(dec($b)) || "$s $b";
});

compare('a role without privileges may not declare: 401 not_authorised',
	'401 {"error":"not_authorised","reason":"Access refused."}', sub {
	my ($s, $b) = http($_[0], 'PUT', '/api/queues/%2F/np_q', user => 'mgmt_nopriv', body => '{"durable":true}');
	return "$s " . $json->encode(dec($b));
});
compare('... nor publish (RabbitMQ: 400 and the channel\'s 403)',
	'400 {"error":"bad_request","reason":"403 ACCESS_REFUSED - access to exchange \'amq.default\' in vhost \'/\' refused for user \'mgmt_nopriv\'"}', sub {
	my ($s, $b) = http($_[0], 'POST', '/api/exchanges/%2F/amq.default/publish', user => 'mgmt_nopriv',
		body => '{"routing_key":"cq1","payload":"x","payload_encoding":"string","properties":{}}');
	return "$s " . $json->encode(dec($b));
});
compare('... nor get', '401 {"error":"not_authorised","reason":"ACCESS_REFUSED - access to queue \'cq1\' in vhost \'/\' refused for user \'mgmt_nopriv\'"}', sub {
	my ($s, $b) = http($_[0], 'POST', '/api/queues/%2F/cq1/get', user => 'mgmt_nopriv',
		body => '{"count":1,"ackmode":"ack_requeue_true","encoding":"auto"}');
	return "$s " . $json->encode(dec($b));
});
compare('... nor purge', '401 {"error":"not_authorised","reason":"Access refused."}', sub {
	my ($s, $b) = http($_[0], 'DELETE', '/api/queues/%2F/cq1/contents', user => 'mgmt_nopriv');
	return "$s " . $json->encode(dec($b));
});
compare('... nor delete a queue', '401', sub { (http($_[0], 'DELETE', '/api/queues/%2F/cq1', user => 'mgmt_nopriv'))[0] });
compare('DELETE queue: 204', '204', sub { (http($_[0], 'DELETE', '/api/queues/%2F/cq1'))[0] });

# RabbitMQ's paging of /api/queues (rabbit_mgmt_util: page, page_size,
# name, use_regex), on five queues the name filter picks out
compare('five queues to page through', '201 201 201 201 201', sub {
	return join ' ', map { (http($_[0], 'PUT', "/api/queues/%2F/pgq_$_", body => '{"durable":true}'))[0] } 1 .. 5;
});

# status, the paged shape's fields in the order written (RabbitMQ 3.10
# sorts them; total_count counts every queue, so only that it is at least
# filtered_count), items' names
sub paged
{
	my ($srv, $query) = @_;
	my ($s, $b) = http($srv, 'GET', "/api/queues/%2F?$query");
	my $o = dec($b);
	return "$s $b" unless $s eq '200' && ref $o eq 'HASH';
	my @order = $b =~ /"(total_count|item_count|filtered_count|page|page_size|page_count|items)":/g;
	return join ' ', $s, join(',', @order[0 .. 6]),
	  ($o->{total_count} // -1) >= ($o->{filtered_count} // 0) ? 'total>=filtered' : "total $o->{total_count}",
	  map({ "$_=" . ($o->{$_} // '-') } qw(item_count filtered_count page page_size page_count)),
	  join(',', map { $_->{name} } @{ $o->{items} // [] });
}
compare('page 2 of 2 a page, filtered by name',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=2 filtered_count=5 page=2 page_size=2 page_count=3 pgq_3,pgq_4',
	sub { paged($_[0], 'page=2&page_size=2&name=pgq_&columns=name') });
compare('the last page is short; the name filter ignores case',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=1 filtered_count=5 page=3 page_size=2 page_count=3 pgq_5',
	sub { paged($_[0], 'page=3&page_size=2&name=PGQ_') });
compare('page_size defaults to 100',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=5 filtered_count=5 page=1 page_size=100 page_count=1 pgq_1,pgq_2,pgq_3,pgq_4,pgq_5',
	sub { paged($_[0], 'page=1&name=pgq_') });
compare('use_regex=true: a regular expression, without case',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=2 filtered_count=2 page=1 page_size=10 page_count=1 pgq_2,pgq_4',
	sub { paged($_[0], 'page=1&page_size=10&name=%5EPGQ_%5B24%5D%24&use_regex=true') });
compare('sorted, reversed, then paged',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=2 filtered_count=5 page=1 page_size=2 page_count=3 pgq_5,pgq_4',
	sub { paged($_[0], 'page=1&page_size=2&name=pgq_&sort=name&sort_reverse=true') });
compare('the page after the last: empty',
	'200 filtered_count,item_count,items,page,page_count,page_size,total_count total>=filtered item_count=0 filtered_count=5 page=2 page_size=5 page_count=1 ',
	sub { paged($_[0], 'page=2&page_size=5&name=pgq_') });
compare('a page past that: 400 page_out_of_range',
	'400 {"error":"page_out_of_range","reason":"Page out of range, page: 4 page size: 2, len: 5"}',
	sub { paged($_[0], 'page=4&page_size=2&name=pgq_') });
compare('page 0: 400 invalid_pagination_parameters',
	'400 {"error":"invalid_pagination_parameters","reason":"Invalid pagination parameters: page number 0, page size undefined"}',
	sub { paged($_[0], 'page=0') });
compare('page_size over 500: 400 invalid_pagination_parameters',
	'400 {"error":"invalid_pagination_parameters","reason":"Invalid pagination parameters: page number 1, page size 501"}',
	sub { paged($_[0], 'page=1&page_size=501') });
compare('a page that is not a number: 400 bad_request',
	'400 {"error":"bad_request","reason":"Pagination parameters are invalid"}',
	sub { paged($_[0], 'page=one') });
compare('a regular expression that does not compile: 400 bad_request',
	'400 {"error":"bad_request","reason":"Pagination parameters are invalid"}',
	sub { paged($_[0], 'page=1&name=%5Bpgq&use_regex=true') });
compare('page_size alone does not page', 'ARRAY', sub {
	my ($s, $b) = http($_[0], 'GET', '/api/queues/%2F?page_size=2&columns=name');
	return ref(dec($b)) || "$s $b";
});
compare('the five queues deleted', '204 204 204 204 204', sub {
	return join ' ', map { (http($_[0], 'DELETE', "/api/queues/%2F/pgq_$_"))[0] } 1 .. 5;
});
compare('binding by properties key, and its 404 once deleted', '201 200 204 404', sub {
	my $srv = $_[0];
	http($srv, 'PUT', '/api/queues/%2F/bq', body => '{"durable":true}');
	my ($s1) = http($srv, 'POST', '/api/bindings/%2F/e/amq.direct/q/bq', body => '{"routing_key":"rk1","arguments":{}}');
	my ($s2) = http($srv, 'GET', '/api/bindings/%2F/e/amq.direct/q/bq/rk1');
	my ($s3) = http($srv, 'DELETE', '/api/bindings/%2F/e/amq.direct/q/bq/rk1');
	my ($s4) = http($srv, 'GET', '/api/bindings/%2F/e/amq.direct/q/bq/rk1');
	http($srv, 'DELETE', '/api/queues/%2F/bq');
	return "$s1 $s2 $s3 $s4";
});

# ---------------------------------------------------------------------------
# 3. queue_ext alone
# ---------------------------------------------------------------------------

# a bad ackmode: 400 (RabbitMQ 3.10 crashes on it: 500)
{
	my ($s, $b) = http(\%qe, 'POST', '/api/queues/%2F/ta_q/get', user => 'mgmt_admin',
		body => '{"count":1,"ackmode":"bogus","encoding":"auto"}');
	is("$s " . ((dec($b) // {})->{error} // $b), '400 bad_request', 'get with a bad ackmode: 400');
}

# privileges: a role sees the queues it holds a privilege on (RabbitMQ shows
# every queue of a vhost the user may use)
{
	http(\%qe, 'PUT', '/api/queues/%2F/mine', body => '{"durable":true}');
	my ($s, $b) = http(\%qe, 'GET', '/api/queues', user => 'mgmt_nopriv');
	is("$s " . scalar(@{ dec($b) // [] }), '200 0', 'a role without privileges sees no queue');
	($s) = http(\%qe, 'GET', '/api/queues/%2F/mine', user => 'mgmt_nopriv');
	is($s, '404', '... and a queue it may not see is not found');
	($s, $b) = http(\%qe, 'GET', '/api/queues', user => 'mgmt_user');
	ok((grep { $_->{name} eq 'mine' } @{ dec($b) // [] }), 'its owner sees it');
	$node->safe_psql('postgres', q{SELECT mq.grant('consume', 'queue', 'mine', 'mgmt_nopriv')});
	($s, $b) = http(\%qe, 'GET', '/api/queues/%2F/mine', user => 'mgmt_nopriv');
	is($s, '200', 'granted consume, the role sees it');
	($s, $b) = http(\%qe, 'GET', '/api/definitions', user => 'mgmt_user');
	is($s, '401', 'exporting definitions reads the catalog: superusers only');
}

# the password rule: a role PostgreSQL lets in without a password is refused
{
	my ($s, $b) = http(\%qe, 'GET', '/api/overview', user => 'mgmt_trust', password => 'anything');
	is("$s " . $json->encode(dec($b)), '401 {"error":"not_authorized","reason":"Login failed"}',
		'a login PostgreSQL did not check the password of is refused');
	like(PostgreSQL::Test::Utils::slurp_file($log), qr/login of "mgmt_trust" refused: PostgreSQL let the role in without checking/,
		'... and the log says why');
}

# queue_ext's own paths
$node->safe_psql('postgres', q{
	SET ROLE mgmt_user;
	SELECT mq.queue_declare('st', type => 'stream', arguments => '{"partitions": 2}');
	SELECT mq.group_declare('st', 'g1', start => 'earliest');
	SELECT mq.publish('', 'st', 'm' || i, key => 'k' || (i % 2)) FROM generate_series(1, 6) i;
	SELECT mq.exchange_declare('dlx', 'fanout');
	SELECT mq.queue_declare('dlq');
	SELECT mq.bind('dlq', 'dlx');
	SELECT mq.queue_declare('work', arguments => '{"x-dead-letter-exchange": "dlx"}');
	SELECT mq.send('work', 'bad'::text);
	SELECT mq.send('work', 'later'::text, delay => '1 hour');
});
$node->safe_psql('postgres', q{
	SET ROLE mgmt_user;
	SELECT mq.nack('work', array_agg(msg_id), requeue => false) FROM mq.consume('work', 1);
});
{
	my ($s, $b) = http(\%qe, 'GET', '/api/queue-ext/streams/%2F');
	my ($st) = grep { $_->{name} eq 'st' } @{ dec($b) // [] };
	is(join(' ', $s, $st->{partitions} // '-', $st->{messages} // '-',
			scalar(@{ $st->{partitions_detail} // [] })), '200 2 6 2', 'streams: partitions and messages');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/groups');
	my ($g) = grep { $_->{name} eq 'g1' } @{ dec($b) // [] };
	is(join(' ', $s, $g->{stream} // '-', $g->{lag} // '-', scalar(@{ $g->{partitions} // [] })),
		'200 st 6 2', 'groups: lag over both partitions');
	($s) = http(\%qe, 'POST', '/api/queue-ext/groups/%2F/g1/seek', body => '{"stream":"st","partition":null,"offset":100}');
	is($s, '204', 'seek to the end');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/groups');
	($g) = grep { $_->{name} eq 'g1' } @{ dec($b) // [] };
	is($g->{lag}, 0, '... and the lag is 0');
	($s, $b) = http(\%qe, 'POST', '/api/queue-ext/groups/%2F/g1/seek', body => '{"stream":"st","partition":9,"offset":0}');
	is($s, '400', 'seek to a partition out of range: 400');
	($s, $b) = http(\%qe, 'POST', '/api/queue-ext/groups/%2F/nog/seek', body => '{"stream":"st","offset":0}');
	is($s, '404', 'seek of an unknown group: 404');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/dead-letters');
	my ($d) = grep { $_->{queue} eq 'dlq' } @{ dec($b) // [] };
	is(join(' ', $s, $d->{messages} // '-', $json->encode($d->{source})), '200 1 ["work"]',
		'dead letters: dlq holds one, from work');
	($s, $b) = http(\%qe, 'POST', '/api/queue-ext/queues/%2F/dlq/redrive', body => '{"to":"work","count":null}');
	is("$s $b", '200 {"moved":1}', 'redrive moves it back');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/delayed', user => 'mgmt_admin');
	my ($dl) = @{ dec($b) // [] };
	is(join(' ', $s, $dl->{queue_or_exchange} // '-'), '200 work', 'delayed: one for work');
	($s) = http(\%qe, 'GET', '/api/queue-ext/delayed');
	is($s, '401', 'the delayed list is a superuser\'s');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/trace/%2F?key=k1');
	my @ev = map { $_->{event} } @{ dec($b) // [] };
	ok($s == 200 && (grep { $_ eq 'published' } @ev) == 3, 'trace by key: three messages published')
	  or diag("$s $b");
	($s) = http(\%qe, 'GET', '/api/queue-ext/trace/%2F?id=1');
	is($s, '404', 'trace of an unknown id: 404');
	($s, $b) = http(\%qe, 'GET', '/api/queue-ext/replication');
	my $r = dec($b) // {};
	is(join(' ', $s, $r->{role} // '-', $r->{quorum_unavailable} // '-'), '200 primary wait',
		'replication state');
	($s) = http(\%qe, 'GET', '/api/queue-ext/nothing');
	is($s, '404', 'an unknown queue_ext path: 404');
}

# users and permissions: what RabbitMQ has no equivalent of
$node->safe_psql('postgres', q{
	SET password_encryption = 'scram-sha-256';
	CREATE ROLE mgmt_roles LOGIN CREATEROLE PASSWORD 'roles-pw';
	ALTER SYSTEM SET log_statement = 'all';
	SELECT pg_reload_conf();
});
qe_hba_first($node, "local all mgmt_roles,mu_made scram-sha-256\n");
$pw{mgmt_roles} = 'roles-pw';
{
	my $log_from = -s $node->logfile;
	my ($s) = http(\%qe, 'PUT', '/api/users/mu_made', user => 'mgmt_roles',
		body => '{"password":"Clear-Secret-17","tags":"monitoring"}');
	is($s, '201', 'a CREATEROLE role (not a superuser) creates a user');
	my ($s2, $b) = http(\%qe, 'GET', '/api/whoami', user => 'mu_made', password => 'Clear-Secret-17');
	is("$s2 $b", '200 {"name":"mu_made","tags":["monitoring"]}', '... which logs in, a member of pg_monitor');
	my $slog = substr(PostgreSQL::Test::Utils::slurp_file($node->logfile), $log_from);
	ok($slog =~ /CREATE ROLE "?mu_made"? LOGIN PASSWORD 'SCRAM-SHA-256\$/ && $slog !~ /Clear-Secret-17/,
		'the password reached PostgreSQL hashed, never in clear');
	($s, $b) = http(\%qe, 'PUT', '/api/users/mu_made', user => 'mgmt_roles',
		body => '{"password":"x","tags":"administrator"}');
	is("$s $b", '401 {"error":"not_authorised","reason":"Not administrator user"}',
		'... but PostgreSQL refuses it a superuser: RabbitMQ\'s answer');
	($s2, $b) = http(\%qe, 'GET', '/api/whoami', user => 'mu_made', password => 'Clear-Secret-17');
	is($s2, '200', '... and the refused PUT changed nothing');
	($s, $b) = http(\%qe, 'GET', '/api/users', user => 'mgmt_roles');
	my @users = @{ dec($b) // [] };
	ok($s == 200 && @users >= 5 && !(grep { $_->{password_hash} ne '' } @users),
		'the users, and no password hash');
	($s, $b) = http(\%qe, 'PUT', '/api/users/mu_made', user => 'mgmt_roles',
		body => '{"password":"x","tags":"policymaker"}');
	like("$s $b", qr/^400 .*tag \\"policymaker\\" is not kept/, 'a tag queue_ext cannot keep: 400');
	($s, $b) = http(\%qe, 'PUT', '/api/users/mu_made', user => 'mgmt_roles',
		body => '{"password_hash":"abc","tags":""}');
	like("$s $b", qr/^400 .*password_hash is not taken/, 'a RabbitMQ hash: 400');
	($s) = http(\%qe, 'PUT', '/api/users/pg_monitor', user => 'mgmt_admin',
		body => '{"password":"x","tags":""}');
	is($s, '400', 'a group role is not made a login');
	my $odd = q{mu "odd" 'name'};
	($s) = http(\%qe, 'PUT', '/api/users/mu%20%22odd%22%20%27name%27', user => 'mgmt_roles',
		body => '{"password":"odd-pw","tags":"management"}');
	($s2, $b) = http(\%qe, 'GET', '/api/users/mu%20%22odd%22%20%27name%27', user => 'mgmt_admin');
	is("$s $s2 " . ((dec($b) // {})->{name} // ''), "201 200 $odd", 'a name with quotes and a space');
	($s) = http(\%qe, 'DELETE', '/api/users/mu%20%22odd%22%20%27name%27', user => 'mgmt_admin');
	is($s, '204', '... deleted');
	($s, $b) = http(\%qe, 'GET', '/api/users/without-permissions', user => 'mgmt_admin');
	my %wp = map { $_->{name} => 1 } @{ dec($b) // [] };
	ok($s == 200 && $wp{mu_made} && $wp{mgmt_trust} && !$wp{mgmt_admin} && !$wp{mgmt_nopriv},
		'users without permissions: not the superuser, nor a role granted a privilege');

	# permissions a grant cannot be
	http(\%qe, 'PUT', '/api/queues/%2F/pm_q2', body => '{"durable":true}');
	for my $case ([ '.*', '^$', '^$', qr/configure pattern ".\*" cannot be a grant/ ],
		[ '^pm.*', '^$', '^$', qr/configure pattern "\^pm\.\*" cannot be a grant/ ],
		[ '^$', '^(pm_q2|nope)$', '^$', qr/not in vhost "\/": nope/ ])
	{
		($s, $b) = http(\%qe, 'PUT', '/api/permissions/%2F/mu_made', user => 'mgmt_admin',
			body => $json->encode({ configure => $case->[0], write => $case->[1], read => $case->[2] }));
		my $reason = (dec($b) // {})->{reason} // $b;
		ok($s == 400 && $reason =~ $case->[3], "permission \"$case->[0]\" \"$case->[1]\": 400")
		  or diag("$s $b");
	}
	($s, $b) = http(\%qe, 'PUT', '/api/permissions/%2F/mgmt_admin', user => 'mgmt_admin',
		body => '{"configure":"^$","write":"^$","read":"^$"}');
	like("$s $b", qr/^400 .*superuser/, 'a superuser\'s permission is not narrowed');
	($s) = http(\%qe, 'PUT', '/api/permissions/%2F/mgmt_admin', user => 'mgmt_admin',
		body => '{"configure":".*","write":".*","read":".*"}');
	is($s, '204', '... and ".*" is already true of it');
	($s) = http(\%qe, 'PUT', '/api/permissions/%2F/mu_made', user => 'mgmt_admin',
		body => '{"configure":"^$","write":"^(pm_q2)$","read":"^(pm_q2)$"}');
	is($s, '201', 'a permission naming a queue');
	($s) = http(\%qe, 'PUT', '/api/permissions/%2F/mu_made', user => 'mgmt_roles',
		body => '{"configure":"^$","write":"^$","read":"^$"}');
	is($s, '401', 'a CREATEROLE role may not read the grants: 401');
	($s) = http(\%qe, 'DELETE', '/api/users/mu_made', user => 'mgmt_admin');
	is($s, '204', 'a user with a permission is deleted');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM mq.cat_grant
		WHERE grantee <> 0 AND grantee NOT IN (SELECT oid FROM pg_roles)}), '0',
		'... and no grant is left to its OID');
	http(\%qe, 'DELETE', '/api/queues/%2F/pm_q2');

	($s, $b) = http(\%qe, 'PUT', '/api/policies/%2F/ttl', user => 'mgmt_admin',
		body => '{"pattern":".*","definition":{"message-ttl":1000},"apply-to":"queues"}');
	like("$s $b", qr/^400 .*queue_ext has no policies/, 'PUT of a policy: 400, and why');
	($s, $b) = http(\%qe, 'GET', '/api/global-parameters', user => 'mgmt_admin');
	is("$s $b", '200 []', 'no global parameters');
	$node->safe_psql('postgres', q{ALTER SYSTEM RESET log_statement; SELECT pg_reload_conf();});
}

# the bound on logins in progress (--max-logins), on a second gateway: logins
# held by a lock on pg_authid, which PostgreSQL reads to check a password
{
	$node->safe_psql('postgres', q{
		SET password_encryption = 'scram-sha-256';
		CREATE ROLE mu_lock1 LOGIN PASSWORD 'l1';
		CREATE ROLE mu_lock2 LOGIN PASSWORD 'l2';
		CREATE ROLE mu_lock3 LOGIN PASSWORD 'l3';
	});
	my $port2 = PostgreSQL::Test::Cluster::get_free_port();
	my ($gw2, $amqp2, $log2) = qe_gateway($node, log => $node->basedir . '/mq-amqp-bound.log',
		flags => [ '--http-listen', "127.0.0.1:$port2", '--max-logins', '2' ]);
	ok(qe_listening($port2, handle => $gw2), 'a second gateway, --max-logins 2');
	my $srv2 = { name => 'bounded', port => $port2 };
	my $lock = $node->background_psql('postgres');
	$lock->query_safe('BEGIN; LOCK TABLE pg_authid IN ACCESS EXCLUSIVE MODE');
	my @held;
	for my $i (1, 2)
	{
		my ($out, $err) = ('', '');
		push @held, [ IPC::Run::start([ $curl, '-s', '-o', '/dev/null', '-w', '%{http_code}',
			'-u', "mu_lock$i:l$i", "http://127.0.0.1:$port2/api/whoami" ], '>', \$out, '2>', \$err),
			\$out ];
	}
	my $waiting = 0;
	for (1 .. 600)
	{
		$waiting = $lock->query_safe(q{SELECT count(*) FROM pg_locks
			WHERE NOT granted AND relation = 'pg_authid'::regclass});
		last if $waiting >= 2;
		select(undef, undef, undef, 0.1);
	}
	is($waiting, '2', 'two logins wait for PostgreSQL');
	my ($s, $b, $h) = http($srv2, 'GET', '/api/whoami', user => 'mu_lock3', password => 'l3');
	is("$s $b", '503 {"error":"service_unavailable","reason":"2 logins in progress (max_logins)"}',
		'a third is refused at once: 503');
	like($h, qr/^Retry-After: 1/mi, '... with Retry-After');
	$lock->query_safe('COMMIT');
	$lock->quit;
	$_->[0]->finish for @held;
	is(join(' ', map { ${ $_->[1] } } @held), '200 200', 'the two held logins then succeed');
	($s) = http($srv2, 'GET', '/api/whoami', user => 'mu_lock3', password => 'l3');
	is($s, '200', 'and the third, once they are done');
	like(PostgreSQL::Test::Utils::slurp_file($log2), qr/login of "mu_lock3" refused: 2 logins in progress \(max_logins\)/,
		'the refusal is in the log');
	qe_gateway_stop($gw2, $log2);
}

# static files
{
	my ($s, $b, $h) = http(\%qe, 'GET', '/', user => undef);
	ok($s == 200 && $b =~ /queue_ext/ && $h =~ m{^content-type: text/html}mi, '/ is index.html');
	($s, $b, $h) = http(\%qe, 'GET', '/js/app.js', user => undef);
	ok($s == 200 && $h =~ m{^content-type: text/javascript}mi && $h =~ /^cache-control: max-age/mi,
		'a script with its type and cache header');
	for my $p ('/../secret/s', '/js/..%2f..%2fetc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/js/', '/nothing.html')
	{
		($s) = http(\%qe, 'GET', $p, user => undef);
		is($s, '404', "no file at $p");
	}
	($s) = http(\%qe, 'POST', '/index.html', user => undef, body => '{}');
	is($s, '405', 'POST of a file: 405');
}

qe_gateway_stop($gw, $log);
done_testing();
