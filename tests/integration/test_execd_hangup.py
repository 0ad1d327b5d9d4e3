"""A foreground command whose stream's handler dies (issue 24, "a stream
whose handler dies ends without an error event while its command runs on"):
fcgi-execd is SIGKILLed while commands stream, and

- every client hears that its stream failed: the handler's stream guard
  (fcgi/stream_guard.h), a process of its own that holds a duplicate of
  each streaming connection, ends each one with an `error` event (evalue
  "-1", ename CommandExecError) and a well-formed FastCGI end, so nginx
  ends the answer with that event last and the chunked body's last chunk
  (the raw bytes are checked); never `execution_complete`; the official
  Python SDK's commands.run returns that error (never exit code 0); the
  guard ends the streams still open and only those (a stream that ended
  before the kill is not touched, the log counts the others) and exits;
- no command runs on unowned: the broker's connection to the sandbox-agent
  went with the handler, and the agent (hangup_kill=1, docs/AGENT.md) kills
  the command's process group and what left it (a session run's command
  runs in a session of its own under the runner): the marker files the
  commands append to every 0.2 s stop growing within a few seconds, no
  process of them is left (runc's through Docker's exec while the handler
  is down; gVisor's through a new execd command once it is back), and the command's status says it was
  hung up (exit 129, SIGHUP);
- the other handler is unaffected: bravo's ping (fcgi-execd-lane) answers
  while fcgi-execd is down, and fcgi-execd serves again once restarted.

Two tenants, one sandbox each: alpha's under runc (sandbox-runc), bravo's
under gVisor (runsc, whose agent dials through the relay: the broker's close
reaches it as a half-close). Each runs a foreground command and a session
run; alpha's also one through curl and one read as raw bytes, bravo's one
through the Python SDK.
"""

import json
import os
import socket
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


class RawStream(threading.Thread):
    """One SSE answer read as raw bytes off the socket (HTTP/1.1, chunked),
    to see the framing itself: `raw` is everything nginx sent."""

    def __init__(self, ex, path, body):
        super().__init__(daemon=True)
        self.ex, self.path, self.body = ex, path, body
        self.raw, self.error = b"", None

    def run(self):
        data = json.dumps(self.body).encode()
        head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-EXECD-ACCESS-TOKEN: %s\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (self.ex.url(self.path), self.ex.token, len(data))).encode()
        try:
            with socket.create_connection(("127.0.0.1", self.ex.port), timeout=120) as c:
                c.sendall(head + data)
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    self.raw += b
        except OSError as e:
            self.error = e

    def body_chunks(self):
        """(the chunked body decoded, whether it ended with the last chunk)."""
        _, _, rest = self.raw.partition(b"\r\n\r\n")
        out = b""
        while rest:
            size, sep, rest = rest.partition(b"\r\n")
            if not sep:
                return out, False
            n = int(size, 16)
            if n == 0:
                return out, rest == b"\r\n"
            out, rest = out + rest[:n], rest[n + 2:]
        return out, False

    def events(self):
        body, _ = self.body_chunks()
        return [json.loads(f[6:]) for f in body.split(b"\n\n") if f.startswith(b"data: ")]


def guard_pid(pid):
    """The stream guard: the one child of the handler process pid."""
    kids = []
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, t)) as f:
            kids += [int(k) for k in f.read().split()]
    with open("/proc/%d/comm" % kids[0]) as f:
        assert f.read().strip() == "fcgi-stream-gua", kids  # comm is 15 bytes
    assert len(kids) == 1, kids
    return kids[0]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


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


def restart_execd(hb):
    """fcgi-execd started again after its SIGKILL (stop clears what the
    dead one left: its pid file)."""
    hb.stop("fcgi-execd", kill=True)
    hb.start("fcgi-execd")


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
    m_raw = markers[("runc", "raw")] = "/tmp/hup-%s-runc-raw" % tag
    raw = RawStream(runc, "/command", {"command": LOOP % m_raw})
    raw.start()
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
        # a stream that ended before the kill is the guard's no more
        st, _, events = runc.command_stream({"command": "echo done"})
        assert st == 200 and events[-1]["type"] == "execution_complete", events[-3:]
        pid = hb.pid("fcgi-execd")
        guard = guard_pid(pid)
        os.kill(pid, 9)  # the handler alone, by its PID (its guard is in a group of its own)
        t_kill = time.monotonic()

        # the other tenant's calls on the other handler: answered meanwhile
        st, _, body = gvisor.request("GET", "/ping")
        assert st == 200, body

        # the clients: each stream ends with the guard's error event, last,
        # in a well-formed answer (nginx sends the chunked body's last chunk
        # after the FastCGI end the guard wrote); never execution_complete
        for key, s in streams.items():
            s.join(30)
            assert not s.is_alive(), key
            assert s.end == "complete", (key, s.end)
            assert "execution_complete" not in s.types(), (key, s.types())
            last = s.events[-1]
            assert last["type"] == "error" and last["error"]["evalue"] == "-1", (key, s.events[-3:])
            assert last["error"]["ename"] == "CommandExecError", last
            assert "handler died" in last["error"]["traceback"][0], last
            assert isinstance(last["timestamp"], int), last
        raw.join(30)
        assert not raw.is_alive() and raw.error is None, raw.error
        print("the raw answer's last bytes:", raw.raw[-420:])
        assert raw.raw.startswith(b"HTTP/1.1 200"), raw.raw[:200]
        body, terminated = raw.body_chunks()
        assert terminated, raw.raw[-300:]  # "0\r\n\r\n" and nothing after
        assert body.endswith(b"\n\n") and raw.events()[-1]["type"] == "error", raw.raw[-300:]
        assert [e["type"] for e in raw.events()][:1] == ["init"], raw.events()[:2]
        _, cerr = curl.communicate(timeout=30)
        assert curl.returncode == 0, (curl.returncode, cerr)  # a complete answer
        out, err = sdk.communicate(timeout=60)
        res = json.loads(out.decode().strip().splitlines()[-1])
        print("the SDK's commands.run:", res)
        assert res.get("result") and res["result"][0] != 0 and res["result"][1] == "-1", (res, err[-2000:])

        # the guard: it ended the 7 streams open at the kill (not the one
        # that had ended) and went away
        wait_until(lambda: not alive(guard), 10, 0.1, "the stream guard exits")
        assert "died with 7 command stream(s) open" in hb.logs("fcgi-execd"), \
            hb.logs("fcgi-execd")[-2000:]

        # the commands: stopped, nothing of them left (runc's seen while
        # the handler is still down, gVisor's once it is back)
        for (k, kind), m in markers.items():
            if k == "runc":
                wait_until(lambda: still(cids[k], m), 20, 0, "%s %s marker stops" % (k, kind))
        print("runc's commands stopped %.1f s after the kill" % (time.monotonic() - t_kill))
        assert left(cids["runc"], "hup-" + tag) == [], left(cids["runc"], "hup-" + tag)
        restart_execd(hb)
        for (k, kind), m in markers.items():
            if k == "runsc":
                wait_until(lambda: still(cids[k], m), 20, 0, "%s %s marker stops" % (k, kind))
        assert left(cids["runsc"], "hup-" + tag) == [], left(cids["runsc"], "hup-" + tag)
    finally:
        for p in (curl, sdk):
            if p.poll() is None:
                p.kill()
                p.wait(10)
        if not alive(hb.pid("fcgi-execd") or 0):
            restart_execd(hb)

    # back: a new command sees none of them, and the status of a killed one says so
    for k, ex in boxes.items():
        st, _, events = ex.command_stream({"command": "ps -eo args"})
        assert st == 200 and events[-1]["type"] == "execution_complete", events[-3:]
        ps = "".join(e["text"] for e in events if e["type"] == "stdout")
        assert "hup-" + tag not in ps, (k, ps)
        st, _, body = ex.json("GET", "/command/status/" + ids[(k, "cmd")])
        assert st == 200 and body["running"] is False and body["exit_code"] == 129, (k, body)
