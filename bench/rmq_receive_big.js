// One timed receive of large messages through mq-rocketmq with the official
// RocketMQ 5 Node.js client (rocketmq-client-nodejs, pinned in
// test/rocketmq_clients/node); run by bench/rmq_receive_big.sh, which
// declares the topic and group and publishes the messages in SQL first.
//
//   node rmq_receive_big.js N GATEWAY_PID PGDATA
//     receive (up to 32 a call, invisible 60 s) until N messages arrived,
//     timed; then ack them (not timed)
//
// Environment: RMQ_ENDPOINT (host:port), RMQ_TOPIC, RMQ_GROUP, NODE_PATH.
// Prints one JSON line: {"n", "bytes", "calls", "seconds" (wall time of the
// receives), "gw_cpu_s" (the gateway's CPU, user + system, over them),
// "pg_cpu_s" (the cluster's: its postmaster's children), "client_cpu_s"}.
'use strict';

const fs = require('fs');
const { SimpleConsumer } = require('rocketmq-client-nodejs');

const endpoints = process.env.RMQ_ENDPOINT || '127.0.0.1:8081';
const topic = process.env.RMQ_TOPIC;
const group = process.env.RMQ_GROUP;
const quiet = { info() {}, warn() {}, debug() {}, error() {} };
const [nArg, gwPid, pgdata] = process.argv.slice(2);
const N = parseInt(nArg, 10);
const TICKS = 100;	// USER_HZ

// utime + stime of /proc/PID/stat, seconds; [ppid, cpu]
function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return [parseInt(f[1], 10), (parseInt(f[11], 10) + parseInt(f[12], 10)) / TICKS];
  } catch (e) {
    return null;
  }
}

// the CPU of every child of the postmaster, by pid
function clusterCpu() {
  const pm = parseInt(fs.readFileSync(`${pgdata}/postmaster.pid`, 'utf8').split('\n')[0], 10);
  const out = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(d);
    if (st && st[0] === pm) out.set(d, st[1]);
  }
  return out;
}

function cpuDelta(a, b) {
  let t = 0;
  for (const [pid, c] of b) t += c - (a.get(pid) ?? 0);
  return t;
}

async function main() {
  const c = new SimpleConsumer({ endpoints, namespace: '', consumerGroup: group, logger: quiet,
    subscriptions: new Map([[topic, '*']]), awaitDuration: 2000, requestTimeout: 120000 });
  await c.startup();
  const views = [];
  let calls = 0;
  const pg0 = clusterCpu();
  const gw0 = procStat(gwPid)[1];
  const me0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  while (views.length < N && calls < 100) {
    calls++;
    views.push(...await c.receive(32, 60000));
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const gw = procStat(gwPid)[1] - gw0;
  const pg = cpuDelta(pg0, clusterCpu());
  const me = process.cpuUsage(me0);
  let bytes = 0;
  for (const v of views) {
    bytes += v.body.length;
    if (v.corrupted) throw new Error(`message ${v.messageId}: body digest mismatch`);
    await c.ack(v);
  }
  await c.shutdown();
  console.log(JSON.stringify({ n: views.length, bytes, calls, seconds,
    gw_cpu_s: gw, pg_cpu_s: pg, client_cpu_s: (me.user + me.system) / 1e6 }));
  if (views.length !== N) process.exit(1);
}

main().catch(e => { console.error(e); process.exit(1); });
