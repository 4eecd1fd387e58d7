// Tutorial 6, RPC (as ../python/rpc.py): a server answers fib(n) to each
// request's reply_to with its correlation_id; the client's exclusive
// server-named callback queue; replies matched by correlation_id.
'use strict';
const crypto = require('node:crypto');
const { connect, channel, say, check, finish, cleanup, waitUntil } = require('./common');

const Q = 'tut.rpc_queue';
const CALLS = [0, 1, 7, 10, 20, 30];

function fib(n) {
  let [a, b] = [0, 1];
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}

(async () => {
  await cleanup([Q]);
  const served = [];
  const sconn = await connect();
  const sch = await channel(sconn);
  await sch.assertQueue(Q, { durable: false });
  await sch.prefetch(1);
  await sch.consume(Q, (msg) => {
    const n = parseInt(msg.content.toString(), 10);
    served.push(n);
    sch.sendToQueue(msg.properties.replyTo, Buffer.from(String(fib(n))),
      { correlationId: msg.properties.correlationId });
    sch.ack(msg);
  });

  const conn = await connect();
  const ch = await channel(conn);
  const callback = (await ch.assertQueue('', { exclusive: true })).queue;
  say(`client callback queue is server-named: ${callback.startsWith('amq.gen-') ? 'True' : 'False'}`);
  const replies = new Map();
  const stray = [];
  await ch.consume(callback, (msg) => {
    const cid = msg.properties.correlationId;
    if (replies.has(cid) && replies.get(cid) === null) replies.set(cid, parseInt(msg.content.toString(), 10));
    else stray.push(cid);
  }, { noAck: true });
  ch.sendToQueue(callback, Buffer.from('-1'), { correlationId: 'not-a-call' });
  const calls = new Map();
  for (const n of CALLS) {
    const cid = crypto.randomUUID();
    calls.set(cid, n);
    replies.set(cid, null);
    ch.sendToQueue(Q, Buffer.from(String(n)), { replyTo: callback, correlationId: cid });
    say(` [x] Requesting fib(${n})`);
  }
  await waitUntil(() => [...replies.values()].every((v) => v !== null), 20000);
  for (const [cid, n] of calls) {
    say(` [.] fib(${n}) = ${replies.get(cid) === null ? 'None' : replies.get(cid)}`);
    check(replies.get(cid) === fib(n), `fib(${n}) answered right`);
  }
  say(`stray replies ignored: ${stray.length}`);
  check(JSON.stringify(stray) === JSON.stringify(['not-a-call']), 'the reply with an unknown correlation_id');
  await sconn.close();
  check(JSON.stringify([...served].sort((a, b) => a - b)) === JSON.stringify(CALLS), 'the server served each call once');
  await conn.close();
  await cleanup([Q]);
  await finish('rpc');
})().catch((e) => { console.error(e); process.exit(2); });
