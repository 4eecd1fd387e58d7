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
package QueueExtTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(qe_node qe_standby);

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

1;
