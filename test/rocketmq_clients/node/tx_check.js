// Transactional messages through mq-rocketmq with the official client: a
// half message committed by its transaction reaches the consumer group
// (RMQ_TX_GROUP), one rolled back never does; rolling back a committed
// transaction, or ending an unknown one, is INVALID_TRANSACTION_ID; an
// orphaned half is resolved by the producer's checker, which the gateway
// asks through Telemetry (RecoverOrphanedTransactionCommand); a checker that
// takes longer than the gateway's check interval (--transaction-check 2) is
// asked once, and its answer is taken (no INVALID_TRANSACTION_ID for a
// second answer).  RMQ_ENDPOINT, RMQ_TOPIC,
// RMQ_ACCESS_KEY / RMQ_SECRET_KEY.  Prints "ok NAME" / "not ok NAME: why"
// lines, "checks: DONE" last.  Run by test/t/054_rocketmq_gateway.pl.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const { endpoints, topic, credentials, quiet, check, finish } = require('./common');

async function main() {
  const run = `${process.pid}-${Date.now()}`;
  const common = { endpoints, namespace: '', sessionCredentials: credentials, logger: quiet };
  const consumer = new SimpleConsumer({ ...common, consumerGroup: process.env.RMQ_TX_GROUP,
    subscriptions: new Map([[topic, '*']]), awaitDuration: 2000 });
  await consumer.startup();
  // the check-back of an orphaned half (no EndTransaction): the gateway asks
  // through Telemetry, this checker answers by the message's name
  const checked = [];
  // the client's errors (a failed EndTransaction of a check-back among them)
  const errors = [];
  const logger = { ...quiet, error(...args) { errors.push(args.join(' ')); quiet.error(...args); } };
  const producer = new Producer({ ...common, logger, topics: [topic],
    checker: { async check(view) {
      const name = view.properties.get('name');
      checked.push(`${name}:${view.body.toString()}`);
      // a slow checker: three check intervals of the gateway
      if (name === 'orphan-slow') await new Promise(r => setTimeout(r, 7000));
      return name.startsWith('orphan-commit') || name === 'orphan-slow'
        ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
    } } });
  await producer.startup();

  const props = name => new Map([['run', run], ['name', name]]);
  const tx1 = producer.beginTransaction();
  const r1 = await producer.send({ topic, tag: 'TagT', keys: ['tx-1'], body: Buffer.from('commit-me'), properties: props('commit-me') }, tx1);
  check('transaction_send', typeof r1.transactionId === 'string' && r1.transactionId !== '', `receipt ${JSON.stringify(r1)}`);
  const tx2 = producer.beginTransaction();
  await producer.send({ topic, tag: 'TagT', body: Buffer.from('rollback-me'), properties: props('rollback-me') }, tx2);
  await tx2.rollback();
  check('transaction_rollback', true);
  await tx1.commit();
  check('transaction_commit', true);
  // orphans: sent, never ended by the client
  await producer.send({ topic, body: Buffer.from('orphan-commit'), properties: props('orphan-commit') }, producer.beginTransaction());
  await producer.send({ topic, body: Buffer.from('orphan-rollback'), properties: props('orphan-rollback') }, producer.beginTransaction());
  await producer.send({ topic, body: Buffer.from('orphan-slow'), properties: props('orphan-slow') }, producer.beginTransaction());

  const got = [];
  let empty = 0;
  for (let round = 0; round < 100 && (got.length < 3 || empty < 2); round++) {
    const views = await consumer.receive(16, 30000);
    if (views.length === 0) empty++;
    for (const v of views) {
      if (v.properties.get('run') === run) {
        got.push(v.properties.get('name'));
        if (v.properties.get('name') === 'commit-me')
          check('transaction_round_trip', v.tag === 'TagT' && JSON.stringify(v.keys) === '["tx-1"]' &&
            v.body.toString() === 'commit-me' && v.messageId === r1.messageId,
            `tag ${v.tag} keys ${JSON.stringify(v.keys)} body ${v.body} id ${v.messageId}`);
      }
      await consumer.ack(v);
    }
  }
  check('transaction_committed_only', got.sort().join(' ') === 'commit-me orphan-commit orphan-slow', `got ${got.join(' ')}`);
  // the rollback's check-back may still be on its way: wait for it (bounded by the loop above's time)
  for (let i = 0; i < 300 && !checked.some(c => c.startsWith('orphan-rollback')); i++)
    await new Promise(r => setTimeout(r, 100));
  check('transaction_check_back', checked.includes('orphan-commit:orphan-commit') &&
    checked.includes('orphan-rollback:orphan-rollback') && !checked.some(c => c.startsWith('commit-me')),
    `checked ${checked.join(' ')}`);
  // the slow checker was asked once (the gateway remembers what it asked),
  // and no answer of a check-back failed
  check('transaction_slow_checker_asked_once', checked.filter(c => c.startsWith('orphan-slow')).length === 1,
    `checked ${checked.join(' ')}`);
  check('transaction_check_back_answers_taken', !errors.some(e => /checking the transaction/.test(e)),
    errors.join('; '));
  // committing again is harmless (queue_ext's end_half is idempotent); a
  // rollback of a committed transaction is refused
  try {
    await producer.endTransaction(r1.endpoints, { topic }, r1.messageId, r1.transactionId, TransactionResolution.ROLLBACK);
    check('transaction_rollback_after_commit_refused', false, 'it succeeded');
  } catch (e) {
    check('transaction_rollback_after_commit_refused', e.code === 40008, `error ${e.code}: ${e.message}`);
  }
  try {
    await producer.endTransaction(r1.endpoints, { topic }, r1.messageId, '999999999', TransactionResolution.COMMIT);
    check('transaction_unknown_id_refused', false, 'it succeeded');
  } catch (e) {
    check('transaction_unknown_id_refused', e.code === 40008, `error ${e.code}: ${e.message}`);
  }
  await consumer.shutdown();
  await producer.shutdown();
  finish();
}

main().catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
