"""OpenSandbox fidelity (issue 15): what a user of the official SDKs and the
`osb` CLI meets, each against a real Docker broker.

- a sandbox that fails (an image that does not exist) fails the SDKs'
  create at once, with the reason: execd /ping and the execd endpoint answer
  403 SANDBOX_UNUSABLE with the record's reason (not 503 until the ready
  timeout); the Python and the TypeScript SDK both give up within seconds;
- /ping waits (bounded) for a Pending sandbox instead of answering 503 at
  once, so the SDK learns it is ready the moment it is;
- stdout events carry their line's newline: `osb command run -o raw -- sh -c
  'echo a; echo b'` prints "a\\nb\\n", and the SDKs still assemble the output;
- a file name over NAME_MAX (and a path over PATH_MAX) is 400, not 502;
- POST /v1/metrics/events (the SDKs' telemetry) is 204 with a key, 401
  without; execd routes of the spec the broker does not serve are 501;
- every route of the pinned Python SDK's generated clients (read from the
  installed package, so a route a release adds cannot silently answer "no
  such route") is a row of docs/OPENSANDBOX.md's route table and either
  works or answers 501 with the reason, as its row says;
- the README's Python and TypeScript quickstarts run verbatim.
"""

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

from brokerlib import REPO, check_error, http_request
from sandboxlib import BASE_IMAGE, require_docker
from sdklib import KEY, NODE_SDK, OSB, node_sdk_entry, node_skip_reason, python_sdk_python, \
    start_osb_broker
from test_execd import Execd, multipart

require_docker()

MISSING_IMAGE = "sandbox-broker/no-such-image:never"


@pytest.fixture(scope="module")
def osb_broker(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, osb_broker):
    request.node._it_brokers = [osb_broker]


def token_of(b, sid, tenant):
    """The data-plane token of sandbox sid for tenant's key, as the endpoint
    answer hands it out. Asked for port 18080, whose endpoint answers at
    once: 44772's waits for the sandbox and refuses a failed one."""
    r = OSB(b, tenant).endpoint(sid, 18080)
    assert r.status == 200, r
    return r.json["headers"]["X-EXECD-ACCESS-TOKEN"]


def execd_of(b, sid, tenant):
    from sandboxlib import SB
    return Execd(SB(b), sid, token_of(b, sid, tenant))


def run(cmd, env=None, cwd=None, timeout=180):
    full = dict(os.environ)
    full.update(env or {})
    t0 = time.monotonic()
    cp = subprocess.run(cmd, cwd=cwd, env=full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return (cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace"),
            time.monotonic() - t0)


# ------------------------------------------------------------ a failed sandbox

def test_failed_sandbox_endpoint_and_ping_answer_403_with_the_reason(osb_broker):
    osb = OSB(osb_broker, "alpha")
    sid = osb.create(image=MISSING_IMAGE, wait=False)
    # asked right after the create, as the SDKs do: the endpoint waits while
    # the sandbox is being made, then says it failed, and why
    r = osb.endpoint(sid, 44772)
    check_error(r, 403, "SANDBOX_UNUSABLE")
    assert "Failed" in r.json["message"] and "never be ready" in r.json["message"], r
    rec = osb.state(sid)
    assert rec["state"] == "Failed", rec
    assert rec["reason"] in r.json["message"], (rec, r.json)
    st, _, body = execd_of(osb_broker, sid, "alpha").json("GET", "/ping")
    assert st == 403 and body["code"] == "SANDBOX_UNUSABLE", body
    assert rec["reason"] in body["message"] and sid in body["message"], body
    # the egress endpoint is not held (only execd's is) and still answers
    assert osb.endpoint(sid, 18080).status == 200


PY_CREATE = r"""
import json, sys, time
from datetime import timedelta
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig
import asyncio

async def main():
    cfg = ConnectionConfig(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
    t0 = time.monotonic()
    try:
        sb = await Sandbox.create(sys.argv[3], connection_config=cfg, ready_timeout=timedelta(seconds=60),
                                  resource={"cpu": "250m", "memory": "128Mi"})
    except Exception as e:
        print(json.dumps({"error": str(e), "type": type(e).__name__, "took": time.monotonic() - t0}))
        return
    print(json.dumps({"id": sb.id, "took": time.monotonic() - t0}))
    await sb.kill()

asyncio.run(main())
"""

TS_CREATE = r"""
const { ConnectionConfig, Sandbox } = await import(process.env.QS_SDK);
const t0 = Date.now();
try {
  const sb = await Sandbox.create({
    connectionConfig: new ConnectionConfig({ domain: process.argv[1], apiKey: process.argv[2], protocol: "http" }),
    image: process.argv[3], resource: { cpu: "250m", memory: "128Mi" }, readyTimeoutSeconds: 60,
  });
  console.log(JSON.stringify({ id: sb.id, took: (Date.now() - t0) / 1000 }));
  await sb.kill();
} catch (e) {
  console.log(JSON.stringify({ error: String(e?.message ?? e), took: (Date.now() - t0) / 1000 }));
}
"""


def _last_json(out):
    lines = [l for l in out.splitlines() if l.startswith("{")]
    assert lines, out
    return json.loads(lines[-1])


def test_python_sdk_create_of_a_missing_image_fails_at_once(osb_broker):
    rc, out, err, took = run([python_sdk_python(), "-c", PY_CREATE, "127.0.0.1:%d" % osb_broker.port,
                              KEY["bravo"], MISSING_IMAGE], timeout=120)
    res = _last_json(out)
    assert "error" in res, (res, err[-2000:])
    # not the 60 s ready timeout: the first ping said it failed, and why
    assert res["took"] < 20, res
    assert "timed out" not in res["error"], res
    assert "Failed" in res["error"] and "never be ready" in res["error"], res


def test_typescript_sdk_create_of_a_missing_image_fails_at_once(osb_broker):
    reason = node_skip_reason()
    if reason:
        pytest.skip(reason)
    rc, out, err, took = run([shutil.which("node"), "--input-type=module", "-e", TS_CREATE,
                              "127.0.0.1:%d" % osb_broker.port, KEY["charlie"], MISSING_IMAGE],
                             env={"QS_SDK": node_sdk_entry()}, timeout=120)
    res = _last_json(out)
    assert "error" in res, (res, err[-2000:])
    assert res["took"] < 20, res
    assert "timed out" not in res["error"], res
    assert "never be ready" in res["error"], res


def test_ping_waits_for_a_pending_sandbox(osb_broker):
    """The first ping, sent right after the create, answers 200 the moment
    the sandbox is Running rather than 503 at once (or 503 only after the
    whole bounded wait, on a machine slower than that)."""
    osb = OSB(osb_broker, "delta")
    sid = osb.create(image=BASE_IMAGE, wait=False)
    ex = execd_of(osb_broker, sid, "delta")
    t0 = time.monotonic()
    st, _, body = ex.json("GET", "/ping")
    took = time.monotonic() - t0
    assert st == 200 or (st == 503 and took > 4.5), (st, body, took)
    if st == 200:
        assert osb.state(sid)["state"] == "Running"
    # a Running sandbox answers at once
    t0 = time.monotonic()
    osb.wait_state(sid, "Running")
    assert ex.request("GET", "/ping")[0] == 200
    assert time.monotonic() - t0 < 60
    assert osb.delete(sid).status == 204


def test_ping_of_a_record_made_pending_again_answers_when_it_runs(osb_broker):
    """Deterministic: a Running sandbox's record set to Pending, and back to
    Running 1 s later: the ping held meanwhile answers 200 after ~1 s."""
    osb = OSB(osb_broker, "delta")
    sid = osb.create(image=BASE_IMAGE)
    ex = execd_of(osb_broker, sid, "delta")
    key = osb_broker.key("sandbox:" + sid)
    osb_broker.redis.hset(key, "state", "Pending")
    timer = threading.Timer(1.0, lambda: osb_broker.redis.hset(key, "state", "Running"))
    timer.start()
    try:
        t0 = time.monotonic()
        st, _, raw = ex.request("GET", "/ping")
        took = time.monotonic() - t0
    finally:
        timer.join()
        osb_broker.redis.hset(key, "state", "Running")
    assert st == 200, raw
    assert 0.8 < took < 4.5, took
    assert osb.delete(sid).status == 204


# ----------------------------------------------------------- a running sandbox

@pytest.fixture(scope="module")
def running(osb_broker):
    osb = OSB(osb_broker, "echo")
    sid = osb.create(image=BASE_IMAGE)
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    return osb, sid, execd_of(osb_broker, sid, "echo")


def _osb_cli():
    """The `osb` CLI (opensandbox-cli from PyPI) next to the test venv's python,
    installed there when it is missing (same pin as the SDK)."""
    osb = os.path.join(os.path.dirname(sys.executable), "osb")
    if not os.path.exists(osb):
        cp = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "opensandbox-cli>=1.1.1,<1.2"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=600)
        if cp.returncode != 0 or not os.path.exists(osb):
            pytest.fail("cannot install opensandbox-cli:\n%s" % cp.stdout.decode()[-3000:], pytrace=False)
    return osb


def test_osb_raw_output_keeps_newlines(osb_broker, running, tmp_path):
    osb, sid, _ = running
    env = {"HOME": str(tmp_path), "OPEN_SANDBOX_DOMAIN": "127.0.0.1:%d" % osb_broker.port,
           "OPEN_SANDBOX_API_KEY": KEY["echo"], "OPEN_SANDBOX_PROTOCOL": "http",
           "NO_COLOR": "1", "COLUMNS": "200"}
    rc, out, err, _ = run([_osb_cli(), "command", "run", "-o", "raw", sid, "--",
                           "sh", "-c", "echo a; echo b; printf c"], env=env, timeout=120)
    assert rc == 0, (out, err)
    # "c" has no newline of its own: osb adds one at the end
    assert out == "a\nb\nc\n", (out, err)


PY_TEXT = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
ex = sb.commands.run("echo a; echo; echo b; printf c")
print(json.dumps({"text": ex.text, "stdout": [m.text for m in ex.logs.stdout]}))
"""


def test_python_sdk_assembles_output_with_newlines(osb_broker, running):
    _, sid, _ = running
    rc, out, err, _ = run([python_sdk_python(), "-c", PY_TEXT, "127.0.0.1:%d" % osb_broker.port,
                           KEY["echo"], sid], timeout=120)
    assert rc == 0, (out, err[-3000:])
    res = _last_json(out)
    assert res["stdout"] == ["a\n", "\n", "b\n", "c"], res
    assert res["text"] == "a\n\nb\nc", res


def test_line_range_download_has_no_trailing_newline(running):
    _, _, ex = running
    st, _, events = ex.command_stream({"command": "printf 'line1\\nline2\\nline3\\n' > /workspace/lines3.txt; "
                                                  "printf 'x1\\nx2' > /workspace/noeol.txt"})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    for q, want in (("offset=2&limit=2", b"line2\nline3"),
                    ("offset=1&limit=1", b"line1"),
                    ("offset=1", b"line1\nline2\nline3"),
                    ("offset=3&limit=5", b"line3"),
                    ("offset=9&limit=1", b"")):
        st, hd, raw = ex.request("GET", "/files/download?path=/workspace/lines3.txt&" + q)
        assert st == 200 and raw == want, (q, st, raw)
        assert hd["Content-Type"].startswith("text/plain"), hd
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/noeol.txt&offset=1")
    assert st == 200 and raw == b"x1\nx2", raw


def test_file_name_over_name_max_is_400(running):
    _, _, ex = running
    long_name = "n" * 300
    b, ct = multipart([("/workspace/" + long_name, b"x", {})])
    st, _, raw = ex.request("POST", "/files/upload", b, {"Content-Type": ct})
    assert st == 400 and json.loads(raw)["code"] == "INVALID_REQUEST", raw
    st, _, body = ex.json("POST", "/directories", {"/workspace/d/" + long_name: {"mode": 755}})
    assert st == 400 and body["code"] == "INVALID_REQUEST", body
    for method, path in (("GET", "/files/download?path="), ("GET", "/files/info?path="),
                         ("DELETE", "/files?path="), ("DELETE", "/directories?path=")):
        st, _, body = ex.json(method, path + urllib.parse.quote("/workspace/" + long_name))
        assert st == 400 and body["code"] == "INVALID_REQUEST", (method, path, body)
    # 255 bytes is still a name
    ok = "o" * 255
    st, _, events = ex.command_stream({"command": "printf x > /workspace/" + ok})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/" + ok)
    assert st == 200 and raw == b"x", raw
    # a path over PATH_MAX (4095 bytes), of names under NAME_MAX
    deep = "/workspace/" + "/".join(["d" * 200] * 21)
    st, _, body = ex.json("GET", "/files/download?path=" + urllib.parse.quote(deep))
    assert st == 400 and body["code"] == "INVALID_REQUEST", body


def test_metrics_events_and_unserved_routes(osb_broker, running):
    _, sid, ex = running
    event = json.dumps({"eventType": "sandbox.create", "createDurationMs": 12, "success": True,
                        "sandboxId": sid, "image": BASE_IMAGE})
    r = http_request(osb_broker.port, "POST", "/v1/metrics/events", event,
                     {"OPEN-SANDBOX-API-KEY": KEY["echo"], "Content-Type": "application/json"})
    assert r.status == 204, r
    r = http_request(osb_broker.port, "POST", "/v1/metrics/events", event,
                     {"Content-Type": "application/json"})
    check_error(r, 401, "UNAUTHORIZED")
    # the Credential Vault routes of egress-api.yaml are served (test_credential_vault.py):
    # no vault yet is 404, an empty body 400; a wrong token is 404, like an unknown id
    for method, path, port, want in (("GET", "/credential-vault", 18080, (404, "NOT_FOUND")),
                                     ("POST", "/credential-vault", 18080, (400, "INVALID_REQUEST"))):
        st, _, body = ex.json(method, path, {} if method == "POST" else None, port=port)
        assert (st, body["code"]) == want, (method, path, st, body)
        st, _, body = ex.json(method, path, {} if method == "POST" else None, port=port, token="bad")
        assert st == 404, (method, path, st, body)


# ------------------------------------------------------ every route of the SDK

NO_SUCH_SANDBOX = "0" * 32
# what the SDKs and osb call beyond the Python SDK's generated clients: (METHOD, path, status)
BEYOND_SDK_CLIENTS = [
    ("GET", "/version", 200),
]


def _walk_request(b, method, path, headers):
    """One request as a client that knows the route but sends no valid
    arguments: POST/PUT/PATCH carry {}, GET/DELETE nothing. An event
    stream is not read past its headers. (status, code, message, body)."""
    h = dict(headers)
    data = None
    if method in ("POST", "PUT", "PATCH"):
        data = b"{}"
        h["Content-Type"] = "application/json"
    c = http.client.HTTPConnection("127.0.0.1", b.port, timeout=60)
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        if (r.getheader("Content-Type") or "").startswith("text/event-stream"):
            return r.status, None, None, None
        raw = r.read()
    finally:
        c.close()
    body = json.loads(raw) if raw else None  # every answer on the broker's port is JSON
    if isinstance(body, dict):
        return r.status, body.get("code"), body.get("message"), body
    return r.status, None, None, body


def _route_fault(status, code, message, want_501, maybe_501=False):
    if status == 404 and message == "no such route":
        return "no such route"
    if status == 405:
        return "405 %s" % message
    if want_501 or (maybe_501 and status == 501):
        if status != 501 or code != "NOT_IMPLEMENTED" or not re.search(r"not (served|implemented)",
                                                                         message or ""):
            return "expected 501 NOT_IMPLEMENTED with the reason, got %d %s %s" % (status, code, message)
    elif status >= 500:
        return "%d %s %s" % (status, code, message)
    return None


def test_every_sdk_route_is_served_or_501(osb_broker, running):
    """Walk every route of the pinned Python SDK's generated clients (read
    from the installed package, osb_sdk_routes.py; the TypeScript SDK's are
    among them): each is a row of
    docs/OPENSANDBOX.md's route table, each row is a route of the package,
    and each route reaches a handler of the broker (never nginx's or the
    route table's "no such route", never 405) and answers 501 with the
    reason exactly when its row says 501. Path parameters are an unknown id
    (the lifecycle routes then answer 404 SANDBOX_NOT_FOUND, past the route
    table), except the data plane's sandbox: the running one with its token,
    so the 501s behind the token are reached."""
    from osb_sdk_routes import BASES, doc_table, sdk_routes, shape, ts_sdk_routes
    osb, sid, ex = running
    key = {"OPEN-SANDBOX-API-KEY": KEY["echo"]}
    token = {"X-EXECD-ACCESS-TOKEN": ex.token}
    routes, table = sdk_routes(), doc_table()
    assert len(routes) >= 80, routes
    missing = [r for r in routes if r not in table]
    stale = [k for k in table if k not in set(routes)]
    assert not missing and not stale, ("routes of the SDK docs/OPENSANDBOX.md does not list: %s; rows no "
                                       "route of the SDK has: %s (python3 tests/integration/"
                                       "osb_sdk_routes.py)" % (missing, stale))
    # the TypeScript SDK's routes are routes of the table too
    shapes = {shape(k) for k in table}
    ts = ts_sdk_routes()
    assert len(ts) >= 40, ts
    assert all(shape(r) in shapes for r in ts), [r for r in ts if shape(r) not in shapes]
    faults, seen = [], []
    for api, method, path in routes:
        base = BASES[api].format(sid=sid)
        url = base + re.sub(r"\{[^}]+\}", NO_SUCH_SANDBOX, path)
        st, code, msg, body = _walk_request(osb_broker, method, url, token if "proxy" in base else key)
        seen.append("%-10s %-6s %-55s %d %s" % (api, method, path, st, code or ""))
        # "image" rows: the walk's sandbox (the base image) has no code interpreter, so such a
        # route answers 501 with the reason, or a 4xx on the walk's empty arguments first
        fault = _route_fault(st, code, msg, table[(api, method, path)][0] == "501",
                             table[(api, method, path)][0] == "image")
        if fault:
            faults.append("%s %s %s: %s" % (api, method, path, fault))
        if (api, method, path) == ("execd", "POST", "/session") and st == 200:
            # the walk made a session: end it ({} is a valid create)
            assert ex.json("DELETE", "/session/" + body["session_id"])[0] == 200
    print("\n" + "\n".join(seen))
    assert not faults, "\n".join(faults)


def test_routes_beyond_the_sdk_clients_are_served(osb_broker):
    """What the SDKs call beyond the Python SDK's generated clients."""
    key = {"OPEN-SANDBOX-API-KEY": KEY["echo"]}
    faults = []
    for method, path, want in BEYOND_SDK_CLIENTS:
        url = re.sub(r"\{[^}]+\}", NO_SUCH_SANDBOX, path)
        st, code, msg, _ = _walk_request(osb_broker, method, url, key)
        fault = _route_fault(st, code, msg, want == 501)
        if fault or st != want:
            faults.append("%s %s: %s (expected %d)" % (method, path, fault or st, want))
    assert not faults, "\n".join(faults)


# --------------------------------------------------------------- the README

def readme_snippet(lang):
    """The code between <!-- quickstart-LANG --> and <!-- /quickstart-LANG --> in README.md."""
    text = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- quickstart-%s -->\s*```[a-z]*\n(.*?)```\s*<!-- /quickstart-%s -->" % (lang, lang),
                  text, re.S)
    assert m, "README.md has no quickstart-%s block" % lang
    code = m.group(1)
    assert len(code.strip().splitlines()) <= 5, code
    return code


def _readme_dir(tmp_path, b, tenant, code, name):
    """A working directory as after `scripts/stack up`: .stack/demo-api-key
    holds a key, and the snippet's 127.0.0.1:8080 is this broker's port
    (the only change made to it)."""
    (tmp_path / ".stack").mkdir()
    (tmp_path / ".stack" / "demo-api-key").write_text(KEY[tenant] + "\n")
    assert "127.0.0.1:8080" in code, code
    (tmp_path / name).write_text(code.replace("127.0.0.1:8080", "127.0.0.1:%d" % b.port))
    return tmp_path


def test_readme_python_quickstart(osb_broker, tmp_path):
    code = readme_snippet("python")
    d = _readme_dir(tmp_path, osb_broker, "foxtrot", code, "quickstart.py")
    rc, out, err, _ = run([python_sdk_python(), "quickstart.py"], cwd=str(d), timeout=180)
    assert rc == 0, (out, err[-3000:])
    assert out == "hello from the sandbox\n", (out, err[-3000:])
    # it killed its sandbox
    osb = OSB(osb_broker, "foxtrot")
    items = osb.list().json["items"]
    assert all(i["status"]["state"] in ("Stopping", "Terminated") for i in items), items


def test_readme_typescript_quickstart(osb_broker, tmp_path):
    reason = node_skip_reason()
    if reason:
        pytest.skip(reason)
    node_sdk_entry()  # installs the SDK when missing
    code = readme_snippet("typescript")
    d = _readme_dir(tmp_path, osb_broker, "golf", code, "quickstart.mjs")
    # `npm install @alibaba-group/opensandbox` in that directory, in effect
    os.symlink(os.path.dirname(os.path.dirname(NODE_SDK)), str(d / "node_modules"))
    rc, out, err, _ = run([shutil.which("node"), "quickstart.mjs"], cwd=str(d), timeout=180)
    assert rc == 0, (out, err[-3000:])
    assert out == "hello from the sandbox\n", (out, err[-3000:])
    osb = OSB(osb_broker, "golf")
    items = osb.list().json["items"]
    assert all(i["status"]["state"] in ("Stopping", "Terminated") for i in items), items
