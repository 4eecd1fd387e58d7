// Signed requests through the client's own generated stub: prints
// "<rpc> <status code>" for a QueryRoute and a SendMessage of one message
// to RMQ_TOPIC, signed with RMQ_ACCESS_KEY / RMQ_SECRET_KEY (unsigned when
// RMQ_ACCESS_KEY is empty), in namespace RMQ_NAMESPACE (default "").  Run by test/t/054_rocketmq_gateway.pl: a wrong
// secret or no signature must be UNAUTHORIZED (40100), a role without
// privileges on the stream must not send.
'use strict';

const grpc = require('@grpc/grpc-js');
const service = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_grpc_pb');
const pb = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb');
const defs = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { sign, getRequestDateTime } = require('rocketmq-client-nodejs/dist/util');

const endpoints = process.env.RMQ_ENDPOINT;
const topic = process.env.RMQ_TOPIC;
const ak = process.env.RMQ_ACCESS_KEY || '';
const sk = process.env.RMQ_SECRET_KEY || '';
// a namespace (a database of the server), as the client sends it
const ns = process.env.RMQ_NAMESPACE || '';

function metadata() {
  const md = new grpc.Metadata();
  md.set('x-mq-client-id', 'auth-check');
  md.set('x-mq-protocol', 'v2');
  if (ns)
    md.set('x-mq-namespace', ns);
  const dt = getRequestDateTime();
  md.set('x-mq-date-time', dt);
  if (ak)
    md.set('authorization', `MQv2-HMAC-SHA1 Credential=${ak}, SignedHeaders=x-mq-date-time, Signature=${sign(sk, dt)}`);
  return md;
}

function call(stub, method, req) {
  return new Promise(resolve => {
    stub[method](req, metadata(), { deadline: new Date(Date.now() + 30000) }, (err, res) => {
      console.log(`${method} ${err ? `grpc-error-${err.code}` : res.getStatus().getCode()}`);
      resolve();
    });
  });
}

async function main() {
  const stub = new service.MessagingServiceClient(endpoints, grpc.credentials.createInsecure());
  await call(stub, 'queryRoute', new pb.QueryRouteRequest().setTopic(new defs.Resource().setResourceNamespace(ns).setName(topic)));
  const sp = new defs.SystemProperties().setMessageId('01AUTHCHECK').setMessageType(defs.MessageType.NORMAL)
    .setBodyEncoding(defs.Encoding.IDENTITY);
  const msg = new defs.Message().setTopic(new defs.Resource().setResourceNamespace(ns).setName(topic)).setSystemProperties(sp)
    .setBody(Buffer.from('auth check'));
  const res = await new Promise(resolve => {
    stub.sendMessage(new pb.SendMessageRequest().setMessagesList([ msg ]), metadata(),
      { deadline: new Date(Date.now() + 30000) }, (err, r) => resolve(err ? `grpc-error-${err.code}` : r));
  });
  if (typeof res === 'string')
    console.log(`sendMessage ${res}`);
  else
    console.log(`sendMessage ${res.getStatus().getCode()} ${res.getEntriesList().map(e => e.getStatus().getCode()).join(',')}`);
  stub.close();
}

main().catch(e => { console.log(`error ${e}`); process.exit(1); });
