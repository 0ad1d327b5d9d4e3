"""The execd data plane served by the broker (issue 4: execd-api.yaml under
/v1/sandboxes/{id}/proxy/44772, egress-api.yaml under .../proxy/18080),
against real Docker sandboxes, through nginx and FastCGI:

ping; SSE commands (init, one stdout/stderr event per line, execution_complete,
error with the exit code, timestamps, keep-alive pings, no buffering in
nginx); 10,000 lines complete and in order; timeouts; background commands
with status and logs (line cursor); interrupt of foreground and background
commands; multipart upload of several files and byte-exact download (full
and Range) of a 5 MiB binary; info, delete, directories; path
normalisation; token (401) and unknown sandbox (404); metrics; egress policy.

The sandbox under test is made through the lifecycle API (POST
/v1/sandboxes), and the data-plane token is the one GET .../endpoints/44772
returns, as the SDKs do.
"""

import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse
import uuid

import pytest

from brokerlib import check_error, wait_until
from sandboxlib import DOCKER, SB, docker_broker, require_docker  # noqa: F401
from sdklib import OSB, start_osb_broker

require_docker()

TIMEOUT = 60


class Execd:
    """HTTP shortcuts for one sandbox's data plane."""

    def __init__(self, sb, sandbox_id, token):
        self.sb = sb
        self.port = sb.b.port
        self.sid = sandbox_id
        self.token = token

    def url(self, path, port=44772, sid=None):
        return "/v1/sandboxes/%s/proxy/%d%s" % (sid or self.sid, port, path)

    def conn(self, timeout=TIMEOUT):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, token=None, port=44772,
                sid=None, timeout=TIMEOUT, encode_chunked=False):
        h = {"X-EXECD-ACCESS-TOKEN": self.token if token is None else token}
        if token == "":
            del h["X-EXECD-ACCESS-TOKEN"]
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c = self.conn(timeout)
        try:
            c.request(method, self.url(path, port, sid), body=body, headers=h,
                      encode_chunked=encode_chunked)
            r = c.getresponse()
            raw = r.read()
            return r.status, r.headers, raw
        finally:
            c.close()

    def json(self, method, path, body=None, **kw):
        st, hd, raw = self.request(method, path, body, **kw)
        return st, hd, (json.loads(raw) if raw else None)

    def command_stream(self, body, on_event=None, timeout=TIMEOUT):
        """POST /command; returns (status, headers, [events]) with each event's
        arrival time (monotonic) in ev['_t']."""
        c = self.conn(timeout)
        try:
            c.request("POST", self.url("/command"), body=json.dumps(body).encode(),
                      headers={"X-EXECD-ACCESS-TOKEN": self.token,
                               "Content-Type": "application/json",
                               "Accept": "text/event-stream"})
            r = c.getresponse()
            if r.status != 200:
                return r.status, r.headers, json.loads(r.read() or b"null")
            events, buf = [], b""
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    frame, buf = buf.split(b"\n\n", 1)
                    for line in frame.split(b"\n"):
                        if line.startswith(b"data: "):
                            ev = json.loads(line[6:])
                            ev["_t"] = time.monotonic()
                            events.append(ev)
                            if on_event:
                                on_event(ev)
            assert buf.strip() == b"", buf
            return r.status, r.headers, events
        finally:
            c.close()


def execd_sandbox(b, image="sandbox-broker/base:latest", tenant="alpha", **fields):
    """An OpenSandbox sandbox of broker b, Running, and its execd client
    (the token from its 44772 endpoint)."""
    osb = OSB(b, tenant)
    sid = osb.create(image=image, entrypoint=("sleep", "infinity"), **fields)
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    assert r.json["endpoint"].endswith("/v1/sandboxes/%s/proxy/44772" % sid), r
    return Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])


@pytest.fixture(scope="module")
def ex(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete")
    return execd_sandbox(b)


def out_texts(events, kind="stdout"):
    """The texts of the stdout (or stderr) events, as they came."""
    return [e["text"] for e in events if e["type"] == kind]


def out_lines(events, kind="stdout"):
    """The output as a client assembles it (the texts joined), in lines."""
    text = "".join(out_texts(events, kind))
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def check_events(events):
    assert events and events[0]["type"] == "init", events[:3]
    cid = events[0]["text"]
    assert len(cid) == 32 and all(ch in "0123456789abcdef" for ch in cid), cid
    for e in events:
        assert isinstance(e.get("timestamp"), int) and e["timestamp"] > 1.6e12, e
    return cid


# ------------------------------------------------------------------ ping, auth

def test_ping_auth_and_unknown_sandbox(ex):
    st, _, _ = ex.request("GET", "/ping")
    assert st == 200
    # no credential at all: 401, whatever the id
    st, _, body = ex.json("GET", "/ping", token="")
    assert st == 401 and body["code"] == "UNAUTHORIZED", body
    st, _, body = ex.json("GET", "/ping", token="", sid="f" * 32)
    assert st == 401 and body["code"] == "UNAUTHORIZED", body
    # a wrong token answers exactly like an unknown id: ids cannot be probed
    st, _, wrong = ex.json("GET", "/ping", token="0" * 32)
    assert st == 404 and wrong["code"] == "SANDBOX_NOT_FOUND", wrong
    st, _, unknown = ex.json("GET", "/ping", sid="f" * 32)
    assert st == 404 and unknown["code"] == "SANDBOX_NOT_FOUND", unknown
    # every route checks the token, before touching the sandbox
    for method, path in (("POST", "/command"), ("GET", "/files/download?path=/etc/hostname"),
                         ("GET", "/files/info?path=/etc"), ("DELETE", "/files?path=/tmp/x"),
                         ("POST", "/directories"), ("GET", "/metrics"),
                         ("GET", "/command/status/" + "a" * 32), ("POST", "/files/upload")):
        st, _, body = ex.json(method, path, {} if method == "POST" else None, token="bad")
        assert st == 404, (method, path, st, body)
        st, _, body = ex.json(method, path, {} if method == "POST" else None, token="")
        assert st == 401, (method, path, st, body)
    # a record that is not Running yet: ping waits for it (READINESS_HOLD_MS,
    # 5 s), then answers 503 (the SDK keeps polling)
    key = ex.sb.b.key("sandbox:" + ex.sid)
    ex.sb.b.redis.hset(key, "state", "Pending")
    try:
        st, _, body = ex.json("GET", "/ping")
        assert st == 503, body
    finally:
        ex.sb.b.redis.hset(key, "state", "Running")
    st, _, _ = ex.request("GET", "/ping")
    assert st == 200


# -------------------------------------------------------------------- commands

def test_command_stdout_stderr_lines(ex):
    st, hd, events = ex.command_stream(
        {"command": "echo hello; echo oops >&2; printf 'a\\n\\nb'; echo; printf 'x\\r\\ny'",
         "envs": {"GREETING": "hi there"}})
    assert st == 200, events
    assert hd["Content-Type"].startswith("text/event-stream"), hd
    check_events(events)
    # one event per line, carrying its newline (any terminator becomes "\n"),
    # as execd-api.yaml's example ("Hello, World!\n"); an unterminated last
    # line carries none
    assert out_texts(events) == ["hello\n", "a\n", "\n", "b\n", "x\n", "y"], events
    assert out_texts(events, "stderr") == ["oops\n"], events
    assert out_lines(events) == ["hello", "a", "", "b", "x", "y"], events
    assert events[-1]["type"] == "execution_complete", events[-1]
    assert isinstance(events[-1]["execution_time"], int) and events[-1]["execution_time"] >= 0

    st, _, events = ex.command_stream({"command": "echo $GREETING; pwd; id -u",
                                       "envs": {"GREETING": "hi there"}})
    assert out_lines(events) == ["hi there", "/workspace", "0"], events
    st, _, events = ex.command_stream({"command": "pwd; id -u; id -g", "cwd": "/tmp",
                                       "uid": 1000, "gid": 1001})
    assert out_lines(events) == ["/tmp", "1000", "1001"], events
    st, _, events = ex.command_stream({"argv": ["printf", "%s|", "a b", "c"]})
    assert out_lines(events) == ["a b|c|"], events


def test_command_exit_code_is_an_error_event(ex):
    st, _, events = ex.command_stream({"command": "echo before; exit 3"})
    assert st == 200
    check_events(events)
    assert out_lines(events) == ["before"]
    err = events[-1]
    assert err["type"] == "error", events
    assert err["error"]["ename"] == "CommandExecError"
    assert err["error"]["evalue"] == "3"
    assert isinstance(err["error"]["traceback"], list) and err["error"]["traceback"]
    assert not [e for e in events if e["type"] == "execution_complete"]
    # a cwd that does not exist: an error event, not a hang
    st, _, events = ex.command_stream({"command": "true", "cwd": "/nonexistent/dir"})
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] != "0", events


def test_command_10000_lines_complete_and_in_order(ex):
    st, _, events = ex.command_stream({"command": "seq 1 10000; echo done >&2"}, timeout=120)
    assert st == 200
    check_events(events)
    lines = out_lines(events)
    assert len(lines) == 10000, len(lines)
    assert lines == [str(i) for i in range(1, 10001)]
    assert out_lines(events, "stderr") == ["done"]
    assert events[-1]["type"] == "execution_complete"


def test_command_long_line_is_split_and_complete(ex):
    st, _, events = ex.command_stream({"command": "head -c 200000 /dev/zero | tr '\\0' x; echo"})
    texts = out_texts(events)
    assert "".join(texts) == "x" * 200000 + "\n", [len(t) for t in texts]
    assert all(len(t) <= 65536 + 1 for t in texts)
    # only the last piece ends the line
    assert [t.endswith("\n") for t in texts] == [False] * (len(texts) - 1) + [True]


def test_command_streams_without_buffering_and_pings(ex):
    t0 = time.monotonic()
    st, _, events = ex.command_stream({"command": "echo first; sleep 4; echo second"})
    assert st == 200
    first = [e for e in events if e.get("text") == "first\n"][0]
    second = [e for e in events if e.get("text") == "second\n"][0]
    # "first" arrived while the command still ran: nothing buffered it
    assert first["_t"] - t0 < 3.0, first["_t"] - t0
    assert second["_t"] - first["_t"] > 3.0
    # keep-alives while it was silent
    assert [e for e in events if e["type"] == "ping"], [e["type"] for e in events]


def test_command_timeout_kills_it(ex):
    t0 = time.monotonic()
    st, _, events = ex.command_stream({"command": "echo start; sleep 30; echo never",
                                       "timeout": 1500})
    took = time.monotonic() - t0
    cid = check_events(events)
    assert took < 10, took
    assert out_lines(events) == ["start"]
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] == "137", events[-1]
    assert "timed out" in events[-1]["error"]["traceback"][0]
    st, _, body = ex.json("GET", "/command/status/" + cid)
    assert st == 200 and body["running"] is False and body["exit_code"] == 137, body


def test_background_status_and_logs_with_cursor(ex):
    script = "for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done; echo err >&2; exit 4"
    t0 = time.monotonic()
    st, _, events = ex.command_stream({"command": script, "background": True})
    assert st == 200
    cid = check_events(events)
    assert events[-1]["type"] == "execution_complete", events
    assert time.monotonic() - t0 < 5
    st, _, body = ex.json("GET", "/command/status/" + cid)
    assert st == 200, body
    assert body["id"] == cid and body["content"] == script and body["running"] is True, body
    assert body["exit_code"] is None and body["finished_at"] is None
    assert body["started_at"].endswith("Z")

    got, cursor, seen = [], 0, set()

    def poll():
        nonlocal cursor
        st, hd, raw = ex.request("GET", "/command/%s/logs?cursor=%d" % (cid, cursor))
        assert st == 200, raw
        assert hd["Content-Type"].startswith("text/plain")
        nxt = int(hd["EXECD-COMMANDS-TAIL-CURSOR"])
        assert nxt >= cursor
        text = raw.decode()
        if text:
            got.extend(text.splitlines())
            seen.add(cursor)
        cursor = nxt
        st, _, s = ex.json("GET", "/command/status/" + cid)
        return not s["running"] and cursor == 6 and s
    final = wait_until(poll, 30, 0.3, "background command done, logs read")
    assert got == ["line1", "line2", "line3", "line4", "line5", "err"], got
    assert len(seen) > 1, "the cursor never moved in steps: %r" % seen
    assert final["exit_code"] == 4 and final["finished_at"], final
    # without a cursor: the whole log; past the end: nothing, cursor clamped
    st, hd, raw = ex.request("GET", "/command/%s/logs" % cid)
    assert raw.decode().splitlines() == got and hd["EXECD-COMMANDS-TAIL-CURSOR"] == "6"
    st, hd, raw = ex.request("GET", "/command/%s/logs?cursor=99" % cid)
    assert st == 200 and raw == b"" and int(hd["EXECD-COMMANDS-TAIL-CURSOR"]) <= 7
    # unknown ids
    st, _, body = ex.json("GET", "/command/status/" + "0" * 32)
    assert st == 404, body
    st, _, body = ex.json("GET", "/command/%s/logs" % ("0" * 32))
    assert st == 404, body


def test_interrupt_foreground_while_streaming(ex):
    got = {}

    def on_event(ev):
        if ev["type"] == "init":
            got["id"] = ev["text"]
            got["t"] = time.monotonic()

    res = {}
    th = threading.Thread(target=lambda: res.update(
        r=ex.command_stream({"command": "echo up; sleep 60"}, on_event)))
    th.start()
    wait_until(lambda: "id" in got, 20, 0.05, "init event")
    time.sleep(0.5)
    st, _, raw = ex.request("DELETE", "/command?id=" + got["id"])
    assert st == 200, raw
    th.join(20)
    assert not th.is_alive()
    st, _, events = res["r"]
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] == "137", events[-1]
    assert "interrupted" in events[-1]["error"]["traceback"][0]
    assert events[-1]["_t"] - got["t"] < 15
    st, _, body = ex.json("GET", "/command/status/" + got["id"])
    assert body["running"] is False and body["exit_code"] == 137, body


def test_interrupt_background(ex):
    st, _, events = ex.command_stream({"command": "sleep 60 & sleep 61; echo no", "background": True})
    cid = check_events(events)
    wait_until(lambda: ex.json("GET", "/command/status/" + cid)[2]["running"], 10, 0.2)
    st, _, raw = ex.request("DELETE", "/command?id=" + cid)
    assert st == 200, raw
    body = wait_until(lambda: (lambda b: not b["running"] and b)(
        ex.json("GET", "/command/status/" + cid)[2]), 10, 0.2, "background command killed")
    assert body["exit_code"] == 137, body
    # the whole process group died, the child `sleep 60` too
    st, _, events = ex.command_stream({"command": "ps -eo args 2>/dev/null || "
                                       "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"})
    assert not [l for l in out_lines(events) if "sleep 6" in l], events
    st, _, body = ex.json("DELETE", "/command?id=" + "0" * 32)
    assert st == 404, body


def test_command_bad_bodies(ex):
    for body in ({}, {"command": ""}, {"command": 5}, {"command": "x", "timeout": -1},
                 {"command": "x", "gid": 5}, {"command": "x", "envs": {"1BAD": "x"}},
                 {"command": "x", "background": "yes"}, {"argv": []}):
        st, _, resp = ex.json("POST", "/command", body)
        assert st == 400 and resp["code"], (body, st, resp)
    st, _, resp = ex.json("POST", "/command", b"{not json",
                          headers={"Content-Type": "application/json"})
    assert st == 400, resp


# ----------------------------------------------------------------------- files

def multipart(files, boundary=None):
    boundary = boundary or "b" + uuid.uuid4().hex
    out = b""
    for path, data, meta in files:
        m = {"path": path, "owner": None, "group": None, "mode": 644}
        m.update(meta)
        out += ("--%s\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
                "Content-Type: application/json\r\n\r\n" % boundary).encode()
        out += json.dumps(m).encode() + b"\r\n"
        out += ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n"
                % (boundary, os.path.basename(path))).encode()
        out += data + b"\r\n"
    out += ("--%s--\r\n" % boundary).encode()
    return out, "multipart/form-data; boundary=" + boundary


def test_upload_download_byte_exact_and_ranges(ex):
    big = os.urandom(5 * 1024 * 1024)
    # a delimiter-like sequence inside the data must not cut it
    small = b"\r\n--not-the-boundary\r\n" + bytes(range(256))
    body, ctype = multipart([
        ("/workspace/up/big.bin", big, {}),
        ("/workspace/up/deep/er/small.bin", small, {"mode": 600}),
        ("notes.txt", b"relative to /workspace\n", {"mode": 755}),
    ])
    st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype}, timeout=120)
    assert st == 200, raw

    st, hd, raw = ex.request("GET", "/files/download?path=" + urllib.parse.quote("/workspace/up/big.bin"),
                             timeout=120)
    assert st == 200
    assert hashlib.sha256(raw).hexdigest() == hashlib.sha256(big).hexdigest(), len(raw)
    assert int(hd["Content-Length"]) == len(big)
    assert hd["Content-Type"] == "application/octet-stream"
    assert "big.bin" in hd["Content-Disposition"]

    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/big.bin",
                             headers={"Range": "bytes=1000-1999"})
    assert st == 206 and raw == big[1000:2000], (st, len(raw))
    assert hd["Content-Range"] == "bytes 1000-1999/%d" % len(big)
    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/big.bin",
                             headers={"Range": "bytes=-10"})
    assert st == 206 and raw == big[-10:]
    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/big.bin",
                             headers={"Range": "bytes=5000000-"})
    assert st == 206 and raw == big[5000000:]
    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/big.bin",
                             headers={"Range": "bytes=%d-" % len(big)})
    assert st == 416 and hd["Content-Range"] == "bytes */%d" % len(big), raw

    st, _, raw = ex.request("GET", "/files/download?path=/workspace/up/deep/er/small.bin")
    assert st == 200 and raw == small
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/notes.txt")
    assert st == 200 and raw == b"relative to /workspace\n"
    st, _, body = ex.json("GET", "/files/info?path=/workspace/up/deep/er/small.bin&path=notes.txt")
    assert st == 200, body
    assert body["/workspace/up/deep/er/small.bin"]["mode"] == 600
    assert body["/workspace/up/deep/er/small.bin"]["size"] == len(small)
    assert body["/workspace/notes.txt"]["mode"] == 755
    # line-based reading
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/up/lines.txt")
    assert st == 404
    body2, ctype2 = multipart([("/workspace/up/lines.txt", b"l1\nl2\nl3\nl4\n", {})])
    assert ex.request("POST", "/files/upload", body2, {"Content-Type": ctype2})[0] == 200
    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/lines.txt&offset=2&limit=2")
    assert st == 200 and raw == b"l2\nl3", raw

    # the SDK sends chunked bodies when it talks to execd directly
    chunks = [body2[i:i + 7] for i in range(0, len(body2), 7)]
    st, _, raw = ex.request("POST", "/files/upload", iter(chunks), {"Content-Type": ctype2},
                            encode_chunked=True)
    assert st == 200, raw


def test_upload_bad_bodies(ex):
    body, ctype = multipart([("/workspace/x.txt", b"x", {})])
    for b, ct, code in (
            (body, "application/json", 415),
            (body[:-10], ctype, 400),                       # no closing delimiter
            (body.replace(b'name="metadata"', b'name="zzz"'), ctype, 400),  # file without metadata
            (multipart([("", b"x", {})])[0], None, 400),
    ):
        if ct is None:
            b, ct = multipart([("", b"x", {})])
        st, _, raw = ex.request("POST", "/files/upload", b, {"Content-Type": ct})
        assert st == code, (st, raw)
    big = b"y" * (8 * 1024 * 1024 + 1)  # FILE_MAX_BYTES + 1
    body, ctype = multipart([("/workspace/too-big", big, {})])
    st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype}, timeout=120)
    assert st == 413, raw


def test_info_delete_and_directories(ex):
    st, _, raw = ex.request("POST", "/directories",
                            {"/workspace/d1/sub": {"mode": 700}, "d2": {"mode": 755, "owner": "nobody"}})
    assert st == 200, raw
    st, _, info = ex.json("GET", "/files/info?path=/workspace/d1/sub&path=/workspace/d2")
    assert st == 200, info
    assert info["/workspace/d1/sub"]["type"] == "directory" and info["/workspace/d1/sub"]["mode"] == 700
    assert info["/workspace/d2"]["owner"] == "nobody"
    for k in ("path", "size", "modified_at", "created_at", "owner", "group", "mode"):
        assert k in info["/workspace/d2"], info
    st, _, body = ex.json("GET", "/files/info?path=/workspace/nope")
    assert st == 404 and body["code"] == "FILE_NOT_FOUND", body
    st, _, body = ex.json("POST", "/directories", {"/workspace/x": {"mode": 789}})
    assert st == 400, body

    b, ct = multipart([("/workspace/d1/f.txt", b"f", {})])
    assert ex.request("POST", "/files/upload", b, {"Content-Type": ct})[0] == 200
    st, _, body = ex.json("DELETE", "/files?path=/workspace/d1")
    assert st == 400, body  # a directory: not through DELETE /files
    st, _, raw = ex.request("DELETE", "/files?path=/workspace/d1/f.txt&path=/workspace/never-was")
    assert st == 200, raw
    assert ex.json("GET", "/files/info?path=/workspace/d1/f.txt")[0] == 404
    st, _, raw = ex.request("DELETE", "/directories?path=/workspace/d1&path=/workspace/d2")
    assert st == 200, raw
    assert ex.json("GET", "/files/info?path=/workspace/d1")[0] == 404
    st, _, body = ex.json("GET", "/files/download?path=/workspace")
    assert st == 400, body


def test_paths_are_normalised_inside_the_sandbox(ex):
    # ".." cannot leave the container: it resolves like any path in it
    st, _, raw = ex.request("GET", "/files/download?path=" +
                            urllib.parse.quote("/workspace/../../../../etc/hostname"))
    assert st == 200, raw
    cid = ex.sb.container(ex.sid)["Id"]
    assert raw.decode().strip() == cid[:12], raw
    b, ct = multipart([("/workspace/a/../../tmp/./norm.txt", b"n", {})])
    assert ex.request("POST", "/files/upload", b, {"Content-Type": ct})[0] == 200
    st, _, info = ex.json("GET", "/files/info?path=/tmp/norm.txt")
    assert st == 200 and "/tmp/norm.txt" in info, info
    st, _, body = ex.json("GET", "/files/download?path=" + urllib.parse.quote("/etc/hostname\x00x"))
    assert st == 400, body


# ---------------------------------------------------------------- metrics, egress

def test_metrics(ex):
    st, _, m = ex.json("GET", "/metrics")
    assert st == 200, m
    for k in ("cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib"):
        assert isinstance(m[k], (int, float)) and m[k] >= 0, m
    assert m["cpu_count"] > 0 and m["mem_total_mib"] > 0 and m["mem_used_mib"] <= m["mem_total_mib"]
    assert isinstance(m["timestamp"], int)


def test_egress_policy(ex):
    st, _, p = ex.json("GET", "/policy", port=18080)
    assert st == 200, p
    assert p["mode"] == "deny_all" and p["policy"]["defaultAction"] == "deny", p
    assert p["policy"]["egress"] == []
    st, _, p = ex.json("GET", "/policy", port=18080, token="nope")
    assert st == 404, p
    st, _, p = ex.json("GET", "/policy", port=18080, token="")
    assert st == 401, p
    # run-time changes are served (test_egress_policy.py has the details)
    st, _, p = ex.json("PATCH", "/policy", [{"action": "allow", "target": "pypi.org"}], port=18080)
    assert st == 200, p
    assert p["policy"]["egress"] == [{"action": "allow", "target": "pypi.org"}], p
    st, _, p = ex.json("DELETE", "/policy", ["pypi.org"], port=18080)
    assert st == 200 and p["policy"]["egress"] == [], p
