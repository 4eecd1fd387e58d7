// A connection closed with its channel still open (amqplib's conn.close()
// sends connection.close at once), holding an exclusive queue, idle or with
// a consumer: once the close-ok is in, another connection finds no queue.
// RabbitMQ deletes exclusive queues before its close-ok; mq-amqp once sent
// the close-ok early when the channel's end came first.
'use strict';
const { connect, channel, say, check, finish, queueExists } = require('./common');

const ROUNDS = 20;

(async () => {
  let gone = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const conn = await connect();
    const ch = await channel(conn);
    const q = (await ch.assertQueue('', { exclusive: true })).queue;
    if (i % 2) await ch.consume(q, () => {}, { noAck: true });
    await conn.close();
    if (!(await queueExists(q))) gone++;
  }
  say(`exclusive queue gone once the close-ok came: ${gone} of ${ROUNDS}`);
  check(gone === ROUNDS, 'every exclusive queue deleted before the close-ok');
  await finish('exclusive_close');
})().catch((e) => { console.error(e); process.exit(2); });
