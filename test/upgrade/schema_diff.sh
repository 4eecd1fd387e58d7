#!/usr/bin/env bash
# test/upgrade/schema_diff.sh
#	  Compare the queue_ext schema of two databases of one running server:
#
#		test/upgrade/schema_diff.sh FRESH_DB UPGRADED_DB [OUTDIR]
#
#	  Dumps both with schema_objects.sql (psql; PGHOST, PGPORT, PGUSER from
#	  the environment), prints a unified diff (- fresh, + upgraded) and exits
#	  1 if they differ, 0 if they are the same, 2 if a dump failed.  OUTDIR
#	  (default: a temporary directory, removed) keeps the two dumps.
#	  test/t/017_upgrade_from_0_1.pl runs it on a fresh 0.2 database and one
#	  upgraded from 0.1 with ALTER EXTENSION queue_ext UPDATE.
set -uo pipefail

[ $# -ge 2 ] || { echo "usage: $0 FRESH_DB UPGRADED_DB [OUTDIR]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fresh=$1 upgraded=$2
if [ $# -ge 3 ]; then
	out=$3
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

for db in "$fresh" "$upgraded"; do
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$here/schema_objects.sql" >"$out/$db.schema" ||
		{ echo "schema_diff: could not dump the schema of database $db" >&2; exit 2; }
	[ -s "$out/$db.schema" ] || { echo "schema_diff: database $db has no queue_ext schema" >&2; exit 2; }
done
if diff -u --label "fresh ($fresh)" --label "upgraded ($upgraded)" \
	"$out/$fresh.schema" "$out/$upgraded.schema"; then
	echo "schema_diff: $fresh and $upgraded have the same queue_ext schema ($(wc -l <"$out/$fresh.schema") facts)"
	exit 0
fi
echo "schema_diff: the queue_ext schemas of $fresh and $upgraded differ (- fresh, + upgraded)" >&2
exit 1
