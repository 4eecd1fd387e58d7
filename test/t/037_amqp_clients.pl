# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# Real AMQP 0-9-1 client programs (test/amqp_clients/, README.md there)
# run against a real RabbitMQ and against queue_ext's gateway mq-amqp, and
# their outputs compared:
#  1. Debian's rabbitmq-server, started here as this user on loopback
#     ports (as test 036 does), with a second vhost: every pika script (the
#     six tutorials, publisher confirms, mandatory returns, two vhosts kept
#     apart, a Celery worker and its client) must pass and the check suite
#     pika_checks.py must print "ok" for every check -- RabbitMQ is the
#     reference; the same with the amqplib (npm) scripts when node and npm
#     are installed;
#  2. a queue_ext node, a role with a password (scram-sha-256, so a bad
#     password really is refused), a second database (the second vhost),
#     and mq-amqp from PostgreSQL's bindir on
#     a free port in front of it: the same scripts, and each one's
#     transcript must be the same as RabbitMQ's (is_deeply per script), and
#     each check's line the same as RabbitMQ's (one test per check).
# mq-amqp missing is a failure, not a skip; QE_AMQP_PENDING=1 skips the
# gateway half (while the gateway is not merged yet).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

our $TODO;

my $clients = "$FindBin::RealBin/../amqp_clients";
my $python = '/usr/bin/python3';
plan skip_all => qe_rabbitmq_missing() if qe_rabbitmq_missing();
plan skip_all => 'pika is not installed (Debian package python3-pika)'
  unless system($python, '-c', 'import pika') == 0;

# the tutorials, pika and amqplib, in the order they run; each prints
# "<name>: OK" last; then python only: vhosts (the URL's vhost and
# qe_vhost), celery_tasks (a Celery worker and client, Debian's
# python3-celery over py-amqp, when installed)
my @scripts = qw(hello work_queues pubsub routing topics rpc confirms mandatory);
my @pika_only = qw(vhosts);
push @pika_only, 'celery_tasks' if system($python, '-c', 'import celery') == 0;
note('python3-celery is not installed: celery_tasks.py does not run') unless grep { $_ eq 'celery_tasks' } @pika_only;
# amqplib only: every field type amqplib sends (those pika cannot too), and
# a connection.close with its channel open (pika closes channels first)
my @node_only = qw(field_types exclusive_close);

# Where mq-amqp is known to differ from RabbitMQ, as measured when this
# test was written (mq-amqp of branch amqp at ddd0bcc): a check's name, or
# a script ("python/NAME", "node/NAME").  They run as TODO tests: reported
# (and "unexpectedly succeeded" once fixed) without failing the run.  Keep
# this list short and true: delete an entry when the gateway passes it.
my %gateway_todo = (
	dead_letter_count_increments =>
	  'queue_ext counts only its own recorded deaths (RabbitMQ 3.13+): a republished x-death header starts a new count, 3.10 counts on',
);
# What the gateway may refuse with a channel error 540 NOT_IMPLEMENTED
# instead of doing as RabbitMQ does (issue 16: exchange.bind only if
# queue_ext has exchange-to-exchange bindings; anything else outside the
# subset a proper exception)
my %gateway_may_refuse = (
	exchange_bind_e2e => 'queue_ext has no exchange-to-exchange bindings',
	publish_internal_exchange_403 => 'internal exchanges',
);

# ---------------------------------------------------------------------------
# Running a client
# ---------------------------------------------------------------------------

# Run every client against the broker at $url; returns { script => [lines] }
# and, for the checks, { check => line }.  $label names the broker in the
# test names; $todo: the known differences (TODO tests)
sub run_all_clients
{
	my ($label, $url, $node_dir, $todo) = @_;
	my %transcript;
	for my $s (@scripts, @pika_only)
	{
		local $TODO = $todo->{"python/$s"};
		my ($rc, $out, $err) = qe_run([ $python, "$clients/python/$s.py", $url ], 120);
		is($rc, 0, "$label: pika $s.py exits 0")
		  or diag("$s.py:\n$out$err");
		like($out, qr/^$s: OK$/m, "$label: pika $s.py says OK");
		$transcript{"python/$s"} = [ split /\n/, $out ];
	}
	my ($rc, $out, $err) = qe_run([ $python, "$clients/python/pika_checks.py", $url ], 900);
	note("$label pika_checks.py:\n$out");
	diag("pika_checks.py stderr:\n$err") if $err ne '';
	my %checks = map { /^(?:not )?ok (\S+?)(?::| #|$)/ ? ($1 => $_) : () } split /\n/, $out;
	if ($node_dir)
	{
		for my $s (@scripts, @node_only)
		{
			local $TODO = $todo->{"node/$s"};
			my ($nrc, $nout, $nerr) =
			  qe_run([ 'node', "$node_dir/$s.js", $url ], 120);
			is($nrc, 0, "$label: amqplib $s.js exits 0") or diag("$s.js:\n$nout$nerr");
			like($nout, qr/^$s: OK$/m, "$label: amqplib $s.js says OK");
			$transcript{"node/$s"} = [ split /\n/, $nout ];
		}
	}
	return (\%transcript, \%checks, $rc);
}

# ---------------------------------------------------------------------------
# 1. RabbitMQ, the reference
# ---------------------------------------------------------------------------

my $rmq = qe_rabbitmq('qeclients');
pass('RabbitMQ started');
# a second vhost for vhosts.py
$rmq->ctl('add_vhost', 'qe_vhost');
$rmq->ctl('set_permissions', '-p', 'qe_vhost', 'guest', '.*', '.*', '.*');

# amqplib from npm, pinned by test/amqp_clients/node/package-lock.json, in a
# scratch copy (as test 034 does for examples/node)
my $node_dir;
SKIP:
{
	skip qe_node_missing(), 1 if qe_node_missing();
	my ($dir, $npm_err, $npm_ran) =
	  qe_npm_ci("$clients/node", "$PostgreSQL::Test::Utils::tmp_check/amqp_clients");
	if ($npm_ran)
	{
		ok(defined $dir, 'npm ci installs amqplib into a scratch copy of test/amqp_clients/node')
		  or diag($npm_err);
	}
	else
	{
		pass('test/amqp_clients/node has node_modules already');
	}
	$node_dir = $dir;
}

my $rurl = "amqp://guest:guest\@127.0.0.1:" . $rmq->port . "/%2F";
my ($rabbit_t, $rabbit_c, $rabbit_rc) = run_all_clients('RabbitMQ', $rurl, $node_dir);
is($rabbit_rc, 0, 'RabbitMQ: pika_checks.py exits 0');
ok(keys(%$rabbit_c) >= 80, 'RabbitMQ: pika_checks.py ran ' . scalar(keys %$rabbit_c) . ' checks');
for my $c (sort keys %$rabbit_c)
{
	# a check of a plugin's feature that Debian's RabbitMQ has not is skipped there
	like($rabbit_c->{$c}, qr/^ok \Q$c\E(?: # skip .*)?$/, "RabbitMQ: check $c");
}
# the amqplib tutorials print what the pika ones print
if ($node_dir)
{
	is_deeply($rabbit_t->{"node/$_"}, $rabbit_t->{"python/$_"},
		"RabbitMQ: amqplib $_.js prints what pika $_.py prints")
	  for @scripts;
}
$rmq->stop;

# ---------------------------------------------------------------------------
# 2. queue_ext behind mq-amqp
# ---------------------------------------------------------------------------

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
my $bindir = `$pg_config --bindir`;
chomp $bindir;
my $gateway = "$bindir/mq-amqp";
my $gw;
END { local $?; $gw->kill_kill if $gw; }
SKIP:
{
	if (!-x $gateway)
	{
		skip "mq-amqp is not installed in $bindir and QE_AMQP_PENDING=1", 1
		  if ($ENV{QE_AMQP_PENDING} // '') eq '1';
		fail("mq-amqp is installed in $bindir (make install builds it)");
		last SKIP;
	}

	my $node = qe_node('amqp', conf => "mq.quorum_unavailable = wait\nmax_connections = 200\n");
	# the role logs in with its password, over the socket and TCP alike:
	# these lines come before initdb's trust lines
	qe_hba_first($node, "local all app scram-sha-256\nhost all app 127.0.0.1/32 scram-sha-256\n");
	$node->safe_psql('postgres', q{
		CREATE EXTENSION queue_ext;
		SET password_encryption = 'scram-sha-256';
		CREATE ROLE app LOGIN PASSWORD 'app-secret';
		GRANT USAGE, CREATE ON SCHEMA mq TO app;
		CREATE DATABASE qe_vhost;});
	# vhost qe_vhost is database qe_vhost
	$node->safe_psql('qe_vhost', q{
		CREATE EXTENSION queue_ext;
		GRANT USAGE, CREATE ON SCHEMA mq TO app;});

	my $gport;
	($gw, $gport) = qe_gateway($node, gateway => $gateway,
		log => "$PostgreSQL::Test::Utils::log_path/mq-amqp.log", flags => ['--verbose']);
	ok(qe_listening($gport), "mq-amqp listens on 127.0.0.1:$gport") or last SKIP;

	my $gurl = "amqp://app:app-secret\@127.0.0.1:$gport/%2F";
	my ($gw_t, $gw_c) = run_all_clients('mq-amqp', $gurl, $node_dir, \%gateway_todo);
	for my $t (sort keys %$rabbit_t)
	{
		local $TODO = $gateway_todo{$t};
		is_deeply($gw_t->{$t}, $rabbit_t->{$t}, "$t: mq-amqp's transcript is RabbitMQ's")
		  or diag("RabbitMQ:\n" . join("\n", @{ $rabbit_t->{$t} })
			  . "\nmq-amqp:\n" . join("\n", @{ $gw_t->{$t} // [] }));
	}
	for my $c (sort keys %$rabbit_c)
	{
		local $TODO = $gateway_todo{$c};
		# what RabbitMQ skipped (no plugin) the gateway must pass
		(my $want = $rabbit_c->{$c}) =~ s/ # skip .*//;
		my $got = $gw_c->{$c} // "(no line for $c)";
		if ($gateway_may_refuse{$c} && $got ne $want)
		{
			like($got, qr/^not ok \Q$c\E: ChannelClosedByBroker: \(540, /,
				"mq-amqp: check $c as RabbitMQ, or 540 NOT_IMPLEMENTED ($gateway_may_refuse{$c})");
			next;
		}
		is($got, $want, "mq-amqp: check $c as RabbitMQ");
	}
	$gw->signal('TERM');
	eval { $gw->finish; };
	undef $gw;
	$node->stop;
}

done_testing();
