#!/usr/bin/python3
"""Virtual hosts are separate: the URL's vhost and a second one (its name in
the second argument or AMQP_OTHER_VHOST, default qe_vhost, which must exist
and admit the URL's user) each get a queue 'tut.vhost' of their own; what is
published in one is not seen in the other, a queue declared only in the
second is missing (404) in the first."""
import os
import sys

import pika
import pika.exceptions

from amqpcommon import params, say, check, finish

args = [a for a in sys.argv[1:] if not a.startswith('--')]
other = args[1] if len(args) > 1 else os.environ.get('AMQP_OTHER_VHOST', 'qe_vhost')
Q, ONLY = 'tut.vhost', 'tut.vhost_only_in_other'


def conn_to(vhost):
    p = params()
    if vhost is not None:
        p.virtual_host = vhost
    return pika.BlockingConnection(p)


a, b = conn_to(None), conn_to(other)
cha, chb = a.channel(), b.channel()
for ch in (cha, chb):
    ch.queue_delete(Q)
    ch.confirm_delivery()
    ch.queue_declare(Q)
chb.queue_delete(ONLY)
chb.queue_declare(ONLY)
cha.basic_publish('', Q, b'in the first vhost')
for i in range(3):
    chb.basic_publish('', Q, ('in the other vhost %d' % i).encode())
na = cha.queue_declare(Q, passive=True).method.message_count
nb = chb.queue_declare(Q, passive=True).method.message_count
say('%s holds %d in the first vhost, %d in the other' % (Q, na, nb))
check((na, nb) == (1, 3), 'each vhost has its own queue')
m, p, body = chb.basic_get(Q, auto_ack=True)
say('got from the other vhost: %r' % body.decode())
try:
    cha.queue_declare(ONLY, passive=True)
    say('%s in the first vhost: found' % ONLY)
    check(False, 'a queue of the other vhost is not in the first')
except pika.exceptions.ChannelClosedByBroker as e:
    say('%s in the first vhost: %d' % (ONLY, e.reply_code))
chb.queue_delete(Q)
chb.queue_delete(ONLY)
b.close()
cha = a.channel()
cha.queue_delete(Q)
a.close()
finish('vhosts')
