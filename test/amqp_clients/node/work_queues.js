// Tutorial 2, work queues (as ../python/work_queues.py): a durable queue,
// persistent messages, two workers with prefetch 1 and manual acks; a
// worker that dies before acking has its task redelivered to another.
'use strict';
const { connect, channel, say, check, r, finish, cleanup, sleep, waitUntil } = require('./common');

const Q = 'tut.task_queue';
const TASKS = [];
for (let i = 1; i <= 12; i++) TASKS.push(`task ${String(i).padStart(2, '0')}${'.'.repeat(i % 3)}`);

(async () => {
  await cleanup([Q]);
  const done = new Map(); // task -> [[worker, redelivered, deliveryMode]]

  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertQueue(Q, { durable: true });
  ch.sendToQueue(Q, Buffer.from('doomed task'), { persistent: true });
  const dying = await connect();
  const dch = await channel(dying);
  await dch.prefetch(1);
  // the publish may still be on its way: get until it comes (10 s at most)
  let m = false;
  for (const deadline = Date.now() + 10000; !m && Date.now() < deadline;) {
    m = await dch.get(Q, { noAck: false });
    if (!m) await sleep(20);
  }
  say(`the dying worker took ${r(m.content.toString())} (redelivered ${m.fields.redelivered ? 'True' : 'False'}) and dies without acking`);
  await dying.close();

  const workers = [];
  for (const name of ['w1', 'w2']) {
    const wc = await connect();
    const wch = await channel(wc);
    await wch.assertQueue(Q, { durable: true });
    await wch.prefetch(1);
    await wch.consume(Q, async (msg) => {
      const task = msg.content.toString();
      await sleep(20 * (1 + (task.match(/\./g) || []).length)); // the dots are the work
      if (!done.has(task)) done.set(task, []);
      done.get(task).push([name, msg.fields.redelivered, msg.properties.deliveryMode]);
      wch.ack(msg);
    });
    workers.push(wc);
  }
  for (const t of TASKS) {
    ch.sendToQueue(Q, Buffer.from(t), { persistent: true });
    say(` [x] Sent ${r(t)}`);
  }
  await waitUntil(() => done.size === TASKS.length + 1, 20000);
  await sleep(100);
  for (const wc of workers) await wc.close();
  for (const t of ['doomed task', ...TASKS]) {
    const runs = done.get(t) || [];
    say(` [x] Done ${r(t)} ${runs.length} time(s), redelivered ${r(runs.map((x) => x[1]))}, delivery_mode ${r(runs.map((x) => x[2]))}`);
    check(runs.length === 1, `${t} done exactly once`);
  }
  check((done.get('doomed task') || [[null, false]])[0][1] === true, "the dead worker's task came again flagged redelivered");
  const per = { w1: 0, w2: 0 };
  for (const runs of done.values()) for (const x of runs) per[x[0]]++;
  const both = per.w1 > 0 && per.w2 > 0;
  say(`both workers did some work: ${both ? 'True' : 'False'}`);
  check(both, 'both workers got work');
  const ok = await ch.checkQueue(Q);
  say(`queue ${Q} after: ${ok.messageCount} messages`);
  await conn.close();
  await cleanup([Q]);
  await finish('work_queues');
})().catch((e) => { console.error(e); process.exit(2); });
