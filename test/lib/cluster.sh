# shellcheck shell=bash
# test/lib/cluster.sh
#	  Shell helpers shared by test/run_all.sh and test/demo.sh: install the
#	  Debian packages, build and install queue_ext from a scratch copy of the
#	  tree, and create, start and stop PostgreSQL clusters as the unprivileged
#	  "postgres" user (PostgreSQL refuses to run as root).
#
# Source it from bash; it sets no shell options of its own.  Settings, all
# optional, from the environment:
#	PG_MAJOR      PostgreSQL major version (default 15)
#	PG_CONFIG     pg_config to build against (default /usr/lib/postgresql/$PG_MAJOR/bin/pg_config)
#	QE_PG_USER    OS user that runs the servers and tests (default postgres)
#	QE_SKIP_DEPS  1 = never call apt-get (fail if something is missing)
#	QE_WERROR     0 = do not build with -Werror (default 1)

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
# the server binaries of that installation (a relocated copy of it works too);
# before the packages are installed pg_config may not exist yet
PG_BINDIR=$("$PG_CONFIG" --bindir 2>/dev/null || echo "/usr/lib/postgresql/$PG_MAJOR/bin")
QE_PG_USER=${QE_PG_USER:-postgres}
QE_WERROR=${QE_WERROR:-1}

# Debian packages needed to build and run queue_ext and mqctl (the demo
# server, test/demo.sh, installs these only)
QE_CORE_PACKAGES=(
	"postgresql-$PG_MAJOR"
	"postgresql-server-dev-$PG_MAJOR"
	"postgresql-client-$PG_MAJOR"
	postgresql-contrib
	build-essential
	libpq-dev
	libjson-c-dev
	libncurses-dev
	# mq-amqp, the AMQP 0-9-1 gateway (gateway/, docs/amqp.md), is built
	# by the same make install: its event loop
	libevent-dev
	# mq-rocketmq, the RocketMQ 5 gRPC gateway (rocketmq/, docs/rocketmq.md),
	# is built by the same make install: HTTP/2, protocol buffers (protoc-c
	# compiles rocketmq/rocketmq.proto at build time), OpenSSL's libcrypto
	# for the request signatures and body digests, its libssl for TLS
	# (--tls-cert; libevent-dev brings libevent_openssl)
	libnghttp2-dev
	protobuf-c-compiler
	libprotobuf-c-dev
	libssl-dev
	# make install writes the man pages of mqctl, mq-amqp and mq-rocketmq with help2man
	# (from their --help), for man to show
	help2man
	man-db
)
# Debian packages needed to build, test and benchmark queue_ext
QE_PACKAGES=(
	"${QE_CORE_PACKAGES[@]}"
	"postgresql-$PG_MAJOR-pgq3"
	build-essential
	perl
	libipc-run-perl
	# the HA tests (test/ha/cluster.sh, test/t/02[1-3]_ha_*.pl): pg_auto_failover
	# (monitor extension and pg_autoctl) and the load generator's client library
	"postgresql-$PG_MAJOR-auto-failover"
	python3-psycopg2
)
# HA fault matrix row 1 (test/t/026_ha_client_connection_lost.pl) and the
# pooler tests (test/t/032_pooler_receipts.pl, bench/pooler_wait.py): a pooler
# in front of the server and a Perl client library
QE_PACKAGES+=(
	pgbouncer
	libdbd-pg-perl
)
# the Patroni example cluster (test/ha/patroni.sh, TAP test 031)
QE_PACKAGES+=(
	patroni
	etcd-server
	etcd-client
)
# queue_ext_pgmq (pgmq's API, docs/pgmq.md): pg_partman for partitioned
# queues' archives (sql/pgmq_compat.sql, pgmq's own suite)
QE_PACKAGES+=(
	"postgresql-$PG_MAJOR-partman"
)
# RabbitMQ definitions import/export against a real RabbitMQ (TAP test 036);
# its management plugin and rabbitmqadmin, and curl, against mq-amqp's
# management API (TAP test 059, docs/management.md)
QE_PACKAGES+=(
	rabbitmq-server
	curl
)
# real AMQP 0-9-1 clients against RabbitMQ and the gateway mq-amqp (TAP test
# 037, test/amqp_clients/, bench/amqp_bench.py): pika, Celery (over py-amqp);
# amqplib comes from npm
QE_PACKAGES+=(
	python3-pika
	python3-celery
)
# h2load, a C HTTP/2 client: bench/rocketmq_bench.sh sends the RocketMQ
# gateway's SendMessage with it, without the Node client's per-call cost
QE_PACKAGES+=(
	nghttp2-client
)
# the openssl command makes a test CA and the RocketMQ gateway's TLS
# certificate at test time (TAP test 063)
QE_PACKAGES+=(
	openssl
)
# the RabbitMQ team's Go client amqp091-go and its integration tests, built
# offline from Debian's sources and run against RabbitMQ and mq-amqp (TAP
# test 052): the Go toolchain and the client's source package
QE_PACKAGES+=(
	golang-go
	golang-github-rabbitmq-amqp091-go-dev
)
# the real Prometheus exporter on mq.metrics (TAP test 033, docs/metrics.md)
QE_PACKAGES+=(
	prometheus-postgres-exporter
)
# the client examples (examples/, TAP test 034): psycopg 3 for the Python
# ones, libpq's headers for the C worker, and Node.js with npm for the node
# ones -- only when no node or npm is found: a nodejs from nodesource has npm
# inside, and Debian's npm package conflicts with it
QE_PACKAGES+=(
	python3-psycopg
	libpq-dev
)
command -v node >/dev/null 2>&1 || QE_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || QE_PACKAGES+=(npm)
# the management web UI (www/, docs/management.md) in a real browser: Debian's
# Chromium, headless, driven by puppeteer-core from npm (TAP test 060,
# test/mgmt_ui/)
QE_PACKAGES+=(
	chromium
)
# mqctl, the command-line tool (mqctl/, docs/mqctl.md): libpq, json-c and
# ncurses (top) to build it, a pseudo-terminal for its progress bar and
# screen tests (TAP test 035)
QE_PACKAGES+=(
	libpq-dev
	libjson-c-dev
	libncurses-dev
	libio-pty-perl
)

qe_log()  { printf '==> %s\n' "$*"; }
qe_warn() { printf 'WARNING: %s\n' "$*" >&2; }
qe_die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

qe_require_root()
{
	[ "$(id -u)" -eq 0 ] ||
		qe_die "run this as root (e.g. sudo bash $0): it installs packages and the extension, then drops to the '$QE_PG_USER' user for PostgreSQL"
}

# Install whatever of QE_PACKAGES is missing; does nothing when all are there.
qe_install_deps()
{
	local p missing=() list=("${QE_PACKAGES[@]}")

	# "core": only what building and running needs (the demo)
	[ "${1:-}" = core ] && list=("${QE_CORE_PACKAGES[@]}")
	for p in "${list[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		qe_log "packages: all present"
		return 0
	fi
	[ "${QE_SKIP_DEPS:-0}" = 1 ] && qe_die "missing packages (QE_SKIP_DEPS=1): ${missing[*]}"
	qe_log "packages: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q || qe_die "apt-get update failed"
	apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		qe_die "apt-get install failed for: ${missing[*]}"
}

# The unprivileged OS user (normally created by the postgresql-common package)
# and the standard socket directory.
qe_ensure_pg_user()
{
	if ! id "$QE_PG_USER" >/dev/null 2>&1; then
		qe_log "creating system user $QE_PG_USER"
		useradd --system --user-group --home-dir /var/lib/postgresql \
			--shell /bin/bash "$QE_PG_USER" || qe_die "could not create user $QE_PG_USER"
	fi
	if [ ! -d /var/run/postgresql ]; then
		install -d -m 2775 -o "$QE_PG_USER" -g "$(id -gn "$QE_PG_USER")" /var/run/postgresql
	fi
}

# Run a command as QE_PG_USER with a clean, explicit environment (extra
# VAR=value words may precede the command).
qe_as_pg()
{
	local home
	home=$(getent passwd "$QE_PG_USER" | cut -d: -f6)
	runuser -u "$QE_PG_USER" -- env -i \
		PATH="$PG_BINDIR:/usr/local/bin:/usr/bin:/bin" \
		HOME="${home:-/tmp}" LANG=C.UTF-8 LC_ALL=C.UTF-8 TZ="${TZ:-UTC}" \
		${QE_RUN_MARK:+QE_RUN_MARK="$QE_RUN_MARK"} \
		"$@"
}

# Processes that carry QE_RUN_MARK=mark in their environment (qe_as_pg
# passes it on when set; every process started below inherits it: servers,
# pg_autoctl, Patroni, etcd, poolers, gateways), or whose working directory
# is in dir (pg_autoctl's children overwrite their environment with their
# process title), or that name dir on their command line.
# qe_marked_pids MARK DIR
qe_marked_pids()
{
	local mark=$1 dir=$2 p pid cwd

	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		[ "$pid" = "$$" ] && continue
		cwd=$(readlink "$p/cwd" 2>/dev/null)
		cwd=${cwd% (deleted)}
		if [ "${cwd#"$dir"/}" != "$cwd" ] || [ "$cwd" = "$dir" ] ||
			{ tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "QE_RUN_MARK=$mark" ||
			{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF "$dir/"; then
			echo "$pid"
		fi
	done
}

# Stop everything a test run started (QE_RUN_MARK, scratch directory DIR),
# whatever state it was left in: first the supervisors (pg_autoctl, Patroni,
# etcd, and every other helper process), which would otherwise start the
# servers again, then the PostgreSQL servers (immediate stop), then whatever
# is left, by SIGKILL.  Returns non-zero, listing them, if any survive.
# qe_stop_marked MARK DIR
qe_stop_marked()
{
	local mark=$1 dir=$2 pid pids comm round pidfile

	for round in 1 2 3 4 5; do
		pids=()
		for pid in $(qe_marked_pids "$mark" "$dir"); do
			comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
			[ "$comm" = postgres ] || [ "$comm" = postmaster ] || pids+=("$pid")
		done
		[ ${#pids[@]} -eq 0 ] && break
		kill -KILL "${pids[@]}" 2>/dev/null
		sleep 0.5
	done
	while IFS= read -r pidfile; do
		qe_as_pg pg_ctl -D "$(dirname "$pidfile")" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
	done < <(find "$dir" -name postmaster.pid 2>/dev/null)
	for round in 1 2 3 4 5 6 7 8 9 10; do
		pids=($(qe_marked_pids "$mark" "$dir"))
		[ ${#pids[@]} -eq 0 ] && return 0
		# a postmaster first: its children end with it
		kill -QUIT "${pids[@]}" 2>/dev/null
		[ "$round" -gt 3 ] && kill -KILL "${pids[@]}" 2>/dev/null
		sleep 0.5
	done
	pids=($(qe_marked_pids "$mark" "$dir"))
	[ ${#pids[@]} -eq 0 ] && return 0
	ps -o pid,user,args -p "$(IFS=,; echo "${pids[*]}")" >&2
	return 1
}

# Copy the source tree SRC (without .git or build products) into DST.  The
# checkout itself is never written to: other people may be working in it,
# and in CI it belongs to root.
qe_copy_tree()
{
	local src=$1 dst=$2

	mkdir -p "$dst"
	tar -C "$src" --exclude=./.git --exclude='*.o' --exclude='*.bc' \
		--exclude='*.so' -cf - . | tar -C "$dst" -xf - ||
		qe_die "could not copy $src to $dst"
}

# Build in DIR (a scratch copy) and install into the PostgreSQL tree.  The
# compiler output is shown; with QE_WERROR=1 any warning fails the build.
qe_build_install()
{
	local dir=$1 copt=() jobs
	local -
	set -o pipefail

	[ "$QE_WERROR" = 1 ] && copt=(COPT=-Werror)
	jobs=$(nproc 2>/dev/null || echo 2)
	qe_log "build: make PG_CONFIG=$PG_CONFIG ${copt[*]} (in $dir)"
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG" clean >/dev/null 2>&1 || true
	if ! make -C "$dir" --no-print-directory -j"$jobs" PG_CONFIG="$PG_CONFIG" \
		"${copt[@]}" 2>&1 | tee "$dir/build.log"; then
		qe_die "build failed (compiler output above)"
	fi
	if grep -q 'warning:' "$dir/build.log"; then
		qe_warn "the build printed compiler warnings (see above)"
	fi
	qe_log "install: make install"
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG" install >/dev/null ||
		qe_die "make install failed"
	qe_log "installed $($PG_CONFIG --pkglibdir)/queue_ext.so and $($PG_CONFIG --sharedir)/extension/queue_ext*"
}

# Is TCP port $1 (on localhost) or the Unix socket for it in socket dir $2 in use?
qe_port_busy()
{
	local port=$1 sockdir=${2:-/var/run/postgresql}

	[ -e "$sockdir/.s.PGSQL.$port" ] && return 0
	[ -e "$sockdir/.s.PGSQL.$port.lock" ] && return 0
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
	return 1
}

# Port of the server running on data directory $1, empty when it is not running.
qe_running_port()
{
	local data=$1

	[ -f "$data/postmaster.pid" ] || return 0
	qe_as_pg pg_ctl -D "$data" status >/dev/null 2>&1 || return 0
	sed -n 4p "$data/postmaster.pid"
}

# initdb DATA as QE_PG_USER: superuser "postgres", UTF8, trust authentication
# for local connections only (these are throwaway or demo clusters).
qe_initdb()
{
	local data=$1

	qe_as_pg initdb -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 \
		--auth=trust >"$data.initdb.log" 2>&1 ||
		{ cat "$data.initdb.log" >&2; qe_die "initdb failed for $data"; }
}

# Settings every queue_ext server needs, written to FILE (included from
# postgresql.conf).  Extra lines may follow as further arguments.
qe_write_conf()
{
	local file=$1
	shift
	{
		echo "# written by queue_ext test/lib/cluster.sh; rewritten on every run"
		echo "shared_preload_libraries = 'queue_ext'	# custom WAL rmgr, shared memory, workers"
		echo "max_prepared_transactions = 10"
		echo "max_worker_processes = 32"
		echo "fsync = on"
		echo "logging_collector = off"
		echo "log_line_prefix = '%m [%p] %q%u@%d '"
		printf '%s\n' "$@"
	} >"$file"
	chown "$QE_PG_USER" "$file"
}

# Start the server on DATA, logging to LOG; on failure print the log and die.
qe_start()
{
	local data=$1 log=$2

	if ! qe_as_pg pg_ctl -D "$data" -l "$log" -w -t 120 start >/dev/null; then
		qe_show_log "$log" 80
		qe_die "the server on $data did not start (log above: $log)"
	fi
}

# Stop the server on DATA if it runs (fast, then immediate).
qe_stop()
{
	local data=$1

	[ -f "$data/postmaster.pid" ] || return 0
	qe_as_pg pg_ctl -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
		qe_as_pg pg_ctl -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
}

qe_show_log()
{
	local log=$1 lines=${2:-200}

	[ -f "$log" ] || return 0
	echo "----- last $lines lines of $log -----"
	tail -n "$lines" "$log"
	echo "----- end of $log -----"
}
