#!/bin/bash
# Runs both benchmark harnesses against the bench server (port 5495, socket /tmp/bench)
# and writes the output to bench/results/<mode>-<date>.txt.
#   bench/run.sh            full run (~20 min)
#   bench/run.sh --quick    smoke run (~4 min)
# Env: see the headers of mqlog_vs_heap.py (H1_*) and broker_vs_skiplocked.py (H2_*);
# BENCH_HOST/BENCH_PORT/BENCH_USER/BENCH_DB select the server; bench/server.sh sets one up.
# queue_ext is preloaded: after `make install`, restart the server (bench/server.sh --restart).
set -euo pipefail
cd "$(dirname "$0")"
mode=full; [ "${1:-}" = "--quick" ] && mode=quick
mkdir -p results
out="results/$mode-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# $mode run $(date -u '+%F %T UTC') on $(hostname), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null)"
  psql -h "${BENCH_HOST:-/tmp/bench}" -p "${BENCH_PORT:-5495}" -U "${BENCH_USER:-postgres}" -d "${BENCH_DB:-bench}" -XAt -c \
    "SELECT version()" -c "SELECT name || '=' || setting FROM pg_settings WHERE name IN
     ('shared_buffers','max_wal_size','checkpoint_timeout','synchronous_commit','fsync','wal_level','autovacuum',
      'shared_preload_libraries','mq.segment_size') ORDER BY 1"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 mqlog_vs_heap.py "$@"
  python3 broker_vs_skiplocked.py "$@"
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$out"
echo "output written to bench/$out"
