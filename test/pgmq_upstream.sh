#!/bin/bash
# test/pgmq_upstream.sh: run pgmq's own regression and isolation tests against
# queue_ext_pgmq (docs/pgmq.md, "pgmq's own tests").
#
#	test/pgmq_upstream.sh PGMQ_EXTENSION_DIR [TEST...]
#
# PGMQ_EXTENSION_DIR is pgmq's pgmq-extension/ directory (with test/sql,
# test/expected, test/specs), e.g. from a checkout of github.com/pgmq/pgmq.
# TEST names limit the run (base, fifo_tests, transaction_tests, ...).
# Run as root (the server runs as the postgres user), after queue_ext and
# queue_ext_pgmq are installed into the PostgreSQL that PG_CONFIG names
# (pg_partman must be installed there too: base and transaction_tests create
# it).  CI cannot fetch pgmq, so this is run by hand.
#
# What it does, as pgmq's Makefile does (make installcheck): copies pgmq's
# tests to a scratch directory, changes only the CREATE/DROP EXTENSION lines
# (pgmq -> queue_ext_pgmq CASCADE, in the .sql/.spec and the expected .out),
# starts a throwaway cluster with queue_ext preloaded, creates the database
# contrib_regression with queue_ext in it (so that CASCADE adds no NOTICE),
# runs pg_regress and pg_isolation_regress with --use-existing and prints
# the diffs.  Exit status 0 when every output is identical.
#
# Environment: PG_CONFIG (default: the system's), PGMQ_UP_PORT (first port to
# try, default 5620), PGMQ_UP_KEEP=1 keeps the scratch directory.
set -u
SRC=${1:?usage: $0 PGMQ_EXTENSION_DIR [TEST...]}
shift
SRC=$(cd "$SRC" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/lib/cluster.sh source-path=SCRIPTDIR/..
. "$HERE/lib/cluster.sh"
qe_require_root
qe_ensure_pg_user

WORK=$(mktemp -d /tmp/pgmq-upstream.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/in/sql" "$WORK/in/expected" "$WORK/in/specs" "$WORK/sock"

# pgmq -> queue_ext_pgmq in CREATE/DROP EXTENSION lines only
rename_ext()
{
	sed -E \
		-e 's/^(([[:space:]]*)CREATE EXTENSION( IF NOT EXISTS)?) pgmq;/\1 queue_ext_pgmq CASCADE;/' \
		-e 's/^(([[:space:]]*)DROP EXTENSION( IF EXISTS)?) pgmq( CASCADE)?;/\1 queue_ext_pgmq CASCADE;/' \
		"$1" >"$2"
}

REGRESS=() ISOLATION=()
for f in "$SRC"/test/sql/*.sql; do
	t=$(basename "$f" .sql)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$t"; then continue; fi
	rename_ext "$f" "$WORK/in/sql/$t.sql"
	REGRESS+=("$t")
done
for f in "$SRC"/test/specs/*.spec; do
	[ -e "$f" ] || continue
	t=$(basename "$f" .spec)
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$t"; then continue; fi
	rename_ext "$f" "$WORK/in/specs/$t.spec"
	ISOLATION+=("$t")
done
for f in "$SRC"/test/expected/*.out; do
	rename_ext "$f" "$WORK/in/expected/$(basename "$f")"
done
chown -R "$QE_PG_USER" "$WORK"

PORT=${PGMQ_UP_PORT:-5620}
while qe_port_busy "$PORT" "$WORK/sock" || qe_port_busy "$PORT" /var/run/postgresql; do
	PORT=$((PORT + 1))
done
qe_initdb "$WORK/data"
qe_write_conf "$WORK/data/queue_ext_test.conf" "port = $PORT" \
	"listen_addresses = ''" "unix_socket_directories = '$WORK/sock'"
echo "include = 'queue_ext_test.conf'" >>"$WORK/data/postgresql.conf"
qe_start "$WORK/data" "$WORK/server.log"
trap 'qe_stop "$WORK/data"; [ "${PGMQ_UP_KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

qe_as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/sock" -p "$PORT" -d postgres \
	-c 'CREATE DATABASE contrib_regression' ||
	qe_die "CREATE DATABASE failed"
qe_as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/sock" -p "$PORT" -d contrib_regression \
	-c 'CREATE EXTENSION queue_ext' ||
	qe_die "CREATE EXTENSION queue_ext failed"

PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")/..
rc=0
common=(--inputdir="$WORK/in" --bindir="$PG_BINDIR" --host="$WORK/sock"
	--port="$PORT" --use-existing --dbname=contrib_regression)
if [ ${#REGRESS[@]} -gt 0 ]; then
	(cd "$WORK" && qe_as_pg "$PGXS_DIR/test/regress/pg_regress" "${common[@]}" \
		--outputdir="$WORK/regress" "${REGRESS[@]}") || rc=1
	[ -f "$WORK/regress/regression.diffs" ] && cat "$WORK/regress/regression.diffs"
fi
if [ ${#ISOLATION[@]} -gt 0 ]; then
	(cd "$WORK" && qe_as_pg "$PGXS_DIR/test/isolation/pg_isolation_regress" "${common[@]}" \
		--outputdir="$WORK/isolation" "${ISOLATION[@]}") || rc=1
	[ -f "$WORK/isolation/regression.diffs" ] && cat "$WORK/isolation/regression.diffs"
fi
[ "${PGMQ_UP_KEEP:-0}" = 1 ] && echo "scratch directory kept: $WORK"
exit $rc
