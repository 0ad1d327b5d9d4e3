"""No tenant starves another through the data plane (issue 24, H1 and M1),
written as the attack, against real Docker sandboxes through nginx:

Tenant A ("alpha") trickles 10 JSON command bodies (nginx reads them whole
before a handler thread is taken), runs 8 long command streams across its two
sandboxes, and opens 40 uploads of 1,000,000 bytes that send one byte every
2 s (nginx streams upload bodies to the handler). All the while tenant B
("bravo") pings, runs a short command and calls a port endpoint of its
sandbox: every answer comes, 200, within a bound generous for a loaded
2-core box, never 429. A gets exactly its share of the execd process's
threads (fcgi/execd_share.h: 14 of 32 here): the streams and the first
uploads; the rest of its requests are 429 with Retry-After at once, its
status and interrupt calls still pass at its share; its uploads that were
let in end 408 when their body deadline (BODY_GRACE_MS + length /
BODY_MIN_BYTES_PER_S) is past. When A's connections are gone, A works again.

Before the fair shares, 32 such uploads held every thread of fcgi-execd and
B's ping, commands and port endpoints timed out (H1), and A's streams took
all 28 stream slots so B's commands were 429 (M1).
"""

import json
import select
import socket
import threading
import time

import pytest

from brokerlib import wait_until
from sandboxlib import require_docker  # noqa: F401
from sdklib import KEY, start_osb_broker
from test_execd import execd_sandbox, multipart

require_docker()

THREADS = 32          # scripts/stack's fcgi-execd
SHARE = (THREADS - 4) * 50 // 100  # EXECD_TENANT_SHARE_PCT's default of the unreserved threads
UPLOADS = 40
UPLOAD_LEN = 1000000
STREAMS = 8
JSON_TRICKLES = 10
GRACE_MS, MIN_RATE = 3000, 65536
# the deadline of an upload's body: its waiting, not counting the handler's own time
DEADLINE_S = (GRACE_MS + UPLOAD_LEN * 1000 // MIN_RATE) / 1000.0
B_BOUND_S = 10.0      # one of B's calls, on a loaded 2-core box
FILES_PORT = 8000


def now():
    return time.monotonic()


class Raw:
    """One HTTP/1.1 request on a raw socket whose body is sent by hand;
    the answer is read as it comes (status, headers, body)."""

    def __init__(self, port, method, path, headers, first):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        head = "%s %s HTTP/1.1\r\nHost: broker\r\n" % (method, path)
        head += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
        self.sock.sendall(head.encode() + first)
        self.sock.setblocking(False)
        self.raw = b""
        self.t0 = now()
        self.t_answer = None
        self.closed = False

    def poll(self):
        """Read what has come; True once the whole head is in."""
        while not self.closed:
            try:
                d = self.sock.recv(65536)
            except BlockingIOError:
                break
            except OSError:
                self.closed = True
                break
            if not d:
                self.closed = True
                break
            self.raw += d
        if self.t_answer is None and b"\r\n\r\n" in self.raw:
            self.t_answer = now()
        return self.t_answer is not None

    def send(self, data):
        if self.t_answer is not None or self.closed:
            return
        try:
            self.sock.send(data)
        except OSError:
            self.closed = True

    @property
    def status(self):
        return int(self.raw.split(b" ", 2)[1]) if self.t_answer else None

    def header(self, name):
        head = self.raw.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def json(self):
        body = self.raw.split(b"\r\n\r\n", 1)[1]
        if self.header("Transfer-Encoding") == "chunked":
            # nginx chunks an answer of unknown length (its last chunk may
            # still be on its way: what has come is enough)
            out = b""
            while body:
                size, _, rest = body.partition(b"\r\n")
                n = int(size.split(b";")[0] or b"0", 16)
                if n == 0:
                    break
                out, body = out + rest[:n], rest[n + 2:]
            body = out
        return json.loads(body)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Trickler(threading.Thread):
    """Sends one byte every `gap` seconds on each of its requests until
    told to stop, and keeps reading their answers."""

    def __init__(self, reqs, gap):
        super().__init__(daemon=True)
        self.reqs, self.gap = reqs, gap
        self.stop = threading.Event()

    def run(self):
        nxt = now() + self.gap
        while not self.stop.is_set():
            socks = [r.sock for r in self.reqs if not r.closed]
            if socks:
                select.select(socks, [], [], 0.2)
            else:
                time.sleep(0.2)
            for r in self.reqs:
                r.poll()
            if now() >= nxt:
                for r in self.reqs:
                    r.send(b"x")
                nxt = now() + self.gap


class Stream(threading.Thread):
    """A foreground command of A, held open: its status line and init."""

    def __init__(self, ex, script):
        super().__init__(daemon=True)
        self.ex, self.script = ex, script
        self.status, self.cid, self.events, self.retry = None, None, [], None
        self.started = threading.Event()

    def run(self):
        def on_event(ev):
            self.events.append(ev)
            if ev["type"] == "init":
                self.cid = ev["text"]
                self.started.set()
        try:
            st, hd, ev = self.ex.command_stream({"command": self.script}, on_event, timeout=120)
            self.status, self.retry = st, hd.get("Retry-After")
            if st != 200:
                self.events = ev
        finally:
            self.started.set()


def timed(fn):
    t0 = now()
    r = fn()
    return r, now() - t0


def upload_path(sid):
    return "/v1/sandboxes/%s/proxy/44772/files/upload" % sid


@pytest.fixture(scope="module")
def fair(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete",
                         BODY_GRACE_MS=GRACE_MS, BODY_MIN_BYTES_PER_S=MIN_RATE)
    a1 = execd_sandbox(b, tenant="alpha")
    a2 = execd_sandbox(b, tenant="alpha")
    bx = execd_sandbox(b, tenant="bravo")
    # B's service behind a port endpoint
    st, _, ev = bx.command_stream({"command": "mkdir -p /workspace/www && echo hello-b > "
                                              "/workspace/www/hi.txt && cd /workspace/www && exec "
                                              "python3 -m http.server %d --bind 127.0.0.1" % FILES_PORT,
                                   "background": True})
    assert st == 200, ev
    wait_until(lambda: b_endpoint(bx)[0] == 200, 30, 0.3, "B's service on its port")
    return b, a1, a2, bx


def b_endpoint(bx):
    return bx.request("GET", "/hi.txt", port=FILES_PORT, timeout=B_BOUND_S + 20)


def b_round(bx):
    """B's ping, short command and port endpoint: (name, status, seconds, body)."""
    out = []
    (st, _, raw), took = timed(lambda: bx.request("GET", "/ping", timeout=B_BOUND_S + 20))
    out.append(("ping", st, took, raw))
    (st, _, ev), took = timed(lambda: bx.command_stream({"command": "echo b-was-here"},
                                                        timeout=B_BOUND_S + 20))
    ok = st == 200 and any(e.get("text") == "b-was-here\n" for e in ev)
    out.append(("command", st if ok else (st, ev), took, None))
    (st, _, raw), took = timed(lambda: b_endpoint(bx))
    out.append(("endpoint", st if raw == b"hello-b\n" else (st, raw[:200]), took, raw))
    return out


def test_one_tenants_streams_and_slow_bodies_never_hold_up_another(fair):
    b, a1, a2, bx = fair
    # B's calls on an idle broker: the reference
    idle = b_round(bx)
    assert all(st == 200 for _, st, _, _ in idle), idle

    # 1. slow JSON bodies of A: nginx holds them, no handler thread is taken
    jbody = json.dumps({"command": "echo never"}).encode()
    trickle_json = [Raw(b.port, "POST", "/v1/sandboxes/%s/proxy/44772/command" % a1.sid,
                        {"X-EXECD-ACCESS-TOKEN": a1.token, "Content-Type": "application/json",
                         "Content-Length": str(len(jbody) + 1000)}, jbody[:1])
                    for _ in range(JSON_TRICKLES)]
    tj = Trickler(trickle_json, 2.0)
    tj.start()
    time.sleep(2)

    # 2. A's 8 long command streams across its two sandboxes: all let in
    streams = [Stream(a1 if i % 2 == 0 else a2, "sleep 120") for i in range(STREAMS)]
    for s in streams:
        s.start()
    for s in streams:
        assert s.started.wait(60), "a stream of A never began"
    assert [s.status for s in streams if s.status is not None] == [], \
        [(s.status, s.events) for s in streams if s.status is not None]
    assert all(s.cid for s in streams)

    # 3. A's 40 uploads of 1,000,000 bytes at one byte every 2 s
    boundary = "fairbound"
    first = ("--%s\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n" % boundary).encode()
    uploads = [Raw(b.port, "POST", upload_path(a1.sid),
                   {"X-EXECD-ACCESS-TOKEN": a1.token,
                    "Content-Type": "multipart/form-data; boundary=" + boundary,
                    "Content-Length": str(UPLOAD_LEN)}, first[:1])
               for _ in range(UPLOADS)]
    t_up = now()
    tu = Trickler(uploads, 2.0)
    tu.start()
    try:
        # A past its share: answered at once, 429 with Retry-After, for A alone
        refused = UPLOADS - (SHARE - STREAMS)
        wait_until(lambda: sum(1 for u in uploads if u.t_answer) >= refused, 30, 0.2,
                   "A's uploads past its share answered")
        time.sleep(1)
        answered = [u for u in uploads if u.t_answer]
        assert len(answered) == refused, [(u.status, u.raw[:200]) for u in answered]
        for u in answered:
            assert u.status == 429, u.raw[:300]
            assert u.json()["code"] == "TOO_MANY_REQUESTS", u.raw[:300]
            assert u.header("Retry-After") == "2", u.raw[:300]
        # and a ninth command of A, past its share too
        st, hd, body = a2.command_stream({"command": "echo over"})
        assert st == 429 and hd.get("Retry-After") == "2", (st, body)
        assert "share" in body["message"], body
        # A at its share still sees its commands (a control call)
        st, _, body = a1.json("GET", "/command/status/" + streams[0].cid)
        assert st == 200 and body["running"] is True, (st, body)

        # B, during all of it: every call answered, in time, never 429
        rounds = []
        while now() - t_up < DEADLINE_S - 4:
            rounds.append(b_round(bx))
            time.sleep(0.5)
        assert len(rounds) >= 2, rounds
        for rnd in rounds:
            for name, st, took, _ in rnd:
                assert st == 200, (name, st, rnd)
                assert took < B_BOUND_S, (name, took, rnd)
        worst = {name: max(r[i][2] for r in rounds) for i, (name, _, _, _) in enumerate(rounds[0])}
        print("\nB during A's abuse, %d rounds; worst seconds: %s; idle: %s" % (
            len(rounds), worst, {n: round(t, 3) for n, _, t, _ in idle}))

        # A's uploads that were let in: 408 once their body's deadline is past
        held = [u for u in uploads if u not in answered]
        assert len(held) == SHARE - STREAMS
        wait_until(lambda: all(u.t_answer for u in held), DEADLINE_S + 30, 0.5,
                   "A's slow uploads cut at their deadline")
        for u in held:
            assert u.status == 408, u.raw[:300]
            assert u.json()["code"] == "REQUEST_TIMEOUT", u.raw[:300]
            # not before its waiting reached the deadline, and not long after
            assert DEADLINE_S - 1 <= u.t_answer - u.t0 < DEADLINE_S + 20, u.t_answer - u.t0
        # the slow JSON bodies never reached a handler: nginx still waits for them
        assert not any(r.t_answer for r in trickle_json), [r.raw[:200] for r in trickle_json]
    finally:
        tu.stop.set()
        tj.stop.set()
        tu.join(10)
        tj.join(10)
        for r in uploads + trickle_json:
            r.close()

    # 4. A stops one of its streams (interrupt, a control call at its share)
    st, _, raw = a1.request("DELETE", "/command?id=" + streams[0].cid)
    assert st == 200, raw
    streams[0].join(30)
    assert not streams[0].is_alive()
    # the rest go with their clients (the broker kills what a gone client ran)
    for s in streams[1:]:
        st, _, raw = (a1 if streams.index(s) % 2 == 0 else a2).request("DELETE", "/command?id=" + s.cid)
        assert st == 200, raw
    for s in streams:
        s.join(30)
        assert not s.is_alive()

    # 5. everything recovers: A's share is free again, for all of it
    def a_share_free():
        got = []
        try:
            for i in range(SHARE):
                got.append(Stream(a1 if i % 2 == 0 else a2, "sleep 30"))
                got[-1].start()
            for s in got:
                s.started.wait(60)
            return [s.status for s in got]
        finally:
            for s in got:
                if s.cid:
                    (a1 if got.index(s) % 2 == 0 else a2).request("DELETE", "/command?id=" + s.cid)
            for s in got:
                s.join(30)
    statuses = wait_until(lambda: (lambda st: all(x is None or x == 200 for x in st) and st)(
        a_share_free()), 30, 1, "A's whole share free again")
    assert len(statuses) == SHARE
    body, ctype = multipart([("/workspace/after.txt", b"recovered\n", {})])
    st, _, raw = a1.request("POST", "/files/upload", body, {"Content-Type": ctype})
    assert st == 200, raw
    after = b_round(bx)
    assert all(st == 200 for _, st, _, _ in after), after


def test_slow_upload_alone_ends_408_and_frees_its_thread(fair):
    """One upload whose body stalls after a few bytes: 408 with the
    numbers, at its deadline; a small fast upload of the same tenant,
    meanwhile and after, is 200 (a body at the minimum rate passes)."""
    b, a1, _, _ = fair
    boundary = "stall"
    length = 65536
    u = Raw(b.port, "POST", upload_path(a1.sid),
            {"X-EXECD-ACCESS-TOKEN": a1.token,
             "Content-Type": "multipart/form-data; boundary=" + boundary,
             "Content-Length": str(length)}, b"--stall\r\n")
    deadline = (GRACE_MS + length * 1000 // MIN_RATE) / 1000.0
    body, ctype = multipart([("/workspace/fast.txt", b"fast\n", {})])
    st, _, raw = a1.request("POST", "/files/upload", body, {"Content-Type": ctype})
    assert st == 200, raw
    wait_until(u.poll, deadline + 20, 0.2, "the stalled upload answered")
    assert deadline - 1 <= u.t_answer - u.t0 < deadline + 15, u.t_answer - u.t0
    assert u.status == 408, u.raw[:300]
    msg = u.json()["message"]
    assert "9 of 65536 bytes" in msg and "%d bytes/s" % MIN_RATE in msg, msg
    u.close()
    st, _, raw = a1.request("POST", "/files/upload", body, {"Content-Type": ctype})
    assert st == 200, raw
    # a body that comes in pieces, faster than the minimum rate, is read in full:
    # 16 KiB every 0.2 s
    data = b"y" * 65536
    body, ctype = multipart([("/workspace/steady.bin", data, {})], boundary="steady")
    s = Raw(b.port, "POST", upload_path(a1.sid),
            {"X-EXECD-ACCESS-TOKEN": a1.token, "Content-Type": ctype,
             "Content-Length": str(len(body))}, b"")
    s.sock.setblocking(True)
    for i in range(0, len(body), 16384):
        s.sock.sendall(body[i:i + 16384])
        time.sleep(0.2)
    s.sock.setblocking(False)
    wait_until(s.poll, 30, 0.1, "the steady upload answered")
    assert s.status == 200, s.raw[:300]
    s.close()
    st, _, raw = a1.request("GET", "/files/info?path=/workspace/steady.bin")
    assert st == 200 and json.loads(raw)["/workspace/steady.bin"]["size"] == len(data), raw


def test_lane_serves_ping_and_ingress_auth_with_the_execd_group_down(fair):
    """ping and the port endpoints' ingress-auth are served by the lane
    (execd-lane.sock): they answer with fcgi-execd stopped."""
    b, _, _, bx = fair
    b.stop("fcgi-execd")
    try:
        st, _, raw = bx.request("GET", "/ping")
        assert st == 200, raw
        st, _, raw = b_endpoint(bx)
        assert (st, raw) == (200, b"hello-b\n"), (st, raw)
        # a wrong token is refused there as anywhere (404, the real error through nginx)
        st, _, raw = bx.request("GET", "/ping", token="nope")
        assert st == 404, raw
        st, _, raw = bx.request("GET", "/hi.txt", port=FILES_PORT, token="nope")
        assert st == 404, raw
        # the execd group's own routes are down with it
        st, _, raw = bx.request("GET", "/files/info?path=/workspace")
        assert st == 502, raw
    finally:
        b.start("fcgi-execd")
    st, _, ev = bx.command_stream({"command": "echo back"})
    assert st == 200, ev
    # the API key of the owner works on the lane too; another tenant's is 404
    for key, want in ((KEY["bravo"], 200), (KEY["alpha"], 404)):
        st, _, raw = bx.request("GET", "/ping", token="", headers={"OPEN-SANDBOX-API-KEY": key})
        assert st == want, (key, st, raw)
