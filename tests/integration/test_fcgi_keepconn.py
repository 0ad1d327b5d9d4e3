"""FastCGI connections nginx keeps open (nginx/broker.conf.in: upstream
keepalive + fastcgi_keep_conn on for the leases and status groups) and the
handler's accept loop (fcgi/accept_loop.h): an idle kept connection holds no
thread, so nginx may keep more of them than the handler has threads, and a
request whose body the handler did not read leaves nothing on the connection
for the next one."""

import os
import socket
import struct
import threading

from brokerlib import check_error, check_lease, http_request, wait_until


def _socket_inodes(pid):
    """Inodes of the sockets process pid holds open."""
    out = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[len("socket:["):-1]))
    return out


def _accepted_conns(b, group):
    """Connections to the group's socket that its handler holds open
    (accepted, idle or in use), from /proc/net/unix: the accepted end
    carries the listener's path, the listener is the one with the
    accepting flag (0x10000)."""
    path = os.path.join(b.state_dir, "run", group + ".sock")
    held = _socket_inodes(b.pid("fcgi-" + group))
    n = 0
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            cols = line.split()
            if len(cols) < 8 or cols[7] != path:
                continue
            if int(cols[3], 16) & 0x10000:
                continue  # the listener
            if int(cols[6]) in held:
                n += 1
    return n


def _burst(b, n, fn):
    """n requests at once (a barrier), each fn(i); returns their answers."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(30)
        out[i] = fn(i)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return out


def test_kept_connections_outnumber_threads(broker):
    """Two handler threads, eight clients at once: nginx opens and keeps more
    connections than there are threads, every one stays usable, and every
    request on them is answered (with libfcgi's own loop a thread waits on
    each idle kept connection and requests on the others stall)."""
    b = broker(FCGI_THREADS=2, BROKER_CAPACITY=100)
    for rnd in range(4):
        got = _burst(b, 8, lambda i: b.acquire("u%d" % i, "s%d-%d" % (i, rnd), timeout=30))
        for i, r in enumerate(got):
            assert r is not None and r.status == 200, (i, r)
            check_lease(r.json["lease"], "u%d" % i, "s%d-%d" % (i, rnd))
        got = _burst(b, 8, lambda i: b.release("u%d" % i, "s%d-%d" % (i, rnd), timeout=30))
        for i, r in enumerate(got):
            assert r is not None and r.status == 200, (i, r)
    kept = _accepted_conns(b, "leases")
    assert kept > 2, "connections held by fcgi-leases after the bursts: %d" % kept
    # sequential requests now reach whichever kept connection nginx picks
    for i in range(20):
        r = b.acquire("seq", "s%d" % i, timeout=30)
        assert r.status == 200, r
        r = b.heartbeat(lease_id=r.json["lease"]["leaseId"], timeout=30)
        assert r.status == 200, r
        r = b.release("seq", "s%d" % i, timeout=30)
        assert r.status == 200, r
    st = b.status()
    assert (st["activeLeases"], st["activeSlots"]) == (0, 0), st
    assert b.live_leases() == set(), b.live_leases()
    with open(os.path.join(b.state_dir, "nginx", "error.log")) as f:
        errs = [ln for ln in f if "upstream" in ln]
    assert not errs, errs


def test_unread_body_then_next_request_on_the_same_connection(broker):
    """One handler thread, so nginx reuses one kept connection for every
    request: a POST answered 401 before its body is read (the key check
    comes first), then an authenticated acquire on the same connection is
    answered as usual. The unread body is read and dropped when the request
    ends; left on the connection, it would be taken for the next request's
    records (a protocol error: the connection closed, the POST a 502)."""
    b = broker(FCGI_THREADS=1)
    body = {"userId": "u", "sessionId": "s", "pad": "x" * 15000}
    for i in range(10):
        r = http_request(b.port, "POST", "/v1/leases/acquire", body=body)
        check_error(r, 401)
        r = b.acquire("u", "s%d" % i)
        assert r.status == 200, r
        check_lease(r.json["lease"], "u", "s%d" % i)
        r = b.release("u", "s%d" % i)
        assert r.status == 200, r
    # bad JSON: read, refused
    r = b.post("/v1/leases/acquire", "{not json", headers={"Content-Type": "application/json"})
    assert 400 <= r.status < 500, r
    r = b.acquire("u", "after")
    assert r.status == 200, r
    assert _accepted_conns(b, "leases") >= 1
    assert b.status()["activeLeases"] == 1


def _fcgi_record(rtype, content, req_id=1):
    pad = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBx", 1, rtype, req_id, len(content), pad) + content + b"\0" * pad


def _fcgi_params(pairs):
    out = b""
    for k, v in pairs.items():
        k, v = k.encode(), v.encode()
        out += bytes([len(k)]) + bytes([len(v)]) + k + v
    return out


def _fcgi_get(sock, uri):
    """One GET on a FastCGI connection that asks to be kept (FCGI_KEEP_CONN);
    returns the STDOUT bytes once FCGI_END_REQUEST came."""
    begin = struct.pack(">HB5x", 1, 1)  # FCGI_RESPONDER, FCGI_KEEP_CONN
    params = _fcgi_params({"REQUEST_METHOD": "GET", "DOCUMENT_URI": uri, "REQUEST_URI": uri,
                           "QUERY_STRING": "", "REQUEST_ID": "keepconn-raw"})
    sock.sendall(_fcgi_record(1, begin) + _fcgi_record(4, params) + _fcgi_record(4, b"")
                 + _fcgi_record(5, b""))
    out, buf = b"", b""
    while True:
        while len(buf) < 8:
            chunk = sock.recv(65536)
            assert chunk, "the handler closed a kept connection mid-answer"
            buf += chunk
        _, rtype, _, clen, pad = struct.unpack(">BBHHBx", buf[:8])
        while len(buf) < 8 + clen + pad:
            chunk = sock.recv(65536)
            assert chunk, "the handler closed a kept connection mid-record"
            buf += chunk
        content, buf = buf[8:8 + clen], buf[8 + clen + pad:]
        if rtype == 6:
            out += content
        elif rtype == 3:
            return out


def test_kept_connections_closed_by_nginx_are_dropped(broker):
    """nginx closing idle kept connections (its keepalive_timeout, a reload):
    a raw FastCGI client on the status socket makes requests that ask to keep
    the connection, some connections closed right after an answer, some
    without ever sending a byte. The one handler thread serves every request
    and holds no connection that was closed (none leaks, none blocks it)."""
    b = broker(FCGI_THREADS=1)
    path = os.path.join(b.state_dir, "run", "status.sock")
    before = _accepted_conns(b, "status")
    for i in range(30):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        s.connect(path)
        if i % 3 == 2:
            s.close()  # connected, nothing sent
            continue
        for _ in range(1 + i % 2):
            out = _fcgi_get(s, "/health")
            assert b"Status: 200" in out or b'"healthy"' in out, out
        s.close()
    wait_until(lambda: _accepted_conns(b, "status") <= before, 20, 0.1,
               "closed connections dropped by fcgi-status")
    r = b.get("/health")
    assert r.status == 200, r
