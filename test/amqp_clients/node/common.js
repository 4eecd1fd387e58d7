// What the amqplib scripts share (as ../python/amqpcommon.py does for pika):
// the broker's URL (first argument or AMQP_URL), a transcript printed in
// the same words as the pika scripts', checks that make the script exit 1.
'use strict';
const amqp = require('amqplib');

const DEFAULT_URL = 'amqp://guest:guest@127.0.0.1:5672/%2F';
const failures = [];

function url() {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  return args[0] || process.env.AMQP_URL || DEFAULT_URL;
}

async function connect() {
  const conn = await amqp.connect(url(), { timeout: 10000 });
  conn.on('error', () => {});
  return conn;
}

async function channel(conn, confirm) {
  const ch = confirm ? await conn.createConfirmChannel() : await conn.createChannel();
  ch.on('error', () => {});
  return ch;
}

function say(line) {
  process.stdout.write(line + '\n');
}

function check(cond, what) {
  if (!cond) {
    failures.push(what);
    say('FAILED: ' + what);
  }
  return cond;
}

// Python's repr of a str, a list, a bool or None, as the pika scripts print them
function r(v) {
  if (v === undefined || v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (Array.isArray(v)) return '[' + v.map(r).join(', ') + ']';
  if (typeof v === 'number') return String(v);
  return "'" + v + "'";
}

function pyBool(b) {
  return b ? 'True' : 'False';
}

async function finish(name) {
  if (failures.length) {
    say(`${name}: ${failures.length} check(s) FAILED`);
    process.exit(1);
  }
  say(`${name}: OK`);
  process.exit(0);
}

async function cleanup(queues = [], exchanges = []) {
  const c = await connect();
  const ch = await channel(c);
  for (const q of queues) await ch.deleteQueue(q);
  for (const x of exchanges) await ch.deleteExchange(x);
  await c.close();
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

async function waitUntil(cond, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await sleep(20);
  return cond();
}

// A consumer on its own connection: an exclusive server-named queue bound
// to exchange with each of keys; the (routing key, body) pairs it got, in order
class Subscriber {
  constructor(name, exchange, keys) {
    Object.assign(this, { name, exchange, keys, got: [], queue: null });
  }

  async start() {
    this.conn = await connect();
    const ch = await channel(this.conn);
    const ok = await ch.assertQueue('', { exclusive: true });
    this.queue = ok.queue;
    for (const k of this.keys) await ch.bindQueue(this.queue, this.exchange, k);
    await ch.consume(this.queue, (m) => this.got.push([m.fields.routingKey, m.content.toString()]), {
      noAck: true,
    });
  }

  async stop() {
    await this.conn.close();
  }
}

// Whether a passive declare of queue name succeeds (404: it does not)
async function queueExists(name) {
  const c = await connect();
  const ch = await channel(c);
  try {
    await ch.checkQueue(name);
    await c.close();
    return true;
  } catch (e) {
    if (e.code !== 404) throw e;
    await c.close();
    return false;
  }
}

module.exports = {
  amqp, url, connect, channel, say, check, r, pyBool, finish, cleanup, sleep, waitUntil,
  Subscriber, queueExists,
};
