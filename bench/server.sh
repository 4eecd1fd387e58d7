#!/bin/bash
# Create (if missing) and start the bench cluster: /tmp/bench/data, port 5495, socket in /tmp/bench,
# run as user postgres, database "bench".  Run as root.  Install queue_ext first:
#   cd /work/main && make && make install
# Env (for a private cluster beside the shared one): BENCH_DIR (/tmp/bench: data, socket, log),
# BENCH_PORT (5495), PGBIN (/usr/lib/postgresql/15/bin: a relocated PostgreSQL copy's bin).
set -euo pipefail
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DIR=${BENCH_DIR:-/tmp/bench}
PORT=${BENCH_PORT:-5495}
D=$DIR/data
mkdir -p $DIR && chown postgres $DIR
if [ ! -f $D/PG_VERSION ]; then
  su postgres -c "$BIN/initdb -D $D -U postgres -A trust" >/dev/null
  cat >> $D/postgresql.conf <<CONF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$DIR'
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
  su postgres -c "$BIN/pg_ctl -D $D -l $DIR/server.log -w restart -m fast" >/dev/null
fi
if [ "${1:-}" = "--fresh" ]; then   # restart and recreate the bench database
  su postgres -c "$BIN/pg_ctl -D $D -l $DIR/server.log -w restart -m fast" >/dev/null
  $BIN/psql -h $DIR -p $PORT -U postgres -Xq -c "DROP DATABASE IF EXISTS bench"
fi
su postgres -c "$BIN/pg_ctl -D $D -l $DIR/server.log -w status" >/dev/null 2>&1 || \
  su postgres -c "$BIN/pg_ctl -D $D -l $DIR/server.log -w start"
$BIN/psql -h $DIR -p $PORT -U postgres -XAtq -c "SELECT 1 FROM pg_database WHERE datname = 'bench'" | grep -q 1 || \
  $BIN/psql -h $DIR -p $PORT -U postgres -Xq -c "CREATE DATABASE bench"
$BIN/psql -h $DIR -p $PORT -U postgres -d bench -Xq -c "CREATE EXTENSION IF NOT EXISTS queue_ext" \
  -c "CREATE EXTENSION IF NOT EXISTS pgq" -c "CREATE EXTENSION IF NOT EXISTS pgcrypto"
