// Tutorial 3, publish/subscribe (as ../python/pubsub.py): a fanout exchange,
// two subscribers with exclusive server-named queues, both get every line.
'use strict';
const { connect, channel, say, check, r, finish, cleanup, sleep, waitUntil, Subscriber, queueExists } = require('./common');

const X = 'tut.logs';
const LOGS = ['info: one', 'warning: two', 'error: three', 'info: four'];

(async () => {
  await cleanup([], [X]);
  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertExchange(X, 'fanout', { durable: false });
  const subs = [new Subscriber('s1', X, ['']), new Subscriber('s2', X, [''])];
  for (const s of subs) await s.start();
  for (const l of LOGS) {
    ch.publish(X, '', Buffer.from(l));
    say(` [x] Sent ${r(l)}`);
  }
  for (const s of subs) {
    await waitUntil(() => s.got.length >= LOGS.length);
    await s.stop();
  }
  for (const s of subs) {
    const bodies = s.got.map((x) => x[1]);
    say(`${s.name} received ${r(bodies)}`);
    check(JSON.stringify(bodies) === JSON.stringify(LOGS), `${s.name} got every line in order`);
    say(`${s.name} had a server-named queue: ${s.queue.startsWith('amq.gen-') ? 'True' : 'False'}`);
    check(s.queue.startsWith('amq.gen-'), 'server-named queue');
  }
  check(subs[0].queue !== subs[1].queue, 'two different queue names');
  for (const s of subs) {
    const gone = !(await queueExists(s.queue));
    say(`${s.name}'s exclusive queue is gone after its connection closed: ${gone ? 'True' : 'False'}`);
    check(gone, 'exclusive queue deleted with its connection');
  }
  ch.publish(X, '', Buffer.from('nobody listens'));
  await sleep(100);
  await ch.assertExchange(X, 'fanout', { durable: false }); // a round trip: still open
  say('a publish with no queue bound is dropped silently: True');
  await ch.close();
  await conn.close();
  await cleanup([], [X]);
  await finish('pubsub');
})().catch((e) => { console.error(e); process.exit(2); });
