#!/bin/bash
# Settlement runs (branch settle-run): one broadcast consumer of a 4-partition stream, measured
# on a server of the build under test (run it once per build, restarting the server between).
#   BIN=<install>/bin HOST=/tmp/x PORT=5600 bash bench/ab/group_settle_runs.sh
# Prints: seconds for NG (2) groups x 300 transactions of consume(1000) + ack in one backend
# (a DO loop), then WAL and group-log bytes per message for 100 such transactions.
# Needs pgcrypto; fills stream 'pstream' with 300,000 messages of 100 random bytes once.
BIN=${BIN:-/usr/lib/postgresql/15/bin}
P="$BIN/psql -h ${HOST:-/tmp/bench} -p ${PORT:-5495} -U postgres -XAtq -d ${DB:-postgres}"
NG=${NG:-2}
$P -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS pgcrypto" -c "SELECT mq.queue_declare('pstream', 'stream', arguments => '{\"partitions\": 4}')" >/dev/null
if [ "$($P -c "SELECT count(*) FROM mq.read('pstream', 0, 0, 1)")" = 0 ]; then
	for i in $(seq 1 30); do
		$P -c "SELECT count(mq.send('pstream', gen_random_bytes(100))) FROM generate_series(1, 10000)" >/dev/null
	done
fi
$P -c '\timing on' -c "DO \$\$
DECLARE g text;
BEGIN
  FOR k IN 1 .. $NG LOOP
    g := 'ab_' || k || '_' || (random() * 1e9)::int;
    PERFORM mq.group_declare('pstream', g, mode => 'broadcast', start => 'earliest');
    COMMIT;
    FOR i IN 1 .. 300 LOOP
      PERFORM mq.ack('pstream', coalesce(array_agg(msg_id), '{}'), group_name => g, consumer => 'c1')
        FROM mq.consume('pstream', 1000, group_name => g, consumer => 'c1');
      COMMIT;
    END LOOP;
    PERFORM mq.group_delete('pstream', g);
    COMMIT;
  END LOOP;
END \$\$" | grep Time
G=w$RANDOM
$P -c "SELECT mq.group_declare('pstream', '$G', mode => 'broadcast', start => 'earliest')" >/dev/null
L0=$($P -c "SELECT pg_current_wal_insert_lsn()")
for i in $(seq 1 100); do
	$P -c "SELECT mq.ack('pstream', coalesce(array_agg(msg_id), '{}'), group_name => '$G', consumer => 'c1') FROM mq.consume('pstream', 1000, group_name => '$G', consumer => 'c1')" >/dev/null
done
$P -c "SELECT 'WAL B/msg ' || round(pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$L0') / 100000.0, 2),
  'group log B/msg ' || round((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c, mq.cat_group g,
	mq.cat_group_consumer k, mq.cat_queue q
    WHERE q.name = 'pstream' AND g.queue_id = q.id AND g.name = '$G' AND k.group_id = g.id
      AND c.relnamespace = 'mq_storage'::regnamespace AND c.relname LIKE 'g' || q.id || '\_' || k.id || '\_%') / 100000.0, 2)"
$P -c "SELECT mq.group_delete('pstream', '$G')" >/dev/null
