// Tutorial 5, topics (as ../python/topics.py): a topic exchange and the
// tutorial's bindings, plus '#' and 'kern.*'.
'use strict';
const { connect, channel, say, check, finish, cleanup, sleep, waitUntil, Subscriber } = require('./common');

const X = 'tut.topic_logs';
const KEYS = ['quick.orange.rabbit', 'lazy.orange.elephant', 'quick.orange.fox',
  'lazy.brown.fox', 'lazy.pink.rabbit', 'quick.brown.fox', 'orange',
  'quick.orange.male.rabbit', 'lazy.orange.male.rabbit', 'lazy',
  'kern.critical', 'kern.critical.disk', 'kern', '.orange.', 'a..rabbit'];

(async () => {
  await cleanup([], [X]);
  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertExchange(X, 'topic', { durable: false });
  const subs = [new Subscriber('Q1', X, ['*.orange.*']),
    new Subscriber('Q2', X, ['*.*.rabbit', 'lazy.#']),
    new Subscriber('Q3', X, ['#']),
    new Subscriber('Q4', X, ['kern.*'])];
  for (const s of subs) await s.start();
  KEYS.forEach((k, i) => {
    ch.publish(X, k, Buffer.from(`m${i}`));
    say(` [x] Sent ${k}`);
  });
  await waitUntil(() => subs[2].got.length >= KEYS.length);
  await sleep(300);
  for (const s of subs) {
    await s.stop();
    say(`${s.name} (${s.keys.join(' ')}) received ${s.got.map(([k]) => k).join(' ') || '(nothing)'}`);
  }
  const keys = (s) => JSON.stringify(s.got.map(([k]) => k));
  check(keys(subs[0]) === JSON.stringify(['quick.orange.rabbit', 'lazy.orange.elephant', 'quick.orange.fox', '.orange.']), 'Q1 matches');
  check(keys(subs[1]) === JSON.stringify(['quick.orange.rabbit', 'lazy.orange.elephant', 'lazy.brown.fox',
    'lazy.pink.rabbit', 'lazy.orange.male.rabbit', 'lazy', 'a..rabbit']), 'Q2 matches, once each');
  check(keys(subs[2]) === JSON.stringify(KEYS), 'Q3 (#) receives everything');
  check(keys(subs[3]) === JSON.stringify(['kern.critical']), 'Q4 matches');
  await ch.close();
  await conn.close();
  await cleanup([], [X]);
  await finish('topics');
})().catch((e) => { console.error(e); process.exit(2); });
