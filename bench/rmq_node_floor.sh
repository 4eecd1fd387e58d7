#!/bin/bash
# The Node client's CPU per call against mq-rocketmq and against two servers
# that do nothing but answer (bench/rmq_node_floor_server.js: @grpc/grpc-js
# with the client's own stubs; Node's http2 module alone), alternating
# (bench/rmq_node_floor.py).  Run as root (the cluster runs as postgres, as
# bench/server.sh makes it).
#   bash bench/rmq_node_floor.sh [rmq_node_floor.py options: --reps 5 --warmups 1,5000
#        --workloads noop1,send1,send64,recv ...]
# Env: PG_CONFIG (where queue_ext and mq-rocketmq are installed), RF_DIR
# (/tmp/rmqfloor: data, socket, logs), RF_PORT (6960: mq-rocketmq on +2, the
# grpc-js floor on +5, the http2 floor on +6, RF_BASE_BIN on +3), RF_NODE (a
# directory where `npm ci` of test/rocketmq_clients/node ran; made in
# RF_DIR/node when missing), RF_BASE_BIN (a second mq-rocketmq, e.g. an
# earlier build: its runs are named rocketmq-base), RF_FLOOR_DELAY_MS (a third
# floor, grpc-js-delay on +7, answering each send that late, as a server that
# commits does: what waiting costs the client), RF_KEEP=1 (leave the cluster
# running).
# Output also goes to bench/results/rmq-node-floor-<UTC time>.txt.
set -euo pipefail
cd "$(dirname "$0")"
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
DIR=${RF_DIR:-/tmp/rmqfloor}
PORT=${RF_PORT:-6960}
NODE=${RF_NODE:-$DIR/node}
TOPIC=nfloor
export PG_CONFIG PATH="$BIN:$PATH"
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh --restart >/dev/null
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh >/dev/null
psql -h $DIR -p $PORT -U postgres -d bench -XAtq >/dev/null <<SQL
DO \$\$BEGIN CREATE ROLE bench_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$;
SELECT mq.queue_declare('$TOPIC', type => 'stream', arguments => '{"partitions": 4}');
SELECT mq.grant('publish', 'queue', '$TOPIC', 'bench_app');
SQL
bash rmq_node_client.sh "$NODE"
"$BIN/mq-rocketmq" --listen=127.0.0.1:$((PORT + 2)) \
  --dbname="host=$DIR port=$PORT dbname=bench user=postgres" \
  --insecure-loopback-role=bench_app >>"$DIR/mq-rocketmq.log" 2>&1 &
RMQ_PID=$!
NODE_PATH="$NODE/node_modules" node rmq_node_floor_server.js 127.0.0.1:$((PORT + 5)) >>"$DIR/floor-grpc.log" 2>&1 &
GRPC_PID=$!
NODE_PATH="$NODE/node_modules" node rmq_node_floor_server.js 127.0.0.1:$((PORT + 6)) --h2 >>"$DIR/floor-h2.log" 2>&1 &
H2_PID=$!
SERVERS=(--server rocketmq=127.0.0.1:$((PORT + 2))@$RMQ_PID)
BASE_PID=
if [ -n "${RF_BASE_BIN:-}" ]; then
  "$RF_BASE_BIN" --listen=127.0.0.1:$((PORT + 3)) \
    --dbname="host=$DIR port=$PORT dbname=bench user=postgres" \
    --insecure-loopback-role=bench_app >>"$DIR/mq-rocketmq-base.log" 2>&1 &
  BASE_PID=$!
  SERVERS+=(--server rocketmq-base=127.0.0.1:$((PORT + 3))@$BASE_PID)
fi
SERVERS+=(--server grpc-js=127.0.0.1:$((PORT + 5))@$GRPC_PID --server node-http2=127.0.0.1:$((PORT + 6))@$H2_PID)
DELAY_PID=
if [ -n "${RF_FLOOR_DELAY_MS:-}" ]; then
  RMQ_FLOOR_DELAY_MS=$RF_FLOOR_DELAY_MS NODE_PATH="$NODE/node_modules" node rmq_node_floor_server.js \
    127.0.0.1:$((PORT + 7)) >>"$DIR/floor-delay.log" 2>&1 &
  DELAY_PID=$!
  SERVERS+=(--server grpc-js-delay=127.0.0.1:$((PORT + 7))@$DELAY_PID)
fi
trap 'kill $RMQ_PID $GRPC_PID $H2_PID $BASE_PID $DELAY_PID 2>/dev/null || true' EXIT
sleep 1
mkdir -p results
out="results/rmq-node-floor-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# rmq_node_floor.sh $(date -u '+%F %T UTC') on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  if [ -n "${RF_FLOOR_DELAY_MS:-}" ]; then
    echo "# grpc-js-delay answers a SendMessage $RF_FLOOR_DELAY_MS ms late"
  fi
  echo "# node $(node --version), rocketmq-client-nodejs $(node -p "require('$NODE/node_modules/rocketmq-client-nodejs/package.json').version"), @grpc/grpc-js $(node -p "require('$NODE/node_modules/@grpc/grpc-js/package.json').version")"
  /usr/bin/python3 rmq_node_floor.py --node-path "$NODE/node_modules" --topic $TOPIC \
    --sql "host=$DIR port=$PORT dbname=bench user=postgres" "${SERVERS[@]}" "$@"
} 2>&1 | tee "$out"
echo "output written to bench/$out"
if [ "${RF_KEEP:-0}" != 1 ]; then
  su postgres -c "$BIN/pg_ctl -D $DIR/data -w stop -m fast" >/dev/null
fi
