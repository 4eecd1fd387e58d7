#!/bin/bash
# Create (if missing) and start the bench cluster: /tmp/bench/data, port 5495, socket in /tmp/bench,
# run as user postgres, database "bench".  Run as root.  Install queue_ext first:
#   cd /work/main && make && make install
set -euo pipefail
BIN=/usr/lib/postgresql/15/bin
D=/tmp/bench/data
mkdir -p /tmp/bench && chown postgres /tmp/bench
if [ ! -f $D/PG_VERSION ]; then
  su postgres -c "$BIN/initdb -D $D -U postgres -A trust" >/dev/null
  cat >> $D/postgresql.conf <<CONF
port = 5495
listen_addresses = ''
unix_socket_directories = '/tmp/bench'
shared_preload_libraries = 'queue_ext'
shared_buffers = 1GB
max_wal_size = 4GB
checkpoint_timeout = 30min
synchronous_commit = on
fsync = on
max_connections = 100
CONF
fi
if [ "${1:-}" = "--restart" ]; then
  su postgres -c "$BIN/pg_ctl -D $D -l /tmp/bench/server.log -w restart -m fast" >/dev/null
fi
if [ "${1:-}" = "--fresh" ]; then   # restart and recreate the bench database
  su postgres -c "$BIN/pg_ctl -D $D -l /tmp/bench/server.log -w restart -m fast" >/dev/null
  psql -h /tmp/bench -p 5495 -U postgres -Xq -c "DROP DATABASE IF EXISTS bench"
fi
su postgres -c "$BIN/pg_ctl -D $D -l /tmp/bench/server.log -w status" >/dev/null 2>&1 || \
  su postgres -c "$BIN/pg_ctl -D $D -l /tmp/bench/server.log -w start"
psql -h /tmp/bench -p 5495 -U postgres -XAtq -c "SELECT 1 FROM pg_database WHERE datname = 'bench'" | grep -q 1 || \
  psql -h /tmp/bench -p 5495 -U postgres -Xq -c "CREATE DATABASE bench"
psql -h /tmp/bench -p 5495 -U postgres -d bench -Xq -c "CREATE EXTENSION IF NOT EXISTS queue_ext" \
  -c "CREATE EXTENSION IF NOT EXISTS pgq" -c "CREATE EXTENSION IF NOT EXISTS pgcrypto"
