#!/bin/bash
# mgmt_users.sh: answer times of the management API's users and permissions
# paths (issue 41) on a database of many queues, exchanges and roles with grants.
#
#   PSQL="psql -h /tmp/x -p 5571 -d postgres -XAtq" API=http://127.0.0.1:7100 \
#   AUTH=admin:pw bash bench/mgmt_users.sh [QUEUES] [EXCHANGES] [ROLES]
#
# Set-up (once; as a superuser through PSQL): QUEUES queues bq_N, EXCHANGES
# exchanges bx_N, ROLES login roles br_N, each granted consume on every tenth
# queue.  Then 21 calls of each path as AUTH (a superuser), and the median and
# p90 of curl's total time; a PUT of a permission naming 13 objects (replacing
# the role's grants) 11 times.  Figures, not assertions: note the load average
# printed with them (results/*-mgmt-users.md).
set -u
NQ=${1:-1000}; NX=${2:-100}; NR=${3:-20}
: "${PSQL:?PSQL: a psql command line for the database, as a superuser}"
: "${API:?API: the management API, http://HOST:PORT}"
: "${AUTH:?AUTH: user:password of a superuser}"

$PSQL <<SQL
SELECT count(mq.queue_declare('bq_' || i)) FROM generate_series(1, $NQ) i;
SELECT count(mq.exchange_declare('bx_' || i, 'direct')) FROM generate_series(1, $NX) i;
DO \$\$ BEGIN FOR i IN 1..$NR LOOP
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'br_' || i) THEN
		EXECUTE format('CREATE ROLE br_%s LOGIN', i);
	END IF;
END LOOP; END \$\$;
SELECT count(mq.grant('consume', 'queue', 'bq_' || q, ('br_' || r)::regrole))
FROM generate_series(1, $NQ, 10) q, generate_series(1, $NR) r;
SQL

time_path() {
	for i in $(seq 21); do
		curl -s -o /dev/null -w '%{time_total}\n' -u "$AUTH" "$API$1"
	done | sort -n | awk -v p="$1" '{a[NR]=$1} END {printf "%-45s median %6.1f ms  p90 %6.1f ms\n", p, a[11]*1000, a[19]*1000}'
}

uptime
time_path /api/users
time_path /api/permissions
time_path /api/users/without-permissions
time_path /api/permissions/%2F/br_3
time_path '/api/exchanges?page=1&page_size=100'
time_path '/api/queues?page=1&page_size=100&columns=name'
time_path /api/policies
for i in $(seq 11); do
	curl -s -o /dev/null -w '%{time_total}\n' -u "$AUTH" -X PUT \
		-d '{"configure":"^$","write":"^(bq_1|bq_2|bq_3)$","read":"^(bq_1|bq_2|bq_3|bq_4|bq_5|bq_6|bq_7|bq_8|bq_9|bq_10)$"}' \
		"$API/api/permissions/%2F/br_5"
done | sort -n | awk '{a[NR]=$1} END {printf "%-45s median %6.1f ms  p90 %6.1f ms\n", "PUT /api/permissions/%2F/br_5", a[6]*1000, a[10]*1000}'
uptime
