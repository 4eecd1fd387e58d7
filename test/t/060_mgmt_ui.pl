
# Copyright (c) 2026, queue_ext contributors

# The management web UI (www/, docs/management.md) in a real browser:
# Debian's Chromium, headless, driven by puppeteer-core (npm, pinned in
# test/mgmt_ui/package-lock.json) through test/mgmt_ui/ui_check.js, against
# mq-amqp's HTTP server serving this tree's www/.  Before it, SQL makes what
# the queue_ext pages show: a stream of two partitions with messages, a
# consumer group behind on it, and a dead letter in a queue bound to a
# queue's x-dead-letter-exchange.  The check logs in (a wrong password
# first), opens every page, declares a queue, publishes and gets a message,
# binds, purges, seeks the group, redrives the dead letter, sees an amqplib
# client on the connections page, checks keyboard focus and labels, and
# saves a 1366x768 screenshot of each page into a directory it prints,
# tmp_check/log/060_mgmt_ui_screenshots (QE_UI_SHOTS_KEEP: copied there as
# well).  Here, after the browser, SQL
# checks that what the UI did happened (the queue, the binding, the seek,
# the redrive).

use strict;
use warnings;
use File::Copy ();
use File::Path ();
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

my $chromium = $ENV{CHROMIUM} // '/usr/bin/chromium';
plan skip_all => "Debian's chromium is not installed (test/lib/cluster.sh installs it)"
  unless -x $chromium;
plan skip_all => qe_node_missing() if qe_node_missing();

my $node = qe_node('mgmt_ui');
my $password = 'ui-secret';

# ui_admin: a superuser with a password PostgreSQL checks (scram), as the
# HTTP login rule wants; the queue_ext objects the pages show
$node->safe_psql('postgres', qq{
	CREATE EXTENSION queue_ext;
	SET password_encryption = 'scram-sha-256';
	CREATE ROLE ui_admin LOGIN SUPERUSER PASSWORD '$password';
	SELECT mq.queue_declare('ui_stream', type => 'stream', arguments => '{"partitions": 2}');
	SELECT mq.group_declare('ui_stream', 'ui_group', start => 'earliest');
	SELECT mq.publish_batch('', ARRAY['ui_stream', 'ui_stream'], ARRAY['s0-' || i, 's0-' || i], "partition" => 0)
	  FROM generate_series(1, 3) i;
	SELECT mq.publish_batch('', ARRAY['ui_stream'], ARRAY['s1-' || i], "partition" => 1)
	  FROM generate_series(1, 2) i;
	SELECT mq.exchange_declare('ui_dlx', 'fanout');
	SELECT mq.queue_declare('ui_dead');
	SELECT mq.bind('ui_dead', 'ui_dlx');
	SELECT mq.queue_declare('ui_work', arguments => '{"x-dead-letter-exchange": "ui_dlx"}');
	SELECT mq.send('ui_work', 'dead ' || i) FROM generate_series(1, 2) i;
});
$node->safe_psql('postgres', q{
	DO $$
	DECLARE
		ids bigint[];
	BEGIN
		SELECT array_agg(msg_id) INTO ids FROM mq.consume('ui_work', 2);
		PERFORM mq.nack('ui_work', ids, requeue => false);
	END $$;
});
is($node->safe_psql('postgres', q{SELECT ready FROM mq.queues WHERE queue = 'ui_dead'}),
	'2', 'set-up: two dead letters in ui_dead');
is($node->safe_psql('postgres',
	q{SELECT sum(lag) FROM mq.consumer_groups WHERE group_name = 'ui_group'}),
	'8', 'set-up: ui_group is 8 messages behind on ui_stream');
qe_hba_first($node, "local all ui_admin scram-sha-256\n");

# the npm packages (puppeteer-core, amqplib) in a scratch copy
my $scratch = $node->basedir . '/mgmt_ui';
my ($dir, $why) = qe_npm_ci("$FindBin::RealBin/../mgmt_ui", $scratch);
BAIL_OUT($why) unless $dir;

# mq-amqp with its HTTP server on a free port, serving this tree's www/
my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my $www = "$FindBin::RealBin/../../www";
my ($gw, $amqp_port, $log) = qe_gateway($node,
	flags => [ '--http-listen', "127.0.0.1:$http_port", '--http-www', $www ]);
ok(qe_listening($amqp_port, handle => $gw), 'mq-amqp listens for AMQP');
ok(qe_listening($http_port, handle => $gw), 'and for HTTP');

# beside the logs: the node's directory is removed when the test passes
my $shots = "$PostgreSQL::Test::Utils::log_path/060_mgmt_ui_screenshots";
File::Path::rmtree($shots);
my @expected = qw(login_form login_refused login overview keyboard_focus
  declare_queue queues_filter_sort queues_page queue_publish queue_get
  queue_bind queue_consumers queue_purge exchanges_page exchange_page
  stream_page groups_page group_seek dead_letters_page connections_page
  no_script_errors logout);
my ($rc, $out, $err) = qe_run([ 'node', "$dir/ui_check.js" ], 600, {
	QE_UI_URL => "http://127.0.0.1:$http_port/",
	QE_UI_USER => 'ui_admin',
	QE_UI_PASSWORD => $password,
	QE_UI_SHOTS => $shots,
	QE_UI_AMQP_PORT => $amqp_port,
	QE_UI_STREAM => 'ui_stream',
	QE_UI_GROUP => 'ui_group',
	QE_UI_DLQ => 'ui_dead',
	CHROMIUM => $chromium,
	HOME => $scratch,
});
my %result;
for my $line (split /\n/, $out)
{
	$result{$1} = [ 1, '' ] if $line =~ /^ok (\S+)$/;
	$result{$1} = [ 0, $2 ] if $line =~ /^not ok (\S+): (.*)$/;
}
for my $name (@expected)
{
	ok($result{$name} && $result{$name}[0], "chromium: $name")
	  or diag($result{$name} ? $result{$name}[1] : "no result for $name");
}
is(scalar(keys %result), scalar(@expected), 'every check reported once')
  or diag("ui_check.js output:\n$out");
is($rc, 0, 'ui_check.js exits 0') or diag("ui_check.js stderr:\n$err");
diag("screenshots of the UI's pages: $shots");
if (my $keep = $ENV{QE_UI_SHOTS_KEEP})
{
	File::Path::make_path($keep);
	File::Copy::copy($_, $keep) for glob("$shots/*.png");
	diag("copied to $keep");
}
my @png = glob("$shots/*.png");
cmp_ok(scalar(@png), '>=', 13, 'a screenshot of every page');

# what the UI did, seen from SQL
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM mq.bindings WHERE queue = 'ui_check_q' AND exchange = 'amq.direct' AND binding_key = 'ui-key'}),
	'1', 'the binding made on the queue page is there');
is($node->safe_psql('postgres', q{SELECT type FROM mq.exchanges WHERE exchange = 'ui_check_x'}),
	'fanout', 'the exchange added on the exchanges page is there');
is($node->safe_psql('postgres',
	q{SELECT lag FROM mq.consumer_groups WHERE group_name = 'ui_group' AND partition = 0}),
	'0', 'the seek moved partition 0 of ui_group to its end');
is($node->safe_psql('postgres',
	q{SELECT lag FROM mq.consumer_groups WHERE group_name = 'ui_group' AND partition = 1}),
	'2', 'and left partition 1 where it was');
is($node->safe_psql('postgres', q{SELECT ready FROM mq.queues WHERE queue = 'ui_dead'}),
	'1', 'the redrive took one dead letter out of ui_dead');
is($node->safe_psql('postgres', q{SELECT ready FROM mq.queues WHERE queue = 'ui_work'}),
	'1', 'and put it back into ui_work');

my $text = qe_gateway_stop($gw, $log);
unlike($text, qr/HTTP.*(?:crash|assert)/i, 'no HTTP trouble in the log');
done_testing();
