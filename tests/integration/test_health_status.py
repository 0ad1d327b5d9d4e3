"""GET /health, GET /v1/status and X-Request-ID (docs/API.md)."""

import os
import socket
import threading
import uuid

from brokerlib import check_error, check_lease, http_request, wait_until


def test_health_ok(broker):
    b = broker()
    r = b.get("/health")
    assert r.status == 200, r
    assert r.json["status"] == "healthy", r
    assert r.json["checks"]["redis"] == "ok", r
    assert r.json["checks"]["kafka"] == "ok", r
    assert r.headers.get("Content-Type", "").startswith("application/json"), r


def _mode_counts(st):
    return {m: (st["modes"][m]["slots"], st["modes"][m]["leases"])
            for m in ("exclusive", "user_shared", "multi_user_shared")}


def test_status_fields_and_counts(broker):
    b = broker(BROKER_CAPACITY=2)
    st = b.status()
    for f in ("capacity", "activeSlots", "activeLeases", "queueDepth",
              "provider", "modes"):
        assert f in st, st
    assert st["capacity"] == 2, st
    assert (st["activeSlots"], st["activeLeases"], st["queueDepth"]) == (0, 0, 0), st
    assert st["provider"] == "none", st
    for m in ("exclusive", "user_shared", "multi_user_shared"):
        assert isinstance(st["modes"][m]["slots"], int), st
        assert isinstance(st["modes"][m]["leases"], int), st
    assert set(_mode_counts(st).values()) == {(0, 0)}, st

    r = b.acquire("u1", "s1")
    assert r.status == 200, r
    check_lease(r.json["lease"], "u1", "s1")
    st = b.status()
    assert (st["activeSlots"], st["activeLeases"], st["queueDepth"]) == (1, 1, 0), st
    assert _mode_counts(st)["exclusive"] == (1, 1), st

    for s in ("s1", "s2"):
        r = b.acquire("u2", s, mode="user_shared")
        assert r.status == 200, r
    st = b.status()
    assert (st["activeSlots"], st["activeLeases"], st["queueDepth"]) == (2, 3, 0), st
    assert _mode_counts(st)["user_shared"] == (1, 2), st
    assert st["activeSlots"] == b.active() == 2

    r = b.acquire("u3", "s1")
    assert r.status == 202, r
    ticket = r.json["ticketId"]
    st = b.status()
    assert (st["activeSlots"], st["activeLeases"], st["queueDepth"]) == (2, 3, 1), st

    r = b.release("u1", "s1")
    assert r.status == 200, r
    g = b.wait_granted(ticket)
    check_lease(g["lease"], "u3", "s1")
    st = wait_until(lambda: (lambda s: s if s["queueDepth"] == 0 else None)(b.status()),
                    10, desc="queueDepth 0")
    assert (st["activeSlots"], st["activeLeases"]) == (2, 3), st
    assert _mode_counts(st) == {"exclusive": (1, 1), "user_shared": (1, 2),
                                "multi_user_shared": (0, 0)}, st
    assert b.active() == 2


def test_request_id_echoed_when_valid(broker):
    b = broker()
    for method, path, body in (("GET", "/health", None),
                               ("GET", "/v1/status", None),
                               ("POST", "/v1/leases/acquire",
                                {"userId": "rid", "sessionId": "s"}),
                               ("GET", "/v1/no/such/route", None),
                               ("GET", "/v1/leases/poll", None)):
        rid = uuid.uuid4().hex
        r = b.request(method, path, body, headers={"X-Request-ID": rid})
        assert r.headers.get("X-Request-ID") == rid, r


def test_request_id_generated_otherwise(broker):
    b = broker()
    seen = set()
    for _ in range(3):
        r = b.get("/health")
        rid = r.headers.get("X-Request-ID")
        assert rid and len(rid) >= 8, r
        seen.add(rid)
    assert len(seen) == 3, "request ids are not unique: %r" % seen
    # An invalid client value is not echoed back (it is replaced).
    bad = "bad value <script>"
    r = http_request(b.port, "GET", "/health", headers={"X-Request-ID": bad})
    assert r.status == 200, r
    assert r.headers.get("X-Request-ID") and r.headers.get("X-Request-ID") != bad, r


def test_handler_down_is_502_json_and_recovers(broker):
    b = broker()
    b.stop("fcgi-leases")
    r = b.acquire("u", "s")
    assert r.status == 502 and r.json["code"] == "BAD_GATEWAY", r
    # the other route group is not affected
    r = b.get("/health")
    assert r.status == 200, r
    b.start("fcgi-leases")
    r = wait_until(lambda: (lambda r: r if r.status == 200 else None)(b.acquire("u", "s")),
                   10, 0.2, "acquire served again")
    check_lease(r.json["lease"], "u", "s")


def test_handler_that_does_not_answer_is_504_json(broker):
    """A handler that takes the FastCGI connection and never answers:
    after nginx's fastcgi_read_timeout (30 s) the client gets nginx's own
    504 as the documented JSON error, with its request id. The handler's
    socket is held by a listener that accepts and says nothing."""
    b = broker()
    b.stop("fcgi-status")
    path = os.path.join(b.state_dir, "run", "status.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(8)
    held = []
    accepted = threading.Event()

    def hold():
        while True:
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            held.append(c)
            accepted.set()

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    try:
        r = http_request(b.port, "GET", "/health", timeout=90)
        assert accepted.is_set(), "nginx never connected to the handler's socket"
        check_error(r, 504, "GATEWAY_TIMEOUT")
        assert r.headers.get("X-Request-ID"), r
    finally:
        lsock.shutdown(socket.SHUT_RDWR)
        lsock.close()
        t.join(10)
        for c in held:
            c.close()
        os.unlink(path)
    b.start("fcgi-status")
    wait_until(lambda: b.get("/health").status == 200,
               10, 0.2, "health served again")
