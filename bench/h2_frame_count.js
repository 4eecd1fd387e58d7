// A TCP proxy that counts the HTTP/2 frames (cleartext, prior knowledge, as
// gRPC's) each way between a client and a server, to compare what two
// servers make a client read: frames by type and flags, bytes, the TCP
// reads they arrived in, SETTINGS and WINDOW_UPDATE contents.
//   node h2_frame_count.js LISTEN_PORT TARGET_HOST:TARGET_PORT
// Prints a JSON summary of every connection when it closes (and all on SIGINT/SIGTERM).
'use strict';
const net = require('net');

const [listenPort, target] = process.argv.slice(2);
const [thost, tport] = target.split(':');
const TYPES = ['DATA', 'HEADERS', 'PRIORITY', 'RST_STREAM', 'SETTINGS', 'PUSH_PROMISE', 'PING', 'GOAWAY',
  'WINDOW_UPDATE', 'CONTINUATION'];
const SETTINGS = { 1: 'HEADER_TABLE_SIZE', 2: 'ENABLE_PUSH', 3: 'MAX_CONCURRENT_STREAMS', 4: 'INITIAL_WINDOW_SIZE',
  5: 'MAX_FRAME_SIZE', 6: 'MAX_HEADER_LIST_SIZE', 8: 'ENABLE_CONNECT_PROTOCOL' };
const conns = [];

function counter(skip) {
  const c = { chunks: 0, bytes: 0, frames: {}, headerBytes: 0, settings: [], windowUpdates: [], streams: new Set() };
  let buf = Buffer.alloc(0);
  let pre = skip;
  c.feed = d => {
    c.chunks++;
    c.bytes += d.length;
    buf = Buffer.concat([buf, d]);
    if (pre > 0) {
      const k = Math.min(pre, buf.length);
      buf = buf.subarray(k);
      pre -= k;
    }
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      const type = TYPES[buf[3]] || `type${buf[3]}`;
      const flags = buf[4];
      const sid = buf.readUInt32BE(5) & 0x7fffffff;
      const p = buf.subarray(9, 9 + len);
      const key = `${type}${flags ? '/0x' + flags.toString(16) : ''}`;
      c.frames[key] = (c.frames[key] || 0) + 1;
      if (sid) c.streams.add(sid);
      if (type === 'HEADERS' || type === 'CONTINUATION') c.headerBytes += len;
      if (type === 'SETTINGS' && !(flags & 1)) {
        const s = {};
        for (let i = 0; i + 6 <= p.length; i += 6) s[SETTINGS[p.readUInt16BE(i)] || p.readUInt16BE(i)] = p.readUInt32BE(i + 2);
        c.settings.push(s);
      }
      if (type === 'WINDOW_UPDATE' && c.windowUpdates.length < 20) c.windowUpdates.push([sid, p.readUInt32BE(0)]);
      buf = buf.subarray(9 + len);
    }
  };
  c.summary = () => ({ tcp_chunks: c.chunks, bytes: c.bytes, streams: c.streams.size, frames: c.frames,
    header_block_bytes: c.headerBytes, settings: c.settings, first_window_updates: c.windowUpdates });
  return c;
}

function report(x) {
  if (x.done) return;
  x.done = true;
  console.log(JSON.stringify({ conn: x.id, client_to_server: x.up.summary(), server_to_client: x.down.summary() }));
}

net.createServer(sock => {
  const x = { id: conns.length + 1, up: counter(24), down: counter(0) };
  conns.push(x);
  const out = net.connect(+tport, thost);
  sock.setNoDelay(true);
  out.setNoDelay(true);
  sock.on('data', d => { x.up.feed(d); out.write(d); });
  out.on('data', d => { x.down.feed(d); sock.write(d); });
  const end = () => { sock.destroy(); out.destroy(); report(x); };
  sock.on('close', end);
  out.on('close', end);
  sock.on('error', end);
  out.on('error', end);
}).listen(+listenPort, '127.0.0.1');
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => { conns.forEach(report); process.exit(0); });
