// What the check scripts here share: the client
// options from the environment (RMQ_ENDPOINT, RMQ_TOPIC, RMQ_ACCESS_KEY /
// RMQ_SECRET_KEY for signed requests, RMQ_DEBUG for the client's log) and
// their output, "ok NAME" / "not ok NAME: why" lines, "checks: DONE" last.
'use strict';

const endpoints = process.env.RMQ_ENDPOINT;
const topic = process.env.RMQ_TOPIC;
const credentials = process.env.RMQ_ACCESS_KEY
  ? { accessKey: process.env.RMQ_ACCESS_KEY, accessSecret: process.env.RMQ_SECRET_KEY }
  : undefined;
const quiet = process.env.RMQ_DEBUG ? console : { info() {}, warn() {}, debug() {}, error() {} };

let failures = 0;
function check(name, ok, why) {
  if (ok) console.log(`ok ${name}`);
  else {
    failures++;
    console.log(`not ok ${name}: ${why}`);
  }
}

// "checks: DONE", then exit 1 if a check failed, else 0
function finish() {
  console.log('checks: DONE');
  process.exit(failures ? 1 : 0);
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// promise, or a rejection naming what after ms milliseconds
function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise,
    new Promise((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms); }),
  ]).finally(() => clearTimeout(t));
}

module.exports = { endpoints, topic, credentials, quiet, check, finish, sleep, withTimeout };
