"""Bad input gets the documented 4xx JSON error and changes nothing
(docs/API.md "Errors", docs/ARCHITECTURE.md §5).

One broker serves the whole battery: capacity 1, one lease held
(alice/s1) and one ticket queued (bob/s1), so that a bad request that
wrongly touched leases, tickets or slots would show up. Every case takes a
snapshot of all Redis keys under the test prefix before and after.
"""

import http.client
import io
import json
import socket
import time
import uuid

import pytest

from brokerlib import (Resp, check_error, check_lease, diff_snapshots,
                       http_request, kafka_end_offsets)
from conftest import make_broker

MAX_BODY = 4096
NGINX_CAP = 16384

ACQ, HB, REL, POLL = ("/v1/leases/acquire", "/v1/leases/heartbeat",
                      "/v1/leases/release", "/v1/leases/poll")
J = "application/json"
MU = "multi_user_shared"


@pytest.fixture(scope="module")
def bad(request, services, it_root):
    b = make_broker(request, services, it_root, BROKER_CAPACITY=1,
                    MAX_BODY_BYTES=MAX_BODY, LEASE_TTL_MS=3600000,
                    TICKET_TTL_MS=3600000)
    r = b.acquire("alice", "s1")
    assert r.status == 200, r
    b.alice_lease = r.json["lease"]["leaseId"]
    q = b.acquire("bob", "s1")
    assert q.status == 202, q
    b.bob_ticket = q.json["ticketId"]
    b.kafka_offsets = kafka_end_offsets(services, b.config["KAFKA_TOPIC"])
    assert b.kafka_offsets == {0: 1}, b.kafka_offsets
    return b


@pytest.fixture(autouse=True)
def _dump_bad_logs(request):
    if "bad" in request.fixturenames:
        b = request.getfixturevalue("bad")
        if not hasattr(request.node, "_it_brokers"):
            request.node._it_brokers = []
        request.node._it_brokers.append(b)


def js(obj):
    return json.dumps(obj).encode()


def nest(depth):
    """A body of `depth` nested containers, the outer one an object."""
    inner = "{}"
    for _ in range(depth - 2):
        inner = '{"x":%s}' % inner
    return ('{"userId":"alice","sessionId":"deep","x":%s}' % inner).encode()


def deep_arrays(n):
    return b'{"userId":"alice","sessionId":"deep","x":' + b"[" * n + b"]" * n + b"}"


ID129 = "a" * 129
HEX = "0123456789abcdef" * 2

# (id, method, path, raw body or None, content type or None, status, code(s))
CASES = [
    # -- not a JSON object
    ("malformed", "POST", ACQ, b'{"userId": "x",', J, 400, "INVALID_JSON"),
    ("not-json", "POST", ACQ, b"hello", J, 400, "INVALID_JSON"),
    ("empty-body", "POST", ACQ, b"", J, 400, "INVALID_JSON"),
    ("array", "POST", ACQ, b'[{"userId":"x","sessionId":"y"}]', J, 400, "INVALID_JSON"),
    ("empty-array", "POST", ACQ, b"[]", J, 400, "INVALID_JSON"),
    ("string", "POST", ACQ, b'"userId"', J, 400, "INVALID_JSON"),
    ("number", "POST", ACQ, b"42", J, 400, "INVALID_JSON"),
    ("null", "POST", ACQ, b"null", J, 400, "INVALID_JSON"),
    ("trailing-garbage", "POST", ACQ, b'{"userId":"x","sessionId":"y"} z', J, 400, "INVALID_JSON"),
    ("two-objects", "POST", ACQ, b'{"userId":"x","sessionId":"y"}{}', J, 400, "INVALID_JSON"),
    ("invalid-utf8", "POST", ACQ, b'{"userId":"\xff\xfe","sessionId":"y"}', J, 400,
     ("INVALID_JSON", "INVALID_REQUEST")),
    ("depth-9", "POST", ACQ, nest(9), J, 400, "INVALID_JSON"),
    ("depth-2000", "POST", ACQ, deep_arrays(2000), J, 400, "INVALID_JSON"),
    ("heartbeat-malformed", "POST", HB, b'{"leaseId":', J, 400, "INVALID_JSON"),
    ("release-array", "POST", REL, b'["alice","s1"]', J, 400, "INVALID_JSON"),
    # -- wrong types, missing, empty, too long, bad characters
    ("userId-int", "POST", ACQ, js({"userId": 5, "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-null", "POST", ACQ, js({"userId": None, "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-array", "POST", ACQ, js({"userId": ["x"], "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-object", "POST", ACQ, js({"userId": {"a": 1}, "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-bool", "POST", ACQ, js({"userId": True, "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("sessionId-int", "POST", ACQ, js({"userId": "x", "sessionId": 7}), J, 400, "INVALID_REQUEST"),
    ("mode-int", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": 1}), J, 400, "INVALID_REQUEST"),
    ("poolId-int", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": MU, "poolId": 3}), J, 400,
     "INVALID_REQUEST"),
    ("missing-userId", "POST", ACQ, js({"sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("missing-sessionId", "POST", ACQ, js({"userId": "x"}), J, 400, "INVALID_REQUEST"),
    ("empty-object", "POST", ACQ, b"{}", J, 400, "INVALID_REQUEST"),
    ("userId-empty", "POST", ACQ, js({"userId": "", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("sessionId-empty", "POST", ACQ, js({"userId": "x", "sessionId": ""}), J, 400, "INVALID_REQUEST"),
    ("poolId-empty", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": MU, "poolId": ""}), J, 400,
     "INVALID_REQUEST"),
    ("userId-129", "POST", ACQ, js({"userId": ID129, "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("sessionId-129", "POST", ACQ, js({"userId": "x", "sessionId": ID129}), J, 400, "INVALID_REQUEST"),
    ("poolId-129", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": MU, "poolId": ID129}), J, 400,
     "INVALID_REQUEST"),
    ("userId-slash", "POST", ACQ, js({"userId": "a/b", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-colon", "POST", ACQ, js({"userId": "a:b", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("sessionId-colon", "POST", ACQ, js({"userId": "x", "sessionId": "s1:x"}), J, 400, "INVALID_REQUEST"),
    ("userId-space", "POST", ACQ, js({"userId": "a b", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-star", "POST", ACQ, js({"userId": "a*", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-nul", "POST", ACQ, js({"userId": "a\u0000b", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-newline", "POST", ACQ, js({"userId": "a\nb", "sessionId": "y"}), J, 400, "INVALID_REQUEST"),
    ("userId-unicode-escaped", "POST", ACQ, js({"userId": "j\u00fcrgen", "sessionId": "y"}), J, 400,
     "INVALID_REQUEST"),
    ("userId-unicode-raw", "POST", ACQ, '{"userId":"jürgen","sessionId":"y"}'.encode(), J, 400,
     "INVALID_REQUEST"),
    ("poolId-slash", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": MU, "poolId": "../p"}), J,
     400, "INVALID_REQUEST"),
    ("mode-unknown", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": "shared"}), J, 400,
     "INVALID_REQUEST"),
    ("mode-uppercase", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": "EXCLUSIVE"}), J, 400,
     "INVALID_REQUEST"),
    ("mode-empty", "POST", ACQ, js({"userId": "x", "sessionId": "y", "mode": ""}), J, 400, "INVALID_REQUEST"),
    ("poolId-with-exclusive", "POST", ACQ,
     js({"userId": "x", "sessionId": "y", "mode": "exclusive", "poolId": "p"}), J, 400, "INVALID_REQUEST"),
    ("poolId-with-default-mode", "POST", ACQ, js({"userId": "x", "sessionId": "y", "poolId": "p"}), J, 400,
     "INVALID_REQUEST"),
    # -- a held session re-acquired with another mode
    ("mode-conflict", "POST", ACQ, js({"userId": "alice", "sessionId": "s1", "mode": "user_shared"}), J,
     409, "MODE_CONFLICT"),
    # -- body size
    ("over-MAX_BODY_BYTES", "POST", ACQ,
     js({"userId": "x", "sessionId": "y", "pad": "p" * 8000}), J, 413, "PAYLOAD_TOO_LARGE"),
    ("over-nginx-cap", "POST", ACQ,
     js({"userId": "x", "sessionId": "y", "pad": "p" * (NGINX_CAP + 4000)}), J, 413, "PAYLOAD_TOO_LARGE"),
    # -- content type
    ("content-type-text", "POST", ACQ, js({"userId": "x", "sessionId": "y"}), "text/plain", 415,
     "UNSUPPORTED_MEDIA_TYPE"),
    ("content-type-form", "POST", ACQ, b"userId=x&sessionId=y", "application/x-www-form-urlencoded", 415,
     "UNSUPPORTED_MEDIA_TYPE"),
    ("content-type-missing", "POST", ACQ, js({"userId": "x", "sessionId": "y"}), None, 415,
     "UNSUPPORTED_MEDIA_TYPE"),
    ("content-type-text-release", "POST", REL, js({"userId": "alice", "sessionId": "s1"}), "text/plain",
     415, "UNSUPPORTED_MEDIA_TYPE"),
    # -- heartbeat
    ("heartbeat-empty", "POST", HB, b"{}", J, 400, "INVALID_REQUEST"),
    ("heartbeat-leaseId-short", "POST", HB, js({"leaseId": "abc"}), J, 400, "INVALID_REQUEST"),
    ("heartbeat-leaseId-upper", "POST", HB, js({"leaseId": HEX.upper()}), J, 400, "INVALID_REQUEST"),
    ("heartbeat-leaseId-int", "POST", HB, js({"leaseId": 12}), J, 400, "INVALID_REQUEST"),
    ("heartbeat-missing-sessionId", "POST", HB, js({"userId": "alice"}), J, 400, "INVALID_REQUEST"),
    ("heartbeat-unknown-lease", "POST", HB, js({"leaseId": uuid.uuid4().hex}), J, 404, "LEASE_NOT_FOUND"),
    ("heartbeat-unknown-session", "POST", HB, js({"userId": "nobody", "sessionId": "x"}), J, 404,
     "LEASE_NOT_FOUND"),
    ("heartbeat-foreign-session", "POST", HB, js({"userId": "mallory", "sessionId": "s1"}), J, 404,
     "LEASE_NOT_FOUND"),
    ("heartbeat-queued-session", "POST", HB, js({"userId": "bob", "sessionId": "s1"}), J, 404,
     "LEASE_NOT_FOUND"),
    # -- release
    ("release-empty", "POST", REL, b"{}", J, 400, "INVALID_REQUEST"),
    ("release-bad-reason", "POST", REL, js({"userId": "alice", "sessionId": "s1", "reason": "forever"}), J,
     400, "INVALID_REQUEST"),
    ("release-reason-int", "POST", REL, js({"userId": "alice", "sessionId": "s1", "reason": 1}), J,
     400, "INVALID_REQUEST"),
    ("release-bad-userId", "POST", REL, js({"userId": "a/b", "sessionId": "s1"}), J, 400, "INVALID_REQUEST"),
    ("release-unknown", "POST", REL, js({"userId": "nobody", "sessionId": "x"}), J, 404, "LEASE_NOT_FOUND"),
    ("release-foreign-session", "POST", REL, js({"userId": "mallory", "sessionId": "s1"}), J, 404,
     "LEASE_NOT_FOUND"),
    ("release-queued-session", "POST", REL, js({"userId": "bob", "sessionId": "s1"}), J, 404,
     "LEASE_NOT_FOUND"),
    # -- poll
    ("poll-no-ticketId", "GET", POLL, None, None, 400, "INVALID_REQUEST"),
    ("poll-empty-ticketId", "GET", POLL + "?ticketId=", None, None, 400, "INVALID_REQUEST"),
    ("poll-other-param", "GET", POLL + "?ticket=" + HEX, None, None, 400, "INVALID_REQUEST"),
    ("poll-short", "GET", POLL + "?ticketId=xyz", None, None, 400, "INVALID_REQUEST"),
    ("poll-upper", "GET", POLL + "?ticketId=" + HEX.upper(), None, None, 400, "INVALID_REQUEST"),
    ("poll-33", "GET", POLL + "?ticketId=" + HEX + "a", None, None, 400, "INVALID_REQUEST"),
    ("poll-31", "GET", POLL + "?ticketId=" + HEX[:31], None, None, 400, "INVALID_REQUEST"),
    ("poll-traversal", "GET", POLL + "?ticketId=..%2F..%2Fetc%2Fpasswd", None, None, 400, "INVALID_REQUEST"),
    ("poll-unknown", "GET", POLL + "?ticketId=" + uuid.uuid4().hex, None, None, 404, "TICKET_NOT_FOUND"),
    # -- wrong method
    ("GET-acquire", "GET", ACQ, None, None, 405, "METHOD_NOT_ALLOWED"),
    ("GET-heartbeat", "GET", HB, None, None, 405, "METHOD_NOT_ALLOWED"),
    ("GET-release", "GET", REL, None, None, 405, "METHOD_NOT_ALLOWED"),
    ("PUT-acquire", "PUT", ACQ, js({"userId": "x", "sessionId": "y"}), J, 405, "METHOD_NOT_ALLOWED"),
    ("DELETE-release", "DELETE", REL, None, None, 405, "METHOD_NOT_ALLOWED"),
    ("POST-poll", "POST", POLL + "?ticketId=" + HEX, b"{}", J, 405, "METHOD_NOT_ALLOWED"),
    ("POST-status", "POST", "/v1/status", b"{}", J, 405, "METHOD_NOT_ALLOWED"),
    ("POST-health", "POST", "/health", b"{}", J, 405, "METHOD_NOT_ALLOWED"),
    # -- unknown routes
    ("route-root", "GET", "/", None, None, 404, "NOT_FOUND"),
    ("route-v1", "GET", "/v1", None, None, 404, "NOT_FOUND"),
    ("route-leases", "GET", "/v1/leases", None, None, 404, "NOT_FOUND"),
    ("route-leases-slash", "GET", "/v1/leases/", None, None, 404, "NOT_FOUND"),
    ("route-unknown-lease-op", "POST", "/v1/leases/steal", js({"userId": "alice", "sessionId": "s1"}), J,
     404, "NOT_FOUND"),
    ("route-acquire-suffix", "POST", ACQ + "x", js({"userId": "x", "sessionId": "y"}), J, 404, "NOT_FOUND"),
    ("route-acquire-subpath", "POST", ACQ + "/x", js({"userId": "x", "sessionId": "y"}), J, 404,
     "NOT_FOUND"),
    ("route-status-subpath", "GET", "/v1/status/x", None, None, 404, "NOT_FOUND"),
    ("route-v2", "GET", "/v2/status", None, None, 404, "NOT_FOUND"),
]

ALLOW = {"GET-acquire": "POST", "GET-heartbeat": "POST", "GET-release": "POST",
         "PUT-acquire": "POST", "DELETE-release": "POST", "POST-poll": "GET",
         "POST-status": "GET", "POST-health": "GET"}


def _send(b, method, path, raw, ctype):
    headers = {"Content-Type": ctype} if ctype else {}
    return b.request(method, path, raw, headers=headers)


def _stable_diff(b, before, after):
    """Keys that differ, less those that also change with no request at all
    (e.g. a supervisor's own bookkeeping)."""
    diff = diff_snapshots(before, after)
    if not diff:
        return []
    c1 = b.snapshot()
    time.sleep(1.0)
    c2 = b.snapshot()
    spontaneous = {line.split(": ", 1)[0] for line in diff_snapshots(c1, c2)}
    return [d for d in diff if d.split(": ", 1)[0] not in spontaneous]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_and_changes_nothing(bad, case):
    name, method, path, raw, ctype, status, codes = case
    before = bad.snapshot()
    assert before, "the fixture state is missing"
    r = _send(bad, method, path, raw, ctype)
    codes = codes if isinstance(codes, tuple) else (codes,)
    body = check_error(r, status)
    assert body["code"] in codes, "expected code %s: %r" % (codes, r)
    if name in ALLOW:
        allow = [m.strip().upper() for m in (r.headers.get("Allow") or "").split(",")]
        assert ALLOW[name] in allow, "Allow header %r: %r" % (r.headers.get("Allow"), r)
        assert method not in allow, r
    after = bad.snapshot()
    changed = _stable_diff(bad, before, after)
    assert not changed, "a rejected request changed Redis:\n" + "\n".join(changed)


def test_state_intact_after_battery(bad):
    """After every bad request, the fixture's lease and ticket are as before."""
    r = bad.heartbeat("alice", "s1")
    assert r.status == 200 and r.json["lease"]["leaseId"] == bad.alice_lease, r
    r = bad.poll(bad.bob_ticket)
    assert r.status == 200 and r.json["status"] == "queued" and r.json["position"] == 1, r
    assert bad.active() == 1
    assert bad.live_leases() == {bad.alice_lease}
    assert bad.redis.zrange(bad.key("queue"), 0, -1) == [bad.bob_ticket]
    # nothing was produced to Kafka by any rejected request
    assert kafka_end_offsets(bad.services, bad.config["KAFKA_TOPIC"]) == bad.kafka_offsets


def test_oversize_just_below_limits_is_accepted(broker):
    """The size limits are not off by a lot: a body just under
    MAX_BODY_BYTES is served."""
    b = broker(BROKER_CAPACITY=1, MAX_BODY_BYTES=MAX_BODY)
    body = {"userId": "u", "sessionId": "s", "mode": "exclusive"}
    # pad with whitespace (valid JSON, no unknown field) up to MAX_BODY - 16
    raw = js(body)
    raw = raw[:-1] + b" " * (MAX_BODY - 16 - len(raw)) + b"}"
    r = b.post(ACQ, raw, headers={"Content-Type": J})
    assert r.status == 200, r


def test_identifier_boundaries_accepted(broker):
    b = broker(BROKER_CAPACITY=2)
    alphabet = "ABCXYZabcxyz0189._@-"
    uid = (alphabet * 10)[:128]
    sid = ("s" + alphabet * 10)[:128]
    r = b.acquire(uid, sid)
    assert r.status == 200, r
    check_lease(r.json["lease"], uid, sid)
    r = b.heartbeat(uid, sid)
    assert r.status == 200, r
    r = b.acquire("p", "q", mode=MU, pool=("P" + alphabet * 10)[:128])
    assert r.status == 200, r
    r = b.release(uid, sid, reason="deleted")
    assert r.status == 200, r


def test_nginx_oversize_answer_is_json(bad):
    """nginx's own 413 (above its cap) is the documented JSON error."""
    raw = js({"userId": "x", "sessionId": "y", "pad": "p" * 40000})
    r = http_request(bad.port, "POST", ACQ, raw, headers={"Content-Type": J})
    check_error(r, 413, "PAYLOAD_TOO_LARGE")
    assert r.headers.get("X-Request-ID"), r


@pytest.mark.parametrize("case", ["header-too-large", "uri-too-long"])
def test_nginx_own_errors_are_json(bad, case):
    """Errors nginx answers itself (headers over its buffers, a URI over
    8k) are the documented JSON, never nginx's HTML page."""
    if case == "header-too-large":
        r = http_request(bad.port, "GET", "/v1/status", headers={"X-Big": "b" * 12000})
        check_error(r, 400, "INVALID_REQUEST")
    else:
        r = http_request(bad.port, "GET", "/v1/leases/poll?ticketId=" + "a" * 9000)
        check_error(r, 414, "INVALID_REQUEST")
    assert r.headers.get("X-Request-ID"), r


def _raw_exchange(port, data, timeout=10):
    """Send raw bytes on a fresh connection; everything nginx answers
    until it closes (every case below closes the connection)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
    finally:
        s.close()


class _Replay:
    def __init__(self, raw):
        self.raw = raw

    def makefile(self, *args, **kwargs):
        return io.BytesIO(self.raw)


def _raw_request(port, data):
    """A raw request's answer as a Resp (the status line, headers and
    body parsed by http.client)."""
    raw = _raw_exchange(port, data)
    r = http.client.HTTPResponse(_Replay(raw))
    r.begin()
    body = r.read()
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        parsed = None
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    return Resp(r.status, r.headers, parsed, raw, "RAW", line)


_CLOSE = b"Host: x\r\nConnection: close\r\n"
# (id, raw request, status, code): requests nginx refuses itself, before
# any handler sees them
REFUSALS = [
    ("trace", b"TRACE /v1/status HTTP/1.1\r\n" + _CLOSE + b"\r\n", 405, "METHOD_NOT_ALLOWED"),
    ("unknown-transfer-encoding", b"POST " + ACQ.encode() + b" HTTP/1.1\r\n" + _CLOSE +
     b"Transfer-Encoding: gzip\r\n\r\n", 501, "NOT_IMPLEMENTED"),
    ("http-3.0", b"GET /v1/status HTTP/3.0\r\n" + _CLOSE + b"\r\n", 505,
     "HTTP_VERSION_NOT_SUPPORTED"),
    ("garbage-request-line", b"\x01\x02\xffgarbage\r\n\r\n", 400, "INVALID_REQUEST"),
    ("uri-above-root", b"GET /../etc/passwd HTTP/1.1\r\n" + _CLOSE + b"\r\n", 400,
     "INVALID_REQUEST"),
    ("no-host", b"GET /v1/status HTTP/1.1\r\nConnection: close\r\n\r\n", 400,
     "INVALID_REQUEST"),
    ("bad-content-length", b"POST " + ACQ.encode() + b" HTTP/1.1\r\n" + _CLOSE +
     b"Content-Length: abc\r\n\r\n", 400, "INVALID_REQUEST"),
    ("chunked-on-http-1.0", b"POST " + ACQ.encode() + b" HTTP/1.0\r\n" + _CLOSE +
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "INVALID_REQUEST"),
    ("internal-location", b"GET /.broker-errors/400 HTTP/1.1\r\n" + _CLOSE + b"\r\n", 404,
     "NOT_FOUND"),
    ("no-such-route", b"GET /nowhere HTTP/1.1\r\n" + _CLOSE + b"\r\n", 404, "NOT_FOUND"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_nginx_refusals_are_json(bad, case):
    """What nginx refuses on its own (a method it never passes on, an
    unknown Transfer-Encoding, an HTTP version it does not speak, bytes
    that are no request line, an internal location asked for from outside)
    is the documented JSON error with the request id, never nginx's HTML
    page. (nginx's 411 is routed the same way, but nothing on this site
    makes nginx answer it: every body is taken chunked or by length.)"""
    name, data, status, code = case
    r = _raw_request(bad.port, data)
    check_error(r, status, code)
    assert r.headers.get("X-Request-ID"), r


def test_nginx_refusal_of_http09_line_is_json_body(bad):
    """An HTTP/0.9 request line gets a body alone (HTTP/0.9 has no status
    line and no headers): that body is the JSON error."""
    raw = _raw_exchange(bad.port, b"GET /../x\r\n")
    body = json.loads(raw.decode("utf-8"))
    assert body["code"] == "INVALID_REQUEST" and body["message"], raw


@pytest.mark.parametrize("path", [
    "/v1/sandboxes/%s/diagnostics/logs?scope=container" % ("a" * 32),
    "/v1/sandboxes/%s/diagnostics/events?scope=lifecycle" % ("a" * 32)])
def test_diagnostics_of_an_unknown_sandbox_are_404(bad, path):
    """The diagnostics routes (test_osb_diagnostics.py) authenticate first,
    then know no sandbox of that id: 404 JSON, never a route's 404 or 501."""
    check_error(bad.request("GET", path, None, auth=False), 401)
    body = check_error(bad.request("GET", path, None), 404)
    assert "no sandbox" in body["message"] or "provider" in body["message"], body


@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/sandboxes/%s/diagnostics/inspect" % ("a" * 32)),
    ("GET", "/v1/sandboxes/%s/diagnostics/summary" % ("a" * 32))])
def test_spec_routes_not_served_are_501(bad, method, path):
    """Routes the OpenSandbox specs name but this server does not serve:
    501 with the reason (after authentication), never "no such route"."""
    check_error(bad.request(method, path, {} if method == "POST" else None, auth=False), 401)
    r = bad.request(method, path, {} if method == "POST" else None)
    body = check_error(r, 501, "NOT_IMPLEMENTED")
    assert "not served" in body["message"], body
