"""Bash sessions of the execd contract, served by the broker
(execd-api.yaml: POST /session, POST /session/{id}/run, DELETE
/session/{id}), against real Docker sandboxes (Debian base: bash; the
static-busybox tiny image: sh), through nginx and FastCGI:

the working directory and exported variables carry over from run to run
(also after `exit N`), a run's cwd override is for that run only, the SSE
events are those of /command (init with a command id that status and
interrupt know, one stdout event per line, execution_complete or error with
the exit code), timeouts, delete (then 404), bad ids and cwds (400),
unknown sessions (404); the official Python SDK's create_session /
run_in_session / delete_session and the `osb command session` CLI.
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from sandboxlib import require_docker
from sdklib import KEY, python_sdk_python, start_osb_broker
from test_execd import execd_sandbox, out_texts

require_docker()

TINY = "sandbox-broker/tiny:latest"
BASE = "sandbox-broker/base:latest"


@pytest.fixture(scope="module")
def sb_broker(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, sb_broker):
    request.node._it_brokers = [sb_broker]


@pytest.fixture(scope="module")
def base(sb_broker):
    return execd_sandbox(sb_broker, BASE)


@pytest.fixture(scope="module")
def tiny(sb_broker):
    return execd_sandbox(sb_broker, TINY)


@pytest.fixture(params=["base", "tiny"])
def ex(request, base, tiny):
    return base if request.param == "base" else tiny


def stream(ex, path, body, timeout=60, on_event=None):
    """POST an SSE route; (status, [events]) or (status, error body)."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=timeout)
    try:
        c.request("POST", ex.url(path), body=json.dumps(body).encode(),
                  headers={"X-EXECD-ACCESS-TOKEN": ex.token, "Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, json.loads(r.read() or b"null")
        assert r.headers["Content-Type"].startswith("text/event-stream"), dict(r.headers)
        events, buf = [], b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                frame, buf = buf.split(b"\n\n", 1)
                if frame.startswith(b"data: "):
                    events.append(json.loads(frame[6:]))
                    if on_event:
                        on_event(events[-1])
        assert buf.strip() == b"", buf
        return r.status, events
    finally:
        c.close()


def create(ex, body=None):
    if body is None:
        st, _, raw = ex.request("POST", "/session")   # no body at all, as the SDKs send it
        res = json.loads(raw)
    else:
        st, _, res = ex.json("POST", "/session", body)
    assert st == 200, res
    sid = res["session_id"]
    assert len(sid) == 32 and all(c in "0123456789abcdef" for c in sid), res
    return sid


def run(ex, sid, command, **kw):
    body = {"command": command}
    body.update(kw)
    st, events = stream(ex, "/session/%s/run" % sid, body)
    assert st == 200, events
    assert events[0]["type"] == "init" and len(events[0]["text"]) == 32, events
    return events


def stdout(events):
    return "".join(out_texts(events))


def test_state_carries_over(ex):
    sid = create(ex)
    ev = run(ex, sid, "pwd; mkdir -p /tmp/s1/sub; cd /tmp/s1; export GREETING='hi there'; LOCAL=1; "
                      "export MULTI=\"a'b\n\\$c\"")
    assert stdout(ev) == "/workspace\n" and ev[-1]["type"] == "execution_complete", ev
    ev = run(ex, sid, 'pwd; echo "$GREETING|$LOCAL"; printf "%s\\n" "$MULTI"; cd sub')
    assert stdout(ev) == "/tmp/s1\nhi there|\na'b\n$c\n", ev
    # `exit N` still saves, and is the run's error with its code
    ev = run(ex, sid, "export AFTER=1; cd ..; exit 3")
    assert ev[-1]["type"] == "error" and ev[-1]["error"]["evalue"] == "3", ev
    ev = run(ex, sid, 'pwd; echo "$AFTER"; unset GREETING; echo "[$GREETING]"')
    assert stdout(ev) == "/tmp/s1\n1\n[]\n", ev
    ev = run(ex, sid, 'echo "[$GREETING]"')
    assert stdout(ev) == "[]\n", ev
    # another session is another state
    other = create(ex, {"cwd": "/tmp"})
    ev = run(ex, other, 'pwd; echo "[$AFTER]"')
    assert stdout(ev) == "/tmp\n[]\n", ev
    for s in (sid, other):
        st, _, raw = ex.request("DELETE", "/session/" + s)
        assert st == 200, raw


def test_cwd_override_is_for_one_run(ex):
    sid = create(ex, {"cwd": "/tmp"})
    ev = run(ex, sid, "pwd", cwd="/etc")
    assert stdout(ev) == "/etc\n", ev
    assert stdout(run(ex, sid, "pwd")) == "/tmp\n"
    # unless the run itself moves
    assert stdout(run(ex, sid, "cd /; pwd", cwd="/etc")) == "/\n"
    assert stdout(run(ex, sid, "pwd")) == "/\n"
    ex.request("DELETE", "/session/" + sid)


def test_bash_when_there_is_one(base, tiny):
    for ex, want in ((base, "bash\n"), (tiny, "sh\n")):
        sid = create(ex)
        ev = run(ex, sid, '[ -n "$BASH_VERSION" ] && echo bash || echo sh')
        assert stdout(ev) == want, ev
        ex.request("DELETE", "/session/" + sid)


def test_events_status_timeout_and_interrupt(base):
    ex = base
    sid = create(ex)
    ev = run(ex, sid, "echo out; echo err >&2; printf tail")
    assert [e["type"] for e in ev] == ["init", "stdout", "stderr", "stdout", "execution_complete"], ev
    assert out_texts(ev) == ["out\n", "tail"] and out_texts(ev, "stderr") == ["err\n"], ev
    assert all(isinstance(e["timestamp"], int) for e in ev), ev
    st, _, status = ex.json("GET", "/command/status/" + ev[0]["text"])
    assert st == 200 and status["exit_code"] == 0 and status["running"] is False, status
    assert "printf tail" in status["content"], status
    # timeout (ms): killed, 137
    t0 = time.monotonic()
    ev = run(ex, sid, "sleep 30", timeout=1500)
    assert ev[-1]["type"] == "error" and ev[-1]["error"]["evalue"] == "137", ev
    assert time.monotonic() - t0 < 15
    # DELETE /command?id= interrupts a session run too
    got, init = {}, threading.Event()

    def on_event(e):
        if e["type"] == "init":
            got["id"] = e["text"]
        if e["type"] == "stdout":
            init.set()

    def go():
        got["st"], got["ev"] = stream(ex, "/session/%s/run" % sid, {"command": "echo started; sleep 60"},
                                      on_event=on_event)

    t = threading.Thread(target=go)
    t.start()
    assert init.wait(30), got
    st, _, raw = ex.request("DELETE", "/command?id=" + got["id"])
    assert st == 200, raw
    t.join(30)
    assert got["ev"][-1]["type"] == "error" and got["ev"][-1]["error"]["evalue"] == "137", got
    assert "interrupted" in got["ev"][-1]["error"]["traceback"][0], got
    ex.request("DELETE", "/session/" + sid)


def test_delete_and_errors(ex):
    sid = create(ex)
    st, _, raw = ex.request("DELETE", "/session/" + sid)
    assert st == 200 and raw == b"", raw
    st, _, body = ex.json("DELETE", "/session/" + sid)
    assert st == 404 and body["code"] == "NOT_FOUND" and sid in body["message"], body
    st, body = stream(ex, "/session/%s/run" % sid, {"command": "true"})
    assert st == 404, body
    for bad in ("a.b", "a~b", "%2E%2E", "a%20b", "x" * 64, "x" * 65):
        # 400 from the handler, or 404 from the route table (a segment over 64 bytes)
        want = 404 if len(bad) > 64 else 400
        st, _, body = ex.json("DELETE", "/session/" + bad)
        assert st in (want, 404 if "%" in bad else want), (bad, body)
        st, body = stream(ex, "/session/%s/run" % bad, {"command": "true"})
        assert st in (want, 404 if "%" in bad else want), (bad, body)
    st, _, body = ex.json("DELETE", "/session/a.b")
    assert st == 400 and body["code"] == "INVALID_REQUEST" and "[A-Za-z0-9_-]" in body["message"], body
    st, _, body = ex.json("POST", "/session", {"cwd": "/nope"})
    assert st == 400 and "/nope" in body["message"], body
    st, _, body = ex.json("POST", "/session", {"cwd": 5})
    assert st == 400, body
    sid = create(ex)
    for bad in ({}, {"command": ""}, {"command": 1}, {"command": "true", "timeout": -1},
                {"command": "true", "cwd": ""}):
        st, body = stream(ex, "/session/%s/run" % sid, bad)
        assert st == 400, (bad, body)
    st, body = stream(ex, "/session/%s/run" % sid, {"command": "true", "cwd": "/nope"})
    assert st == 400 and "/nope" in body["message"], body
    # the token
    st, _, body = ex.json("POST", "/session", {}, token="bad")
    assert st == 404 and body["code"] == "SANDBOX_NOT_FOUND", body
    st, _, body = ex.json("DELETE", "/session/" + sid, token="")
    assert st == 401, body
    ex.request("DELETE", "/session/" + sid)


def test_the_session_directory_is_roots_alone(base):
    sid = create(base)
    out = base.request("POST", "/command", {"command": "stat -c '%a %U' /tmp/.sb-session /tmp/.sb-session/" + sid})
    text = "".join(json.loads(f[6:]).get("text", "") for f in out[2].decode().split("\n\n")
                   if f.startswith("data: ") and '"stdout"' in f)
    assert text == "700 root\n700 root\n", text
    base.request("DELETE", "/session/" + sid)


# ------------------------------------------------------ the Python SDK

PY_SESSION = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
c = sb.commands
out = {}
sid = c.create_session(working_directory="/tmp")
out["first"] = c.run_in_session(sid, "pwd; mkdir -p /tmp/sdk && cd /tmp/sdk && export V=42").text
out["second"] = c.run_in_session(sid, 'pwd; echo "V=$V"').text
ex = c.run_in_session(sid, "echo bye; exit 7", timeout=timedelta(seconds=30))
out["exit"] = [ex.text, ex.exit_code, ex.error.value if ex.error else None]
out["override"] = c.run_in_session(sid, "pwd", working_directory="/etc").text
c.delete_session(sid)
try:
    c.delete_session(sid)
    out["again"] = "no error"
except Exception as e:
    out["again"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
"""


def _run(cmd, env=None, timeout=180):
    full = dict(os.environ)
    full.update(env or {})
    cp = subprocess.run(cmd, env=full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace")


def test_python_sdk_sessions(sb_broker):
    ex = execd_sandbox(sb_broker, BASE, "bravo")
    rc, out, err = _run([python_sdk_python(), "-c", PY_SESSION, "127.0.0.1:%d" % sb_broker.port,
                         KEY["bravo"], ex.sid])
    assert rc == 0, (out, err[-3000:])
    res = json.loads(out.splitlines()[-1])
    assert res["first"] == "/tmp", res
    assert res["second"] == "/tmp/sdk\nV=42", res
    assert res["exit"] == ["bye", 7, "7"], res
    assert res["override"] == "/etc", res
    assert "[NOT_FOUND] no session" in res["again"], res


# ------------------------------------------------------------ the osb CLI

def _osb_cli():
    osb = os.path.join(os.path.dirname(sys.executable), "osb")
    if not os.path.exists(osb):
        cp = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "opensandbox-cli>=1.1.1,<1.2"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=600)
        if cp.returncode != 0 or not os.path.exists(osb):
            pytest.fail("cannot install opensandbox-cli:\n%s" % cp.stdout.decode()[-3000:], pytrace=False)
    return osb


def test_osb_cli_sessions(sb_broker, tmp_path):
    ex = execd_sandbox(sb_broker, BASE, "charlie")
    env = {"HOME": str(tmp_path), "OPEN_SANDBOX_DOMAIN": "127.0.0.1:%d" % sb_broker.port,
           "OPEN_SANDBOX_API_KEY": KEY["charlie"], "OPEN_SANDBOX_PROTOCOL": "http",
           "NO_COLOR": "1", "COLUMNS": "200"}
    osb = _osb_cli()
    rc, out, err = _run([osb, "command", "session", "create", ex.sid, "-w", "/tmp", "-o", "json"], env=env)
    assert rc == 0, (out, err)
    sid = json.loads(out[out.index("{"):])["session_id"]
    # osb quotes each word (shlex): one simple command per run
    for words in (["cd", "/usr"], ["export", "W=ok"]):
        rc, out, err = _run([osb, "command", "session", "run", "-o", "raw", ex.sid, sid, "--"] + words, env=env)
        assert rc == 0, (words, out, err)
    rc, out, err = _run([osb, "command", "session", "run", "-o", "raw", ex.sid, sid, "--",
                         "eval", 'pwd; echo "$W"'], env=env)
    assert rc == 0 and out == "/usr\nok\n", (out, err)
    rc, out, err = _run([osb, "command", "session", "run", "-o", "raw", ex.sid, sid, "--", "false"], env=env)
    assert rc != 0, (out, err)
    rc, out, err = _run([osb, "command", "session", "delete", ex.sid, sid], env=env)
    assert rc == 0, (out, err)
    rc, out, err = _run([osb, "command", "session", "delete", ex.sid, sid], env=env)
    assert rc != 0, (out, err)
