"""sandbox-agent (agent/, docs/AGENT.md) run as a plain process on the host,
spoken to over its unix socket with http.client (and once with curl).

No Redis, Kafka, nginx or Docker: each case starts the built binary
(SANDBOX_AGENT_BIN, default $BROKER_BUILD_DIR/sandbox-agent, else build/; `make` builds it) with
--socket in its own temporary directory and stops it by pid. Covered: health;
POST /exec (stdout, stderr, exit codes, stdin, env, cwd, PATH lookup, exec
failures, timeout killing the whole process group, detach, streaming, 5 MiB of
output, a client that goes away: the command runs on, or with hangup_kill=1 it
and what it started are killed; user switching as root); GET/PUT /file;
malformed requests (4xx, and the agent still serves); entrypoint mode (exit
code, --keep, signal forwarding, SIGTERM without an entrypoint); the socket
bound again after it is removed or replaced; idle RSS.
"""

import http.client
import os
import signal
import socket
import stat
import subprocess
import time
import urllib.parse

import pytest

from brokerlib import BUILD_DIR, wait_until

BIN = os.environ.get("SANDBOX_AGENT_BIN", os.path.join(BUILD_DIR, "sandbox-agent"))
TIMEOUT = 20
FRAME_MAX = 1 << 20


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over AF_UNIX."""

    def __init__(self, path, timeout=TIMEOUT):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def query(params):
    """params: list of (name, value); percent-encoded as the broker does."""
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def parse_frames(data):
    """The decoded body of POST /exec -> [("1", bytes) | ("2", bytes) | ("x", code, timed_out)]."""
    frames, i = [], 0
    while i < len(data):
        nl = data.index(b"\n", i)
        head = data[i:nl].decode()
        i = nl + 1
        tag, rest = head.split(" ", 1)
        if tag in ("1", "2"):
            n = int(rest)
            assert 1 <= n <= FRAME_MAX, head
            assert i + n <= len(data), "short frame %r" % head
            frames.append((tag, data[i:i + n]))
            i += n
        else:
            assert tag == "x", head
            code, timed_out = rest.split(" ")
            frames.append(("x", int(code), int(timed_out)))
            assert i == len(data), "bytes after the x frame"
    assert frames and frames[-1][0] == "x", "no final frame"
    return frames


class Result:
    def __init__(self, frames):
        self.frames = frames
        self.out = b"".join(f[1] for f in frames if f[0] == "1")
        self.err = b"".join(f[1] for f in frames if f[0] == "2")
        self.code, self.timed_out = frames[-1][1], frames[-1][2]


class Agent:
    def __init__(self, tmp, keep=False, entry=None, wait=True):
        self.dir = str(tmp)
        self.sock = os.path.join(self.dir, "agent.sock")
        argv = [BIN, "--socket", self.sock] + (["--keep"] if keep else [])
        if entry:
            argv += ["--"] + entry
        self.log = open(os.path.join(self.dir, "agent.log"), "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        if wait:
            wait_until(lambda: os.path.exists(self.sock), 5, 0.01, "agent socket")

    def conn(self, timeout=TIMEOUT):
        return UnixHTTPConnection(self.sock, timeout)

    def request(self, method, path, params=None, body=None, headers=None, timeout=TIMEOUT):
        url = path + ("?" + query(params) if params else "")
        c = self.conn(timeout)
        try:
            c.request(method, url, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.headers, r.read()
        finally:
            c.close()

    def health(self):
        st, _, body = self.request("GET", "/health")
        assert st == 200
        return dict(line.split("=", 1) for line in body.decode().splitlines())

    def exec(self, args, stdin=None, env=(), timeout=TIMEOUT, **opts):
        params = [("arg", a) for a in args] + [("env", e) for e in env]
        params += [(k, str(v)) for k, v in opts.items()]
        st, hd, body = self.request("POST", "/exec", params, body=stdin, timeout=timeout)
        assert st == 200, (st, body)
        assert hd["Content-Type"] == "application/x-sandbox-agent-frames"
        return Result(parse_frames(body))

    def raw(self, data, timeout=5):
        """Send raw bytes, return the whole answer (the agent closes)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.sock)
        try:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass
            out = b""
            while True:
                b = s.recv(65536)
                if not b:
                    return out
                out += b
        finally:
            s.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.log.close()


def raw_status(answer):
    return int(answer.split(b" ", 2)[1])


@pytest.fixture
def agent_factory(tmp_path):
    if not os.access(BIN, os.X_OK):
        pytest.fail("%s not found: build it with `make` (or set SANDBOX_AGENT_BIN)" % BIN,
                    pytrace=False)
    agents = []

    def factory(**kw):
        a = Agent(tmp_path, **kw)
        agents.append(a)
        return a
    yield factory
    for a in agents:
        a.stop()


@pytest.fixture
def agent(agent_factory):
    return agent_factory()


def pgrp_members(pgid):
    """Live (not zombie) processes of process group pgid."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(pid))
    return found


# --- health ----------------------------------------------------------------

def test_agent_daemon_health(agent):
    h = agent.health()
    assert h == {"agent": "1", "pid": str(agent.proc.pid), "entrypoint": "none"}
    assert stat.S_IMODE(os.stat(agent.sock).st_mode) == 0o600


def test_agent_daemon_health_curl(agent):
    out = subprocess.run(["curl", "-sS", "--unix-socket", agent.sock, "http://agent/health"],
                         capture_output=True, timeout=TIMEOUT, check=True).stdout
    assert b"agent=1\n" in out and b"entrypoint=none\n" in out


def test_agent_daemon_idle_rss(agent):
    agent.health()
    time.sleep(0.2)
    with open("/proc/%d/status" % agent.proc.pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    print("sandbox-agent idle VmRSS: %d kB" % rss)
    assert rss < 1024


# --- exec ------------------------------------------------------------------

def test_agent_daemon_exec_echo(agent):
    r = agent.exec(["echo", "hello", "world"])
    assert r.frames == [("1", b"hello world\n"), ("x", 0, 0)]


def test_agent_daemon_exec_stderr_and_code(agent):
    r = agent.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.out, r.err, r.code, r.timed_out) == (b"out\n", b"err\n", 3, 0)
    r = agent.exec(["sh", "-c", "kill -TERM $$"])
    assert r.code == 128 + signal.SIGTERM


def test_agent_daemon_exec_stdin(agent):
    data = os.urandom(300 * 1024) + b"end"
    r = agent.exec(["cat"], stdin=data)
    assert r.out == data and r.code == 0
    r = agent.exec(["wc", "-c"], stdin=b"abc")
    assert r.out.strip() == b"3"
    # no body: stdin is /dev/null, not the socket
    r = agent.exec(["cat"])
    assert r.out == b"" and r.code == 0
    # a command that does not read its stdin
    r = agent.exec(["true"], stdin=os.urandom(1 << 20))
    assert r.code == 0


def test_agent_daemon_exec_env_cwd(agent, tmp_path):
    r = agent.exec(["sh", "-c", "echo \"$FOO|$BAR\"; pwd"], cwd=str(tmp_path),
                   env=["FOO=a b&c=d", "BAR=+%"])
    assert r.out.decode().splitlines() == ["a b&c=d|+%", str(tmp_path)]
    # replaces the agent's own value
    r = agent.exec(["sh", "-c", "echo $HOME"], env=["HOME=/nowhere"])
    assert r.out == b"/nowhere\n"
    r = agent.exec(["pwd"])
    assert r.out == b"/\n"
    r = agent.exec(["pwd"], cwd="/no/such/dir")
    assert r.code == 127 and b"sandbox-agent: chdir /no/such/dir" in r.err


def test_agent_daemon_exec_path_lookup(agent, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "mytool"
    tool.write_text("#!/bin/sh\necho tool \"$@\"\n")
    tool.chmod(0o755)
    script = bindir / "noshebang"
    script.write_text("echo no shebang\n")
    script.chmod(0o755)
    path = "PATH=%s:/usr/bin:/bin" % bindir
    assert agent.exec(["mytool", "x"], env=[path]).out == b"tool x\n"
    assert agent.exec(["noshebang"], env=[path]).out == b"no shebang\n"
    r = agent.exec(["mytool"])
    assert r.code == 127
    assert r.err == b"sandbox-agent: exec mytool: No such file or directory\n"
    r = agent.exec([str(tool)])
    assert r.out == b"tool\n"


def test_agent_daemon_exec_failures(agent, tmp_path):
    r = agent.exec(["/no/such/binary"])
    assert r.frames == [("2", b"sandbox-agent: exec /no/such/binary: No such file or directory\n"),
                        ("x", 127, 0)]
    f = tmp_path / "notexec"
    f.write_text("echo hi\n")
    f.chmod(0o644)
    r = agent.exec([str(f)])
    assert r.code == 126 and b"Permission denied" in r.err
    st, _, body = agent.request("POST", "/exec", [("env", "X=1")])
    assert st == 400 and b"arg" in body
    st, _, body = agent.request("POST", "/exec", [("arg", "true"), ("bogus", "1")])
    assert st == 400 and b"bogus" in body
    st, _, _ = agent.request("POST", "/exec", [("arg", "true"), ("timeout_ms", "-1")])
    assert st == 400
    st, _, body = agent.request("POST", "/exec", [("arg", "true"), ("user", "no-such-user-x")])
    assert st == 400 and b"no such user" in body


def test_agent_daemon_exec_timeout_kills_group(agent):
    t0 = time.monotonic()
    r = agent.exec(["sh", "-c", "echo $$; sleep 100 & sleep 100"], timeout_ms=500)
    elapsed = time.monotonic() - t0
    assert (r.code, r.timed_out) == (128 + signal.SIGKILL, 1)
    assert elapsed < 5
    pgid = int(r.out.split()[0])
    # the background sleep is reparented to the agent (subreaper) and reaped
    wait_until(lambda: not pgrp_members(pgid), 5, 0.05, "process group %d gone" % pgid)


def test_agent_daemon_exec_detach(agent, tmp_path):
    marker = tmp_path / "detached"
    # answered before the command's end: its marker comes 2 s after it starts
    r = agent.exec(["sh", "-c", "sleep 2; echo done > %s" % marker], detach=1)
    assert r.frames == [("x", -1, 0)]
    assert not marker.exists()
    wait_until(marker.exists, 10, 0.05, "detached command ran")
    r = agent.exec(["/no/such/binary"], detach=1)
    assert r.code == 127 and b"No such file" in r.err


def test_agent_daemon_exec_streaming(agent):
    c = agent.conn()
    try:
        t0 = time.monotonic()
        c.request("POST", "/exec?" + query([("arg", "sh"), ("arg", "-c"),
                                            ("arg", "echo first; sleep 1; echo second")]))
        r = c.getresponse()
        assert r.status == 200
        first = r.read1(65536)
        t_first = time.monotonic() - t0
        rest = r.read()
        t_all = time.monotonic() - t0
    finally:
        c.close()
    assert first.startswith(b"1 6\nfirst\n")
    assert t_first < 0.8 and t_all >= 0.9, (t_first, t_all)
    r = Result(parse_frames(first + rest))
    assert r.out == b"first\nsecond\n" and r.code == 0


def test_agent_daemon_exec_big_output(agent, tmp_path):
    data = os.urandom(5 << 20)
    f = tmp_path / "big"
    f.write_bytes(data)
    r = agent.exec(["cat", str(f)])
    assert r.code == 0 and len(r.out) == len(data) and r.out == data
    assert all(len(fr[1]) <= FRAME_MAX for fr in r.frames[:-1])


def test_agent_daemon_exec_client_gone(agent, tmp_path):
    marker = tmp_path / "after"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(agent.sock)
    cmd = "yes | head -c 3000000; sleep 0.5; echo done > %s" % marker
    s.sendall(b"POST /exec?%s HTTP/1.1\r\nHost: a\r\n\r\n"
              % query([("arg", "sh"), ("arg", "-c"), ("arg", cmd)]).encode())
    assert s.recv(100).startswith(b"HTTP/1.1 200 ")
    s.close()
    wait_until(marker.exists, 10, 0.05, "command finished without its client")
    assert agent.health()["agent"] == "1"


def _start_exec(agent, cmd, **opts):
    """POST /exec of sh -c cmd on a raw socket; returns it once the 200 is in."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(agent.sock)
    params = [("arg", "sh"), ("arg", "-c"), ("arg", cmd)] + [(k, str(v)) for k, v in opts.items()]
    s.sendall(b"POST /exec?%s HTTP/1.1\r\nHost: a\r\n\r\n" % query(params).encode())
    assert s.recv(100).startswith(b"HTTP/1.1 200 "), "no answer head"
    return s


def _growing(path, settle=1.0):
    """The size of path, once it has not changed for settle seconds (or
    None while it still grows)."""
    def size():
        try:
            return os.path.getsize(path)
        except OSError:
            return -1
    a = size()
    time.sleep(settle)
    return a if size() == a else None


def _alive(pid):
    """pid runs (not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["close", "half-close"])
def test_agent_daemon_exec_hangup_kill(agent, tmp_path, how):
    """hangup_kill=1: the broker going away before the command's end (its
    handler died mid-stream) kills the command's process group and what it
    started in a session of its own (the execd runner's command), at once.
    A silent command notices too, and so does a half-close (what the gVisor
    relay passes on when the broker's side closes)."""
    marker, pids = tmp_path / "marker", tmp_path / "pids"
    cmd = ("setsid sh -c 'echo $$ >> %s; exec sleep 300' </dev/null >/dev/null 2>&1 & "
           "echo $$ >> %s; while :; do echo x >> %s; sleep 0.2; done >/dev/null"
           % (pids, pids, marker))
    s = _start_exec(agent, cmd, hangup_kill=1)
    wait_until(lambda: marker.exists() and os.path.getsize(marker) >= 4, 10, 0.05, "marker grows")
    wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, 10, 0.05, "both pids")
    procs = [int(p) for p in pids.read_text().split()]
    assert all(_alive(p) for p in procs), procs
    t0 = time.monotonic()
    if how == "close":
        s.close()
    else:
        s.shutdown(socket.SHUT_WR)
    try:
        wait_until(lambda: not any(_alive(p) for p in procs), 10, 0.05, "command and its escapee gone")
        gone = time.monotonic() - t0
        size = wait_until(lambda: _growing(marker, 0.6), 10, 0, "marker stops growing")
        time.sleep(0.5)
        assert os.path.getsize(marker) == size
    finally:
        s.close()
    print("killed %.2f s after the hangup" % gone)
    assert agent.health()["agent"] == "1"


def test_agent_daemon_exec_without_hangup_kill_runs_on(agent, tmp_path):
    """The default (the runtime API's commands): a broker gone mid-answer
    leaves the command running, its output dropped."""
    marker = tmp_path / "marker"
    s = _start_exec(agent, "for i in $(seq 15); do echo x >> %s; sleep 0.2; done" % marker)
    wait_until(lambda: marker.exists(), 10, 0.05, "marker")
    s.close()
    wait_until(lambda: os.path.getsize(marker) == 30, 15, 0.1, "the command ran to its end")


def test_agent_daemon_exec_hangup_kill_after_the_end(agent):
    """A command that ended and was answered is not touched: the answer is
    the same as without the flag; detach refuses it; seat needs a user."""
    r = agent.exec(["sh", "-c", "echo ok; exit 3"], hangup_kill=1)
    assert (r.out, r.code) == (b"ok\n", 3)
    for params, why in (([("arg", "true"), ("detach", "1"), ("hangup_kill", "1")], b"detached"),
                        ([("arg", "true"), ("hangup_kill", "yes")], b"hangup_kill must be 0 or 1"),
                        ([("arg", "true"), ("seat", "1")], b"seat needs a user"),
                        ([("arg", "true"), ("seat", "1"), ("user", "0")], b"seat needs a user"),
                        ([("arg", "true"), ("seat", "2"), ("user", "nobody")], b"seat must be 0 or 1")):
        st, _, body = agent.request("POST", "/exec", params)
        assert st == 400 and why in body, (params, st, body)


def test_agent_daemon_exec_concurrent(agent):
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = [ex.submit(agent.exec, ["sh", "-c", "sleep 0.2; echo %d" % i]) for i in range(32)]
        outs = sorted(int(f.result().out) for f in futs)
    assert outs == list(range(32))


def test_agent_daemon_exec_user(agent):
    if os.geteuid() != 0:
        pytest.skip("user switching needs root")
    r = agent.exec(["id", "-u"], user="nobody")
    assert r.out == b"65534\n", r.err
    r = agent.exec(["sh", "-c", "id -u; id -g; id -G"], user="12345")
    assert r.out.split() == [b"12345", b"12345", b"12345"], r.err
    r = agent.exec(["sh", "-c", "id -u; id -g"], user="65534:0")
    assert r.out.split() == [b"65534", b"0"]
    r = agent.exec(["sh", "-c", "id -u; id -g"], user="root:nogroup")
    assert r.out.split() == [b"0", b"65534"]


# --- files -----------------------------------------------------------------

def test_agent_daemon_file_put_get(agent, tmp_path):
    path = str(tmp_path / "a" / "b" / "c.bin")
    data = os.urandom(3 << 20)
    st, _, body = agent.request("PUT", "/file", [("path", path)], body=data)
    assert st == 204 and body == b""
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o755
    st, hd, body = agent.request("GET", "/file", [("path", path)])
    assert st == 200 and body == data and int(hd["Content-Length"]) == len(data)
    st, _, body = agent.request("GET", "/file", [("path", path), ("offset", "1000"),
                                                 ("length", "5000")])
    assert st == 200 and body == data[1000:6000]
    st, _, body = agent.request("GET", "/file", [("path", path), ("offset", str(len(data) + 5))])
    assert st == 200 and body == b""
    # append, truncate, mode, owner
    st, _, _ = agent.request("PUT", "/file", [("path", path), ("append", "1")], body=b"tail")
    assert st == 204 and open(path, "rb").read() == data + b"tail"
    st, _, _ = agent.request("PUT", "/file", [("path", path), ("mode", "0600")], body=b"short")
    assert st == 204 and open(path, "rb").read() == b"short"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    st, _, _ = agent.request("PUT", "/file", [("path", path)], body=b"")
    assert st == 204 and os.path.getsize(path) == 0
    # the body overwrites the file in place, the old tail cut after: a body
    # cut short leaves what came of it, nothing of the old file
    st, _, _ = agent.request("PUT", "/file", [("path", path)], body=b"0123456789" * 100)
    assert st == 204
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(agent.sock)
    s.sendall(b"PUT /file?path=%s HTTP/1.1\r\nContent-Length: 500\r\n\r\nabcd"
              % query([("path", path)])[5:].encode())
    s.shutdown(socket.SHUT_WR)
    answer = b""
    while (b := s.recv(65536)):
        answer += b
    s.close()
    assert raw_status(answer) == 400 and b"shorter" in answer
    assert open(path, "rb").read() == b"abcd"
    if os.geteuid() == 0:
        p2 = str(tmp_path / "owned" / "f")
        st, _, _ = agent.request("PUT", "/file", [("path", p2), ("owner", "65534:65534"),
                                                  ("mode", "0640")], body=b"x")
        assert st == 204
        s = os.stat(p2)
        assert (s.st_uid, s.st_gid, stat.S_IMODE(s.st_mode)) == (65534, 65534, 0o640)


def test_agent_daemon_file_errors(agent, tmp_path):
    st, _, body = agent.request("GET", "/file", [("path", str(tmp_path / "nope"))])
    assert st == 404 and b"No such file" in body
    st, _, body = agent.request("GET", "/file", [("path", str(tmp_path))])
    assert st == 400 and b"directory" in body
    st, _, _ = agent.request("PUT", "/file", [("path", str(tmp_path))], body=b"x")
    assert st == 400
    (tmp_path / "plain").write_text("x")
    st, _, _ = agent.request("PUT", "/file", [("path", str(tmp_path / "plain" / "sub" / "f"))],
                             body=b"x")
    assert st == 404
    st, _, _ = agent.request("GET", "/file", [("path", "relative")])
    assert st == 400
    st, _, _ = agent.request("PUT", "/file", [("path", str(tmp_path / "m")), ("mode", "999")],
                             body=b"x")
    assert st == 400
    os.mkfifo(tmp_path / "fifo")
    st, _, _ = agent.request("GET", "/file", [("path", str(tmp_path / "fifo"))])
    assert st == 400
    # a write opens with O_TRUNC: a FIFO is refused, not truncated or blocked on
    st, _, _ = agent.request("PUT", "/file", [("path", str(tmp_path / "fifo"))], body=b"x")
    assert st == 400 and stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    if os.geteuid() == 0:
        return  # root passes every permission check
    (tmp_path / "locked").mkdir(mode=0o500)
    st, _, _ = agent.request("PUT", "/file", [("path", str(tmp_path / "locked" / "f"))],
                             body=b"x")
    assert st == 403


# --- malformed requests ----------------------------------------------------

def test_agent_daemon_malformed(agent):
    cases = [
        (b"POST /exec?arg=%zz HTTP/1.1\r\n\r\n", 400),
        (b"POST /exec?arg=a%00b HTTP/1.1\r\n\r\n", 400),
        (b"POST /exec?arg=a%4 HTTP/1.1\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nX: " + b"a" * (257 * 1024) + b"\r\n\r\n", 431),
        (b"PUT /file?path=/tmp/x HTTP/1.1\r\nHost: a\r\n\r\n", 411),
        (b"GET /nope HTTP/1.1\r\n\r\n", 404),
        (b"DELETE /file?path=/tmp/x HTTP/1.1\r\n\r\n", 405),
        (b"GET /health HTTP/2.0\r\n\r\n", 505),
        (b"GET health HTTP/1.1\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
        (b"GET /health HTTP/1.1\r\nBad Header\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\n folded\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\nHost: a\n\n\r\n\r\n", 400),
        (b"POST /exec?arg=cat HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
        (b"GET /health HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400),
    ]
    for req, want in cases:
        ans = agent.raw(req)
        assert ans.startswith(b"HTTP/1.1 "), (req[:60], ans)
        assert raw_status(ans) == want, (req[:60], ans)
        assert b"Connection: close\r\n" in ans
        body = ans.split(b"\r\n\r\n", 1)[1]
        assert body.endswith(b"\n") and body.count(b"\n") == 1 and len(body) <= 4096
    # a client that connects and says nothing, or half a head, then leaves
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(agent.sock)
    s.sendall(b"GET /hea")
    s.close()
    assert agent.health()["agent"] == "1"
    assert agent.proc.poll() is None


def test_agent_daemon_http10(agent):
    ans = agent.raw(b"POST /exec?arg=echo&arg=hi HTTP/1.0\r\n\r\n")
    head, body = ans.split(b"\r\n\r\n", 1)
    assert b" 200 " in head and b"chunked" not in head
    assert parse_frames(body) == [("1", b"hi\n"), ("x", 0, 0)]


# --- entrypoint and signals ------------------------------------------------

def test_agent_daemon_entrypoint_exit_code(agent_factory):
    a = agent_factory(entry=["sh", "-c", "sleep 0.3; exit 3"], wait=False)
    assert a.proc.wait(10) == 3
    assert not os.path.exists(a.sock)


def test_agent_daemon_entrypoint_keep(agent_factory):
    a = agent_factory(keep=True, entry=["sh", "-c", "exit 3"])
    wait_until(lambda: a.health()["entrypoint"] == "exited", 5, 0.05, "entrypoint exited")
    h = a.health()
    assert h["exit_code"] == "3"
    assert a.exec(["true"]).code == 0
    assert a.proc.poll() is None
    a.proc.send_signal(signal.SIGTERM)
    assert a.proc.wait(5) == 3


def test_agent_daemon_entrypoint_signal(agent_factory, tmp_path):
    ready = tmp_path / "ready"
    a = agent_factory(entry=["sh", "-c", "trap 'exit 7' TERM; touch %s; "
                                         "while :; do sleep 0.1; done" % ready])
    wait_until(ready.exists, 5, 0.05, "entrypoint ready")
    h = a.health()
    assert h["entrypoint"] == "running"
    a.proc.send_signal(signal.SIGTERM)
    assert a.proc.wait(5) == 7


def test_agent_daemon_entrypoint_killed(agent_factory, tmp_path):
    ready = tmp_path / "ready"
    a = agent_factory(keep=True, entry=["sh", "-c", "touch %s; exec sleep 100" % ready])
    wait_until(ready.exists, 5, 0.05, "entrypoint ready")
    a.proc.send_signal(signal.SIGUSR1)  # forwarded; sleep dies of it
    wait_until(lambda: a.health()["entrypoint"] == "exited", 5, 0.05, "entrypoint exited")
    assert a.health()["exit_code"] == str(128 + signal.SIGUSR1)


def test_agent_daemon_sigterm_without_entrypoint(agent):
    agent.health()
    agent.proc.send_signal(signal.SIGTERM)
    assert agent.proc.wait(5) == 0


def test_agent_daemon_entrypoint_not_found(agent_factory):
    a = agent_factory(entry=["/no/such/entrypoint"], wait=False)
    assert a.proc.wait(5) == 127


# --- the socket ------------------------------------------------------------

def test_agent_daemon_socket_rebound(agent):
    os.unlink(agent.sock)
    wait_until(lambda: os.path.exists(agent.sock), 5, 0.05, "socket bound again")
    assert agent.health()["agent"] == "1"
    # replaced by a plain file
    os.unlink(agent.sock)
    with open(agent.sock, "w") as f:
        f.write("not a socket")
    wait_until(lambda: stat.S_ISSOCK(os.lstat(agent.sock).st_mode), 5, 0.05, "socket back")
    assert agent.health()["agent"] == "1"


def test_agent_daemon_socket_belongs_to_the_directory_owner(tmp_path):
    """The broker may run as its own user (the systemd units' sandbox-broker)
    and owns the run directory; the agent (root) hands it the socket, 0600."""
    d = tmp_path / "run"
    d.mkdir()
    os.chown(str(d), 65534, 65534)
    a = Agent(d)
    try:
        st = os.lstat(a.sock)
        assert (st.st_uid, st.st_gid) == (65534, 65534), st
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert a.health()["agent"] == "1"
    finally:
        a.stop()


@pytest.mark.parametrize("size", [70000, 300 * 1024, 5 * 1024 * 1024])
def test_agent_daemon_exec_stdin_sent_with_the_head(agent, size):
    """A client that writes head and body at once: the agent reads much of
    the body with the head (its head buffer is 256 KiB); all of it must still
    reach the command (a regression: it waited for the socket to announce
    bytes it had already read, and the command starved until its timeout)."""
    body = os.urandom(size)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(TIMEOUT)
    s.connect(agent.sock)
    try:
        s.sendall(b"POST /exec?arg=sh&arg=-c&arg=cat%20%7C%20wc%20-c&timeout_ms=20000 HTTP/1.1\r\n"
                  b"Host: x\r\nContent-Length: " + str(size).encode() + b"\r\n\r\n" + body)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    finally:
        s.close()
    head, _, chunked = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"\n%d\n" % size in b"\n" + chunked and b"x 0 0\n" in chunked, chunked[:200]


def test_agent_daemon_tunnel(agent):
    """GET /tunnel?port=N (docs/AGENT.md): 101, then bytes both ways to
    127.0.0.1:N, half-closes passed on; 502 when nothing listens; 400 for a
    bad port, a body or another parameter."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(agent.sock)
    # the first stream bytes travel with the head
    s.sendall(b"GET /tunnel?port=%d HTTP/1.1\r\nUpgrade: tcp\r\nConnection: Upgrade\r\n\r\nearly" % port)
    c, _ = srv.accept()
    c.settimeout(TIMEOUT)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101 "), head
    got = b""
    while len(got) < 5:
        got += c.recv(5 - len(got))
    assert got == b"early"
    big = os.urandom(3 * 1024 * 1024)
    c.sendall(big)
    c.shutdown(socket.SHUT_WR)  # the service's half-close reaches the client
    back = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        back += b
    assert back == big
    s.sendall(b"after")  # the other direction still works
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        got += b
    assert got == b"after"
    c.close()
    s.close()
    srv.close()
    # nothing listens now
    ans = agent.raw(b"GET /tunnel?port=%d HTTP/1.1\r\n\r\n" % port)
    assert raw_status(ans) == 502 and b"port %d" % port in ans, ans
    for bad in (b"port=0", b"port=65536", b"port=x", b"", b"port=80&x=1"):
        ans = agent.raw(b"GET /tunnel?" + bad + b" HTTP/1.1\r\n\r\n")
        assert raw_status(ans) == 400, (bad, ans)
    ans = agent.raw(b"GET /tunnel?port=80 HTTP/1.1\r\nContent-Length: 1\r\n\r\nx")
    assert raw_status(ans) == 400, ans
    assert agent.health()["agent"] == "1"


# --- shell=1 without a shell; record= ------------------------------------------

def test_agent_daemon_exec_plain_words_as_bash(agent, tmp_path):
    """Plain words run without bash, exactly as bash -c runs them: the same output,
    environment (PWD, SHLVL, _) and exit code as the same text with a `;` (which bash
    runs). Failures and what needs bash still go to bash."""
    for env in ([], ["SHLVL=5", "PWD=/"]):
        for text in ("env", "echo a  b\tc", "true", "false", "ls -d ."):
            plain = agent.exec([text], shell=1, cwd=str(tmp_path), env=env)
            shell = agent.exec([text + " ;"], shell=1, cwd=str(tmp_path), env=env)
            assert (sorted(plain.out.splitlines()), plain.err, plain.code) == \
                (sorted(shell.out.splitlines()), shell.err, shell.code), text
    r = agent.exec(["env"], shell=1, cwd=str(tmp_path))
    assert b"PWD=%s\n" % str(tmp_path).encode() in r.out
    assert b"_=/usr/bin/env\n" in r.out or b"_=/bin/env\n" in r.out
    # not found, not executable: bash's own messages and codes
    r = agent.exec(["no-such-program-xyz a"], shell=1)
    assert r.code == 127 and b"no-such-program-xyz: command not found" in r.err
    script = tmp_path / "noshebang"
    script.write_text("echo [[ran by $0]]\n")
    script.chmod(0o755)
    r = agent.exec([str(script)], shell=1)
    assert r.code == 0 and b"[[ran by" in r.out
    r = agent.exec([str(tmp_path)], shell=1)
    assert r.code == 126 and b"directory" in r.err.lower()
    # BASH_ENV is read by bash: the text is not run without it
    rc = tmp_path / "bashenv"
    rc.write_text("echo sourced\n")
    r = agent.exec(["true"], shell=1, env=["BASH_ENV=%s" % rc])
    assert r.out == b"sourced\n" and r.code == 0


def test_agent_daemon_exec_record(agent, tmp_path):
    """record=P: a command that ends at once leaves P.done alone (what the status
    script prints); one that runs longer also P.cmd, P.start, P.pid."""
    d = tmp_path / "cmds"
    fast = str(d / "fast")
    r = agent.exec(["exit 3"], shell=1, record=fast)
    assert r.code == 3
    # and, after its answer, maybe the empty spare the next P.done is renamed from
    assert sorted(f for f in os.listdir(d) if f != ".sb-spare") == ["fast.done"]
    lines = (d / "fast.done").read_text().split("\n")
    kv = dict(line.split("=", 1) for line in lines[:6])
    assert kv["rc"] == "3" and kv["alive"] == "0" and kv["bg"] == "0"
    assert int(kv["end"]) >= int(kv["start"]) > 0 and int(kv["pid"]) > 0
    assert lines[6] == "exit 3"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777
    slow = str(d / "slow")
    r = agent.exec(["sleep", "0.3"], record=slow)
    assert r.code == 0
    for suffix in ("cmd", "start", "pid", "done"):
        assert (d / ("slow." + suffix)).exists(), suffix
    assert (d / "slow.cmd").read_text() == "sleep 0.3"
    assert (d / "slow.done").read_text().endswith("\nsleep 0.3")


def test_agent_daemon_exec_record_spare(agent, tmp_path):
    """P.done is the spare .sb-spare renamed, and only a spare of the agent's: a
    planted link or a file with another link is moved away, never written
    through."""
    d = tmp_path / "cmds"
    assert agent.exec(["true"], record=str(d / "a")).code == 0
    for _ in range(100):  # made after the answer
        if (d / ".sb-spare").exists():
            break
        time.sleep(0.02)
    spare = os.stat(d / ".sb-spare")
    assert spare.st_size == 0 and stat.S_IMODE(spare.st_mode) == 0o600
    assert agent.exec(["true"], record=str(d / "b")).code == 0
    assert os.stat(d / "b.done").st_ino == spare.st_ino
    assert "rc=0\n" in (d / "b.done").read_text()
    for plant in ("symlink", "hardlink"):
        for _ in range(100):
            if (d / ".sb-spare").exists():
                break
            time.sleep(0.02)
        os.unlink(d / ".sb-spare")
        target = tmp_path / ("target-" + plant)
        target.write_text("keep\n")
        (os.symlink if plant == "symlink" else os.link)(target, d / ".sb-spare")
        rec = d / ("c-" + plant)
        assert agent.exec(["true"], record=str(rec)).code == 0
        done = d / ("c-" + plant + ".done")
        assert not done.is_symlink() and os.stat(done).st_nlink == 1, plant
        assert "rc=0\n" in done.read_text(), plant
        assert target.read_text() == "keep\n", plant
