#!/bin/bash
# What TLS (--tls-cert) costs mq-rocketmq: the same build serving plain HTTP/2
# and TLS side by side, in front of a cluster of its own (bench/server.sh).
# h2load (nghttp2-client, C: no client library's cost) posts the same framed
# request N times on one connection, one at a time (-m 1) and 64 in flight
# (-m 64, ten times N), to each gateway in turn, REPS repetitions: a SendMessage of one
# 100-byte message (rocketmq_bench.js body), and a Heartbeat (no SQL: the
# gateway's own cost, where TLS weighs most).  Each line: requests a second
# and the gateway's CPU (utime + stime of /proc/PID/stat) a request, median of
# the repetitions; h2load's TLS handshake is in each run (one connection).
#   bash bench/rmq_tls.sh            # as root; needs h2load, node, openssl
# Env: PG_CONFIG, RT_DIR (/tmp/rmqtls-bench), RT_PORT (6320; gateways on +1
# plain, +2 TLS), RT_N (4000), RT_REPS (5), RT_IDLE (1000 idle connections
# opened to each fresh gateway first: its memory a connection), RT_NODE (a directory whose
# node_modules has rocketmq-client-nodejs; default test/rocketmq_clients/node).
set -euo pipefail
cd "$(dirname "$0")"
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
DIR=${RT_DIR:-/tmp/rmqtls-bench}
PORT=${RT_PORT:-6320}
N=${RT_N:-4000}
REPS=${RT_REPS:-5}
RT_IDLE=${RT_IDLE:-1000}
NODE=${RT_NODE:-$(cd .. && pwd)/test/rocketmq_clients/node}
for c in h2load node openssl; do
	command -v $c >/dev/null || { echo "rmq_tls.sh: $c is missing" >&2; exit 1; }
done
[ -d "$NODE/node_modules/rocketmq-client-nodejs" ] ||
	{ echo "rmq_tls.sh: run npm ci in $NODE first" >&2; exit 1; }
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh >/dev/null
"$BIN/psql" -h "$DIR" -p "$PORT" -U postgres -d bench -XAtq -c "
	DO \$\$BEGIN CREATE ROLE bench_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$;
	SELECT mq.queue_declare('rmq_tls_bench', type => 'stream', arguments => '{\"partitions\": 4}');
	SELECT mq.grant('publish', 'queue', 'rmq_tls_bench', 'bench_app');" >/dev/null
W=$DIR/tls
mkdir -p "$W"
if [ ! -f "$W/server.pem" ]; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=127.0.0.1 \
		-addext 'subjectAltName = IP:127.0.0.1' -keyout "$W/server.key" -out "$W/server.pem" 2>/dev/null
	chmod 600 "$W/server.key"
fi
RMQ_TOPIC=rmq_tls_bench NODE_PATH=$NODE/node_modules node rocketmq_bench.js body "$W/send.body"
printf '\0\0\0\0\0' > "$W/heartbeat.body"	# an empty HeartbeatRequest
common=(--dbname="host=$DIR port=$PORT dbname=bench user=postgres" --insecure-loopback-role=bench_app)
"$BIN/mq-rocketmq" --listen=127.0.0.1:$((PORT + 1)) "${common[@]}" >>"$DIR/plain.log" 2>&1 &
PLAIN=$!
"$BIN/mq-rocketmq" --listen=127.0.0.1:$((PORT + 2)) "${common[@]}" \
	--tls-cert="$W/server.pem" --tls-key="$W/server.key" >>"$DIR/tls.log" 2>&1 &
TLS=$!
trap 'kill $PLAIN $TLS 2>/dev/null || true' EXIT
sleep 1
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }	# clock ticks
tck=$(getconf CLK_TCK)
out="results/rmq-tls-$(date -u +%Y%m%dT%H%M%SZ).txt"
mkdir -p results
{
	echo "# rmq_tls.sh $(date -u '+%F %T UTC') on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD 2>/dev/null), N=$N, REPS=$REPS"
	# fresh gateways' memory: idle connections, after which their memory is
	# only reused (glibc keeps what was freed)
	ulimit -n "$(ulimit -Hn)"
	for how in plain tls; do
		if [ $how = plain ]; then pid=$PLAIN url=http://127.0.0.1:$((PORT + 1)); else pid=$TLS url=https://127.0.0.1:$((PORT + 2)); fi
		echo "# $(node rmq_tls_idle.js "$url" "$RT_IDLE" $pid)"
	done
	for rpc in Heartbeat SendMessage; do
		body=$W/heartbeat.body
		[ $rpc = SendMessage ] && body=$W/send.body
		for m in 1 64; do
			# 64 in flight: ten times as many, for CPU ticks (1/CLK_TCK s) to count
			n=$N
			[ $m = 64 ] && n=$((N * 10))
			for rep in $(seq "$REPS"); do
				for how in plain tls; do
					if [ $how = plain ]; then pid=$PLAIN url=http://127.0.0.1:$((PORT + 1)); else pid=$TLS url=https://127.0.0.1:$((PORT + 2)); fi
					c0=$(cpu $pid)
					r=$(h2load -n "$n" -c 1 -m $m -H 'content-type: application/grpc' -H 'te: trailers' \
						-d "$body" "$url/apache.rocketmq.v2.MessagingService/$rpc")
					c1=$(cpu $pid)
					echo "$r" | grep -q "$n succeeded" || { echo "$r" >&2; exit 1; }
					rate=$(echo "$r" | sed -n 's/.*finished in [0-9.]*m\{0,1\}s, \([0-9.]*\) req\/s.*/\1/p')
					echo "raw $rpc m=$m $how rate=$rate cpu_us=$(awk -v a="$c0" -v b="$c1" -v t="$tck" -v n="$n" 'BEGIN { printf "%.1f", (b - a) * 1e6 / t / n }')"
				done
			done
		done
	done
} | tee "$out.raw"
python3 - "$out.raw" <<'PY' | tee "$out"
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith('#'):
        print(line.rstrip()); continue
    m = re.match(r'raw (\S+) m=(\d+) (\S+) rate=([\d.]+) cpu_us=([\d.]+)', line)
    rows.setdefault(m.group(1, 2, 3), []).append((float(m.group(4)), float(m.group(5))))
for (rpc, m, how), v in sorted(rows.items()):
    if how != 'plain':
        continue
    p, t = v, rows[(rpc, m, 'tls')]
    pr, tr = statistics.median(x[0] for x in p), statistics.median(x[0] for x in t)
    pc, tc = statistics.median(x[1] for x in p), statistics.median(x[1] for x in t)
    print('%-11s -m %-2s plain %8.0f req/s %5.1f us CPU/req | TLS %8.0f req/s %5.1f us CPU/req | TLS/plain rate %.2fx, CPU %.2fx'
          % (rpc, m, pr, pc, tr, tc, tr / pr, tc / pc if pc else float('nan')))
PY
rm -f "$out.raw"
echo "output written to bench/$out (the cluster runs on: BENCH_DIR=$DIR BENCH_PORT=$PORT bash bench/server.sh's pg_ctl stop)"
