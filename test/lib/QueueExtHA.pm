# test/lib/QueueExtHA.pm
#	  The pg_auto_failover cluster of the HA tests (test/t/02[1-3]_ha_*.pl),
#	  driven through test/ha/cluster.sh, and the load generator
#	  test/ha/loadgen.py.
#
#	  use FindBin;
#	  use lib "$FindBin::RealBin/../lib";
#	  use QueueExtHA;
#
#	  my $ha = QueueExtHA->new('row2');       # monitor + 3 nodes, up
#	  my $p = $ha->primary;                    # 1, 2 or 3
#	  $ha->safe_psql($p, 'SELECT mq.queue_declare(...)');
#	  my $load = $ha->loadgen_start('q', durability => 'quorum');
#	  $ha->kill_node($p);                      # kill -9 keeper + postmaster
#	  my ($new, $secs) = $ha->wait_for_primary(old => $p);
#	  my $summary = $ha->loadgen_stop($load);  # hash of loadgen.py check
#	  $ha->start_node($p); $ha->wait_for_state($p, 'secondary');
#	  $ha->figure(name => value);              # "# figure:" line + results file
#	  (the cluster goes down when the object is destroyed, or $ha->down)
#
#	  Environment: QE_HA_PORT (first of 4 consecutive ports; default: free
#	  ones from 20000 on, below the ephemeral range), QE_HA_FAST (see cluster.sh), QE_HA_RESULTS
#	  (file the figures are appended to; default tmp_check/ha_results.txt).
package QueueExtHA;

use strict;
use warnings;
use Carp;
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use File::Path qw(rmtree);
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(time sleep);
use FindBin;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = "$FindBin::RealBin/../..";
my $cluster_sh = "$root/test/ha/cluster.sh";
my $loadgen_py = "$root/test/ha/loadgen.py";
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';

# Is 127.0.0.1:port free?
sub _port_free
{
	my ($port) = @_;
	my $s = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $port,
		Proto => 'tcp',
		ReuseAddr => 0);
	return 0 unless $s;
	close $s;
	return 1;
}

# The first of 4 consecutive free ports.  They are taken below the kernel's
# ephemeral range (ip_local_port_range, 32768-60999 by default): a port
# in that range that is free now can be handed to some outgoing
# connection (a keeper's libpq to the monitor, say) before the node that
# is to listen on it starts, which made pg_autoctl fail with "could not
# bind ... Address already in use".
sub _free_base
{
	return $ENV{QE_HA_PORT} if $ENV{QE_HA_PORT};
	my $low = 32768;
	if (open(my $fh, '<', '/proc/sys/net/ipv4/ip_local_port_range'))
	{
		my $line = <$fh>;
		close $fh;
		$low = $1 if defined $line && $line =~ /^\s*(\d+)/;
	}
	my $first = 20000;
	my $last = ($low > $first + 400 ? $low : 32768) - 4;
	my $slots = int(($last - $first) / 4);
	my $start = int(rand($slots));
	for my $i (0 .. $slots - 1)
	{
		my $p = $first + 4 * (($start + $i) % $slots);
		return $p if !grep { !_port_free($_) } $p .. $p + 3 and _reserve($p);
	}
	croak 'no 4 free consecutive ports';
}

# Reserve the 4 ports from $p for this process: TAP scripts run in
# parallel (test/run_all.sh), and a port that is free now is not taken
# until the cluster starts.  A file per base port, holding the owner's
# pid, in a directory all test runs share; a dead owner's file is taken
# over.  (PostgreSQL::Test::Cluster does the same for its nodes' ports,
# which are in another range.)
my $reserve_dir = '/tmp/queue_ext-ha-ports';

sub _reserve
{
	my ($p) = @_;
	mkdir $reserve_dir, 01777;
	my $file = "$reserve_dir/$p.rsv";
	if (open(my $fh, '<', $file))
	{
		my $pid = <$fh> // '';
		close $fh;
		chomp $pid;
		return 0 if $pid =~ /^\d+$/ && kill(0, $pid);
		unlink $file;
	}
	sysopen(my $fh, $file, O_WRONLY | O_CREAT | O_EXCL) or return 0;
	print $fh "$$\n";
	close $fh;
	return 1;
}

# new(name, fast => 0|1, up => 0): a cluster in tmp_check/ha_<name>, started
sub new
{
	my ($class, $name, %opt) = @_;
	my $bindir = `pg_config --bindir`;
	chomp $bindir;
	my $pkglibdir = `pg_config --pkglibdir`;
	chomp $pkglibdir;
	# without the packages (QE_SKIP_DEPS=1 on a machine without them) the
	# HA tests cannot run at all; CI installs them (test/lib/cluster.sh)
	plan skip_all => 'pg_auto_failover is not installed (postgresql-15-auto-failover)'
	  unless -f "$pkglibdir/pgautofailover.so" && grep { -x "$_/pg_autoctl" } split /:/, "$ENV{PATH}:/usr/bin";
	plan skip_all => 'python3-psycopg2 is not installed'
	  unless system($python, '-c', 'import psycopg2') == 0;
	my $self = bless {
		name => $name,
		dir => "$PostgreSQL::Test::Utils::tmp_check/ha_$name",
		base => _free_base(),
		fast => $opt{fast} // ($ENV{QE_HA_FAST} // 1),
		pg_config => "$bindir/pg_config",
		bindir => $bindir,
		loadgens => [],
	}, $class;
	rmtree($self->{dir});
	$self->up unless defined $opt{up} && !$opt{up};
	return $self;
}

# run cluster.sh with this cluster's environment; returns (rc, stdout, stderr)
sub cluster_sh
{
	my ($self, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{QE_HA_PORT} = $self->{base};
	local $ENV{QE_HA_DIR} = $self->{dir};
	local $ENV{QE_HA_FAST} = $self->{fast};
	local $ENV{PG_CONFIG} = $self->{pg_config};
	my $ok = IPC::Run::run([ 'bash', $cluster_sh, @args ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(300));
	note "cluster.sh @args: $err" if $err ne '';
	return ($ok ? 0 : $? >> 8, $out, $err);
}

sub up
{
	my ($self) = @_;
	my $t0 = time;
	my ($rc, $out, $err) = $self->cluster_sh('up');
	if ($rc != 0)
	{
		$self->_show_logs;
		BAIL_OUT("test/ha/cluster.sh up failed: $err");
	}
	$self->{up} = 1;
	chomp($self->{conninfo} = $out);
	note sprintf('cluster up in %.1f s: %s', time - $t0, $self->{conninfo});
	return $self;
}

sub down
{
	my ($self) = @_;
	return unless $self->{up};
	$self->loadgen_kill($_) for @{ $self->{loadgens} };
	$self->cluster_sh('down');
	$self->{up} = 0;
	return;
}

sub DESTROY
{
	my ($self) = @_;
	local ($?, $@);
	$self->down if $self->{up};
	return;
}

sub _show_logs
{
	my ($self) = @_;
	for my $f (glob("$self->{dir}/*.log"))
	{
		my $text = PostgreSQL::Test::Utils::slurp_file($f);
		my @lines = split /\n/, $text;
		splice(@lines, 0, @lines - 40) if @lines > 40;
		diag("----- $f (last lines)\n" . join("\n", @lines));
	}
	return;
}

sub conninfo { return $_[0]{conninfo}; }
sub port { my ($self, $n) = @_; return $self->{base} + $n; }
sub monitor_port { return $_[0]{base}; }
sub dir { return $_[0]{dir}; }
sub node_data { my ($self, $n) = @_; return "$self->{dir}/node$n"; }
sub node_log { my ($self, $n) = @_; return "$self->{dir}/node$n.log"; }

# psql on node n (0 = the monitor, database pg_auto_failover):
# returns (rc, stdout, stderr); never dies
sub psql
{
	my ($self, $n, $sql, %opt) = @_;
	my ($out, $err) = ('', '');
	my $db = $opt{dbname} // ($n == 0 ? 'pg_auto_failover' : 'ha');
	my $ok = eval {
		IPC::Run::run(
			[
				"$self->{bindir}/psql", '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
				'-h', '127.0.0.1', '-p', $self->port($n), '-U', 'postgres', '-d', $db,
				'-c', $sql
			],
			'>', \$out, '2>', \$err,
			IPC::Run::timeout($opt{timeout} // 60));
	};
	chomp $out;
	return ($ok ? 0 : 1, $out, $err);
}

# psql on node n that must succeed; returns stdout
sub safe_psql
{
	my ($self, $n, $sql, %opt) = @_;
	my ($rc, $out, $err) = $self->psql($n, $sql, %opt);
	croak "psql on node $n failed: $err\nquery: $sql" if $rc;
	return $out;
}

# the node that the monitor sees as primary now (reported and goal), or undef
sub primary
{
	my ($self) = @_;
	my ($rc, $out) = $self->psql(0, q{
		SELECT substr(nodename, 5) FROM pgautofailover.node
		 WHERE reportedstate = 'primary' AND goalstate = 'primary'});
	return ($rc == 0 && $out =~ /^(\d)$/) ? $1 : undef;
}

# node n's reported/goal state
sub node_state
{
	my ($self, $n) = @_;
	my ($rc, $out) = $self->psql(0,
		"SELECT reportedstate || '/' || goalstate FROM pgautofailover.node WHERE nodename = 'node$n'");
	return $rc == 0 ? $out : undef;
}

# Deadlines of the waits below only bound a failing test: a passing one
# returns as soon as the state is reached.  On a loaded machine (CI beside
# other jobs, four HA clusters at once) failovers and load generators run
# several times slower than on an idle one, so every deadline is multiplied
# by QE_HA_TIMEOUT_SCALE (default 3).
sub deadline
{
	my ($secs) = @_;
	return time + $secs * ($ENV{QE_HA_TIMEOUT_SCALE} // 3);
}

# Wait (timeout s, default 90) until a node other than old is primary AND
# accepts a write; returns (node, seconds from start_time or now) or dies.
sub wait_for_primary
{
	my ($self, %opt) = @_;
	my $t0 = $opt{since} // time;
	my $deadline = deadline($opt{timeout} // 90);
	while (time < $deadline)
	{
		my $p = $self->primary;
		if (defined $p && (!defined $opt{old} || $p != $opt{old}))
		{
			my ($rc, $out) = $self->psql($p,
				'SELECT NOT pg_is_in_recovery() AND txid_current() > 0', timeout => 5);
			return ($p, time - $t0) if $rc == 0 && $out eq 't';
		}
		sleep 0.2;
	}
	$self->_show_logs;
	croak 'no new primary within the timeout: ' . ($self->show_state // '');
}

# Wait until node n reports and is assigned state (default 'secondary');
# returns the seconds it took or dies.
sub wait_for_state
{
	my ($self, $n, $state, %opt) = @_;
	$state //= 'secondary';
	my $t0 = time;
	my $deadline = deadline($opt{timeout} // 120);
	while (time < $deadline)
	{
		my $s = $self->node_state($n) // '';
		return time - $t0 if $s eq "$state/$state";
		sleep 0.3;
	}
	$self->_show_logs;
	croak "node$n not $state within the timeout: " . ($self->show_state // '');
}

# wait until every node is primary or secondary and the primary has
# synchronous_standby_names ANY 1 of two standbys again
sub wait_for_healthy
{
	my ($self, %opt) = @_;
	my $deadline = deadline($opt{timeout} // 120);
	while (time < $deadline)
	{
		my ($rc, $out) = $self->psql(0, q{
			SELECT count(*) FILTER (WHERE reportedstate = goalstate
			                          AND goalstate IN ('primary', 'secondary'))
			  FROM pgautofailover.node});
		my $p = $self->primary;
		if ($rc == 0 && $out eq '3' && defined $p)
		{
			my ($rc2, $names) = $self->psql($p, 'SHOW synchronous_standby_names');
			return 1 if $rc2 == 0 && $names =~ /^ANY 1 \(.*,.*\)$/;
		}
		sleep 0.3;
	}
	croak 'cluster not healthy within the timeout: ' . ($self->show_state // '');
}

sub show_state
{
	my ($self) = @_;
	my ($rc, $out) = $self->cluster_sh('status');
	return $out;
}

# kill -9 of node n's pg_autoctl (keeper and its services) and postmaster
# at once: the node is lost, as a machine that dies.  Returns the time of
# the kill.
sub kill_node
{
	my ($self, $n) = @_;
	my ($rc, $out, $err) = $self->cluster_sh('kill-node', $n);
	croak "kill-node $n failed: $err" if $rc || $out !~ /^(\d+\.\d+)$/;
	return $1 + 0;
}

# kill -9 of node n's postmaster only (its keeper restarts it, no failover)
sub kill_postmaster
{
	my ($self, $n) = @_;
	my $pidfile = $self->node_data($n) . '/postmaster.pid';
	open my $fh, '<', $pidfile or croak "no $pidfile";
	my $pid = <$fh>;
	close $fh;
	chomp $pid;
	kill 'KILL', $pid or croak "kill -9 $pid: $!";
	return time;
}

# stop node n's pg_autoctl keeper (SIGTERM: it stops its postgres too)
sub stop_node
{
	my ($self, $n) = @_;
	my ($rc, $out, $err) = $self->cluster_sh('stop-node', $n);
	croak "stop-node $n failed: $err" if $rc;
	return;
}

# start node n's pg_autoctl again (it rejoins, rewound if needed)
sub start_node
{
	my ($self, $n) = @_;
	my ($rc, $out, $err) = $self->cluster_sh('start-node', $n);
	croak "start-node $n failed: $err" if $rc;
	return;
}

# Start test/ha/loadgen.py on queue (options: producers, consumers,
# durability, session_sync, rate, batch, max_seconds, drain_idle); returns
# a handle for loadgen_stop.
sub loadgen_start
{
	my ($self, $queue, %opt) = @_;
	my $out = "$self->{dir}/load_$queue";
	rmtree($out);
	mkdir $out or croak "mkdir $out: $!";
	my @cmd = (
		$python, $loadgen_py, 'run',
		'--conninfo' => $self->{conninfo},
		'--queue' => $queue,
		'--out' => $out,
		'--prefix' => $opt{prefix} // "$queue-",
		'--producers' => $opt{producers} // 4,
		'--consumers' => $opt{consumers} // 4,
		'--rate' => $opt{rate} // 40,
		'--batch' => $opt{batch} // 5,
		# the producers' own bound (the tests stop them): as the deadlines,
		# scaled for a loaded machine, or they stop before a wait is met
		'--max-seconds' => $opt{max_seconds} // 120 * ($ENV{QE_HA_TIMEOUT_SCALE} // 3),
		'--drain-idle' => $opt{drain_idle} // 3);
	push @cmd, '--durability' => $opt{durability} if $opt{durability};
	push @cmd, '--session-sync' => $opt{session_sync} if $opt{session_sync};
	my ($stdout, $stderr) = ('', '');
	my $h = IPC::Run::start(\@cmd, '>', \$stdout, '2>', \$stderr);
	my $load = { h => $h, out => $out, stdout => \$stdout, stderr => \$stderr, queue => $queue };
	push @{ $self->{loadgens} }, $load;
	return $load;
}

# Number of confirms so far in a running load generator
sub loadgen_confirms
{
	my ($self, $load) = @_;
	open my $fh, '<', "$load->{out}/events.log" or return 0;
	my $n = grep { / confirm / } <$fh>;
	close $fh;
	return $n;
}

# Wait until the load generator has confirmed at least n messages (bounded)
sub loadgen_wait_confirms
{
	my ($self, $load, $n, $timeout) = @_;
	my $deadline = deadline($timeout // 60);
	while (time < $deadline)
	{
		return 1 if $self->loadgen_confirms($load) >= $n;
		sleep 0.2;
	}
	croak "load generator on $load->{queue}: not $n confirms in time";
}

# Stop the producers, let the consumers drain, return the check's summary
sub loadgen_stop
{
	my ($self, $load, %opt) = @_;
	open my $fh, '>', "$load->{out}/stop" or croak "touch stop: $!";
	close $fh;
	eval {
		$load->{h}->finish(IPC::Run::timeout($opt{timeout} // 120));
		1;
	} or do {
		diag "load generator on $load->{queue} did not finish: $@";
		$load->{h}->kill_kill;
	};
	$load->{done} = 1;
	diag "loadgen stderr: ${ $load->{stderr} }" if ${ $load->{stderr} } ne '';
	my ($rc, $json) = (0, '');
	IPC::Run::run([ $python, $loadgen_py, 'check', '--out', $load->{out} ],
		'>', \$json, IPC::Run::timeout(60))
	  or croak "loadgen.py check failed";
	return decode_json($json);
}

sub loadgen_kill
{
	my ($self, $load) = @_;
	return if $load->{done};
	eval { $load->{h}->kill_kill; };
	$load->{done} = 1;
	return;
}

# Record a measured figure: a "# figure: name = value" line in the TAP
# output and a line "test name value" in the results file.
# Wait up to $seconds until node $standby has replayed node $from's
# current WAL position; returns whether it did
sub wait_for_replay
{
	my ($self, $from, $standby, $seconds) = @_;
	my $lsn = $self->safe_psql($from, 'SELECT pg_current_wal_lsn()');
	my $deadline = Time::HiRes::time() + $seconds;

	while (Time::HiRes::time() < $deadline)
	{
		my ($rc, $out) = $self->psql($standby, "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
		return 1 if $out eq 't';
		Time::HiRes::sleep(0.2);
	}
	return 0;
}

sub figure
{
	my ($self, $name, $value) = @_;
	my $file = $ENV{QE_HA_RESULTS} // "$PostgreSQL::Test::Utils::tmp_check/ha_results.txt";
	diag "figure: $name = $value";
	if (open my $fh, '>>', $file)
	{
		printf $fh "%s %s %s %s\n", scalar(gmtime), $self->{name}, $name, $value;
		close $fh;
	}
	return;
}

1;
