// amqplib only (no pika counterpart): headers of every AMQP field type
// amqplib can send -- among them the ones pika cannot: signed and unsigned
// 8/16/32-bit integers, 32- and 64-bit floats -- and queue arguments sent as
// amqplib sends small numbers (a short-short int for x-max-length 2) come
// back or act as sent.  Prints each header as received, sorted by name.
'use strict';
const { connect, channel, say, check, finish, cleanup } = require('./common');

const Q = 'tut.field_types';
const Q_ARGS = 'tut.field_types_args';

function show(v) {
  if (v === null) return 'null';
  if (Buffer.isBuffer(v)) return `bytes(${v.toString('hex')})`;
  if (Array.isArray(v)) return '[' + v.map(show).join(', ') + ']';
  if (typeof v === 'object') {
    if (Object.hasOwn(v, '!')) return `${v['!']}(${JSON.stringify(v.value)})`;
    return '{' + Object.keys(v).sort().map((k) => `${k}: ${show(v[k])}`).join(', ') + '}';
  }
  if (typeof v === 'string') return JSON.stringify(v);
  return `${typeof v}(${v})`;
}

const HEADERS = {
  str: 'text é', empty: '', byte: 5, neg_byte: -128, short: 300, neg_short: -32768,
  int: 70000, neg_int: -2147483648, long: 2 ** 40, neg_long: -(2 ** 40),
  double: 1.5, neg_double: -0.25, tiny_double: 1e-300,
  float: { '!': 'float', value: 0.5 },
  uint8: { '!': 'uint8', value: 255 }, uint16: { '!': 'uint16', value: 65535 },
  uint32: { '!': 'uint32', value: 4294967295 },
  int64: { '!': 'int64', value: 9007199254740991 },
  timestamp: { '!': 'timestamp', value: 1700000000 },
  decimal: { '!': 'decimal', value: { places: 2, digits: 12345 } },
  yes: true, no: false, nothing: null,
  bytes: Buffer.from([0, 1, 254, 255]),
  table: { a: 1, nested: { b: 'c', d: [1, 2.5] } },
  array: [1, 'two', 2.5, false, null, { k: 'v' }, [300, -1]],
  empty_table: {}, empty_array: [],
};

(async () => {
  await cleanup([Q, Q_ARGS]);
  const conn = await connect();
  const ch = await channel(conn, true);
  await ch.assertQueue(Q, { durable: false });
  await new Promise((res, rej) => ch.sendToQueue(Q, Buffer.from('typed'), { headers: HEADERS },
    (err) => (err ? rej(err) : res())));
  const m = await ch.get(Q, { noAck: true });
  check(m !== false, 'the message came back');
  const got = (m && m.properties.headers) || {};
  for (const k of Object.keys(HEADERS).sort()) {
    say(`header ${k}: ${show(got[k])}`);
    check(show(got[k]) === show(HEADERS[k]) ||
      // a timestamp, decimal or float comes back as what it is, whatever
      // amqplib's tag: compare values
      (HEADERS[k] && HEADERS[k]['!'] && !['timestamp', 'decimal', 'float'].includes(HEADERS[k]['!'])
        && show(got[k]) === show(HEADERS[k].value)) ||
      (HEADERS[k] && HEADERS[k]['!'] === 'float' && got[k] === 0.5),
    `header ${k} as sent`);
  }
  const extra = Object.keys(got).filter((k) => !Object.hasOwn(HEADERS, k));
  say(`headers not sent: ${extra.length ? extra.join(' ') : '(none)'}`);
  check(extra.length === 0, 'no headers added');

  // queue arguments as amqplib encodes them: x-max-length 2 is a short-short int
  const args = { 'x-max-length': 2, 'x-overflow': 'reject-publish', 'x-message-ttl': 600000 };
  await ch.assertQueue(Q_ARGS, { durable: false, arguments: args });
  await ch.assertQueue(Q_ARGS, { durable: false, arguments: args }); // the same again: ok
  const acked = [];
  for (const b of ['a', 'b', 'c']) {
    acked.push(await new Promise((res) => ch.sendToQueue(Q_ARGS, Buffer.from(b), {}, (err) => res(err ? 'nacked' : 'acked'))));
  }
  say(`publishes to a queue with x-max-length 2, reject-publish: ${acked.join(' ')}`);
  check(acked.join(' ') === 'acked acked nacked', 'x-max-length honoured');
  await conn.close();
  await cleanup([Q, Q_ARGS]);
  await finish('field_types');
})().catch((e) => { console.error(e); process.exit(2); });
