// Subscription filters through mq-rocketmq: a SimpleConsumer of group
// RMQ_TAG_GROUP subscribing with the tag expression "TagA || TagB" and one
// of RMQ_SQL_GROUP with a SQL92 selector get exactly the messages their
// expression matches (the rest is settled for their group, never
// delivered); a malformed selector is ILLEGAL_FILTER_EXPRESSION.  Both
// groups are declared without a filter of their own.  RMQ_ENDPOINT,
// RMQ_TOPIC, RMQ_ACCESS_KEY / RMQ_SECRET_KEY.  Prints "ok NAME" /
// "not ok NAME: why" lines, "checks: DONE" last.  Run by
// test/t/054_rocketmq_gateway.pl.
'use strict';

const { Producer, SimpleConsumer, FilterExpression } = require('rocketmq-client-nodejs');
const { FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

// receive until `want` messages of this run arrived, then a few empty polls more
async function drain(consumer, run, want) {
  const names = [];
  let empty = 0;
  for (let round = 0; round < 100 && (names.length < want || empty < 2); round++) {
    const views = await consumer.receive(16, 30000);
    if (views.length === 0) empty++;
    for (const v of views) {
      if (v.properties.get('run') === run) names.push(v.properties.get('name'));
      await consumer.ack(v);
    }
  }
  return names.sort().join(' ');
}

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const common = { endpoints, namespace: '', sessionCredentials: credentials, logger: quiet, awaitDuration: 2000 };
  const byTag = new SimpleConsumer({ ...common, consumerGroup: process.env.RMQ_TAG_GROUP,
    subscriptions: new Map([[topic, new FilterExpression('TagA || TagB', FilterType.TAG)]]) });
  const bySql = new SimpleConsumer({ ...common, consumerGroup: process.env.RMQ_SQL_GROUP,
    subscriptions: new Map([[topic, new FilterExpression("region = 'eu' AND TAGS IS NOT NULL", FilterType.SQL)]]) });
  await byTag.startup();
  await bySql.startup();
  const producer = new Producer({ ...common, topics: [topic] });
  await producer.startup();
  const msgs = [
    ['a', 'TagA', 'us'], ['b', 'TagB', 'us'], ['c', 'TagC', 'eu'], ['eu-a', 'TagA', 'eu'], ['none', undefined, 'eu'],
  ];
  for (const [name, tag, region] of msgs)
    await producer.send({ topic, tag, body: Buffer.from(name),
      properties: new Map([['run', run], ['name', name], ['region', region]]) });

  const tagGot = await drain(byTag, run, 3);
  check('tag_filter', tagGot === 'a b eu-a', `got ${tagGot}`);
  const sqlGot = await drain(bySql, run, 2);
  check('sql92_filter', sqlGot === 'c eu-a', `got ${sqlGot}`);

  const bad = new SimpleConsumer({ ...common, consumerGroup: process.env.RMQ_SQL_GROUP,
    subscriptions: new Map([[topic, new FilterExpression('region = = 1', FilterType.SQL)]]) });
  await bad.startup();
  try {
    await bad.receive(1, 30000);
    check('bad_selector_refused', false, 'the receive succeeded');
  } catch (e) {
    check('bad_selector_refused', e.code === 40010, `error ${e.code}: ${e.message}`);
  }
  await bad.shutdown();
  await byTag.shutdown();
  await bySql.shutdown();
  await producer.shutdown();
  finish();
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
