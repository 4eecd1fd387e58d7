# mqctl, the command-line tool (docs/mqctl.md), run as the real binary
# against a test server: each command's output and exit status (0 ok,
# 1 server error printed as psql prints it, 2 bad usage), the connection
# conventions (-d conninfo, -h/-p, PG* variables, .pgpass), tables, JSON
# parsed back and CSV, bodies from arguments, stdin and --files, batches,
# the progress bar on a pseudo-terminal and its absence without one,
# consume --follow stopped by SIGINT with everything printed acked and
# nothing printed twice, trace, lookup and the dead-letter commands.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use IPC::Run ();
use IO::Pty;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(usleep);

my $node = qe_node('mqctl');
$node->safe_psql('postgres', 'CREATE EXTENSION queue_ext');
# the connection through the environment, as libpq reads it
my $mqctl = qe_mqctl_env($node);
ok(-x $mqctl, "mqctl is installed next to pg_config's bindir ($mqctl)");

my $host = $node->host;
my $port = $node->port;

# run mqctl with @args (stdin: $opt{in}); returns (exit status, stdout, stderr)
sub mq { return qe_mqctl_run($mqctl, @_) }

sub sql { return $node->safe_psql('postgres', shift) }

# ---- usage, help, version -------------------------------------------------
my ($rc, $out, $err) = mq(['--version']);
is($rc, 0, '--version exits 0');
like($out, qr/^mqctl \(queue_ext\) \d/, '--version names the tool');
($rc, $out) = mq(['--help']);
is($rc, 0, '--help exits 0');
like($out, qr/list queues\|exchanges.*consume QUEUE/s, '--help lists the commands');
for my $cmd (qw(list declare delete bind unbind purge publish send consume trace lookup dlq definitions top bench))
{
	($rc, $out) = mq([ $cmd, '--help' ]);
	is($rc, 0, "$cmd --help exits 0");
	like($out, qr/Usage:.*mqctl $cmd.*Connection options/s, "$cmd --help shows its usage");
}
($rc, $out, $err) = mq([]);
is($rc, 2, 'no command: exit 2');
like($err, qr/^mqctl: error: no command given\nTry "mqctl --help"/, 'no command: says so');
($rc, $out, $err) = mq(['frobnicate']);
is($rc, 2, 'unknown command: exit 2');
like($err, qr/unknown command "frobnicate"/, 'unknown command named');
for my $bad (
	[ [qw(list things)], qr/cannot list "things"/ ],
	[ [qw(list queues --format xml)], qr/--format must be table, json or csv/ ],
	[ [qw(list queues --bogus)], qr/unknown option or missing value: "--bogus"/ ],
	[ [qw(declare queue)], qr/missing the queue's name/ ],
	[ [qw(declare queue q --durable --no-durable)], qr/exclude each other/ ],
	[ [qw(declare queue q --arg novalue)], qr/--arg takes KEY=VALUE/ ],
	[ [qw(declare widget w)], qr/cannot declare "widget"/ ],
	[ [qw(delete queue a b)], qr/too many arguments \("b"\)/ ],
	[ [qw(bind q)], qr/missing the queue and the exchange/ ],
	[ [qw(send q a --batch 0)], qr/--batch must be an integer from 1 to 10000/ ],
	[ [qw(send q a --batch 10 --priority 1)], qr/--priority cannot be used with --batch/ ],
	[ [qw(send q a --mandatory)], qr/send is always mandatory/ ],
	[ [qw(publish ex)], qr/missing the exchange and the routing key/ ],
	[ [qw(send q a --files /nonexistent)], qr/give bodies as arguments or --files, not both/ ],
	[ [qw(consume q --format csv)], qr/--format must be raw or json/ ],
	[ [qw(consume q --ack --requeue)], qr/exclude each other/ ],
	[ [qw(consume q -n 0)], qr/--count must be an integer/ ],
	[ [qw(trace abc)], qr/MSG_ID must be an integer/ ],
	[ [qw(lookup)], qr/--key is required/ ],
	[ [qw(dlq fix q)], qr/unknown dlq command "fix"/ ],)
{
	($rc, $out, $err) = mq($bad->[0]);
	is($rc, 2, "bad usage exits 2: @{$bad->[0]}");
	like($err, $bad->[1], "bad usage explained: @{$bad->[0]}");
	is($out, '', "bad usage prints nothing on stdout: @{$bad->[0]}");
}

# ---- connection conventions ---------------------------------------------
{
	local $ENV{PGHOST} = '/nonexistent';
	($rc, $out, $err) = mq([ '-h', $host, '-p', $port, 'declare', 'queue', 'q1',
		'--arg', 'x-max-length=100', '--arg', 'x-overflow=reject-publish' ]);
	is($rc, 0, 'declare queue with -h -p');
	is($out, "q1\n", 'declare queue prints the name');
	($rc, $out, $err) = mq([ '-d', $node->connstr('postgres'), 'declare', 'exchange', 'ex', 'topic' ]);
	is($rc, 0, 'declare exchange with -d conninfo');
	($rc, $out, $err) = mq([ '-d', "postgresql:///postgres?host=$host&port=$port",
		'bind', 'q1', 'ex', 'a.#' ]);
	is($rc, 0, 'bind with -d URI');
	($rc, $out, $err) = mq([qw(list queues)]);
	is($rc, 1, 'no server at PGHOST: exit 1');
	like($err, qr/^mqctl: error: connection to server on socket "\/nonexistent\/.*failed/,
		'the connection error is printed');
}
is(sql(q{SELECT arguments FROM mq.queues WHERE queue = 'q1'}),
	'{"x-overflow": "reject-publish", "x-max-length": 100}',
	'--arg values: numbers as JSON numbers, the rest as strings');
is(sql(q{SELECT count(*) FROM mq.bindings WHERE queue = 'q1' AND exchange = 'ex' AND binding_key = 'a.#'}),
	'1', 'bound');

# a role with a password, taken from a .pgpass file
sql(q{CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD 'sekrit'});
qe_hba_first($node, "local all pwuser scram-sha-256\n");
my $pgpass = PostgreSQL::Test::Utils::tempdir() . '/pgpass';
open(my $fh, '>', $pgpass) or die;
print $fh "*:*:*:pwuser:sekrit\n";
close $fh;
chmod 0600, $pgpass;
{
	local $ENV{PGPASSFILE} = '/nonexistent';
	($rc, $out, $err) = mq([qw(-U pwuser -w list exchanges)]);
	is($rc, 1, 'password needed, -w: exit 1');
	like($err, qr/^mqctl: error: .*password/, 'the password error is printed');
	$ENV{PGPASSFILE} = $pgpass;
	($rc, $out, $err) = mq([qw(-U pwuser -w list exchanges)]);
	is($rc, 0, 'the password from .pgpass (PGPASSFILE)');
	local $ENV{PGUSER} = 'pwuser';
	($rc, $out, $err) = mq([qw(-w list exchanges)]);
	is($rc, 0, 'PGUSER and .pgpass');
}

# ---- server errors: exit 1, printed as psql prints them --------------------
($rc, $out, $err) = mq([qw(declare queue qx --type bogus)]);
is($rc, 1, 'server error: exit 1');
is($err, qq{mqctl: error: invalid queue type "bogus" for queue "qx"\nHINT:  Queue types are classic, quorum and stream.\n},
	'primary message and HINT');
($rc, $out, $err) = mq([qw(declare queue q1 --arg x-max-length=abc)]);
is($rc, 1, 'bad argument: exit 1');
like($err, qr/^mqctl: error: invalid value .*\nDETAIL:  The value must be a non-negative integer\.\n$/,
	'primary message and DETAIL');
($rc, $out, $err) = mq([qw(delete queue nope)]);
is($rc, 1, 'unknown queue: exit 1');
is($err, qq{mqctl: error: queue "nope" does not exist\n}, 'unknown queue named');

# ---- declare, list -------------------------------------------------------
# a quorum queue on this server without synchronous standbys: declared,
# with the server's warning and its remedy printed (issue 34)
($rc, $out, $err) = mq([qw(declare queue qq_lone --type quorum)]);
is($rc, 0, 'declare quorum queue without standbys: exit 0');
like($err, qr/^WARNING:  publishes and acks on queue "qq_lone" will fail: no synchronous standby is configured\n(DETAIL:  .*\n)?HINT:  .*ALTER SYSTEM SET mq\.quorum_unavailable = 'wait'; SELECT pg_reload_conf\(\);\n/,
	'... printing the WARNING with its HINT');
($rc, $out, $err) = mq([qw(delete queue qq_lone)]);
is($rc, 0, 'delete it');
($rc) = mq([qw(declare queue st --type stream --arg partitions=2)]);
is($rc, 0, 'declare stream');
($rc) = mq([qw(declare group st g1 --start earliest --max-retries 0)]);
is($rc, 0, 'declare group');
($rc, $out, $err) = mq([qw(declare group st g1 --mode broadcast)]);
is($rc, 1, 'redeclare group with another mode: exit 1');
like($err, qr/^mqctl: error: .*g1/, 'redeclare refused');
($rc) = mq([qw(declare exchange hx headers --alternate-exchange ex)]);
is($rc, 0, 'declare headers exchange with an alternate exchange');
($rc, $out) = mq([qw(declare queue), '']);
like($out, qr/^amq\.gen-\S+\n$/, 'a server-named queue is printed');
my $genq = $out =~ s/\n//r;

($rc, $out) = mq([qw(list queues)]);
is($rc, 0, 'list queues');
my @lines = split /\n/, $out;
like($lines[0], qr/^queue\s+\| type\s+\| durable \| ready \|/, 'table header: the columns of mq.queues');
like($lines[1], qr/^-+\+-+\+/, 'table rule');
my $bar = index($lines[0], '|');
is(scalar(grep { index($_, '|') == $bar } @lines[ 2 .. $#lines ]), $#lines - 1, 'columns aligned');
ok((grep { /^q1\s+\| classic \| t\s+\|\s+0 \|/ } @lines), 'q1 row');

unlike($lines[0], qr/last_delivery|first_offset/, 'a table of queues shows the main columns');
($rc, $out) = mq([qw(list queues --all)]);
like((split /\n/, $out)[0], qr/\| last_delivery \|.*\| quorum_met$/, 'list queues --all: every column');
($rc, $out) = mq([ 'list', 'queues', '--columns', 'ready,queue', '--format', 'csv' ]);
like($out, qr/^ready,queue\n(?:.*\n)*0,q1\n/, '--columns: those columns, in that order');
($rc, $out, $err) = mq([ 'list', 'queues', '--columns', 'queue,nope' ]);
is($rc, 1, '--columns with an unknown column: exit 1');
like($err, qr/^mqctl: error: column "nope" does not exist/, 'the unknown column is named');
($rc, $out) = mq([qw(list queues --format json)]);
my $queues = decode_json($out);
my ($q1) = grep { $_->{queue} eq 'q1' } @$queues;
is($q1->{type}, 'classic', 'json: type');
is($q1->{ready}, 0, 'json: ready is a number');
ok(JSON::PP::is_bool($q1->{durable}) && $q1->{durable}, 'json: durable is a boolean');
is_deeply($q1->{arguments}, { 'x-max-length' => 100, 'x-overflow' => 'reject-publish' },
	'json: arguments is an object');
my ($st) = grep { $_->{queue} eq 'st' } @$queues;
is_deeply($st->{first_offset}, [ 0, 0 ], 'json: arrays as arrays');
is_deeply([ map { $_->{queue} } @$queues ], [ sort map { $_->{queue} } @$queues ], 'json: ordered by name');
is_deeply([ sort keys %$q1 ],
	[ sort split /\|/, sql(q{SELECT string_agg(attname, '|') FROM pg_attribute
		WHERE attrelid = 'mq.queues'::regclass AND attnum > 0}) ],
	'json: every column of mq.queues');

($rc, $out) = mq([qw(list queues --format csv)]);
@lines = split /\n/, $out;
is($lines[0], 'queue,type,durable,ready,unacked,delayed,total,consumers,oldest_ready_age,'
	. 'last_delivery,arguments,ready_bytes,partitions,first_offset,last_offset,retention,quorum_met',
	'csv header');
ok((grep { $_ eq 'q1,classic,t,0,0,0,0,0,,,"{""x-overflow"": ""reject-publish"", ""x-max-length"": 100}",,,,,,' } @lines),
	'csv row, quoted');

($rc, $out) = mq([qw(list exchanges -f json)]);
my ($hx) = grep { $_->{exchange} eq 'hx' } @{ decode_json($out) };
is($hx->{type}, 'headers', 'list exchanges: type');
is($hx->{alternate_exchange}, 'ex', 'list exchanges: alternate exchange');
($rc, $out) = mq([qw(list bindings -f csv)]);
like($out, qr/^ex,q1,a\.#,\{\}$/m, 'list bindings');
($rc, $out) = mq([qw(list groups -f json)]);
my $groups = decode_json($out);
is(scalar(@$groups), 2, 'list groups: one row per partition');
is($groups->[1]{group_name}, 'g1', 'list groups: group name');
is($groups->[1]{partition}, 1, 'list groups: partition');
($rc, $out) = mq([qw(list consumers)]);
like($out, qr/^st\s+\| g1\s+\|\s+0 \|/m, 'list consumers: the group');
like($out, qr/^q1\s+\|\s+\|\s+0 \|/m, 'list consumers: the queue');

# ---- publish and send ----------------------------------------------------
($rc, $out, $err) = mq([qw(send q1 one two --ids)]);
is($rc, 0, 'send bodies from arguments');
like($out, qr/^\d+\n\d+\n$/, '--ids prints the ids');
my @ids = split /\n/, $out;
($rc, $out, $err) = mq([qw(publish ex a.b --key k7 --tag t --message-group mg --header x=1 --header y=s)],
	in => "three\nfour\n\nsix");
is($rc, 0, 'publish bodies from stdin');
is($out . $err, '', 'publish is quiet');
is(sql(q{SELECT string_agg(convert_from(body, 'UTF8') || ':' || concat(key, tag, message_group, headers), ',' ORDER BY msg_id)
	FROM mq.browse('q1', 100)}),
	'one:,two:,three:k7tmg{"x": 1, "y": "s"},four:k7tmg{"x": 1, "y": "s"},:k7tmg{"x": 1, "y": "s"},six:k7tmg{"x": 1, "y": "s"}',
	'one message per line (an empty line too, no newline needed at the end), with the properties');
($rc, $out, $err) = mq([qw(publish ex nowhere lost)]);
is($rc, 0, 'an unroutable publish succeeds');
like($err, qr/^mqctl: warning: 1 message was routed to no queue/, 'and is warned about');
($rc, $out, $err) = mq([qw(publish ex nowhere lost --mandatory)]);
is($rc, 1, '--mandatory: unroutable is an error');
like($err, qr/^mqctl: error: /, 'the mandatory error is printed');
($rc, $out, $err) = mq([qw(send q1 later --delay), '1 hour', '--dedup-id', 'd1']);
($rc, $out, $err) = mq([qw(send q1 later --delay), '1 hour', '--dedup-id', 'd1']);
is(sql(q{SELECT delayed FROM mq.queues WHERE queue = 'q1'}), '1', '--delay and --dedup-id');

my $dir = PostgreSQL::Test::Utils::tempdir();
for my $f ([ 'b', "file b\nline 2" ], [ 'a', 'file a' ], [ 'c', "\xff\x00\xfe" ])
{
	open(my $fh, '>:raw', "$dir/$f->[0]") or die;
	print $fh $f->[1];
	close $fh;
}
mkdir "$dir/subdir";
sql(q{SELECT mq.queue_declare('fq')});
($rc, $out, $err) = mq([ 'send', 'fq', '--files', $dir, '--batch', '2', '--header', 'h=1' ]);
is($rc, 0, 'send --files --batch');
is(sql(q{SELECT string_agg(encode(body, 'hex') || headers::text, ',' ORDER BY msg_id) FROM mq.browse('fq', 10)}),
	'66696c652061{"h": 1},66696c6520620a6c696e652032{"h": 1},ff00fe{"h": 1}',
	'one message per regular file, in name order, bytes as they are');

# ---- consume ---------------------------------------------------------------
($rc, $out, $err) = mq([qw(consume fq -n 10 --format json)]);
is($rc, 0, 'consume --format json');
my @msgs = map { decode_json($_) } split /\n/, $out;
is(scalar(@msgs), 3, 'one JSON line per message');
is($msgs[0]{body}, 'file a', 'json body');
is($msgs[1]{body}, "file b\nline 2", 'json body with a newline');
is($msgs[2]{body_base64}, '/wD+', 'a body that is not UTF-8 in base64');
ok(!exists $msgs[2]{body}, '... and no body then');
is_deeply($msgs[0]{headers}, { h => 1 }, 'json headers');
is($msgs[0]{delivery_count}, 1, 'json numbers');
like($msgs[0]{published_at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:[\d.]+\+00:00$/, 'json times in ISO 8601, as list writes them');
is_deeply([ sort keys %{ $msgs[0] } ],
	[ sort qw(msg_id queue exchange routing_key body headers published_at redelivered delivery_count
		partition offset key tag message_group priority properties reconsume_times receipt) ],
	'every column of mq.consume');
is(sql(q{SELECT ready + unacked FROM mq.queues WHERE queue = 'fq'}), '0', 'what was printed was acked');

($rc, $out) = mq([qw(consume q1)]);
is($out, "one\n", 'consume: one message by default, raw');
($rc, $out) = mq([qw(consume q1 -n 2 --no-ack)]);
is($out, "two\nthree\n", 'consume --no-ack');
is(sql(q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'q1'}), '5/0',
	'--no-ack: they come back when mqctl exits');
($rc, $out) = mq([qw(consume q1 -n 1 --requeue)]);
is($out, "two\n", 'consume --requeue');
is(sql(q{SELECT redelivered FROM mq.browse('q1', 1)}), 't', '--requeue: ready again, redelivered');
($rc, $out) = mq([qw(consume q1 -n 100)]);
is($out, "two\nthree\nfour\n\nsix\n", 'consume -n 100 takes what is ready and stops');
($rc, $out) = mq([qw(consume q1)]);
is($rc . $out, '0', 'consume of an empty queue: nothing, exit 0');
($rc, $out, $err) = mq([qw(consume nope)]);
is($rc, 1, 'consume of an unknown queue: exit 1');
is($err, qq{mqctl: error: queue "nope" does not exist\n}, 'consume error printed');

# stream group: consume, nack to the DLQ (max_retries 0), dlq commands
sql(q{SELECT mq.send('st', 's' || g, partition => g % 2) FROM generate_series(1, 4) g});
($rc, $out) = mq([qw(consume st --group g1 -n 10 --format json)]);
@msgs = map { decode_json($_) } split /\n/, $out;
is(scalar(@msgs), 4, 'consume --group');
ok(defined $msgs[0]{partition} && defined $msgs[0]{offset}, 'stream rows carry partition and offset');
is(sql(q{SELECT sum(lag) FROM mq.consumer_groups WHERE group_name = 'g1'}), '0', 'the group acked them');
sql(q{SELECT mq.send('st', 'bad', partition => 0)});
$node->safe_psql('postgres', q{
	SELECT mq.nack('st', ARRAY(SELECT msg_id FROM mq.consume('st', 1, group_name => 'g1')),
				   requeue => false, group_name => 'g1')});
($rc, $out) = mq([qw(dlq list -f json)]);
my ($dlq) = grep { $_->{queue} eq '%DLQ%g1' } @{ decode_json($out) };
is($dlq->{ready}, 1, 'dlq list: the group\'s DLQ with its message');
($rc, $out) = mq([qw(dlq show %DLQ%g1 -f json)]);
my $shown = decode_json($out);
is($shown->[0]{body}, 'bad', 'dlq show: the body');
is($shown->[0]{headers}{'x-dlq-origin-group'}, 'g1', 'dlq show: the headers');
($rc, $out) = mq([qw(dlq show %DLQ%g1)]);
like($out, qr/^msg_id\s+\|.*\| body$/m, 'dlq show as a table');
($rc, $out) = mq([qw(dlq redrive %DLQ%g1)]);
is($out, "1\n", 'dlq redrive prints how many moved');
($rc, $out) = mq([qw(consume st --group g1)]);
is($out, "bad\n", 'the redriven message is back in the stream');
($rc, $out, $err) = mq([qw(dlq redrive st)]);
is($rc, 1, 'dlq redrive of a stream: exit 1');
like($err, qr/^mqctl: error: /, 'redrive error printed');

# trace and lookup
($rc, $out) = mq([ 'trace', $ids[0], '-f', 'json' ]);
my @events = map { $_->{event} } @{ decode_json($out) };
is_deeply([ @events[ 0, 1 ] ], [qw(published routed)], 'trace: published, routed');
ok((grep { $_ eq 'acked' } @events), 'trace: acked');
($rc, $out) = mq([ 'trace', $ids[0] ]);
like($out, qr/^event\s+\| queue \| at\s+\| detail$/m, 'trace table');
($rc, $out) = mq([qw(send q1 --key kk k1 k2)]);
($rc, $out) = mq([qw(lookup --key kk -f csv)]);
@lines = split /\n/, $out;
is(scalar(@lines), 3, 'lookup: header and two messages');
like($lines[1], qr/,kk,.*,2,k2$/, 'lookup: newest first, body shown');

# purge, unbind, delete
sql(q{SELECT mq.send('q1', 'x' || g) FROM generate_series(1, 3) g});
($rc, $out) = mq([qw(purge q1)]);
is($out, "5\n", 'purge prints how many were removed');
($rc) = mq([ 'unbind', 'q1', 'ex', 'a.#' ]);
is(sql(q{SELECT count(*) FROM mq.bindings WHERE exchange = 'ex'}), '0', 'unbind');
($rc, $out) = mq([qw(delete group st g1)]);
is($rc, 0, 'delete group');
is(sql(q{SELECT count(*) FROM mq.consumer_groups}), '0', 'group deleted');
($rc, $out) = mq([qw(delete exchange hx)]);
is($rc, 0, 'delete exchange');
($rc, $out) = mq([ 'delete', 'queue', $genq ]);
is($out, "0\n", 'delete queue prints the messages it held');
($rc, $out, $err) = mq([qw(delete queue q1 --if-empty)]);
is($rc, 1, 'delete queue --if-empty of a queue holding a delayed message: exit 1');
like($err, qr/^mqctl: error: .*q1/, '--if-empty refusal printed');
($rc, $out, $err) = mq([qw(delete queue q1)]);
is($out, "1\n", 'delete queue: the delayed message it held');

# ---- the progress bar ------------------------------------------------------
# mqctl with its stderr on a pseudo-terminal, stdout and stdin elsewhere
# (screen => 1: stdin and stdout on it too, TERM=xterm; then once its output
# matches $opt{until}, $opt{keys} is typed)
sub mq_on_pty
{
	my ($args, %opt) = @_;
	my $pty = IO::Pty->new;
	my $slave = $pty->slave;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		if ($opt{screen})
		{
			$ENV{TERM} = 'xterm';
			$pty->make_slave_controlling_terminal;
			open(STDIN, '<&', $slave) or POSIX::_exit(99);
			open(STDOUT, '>&', $slave) or POSIX::_exit(99);
		}
		else
		{
			open(STDIN, '<', '/dev/null');
			open(STDOUT, '>', '/dev/null');
		}
		open(STDERR, '>&', $slave) or POSIX::_exit(99);
		exec($mqctl, @$args) or POSIX::_exit(98);
	}
	$pty->close_slave;
	$pty->set_raw if $opt{screen};
	my $text = '';
	my $typed = 0;
	my $deadline = time + 120;
	# read until the child closed the terminal (EOF, or EIO on Linux)
	while (time < $deadline)
	{
		my $rin = '';
		vec($rin, fileno($pty), 1) = 1;
		next unless select(my $rout = $rin, undef, undef, 0.2) > 0;
		my $n = sysread($pty, my $buf, 65536);
		last unless $n;
		$text .= $buf;
		if (defined $opt{keys} && !$typed && $text =~ $opt{until})
		{
			syswrite($pty, $opt{keys});
			$typed = 1;
		}
	}
	$deadline = time + 60;
	while (waitpid($pid, POSIX::WNOHANG()) != $pid)
	{
		if (time > $deadline)
		{
			kill 'KILL', $pid;
			waitpid($pid, 0);
			last;
		}
		usleep(50_000);
	}
	return ($? >> 8, $text);
}

sql(q{SELECT mq.queue_declare('bulk')});
my ($prc, $tty) = mq_on_pty([ 'send', 'bulk', (1 .. 5000), '--batch', '100' ]);
is($prc, 0, 'send 5000 messages with stderr on a terminal');
like($tty, qr/\[#+\] 5000\/5000 100% \d+ msg\/s ETA 0:00/, 'the progress bar reached 5000/5000, with rate and ETA');
is(sql(q{SELECT ready FROM mq.queues WHERE queue = 'bulk'}), '5000', 'all 5000 sent');
($prc, $tty) = mq_on_pty([ 'send', 'bulk', (1 .. 50) ]);
is($tty, '', 'no bar for a few messages');
($rc, $out, $err) = mq([ 'send', 'bulk', '--batch', '500' ], in => join("\n", 1 .. 5000) . "\n");
is($rc . $out . $err, '0', 'no bar without a terminal');
is(sql(q{SELECT ready FROM mq.queues WHERE queue = 'bulk'}), '10050', 'stdin batches sent');

# ---- consume --follow until SIGINT -----------------------------------------
sql(q{SELECT mq.queue_declare('fol')});
my ($fout, $ferr) = ('', '');
# (each call waits up to 300 s: one that was waited out, not woken, would
# outlast the 120 s this test gives the exit)
my $h = IPC::Run::start([ $mqctl, 'consume', 'fol', '--follow', '--wait', '300' ],
	'<', \undef, '>', \$fout, '2>', \$ferr, IPC::Run::timeout(600));
my $expect = '';
for my $round (1 .. 5)
{
	sql("SELECT mq.send('fol', 'm$round-' || g) FROM generate_series(1, 30) g");
	$expect .= join('', map { "m$round-$_\n" } 1 .. 30);
	my $deadline = time + 60;
	$h->pump_nb while length($fout) < length($expect) && time < $deadline && usleep(50_000) >= 0;
	is($fout, $expect, "--follow printed round $round as it came");
}
# Ctrl-C while it waits: it ends at once, cleanly
$h->signal('INT');
my $t0 = Time::HiRes::time();
my $ended = eval {
	local $SIG{ALRM} = sub { die "still waiting\n" };
	alarm 120;
	$h->finish;
	alarm 0;
	1;
};
alarm 0;
ok($ended, 'the waiting call was woken (mq._consume_wake), not waited out (300 s)') or $h->kill_kill;
is($?, 0, 'consume --follow ended by SIGINT: exit 0');
note sprintf('figure: --follow ended %.2f s after SIGINT', Time::HiRes::time() - $t0);
is($ferr, '', 'nothing on stderr');
is(sql(q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'fol'}), '0/0',
	'everything printed was acked');

# Ctrl-C while messages flow: what was printed is acked, the rest is ready,
# none printed twice
($fout, $ferr) = ('', '');
sql(q{SELECT mq.send('fol', 'n' || g) FROM generate_series(1, 3000) g});
$h = IPC::Run::start([ $mqctl, 'consume', 'fol', '--follow' ], '<', \undef, '>', \$fout, '2>', \$ferr);
my $deadline = time + 60;
$h->pump_nb while length($fout) < 2000 && time < $deadline && usleep(10_000) >= 0;
$h->signal('INT');
$h->finish;
is($?, 0, 'SIGINT mid-stream: exit 0');
my @printed = split /\n/, $fout;
my %seen;
$seen{$_}++ for @printed;
is(scalar(grep { $seen{$_} > 1 } keys %seen), 0, 'nothing printed twice');
cmp_ok(scalar(@printed), '>', 0, 'some were printed before the SIGINT');
is(sql(q{SELECT ready || '/' || unacked FROM mq.queues WHERE queue = 'fol'}),
	(3000 - @printed) . '/0', 'those printed were acked, the others are ready');
($rc, $out) = mq([qw(consume fol -n 5000)]);
my %all = %seen;
$all{$_}++ for split /\n/, $out;
is(scalar(keys %all), 3000, 'with the rest, every message exactly once');
is(scalar(grep { $all{$_} != 1 } keys %all), 0, '... none twice');

# ---- definitions -------------------------------------------------------------
for my $db (qw(d1 d2))
{
	sql("CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION queue_ext');
}
$node->safe_psql('d1', q{SELECT mq.exchange_declare('dx', 'topic');
	SELECT mq.queue_declare('dq', arguments => '{"x-max-length": 5}');
	SELECT mq.bind('dq', 'dx', 'a.*')});
($rc, $out, $err) = mq([ '-d', 'd1', 'definitions', 'export', "$dir/defs.json" ]);
is($rc . $out . $err, '0', 'definitions export FILE');
my $defs = decode_json(slurp_file("$dir/defs.json"));
my ($dq) = grep { $_->{name} eq 'dq' } @{ $defs->{queues} };
is($dq->{arguments}{'x-max-length'}, 5, 'export: the queue with its arguments');
my ($dx) = grep { $_->{name} eq 'dx' } @{ $defs->{exchanges} };
is($dx->{type}, 'topic', 'export: the exchange');
ok((grep { $_->{source} eq 'dx' && $_->{destination} eq 'dq' && $_->{routing_key} eq 'a.*' }
	@{ $defs->{bindings} }), 'export: the binding');
($rc, $out) = mq([qw(-d d1 definitions export)]);
is_deeply(decode_json($out), $defs, 'definitions export to stdout: the same');
($rc, $out, $err) = mq([ '-d', 'd2', 'definitions', 'import', "$dir/defs.json" ]);
is($rc, 0, 'definitions import FILE');
like($out, qr/^kind\s+\| name\s+\| action\s+\| detail$/m, 'import: the report as a table');
like($out, qr/^queue\s+\| dq\s+\| created /m, 'import: the queue created');
like($out, qr/^binding\s+\| dx -> dq \(a\.\*\)\s+\| created /m, 'import: the binding created');
is($node->safe_psql('d2', q{SELECT arguments FROM mq.queues WHERE queue = 'dq'}), '{"x-max-length": 5}',
	'the imported queue');
($rc, $out) = mq([qw(-d d2 definitions import - --format json)], in => slurp_file("$dir/defs.json"));
is($rc, 0, 'definitions import from stdin');
my @report = @{ decode_json($out) };
is(scalar(grep { $_->{action} ne 'exists' } @report), 0, 'imported again: everything exists');
($rc, $out, $err) = mq([qw(-d d2 definitions import -)],
	in => '{"queues": [{"name": "bad", "vhost": "/", "durable": true, "arguments": {"x-max-length": "many"}}]}');
is($rc, 1, 'an object that failed: exit 1');
like($out, qr/^queue\s+\| bad\s+\| failed\s+\| invalid value "many"/m, 'the report says why');
like($err, qr/^mqctl: error: 1 object could not be imported/, 'and the error says how many');
($rc, $out, $err) = mq([qw(-d d2 definitions import -)], in => 'not json');
is($rc, 1, 'not JSON: exit 1');
like($err, qr/^mqctl: error: invalid input syntax for type json/, 'the server\'s error');
($rc, $out, $err) = mq([qw(definitions import)]);
is($rc, 2, 'definitions import without a file: bad usage');
($rc, $out, $err) = mq([qw(definitions import /nonexistent/defs.json)]);
is($rc, 2, 'definitions import of a missing file: bad usage');
like($err, qr/could not open "\/nonexistent\/defs\.json"/, 'the missing file is named');

# ---- top --------------------------------------------------------------------
sql(q{SELECT mq.queue_declare('stuck'); SELECT mq.send('stuck', 'x');
	  SELECT mq.queue_declare('ts', 'stream'); SELECT mq.group_declare('ts', 'tg')});
($rc, $out, $err) = mq([qw(top --batch)]);
is($rc, 0, 'top --batch');
like($out, qr/^mqctl top - \S+ postgres@.* queues \d+, ready \d+, unacked \d+; groups 1, lag 0; stalled 2$/m,
	'top: the summary line (stuck and bulk are stalled)');
like($out, qr/^QUEUE\s+GROUP\s+TYPE\s+READY\s+UNACKED\s+DELAY\s+LAG\s+IN\/s\s+ACK\/s\s+CONS\s+OLDEST\s+IDLE\s+STATE$/m,
	'top: the columns');
like($out, qr/^stuck\s+classic\s+1\s+0\s+0\s+-\s+-\s+-\s+0\s+[\d.]+s\s+-\s+stalled$/m,
	'top: a queue with a ready message and no consumer is stalled');
like($out, qr/^fol\s+classic\s+0\s+0\s+0\s+-\s+-\s+-\s+0\s+-\s+\S+$/m, 'top: an empty queue is not');
like($out, qr/^ts\s+tg\s+group\s+-\s+0\s+0\s+0\s+-\s+-\s+0\s+-\s+-$/m, 'top: a group, no rate in the first frame');
# rates: publish to the stream between two frames
($fout, $ferr) = ('', '');
$h = IPC::Run::start([ $mqctl, 'top', '--batch', '--iterations', '2', '--interval', '2' ],
	'<', \undef, '>', \$fout, '2>', \$ferr);
$deadline = time + 60;
$h->pump_nb while $fout !~ /^ts\s+tg/m && time < $deadline && usleep(20_000) >= 0;
sql(q{SELECT mq.send('ts', 'r' || g) FROM generate_series(1, 200) g});
$h->finish;
is($?, 0, 'top --batch --iterations 2');
my @frames = split /\n\n(?=mqctl top)/, $fout;
is(scalar(@frames), 2, 'two frames');
my ($in_rate) = $frames[1] =~ /^ts\s+tg\s+group\s+-\s+0\s+0\s+200\s+(\d+)\s+0\s/m;
ok(defined $in_rate && $in_rate > 0 && $in_rate <= 200,
	'top: the group\'s publish rate from the second frame (' . ($in_rate // 'none') . '/s), its lag 200');
# the screen, on a pseudo-terminal: drawn, the stalled row in red, q quits
($prc, $tty) = mq_on_pty([ 'top' ], screen => 1, until => qr/stuck/, keys => 'q');
is($prc, 0, 'top on a terminal: q quits, exit 0');
like($tty, qr/mqctl top - /, 'top drew its screen');
like($tty, qr/refresh 1s, q: quit/, 'top names its keys');
like($tty, qr/\e\[31m(?:\e\[1m)?stuck/, 'the stalled queue is highlighted in red');
($rc, $out, $err) = mq([qw(top --interval 0)]);
is($rc, 2, 'top --interval 0: bad usage');

# ---- bench -------------------------------------------------------------------
($rc, $out, $err) = mq([qw(bench --messages 3000 --producers 2 --consumers 3 --batch 50 --size 20 --format json)]);
is($rc, 0, 'bench');
my $b = decode_json($out);
is($b->{publish}{messages}, 3000, 'bench: published');
is($b->{consume_ack}{messages}, 3000, 'bench: consumed and acked');
is($b->{publish}{processes} . '/' . $b->{consume_ack}{processes}, '2/3', 'bench: processes');
cmp_ok($b->{publish}{per_second}, '>', 0, 'bench: a publish rate');
cmp_ok($b->{consume_ack}{per_second}, '>', 0, 'bench: a consume rate');
($rc, $out) = mq([qw(bench --messages 500 --type stream)]);
is($rc, 0, 'bench on a stream');
like($out, qr/^stream queue, 100-byte bodies, batches of 100\npublish\s+500 messages\s+1 producers.*msg\/s.*\nconsume\+ack\s+500 messages/,
	'bench prints both rates');
is(sql(q{SELECT count(*) FROM mq.queues WHERE queue LIKE 'mqctl-bench-%' OR queue = '%DLQ%bench'}), '0',
	'bench deleted its queues');
($rc, $out, $err) = mq([qw(bench --type fanout)]);
is($rc, 2, 'bench --type fanout: bad usage');

$node->stop;
done_testing();
