// One timed workload of the official RocketMQ 5 Node.js client
// (rocketmq-client-nodejs, pinned in test/rocketmq_clients/node) against
// mq-rocketmq; run by bench/rocketmq_bench.py, which sets up the topic and
// group and prints medians beside pika against mq-amqp and the SQL path.
//
//   node rocketmq_bench.js MODE N [INFLIGHT]
//     send    N messages of 100 random bytes, INFLIGHT (1: each send awaited
//             before the next) at a time; producer.send, one message a call
//     recv    receive (32 at a time, invisible 30 s) and ack until N arrived;
//             the acks of a batch go out together (as an AMQP consumer's);
//             with RMQ_WARMUP > 1, that many received and acked untimed first
//     noop    N Heartbeat calls through the client's own RPC layer (signed
//             metadata, its gRPC channel): the gateway answers them without
//             SQL, so this is the client's and the gRPC path's per-call floor
//     body FILE  write a gRPC-framed SendMessageRequest (one 100-byte message
//             to RMQ_TOPIC) to FILE, for h2load, a C HTTP/2 client: the
//             gateway's own rate without the Node client
//
// Environment: RMQ_ENDPOINT (host:port), RMQ_TOPIC, RMQ_GROUP, RMQ_TIMEOUT_MS (the
// client's requestTimeout, 30000: its default 3 s resends a slow send), RMQ_ACCESS_KEY /
// RMQ_SECRET_KEY (optional), NODE_PATH (where rocketmq-client-nodejs is).
// RMQ_WARMUP (1): calls made, untimed, INFLIGHT at a time, before the clock
// starts (send, noop; recv: messages):
// V8 compiles the client's hot paths over its first thousands of calls, so
// that a short run's CPU per call is mostly the compiler's.
// Prints one JSON line: {"mode", "n", "seconds", "rate", "p50_ms", "p99_ms",
// "client_cpu_us" (this process's CPU per message over the timed part), and
// where that CPU went, per message: "user_us", "sys_us", "main_us" (the main
// thread's, /proc; the rest is V8's compiler and GC threads and libuv's),
// "syscr", "syscw" (read and write system calls), "vcsw" (voluntary context
// switches), "rpcs" (the client's RPCs by name over the timed part, counted at
// its RpcClientManager: a send that costs more than one SendMessage shows)}.
// The clock starts after the client's start-up (route, settings) and the
// warm-up calls, so that only the steady state is timed.
// RMQ_CPU_PROFILE=FILE: V8's CPU profile of the main thread over the timed
// part only (send, noop), written to FILE (.cpuprofile; bench/cpuprofile_top.js
// sums it up).
'use strict';

const crypto = require('crypto');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const endpoints = process.env.RMQ_ENDPOINT || '127.0.0.1:8081';
const topic = process.env.RMQ_TOPIC || 'bench_rmq';
const group = process.env.RMQ_GROUP || 'bench_rmq_group';
const credentials = process.env.RMQ_ACCESS_KEY
  ? { accessKey: process.env.RMQ_ACCESS_KEY, accessSecret: process.env.RMQ_SECRET_KEY }
  : undefined;
const quiet = { info() {}, warn() {}, debug() {}, error() {} };
// the client's deadline of a call (its default is 3 s, after which it sends
// again: a duplicate); RMQ_TIMEOUT_MS
const requestTimeout = parseInt(process.env.RMQ_TIMEOUT_MS || '30000', 10);

const [mode, nArg, inflightArg] = process.argv.slice(2);
const N = parseInt(nArg || '1000', 10);
const INFLIGHT = parseInt(inflightArg || '1', 10);
const WARMUP = parseInt(process.env.RMQ_WARMUP || '1', 10);
const fs = require('fs');

function pct(xs, p) {
  if (xs.length === 0) return null;
  xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
}

// the client's own CPU over the timed part (start-up excluded), microseconds,
// and where it went
const TICK_US = 1e6 / 100;	// USER_HZ: /proc's clock ticks
let cpu0 = null;
let usage0 = null;
let rpcs = {};
function mainTicks() {
  const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return parseInt(f[11], 10) + parseInt(f[12], 10);	// utime, stime (fields 14, 15)
}
function io() {
  const t = fs.readFileSync('/proc/self/io', 'utf8');
  return { syscr: +t.match(/syscr: (\d+)/)[1], syscw: +t.match(/syscw: (\d+)/)[1] };
}
function startCpu() {
  rpcs = {};
  usage0 = { ru: process.resourceUsage(), main: mainTicks(), io: io() };
  cpu0 = process.cpuUsage();
}
function startClock() {
  startCpu();
  return process.hrtime.bigint();
}

// count the client's RPCs by name (from the moment the clock starts)
function countRpcs(client) {
  const m = client.rpcClientManager;
  for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(m))) {
    if (name === 'constructor' || typeof m[name] !== 'function') continue;
    const f = m[name].bind(m);
    m[name] = (...args) => {
      rpcs[name] = (rpcs[name] || 0) + 1;
      return f(...args);
    };
  }
}

function report(seconds, lat) {
  const cpu = process.cpuUsage(cpu0);
  const ru = process.resourceUsage();
  const main = mainTicks();
  const io1 = io();
  console.log(JSON.stringify({
    mode, n: N, inflight: INFLIGHT, seconds, rate: N / seconds,
    p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), client_cpu_us: (cpu.user + cpu.system) / N,
    user_us: cpu.user / N, sys_us: cpu.system / N, main_us: (main - usage0.main) * TICK_US / N,
    syscr: (io1.syscr - usage0.io.syscr) / N, syscw: (io1.syscw - usage0.io.syscw) / N,
    vcsw: (ru.voluntaryContextSwitches - usage0.ru.voluntaryContextSwitches) / N, warmup: WARMUP, rpcs,
  }));
}

// n calls of call(), INFLIGHT at a time; their latencies (ms)
async function calls(n, call) {
  const lat = [];
  let next = 0;
  async function worker() {
    while (next < n) {
      next++;
      const t = process.hrtime.bigint();
      await call();
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }
  await Promise.all(Array.from({ length: Math.min(INFLIGHT, n) }, worker));
  return lat;
}

// a promise of the answer of an inspector session's method
function post(session, method, params) {
  return new Promise((resolve, reject) => session.post(method, params || {},
    (e, r) => (e ? reject(e) : resolve(r))));
}

// WARMUP calls untimed, then N calls of call(), timed and reported
async function timedCalls(call) {
  await calls(WARMUP, call);
  let session = null;
  if (process.env.RMQ_CPU_PROFILE) {
    session = new (require('inspector').Session)();
    session.connect();
    await post(session, 'Profiler.enable');
    await post(session, 'Profiler.start');
  }
  const t0 = startClock();
  const lat = await calls(N, call);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (session) {
    const { profile } = await post(session, 'Profiler.stop');
    fs.writeFileSync(process.env.RMQ_CPU_PROFILE, JSON.stringify(profile));
    session.disconnect();
  }
  report(seconds, lat);
}

async function send() {
  const producer = new Producer({ endpoints, sessionCredentials: credentials, logger: quiet, topics: [topic], requestTimeout });
  await producer.startup();
  countRpcs(producer);
  await timedCalls(() => producer.send({ topic, body: crypto.randomBytes(100) }));
  await producer.shutdown();
}

async function recv() {
  const consumer = new SimpleConsumer({
    endpoints, sessionCredentials: credentials, logger: quiet, consumerGroup: group, requestTimeout,
    subscriptions: new Map([[topic, '*']]), awaitDuration: 2000,
  });
  await consumer.startup();
  countRpcs(consumer);
  // RMQ_WARMUP > 1: that many messages received and acked untimed first
  for (let warm = 0, empty = 0; WARMUP > 1 && warm < WARMUP;) {
    const msgs = await consumer.receive(Math.min(32, WARMUP - warm), 30000);
    if (msgs.length === 0 && ++empty > 10) throw new Error(`warm-up: received ${warm} of ${WARMUP}`);
    await Promise.all(msgs.map(m => consumer.ack(m)));
    warm += msgs.length;
  }
  const lat = [];
  let got = 0;
  let t0 = null;
  let empty = 0;
  while (got < N) {
    const t = process.hrtime.bigint();
    const msgs = await consumer.receive(Math.min(32, N - got), 30000);
    if (msgs.length === 0) {
      if (++empty > 10) throw new Error(`received ${got} of ${N}`);
      continue;
    }
    if (t0 === null) {
      t0 = t;
      startCpu();
    }
    await Promise.all(msgs.map(m => consumer.ack(m)));
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    got += msgs.length;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (got !== N) throw new Error(`received ${got}, expected ${N}`);
  report(seconds, lat);
  await consumer.shutdown();
}

async function noop() {
  const producer = new Producer({ endpoints, sessionCredentials: credentials, logger: quiet, topics: [topic], requestTimeout });
  await producer.startup();
  const ep = producer.endpoints;
  const request = producer.wrapHeartbeatRequest();
  countRpcs(producer);
  await timedCalls(() => producer.rpcClientManager.heartbeat(ep, request, requestTimeout));
  await producer.shutdown();
}

// body FILE: a gRPC-framed SendMessageRequest of one 100-byte message to
// RMQ_TOPIC, for h2load (rocketmq_bench.py's "h2load" workloads)
async function body() {
  const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
  const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
  const ts = require('google-protobuf/google/protobuf/timestamp_pb');
  const sp = new defs.SystemProperties().setMessageId('01B0A2C3D4E5F60000000000000000')
    .setMessageType(defs.MessageType.NORMAL).setBodyEncoding(defs.Encoding.IDENTITY)
    .setBornHost('bench').setBornTimestamp(new ts.Timestamp().setSeconds(Math.floor(Date.now() / 1000)))
    .setQueueId(0);
  const msg = new defs.Message().setTopic(new defs.Resource().setName(topic)).setSystemProperties(sp)
    .setBody(crypto.randomBytes(100));
  const bytes = new pb.SendMessageRequest().setMessagesList([msg]).serializeBinary();
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  Buffer.from(bytes).copy(frame, 5);
  require('fs').writeFileSync(process.argv[3], frame);
}

const modes = { send, recv, noop, body };
if (!modes[mode]) {
  console.error('usage: node rocketmq_bench.js send|recv|noop N [INFLIGHT] | body FILE');
  process.exit(2);
}
modes[mode]().then(() => process.exit(0), e => {
  console.error(`rocketmq_bench ${mode}: ${e.stack || e}`);
  process.exit(1);
});
