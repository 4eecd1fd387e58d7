#!/usr/bin/env bash
# test/ha/patroni.sh: an example Patroni cluster for queue_ext on one machine
#
#	  bash test/ha/patroni.sh up           start etcd and three Patroni nodes, wait for a
#	                                       leader and two streaming standbys, create
#	                                       database "queue" with the extension
#	  bash test/ha/patroni.sh status       patronictl list, etcd health
#	  bash test/ha/patroni.sh kill NODE    kill -9 Patroni and PostgreSQL of NODE (node1..3):
#	                                       what losing that machine looks like
#	  bash test/ha/patroni.sh start NODE   start Patroni of NODE again (it rejoins, by
#	                                       pg_rewind if it was the leader)
#	  bash test/ha/patroni.sh leader       print the leader's name
#	  bash test/ha/patroni.sh down [--purge]   stop everything (--purge: delete the directory)
#
# The configuration files are test/ha/patroni/etcd.yml and patroni-node{1,2,3}.yml
# (loopback ports 5731-5736, 5740-5741; see their comments); "up" copies them into
# $QE_PATRONI_DIR/conf, replacing the directory, the binaries and the ports when the
# variables below say so.  Run it as root (it drops to user postgres) or as postgres.
# Needs the Debian packages patroni and etcd-server (etcd-client for "status"), and
# queue_ext installed ("make install") into the PostgreSQL whose binaries it uses.
#
# Environment:
#	QE_PATRONI_DIR         where everything lives (default /tmp/queue_ext-patroni)
#	QE_PATRONI_BINDIR      PostgreSQL binaries (default: PG_CONFIG --bindir, else
#	                       /usr/lib/postgresql/15/bin)
#	QE_PATRONI_PORT_SHIFT  added to every port (default 0), to run beside another cluster
#	QE_PATRONI_DB          database created by "up" (default queue)
#	QE_PATRONI_TIMEOUT     seconds any wait may take (default 90)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$HERE/patroni
DIR=${QE_PATRONI_DIR:-/tmp/queue_ext-patroni}
if [ -n "${QE_PATRONI_BINDIR:-}" ]; then
	BINDIR=$QE_PATRONI_BINDIR
elif [ -n "${PG_CONFIG:-}" ] && [ -x "$PG_CONFIG" ]; then
	BINDIR=$("$PG_CONFIG" --bindir)
else
	BINDIR=/usr/lib/postgresql/15/bin
fi
SHIFT=${QE_PATRONI_PORT_SHIFT:-0}
DB=${QE_PATRONI_DB:-queue}
TIMEOUT=${QE_PATRONI_TIMEOUT:-90}
NODES=(node1 node2 node3)
PGUSER_OS=postgres

log() { printf '==> %s\n' "$*"; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

port() { echo $(($1 + SHIFT)); }
PG_PORTS=("$(port 5731)" "$(port 5732)" "$(port 5733)")
ETCD_CLIENT=$(port 5740)
CONNSTR="host=127.0.0.1,127.0.0.1,127.0.0.1 port=${PG_PORTS[0]},${PG_PORTS[1]},${PG_PORTS[2]} user=postgres target_session_attrs=read-write connect_timeout=2"

# run a command as the PostgreSQL user (we are root or that user already)
as_pg()
{
	if [ "$(id -un)" = "$PGUSER_OS" ]; then
		"$@"
	elif [ "$(id -u)" -eq 0 ]; then
		runuser -u "$PGUSER_OS" -- "$@"
	else
		die "run this as root or as $PGUSER_OS"
	fi
}

node_index()
{
	local i
	for i in 0 1 2; do
		[ "${NODES[$i]}" = "$1" ] && { echo "$i"; return 0; }
	done
	die "unknown node '$1' (node1, node2 or node3)"
}

# copy the configuration files, with this run's directory, binaries and ports
render()
{
	local f p sedargs=()
	sedargs+=(-e "s#/tmp/queue_ext-patroni#$DIR#g" -e "s#/usr/lib/postgresql/15/bin#$BINDIR#g")
	for p in 5731 5732 5733 5734 5735 5736 5740 5741; do
		sedargs+=(-e "s/127\.0\.0\.1:$p\b/127.0.0.1:$(port $p)/g")
	done
	mkdir -p "$DIR/conf"
	for f in etcd.yml patroni-node1.yml patroni-node2.yml patroni-node3.yml; do
		sed "${sedargs[@]}" "$SRC/$f" >"$DIR/conf/$f"
	done
}

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS DESCRIPTION COMMAND...: retry COMMAND every 0.5 s
wait_for()
{
	local secs=$1 what=$2 deadline
	shift 2
	deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what"
		sleep 0.5
	done
}

etcd_healthy()
{
	as_pg etcdctl --endpoints="http://127.0.0.1:$ETCD_CLIENT" --dial-timeout=2s endpoint health
}

start_etcd()
{
	if alive "$DIR/etcd.pid"; then
		log "etcd already running (pid $(cat "$DIR/etcd.pid"))"
		return
	fi
	log "starting etcd on 127.0.0.1:$ETCD_CLIENT"
	as_pg bash -c "setsid etcd --config-file '$DIR/conf/etcd.yml' >'$DIR/etcd.log' 2>&1 </dev/null & echo \$! >'$DIR/etcd.pid'"
	wait_for "$TIMEOUT" "etcd to answer" etcd_healthy
}

start_node()
{
	local n=$1
	if alive "$DIR/$n/patroni.pid"; then
		log "$n: Patroni already running (pid $(cat "$DIR/$n/patroni.pid"))"
		return
	fi
	log "$n: starting Patroni (PostgreSQL on 127.0.0.1:${PG_PORTS[$(node_index "$n")]})"
	as_pg bash -c "setsid patroni '$DIR/conf/patroni-$n.yml' >>'$DIR/$n/patroni.out' 2>&1 </dev/null & echo \$! >'$DIR/$n/patroni.pid'"
}

leader_ready() { as_pg "$BINDIR/psql" "$CONNSTR dbname=postgres" -Atqc 'SELECT 1'; }

# the leader has two standbys streaming, one of them synchronous
standbys_ready()
{
	local out
	out=$(as_pg "$BINDIR/psql" "$CONNSTR dbname=postgres" -Atqc \
		"SELECT count(*) FILTER (WHERE state = 'streaming'), count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication")
	[ "$out" = "2|1" ]
}

cmd_up()
{
	command -v patroni >/dev/null || die "patroni is not installed (apt-get install patroni)"
	command -v etcd >/dev/null || die "etcd is not installed (apt-get install etcd-server)"
	[ -x "$BINDIR/postgres" ] || die "no PostgreSQL binaries in $BINDIR"
	mkdir -p "$DIR"
	chown "$PGUSER_OS" "$DIR" 2>/dev/null || true
	as_pg mkdir -p "$DIR/node1" "$DIR/node2" "$DIR/node3"
	as_pg chmod 700 "$DIR"
	render
	[ "$(id -u)" -ne 0 ] || chown -R "$PGUSER_OS" "$DIR/conf"
	start_etcd
	# node1 first, so that it initialises the cluster; the others clone it
	start_node node1
	wait_for "$TIMEOUT" "a leader that accepts writes" leader_ready
	start_node node2
	start_node node3
	wait_for "$TIMEOUT" "two streaming standbys, one synchronous" standbys_ready
	if [ "$(as_pg "$BINDIR/psql" "$CONNSTR dbname=postgres" -Atqc "SELECT count(*) FROM pg_database WHERE datname = '$DB'")" = 0 ]; then
		as_pg "$BINDIR/psql" "$CONNSTR dbname=postgres" -qc "CREATE DATABASE \"$DB\""
	fi
	as_pg "$BINDIR/psql" "$CONNSTR dbname=$DB" -qc 'CREATE EXTENSION IF NOT EXISTS queue_ext'
	cmd_status
	log "connect: psql \"$CONNSTR dbname=$DB\""
}

cmd_status()
{
	if [ -f "$DIR/conf/patroni-node1.yml" ] && alive "$DIR/etcd.pid"; then
		as_pg patronictl -c "$DIR/conf/patroni-node1.yml" list || true
	else
		echo "not running (no etcd in $DIR)"
	fi
	if command -v etcdctl >/dev/null && alive "$DIR/etcd.pid"; then
		etcd_healthy || true
	fi
}

cmd_leader()
{
	local p i
	p=$(as_pg "$BINDIR/psql" "$CONNSTR dbname=postgres" -Atqc "SELECT current_setting('port')")
	for i in 0 1 2; do
		[ "${PG_PORTS[$i]}" = "$p" ] && echo "${NODES[$i]}"
	done
}

# kill -9 the node's Patroni and its postmaster: the machine is gone
cmd_kill()
{
	local n=$1 pids=()
	node_index "$n" >/dev/null
	[ -s "$DIR/$n/patroni.pid" ] && pids+=("$(cat "$DIR/$n/patroni.pid")")
	[ -s "$DIR/$n/data/postmaster.pid" ] && pids+=("$(head -1 "$DIR/$n/data/postmaster.pid")")
	[ ${#pids[@]} -gt 0 ] || die "$n is not running"
	log "$n: kill -9 ${pids[*]}"
	kill -9 "${pids[@]}" 2>/dev/null || true
	rm -f "$DIR/$n/patroni.pid"
}

# stop a pid (TERM, then KILL after the timeout)
stop_pid()
{
	local pidfile=$1 pid deadline
	alive "$pidfile" || { rm -f "$pidfile"; return 0; }
	pid=$(cat "$pidfile")
	kill -TERM "$pid" 2>/dev/null || true
	deadline=$((SECONDS + TIMEOUT))
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		sleep 0.5
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	rm -f "$pidfile"
}

cmd_down()
{
	local n pm
	for n in node3 node2 node1; do
		if alive "$DIR/$n/patroni.pid"; then
			log "$n: stopping Patroni (it stops PostgreSQL)"
			stop_pid "$DIR/$n/patroni.pid"
		fi
		# a postmaster left behind (Patroni killed): stop it too
		if [ -s "$DIR/$n/data/postmaster.pid" ]; then
			pm=$(head -1 "$DIR/$n/data/postmaster.pid")
			if kill -0 "$pm" 2>/dev/null; then
				as_pg "$BINDIR/pg_ctl" -D "$DIR/$n/data" -m fast -w -t "$TIMEOUT" stop || kill -KILL "$pm" 2>/dev/null || true
			fi
		fi
	done
	if alive "$DIR/etcd.pid"; then
		log "stopping etcd"
		stop_pid "$DIR/etcd.pid"
	fi
	if [ "${1:-}" = --purge ]; then
		log "removing $DIR"
		rm -rf "$DIR"
	fi
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down "${2:-}" ;;
status) cmd_status ;;
leader) cmd_leader ;;
kill) [ -n "${2:-}" ] || die "usage: $0 kill node1|node2|node3"; cmd_kill "$2" ;;
start)
	[ -n "${2:-}" ] || die "usage: $0 start node1|node2|node3"
	node_index "$2" >/dev/null
	start_node "$2"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d'
	exit 2
	;;
esac
