#!/usr/bin/env bash
# test/demo.sh
#	  Install queue_ext and run it on a local demo server, in one command, as
#	  root, on Debian 12:
#
#		sudo bash test/demo.sh            # install, start, run the demo
#		sudo bash test/demo.sh --stop     # stop the demo server
#		sudo bash test/demo.sh --reset    # stop it and delete its data
#
#	  1. installs the Debian packages that are missing
#	  2. builds queue_ext from a scratch copy of the tree and installs it
#	  3. creates (first run) or reuses a cluster in /var/lib/queue_ext-demo,
#	     owned by "postgres", with shared_preload_libraries = 'queue_ext',
#	     on port 5432 if free, else 5433 (then 5434 ...); restarts it when the
#	     installed library changed
#	  4. creates database queue_demo and the extension in it
#	  5. publishes and consumes a few messages, and prints how to connect
#
#	  Safe to run again: it reuses the cluster, port and database.
#	  Environment: QE_DEMO_DIR (default /var/lib/queue_ext-demo),
#	  QE_DEMO_PORT (force a port), QE_WERROR, QE_SKIP_DEPS, PG_MAJOR, PG_CONFIG.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib/cluster.sh source-path=SCRIPTDIR/..
. "$ROOT/test/lib/cluster.sh"

DEMO_DIR=${QE_DEMO_DIR:-/var/lib/queue_ext-demo}
DATA=$DEMO_DIR/data
LOG=$DEMO_DIR/postgresql.log
SOCKDIR=/var/run/postgresql
DB=queue_demo
ACTION=run

for arg in "$@"; do
	case $arg in
		--stop) ACTION=stop ;;
		--reset) ACTION=reset ;;
		-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) qe_die "unknown option $arg (try --help)" ;;
	esac
done

qe_require_root

case $ACTION in
	stop)
		qe_stop "$DATA"
		qe_log "demo server stopped (data kept in $DATA; run test/demo.sh again to start it)"
		exit 0 ;;
	reset)
		qe_stop "$DATA"
		rm -rf "$DEMO_DIR"
		qe_log "demo server stopped and $DEMO_DIR deleted"
		exit 0 ;;
esac

# ---------------------------------------------------------------------------
# packages, build, install
# ---------------------------------------------------------------------------
qe_install_deps core
qe_ensure_pg_user

# Build in a fixed place so that an unchanged tree gives the same library
# (its debug info records the build path) and the server is not restarted.
install -d -m 755 -o "$QE_PG_USER" "$DEMO_DIR"
BUILD=$DEMO_DIR/build
rm -rf "$BUILD"
trap 'rm -rf "$BUILD"' EXIT
qe_copy_tree "$ROOT" "$BUILD"
qe_build_install "$BUILD"
LIB=$($PG_CONFIG --pkglibdir)/queue_ext.so
LIB_SUM=$(sha256sum "$LIB" | cut -d' ' -f1)
EXT_SUM=$(cat "$($PG_CONFIG --sharedir)"/extension/queue_ext* | sha256sum | cut -d' ' -f1)

# ---------------------------------------------------------------------------
# the demo cluster
# ---------------------------------------------------------------------------
install -d -m 755 -o "$QE_PG_USER" "$DEMO_DIR"
if [ ! -f "$DATA/PG_VERSION" ]; then
	qe_log "creating demo cluster in $DATA"
	install -d -m 700 -o "$QE_PG_USER" "$DATA"
	qe_initdb "$DATA"
	echo "include = 'queue_ext_demo.conf'	# queue_ext test/demo.sh" >>"$DATA/postgresql.conf"
fi
[ "$(cat "$DATA/PG_VERSION")" = "$PG_MAJOR" ] ||
	qe_die "$DATA holds a PostgreSQL $(cat "$DATA/PG_VERSION") cluster; run test/demo.sh --reset first"

PORT=$(qe_running_port "$DATA")
if [ -n "$PORT" ]; then
	qe_log "demo server already running on port $PORT"
else
	# not running: keep the port of the last run if still free, else pick one
	PORT=${QE_DEMO_PORT:-}
	if [ -z "$PORT" ] && [ -f "$DEMO_DIR/port" ] && ! qe_port_busy "$(cat "$DEMO_DIR/port")" "$SOCKDIR"; then
		PORT=$(cat "$DEMO_DIR/port")
	fi
	if [ -z "$PORT" ]; then
		for p in 5432 5433 5434 5435 5436 5437 5438 5439; do
			if ! qe_port_busy "$p" "$SOCKDIR"; then PORT=$p; break; fi
			qe_log "port $p is in use"
		done
		[ -n "$PORT" ] || qe_die "ports 5432-5439 are all in use; set QE_DEMO_PORT"
	fi
fi
echo "$PORT" >"$DEMO_DIR/port"
qe_write_conf "$DATA/queue_ext_demo.conf" \
	"port = $PORT" \
	"listen_addresses = 'localhost'" \
	"mq.quorum_unavailable = 'wait'" \
	"unix_socket_directories = '$SOCKDIR'"

if qe_as_pg pg_ctl -D "$DATA" status >/dev/null 2>&1; then
	if [ "$(cat "$DEMO_DIR/lib.sha256" 2>/dev/null)" != "$LIB_SUM" ]; then
		qe_log "queue_ext.so changed since the server started: restarting it"
		qe_stop "$DATA"
		qe_start "$DATA" "$LOG"
	fi
else
	qe_log "starting demo server on port $PORT (log: $LOG)"
	qe_start "$DATA" "$LOG"
fi
echo "$LIB_SUM" >"$DEMO_DIR/lib.sha256"

PSQL=(qe_as_pg psql -X -v ON_ERROR_STOP=1 -h "$SOCKDIR" -p "$PORT" -U postgres)

# ---------------------------------------------------------------------------
# database and extension
# ---------------------------------------------------------------------------
if [ "$("${PSQL[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
	qe_log "creating database $DB"
	"${PSQL[@]}" -d postgres -qc "CREATE DATABASE $DB"
fi
if [ -n "$("${PSQL[@]}" -d "$DB" -tAc "SELECT 1 FROM pg_extension WHERE extname = 'queue_ext'")" ] &&
	[ "$(cat "$DEMO_DIR/ext.sha256" 2>/dev/null)" != "$EXT_SUM" ]; then
	# A development build may change the install script without a new
	# version number; queue_demo is a scratch database, so start it afresh.
	qe_log "the installed extension scripts changed: recreating queue_ext in $DB (its demo data is dropped)"
	"${PSQL[@]}" -d "$DB" -qc "DROP EXTENSION queue_ext CASCADE" 2>&1 | grep -v '^NOTICE' || true
fi
"${PSQL[@]}" -d "$DB" -qc "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS queue_ext"
echo "$EXT_SUM" >"$DEMO_DIR/ext.sha256"

# mq_guest: the role AMQP user guest logs in as (mq-amqp --guest-role
# mq_guest, RabbitMQ's tutorials with pika's defaults).  Not a superuser,
# not the extension's owner: CREATE on schema mq lets it declare queues and
# exchanges (it owns what it declares, so it may publish to, consume from
# and bind them); the predeclared exchanges ("" and amq.*) take anyone's
# publishes.  Nothing else is granted.
"${PSQL[@]}" -d "$DB" -q <<'SQL'
SET client_min_messages = warning;
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mq_guest') THEN
        CREATE ROLE mq_guest LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
    END IF;
END
$$;
GRANT CREATE ON SCHEMA mq TO mq_guest;
SQL

# ---------------------------------------------------------------------------
# the demo: the broker API if this build has it, else the mqlog storage engine
# ---------------------------------------------------------------------------
has_func()
{
	[ "$("${PSQL[@]}" -d "$DB" -tAc "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'mq' AND p.proname = '$1'")" != 0 ]
}

echo
if has_func queue_declare && has_func send && has_func consume && has_func ack; then
	qe_log "demo: a queue, send, consume + ack in one transaction"
	"${PSQL[@]}" -d "$DB" -e <<'SQL'
SELECT mq.queue_declare('demo');
SELECT mq.send('demo', 'hello'::text) AS msg_id;
SELECT mq.send('demo', 'world'::text) AS msg_id;
BEGIN;
CREATE TEMP TABLE got ON COMMIT DROP AS
    SELECT msg_id, convert_from(body, 'UTF8') AS body
      FROM mq.consume('demo', max_messages => 10);
TABLE got;
SELECT mq.ack('demo', ARRAY(SELECT msg_id FROM got));
COMMIT;
SQL
	if has_func exchange_declare && has_func bind && has_func publish; then
		echo
		qe_log "demo: a topic exchange routing by key"
		"${PSQL[@]}" -d "$DB" -e <<'SQL'
SELECT mq.exchange_declare('orders', 'topic');
SELECT mq.queue_declare('order_events');
SELECT mq.bind('order_events', 'orders', 'order.*');
SELECT mq.publish('orders', 'order.created', '{"id": 1}'::jsonb) AS routed_msg_id;
SELECT mq.publish('orders', 'invoice.paid', '{"id": 2}'::jsonb) AS unrouted_msg_id;
BEGIN;
CREATE TEMP TABLE got ON COMMIT DROP AS
    SELECT msg_id, routing_key, convert_from(body, 'UTF8') AS body
      FROM mq.consume('order_events', max_messages => 10);
TABLE got;
SELECT mq.ack('order_events', ARRAY(SELECT msg_id FROM got));
COMMIT;
SQL
	fi
	if has_func group_declare; then
		echo
		qe_log "demo: a stream read by two consumer groups, each at its own pace"
		"${PSQL[@]}" -d "$DB" -e <<'SQL'
SELECT mq.queue_declare('demo_stream', type => 'stream', arguments => '{"partitions": 2}');
SELECT mq.group_declare('demo_stream', 'billing', start => 'earliest');
SELECT mq.group_declare('demo_stream', 'audit', start => 'earliest');
SELECT count(mq.send('demo_stream', 'order ' || i || ' of ' || c, message_group => c))
  FROM generate_series(1, 2) i, unnest(ARRAY['alice', 'carol']) c;
SELECT "partition", "offset", convert_from(body, 'UTF8') AS body
  FROM mq.consume('demo_stream', 10, group_name => 'billing', auto_ack => true);
SELECT group_name, "partition", committed_offset, end_offset, lag
  FROM mq.consumer_groups WHERE queue = 'demo_stream' ORDER BY 1, 2;
SQL
	fi
	if [ -n "$("${PSQL[@]}" -d "$DB" -tAc "SELECT to_regclass('mq.queues')")" ]; then
		echo
		"${PSQL[@]}" -d "$DB" -e -c "SELECT * FROM mq.queues"
	fi
else
	qe_log "demo: this build has no broker API yet (mq.queue_declare); showing the mqlog storage engine"
	"${PSQL[@]}" -d "$DB" -e <<'SQL'
CREATE TABLE IF NOT EXISTS demo_log (id bigint, body text) USING mqlog;
INSERT INTO demo_log
    SELECT coalesce(max(id), 0) + 1, 'hello at ' || now() FROM demo_log;
SELECT * FROM demo_log ORDER BY id;
SELECT c.relname, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname = 'demo_log';
SQL
fi

cat <<EOF

queue_ext demo server: PostgreSQL $PG_MAJOR, port $PORT, data $DATA, log $LOG
Connect (trust authentication, local connections only):
    psql -h $SOCKDIR -p $PORT -U postgres $DB
    psql "host=localhost port=$PORT user=postgres dbname=$DB"
    runuser -u postgres -- psql -p $PORT $DB      (or: sudo -u postgres psql -p $PORT $DB)
    mqctl -h $SOCKDIR -p $PORT -U postgres -d $DB list queues     (the CLI: docs/mqctl.md)
AMQP 0-9-1 clients (pika, amqplib, ...) through the gateway (docs/amqp.md):
    runuser -u postgres -- mq-amqp --listen 127.0.0.1:5672 --dbname "host=$SOCKDIR port=$PORT dbname=$DB" --guest-role mq_guest
  then amqp://guest:guest@localhost:5672/ (pika's defaults, RabbitMQ's tutorials: from this
  machine only, as role mq_guest); any other user needs a password PostgreSQL checks
  (ALTER ROLE ... PASSWORD, and a scram-sha-256 line in pg_hba.conf): trust is refused.
  The same mq-amqp serves the management web UI and RabbitMQ's HTTP API (rabbitmqadmin, curl)
  at http://127.0.0.1:15672/ (guest/guest from this machine; docs/management.md).
RocketMQ 5 clients through mq-rocketmq (docs/rocketmq.md: its credentials file and flags).
Stop it:   sudo bash test/demo.sh --stop
           (or: runuser -u postgres -- $PG_BINDIR/pg_ctl -D $DATA stop)
Start it again / update after a rebuild:  sudo bash test/demo.sh
Delete it: sudo bash test/demo.sh --reset
EOF
