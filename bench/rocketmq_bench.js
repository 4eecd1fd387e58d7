// One timed workload of the official RocketMQ 5 Node.js client
// (rocketmq-client-nodejs, pinned in test/rocketmq_clients/node) against
// mq-rocketmq; run by bench/rocketmq_bench.py, which sets up the topic and
// group and prints medians beside pika against mq-amqp and the SQL path.
//
//   node rocketmq_bench.js MODE N [INFLIGHT]
//     send    N messages of 100 random bytes, INFLIGHT (1: each send awaited
//             before the next) at a time; producer.send, one message a call
//     recv    receive (32 at a time, invisible 30 s) and ack until N arrived;
//             the acks of a batch go out together (as an AMQP consumer's)
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
// Prints one JSON line: {"mode", "n", "seconds", "rate", "p50_ms", "p99_ms",
// "client_cpu_us" (this process's CPU per message over the timed part)}.
// The clock starts after the client's start-up (route, settings) and one
// warm-up call, so that only the steady state is timed.
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

function pct(xs, p) {
  if (xs.length === 0) return null;
  xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
}

// the client's own CPU over the timed part (start-up excluded), microseconds
let cpu0 = null;
function startClock() {
  cpu0 = process.cpuUsage();
  return process.hrtime.bigint();
}

function report(seconds, lat) {
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({
    mode, n: N, inflight: INFLIGHT, seconds, rate: N / seconds,
    p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), client_cpu_us: (cpu.user + cpu.system) / N,
  }));
}

// N calls of call(), INFLIGHT at a time, timed and reported
async function timedCalls(call) {
  const lat = [];
  let next = 0;
  async function worker() {
    while (next < N) {
      next++;
      const t = process.hrtime.bigint();
      await call();
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }
  const t0 = startClock();
  await Promise.all(Array.from({ length: INFLIGHT }, worker));
  report(Number(process.hrtime.bigint() - t0) / 1e9, lat);
}

async function send() {
  const producer = new Producer({ endpoints, sessionCredentials: credentials, logger: quiet, topics: [topic], requestTimeout });
  await producer.startup();
  await producer.send({ topic, body: crypto.randomBytes(100) });	// warm-up
  await timedCalls(() => producer.send({ topic, body: crypto.randomBytes(100) }));
  await producer.shutdown();
}

async function recv() {
  const consumer = new SimpleConsumer({
    endpoints, sessionCredentials: credentials, logger: quiet, consumerGroup: group, requestTimeout,
    subscriptions: new Map([[topic, '*']]), awaitDuration: 2000,
  });
  await consumer.startup();
  const lat = [];
  let got = 0;
  let t0 = null;
  let empty = 0;
  while (got < N) {
    const t = process.hrtime.bigint();
    const msgs = await consumer.receive(32, 30000);
    if (msgs.length === 0) {
      if (++empty > 10) throw new Error(`received ${got} of ${N}`);
      continue;
    }
    if (t0 === null) {
      t0 = t;
      cpu0 = process.cpuUsage();
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
  await producer.rpcClientManager.heartbeat(ep, request, requestTimeout);
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
