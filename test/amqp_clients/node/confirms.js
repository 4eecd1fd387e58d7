// Publisher confirms (as ../python/confirms.py): each publish on a confirm
// channel acked; a publish to a full reject-publish queue nacked, and the
// channel goes on; a batch alternating between an ordinary queue and one
// that refuses everything gets one ack or nack per publish.
'use strict';
const { connect, channel, say, check, finish, cleanup } = require('./common');

const OK_Q = 'tut.confirms';
const FULL_Q = 'tut.confirms_full';

function publishConfirmed(ch, q, body, opts = {}) {
  return new Promise((res) => ch.sendToQueue(q, Buffer.from(body), opts, (err) => res(!err)));
}

(async () => {
  await cleanup([OK_Q, FULL_Q]);
  let conn = await connect();
  let ch = await channel(conn, true);
  await ch.assertQueue(OK_Q, { durable: true });
  await ch.assertQueue(FULL_Q, { durable: false, arguments: { 'x-max-length': 2, 'x-overflow': 'reject-publish' } });
  for (let i = 1; i <= 5; i++) {
    const ok = await publishConfirmed(ch, OK_Q, `m${i}`, { persistent: true });
    say(`publish m${i} to ${OK_Q}: ${ok ? 'acked' : 'nacked'}`);
  }
  for (let i = 1; i <= 3; i++) {
    const ok = await publishConfirmed(ch, FULL_Q, `f${i}`);
    say(`publish f${i} to ${FULL_Q} (max-length 2): ${ok ? 'acked' : 'nacked'}`);
  }
  const after = await publishConfirmed(ch, OK_Q, 'after the nack');
  say(`publish after the nack: ${after ? 'acked' : 'nacked'}, channel open True`);
  const nOk = (await ch.checkQueue(OK_Q)).messageCount;
  const nFull = (await ch.checkQueue(FULL_Q)).messageCount;
  say(`${OK_Q} holds ${nOk}, ${FULL_Q} holds ${nFull}`);
  check(nOk === 6 && nFull === 2, 'queue depths after confirms');
  await ch.purgeQueue(OK_Q);
  await ch.deleteQueue(FULL_Q);
  await ch.assertQueue(FULL_Q, { durable: false, arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
  await conn.close();

  // a batch of 10, confirmed asynchronously
  const N = 10;
  conn = await connect();
  ch = await channel(conn, true);
  const outcome = [];
  const pending = [];
  for (let i = 1; i <= N; i++) {
    const q = i % 3 === 0 ? FULL_Q : OK_Q;
    pending.push(new Promise((res) => ch.sendToQueue(q, Buffer.from(`b${i}`), {}, (err) => {
      outcome[i] = err ? 'nack' : 'ack';
      res();
    })));
  }
  await Promise.all(pending);
  for (let i = 1; i <= N; i++) {
    const q = i % 3 === 0 ? FULL_Q : OK_Q;
    say(`batch publish ${i} to ${q}: ${outcome[i] || 'no confirm'}`);
    check(outcome[i] === (q === FULL_Q ? 'nack' : 'ack'), `confirm of publish ${i}`);
  }
  const n = (await ch.checkQueue(OK_Q)).messageCount;
  say(`${OK_Q} holds the ${n} acked ones`);
  check(n === N - Math.floor(N / 3), 'acked publishes arrived');
  await conn.close();
  await cleanup([OK_Q, FULL_Q]);
  await finish('confirms');
})().catch((e) => { console.error(e); process.exit(2); });
