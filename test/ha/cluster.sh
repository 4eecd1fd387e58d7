#!/usr/bin/env bash
# test/ha/cluster.sh
#	  A pg_auto_failover cluster of queue_ext on one machine, for the HA tests
#	  (test/t/02[1-3]_ha_*.pl) and for running the same cluster by hand:
#
#		bash test/ha/cluster.sh up|down|status|conninfo
#		bash test/ha/cluster.sh stop-node N|kill-node N|start-node N|primary
#		bash test/ha/cluster.sh autoctl ARGS...   (pg_autoctl with this cluster's env)
#
#	  up:   (on an existing QE_HA_DIR: start again what does not run)
#	        a pg_autoctl monitor on port P and three PostgreSQL nodes node1..3 on
#	        P+1..P+3 (127.0.0.1 only), formation "default" with
#	        number_sync_standbys = 1 (synchronous_standby_names = ANY 1 (...)),
#	        queue_ext in shared_preload_libraries and CREATE EXTENSION queue_ext in
#	        database "ha".  Prints the multi-host connection string clients use.
#	  down: stops everything "up" started (also after a kill -9 of a keeper or a
#	        postmaster); the data directory is kept (rm -rf it yourself).
#	  status: pg_autoctl show state, and the connection string.
#	  stop-node N: SIGTERM to node N's pg_autoctl (it stops its postgres too).
#	  kill-node N: kill -9 of node N's pg_autoctl processes and its postmaster
#	        at once (the node is lost, as a machine that dies); prints the
#	        time of the kill (seconds since 1970).
#	  start-node N: start node N's pg_autoctl again (it rejoins, rewinding if needed).
#	  primary: the number of the node that is primary now (monitor's view).
#
#	  Run as root (servers are started as the "postgres" user) or as postgres.
#	  FOR TESTS ONLY: authentication is "trust" for 127.0.0.0/8 and there is no
#	  SSL (--auth trust --no-ssl); nothing listens on other addresses.
#
#	  Environment:
#		QE_HA_PORT   base port (default 5620): monitor, nodes at +1, +2, +3
#		QE_HA_DIR    where data, logs and pg_autoctl's state go (default /tmp/queue_ext-ha)
#		QE_HA_FAST   1 (default): monitor and keeper timeouts tightened so that a
#		             failover takes seconds; 0: pg_auto_failover's defaults
#		QE_HA_WAIT   seconds any one wait may take (default 120)
#		PG_CONFIG    pg_config of the PostgreSQL 15 to run (default: the system's);
#		             pgautofailover and queue_ext must be installed there
#		QE_PG_USER   OS user of the servers (default postgres)
set -uo pipefail

HA_PORT=${QE_HA_PORT:-5620}
HA_DIR=${QE_HA_DIR:-/tmp/queue_ext-ha}
HA_FAST=${QE_HA_FAST:-1}
HA_WAIT=${QE_HA_WAIT:-120}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_BINDIR=$("$PG_CONFIG" --bindir 2>/dev/null)
QE_PG_USER=${QE_PG_USER:-postgres}
AUTOCTL=$(command -v pg_autoctl || echo /usr/bin/pg_autoctl)
NODES=3
MONITOR_URL="postgres://autoctl_node@127.0.0.1:$HA_PORT/pg_auto_failover?sslmode=disable"

log()  { printf '==> %s\n' "$*" >&2; }
die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# Run a command as the servers' user, with this cluster's environment
# (pg_autoctl keeps its state under XDG_CONFIG_HOME and XDG_DATA_HOME).
as_pg()
{
	local envs=(PATH="$PG_BINDIR:/usr/local/bin:/usr/bin:/bin" HOME="$HA_DIR"
		LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ=UTC
		XDG_CONFIG_HOME="$HA_DIR/xdg/config" XDG_DATA_HOME="$HA_DIR/xdg/data"
		XDG_RUNTIME_DIR="$HA_DIR/xdg/run" PG_CONFIG="$PG_CONFIG")

	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$QE_PG_USER" -- env -i "${envs[@]}" "$@"
	elif [ "$(id -un)" = "$QE_PG_USER" ]; then
		env -i "${envs[@]}" "$@"
	else
		die "run this as root or as $QE_PG_USER"
	fi
}

node_port() { echo $((HA_PORT + $1)); }
node_data() { echo "$HA_DIR/node$1"; }

# psql to port $1 (database $2) on loopback, unaligned, no psqlrc
q()
{
	local port=$1 db=$2
	shift 2
	as_pg psql -X -A -t -q -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

# Poll until "$@" succeeds or HA_WAIT seconds pass; $1 says what we wait for.
wait_for()
{
	local what=$1 deadline=$((SECONDS + HA_WAIT))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $deadline ] && die "timed out after ${HA_WAIT}s waiting for $what"
		sleep 0.3
	done
}

conninfo()
{
	local hosts="" ports="" i
	for i in $(seq 1 $NODES); do
		hosts="${hosts:+$hosts,}127.0.0.1"
		ports="${ports:+$ports,}$(node_port "$i")"
	done
	echo "host=$hosts port=$ports dbname=ha user=postgres target_session_attrs=read-write connect_timeout=2"
}

# Settings for every server, appended AFTER pg_autoctl's include
# (postgresql-auto-failover.conf, line 1 of postgresql.conf): later lines win.
# $2 is the whole shared_preload_libraries: on the nodes what pg_autoctl put
# there (pg_stat_statements) plus queue_ext, on the monitor pgautofailover.
write_local_conf()
{
	local data=$1 preload=$2
	as_pg tee "$data/queue_ext-ha.conf" >/dev/null <<EOF
# written by test/ha/cluster.sh, included after postgresql-auto-failover.conf
shared_preload_libraries = '$preload'
listen_addresses = '127.0.0.1'
shared_buffers = '64MB'
effective_cache_size = '256MB'
maintenance_work_mem = '64MB'
work_mem = '4MB'
max_connections = 60
max_prepared_transactions = 10
max_worker_processes = 32
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
log_min_messages = warning
wal_receiver_status_interval = 1s
EOF
	grep -q "^include 'queue_ext-ha.conf'" "$data/postgresql.conf" ||
		echo "include 'queue_ext-ha.conf'	# queue_ext test/ha/cluster.sh: after pg_autoctl's" |
		as_pg tee -a "$data/postgresql.conf" >/dev/null
}

# Start pg_autoctl run for PGDATA $1 in its own session (process group = its
# pid), logging to $2; the pid goes to $1.autoctl.pid.
start_autoctl()
{
	local data=$1 logf=$2
	# shellcheck disable=SC2016  # ($$ is for that sh)
	as_pg setsid sh -c 'echo $$ >"$1.autoctl.pid" && exec "$2" run --pgdata "$1"' \
		sh "$data" "$AUTOCTL" >>"$logf" 2>&1 </dev/null &
	wait_for "pg_autoctl of $data to start" test -s "$data.autoctl.pid"
}

monitor_sql() { q "$HA_PORT" pg_auto_failover -c "$1"; }

# goal and reported state of node N agree and equal $2
node_in_state()
{
	local r
	r=$(monitor_sql "SELECT reportedstate || '/' || goalstate FROM pgautofailover.node WHERE nodename = 'node$1'")
	[ "$r" = "$2/$2" ]
}

install_missing()
{
	local root build

	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	# shellcheck source=test/lib/cluster.sh
	. "$root/test/lib/cluster.sh"
	qe_install_deps
	qe_ensure_pg_user
	AUTOCTL=$(command -v pg_autoctl || echo /usr/bin/pg_autoctl)
	if [ ! -f "$("$PG_CONFIG" --pkglibdir)/queue_ext.so" ]; then
		build=$(mktemp -d /tmp/queue_ext-ha-build.XXXXXX)
		qe_copy_tree "$root" "$build"
		qe_build_install "$build"
		rm -rf "$build"
	fi
}

primary_node()
{
	monitor_sql "SELECT substr(nodename, 5) FROM pgautofailover.node
	              WHERE reportedstate = 'primary' AND goalstate = 'primary'"
}

up()
{
	local i data preload monconf

	[ -x "$AUTOCTL" ] || die "pg_autoctl not found (apt-get install postgresql-15-auto-failover)"
	[ -f "$("$PG_CONFIG" --pkglibdir)/pgautofailover.so" ] ||
		die "pgautofailover is not installed in $("$PG_CONFIG" --pkglibdir)"
	[ -f "$("$PG_CONFIG" --pkglibdir)/queue_ext.so" ] ||
		die "queue_ext is not installed in $("$PG_CONFIG" --pkglibdir)"
	if [ -e "$HA_DIR/monitor" ]; then
		restart
		return
	fi
	mkdir -p "$HA_DIR/xdg/config" "$HA_DIR/xdg/data" "$HA_DIR/xdg/run"
	chmod 700 "$HA_DIR/xdg/run"
	[ "$(id -u)" -eq 0 ] && chown -R "$QE_PG_USER" "$HA_DIR"

	log "monitor on 127.0.0.1:$HA_PORT ($HA_DIR/monitor)"
	as_pg "$AUTOCTL" create monitor --pgdata "$HA_DIR/monitor" --pgport "$HA_PORT" \
		--hostname 127.0.0.1 --auth trust --no-ssl --pgctl "$PG_BINDIR/pg_ctl" \
		>>"$HA_DIR/monitor.log" 2>&1 || { tail -20 "$HA_DIR/monitor.log" >&2; die "pg_autoctl create monitor failed"; }
	# pg_autoctl starts the monitor with -h from this setting (default *)
	as_pg "$AUTOCTL" config set --pgdata "$HA_DIR/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null ||
		die "pg_autoctl config set postgresql.listen_addresses failed"
	write_local_conf "$HA_DIR/monitor" pgautofailover
	monconf="$HA_DIR/monitor/queue_ext-ha.conf"
	if [ "$HA_FAST" = 1 ]; then
		# defaults: 5000, 5000, 2, 2000, 20000, 30000 ms
		as_pg tee -a "$monconf" >/dev/null <<'EOF'
# failover in seconds (tests): see docs/operations.md
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 3000
EOF
	fi
	start_autoctl "$HA_DIR/monitor" "$HA_DIR/monitor.log"
	wait_for "the monitor" monitor_sql "SELECT 1 FROM pgautofailover.formation"

	for i in $(seq 1 $NODES); do
		data=$(node_data "$i")
		log "node$i on 127.0.0.1:$(node_port "$i") ($data)"
		as_pg "$AUTOCTL" create postgres --pgdata "$data" --pgport "$(node_port "$i")" \
			--pghost 127.0.0.1 --listen 127.0.0.1 --hostname 127.0.0.1 --name "node$i" \
			--dbname ha --monitor "$MONITOR_URL" --auth trust --no-ssl \
			--pgctl "$PG_BINDIR/pg_ctl" >>"$data.log" 2>&1 ||
			{ tail -30 "$data.log" >&2; die "pg_autoctl create postgres node$i failed"; }
		if [ "$HA_FAST" = 1 ]; then
			# defaults: 20, 5 s
			as_pg "$AUTOCTL" config set --pgdata "$data" timeout.network_partition_timeout 3 >/dev/null
			as_pg "$AUTOCTL" config set --pgdata "$data" timeout.prepare_promotion_walreceiver 1 >/dev/null
		fi
		# node1 was made by initdb; the others are made by pg_basebackup at
		# their first run and get node1's postgresql.conf and queue_ext-ha.conf
		# node1 is made by initdb; the others are made by pg_basebackup at
		# their first run and get node1's postgresql.conf and queue_ext-ha.conf
		if [ "$i" = 1 ]; then
			preload=$(sed -n "s/^shared_preload_libraries *= *'\{0,1\}\([^']*\)'\{0,1\} *$/\1/p" \
				"$data/postgresql-auto-failover.conf")
			write_local_conf "$data" "${preload:+$preload,}queue_ext"
		fi
		start_autoctl "$data" "$data.log"
		if [ "$i" = 1 ]; then
			wait_for "node1 to be single" node_in_state 1 single
			wait_for "node1 to accept connections" q "$(node_port 1)" ha -c 'SELECT 1'
			q "$(node_port 1)" ha -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS queue_ext' ||
				die "CREATE EXTENSION queue_ext failed on node1"
		else
			wait_for "node$i to be secondary" node_in_state "$i" secondary
		fi
		# the base backup of the next node then waits for no spread checkpoint
		q "$(node_port 1)" ha -c 'CHECKPOINT' >/dev/null
	done
	wait_for "node1 to be primary" node_in_state 1 primary
	# The monitor sets number_sync_standbys to 1 itself once two standbys with
	# replication-quorum are there; make sure of it.  (pg_autoctl 2.0's
	# "set formation number-sync-standbys 1" refuses the value 1, a parser bug
	# of that version: the SQL function of the monitor works.)
	[ "$(monitor_sql "SELECT number_sync_standbys FROM pgautofailover.formation WHERE formationid = 'default'")" = 1 ] ||
		monitor_sql "SELECT pgautofailover.set_formation_number_sync_standbys('default', 1)" >/dev/null ||
		die "could not set number_sync_standbys = 1"
	wait_for "synchronous_standby_names = ANY 1 (two standbys)" sync_names_ok
	as_pg tee "$HA_DIR/conninfo" >/dev/null <<<"$(conninfo)"
	log "cluster up: $(q "$(node_port 1)" ha -c 'SHOW synchronous_standby_names')"
	conninfo
}

# up on an existing cluster: start the pg_autoctl services that do not run
restart()
{
	local i data pgid
	for data in "$HA_DIR/monitor" $(for i in $(seq 1 $NODES); do node_data "$i"; done); do
		pgid=$(cat "$data.autoctl.pid" 2>/dev/null)
		if [ -n "$pgid" ] && [ -n "$(group_pids "$pgid")" ]; then
			continue
		fi
		log "starting pg_autoctl for $data"
		start_autoctl "$data" "$data.log"
		[ "$data" = "$HA_DIR/monitor" ] &&
			wait_for "the monitor" monitor_sql "SELECT 1 FROM pgautofailover.formation"
	done
	wait_for "a primary and its synchronous standbys" sync_names_ok
	conninfo
}

sync_names_ok()
{
	local p
	p=$(primary_node) || return 1
	[ -n "$p" ] || return 1
	q "$(node_port "$p")" ha -c 'SHOW synchronous_standby_names' | grep -q '^ANY 1 (.*,.*)$'
}

# pids of the processes in process group $1
group_pids() { ps -e -o pid=,pgid= | awk -v g="$1" '$2 == g { print $1 }'; }

# postmaster pid of data dir $1, if it runs
postmaster_pid()
{
	local pid
	[ -f "$1/postmaster.pid" ] || return 0
	pid=$(head -1 "$1/postmaster.pid")
	kill -0 "$pid" 2>/dev/null && echo "$pid"
	return 0
}

kill_node()
{
	local data pg pgid
	data=$(node_data "$1")
	pg=$(postmaster_pid "$data")
	pgid=$(cat "$data.autoctl.pid" 2>/dev/null)
	# the keeper, its services and postgres (same process group) at once
	[ -n "$pgid" ] && kill -KILL -- "-$pgid" 2>/dev/null
	[ -n "$pg" ] && kill -KILL "$pg" 2>/dev/null
	# when it happened, for the tests' figures
	date +%s.%N
	return 0
}

# SIGTERM to a pg_autoctl (it stops its postgres), then whatever is left
stop_one()
{
	local data=$1 pgid pg deadline
	pgid=$(cat "$data.autoctl.pid" 2>/dev/null)
	if [ -n "$pgid" ] && [ -n "$(group_pids "$pgid")" ]; then
		kill -TERM "$pgid" 2>/dev/null
		deadline=$((SECONDS + 30))
		while [ -n "$(group_pids "$pgid")" ] && [ $SECONDS -lt $deadline ]; do
			sleep 0.2
		done
		[ -n "$(group_pids "$pgid")" ] && kill -KILL -- "-$pgid" 2>/dev/null
	fi
	pg=$(postmaster_pid "$data")
	if [ -n "$pg" ]; then
		as_pg "$PG_BINDIR/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
			kill -KILL "$pg" 2>/dev/null
	fi
	rm -f "$data.autoctl.pid"
	# a killed node's postmaster.pid names no process any more
	[ -f "$data/postmaster.pid" ] && [ -z "$(postmaster_pid "$data")" ] &&
		rm -f "$data/postmaster.pid"
	return 0
}

down()
{
	local i
	for i in $(seq 1 $NODES); do
		stop_one "$(node_data "$i")"
	done
	stop_one "$HA_DIR/monitor"
	log "cluster down (data kept in $HA_DIR)"
}

status()
{
	as_pg "$AUTOCTL" show state --pgdata "$HA_DIR/monitor"
	conninfo
}

# By hand on a fresh machine, as root, "up" first installs what is missing
# (the Debian packages of test/lib/cluster.sh, and queue_ext built from this
# tree), as test/demo.sh does.
if [ "${1:-}" = up ] && [ "$(id -u)" -eq 0 ] &&
	{ [ -z "$PG_BINDIR" ] || [ ! -x "$AUTOCTL" ] ||
		[ ! -f "$("$PG_CONFIG" --pkglibdir)/pgautofailover.so" ] ||
		[ ! -f "$("$PG_CONFIG" --pkglibdir)/queue_ext.so" ]; }; then
	install_missing
	PG_BINDIR=$("$PG_CONFIG" --bindir 2>/dev/null)
fi
[ -n "$PG_BINDIR" ] || die "no pg_config at $PG_CONFIG"

case ${1:-} in
	up) up ;;
	down) down ;;
	status) status ;;
	conninfo) conninfo ;;
	primary) primary_node ;;
	stop-node) stop_one "$(node_data "${2:?node number}")" ;;
	kill-node) kill_node "${2:?node number}" ;;
	start-node) start_autoctl "$(node_data "${2:?node number}")" "$(node_data "$2").log" ;;
	autoctl) shift; as_pg "$AUTOCTL" "$@" ;;
	*) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
