// mq-rocketmq's TLS listener and --max-connections
// (test/t/063_rocketmq_tls.pl), with the official client
// (rocketmq-client-nodejs) and, for the connection count, Node's http2
// module (nghttp2): nothing here frames HTTP/2 by hand.
//
// node tls_check.js MODE, MODE one of
//   roundtrip  sslEnabled: true (the CA in NODE_EXTRA_CA_CERTS): a producer
//              sends a message with tag, keys and properties, a
//              SimpleConsumer of RMQ_GROUP receives it, they round-trip, it
//              acks it
//   plain      sslEnabled: false against the TLS listener: the client
//              cannot start (its route queries fail)
//   noca       sslEnabled: true without the test CA: the client refuses the
//              server's certificate
//   limit      RMQ_LIMIT connections (the gateway's --max-connections) are
//              served, one more is closed without an HTTP/2 SETTINGS, the
//              first ones still answer PINGs; once two of them are closed
//              the official client starts and sends
// Environment as common.js says; "checks: DONE" last.
'use strict';

const http2 = require('http2');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { endpoints, topic, credentials, quiet, check, finish, sleep, withTimeout } = require('./common');

const group = process.env.RMQ_GROUP;

function producer(sslEnabled) {
  return new Producer({ endpoints, sslEnabled, namespace: '', sessionCredentials: credentials,
    logger: quiet, topics: [ topic ] });
}

// why a client's start-up failed: its error and the errors that caused it
function why(e) {
  const parts = [];
  for (let c = e; c; c = c.cause)
    parts.push(`${c.code !== undefined ? `[${c.code}] ` : ''}${c.message}`);
  return parts.join(' <- ');
}

async function roundtrip() {
  const p = producer(true);
  await withTimeout(p.startup(), 60000, 'producer start-up');
  check('tls_producer_start', true);
  const run = `${process.pid}-${Date.now()}`;
  const props = new Map([ [ 'run', run ], [ 'with space', 'v a l' ], [ 'unicode', 'é✓' ] ]);
  const sent = { topic, tag: 'TagTLS', keys: [ 'tls-key-1', 'tls-key-2' ], properties: props,
    body: Buffer.from(`over TLS ${run}`) };
  const receipt = await withTimeout(p.send(sent), 60000, 'send');
  check('tls_send', typeof receipt.messageId === 'string' && receipt.messageId.length > 0,
    `no message id: ${JSON.stringify(receipt)}`);

  const c = new SimpleConsumer({ endpoints, sslEnabled: true, namespace: '', sessionCredentials: credentials,
    logger: quiet, consumerGroup: group, subscriptions: new Map([ [ topic, '*' ] ]), awaitDuration: 3000 });
  await withTimeout(c.startup(), 60000, 'consumer start-up');
  check('tls_consumer_start', true);
  let got = null;
  for (let round = 0; round < 30 && !got; round++) {
    for (const v of await withTimeout(c.receive(16, 30000), 60000, 'receive')) {
      if (v.messageId === receipt.messageId)
        got = v;
      else
        await c.ack(v);
    }
  }
  check('tls_received', got !== null, 'the message never came');
  if (got) {
    const bad = [];
    if (got.body.toString() !== sent.body.toString()) bad.push(`body ${got.body}`);
    if (got.tag !== sent.tag) bad.push(`tag ${got.tag}`);
    if (JSON.stringify(got.keys) !== JSON.stringify(sent.keys)) bad.push(`keys ${JSON.stringify(got.keys)}`);
    if (got.properties.size !== props.size || [ ...props ].some(([ k, v ]) => got.properties.get(k) !== v))
      bad.push(`properties ${JSON.stringify([ ...got.properties ])}`);
    if (got.corrupted) bad.push('body digest mismatch');
    check('tls_round_trip', bad.length === 0, bad.join(', '));
    await withTimeout(c.ack(got), 60000, 'ack');
    check('tls_ack', true);
  }
  await c.shutdown();
  await p.shutdown();
}

// a client that must not start: "ok NAME" if its start-up fails and the
// error matches re
async function mustFail(name, sslEnabled, re) {
  const p = producer(sslEnabled);
  try {
    await withTimeout(p.startup(), 120000, 'producer start-up');
    check(name, false, 'the client started');
    await p.shutdown();
  } catch (e) {
    check(name, re.test(why(e)), why(e));
  }
}

// an HTTP/2 session to the gateway: resolves with it once the server's
// SETTINGS came (served) or with null once it closed without (refused)
function session() {
  return new Promise(resolve => {
    const s = http2.connect(`http://${endpoints}`);
    let settled = false;
    s.on('remoteSettings', () => { if (!settled) { settled = true; resolve(s); } });
    s.on('error', () => {});
    s.on('close', () => { if (!settled) { settled = true; resolve(null); } });
  });
}

function ping(s) {
  return new Promise(resolve => s.ping((err) => resolve(!err)));
}

async function limit() {
  const n = Number(process.env.RMQ_LIMIT);
  const first = [];
  for (let i = 0; i < n; i++)
    first.push(await withTimeout(session(), 60000, `session ${i + 1}`));
  check('limit_first_served', first.every(s => s !== null), `${first.filter(s => s === null).length} refused`);
  const over = await withTimeout(session(), 60000, `session ${n + 1}`);
  check('limit_over_closed', over === null, 'the connection past the limit was served');
  if (over) over.destroy();
  const pings = await Promise.all(first.map(s => (s ? withTimeout(ping(s), 60000, 'ping') : false)));
  check('limit_others_unaffected', pings.every(ok => ok), `pings ${pings.join(',')}`);
  // two closed: a connection is served again, once the gateway saw them go
  first[0].close();
  first[1].close();
  let again = null;
  for (let i = 0; i < 60 && !again; i++) {
    again = await withTimeout(session(), 60000, 'a session after two closed');
    if (!again) await sleep(500);
  }
  check('limit_served_after_close', again !== null, 'still refused');
  if (again) again.close();
  // the official client (one connection) starts and sends
  const p = producer(false);
  await withTimeout(p.startup(), 60000, 'producer start-up');
  const r = await withTimeout(p.send({ topic, body: Buffer.from('under the limit') }), 60000, 'send');
  check('limit_client_sends', typeof r.messageId === 'string' && r.messageId.length > 0, JSON.stringify(r));
  await p.shutdown();
  const pinged = await withTimeout(ping(first[2]), 60000, 'ping');
  check('limit_first_still_served', pinged, 'no PING answer');
  first[2].close();
}

async function main() {
  const mode = process.argv[2];
  if (mode === 'roundtrip') await roundtrip();
  else if (mode === 'plain') await mustFail('plain_client_refused', false, /UNAVAILABLE(?!.*ECONNREFUSED)/s);
  else if (mode === 'noca') await mustFail('unknown_ca_refused', true, /certificate/i);
  else if (mode === 'limit') await limit();
  else throw new Error(`unknown mode ${mode}`);
  finish();
}

main().catch(e => { check('no_exception', false, why(e)); finish(); });
