#!/usr/bin/env node
// worker.js: consume a batch, do the work, ack -- all in one transaction.
// The same as ../python/worker.py: the work is an INSERT into a table of the
// same database, so it is done exactly once per message; a failure before
// COMMIT rolls back the inserts and the consume together, and the messages
// come again (flagged redelivered).  --fail-every N rolls back every Nth
// batch on purpose, after its work, to show it.
//
//   node worker.js [--dsn URI] [--queue jobs] [--count N] [--idle-timeout 5]
//
// Stops after --count messages, or after --idle-timeout seconds without one;
// then checks its table (each message it did there once, none twice) and
// exits 0 only if that holds.
'use strict';

const { parse, connect } = require('./args');

class PlannedFailure extends Error {}

async function main() {
  const args = parse({
    dsn: '', queue: 'jobs', table: 'example_work', name: `node-${process.pid}`,
    count: 0, idleTimeout: 5, batch: 5, failEvery: 0,
  }, 'node worker.js [--dsn URI] [--queue Q] [--table T] [--name N] [--count N] ' +
     '[--idle-timeout S] [--batch N] [--fail-every N]');
  const client = await connect(args.dsn);
  const table = client.escapeIdentifier(args.table);
  let done = 0, redelivered = 0, batches = 0, rolledBack = 0;

  try {
    await client.query('BEGIN');
    // workers starting together: one creates the table, the others wait
    await client.query("SELECT pg_advisory_xact_lock(hashtext('queue_ext examples'))");
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (msg_id bigint NOT NULL,
      worker text NOT NULL, body text, headers jsonb, redelivered boolean,
      done_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await client.query('SELECT mq.queue_declare($1)', [args.queue]);
    await client.query('COMMIT');

    let lastMessage = Date.now();
    while (args.count === 0 || done < args.count) {
      const idle = (Date.now() - lastMessage) / 1000;
      if (idle >= args.idleTimeout) break;
      const wait = Math.min(1, args.idleTimeout - idle);
      const want = args.count === 0 ? args.batch : Math.min(args.batch, args.count - done);
      let rows = [];
      await client.query('BEGIN');
      try {
        rows = (await client.query(
          `SELECT msg_id, convert_from(body, 'UTF8') AS body, headers, redelivered
             FROM mq.consume($1, max_messages => $2, wait => make_interval(secs => $3),
                             lease => '30 seconds')`, [args.queue, want, wait])).rows;
        for (const m of rows) {              // the work
          await client.query(`INSERT INTO ${table} (msg_id, worker, body, headers, redelivered)
                              VALUES ($1, $2, $3, $4, $5)`,
          [m.msg_id, args.name, m.body, m.headers === null ? null : JSON.stringify(m.headers),
            m.redelivered]);
        }
        if (rows.length > 0) {
          batches++;
          if (args.failEvery > 0 && batches % args.failEvery === 0) throw new PlannedFailure();
          await client.query('SELECT mq.ack($1, $2::bigint[])', [args.queue, rows.map((m) => m.msg_id)]);
        }
        await client.query('COMMIT');         // the work and the acks, together
      } catch (e) {
        await client.query('ROLLBACK');
        if (!(e instanceof PlannedFailure)) throw e;
        rolledBack++;
        console.log(`worker ${args.name}: rolled back a batch of ${rows.length} on purpose ` +
          `(ids ${rows.map((m) => m.msg_id).join(', ')}): they come back`);
        lastMessage = Date.now();
        continue;
      }
      if (rows.length === 0) continue;
      for (const m of rows) {
        console.log(`worker ${args.name}: did ${m.msg_id} ${m.body}${m.redelivered ? ' (redelivered)' : ''}`);
      }
      done += rows.length;
      redelivered += rows.filter((m) => m.redelivered).length;
      lastMessage = Date.now();
    }

    const mine = (await client.query(
      `SELECT count(*)::int AS n, count(DISTINCT msg_id)::int AS d FROM ${table} WHERE worker = $1`,
      [args.name])).rows[0];
    const twice = (await client.query(
      `SELECT count(*)::int AS n FROM (SELECT msg_id FROM ${table} GROUP BY msg_id
        HAVING count(*) > 1) d`)).rows[0].n;
    let ok = mine.n === done && mine.d === done && twice === 0;
    let why = '';
    if (args.count > 0 && done < args.count) {
      ok = false;
      why = ` (only ${done} of ${args.count} before the idle timeout)`;
    }
    console.log(`worker ${args.name}: did ${done} messages (${redelivered} redelivered), ` +
      `${rolledBack} batches rolled back on purpose; ${args.table} holds ${mine.n} rows ` +
      `for it, ${mine.d} distinct, ${twice} messages done twice: ${ok ? 'OK' : 'FAILED'}${why}`);
    return ok ? 0 : 1;
  } finally {
    await client.end();
  }
}

main().then((rc) => { process.exitCode = rc; },
  (e) => { console.error(`worker: ${e.code ? e.code + ' ' : ''}${e.message}`); process.exitCode = 1; });
