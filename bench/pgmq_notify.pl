#!/usr/bin/perl
# bench/pgmq_notify.pl -- how soon a pgmq consumer learns that a message became
# readable by itself (a delayed send fell due, a vt ran out): LISTENing on
# pgmq's channel with queue_ext_pgmq's pgmq.enable_notify_visible, against
# polling with pgmq.read as pgmq's users do (every 100 ms: pgmq's
# read_with_poll default poll_interval_ms; every 1000 ms).
#
#     perl bench/pgmq_notify.pl            (DBD::Pg; Debian: libdbd-pg-perl)
#
# Env: PGHOST, PGPORT, PGUSER, PGDATABASE as libpq; N_REPS (default 10).
# The database must have queue_ext and queue_ext_pgmq installed (it makes and
# drops queues bench_nv and bench_poll).  mq.maintenance_naptime is left as
# the server has it (default 1 s).
#
# Per repetition, latency = the server's clock_timestamp() when the consumer
# has the message in hand (its read returned it) minus the time it became
# due (the send's delay; the read's vt end), both from the server's clock.
# Each message is made due at a random phase (a sleep of 0-1 s first), and
# a poller starts at a random phase of its interval.
# Also counted: the queries a consumer ran while it waited (the LISTENer
# runs none: it sleeps on its socket).  Prints medians and maxima.
use strict;
use warnings;
use DBI;
use IO::Select;
use Time::HiRes qw(usleep);

my $reps = $ENV{N_REPS} // 10;
my $dsn = 'dbi:Pg:';
my %attr = (AutoCommit => 1, RaiseError => 1, PrintError => 0);
my $db = DBI->connect($dsn, undef, undef, \%attr);
my $listener = DBI->connect($dsn, undef, undef, \%attr);

$db->do(q{SELECT pgmq.drop_queue(q) FROM unnest(ARRAY['bench_nv', 'bench_poll']) q
           WHERE EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = q)});
$db->do(q{SELECT pgmq.create('bench_nv')});
$db->do(q{SELECT pgmq.create('bench_poll')});
$db->do(q{SELECT pgmq.enable_notify_visible('bench_nv')});
$listener->do(q{LISTEN "pgmq.q_bench_nv.INSERT"});

# Make a message of queue q become due: kind 'delay' (a send with a delay of
# 1 s) or 'vt' (a message sent and read with a vt of 1 s).  Returns the due
# time as the server's epoch.
sub make_due
{
	my ($q, $kind) = @_;

	# at a random phase of the worker's passes (a vt is whole seconds, as
	# mq.maintenance_naptime's default, and would be in step with them)
	usleep(int(rand(1_000_000)));
	if ($kind eq 'delay')
	{
		my ($due) = $db->selectrow_array(q{SELECT extract(epoch FROM clock_timestamp() + interval '1 s')});
		$db->do(q{SELECT pgmq.send(?, '{"n": 1}'::jsonb, to_timestamp(?))}, undef, $q, $due);
		return $due;
	}
	$db->do(q{SELECT pgmq.send(?, '{"n": 1}'::jsonb)}, undef, $q);
	my ($due) = $db->selectrow_array(
		q{SELECT extract(epoch FROM vt) FROM pgmq.read(?, 1, 1)}, undef, $q);
	die "nothing read" unless defined $due;
	return $due;
}

# Take the message (read and delete it); the latency in ms if there was one
sub take
{
	my ($dbh, $q, $due) = @_;
	my ($id, $ms) = $dbh->selectrow_array(
		q{SELECT msg_id, (extract(epoch FROM clock_timestamp()) - ?) * 1000 FROM pgmq.read(?, 30, 1)},
		undef, $due, $q);
	return undef unless defined $id;
	$dbh->do(q{SELECT pgmq.delete(?, ?::bigint)}, undef, $q, $id);
	return $ms;
}

sub drain_notifies
{
	while ($listener->pg_notifies) { }
}

sub by_listen
{
	my ($kind) = @_;
	drain_notifies();
	my $due = make_due('bench_nv', $kind);
	my $sel = IO::Select->new($listener->{pg_socket});
	my $deadline = time() + 60;

	for (;;)
	{
		die "no notification within 60 s" if time() > $deadline;
		$sel->can_read(5);
		my $n = $listener->pg_notifies;
		next unless $n;
		my $ms = take($listener, 'bench_nv', $due);
		return ($ms, 0) if defined $ms;		# a notification that found nothing: wait on
	}
}

sub by_poll
{
	my ($kind, $interval_ms) = @_;
	my $due = make_due('bench_poll', $kind);
	my $queries = 0;

	# a poller that loops on is at any phase of its interval when a message
	# becomes due
	usleep(int(rand($interval_ms * 1000)));

	for (;;)
	{
		$queries++;
		my $ms = take($db, 'bench_poll', $due);
		return ($ms, $queries) if defined $ms;
		usleep($interval_ms * 1000);
	}
}

sub median
{
	my @s = sort { $a <=> $b } @_;
	return $s[int(@s / 2)];
}

sub max
{
	my @s = sort { $a <=> $b } @_;
	return $s[-1];
}

my ($naptime) = $db->selectrow_array(q{SHOW mq.maintenance_naptime});
printf "pgmq_notify: %d repetitions, mq.maintenance_naptime = %s\n", $reps, $naptime;
printf "%-6s %-32s %12s %12s %16s\n", 'event', 'consumer', 'median ms', 'max ms', 'queries/wait';
for my $kind ('delay', 'vt')
{
	for my $how (['LISTEN (enable_notify_visible)', sub { by_listen($kind) }],
				 ['poll every 100 ms', sub { by_poll($kind, 100) }],
				 ['poll every 1000 ms', sub { by_poll($kind, 1000) }])
	{
		my (@ms, @q);
		for (1 .. $reps)
		{
			my ($ms, $q) = $how->[1]->();
			push @ms, $ms;
			push @q, $q;
		}
		printf "%-6s %-32s %12.0f %12.0f %16.1f\n", $kind, $how->[0], median(@ms), max(@ms),
		  (eval { my $t = 0; $t += $_ for @q; $t / @q });
	}
}
$db->do(q{SELECT pgmq.drop_queue('bench_nv'), pgmq.drop_queue('bench_poll')});
