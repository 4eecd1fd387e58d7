#!/bin/bash
# RocketMQ gateway vs AMQP gateway vs the SQL path (bench/rocketmq_bench.py),
# on a cluster of its own, with its own gateways.  Run as root (the cluster
# runs as postgres, as bench/server.sh makes it).
#   bash bench/rocketmq_bench.sh [rocketmq_bench.py options: --reps 5 --n-seq 400 ...]
# Env: PG_CONFIG (pg_config of the PostgreSQL where queue_ext, mq-amqp and
# mq-rocketmq are installed), RB_DIR (/tmp/rmqbench: data, socket, logs),
# RB_PORT (6300; the AMQP gateway listens on RB_PORT+1, the RocketMQ one on
# RB_PORT+2), RB_NODE (a directory where `npm ci` of test/rocketmq_clients/node
# ran; made in RB_DIR/node when missing), RB_KEEP=1 (leave the cluster running),
# RB_RMQ_BIN (another mq-rocketmq binary than the installed one), RB_BASE_BIN (a
# second mq-rocketmq, e.g. a build of an earlier commit, on RB_PORT+3: its
# workloads run in the same repetitions, named rocketmq-base).
# Output also goes to bench/results/rocketmq-<UTC time>.txt.
set -euo pipefail
cd "$(dirname "$0")"
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
DIR=${RB_DIR:-/tmp/rmqbench}
PORT=${RB_PORT:-6300}
NODE=${RB_NODE:-$DIR/node}
export PG_CONFIG PATH="$BIN:$PATH"
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh --restart >/dev/null
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh >/dev/null
psql -h $DIR -p $PORT -U postgres -d bench -XAtq -c \
  "DO \$\$BEGIN CREATE ROLE bench_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$"
bash rmq_node_client.sh "$NODE"
"$BIN/mq-amqp" --listen 127.0.0.1:$((PORT + 1)) --dbname "host=$DIR port=$PORT dbname=bench" \
  --guest-role bench_app --quiet >>"$DIR/mq-amqp.log" 2>&1 &
AMQP_PID=$!
"${RB_RMQ_BIN:-$BIN/mq-rocketmq}" --listen=127.0.0.1:$((PORT + 2)) \
  --dbname="host=$DIR port=$PORT dbname=bench user=postgres" \
  --insecure-loopback-role=bench_app >>"$DIR/mq-rocketmq.log" 2>&1 &
RMQ_PID=$!
BASE_ARGS=()
BASE_PID=
if [ -n "${RB_BASE_BIN:-}" ]; then
  "$RB_BASE_BIN" --listen=127.0.0.1:$((PORT + 3)) \
    --dbname="host=$DIR port=$PORT dbname=bench user=postgres" \
    --insecure-loopback-role=bench_app >>"$DIR/mq-rocketmq-base.log" 2>&1 &
  BASE_PID=$!
  BASE_ARGS=(--base 127.0.0.1:$((PORT + 3)) --base-pid $BASE_PID)
fi
trap 'kill $AMQP_PID $RMQ_PID $BASE_PID 2>/dev/null || true' EXIT
sleep 1
mkdir -p results
out="results/rocketmq-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# rocketmq_bench.sh $(date -u '+%F %T UTC') on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  echo "# node $(node --version), rocketmq-client-nodejs $(node -p "require('$NODE/node_modules/rocketmq-client-nodejs/package.json').version"), pika $(/usr/bin/python3 -c 'import pika; print(pika.__version__)')"
  /usr/bin/python3 rocketmq_bench.py --rmq 127.0.0.1:$((PORT + 2)) \
    --amqp "amqp://guest:guest@127.0.0.1:$((PORT + 1))/%2F" \
    --sql "host=$DIR port=$PORT dbname=bench user=postgres" --pgdata "$DIR/data" \
    --rmq-pid $RMQ_PID --amqp-pid $AMQP_PID --node-path "$NODE/node_modules" "${BASE_ARGS[@]}" "$@"
} 2>&1 | tee "$out"
echo "output written to bench/$out"
if [ "${RB_KEEP:-0}" != 1 ]; then
  su postgres -c "$BIN/pg_ctl -D $DIR/data -w stop -m fast" >/dev/null
fi
