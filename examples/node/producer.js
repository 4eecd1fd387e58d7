#!/usr/bin/env node
// producer.js: declare a direct exchange and a queue bound to it, then
// publish N messages with headers, all in one transaction (COMMIT confirms
// them all).  The same as ../python/producer.py.
//
//   node producer.js [--dsn URI] [--queue jobs] [--count 10]
//
// Prints one line per message and a summary; exits 0 only if every message
// got its own id.
'use strict';

const { parse, connect } = require('./args');

async function main() {
  const args = parse({ dsn: '', exchange: 'examples', queue: 'jobs', count: 10, prefix: 'job' },
    'node producer.js [--dsn URI] [--exchange X] [--queue Q] [--count N] [--prefix P]');
  const client = await connect(args.dsn);
  const ids = [];
  try {
    // topology: idempotent, so every producer and worker may declare it
    await client.query("SELECT mq.exchange_declare($1, type => 'direct')", [args.exchange]);
    await client.query('SELECT mq.queue_declare($1)', [args.queue]);
    await client.query('SELECT mq.bind($1, $2, binding_key => $1)', [args.queue, args.exchange]);

    await client.query('BEGIN');
    try {
      for (let seq = 1; seq <= args.count; seq++) {
        const body = `${args.prefix}-${seq}`;
        const headers = { seq, producer: 'node' };
        // mandatory: an unroutable message raises (P0002) instead of being
        // dropped, and the whole transaction is undone
        const r = await client.query(
          'SELECT mq.publish($1, $2, $3::text, headers => $4::jsonb, mandatory => true) AS id',
          [args.exchange, args.queue, body, JSON.stringify(headers)]);
        ids.push(r.rows[0].id);           // a bigint comes as a string
        console.log(`producer: published ${r.rows[0].id} ${body} headers=${JSON.stringify(headers)}`);
      }
      await client.query('COMMIT');       // now consumers can see them
    } catch (e) {
      await client.query('ROLLBACK');
      throw e;
    }
  } finally {
    await client.end();
  }

  const ok = ids.length === args.count && !ids.includes(null) && new Set(ids).size === ids.length;
  console.log(`producer: published ${ids.length} messages to exchange ${args.exchange} ` +
    `(routing key ${args.queue}) in one transaction: ${ok ? 'OK' : 'FAILED'}`);
  return ok ? 0 : 1;
}

main().then((rc) => { process.exitCode = rc; },
  (e) => { console.error(`producer: ${e.code ? e.code + ' ' : ''}${e.message}`); process.exitCode = 1; });
