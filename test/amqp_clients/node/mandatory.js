// Mandatory publishes and basic.return (as ../python/mandatory.py).
'use strict';
const { connect, channel, say, check, r, finish, cleanup, sleep } = require('./common');

const X = 'tut.mandatory';
const Q = 'tut.mandatory_q';

(async () => {
  await cleanup([Q], [X]);
  const conn = await connect();
  const ch = await channel(conn);
  await ch.assertExchange(X, 'direct', { durable: false });
  await ch.assertQueue(Q, { durable: false });
  await ch.bindQueue(Q, X, 'routed');
  const returned = [];
  ch.on('return', (m) => returned.push([m.fields.replyCode, m.fields.replyText.split(' ')[0], m.fields.exchange,
    m.fields.routingKey, m.content.toString(), m.properties.messageId,
    (m.properties.headers || {}).k]));
  ch.publish(X, 'nowhere', Buffer.from('r1'), { mandatory: true, messageId: 'id-1', headers: { k: 'v' } });
  ch.publish(X, 'routed', Buffer.from('r2'), { mandatory: true });
  ch.publish(X, 'nowhere', Buffer.from('r3'), { mandatory: false });
  ch.publish('', 'tut.no_such_queue', Buffer.from('r4'), { mandatory: true });
  await sleep(2000);
  for (const x of returned) {
    say(`returned: code ${x[0]} ${x[1]}, exchange ${r(x[2])}, routing key ${r(x[3])}, body ${r(x[4])}, message_id ${x[5] === undefined ? 'None' : x[5]}, header k=${x[6] === undefined ? 'None' : x[6]}`);
  }
  check(JSON.stringify(returned.map((x) => x[4])) === JSON.stringify(['r1', 'r4']), 'r1 and r4 came back, in order');
  check(returned.every((x) => x[0] === 312), '312 NO_ROUTE');
  const depth = (await ch.checkQueue(Q)).messageCount;
  say(`${Q} holds ${depth} (the routed mandatory publish)`);
  check(depth === 1, 'the routed one arrived');
  await ch.close();

  // with confirms: the return comes before the ack
  const cch = await channel(conn, true);
  const early = [];
  cch.on('return', (m) => early.push(m.fields.replyCode));
  await new Promise((res) => cch.publish(X, 'nowhere', Buffer.from('r5'), { mandatory: true }, () => res()));
  if (early.length) say(`confirm-mode mandatory unroutable publish: returned before its ack (${early.length} message, code ${early[0]})`);
  else {
    say('confirm-mode mandatory unroutable publish: acked, nothing returned');
    check(false, 'a return before the ack');
  }
  await new Promise((res) => cch.publish(X, 'routed', Buffer.from('r6'), { mandatory: true }, () => res()));
  say('confirm-mode mandatory routed publish: acked');
  await conn.close();
  await cleanup([Q], [X]);
  await finish('mandatory');
})().catch((e) => { console.error(e); process.exit(2); });
