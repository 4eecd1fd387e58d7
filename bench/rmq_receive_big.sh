#!/bin/bash
# Receive of large messages through mq-rocketmq (issue 39: the body as
# binary bytea, not hex text): two gateway builds on one cluster of its own,
# their runs alternating, each run a fresh topic and group with N messages of
# SIZE bytes published in SQL, received by bench/rmq_receive_big.js.  Prints
# each run and the medians of wall time and CPU.  Run as root (the cluster
# runs as postgres, as bench/server.sh makes it).
#   bash bench/rmq_receive_big.sh [REPS (5)] [N (20)] [SIZE (3145728)]
# Env: PG_CONFIG (its PostgreSQL has queue_ext and mq-rocketmq installed),
# RR_DIR (/tmp/rmqrecv: data, socket, logs), RR_PORT (6900; the gateways
# listen on RR_PORT+2 and RR_PORT+3), RR_NODE (a directory where `npm ci` of
# test/rocketmq_clients/node ran; made in RR_DIR/node when missing),
# RR_BIN_A / RR_BIN_B (the two mq-rocketmq binaries, named by RR_NAME_A /
# RR_NAME_B; B defaults to the installed one; without A only B runs).
set -euo pipefail
cd "$(dirname "$0")"
REPS=${1:-5}
N=${2:-20}
SIZE=${3:-3145728}
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
DIR=${RR_DIR:-/tmp/rmqrecv}
PORT=${RR_PORT:-6900}
NODE=${RR_NODE:-$DIR/node}
export PATH="$BIN:$PATH"
BENCH_DIR=$DIR BENCH_PORT=$PORT PGBIN=$BIN bash server.sh >/dev/null
PSQL=(psql -h "$DIR" -p "$PORT" -U postgres -d bench -XAtq -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c "DO \$\$BEGIN CREATE ROLE bench_app LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$"
bash rmq_node_client.sh "$NODE"
NAMES=()
PIDS=()
start_gw() {	# name binary port
  "$2" --listen=127.0.0.1:$3 --dbname="host=$DIR port=$PORT dbname=bench user=postgres" \
    --insecure-loopback-role=bench_app >>"$DIR/mq-rocketmq-$1.log" 2>&1 &
  PIDS+=($!)
  NAMES+=("$1")
}
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null || true; done' EXIT
if [ -n "${RR_BIN_A:-}" ]; then
  start_gw "${RR_NAME_A:-a}" "$RR_BIN_A" $((PORT + 2))
fi
start_gw "${RR_NAME_B:-b}" "${RR_BIN_B:-$BIN/mq-rocketmq}" $((PORT + 3))
sleep 1
out=$DIR/runs.jsonl
: >"$out"
echo "# rmq_receive_big.sh $(date -u '+%F %T UTC') on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $REPS repetitions of: receive $N messages of $SIZE bytes (one consumer, up to 32 a call)"
for rep in $(seq 1 "$REPS"); do
  for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]}
    port=$((PORT + 2 + (${#NAMES[@]} == 2 ? i : 1)))
    t="recv_${name}_${rep}_$$"
    # SIZE bytes of SHA-256 output a message, each message its own
    "${PSQL[@]}" >/dev/null <<SQL
SELECT mq.queue_declare('$t', type => 'stream', arguments => '{"partitions": 1}');
SELECT mq.group_declare('$t', '$t', start => 'earliest');
SELECT mq.grant('consume', 'queue', '$t', 'bench_app');
SELECT mq.publish('', '$t', substr((SELECT string_agg(sha256(int8send(m * 1000000 + g)), ''::bytea)
  FROM generate_series(1, ($SIZE + 31) / 32) g), 1, $SIZE)) FROM generate_series(1, $N) m;
CHECKPOINT;
SQL
    line=$(RMQ_ENDPOINT=127.0.0.1:$port RMQ_TOPIC=$t RMQ_GROUP=$t NODE_PATH="$NODE/node_modules" \
      node rmq_receive_big.js "$N" "${PIDS[$i]}" "$DIR/data")
    echo "{\"gw\": \"$name\", \"rep\": $rep, ${line#\{}" | tee -a "$out"
    "${PSQL[@]}" -c "SELECT mq.queue_delete('$t')" >/dev/null
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for gw in dict.fromkeys(r['gw'] for r in runs):
    rs = [r for r in runs if r['gw'] == gw]
    med = lambda k: statistics.median(r[k] for r in rs)
    print('median %-8s (%d runs): wall %.3f s, gateway CPU %.3f s, cluster CPU %.3f s, client CPU %.3f s'
          % (gw, len(rs), med('seconds'), med('gw_cpu_s'), med('pg_cpu_s'), med('client_cpu_s')))
PY
