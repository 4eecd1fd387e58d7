// The official client's PushConsumer against mq-rocketmq: QueryAssignment,
// long-polling ReceiveMessage, acks, and a message its listener fails once
// coming back (ChangeInvisibleDuration by the client's retry policy) with
// delivery attempt 2.  RMQ_ENDPOINT, RMQ_TOPIC, RMQ_PUSH_GROUP (a group
// declared with short retry_delays), RMQ_ACCESS_KEY / RMQ_SECRET_KEY.
// Prints "ok NAME" / "not ok NAME: why" lines, "checks: DONE" last.
// Run by test/t/054_rocketmq_gateway.pl.
'use strict';

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

const group = process.env.RMQ_PUSH_GROUP;

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const seen = new Map();		// name => [delivery attempts]
  const succeeded = new Set();
  let done;
  const allDone = new Promise(resolve => { done = resolve; });
  const consumer = new PushConsumer({
    endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: group, subscriptions: new Map([[topic, '*']]),
    messageListener: {
      consume(view) {
        if (view.properties.get('run') !== run) return ConsumeResult.SUCCESS;
        const name = view.properties.get('name');
        if (!seen.has(name)) seen.set(name, []);
        seen.get(name).push(view.deliveryAttempt);
        if (name === 'fails-once' && view.deliveryAttempt === 1) return ConsumeResult.FAILURE;
        succeeded.add(name);
        if (succeeded.size === 3) done();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();
  check('push_consumer_start', true);

  const producer = new Producer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet, topics: [topic] });
  await producer.startup();
  for (const name of ['p1', 'p2', 'fails-once'])
    await producer.send({ topic, tag: 'TagP', body: Buffer.from(name), properties: new Map([['run', run], ['name', name]]) });

  let timer;
  const finished = await Promise.race([
    allDone.then(() => true),
    new Promise(resolve => { timer = setTimeout(() => resolve(false), 240000); }),
  ]);
  clearTimeout(timer);
  check('push_all_consumed', finished, `succeeded: ${[...succeeded].join(' ')}`);
  check('push_once_each', ['p1', 'p2'].every(n => JSON.stringify(seen.get(n)) === '[1]'),
    JSON.stringify([...seen]));
  check('push_retried_after_failure', JSON.stringify(seen.get('fails-once')) === '[1,2]',
    JSON.stringify(seen.get('fails-once')));
  await consumer.shutdown();
  await producer.shutdown();
  finish();
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
