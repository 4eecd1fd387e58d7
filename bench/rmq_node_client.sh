#!/bin/bash
# The pinned RocketMQ 5 Node.js client (test/rocketmq_clients/node's
# package.json and package-lock.json) installed by `npm ci` into directory
# DIR, unless DIR/node_modules already has it.  The RocketMQ benches call it.
#   bash bench/rmq_node_client.sh DIR
set -euo pipefail
NODE=${1:?usage: rmq_node_client.sh DIR}
SRC="$(cd "$(dirname "$0")/.." && pwd)/test/rocketmq_clients/node"
if [ ! -d "$NODE/node_modules/rocketmq-client-nodejs" ]; then
  mkdir -p "$NODE"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$NODE/"
  (cd "$NODE" && npm ci --no-audit --no-fund >/dev/null)
fi
