"""Every scripts/bench-* in its short mode (--smoke), so that no bench rots unnoticed.

A smoke run is a check that the bench still runs as docs/LOAD-CAPACITY.md says, not a
measurement: no figure is compared with anything. Per bench, this checks that

- it exits 0 within its time bound (a generous one: the box is shared);
- the figures it wrote to its --out file (never docs/: the test also checks that
  docs/LOAD-CAPACITY.md is unchanged) are well formed: the smoke mark, at least one Markdown
  table, every table with a header, a separator and data rows of the header's width, every cell
  but a row's label holding a number (or being one of the few blanks the benches write), and
  nowhere a nan, inf or None;
- nothing it made is left: no process carrying this run's marker in its environment (every
  process the bench started inherits it, daemons too: redis-server --daemonize, nginx, Kafka,
  the handlers, the supervisor, OpenCode), nothing in its TMPDIR (every temp dir it made is
  made there), and no container labelled with a Redis key prefix any of its processes used
  (sampled from their environments while it runs) or with the pid-tagged prefixes and bench
  label the benches give their own.

Run by scripts/run-tests' "bench" phase; by hand: .cache/venv/bin/python -m pytest tests/bench -v
(-k leases for one). Needs what the integration tests need (make, the venv, the Kafka jars,
dockerd and the images; OpenCode for bench-opencode, installed as the OpenCode tests install it).
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "LOAD-CAPACITY.md")
DOCKER_SOCK = "/var/run/docker.sock"
LABEL_PREFIX = "io.sandbox-broker.prefix"
LABEL_BENCH = "io.sandbox-broker.bench"
MARKER = "BENCH_SMOKE_RUN"
SMOKE_MARK = "SMOKE RUN"

# name -> time bound in seconds (each takes a few seconds to a minute on an idle 2-core box)
BENCHES = {
    "token-check": 60,
    "leases": 180,
    "sandboxes": 180,
    "pool": 180,
    "egress": 180,
    "agent": 240,
    "fair": 240,
    "provision": 300,
    "opencode": 300,
    "memory": 180,
    "code": 240,
}

NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")
# cells without a number a figure column may hold: blanks, and the verdicts of goal tables
BLANKS = {"", "-", "—", "none", "met", "not met", "**met**", "**not met**"}
BAD = re.compile(r"\b(nan|NaN|inf|Infinity|None)\b")


# ------------------------------------------------------------------------- helpers

class _UnixConn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def containers(label=None):
    """Every container (running or not) as the Engine API lists it, optionally one label's."""
    q = {"all": "1"}
    if label:
        q["filters"] = json.dumps({"label": [label]})
    c = _UnixConn(DOCKER_SOCK)
    try:
        c.request("GET", "/containers/json?" + urllib.parse.urlencode(q))
        r = c.getresponse()
        body = r.read()
        assert r.status == 200, body
        return json.loads(body)
    finally:
        c.close()


def environ_of(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def cmdline_of(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def marked(tag):
    """-> {pid: environ} of every live process whose environment carries MARKER=tag."""
    want = ("%s=%s" % (MARKER, tag)).encode()
    me = os.getpid()
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != me:
            env = environ_of(d)
            if want in env:
                out[int(d)] = env
    return out


class PrefixWatch(threading.Thread):
    """Samples, every 0.5 s while the bench runs, the REDIS_KEY_PREFIX of its processes."""

    def __init__(self, tag):
        super().__init__(daemon=True)
        self.tag, self.prefixes, self.done = tag, set(), threading.Event()

    def run(self):
        while not self.done.is_set():
            for env in marked(self.tag).values():
                for kv in env:
                    if kv.startswith(b"REDIS_KEY_PREFIX="):
                        self.prefixes.add(kv.split(b"=", 1)[1].decode(errors="replace"))
            self.done.wait(0.5)


def tables(text):
    """-> list of tables, each a list of rows (lists of stripped cells), from Markdown text."""
    out, cur = [], []
    for line in text.split("\n"):
        if line.startswith("|"):
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def check_figures(name, text):
    assert SMOKE_MARK in text, "bench-%s: the smoke mark is missing from its output" % name
    bad = BAD.search(text)
    assert not bad, "bench-%s wrote %r: %s" % (name, bad.group(0), text[max(0, bad.start() - 200):bad.end() + 50])
    ts = tables(text)
    assert ts, "bench-%s wrote no table:\n%s" % (name, text)
    for t in ts:
        assert len(t) >= 3, "bench-%s: a table without data rows: %s" % (name, t)
        head, sep, rows = t[0], t[1], t[2:]
        assert all(re.fullmatch(r":?-{3,}:?", c) for c in sep), "bench-%s: bad separator row %s" % (name, sep)
        assert len(sep) == len(head), "bench-%s: separator %s against header %s" % (name, sep, head)
        # the figure columns: the right-aligned ones where a table has any, else all but the label
        cols = [i for i, c in enumerate(sep) if c.endswith(":") and i > 0] or list(range(1, len(head)))
        for r in rows:
            assert len(r) == len(head), "bench-%s: row %s has %d cells, the header %d" % (name, r, len(r), len(head))
            assert r[0], "bench-%s: a row without its label: %s" % (name, r)
            figures = [r[i] for i in cols if r[i] not in BLANKS]
            for c in figures:
                assert NUM.search(c), "bench-%s: cell %r of row %r holds no number" % (name, c, r[0])
            assert figures or len(r) == 1, "bench-%s: row %r holds no figure" % (name, r[0])


# ------------------------------------------------------------------------- the test

@pytest.mark.parametrize("name", list(BENCHES))
def test_bench_smoke(name, tmp_path):
    if name == "opencode":
        # the availability check of the OpenCode tests: install (fast when done), fail, never skip
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
        sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "opencode"))
        import runner
        runner.ensure_installed()
    with open(DOC, "rb") as f:
        doc_before = f.read()
    tag = uuid.uuid4().hex
    tmpdir = tempfile.mkdtemp(prefix="bsm.", dir="/tmp")  # short: unix socket paths live under it
    os.chmod(tmpdir, 0o755)  # as /tmp is to them: Squid and nginx workers run as other users
    out = str(tmp_path / ("bench-%s.md" % name))
    env = dict(os.environ, TMPDIR=tmpdir, BENCH_SMOKE="1")
    env[MARKER] = tag
    env.pop("BENCH_KEEP", None)
    watch = PrefixWatch(tag)
    watch.start()
    t0 = time.monotonic()
    p = subprocess.Popen([os.path.join(ROOT, "scripts", "bench-" + name), "--smoke", "--out", out],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        log, _ = p.communicate(timeout=BENCHES[name])
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        p.send_signal(signal.SIGTERM)  # the bench's own cleanup runs on SIGTERM
        try:
            log, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            log, _ = p.communicate()
    finally:
        watch.done.set()
        watch.join()
    took = time.monotonic() - t0
    log = log.decode(errors="replace")
    print("bench-%s --smoke: exit %s after %.0f s" % (name, p.returncode, took))

    # what it left, looked at (and then removed, by this run's marker and prefixes) whatever
    # the exit status: a failed bench must not leave its stack to the next test
    time.sleep(0.5)
    left = marked(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    prefixes = set(watch.prefixes)
    own = re.compile(r"^sbb[a-z]*%d" % p.pid)
    stray = [c for c in containers("io.sandbox-broker.managed")
             if c.get("Labels", {}).get(LABEL_PREFIX) in prefixes
             or own.match(c.get("Labels", {}).get(LABEL_PREFIX, ""))]
    stray += [c for c in containers(LABEL_BENCH)
              if c.get("Labels", {}).get(LABEL_BENCH, "").startswith(str(p.pid))]
    for c in stray:
        subprocess.run(["docker", "rm", "-f", c["Id"]], capture_output=True)
    files = []
    for dirpath, dirnames, filenames in os.walk(tmpdir):
        files += [os.path.join(dirpath, n) for n in dirnames + filenames]
    shutil.rmtree(tmpdir, ignore_errors=True)
    with open(DOC, "rb") as f:
        doc_after = f.read()
    if doc_after != doc_before:
        with open(DOC, "wb") as f:  # put it back so the other benches' checks stay meaningful
            f.write(doc_before)

    tail = log[-6000:]
    assert not timed_out, "bench-%s --smoke did not end within %d s:\n%s" % (name, BENCHES[name], tail)
    assert p.returncode == 0, "bench-%s --smoke exited %s:\n%s" % (name, p.returncode, tail)
    assert doc_after == doc_before, "bench-%s --smoke changed docs/LOAD-CAPACITY.md" % name
    assert not left, "bench-%s left processes running:\n%s" % (
        name, "\n".join("%d %s" % (pid, cmdline_of(pid)) for pid in left))
    assert not stray, "bench-%s left containers: %s" % (
        name, [(c["Id"][:12], c.get("Labels", {}).get(LABEL_PREFIX)) for c in stray])
    assert not files, "bench-%s left files in its TMPDIR: %s" % (name, files[:20])
    assert os.path.exists(out), "bench-%s wrote no --out file:\n%s" % (name, tail)
    with open(out) as f:
        check_figures(name, f.read())


# ------------------------------------------------------------------------- the checks themselves

GOOD = """SMOKE RUN (--smoke): a check that the bench runs, not a measurement.

| row | n | median ms | verdict |
|---|---:|---:|---|
| acquire | 3 | 1.25 | met |
| release | 3 | +0.50 | anything |
"""


BROKEN = {
    "smoke-mark": GOOD.replace("SMOKE RUN", "A RUN"),
    "nan": GOOD.replace("| 1.25 |", "| nan |"),
    "None": GOOD.replace("| 3 | +0.50 |", "| 3 | None |"),
    "no-number": GOOD.replace("| 3 | 1.25 |", "| 3 | fast |"),
    "cells": GOOD.replace("| 3 | 1.25 | met |", "| 3 | 1.25 |"),
    "separator": GOOD.replace("|---|---:|---:|---|\n", ""),
    "no-table": GOOD.split("\n\n")[0] + "\n\nno table at all\n",
}


@pytest.mark.parametrize("why", list(BROKEN))
def test_check_figures_refuses(why):
    broken = BROKEN[why]
    check_figures("x", GOOD)  # the good text passes
    with pytest.raises(AssertionError):
        check_figures("x", broken)


def test_marker_finds_a_daemon(tmp_path):
    """What the leftover check relies on: a process started under the marker, even one that
    left the session, is found by it (and only it is)."""
    tag = uuid.uuid4().hex
    env = dict(os.environ)
    env[MARKER] = tag
    p = subprocess.Popen(["setsid", "sleep", "60"], env=env)
    try:
        for _ in range(50):
            if p.pid in marked(tag):
                break
            time.sleep(0.1)
        assert p.pid in marked(tag)
        assert p.pid not in marked(uuid.uuid4().hex)
    finally:
        p.kill()
        p.wait()
    assert p.pid not in marked(tag)
