"""Port endpoints (docs/INGRESS.md): GET .../endpoints/{port} for any port,
and HTTP and WebSocket requests to /v1/sandboxes/{id}/proxy/{port}/... reach
127.0.0.1:{port} inside a real Docker sandbox (network none): nginx ->
auth_request to the execd group -> sandbox-ingress -> the sandbox's agent
socket (GET /tunnel) -> the service.

The services run in the sandbox: `python3 -m http.server` (files), and a
stdlib server of this test (request headers as JSON, a WebSocket echo). The
client side is the stdlib too (http.client, a raw socket for the WebSocket).
"""

import base64
import hashlib
import http.client
import json
import os
import signal
import socket
import struct
import time

import pytest

from brokerlib import check_error, wait_until
from sandboxlib import DOCKER, require_docker  # noqa: F401
from sdklib import KEY, OSB, start_osb_broker
from test_execd import execd_sandbox, multipart

require_docker()

TIMEOUT = 60
FILES_PORT = 8000  # python3 -m http.server
APP_PORT = 8765    # SERVER below
BIG = 20 * 1024 * 1024

SERVER = r'''
import base64, hashlib, http.server, json, struct, sys, time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


UPLOADS = {"requests": 0, "bytes": 0}  # bodies received: requests begun, bytes of the one in flight


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        # counts and hashes the body as it arrives (Content-Length or chunked)
        UPLOADS["requests"] += 1
        UPLOADS["bytes"] = 0
        h, chunked = hashlib.sha256(), "chunked" in self.headers.get("Transfer-Encoding", "").lower()

        def take(left):
            while left > 0:
                data = self.rfile.read(min(left, 65536))
                if not data:
                    raise EOFError
                h.update(data)
                UPLOADS["bytes"] += len(data)
                left -= len(data)
        if chunked:
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                take(size)
                self.rfile.readline()
        else:
            take(int(self.headers.get("Content-Length") or 0))
        self.reply_json({"bytes": UPLOADS["bytes"], "sha256": h.hexdigest(), "chunked": chunked})

    def do_GET(self):
        if self.path == "/uploads":
            self.reply_json(UPLOADS)
            return
        if self.path.startswith("/headers"):
            body = json.dumps({"path": self.path,
                               "headers": [[k, v] for k, v in self.headers.items()]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/linger":
            # upgrades, then neither reads nor closes: the tunnel must still
            # end when the client goes
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            time.sleep(3600)
            return
        if self.path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            acc = base64.b64encode(hashlib.sha1(
                (self.headers["Sec-WebSocket-Key"] + GUID).encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", acc)
            self.end_headers()
            self.wfile.flush()
            while True:
                h = self.rfile.read(2)
                if len(h) < 2:
                    return
                op, n = h[0] & 15, h[1] & 127
                if n == 126:
                    n = struct.unpack(">H", self.rfile.read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4) if h[1] & 128 else b"\0\0\0\0"
                raw = self.rfile.read(n)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(raw))
                if op == 8:
                    self.wfile.write(b"\x88\x00")
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if n < 126:
                    hdr = bytes([0x80 | op, n])
                elif n < 65536:
                    hdr = bytes([0x80 | op, 126]) + struct.pack(">H", n)
                else:
                    hdr = bytes([0x80 | op, 127]) + struct.pack(">Q", n)
                self.wfile.write(hdr + data)
                self.wfile.flush()
        self.send_error(404)


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def run(ex, script):
    """A foreground command in the sandbox: (exit code, stdout)."""
    st, _, events = ex.command_stream({"command": script})
    assert st == 200, events
    out = "".join(e["text"] for e in events if e["type"] == "stdout")
    err = [e for e in events if e["type"] == "error"]
    return (int(err[0]["error"]["evalue"]) if err else 0), out


def start_bg(ex, script):
    st, _, events = ex.command_stream({"command": script, "background": True})
    assert st == 200, events


def req(b, sid, port, path, headers=None, method="GET", timeout=TIMEOUT, body=None):
    c = http.client.HTTPConnection("127.0.0.1", b.port, timeout=timeout)
    try:
        c.request(method, "/v1/sandboxes/%s/proxy/%d%s" % (sid, port, path), body=body,
                  headers=headers or {})
        r = c.getresponse()
        raw = r.read()
        return r.status, r.headers, raw
    finally:
        c.close()


class Resp:
    """What check_error wants: status, headers, json."""

    def __init__(self, st, hd, raw):
        self.status, self.headers, self.raw = st, hd, raw
        try:
            self.json = json.loads(raw)
        except ValueError:
            self.json = None

    def __repr__(self):
        return "<%d %r>" % (self.status, self.raw[:300])


def _ing(request, services, it_root, **env):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete", **env)
    ex = execd_sandbox(b)
    other = execd_sandbox(b)
    body, ctype = multipart([("/workspace/srv.py", SERVER.encode(), {})])
    st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype})
    assert st == 200, raw
    rc, out = run(ex, "mkdir -p /workspace/www && echo 'hello from the sandbox' > /workspace/www/hello.txt"
                      " && head -c %d /dev/urandom > /workspace/www/big.bin"
                      " && sha256sum /workspace/www/big.bin" % BIG)
    assert rc == 0, out
    big_sha = out.split()[0]
    start_bg(ex, "cd /workspace/www && exec python3 -m http.server %d --bind 127.0.0.1" % FILES_PORT)
    start_bg(ex, "exec python3 /workspace/srv.py %d" % APP_PORT)
    tok = {"X-EXECD-ACCESS-TOKEN": ex.token}
    for port in (FILES_PORT, APP_PORT):
        wait_until(lambda: req(b, ex.sid, port, "/", tok)[0] in (200, 404), timeout=30,
                   desc="the service on port %d" % port)
    return b, ex, other, big_sha


@pytest.fixture(scope="module")
def ing(request, services, it_root):
    return _ing(request, services, it_root)


@pytest.fixture(scope="module")
def ing_runsc(request, services, it_root):
    """The same under gVisor: the agent dials the relay (docs/AGENT.md, "Transports")."""
    return _ing(request, services, it_root, SANDBOX_RUNTIME="runsc")


# the tests marked so run under both runtimes
both_runtimes = pytest.mark.parametrize("which", ["ing", "ing_runsc"], ids=["runc", "runsc"])


@both_runtimes
def test_http_server_answers_through_its_endpoint(request, which):
    b, ex, _, _ = request.getfixturevalue(which)
    r = OSB(b, "alpha").endpoint(ex.sid, FILES_PORT)
    assert r.status == 200, r
    path = "/v1/sandboxes/%s/proxy/%d" % (ex.sid, FILES_PORT)
    assert r.json["endpoint"].endswith(path), r
    hdrs = r.json["headers"]
    st, hd, raw = req(b, ex.sid, FILES_PORT, "/hello.txt", hdrs)
    assert (st, raw) == (200, b"hello from the sandbox\n"), (st, raw)
    assert hd["Content-Type"].startswith("text/plain"), hd
    # the query string and the bare endpoint (its "/") pass too
    st, _, raw = req(b, ex.sid, FILES_PORT, "/hello.txt?x=1&y=%20", hdrs)
    assert (st, raw) == (200, b"hello from the sandbox\n"), (st, raw)
    st, _, raw = req(b, ex.sid, FILES_PORT, "", hdrs)
    assert st == 200 and b"hello.txt" in raw, (st, raw[:200])
    # the service's own errors pass through as it answered them
    st, hd, raw = req(b, ex.sid, FILES_PORT, "/missing", hdrs)
    assert st == 404 and b"File not found" in raw, (st, raw[:200])
    # the broker's API key of the sandbox's tenant works as for execd
    st, _, raw = req(b, ex.sid, FILES_PORT, "/hello.txt", {"OPEN-SANDBOX-API-KEY": KEY["alpha"]})
    assert st == 200, raw


@both_runtimes
def test_large_response_streams_complete(request, which):
    b, ex, _, big_sha = request.getfixturevalue(which)
    c = http.client.HTTPConnection("127.0.0.1", b.port, timeout=TIMEOUT)
    t0 = time.monotonic()
    c.request("GET", "/v1/sandboxes/%s/proxy/%d/big.bin" % (ex.sid, FILES_PORT),
              headers={"X-EXECD-ACCESS-TOKEN": ex.token})
    r = c.getresponse()
    h, n = hashlib.sha256(), 0
    while True:
        chunk = r.read(1 << 16)
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
    c.close()
    took = time.monotonic() - t0
    assert r.status == 200 and n == BIG, (r.status, n)
    assert h.hexdigest() == big_sha
    print("\n20 MiB through the endpoint: %.2f s, %.1f MiB/s" % (took, BIG / 1048576 / took))


def ingress_threads(b):
    """Threads of the broker's sandbox-ingress (1: the accept loop alone)."""
    return len(os.listdir("/proc/%d/task" % b.pid("ingress")))


def test_client_gone_ends_the_tunnel(ing):
    """A client that leaves an upgraded connection whose service neither
    reads nor closes: the ingress's connection ends anyway (no thread left
    behind, none spinning)."""
    b, ex, _, _ = ing
    wait_until(lambda: ingress_threads(b) == 1, timeout=30, desc="idle sandbox-ingress")
    s = socket.create_connection(("127.0.0.1", b.port), timeout=TIMEOUT)
    s.sendall(("GET /v1/sandboxes/%s/proxy/%d/linger HTTP/1.1\r\nHost: x\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\nX-EXECD-ACCESS-TOKEN: %s\r\n\r\n"
               % (ex.sid, APP_PORT, ex.token)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    assert ingress_threads(b) == 2
    s.close()
    wait_until(lambda: ingress_threads(b) == 1, timeout=30, desc="the tunnel's thread gone")
    cpu = open("/proc/%d/stat" % b.pid("ingress")).read().rsplit(")", 1)[1].split()
    print("\nsandbox-ingress CPU so far: %s+%s ticks" % (cpu[11], cpu[12]))


def test_small_request_figures(ing):
    """Prints the time of a small GET through the endpoint (a new connection
    each, as a browser's first) beside execd's /ping on the same broker: the
    auth_request, sandbox-ingress and the agent's tunnel are the difference.
    Figures only, no assertion on them."""
    b, ex, _, _ = ing
    tok = {"X-EXECD-ACCESS-TOKEN": ex.token}

    def median_ms(fn, n=40):
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            fn()
            times.append((time.monotonic() - t0) * 1000)
        return sorted(times)[n // 2]
    endpoint = median_ms(lambda: req(b, ex.sid, FILES_PORT, "/hello.txt", tok))
    ping = median_ms(lambda: ex.request("GET", "/ping"))
    st, _, raw = req(b, ex.sid, FILES_PORT, "/hello.txt", tok)
    assert st == 200, raw
    print("\nsmall GET through the endpoint: median %.1f ms; execd /ping: %.1f ms" % (endpoint, ping))


def ws_connect(b, sid, port, headers):
    s = socket.create_connection(("127.0.0.1", b.port), timeout=TIMEOUT)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET /v1/sandboxes/%s/proxy/%d/ws HTTP/1.1" % (sid, port),
             "Host: 127.0.0.1:%d" % b.port, "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    lines += ["%s: %s" % kv for kv in headers.items()]
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, head
        head += chunk
    head, rest = head.split(b"\r\n\r\n", 1)
    want = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    return s, head.decode(), rest, want


def ws_send(s, op, data):
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        hdr = bytes([0x80 | op, 0x80 | n])
    elif n < 65536:
        hdr = bytes([0x80 | op, 0x80 | 126]) + struct.pack(">H", n)
    else:
        hdr = bytes([0x80 | op, 0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def ws_recv(s, buf):
    def need(k):
        nonlocal buf
        while len(buf) < k:
            chunk = s.recv(65536)
            assert chunk, "connection closed mid-frame"
            buf += chunk
    need(2)
    op, n, off = buf[0] & 15, buf[1] & 127, 2
    assert not buf[1] & 128, "a server frame must not be masked"
    if n == 126:
        need(4)
        n, off = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, off = struct.unpack(">Q", buf[2:10])[0], 10
    need(off + n)
    return op, buf[off:off + n], buf[off + n:]


@both_runtimes
def test_websocket_echo(request, which):
    b, ex, _, _ = request.getfixturevalue(which)
    s, head, buf, want = ws_connect(b, ex.sid, APP_PORT, {"X-EXECD-ACCESS-TOKEN": ex.token})
    try:
        status = head.split("\r\n")[0]
        assert status.startswith("HTTP/1.1 101"), head
        assert "sec-websocket-accept: " + want.lower() in head.lower(), head
        for payload in (b"hello websocket", os.urandom(300), os.urandom(200000)):
            ws_send(s, 2, payload)
            op, data, buf = ws_recv(s, buf)
            assert (op, data) == (2, payload), (op, len(data))
        ws_send(s, 8, b"")
        op, _, buf = ws_recv(s, buf)
        assert op == 8
    finally:
        s.close()


def test_credentials_and_auth(ing):
    b, ex, other, _ = ing
    path = "/headers"
    # no credential: 401 JSON, nothing reaches the sandbox
    check_error(Resp(*req(b, ex.sid, APP_PORT, path)), 401)
    # another sandbox's token, a wrong token, another tenant's key: as execd (404)
    for h in ({"X-EXECD-ACCESS-TOKEN": other.token}, {"X-EXECD-ACCESS-TOKEN": "x" * 40},
              {"OPEN-SANDBOX-API-KEY": KEY["bravo"]}):
        check_error(Resp(*req(b, ex.sid, APP_PORT, path, h)), 404)
    # a bad API key is refused; an Authorization that is no API key is the
    # service's, not a credential of the broker
    check_error(Resp(*req(b, ex.sid, APP_PORT, path, {"OPEN-SANDBOX-API-KEY": "nope"})), 401)
    check_error(Resp(*req(b, ex.sid, APP_PORT, path, {"Authorization": "Bearer nope"})), 401)
    # an unknown sandbox
    check_error(Resp(*req(b, "nosuchsandbox", APP_PORT, path, {"X-EXECD-ACCESS-TOKEN": ex.token})), 404)
    # the credentials the broker took never reach the service; the service's
    # own Authorization passes when the broker's was the token
    cases = [
        ({"X-EXECD-ACCESS-TOKEN": ex.token, "Authorization": "Basic dXNlcjpwdw=="},
         "Basic dXNlcjpwdw=="),
        ({"X-EXECD-ACCESS-TOKEN": ex.token, "Authorization": "Bearer the-services-own"},
         "Bearer the-services-own"),
        ({"OPEN-SANDBOX-API-KEY": KEY["alpha"]}, None),
        ({"Authorization": "Bearer " + KEY["alpha"]}, None),
        ({"Authorization": "Bearer " + KEY["alpha"], "OPEN-SANDBOX-API-KEY": KEY["alpha"]}, None),
        ({"X-EXECD-ACCESS-TOKEN": ex.token, "X-Sandbox-Ingress-Agent": "forged",
          "X-Sandbox-Ingress-Tenant": "bravo", "OPENSANDBOX-EGRESS-AUTH": ex.token}, None),
    ]
    secrets = (KEY["alpha"], ex.token)
    for h, authz in cases:
        st, _, raw = req(b, ex.sid, APP_PORT, path + "?q=1", h)
        assert st == 200, (h, raw)
        got = json.loads(raw)
        assert got["path"] == "/headers?q=1", got
        names = {k.lower(): v for k, v in got["headers"]}
        for n in ("open-sandbox-api-key", "x-execd-access-token", "opensandbox-egress-auth",
                  "x-sandbox-ingress-agent", "x-sandbox-ingress-tenant",
                  "x-sandbox-ingress-strip-authorization"):
            assert n not in names, (h, got)
        assert names.get("authorization") == authz, (h, got)
        assert not any(sec in raw.decode() for sec in secrets), (h, got)


def test_nothing_listening_is_502_at_once(ing):
    b, ex, _, _ = ing
    t0 = time.monotonic()
    r = Resp(*req(b, ex.sid, 9, "/", {"X-EXECD-ACCESS-TOKEN": ex.token}))
    check_error(r, 502, "BAD_GATEWAY")
    assert "port 9" in r.json["message"], r
    print("\n502 for a closed port in %.3f s" % (time.monotonic() - t0))
    # the broker's own ports keep their routes (execd), not the tunnel
    st, _, _ = ex.request("GET", "/ping")
    assert st == 200


def test_planted_link_instead_of_the_agent_socket_is_refused(ing):
    b, _, other, _ = ing
    tok = {"X-EXECD-ACCESS-TOKEN": other.token}
    cid = other_container(b, other.sid)
    pid = DOCKER.inspect(cid)["State"]["Pid"]
    agent_dir = b.config.get("AGENT_DIR") or os.path.join(b.state_dir, "agents")
    sock = os.path.join(agent_dir, cid, "agent.sock")
    # the agent (PID 1) is held still so that it cannot bind its socket
    # again while the link is there (it checks once a second)
    os.kill(pid, signal.SIGSTOP)
    try:
        os.unlink(sock)
        os.symlink("/var/run/docker.sock", sock)
        r = Resp(*req(b, other.sid, 2375, "/version", tok, timeout=30))
        check_error(r, 502)
        assert "not a socket" in r.json["message"], r
        assert os.path.islink(sock)
    finally:
        os.kill(pid, signal.SIGCONT)
    # the agent binds its socket again: the sandbox works as before
    wait_until(lambda: req(b, other.sid, 9, "/", tok)[0] == 502 and
               not os.path.islink(sock), timeout=15, desc="the agent's socket back")


def other_container(b, sid):
    found = DOCKER.list(prefix=b.prefix, sandbox_id=sid)
    assert len(found) == 1, found
    return found[0]["Id"]


# --- request bodies (issue 24, M2) -------------------------------------------------------
# Port endpoints take bodies up to 1 GiB, streamed to the service (docs/INGRESS.md): a
# body over 16 KiB got nginx's HTML 413, since the auth_request's subrequest shares the
# request's Content-Length and was checked against the server's client_max_body_size.

MIB = 1024 * 1024
ENDPOINT_BODY_MAX = 1024 * MIB


def uploads(b, ex):
    st, _, raw = req(b, ex.sid, APP_PORT, "/uploads", {"X-EXECD-ACCESS-TOKEN": ex.token})
    assert st == 200, raw
    return json.loads(raw)


def nginx_error_log(b):
    try:
        with open(os.path.join(b.state_dir, "nginx", "error.log")) as f:
            return f.read()
    except OSError:
        return ""


def read_answer(s):
    """status, headers (lower-case names), body of an HTTP/1.1 answer with a
    Content-Length, read from socket s."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    hd = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    n = int(hd.get("content-length", "0"))
    while len(body) < n:
        chunk = s.recv(65536)
        assert chunk, body
        body += chunk
    return int(lines[0].split()[1]), hd, body[:n]


def test_request_bodies_up_to_the_limit_reach_the_service(ing):
    b, ex, _, _ = ing
    tok = {"X-EXECD-ACCESS-TOKEN": ex.token, "Content-Type": "application/octet-stream"}
    # 1 MiB with a Content-Length, 20 MiB of each kind: whole, byte for byte
    for size, chunked in ((MIB, False), (20 * MIB, False), (20 * MIB, True)):
        blocks = [os.urandom(MIB) for _ in range(size // MIB)]
        want = hashlib.sha256(b"".join(blocks)).hexdigest()
        body = iter(blocks) if chunked else b"".join(blocks)
        t0 = time.monotonic()
        st, hd, raw = req(b, ex.sid, APP_PORT, "/upload", dict(tok), method="POST", body=body)
        took = time.monotonic() - t0
        assert st == 200, (size, chunked, st, raw[:300])
        got = json.loads(raw)
        assert got == {"bytes": size, "sha256": want, "chunked": chunked}, (size, got)
        print("\n%d MiB %s body through the endpoint: %.2f s" %
              (size // MIB, "chunked" if chunked else "Content-Length", took))
    # the broker's own routes keep their caps: a lease route still refuses 17 KiB
    r = b.post("/v1/leases/acquire", {"userId": "u", "sessionId": "s", "pad": "x" * (17 * 1024)})
    check_error(r, 413, "PAYLOAD_TOO_LARGE")


def test_request_body_is_streamed_not_buffered(ing):
    """The service reads the first MiBs of a 20 MiB body while the client
    is still sending (nginx neither holds it in memory nor spools it to a
    temporary file), and meanwhile another request to the same sandbox is
    served."""
    b, ex, _, _ = ing
    size, first = 20 * MIB, 8 * MIB
    h = hashlib.sha256()
    s = socket.create_connection(("127.0.0.1", b.port), timeout=TIMEOUT)
    try:
        s.sendall(("POST /v1/sandboxes/%s/proxy/%d/upload HTTP/1.1\r\nHost: x\r\n"
                   "X-EXECD-ACCESS-TOKEN: %s\r\nContent-Length: %d\r\n\r\n"
                   % (ex.sid, APP_PORT, ex.token, size)).encode())
        sent = 0
        while sent < first:
            chunk = os.urandom(MIB)
            h.update(chunk)
            s.sendall(chunk)
            sent += len(chunk)
        # the client stops halfway: what the service got is what was streamed
        wait_until(lambda: uploads(b, ex)["bytes"] >= 2 * MIB, timeout=30,
                   desc="the first MiBs at the service before the body is complete")
        while sent < size:
            chunk = os.urandom(MIB)
            h.update(chunk)
            s.sendall(chunk)
            sent += len(chunk)
        st, _, body = read_answer(s)
    finally:
        s.close()
    assert st == 200, (st, body[:300])
    assert json.loads(body) == {"bytes": size, "sha256": h.hexdigest(), "chunked": False}
    log = nginx_error_log(b)
    assert "buffered to a temporary file" not in log, log[-2000:]


def test_request_body_over_the_limit_is_json_413(ing):
    b, ex, _, _ = ing
    before = uploads(b, ex)["requests"]
    s = socket.create_connection(("127.0.0.1", b.port), timeout=TIMEOUT)
    try:
        s.sendall(("POST /v1/sandboxes/%s/proxy/%d/upload HTTP/1.1\r\nHost: x\r\n"
                   "X-EXECD-ACCESS-TOKEN: %s\r\nContent-Length: %d\r\n\r\n"
                   % (ex.sid, APP_PORT, ex.token, ENDPOINT_BODY_MAX + 1)).encode() + b"x" * 4096)
        st, hd, body = read_answer(s)
    finally:
        s.close()
    assert st == 413, (st, hd, body)
    assert hd["content-type"] == "application/json", hd
    assert hd.get("x-request-id"), hd
    err = json.loads(body)
    assert err["code"] == "PAYLOAD_TOO_LARGE" and "1 GiB" in err["message"], err
    # the service never saw it; the endpoint serves the next request
    assert uploads(b, ex)["requests"] == before
    st, _, raw = req(b, ex.sid, APP_PORT, "/upload", {"X-EXECD-ACCESS-TOKEN": ex.token},
                     method="POST", body=b"small")
    assert st == 200 and json.loads(raw)["bytes"] == 5, raw


def test_nginx_error_of_a_large_body_is_json(ing):
    """An error nginx answers itself through a URI error page (400, 414, 500,
    505) for a request with a body over the server's 16 KiB: the error
    page's internal redirect was checked against 16 KiB again and became
    nginx's HTML 413. Here the 500 of an auth_request whose handler is down
    (the execd lane, which answers the port endpoints' auth, stopped), for a 1 MiB body."""
    b, ex, _, _ = ing
    b.stop("fcgi-execd-lane")
    try:
        st, hd, raw = req(b, ex.sid, APP_PORT, "/upload", {"X-EXECD-ACCESS-TOKEN": ex.token},
                          method="POST", body=os.urandom(MIB))
        r = Resp(st, hd, raw)
        check_error(r, 500, "INTERNAL_ERROR")
        assert hd.get("X-Request-ID"), hd
    finally:
        b.start("fcgi-execd-lane")
    wait_until(lambda: req(b, ex.sid, APP_PORT, "/uploads", {"X-EXECD-ACCESS-TOKEN": ex.token})[0] == 200,
               timeout=30, desc="the execd lane back")
