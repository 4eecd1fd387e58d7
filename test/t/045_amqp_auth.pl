# mq-amqp's logins (docs/amqp.md, Authentication), driven by Debian's pika
# (test/amqp/auth_checks.py), on a server that trusts local connections:
#  1. by default a login PostgreSQL let in without checking its password is
#     refused (403), as is an empty password; a password checked by the
#     server (scram) logs in, a wrong one is refused;
#  2. --allow-passwordless-logins lets the trusted login in, with a warning;
#  3. --guest-role: guest/guest from 127.0.0.1 logs in as the role and can do
#     what RabbitMQ's six tutorials do; guest with another password is
#     refused; other users still need a checked password; guest from a
#     non-loopback address is refused (in a network namespace of its own);
#  4. a superuser as --guest-role: the gateway does not start; a role made
#     superuser later: the guest login is refused;
#  5. a flood of 100 handshakes left after connection.start-ok from one
#     address (127.0.0.2): an honest client (127.0.0.1) logs in meanwhile,
#     the flood over the per-address bound waits for a slot, and the
#     gateway closes the handshakes left (handshake time limit);
#     --handshake-timeout, and --max-logins (a login waits for the slot).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;
use IO::Socket::INET;
use IO::Socket::IP;
use IPC::Run ();

my $python = '/usr/bin/python3';
plan skip_all => 'python3-pika is not installed (Debian package python3-pika)'
  unless system("$python -c 'import pika' >/dev/null 2>&1") == 0;

# few connections: the flood, unbounded, would take them all
my $node = qe_node('amqp_auth', conf => "max_connections = 50\n");
my $gateway = $node->config_data('--bindir') . '/mq-amqp';
my $checks = "$FindBin::RealBin/../amqp/auth_checks.py";

# amqp_pw: a password the server checks (scram over the socket);
# mq_guest: what guest logs in as (trust, as the demo's); su_role: superuser
$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	SET password_encryption = 'scram-sha-256';
	CREATE ROLE amqp_pw LOGIN PASSWORD 'pw-secret';
	GRANT CREATE ON SCHEMA mq TO amqp_pw;
	CREATE ROLE mq_guest LOGIN;
	GRANT CREATE ON SCHEMA mq TO mq_guest;
	CREATE ROLE mq_guest2 LOGIN;
	CREATE ROLE su_role LOGIN SUPERUSER;
});
qe_hba_first($node, "local all amqp_pw scram-sha-256\n");
like($node->safe_psql('postgres', q{SELECT auth_method FROM pg_hba_file_rules WHERE type = 'local' ORDER BY line_number LIMIT 2}),
	qr/^scram-sha-256\ntrust$/, 'the server trusts local connections, but for amqp_pw (scram)');

my $conninfo = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
my @gateways;

# a gateway with these flags on listen address host:port, and its log
sub start_gateway
{
	my ($name, $listen, @flags) = @_;
	my ($h, $port, $log) = qe_gateway($node, listen => $listen,
		log => $node->basedir . "/mq-amqp-$name.log", flags => \@flags);
	push @gateways, $h;
	my ($host) = $listen =~ /^\[?(.*?)\]?:\d+$/;

	return (qe_listening($port, host => $host, handle => $h) ? $h : undef, $log);
}

sub run_check
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $python, $checks, @args ], '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(300));
	diag("auth_checks.py @args: $err") if $err ne '';
	return $out;
}

sub login
{
	my ($port, $user, $password, $host) = @_;
	my $out = run_check('login', $host // '127.0.0.1', $port, $user, $password);
	chomp $out;
	return $out;
}

# 1. the default: the server must check the password
my $p1 = PostgreSQL::Test::Cluster::get_free_port();
my ($g1, $log1) = start_gateway('default', "127.0.0.1:$p1");
ok($g1, 'a gateway with the default settings listens');
like(login($p1, 'postgres', 'anything'), qr/^refused 403 ACCESS_REFUSED/,
	'default: postgres with any password on a trusting server is refused (403)');
like(login($p1, 'mq_guest', ''), qr/^refused 403/, 'default: an empty password is refused');
is(login($p1, 'amqp_pw', 'pw-secret'), 'ok', 'default: the right password (scram) logs in');
like(login($p1, 'amqp_pw', 'wrong'), qr/^refused 403 ACCESS_REFUSED/,
	'default: a wrong password (scram) is refused');
like(login($p1, 'guest', 'guest'), qr/^refused 403/,
	'default: guest/guest is not mapped without --guest-role');
my $l1 = PostgreSQL::Test::Utils::slurp_file($log1);
like($l1, qr/127\.0\.0\.1:\d+: login of "postgres" refused: PostgreSQL let the role in without checking its password/,
	'the refusal is logged with peer, user and why');
like($l1, qr/login of "mq_guest" refused: empty password/, 'and the empty password');
unlike($l1, qr/WARNING/, 'no warning by default');
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mq-amqp'}),
	'0', 'the refused logins left no PostgreSQL session');

# 2. the development option
my $p2 = PostgreSQL::Test::Cluster::get_free_port();
my ($g2, $log2) = start_gateway('passwordless', "127.0.0.1:$p2", '--allow-passwordless-logins');
ok($g2, 'a gateway with --allow-passwordless-logins listens');
is(login($p2, 'postgres', 'anything'), 'ok',
	'--allow-passwordless-logins: postgres with any password logs in (trust)');
like(PostgreSQL::Test::Utils::slurp_file($log2), qr/mq-amqp: \[warning\] --allow-passwordless-logins is set/,
	'with a loud warning at start-up');
my $conf = $node->basedir . '/passwordless.conf';
PostgreSQL::Test::Utils::append_to_file($conf, "allow_passwordless_logins = on\n");
my $p2b = PostgreSQL::Test::Cluster::get_free_port();
my ($g2b) = start_gateway('passwordless-conf', "127.0.0.1:$p2b", '--config', $conf);
is(login($p2b, 'postgres', 'x'), 'ok', 'allow_passwordless_logins = on in the config file too');

# 3. guest
my $p3 = PostgreSQL::Test::Cluster::get_free_port();
my ($g3, $log3) = start_gateway('guest', "127.0.0.1:$p3", '--guest-role', 'mq_guest');
ok($g3, 'a gateway with --guest-role mq_guest listens');
is(run_check('tutorials', $p3), "ok\n",
	'guest/guest from 127.0.0.1: what the six tutorials do works');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT owner::text, ',') FROM mq.exchanges WHERE exchange IN ('logs', 'direct_logs', 'topic_logs')}),
	'mq_guest', 'as role mq_guest (the owner of the exchanges it declared)');
like(login($p3, 'guest', 'wrong'), qr/^refused 403 ACCESS_REFUSED/, 'guest/wrong is refused');
like(login($p3, 'postgres', 'guest'), qr/^refused 403/,
	'other users still need a password the server checks');
my $l3 = PostgreSQL::Test::Utils::slurp_file($log3);
like($l3, qr/guest \(password guest, loopback clients only\) logs in as role "mq_guest"/,
	'the mapping is logged at start-up');
like($l3, qr/login of "guest" refused: wrong password for guest/, 'guest/wrong is logged');

# guest from an address that is not loopback.  Only loopback traffic is
# allowed here, so the gateway and the client run in a network namespace of
# their own (unshare -rn: a user and network namespace, no privilege
# needed), where 10.200.0.1 and fd00::1 are addresses of its loopback
# device: not loopback addresses, and nothing leaves the namespace.  The
# gateway reaches PostgreSQL through its Unix socket.  (nodad: an IPv6
# address is "tentative" until duplicate address detection ends, and a
# bind to it fails meanwhile, as it did once on a loaded machine.)
my $netns_script = q{
	ip link set lo up && ip addr add 10.200.0.1/32 dev lo &&
		ip addr add fd00::1/128 dev lo nodad || exit 3
	"$1" --dbname "$2" --listen "$3:5672" --guest-role mq_guest >>"$5" 2>&1 &
	g=$!
	i=0
	until python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], 5672), 1)' "$3" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 100 ] && { kill $g; exit 4; }; sleep 0.1
	done
	python3 "$4" login "$3" 5672 guest guest
	kill $g; wait $g 2>/dev/null
	exit 0
};
for my $addr ('10.200.0.1', 'fd00::1')
{
	my $log4 = $node->basedir . "/mq-amqp-guest-netns-$addr.log";
	my ($nout, $nerr) = ('', '');
	IPC::Run::run([ 'unshare', '-rn', 'sh', '-c', $netns_script, 'sh',
			$gateway, $conninfo, $addr, $checks, $log4 ],
		'<', \undef, '>', \$nout, '2>', \$nerr, IPC::Run::timeout(120));
	my $rc = $? >> 8;
	SKIP:
	{
		skip "no network namespace here (unshare -rn: $nerr)", 2 if $rc == 3 || $nerr =~ /unshare/;
		like($nout, qr/^refused 403 ACCESS_REFUSED - user 'guest' can only connect via localhost/,
			"guest/guest from $addr (not loopback) is refused")
		  or diag("rc $rc: $nerr");
		my $l4 = -f $log4 ? PostgreSQL::Test::Utils::slurp_file($log4) : '';
		like($l4, qr/\Q$addr\E\]?:\d+: login of "guest" refused: User can only log in via localhost/,
			'and logged');
	}
}

# IPv6: ::1 is loopback
SKIP:
{
	skip 'no IPv6 loopback here', 2
	  unless IO::Socket::IP->can('new') && IO::Socket::IP->new(LocalHost => '::1', Listen => 1);
	my $p6 = PostgreSQL::Test::Cluster::get_free_port();
	my ($g6a) = start_gateway('guest-v6', "[::1]:$p6", '--guest-role', 'mq_guest');
	ok($g6a, 'a gateway with --guest-role on [::1] listens');
	is(login($p6, 'guest', 'guest', '::1'), 'ok', 'guest/guest from ::1 logs in');
}

# 4. a superuser as the guest role
my ($out, $err);
my $p5 = PostgreSQL::Test::Cluster::get_free_port();
IPC::Run::run([ $gateway, '--dbname', $conninfo, '--listen', "127.0.0.1:$p5", '--guest-role', 'su_role',
		'--http-listen', 'off' ],
	'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(60));
is($? >> 8, 2, '--guest-role su_role (a superuser): the gateway does not start');
like($err, qr/--guest-role "su_role" is a superuser/, 'and says why');
my ($g6, $log6) = start_gateway('guest2', "127.0.0.1:$p5", '--guest-role', 'mq_guest2');
ok($g6, 'a gateway with --guest-role mq_guest2 listens');
$node->safe_psql('postgres', 'ALTER ROLE mq_guest2 SUPERUSER');
like(login($p5, 'guest', 'guest'), qr/^refused 403/,
	'the role made a superuser after start-up: the guest login is refused');
like(PostgreSQL::Test::Utils::slurp_file($log6), qr/login of "guest" refused: --guest-role "mq_guest2" is a superuser/,
	'and logged');

# 5. a flood of handshakes left after start-ok, from 127.0.0.2 (default bounds)
my $p7 = PostgreSQL::Test::Cluster::get_free_port();
my ($g7, $log7) = start_gateway('flood', "127.0.0.1:$p7");
ok($g7, 'a gateway with the default bounds listens');
my $flood = run_check('flood', $p7, 100, '127.0.0.2', 'amqp_pw', 'pw-secret');
like($flood, qr/^honest ok$/m, 'an honest client logs in while 100 handshakes are left open')
  or diag($flood);
like($flood, qr/flood first answers: tune=8 /,
	'8 of the flood (max_logins_per_address) got past the login, the others wait') or diag($flood);
like($flood, qr/flood closed=100 of 100/, 'the gateway closed every handshake left open');
my $l7 = PostgreSQL::Test::Utils::slurp_file($log7);
like($l7,
	qr/127\.0\.0\.2:\d+: login of "amqp_pw" waits: 8 logins in progress from 127\.0\.0\.2 \(max_logins_per_address\)/,
	'the waits are logged');
like($l7, qr/127\.0\.0\.2:\d+: handshake not done within 10 s \(its login waited for a slot\): closed/,
	'the handshakes left timed out, also those waiting for a slot');

# --handshake-timeout: a client that says nothing is closed after that
my $p8 = PostgreSQL::Test::Cluster::get_free_port();
my ($g8, $log8) = start_gateway('timeout', "127.0.0.1:$p8", '--handshake-timeout', '2');
ok($g8, 'a gateway with --handshake-timeout 2 listens');
my $silent = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $p8, Proto => 'tcp');
my ($got, $n) = ('', 0);
if ($silent)
{
	my $rin = '';
	vec($rin, fileno($silent), 1) = 1;
	$n = select(my $rout = $rin, undef, undef, 120);
	sysread($silent, $got, 10) if $n > 0;
	close $silent;
}
ok($n > 0 && $got eq '', 'a silent client is closed by the gateway');
like(PostgreSQL::Test::Utils::slurp_file($log8), qr/handshake not done within 2 s: closed/,
	'after --handshake-timeout');

# --max-logins 1: one login at a time, whatever the address; the next one
# waits for the slot
my $p9 = PostgreSQL::Test::Cluster::get_free_port();
my ($g9, $log9) = start_gateway('maxlogins', "127.0.0.1:$p9", '--max-logins', '1',
	'--handshake-timeout', '600');
ok($g9, 'a gateway with --max-logins 1 listens');
is(run_check('queue', $p9, $log9, 'amqp_pw', 'pw-secret'), "A tune\nB waits\nB tune after A closed\n",
	'a login over the bound waits, and goes on when the slot is free');

# the gateways are alive and logged no crash
for my $h (@gateways)
{
	ok(kill(0, $h->{KIDS}[0]{PID}), 'mq-amqp is still running') if $h->pumpable;
	$h->signal('TERM') if $h->pumpable;
	$h->finish;
}
for my $log (glob($node->basedir . '/mq-amqp-*.log'))
{
	unlike(PostgreSQL::Test::Utils::slurp_file($log), qr/Segmentation|Aborted|AddressSanitizer|out of memory/,
		"no crash in $log");
}

done_testing();
