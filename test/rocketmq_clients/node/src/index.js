// The client's examples (examples/, verbatim from apache/rocketmq-clients)
// import the client as '../src', its source tree in that repository: here
// that is the client as npm publishes it, pinned by package-lock.json.
'use strict';

module.exports = require('rocketmq-client-nodejs');
