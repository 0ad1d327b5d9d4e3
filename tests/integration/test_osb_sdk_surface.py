"""The smaller parts of OpenSandbox 1.1.1's surface beyond the June specs
(issue 28), each driven by the official Python SDK's own calls against a
real Docker broker, and attacked:

- GET /version: {"version": the build's}, open (as opensandbox-server
  answers it), and nothing else in it;
- POST /v1/metrics/events: the SDK's generated report_metrics_event and the
  event SandboxSync.create sends by itself are counted in /metrics
  (broker_sdk_create_events_total{success}, broker_sdk_sandbox_create_seconds);
  bad bodies are 400 JSON and count nothing; a tenant flooding it with junk
  (odd event types, long images, junk ids, a body over 64 KiB) adds no
  series and no counts, while another tenant's events still count;
- RunCommandRequest.argv: exactly one of command or argv (400 JSON for both
  or neither), bounded in count and bytes, and argv reaches the program
  exactly, with no shell between: spaces, quotes, $(...), backquotes,
  newlines, globs, empty strings, a program named "-dash", in the
  foreground (the agent runs it) and in the background (the runner script
  runs it), in the Debian base image and the static-busybox tiny one; the
  SDK's commands.run(list) gets the same;
- FileInfo.type: the SDK's get_file_info and search see file, directory,
  symlink and other (a FIFO); replace_contents_detailed answers
  {path: {replacedCount}}.
- extensions: kept and answered back (create answer, GET, list, the SDK's
  SandboxInfo), bounded, strings only; "access.renew.extend.seconds"
  renews a Running sandbox's expiry on data-plane access, at most once a
  minute, and only for a sandbox that asked for it.
"""

import base64
import json
import os
import re
import subprocess
import time

import pytest

from brokerlib import REPO, http_request, wait_until
from sandboxlib import require_docker
from sdklib import KEY, OSB, parse_iso_ms, python_sdk_python, start_osb_broker
from test_execd import execd_sandbox, out_texts

require_docker()

BASE = "sandbox-broker/base:latest"
TINY = "sandbox-broker/tiny:latest"
EVENTS = "broker_sdk_create_events_total"
HIST = "broker_sdk_sandbox_create_seconds"

# argv strings a shell would have changed; each must arrive as it is
TRICKY = ["a b", "'single'", '"double"', "$(touch /tmp/pwned-sub)", "`touch /tmp/pwned-bq`",
          "; touch /tmp/pwned-semi", "x\ny", "", "-n", "*", "$HOME", "\\", "tab\there", "ünï ✓",
          "%s%n", "--"]


@pytest.fixture(scope="module")
def sb(request, services, it_root):
    # MAX_BODY_BYTES above argv's own cap (64 KiB), so that the cap, not the
    # body's, is what a long argv meets here
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete",
                            MAX_BODY_BYTES=262144)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, sb):
    request.node._it_brokers = [sb]


@pytest.fixture(scope="module")
def base(sb):
    return execd_sandbox(sb, BASE, "alpha")


@pytest.fixture(scope="module")
def tiny(sb):
    return execd_sandbox(sb, TINY, "alpha")


def _run(cmd, timeout=240):
    cp = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace")


def sdk(script, *args):
    """Run a Python SDK script; its last stdout line as JSON."""
    rc, out, err = _run([python_sdk_python(), "-c", script] + [str(a) for a in args])
    assert rc == 0, (out, err[-4000:])
    return json.loads(out.splitlines()[-1])


def metrics(b):
    r = http_request(b.port, "GET", "/metrics", headers=b.auth_headers(b.config["METRICS_TOKEN"]))
    assert r.status == 200, r
    out = {}
    for line in r.raw.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


def sdk_series(m):
    return {k: v for k, v in m.items() if k.startswith(EVENTS) or k.startswith(HIST)}


def wait_counts(b, true_n, false_n, hist_n, what):
    """Wait (bounded) until the event counters and the histogram's count read
    exactly these values (each handler process flushes its own counts about
    once a second, one series at a time); the metrics then."""
    def ok():
        m = metrics(b)
        return m if (m.get(EVENTS + '{success="true"}'), m.get(EVENTS + '{success="false"}'),
                     m.get(HIST + "_count")) == (true_n, false_n, hist_n) else None
    m = wait_until(ok, 20, 0.2, what)
    return m


def post_event(b, body, tenant="alpha", raw=None, headers=None):
    h = {"Content-Type": "application/json"}
    if tenant:
        h["OPEN-SANDBOX-API-KEY"] = KEY[tenant]
    h.update(headers or {})
    return http_request(b.port, "POST", "/v1/metrics/events",
                        raw if raw is not None else json.dumps(body), h)


# ------------------------------------------------------------------ /version

def test_version_is_the_builds_and_open(sb):
    with open(os.path.join(REPO, "VERSION"), encoding="utf-8") as f:
        want = f.read().strip()
    for headers in ({}, {"OPEN-SANDBOX-API-KEY": "not-a-key"}, {"OPEN-SANDBOX-API-KEY": KEY["alpha"]}):
        r = http_request(sb.port, "GET", "/version", headers=headers)
        assert r.status == 200, r
        assert set(r.json) == {"version"}, r.json
        v = r.json["version"]
        assert v == want or re.fullmatch(re.escape(want) + r"\+g[0-9a-f]{12}", v), (v, want)
    # the commit, when built from git, is this checkout's (the binary was built from it)
    cp = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, timeout=30)
    assert "+g" not in v or cp.returncode != 0 or len(cp.stdout.strip()) == 12, v
    # no other method, and nothing under it
    r = http_request(sb.port, "POST", "/version", "{}", {"Content-Type": "application/json"})
    assert r.status in (404, 405) and r.json.get("code"), r
    r = http_request(sb.port, "GET", "/version/x")
    assert r.status == 404, r


# ------------------------------------------------------------ metrics events

PY_EVENT = r"""
import json, sys
from opensandbox.api.lifecycle.client import AuthenticatedClient
from opensandbox.api.lifecycle.api.metrics import report_metrics_event
from opensandbox.api.lifecycle.models.metrics_event import MetricsEvent
from opensandbox.api.lifecycle.models.metrics_event_event_type import MetricsEventEventType
c = AuthenticatedClient(base_url="http://%s/v1" % sys.argv[1], token=sys.argv[2], prefix="",
                        auth_header_name="OPEN-SANDBOX-API-KEY")
out = []
for ms, ok in ((1500, True), (40000, False)):
    r = report_metrics_event.sync_detailed(client=c, body=MetricsEvent(
        event_type=MetricsEventEventType.SANDBOX_CREATE, create_duration_ms=ms, success=ok,
        sandbox_id="abc123", image="python:3.12-slim"))
    out.append(r.status_code)
print(json.dumps(out))
"""

PY_CREATE = r"""
import json, sys, time
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.create(sys.argv[3], connection_config=cfg, entrypoint=["sleep", "infinity"],
                        timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90))
sid = sb.id
# the SDK posts its sandbox.create event from a daemon thread: give it time
time.sleep(3)
sb.kill()
print(json.dumps({"id": sid}))
"""


def test_metrics_events_counted_bounded_and_junk_refused(sb):
    m0 = metrics(sb)
    t0, f0 = m0[EVENTS + '{success="true"}'], m0[EVENTS + '{success="false"}']
    c0, s0 = m0[HIST + "_count"], m0[HIST + "_sum"]
    series0 = set(sdk_series(m0))

    # the SDK's own generated call: one success (1.5 s), one failure (40 s)
    assert sdk(PY_EVENT, "127.0.0.1:%d" % sb.port, KEY["alpha"]) == [204, 204]
    wait_counts(sb, t0 + 1, f0 + 1, c0 + 2, "the SDK's two events counted")

    def observed():  # sum and buckets are series of their own, flushed in the same round
        m = metrics(sb)
        return m if abs(m[HIST + "_sum"] - (s0 + 41.5)) < 0.01 and \
            m[HIST + '_bucket{le="2.500"}'] == m0[HIST + '_bucket{le="2.500"}'] + 1 and \
            m[HIST + '_bucket{le="60.000"}'] == m0[HIST + '_bucket{le="60.000"}'] + 2 else None
    wait_until(observed, 20, 0.2, "1.5 s and 40 s observed")

    # the attack: bravo floods the route with junk; none of it counts or
    # makes a series, each is a 400 (or 413) JSON error; alpha's events,
    # sent in between, still count
    junk = [
        {},
        {"eventType": "sandbox.delete", "createDurationMs": 1, "success": True},
        {"eventType": "sandbox.create", "createDurationMs": -5, "success": True},
        {"eventType": "sandbox.create", "createDurationMs": 10 ** 12, "success": True},
        {"eventType": "sandbox.create", "createDurationMs": 1.5, "success": True},
        {"eventType": "sandbox.create", "createDurationMs": "7", "success": True},
        {"eventType": "sandbox.create", "createDurationMs": 7, "success": "yes"},
        {"eventType": "sandbox.create", "createDurationMs": 7},
        {"eventType": "sandbox.create", "createDurationMs": 7, "success": True, "sandboxId": "a b\n"},
        {"eventType": "sandbox.create", "createDurationMs": 7, "success": True, "sandboxId": "x" * 129},
        {"eventType": "sandbox.create", "createDurationMs": 7, "success": True, "image": "i" * 256},
        {"eventType": "sandbox.create", "createDurationMs": 7, "success": True, "image": ["x"]},
        {"eventType": "sandbox.create\u0000x", "createDurationMs": 7, "success": True},
        [{"eventType": "sandbox.create", "createDurationMs": 7, "success": True}],
    ]
    for i in range(3):
        for body in junk:
            r = post_event(sb, body, "bravo")
            assert r.status == 400, (body, r)
            assert r.json["code"] in ("INVALID_REQUEST", "INVALID_JSON") and r.json["message"], (body, r.json)
        r = post_event(sb, None, "bravo", raw="{not json")
        assert r.status == 400 and r.json["code"], r
        r = post_event(sb, None, "bravo", raw=json.dumps({"eventType": "sandbox.create", "createDurationMs": 1,
                                                           "success": True, "pad": "p" * 70000}))
        assert r.status == 413 and r.json["code"], r
        r = post_event(sb, {"eventType": "sandbox.create", "createDurationMs": 1, "success": True}, None)
        assert r.status == 401, r
        r = post_event(sb, {"eventType": "sandbox.create", "createDurationMs": 1, "success": True}, "bravo",
                       headers={"Content-Type": "text/plain"})
        assert r.status == 415, r
        # alpha, meanwhile: counted (unknown keys ignored, as the reference server does)
        r = post_event(sb, {"eventType": "sandbox.create", "createDurationMs": 250, "success": True,
                            "sandboxId": None, "futureField": {"x": 1}}, "alpha")
        assert r.status == 204 and r.raw == b"", r
    m = wait_counts(sb, t0 + 4, f0 + 1, c0 + 5, "alpha's three events counted, none of bravo's")
    assert set(sdk_series(m)) == series0, set(sdk_series(m)) ^ series0  # no new series, whatever was sent


def test_sdk_create_sends_its_event(sb):
    m0 = metrics(sb)
    t0, f0, c0 = m0[EVENTS + '{success="true"}'], m0[EVENTS + '{success="false"}'], m0[HIST + "_count"]
    res = sdk(PY_CREATE, "127.0.0.1:%d" % sb.port, KEY["charlie"], BASE)
    assert re.fullmatch(r"[0-9a-f]{32}|[A-Za-z0-9._@-]+", res["id"]), res
    wait_counts(sb, t0 + 1, f0, c0 + 1, "the event SandboxSync.create sent by itself")


# ---------------------------------------------------------------------- argv

def decode_lines(text):
    return [base64.b64decode(x[1:]).decode("utf-8") for x in text.split("\n") if x]


# each argument as one line "=" + base64: what the process got, byte for byte
ECHO_ARGS = ["sh", "-c", 'for a in "$@"; do printf =; printf %s "$a" | base64 | tr -d "\\n"; echo; done', "sh"]
# a program named "-dash", found on the PATH the request gives
DASH_DIR = "/tmp/dashbin"
DASH_ENV = {"PATH": DASH_DIR + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
MAKE_DASH = ("mkdir -p %s && printf '#!/bin/sh\\necho \"dash:$*\"\\n' > %s/-dash && chmod 755 %s/-dash"
             % (DASH_DIR, DASH_DIR, DASH_DIR))


def make_dash(ex):
    st, _, events = ex.command_stream({"command": MAKE_DASH})
    assert st == 200 and events[-1]["type"] == "execution_complete", events


def no_pwn(ex):
    st, _, events = ex.command_stream({"argv": ["ls", "/tmp"]})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    assert "pwned" not in "".join(out_texts(events)), out_texts(events)


@pytest.mark.parametrize("image", ["base", "tiny"])
def test_argv_reaches_the_program_exactly(request, image):
    ex = request.getfixturevalue(image)
    # foreground: the arguments as the program received them
    st, _, events = ex.command_stream({"argv": ECHO_ARGS + TRICKY})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    assert decode_lines("".join(out_texts(events))) == TRICKY, events
    # a program with no shell at all: printf sees its arguments literally
    st, _, events = ex.command_stream({"argv": ["printf", "<%s>"] + TRICKY, "cwd": "/tmp"})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    assert "".join(out_texts(events)) == "".join("<%s>" % a for a in TRICKY), events
    no_pwn(ex)
    # a program named "-dash" (on PATH) is the program, not an option of anything
    make_dash(ex)
    st, _, events = ex.command_stream({"argv": ["-dash", "a b", "$(id)"], "envs": DASH_ENV})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    assert "".join(out_texts(events)) == "dash:a b $(id)\n", events
    # exit codes and a missing program are errors, as with command
    st, _, events = ex.command_stream({"argv": ["sh", "-c", "exit 7"]})
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] == "7", events
    st, _, events = ex.command_stream({"argv": ["/no/such/program", "x"]})
    assert events[-1]["type"] == "error" and events[-1]["error"]["evalue"] != "0", events


def background_output(ex, body):
    st, _, events = ex.command_stream(dict(body, background=True))
    assert st == 200 and events[0]["type"] == "init", events
    cid = events[0]["text"]

    def done():
        st2, _, s = ex.json("GET", "/command/status/" + cid)
        assert st2 == 200, s
        return s if s.get("running") is False or s.get("exit_code") is not None else None
    status = wait_until(done, 60, 0.2, "background command %s ends" % cid)
    st, _, raw = ex.request("GET", "/command/%s/logs?cursor=0" % cid)
    assert st == 200, raw
    return status, raw.decode("utf-8")


@pytest.mark.parametrize("image", ["base", "tiny"])
def test_argv_in_the_background_reaches_the_program_exactly(request, image):
    ex = request.getfixturevalue(image)
    # the runner script (EXECD_SH_RUN) runs these: argv kind, no shell text
    status, out = background_output(ex, {"argv": ECHO_ARGS + TRICKY})
    assert status.get("exit_code") in (0, None), status
    assert decode_lines(out) == TRICKY, out
    status, out = background_output(ex, {"argv": ["printf", "<%s>"] + TRICKY, "timeout": 30000})
    assert out == "".join("<%s>" % a for a in TRICKY), out
    # -dash with no timeout: setsid must not take it for an option
    make_dash(ex)
    status, out = background_output(ex, {"argv": ["-dash", "x y"], "envs": DASH_ENV})
    assert out == "dash:x y\n", (status, out)
    no_pwn(ex)


def test_argv_bad_bodies(base):
    ex = base
    cap = 64 * 1024
    bad = [
        ({"command": "id", "argv": ["id"]}, "not both"),
        ({}, "required"),
        ({"command": None, "argv": None}, "required"),
        ({"argv": []}, "argv"),
        ({"argv": "id"}, "argv"),
        ({"argv": [""]}, "argv[0]"),
        ({"argv": ["id", 5]}, "argv[1]"),
        ({"argv": ["id", None]}, "argv[1]"),
        ({"argv": ["id", "a\u0000b"]}, "NUL"),
        ({"argv": ["true"] * 257}, "256"),
        ({"argv": ["echo", "b" * (cap - 5)]}, "bytes"),  # one past the cap (NULs counted)
        ({"argv": ["echo"] + ["b" * 1000] * 70}, "bytes"),
        ({"argv": ["id"], "background": "yes"}, "background"),
    ]
    for body, word in bad:
        st, _, resp = ex.json("POST", "/command", body)
        assert st == 400 and resp["code"] == "INVALID_REQUEST", (body if len(json.dumps(body)) < 300 else word,
                                                                 st, resp)
        assert word in resp["message"], (word, resp)
    # at the caps: served
    st, _, events = ex.command_stream({"argv": ["true"] * 256})
    assert st == 200 and events[-1]["type"] == "execution_complete", events[-1]
    head = ["sh", "-c", 'printf %s "$1" | wc -c', "sh"]
    fill = cap - sum(len(a) + 1 for a in head) - 1  # the last string's NUL makes it exactly the cap
    st, _, events = ex.command_stream({"argv": head + ["b" * fill]})
    assert st == 200 and events[-1]["type"] == "execution_complete", events[-1]
    assert int("".join(out_texts(events)).strip()) == fill, events


PY_ARGV = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.execd import RunCommandOpts
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
tricky = json.loads(sys.argv[4])
out = {}
e = sb.commands.run(["printf", "<%s>"] + tricky, opts=RunCommandOpts(working_directory="/tmp"))
out["printf"] = "".join(m.text for m in e.logs.stdout)
out["error"] = None if e.error is None else e.error.value
e = sb.commands.run(["sh", "-c", "exit 3"])
out["exit"] = None if e.error is None else e.error.value
e = sb.commands.run("echo $((6*7))")
out["shell"] = "".join(m.text for m in e.logs.stdout)
print(json.dumps(out))
"""


def test_sdk_commands_run_argv(sb, base):
    res = sdk(PY_ARGV, "127.0.0.1:%d" % sb.port, KEY["alpha"], base.sid, json.dumps(TRICKY))
    assert res["printf"] == "".join("<%s>" % a for a in TRICKY), res
    assert res["error"] is None and res["exit"] == "3", res
    assert res["shell"] == "42\n", res
    no_pwn(base)


# --------------------------------------------------------------- file types

PY_TYPES = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.filesystem import ContentReplaceEntry, SearchEntry
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
fs = sb.files
r = sb.commands.run("rm -rf /workspace/ty && mkdir -p /workspace/ty/d && printf 'aXa' > /workspace/ty/f "
                    "&& ln -s f /workspace/ty/l && mkfifo /workspace/ty/p")
assert r.error is None, r.error
out = {}
info = fs.get_file_info(["/workspace/ty/f", "/workspace/ty/d", "/workspace/ty/l", "/workspace/ty/p"])
out["info"] = {k: v.entry_type for k, v in info.items()}
out["search"] = sorted([e.path, e.entry_type] for e in fs.search(SearchEntry(path="/workspace/ty", pattern="*")))
out["replace"] = [[x.path, x.replaced_count] for x in fs.replace_contents_detailed(
    [ContentReplaceEntry(path="/workspace/ty/f", old_content="a", new_content="b")])]
print(json.dumps(out))
"""


def test_sdk_file_types_and_replace_counts(sb, base):
    res = sdk(PY_TYPES, "127.0.0.1:%d" % sb.port, KEY["alpha"], base.sid)
    assert res["info"] == {"/workspace/ty/f": "file", "/workspace/ty/d": "directory",
                           "/workspace/ty/l": "symlink", "/workspace/ty/p": "other"}, res
    # search lists what is not a directory, links not followed
    assert res["search"] == [["/workspace/ty/f", "file"], ["/workspace/ty/l", "symlink"],
                             ["/workspace/ty/p", "other"]], res
    assert res["replace"] == [["/workspace/ty/f", 2]], res
    # the raw answer is {path: {replacedCount}} with verbose, empty without (as 1.1.1's execd)
    st, _, body = base.json("POST", "/files/replace?verbose=true", {"/workspace/ty/f": {"old": "b", "new": "c"}})
    assert st == 200 and body == {"/workspace/ty/f": {"replacedCount": 2}}, body
    st, _, raw = base.request("POST", "/files/replace", json.dumps({"/workspace/ty/f": {"old": "c", "new": "d"}}),
                              {"Content-Type": "application/json"})
    assert st == 200 and raw == b"", raw


# --------------------------------------------------------------- extensions

RENEW = "access.renew.extend.seconds"

PY_EXTENSIONS = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.create(sys.argv[3], connection_config=cfg, entrypoint=["sleep", "infinity"],
                        timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90),
                        extensions=json.loads(sys.argv[4]))
info = sb.get_info()
out = {"id": sb.id, "extensions": info.extensions, "expires": info.expires_at.isoformat()}
sb.kill()
print(json.dumps(out))
"""


def expires_ms(o, sid):
    r = o.get(sid)
    assert r.status == 200, r
    return parse_iso_ms(r.json["expiresAt"])


def test_extensions_are_kept_and_answered(sb):
    ext = {RENEW: "600", "storage.id": "ws-1", "x.note": "ünï ✓ \"quoted\""}
    res = sdk(PY_EXTENSIONS, "127.0.0.1:%d" % sb.port, KEY["delta"], TINY, json.dumps(ext))
    assert res["extensions"] == ext, res
    o = OSB(sb, "delta")
    r = o.create_raw({"image": {"uri": TINY}, "entrypoint": ["sleep", "infinity"], "timeout": 120,
                      "extensions": {"storage.id": "ws-2"}})
    try:
        assert r.status == 202 and r.json["extensions"] == {"storage.id": "ws-2"}, r
        assert o.get(r.json["id"]).json["extensions"] == {"storage.id": "ws-2"}
        items = [i for i in o.list().json["items"] if i["id"] == r.json["id"]]
        assert items and items[0]["extensions"] == {"storage.id": "ws-2"}, items
    finally:
        o.delete(r.json["id"])
    # none given: none answered
    r = o.create_raw({"image": {"uri": TINY}, "entrypoint": ["sleep", "infinity"], "timeout": 120})
    try:
        assert r.status == 202 and "extensions" not in r.json, r
    finally:
        o.delete(r.json["id"])


BAD_EXTENSIONS = {
    "renew too short": {RENEW: "299"},
    "renew too long": {RENEW: "86401"},
    "renew not digits": {RENEW: "5m"},
    "renew empty": {RENEW: ""},
    "renew signed": {RENEW: "+600"},
    "renew a number": {RENEW: 600},
    "not an object": ["a"],
    "a number value": {"storage.id": 7},
    "too many keys": {"k%d" % i: "v" for i in range(33)},
    "a long key": {"k" * 129: "v"},
    "too large": {"k%d" % i: "v" * 200 for i in range(30)},
}


@pytest.mark.parametrize("name", sorted(BAD_EXTENSIONS))
def test_bad_extensions_are_400_and_make_nothing(sb, name):
    o = OSB(sb, "echo")
    before = {i["id"] for i in o.list().json["items"]}
    r = o.create_raw({"image": {"uri": TINY}, "entrypoint": ["sleep", "infinity"], "timeout": 120,
                      "extensions": BAD_EXTENSIONS[name]})
    assert r.status == 400 and r.json["code"] == "INVALID_REQUEST" and "extensions" in r.json["message"], r
    assert {i["id"] for i in o.list().json["items"]} == before


def test_renew_on_access(sb):
    """A sandbox that asked for renew-on-access (300 s) with a 60 s timeout:
    a data-plane access moves its expiry to now + 300 s; another one within
    the minute moves nothing; a sandbox that did not ask is never moved."""
    renewing = execd_sandbox(sb, TINY, "foxtrot", timeout=60, extensions={RENEW: "300"})
    plain = execd_sandbox(sb, TINY, "foxtrot", timeout=60)
    o = OSB(sb, "foxtrot")
    try:
        e0, p0 = expires_ms(o, renewing.sid), expires_ms(o, plain.sid)
        assert e0 - time.time() * 1000 < 61000, e0
        for ex in (renewing, plain):
            st = ex.json("GET", "/ping")[0]
            assert st == 200
        t = time.time() * 1000
        e1 = expires_ms(o, renewing.sid)
        assert t + 300000 - 30000 <= e1 <= t + 300000, (e1 - t)
        assert expires_ms(o, plain.sid) == p0
        # within the minute: no second move, whatever the traffic
        for _ in range(3):
            assert renewing.json("GET", "/ping")[0] == 200
        assert expires_ms(o, renewing.sid) == e1
        # the lease the reaper follows moved with the record
        lease = sb.redis.get(sb.key("session:foxtrot/*osb:%s" % renewing.sid))
        assert lease and int(sb.redis.hget(sb.key("lease:%s" % lease), "expiresAt")) == e1
    finally:
        o.delete(renewing.sid)
        o.delete(plain.sid)


def test_resource_requests_checked_and_bad_lifecycle_refused(sb):
    """resourceRequests are checked as the limits are (never above them); a
    bad lifecycle hook is a 400 (the hooks themselves:
    test_osb_lifecycle_hooks.py). Either refusal makes nothing."""
    o = OSB(sb, "golf")
    base = {"image": {"uri": TINY}, "entrypoint": ["sleep", "infinity"], "timeout": 120,
            "resourceLimits": {"cpu": "500m", "memory": "256Mi"}}
    before = {i["id"] for i in o.list().json["items"]}
    for extra, words in (({"resourceRequests": {"cpu": "1"}}, "resourceRequests.cpu is more than"),
                         ({"resourceRequests": {"memory": "lots"}}, "resourceRequests.memory must be"),
                         ({"lifecycle": {"preStart": {"command": ["true"], "timeoutSeconds": 0}}},
                          "lifecycle.preStart.timeoutSeconds"),
                         ({"lifecycle": {"periodic": [{"name": "p", "schedule": "@every 0s",
                                                       "command": ["true"]}]}}, "lifecycle.periodic[0].schedule")):
        r = o.create_raw(dict(base, **extra))
        assert r.status == 400 and words in r.json["message"], (extra, r)
    assert {i["id"] for i in o.list().json["items"]} == before
    r = o.create_raw(dict(base, resourceRequests={"cpu": "250m", "memory": "128Mi"}))
    assert r.status == 202, r
    o.delete(r.json["id"])
