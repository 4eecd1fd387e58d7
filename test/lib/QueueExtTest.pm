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
package QueueExtTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use POSIX ();
use Time::HiRes ();

our @EXPORT = qw(qe_node qe_standby qe_group_consume_ack qe_reap);

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

1;
