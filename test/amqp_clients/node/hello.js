// Tutorial 1, hello world (as ../python/hello.py): a producer sends to queue
// 'tut.hello' through the default exchange, a consumer on its own
// connection receives the messages in the order they were sent.
'use strict';
const { connect, channel, say, check, r, pyBool, finish, cleanup, waitUntil } = require('./common');

const Q = 'tut.hello';
const MESSAGES = ['Hello World!', 'Hello again', 'third'];

(async () => {
  await cleanup([Q]);
  const got = [];
  const lines = [];
  const cconn = await connect();
  const cch = await channel(cconn);
  await cch.assertQueue(Q);
  await cch.consume(Q, (m) => {
    got.push(m.content.toString());
    lines.push(` [x] Received ${r(m.content.toString())} (routing key ${m.fields.routingKey}, redelivered ${pyBool(m.fields.redelivered)})`);
  }, { noAck: true });

  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertQueue(Q);
  for (const m of MESSAGES) {
    ch.sendToQueue(Q, Buffer.from(m));
    say(` [x] Sent ${r(m)}`);
  }
  // amqplib writes a connection.close ahead of channel frames still
  // queued: close the channel first, which sends what it holds
  await ch.close();
  await conn.close();
  await waitUntil(() => got.length === MESSAGES.length, 15000);
  await cconn.close();
  for (const l of lines) say(l);
  check(JSON.stringify(got) === JSON.stringify(MESSAGES), 'received the messages in the order sent');
  const c = await connect();
  const c2 = await channel(c);
  const ok = await c2.checkQueue(Q);
  say(`queue ${Q} after: ${ok.messageCount} messages, ${ok.consumerCount} consumers`);
  await c.close();
  await cleanup([Q]);
  await finish('hello');
})().catch((e) => { console.error(e); process.exit(2); });
