# qe: slow (started early in the parallel TAP phase: test/run_all.sh)
# mq-rocketmq's TLS listener (--tls-cert, --tls-key) and its connection
# bound (--max-connections), docs/rocketmq.md.  A test CA and the gateway's
# certificate (CN and SAN 127.0.0.1, SAN localhost) are made with the
# openssl command here; the clients are the official RocketMQ 5 Node.js
# client (rocketmq-client-nodejs, pinned by
# test/rocketmq_clients/node/package-lock.json) and Node's http2 module,
# test/rocketmq_clients/node/tls_check.js:
#  - start-up refusals: a key file its group or others may read, a key
#    that is not the certificate's, a certificate without a key;
#  - a client with sslEnabled: true and the test CA (NODE_EXTRA_CA_CERTS)
#    sends a message with tag, keys and properties, a SimpleConsumer
#    receives it unchanged and acks it;
#  - a client with sslEnabled: false cannot start, plain-text bytes close
#    their connection, a client without the CA refuses the certificate, a
#    TLS client offering ALPN without "h2" or TLS 1.1 is refused, a
#    connection that never finishes its handshake is closed; the gateway
#    serves TLS clients after each;
#  - a plain gateway with --max-connections 3: three connections are
#    served, a fourth is closed at once (no HTTP/2 SETTINGS), the first
#    three still answer, and once two are gone the client starts and sends.
# No timing assertion: each client call has a generous timeout so that a
# hang fails instead of blocking the suite.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../lib";
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use QueueExtTest;
use Test::More;

plan skip_all => qe_node_missing() if qe_node_missing();
plan skip_all => 'the openssl command is not installed (test/lib/cluster.sh installs it)'
  unless qe_which('openssl');

my $node = qe_node('rmq_tls');
my $gateway = $node->config_data('--bindir') . '/mq-rocketmq';
ok(-x $gateway, "mq-rocketmq is installed next to pg_config's bindir ($gateway)");
BAIL_OUT("mq-rocketmq is not installed") unless -x $gateway;

$node->safe_psql('postgres', q{
	CREATE EXTENSION queue_ext;
	CREATE ROLE rmq_gw LOGIN NOINHERIT;
	CREATE ROLE rmq_app NOLOGIN;
	GRANT rmq_app TO rmq_gw;
	SELECT mq.queue_declare('rmq_tls', type => 'stream', arguments => '{"partitions": 2}');
	SELECT mq.group_declare('rmq_tls', 'rmq_tls_g', start => 'earliest', retry_delays => '{1 second}');
	SELECT mq.grant(p, 'queue', 'rmq_tls', 'rmq_app') FROM unnest(ARRAY['publish', 'consume']) p;
});
my $creds = $node->basedir . '/rocketmq.credentials';
append_to_file($creds, "AK_APP app-secret rmq_app\n");
chmod 0600, $creds;

# ---- a test CA, the gateway's certificate and key ------------------------------------------
my $dir = $node->basedir . '/tls';
mkdir $dir or die "mkdir $dir: $!";
append_to_file("$dir/server.ext",
	"subjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = CA:FALSE\n"
	  . "keyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n");
for my $cmd (
	[ qw(req -x509 -newkey rsa:2048 -nodes -days 2 -subj), '/CN=queue_ext test CA',
		'-keyout', "$dir/ca.key", '-out', "$dir/ca.pem" ],
	[ qw(req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1), '-keyout', "$dir/server.key",
		'-out', "$dir/server.csr" ],
	[ qw(x509 -req -days 2 -CAcreateserial), '-in', "$dir/server.csr", '-CA', "$dir/ca.pem",
		'-CAkey', "$dir/ca.key", '-extfile', "$dir/server.ext", '-out', "$dir/server.pem" ],
	[ qw(req -newkey rsa:2048 -nodes -subj /CN=other), '-keyout', "$dir/other.key",
		'-out', "$dir/other.csr" ])
{
	my ($rc, $out, $err) = qe_run([ 'openssl', @$cmd ], 120);
	is($rc, 0, "openssl $cmd->[0] $cmd->[1]") or BAIL_OUT("openssl @$cmd: $err");
}
chmod 0600, "$dir/server.key", "$dir/other.key";

# ---- start-up refusals ------------------------------------------------------------------------
my ($rc, $out, $err);
($rc, $out, $err) = qe_run([ $gateway, '--help' ], 30);
like($out, qr/--tls-cert=FILE.*--tls-key=FILE.*--max-connections=N/s, '--help shows the TLS and connection flags');
chmod 0640, "$dir/server.key";
($rc, $out, $err) = qe_run([ $gateway, '--tls-cert', "$dir/server.pem", '--tls-key', "$dir/server.key" ], 30);
isnt($rc, 0, 'a TLS key file its group may read is refused');
like($err, qr/TLS key file .* has group or world access/, 'and says why');
chmod 0600, "$dir/server.key";
($rc, $out, $err) = qe_run([ $gateway, '--tls-cert', "$dir/server.pem", '--tls-key', "$dir/other.key" ], 30);
isnt($rc, 0, 'a key that is not the certificate\'s is refused');
like($err, qr/does not match the certificate/, 'and says why');
($rc, $out, $err) = qe_run([ $gateway, '--tls-cert', "$dir/server.pem" ], 30);
isnt($rc, 0, 'a certificate without a key is refused');
like($err, qr/--tls-cert and --tls-key go together/, 'and says why');

# ---- the TLS gateway ----------------------------------------------------------------------------
my ($gw, $port, $log) = qe_rocketmq($node, flags => [ '--credentials', $creds,
	'--tls-cert', "$dir/server.pem", '--tls-key', "$dir/server.key" ]);
END { $gw->kill_kill if $gw && $gw->pumpable; }
ok(qe_listening($port, tries => 300, handle => $gw), "mq-rocketmq listens with TLS on 127.0.0.1:$port");

my ($node_dir, $npm_err, $npm_ran) = qe_npm_ci("$FindBin::RealBin/../rocketmq_clients/node",
	"$PostgreSQL::Test::Utils::tmp_check/rocketmq_tls");
ok(defined $node_dir, 'the client is installed (npm ci)') or BAIL_OUT($npm_err // '');

my %env = (RMQ_ENDPOINT => "127.0.0.1:$port", RMQ_TOPIC => 'rmq_tls', RMQ_GROUP => 'rmq_tls_g',
	RMQ_ACCESS_KEY => 'AK_APP', RMQ_SECRET_KEY => 'app-secret');
# the test CA for the clients that should trust the gateway
my %trust = (%env, NODE_EXTRA_CA_CERTS => "$dir/ca.pem");

sub tls_check
{
	my ($mode, $env, @expected) = @_;
	my ($rc, $out, $err) = qe_run([ 'node', "$node_dir/tls_check.js", $mode ], 600, $env);
	qe_script_checks($mode, $rc, $out, $err, @expected);
}

tls_check('roundtrip', \%trust, qw(tls_producer_start tls_send tls_consumer_start tls_received
  tls_round_trip tls_ack));
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM generate_series(0, 1) p, mq.read('rmq_tls', p, max_messages => 100) r
	 WHERE r.tag = 'TagTLS' AND r.headers->'x-rocketmq'->'keys' = '["tls-key-1", "tls-key-2"]'}),
	'1', 'the message sent over TLS is in the stream, with its tag and keys');

# Read from $sock until the gateway closes it: (whether it did within
# 120 s, the bytes read)
sub closed_by_gateway
{
	my ($sock) = @_;
	my ($buf, $all) = ('', '');
	my $rin = '';
	vec($rin, fileno($sock), 1) = 1;
	my $until = time() + 120;
	while (time() < $until)
	{
		my $rout = $rin;
		next unless select($rout, undef, undef, 1) > 0;
		my $n = sysread($sock, $buf, 4096);
		return (1, $all) if !defined $n || $n == 0;
		$all .= $buf;
	}
	return (0, $all);
}

# clients that must be refused; after them the TLS client is served
tls_check('plain', \%env, qw(plain_client_refused));
my $plain = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
syswrite($plain, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . "\0\0\0\4\0\0\0\0\0");
my ($closed, $got) = closed_by_gateway($plain);
ok($closed, 'plain-text HTTP/2 on the TLS listener: the gateway closes the connection');
unlike($got, qr/\A\x00\x00.\x04/s, 'and sent it no HTTP/2 SETTINGS');
tls_check('noca', { %env, NODE_EXTRA_CA_CERTS => $ENV{NODE_EXTRA_CA_CERTS} // '' },
	qw(unknown_ca_refused));
($rc, $out, $err) = qe_run([ 'openssl', 's_client', '-connect', "127.0.0.1:$port",
	'-CAfile', "$dir/ca.pem", '-alpn', 'http/1.1' ], 60);
like("$out$err", qr/no application protocol/, 'a TLS client offering ALPN "http/1.1" only is refused');
($rc, $out, $err) = qe_run([ 'openssl', 's_client', '-connect', "127.0.0.1:$port",
	'-CAfile', "$dir/ca.pem", '-alpn', 'h2', '-tls1_1' ], 60);
like("$out$err", qr/alert protocol version|no protocols available/, 'TLS 1.1 is refused');
my $silent = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
($closed) = closed_by_gateway($silent);
ok($closed, 'a connection that never starts its TLS handshake is closed by the gateway');
tls_check('roundtrip', \%trust, qw(tls_send tls_received tls_round_trip tls_ack));

my $text = slurp_file($log);
like($text, qr/listening on \S+ \(TLS;/, 'the gateway logs that it listens with TLS');
like($text, qr/TLS \(TLSv1\.[23], /, 'it logs the TLS version of a connection (--verbose)');
like($text, qr/TLS handshake failed: .*not TLS: a client without TLS/,
	'it logs a plain-text client on the TLS listener');
like($text, qr/TLS client offers ALPN "http\/1\.1", not "h2" \(gRPC\): refused/,
	'it logs the refused ALPN');
like($text, qr/no TLS handshake and HTTP\/2 preface in 10 s: closing/, 'it logs the silent connection');

ok($gw->pumpable, 'the TLS gateway is still running');
$gw->signal('TERM');
$gw->finish;
is($gw->result(0), 0, 'it stops on SIGTERM with status 0');
unlike(slurp_file($log), qr/out of memory|HTTP\/2 error|Segmentation|AddressSanitizer/,
	'no internal error in its log');

# ---- --max-connections ---------------------------------------------------------------------------
my $limit_log = $node->basedir . '/mq-rocketmq-limit.log';
my ($gw2, $port2) = qe_rocketmq($node, log => $limit_log,
	flags => [ '--credentials', $creds, '--max-connections', '3' ]);
END { $gw2->kill_kill if $gw2 && $gw2->pumpable; }
ok(qe_listening($port2, tries => 300, handle => $gw2), "mq-rocketmq --max-connections 3 listens on 127.0.0.1:$port2");
# (qe_listening's probe connections are closed: they must not count)
tls_check('limit', { %env, RMQ_ENDPOINT => "127.0.0.1:$port2", RMQ_LIMIT => 3 }, qw(
  limit_first_served limit_over_closed limit_others_unaffected limit_served_after_close
  limit_client_sends limit_first_still_served));
like(slurp_file($limit_log), qr/closed at once: 3 connections open \(--max-connections\)/,
	'the gateway logs the connection closed past --max-connections');
ok($gw2->pumpable, 'the limited gateway is still running');
$gw2->signal('TERM');
$gw2->finish;
is($gw2->result(0), 0, 'it stops on SIGTERM with status 0');

$node->stop;
done_testing();
