// The official RocketMQ 5 Node.js client (rocketmq-client-nodejs, pinned in
// package.json) against mq-rocketmq, unchanged: a producer sends normal,
// FIFO and delay messages with keys, tag and user properties; a
// SimpleConsumer receives them, checks that every property round-trips and
// acks; a message made visible again by changeInvisibleDuration comes back
// with the next delivery attempt; a missing topic is TOPIC_NOT_FOUND; an
// RPC the gateway does not implement answers NOT_IMPLEMENTED and an unknown
// method gRPC's UNIMPLEMENTED (no hang).  Run by test/t/054_rocketmq_gateway.pl.
//
// Environment: RMQ_ENDPOINT (host:port of the gateway), RMQ_TOPIC (a
// stream), RMQ_GROUP (a consumer group of it, with short retry_delays),
// RMQ_ACCESS_KEY / RMQ_SECRET_KEY (optional: signed requests).
// Prints one line per check: "ok NAME" or "not ok NAME: why"; "checks: DONE" last.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const grpc = require('@grpc/grpc-js');
const service = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_grpc_pb');
const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { withTimeout } = require('./common');

const endpoints = process.env.RMQ_ENDPOINT || '127.0.0.1:8081';
const topic = process.env.RMQ_TOPIC || 'rmq_topic';
const group = process.env.RMQ_GROUP || 'rmq_group';
const credentials = process.env.RMQ_ACCESS_KEY
  ? { accessKey: process.env.RMQ_ACCESS_KEY, accessSecret: process.env.RMQ_SECRET_KEY }
  : undefined;
const quiet = { info() {}, warn() {}, debug() {}, error() {} };

let failures = 0;
function check(name, ok, why) {
  if (ok) console.log(`ok ${name}`);
  else {
    failures++;
    console.log(`not ok ${name}: ${why}`);
  }
}

function sameMap(a, b) {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

async function main() {
  const producer = new Producer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet, topics: [topic] });
  await withTimeout(producer.startup(), 60000, 'producer start-up');
  check('producer_start', true);

  const run = `${process.pid}-${Date.now()}`;
  const sent = new Map();	// message id => what was sent
  async function send(name, opts) {
    const props = new Map([['run', run], ['name', name], ['with space', 'v a l'], ['unicode', 'é✓']]);
    const msg = { topic, body: Buffer.from(`body of ${name} ${run}`), properties: props, ...opts };
    const receipt = await producer.send(msg);
    check(`send_${name}`, typeof receipt.messageId === 'string' && receipt.messageId.length > 0,
      `no message id: ${JSON.stringify(receipt)}`);
    sent.set(receipt.messageId, { name, ...msg });
    return receipt.messageId;
  }
  await send('normal', { tag: 'TagA', keys: ['key-1', 'key-2'] });
  await send('fifo1', { tag: 'TagF', keys: ['fk'], messageGroup: 'order-42' });
  await send('fifo2', { tag: 'TagF', messageGroup: 'order-42' });
  await send('delay', { tag: 'TagD', deliveryTimestamp: new Date(Date.now() + 2000) });
  const againId = await send('again', { tag: 'TagR', keys: ['r'] });

  // a missing topic: TOPIC_NOT_FOUND (40402), not a hang
  try {
    await withTimeout(producer.send({ topic: `no_such_topic_${run}`, body: Buffer.from('x') }), 60000, 'send to a missing topic');
    check('topic_not_found', false, 'the send succeeded');
  } catch (e) {
    check('topic_not_found', e.code === 40402, `error ${e.code}: ${e.message}`);
  }

  const consumer = new SimpleConsumer({
    endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration: 3000,
  });
  await withTimeout(consumer.startup(), 60000, 'consumer start-up');
  check('consumer_start', true);

  const got = new Map();		// message id => first MessageView
  const order = [];
  let again = null;
  for (let round = 0; round < 200 && (got.size < sent.size || again === null); round++) {
    const views = await consumer.receive(16, 30000);
    for (const v of views) {
      if (v.properties.get('run') !== run) {
        await consumer.ack(v);
        continue;
      }
      if (v.messageId === againId && got.has(againId)) {
        // its second delivery, after changeInvisibleDuration made it visible
        again = v;
        await consumer.ack(v);
        continue;
      }
      check(`not_duplicated_${v.properties.get('name')}`, !got.has(v.messageId), 'delivered twice');
      got.set(v.messageId, v);
      order.push(v.properties.get('name'));
      if (v.messageId === againId) {
        // not acked: visible again after 1 s (plus the group's retry delay)
        await consumer.changeInvisibleDuration(v, 1000);
        check('change_invisible_duration', true);
      } else
        await consumer.ack(v);
    }
  }
  check('received_all', got.size === sent.size, `got ${got.size} of ${sent.size}`);
  for (const [id, m] of sent) {
    const v = got.get(id);
    if (!v) continue;
    const why = [];
    if (v.body.toString() !== m.body.toString()) why.push(`body ${v.body}`);
    if (v.topic !== topic) why.push(`topic ${v.topic}`);
    if ((v.tag ?? '') !== (m.tag ?? '')) why.push(`tag ${v.tag}`);
    if (JSON.stringify(v.keys) !== JSON.stringify(m.keys ?? [])) why.push(`keys ${JSON.stringify(v.keys)}`);
    if ((v.messageGroup || '') !== (m.messageGroup || '')) why.push(`group ${v.messageGroup}`);
    if (!sameMap(v.properties, m.properties)) why.push(`properties ${JSON.stringify([...v.properties])}`);
    if (m.deliveryTimestamp && (!v.deliveryTimestamp || v.deliveryTimestamp.getTime() !== m.deliveryTimestamp.getTime()))
      why.push(`deliveryTimestamp ${v.deliveryTimestamp}`);
    if (v.deliveryAttempt !== 1) why.push(`deliveryAttempt ${v.deliveryAttempt}`);
    if (!v.receiptHandle) why.push('no receipt handle');
    if (v.corrupted) why.push('body digest mismatch');
    if (!(v.bornTimestamp instanceof Date)) why.push('no born timestamp');
    check(`round_trip_${m.name}`, why.length === 0, why.join(', '));
  }
  check('fifo_order', order.indexOf('fifo1') >= 0 && order.indexOf('fifo1') < order.indexOf('fifo2'),
    `order ${order.join(' ')}`);
  check('redelivered_after_invisible_time', again !== null && again.deliveryAttempt === 2,
    again ? `deliveryAttempt ${again.deliveryAttempt}` : 'never came back');

  // acking an acked message's receipt again: INVALID_RECEIPT_HANDLE (40013)
  try {
    await consumer.ack(got.get(againId));
    check('ack_stale_receipt', false, 'the ack succeeded');
  } catch (e) {
    check('ack_stale_receipt', e.code === 40013, `error ${e.code}: ${e.message}`);
  }

  // RPCs through the client's own generated stub
  const stub = new service.MessagingServiceClient(endpoints, grpc.credentials.createInsecure());
  const deadline = () => new Date(Date.now() + 30000);

  // ForwardMessageToDeadLetterQueue: to %DLQ%<group> (the test reads it there)
  const dlqId = await send('dlq', { tag: 'TagX', keys: ['dead'] });
  let dlqView = null;
  for (let round = 0; round < 100 && !dlqView; round++)
    for (const v of await consumer.receive(16, 30000))
      if (v.messageId === dlqId) dlqView = v;
      else await consumer.ack(v);
  check('received_dlq_message', dlqView !== null, 'never received');
  for (const [name, expect] of [['forward_to_dlq', defs.Code.OK], ['forward_to_dlq_again', defs.Code.INVALID_RECEIPT_HANDLE]]) {
    if (!dlqView) break;
    await new Promise(resolve => {
      const q = new pb.ForwardMessageToDeadLetterQueueRequest()
        .setGroup(new defs.Resource().setName(group)).setTopic(new defs.Resource().setName(topic))
        .setReceiptHandle(dlqView.receiptHandle).setMessageId(dlqView.messageId)
        .setDeliveryAttempt(1).setMaxDeliveryAttempts(17);
      stub.forwardMessageToDeadLetterQueue(q, signedMetadata(), { deadline: deadline() }, (err, res) => {
        check(name, !err && res.getStatus().getCode() === expect,
          err ? `gRPC error ${err.code} ${err.details}` : `status ${res.getStatus().getCode()}`);
        resolve();
      });
    });
  }
  function signedMetadata() {
    const md = new grpc.Metadata();
    md.set('x-mq-client-id', 'gateway-checks');
    md.set('x-mq-protocol', 'v2');
    if (credentials) {
      const { sign, getRequestDateTime } = require('rocketmq-client-nodejs/dist/util');
      const dt = getRequestDateTime();
      md.set('x-mq-date-time', dt);
      md.set('authorization', `MQv2-HMAC-SHA1 Credential=${credentials.accessKey}, SignedHeaders=x-mq-date-time, Signature=${sign(credentials.accessSecret, dt)}`);
    }
    return md;
  }
  const resource = new defs.Resource().setName(topic);
  await new Promise(resolve => {
    const q = new pb.QueryOffsetRequest().setMessageQueue(new defs.MessageQueue().setTopic(resource));
    stub.queryOffset(q, signedMetadata(), { deadline: deadline() }, (err, res) => {
      check('not_implemented_status', !err && res.getStatus().getCode() === defs.Code.NOT_IMPLEMENTED,
        err ? `gRPC error ${err.code} ${err.details}` : `status ${res.getStatus().getCode()}`);
      resolve();
    });
  });
  await new Promise(resolve => {
    stub.makeUnaryRequest('/apache.rocketmq.v2.MessagingService/NoSuchMethod', x => x, x => x,
      Buffer.alloc(0), signedMetadata(), { deadline: deadline() }, (err) => {
        check('unknown_method_unimplemented', err && err.code === grpc.status.UNIMPLEMENTED,
          err ? `gRPC error ${err.code} ${err.details}` : 'it succeeded');
        resolve();
      });
  });
  await new Promise(resolve => {
    const q = new pb.QueryRouteRequest().setTopic(new defs.Resource().setName(`no_such_topic_${run}`));
    stub.queryRoute(q, signedMetadata(), { deadline: deadline() }, (err, res) => {
      check('query_route_topic_not_found', !err && res.getStatus().getCode() === defs.Code.TOPIC_NOT_FOUND,
        err ? `gRPC error ${err.code} ${err.details}` : `status ${res.getStatus().getCode()}`);
      resolve();
    });
  });
  stub.close();

  await consumer.shutdown();
  await producer.shutdown();
  console.log('checks: DONE');
  process.exit(failures ? 1 : 0);
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
