"""What the check scripts of test/amqp share: assertions, raw AMQP 0-9-1
frames over a socket, and the loop that runs checks and reports each.

gateway_checks.py (TAP 040), auth_checks.py (045), fidelity_checks.py (052)
and channel_checks.py (053) import it: Python puts a script's own directory
first on sys.path, so `import checklib` finds this file.
"""
import struct
import traceback


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def eq(got, want, what):
    if got != want:
        raise Fail('%s: got %r, want %r' % (what, got, want))


# ---- raw frames ---------------------------------------------------------------

def read_exact(s, n):
    """n bytes from socket s; EOFError if the broker closes it first"""
    buf = b''
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError('closed by the broker')
        buf += chunk
    return buf


def read_frame(s):
    """the next frame of socket s: (type, channel, payload)"""
    t, ch, size = struct.unpack('>BHI', read_exact(s, 7))
    payload = read_exact(s, size)
    check(read_exact(s, 1) == b'\xce', 'frame end')
    return t, ch, payload


def method_frame(ch, cls, meth, args=b''):
    """the method frame of class cls, method meth on channel ch"""
    payload = struct.pack('>HH', cls, meth) + args
    return struct.pack('>BHI', 1, ch, len(payload)) + payload + b'\xce'


def send_method(s, ch, cls, meth, args=b''):
    s.sendall(method_frame(ch, cls, meth, args))


# ---- running the checks -------------------------------------------------------

def run_checks(checks, only, skip=None):
    """Run each function of checks whose name is in only (all of them when
    only is empty), in order, and print a line for each: "ok NAME", "ok NAME
    # skip WHY" when skip(fn) gives a reason, or "not ok NAME: what went
    wrong" (its traceback on stderr).  A failing check does not stop the
    others."""
    for fn in checks:
        if only and fn.__name__ not in only:
            continue
        why = skip(fn) if skip else None
        if why:
            print('ok %s # skip %s' % (fn.__name__, why), flush=True)
            continue
        try:
            fn()
            print('ok %s' % fn.__name__, flush=True)
        except Exception as e:  # noqa: B902 -- a failing check is reported, not raised
            detail = '%s: %s' % (type(e).__name__, e)
            print('not ok %s: %s' % (fn.__name__, detail.replace('\n', ' ')), flush=True)
            traceback.print_exc()
