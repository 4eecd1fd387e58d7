// A PushConsumer's group options through mq-rocketmq, with the official
// client: the Settings report the group's retry policy (max attempts = the
// group's max_retries + 1, its retry_delays as the backoff) and whether it
// is ordered (FIFO).  On RMQ_RETRY_GROUP (max_retries 2): a message its
// listener always fails is delivered with attempts 1, 2, 3 and then goes
// to %DLQ%<group> (the test reads it there); a listener that takes longer
// than the gateway's --push-invisible-time (RMQ_SLOW_MS) keeps its delivery
// (the gateway renews the lease): delivered once.  On RMQ_FIFO_GROUP
// (ordered, max_retries 2): the client retries a failing message in place
// (attempts 1, 2, 3), forwards it to %DLQ%<group>, and the next messages of
// its message group follow, in order.  RMQ_ENDPOINT, RMQ_TOPIC,
// RMQ_ACCESS_KEY / RMQ_SECRET_KEY.  Prints "ok NAME" / "not ok NAME: why"
// lines, "checks: DONE" last.  Run by test/t/054_rocketmq_gateway.pl.
'use strict';

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

const slowMs = Number(process.env.RMQ_SLOW_MS);

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const common = { endpoints, namespace: '', sessionCredentials: credentials, logger: quiet };
  const seen = new Map();		// "group/name" => [delivery attempts]
  const order = [];				// FIFO successes, in order
  let slowDone = false;
  let done;
  const allDone = new Promise(resolve => { done = resolve; });
  const attempts = key => seen.get(key) || [];
  const progress = () => {
    if (attempts('retry/fails-always').length >= 3 && slowDone && order.length === 2 &&
        attempts('fifo/f1').length >= 3)
      done();
  };
  const note = (key, view) => {
    if (!seen.has(key)) seen.set(key, []);
    seen.get(key).push(view.deliveryAttempt);
  };

  const retry = new PushConsumer({ ...common, consumerGroup: process.env.RMQ_RETRY_GROUP,
    subscriptions: new Map([[topic, '*']]),
    messageListener: {
      async consume(view) {
        if (view.properties.get('run') !== run) return ConsumeResult.SUCCESS;
        const name = view.properties.get('name');
        note(`retry/${name}`, view);
        if (name === 'slow') {
          await new Promise(r => setTimeout(r, slowMs));
          slowDone = true;
        }
        progress();
        return name === 'fails-always' ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
      },
    },
  });
  const fifo = new PushConsumer({ ...common, consumerGroup: process.env.RMQ_FIFO_GROUP,
    subscriptions: new Map([[topic, '*']]),
    messageListener: {
      consume(view) {
        const name = view.properties.get('name');
        if (view.properties.get('run') !== run || !/^f[123]$/.test(name)) return ConsumeResult.SUCCESS;
        note(`fifo/${name}`, view);
        if (name === 'f1') {
          progress();
          return ConsumeResult.FAILURE;
        }
        order.push(name);
        progress();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await retry.startup();
  await fifo.startup();
  const rp = retry.getRetryPolicy();
  check('settings_retry_group', !retry.getPushConsumerSettings().isFifo() && rp && rp.getMaxAttempts() === 3,
    `fifo ${retry.getPushConsumerSettings().isFifo()} max attempts ${rp && rp.getMaxAttempts()}`);
  const fp = fifo.getRetryPolicy();
  check('settings_fifo_group', fifo.getPushConsumerSettings().isFifo() && fp && fp.getMaxAttempts() === 3,
    `fifo ${fifo.getPushConsumerSettings().isFifo()} max attempts ${fp && fp.getMaxAttempts()}`);
  check('settings_backoff', rp && rp.getNextAttemptDelay(1) === 1 && rp.getNextAttemptDelay(5) === 1,
    `delays ${rp && [1, 2, 5].map(a => rp.getNextAttemptDelay(a))}`);

  const producer = new Producer({ ...common, topics: [topic] });
  await producer.startup();
  const props = name => new Map([['run', run], ['name', name]]);
  await producer.send({ topic, body: Buffer.from('fails-always'), properties: props('fails-always') });
  await producer.send({ topic, body: Buffer.from('slow'), properties: props('slow') });
  for (const name of ['f1', 'f2', 'f3'])
    await producer.send({ topic, messageGroup: `G-${run}`, body: Buffer.from(name), properties: props(name) });

  let timer;
  const finished = await Promise.race([
    allDone.then(() => true),
    new Promise(resolve => { timer = setTimeout(() => resolve(false), 300000); }),
  ]);
  clearTimeout(timer);
  check('push_policy_all_consumed', finished, JSON.stringify([...seen]));
  check('retried_up_to_max_attempts', JSON.stringify(attempts('retry/fails-always')) === '[1,2,3]',
    JSON.stringify(attempts('retry/fails-always')));
  check('lease_renewed_for_slow_listener', JSON.stringify(attempts('retry/slow')) === '[1]',
    JSON.stringify(attempts('retry/slow')));
  check('fifo_retried_in_place', JSON.stringify(attempts('fifo/f1')) === '[1,2,3]',
    JSON.stringify(attempts('fifo/f1')));
  check('fifo_order_after_dead_letter', order.join(' ') === 'f2 f3' &&
    JSON.stringify(attempts('fifo/f2')) === '[1]' && JSON.stringify(attempts('fifo/f3')) === '[1]',
    `order ${order.join(' ')} ${JSON.stringify([...seen])}`);
  await retry.shutdown();
  await fifo.shutdown();
  await producer.shutdown();
  finish();
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
