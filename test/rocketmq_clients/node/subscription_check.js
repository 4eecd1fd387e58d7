// Two SimpleConsumers of one group (RMQ_MIXED_GROUP) that subscribe with
// different tag expressions, through mq-rocketmq with the official client.
// RocketMQ requires the consumers of a group to agree; as a RocketMQ 5
// Proxy (a pop receive filters by its own request's expression), each
// receive applies its own consumer's expression and settles for the group
// what that rejects: consumer A (TagA) drains the topic first and gets the
// TagA messages only; the TagB messages its receives passed over are gone
// for the group, so consumer B (TagB) gets none.  The gateway logs the
// disagreement (the test reads its log).  RMQ_ENDPOINT, RMQ_TOPIC,
// RMQ_ACCESS_KEY / RMQ_SECRET_KEY.  Prints "ok NAME" / "not ok NAME: why"
// lines, "checks: DONE" last.  Run by test/t/054_rocketmq_gateway.pl.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const common = { endpoints, namespace: '', sessionCredentials: credentials, logger: quiet };
  const group = process.env.RMQ_MIXED_GROUP;
  const a = new SimpleConsumer({ ...common, consumerGroup: group,
    subscriptions: new Map([[topic, 'TagA']]), awaitDuration: 2000 });
  await a.startup();
  const b = new SimpleConsumer({ ...common, consumerGroup: group,
    subscriptions: new Map([[topic, 'TagB']]), awaitDuration: 2000 });
  await b.startup();
  const producer = new Producer({ ...common, topics: [topic] });
  await producer.startup();
  for (const [tag, name] of [['TagB', 'b1'], ['TagA', 'a1'], ['TagB', 'b2'], ['TagA', 'a2']])
    await producer.send({ topic, tag, body: Buffer.from(name), properties: new Map([['run', run], ['name', name]]) });

  // A drains what the group has: until it has both TagA messages and a
  // receive finds nothing more
  const gotA = [];
  for (let round = 0; round < 100; round++) {
    const views = await a.receive(32, 30000);
    for (const v of views) {
      if (v.properties.get('run') === run) gotA.push(`${v.tag}/${v.properties.get('name')}`);
      await a.ack(v);
    }
    if (views.length === 0 && gotA.length >= 2) break;
  }
  const gotB = [];
  for (let round = 0; round < 2; round++)
    for (const v of await b.receive(32, 30000)) {
      if (v.properties.get('run') === run) gotB.push(`${v.tag}/${v.properties.get('name')}`);
      await b.ack(v);
    }
  check('mixed_subscriptions_own_expression', gotA.sort().join(' ') === 'TagA/a1 TagA/a2',
    `A got ${gotA.join(' ')}`);
  check('mixed_subscriptions_rejected_settled_for_group', gotB.length === 0, `B got ${gotB.join(' ')}`);
  await a.shutdown();
  await b.shutdown();
  await producer.shutdown();
  finish();
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
