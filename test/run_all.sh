#!/usr/bin/env bash
# test/run_all.sh
#	  Build, install and test queue_ext in one command, as root, on Debian 12:
#
#		sudo bash test/run_all.sh [--no-tap] [--keep]
#
#	  1. installs the Debian packages that are missing (apt-get, non-interactive)
#	  2. copies the tree (without .git) to a scratch directory owned by the
#	     "postgres" user, builds there with -Werror and runs make install
#	  3. starts a throwaway cluster (initdb in the scratch directory, port 5499
#	     or the next free one, shared_preload_libraries = 'queue_ext')
#	  4. smoke test: CREATE EXTENSION queue_ext in a fresh database
#	  5. pg_regress (test/regress_schedule), then the isolation tester
#	     (test/isolation_schedule), with make installcheck
#	  6. TAP tests (test/t/*.pl) with prove; they start their own clusters
#	  7. stops everything it started and prints a summary; exit status is 0
#	     only if every phase that ran passed
#
#	  Options:
#		--no-tap   skip the TAP tests (quick run while developing)
#		--quick    skip the long TAP tests (those with a line "# qe: long",
#		           e.g. the HA fault matrix, test/t/02[1-3]_ha_*.pl)
#		--keep     keep the scratch directory even when everything passed
#	  Environment:
#		QE_TEST_PORT        first port to try for the test cluster (default 5499)
#		QE_WERROR=0         build without -Werror
#		QE_SKIP_DEPS=1      never call apt-get
#		QE_STRICT=0         a test listed in a schedule whose file is missing, or a
#		                    test file listed in no schedule, is only a warning
#		                    (default: either fails the run)
#		QE_PHASE_TIMEOUT    seconds per test phase before it is killed (default 3000:
#		                    a guard against a hang, not a bound on speed; the TAP
#		                    phase took 1570 s with two CPU-bound jobs beside it,
#		                    and CI allows 90 minutes in all)
#		PROVE_FLAGS         extra flags for prove (e.g. --verbose)
#		QE_TAP_JOBS         TAP scripts run at once (default 4; each uses its own
#		                    ports and directories; the HA ones mostly wait)
#		QE_TAP_TESTS        run only these TAP scripts (e.g. "test/t/040_amqp_gateway.pl")
#		QE_NO_REGRESS=1     skip pg_regress and the isolation tests (with QE_TAP_TESTS)
#		QE_HA_PORT, QE_HA_FAST  for the HA tests (test/lib/QueueExtHA.pm)
#		PG_MAJOR, PG_CONFIG see test/lib/cluster.sh
#	  The TAP tests get QE_UPGRADE_SOURCES, a directory with a git archive of
#	  each version in test/upgrade/versions (the scratch copy has no .git),
#	  for the upgrade test 017.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib/cluster.sh source-path=SCRIPTDIR/..
. "$ROOT/test/lib/cluster.sh"

RUN_TAP=1
QUICK=0
KEEP=${QE_KEEP_WORKDIR:-0}
for arg in "$@"; do
	case $arg in
		--no-tap) RUN_TAP=0 ;;
		--quick) QUICK=1 ;;
		--keep) KEEP=1 ;;
		-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) qe_die "unknown option $arg (try --help)" ;;
	esac
done

PORT=${QE_TEST_PORT:-5499}
PHASE_TIMEOUT=${QE_PHASE_TIMEOUT:-3000}
T_START=$SECONDS
WORK=""
DATA=""
SERVER_LOG=""
FAILED=0
SUMMARY=()
WARNINGS=()

# ---------------------------------------------------------------------------
# cleanup: stop every server this run started, then drop the scratch dir
# ---------------------------------------------------------------------------
# shellcheck disable=SC2317  # (runs from the EXIT trap)
cleanup()
{
	local rc=$? left

	trap - EXIT INT TERM
	if [ -n "$WORK" ]; then
		if [ -d "$WORK" ]; then
			[ -n "$DATA" ] && qe_stop "$DATA"
			# HA clusters (test/ha/cluster.sh) left behind: their pg_autoctl
			# keepers would restart the servers stopped below
			for d in "$WORK"/tmp_check/ha_*; do
				[ -d "$d/monitor" ] && QE_HA_DIR=$d PG_CONFIG="$PG_CONFIG" \
					bash "$WORK/test/ha/cluster.sh" down >/dev/null 2>&1
			done
		fi
		# whatever a killed or crashed test left running: supervisors
		# (Patroni, etcd, pg_autoctl) first, then the servers they watch;
		# found by their mark even if the scratch directory is gone
		left=$(qe_marked_pids "$QE_RUN_MARK" "$WORK" | wc -l)
		[ "$left" -gt 0 ] && qe_warn "stopping $left leftover process(es) of this run"
		if ! qe_stop_marked "$QE_RUN_MARK" "$WORK"; then
			qe_warn "processes of this run are still running (listed above)"
			[ "$rc" -eq 0 ] && rc=1
		fi
		if [ ! -d "$WORK" ]; then
			qe_warn "the scratch directory $WORK was removed during the run, by something else"
		elif [ "$KEEP" = 1 ] || [ "$FAILED" -ne 0 ] || [ "$rc" -ne 0 ]; then
			echo "scratch directory kept for inspection: $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# record PHASE RESULT SECONDS [NOTE]
record()
{
	SUMMARY+=("$(printf '  %-10s %-5s %5ss  %s' "$1" "$2" "$3" "${4:-}")")
	[ "$2" = FAIL ] && FAILED=1
	return 0
}

# Value of a variable as the Makefile computes it (REGRESS, ISOLATION, ...)
# shellcheck disable=SC2016  # ($($*) is for make, not the shell)
make_var()
{
	make -s --no-print-directory -C "$WORK" PG_CONFIG="$PG_CONFIG" \
		--eval='qe-print-%: ; @echo $($*)' "qe-print-$1" 2>/dev/null
}

# Keep the tests of a schedule whose input file exists, in FILTERED; warn
# about the others.  filter_existing PHASE DIR EXT test...
filter_existing()
{
	local phase=$1 dir=$2 ext=$3 t
	shift 3
	FILTERED=""
	for t in "$@"; do
		if [ -f "$WORK/$dir/$t.$ext" ]; then
			FILTERED="${FILTERED:+$FILTERED }$t"
		else
			WARNINGS+=("$phase: '$t' is listed but $dir/$t.$ext does not exist: skipped")
			qe_warn "$phase: '$t' is listed but $dir/$t.$ext does not exist: skipped"
		fi
	done
}

# Test files that no schedule lists would never run: warn about each.
# check_listed PHASE DIR EXT listed-test...
check_listed()
{
	local phase=$1 dir=$2 ext=$3 f t
	shift 3
	for f in "$WORK/$dir"/*."$ext"; do
		[ -e "$f" ] || continue
		t=$(basename "$f" ".$ext")
		case " $* " in
			*" $t "*) ;;
			*)
				WARNINGS+=("$phase: $dir/$t.$ext is not listed in its schedule: never run")
				qe_warn "$phase: $dir/$t.$ext is not listed in its schedule: never run" ;;
		esac
	done
}

# After a failed suite: show the output of tests that have no expected file
# yet (pg_regress only says "diff command failed" for them).
# show_unexpected EXPECTED_DIR RESULTS_DIR test...
show_unexpected()
{
	local exp=$1 res=$2 t
	shift 2
	for t in "$@"; do
		if [ ! -f "$WORK/$exp/$t.out" ] && [ -f "$WORK/$res/$t.out" ]; then
			echo "----- $exp/$t.out is missing; the test produced $res/$t.out: -----"
			cat "$WORK/$res/$t.out"
			echo "----- end of $res/$t.out -----"
		fi
	done
}

# run a make installcheck phase as the postgres user against the test cluster
# pg_make PHASE make-args...
pg_make()
{
	local phase=$1 ha_env=()
	shift
	# the HA tests' settings (QueueExtHA.pm), when given
	[ -n "${QE_HA_PORT:-}" ] && ha_env+=(QE_HA_PORT="$QE_HA_PORT")
	[ -n "${QE_HA_FAST:-}" ] && ha_env+=(QE_HA_FAST="$QE_HA_FAST")
	# In the background, waited for: a signal (Ctrl-C, SIGTERM) then runs
	# its trap at once, and the cleanup stops the phase (timeout puts the
	# phase in a process group of its own, which a Ctrl-C does not reach),
	# where a foreground command would first run to its end.
	qe_as_pg PGHOST="$WORK/sock" PGPORT="$PORT" PGUSER=postgres "${ha_env[@]}" \
		PROVE_FLAGS="${PROVE_FLAGS:-}" QE_UPGRADE_SOURCES="$WORK/upgrade_sources" \
		timeout --kill-after=30 "$PHASE_TIMEOUT" \
		make -C "$WORK" --no-print-directory PG_CONFIG="$PG_CONFIG" "$@" &
	wait $!
	local rc=$?
	[ $rc -eq 124 ] && qe_warn "$phase: killed after ${PHASE_TIMEOUT}s (QE_PHASE_TIMEOUT)"
	return $rc
}

# Print the summary and exit: 0 only if no phase failed.
finish()
{
	local w

	echo
	echo "SUMMARY (PostgreSQL $PG_MAJOR, $((SECONDS - T_START))s total)"
	printf '%s\n' "${SUMMARY[@]}"
	for w in "${WARNINGS[@]}"; do
		echo "  warning: $w"
	done
	if [ "$FAILED" -ne 0 ]; then
		echo "RESULT: FAILED"
		exit 1
	fi
	echo "RESULT: OK"
	exit 0
}

show_file()
{
	[ -s "$1" ] || return 0
	echo "----- $1 -----"
	cat "$1"
	echo "----- end of $1 -----"
}

# After a failed TAP phase: name, in the summary (the end of the output, which
# is what survives when the output is cut), each script that failed a check
# or never reached its plan, with its first failed checks.
tap_failures()
{
	local f name bad
	for f in "$WORK"/tmp_check/log/regress_log_*; do
		[ -f "$f" ] || continue
		name=${f##*/regress_log_}
		bad=$(grep -E '^(\[[^]]*\]\([^)]*\) )?not ok ' "$f" | grep -v '# TODO' |
			sed -E 's/^\[[^]]*\]\([^)]*\) //' | head -3)
		if [ -n "$bad" ]; then
			while IFS= read -r line; do
				SUMMARY+=("    $name: $line")
			done <<<"$bad"
		elif ! grep -qE '^(\[[^]]*\]\([^)]*\) )?1\.\.[0-9]+' "$f"; then
			SUMMARY+=("    $name: ended before its plan (died, or killed by the phase timeout)")
		fi
	done
}

# ---------------------------------------------------------------------------
# 1-2: packages, scratch copy, build, install
# ---------------------------------------------------------------------------
qe_require_root
qe_install_deps
qe_ensure_pg_user

WORK=$(mktemp -d /tmp/queue_ext-test.XXXXXX)
chmod 755 "$WORK"
# every process this run starts carries this mark (qe_as_pg), so that
# cleanup finds them all, whatever started them
QE_RUN_MARK=$(basename "$WORK")
qe_copy_tree "$ROOT" "$WORK"
# the sources of the released versions, for the upgrade test (the copy has
# no .git, and the checkout may not be readable by the test user)
mkdir -p "$WORK/upgrade_sources"
while read -r ver commit; do
	case $ver in ''|'#'*) continue ;; esac
	git -c safe.directory='*' -C "$ROOT" archive --format=tar \
		-o "$WORK/upgrade_sources/queue_ext-$ver.tar" "$commit" 2>/dev/null ||
		qe_warn "no git history for queue_ext $ver ($commit): the upgrade test will be skipped"
done <"$ROOT/test/upgrade/versions"

t0=$SECONDS
if ( qe_build_install "$WORK" ); then
	record build PASS $((SECONDS - t0)) "$([ "$QE_WERROR" = 1 ] && echo '-Werror')"
else
	record build FAIL $((SECONDS - t0))
	finish
fi
chown -R "$QE_PG_USER" "$WORK"

# ---------------------------------------------------------------------------
# 3: throwaway cluster
# ---------------------------------------------------------------------------
mkdir -p "$WORK/sock" && chown "$QE_PG_USER" "$WORK/sock"
while qe_port_busy "$PORT" "$WORK/sock" || qe_port_busy "$PORT" /var/run/postgresql ||
	[ "$PORT" = 5432 ] || [ "$PORT" = 5470 ]; do
	PORT=$((PORT + 1))
done
DATA=$WORK/data
SERVER_LOG=$WORK/server.log
qe_log "test cluster: initdb $DATA, port $PORT, socket $WORK/sock"
t0=$SECONDS
qe_initdb "$DATA"
qe_write_conf "$DATA/queue_ext_test.conf" \
	"port = $PORT" \
	"listen_addresses = ''" \
	"unix_socket_directories = '$WORK/sock'" \
	"max_connections = 100"
echo "include = 'queue_ext_test.conf'" >>"$DATA/postgresql.conf"
if ( qe_start "$DATA" "$SERVER_LOG" ); then
	record cluster PASS $((SECONDS - t0)) "port $PORT"
else
	record cluster FAIL $((SECONDS - t0)) "server did not start with shared_preload_libraries = 'queue_ext'"
	finish
fi

# ---------------------------------------------------------------------------
# 4: smoke test
# ---------------------------------------------------------------------------
t0=$SECONDS
qe_log "smoke: CREATE EXTENSION queue_ext"
if qe_as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/sock" -p "$PORT" -U postgres -d postgres <<'SQL'
CREATE DATABASE queue_ext_smoke;
\c queue_ext_smoke
SET client_min_messages = warning;
CREATE EXTENSION queue_ext;
SELECT 'shared_preload_libraries = ' || current_setting('shared_preload_libraries') AS setting,
       'queue_ext ' || extversion AS installed
  FROM pg_extension WHERE extname = 'queue_ext';
SQL
then
	record smoke PASS $((SECONDS - t0)) "CREATE EXTENSION queue_ext"
else
	record smoke FAIL $((SECONDS - t0)) "CREATE EXTENSION queue_ext failed"
fi

# ---------------------------------------------------------------------------
# 5: pg_regress and isolation tester (make installcheck, one suite at a time)
# ---------------------------------------------------------------------------
# shellcheck disable=SC2046
filter_existing regress sql sql $(make_var REGRESS)
REGRESS_LIST=$FILTERED
# shellcheck disable=SC2046
check_listed regress sql sql $(make_var REGRESS)
# shellcheck disable=SC2046
filter_existing isolation test/isolation/specs spec $(make_var ISOLATION)
ISOLATION_LIST=$FILTERED
# shellcheck disable=SC2046
check_listed isolation test/isolation/specs spec $(make_var ISOLATION)

[ "${QE_NO_REGRESS:-0}" = 1 ] && REGRESS_LIST="" && ISOLATION_LIST=""
t0=$SECONDS
if [ -z "$REGRESS_LIST" ]; then
	qe_log "regress: no tests listed in test/regress_schedule: skipped"
	record regress SKIP 0 "test/regress_schedule is empty"
else
	qe_log "regress: $REGRESS_LIST"
	if pg_make regress installcheck REGRESS="$REGRESS_LIST" ISOLATION= TAP_TESTS=; then
		record regress PASS $((SECONDS - t0)) "$(wc -w <<<"$REGRESS_LIST") tests"
	else
		show_file "$WORK/regression.diffs"
		# shellcheck disable=SC2086
		show_unexpected expected results $REGRESS_LIST
		record regress FAIL $((SECONDS - t0)) "see regression.diffs above"
	fi
fi

t0=$SECONDS
if [ -z "$ISOLATION_LIST" ]; then
	qe_log "isolation: no specs listed in test/isolation_schedule: skipped"
	record isolation SKIP 0 "test/isolation_schedule is empty"
else
	qe_log "isolation: $ISOLATION_LIST"
	if pg_make isolation installcheck REGRESS= ISOLATION="$ISOLATION_LIST" TAP_TESTS=; then
		record isolation PASS $((SECONDS - t0)) "$(wc -w <<<"$ISOLATION_LIST") specs"
	else
		show_file "$WORK/output_iso/regression.diffs"
		# shellcheck disable=SC2086
		show_unexpected test/isolation/expected output_iso/results $ISOLATION_LIST
		record isolation FAIL $((SECONDS - t0)) "see output_iso/regression.diffs above"
	fi
fi

if [ ${#WARNINGS[@]} -gt 0 ]; then
	if [ "${QE_STRICT:-1}" = 1 ]; then
		record schedules FAIL 0 "${#WARNINGS[@]} test(s) listed but missing, or present but not listed"
	else
		record schedules SKIP 0 "QE_STRICT=0: ${#WARNINGS[@]} schedule problem(s) only warned about"
	fi
fi

# The server log tells about crashes and assertion failures the diffs only hint at.
if grep -qE 'terminated by signal|TRAP:|PANIC:' "$SERVER_LOG"; then
	record server FAIL 0 "a backend crashed or panicked (server log below)"
fi
qe_stop "$DATA"
[ "$FAILED" -ne 0 ] && qe_show_log "$SERVER_LOG" 200

# ---------------------------------------------------------------------------
# 6: TAP tests (each starts its own clusters through PostgreSQL::Test::Cluster)
# ---------------------------------------------------------------------------
t0=$SECONDS
TAP_LIST=${QE_TAP_TESTS:-$(make_var PROVE_TESTS)}
TAP_NOTE=""
if [ "$QUICK" = 1 ]; then
	# --quick: leave out the tests marked "# qe: long"
	quick_list=""
	for t in $TAP_LIST; do
		if grep -q '^# qe: long' "$WORK/$t"; then
			TAP_NOTE="${TAP_NOTE:+$TAP_NOTE }$(basename "$t" .pl)"
		else
			quick_list="${quick_list:+$quick_list }$t"
		fi
	done
	TAP_LIST=$quick_list
	[ -n "$TAP_NOTE" ] && TAP_NOTE="--quick skipped: $TAP_NOTE"
fi
if [ "$RUN_TAP" = 0 ]; then
	record tap SKIP 0 "--no-tap"
elif [ -z "$TAP_LIST" ]; then
	qe_log "tap: no test/t/*.pl: skipped"
	record tap SKIP 0 "no test/t/*.pl"
else
	# the long ones (HA clusters, "# qe: long") first, then the slow ones
	# ("# qe: slow"), so that the short ones fill the time around them
	long_list="" slow_list="" short_list=""
	for t in $TAP_LIST; do
		if grep -q '^# qe: long' "$WORK/$t"; then
			long_list="$long_list $t"
		elif grep -q '^# qe: slow' "$WORK/$t"; then
			slow_list="$slow_list $t"
		else
			short_list="$short_list $t"
		fi
	done
	TAP_LIST=$(echo $long_list $slow_list $short_list)
	qe_log "tap (${QE_TAP_JOBS:-4} at a time): $TAP_LIST"
	if pg_make tap installcheck REGRESS= ISOLATION= PROVE_TESTS="$TAP_LIST" \
		PROVE_FLAGS="--timer -j${QE_TAP_JOBS:-4} ${PROVE_FLAGS:-}"; then
		record tap PASS $((SECONDS - t0)) "$(wc -w <<<"$TAP_LIST") scripts${TAP_NOTE:+ ($TAP_NOTE)}"
	else
		# prove does not say which script hung or died mid-way: show every log
		for f in "$WORK"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && qe_show_log "$f" 100
		done
		record tap FAIL $((SECONDS - t0)) "logs in tmp_check/log"
		tap_failures
	fi
	# figures the HA tests measured (QueueExtHA::figure)
	show_file "$WORK/tmp_check/ha_results.txt"
fi

# ---------------------------------------------------------------------------
# 7: summary
# ---------------------------------------------------------------------------
finish
