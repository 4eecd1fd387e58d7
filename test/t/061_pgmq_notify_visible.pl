# queue_ext_pgmq's pgmq.enable_notify_visible (docs/pgmq.md, "Extensions"):
# a session LISTENing on pgmq's channel 'pgmq.q_<name>.INSERT' is notified
# by queue_ext's worker when a delayed message falls due and when a vt runs
# out, so that it need not poll; a queue without the opt-in notifies
# nothing, nor does one after disable_notify_visible.  mq.export carries a
# queue's channel (mq.queue_notify).
#
# Nothing here depends on timing: waits are generous deadlines.  That a
# notification did NOT come is checked against a marker: the worker sends
# its notification at the commit that makes the message readable, so once
# the message is readable, a NOTIFY of the marker channel is queued after
# any notification the worker sent, and a listener reads them in order.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use Time::HiRes qw(usleep);

my $node = qe_node('pgmq_notify');
$node->safe_psql('postgres', q{
CREATE EXTENSION queue_ext;
CREATE EXTENSION queue_ext_pgmq;
SELECT pgmq.create('nv');
SELECT pgmq.create('plain');
SELECT pgmq.enable_notify_visible('nv');
});

my $bg = $node->background_psql('postgres');
$bg->query_safe(q{LISTEN "pgmq.q_nv.INSERT"});
$bg->query_safe(q{LISTEN "pgmq.q_plain.INSERT"});
$bg->query_safe(q{LISTEN marker});

# What the listener printed until channel's notification came (or the
# deadline passed): psql prints notifications after a query's result
my $seen = '';

sub wait_notification
{
	my ($channel) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

	while (time() < $deadline)
	{
		my ($out) = $bg->query('SELECT 1');
		$seen .= $out;
		return 1 if $seen =~ /Asynchronous notification "\Q$channel\E" received/;
		usleep(200_000);
	}
	return 0;
}

sub notified
{
	my ($channel) = @_;
	return $seen =~ /Asynchronous notification "\Q$channel\E" received/ ? 1 : 0;
}

# every notification up to now, then a fresh record
sub drain
{
	$node->safe_psql('postgres', q{NOTIFY marker});
	wait_notification('marker') or die 'marker never came';
	$seen = '';
}

# 1. a delayed message falls due
drain();
$node->safe_psql('postgres', q{SELECT pgmq.send('nv', '{"n": 1}', 2)});
$node->safe_psql('postgres', q{SELECT pgmq.send('plain', '{"n": 1}', 2)});
ok(wait_notification('pgmq.q_nv.INSERT'), 'notified when the delayed message fell due');
is($node->safe_psql('postgres', q{SELECT message->>'n' FROM pgmq.read('nv', 30, 1)}), '1',
	'... and it is readable');
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM mq.queues WHERE queue = 'pgmq.q_plain' AND ready = 1})
  or die 'the delayed message of plain never fell due';
$node->safe_psql('postgres', q{NOTIFY marker});
ok(wait_notification('marker'), 'the marker came');
is(notified('pgmq.q_plain.INSERT'), 0, 'no notification for a queue without the opt-in');

# 2. a vt runs out
$node->safe_psql('postgres', q{SELECT pgmq.purge_queue('nv'), pgmq.purge_queue('plain')});
$node->safe_psql('postgres', q{SELECT pgmq.send('nv', '{"n": 2}')});
$node->safe_psql('postgres', q{SELECT pgmq.send('plain', '{"n": 2}')});
drain();
is($node->safe_psql('postgres', q{SELECT read_ct FROM pgmq.read('nv', 2, 1)}), '1',
	'read with a vt of 2 seconds');
is($node->safe_psql('postgres', q{SELECT read_ct FROM pgmq.read('plain', 2, 1)}), '1',
	'the other queue too');
ok(wait_notification('pgmq.q_nv.INSERT'), 'notified when the vt ran out');
is($node->safe_psql('postgres', q{SELECT message->>'n' || ' ' || read_ct FROM pgmq.read('nv', 30, 1)}),
	'2 2', '... and the message is readable again');
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM mq.queues WHERE queue = 'pgmq.q_plain' AND ready = 1})
  or die 'the vt of plain never ran out';
$node->safe_psql('postgres', q{NOTIFY marker});
ok(wait_notification('marker'), 'the marker came');
is(notified('pgmq.q_plain.INSERT'), 0, 'no notification for a queue without the opt-in');

# 3. turned off: nothing more
$node->safe_psql('postgres', q{SELECT pgmq.purge_queue('nv')});
$node->safe_psql('postgres', q{SELECT pgmq.disable_notify_visible('nv')});
drain();
$node->safe_psql('postgres', q{SELECT pgmq.send('nv', '{"n": 3}', 1)});
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM mq.queues WHERE queue = 'pgmq.q_nv' AND ready = 1})
  or die 'the delayed message of nv never fell due';
$node->safe_psql('postgres', q{NOTIFY marker});
ok(wait_notification('marker'), 'the marker came');
is(notified('pgmq.q_nv.INSERT'), 0, 'no notification after disable_notify_visible');

# 4. the channel is part of what mq.export keeps of a queue
$node->safe_psql('postgres', q{SELECT pgmq.enable_notify_visible('nv')});
$node->safe_psql('postgres',
	q{BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT mq.export(); COMMIT;});
is($node->safe_psql('postgres',
		q{SELECT string_agg((args->>'name') || '=' || coalesce(args->>'notify_channel', '-'), ' ' ORDER BY args->>'name')
		    FROM mq.export_topology WHERE kind = 'queue'}),
	'pgmq.q_nv=pgmq.q_nv.INSERT pgmq.q_plain=-', 'mq.export keeps the channel');

$bg->quit;
$node->stop;
done_testing();
