#!/bin/bash
# Tag hash in stream entries (issue 12): what it costs a publish, and what
# it saves a consumer group with a tag filter.
#
#	1. WAL per published message, 100-byte bodies, one partition: untagged
#	   and tagged ("TagB"), N_WAL messages in one statement, median of REPS.
#	2. Consume throughput of a group whose tag filter ('TagA') matches 1 %
#	   of a stream of N_STREAM messages (the rest 'TagB'): the time to drain
#	   it with consume(100) + ack per call, median of REPS (a new group each
#	   time, start => earliest).
#
# Runs against any server with queue_ext loaded (PGHOST, PGPORT, PGDATABASE
# as for psql); run it once per build to compare (see bench/README.md).
#	N_WAL=20000 N_STREAM=100000 REPS=3 bash bench/group_tag_filter.sh
set -euo pipefail
N_WAL=${N_WAL:-20000}
N_STREAM=${N_STREAM:-100000}
REPS=${REPS:-3}
PSQL=(psql -X -q -A -t -v ON_ERROR_STOP=1)
# a 100-byte body that does not compress
BODY="md5(i::text) || md5((i * 7)::text) || md5((i * 13)::text) || substr(md5((i * 17)::text), 1, 4)"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS queue_ext" >/dev/null
echo "# group_tag_filter: $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# entry log columns: $("${PSQL[@]}" -c "SELECT pg_get_functiondef('mq._lane_create'::regproc) ~ 'tag_hash'" | sed 's/t/with tag_hash/; s/f/without tag_hash/')"

# 1. WAL per message
for tagged in untagged tagged; do
	tag=NULL
	[ $tagged = tagged ] && tag="'TagB'"
	for r in $(seq "$REPS"); do
		"${PSQL[@]}" -c "SELECT mq.queue_declare('bench_wal', 'stream')" >/dev/null
		"${PSQL[@]}" -c "SELECT count(mq.send('bench_wal', $BODY, tag => $tag)) FROM generate_series(1, 100) i" >/dev/null
		"${PSQL[@]}" <<EOF
CHECKPOINT;
SELECT pg_current_wal_insert_lsn() AS l0 \gset
SELECT count(mq.send('bench_wal', $BODY, tag => $tag)) FROM generate_series(1, $N_WAL) i \g /dev/null
SELECT round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0') / $N_WAL, 1);
EOF
		"${PSQL[@]}" -c "SELECT mq.queue_delete('bench_wal')" >/dev/null
	done | tee -a "${WAL_RAW:-/dev/null}" | median | sed "s/^/wal_bytes_per_msg $tagged: /"
done

# 2. drain a group whose tag filter matches 1 %
"${PSQL[@]}" -c "SELECT mq.queue_declare('bench_tag', 'stream')" >/dev/null
"${PSQL[@]}" -c "SELECT count(mq.send('bench_tag', $BODY,
	tag => CASE WHEN i % 100 = 0 THEN 'TagA' ELSE 'TagB' END))
	FROM generate_series(1, $N_STREAM) i" >/dev/null
for r in $(seq "$REPS"); do
	"${PSQL[@]}" <<EOF
SELECT mq.group_declare('bench_tag', 'g$r', start => 'earliest', filter_type => 'tag', filter => 'TagA') \g /dev/null
CREATE OR REPLACE PROCEDURE bench_drain(g text, INOUT total int DEFAULT 0) LANGUAGE plpgsql AS \$\$
DECLARE ids bigint[];
BEGIN
	LOOP
		SELECT array_agg(msg_id) INTO ids FROM mq.consume('bench_tag', 100, group_name => g);
		EXIT WHEN ids IS NULL;
		PERFORM mq.ack('bench_tag', ids, group_name => g);
		total := total + cardinality(ids);
		COMMIT;
	END LOOP;
END \$\$;
SELECT clock_timestamp() AS t0 \gset
CALL bench_drain('g$r') \gset
SELECT :total AS got \gset
SELECT CASE WHEN :got = $N_STREAM / 100 THEN '' ELSE 'WRONG COUNT ' || :got || ' ' END ||
	   round(extract(epoch FROM clock_timestamp() - :'t0')::numeric * 1000, 1);
EOF
done | median | sed "s/^/drain_ms 1% match of $N_STREAM: /"
"${PSQL[@]}" -c "DROP PROCEDURE bench_drain" >/dev/null
"${PSQL[@]}" -c "SELECT mq.queue_delete('bench_tag')" >/dev/null
