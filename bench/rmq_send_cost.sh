#!/bin/bash
# bench/rmq_send_cost.sh: user-space instructions per send through mq-rocketmq against its SQL
# over libpq (issue 39: "the gateway adds at most 20 % to the SQL path's cost for a send"), in
# counts that do not depend on the machine's load.  This VM has no hardware counters (perf:
# "PMU not available due to virtualization"), so they are valgrind's callgrind counts, as
# bench/publish_cost.sh's: the whole server runs under callgrind (autovacuum off), and so does
# the gateway; h2load (nghttp2-client) posts N framed SendMessageRequests one at a time (one
# 100-byte message each, as the Node client makes them: rocketmq_bench.js body); the cost of
# N sends is the gateway's total plus its sessions' backends' totals (their profiles are written
# as they exit, when the gateway stops), and a send's is the difference between N2 and N1
# sends divided by N2 - N1, so start-up, connecting and preparing drop out.  The SQL path is
# rmq_sql_send.c on one connection: the same parameters, prepared mq.send (the baseline), and
# the gateway's statements (SELECT mq.message_offset(mq.send(...)); the one before it,
# SELECT "offset" FROM mq.message_position(mq.send(...))), prepared and unnamed.
# Kernel work (the extra socket hop, the commit's flush) is not in these counts: see
# rocketmq_bench.sh's CPU figures for that.  Clients (h2load, rmq_sql_send) are not counted.
#
#   bash bench/rmq_send_cost.sh         # as root; needs valgrind, h2load, node, protoc-c
#
# Env: PG_CONFIG (where queue_ext and mq-rocketmq are installed), RC_PORT (6310; the gateway
# listens on RC_PORT+2), N1 (50), N2 (150), RB_NODE (a directory where `npm ci` of
# test/rocketmq_clients/node ran; default /tmp/rmqbench/node), RC_BASE_BIN (another
# mq-rocketmq binary, e.g. a build of main, counted the same way as "gateway-base"),
# KEEP=1 (keep the scratch directory with the callgrind outputs), RC_VARIANTS=0 (of the SQL
# path the baseline alone).  The last row, "floor", is rmq_floor.c: a server that does the
# least a gateway must for the same send with the same libraries (libevent, nghttp2, protobuf-c,
# libpq), counted as the gateway is: what HTTP/2 + protobuf + libpq cost a send at the least.
set -euo pipefail
cd "$(dirname "$0")"
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
PORT=${RC_PORT:-6310}
GWPORT=$((PORT + 2))
N1=${N1:-50}
N2=${N2:-150}
NODE=${RB_NODE:-/tmp/rmqbench/node}
for c in valgrind h2load node protoc-c; do
	command -v $c >/dev/null || { echo "$c is not installed" >&2; exit 1; }
done
[ -d "$NODE/node_modules/rocketmq-client-nodejs" ] || {
	echo "no rocketmq-client-nodejs in $NODE (run bench/rocketmq_bench.sh once, or set RB_NODE)" >&2
	exit 1
}
W=$(mktemp -d /tmp/rmq_send_cost.XXXXXX)
chown postgres "$W"
mkdir "$W/cg" && chown postgres "$W/cg"
cleanup() {
	su postgres -c "$BIN/pg_ctl -D $W/data -w stop -m fast" >/dev/null 2>&1 || true
	[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT
su postgres -c "$BIN/initdb -D $W/data -U postgres -A trust" >/dev/null
cat >> "$W/data/postgresql.conf" <<CONF
shared_preload_libraries = 'queue_ext'
listen_addresses = ''
unix_socket_directories = '$W'
port = $PORT
autovacuum = off
fsync = off
CONF
su postgres -c "valgrind --tool=callgrind --callgrind-out-file=$W/cg/cg.%p \
	$BIN/postgres -D $W/data > $W/server.log 2>&1 &"
for _ in $(seq 300); do "$BIN/pg_isready" -h "$W" -p "$PORT" -q && break; sleep 1; done
CONN="host=$W port=$PORT dbname=bench user=postgres"
"$BIN/psql" -h "$W" -p "$PORT" -U postgres -d postgres -Xq -v ON_ERROR_STOP=1 <<'SQL'
CREATE DATABASE bench;
\c bench
CREATE EXTENSION queue_ext;
CREATE ROLE bench_app LOGIN;
SELECT mq.queue_declare(t, type => 'stream', arguments => '{"partitions": 4}'),
	   mq.grant('publish', 'queue', t, 'bench_app')
  FROM unnest(ARRAY['cost_gw', 'cost_sql']) AS t \g /dev/null
SQL
RMQ_TOPIC=cost_gw NODE_PATH="$NODE/node_modules" node rocketmq_bench.js body "$W/body"
cc -O2 -o "$W/rmq_sql_send" rmq_sql_send.c -I"$($PG_CONFIG --includedir)" -lpq
protoc-c --c_out="$W" --proto_path=../rocketmq rocketmq.proto
cc -O2 -o "$W/rmq_floor" rmq_floor.c "$W/rocketmq.pb-c.c" -I"$W" -I"$($PG_CONFIG --includedir)" \
	-lpq -levent -lnghttp2 -lprotobuf-c

# the profiles written since the marker file $1 was touched, one name a
# line: callgrind names them by pid, and pids are reused on a busy machine
# (a backend's profile then replaces an older one of the same name), so a
# name does not tell a new profile from an old one
new_profiles() {
	find "$W/cg" -type f -newer "$1" -printf '%f\n'
}

# wait (at most 120 s) until a client backend's whole profile (PostgresMain;
# totals: is its last line) is among those written since the marker $1,
# then 2 s more: callgrind writes a backend's profile as it exits, which on
# a loaded machine came after a fixed 3 s, and a late profile then counted
# in the next run (negative sends).  Each run here has one session:
# rmq_sql_send's one connection, the gateway's one pooled session at one
# send at a time.
settle_profiles() {
	local f
	for _ in $(seq 120); do
		for f in $(new_profiles "$1"); do
			case "$f" in gw.*) continue ;; esac
			if grep -q "^totals:" "$W/cg/$f" && grep -q "PostgresMain" "$W/cg/$f"; then
				sleep 2
				return
			fi
		done
		sleep 1
	done
	echo "no backend profile after 120 s" >&2
	exit 1
}

# the summed totals of the profiles of client backends (PostgresMain: not
# queue_ext's workers, which come and go) and of gateways (gw.*) written
# since the marker $1 was touched; $2: "gw" for the gateways' alone
new_total() {
	local f t=0 v
	for f in $(new_profiles "$1"); do
		case "$f" in
		gw.*) ;;
		*) [ "${2:-}" != gw ] && grep -q "PostgresMain" "$W/cg/$f" || continue ;;
		esac
		v=$(grep -h "^summary:" "$W/cg/$f" | awk '{print $2}')
		t=$((t + ${v:-0}))
	done
	echo $t
}

# instructions of gateway binary $1 (gateway + its backends) for $2 sends;
# $1 "floor": rmq_floor (a server doing the least of it, rmq_floor.c)
gw_count() {
	local pid
	touch "$W/mark"
	if [ "$1" = floor ]; then
		valgrind --tool=callgrind --callgrind-out-file="$W/cg/gw.%p" "$W/rmq_floor" $GWPORT \
			"$CONN" bench_app > "$W/gw.log" 2>&1 &
	else
		valgrind --tool=callgrind --callgrind-out-file="$W/cg/gw.%p" "$1" --listen=127.0.0.1:$GWPORT \
			--dbname="$CONN" --insecure-loopback-role=bench_app > "$W/gw.log" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 120); do (echo > /dev/tcp/127.0.0.1/$GWPORT) 2>/dev/null && break; sleep 0.5; done
	h2load -n "$2" -c 1 -m 1 -H 'content-type: application/grpc' -H 'te: trailers' -d "$W/body" \
		"http://127.0.0.1:$GWPORT/apache.rocketmq.v2.MessagingService/SendMessage" > "$W/h2load.out"
	grep -q "$2 succeeded" "$W/h2load.out" || { cat "$W/h2load.out" "$W/gw.log" >&2; exit 1; }
	kill -INT $pid
	wait $pid || true
	settle_profiles "$W/mark"	# the session's backend writes its profile as it exits
	echo "$(new_total "$W/mark") $(new_total "$W/mark" gw)"
}

# instructions of the backend of rmq_sql_send for $3 sends of statement $1 ($2: prepared|unnamed)
sql_count() {
	touch "$W/mark"
	RMQ_SQL_STMT=$1 "$W/rmq_sql_send" "$CONN" cost_sql "$3" 1 "$2" > /dev/null
	settle_profiles "$W/mark"
	new_total "$W/mark"
}

# per send: the difference of N2 and N1 sends; for a gateway also its own part
per_send() {
	local a b
	a=($("$@" "$N1"))
	b=($("$@" "$N2"))
	echo $(( (b[0] - a[0]) / (N2 - N1) )) ${a[1]:+$(( (b[1] - a[1]) / (N2 - N1) ))}
}

printf '%-60s %s\n' "one send of 100 bytes, N1=$N1 N2=$N2" "instructions"
base=$(per_send sql_count send prepared)
printf '%-60s %s\n' "SQL path: prepared mq.send (the baseline)" "$base"
if [ "${RC_VARIANTS:-1}" = 1 ]; then
	for s in "offset prepared" "offset unnamed" "position prepared" "position unnamed" "send unnamed"; do
		printf '%-60s %s\n' "SQL path: $s" "$(per_send sql_count $s)"
	done
fi
for g in "gateway:$BIN/mq-rocketmq" ${RC_BASE_BIN:+"gateway-base:$RC_BASE_BIN"} "floor:floor"; do
	v=($(per_send gw_count "${g#*:}"))
	printf '%-60s %s (%s x the baseline; the gateway process %s)\n' \
		"${g%%:*}: $(basename "${g#*:}" | sed 's/^floor$/rmq_floor/') + its backend" "${v[0]}" \
		"$(echo "scale=2; ${v[0]} / $base" | bc)" "${v[1]}"
done
if [ "${KEEP:-0}" = 1 ]; then echo "callgrind outputs: $W/cg"; fi
