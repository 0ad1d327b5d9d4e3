"""A foreground command whose stream's handler dies (issue 24, "a stream
whose handler dies ends without an error event while its command runs on"):
fcgi-execd is SIGKILLed while commands stream, and

- no client hears of an end the command did not have: nginx 1.22 ends the
  client's answer cleanly (it cannot add the error event nobody is left to
  write), so no stream carries execution_complete or error, and the
  official Python SDK's commands.run returns no exit code (never 0);
- no command runs on unowned: the broker's connection to the sandbox-agent
  went with the handler, and the agent (hangup_kill=1, docs/AGENT.md) kills
  the command's process group and what left it (a session run's command
  runs in a session of its own under the runner): the marker files the
  commands append to every 0.2 s stop growing within a few seconds, no
  process of them is left (runc's through Docker's exec while the handler
  is down; gVisor's through a new execd command once it is back), and the command's status says it was
  hung up (exit 129, SIGHUP).

Two tenants, one sandbox each: alpha's under runc (sandbox-runc), bravo's
under gVisor (runsc, whose agent dials through the relay: the broker's close
reaches it as a half-close). Each runs a foreground command and a session
run; alpha's also one through curl, bravo's one through the Python SDK.
"""

import json
import struct
import subprocess
import threading
import time
import uuid

import pytest

from brokerlib import wait_until
from sandboxlib import DOCKER, require_docker
from sdklib import KEY, python_sdk_python, start_osb_broker
from test_execd import execd_sandbox
from test_execd_session import stream

require_docker()

BASE = "sandbox-broker/base:latest"
LOOP = "echo started; while :; do echo x >> %s; sleep 0.2; done"


@pytest.fixture(scope="module")
def hb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete",
                            SANDBOX_RUNTIMES="runsc")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, hb):
    request.node._it_brokers = [hb]


def docker_out(cid, argv):
    """argv run in the container through Docker's exec API (not the broker):
    (exit code, stdout)."""
    st, body = DOCKER.call("POST", "/containers/%s/exec" % cid,
                           {"Cmd": argv, "AttachStdout": True, "AttachStderr": False})
    assert st == 201, body
    st, raw = DOCKER.call("POST", "/exec/%s/start" % body["Id"], {"Detach": False, "Tty": False})
    assert st == 200, raw
    out, i = b"", 0
    raw = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    while i + 8 <= len(raw):  # the multiplexed stream: 8-byte headers
        kind, n = raw[i], struct.unpack(">I", raw[i + 4:i + 8])[0]
        if kind == 1:
            out += raw[i + 8:i + 8 + n]
        i += 8 + n
    st, info = DOCKER.call("GET", "/exec/%s/json" % body["Id"])
    assert st == 200, info
    return info["ExitCode"], out.decode("utf-8", "replace")


class Stream(threading.Thread):
    """One SSE answer read with http.client until it ends: `end` is
    "complete" (a clean end of the chunked body) or the exception's name."""

    def __init__(self, ex, path, body):
        super().__init__(daemon=True)
        self.ex, self.path, self.body = ex, path, body
        self.events, self.end, self.status = [], None, None

    def run(self):
        try:
            self.status, _ = stream(self.ex, self.path, self.body, timeout=120,
                                    on_event=self.event)
            self.end = "complete"
        except Exception as e:  # noqa: BLE001: what the client saw is the result
            self.end = type(e).__name__

    def event(self, ev):
        self.status = 200  # events come only in a 200 answer; read before it ends
        self.events.append(ev)

    def types(self):
        return [e["type"] for e in self.events]


PY_RUN = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
try:
    ex = sb.commands.run(sys.argv[4])
    print(json.dumps({"result": [ex.exit_code, ex.error.value if ex.error else None]}))
except Exception as e:
    print(json.dumps({"raised": type(e).__name__, "message": str(e)[:500]}))
"""


def sh_in(box, cmd):
    """cmd's stdout in the sandbox of box (cid, ex): runc's through Docker's
    exec (the broker is not needed); gVisor's through the broker (runsc
    exec'ing into a sandbox whose processes stream crashed its sentry here,
    a gVisor defect seen from outside: so only while fcgi-execd runs)."""
    cid, ex, gvisor = box
    if not gvisor:
        rc, out = docker_out(cid, ["sh", "-c", cmd])
        return out
    st, _, events = ex.command_stream({"command": cmd})
    assert st == 200 and events[-1]["type"] == "execution_complete", events[-3:]
    return "".join(e["text"] for e in events if e["type"] == "stdout")


def marker_size(box, path):
    # wc, not stat: coreutils' statx is EINVAL under this gVisor
    out = sh_in(box, "wc -c < %s 2>/dev/null || echo -1" % path)
    return int(out.strip() or -1)


def still(box, path, settle=1.0):
    """The marker's size once it stopped growing for settle s, else None."""
    a = marker_size(box, path)
    time.sleep(settle)
    return a if a > 0 and marker_size(box, path) == a else None


def left(box, token):
    """Processes in the sandbox whose command line holds token."""
    out = sh_in(box, "ps -eo pid=,args=")
    return [line for line in out.splitlines() if token in line and "ps -eo" not in line
            and "wc -c" not in line]


def session(ex):
    st, _, raw = ex.request("POST", "/session")
    assert st == 200, raw
    return json.loads(raw)["session_id"]


def test_killed_handler_breaks_streams_and_kills_their_commands(hb):
    runc = execd_sandbox(hb, BASE, "alpha")
    gvisor = execd_sandbox(hb, BASE, "bravo", extensions={"runtime": "runsc"})
    boxes = {"runc": runc, "runsc": gvisor}
    cids = {k: (DOCKER.inspect("sb-" + ex.sid)["Id"], ex, k == "runsc") for k, ex in boxes.items()}
    assert DOCKER.inspect("sb-" + gvisor.sid)["HostConfig"]["Runtime"] == "runsc"
    tag = uuid.uuid4().hex[:10]
    markers, streams = {}, {}
    for k, ex in boxes.items():
        for kind in ("cmd", "session"):
            m = "/tmp/hup-%s-%s-%s" % (tag, k, kind)
            markers[(k, kind)] = m
            if kind == "cmd":
                s = Stream(ex, "/command", {"command": LOOP % m})
            else:
                s = Stream(ex, "/session/%s/run" % session(ex), {"command": LOOP % m})
            streams[(k, kind)] = s
            s.start()
    # curl on alpha's sandbox, the Python SDK on bravo's
    m_curl = markers[("runc", "curl")] = "/tmp/hup-%s-runc-curl" % tag
    curl = subprocess.Popen(
        ["curl", "-sS", "-N", "-o", "/dev/null", "-X", "POST",
         "-H", "X-EXECD-ACCESS-TOKEN: " + runc.token, "-H", "Content-Type: application/json",
         "--data", json.dumps({"command": LOOP % m_curl}),
         "http://127.0.0.1:%d%s" % (hb.port, runc.url("/command"))],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    m_sdk = markers[("runsc", "sdk")] = "/tmp/hup-%s-runsc-sdk" % tag
    sdk = subprocess.Popen([python_sdk_python(), "-c", PY_RUN, "127.0.0.1:%d" % hb.port,
                            KEY["bravo"], gvisor.sid, LOOP % m_sdk],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for (k, kind), m in markers.items():
            wait_until(lambda: marker_size(cids[k], m) >= 6, 60, 0.5, "%s %s marker grows" % (k, kind))
        ids = {}
        for key, s in streams.items():
            assert s.status == 200 and s.types()[:1] == ["init"], (key, s.status, s.events)
            ids[key] = s.events[0]["text"]
        hb.stop("fcgi-execd", kill=True)
        t_kill = time.monotonic()

        # the clients: the stream ends without its last event. nginx 1.22
        # ends an unbuffered FastCGI answer whose upstream closed as if it
        # were complete (no error logged, the last chunk sent), so what tells
        # a client is the missing execution_complete (docs/EXECD.md)
        for key, s in streams.items():
            s.join(30)
            assert not s.is_alive(), key
            assert "execution_complete" not in s.types() and "error" not in s.types(), (key, s.types())
        curl.communicate(timeout=30)
        out, err = sdk.communicate(timeout=60)
        res = json.loads(out.decode().strip().splitlines()[-1])
        print("the SDK's commands.run:", res)
        assert res.get("result", [None])[0] != 0, (res, err[-2000:])

        # the commands: stopped, nothing of them left (runc's seen while
        # the handler is still down, gVisor's once it is back)
        for (k, kind), m in markers.items():
            if k == "runc":
                wait_until(lambda: still(cids[k], m), 20, 0, "%s %s marker stops" % (k, kind))
        print("runc's commands stopped %.1f s after the kill" % (time.monotonic() - t_kill))
        assert left(cids["runc"], "hup-" + tag) == [], left(cids["runc"], "hup-" + tag)
        hb.start("fcgi-execd")
        for (k, kind), m in markers.items():
            if k == "runsc":
                wait_until(lambda: still(cids[k], m), 20, 0, "%s %s marker stops" % (k, kind))
        assert left(cids["runsc"], "hup-" + tag) == [], left(cids["runsc"], "hup-" + tag)
    finally:
        for p in (curl, sdk):
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if not hb.pid("fcgi-execd"):
            hb.start("fcgi-execd")

    # back: a new command sees none of them, and the status of a killed one says so
    for k, ex in boxes.items():
        st, _, events = ex.command_stream({"command": "ps -eo args"})
        assert st == 200 and events[-1]["type"] == "execution_complete", events[-3:]
        ps = "".join(e["text"] for e in events if e["type"] == "stdout")
        assert "hup-" + tag not in ps, (k, ps)
        st, _, body = ex.json("GET", "/command/status/" + ids[(k, "cmd")])
        assert st == 200 and body["running"] is False and body["exit_code"] == 129, (k, body)
