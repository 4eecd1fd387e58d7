# mqctl as a user of rabbitmqadmin, kcat or mqadmin expects it (issue 37,
# docs/mqctl.md): read a stream without a group and seek a group; --key and
# --tag with --batch (mq.send_batch / mq.publish_batch keys and tags, one
# transaction per statement); amq.default as the default exchange;
# rabbitmqadmin's name=jobs refused with a hint instead of creating a queue
# of that name; Ctrl-C during send says how many were sent and committed;
# hints that name mqctl's flags rather than SQL arguments; a database
# without the extension said so; the man pages of mqctl and mq-amqp
# installed with the programs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use IPC::Run ();
use Time::HiRes qw(usleep);

my $node = qe_node('mqctl_habits');
$node->safe_psql('postgres', 'CREATE EXTENSION queue_ext');
my $mqctl = qe_mqctl_env($node);

# run mqctl with @args (stdin: $opt{in}); returns (exit status, stdout, stderr)
sub mq { return qe_mqctl_run($mqctl, @_) }

sub sql { return $node->safe_psql('postgres', shift) }

my ($rc, $out, $err);

# ---- read: a stream from an offset or a time, no group -------------------
sql(q{SELECT mq.queue_declare('ev', type => 'stream', arguments => '{"partitions": 2}')});
# one transaction each: ten publish times
sql(qq{SELECT mq.send('ev', 'p0-$_', "partition" => 0)}) for 0 .. 9;
sql(q{SELECT mq.send('ev', 'p1-a', "partition" => 1)});
($rc, $out, $err) = mq([qw(read ev --partition 0 --offset 3 -n 4)]);
is($rc, 0, 'read --partition --offset: exit 0') or diag($err);
is($out, "p0-3\np0-4\np0-5\np0-6\n", 'read prints the bodies from that offset, at most -n');
($rc, $out) = mq([qw(read ev --partition 0 --offset 8)]);
is($out, "p0-8\np0-9\n", 'read stops at the end of the partition');
($rc, $out) = mq([qw(read ev --partition 1 --format json)]);
like($out, qr/^\{.*"body":"p1-a".*"partition":1,"offset":0,/, 'read --format json: the columns of mq.read');
is(scalar(() = $out =~ /\n/g), 1, 'one JSON line per message');
my $mid = sql(q{SELECT published_at FROM mq.read('ev', 0, 5, 1)});
($rc, $out) = mq([ 'read', 'ev', '--partition', '0', '--from-time', $mid, '-n', '2' ]);
is($out, "p0-5\np0-6\n", 'read --from-time starts at the first message stored at or after it');
($rc, $out, $err) = mq([qw(read ev --offset 1 --from-time now)]);
is($rc, 2, 'read --offset with --from-time: bad usage');
sql(q{SELECT mq.queue_declare('plain')});
($rc, $out, $err) = mq([qw(read plain)]);
is($rc, 1, 'read of a classic queue: the server refuses');
like($err, qr/queue "plain" is not a stream\nHINT:  mqctl read and mqctl seek are for streams; use mqctl consume/,
	'... with a hint in mqctl\'s words');

# ---- seek: a group to an offset or a time -----------------------------------
sql(q{SELECT mq.group_declare('ev', 'billing', start => 'earliest')});
($rc, $out) = mq([qw(consume ev --group billing -n 100)]);
is(scalar(() = $out =~ /\n/g), 11, 'the group consumed and acked all 11');
($rc, $out, $err) = mq([qw(seek ev billing --to-offset 7 --partition 0)]);
is($rc . $out . $err, '0', 'seek --to-offset --partition: exit 0, nothing printed');
($rc, $out) = mq([qw(consume ev --group billing -n 100)]);
is($out, "p0-7\np0-8\np0-9\n", 'after the seek the group consumes partition 0 again from offset 7');
($rc, $out, $err) = mq([ 'seek', 'ev', 'billing', '--to-time', $mid ]);
is($rc, 0, 'seek --to-time: exit 0') or diag($err);
($rc, $out) = mq([qw(consume ev --group billing -n 100)]);
is(join(',', sort split /\n/, $out), 'p0-5,p0-6,p0-7,p0-8,p0-9,p1-a',
	'seek --to-time moved every partition (partition 1: to p1-a, published after that time)');
($rc, $out, $err) = mq([qw(seek ev billing)]);
is($rc, 2, 'seek without --to-offset or --to-time: bad usage');
like($err, qr/give one of --to-offset and --to-time/, '... says what is missing');
($rc, $out, $err) = mq([qw(seek ev nobody --to-offset 0)]);
is($rc, 1, 'seek of an unknown group: exit 1');
like($err, qr/consumer group "nobody" of stream "ev" does not exist\nHINT:  Declare it with "mqctl declare group ev nobody"\./,
	'the hint names mqctl\'s command, not mq.group_declare()');

# ---- --key and --tag with --batch -------------------------------------------
sql(q{SELECT mq.queue_declare('tagged', type => 'stream')});
sql(q{SELECT mq.group_declare('tagged', 'onlya', start => 'earliest', filter => 'TagA')});
($rc, $out, $err) = mq([qw(send tagged --batch 3 --key order-7 --tag TagA)], in => "a1\na2\na3\na4\n");
is($rc . $err, '0', 'send --batch with --key and --tag: exit 0');
($rc, $out, $err) = mq([qw(send tagged --batch 2 --tag TagB b1 b2)]);
is($rc . $err, '0', 'send --batch --tag TagB: exit 0');
is(sql(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || coalesce(key, '-') || ':' || tag, ',' ORDER BY "offset")
		  FROM mq.read('tagged', 0)}),
	'a1:order-7:TagA,a2:order-7:TagA,a3:order-7:TagA,a4:order-7:TagA,b1:-:TagB,b2:-:TagB',
	'every message of the batches has the key and the tag');
is(sql(q{SELECT count(*) FROM mq.messages_by_key('order-7', 10)}), '4', 'the key is indexed (lookup)');
($rc, $out) = mq([qw(consume tagged --group onlya -n 100)]);
is($out, "a1\na2\na3\na4\n", 'a tag filter of a group sees the batch\'s tags');
sql(q{SELECT mq.exchange_declare('tx', 'fanout'); SELECT mq.bind('plain', 'tx')});
($rc, $out, $err) = mq([qw(publish tx rk --batch 10 --tag TagC --key pk p1 p2)]);
is($rc . $err, '0', 'publish --batch with --tag and --key: exit 0');
is(sql(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || key || ':' || tag, ',' ORDER BY msg_id)
		  FROM mq.browse('plain', 10)}),
	'p1:pk:TagC,p2:pk:TagC', 'publish_batch got the key and the tag');
sql(q{SELECT mq.queue_purge('plain')});

# ---- amq.default ----------------------------------------------------------------
($rc, $out, $err) = mq([qw(publish amq.default plain hello-default)]);
is($rc . $err, '0', 'publish amq.default QUEUE: exit 0');
is(sql(q{SELECT string_agg(convert_from(body, 'UTF8') || '/' || exchange, ',') FROM mq.browse('plain', 10)}),
	'hello-default/', 'amq.default is the default exchange (\'\')');
($rc, $out, $err) = mq([qw(publish amq.default plain --batch 5 b1 b2)]);
is($rc . $err, '0', 'publish amq.default --batch: exit 0');
is(sql(q{SELECT ready FROM mq.queues WHERE queue = 'plain'}), '3', 'batch through amq.default routed');
sql(q{SELECT mq.queue_purge('plain')});

# ---- rabbitmqadmin's name=jobs --------------------------------------------------
for my $case (
	[ [qw(declare queue name=jobs)], qr/mqctl declare queue NAME/ ],
	[ [qw(declare queue name=jobs durable=true)], qr/mqctl declare queue NAME/ ],
	[ [qw(declare exchange name=logs type=topic)], qr/mqctl declare exchange NAME/ ],
	[ [qw(delete queue name=jobs)], qr/mqctl delete queue NAME/ ],
	[ [qw(publish exchange=amq.default routing_key=jobs payload=hi)], qr/mqctl publish EXCHANGE ROUTING_KEY/ ],
	[ [qw(bind source=ex destination=jobs)], qr/mqctl bind QUEUE EXCHANGE/ ],
	[ [qw(consume queue=jobs)], qr/mqctl consume QUEUE/ ],)
{
	($rc, $out, $err) = mq($case->[0]);
	is($rc, 2, "rabbitmqadmin style refused (exit 2): @{$case->[0]}");
	like($err, qr/^mqctl: error: "[a-z_]+=[^"]*" is rabbitmqadmin's KEY=VALUE syntax, not a name\nHINT:  mqctl takes names as plain arguments.*\n.*$case->[1]/s,
		"... with a hint showing mqctl's syntax: @{$case->[0]}");
	is(sql(q{SELECT count(*) FROM mq.queues WHERE queue LIKE '%=%'})
		  . sql(q{SELECT count(*) FROM mq.exchanges WHERE exchange LIKE '%=%'}),
		'00', "no queue or exchange named KEY=VALUE was created: @{$case->[0]}");
}
# the hint points at the option or the position a key stands for
for my $case (
	[ [qw(declare queue jobs durable=false)], qr/\(here --no-durable\)/ ],
	[ [qw(declare queue type=quorum)], qr/\(here --type quorum for a queue/ ],
	[ [qw(bind source=amq.topic destination=jobs)], qr/\(here the exchange "amq\.topic" is the second argument, after the queue\)/ ],
	[ [qw(bind destination=jobs source=amq.topic)], qr/\(here the queue "jobs" is the first argument, before the exchange\)/ ],
	[ [qw(delete queue name=jobs)], qr/\(here "jobs", not "name=jobs"\)/ ],)
{
	($rc, $out, $err) = mq($case->[0]);
	like($err, $case->[1], "the hint names what to write instead: @{$case->[0]}");
	unlike($err, qr/\n\n/, "no blank line in the hint: @{$case->[0]}");
}
($rc, $out, $err) = mq([qw(purge queue=jobs)]);
like($err, qr/  mqctl purge QUEUE\nTry "mqctl purge --help"/, 'purge: the usage line, then Try, no blank line');
($rc, $out, $err) = mq([qw(send plain name=value)]);
is($rc . $err, '0', 'a body that reads as KEY=VALUE is a body');

# ---- Ctrl-C during send -----------------------------------------------------------
sql(q{SELECT mq.queue_declare('bulk')});
my $in = join('', map { "m$_\n" } 1 .. 10);
my ($sout, $serr) = ('', '');
my $h = IPC::Run::start([ $mqctl, 'send', 'bulk' ], '<', \$in, '>', \$sout, '2>', \$serr,
	IPC::Run::timeout(300));
# the ten lines are sent (a statement each, committed), then mqctl waits for more
my $deadline = time + 120;
while (sql(q{SELECT ready FROM mq.queues WHERE queue = 'bulk'}) < 10 && time < $deadline)
{
	$h->pump_nb;
	usleep(100_000);
}
is(sql(q{SELECT ready FROM mq.queues WHERE queue = 'bulk'}), '10', 'ten sent, mqctl waits on stdin');
$h->signal('INT');
$h->finish;
is($? >> 8, 130, 'send stopped by SIGINT: exit 130');
like($serr, qr/^mqctl: send interrupted: 10 messages sent and committed; no more were sent\n\z/,
	'SIGINT: mqctl says how many were sent and committed');

# ---- hints in mqctl's words ---------------------------------------------------------
($rc, $out, $err) = mq([qw(consume ev)]);
is($rc, 1, 'consume of a stream without --group: exit 1');
like($err, qr/needs a consumer group\nHINT:  Pass --group GROUP, a group declared with "mqctl declare group ev GROUP", or read the stream without a group: "mqctl read ev --partition P --offset O"\.\n/,
	'the hint names --group and mqctl read');
unlike($err, qr/group_name =>/, 'not the SQL argument');
sql(q{SELECT mq.group_declare('ev', 'fan', mode => 'broadcast')});
($rc, $out, $err) = mq([qw(consume ev --group fan)]);
like($err, qr/HINT:  Pass --consumer NAME/, 'a broadcast group without a consumer: the hint names --consumer');
sql(q{SELECT mq.send('plain', 'no origin')});
($rc, $out, $err) = mq([qw(dlq redrive plain)]);
is($rc, 1, 'redrive of a message with no origin: exit 1');
like($err, qr/has no origin to redrive it to\n(DETAIL:  .*\n)?HINT:  Pass --to TARGET, the queue to move it to\./,
	'the hint names --to, not target_queue =>');

# a stream has no mq.browse: mqctl dlq show says to read it
($rc, $out, $err) = mq([qw(dlq show ev)]);
is($rc, 1, 'dlq show of a stream: exit 1');
like($err, qr/^mqctl: error: mq\.browse does not read streams: "ev" is a stream queue\nHINT:  Read the stream with "mqctl read ev --partition P --offset O"\.\n\z/,
	'dlq show of a stream: read it with mqctl read, no --group advice');
# group_delete's notice of a kept dead-letter queue, in mqctl's commands
sql(q{SELECT mq.group_declare('ev', 'dg', start => 'earliest', max_retries => 0)});
sql(q{SELECT mq.nack('ev', array_agg(msg_id), requeue => false, group_name => 'dg')
	FROM mq.consume('ev', 1, group_name => 'dg')});
($rc, $out, $err) = mq([qw(delete group ev dg)]);
is($rc, 0, 'delete group with a dead letter: exit 0') or diag($err);
like($err, qr/NOTICE:  dead-letter queue "%DLQ%dg" of consumer group "dg" is kept: it holds 1 message\(s\)\nHINT:  Move them back with "mqctl dlq redrive '%DLQ%dg'", or delete the queue with "mqctl delete queue '%DLQ%dg'"\.\n/,
	'the kept dead-letter queue: the notice\'s hint in mqctl\'s commands');
unlike($err, qr/mq\.redrive|mq\.queue_delete/, '... not in SQL');
# server messages naming SQL arguments: mqctl's flags
($rc, $out, $err) = mq([qw(read ev --from-time infinity)]);
like($err, qr/^mqctl: error: --from-time must be a finite timestamp\n/, 'from_time is --from-time');
($rc, $out, $err) = mq([qw(seek ev billing --to-time -infinity)]);
like($err, qr/^mqctl: error: --to-time must be a finite timestamp\n/, 'to_time is --to-time');
($rc, $out, $err) = mq([qw(dlq redrive plain --to plain)]);
like($err, qr/^mqctl: error: --to is the source queue "plain"\n/, 'target_queue is --to');
($rc, $out, $err) = mq([qw(read ev --partition 5)]);
like($err, qr/\nDETAIL:  The stream has 2 partitions, numbered from 0\.\n/, 'partitions, plural');

# ---- consume --follow ends at Ctrl-C without an error in the server's log --------------
sql(q{SELECT mq.queue_declare('tail')});
my $logpos = -s $node->logfile;
my ($fout, $ferr) = ('', '');
my $fh = IPC::Run::start([ $mqctl, 'consume', 'tail', '--follow', '--wait', '60' ], '<', \'',
	'>', \$fout, '2>', \$ferr, IPC::Run::timeout(300));
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE query LIKE '%FROM mq.consume($1,%' AND state = 'active' AND pid <> pg_backend_pid()}),
	'consume --follow waits in mq.consume');
$fh->signal('INT');
$fh->finish;
is($? >> 8, 0, 'consume --follow stopped by SIGINT: exit 0') or diag($ferr);
is($ferr, '', '... quietly');
my $log = slurp_file($node->logfile, $logpos);
unlike($log, qr/ERROR|FATAL/, 'no ERROR or FATAL in the server\'s log: the wait was woken, not cancelled');
sql(q{SELECT mq.send('tail', 'after')});
($rc, $out) = mq([qw(consume tail)]);
is($out, "after\n", 'the queue works after it');

# ---- a database without the extension ------------------------------------------------
sql('CREATE DATABASE noext');
for my $cmd ([qw(list queues)], [qw(send jobs x)], [qw(consume jobs)])
{
	($rc, $out, $err) = mq([ '-d', 'noext', @$cmd ]);
	is($rc, 1, "no extension: exit 1 (@$cmd)");
	like($err, qr/^mqctl: error: the extension queue_ext is not installed in database "noext"\n(DETAIL:  .*\n)?HINT:  Run "CREATE EXTENSION queue_ext;" in that database .*or pick another database with -d/,
		"no extension: said so, with what to do (@$cmd)");
}

# ---- man pages -------------------------------------------------------------------------
my $man1 = $node->config_data('--mandir') . '/man1';
for my $page ([ 'mqctl', qr/mqctl \\- command-line tool of queue_ext/, qr/\bseek\b/ ],
	[ 'mq-amqp', qr/mq\\?-amqp \\- AMQP 0-9-1 gateway/, qr/\\-\\-listen/ ])
{
	my $file = "$man1/$page->[0].1";
	ok(-f $file, "the man page of $page->[0] is installed ($file)");
	my $text = -f $file ? slurp_file($file) : '';
	like($text, qr/^\.TH \U$page->[0]\E "1"/m, "$page->[0].1 is a section 1 page");
	like($text, $page->[1], "$page->[0].1 has its NAME line");
	like($text, $page->[2], "$page->[0].1 has the --help text");
	like($text, qr/^\.SH EXAMPLES/m, "$page->[0].1 has examples");
}
SKIP:
{
	skip 'man is not installed', 1 unless -x '/usr/bin/man';
	my ($mout, $merr) = ('', '');
	IPC::Run::run([ '/usr/bin/man', '-M', $node->config_data('--mandir'), '-w', 'mqctl' ],
		'>', \$mout, '2>', \$merr);
	is($mout, "$man1/mqctl.1\n", 'man finds it');
}

done_testing();
