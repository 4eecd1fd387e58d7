#!/bin/bash
# mgmt_cold.sh: a new session's first mq._queue_stats() (issue 41), two builds of
# queue_ext side by side on one cluster and database (bench/mgmt_api.py --setup's
# 1,000 queues), rounds A B B A ...  Run as root (it restarts the cluster as postgres).
#
#   BEFORE_BIN=/path/a/bin AFTER_BIN=/path/b/bin BENCH_DIR=/tmp/x BENCH_PORT=6800 \
#   API=http://127.0.0.1:6802 GW_PID=<mq-amqp pid> bash bench/mgmt_cold.sh [ROUNDS] [NPSQL] [NAPI]
#
# Each round restarts the cluster with that build's bin directory (the two must hold
# builds of the same extension version), runs one warm-up session (it loads every
# queue's state into shared memory), then:
#  psql:  NPSQL new sessions (role BENCH_USER, default app), each three calls of
#         SELECT count(*) FROM mq._queue_stats(): wall ms of each | the backend's CPU ms
#         of each (/proc/PID/schedstat)
#  api:   with API set, NAPI times: 11 s idle (mq-amqp closes a pooled session after
#         10 s), GET /api/queues/%2F (cold) and at once again (warm): wall s, the pooled
#         backend's CPU ms (cold: from its fork, so connection and parse included) and,
#         with GW_PID, mq-amqp's
# Figures, not assertions: summarise the medians yourself (results/*-mgmt-cold.md).
set -u
R=${1:-2}; NP=${2:-10}; NA=${3:-5}
D=${BENCH_DIR:-/tmp/bench}; P=${BENCH_PORT:-5495}; U=${BENCH_USER:-app}; DB=${BENCH_DB:-bench}
PSQL="psql -h $D -p $P -d $DB -XAtq"
cpu() { awk '{printf "%.1f", $1/1e6}' /proc/$1/schedstat 2>/dev/null || echo NA; }

cold_sessions() {
	for i in $(seq "$1"); do
		$PSQL -U "$U" <<'SQL' | awk '/^Time:/ {w[nw++]=$2} /^cpu/ {c[nc++]=$2} END {printf "%s %s %s | %.1f %.1f %.1f\n", w[0], w[1], w[2], (c[1]-c[0])/1e6, (c[2]-c[1])/1e6, (c[3]-c[2])/1e6}'
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
\! awk '{print "cpu", $1}' /proc/$BPID/schedstat
\timing on
SELECT count(*) FROM mq._queue_stats();
\timing off
\! awk '{print "cpu", $1}' /proc/$BPID/schedstat
\timing on
SELECT count(*) FROM mq._queue_stats();
\timing off
\! awk '{print "cpu", $1}' /proc/$BPID/schedstat
\timing on
SELECT count(*) FROM mq._queue_stats();
\timing off
\! awk '{print "cpu", $1}' /proc/$BPID/schedstat
SQL
	done
}

order=""
for r in $(seq "$R"); do
	if [ $((r % 2)) = 1 ]; then order="$order before after"; else order="$order after before"; fi
done
for v in $order; do
	if [ "$v" = before ]; then B=$BEFORE_BIN; else B=$AFTER_BIN; fi
	# stop, then start: pg_ctl restart would run the postgres of postmaster.opts again
	su postgres -c "$B/pg_ctl -D $D/data -l $D/server.log -w stop -m fast" >/dev/null
	su postgres -c "$B/pg_ctl -D $D/data -l $D/server.log -w start" >/dev/null
	echo "# $v ($B) $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
	cold_sessions 1 | sed 's/^/warmup /'
	cold_sessions "$NP" | sed 's/^/psql /'
	if [ -n "${API:-}" ]; then
		for i in $(seq "$NA"); do
			sleep 11
			g0=$([ -n "${GW_PID:-}" ] && cpu "$GW_PID" || echo 0)
			c=$(curl -s -o /dev/null -w "%{http_code} %{time_total}" -u "$U:${BENCH_PASSWORD:-secret}" "$API/api/queues/%2F")
			g1=$([ -n "${GW_PID:-}" ] && cpu "$GW_PID" || echo 0)
			bp=$($PSQL -U postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'mq-amqp' AND usename = '$U' LIMIT 1")
			b1=$(cpu "$bp")
			w=$(curl -s -o /dev/null -w "%{http_code} %{time_total}" -u "$U:${BENCH_PASSWORD:-secret}" "$API/api/queues/%2F")
			b2=$(cpu "$bp")
			g2=$([ -n "${GW_PID:-}" ] && cpu "$GW_PID" || echo 0)
			echo "api cold $c warm $w load $(cut -d' ' -f1 /proc/loadavg) backend_cpu_ms cold $b1 warm $(echo "$b2 - $b1" | bc) gw_cpu_ms cold $(echo "$g1 - $g0" | bc) warm $(echo "$g2 - $g1" | bc)"
		done
	fi
	echo "# end $v load $(cut -d' ' -f1-3 /proc/loadavg)"
done
