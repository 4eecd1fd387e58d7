#!/bin/bash
# bench/publish_cost.sh: user-space instructions per statement of a single-message publish
# (SELECT mq.send to a 4-partition stream, 100 random bytes) against the heap INSERT floor of
# bench/streams.py, counted by valgrind's callgrind in a single-user backend: no client, no
# commit flush, no other load, so the figure is the same from run to run
# (bench/results/2026-12-01-stream-publish-profile.md).  Each statement is its own transaction.  The
# count per statement is the difference between N2 and N1 statements, divided by N2 - N1, so
# the backend's start and first calls (catalog and cache loads) drop out.
#
# Then the same over the wire: the whole server runs under callgrind and pgbench (one client,
# -M prepared and simple) sends N1, then N2 statements on a connection each; the count per
# statement is the difference of the two backends' totals.  This adds what a single-user
# backend leaves out or does differently (the client protocol, the portal of a SELECT against
# an INSERT's, RowDescription, lock manager traffic of a real server) and leaves out its
# printing of every SELECT's row (~8,300 instructions a statement).
# Batches of 100 messages (send_batch, INSERT ... SELECT) are counted single-user, per message.
#
#   bash bench/publish_cost.sh            # as root; needs valgrind (apt-get install valgrind)
#
# Env: PGBIN (/usr/lib/postgresql/15/bin: a PostgreSQL with queue_ext installed), N1 (100),
# N2 (300), KEEP=1 keeps the scratch directory (the callgrind outputs, for callgrind_annotate).
set -euo pipefail
BIN=${PGBIN:-/usr/lib/postgresql/15/bin}
N1=${N1:-100}
N2=${N2:-300}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
W=$(mktemp -d /tmp/publish_cost.XXXXXX)
chown postgres "$W"
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
su postgres -c "$BIN/initdb -D $W/data -A trust" >/dev/null
cat >> "$W/data/postgresql.conf" <<CONF
shared_preload_libraries = 'queue_ext'
fsync = off
listen_addresses = ''
unix_socket_directories = '$W'
port = 5599
CONF
su postgres -c "$BIN/pg_ctl -D $W/data -l $W/server.log -w start" >/dev/null
"$BIN/psql" -h "$W" -p 5599 -U postgres -d postgres -Xq -v ON_ERROR_STOP=1 <<'SQL'
CREATE DATABASE bench;
\c bench
CREATE EXTENSION pgcrypto;
CREATE EXTENSION queue_ext;
SELECT mq.queue_declare('b3_stream', type => 'stream', arguments => '{"partitions": 4}') \g /dev/null
SELECT mq.queue_declare('b3_classic') \g /dev/null
-- mq.send's overloads (names, types, defaults) around a body that does nothing: what
-- the parser and executor cost any function of the contract's shape (the floor); in schema
-- mq, so that the planner hook of src/plan_defaults.c completes its calls as it does mq.send's
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p WHERE p.proname = 'send'
             AND p.pronamespace = 'mq'::regnamespace LOOP
    EXECUTE format('CREATE FUNCTION mq.b3_send_shape(%s) RETURNS bigint LANGUAGE plpgsql AS %L',
                   pg_get_function_arguments(f), 'BEGIN RETURN 0; END');
  END LOOP;
END $$;
CREATE TABLE b3_heap (id bigserial, published_at timestamptz DEFAULT now(),
                      routing_key text, body bytea);
SQL
su postgres -c "$BIN/pg_ctl -D $W/data -w stop" >/dev/null

# instructions of n statements (after setup statement $3, if given)
count() {
	local stmt=$1 n=$2 setup=${3:-} out
	out=$W/cg.$n.$RANDOM
	{ [ -z "$setup" ] || echo "$setup"; for _ in $(seq "$n"); do echo "$stmt"; done; } > "$W/in.sql"
	chmod a+r "$W/in.sql"
	su postgres -c "valgrind --tool=callgrind --callgrind-out-file=$out.cg \
		$BIN/postgres --single -D $W/data -j bench < $W/in.sql > /dev/null 2> $out.err"
	grep -o "Collected : [0-9]*" "$out.err" | awk '{print $3}'
}

ALL_ARGS="NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
printf '%-58s %s\n' "statement (one per transaction)" "instructions"
while IFS='|' read -r label stmt setup; do
	a=$(count "$stmt" "$N1" "$setup")
	b=$(count "$stmt" "$N2" "$setup")
	printf '%-58s %s\n' "$label" $(( (b - a) / (N2 - N1) ))
done <<LIST
mq.send to a 4-partition stream|SELECT mq.send('b3_stream', gen_random_bytes(100));
mq.send to a stream, all 17 arguments given|SELECT mq.send('b3_stream', gen_random_bytes(100), $ALL_ARGS);
mq.send with a key (kept in the message log)|SELECT mq.send('b3_stream', gen_random_bytes(100), key => 'k');
mq-rocketmq's send: mq.message_position(mq.send(...))|SELECT "offset" FROM mq.message_position(mq.send('b3_stream', gen_random_bytes(100)));
the same with a key|SELECT "offset" FROM mq.message_position(mq.send('b3_stream', gen_random_bytes(100), key => 'k'));
mq.message_position of no message|SELECT "offset" FROM mq.message_position(0);
mq.send to a classic queue|SELECT mq.send('b3_classic', gen_random_bytes(100));
mq.send's overloads doing nothing (plpgsql; the call's floor)|SELECT mq.b3_send_shape('b3_stream', gen_random_bytes(100));
heap INSERT (the floor of bench/streams.py)|INSERT INTO b3_heap (routing_key, body) VALUES ('b3', gen_random_bytes(100));
prepared: mq.send to a 4-partition stream|EXECUTE s;|PREPARE s AS SELECT mq.send('b3_stream', gen_random_bytes(100));
prepared: mq.send's overloads doing nothing|EXECUTE n;|PREPARE n AS SELECT mq.b3_send_shape('b3_stream', gen_random_bytes(100));
prepared: heap INSERT|EXECUTE h;|PREPARE h AS INSERT INTO b3_heap (routing_key, body) VALUES ('b3', gen_random_bytes(100));
LIST

# batches of 100 (send_batch against INSERT ... SELECT), per message, over 20 and 60 statements
BATCH="ARRAY(SELECT gen_random_bytes(100) FROM generate_series(1, 100))"
while IFS='|' read -r label stmt; do
	a=$(count "$stmt" 20)
	b=$(count "$stmt" 60)
	printf '%-58s %s\n' "$label" $(( (b - a) / (40 * 100) ))
done <<LIST
batch of 100, per message: mq.send_batch to the stream|SELECT count(*) FROM mq.send_batch('b3_stream', $BATCH);
batch of 100, per message: heap INSERT ... SELECT|INSERT INTO b3_heap (routing_key, body) SELECT 'b3', gen_random_bytes(100) FROM generate_series(1, 100);
LIST

# over the wire: the server under callgrind, one pgbench connection per count
echo "SELECT mq.send('b3_stream', gen_random_bytes(100));" > "$W/stream.sql"
echo "INSERT INTO b3_heap (routing_key, body) VALUES ('b3', gen_random_bytes(100));" > "$W/heap.sql"
echo "SELECT mq.b3_send_shape('b3_stream', gen_random_bytes(100));" > "$W/shape.sql"
chmod a+r "$W"/*.sql
mkdir -p "$W/wire" && chown postgres "$W/wire"
su postgres -c "valgrind --tool=callgrind --callgrind-out-file=$W/wire/cg.%p \
	$BIN/postgres -D $W/data -c autovacuum=off > $W/wire.log 2>&1 &"
for _ in $(seq 120); do "$BIN/pg_isready" -h "$W" -p 5599 -q && break; sleep 1; done
# instructions of the backend that ran n statements of file $1 with protocol $2
wire_count() {
	local before
	before=$(ls "$W/wire")
	"$BIN/pgbench" -h "$W" -p 5599 -U postgres -n -c 1 -t "$3" -M "$2" -f "$W/$1.sql" bench > /dev/null
	sleep 2		# the backend writes its profile as it exits
	for f in $(ls "$W/wire"); do
		echo "$before" | grep -qx "$f" || grep -h "^summary:" "$W/wire/$f" | awk '{print $2}'
	done | sort -n | tail -1	# pgbench's own first connection does far less
}
printf '\n%-58s %s\n' "over the wire (pgbench, 1 client)" "instructions"
for proto in prepared simple; do
	for sys in stream shape heap; do
		a=$(wire_count $sys $proto "$N1")
		b=$(wire_count $sys $proto "$N2")
		label=$sys
		[ "$sys" != shape ] || label="mq.send's overloads doing nothing"
		printf '%-58s %s\n' "$proto: $label" $(( (b - a) / (N2 - N1) ))
	done
done
su postgres -c "$BIN/pg_ctl -D $W/data -w stop -m fast" > /dev/null 2>&1 || true
if [ "${KEEP:-0}" = 1 ]; then echo "callgrind outputs: $W/*.cg, $W/wire/cg.*"; fi
