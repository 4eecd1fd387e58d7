// Tutorial 4, routing (as ../python/routing.py): a direct exchange; one
// subscriber binds 'error', the other info, warning and error.
'use strict';
const { connect, channel, say, check, finish, cleanup, sleep, waitUntil, Subscriber } = require('./common');

const X = 'tut.direct_logs';
const SENT = [['info', 'i1'], ['error', 'e1'], ['warning', 'w1'], ['debug', 'd1'],
  ['error', 'e2'], ['info', 'i2'], ['Error', 'E3']];

(async () => {
  await cleanup([], [X]);
  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertExchange(X, 'direct', { durable: false });
  const subs = [new Subscriber('errors', X, ['error']),
    new Subscriber('all', X, ['info', 'warning', 'error'])];
  for (const s of subs) await s.start();
  for (const [k, b] of SENT) {
    ch.publish(X, k, Buffer.from(b));
    say(` [x] Sent ${k}:'${b}'`);
  }
  for (const s of subs) {
    const want = SENT.filter(([k]) => s.keys.includes(k));
    await waitUntil(() => s.got.length >= want.length);
    await sleep(300);
    await s.stop();
    say(`${s.name} (bound ${s.keys.join(',')}) received ${s.got.map(([k, b]) => `${k}:${b}`).join(' ')}`);
    check(JSON.stringify(s.got) === JSON.stringify(want), `${s.name} received exactly its keys`);
  }
  await ch.close();
  await conn.close();
  await cleanup([], [X]);
  await finish('routing');
})().catch((e) => { console.error(e); process.exit(2); });
