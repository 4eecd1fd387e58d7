// A floor tool, not a product: the least RocketMQ 5 server the official Node
// client (rocketmq-client-nodejs) runs against, written with @grpc/grpc-js
// (the client's own gRPC dependency) and the client's own generated stubs.
// It answers what a producer needs, with the contents mq-rocketmq answers
// (rocketmq/rpc.c), and stores nothing:
//   QueryRoute     N_QUEUES READ_WRITE queues of any topic, on this server
//   Telemetry      the producer's Settings back (exponential backoff 10 ms -
//                  1 s, 3 attempts, validate_message_type false), as the
//                  gateway's settings_send; a consumer's: its subscription,
//                  not FIFO, 17 attempts, batches of 32, 30 s long polls
//   Heartbeat      OK
//   SendMessage    one OK SendResultEntry a message (its own message id, an
//                  offset counting up)
//   ReceiveMessage batch_size messages at once, never none: 100 fixed bytes
//                  each with an MD5 digest, a new id, receipt handle and
//                  offset; then a delivery timestamp and OK, as the gateway
//                  streams them
//   AckMessage     OK, an OK entry each
//   NotifyClientTermination  OK
// so that the client's CPU per call against it is the client's own (and
// grpc-js's) floor: bench/rmq_node_floor.sh runs the client against it and
// against mq-rocketmq, alternating.
//
//   NODE_PATH=.../node_modules node rmq_node_floor_server.js HOST:PORT [--h2]
//     --h2: the same answers from Node's http2 module alone (no grpc-js on the
//           server side): a second server stack
//   RMQ_FLOOR_ADVERTISE=HOST:PORT: the broker address its routes give (default
//   HOST:PORT), as mq-rocketmq's --advertise (e.g. a frame-counting proxy's)
//   RMQ_FLOOR_DELAY_MS=MS: answer each SendMessage MS milliseconds late (a
//   timer; fractions allowed), as a server that commits would: the client's
//   cost of waiting for its answer, without anything else of a real server
// Prints "listening HOST:PORT" when ready; runs until killed.
'use strict';

const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
const dur = require('google-protobuf/google/protobuf/duration_pb');

const [listen, stack] = process.argv.slice(2);
if (!listen) {
  console.error('usage: node rmq_node_floor_server.js HOST:PORT [--h2]');
  process.exit(2);
}
const [host, portText] = listen.split(':');
const port = parseInt(portText, 10);
const [advHost, advPort] = (process.env.RMQ_FLOOR_ADVERTISE || listen).split(':');
const N_QUEUES = 4;
const DELAY_MS = parseFloat(process.env.RMQ_FLOOR_DELAY_MS || '0');
let offset = 0;

function ok() {
  return new defs.Status().setCode(defs.Code.OK).setMessage('OK');
}

function queryRoute(req) {
  const ep = new defs.Endpoints().setScheme(defs.AddressScheme.IPV4)
    .setAddressesList([new defs.Address().setHost(advHost).setPort(parseInt(advPort, 10))]);
  const broker = new defs.Broker().setName('floor').setId(0).setEndpoints(ep);
  const topic = new defs.Resource().setResourceNamespace(req.getTopic().getResourceNamespace())
    .setName(req.getTopic().getName());
  const types = [defs.MessageType.NORMAL, defs.MessageType.FIFO, defs.MessageType.DELAY,
    defs.MessageType.TRANSACTION];
  const mqs = [];
  for (let i = 0; i < N_QUEUES; i++)
    mqs.push(new defs.MessageQueue().setTopic(topic).setId(i).setPermission(defs.Permission.READ_WRITE)
      .setBroker(broker).setAcceptMessageTypesList(types));
  return new pb.QueryRouteResponse().setStatus(ok()).setMessageQueuesList(mqs);
}

function settingsOf(cmd) {
  const inSet = cmd.getSettings();
  if (!inSet)
    return null;
  if (inSet.getSubscription()) {
    const sub = new defs.Subscription().setGroup(inSet.getSubscription().getGroup())
      .setSubscriptionsList(inSet.getSubscription().getSubscriptionsList()).setFifo(false)
      .setReceiveBatchSize(32).setLongPollingTimeout(new dur.Duration().setSeconds(30));
    const cexp = new defs.ExponentialBackoff().setInitial(new dur.Duration().setSeconds(1))
      .setMax(new dur.Duration().setSeconds(7200)).setMultiplier(2);
    const cset = new defs.Settings().setClientType(inSet.getClientType()).setAccessPoint(inSet.getAccessPoint())
      .setRequestTimeout(inSet.getRequestTimeout()).setSubscription(sub)
      .setBackoffPolicy(new defs.RetryPolicy().setMaxAttempts(17).setExponentialBackoff(cexp));
    return new pb.TelemetryCommand().setStatus(ok()).setSettings(cset);
  }
  const exp = new defs.ExponentialBackoff().setInitial(new dur.Duration().setNanos(10000000))
    .setMax(new dur.Duration().setSeconds(1)).setMultiplier(2);
  const retry = new defs.RetryPolicy().setMaxAttempts(inSet.getBackoffPolicy() &&
    inSet.getBackoffPolicy().getMaxAttempts() > 0 ? inSet.getBackoffPolicy().getMaxAttempts() : 3)
    .setExponentialBackoff(exp);
  const pub = new defs.Publishing().setMaxBodySize(4194304).setValidateMessageType(false);
  if (inSet.getPublishing())
    pub.setTopicsList(inSet.getPublishing().getTopicsList());
  const set = new defs.Settings().setClientType(inSet.getClientType()).setAccessPoint(inSet.getAccessPoint())
    .setRequestTimeout(inSet.getRequestTimeout()).setBackoffPolicy(retry).setPublishing(pub);
  return new pb.TelemetryCommand().setStatus(ok()).setSettings(set);
}

function sendMessage(req) {
  const entries = req.getMessagesList().map(m => new pb.SendResultEntry().setStatus(ok())
    .setMessageId(m.getSystemProperties().getMessageId()).setOffset(offset++));
  return new pb.SendMessageResponse().setStatus(ok()).setEntriesList(entries);
}

// f() now, or DELAY_MS later
function later(f) {
  if (DELAY_MS > 0)
    setTimeout(f, DELAY_MS);
  else
    f();
}

const BODY = Buffer.alloc(100, 'x');
const DIGEST = require('crypto').createHash('md5').update(BODY).digest('hex').toUpperCase();
let nextId = 0;

// a ReceiveMessage's answer: batch_size messages, a delivery timestamp, OK
function receiveMessages(req) {
  const out = [];
  const topic = req.getMessageQueue().getTopic();
  const ts = require('google-protobuf/google/protobuf/timestamp_pb');
  const now = new ts.Timestamp().setSeconds(Math.floor(Date.now() / 1000));
  for (let i = 0; i < req.getBatchSize(); i++) {
    const id = nextId++;
    const sp = new defs.SystemProperties().setMessageId('01FLOOR' + String(id).padStart(25, '0'))
      .setBodyDigest(new defs.Digest().setType(defs.DigestType.MD5).setChecksum(DIGEST))
      .setBodyEncoding(defs.Encoding.IDENTITY).setMessageType(defs.MessageType.NORMAL)
      .setBornTimestamp(now).setBornHost('bench').setStoreTimestamp(now).setStoreHost(`${advHost}:${advPort}`)
      .setQueueId(id % N_QUEUES).setQueueOffset(id).setReceiptHandle(`floor-${id}-0123456789abcdef`)
      .setInvisibleDuration(req.getInvisibleDuration()).setDeliveryAttempt(1);
    out.push(new pb.ReceiveMessageResponse().setMessage(new defs.Message()
      .setTopic(new defs.Resource().setResourceNamespace(topic.getResourceNamespace()).setName(topic.getName()))
      .setSystemProperties(sp).setBody(BODY)));
  }
  out.push(new pb.ReceiveMessageResponse().setDeliveryTimestamp(now));
  out.push(new pb.ReceiveMessageResponse().setStatus(ok()));
  return out;
}

function ackMessage(req) {
  return new pb.AckMessageResponse().setStatus(ok()).setEntriesList(req.getEntriesList().map(e =>
    new pb.AckMessageResultEntry().setMessageId(e.getMessageId()).setReceiptHandle(e.getReceiptHandle())
      .setStatus(ok())));
}

const unary = {
  QueryRoute: [pb.QueryRouteRequest, queryRoute],
  Heartbeat: [pb.HeartbeatRequest, () => new pb.HeartbeatResponse().setStatus(ok())],
  SendMessage: [pb.SendMessageRequest, sendMessage],
  AckMessage: [pb.AckMessageRequest, ackMessage],
  NotifyClientTermination: [pb.NotifyClientTerminationRequest,
    () => new pb.NotifyClientTerminationResponse().setStatus(ok())],
};

function grpcServer() {
  const grpc = require('@grpc/grpc-js');
  const { MessagingServiceService } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_grpc_pb');
  const impl = {
    queryRoute: (call, cb) => cb(null, queryRoute(call.request)),
    heartbeat: (call, cb) => cb(null, unary.Heartbeat[1](call.request)),
    sendMessage: (call, cb) => later(() => cb(null, sendMessage(call.request))),
    notifyClientTermination: (call, cb) => cb(null, unary.NotifyClientTermination[1](call.request)),
    ackMessage: (call, cb) => cb(null, ackMessage(call.request)),
    receiveMessage: call => {
      for (const r of receiveMessages(call.request))
        call.write(r);
      call.end();
    },
    telemetry: call => {
      call.on('data', cmd => {
        const out = settingsOf(cmd);
        if (out)
          call.write(out);
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  };
  const server = new grpc.Server();
  server.addService(MessagingServiceService, impl);
  server.bindAsync(listen, grpc.ServerCredentials.createInsecure(), (e) => {
    if (e) {
      console.error(`rmq_node_floor_server: ${e.message}`);
      process.exit(1);
    }
    console.log(`listening ${listen} grpc-js`);
  });
}

// gRPC framing over Node's http2 module: 5-byte prefix, headers, trailers
function frame(bytes) {
  const b = Buffer.alloc(5 + bytes.length);
  b.writeUInt32BE(bytes.length, 1);
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).copy(b, 5);
  return b;
}

function h2Server() {
  const http2 = require('http2');
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const name = headers[':path'].split('/')[2];
    let buf = Buffer.alloc(0);
    const respond = () => stream.respond({ ':status': 200, 'content-type': 'application/grpc' },
      { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    if (name === 'Telemetry') {
      respond();
      stream.on('data', d => {
        buf = Buffer.concat([buf, d]);
        while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
          const len = buf.readUInt32BE(1);
          const out = settingsOf(pb.TelemetryCommand.deserializeBinary(buf.subarray(5, 5 + len)));
          buf = buf.subarray(5 + len);
          if (out)
            stream.write(frame(out.serializeBinary()));
        }
      });
      stream.on('end', () => stream.end());
      stream.on('error', () => {});
      return;
    }
    if (name === 'ReceiveMessage') {
      respond();
      stream.on('data', d => { buf = Buffer.concat([buf, d]); });
      stream.on('error', () => {});
      stream.on('end', () => {
        const rs = receiveMessages(pb.ReceiveMessageRequest.deserializeBinary(buf.subarray(5)));
        stream.end(Buffer.concat(rs.map(r => frame(r.serializeBinary()))));
      });
      return;
    }
    const u = unary[name];
    stream.on('data', d => { buf = Buffer.concat([buf, d]); });
    stream.on('error', () => {});
    stream.on('end', () => {
      if (!u) {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' },
          { endStream: true });
        return;
      }
      const out = u[1](u[0].deserializeBinary(buf.subarray(5)));
      (name === 'SendMessage' ? later : f => f())(() => {
        respond();
        stream.end(frame(out.serializeBinary()));
      });
    });
  });
  server.listen(port, host, () => console.log(`listening ${listen} http2`));
}

if (stack === '--h2')
  h2Server();
else
  grpcServer();
