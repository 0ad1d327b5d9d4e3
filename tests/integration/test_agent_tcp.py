"""The agent's TCP transport (docs/AGENT.md, "Transports", "TCP (Kubernetes)"),
written as the attacks on it.

No Docker, Redis or nginx: the built sandbox-agent runs as a local process
with --listen-tcp 127.0.0.1:<free port> --key-env, the built
sandbox-egress-relay with --agent-dir on a temp directory, and the marker
AGENT_DIR/<ref>.tcp is written as the provider writes it (directory first,
then the marker renamed into place, mode 0600). The broker's side is played
with http.client over <ref>/agent.sock (the bytes agent_client sends) and
once with curl --unix-socket. The attacker is a neighbour on the pod network:
it connects to the agent's port straight (without the key, with garbage, with
a replayed or reflected handshake, with 2,000 idle connections), or listens
at the marker's address as an impostor. Each attack is checked from both
sides: nothing runs / no byte of the broker's reaches the impostor, and the
broker's own connections are served meanwhile. Everything waits for an
event (a log line, an EOF, a file), never for a time.
"""
import hashlib
import hmac
import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import urllib.parse

import pytest

from brokerlib import BUILD_DIR, free_port, wait_until

AGENT = os.environ.get("SANDBOX_AGENT_BIN", os.path.join(BUILD_DIR, "sandbox-agent"))
RELAY = os.path.join(BUILD_DIR, "sandbox-egress-relay")
TIMEOUT = 20

MAGIC = b"SBAGTCP1"
LABEL_AGENT = b"sandbox-agent tcp1 agent\0"
LABEL_RELAY = b"sandbox-agent tcp1 relay\0"


def mac(key, label, nr, na):
    return hmac.new(key, label + nr + na, hashlib.sha256).digest()


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise EOFError("EOF after %d of %d bytes" % (len(out), n))
        out += b
    return out


def recv_all(s):
    """Everything until EOF (a reset counts as EOF)."""
    out = b""
    while True:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            return out
        if not b:
            return out
        out += b


def handshake(s, key):
    """The relay's side of the handshake in Python: the bytes it sent."""
    nr = os.urandom(32)
    hello = MAGIC + nr
    s.sendall(hello)
    reply = recv_exact(s, 72)
    assert reply[:8] == MAGIC
    na = reply[8:40]
    assert hmac.compare_digest(reply[40:], mac(key, LABEL_AGENT, nr, na)), "agent's proof"
    proof = mac(key, LABEL_RELAY, nr, na)
    s.sendall(proof)
    return hello + proof


def http_exec_bytes(args):
    q = urllib.parse.urlencode([("arg", a) for a in args], quote_via=urllib.parse.quote)
    return ("POST /exec?%s HTTP/1.1\r\nHost: agent\r\nContent-Length: 0\r\n\r\n" % q).encode()


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=TIMEOUT):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def parse_frames(data):
    """POST /exec's body -> (stdout, stderr, code)."""
    out, err, i = b"", b"", 0
    while i < len(data):
        nl = data.index(b"\n", i)
        tag, rest = data[i:nl].decode().split(" ", 1)
        i = nl + 1
        if tag in ("1", "2"):
            n = int(rest)
            if tag == "1":
                out += data[i:i + n]
            else:
                err += data[i:i + n]
            i += n
        else:
            assert tag == "x"
            return out, err, int(rest.split(" ")[0])
    raise AssertionError("no final frame in %r" % data[:200])


class Proc:
    def __init__(self, argv, log_path, env=None):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


class World:
    """One temp directory: the relay's AGENT_DIR, agents, their logs."""

    def __init__(self):
        # short: sun_path is 108 bytes
        self.d = tempfile.mkdtemp(prefix="at", dir="/tmp")
        self.agent_dir = os.path.join(self.d, "a")
        os.makedirs(self.agent_dir, mode=0o700)
        self.procs = []
        self.relay = Proc([RELAY, "--agent-dir", self.agent_dir],
                          os.path.join(self.d, "relay.log"))
        self.procs.append(self.relay)
        wait_until(lambda: "relaying agents" in self.relay.text(), 10, 0.02, "relay started")

    def agent(self, name, key=None, entry=None, addr="127.0.0.1"):
        """A sandbox-agent on a free port; its (proc, port, key)."""
        key = key or os.urandom(32)
        port = free_port()
        env = dict(os.environ, SB_AGENT_KEY=key.hex())
        argv = [AGENT, "--listen-tcp", "%s:%d" % (addr, port), "--key-env", "SB_AGENT_KEY",
                "--keep"]
        if entry:
            argv += ["--"] + entry
        p = Proc(argv, os.path.join(self.d, name + ".log"), env=env)
        self.procs.append(p)

        def listening():
            try:
                socket.create_connection((addr, port), 1).close()
                return True
            except OSError:
                assert p.proc.poll() is None, p.text()
                return False
        wait_until(listening, 10, 0.02, "agent listening")
        return p, port, key

    def marker(self, ref, line, mode=0o600):
        """As the provider: the directory, then the marker renamed into place."""
        os.makedirs(os.path.join(self.agent_dir, ref), mode=0o700, exist_ok=True)
        tmp = os.path.join(self.agent_dir, "." + ref + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.write(fd, line if isinstance(line, bytes) else line.encode())
        os.close(fd)
        os.chmod(tmp, mode)
        os.rename(tmp, os.path.join(self.agent_dir, ref + ".tcp"))

    def serve(self, ref, port, key, addr="127.0.0.1"):
        n = self.relay.text().count("serving agent of %s over TCP" % ref)
        self.marker(ref, "%s %d %s\n" % (addr, port, key.hex()))
        wait_until(lambda: self.relay.text().count("serving agent of %s over TCP" % ref) > n,
                   10, 0.02, "relay serves " + ref)

    def sock(self, ref):
        return os.path.join(self.agent_dir, ref, "agent.sock")

    def request(self, ref, method, path, params=(), body=None, timeout=TIMEOUT):
        url = path + ("?" + urllib.parse.urlencode(list(params), quote_via=urllib.parse.quote)
                      if params else "")
        c = UnixHTTPConnection(self.sock(ref), timeout)
        try:
            c.request(method, url, body=body)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def exec(self, ref, args, env=()):
        params = [("arg", a) for a in args] + [("env", e) for e in env]
        st, body = self.request(ref, "POST", "/exec", params)
        assert st == 200, (st, body)
        return parse_frames(body)

    def close(self):
        for p in self.procs:
            p.stop()
        texts = [p.text() for p in self.procs]
        shutil.rmtree(self.d, ignore_errors=True)
        for t in texts:
            assert "ERROR: AddressSanitizer" not in t and "runtime error:" not in t, t


@pytest.fixture
def world():
    for b in (AGENT, RELAY):
        if not os.access(b, os.X_OK):
            pytest.fail("%s not found: build it with `make`" % b, pytrace=False)
    w = World()
    yield w
    w.close()


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return set(int(x) for x in f.read().split())


def run_nothing(marker_path):
    """A command that leaves a file if it ever runs."""
    return ["sh", "-c", "touch " + marker_path]


# --- the transport works ----------------------------------------------------

def test_agent_tcp_exec_files_stream_through_relay(world, tmp_path):
    agent, port, key = world.agent("sb1")
    world.serve("sb1", port, key)
    assert oct(os.stat(world.sock("sb1")).st_mode & 0o777) == "0o600"

    out = subprocess.run(["curl", "-sS", "--unix-socket", world.sock("sb1"), "http://agent/health"],
                         capture_output=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    assert b"agent=1" in out.stdout and ("pid=%d" % agent.proc.pid).encode() in out.stdout

    o, e, code = world.exec("sb1", ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (o, e, code) == (b"out\n", b"err\n", 3)

    path = str(tmp_path / "f.bin")
    data = os.urandom(300 * 1024)
    st, body = world.request("sb1", "PUT", "/file", [("path", path)], body=data)
    assert st in (200, 204), (st, body)
    with open(path, "rb") as f:
        assert f.read() == data
    st, body = world.request("sb1", "GET", "/file", [("path", path)])
    assert st == 200 and body == data

    # streamed: the first frame arrives while the command still waits for
    # the go file, which the test makes only after reading it
    go = str(tmp_path / "go")
    c = UnixHTTPConnection(world.sock("sb1"))
    try:
        c.request("POST", "/exec?" + urllib.parse.urlencode(
            [("arg", "sh"), ("arg", "-c"),
             ("arg", "echo first; while [ ! -e %s ]; do sleep 0.02; done; echo second" % go)]))
        r = c.getresponse()
        assert r.status == 200
        first = r.read1(65536)
        assert first.startswith(b"1 6\nfirst\n"), first
        open(go, "w").close()
        rest = r.read()
    finally:
        c.close()
    assert parse_frames(first + rest) == (b"first\nsecond\n", b"", 0)


def test_agent_tcp_key_not_inherited_nor_in_environ(world, tmp_path):
    entry_env = str(tmp_path / "entry.env")
    agent, port, key = world.agent(
        "sb1", entry=["sh", "-c", "env > %s.tmp; mv %s.tmp %s; exec sleep 600" %
                      (entry_env, entry_env, entry_env)])
    world.serve("sb1", port, key)
    wait_until(lambda: os.path.exists(entry_env), 10, 0.02, "entrypoint's env")
    hexkey = key.hex().encode()
    with open(entry_env, "rb") as f:
        env = f.read()
    assert b"PATH=" in env  # the file is the environment
    assert hexkey not in env and b"SB_AGENT_KEY" not in env
    o, _, code = world.exec("sb1", ["env"])
    assert code == 0 and b"PATH=" in o
    assert hexkey not in o and b"SB_AGENT_KEY" not in o
    with open("/proc/%d/environ" % agent.proc.pid, "rb") as f:
        environ = f.read()
    assert b"PATH=" in environ
    assert hexkey not in environ and b"SB_AGENT_KEY" not in environ
    # nor in the command line: the key only ever travels in the environment
    with open("/proc/%d/cmdline" % agent.proc.pid, "rb") as f:
        assert hexkey not in f.read()


@pytest.mark.parametrize("env,msg", [
    (None, "not set"),
    ("", "not a key"),
    ("AB" * 32, "not a key"),            # uppercase
    ("ab" * 31, "not a key"),            # short
    ("ab" * 32 + "\n", "not a key"),
    ("zz" * 32, "not a key"),
])
def test_agent_tcp_bad_key_exits(env, msg, tmp_path):
    e = dict(os.environ)
    e.pop("SB_AGENT_KEY", None)
    if env is not None:
        e["SB_AGENT_KEY"] = env
    p = subprocess.run([AGENT, "--listen-tcp", "127.0.0.1:%d" % free_port(), "--key-env",
                        "SB_AGENT_KEY"], env=e, capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2
    assert ("--key-env SB_AGENT_KEY: " + msg).encode() in p.stderr, p.stderr


@pytest.mark.parametrize("argv", [
    ["--listen-tcp", "127.0.0.1:1"],                        # no key
    ["--key-env", "K"],                                      # key, no listener
    ["--socket", "/tmp/x.sock", "--key-env", "K"],
    ["--socket", "/tmp/x.sock", "--listen-tcp", "1", "--key-env", "K"],
    ["--listen-tcp", "", "--key-env", "K"],
    ["--listen-tcp", "1", "--key-env", "K=V"],
])
def test_agent_tcp_usage(argv):
    p = subprocess.run([AGENT] + argv, env=dict(os.environ, K="ab" * 32), capture_output=True,
                       timeout=TIMEOUT)
    assert p.returncode == 2 and b"usage: sandbox-agent" in p.stderr


@pytest.mark.parametrize("spec", ["localhost:80", "127.0.0.1:0", "::1:80", "1.2.3:4", "99999"])
def test_agent_tcp_bad_listen_exits(spec):
    p = subprocess.run([AGENT, "--listen-tcp", spec, "--key-env", "K"],
                       env=dict(os.environ, K="ab" * 32), capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2 and b"expected [ADDR:]PORT" in p.stderr, p.stderr


# --- a neighbour at the agent's port ----------------------------------------

def test_agent_tcp_unauthenticated_clients_run_nothing(world, tmp_path):
    agent, port, key = world.agent("sb1")
    world.serve("sb1", port, key)
    ran = str(tmp_path / "ran")
    request = http_exec_bytes(run_nothing(ran))
    base = children(agent.proc.pid)

    def attack(payload):
        s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
        got = recv_all(s)
        s.close()
        return got

    # plain HTTP, garbage: closed with not a byte
    assert attack(request) == b""
    assert attack(os.urandom(4096)) == b""
    # a HELLO then HTTP in place of the proof: the REPLY, then the close
    got = attack(MAGIC + os.urandom(32) + request)
    assert len(got) == 72 and got[:8] == MAGIC
    # the handshake with a wrong key: the agent's REPLY comes, then the close
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    nr = os.urandom(32)
    s.sendall(MAGIC + nr)
    reply = recv_exact(s, 72)
    wrong = os.urandom(32)
    s.sendall(mac(wrong, LABEL_RELAY, nr, reply[8:40]) + request)
    assert recv_all(s) == b""
    s.close()
    # reflection: the agent's own proof sent back as the relay's
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s.sendall(MAGIC + nr)
    reply = recv_exact(s, 72)
    s.sendall(reply[40:] + request)
    assert recv_all(s) == b""
    s.close()
    # reflection across two connections: the agent's nonce of the first as
    # the HELLO of the second, that REPLY's MAC as the first's proof
    s1 = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s1.sendall(MAGIC + nr)
    r1 = recv_exact(s1, 72)
    s2 = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s2.sendall(MAGIC + r1[8:40])
    r2 = recv_exact(s2, 72)
    s1.sendall(r2[40:] + request)
    assert recv_all(s1) == b""
    s1.close()
    s2.close()

    # positive control: the same client with the key is served (the
    # attacks above failed for want of the key, not for a broken client)
    ok = str(tmp_path / "ok")
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    transcript = handshake(s, key)
    s.sendall(http_exec_bytes(run_nothing(ok)))
    answer = recv_all(s)
    s.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert os.path.exists(ok)

    # replay of that good transcript, byte for byte: the agent's REPLY
    # (a fresh nonce) and nothing more
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s.sendall(transcript + request)
    got = recv_all(s)
    s.close()
    assert len(got) == 72 and got[:8] == MAGIC and got[8:40] != transcript[8:40], got

    assert not os.path.exists(ran)
    # no handler was forked for any of them (the one served has exited)
    wait_until(lambda: children(agent.proc.pid) <= base, 10, 0.02, "handlers gone")
    # the broker, meanwhile and after, is served
    assert world.exec("sb1", ["echo", "still"])[0] == b"still\n"


def test_agent_tcp_idle_connection_closed_at_deadline(world):
    agent, port, key = world.agent("sb1")
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s.settimeout(15)  # the deadline is 2 s; a loaded machine gets margin
    assert recv_all(s) == b""
    s.close()
    s = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    s.settimeout(15)
    s.sendall(MAGIC + os.urandom(32))
    recv_exact(s, 72)
    assert recv_all(s) == b""  # no proof ever sent
    s.close()


def test_agent_tcp_flood_does_not_stop_the_relay(world, tmp_path):
    """2,000 idle unauthenticated connections (from a neighbour's address,
    127.0.0.2), and more opened all along, while the broker execs through
    the relay (from 127.0.0.1)."""
    agent, port, key = world.agent("sb1")
    world.serve("sb1", port, key)
    base = children(agent.proc.pid)
    held, stop = [], threading.Event()

    def flood(n):
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.2", 0))
            try:
                s.connect(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            held.append(s)
    flood(2000)
    assert len(held) >= 1900
    # nothing forked for them
    assert children(agent.proc.pid) <= base

    def keep_flooding():
        while not stop.is_set():
            flood(50)
            while len(held) > 3000:
                held.pop(0).close()
    t = threading.Thread(target=keep_flooding, daemon=True)
    t.start()
    try:
        for i in range(20):
            o, _, code = world.exec("sb1", ["echo", "tenant %d" % i])
            assert (o, code) == (("tenant %d\n" % i).encode(), 0)
    finally:
        stop.set()
        t.join(30)
        for s in held:
            s.close()
    assert "no handshake within" not in world.relay.text()


# --- an impostor at the marker's address ------------------------------------

class Impostor:
    """A TCP server without the key, at an address the marker names."""

    def __init__(self, behaviour):
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.behaviour = behaviour
        self.got = []
        self.done = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        c, _ = self.srv.accept()
        c.settimeout(TIMEOUT)
        try:
            hello = recv_exact(c, 40)
            self.got.append(hello)
            if self.behaviour == "http":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nimpostor says\n")
            elif self.behaviour == "garbage-mac":
                c.sendall(MAGIC + os.urandom(64))
            elif self.behaviour == "reflect":
                c.sendall(hello + hello[8:])  # our nonce back, and again as "MAC"
            elif self.behaviour == "silent":
                pass
            self.got.append(recv_all(c))  # whatever comes until the relay closes
        except (OSError, EOFError):
            pass
        finally:
            c.close()
            self.done.set()

    def close(self):
        self.srv.close()


@pytest.mark.parametrize("behaviour", ["http", "garbage-mac", "reflect", "silent"])
def test_agent_tcp_impostor_refused(world, behaviour):
    # the other tenant: a real agent, served through the same relay
    agent, port, key = world.agent("sb2")
    world.serve("sb2", port, key)
    imp = Impostor(behaviour)
    try:
        world.serve("sb1", imp.port, os.urandom(32))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect(world.sock("sb1"))
        secret = b"X-Secret: broker-bytes-" + os.urandom(8).hex().encode()
        try:
            s.sendall(b"POST /exec?arg=true HTTP/1.1\r\n" + secret + b"\r\n\r\n")
            sent = True
        except (BrokenPipeError, ConnectionResetError):
            # the relay refused the impostor and closed before our bytes (a
            # descheduled test thread on a loaded box): the same refusal
            sent = False
        # the tenant next door is served while the impostor is refused
        assert world.exec("sb2", ["echo", "ok"])[0] == b"ok\n"
        if sent:
            assert recv_all(s) == b""  # nothing of the impostor's reaches the broker
        s.close()
        assert imp.done.wait(TIMEOUT)
        assert imp.got and len(imp.got[0]) == 40 and imp.got[0][:8] == MAGIC
        assert all(secret not in g for g in imp.got)
        assert len(b"".join(imp.got)) == 40  # not a byte beyond the HELLO
        want = ("no handshake within the deadline" if behaviour == "silent" else
                "not the sandbox's agent")
        wait_until(lambda: want in world.relay.text(), 10, 0.02, "relay log: " + want)
    finally:
        imp.close()


def test_agent_tcp_unreachable_address_closes(world):
    port = free_port()  # nobody listens
    world.serve("sb1", port, os.urandom(32))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(world.sock("sb1"))
    try:
        s.sendall(b"GET /health HTTP/1.1\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass  # the relay closed first: the refused connect came before our bytes
    else:
        assert recv_all(s) == b""
    s.close()
    wait_until(lambda: "Connection refused" in world.relay.text(), 10, 0.02, "logged")


# --- markers ----------------------------------------------------------------

def test_agent_tcp_bad_markers_bind_nothing(world, tmp_path):
    agent, port, key = world.agent("sb1")
    good = "127.0.0.1 %d %s\n" % (port, key.hex())
    cases = {
        "badhex": ("127.0.0.1 %d %s\n" % (port, key.hex().upper()), "bad KEYHEX"),
        "shortkey": ("127.0.0.1 %d %s\n" % (port, key.hex()[:-2]), "not one line ADDR PORT KEYHEX"),
        "extra": ("127.0.0.1 %d %s extra\n" % (port, key.hex()), "not one line ADDR PORT KEYHEX"),
        "port0": ("127.0.0.1 0 %s\n" % key.hex(), "bad PORT"),
        "name": ("pod.local %d %s\n" % (port, key.hex()), "bad ADDR"),
        "nonl": (good[:-1], "not one line ADDR PORT KEYHEX"),
    }
    for ref, (line, why) in cases.items():
        world.marker(ref, line)
    # a link to a good marker, and a good line with mode 0644
    target = os.path.join(world.d, "elsewhere.tcp")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, good.encode())
    os.close(fd)
    os.makedirs(os.path.join(world.agent_dir, "link"))
    os.symlink(target, os.path.join(world.agent_dir, "link.tcp"))
    cases["link"] = (None, "a link")
    world.marker("wide", good, mode=0o644)
    cases["wide"] = (None, "mode is not 0600")
    for ref, (_, why) in cases.items():
        wait_until(lambda: ("marker %s.tcp refused: %s" % (ref, why)) in world.relay.text(),
                   10, 0.02, "refusal of " + ref)
    # a good one served beside them proves the scans ran past them
    world.serve("ok", port, key)
    for ref in cases:
        assert not os.path.exists(world.sock(ref)), ref
        assert ("serving agent of %s " % ref) not in world.relay.text()
    # logged once per version of the file, not at every rescan (2 s)
    n = world.relay.text().count("marker extra.tcp refused")
    world.marker("ok2", good)
    wait_until(lambda: "serving agent of ok2" in world.relay.text(), 10, 0.02, "ok2")
    assert world.relay.text().count("marker extra.tcp refused") == n == 1
    assert world.exec("ok", ["echo", "x"])[0] == b"x\n"


def test_agent_tcp_marker_rewritten_and_removed(world):
    a1, p1, k1 = world.agent("one")
    a2, p2, k2 = world.agent("two")
    world.serve("sb", p1, k1)
    st, body = world.request("sb", "GET", "/health")
    assert ("pid=%d" % a1.proc.pid).encode() in body
    # rewritten with another address and key: the next connections go there
    world.marker("sb", "127.0.0.1 %d %s\n" % (p2, k2.hex()))
    wait_until(lambda: "agent of sb: marker changed" in world.relay.text(), 10, 0.02, "changed")
    st, body = world.request("sb", "GET", "/health")
    assert ("pid=%d" % a2.proc.pid).encode() in body
    # rewritten into something invalid: dropped, agent.sock gone
    world.marker("sb", "127.0.0.1 %d %s\n" % (p2, "00" * 31))
    wait_until(lambda: not os.path.exists(world.sock("sb")), 10, 0.02, "agent.sock unlinked")
    assert "marker sb.tcp refused" in world.relay.text()
    # valid again: served again
    world.serve("sb", p1, k1)
    assert world.request("sb", "GET", "/health")[0] == 200
    # removed: listener closed and agent.sock unlinked, the directory stays
    os.unlink(os.path.join(world.agent_dir, "sb.tcp"))
    wait_until(lambda: "agent of sb gone" in world.relay.text(), 10, 0.02, "gone")
    assert not os.path.exists(world.sock("sb"))
    assert os.path.isdir(os.path.join(world.agent_dir, "sb"))


# --- the agent in a container, reached by its IP on a bridge network -------

def docker(*args, check=True, timeout=120):
    p = subprocess.run(["docker"] + list(args), capture_output=True, timeout=timeout)
    if check:
        assert p.returncode == 0, (args, p.stderr)
    return p.stdout.decode().strip()


def test_agent_tcp_in_a_container_on_a_bridge_network(world):
    """As a pod: the agent is PID 1 of a container on a network of the test's
    own, its key in the container's environment; the relay reaches it by IP.
    A neighbour container on the same network, without the key, gets nothing
    and runs nothing, while the broker's commands run."""
    from sandboxlib import TINY_IMAGE, docker_skip_reason
    reason = docker_skip_reason()
    if reason:
        pytest.skip(reason)
    tag = "it-agenttcp-" + os.urandom(4).hex()
    key = os.urandom(32)
    docker("network", "create", "--label", "io.sandbox-broker.test=agent-tcp", tag)
    try:
        docker("run", "-d", "--name", tag, "--network", tag,
               "--label", "io.sandbox-broker.test=agent-tcp",
               "-e", "SB_AGENT_KEY=" + key.hex(),
               "-v", os.path.abspath(AGENT) + ":/sba:ro", TINY_IMAGE,
               "/sba", "--listen-tcp", "7000", "--key-env", "SB_AGENT_KEY", "--keep",
               "--", "sleep", "600")
        ip = docker("inspect", "-f",
                    "{{(index .NetworkSettings.Networks \"%s\").IPAddress}}" % tag, tag)
        assert ip.count(".") == 3, ip

        def listening():
            try:
                socket.create_connection((ip, 7000), 1).close()
                return True
            except OSError:
                return False
        wait_until(listening, 30, 0.1, "agent in the container listening")
        world.serve("pod", 7000, key, addr=ip)

        st, body = world.request("pod", "GET", "/health")
        assert st == 200 and b"pid=1\n" in body, body
        o, _, code = world.exec("pod", ["sh", "-c", "cat /proc/1/environ | tr '\\0' '\\n'; "
                                        "echo; env"])
        assert code == 0 and b"PATH=" in o
        assert key.hex().encode() not in o and b"SB_AGENT_KEY" not in o

        # a neighbour on the same network, no key: plain HTTP gets nothing
        out = docker("run", "--rm", "--network", tag, "--label",
                     "io.sandbox-broker.test=agent-tcp", TINY_IMAGE, "sh", "-c",
                     "printf 'POST /exec?arg=touch&arg=/ran HTTP/1.1\\r\\n\\r\\n' | "
                     "nc -w 5 %s 7000; echo rc=$?" % ip)
        assert "rc=" in out and "HTTP" not in out, out
        o, _, code = world.exec("pod", ["sh", "-c", "test -e /ran; echo $?"])
        assert o == b"1\n"
        assert world.exec("pod", ["hostname"])[0].strip() != b""
    finally:
        docker("rm", "-f", tag, check=False)
        docker("network", "rm", tag, check=False)
