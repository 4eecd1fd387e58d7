// Sends and acks that arrive together, which mq-rocketmq groups into one
// statement (docs/rocketmq.md, SendMessage and AckMessage): 56 sends of the
// Node client's producer and, at the same time, 8 SendMessages to a topic
// that does not exist (through the client's own stub: the producer would
// stop at the route): the 56 are OK and each is received exactly once, the
// 8 TOPIC_NOT_FOUND, whatever batch they shared; then one of the 56 is acked
// alone and all 56 are acked at once: exactly that one is
// INVALID_RECEIPT_HANDLE, the other 55 OK.  RMQ_ENDPOINT, RMQ_TOPIC,
// RMQ_BATCH_GROUP (a group of RMQ_TOPIC), RMQ_ACCESS_KEY / RMQ_SECRET_KEY.
// Prints "ok NAME" / "not ok NAME: why" lines, "checks: DONE" last.  Run by
// test/t/054_rocketmq_gateway.pl.
'use strict';

const grpc = require('@grpc/grpc-js');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const service = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_grpc_pb');
const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { sign, getRequestDateTime } = require('rocketmq-client-nodejs/dist/util');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

function metadata() {
  const md = new grpc.Metadata();
  md.set('x-mq-client-id', 'batch-check');
  md.set('x-mq-protocol', 'v2');
  const dt = getRequestDateTime();
  md.set('x-mq-date-time', dt);
  if (credentials)
    md.set('authorization', `MQv2-HMAC-SHA1 Credential=${credentials.accessKey}, SignedHeaders=x-mq-date-time, Signature=${sign(credentials.accessSecret, dt)}`);
  return md;
}

// a SendMessage of one message to a topic that does not exist: its entry's status code
function sendMissing(stub, i) {
  const sp = new defs.SystemProperties().setMessageId(`01BATCHCHECK${i}`).setMessageType(defs.MessageType.NORMAL)
    .setBodyEncoding(defs.Encoding.IDENTITY);
  const msg = new defs.Message().setTopic(new defs.Resource().setName(`no_such_topic_batch_${i}`))
    .setSystemProperties(sp).setBody(Buffer.from('x'));
  return new Promise(resolve => {
    stub.sendMessage(new pb.SendMessageRequest().setMessagesList([ msg ]), metadata(),
      { deadline: new Date(Date.now() + 60000) },
      (err, res) => resolve(err ? `grpc-error-${err.code}` : res.getEntriesList().map(e => e.getStatus().getCode()).join(',')));
  });
}

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const producer = new Producer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    topics: [topic], requestTimeout: 60000 });
  const consumer = new SimpleConsumer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: process.env.RMQ_BATCH_GROUP, subscriptions: new Map([[topic, '*']]), awaitDuration: 2000,
    requestTimeout: 60000 });
  await producer.startup();
  await consumer.startup();
  const stub = new service.MessagingServiceClient(endpoints, grpc.credentials.createInsecure());

  const good = Array.from({ length: 56 }, (_, i) => producer.send({ topic, tag: 'TagBatch',
    body: Buffer.from(`batch ${i} ${run}`), properties: new Map([['run', run], ['i', String(i)]]) }));
  const bad = Array.from({ length: 8 }, (_, i) => sendMissing(stub, i));
  const sent = await Promise.allSettled(good);
  const refused = await Promise.all(bad);
  const failed = sent.filter(r => r.status !== 'fulfilled');
  check('batch_sends_ok', failed.length === 0,
    `${failed.length} of 56 sends failed: ${failed.map(r => r.reason && r.reason.message).slice(0, 3).join('; ')}`);
  check('batch_sends_missing_topic', refused.every(c => c === '40402'), `statuses ${refused.join(' ')}`);

  // each of the 56 exactly once
  const views = [];
  const seen = new Map();
  for (let round = 0; round < 100 && views.length < 56; round++) {
    for (const v of await consumer.receive(32, 60000)) {
      if (v.properties.get('run') !== run)
        await consumer.ack(v);
      else {
        seen.set(v.properties.get('i'), (seen.get(v.properties.get('i')) || 0) + 1);
        views.push(v);
      }
    }
  }
  check('batch_sends_received_once', seen.size === 56 && [...seen.values()].every(n => n === 1),
    `${seen.size} distinct of 56, ${views.length} deliveries`);

  // one acked alone, then all at once: that one is refused, only that one
  if (views.length > 0) {
    await consumer.ack(views[0]);
    const acks = await Promise.allSettled(views.map(v => consumer.ack(v)));
    const codes = acks.map(a => (a.status === 'fulfilled' ? 'ok' : String(a.reason && a.reason.code)));
    check('batch_acks', codes[0] === '40013' && codes.slice(1).every(c => c === 'ok'),
      `the acked one: ${codes[0]}, the others: ${[...new Set(codes.slice(1))].join(',')}`);
  } else
    check('batch_acks', false, 'nothing received');
  stub.close();
  await consumer.shutdown();
  await producer.shutdown();
}

main().then(finish, e => {
  check('batch_check_ran', false, e.stack || String(e));
  finish();
});
