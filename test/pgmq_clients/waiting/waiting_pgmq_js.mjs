// @waiting/pgmq-js (npm, pinned by package-lock.json), a second pgmq client
// (TypeScript on knex and pg): every call of its API against a database with
// queue_ext_pgmq (or pgmq itself), one line per call, which
// test/t/058_pgmq_client2.pl compares with what pgmq 1.12 gives.
//
//	node waiting_pgmq_js.mjs HOST PORT DATABASE USER
//
// HOST may be a socket directory.  The client is used unchanged.  Its own
// tables pgmq.tb_queue_meta and pgmq.tb_route (client_tables.sql) and
// pg_partman in schema pgmq (its partition calls name pg_partman's
// functions there) are made beforehand, as its documentation asks.
import { Pgmq } from '@waiting/pgmq-js';

const [host, port, database, user] = process.argv.slice(2);

function out(...words) {
  console.log(words.join(' '));
}

// The SQLSTATE and message of a failed call
async function fails(f) {
  try {
    await f();
    return 'no error';
  } catch (e) {
    return `error ${e.code ?? '-'} ${e.message.replace(/^.* - /, '')}`;
  }
}

const mq = new Pgmq('ci', {
  connection: { host, port: Number(port), database, user, password: '', statement_timeout: 20000 },
  pool: { min: 0, max: 4 },
});

async function main() {
  // the instance
  out('getCurrentTime', (await mq.getCurrentTime()) instanceof Date);
  out('getTimestamp', (await mq.getTimestamp('1 hour')) - (await mq.getCurrentTime()) > 3500 * 1000);
  out('setTimeZone', await mq.setTimeZone('UTC'));
  out('tableExists', await mq.tableExists('meta', 'pgmq'), await mq.tableExists('nothing', 'pgmq'));

  // queues (each also a row of the client's pgmq.tb_queue_meta)
  const jobsId = await mq.queue.create({ queue: 'W_Jobs', queueKey: 'jobs.main' });
  out('queue.create', /^\d+$/.test(String(jobsId)));
  out('queue.create again', await fails(() => mq.queue.create({ queue: 'w_jobs' })));
  await mq.queue.createUnlogged({ queue: 'w_fast', queueKey: 'jobs.fast' });
  out('queue.createUnlogged done');
  out('queue.hasQueue', await mq.queue.hasQueue({ queue: 'w_jobs' }), await mq.queue.hasQueue({ queue: 'w_none' }));
  const one = await mq.queue.getOne({ queue: 'w_fast' });
  out('queue.getOne', one.queue, one.isPartitioned, one.isUnlogged, one.createdAt instanceof Date || !Number.isNaN(Date.parse(one.createdAt)));
  out('queue.list', (await mq.queue.list()).map((q) => `${q.queue}:${q.isPartitioned}:${q.isUnlogged}`).sort().join(','));

  // the client's queue meta
  out('queueMeta.count', await mq.queueMeta.count());
  const meta = await mq.queueMeta.getByName({ queue: 'w_jobs' });
  out('queueMeta.getByName', meta.queue, meta.queueKey, String(meta.queueId) === String(jobsId));
  out('queueMeta.getById', (await mq.queueMeta.getById({ queueId: jobsId })).queue);
  out('queueMeta.list', (await mq.queueMeta.list({ order: 'asc' })).map((m) => m.queue).join(','));
  await mq.queueMeta.update({ queue: 'w_jobs', queueKey: 'jobs.main', json: { owner: 'ci' } });
  out('queueMeta.update', JSON.stringify((await mq.queueMeta.getById({ queueId: jobsId })).json));
  out('queueMeta.hasQueueMeta', await mq.queueMeta.hasQueueMeta({ queue: 'w_fast' }),
    await mq.queueMeta.hasQueueMeta({ queue: 'w_none' }));

  // sending
  out('msg.send', (await mq.msg.send({ queue: 'w_jobs', msg: { n: 1 } })).join(','));
  out('sendMsg', (await mq.sendMsg({ queue: 'w_jobs', msg: { n: 2 }, headers: { k: 'v' } })).join(','));
  out('msg.send delayed', (await mq.msg.send({ queue: 'w_jobs', msg: { n: 3 }, delay: 3600 })).join(','));
  const at = await mq.getTimestamp('1 hour');
  out('msg.send at', (await mq.msg.send({ queue: 'w_fast', msg: { n: 1 }, delay: at })).join(','));
  out('msg.send to two queues', (await mq.msg.send({ queue: ['w_jobs', 'w_none', 'w_fast'], msg: { n: 4 } })).join(','));
  out('msg.sendBatch', (await mq.msg.sendBatch({ queue: 'w_jobs', msgs: [{ n: 5 }, { n: 6 }, { n: 7 }] })).join(','));
  out('msg.sendBatch headers', (await mq.msg.sendBatch({ queue: 'w_jobs', msgs: [{ n: 8 }], headers: [{ h: 1 }] })).join(','));
  out('msg.sendBatch at', (await mq.msg.sendBatch({ queue: 'w_fast', msgs: [{ n: 2 }], delay: at })).join(','));
  out('msg.sendBatch to two queues', (await mq.msg.sendBatch({ queue: ['w_jobs', 'w_fast'], msgs: [{ n: 9 }] })).join(','));

  // reading
  const m = await mq.msg.read({ queue: 'w_jobs', vt: 30 });
  out('msg.read', m.msgId, m.readCt, JSON.stringify(m.message), new Date(m.vt) > new Date(m.enqueuedAt));
  const b = await mq.msg.readBatch({ queue: 'w_jobs', vt: 30, qty: 2 });
  out('msg.readBatch', b.map((x) => `${x.msgId}:${x.readCt}:${JSON.stringify(x.message)}:${JSON.stringify(x.headers ?? null)}`).join(','));
  const c = await mq.msg.readBatch({ queue: 'w_jobs', vt: 30, qty: 5, conditional: { n: 6 } });
  out('msg.readBatch conditional', c.map((x) => `${x.msgId}:${JSON.stringify(x.message)}`).join(','));
  out('msg.readBatch fast', (await mq.msg.readBatch({ queue: 'w_fast', vt: 30, qty: 10 })).map((x) => JSON.stringify(x.message)).join(','));
  out('msg.read none', (await mq.msg.read({ queue: 'w_fast', vt: 30 })) === null);
  const p = await mq.msg.readWithPoll({ queue: 'w_jobs', vt: 30, qty: 1, maxPollSeconds: 1, pollIntervalMs: 50 });
  out('msg.readWithPoll', p.map((x) => `${x.msgId}:${JSON.stringify(x.message)}`).join(','));
  const pe = await mq.msg.readWithPoll({ queue: 'w_fast', vt: 30, qty: 1, maxPollSeconds: 1, pollIntervalMs: 50 });
  out('msg.readWithPoll empty', pe.length);
  const popped = await mq.msg.pop({ queue: 'w_jobs' });
  out('msg.pop', popped.msgId, JSON.stringify(popped.message));

  // settling
  out('msg.delete', (await mq.msg.delete({ queue: 'w_jobs', msgId: m.msgId })).join(','),
    (await mq.msg.delete({ queue: 'w_jobs', msgId: m.msgId })).length);
  out('msg.deleteBatch', (await mq.msg.deleteBatch({ queue: 'w_jobs', msgIds: [b[0].msgId, 999] })).join(','));
  out('msg.archive', (await mq.msg.archive({ queue: 'w_jobs', msgId: b[1].msgId })).join(','),
    (await mq.msg.archive({ queue: 'w_jobs', msgId: 999 })).length);
  out('msg.archiveBatch', (await mq.msg.archiveBatch({ queue: 'w_jobs', msgIds: [3, 999] })).join(','));
  // three untyped parameters: pgmq's four set_vt forms make that ambiguous
  out('msg.setVt', await fails(() => mq.msg.setVt({ queue: 'w_jobs', msgId: 8, vt: 0 })));

  // a transaction of the client's
  const trx = await mq.startTransaction();
  const inTrx = await mq.msg.send({ queue: 'w_jobs', msg: { n: 10 }, trx });
  await trx.rollback();
  out('startTransaction rollback', inTrx.join(','), (await mq.msg.readBatch({ queue: 'w_jobs', vt: 0, qty: 10, conditional: { n: 10 } })).length);
  const trx2 = await mq.startTransaction();
  await mq.msg.send({ queue: 'w_jobs', msg: { n: 11 }, trx: trx2 });
  const got = await mq.msg.read({ queue: 'w_jobs', vt: 30, trx: trx2 });
  await mq.msg.delete({ queue: 'w_jobs', msgId: got.msgId, trx: trx2 });
  await trx2.commit();
  out('startTransaction commit', got.msgId, JSON.stringify(got.message));

  // metrics
  const mt = await mq.queue.getMetrics({ queue: 'w_jobs' });
  out('queue.getMetrics', mt.queue, mt.queueLength, mt.totalMessages, mt.newestMsgAgeSec !== undefined);
  out('queue.getAllMetrics', (await mq.queue.getAllMetrics()).map((x) => `${x.queue}:${x.queueLength}:${x.totalMessages}`).sort().join(','));

  // routes of the client (its exchanges): a route names queues of tb_queue_meta
  const fastMeta = await mq.queueMeta.getByName({ queue: 'w_fast' });
  const r1 = await mq.router.create({ routeName: 'R_Both', queueIds: [jobsId, fastMeta.queueId] });
  const r2 = await mq.router.createMatch({ routeName: 'r_jobs', routeRules: [/^jobs\./] });
  out('router.create', /^\d+$/.test(String(r1)), /^\d+$/.test(String(r2)));
  out('router.count', await mq.router.count({}));
  out('router.getOne', (await mq.router.getOne({ routeName: 'r_both' })).queueIds.length,
    (await mq.router.getOne({ routeId: r2 })).routeName);
  out('router.list', (await mq.router.list({})).map((x) => x.routeName).join(','));
  out('router.getAll', (await mq.router.getAll({ limit: 1 })).map((x) => x.routeName).join(','));
  const sent = await mq.sendRouteMsg({ routeName: 'r_both', msg: { n: 12 } });
  out('sendRouteMsg', sent.map((x) => `${x.queue}:${x.msgId}`).sort().join(','));
  const sent2 = await mq.routeMsg.send({ routeName: 'r_jobs', msg: { n: 13 }, delay: 0 });
  out('routeMsg.send', sent2.map((x) => x.queue).sort().join(','));
  await mq.router.delete({ routeId: r1 });
  out('router.delete', await mq.router.count({}));
  await mq.router.truncate();
  out('router.truncate', await mq.router.count({}));

  // partitioned queues (pg_partman)
  const partId = await mq.partition.createPartitioned({ queue: 'w_part', partitionInterval: '10000', retentionInterval: '100000' });
  out('partition.createPartitioned', /^\d+$/.test(String(partId)));
  const parts = await mq.partition.showPartitions({ queue: 'pgmq.a_w_part' });
  out('partition.showPartitions', parts.length > 0);
  await mq.partition.runMaintenance();
  out('partition.runMaintenance done');
  out('partition send', (await mq.msg.send({ queue: 'w_part', msg: { n: 1 } })).join(','));

  // the rest of the queues' calls
  out('queue.purge', await mq.queue.purge({ queue: 'w_fast' }));
  await mq.queue.detachArchive({ queue: 'w_fast' });
  out('queue.detachArchive done');
  out('queue.drop', await mq.queue.drop({ queue: 'w_fast' }), await mq.queue.drop({ queue: 'w_jobs' }),
    await mq.queue.drop({ queue: 'w_part' }));
  out('queue.drop missing', await mq.queue.drop({ queue: 'w_fast' }));
  out('queueMeta.count after drop', await mq.queueMeta.count());
  await mq.queueMeta.create({ queue: 'w_orphan' });
  await mq.queueMeta.delete({ queue: 'w_orphan' });
  out('queueMeta.create+delete', await mq.queueMeta.count());
  await mq.queue.create({ queue: 'w_sync' });
  await mq.queueMeta.truncate();
  out('queueMeta.truncate', await mq.queueMeta.count());
  await mq.syncQueueMeta();
  out('syncQueueMeta', (await mq.queueMeta.list()).map((x) => x.queue).join(','));
  out('queue.drop last', await mq.queue.drop({ queue: 'w_sync' }));
  out('queue.list after drop', (await mq.queue.list()).length);
  out('waiting_pgmq_js: OK');
}

main()
  .catch((e) => {
    out('FAILED', e.code ?? '-', e.message);
    process.exitCode = 1;
  })
  .finally(() => mq.destroy());
