# test/lib/QueueExtTest.pm
#	  What the TAP tests in test/t/ share: a cluster with queue_ext loaded,
#	  and a hot standby streaming from one.
#
#	  use FindBin;
#	  use lib "$FindBin::RealBin/../lib";
#	  use QueueExtTest;
#
#	  my $node = qe_node('name', init => { allows_streaming => 1 },
#						 conf => "restart_after_crash = on\n");
#	  my $standby = qe_standby($node, 'standby');
#	  qe_group_consume_ack($session, 's', 10, 'ga', group => 'ga');
#	  my $pgb = qe_pgbouncer($node, 'transaction', 2);   # a real pgbouncer
#	  my $dbh = $pgb->connect;                          # DBD::Pg through it
#	  my $rmq = qe_rabbitmq('name');       # a real RabbitMQ node (Debian's)
#	  $rmq->ctl('list_queues');            # rabbitmqctl against it
#	  qe_hba_first($node, "local all app scram-sha-256\n");
#	  my ($gw, $port, $log) = qe_gateway($node, flags => ['--verbose']);
#	  ok(qe_listening($port), 'mq-amqp listens');
#	  qe_amqp_checks([$python, $script, $port], \@expected);  # ok/not ok lines
#	  my $mqctl = qe_mqctl_env($node);     # PG* variables set to node
#	  my ($rc, $out, $err) = qe_mqctl_run($mqctl, ['list', 'queues']);
#	  my ($rc, $out, $err) = qe_run(['node', 'x.js'], 120, { VAR => 1 });
#	  plan skip_all => qe_node_missing() if qe_node_missing();
#	  my ($dir, $why, $ran) = qe_npm_ci("$FindBin::RealBin/../x/node", $scratch);
#	  my ($gw, $port, $log) = qe_rocketmq($node, flags => ['--credentials', $f]);
#	  qe_script_checks('mode', $rc, $out, $err, qw(name1 name2));
package QueueExtTest;

use strict;
use warnings;
use Exporter 'import';
use File::Copy ();
use File::Path ();
use IO::Socket::IP;
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils ();
use POSIX ();
use Test::More ();
use Time::HiRes ();

our @EXPORT = qw(qe_node qe_standby qe_group_consume_ack qe_publish_groups qe_groups_out_of_order qe_reap
  qe_pgbouncer qe_pgbouncer_missing qe_rabbitmq qe_rabbitmq_missing
  qe_hba_first qe_gateway qe_listening qe_gateway_stop qe_amqp_checks qe_mqctl_env qe_mqctl_run
  qe_which qe_run qe_node_missing qe_npm_ci qe_rocketmq qe_script_checks);

# A started cluster with shared_preload_libraries = 'queue_ext': init takes
# the options of PostgreSQL::Test::Cluster::init, conf more lines of
# postgresql.conf
sub qe_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(%{ $opt{init} // {} });
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'queue_ext'\n" . ($opt{conf} // ''));
	$node->start;
	return $node;
}

# A started hot standby of primary (made with allows_streaming), streaming
# from a new base backup; replay waits for its queries rather than cancel
# them.  conf: more lines of its postgresql.conf
sub qe_standby
{
	my ($primary, $name, %opt) = @_;
	my $backup = "backup_for_$name";
	my $standby = PostgreSQL::Test::Cluster->new($name);

	$primary->backup($backup);
	$standby->init_from_backup($primary, $backup, has_streaming => 1);
	$standby->append_conf('postgresql.conf',
		"hot_standby = on\nmax_standby_streaming_delay = -1\n" . ($opt{conf} // ''));
	$standby->start;
	return $standby;
}

# In session (a background_psql), consume up to n messages of stream with
# group (and consumer, for a broadcast group), and in the same transaction
# record them in table acked as (label, body, redelivered) and ack them:
# exactly-once for that work.  What was taken stays in the session's temp
# table taken (msg_id, body, r) until the next call.
sub qe_group_consume_ack
{
	my ($session, $stream, $n, $label, %opt) = @_;
	my $who = "group_name => '$opt{group}'"
	  . (defined $opt{consumer} ? ", consumer => '$opt{consumer}'" : '');

	$session->query_safe(qq{
		SET client_min_messages = warning;
		BEGIN;
		CREATE TEMP TABLE IF NOT EXISTS taken (msg_id bigint, body text, r boolean);
		TRUNCATE taken;
		INSERT INTO taken SELECT msg_id, convert_from(body, 'UTF8'), redelivered
		  FROM mq.consume('$stream', $n, $who);
		INSERT INTO acked SELECT '$label', body, r FROM taken;
		SELECT mq.ack('$stream', ARRAY(SELECT msg_id FROM taken), $who)
		 WHERE EXISTS (SELECT 1 FROM taken);
		COMMIT;});
	return;
}

# One publisher (one transaction) sends per_group messages to each of the
# message groups g1 .. g<groups> of queue, round robin so that the groups
# interleave in the log; a message's body is its number in its group
# (1 .. per_group), in publish order
sub qe_publish_groups
{
	my ($node, $queue, $groups, $per_group) = @_;

	$node->safe_psql('postgres', qq{
DO \$\$
BEGIN
	FOR s IN 1 .. $per_group LOOP
		FOR g IN 1 .. $groups LOOP
			PERFORM mq.send('$queue', s::text, message_group => 'g' || g);
		END LOOP;
	END LOOP;
END \$\$;
});
	return;
}

# How many message groups of qe_publish_groups were not delivered in
# publish order: rows of table (those matching the SQL condition where)
# record the deliveries in the order of their column id, the message group
# in column grp_col and the body in column seq
sub qe_groups_out_of_order
{
	my ($node, $table, $grp_col, $where, $per_group) = @_;

	return $node->safe_psql('postgres', qq{
SELECT count(*) FROM (
	SELECT $grp_col, array_agg(seq ORDER BY id) AS seqs FROM $table WHERE $where
	 GROUP BY $grp_col) s
 WHERE seqs <> (SELECT array_agg(i) FROM generate_series(1, $per_group) i)});
}

# Wait up to $seconds for the forked children whose pids are the keys of
# %$kids (deleting each that exits), then kill -9 the others.  Returns how
# many did not finish with status 0 (killed ones included).
sub qe_reap
{
	my ($kids, $seconds) = @_;
	my $deadline = Time::HiRes::time() + $seconds;
	my $failed = 0;

	while (%$kids && Time::HiRes::time() < $deadline)
	{
		my $p = waitpid(-1, POSIX::WNOHANG());
		if ($p > 0)
		{
			$failed++ if $? != 0;
			delete $kids->{$p};
			next;
		}
		Time::HiRes::sleep(0.1);
	}
	kill 'KILL', keys %$kids;
	return $failed + scalar(keys %$kids);
}

# Put lines (pg_hba.conf entries, each ending in a newline) before
# initdb's trust lines in node's pg_hba.conf, and reload: the roles they
# name must then log in as they say
sub qe_hba_first
{
	my ($node, $lines) = @_;
	my $hba = $node->data_dir . '/pg_hba.conf';
	my $text = PostgreSQL::Test::Utils::slurp_file($hba);

	open(my $fh, '>', $hba) or die "$hba: $!";
	print $fh $lines . $text;
	close $fh;
	$node->reload;
	return;
}

# ---- the AMQP gateway mq-amqp (tests 037, 040, 045, 048, 051, 052, 053) ---

# A started mq-amqp in front of node's database postgres (--dbname), on
# --listen 127.0.0.1:a free port, then flags (an array); its stdout and
# stderr appended to log.  Options: gateway (default: mq-amqp in node's
# bindir), listen (HOST:PORT instead), port (a port instead of a free one),
# log (default: mq-amqp.log in node's basedir), config (a file given with
# --config instead of --dbname: it names the database).  Without an
# --http-listen flag the management HTTP server is off.  Returns the
# IPC::Run handle, the port and the log; qe_listening says when it is up.
sub qe_gateway
{
	my ($node, %opt) = @_;
	my $gateway = $opt{gateway} // $node->config_data('--bindir') . '/mq-amqp';
	my $listen = $opt{listen}
	  // '127.0.0.1:' . ($opt{port} // PostgreSQL::Test::Cluster::get_free_port());
	my ($port) = $listen =~ /:(\d+)$/;
	my $log = $opt{log} // $node->basedir . '/mq-amqp.log';
	my @db = defined $opt{config}
	  ? ('--config', $opt{config})
	  : ('--dbname', 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres');
	# no management HTTP server unless the test asks for one: its default
	# port (15672) would be taken by the first of the gateways that tests
	# running at once start, and the others would not start
	my @http = grep({ /^--http-listen/ } @{ $opt{flags} // [] }) ? () : ('--http-listen', 'off');
	my $h = IPC::Run::start([ $gateway, @db, '--listen', $listen, @http, @{ $opt{flags} // [] } ],
		'<', \undef, '>>', $log, '2>>', $log);

	return ($h, $port, $log);
}

# Whether a TCP connection to port (on host, default 127.0.0.1) is taken,
# tried every 0.1 s, tries times (default 100); with handle (an IPC::Run
# handle), no more tries once its process has ended
sub qe_listening
{
	my ($port, %opt) = @_;
	my $host = $opt{host} // '127.0.0.1';

	for (1 .. ($opt{tries} // 100))
	{
		my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Proto => 'tcp');
		if ($s)
		{
			close $s;
			return 1;
		}
		return 0 if $opt{handle} && !$opt{handle}->pumpable;
		Time::HiRes::usleep(100_000);
	}
	return 0;
}

# Test that the gateway (a handle of qe_gateway) still runs, stop it with
# SIGTERM, and test that its log shows no crash.  Returns the log's text.
sub qe_gateway_stop
{
	my ($h, $log) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	Test::More::ok(kill(0, $h->{KIDS}[0]{PID}), 'mq-amqp is still running');
	$h->signal('TERM');
	$h->finish;
	my $text = PostgreSQL::Test::Utils::slurp_file($log);
	Test::More::unlike($text, qr/Segmentation|Aborted|AddressSanitizer|out of memory/,
		'no crash in its log');
	return $text;
}

# Run a checks script (command: an array, e.g. python3, the script and its
# arguments; timeout in seconds, default 600) that prints "ok NAME" or
# "not ok NAME: why" per check, and test that each name of expected passed
# and that each check reported once.  Returns the script's stdout.
sub qe_amqp_checks
{
	my ($command, $expected, %opt) = @_;
	my ($out, $err) = ('', '');
	my %result;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	IPC::Run::run($command, '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($opt{timeout} // 600));
	for my $line (split /\n/, $out)
	{
		$result{$1} = [ 1, '' ] if $line =~ /^ok (\S+)$/;
		$result{$1} = [ 0, $2 ] if $line =~ /^not ok (\S+): (.*)$/;
	}
	for my $name (@$expected)
	{
		Test::More::ok($result{$name} && $result{$name}[0], "pika: $name")
		  or Test::More::diag($result{$name} ? $result{$name}[1] : "no result for $name");
	}
	Test::More::is(scalar(keys %result), scalar(@$expected), 'every check reported once')
	  or Test::More::diag("checks output:\n$out");
	Test::More::diag("checks stderr:\n$err") if grep { !$_->[0] } values %result;
	return $out;
}

# ---- mqctl (tests 035, 050) ----------------------------------------------

# Set libpq's variables to node's database postgres (PGHOST, PGPORT,
# PGDATABASE; PGUSER unset), as mqctl reads them; returns the mqctl to run:
# $ENV{MQCTL}, or the one in node's bindir
sub qe_mqctl_env
{
	my ($node) = @_;

	$ENV{PGHOST} = $node->host;
	$ENV{PGPORT} = $node->port;
	$ENV{PGDATABASE} = 'postgres';
	delete $ENV{PGUSER};
	return $ENV{MQCTL} // $node->config_data('--bindir') . '/mqctl';
}

# Run mqctl with args (an array), stdin: option in (default none); returns
# (exit status, stdout, stderr)
sub qe_mqctl_run
{
	my ($mqctl, $args, %opt) = @_;
	my ($out, $err) = ('', '');
	my $in = $opt{in} // '';

	IPC::Run::run([ $mqctl, @$args ], '<', \$in, '>', \$out, '2>', \$err,
		IPC::Run::timeout(120));
	return ($? >> 8, $out, $err);
}

# ---- clients run as commands; npm packages (tests 037, 054, 055) ---------

# The path of prog in $PATH, or undef
sub qe_which
{
	my ($prog) = @_;
	for my $d (split /:/, $ENV{PATH} // '')
	{
		return "$d/$prog" if $d ne '' && -x "$d/$prog";
	}
	return undef;
}

# Run a command to its end (at most $timeout seconds): (exit code, stdout,
# stderr); $env: more environment
sub qe_run
{
	my ($cmd, $timeout, $env) = @_;
	my ($out, $err) = ('', '');
	local %ENV = (%ENV, %{ $env // {} });
	my $h = IPC::Run::start($cmd, '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout($timeout));
	# the exit status; a process a signal ended is 128 + the signal, never 0
	my $rc = eval
	{
		$h->finish;
		my $st = $h->full_result(0);
		($st & 127) ? 128 + ($st & 127) : $st >> 8;
	};
	if (!defined $rc)
	{
		$h->kill_kill;
		$rc = -1;
		$err .= "\n(killed after ${timeout}s: $@)";
	}
	return ($rc, $out, $err);
}

# A started mq-rocketmq (node's bindir) in front of node's database postgres
# as role rmq_gw (--dbname), on --listen 127.0.0.1:a free port, --verbose,
# then flags (an array); its stdout and stderr appended to log (default:
# mq-rocketmq.log in node's basedir).  Returns the IPC::Run handle, the port
# and the log; qe_listening says when it is up.
sub qe_rocketmq
{
	my ($node, %opt) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $log = $opt{log} // $node->basedir . '/mq-rocketmq.log';
	my $conninfo = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres user=rmq_gw';
	my $h = IPC::Run::start([ $node->config_data('--bindir') . '/mq-rocketmq',
			'--listen', "127.0.0.1:$port", '--dbname', $conninfo, '--verbose',
			@{ $opt{flags} // [] } ],
		'<', \undef, '>>', $log, '2>>', $log);

	return ($h, $port, $log);
}

# The output of a check script (test/rocketmq_clients/node/*.js: "ok NAME" or
# "not ok NAME: why" lines, "checks: DONE" last) as tests: each name of
# expected passed, the script ran to its end and exited 0 (rc); what names
# the run in the tests' names
sub qe_script_checks
{
	my ($what, $rc, $out, $err, @expected) = @_;
	my %result;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	for my $line (split /\n/, $out)
	{
		$result{$1} = [ 1, '' ] if $line =~ /^ok (\S+)$/;
		$result{$1} = [ 0, $2 ] if $line =~ /^not ok (\S+): (.*)$/s;
	}
	for my $name (@expected)
	{
		my $r = $result{$name};
		Test::More::ok($r && $r->[0], "$what: $name") or Test::More::diag($r ? $r->[1] : 'not run');
	}
	Test::More::like($out, qr/^checks: DONE$/m, "$what ran to its end") or Test::More::diag("$out$err");
	Test::More::is($rc, 0, "$what exits 0") or Test::More::diag("$out$err");
}

# Why a test of a Node.js client cannot run here (a reason to skip), or undef
sub qe_node_missing
{
	return undef if qe_which('node') && qe_which('npm');
	return 'node or npm is not installed (test/lib/cluster.sh installs them)';
}

# The npm packages pinned by the package-lock.json of $src (a directory of
# test/ holding a client's scripts) in a scratch copy, $scratch/node
# ($scratch is made afresh): the files of $src are copied, with its
# subdirectories but node_modules; the node_modules
# of a tree where npm ci ran already is lent by a symlink, else npm ci
# installs it.  Returns (the scratch copy, undef, whether npm ci ran), or
# (undef, what npm ci said, 1) when it failed.  qe_node_missing says first
# whether node and npm are there.
sub qe_npm_ci
{
	my ($src, $scratch) = @_;
	my $dir = "$scratch/node";
	my $system_cas = '/etc/ssl/certs/ca-certificates.crt';

	File::Path::rmtree($scratch);
	_qe_copy_tree($src, $dir);
	if (-d "$src/node_modules")
	{
		symlink("$src/node_modules", "$dir/node_modules")
		  or die "symlink $src/node_modules: $!";
		return ($dir, undef, 0);
	}
	my ($rc, $out, $err) = qe_run([ 'npm', 'ci', '--prefix', $dir, '--no-progress' ], 300,
		{ npm_config_cache => "$scratch/npm-cache", npm_config_update_notifier => 'false',
		  npm_config_fund => 'false', npm_config_audit => 'false',
		  NODE_EXTRA_CA_CERTS => $ENV{NODE_EXTRA_CA_CERTS} // (-r $system_cas ? $system_cas : '') });
	return ($dir, undef, 1) if $rc == 0;
	return (undef, "npm ci in $dir failed ($rc):\n$out$err", 1);
}

# Copy the files of directory $src into $dst (made if missing), and its
# subdirectories but node_modules, recursively
sub _qe_copy_tree
{
	my ($src, $dst) = @_;

	File::Path::make_path($dst);
	opendir(my $dh, $src) or die "opendir $src: $!";
	for my $f (sort readdir $dh)
	{
		next if $f eq '.' || $f eq '..' || $f eq 'node_modules';
		if (-d "$src/$f")
		{
			_qe_copy_tree("$src/$f", "$dst/$f");
		}
		elsif (-f "$src/$f")
		{
			File::Copy::copy("$src/$f", $dst) or die "copy $src/$f: $!";
		}
	}
	closedir($dh);
}

# ---- pgbouncer (tests 026, 032) -------------------------------------------

# Why a pgbouncer test cannot run here (a reason for plan skip_all), or
# undef: it needs Debian's pgbouncer and DBD::Pg (CI installs both, see
# test/lib/cluster.sh)
sub qe_pgbouncer_missing
{
	return 'pgbouncer is not installed (Debian package pgbouncer)'
	  unless -x $QueueExtTest::PgBouncer::bin;
	return 'DBD::Pg is not installed (Debian package libdbd-pg-perl)'
	  unless eval { require DBI; require DBD::Pg; 1 };
	return undef;
}

# A started pgbouncer on 127.0.0.1 (a free port) in front of node's
# database postgres: alias "postgres" in pool_mode mode with pool_size
# server connections; databases => { alias => [mode, pool_size], ... } adds
# more aliases of the same database.  auth_type any (the server trusts the
# OS user the test runs as), no unix socket, server_login_retry 1 s (a
# restarted server is used again at once).  Returns a
# QueueExtTest::PgBouncer: ->port, ->user, ->connect(alias), ->kill, ->start,
# ->logfile.  It is killed when the test ends.
sub qe_pgbouncer
{
	my ($node, $mode, $pool_size, %opt) = @_;
	return QueueExtTest::PgBouncer->new($node, $mode, $pool_size, %opt);
}

# ---- RabbitMQ (tests 036, 037) --------------------------------------------

# Why a test against a real RabbitMQ cannot run here (a reason for plan
# skip_all), or undef: it needs Debian's rabbitmq-server (CI installs it)
sub qe_rabbitmq_missing
{
	my $rbin = $QueueExtTest::RabbitMQ::rbin;
	return 'rabbitmq-server is not installed (Debian package rabbitmq-server)'
	  unless -x "$rbin/rabbitmq-server" && -x "$rbin/rabbitmqctl";
	return undef;
}

# A started RabbitMQ node of its own, run as this user on loopback: free
# ports for AMQP, Erlang distribution and epmd, its own directories and
# cookie, guest allowed from 127.0.0.1.  BAIL_OUT (with its logs) if it does
# not start.  Returns a QueueExtTest::RabbitMQ: ->port (AMQP), ->dir,
# ->ctl(@args) (rabbitmqctl's stdout; dies on failure), ->stop.  It is
# stopped when the test ends.
sub qe_rabbitmq
{
	my ($name, %opt) = @_;
	return QueueExtTest::RabbitMQ->new($name, %opt);
}

package QueueExtTest::RabbitMQ;

use strict;
use warnings;
use File::Path qw(make_path);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More ();

our $rbin = '/usr/lib/rabbitmq/bin';
my @nodes;

sub new
{
	my ($class, $name, %opt) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir('rabbit');
	my ($amqp_port, $dist_port, $epmd_port) =
	  map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 3;
	my $self = bless {
		dir => $dir,
		port => $amqp_port,
		starter => $$,
		env => {
			HOME => $dir,
			RABBITMQ_NODENAME => "$name$$\@localhost",
			RABBITMQ_NODE_IP_ADDRESS => '127.0.0.1',
			RABBITMQ_NODE_PORT => $amqp_port,
			RABBITMQ_DIST_PORT => $dist_port,
			ERL_EPMD_PORT => $epmd_port,
			ERL_EPMD_ADDRESS => '127.0.0.1',
			RABBITMQ_MNESIA_BASE => "$dir/mnesia",
			RABBITMQ_LOG_BASE => "$dir/log",
			RABBITMQ_CONFIG_FILE => "$dir/rabbitmq",
			RABBITMQ_ENABLED_PLUGINS_FILE => "$dir/enabled_plugins",
			RABBITMQ_PID_FILE => "$dir/rabbit.pid",
			RABBITMQ_ADVANCED_CONFIG_FILE => "$dir/advanced.config",
			ERL_CRASH_DUMP => "$dir/erl_crash.dump",
		},
	}, $class;
	make_path("$dir/mnesia", "$dir/log");
	# management => 1: the management plugin on a free port (->mgmt_port),
	# its statistics every 500 ms (test 059)
	$self->{mgmt_port} = PostgreSQL::Test::Cluster::get_free_port() if $opt{management};
	PostgreSQL::Test::Utils::append_to_file("$dir/enabled_plugins",
		$opt{management} ? "[rabbitmq_management].\n" : "[].\n");
	# guest may log in from 127.0.0.1 (loopback_users = none)
	PostgreSQL::Test::Utils::append_to_file("$dir/rabbitmq.conf",
		"listeners.tcp.default = 127.0.0.1:$amqp_port\nloopback_users = none\n"
		  . ($opt{management}
			? "management.tcp.port = $self->{mgmt_port}\nmanagement.tcp.ip = 127.0.0.1\n"
			  . "collect_statistics_interval = 500\n"
			: ''));
	PostgreSQL::Test::Utils::append_to_file("$dir/advanced.config", "[].\n");

	$self->_run('rabbitmq-server', '-detached');
	$self->{running} = 1;
	push @nodes, $self;
	# the node registers with epmd a moment after -detached returns
	my $started = 0;
	for (1 .. 120)
	{
		last if ($started = eval { $self->ctl('await_startup', '--timeout', '60'); 1 });
		sleep 1;
	}
	unless ($started)
	{
		Test::More::diag("$_:\n" . PostgreSQL::Test::Utils::slurp_file($_))
		  for grep { -f } glob("$dir/log/*"), glob("$dir/*.dump");
		Test::More::diag($@);
		Test::More::BAIL_OUT('RabbitMQ did not start');
	}
	return $self;
}

sub port { return $_[0]->{port}; }
sub mgmt_port { return $_[0]->{mgmt_port}; }
sub dir { return $_[0]->{dir}; }

# run one of RabbitMQ's programs with the node's environment; its stdout
sub _run
{
	my ($self, $prog, @args) = @_;
	local %ENV = (%ENV, %{ $self->{env} });
	my ($out, $err);
	my $ok = IPC::Run::run([ "$rbin/$prog", @args ], '<', \undef,
		'>', \$out, '2>', \$err, IPC::Run::timeout(120));
	die "$prog @args failed: $err$out" unless $ok;
	return $out;
}

# rabbitmqctl @args against this node: its stdout (dies on failure)
sub ctl
{
	my ($self, @args) = @_;
	return $self->_run('rabbitmqctl', @args);
}

# Stop the node and its epmd
sub stop
{
	my ($self) = @_;
	return unless $self->{running};
	local %ENV = (%ENV, %{ $self->{env} });
	IPC::Run::run([ "$rbin/rabbitmqctl", 'shutdown' ], '>', \my $o, '2>', \my $e,
		IPC::Run::timeout(60));
	IPC::Run::run([ 'epmd', '-kill' ], '>', \$o, '2>', \$e, IPC::Run::timeout(10))
	  if -x '/usr/bin/epmd';
	$self->{running} = 0;
	return;
}

END
{
	local $?;
	for my $r (@nodes)
	{
		$r->stop if $r->{starter} == $$;
	}
}

package QueueExtTest::PgBouncer;

use strict;
use warnings;
use IPC::Run;
use IO::Socket::INET;
use PostgreSQL::Test::Utils;
use Time::HiRes ();

our $bin = '/usr/sbin/pgbouncer';
my @all;

sub new
{
	my ($class, $node, $mode, $pool_size, %opt) = @_;
	my $self = bless {
		node => $node,
		dir => PostgreSQL::Test::Utils::tempdir,
		port => PostgreSQL::Test::Cluster::get_free_port(),
		user => $node->safe_psql('postgres', 'SELECT current_user'),
		starter => $$,
	}, $class;
	my %db = (%{ $opt{databases} // {} }, postgres => [ $mode, $pool_size ]);
	my $ini = "[databases]\n";
	for my $alias (sort keys %db)
	{
		my ($m, $size) = @{ $db{$alias} };
		$ini .= "$alias = host=" . $node->host . ' port=' . $node->port
		  . " dbname=postgres user=$self->{user} pool_mode=$m pool_size=$size\n";
	}
	$ini .= qq{[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $self->{port}
unix_socket_dir =
auth_type = any
pool_mode = $mode
default_pool_size = $pool_size
max_client_conn = 100
server_reset_query = DISCARD ALL
# after a server restart, try to log in again within a second, not 15
server_login_retry = 1
logfile = $self->{dir}/pgbouncer.log
pidfile = $self->{dir}/pgbouncer.pid
};
	PostgreSQL::Test::Utils::append_to_file("$self->{dir}/pgbouncer.ini", $ini);
	push @all, $self;
	$self->start;
	return $self;
}

sub port { return $_[0]->{port}; }
sub user { return $_[0]->{user}; }
sub logfile { return "$_[0]->{dir}/pgbouncer.log"; }

# Start it (again) and wait until it accepts connections (20 s at most)
sub start
{
	my ($self) = @_;
	$self->{h} = IPC::Run::start([ $bin, "$self->{dir}/pgbouncer.ini" ],
		'<', \undef, '>>', "$self->{dir}/pgbouncer.out", '2>&1');
	my $deadline = Time::HiRes::time() + 20;
	while (Time::HiRes::time() < $deadline)
	{
		return 1
		  if IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $self->{port}, Timeout => 1);
		Time::HiRes::sleep(0.05);
	}
	die "pgbouncer did not start on port $self->{port} (see $self->{dir})";
}

# kill -9 (its server connections end with it)
sub kill
{
	my ($self) = @_;
	return unless $self->{h};
	$self->{h}->signal('KILL');
	eval { $self->{h}->finish; };
	delete $self->{h};
	unlink "$self->{dir}/pgbouncer.pid";
	return;
}

# A DBD::Pg connection through it to alias (default postgres), or undef;
# errors are returned (err, errstr, state), not raised or printed, as a
# client that handles them does; no server-side prepared statements, which
# transaction pooling cannot keep.  %attr: more DBI attributes.
sub connect
{
	my ($self, $alias, %attr) = @_;
	$alias //= 'postgres';
	return DBI->connect("dbi:Pg:dbname=$alias;host=127.0.0.1;port=$self->{port}",
		$self->{user}, '',
		{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0,
		  pg_server_prepare => 0, %attr });
}

END
{
	# only the process that started them (not a forked client) kills them;
	# the test's exit status stays (finish sets $?)
	local $?;
	for my $b (@all)
	{
		$b->kill if $b->{h} && $b->{starter} == $$;
	}
}

1;
