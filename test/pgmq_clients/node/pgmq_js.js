// pgmq-js (npm, pinned by package-lock.json): every call of its API, against
// a database with queue_ext_pgmq (or pgmq itself), printing one line per
// call that test/t/055_pgmq_js.pl compares with what pgmq gives.
//
//	node pgmq_js.js HOST PORT DATABASE USER
//
// HOST may be a socket directory.  The client is used unchanged; only its
// options are set: no SSL, and no CREATE EXTENSION pgmq (the extension here
// is queue_ext_pgmq, created beforehand).
'use strict';
const { Pgmq } = require('pgmq-js');

const [host, port, database, user] = process.argv.slice(2);

function out(...words) {
  console.log(words.join(' '));
}

async function main() {
  const pgmq = await Pgmq.new(
    { host, port: Number(port), database, user, password: '', ssl: false },
    { skipExtensionCreation: true },
  );
  try {
    // queues
    await pgmq.queue.create('js_jobs');
    await pgmq.queue.create('js_jobs'); // idempotent
    await pgmq.queue.createUnlogged('js_fast');
    const list = await pgmq.queue.list();
    out('list', list
      .map((q) => `${q.name}:${q.isPartitioned}:${q.isUnlogged}:${!Number.isNaN(q.createdAt.getTime())}`)
      .sort()
      .join(','));

    // sending
    out('send', await pgmq.msg.send('js_jobs', { n: 1 }));
    out('send delay 0', await pgmq.msg.send('js_jobs', { n: 2 }, 0));
    out('sendBatch', (await pgmq.msg.sendBatch('js_jobs', [{ n: 3 }, { n: 4 }, { n: 5 }])).join(','));
    out('send delayed', await pgmq.msg.send('js_jobs', { n: 6 }, 3600));
    out('sendBatch delayed', (await pgmq.msg.sendBatch('js_fast', ['a', 'b'], 3600)).join(','));

    // reading
    const m = await pgmq.msg.read('js_jobs', 30);
    out('read', m.msgId, m.readCount, JSON.stringify(m.message), m.vt > m.enqueuedAt);
    const batch = await pgmq.msg.readBatch('js_jobs', 30, 2);
    out('readBatch', batch.map((x) => `${x.msgId}:${x.readCount}:${JSON.stringify(x.message)}`).join(','));
    out('read none', (await pgmq.msg.readBatch('js_fast', 30, 5)).length);
    out('read default vt', (await pgmq.msg.read('js_fast')) === undefined);

    // settling
    out('delete', await pgmq.msg.delete('js_jobs', m.msgId), await pgmq.msg.delete('js_jobs', m.msgId));
    out('deleteBatch', (await pgmq.msg.deleteBatch('js_jobs', [batch[0].msgId, 999])).join(','));
    out('archive', await pgmq.msg.archive('js_jobs', batch[1].msgId), await pgmq.msg.archive('js_jobs', 999));
    out('archiveBatch', (await pgmq.msg.archiveBatch('js_jobs', [4, 999])).join(','));

    // setVt sends three untyped parameters: pgmq's four set_vt forms make
    // that ambiguous (as in pgmq since set_vt took a timestamptz and arrays)
    try {
      const v = await pgmq.msg.setVt('js_jobs', 5, 0);
      out('setVt', v === undefined ? 'none' : v.msgId);
    } catch (e) {
      out('setVt error', e.code, e.message);
    }

    const p = await pgmq.msg.pop('js_jobs');
    out('pop', p.msgId, p.readCount, JSON.stringify(p.message));
    out('pop empty', (await pgmq.msg.pop('js_jobs')) === undefined);

    // metrics
    const met = await pgmq.queue.getMetrics('js_jobs');
    out('metrics', met.queueName, met.queueLength, met.totalMessages,
      met.newestMsgAgeSec !== undefined, !Number.isNaN(met.scrapeTime.getTime()));
    const all = await pgmq.queue.getAllMetrics();
    out('allMetrics', all.map((x) => `${x.queueName}:${x.queueLength}:${x.totalMessages}`).sort().join(','));

    // purge, detach, drop
    await pgmq.queue.purge('js_fast');
    out('purge', (await pgmq.queue.getMetrics('js_fast')).queueLength);
    await pgmq.queue.detachArchive('js_jobs');
    out('detachArchive done');
    await pgmq.queue.drop('js_jobs');
    await pgmq.queue.drop('js_fast');
    out('list after drop', (await pgmq.queue.list()).length);
  } finally {
    await pgmq.close();
  }
  out('pgmq_js: OK');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
