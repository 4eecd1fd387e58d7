// node rmq_tls_idle.js URL N PID: open N idle HTTP/2 connections to the
// gateway at URL (https: TLS, not verified) and print what the gateway
// process PID's resident memory grew by, a connection (bench/rmq_tls.sh)
'use strict';

const fs = require('fs');
const http2 = require('http2');

const [ url, n, pid ] = [ process.argv[2], Number(process.argv[3]), process.argv[4] ];
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

function connect() {
  return new Promise((resolve, reject) => {
    const s = http2.connect(url, { rejectUnauthorized: false });
    s.on('remoteSettings', () => resolve(s));
    s.on('error', reject);
  });
}

(async () => {
  const before = rss();
  const sessions = [];
  for (let i = 0; i < n; i++)
    sessions.push(await connect());
  await new Promise(resolve => setTimeout(resolve, 1000));
  const after = rss();
  console.log(`idle ${url.split(':')[0]} ${n} connections: RSS ${before} kB -> ${after} kB, ` +
    `${((after - before) / n).toFixed(1)} kB a connection`);
  sessions.forEach(s => s.destroy());
  process.exit(0);
})().catch(e => { console.error(e); process.exit(1); });
