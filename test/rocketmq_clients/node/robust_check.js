// Robustness of mq-rocketmq (test/t/056_rocketmq_robustness.pl): bad input,
// every RPC of MessagingService, slow, idle and vanishing clients, and
// clients across a PostgreSQL restart.  HTTP/2 is Node's http2 module
// (nghttp2) and gRPC @grpc/grpc-js, as the official client
// (rocketmq-client-nodejs) uses, whose generated messages build the requests;
// nothing here frames HTTP/2 by hand.
//
// node robust_check.js MODE, MODE one of
//   checks       bad input and every RPC (each "ok NAME" / "not ok NAME: why")
//   slow_reader  a client that reads nothing while the gateway answers it
//                (RMQ_GATEWAY_PID: the gateway's memory is read from /proc)
//   idle         RMQ_IDLE_CONNECTIONS idle connections and idle streams
//   vanish       a client vanishes during a long poll; its message is not lost
//                (RMQ_GROUP: a group of RMQ_TOPIC that nothing else uses)
//   load         the official Producer sends until RMQ_STOP_FILE exists, each
//                confirmed send's body a line of RMQ_CONFIRMED_FILE; a
//                SimpleConsumer long-polls RMQ_POLL_TOPIC meanwhile
//   drain        a SimpleConsumer of RMQ_GROUP receives every body of
//                RMQ_CONFIRMED_FILE
// Environment as common.js says; "checks: DONE" last.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http2 = require('http2');
const net = require('net');
const { Duplex } = require('stream');
const grpc = require('@grpc/grpc-js');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { endpoints, topic, credentials, quiet, check, finish, sleep, withTimeout } = require('./common');

const SERVICE = '/apache.rocketmq.v2.MessagingService/';
const [host, port] = endpoints.split(':');
const group = process.env.RMQ_GROUP;

// the signed request headers the client sends
function authHeaders() {
  const h = { 'x-mq-client-id': `robust-${process.pid}`, 'x-mq-protocol': 'v2' };
  if (credentials) {
    const { sign, getRequestDateTime } = require('rocketmq-client-nodejs/dist/util');
    const dt = getRequestDateTime();
    h['x-mq-date-time'] = dt;
    h.authorization = `MQv2-HMAC-SHA1 Credential=${credentials.accessKey}, SignedHeaders=x-mq-date-time, Signature=${sign(credentials.accessSecret, dt)}`;
  }
  return h;
}
function metadata() {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(authHeaders())) md.set(k, v);
  return md;
}

// gRPC calls of raw request bytes (grpc-js frames them)
const raw = new grpc.Client(endpoints, grpc.credentials.createInsecure());
const deadline = () => new Date(Date.now() + 60000);
function unary(method, bytes) {
  return new Promise(resolve => {
    raw.makeUnaryRequest(SERVICE + method, x => x, x => x, Buffer.from(bytes), metadata(),
      { deadline: deadline() }, (err, res) => resolve({ err, res }));
  });
}
// a server-streaming call: its responses, then its end
function serverStream(method, bytes) {
  return new Promise(resolve => {
    const out = [];
    const call = raw.makeServerStreamRequest(SERVICE + method, x => x, x => x, Buffer.from(bytes),
      metadata(), { deadline: deadline() });
    call.on('data', d => out.push(d));
    call.on('error', err => resolve({ err, out }));
    call.on('end', () => resolve({ err: null, out }));
  });
}
// the Status of a response: field 1 of every response message
function statusCode(buf) {
  const st = pb.HeartbeatResponse.deserializeBinary(buf).getStatus();
  return st ? st.getCode() : null;
}
function describe({ err, res }) {
  return err ? `gRPC error ${err.code} ${err.details}` : `status ${statusCode(res)}`;
}
// a unary answer with Status code
async function expectStatus(name, method, bytes, code) {
  const r = await unary(method, bytes);
  check(name, !r.err && statusCode(r.res) === code, `${describe(r)}, expected ${code}`);
}
// a ReceiveMessage-like answer ending with Status code
async function expectStreamStatus(name, method, bytes, code) {
  const { err, out } = await serverStream(method, bytes);
  const codes = out.map(b => pb.ReceiveMessageResponse.deserializeBinary(b))
    .filter(r => r.hasStatus()).map(r => r.getStatus().getCode());
  check(name, !err && codes.length === 1 && codes[0] === code,
    err ? `gRPC error ${err.code} ${err.details}` : `statuses ${codes.join(',')}, expected ${code}`);
}
// the gateway still serves: a Heartbeat answers OK
async function stillServing(name) {
  await expectStatus(name, 'Heartbeat', new pb.HeartbeatRequest().serializeBinary(), defs.Code.OK);
}

// an HTTP/2 session of Node's http2 over a socket the test controls: what
// the gateway sends is held (not given to http2) while hold is true, and
// inject writes bytes to the gateway outside of HTTP/2
async function controlledSession(options = {}) {
  const sock = net.connect(Number(port), host);
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  const ctl = { sock, hold: false, held: [], heldBytes: 0, closed: false };
  const duplex = new Duplex({
    read() {},
    write(chunk, enc, cb) { if (sock.destroyed) cb(); else sock.write(chunk, () => cb()); },
    final(cb) { sock.end(); cb(); },
  });
  sock.on('data', d => {
    if (ctl.hold) { ctl.held.push(d); ctl.heldBytes += d.length; } else duplex.push(d);
  });
  sock.on('close', () => { ctl.closed = true; duplex.push(null); });
  sock.on('error', () => {});
  ctl.release = () => {
    ctl.hold = false;
    for (const d of ctl.held) duplex.push(d);
    ctl.held = [];
    sock.resume();
  };
  ctl.session = http2.connect(`http://${endpoints}`, { createConnection: () => duplex, ...options });
  ctl.session.on('error', () => {});
  await new Promise((resolve, reject) => { ctl.session.once('connect', resolve); ctl.session.once('error', reject); });
  return ctl;
}

// one request on an http2 session: body as given (gRPC-framed or not)
function h2Request(session, method, body, { end = true } = {}) {
  return new Promise(resolve => {
    const req = session.request({ ':method': 'POST', ':path': SERVICE + method,
      'content-type': 'application/grpc', te: 'trailers', ...authHeaders() });
    const r = { headers: null, trailers: null, data: [], req };
    req.on('response', h => { r.headers = h; });
    req.on('trailers', t => { r.trailers = t; });
    req.on('data', d => r.data.push(d));
    req.on('close', () => resolve(r));
    req.on('error', () => {});
    if (end) req.end(body); else if (body) req.write(body);
  });
}
function grpcStatus(r) {
  const t = r.trailers || r.headers || {};
  return t['grpc-status'] === undefined ? null : Number(t['grpc-status']);
}
function frame(bytes) {
  const b = Buffer.from(bytes);
  const h = Buffer.alloc(5);
  h.writeUInt32BE(b.length, 1);
  return Buffer.concat([h, b]);
}

const res = name => new defs.Resource().setName(name);
function message(t, body, id) {
  const sp = new defs.SystemProperties().setMessageId(id || crypto.randomUUID())
    .setBodyEncoding(defs.Encoding.IDENTITY).setMessageType(defs.MessageType.NORMAL)
    .setBornHost('robust');
  return new defs.Message().setTopic(res(t)).setSystemProperties(sp).setBody(body);
}
const receiveRequest = (t, g, { wait = 0, invisible = 30000 } = {}) => new pb.ReceiveMessageRequest()
  .setGroup(res(g)).setMessageQueue(new defs.MessageQueue().setTopic(res(t)))
  .setFilterExpression(new defs.FilterExpression().setType(defs.FilterType.TAG).setExpression('*'))
  .setBatchSize(16).setAutoRenew(false)
  .setInvisibleDuration(new (require('google-protobuf/google/protobuf/duration_pb').Duration)()
    .setSeconds(Math.floor(invisible / 1000)).setNanos((invisible % 1000) * 1e6))
  .setLongPollingTimeout(new (require('google-protobuf/google/protobuf/duration_pb').Duration)()
    .setSeconds(Math.floor(wait / 1000)).setNanos((wait % 1000) * 1e6));

// ---------------------------------------------------------------------------
async function checks() {
  const C = defs.Code;

  // random bytes instead of the connection preface: closed, others served
  {
    const sock = net.connect(Number(port), host);
    sock.on('error', () => {});
    await new Promise(resolve => sock.once('connect', resolve));
    const closed = new Promise(resolve => sock.once('close', () => resolve(true)));
    sock.write(crypto.randomBytes(65536));
    sock.resume();
    check('random_bytes_closed', await withTimeout(closed, 60000, 'close').catch(() => false), 'still open');
  }
  await stillServing('serving_after_random_bytes');

  // bad HTTP/2 frames inside a good session: GOAWAY and closed
  {
    const ctl = await controlledSession();
    const ok = await h2Request(ctl.session, 'Heartbeat', frame(new pb.HeartbeatRequest().serializeBinary()));
    check('controlled_session_works', grpcStatus(ok) === 0, `grpc-status ${grpcStatus(ok)}`);
    const closed = new Promise(resolve => ctl.sock.once('close', () => resolve(true)));
    ctl.sock.write(crypto.randomBytes(65536));
    check('bad_frames_closed', await withTimeout(closed, 60000, 'close').catch(() => false), 'still open');
    ctl.session.destroy();
  }
  await stillServing('serving_after_bad_frames');

  // gRPC framing: truncated message, compressed flag, a length over the
  // gateway's limit, no message at all
  {
    const s = http2.connect(`http://${endpoints}`);
    s.on('error', () => {});
    const q = new pb.QueryRouteRequest().setTopic(res(topic)).serializeBinary();
    const truncated = Buffer.concat([Buffer.from([0, 0, 0, 0, 100]), Buffer.from(q).subarray(0, 3)]);
    let r = await h2Request(s, 'QueryRoute', truncated);
    check('grpc_truncated_message', grpcStatus(r) === 13, `grpc-status ${grpcStatus(r)}`);
    const compressed = frame(q);
    compressed[0] = 1;
    r = await h2Request(s, 'QueryRoute', compressed);
    check('grpc_compressed_message', grpcStatus(r) === 12, `grpc-status ${grpcStatus(r)}`);
    r = await h2Request(s, 'SendMessage', Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]), { end: false });
    check('grpc_length_over_limit', grpcStatus(r) === 8, `grpc-status ${grpcStatus(r)}`);
    r = await h2Request(s, 'QueryRoute', Buffer.alloc(0));
    check('grpc_no_message', grpcStatus(r) === 13, `grpc-status ${grpcStatus(r)}`);
    r = await h2Request(s, 'NoSuchMethod', frame(q));
    check('grpc_unknown_method', grpcStatus(r) === 12, `grpc-status ${grpcStatus(r)}`);
    s.close();
  }

  // a protobuf that does not parse: BAD_REQUEST, for every RPC that reads one
  const junk = Buffer.from([0xff, 0xff, 0xff]);
  for (const m of ['QueryRoute', 'SendMessage', 'QueryAssignment', 'AckMessage',
    'ForwardMessageToDeadLetterQueue', 'EndTransaction', 'ChangeInvisibleDuration'])
    await expectStatus(`unparsable_${m}`, m, junk, C.BAD_REQUEST);
  await expectStreamStatus('unparsable_ReceiveMessage', 'ReceiveMessage', junk, C.BAD_REQUEST);
  // a field of the wrong wire type: field 1 (topic, a message) as a varint
  await expectStatus('wrong_wire_type', 'QueryRoute', Buffer.from([0x08, 0x01]), C.BAD_REQUEST);
  {
    const call = raw.makeBidiStreamRequest(SERVICE + 'Telemetry', x => x, x => x, metadata(), { deadline: deadline() });
    const err = await new Promise(resolve => {
      call.on('data', () => {});
      call.on('error', e => resolve(e));
      call.on('end', () => resolve(null));
      call.write(junk);
    });
    check('unparsable_Telemetry', err && err.code === grpc.status.INVALID_ARGUMENT,
      err ? `gRPC error ${err.code}` : 'ended OK');
  }
  await stillServing('serving_after_bad_messages');

  // oversize: a body over --max-body-size (4 MiB, RocketMQ's default)
  {
    const body = Buffer.alloc(4 * 1024 * 1024 + 1, 0x61);
    const q = new pb.SendMessageRequest().setMessagesList([message(topic, body)]);
    const r = await unary('SendMessage', q.serializeBinary());
    const entries = r.err ? [] : pb.SendMessageResponse.deserializeBinary(r.res).getEntriesList();
    check('oversize_body', !r.err && statusCode(r.res) === C.MESSAGE_BODY_TOO_LARGE &&
      entries.length === 1 && entries[0].getStatus().getCode() === C.MESSAGE_BODY_TOO_LARGE, describe(r));
  }
  await stillServing('serving_after_oversize');

  // unknown topic and group
  await expectStatus('send_unknown_topic', 'SendMessage', new pb.SendMessageRequest()
    .setMessagesList([message('no_such_topic', Buffer.from('x'))]).serializeBinary(), C.TOPIC_NOT_FOUND);
  await expectStatus('route_unknown_topic', 'QueryRoute',
    new pb.QueryRouteRequest().setTopic(res('no_such_topic')).serializeBinary(), C.TOPIC_NOT_FOUND);
  await expectStatus('assignment_unknown_topic', 'QueryAssignment', new pb.QueryAssignmentRequest()
    .setTopic(res('no_such_topic')).setGroup(res(group)).serializeBinary(), C.TOPIC_NOT_FOUND);
  await expectStreamStatus('receive_unknown_topic', 'ReceiveMessage',
    receiveRequest('no_such_topic', group).serializeBinary(), C.TOPIC_NOT_FOUND);
  await expectStreamStatus('receive_unknown_group', 'ReceiveMessage',
    receiveRequest(topic, 'no_such_group').serializeBinary(), C.CONSUMER_GROUP_NOT_FOUND);
  const badReceipt = 'ff'.repeat(24);
  await expectStatus('ack_foreign_receipt', 'AckMessage', new pb.AckMessageRequest().setGroup(res(group))
    .setTopic(res(topic)).setEntriesList([new pb.AckMessageEntry().setMessageId('m').setReceiptHandle(badReceipt)])
    .serializeBinary(), C.INVALID_RECEIPT_HANDLE);

  // missing fields
  await expectStatus('send_no_messages', 'SendMessage', new pb.SendMessageRequest().serializeBinary(), C.BAD_REQUEST);
  await expectStatus('send_no_topic', 'SendMessage', new pb.SendMessageRequest()
    .setMessagesList([message('', Buffer.from('x'))]).serializeBinary(), C.BAD_REQUEST);
  await expectStatus('route_no_topic', 'QueryRoute', new pb.QueryRouteRequest().serializeBinary(), C.ILLEGAL_TOPIC);
  await expectStreamStatus('receive_no_group', 'ReceiveMessage',
    receiveRequest(topic, '').serializeBinary(), C.ILLEGAL_CONSUMER_GROUP);
  await expectStreamStatus('receive_no_topic', 'ReceiveMessage',
    receiveRequest('', group).serializeBinary(), C.ILLEGAL_TOPIC);
  await expectStreamStatus('receive_no_invisible_duration', 'ReceiveMessage',
    receiveRequest(topic, group).clearInvisibleDuration().serializeBinary(), C.ILLEGAL_INVISIBLE_TIME);
  await expectStreamStatus('receive_bad_polling_time', 'ReceiveMessage',
    receiveRequest(topic, group, { wait: 7200 * 1000 }).serializeBinary(), C.ILLEGAL_POLLING_TIME);
  await expectStatus('ack_no_entries', 'AckMessage', new pb.AckMessageRequest().setGroup(res(group))
    .setTopic(res(topic)).serializeBinary(), C.BAD_REQUEST);
  await expectStatus('change_invisible_no_receipt', 'ChangeInvisibleDuration', new pb.ChangeInvisibleDurationRequest()
    .setGroup(res(group)).setTopic(res(topic)).serializeBinary(), C.BAD_REQUEST);
  await expectStatus('forward_dlq_no_receipt', 'ForwardMessageToDeadLetterQueue',
    new pb.ForwardMessageToDeadLetterQueueRequest().setGroup(res(group)).setTopic(res(topic)).serializeBinary(),
    C.BAD_REQUEST);
  await expectStatus('end_transaction_no_id', 'EndTransaction', new pb.EndTransactionRequest()
    .setTopic(res(topic)).serializeBinary(), C.INVALID_TRANSACTION_ID);

  // RocketMQ's rules for names and messages, as a Proxy has them: each bad
  // SendMessage stores nothing (its bodies start "illegal ", which 056
  // looks for in the stream afterwards), a good message beside a bad one
  // included
  const bad = (name, mutate, code, extra = []) => expectStatus(name, 'SendMessage',
    new pb.SendMessageRequest().setMessagesList([...extra, mutate(message(topic, Buffer.from(`illegal ${name}`)))])
      .serializeBinary(), code);
  const sp = m => m.getSystemProperties();
  const props = (m, entries) => { for (const [k, v] of entries) m.getUserPropertiesMap().set(k, v); return m; };
  await bad('send_illegal_topic_name', m => m.setTopic(res('no spaces!')), C.ILLEGAL_TOPIC);
  await bad('send_topic_name_too_long', m => m.setTopic(res('t'.repeat(128))), C.ILLEGAL_TOPIC);
  await bad('send_no_message_id', m => { sp(m).setMessageId(''); return m; }, C.ILLEGAL_MESSAGE_ID);
  await bad('send_tag_with_bar', m => { sp(m).setTag('a|b'); return m; }, C.ILLEGAL_MESSAGE_TAG);
  await bad('send_blank_tag', m => { sp(m).setTag('  '); return m; }, C.ILLEGAL_MESSAGE_TAG);
  await bad('send_tag_control', m => { sp(m).setTag('a\u0001'); return m; }, C.ILLEGAL_MESSAGE_TAG);
  await bad('send_blank_key', m => { sp(m).setKeysList(['ok', ' \t']); return m; }, C.ILLEGAL_MESSAGE_KEY);
  await bad('send_key_control', m => { sp(m).setKeysList(['a\nb']); return m; }, C.ILLEGAL_MESSAGE_KEY);
  await bad('send_message_group_64_bytes', m => { sp(m).setMessageGroup('g'.repeat(64)); return m; },
    C.ILLEGAL_MESSAGE_GROUP);
  await bad('send_message_group_c1_control', m => { sp(m).setMessageGroup('g\u0085'); return m; },
    C.ILLEGAL_MESSAGE_GROUP);
  await bad('send_system_property_name', m => props(m, [['KEYS', 'k']]), C.ILLEGAL_MESSAGE_PROPERTY_KEY);
  await bad('send_gateway_header_name', m => props(m, [['x-rocketmq', '{}']]), C.ILLEGAL_MESSAGE_PROPERTY_KEY);
  await bad('send_property_value_control', m => props(m, [['p', 'line\nbreak']]), C.ILLEGAL_MESSAGE_PROPERTY_KEY);
  await bad('send_129_properties', m => props(m, [...Array(129).keys()].map(i => [`p${i}`, 'v'])),
    C.MESSAGE_PROPERTIES_TOO_LARGE);
  await bad('send_properties_over_16k', m => props(m, [['big', 'x'.repeat(16 * 1024)]]),
    C.MESSAGE_PROPERTIES_TOO_LARGE);
  await bad('send_two_topics', m => m.setTopic(res(`${topic}_other`)), C.MESSAGE_CORRUPTED,
    [message(topic, Buffer.from('illegal send_two_topics good'))]);
  await bad('send_bad_beside_good', m => props(m, [['TAGS', 'x']]), C.ILLEGAL_MESSAGE_PROPERTY_KEY,
    [message(topic, Buffer.from('illegal send_bad_beside_good good'))]);
  // the limits themselves pass: 128 properties, a 63-byte message group
  const atLimits = message(topic, Buffer.from('legal at the limits'));
  sp(atLimits).setMessageGroup('g'.repeat(63));
  props(atLimits, [...Array(128).keys()].map(i => [`p${i}`, 'v']));
  await expectStatus('send_at_the_limits', 'SendMessage',
    new pb.SendMessageRequest().setMessagesList([atLimits]).serializeBinary(), C.OK);
  await expectStatus('route_illegal_topic_name', 'QueryRoute',
    new pb.QueryRouteRequest().setTopic(res('a.b')).serializeBinary(), C.ILLEGAL_TOPIC);
  await expectStreamStatus('receive_illegal_group_name', 'ReceiveMessage',
    receiveRequest(topic, 'bad group').serializeBinary(), C.ILLEGAL_CONSUMER_GROUP);
  await expectStatus('ack_illegal_group_name', 'AckMessage', new pb.AckMessageRequest().setGroup(res('g'.repeat(256)))
    .setTopic(res(topic)).setEntriesList([new pb.AckMessageEntry().setMessageId('m').setReceiptHandle(badReceipt)])
    .serializeBinary(), C.ILLEGAL_CONSUMER_GROUP);

  // every RPC of MessagingService answers (the ones above, and these)
  await expectStatus('rpc_QueryRoute', 'QueryRoute',
    new pb.QueryRouteRequest().setTopic(res(topic)).serializeBinary(), C.OK);
  await expectStatus('rpc_Heartbeat', 'Heartbeat', new pb.HeartbeatRequest()
    .setGroup(res(group)).setClientType(defs.ClientType.SIMPLE_CONSUMER).serializeBinary(), C.OK);
  const id = crypto.randomUUID();
  await expectStatus('rpc_SendMessage', 'SendMessage', new pb.SendMessageRequest()
    .setMessagesList([message(topic, Buffer.from(`rpc ${id}`), id)]).serializeBinary(), C.OK);
  await expectStatus('rpc_QueryAssignment', 'QueryAssignment', new pb.QueryAssignmentRequest()
    .setTopic(res(topic)).setGroup(res(group)).serializeBinary(), C.OK);
  let receipt = null;
  for (let round = 0; round < 30 && !receipt; round++) {
    const { err, out } = await serverStream('ReceiveMessage',
      receiveRequest(topic, group, { wait: 2000 }).serializeBinary());
    if (err) break;
    for (const b of out) {
      const r = pb.ReceiveMessageResponse.deserializeBinary(b);
      if (r.hasMessage() && r.getMessage().getSystemProperties().getMessageId() === id)
        receipt = r.getMessage().getSystemProperties().getReceiptHandle();
    }
  }
  check('rpc_ReceiveMessage', receipt !== null, 'the message sent never came');
  // a receipt is of its group: another group's name (an unknown one too) does not settle it
  await expectStatus('ack_other_group', 'AckMessage', new pb.AckMessageRequest().setGroup(res('no_such_group'))
    .setTopic(res(topic)).setEntriesList([new pb.AckMessageEntry().setMessageId(id).setReceiptHandle(receipt || badReceipt)])
    .serializeBinary(), C.INVALID_RECEIPT_HANDLE);
  await expectStatus('rpc_ChangeInvisibleDuration', 'ChangeInvisibleDuration', new pb.ChangeInvisibleDurationRequest()
    .setGroup(res(group)).setTopic(res(topic)).setReceiptHandle(receipt || badReceipt).setMessageId(id)
    .setInvisibleDuration(new (require('google-protobuf/google/protobuf/duration_pb').Duration)().setSeconds(60))
    .serializeBinary(), C.OK);
  await expectStatus('rpc_AckMessage', 'AckMessage', new pb.AckMessageRequest().setGroup(res(group))
    .setTopic(res(topic)).setEntriesList([new pb.AckMessageEntry().setMessageId(id).setReceiptHandle(receipt || badReceipt)])
    .serializeBinary(), C.OK);
  await expectStatus('rpc_ChangeInvisibleDuration_stale', 'ChangeInvisibleDuration', new pb.ChangeInvisibleDurationRequest()
    .setGroup(res(group)).setTopic(res(topic)).setReceiptHandle(receipt || badReceipt).setMessageId(id)
    .setInvisibleDuration(new (require('google-protobuf/google/protobuf/duration_pb').Duration)().setSeconds(60))
    .serializeBinary(), C.INVALID_RECEIPT_HANDLE);
  await expectStatus('rpc_ForwardMessageToDeadLetterQueue_stale', 'ForwardMessageToDeadLetterQueue',
    new pb.ForwardMessageToDeadLetterQueueRequest().setGroup(res(group)).setTopic(res(topic))
      .setReceiptHandle(badReceipt).setMessageId(id).serializeBinary(), C.INVALID_RECEIPT_HANDLE);
  await expectStatus('rpc_EndTransaction_unknown', 'EndTransaction', new pb.EndTransactionRequest()
    .setTopic(res(topic)).setTransactionId('999999999').setMessageId(id)
    .setResolution(defs.TransactionResolution.COMMIT).serializeBinary(), C.INVALID_TRANSACTION_ID);
  await expectStatus('rpc_NotifyClientTermination', 'NotifyClientTermination',
    new pb.NotifyClientTerminationRequest().setGroup(res(group)).serializeBinary(), C.OK);
  {
    const call = raw.makeBidiStreamRequest(SERVICE + 'Telemetry', x => x, x => x, metadata(), { deadline: deadline() });
    const settings = new defs.Settings().setClientType(defs.ClientType.SIMPLE_CONSUMER)
      .setSubscription(new defs.Subscription().setGroup(res(group)));
    const got = await new Promise(resolve => {
      call.on('data', d => { resolve(pb.TelemetryCommand.deserializeBinary(d)); call.end(); });
      call.on('error', () => resolve(null));
      call.write(Buffer.from(new pb.TelemetryCommand().setSettings(settings).serializeBinary()));
    });
    check('rpc_Telemetry', got && got.hasSettings() && got.getStatus().getCode() === C.OK,
      got ? `status ${got.getStatus() && got.getStatus().getCode()}` : 'no answer');
  }
  // not implemented: NOT_IMPLEMENTED at once (an empty request is a valid one)
  for (const m of ['UpdateOffset', 'GetOffset', 'QueryOffset', 'RecallMessage', 'SyncLiteSubscription'])
    await expectStatus(`rpc_${m}`, m, Buffer.alloc(0), C.NOT_IMPLEMENTED);
  await expectStreamStatus('rpc_PullMessage', 'PullMessage', Buffer.alloc(0), C.NOT_IMPLEMENTED);
  await stillServing('serving_at_the_end');
}

// ---------------------------------------------------------------------------
function rssKiB(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) : 0;
}

// A client that sends Telemetry Settings without reading the answers, with
// its flow-control windows wide open: what reaches the gateway stops (its
// receive window, which a client that reads nothing never sees reopened),
// the gateway's memory stays flat, it serves others meanwhile, and it
// answers every command once the client reads again.  (The gateway's own
// bound on unread output, 1 MiB, is for clients that ignore HTTP/2's
// limits; this client, Node's http2, keeps them.)
async function slowReader() {
  const pid = Number(process.env.RMQ_GATEWAY_PID);
  const total = Number(process.env.RMQ_SLOW_COMMANDS || 400000);
  const ctl = await controlledSession({ settings: { initialWindowSize: 2 ** 31 - 1 } });
  ctl.session.setLocalWindowSize(2 ** 31 - 1);
  const stream = ctl.session.request({ ':method': 'POST', ':path': SERVICE + 'Telemetry',
    'content-type': 'application/grpc', te: 'trailers', ...authHeaders() });
  let answers = 0;
  let pending = Buffer.alloc(0);
  stream.on('data', d => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      answers++;
      pending = pending.subarray(5 + pending.readUInt32BE(1));
    }
  });
  stream.on('error', () => {});
  const ended = new Promise(resolve => stream.on('close', resolve));
  const one = frame(new pb.TelemetryCommand().setSettings(new defs.Settings()
    .setClientType(defs.ClientType.SIMPLE_CONSUMER).setSubscription(new defs.Subscription().setGroup(res(group))))
    .serializeBinary());
  // the first answer arrives while the client reads
  stream.write(one);
  for (let i = 0; i < 600 && answers < 1; i++) await sleep(100);
  check('slow_reader_first_answer', answers === 1, `${answers} answers`);
  // then it reads nothing
  ctl.hold = true;
  ctl.sock.pause();
  const before = rssKiB(pid);
  stream.write(Buffer.concat(Array(total - 1).fill(one)));
  const sent = one.length * total;
  // wait until what reaches the gateway stops changing (it stopped reading)
  let last = -1;
  let still = 0;
  let peak = before;
  for (let i = 0; i < 1200 && still < 10 && ctl.sock.bytesWritten < sent; i++) {
    await sleep(500);
    peak = Math.max(peak, rssKiB(pid));
    if (ctl.sock.bytesWritten === last) still++;
    else { still = 0; last = ctl.sock.bytesWritten; }
  }
  const gotTo = ctl.sock.bytesWritten;
  console.log(`# ${total} commands, ${sent} bytes; the gateway took ${gotTo} bytes before it stopped reading; ` +
    `its RSS ${before} kB before, at most ${peak} kB while the client read nothing; ` +
    `the answers would be about ${Math.round(total * 4 * one.length / 1024)} kB`);
  check('slow_reader_not_read', gotTo < sent, `the gateway read all ${sent} bytes`);
  check('slow_reader_memory_bounded', peak - before < 32 * 1024, `RSS grew by ${peak - before} kB`);
  await stillServing('slow_reader_others_served');
  // it reads again: every command answered
  ctl.release();
  for (let i = 0; i < 3000 && answers < total; i++) await sleep(100);
  check('slow_reader_all_answered', answers === total, `${answers} of ${total} answers`);
  stream.end();
  await withTimeout(ended, 60000, 'the Telemetry stream ends').catch(() => {});
  ctl.session.close();
}

// Thousands of idle connections, and idle streams on some: the gateway
// answers a new client meanwhile, and each idle connection afterwards
async function idle() {
  const pid = Number(process.env.RMQ_GATEWAY_PID);
  const n = Number(process.env.RMQ_IDLE_CONNECTIONS || 2000);
  const before = rssKiB(pid);
  const sessions = [];
  for (let i = 0; i < n; i++) {
    const s = http2.connect(`http://${endpoints}`);
    s.on('error', () => {});
    sessions.push(s);
    if (i % 100 === 99) await Promise.all(sessions.slice(i - 99).map(x => new Promise(r => {
      if (x.connecting === false && x.remoteSettings) r(); else { x.once('remoteSettings', r); x.once('close', r); }
    })));
  }
  const open = sessions.filter(s => !s.closed && !s.destroyed).length;
  check('idle_connections_open', open === n, `${open} of ${n} open`);
  // idle streams: 100 requests without their message on each of 10 connections
  const idleStreams = [];
  for (const s of sessions.slice(0, 10))
    for (let j = 0; j < 100; j++) {
      const req = s.request({ ':method': 'POST', ':path': SERVICE + 'SendMessage',
        'content-type': 'application/grpc', te: 'trailers', ...authHeaders() });
      req.on('error', () => {});
      idleStreams.push(req);
    }
  await sleep(2000);
  const during = rssKiB(pid);
  console.log(`# ${n} idle connections and ${idleStreams.length} idle streams: gateway RSS ${before} kB before, ${during} kB with them`);
  await stillServing('idle_new_client_served');
  await expectStatus('idle_new_client_routed', 'QueryRoute',
    new pb.QueryRouteRequest().setTopic(res(topic)).serializeBinary(), defs.Code.OK);
  // the idle streams end without a message: INTERNAL (13) each, no hang
  const ends = idleStreams.map(req => new Promise(resolve => {
    let status = null;
    req.on('trailers', t => { status = Number(t['grpc-status']); });
    req.on('response', h => { if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']); });
    req.on('close', () => resolve(status));
    req.resume();
    req.end();
  }));
  const statuses = await withTimeout(Promise.all(ends), 300000, 'idle streams end').catch(() => []);
  check('idle_streams_end', statuses.length === idleStreams.length && statuses.every(s => s === 13),
    `${statuses.filter(s => s === 13).length} of ${idleStreams.length} ended with grpc-status 13`);
  // every idle connection still answers
  let answered = 0;
  const heartbeat = frame(new pb.HeartbeatRequest().serializeBinary());
  for (let i = 0; i < n; i += 200) {
    const rs = await Promise.all(sessions.slice(i, i + 200).map(s => withTimeout(h2Request(s, 'Heartbeat', heartbeat), 120000, 'heartbeat').catch(() => null)));
    answered += rs.filter(r => r && grpcStatus(r) === 0).length;
  }
  check('idle_connections_answer', answered === n, `${answered} of ${n} answered`);
  for (const s of sessions) s.destroy();
}

// A client long-polls, then vanishes (its connection closed) before a
// message comes: the poll's lease holds the message until its invisible
// time ends, then another consumer gets it, once
async function vanish() {
  const ctl = await controlledSession();
  const poll = h2Request(ctl.session, 'ReceiveMessage',
    frame(receiveRequest(topic, group, { wait: 20000, invisible: 3000 }).serializeBinary()));
  await sleep(2000);	// the poll waits in PostgreSQL
  ctl.session.destroy();
  ctl.sock.destroy();
  await poll;
  const id = crypto.randomUUID();
  await expectStatus('vanish_send', 'SendMessage', new pb.SendMessageRequest()
    .setMessagesList([message(topic, Buffer.from(`vanish ${id}`), id)]).serializeBinary(), defs.Code.OK);
  const consumer = new SimpleConsumer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration: 3000 });
  await withTimeout(consumer.startup(), 60000, 'consumer start-up');
  const got = [];
  for (let round = 0; round < 60 && got.length === 0; round++)
    for (const v of await consumer.receive(16, 30000)) {
      if (v.messageId === id) got.push(v.deliveryAttempt);
      await consumer.ack(v);
    }
  // a few more rounds: it does not come again
  for (let round = 0; round < 3; round++)
    for (const v of await consumer.receive(16, 30000)) {
      if (v.messageId === id) got.push(v.deliveryAttempt);
      await consumer.ack(v);
    }
  console.log(`# the message came with delivery attempts ${got.join(',')}`);
  check('vanish_not_lost', got.length >= 1, 'never delivered');
  check('vanish_once', got.length === 1, `delivered ${got.length} times`);
  await consumer.shutdown();
}

// The official producer sends until the stop file exists, across a
// PostgreSQL restart; a SimpleConsumer long-polls another topic meanwhile
async function load() {
  const stop = process.env.RMQ_STOP_FILE;
  const confirmedFile = process.env.RMQ_CONFIRMED_FILE;
  const pollTopic = process.env.RMQ_POLL_TOPIC;
  const producer = new Producer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    topics: [topic] });
  await withTimeout(producer.startup(), 60000, 'producer start-up');
  const consumer = new SimpleConsumer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: process.env.RMQ_POLL_GROUP, subscriptions: new Map([[pollTopic, '*']]), awaitDuration: 15000 });
  await withTimeout(consumer.startup(), 60000, 'consumer start-up');
  let polling = true;
  const pollErrors = new Map();
  let polls = 0;
  const poller = (async () => {
    while (polling) {
      try {
        await withTimeout(consumer.receive(16, 30000), 120000, 'long poll');
        polls++;
      } catch (e) {
        if (/no answer in/.test(e.message)) { check('long_poll_no_hang', false, e.message); return; }
        pollErrors.set(e.code, (pollErrors.get(e.code) || 0) + 1);
        await sleep(200);
      }
    }
  })();
  let i = 0;
  let confirmed = 0;
  const errors = new Map();
  let hung = false;
  while (!fs.existsSync(stop)) {
    const body = `load ${process.pid} ${i++}`;
    try {
      await withTimeout(producer.send({ topic, body: Buffer.from(body) }), 120000, 'send');
      fs.appendFileSync(confirmedFile, `${body}\n`);
      confirmed++;
    } catch (e) {
      if (/no answer in/.test(e.message)) { hung = true; break; }
      errors.set(e.code, (errors.get(e.code) || 0) + 1);
      await sleep(200);
    }
  }
  polling = false;
  await poller;
  console.log(`# ${i} sends, ${confirmed} confirmed; send errors ${JSON.stringify([...errors])}; ` +
    `${polls} long polls ended, poll errors ${JSON.stringify([...pollErrors])}`);
  check('load_no_hang', !hung, 'a send had no answer in 120 s');
  check('load_sent_errors_seen', errors.size > 0 || pollErrors.size > 0, 'no client saw the restart');
  check('load_codes', [...errors.keys(), ...pollErrors.keys()].every(c => typeof c === 'number' && c >= 40000),
    `not RocketMQ status codes: ${JSON.stringify([...errors.keys(), ...pollErrors.keys()])}`);
  await producer.shutdown();
  await consumer.shutdown();
}

// Every confirmed body is received by the group
async function drain() {
  const want = new Set(fs.readFileSync(process.env.RMQ_CONFIRMED_FILE, 'utf8').split('\n').filter(Boolean));
  const consumer = new SimpleConsumer({ endpoints, namespace: '', sessionCredentials: credentials, logger: quiet,
    consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration: 3000 });
  await withTimeout(consumer.startup(), 60000, 'consumer start-up');
  const got = new Set();
  let extra = 0;
  for (let empty = 0; empty < 5 && got.size < want.size;) {
    const views = await consumer.receive(32, 60000);
    if (views.length === 0) empty++;
    for (const v of views) {
      const body = v.body.toString();
      if (want.has(body)) got.add(body); else extra++;
      await consumer.ack(v);
    }
  }
  console.log(`# ${want.size} confirmed, ${got.size} of them received, ${extra} unconfirmed ones received too`);
  check('drain_all_confirmed', want.size > 0 && got.size === want.size, `${got.size} of ${want.size}`);
  await consumer.shutdown();
}

const modes = { checks, slow_reader: slowReader, idle, vanish, load, drain };
const mode = modes[process.argv[2]];
if (!mode) {
  console.error(`usage: robust_check.js ${Object.keys(modes).join('|')}`);
  process.exit(2);
}
mode().then(() => { raw.close(); finish(); }).catch(e => {
  console.log(`not ok unexpected_error: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
