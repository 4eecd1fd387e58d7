"""Shared helpers for the queue_ext benchmark harnesses (python3 stdlib only).

Everything talks to the bench server through psql / pgbench subprocesses.
Connection settings come from the environment:
  BENCH_HOST (default /tmp/bench), BENCH_PORT (5495), BENCH_USER (postgres),
  BENCH_DB (bench)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HOST = os.environ.get("BENCH_HOST", "/tmp/bench")
PORT = os.environ.get("BENCH_PORT", "5495")
USER = os.environ.get("BENCH_USER", "postgres")
DB = os.environ.get("BENCH_DB", "bench")
CONN = ["-h", HOST, "-p", PORT, "-U", USER]
PGBIN = os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin")


def log(*a):
    print(*a, flush=True)


def psql(sql, db=None, check=True):
    """Run SQL, return stdout (unaligned, tuples only, | separated)."""
    r = subprocess.run(["psql", *CONN, "-d", db or DB, "-X", "-At", "-q",
                        "-v", "ON_ERROR_STOP=1"],
                       input=sql, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("psql failed: %s\n--- sql ---\n%s" % (r.stderr, sql[:2000]))
    return r.stdout.strip()


def psql1(sql, db=None):
    out = psql(sql, db)
    return out.splitlines()[-1] if out else ""


def wal_lsn():
    return int(psql1("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))


class Pipe:
    """A persistent psql session; query() returns the output lines of one statement."""

    def __init__(self, db=None):
        self.p = subprocess.Popen(["psql", *CONN, "-d", db or DB, "-X", "-At", "-q"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.n = 0

    def query(self, sql):
        self.n += 1
        mark = "__END_%d__" % self.n
        self.p.stdin.write(sql.rstrip().rstrip(";") + ";\n\\echo " + mark + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("psql pipe died: %s" % out)
            line = line.rstrip("\n")
            if line == mark:
                return out
            out.append(line)

    def close(self):
        try:
            self.p.stdin.write("\\q\n")
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()


def pgbench(script, clients=8, threads=2, seconds=None, transactions=None,
            defines=None, per_statement=False, db=None, protocol=None):
    """Run pgbench with a custom script; return dict(tps, tx, lat_ms, elapsed, stmts).

    protocol: None (pgbench's default, simple), or "extended" / "prepared" (-M)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False, dir="/tmp") as f:
        f.write(script)
        path = f.name
    os.chmod(path, 0o644)
    cmd = ["pgbench", *CONN, "-n", "-c", str(clients), "-j", str(min(threads, clients)),
           "-f", path]
    if seconds is not None:
        cmd += ["-T", str(seconds)]
    if transactions is not None:
        cmd += ["-t", str(transactions)]
    if per_statement:
        cmd += ["-r"]
    if protocol is not None:
        cmd += ["-M", protocol]
    for k, v in (defines or {}).items():
        cmd += ["-D", "%s=%s" % (k, v)]
    cmd += [db or DB]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    os.unlink(path)
    out = r.stdout
    if r.returncode != 0 or "number of transactions actually processed" not in out:
        raise RuntimeError("pgbench failed (rc %d): %s\n%s" % (r.returncode, r.stderr[-3000:], out[-2000:]))
    tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    tps = float(m.group(1)) if m else tx / wall
    m = re.search(r"latency average = ([\d.]+) ms", out)
    lat = float(m.group(1)) if m else None
    failed = re.search(r"number of failed transactions: (\d+)", out)
    stmts = []
    if per_statement:
        for line in out.splitlines():
            m = re.match(r"\s+([\d.]+)\s+(?:\d+\s+)?(.*)$", line)
            if m and not line.strip().startswith("-") and "latency" not in line:
                stmts.append((float(m.group(1)), m.group(2).strip()))
    elapsed = tx / tps if tps else wall
    return dict(tps=tps, tx=tx, lat_ms=lat, elapsed=elapsed, stmts=stmts,
                failed=int(failed.group(1)) if failed else 0, stderr=r.stderr)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def ratio(a, b):
    try:
        return a / b if b else float("nan")
    except TypeError:
        return float("nan")


def fmt(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, float):
        if x != x:
            return "n/a"
        if abs(x) >= 1000:
            return "{:,.0f}".format(x)
        return ("{:.%df}" % nd).format(x)
    return str(x)


def table(headers, rows):
    cols = list(zip(*([headers] + [[fmt(c) if not isinstance(c, str) else c for c in r] for r in rows])))
    w = [max(len(str(c)) for c in col) for col in cols]
    line = "| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(headers)) + " |"
    sep = "|" + "|".join("-" * (x + 2) for x in w) + "|"
    out = [line, sep]
    for r in rows:
        cells = [fmt(c) if not isinstance(c, str) else c for c in r]
        out.append("| " + " | ".join(str(c).rjust(w[i]) for i, c in enumerate(cells)) + " |")
    return "\n".join(out)


class Ticker:
    """Background PgQ ticker: SELECT pgq.ticker() every `period` seconds."""

    def __init__(self, period=0.05):
        self.period = period
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        p = Pipe()
        while not self.stop_ev.is_set():
            try:
                p.query("SELECT pgq.ticker()")
            except Exception as e:  # keep ticking
                log("ticker error:", e)
                p = Pipe()
            self.stop_ev.wait(self.period)
        p.close()

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join(timeout=10)


class Tee:
    """stdout, and a copy of it into the results file path"""

    def __init__(self, path):
        self.f = open(path, "w")
        self.out = sys.stdout

    def write(self, s):
        self.out.write(s)
        self.f.write(s)

    def flush(self):
        self.out.flush()
        self.f.flush()
