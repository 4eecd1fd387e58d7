# qe: long
# HA fault matrix row 8: streams across a pg_auto_failover failover.  A
# 2-partition stream has a clustering group gc (two competing consumers)
# and a broadcast group gb (consumers b1, b2); each consumer process takes
# batches and, in the same transaction, records them in table acked and
# acks them.  A session of the primary also holds deliveries it never acks.
# The primary is killed (kill -9 of keeper and postmaster) while they run.
# Then, on the new primary:
#  - every group's (and broadcast consumer's) committed offsets are exactly
#    those the committed acks give (computed from table acked, which commits
#    with them), before any consumer resumes;
#  - after the consumers resume and drain the stream, every message was
#    acked exactly once per group and consumer: nothing acked is read again;
#    the only redeliveries are deliveries in flight at the kill (the held
#    ones among them);
#  - mq.read returns the same messages (ids, partitions, offsets, bodies) on
#    the new primary, on the remaining standby, and as on the old primary.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);
use QueueExtHA;
use QueueExtTest;

plan skip_all => 'DBD::Pg is not installed (Debian package libdbd-pg-perl)'
  unless eval { require DBI; require DBD::Pg; 1 };

my $ha = QueueExtHA->new('row8');
my $old = $ha->primary;
ok(defined $old, "node$old is the primary");
my $n = 600;
$ha->safe_psql($old, qq{
SET client_min_messages = warning;
SELECT mq.queue_declare('s', 'stream', arguments => '{"partitions": 2, "durability": "quorum"}');
SELECT mq.group_declare('s', 'gc', start => 'earliest');
SELECT mq.group_declare('s', 'gb', mode => 'broadcast', start => 'earliest');
CREATE TABLE acked (label text, body text, part int, off bigint, r boolean);
SELECT count(mq.send('s', 'm' || g, key => g::text)) FROM generate_series(1, $n) g;
});

# what mq.read returns, every partition from offset 0
my $read_all = q{SELECT count(*) || ' ' || md5(string_agg(r.msg_id || ':' || r.partition || ':' || r."offset" || ':' ||
	convert_from(r.body, 'UTF8'), ',' ORDER BY r.partition, r."offset"))
	FROM generate_series(0, 1) p, LATERAL mq.read('s', p, 0, 10000) r};
my $read_old = $ha->safe_psql($old, $read_all);
like($read_old, qr/^$n [0-9a-f]{32}$/, "old primary: mq.read returns the $n messages");

# a session of the old primary first consumes and acks 50 messages for gc,
# b1 and b2 each (recorded in acked in the same transaction, as the
# consumers below do), then holds 5 deliveries of gc and 3 of gb/b2 that it
# never acks: the committed offsets of those stop there
my $held = DBI->connect('dbi:Pg:host=127.0.0.1;port=' . $ha->port($old) . ';dbname=ha', 'postgres', '',
	{ AutoCommit => 1, RaiseError => 1, PrintError => 0 });
for my $w (['gc', "group_name => 'gc'"], ['b1', "group_name => 'gb', consumer => 'b1'"],
	['b2', "group_name => 'gb', consumer => 'b2'"])
{
	$held->do(qq{
		SET client_min_messages = warning;
		BEGIN;
		CREATE TEMP TABLE IF NOT EXISTS taken (msg_id bigint, body text, part int, off bigint, r boolean);
		TRUNCATE taken;
		INSERT INTO taken SELECT msg_id, convert_from(body, 'UTF8'), partition, "offset", redelivered
		  FROM mq.consume('s', 50, $w->[1]);
		INSERT INTO acked SELECT '$w->[0]', body, part, off, r FROM taken;
		SELECT mq.ack('s', ARRAY(SELECT msg_id FROM taken), $w->[1]);
		COMMIT;});
}
my @held_gc = map { $_->[0] } @{ $held->selectall_arrayref(
	q{SELECT convert_from(body, 'UTF8') FROM mq.consume('s', 5, lease => '1 hour', group_name => 'gc')}) };
my @held_b2 = map { $_->[0] } @{ $held->selectall_arrayref(
	q{SELECT convert_from(body, 'UTF8') FROM mq.consume('s', 3, lease => '1 hour', group_name => 'gb', consumer => 'b2')}) };
is(scalar(@held_gc) . ' ' . scalar(@held_b2), '5 3', 'a session holds 5 deliveries of gc and 3 of gb/b2');

# A consumer process: consume a batch of 4, record and ack it in one
# transaction, until its label has all n messages.  After an error it waits
# for the file resume, then reconnects (libpq multi-host, read-write).
my $dir = $ha->dir;
my $batch = 4;
sub consumer
{
	my ($label, $group, $consumer, $pause) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	my $who = "group_name => '$group'" . ($consumer ? ", consumer => '$consumer'" : '');
	my $deadline = QueueExtHA::deadline(100);
	my ($dbh, $errors) = (undef, 0);
	while (time < $deadline)
	{
		if (!$dbh)
		{
			if ($errors)
			{
				sleep 0.1 until -e "$dir/resume" || time > $deadline;
			}
			$dbh = DBI->connect('dbi:Pg:' . $ha->conninfo, '', '',
				{ AutoCommit => 1, RaiseError => 0, PrintError => 0, PrintWarn => 0 });
			if (!$dbh) { sleep 0.2; next; }
		}
		my $ok = $dbh->do(qq{
			SET client_min_messages = warning;
			BEGIN;
			CREATE TEMP TABLE IF NOT EXISTS taken (msg_id bigint, body text, part int, off bigint, r boolean);
			TRUNCATE taken;
			INSERT INTO taken SELECT msg_id, convert_from(body, 'UTF8'), partition, "offset", redelivered
			  FROM mq.consume('s', $batch, lease => '1 minute', $who);
			INSERT INTO acked SELECT '$label', body, part, off, r FROM taken;
			SELECT mq.ack('s', ARRAY(SELECT msg_id FROM taken), $who) WHERE EXISTS (SELECT 1 FROM taken);
			COMMIT;});
		if (!$ok)
		{
			$errors++;
			undef $dbh;
			next;
		}
		my ($count) = $dbh->selectrow_array("SELECT count(*) FROM acked WHERE label = '$label'");
		last if defined $count && $count >= $n;
		sleep $pause;
	}
	POSIX::_exit(time < $deadline ? 0 : 1);
}

my %kids;
# (each of gc's two consumers at half the pace: the groups go on together)
$kids{ consumer('gc', 'gc', undef, 0.1) } = 'gc';
$kids{ consumer('gc', 'gc', undef, 0.1) } = 'gc';
$kids{ consumer('b1', 'gb', 'b1', 0.03) } = 'b1';
$kids{ consumer('b2', 'gb', 'b2', 0.03) } = 'b2';

# kill once the consumers are into partition 0 (a consume takes from the
# highest partition first), none done
my $deadline = QueueExtHA::deadline(90);
my $progress = '';
while (time < $deadline)
{
	$progress = $ha->safe_psql($old, q{SELECT string_agg(label || '=' || c, ' ' ORDER BY label)
		FROM (SELECT label, count(*) c FROM acked GROUP BY 1) a});
	last if $progress =~ /b1=(\d+)/ && $1 >= 340;
	sleep 0.1;
}
my $t_kill = $ha->kill_node($old);
note("acked at the kill: $progress");
unlike($progress, qr/=$n\b/, "no consumer had finished at the kill ($progress)");
$held->{InactiveDestroy} = 1;
my ($new, $failover) = $ha->wait_for_primary(old => $old, since => $t_kill, timeout => 90);
$ha->figure('failover_seconds', sprintf('%.2f', $failover));

############################################################################
# committed offsets are exactly what the committed acks say
############################################################################
my $offsets = $ha->safe_psql($new, q{
	WITH g AS (SELECT CASE mode WHEN 'broadcast' THEN consumer ELSE group_name END AS label,
	                  partition, committed_offset, end_offset
	             FROM mq.consumer_groups WHERE queue = 's')
	SELECT label || ':' || partition || ':' || committed_offset || ':' ||
	       (SELECT min(o) FROM generate_series(0, g.end_offset) o
	         WHERE NOT EXISTS (SELECT 1 FROM acked a WHERE a.label = g.label AND a.part = g.partition AND a.off = o))
	  FROM g ORDER BY 1});
my @rows = split /\n/, $offsets;
is(scalar(@rows), 6, 'consumer_groups: gc, b1, b2, two partitions each');
my @bad = grep { my @f = split /:/; $f[2] ne $f[3] } @rows;
# (not only the start: the acks moved them on)
cmp_ok(scalar(grep { (split /:/)[2] > 0 } @rows), '>=', 4, 'at least 4 of the 6 committed offsets moved on');
is(scalar(@bad), 0, "node$new: committed offsets = lowest offset not acked by a committed transaction: $offsets");
my $acked_at_failover = $ha->safe_psql($new, q{SELECT count(*) FROM acked});
$ha->figure('acked_before_failover', $acked_at_failover);

############################################################################
# consumers resume; exactly once per group and consumer
############################################################################
open(my $fh, '>', "$dir/resume") or die;
close $fh;
is(qe_reap(\%kids, 110), 0, 'the four consumers finished');
is($ha->safe_psql($new, q{SELECT string_agg(label || '=' || c || '/' || d, ' ' ORDER BY label)
	FROM (SELECT label, count(*) c, count(DISTINCT body) d FROM acked GROUP BY 1) a}),
	"b1=$n/$n b2=$n/$n gc=$n/$n", 'every message acked exactly once by gc, b1 and b2');
my $redelivered = $ha->safe_psql($new, q{SELECT count(*) FROM acked WHERE r});
my $held_list = join(',', map { "'$_'" } @held_gc);
is($ha->safe_psql($new, "SELECT count(*) FROM acked WHERE label = 'gc' AND r AND body IN ($held_list)"), '5',
	"gc's 5 held deliveries came back redelivered");
$held_list = join(',', map { "'$_'" } @held_b2);
is($ha->safe_psql($new, "SELECT count(*) FROM acked WHERE label = 'b2' AND r AND body IN ($held_list)"), '3',
	"b2's 3 held deliveries came back redelivered");
# in flight at the kill: the held 8 and at most one batch per consumer
cmp_ok($redelivered, '<=', 8 + 4 * $batch, "redelivered: $redelivered, only deliveries in flight at the kill");
$ha->figure('redelivered_after_failover', $redelivered);
is($ha->safe_psql($new, q{SELECT sum(lag) || ' ' || sum(in_flight) FROM mq.consumer_groups WHERE queue = 's'}), '0 0',
	'no lag, nothing in flight');

############################################################################
# mq.read: the same messages on the new primary and on the standby
############################################################################
is($ha->safe_psql($new, $read_all), $read_old, "node$new: mq.read as on the old primary");
my ($standby) = grep { $_ != $old && $_ != $new } 1 .. 3;
ok($ha->wait_for_replay($new, $standby, 60), "node$standby (standby of node$new) replayed it");
is($ha->safe_psql($standby, $read_all), $read_old, "node$standby (standby): mq.read returns the same messages");
is($ha->safe_psql($standby, q{SELECT string_agg(coalesce(consumer, group_name) || ':' || partition || ':' || committed_offset, ' '
	ORDER BY coalesce(consumer, group_name), partition)
	FROM mq.consumer_groups WHERE queue = 's'}),
	$ha->safe_psql($new, q{SELECT string_agg(coalesce(consumer, group_name) || ':' || partition || ':' || committed_offset, ' '
	ORDER BY coalesce(consumer, group_name), partition)
	FROM mq.consumer_groups WHERE queue = 's'}), "node$standby: the same committed offsets as node$new");

$ha->down;
done_testing();
