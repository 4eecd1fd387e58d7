// An acceptance test of mq-rocketmq written as a RocketMQ 5 user would
// expect a RocketMQ 5 proxy to behave, with the official Node.js client
// (rocketmq-client-nodejs, pinned in package.json) used as documented and
// nothing else: round trips of every property a message has, tag and SQL92
// subscriptions, redelivery after the invisible time and after its
// extension, FIFO order with a blocked message group, delay, transactions
// (commit, rollback, check-back), two groups on one topic, two consumers
// sharing a group, 1,000 messages exactly once, and the errors a user meets.
// Run by test/t/057_rocketmq_acceptance.pl, which declares the topics and
// groups below (docs/rocketmq.md: the gateway creates neither).
//
// No check depends on how fast the machine is: a check fails when a message
// comes too early, twice, out of order or never (within generous timeouts),
// never when it comes late.
//
// Environment: RMQ_ENDPOINT, RMQ_ACCESS_KEY / RMQ_SECRET_KEY, RMQ_CHECKS (a
// comma-separated subset of the scenarios below; default all), RMQ_DEBUG.
// Prints "ok NAME" / "not ok NAME: why" per check, "checks: DONE" last.
'use strict';

const os = require('node:os');
const crypto = require('node:crypto');
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult, FilterExpression } = require('rocketmq-client-nodejs');
const { TransactionResolution, FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { endpoints, credentials, quiet, check, finish, sleep, withTimeout } = require('./common');

const run = `${process.pid}-${Date.now()}`;
const only = process.env.RMQ_CHECKS ? new Set(process.env.RMQ_CHECKS.split(',')) : null;
// requestTimeout: the client's default (3 s) is the deadline of a send and,
// beyond the long poll, of a receive; a loaded test machine moving 3 MB
// bodies through PostgreSQL may need more
const base = { endpoints, namespace: '', sessionCredentials: credentials, logger: quiet, requestTimeout: 30000 };

async function producer(topics, opts = {}) {
  const p = new Producer({ ...base, topics, ...opts });
  await withTimeout(p.startup(), 60000, 'producer start-up');
  return p;
}

async function consumer(group, subscriptions, awaitDuration = 2000) {
  const c = new SimpleConsumer({ ...base, consumerGroup: group, subscriptions, awaitDuration });
  await withTimeout(c.startup(), 60000, 'consumer start-up');
  return c;
}

// Receive until done(got) is true or rounds run out; every message of
// another run is acked and skipped.  onMessage(view) returns true to ack.
async function receiveUntil(c, done, { rounds = 60, batch = 16, invisible = 60000, onMessage }) {
  for (let i = 0; i < rounds && !done(); i++) {
    const views = await c.receive(batch, invisible);
    for (const v of views) {
      if (v.properties.get('run') !== run) {
        await c.ack(v);
        continue;
      }
      if (await onMessage(v))
        await c.ack(v);
    }
  }
}

// A receive of a few rounds that must find nothing of this run
async function nothingMore(c, rounds = 2) {
  const extra = [];
  for (let i = 0; i < rounds; i++)
    for (const v of await c.receive(16, 60000)) {
      if (v.properties.get('run') === run)
        extra.push(v.properties.get('name') ?? v.messageId);
      await c.ack(v);
    }
  return extra;
}

function sameMap(a, b) {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

// -- every property a message carries round-trips -------------------------
async function roundTrip() {
  const topic = 'acc_props';
  const p = await producer([topic]);
  const c = await consumer('acc_props_g', new Map([[topic, '*']]));
  const binary = crypto.randomBytes(1000);
  binary[0] = 0; binary[1] = 0xff;
  const cases = [
    { name: 'plain', body: Buffer.from('plain') },
    { name: 'tagged', body: binary, tag: 'TagA', keys: ['k1', 'k-2', 'ключ'] },
    { name: 'fifo', body: Buffer.from('fifo'), tag: 'TagF', messageGroup: 'group-1' },
    { name: 'delay', body: Buffer.from('delay'), tag: 'TagD', deliveryTimestamp: new Date(Date.now() + 1500) },
    { name: 'empty', body: Buffer.alloc(0), keys: ['only'] },
    { name: 'big', body: crypto.randomBytes(3 * 1024 * 1024) },
    // every byte value, up and down: the gateway takes the body as bytes
    { name: 'bytes', body: Buffer.from([...Array(512).keys()].map(i => (i < 256 ? i : 511 - i))) },
  ];
  // first a few messages of no run in each partition, so that no message
  // checked is at offset 0 (the answer of a gateway that gives none)
  for (let i = 0; i < 8; i++)
    await p.send({ topic, body: Buffer.from('warm-up'), properties: new Map([['run', 'warm-up']]) });
  const sent = new Map();
  for (const m of cases) {
    const properties = new Map([['run', run], ['name', m.name], ['with space', 'v a l'], ['unicode', 'é✓😄'],
      ['empty', ''], ['json', '{"a": [1, 2]}'], ['ключ', 'значение']]);
    const before = Date.now();
    const receipt = await p.send({ topic, properties, ...m });
    const after = Date.now();
    check(`send_receipt_${m.name}`, /^[0-9A-F]{34}$/.test(receipt.messageId) && receipt.offset !== undefined,
      `message id ${receipt.messageId}, offset ${receipt.offset}`);
    sent.set(receipt.messageId, { ...m, properties, before, after, receipt });
  }
  const got = new Map();
  await receiveUntil(c, () => got.size === sent.size, {
    onMessage: async v => {
      check(`round_trip_once_${v.properties.get('name')}`, !got.has(v.messageId), 'delivered twice');
      got.set(v.messageId, { v, at: Date.now() });
      return true;
    },
  });
  check('round_trip_all_received', got.size === sent.size, `got ${got.size} of ${sent.size}`);
  for (const [id, m] of sent) {
    const g = got.get(id);
    if (!g) continue;
    const v = g.v;
    const why = [];
    if (!v.body.equals(m.body)) why.push(`body of ${v.body.length} bytes differs`);
    if (v.corrupted) why.push('body digest mismatch');
    if (v.topic !== topic) why.push(`topic ${v.topic}`);
    if ((v.tag || '') !== (m.tag || '')) why.push(`tag ${JSON.stringify(v.tag)}`);
    if (JSON.stringify(v.keys) !== JSON.stringify(m.keys ?? [])) why.push(`keys ${JSON.stringify(v.keys)}`);
    if ((v.messageGroup || '') !== (m.messageGroup || '')) why.push(`messageGroup ${JSON.stringify(v.messageGroup)}`);
    if (!sameMap(v.properties, m.properties)) why.push(`properties ${JSON.stringify([...v.properties])}`);
    if (m.deliveryTimestamp) {
      if (!v.deliveryTimestamp || v.deliveryTimestamp.getTime() !== m.deliveryTimestamp.getTime())
        why.push(`deliveryTimestamp ${v.deliveryTimestamp?.toISOString()}`);
      if (g.at < m.deliveryTimestamp.getTime()) why.push('delivered before its delivery timestamp');
    }
    if (v.deliveryAttempt !== 1) why.push(`deliveryAttempt ${v.deliveryAttempt}`);
    if (v.bornHost !== os.hostname()) why.push(`bornHost ${v.bornHost}`);
    // the client stamps the born time when it sends
    const born = v.bornTimestamp?.getTime();
    if (!(born >= m.before - 1 && born <= m.after + 1)) why.push(`bornTimestamp ${v.bornTimestamp?.toISOString()}`);
    if (!v.receiptHandle) why.push('no receipt handle');
    check(`round_trip_${m.name}`, why.length === 0, why.join('; '));
    // a RocketMQ proxy's send result carries the message's queue offset,
    // the offset its MessageView shows; a delay message is given its offset
    // when it is due (RocketMQ's is the timer topic's), and the send says 0
    if (m.deliveryTimestamp)
      check(`send_offset_${m.name}`, Number(m.receipt.offset) === 0 && v.offset > 0,
        `received at offset ${v.offset}, the send said ${m.receipt.offset}`);
    else
      check(`send_offset_${m.name}`, v.offset === m.receipt.offset, `received at offset ${v.offset}, the send said ${m.receipt.offset}`);
  }
  // a body larger than the max body size the Settings gave: refused
  try {
    await p.send({ topic, body: Buffer.alloc(4 * 1024 * 1024 + 1) });
    check('body_too_large_refused', false, 'the send succeeded');
  } catch (e) {
    check('body_too_large_refused', /exceeds/.test(e.message) || e.code === 41301, `${e.code}: ${e.message}`);
  }
  await p.shutdown();
  await c.shutdown();
}

// -- tag and SQL92 subscriptions -------------------------------------------
async function filters() {
  const topic = 'acc_filter';
  const p = await producer([topic]);
  const msgs = [
    ['a1', 'TagA', { color: 'red', n: '1' }],
    ['b1', 'TagB', { color: 'blue', n: '5' }],
    ['c1', 'TagC', { color: 'red', n: '10' }],
    ['none', undefined, { n: '7' }],
  ];
  for (const [name, tag, props] of msgs)
    await p.send({ topic, tag, body: Buffer.from(name), properties: new Map([['run', run], ['name', name], ...Object.entries(props)]) });
  const want = {
    acc_filter_tag: [new FilterExpression('TagA || TagC'), ['a1', 'c1']],
    acc_filter_all: [new FilterExpression('*'), ['a1', 'b1', 'c1', 'none']],
    acc_filter_sql: [new FilterExpression("color = 'red' AND n > 3", FilterType.SQL), ['c1']],
    acc_filter_sqltag: [new FilterExpression("TAGS IN ('TagA', 'TagB') OR n BETWEEN 6 AND 8", FilterType.SQL), ['a1', 'b1', 'none']],
  };
  for (const [group, [expr, names]] of Object.entries(want)) {
    const c = await consumer(group, new Map([[topic, expr]]));
    const got = [];
    await receiveUntil(c, () => got.length >= names.length, { rounds: 15, onMessage: async v => { got.push(v.properties.get('name')); return true; } });
    got.push(...await nothingMore(c));
    got.sort();
    check(`filter_${group}`, JSON.stringify(got) === JSON.stringify(names), `got ${got.join(' ')}, want ${names.join(' ')}`);
    await c.shutdown();
  }
  await p.shutdown();
}

// -- redelivery after the invisible time, and after its extension ----------
async function redelivery() {
  const topic = 'acc_retry';
  const p = await producer([topic]);
  const c = await consumer('acc_retry_g', new Map([[topic, '*']]));
  const r1 = await p.send({ topic, body: Buffer.from('r1'), properties: new Map([['run', run], ['name', 'r1']]) });
  const r2 = await p.send({ topic, body: Buffer.from('r2'), properties: new Map([['run', run], ['name', 'r2']]) });
  const r3 = await p.send({ topic, body: Buffer.from('r3'), properties: new Map([['run', run], ['name', 'r3']]) });
  // first deliveries, 4 s invisible, never acked (a second delivery of r1
  // while the others are still awaited is its redelivery)
  const first = new Map();
  let again = null;
  for (let i = 0; i < 30 && first.size < 3; i++)
    for (const v of await c.receive(16, 4000)) {
      if (v.properties.get('run') !== run) { await c.ack(v); continue; }
      if (!first.has(v.messageId)) first.set(v.messageId, { v, at: Date.now() });
      else {
        if (v.messageId === r1.messageId && again === null) again = v;
        await c.ack(v);
      }
    }
  check('redelivery_first', first.has(r1.messageId) && first.has(r2.messageId) && first.has(r3.messageId),
    `got ${first.size} of 3`);
  // r3's is extended to 8 s from now, and never acked: it comes back then
  const ext3 = first.get(r3.messageId);
  let ext3At = 0;
  let r3early = null;
  let r3again = null;
  if (ext3) {
    // taken before the call: the server's extension starts after it
    ext3At = Date.now();
    await c.changeInvisibleDuration(ext3.v, 8000);
  }
  const seeR3 = v => {
    if (v.messageId !== r3.messageId) return false;
    if (Date.now() < ext3At + 8000) r3early = v;
    else if (r3again === null) r3again = v;
    return true;
  };
  // r2's invisible time is extended to 20 s from now
  const ext = first.get(r2.messageId);
  let extendedAt = 0;
  if (ext) {
    extendedAt = Date.now();
    await c.changeInvisibleDuration(ext.v, 20000);
    check('extend_invisible_duration', typeof ext.v.receiptHandle === 'string' && ext.v.receiptHandle.length > 0, 'no receipt');
  }
  // r1 comes back (attempt 2, same id and body, a new receipt); r2 does not before 20 s
  let r2early = null;
  for (let i = 0; i < 30 && again === null; i++)
    for (const v of await c.receive(16, 60000)) {
      if (v.properties.get('run') !== run) { await c.ack(v); continue; }
      if (v.messageId === r1.messageId && again === null) again = v;
      else if (seeR3(v)) ;
      else if (v.messageId === r2.messageId && Date.now() < extendedAt + 20000) r2early = v;
      await c.ack(v);
    }
  check('redelivered_after_invisible_time', again !== null && again.deliveryAttempt === 2 &&
    again.body.toString() === 'r1' && again.receiptHandle !== first.get(r1.messageId)?.v.receiptHandle,
  again ? `deliveryAttempt ${again.deliveryAttempt}` : 'never came back');
  // the first delivery's receipt handle is stale once it came back
  try {
    await c.ack(first.get(r1.messageId).v);
    check('stale_receipt_refused', false, 'the ack of the first delivery succeeded');
  } catch (e) {
    check('stale_receipt_refused', e.code === 40013, `${e.code}: ${e.message}`);
  }
  // r2 stays invisible while extended: look for 6 more seconds
  const until = Date.now() + 6000;
  while (Date.now() < until && r2early === null && Date.now() < extendedAt + 20000)
    for (const v of await c.receive(16, 60000)) {
      if (v.properties.get('run') === run && v.messageId === r2.messageId && Date.now() < extendedAt + 20000) r2early = v;
      else if (v.properties.get('run') === run) seeR3(v);
      await c.ack(v);
    }
  check('extension_keeps_invisible', r2early === null && r3early === null,
    `${r2early ? 'r2' : 'r3'} came back before its extended invisible time ended`);
  // and the extended delivery acks with the receipt changeInvisibleDuration gave
  if (r2early === null && ext) {
    try {
      await c.ack(ext.v);
      check('ack_after_extension', true);
    } catch (e) {
      check('ack_after_extension', false, `${e.code}: ${e.message}`);
    }
  }
  // r3 comes back once its extended invisible time is over, attempt 2
  for (let i = 0; i < 30 && r3again === null; i++)
    for (const v of await c.receive(16, 60000)) {
      if (v.properties.get('run') === run) seeR3(v);
      await c.ack(v);
    }
  check('redelivered_after_extension', r3again !== null && r3early === null && r3again.deliveryAttempt === 2,
    r3again ? `deliveryAttempt ${r3again.deliveryAttempt}` : (r3early ? 'came back early' : 'never came back'));
  check('acked_not_redelivered', (await nothingMore(c, 1)).length === 0, 'a message came back after its ack');
  await p.shutdown();
  await c.shutdown();
}

// -- a long poll returns a message sent while it waits -----------------------
async function longPoll() {
  const topic = 'acc_delay';
  const p = await producer([topic]);
  const c = await consumer('acc_delay_g', new Map([[topic, '*']]), 30000);
  // drain what is there
  while ((await c.receive(16, 60000)).length > 0);
  const pending = c.receive(16, 60000);
  await sleep(1000);
  const r = await p.send({ topic, body: Buffer.from('during'), properties: new Map([['run', run], ['name', 'during']]) });
  const views = await pending;
  check('long_poll_woken_by_send', views.some(v => v.messageId === r.messageId),
    `the receive waiting when the message was sent returned ${views.length} message(s) without it`);
  for (const v of views) await c.ack(v);
  await p.shutdown();
  await c.shutdown();
}

// -- FIFO: one message group is blocked while its head is in flight --------
async function fifo() {
  const topic = 'acc_fifo';
  const p = await producer([topic]);
  const c = await consumer('acc_fifo_g', new Map([[topic, '*']]));
  const groups = { A: 4, B: 3 };
  for (let i = 1; i <= 4; i++)
    for (const [g, n] of Object.entries(groups))
      if (i <= n)
        await p.send({ topic, messageGroup: `${run}-${g}`, body: Buffer.from(`${g}${i}`),
          properties: new Map([['run', run], ['name', `${g}${i}`]]) });
  const total = 7;
  const done = new Set();
  const inFlight = new Map();	// group => name delivered and not acked
  const log = [];
  const violations = [];
  let heldA1 = false;
  let a1Again = null;
  for (let i = 0; i < 120 && done.size < total; i++) {
    const views = await c.receive(1, 6000);
    for (const v of views) {
      if (v.properties.get('run') !== run) { await c.ack(v); continue; }
      const name = v.properties.get('name');
      const g = name[0];
      const seq = Number(name.slice(1));
      log.push(`${name}#${v.deliveryAttempt}`);
      const held = inFlight.get(g);
      if (held && held !== name)
        violations.push(`${name} delivered while ${held} was in flight`);
      for (let k = 1; k < seq; k++)
        if (!done.has(`${g}${k}`)) violations.push(`${name} before ${g}${k} was acked`);
      if (name === 'A1' && !heldA1) {
        // the head of group A: not acked, its invisible time (6 s) runs out
        heldA1 = true;
        inFlight.set(g, name);
        continue;
      }
      if (name === 'A1') a1Again = v;
      inFlight.delete(g);
      await c.ack(v);
      done.add(name);
    }
  }
  check('fifo_all_consumed', done.size === total, `consumed ${[...done].join(' ')}; log ${log.join(' ')}`);
  check('fifo_group_blocked_and_ordered', violations.length === 0, `${violations.join('; ')}; log ${log.join(' ')}`);
  check('fifo_head_redelivered', a1Again !== null && a1Again.deliveryAttempt === 2,
    a1Again ? `deliveryAttempt ${a1Again.deliveryAttempt}` : `log ${log.join(' ')}`);
  await p.shutdown();
  await c.shutdown();
}

// -- FIFO with a PushConsumer: a failed head holds its group back ------------
async function fifoPush() {
  const topic = 'acc_fifo';
  const order = [];
  let failedOnce = false;
  let done;
  const allDone = new Promise(resolve => { done = resolve; });
  const c = new PushConsumer({
    ...base, consumerGroup: 'acc_fifo_push', subscriptions: new Map([[topic, '*']]),
    messageListener: {
      consume(v) {
        if (v.properties.get('run') !== run || v.properties.get('kind') !== 'push') return ConsumeResult.SUCCESS;
        const name = v.properties.get('name');
        order.push(`${name}#${v.deliveryAttempt}`);
        if (name === 'P1' && !failedOnce) {
          failedOnce = true;
          return ConsumeResult.FAILURE;
        }
        if (name === 'P3') done();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await withTimeout(c.startup(), 60000, 'push consumer start-up');
  const p = await producer([topic]);
  for (const name of ['P1', 'P2', 'P3'])
    await p.send({ topic, messageGroup: `${run}-push`, body: Buffer.from(name),
      properties: new Map([['run', run], ['name', name], ['kind', 'push']]) });
  let timer;
  const finished = await Promise.race([allDone.then(() => true),
    new Promise(resolve => { timer = setTimeout(() => resolve(false), 240000); })]);
  clearTimeout(timer);
  await sleep(2000);
  check('fifo_push_order', finished && order.join(' ') === 'P1#1 P1#2 P2#1 P3#1', `order ${order.join(' ')}`);
  await c.shutdown();
  await p.shutdown();
}

// -- delay -------------------------------------------------------------------
async function delay() {
  const topic = 'acc_delay';
  const p = await producer([topic]);
  const c = await consumer('acc_delay_g', new Map([[topic, '*']]));
  const at = new Date(Date.now() + 4000);
  const r = await p.send({ topic, deliveryTimestamp: at, body: Buffer.from('later'), properties: new Map([['run', run], ['name', 'later']]) });
  const now = await p.send({ topic, body: Buffer.from('now'), properties: new Map([['run', run], ['name', 'now']]) });
  // a delivery timestamp in the past: due at once, and it round-trips
  const pastAt = new Date(Date.now() - 60000);
  const past = await p.send({ topic, deliveryTimestamp: pastAt, body: Buffer.from('past'), properties: new Map([['run', run], ['name', 'past']]) });
  const got = new Map();
  await receiveUntil(c, () => got.size === 3, { onMessage: async v => { got.set(v.messageId, { v, at: Date.now() }); return true; } });
  const g = got.get(r.messageId);
  check('delay_delivered', g !== undefined && got.has(now.messageId) && got.has(past.messageId), `got ${got.size} of 3`);
  const gp = got.get(past.messageId);
  check('delay_past_timestamp', gp !== undefined && gp.v.deliveryTimestamp?.getTime() === pastAt.getTime(),
    gp ? `deliveryTimestamp ${gp.v.deliveryTimestamp?.toISOString()}` : 'never delivered');
  check('delay_not_before_its_time', g !== undefined && g.at >= at.getTime(),
    g ? `delivered ${at.getTime() - g.at} ms early` : 'never delivered');
  check('delay_timestamp_round_trip', g !== undefined && g.v.deliveryTimestamp?.getTime() === at.getTime(),
    g ? `deliveryTimestamp ${g.v.deliveryTimestamp?.toISOString()}` : 'never delivered');
  await p.shutdown();
  await c.shutdown();
}

// -- transactions: commit, rollback, check-back --------------------------------
async function transactions() {
  const topic = 'acc_tx';
  const checked = [];
  const p = await producer([topic], {
    checker: {
      async check(view) {
        checked.push(view.properties.get('name'));
        return view.properties.get('decide') === 'commit' ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
      },
    },
  });
  const c = await consumer('acc_tx_g', new Map([[topic, '*']]));
  const ids = {};
  async function txSend(name, extra = {}) {
    const tx = p.beginTransaction();
    const r = await p.send({ topic, tag: 'TagT', keys: [`key-${name}`], body: Buffer.from(name),
      properties: new Map([['run', run], ['name', name], ...Object.entries(extra)]) }, tx);
    ids[name] = r.messageId;
    return tx;
  }
  await (await txSend('committed')).commit();
  await (await txSend('rolled_back')).rollback();
  // no commit nor rollback: the gateway's check-back asks this producer
  await txSend('orphan_commit', { decide: 'commit' });
  await txSend('orphan_rollback', { decide: 'rollback' });
  check('transaction_sends', Object.keys(ids).length === 4, JSON.stringify(ids));
  const got = new Map();
  await receiveUntil(c, () => got.has('committed') && got.has('orphan_commit'), {
    rounds: 60,
    onMessage: async v => { got.set(v.properties.get('name'), v); return true; },
  });
  for (const v of await nothingMore(c)) got.set(v, null);
  const names = [...got.keys()].sort();
  check('transaction_only_committed_delivered', JSON.stringify(names) === '["committed","orphan_commit"]', `got ${names.join(' ')}`);
  const v = got.get('committed');
  check('transaction_round_trip', v && v.messageId === ids.committed && v.tag === 'TagT' &&
    JSON.stringify(v.keys) === '["key-committed"]' && v.body.toString() === 'committed' && v.deliveryAttempt === 1,
  v ? `id ${v.messageId} tag ${v.tag} keys ${v.keys}` : 'not delivered');
  check('transaction_check_back', checked.includes('orphan_commit') && checked.includes('orphan_rollback') &&
    !checked.includes('committed') && !checked.includes('rolled_back'), `checked ${checked.join(' ')}`);
  const o = got.get('orphan_commit');
  check('transaction_check_back_commit_id', o && o.messageId === ids.orphan_commit, o ? o.messageId : 'not delivered');
  await p.shutdown();
  await c.shutdown();
}

// -- two groups on one topic each get every message ------------------------------
async function twoGroups() {
  const topic = 'acc_two';
  const p = await producer([topic]);
  const ids = new Set();
  for (let i = 0; i < 20; i++)
    ids.add((await p.send({ topic, body: Buffer.from(`m${i}`), properties: new Map([['run', run], ['name', `m${i}`]]) })).messageId);
  for (const group of ['acc_two_g1', 'acc_two_g2']) {
    const c = await consumer(group, new Map([[topic, '*']]));
    const got = [];
    await receiveUntil(c, () => got.length >= ids.size, { onMessage: async v => { got.push(v.messageId); return true; } });
    got.push(...await nothingMore(c, 1));
    check(`two_groups_${group}`, got.length === ids.size && got.every(id => ids.has(id)) && new Set(got).size === got.length,
      `got ${got.length} (${new Set(got).size} distinct) of ${ids.size}`);
    await c.shutdown();
  }
  await p.shutdown();
}

// -- two consumers sharing a group split the messages, each once ----------------
async function sharedGroup() {
  const topic = 'acc_shared';
  const p = await producer([topic]);
  const c1 = await consumer('acc_shared_g', new Map([[topic, '*']]));
  const c2 = await consumer('acc_shared_g', new Map([[topic, '*']]));
  const n = 100;
  const ids = new Set();
  for (let i = 0; i < n; i++)
    ids.add((await p.send({ topic, body: Buffer.from(`s${i}`), properties: new Map([['run', run], ['name', `s${i}`]]) })).messageId);
  const seen = new Map();
  const dup = [];
  async function drain(c, who) {
    await receiveUntil(c, () => seen.size >= n, {
      batch: 8,
      onMessage: async v => {
        if (seen.has(v.messageId)) dup.push(`${v.messageId} by ${seen.get(v.messageId)} and ${who}`);
        seen.set(v.messageId, who);
        return true;
      },
    });
  }
  await Promise.all([drain(c1, 'c1'), drain(c2, 'c2')]);
  for (const c of [c1, c2]) for (const x of await nothingMore(c, 1)) dup.push(`${x} again`);
  check('shared_group_all', seen.size === n && [...seen.keys()].every(id => ids.has(id)), `got ${seen.size} of ${n}`);
  check('shared_group_once', dup.length === 0, dup.slice(0, 5).join('; '));
  await p.shutdown();
  await c1.shutdown();
  await c2.shutdown();
}

// -- two PushConsumers sharing a group: each message consumed once ----------
async function pushShared() {
  const topic = 'acc_shared';
  const n = 300;
  const seen = new Map();		// message id => consumer
  const dup = [];
  let done;
  const allDone = new Promise(resolve => { done = resolve; });
  const make = who => new PushConsumer({
    ...base, consumerGroup: 'acc_push_g', subscriptions: new Map([[topic, '*']]),
    messageListener: {
      consume(v) {
        if (v.properties.get('run') !== run || v.properties.get('kind') !== 'push') return ConsumeResult.SUCCESS;
        if (seen.has(v.messageId) || v.deliveryAttempt !== 1)
          dup.push(`${v.properties.get('name')} by ${seen.get(v.messageId)} and ${who}, attempt ${v.deliveryAttempt}`);
        seen.set(v.messageId, who);
        if (seen.size === n) done();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  const c1 = make('c1');
  const c2 = make('c2');
  await withTimeout(c1.startup(), 60000, 'push consumer start-up');
  await withTimeout(c2.startup(), 60000, 'push consumer start-up');
  const p = await producer([topic]);
  const ids = new Set();
  for (let i = 0; i < n; i++)
    ids.add((await p.send({ topic, body: Buffer.from(`p${i}`),
      properties: new Map([['run', run], ['name', `p${i}`], ['kind', 'push']]) })).messageId);
  let timer;
  const finished = await Promise.race([allDone.then(() => true),
    new Promise(resolve => { timer = setTimeout(() => resolve(false), 240000); })]);
  clearTimeout(timer);
  // a little longer: nothing may come twice
  await sleep(3000);
  check('push_shared_all', finished && [...seen.keys()].every(id => ids.has(id)), `consumed ${seen.size} of ${n}`);
  check('push_shared_once', dup.length === 0, dup.slice(0, 5).join('; '));
  await c1.shutdown();
  await c2.shutdown();
  await p.shutdown();
}

// -- 1,000 messages exactly once ------------------------------------------------
async function thousand() {
  const topic = 'acc_bulk';
  const p = await producer([topic]);
  const n = 1000;
  const ids = new Set();
  let next = 0;
  async function worker() {
    while (next < n) {
      const i = next++;
      const r = await p.send({ topic, body: Buffer.from(`bulk ${i}`), properties: new Map([['run', run], ['name', `b${i}`]]) });
      ids.add(r.messageId);
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker));
  check('thousand_sent', ids.size === n, `${ids.size} distinct ids`);
  const c = await consumer('acc_bulk_g', new Map([[topic, '*']]));
  const got = new Map();
  let dup = 0;
  let bad = 0;
  await receiveUntil(c, () => got.size >= n, {
    rounds: 400, batch: 32, invisible: 300000,
    onMessage: async v => {
      if (got.has(v.messageId)) dup++;
      if (v.body.toString() !== `bulk ${v.properties.get('name').slice(1)}`) bad++;
      got.set(v.messageId, v.deliveryAttempt);
      return true;
    },
  });
  const extra = await nothingMore(c);
  check('thousand_exactly_once', got.size === n && dup === 0 && extra.length === 0 && [...got.keys()].every(id => ids.has(id)),
    `got ${got.size} distinct of ${n}, ${dup} duplicates, ${extra.length} after`);
  check('thousand_first_attempts', [...got.values()].every(a => a === 1) && bad === 0, `${bad} bodies wrong`);
  await p.shutdown();
  await c.shutdown();
}

// -- errors a user meets ------------------------------------------------------------
async function errors() {
  const p = await producer(['acc_props']);
  try {
    await p.send({ topic: `acc_missing_${run}`, body: Buffer.from('x') });
    check('error_topic_not_found', false, 'the send succeeded');
  } catch (e) {
    check('error_topic_not_found', e.code === 40402, `${e.code}: ${e.message}`);
  }
  // a group nobody declared
  try {
    const c = await consumer(`acc_no_group_${process.pid}`, new Map([['acc_props', '*']]));
    await c.receive(1, 10000);
    check('error_group_not_found', false, 'the receive succeeded');
    await c.shutdown();
  } catch (e) {
    check('error_group_not_found', e.code === 40403, `${e.code}: ${e.message}`);
  }
  // a subscription to a topic that does not exist: the client's start-up
  // fetches the route of each subscribed topic and fails on TOPIC_NOT_FOUND
  try {
    const c = await consumer('acc_props_g', new Map([[`acc_missing_${run}`, '*']]));
    await c.receive(1, 10000);
    check('error_subscribe_missing_topic', false, 'the receive succeeded');
    await c.shutdown();
  } catch (e) {
    let code = e.code;
    for (let x = e; x && code === undefined; x = x.cause) code = x.code;
    check('error_subscribe_missing_topic', code === 40402, `${code}: ${e.message}`);
  }
  // a malformed SQL92 selector
  try {
    const c = await consumer('acc_props_g', new Map([['acc_props', new FilterExpression('a = = 1', FilterType.SQL)]]));
    await c.receive(1, 10000);
    check('error_bad_selector', false, 'the receive succeeded');
    await c.shutdown();
  } catch (e) {
    check('error_bad_selector', e.code === 40010, `${e.code}: ${e.message}`);
  }
  // ack and changeInvisibleDuration with a receipt handle the server never
  // gave (a received message's view with its receipt handle replaced)
  const c = await consumer('acc_props_g', new Map([['acc_props', '*']]));
  await p.send({ topic: 'acc_props', body: Buffer.from('e'), properties: new Map([['run', run], ['name', 'err']]) });
  let real = null;
  await receiveUntil(c, () => real !== null, { onMessage: async v => { real = v; return true; } });
  const fake = Object.assign(Object.create(Object.getPrototypeOf(real)), real, { receiptHandle: 'not-a-receipt' });
  try {
    await c.ack(fake);
    check('error_ack_bad_receipt', false, 'the ack succeeded');
  } catch (e) {
    check('error_ack_bad_receipt', e.code === 40013, `${e.code}: ${e.message}`);
  }
  try {
    await c.changeInvisibleDuration(fake, 1000);
    check('error_change_invisible_bad_receipt', false, 'it succeeded');
  } catch (e) {
    check('error_change_invisible_bad_receipt', e.code === 40013, `${e.code}: ${e.message}`);
  }
  // EndTransaction of a transaction id the server never gave
  const tp = await producer(['acc_tx'], { checker: { async check() { return TransactionResolution.ROLLBACK; } } });
  const tx = tp.beginTransaction();
  try {
    await tp.send({ topic: 'acc_tx', body: Buffer.from('x'), properties: new Map([['run', run], ['name', 'err']]) }, tx);
    // FIFO and delay are refused in a transaction by the client itself;
    // the server refuses a rollback after the commit
    await tx.commit();
    await tx.rollback();
    check('error_tx_rollback_after_commit', false, 'the rollback succeeded');
  } catch (e) {
    check('error_tx_rollback_after_commit', e.code === 40008, `${e.code}: ${e.message}`);
  }
  await tp.shutdown();
  await p.shutdown();
  await c.shutdown();
}

const scenarios = { roundTrip, filters, redelivery, fifo, fifoPush, delay, longPoll, transactions, twoGroups, sharedGroup, pushShared, thousand, errors };

async function main() {
  for (const [name, fn] of Object.entries(scenarios)) {
    if (only && !only.has(name)) continue;
    try {
      await withTimeout(fn(), 300000, name);
      console.log(`# ${name} done`);
    } catch (e) {
      check(`${name}_ran`, false, `${e.code ?? ''} ${e.stack}`);
    }
  }
  finish();
}

main();
