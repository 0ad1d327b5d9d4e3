"""The Daytona provider through nginx, against the Daytona test double
(tests/daytona/double.py), which validates every request our provider sends
against Daytona's OpenAPI documents and runs the sandboxes as Docker
containers.

- lease scenarios: exclusive, user_shared (one sandbox, a workdir per
  session), multi_user_shared (a Linux user per seat, via runuser)
- the runtime API: exit code and split stdout/stderr, cwd, env, timeout,
  byte-exact files, path traversal refused, stop/start
- every failure mode (401, 404, 409, 429, 500, timeouts, malformed JSON, a
  sandbox in state `error`) gives a clear API error or a failed ticket, and
  no record stays Pending
- the execd data plane (OpenSandbox) on a backend without streaming: SSE
  command output, background commands, file upload, download and Range
  (the buffered fallback of the provider facade)
- zero spec violations, bearer + organization header on every request.
"""

import hashlib
import os
import sys
import time
import urllib.parse
import uuid

import pytest

import conftest
from brokerlib import check_error, wait_until
from sandboxlib import BASE_IMAGE, MULTI_IMAGE, SB, SB_HTTP_TIMEOUT, require_docker
from sdklib import API_KEYS_ENV, OSB
from test_execd import Execd, check_events, multipart, out_lines

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daytona"))
import double as daytona_double  # noqa: E402

require_docker()

API_KEY = "dt-test-key-" + uuid.uuid4().hex
ORG = "org-" + uuid.uuid4().hex[:8]
SNAP, MSNAP = "broker-base", "broker-multiuser"


@pytest.fixture(scope="module")
def dt(request, services, it_root):
    d = daytona_double.Double(API_KEY, {SNAP: BASE_IMAGE, MSNAP: MULTI_IMAGE}, org_id=ORG).start()
    env = {"SANDBOX_PROVIDER": "daytona", "DAYTONA_API_URL": d.url, "DAYTONA_API_KEY": API_KEY,
           "DAYTONA_ORGANIZATION_ID": ORG, "DAYTONA_SNAPSHOT": SNAP,
           "DAYTONA_MULTIUSER_SNAPSHOT": MSNAP, "DAYTONA_TARGET": "us",
           "DAYTONA_TIMEOUT_MS": "3000", "DAYTONA_POLL_MAX_MS": "20000",
           "DOCKER_TIMEOUT_MS": "15000", "BROKER_CAPACITY": "16",
           "EXEC_MAX_OUTPUT": "65536", "IDLE_POLICY": "stop_keep", "RECONCILE_MS": "1000",
           "OPENSANDBOX_API_KEYS": API_KEYS_ENV}
    b = conftest.make_broker(request, services, it_root, **env)
    sb = SB(b)
    sb.double = d

    def fin():
        try:
            b.down()
        finally:
            d.close()
    request.addfinalizer(fin)
    return sb


@pytest.fixture(autouse=True)
def _checks(request, dt):
    """Logs on failure; after each test: no spec violation, auth headers on
    every request, the double's faults cleared."""
    request.node._it_brokers = [dt.b]
    d = dt.double
    n0 = len(d.requests)
    yield
    d.faults.clear()
    d.end_state = None
    assert d.violations == [], d.violations
    for r in d.requests[n0:]:
        assert r["auth"] == "Bearer ", r
        assert r["org"] == ORG, r


def user():
    return "u" + uuid.uuid4().hex[:10]


def fault(dt, **kw):
    dt.double.faults.append(dict(kw, times=kw.get("times", 1)))


def acquire_outcome(sb, u, s="s1", mode=None, pool=None, timeout=60):
    """('granted', lease) or ('failed', error answer or poll answer).
    With capacity free the sandbox is made inside the acquire call, so a
    provider failure is its answer (502 SANDBOX_FAILED); queued, the
    ticket reads failed."""
    r = sb.b.acquire(u, s, mode, pool, timeout=SB_HTTP_TIMEOUT)
    if r.status == 200:
        return "granted", r.json["lease"]
    if r.status == 502:
        assert r.json["code"] == "SANDBOX_FAILED", r
        return "failed", r.json
    assert r.status == 202, r
    ticket = r.json["ticketId"]

    def chk():
        p = sb.b.poll(ticket, timeout=SB_HTTP_TIMEOUT)
        assert p.status == 200, p
        st = p.json["status"]
        if st == "granted":
            return "granted", p.json["lease"]
        if st in ("failed", "expired"):
            return st, p.json
        return None
    return wait_until(chk, timeout, 0.1, "ticket %s settled" % ticket)


def sandboxes_of(sb, state):
    out = []
    for k in sb.b.redis.scan_iter(sb.b.key("sandbox:*")):
        rec = sb.b.redis.hgetall(k)
        if rec.get("state") == state:
            out.append(rec)
    return out


def no_pending(sb):
    return not sandboxes_of(sb, "Pending") or None


def dsandbox(dt, sid):
    return dt.double.find("sb-" + sid)


# ------------------------------------------------------------- scenarios

def test_exclusive_runtime_api(dt):
    u = user()
    st, lz = acquire_outcome(dt, u)
    assert st == "granted", lz
    assert lz["provider"] == "daytona" and lz["workdir"] == "/workspace", lz
    s = dsandbox(dt, lz["sandboxId"])
    assert s and s["state"] == "started" and s["snapshot"] == SNAP, s
    assert s["labels"]["io.sandbox-broker.sandbox-id"] == lz["sandboxId"], s
    assert s["labels"]["io.sandbox-broker.prefix"] == dt.prefix, s
    assert s["networkBlockAll"] is True and s["user"] == "root", s
    assert s["autoStopInterval"] == 0 and s["autoDeleteInterval"] == 10, s  # IDLE_KEEP_MS 600 s
    assert dt.record(lz["sandboxId"])["ref"] == s["id"]

    res = dt.run(lz, "echo out; echo err >&2; exit 3")
    assert (res["exitCode"], res["stdout"], res["stderr"]) == (3, "out\n", "err\n"), res
    assert res["timedOut"] is False, res
    assert dt.run(lz, "id -un")["stdout"] == "root\n"
    assert dt.run(lz, "pwd")["stdout"] == "/workspace\n"
    assert dt.run(lz, "pwd", cwd="/tmp")["stdout"] == "/tmp\n"
    res = dt.run(lz, ["printf", "%s|", "a b", "$HOME", "it's"])
    assert res["stdout"] == "a b|$HOME|it's|", res
    res = dt.run(lz, 'printf "%s|%s" "$FOO" "$SANDBOX_ID"', env={"FOO": "bar baz"})
    assert res["stdout"] == "bar baz|" + lz["sandboxId"], res
    res = dt.run(lz, "head -c 200000 /dev/zero | tr '\\0' a")
    assert res["stdoutTruncated"] is True and len(res["stdout"]) == 65536, len(res["stdout"])

    t0 = time.monotonic()
    res = dt.run(lz, "echo started; sleep 30; echo never", timeoutMs=1500)
    assert res["timedOut"] is True and res["stdout"] == "started\n", res
    assert time.monotonic() - t0 < 15

    data = bytes(range(256)) * 64 + b"\x00\xff end"
    r = dt.write(lz, "dir/bin.dat", data)
    assert r.status == 200 and r.json["size"] == len(data), r
    r = dt.read(lz, "dir/bin.dat")
    assert r.status == 200, r
    import base64
    assert base64.b64decode(r.json["content"]) == data
    check_error(dt.read(lz, "missing.txt"), 404, "FILE_NOT_FOUND")
    for p in ("../etc/passwd", "/workspace/../etc/passwd", "a/../../etc/passwd"):
        check_error(dt.read(lz, p), 400, "INVALID_REQUEST")
        check_error(dt.write(lz, p, b"pwned"), 400, "INVALID_REQUEST")
    # no stdin staging file is left behind
    assert dt.run(lz, "ls -a /tmp | grep -c sb-stdin || true")["stdout"].strip() == "0"

    r = dt.stop(lz)
    assert r.status == 200 and r.json["state"] == "Stopped", r
    assert dsandbox(dt, lz["sandboxId"])["state"] == "stopped"
    check_error(dt.exec(lz, "true"), 409, "SANDBOX_NOT_RUNNING")
    r = dt.start(lz)
    assert r.status == 200 and r.json["state"] == "Running", r
    assert dt.read(lz, "dir/bin.dat").status == 200  # the same sandbox, kept

    dt.release(u, "s1", "deleted")
    wait_until(lambda: dsandbox(dt, lz["sandboxId"]) is None, 30, 0.2, "daytona sandbox deleted")


def test_user_shared_workdirs(dt):
    u = user()
    st, l1 = acquire_outcome(dt, u, "s1", "user_shared")
    assert st == "granted", l1
    st, l2 = acquire_outcome(dt, u, "s2", "user_shared")
    assert st == "granted", l2
    assert l1["sandboxId"] == l2["sandboxId"]
    assert (l1["workdir"], l2["workdir"]) == ("/workspace/s1", "/workspace/s2")
    assert dt.run(l1, "pwd")["stdout"] == "/workspace/s1\n"
    assert dt.write(l1, "notes.txt", b"one").status == 200
    check_error(dt.read(l2, "notes.txt"), 404, "FILE_NOT_FOUND")
    check_error(dt.read(l2, "/workspace/s1/notes.txt"), 400, "INVALID_REQUEST")
    dt.release(u, "s1")
    dt.release(u, "s2")


def test_multi_user_shared_seats(dt):
    pool = "p" + uuid.uuid4().hex[:6]
    ua, ub = user(), user()
    st, la = acquire_outcome(dt, ua, "s1", "multi_user_shared", pool)
    assert st == "granted", la
    st, lb = acquire_outcome(dt, ub, "s1", "multi_user_shared", pool)
    assert st == "granted", lb
    assert la["sandboxId"] == lb["sandboxId"]
    assert dsandbox(dt, la["sandboxId"])["snapshot"] == MSNAP
    assert dt.run(la, "id -un")["stdout"] == la["linuxUser"] + "\n"
    assert dt.run(lb, "id -un")["stdout"] == lb["linuxUser"] + "\n"
    assert dt.run(la, "pwd")["stdout"] == la["workdir"] + "\n"
    assert dt.write(la, "secret.txt", b"mine").status == 200
    assert dt.run(la, "stat -c %U secret.txt")["stdout"] == la["linuxUser"] + "\n"
    res = dt.run(lb, ["cat", la["workdir"] + "/secret.txt"])
    assert res["exitCode"] != 0 and "Permission denied" in res["stderr"], res
    dt.release(ua, "s1")
    dt.release(ub, "s1")


# ---------------------------------------------------------- failure modes

@pytest.mark.parametrize("kind", ["401", "500", "409", "malformed", "timeout", "state_error",
                                  "429_exhausted"])
def test_create_failure_fails_the_ticket(dt, kind):
    if kind == "malformed":
        fault(dt, fail="create", malformed=True)
        want = "daytona: create"
    elif kind == "timeout":
        fault(dt, fail="create", delay_ms=4000)
        want = "timed out"
    elif kind == "state_error":
        dt.double.end_state = ("error", "disk quota exceeded")
        want = "disk quota exceeded"
    elif kind == "429_exhausted":
        fault(dt, fail="create", status=429, retry_after=0, times=10)
        want = "rate limited"
    elif kind == "409":
        # name taken: the broker adopts the sandbox of that name, which is
        # not there either
        fault(dt, fail="create", status=409)
        want = "HTTP 404"
    else:
        fault(dt, fail="create", status=int(kind), times=3)
        want = "HTTP %s" % kind
    u = user()
    r = dt.b.acquire(u, "s1", timeout=SB_HTTP_TIMEOUT) if kind == "409" else None
    if r is not None:
        # a name conflict on a name nobody holds is the backend's failure
        check_error(r, 502, "SANDBOX_FAILED")
        assert want in r.json["message"], r
    else:
        st, ans = acquire_outcome(dt, u)
        assert st == "failed", ans
        assert want in ans.get("message", ""), ans
    wait_until(lambda: no_pending(dt), 30, 0.2, "no Pending record")
    failed = [r for r in sandboxes_of(dt, "Failed") if want in r.get("message", "")]
    assert failed, (want, sandboxes_of(dt, "Failed"))
    dt.double.faults.clear()
    dt.double.end_state = None
    # the broker recovers: the next lease works
    st, lz = acquire_outcome(dt, user())
    assert st == "granted", lz
    assert dt.run(lz, "echo ok")["stdout"] == "ok\n"
    if kind in ("timeout", "state_error", "malformed"):
        # what Daytona made for the failed record goes (create's cleanup or
        # the reconciler, which finds it by our labels)
        sids = {r["sandboxId"] for r in failed}
        wait_until(lambda: all(dsandbox(dt, s) is None for s in sids), 30, 0.3,
                   "failed records' sandboxes removed")


def test_429_with_retry_after_is_retried(dt):
    fault(dt, fail="create", status=429, retry_after=1, times=2)
    t0 = time.monotonic()
    st, lz = acquire_outcome(dt, user())
    assert st == "granted", lz
    assert time.monotonic() - t0 >= 2.0  # Retry-After honoured twice


def test_runtime_errors_are_clear(dt):
    u = user()
    st, lz = acquire_outcome(dt, u)
    assert st == "granted", lz
    fault(dt, fail="execute", status=500)
    r = dt.exec(lz, "true")
    check_error(r, 502, "SANDBOX_FAILED")
    assert "HTTP 500" in r.json["message"], r
    fault(dt, fail="execute", status=401)
    r = dt.exec(lz, "true")
    assert "HTTP 401" in r.json["message"] and API_KEY not in r.raw.decode(), r
    fault(dt, fail="execute", malformed=True)
    r = dt.exec(lz, "true")
    assert "malformed" in r.json["message"], r
    fault(dt, fail="upload", status=503)
    r = dt.write(lz, "x.txt", b"x")
    assert r.status >= 400 and "HTTP 503" in r.json["message"], r
    fault(dt, fail="get", status=404)
    check_error(dt.exec(lz, "true"), 409, "SANDBOX_NOT_RUNNING")  # the sandbox is gone
    assert dt.run(lz, "echo fine")["stdout"] == "fine\n"  # faults were one-shot
    dt.release(u, "s1", "deleted")


def test_vanished_sandbox_marks_the_record_failed(dt):
    u = user()
    st, lz = acquire_outcome(dt, u)
    assert st == "granted", lz
    s = dsandbox(dt, lz["sandboxId"])
    dt.double.delete(s)  # behind the broker's back
    rec = dt.wait_record_state(lz["sandboxId"], "Failed", timeout=30)
    assert rec.get("reason") == "CONTAINER_MISSING", rec


def test_snapshots_are_not_supported(dt):
    """Snapshots need a provider that can make them (Docker): on Daytona
    every snapshot route answers 501 with the reason, and nothing is stored."""
    osb = OSB(dt.b)
    sid = osb.create(image=SNAP, entrypoint=("sleep", "infinity"))
    for method, path, body in (("POST", "/sandboxes/%s/snapshots" % sid, {}),
                               ("GET", "/snapshots", None),
                               ("GET", "/snapshots/" + "a" * 32, None),
                               ("DELETE", "/snapshots/" + "a" * 32, None)):
        r = check_error(osb.call(method, path, body), 501, "NOT_IMPLEMENTED")
        assert "not supported by the daytona provider" in r["message"], r
    assert dt.b.redis.keys(dt.b.prefix + "snapshot*") == []
    assert osb.delete(sid).status == 204


def test_diagnostics_on_daytona(dt):
    """Diagnostics (docs/OPENSANDBOX.md, "Diagnostics") on Daytona: the
    logs are not read from this backend (501 with the reason, nothing
    else), the events are the broker's own record (200)."""
    osb = OSB(dt.b)
    sid = osb.create(image=SNAP, entrypoint=("sleep", "infinity"))
    r = check_error(osb.call("GET", "/sandboxes/%s/diagnostics/logs?scope=container" % sid), 501,
                    "NOT_IMPLEMENTED")
    assert "daytona" in r["message"] and "no sandbox output" in r["message"], r
    r = osb.call("GET", "/sandboxes/%s/diagnostics/events?scope=lifecycle" % sid)
    assert r.status == 200 and r.json["kind"] == "events", r
    assert [l.split(" ")[1] for l in r.json["content"].splitlines()][-1] == "Running", r
    assert osb.delete(sid).status == 204


# ------------------------------------------------------- execd on Daytona

def test_execd_routes_without_streaming(dt):
    """Daytona's toolbox has no streaming exec: foreground commands and
    downloads must take the buffered path (output at the end, same events,
    same bytes) instead of failing."""
    osb = OSB(dt.b)
    sid = osb.create(image=SNAP, entrypoint=("sleep", "infinity"))
    assert dsandbox(dt, sid)["state"] == "started"
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    ex = Execd(dt, sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])
    assert ex.request("GET", "/ping")[0] == 200

    # foreground command: init, one event per line, execution_complete
    st, hd, events = ex.command_stream({"command": "echo hello; echo oops >&2; printf 'a\\n\\nb'"})
    assert st == 200, events
    assert hd["Content-Type"].startswith("text/event-stream"), hd
    check_events(events)
    assert out_lines(events) == ["hello", "a", "", "b"], events
    assert out_lines(events, "stderr") == ["oops"], events
    assert events[-1]["type"] == "execution_complete", events[-1]
    st, _, events = ex.command_stream({"command": "pwd; id -u", "envs": {"X": "y"}})
    assert out_lines(events) == ["/workspace", "0"], events
    # a failing command: the error event carries the exit code
    st, _, events = ex.command_stream({"command": "echo before; exit 3"})
    assert st == 200 and out_lines(events) == ["before"], events
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] == "3", events[-1]
    # its status is read back from the sandbox
    cid = events[0]["text"]
    st, _, body = ex.json("GET", "/command/status/" + cid)
    assert st == 200 and body["running"] is False and body["exit_code"] == 3, body

    # background command: status and logs
    st, _, events = ex.command_stream({"command": "echo bg-out; sleep 0.2; echo bg-done",
                                       "background": True})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    bid = events[0]["text"]
    wait_until(lambda: ex.json("GET", "/command/status/" + bid)[2]["running"] is False or None,
               30, 0.2, "background command ended")
    st, hd, raw = ex.request("GET", "/command/%s/logs?cursor=0" % bid)
    assert st == 200 and raw == b"bg-out\nbg-done\n", raw

    # upload (several files), byte-exact download, Range, info
    data = os.urandom(300 * 1024) + b"\x00\xff end"
    small = b"\r\n--not-the-boundary\r\n" + bytes(range(256))
    body, ctype = multipart([("/workspace/up/data.bin", data, {}),
                             ("notes/small.bin", small, {"mode": 600})])
    st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype}, timeout=120)
    assert st == 200, raw
    st, hd, raw = ex.request("GET", "/files/download?path=" + urllib.parse.quote("/workspace/up/data.bin"),
                             timeout=120)
    assert st == 200, raw[:300]
    assert hashlib.sha256(raw).hexdigest() == hashlib.sha256(data).hexdigest(), len(raw)
    assert int(hd["Content-Length"]) == len(data)
    assert hd["Content-Type"] == "application/octet-stream"
    assert "data.bin" in hd["Content-Disposition"]
    st, hd, raw = ex.request("GET", "/files/download?path=/workspace/up/data.bin",
                             headers={"Range": "bytes=1000-1999"})
    assert st == 206 and raw == data[1000:2000], (st, len(raw))
    assert hd["Content-Range"] == "bytes 1000-1999/%d" % len(data)
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/notes/small.bin")
    assert st == 200 and raw == small
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/missing.bin")
    assert st == 404, raw
    st, _, info = ex.json("GET", "/files/info?path=/workspace/notes/small.bin")
    assert st == 200 and info["/workspace/notes/small.bin"]["mode"] == 600, info
    # the file is in the Daytona sandbox itself
    res = daytona_double.docker("exec", dsandbox(dt, sid)["container"], "sha256sum",
                                "/workspace/up/data.bin")
    assert res.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest(), res

    r = osb.delete(sid)
    assert r.status == 204, r
    wait_until(lambda: dsandbox(dt, sid) is None, 30, 0.2, "daytona sandbox deleted")


def test_bad_key_is_refused_without_leaking_it(request, services, it_root):
    d = daytona_double.Double(API_KEY, {SNAP: BASE_IMAGE}).start()
    request.addfinalizer(d.close)
    b = conftest.make_broker(request, services, it_root, SANDBOX_PROVIDER="daytona",
                             DAYTONA_API_URL=d.url, DAYTONA_API_KEY="wrong-secret-key",
                             DAYTONA_SNAPSHOT=SNAP, DAYTONA_TIMEOUT_MS="3000",
                             DAYTONA_POLL_MAX_MS="10000")
    sb = SB(b)
    st, ans = acquire_outcome(sb, user())
    assert st == "failed", ans
    wait_until(lambda: no_pending(sb), 30, 0.2, "no Pending record")
    recs = sandboxes_of(sb, "Failed")
    assert recs and "HTTP 401" in recs[0]["message"], recs
    assert "DAYTONA_API_KEY" in recs[0]["message"], recs
    assert d.violations == []
    logdir = os.path.join(b.state_dir, "logs")
    logs = "".join(b.logs(f[:-4]) for f in os.listdir(logdir) if f.endswith(".log"))
    assert "HTTP 401" in logs  # the failure is logged, the key is not
    assert "wrong-secret-key" not in logs
    assert all(r["org"] is None for r in d.requests)  # no org configured: no header


def test_volumes_are_refused_by_this_provider(dt):
    """OpenSandbox volumes need the provider's volume ops, which Daytona has
    not: a create with any volume, and the tenant's volume routes, are 400
    "not supported by this provider"; nothing is made."""
    osb = OSB(dt.b)
    before = len(dt.double.sandboxes)
    for vol in ({"name": "w", "pvc": {"claimName": "w"}, "mountPath": "/w"},
                {"name": "h", "host": {"path": "/tmp"}, "mountPath": "/h"}):
        r = osb.create_raw({"image": {"uri": SNAP}, "entrypoint": ["sleep", "infinity"],
                            "timeout": 600, "volumes": [vol]})
        assert r.status == 400 and "not supported by this provider" in r.json["message"], r
    assert len(dt.double.sandboxes) == before
    r = osb.call("GET", "/volumes")
    assert r.status == 400 and "not supported by this provider" in r.json["message"], r
    r = osb.call("DELETE", "/volumes/w")
    assert r.status == 400 and "not supported by this provider" in r.json["message"], r
