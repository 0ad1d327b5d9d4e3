"""sandbox-egress-relay --agent-dir: the host relay for agents that dial out
(gVisor sandboxes; egress/relay.c's header).

No Docker: the relay runs on a temp AGENT_DIR; Python plays the agent (it
dials dial.sock and answers) and the broker (it connects to agent.sock).
Every check waits for an event (a byte, an EOF, a log line), never a time.
"""
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from brokerlib import BUILD_DIR, wait_until

RELAY = os.path.join(BUILD_DIR, "sandbox-egress-relay")

CID = "ab12" * 16  # 64 hex digits
CID2 = "cd34ef56cd34"  # 12, the shortest


class Relay:
    def __init__(self, d):
        self.d = d
        self.agent_dir = os.path.join(d, "agent")
        self.log_path = os.path.join(d, "relay.log")
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([RELAY, "--agent-dir", self.agent_dir],
                                     stdout=self.log, stderr=self.log)
        wait_until(lambda: "relaying agents" in self.text(), 10, desc="relay started")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def add(self, cid, marker=True):
        os.makedirs(os.path.join(self.agent_dir, cid), exist_ok=True)
        if marker:
            open(os.path.join(self.agent_dir, cid + ".dial"), "w").close()

    def sock(self, cid, name):
        return os.path.join(self.agent_dir, cid, name)

    def served(self, cid):
        wait_until(lambda: ("serving agent of container " + cid[:12]) in self.text(), 10,
                   desc="served " + cid[:12])


@pytest.fixture
def relay():
    # a short base: a 64-digit container id leaves little of sun_path's 108 bytes
    d = tempfile.mkdtemp(prefix="ar", dir="/tmp")
    r = Relay(d)
    os.makedirs(r.agent_dir, mode=0o700)
    yield r
    r.stop()
    text = r.text()
    shutil.rmtree(d)
    assert "ERROR: AddressSanitizer" not in text and "runtime error:" not in text, text


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    return s


def recv_exact(s, n):
    out = bytearray()
    while len(out) < n:
        b = s.recv(min(1 << 20, n - len(out)))
        assert b, "EOF after %d of %d bytes" % (len(out), n)
        out += b
    return bytes(out)


def recv_all(s):
    out = bytearray()
    while True:
        b = s.recv(1 << 20)
        if not b:
            return bytes(out)
        out += b


def closed_by_peer(s):
    """True when the peer closed (EOF or reset), waiting for it."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def dial(r, cid, n=1):
    return [connect(r.sock(cid, "dial.sock")) for _ in range(n)]


def one_pair(relay, cid, data):
    """A dial, then a broker connection: data reaches the agent's side."""
    (a,) = dial(relay, cid)
    b = connect(relay.sock(cid, "agent.sock"))
    b.sendall(data)
    assert recv_exact(a, len(data)) == data
    a.close()
    b.close()


def test_pair_both_ways_large_and_half_close(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    assert oct(os.stat(relay.sock(CID, "agent.sock")).st_mode & 0o777) == "0o600"
    assert oct(os.stat(relay.sock(CID, "dial.sock")).st_mode & 0o777) == "0o600"
    (agent,) = dial(relay, CID)
    broker = connect(relay.sock(CID, "agent.sock"))
    broker.sendall(b"ping\n")
    assert recv_exact(agent, 5) == b"ping\n"
    agent.sendall(b"pong\n")
    assert recv_exact(broker, 5) == b"pong\n"

    # 8 MiB each way at once, then half-close each side
    big = os.urandom(8 << 20)
    got = {}

    def agent_side():
        got["agent"] = recv_all(agent)  # ends when the broker half-closes
        agent.sendall(big[::-1])
        agent.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=agent_side)
    t.start()
    broker.sendall(big)
    broker.shutdown(socket.SHUT_WR)
    back = recv_all(broker)
    t.join(60)
    assert hashlib.sha256(got["agent"]).digest() == hashlib.sha256(big).digest()
    assert hashlib.sha256(back).digest() == hashlib.sha256(big[::-1]).digest()
    agent.close()
    broker.close()


def test_broker_waits_for_a_dial_in_order(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    b1 = connect(relay.sock(CID, "agent.sock"))
    b1.sendall(b"first")
    b2 = connect(relay.sock(CID, "agent.sock"))
    b2.sendall(b"second")
    (a1,) = dial(relay, CID)
    assert recv_exact(a1, 5) == b"first"
    (a2,) = dial(relay, CID)
    assert recv_exact(a2, 6) == b"second"
    a2.sendall(b"2")
    a1.sendall(b"1")
    assert recv_exact(b1, 1) == b"1" and recv_exact(b2, 1) == b"2"
    for s in (a1, a2, b1, b2):
        s.close()


def test_pending_cap(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    waiting = [connect(relay.sock(CID, "agent.sock")) for _ in range(64)]
    extra = connect(relay.sock(CID, "agent.sock"))
    assert closed_by_peer(extra)
    wait_until(lambda: "wait for a dial; one refused" in relay.text(), 10, desc="cap logged")
    # the 64 still wait, and the first is paired first
    (a,) = dial(relay, CID)
    waiting[0].sendall(b"x")
    assert recv_exact(a, 1) == b"x"
    for s in waiting + [extra, a]:
        s.close()


def test_pending_that_hangs_up_leaves_the_queue(relay):
    # broker connections that give up while they wait for a dial free their
    # places at once (not after PENDING_MS); one that sent its request and
    # shut its side down still has it delivered, and gets the answer
    relay.add(CID)
    relay.start()
    relay.served(CID)
    waiting = [connect(relay.sock(CID, "agent.sock")) for _ in range(64)]  # the cap
    for s in waiting[:63]:
        s.close()
    halfway = connect(relay.sock(CID, "agent.sock"))
    halfway.sendall(b"req")
    halfway.shutdown(socket.SHUT_WR)
    # the oldest still waiting is paired first, then the half-closed one
    a1, a2 = dial(relay, CID, 2)
    waiting[63].sendall(b"x")
    assert recv_exact(a1, 1) == b"x"
    assert recv_all(a2) == b"req"  # its request, then its end
    a2.sendall(b"ok")
    a2.close()
    assert recv_all(halfway) == b"ok"
    assert "one refused" not in relay.text()
    for s in (waiting[63], halfway, a1):
        s.close()


def test_idle_pool_cap(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    pool = dial(relay, CID, 16)
    (extra,) = dial(relay, CID)
    assert closed_by_peer(extra)
    wait_until(lambda: "16 idle dials; one refused" in relay.text(), 10, desc="cap logged")
    # the oldest idle one is used first
    b = connect(relay.sock(CID, "agent.sock"))
    b.sendall(b"y")
    assert recv_exact(pool[0], 1) == b"y"
    for s in pool + [extra, b]:
        s.close()


def test_idle_that_speaks_or_hangs_up_is_dropped(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    chatty, quitter = dial(relay, CID, 2)
    chatty.sendall(b"unasked")
    assert closed_by_peer(chatty)  # the relay closed it
    quitter.close()
    (healthy,) = dial(relay, CID)
    b = connect(relay.sock(CID, "agent.sock"))
    b.sendall(b"hello")
    assert recv_exact(healthy, 5) == b"hello"
    healthy.sendall(b"ok")
    assert recv_exact(b, 2) == b"ok"
    b.close()
    healthy.close()


def test_markers_before_start_served_and_removal(relay):
    relay.add(CID)
    relay.add(CID2)
    relay.start()
    relay.served(CID)
    relay.served(CID2)
    (a,) = dial(relay, CID2)
    b = connect(relay.sock(CID2, "agent.sock"))
    b.sendall(b"q")
    assert recv_exact(a, 1) == b"q"
    idle_left, = dial(relay, CID2)
    os.unlink(os.path.join(relay.agent_dir, CID2 + ".dial"))
    wait_until(lambda: ("container %s gone" % CID2[:12]) in relay.text(), 10, desc="gone")
    with pytest.raises(OSError):
        connect(relay.sock(CID2, "agent.sock"))
    with pytest.raises(OSError):
        connect(relay.sock(CID2, "dial.sock"))
    assert closed_by_peer(idle_left)
    # the pair in flight still runs, both ways, to its end
    a.sendall(b"r")
    assert recv_exact(b, 1) == b"r"
    b.sendall(b"s")
    b.shutdown(socket.SHUT_WR)
    assert recv_all(a) == b"s"
    a.close()
    assert recv_all(b) == b""
    b.close()
    # the other container is untouched
    one_pair(relay, CID, b"t")
    # the run directory going away stops serving as well
    os.unlink(relay.sock(CID, "agent.sock"))
    os.unlink(relay.sock(CID, "dial.sock"))
    os.rmdir(os.path.join(relay.agent_dir, CID))
    wait_until(lambda: ("container %s gone" % CID[:12]) in relay.text(), 10, desc="dir gone")


def test_ignored_entries_and_stale_socket(relay):
    links = "0123456789ab"
    relay.add(links, marker=False)
    target = os.path.join(relay.d, "elsewhere")
    open(target, "w").close()
    os.symlink(target, os.path.join(relay.agent_dir, links + ".dial"))
    nothex = "0123456789az"
    relay.add(nothex)
    short = "0123456789a"
    relay.add(short)
    upper = "0123456789AB"
    relay.add(upper)
    # a stale socket from an earlier relay, and a regular file where dial.sock goes elsewhere
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    relay.add(CID)
    stale.bind(relay.sock(CID, "agent.sock"))
    stale.close()
    relay.add(CID2)
    with open(relay.sock(CID2, "agent.sock"), "w") as f:
        f.write("not a socket")
    relay.start()
    relay.served(CID)
    one_pair(relay, CID, b"z")
    # the marker and directory are there, the regular file stays: not served, not removed
    with open(relay.sock(CID2, "agent.sock")) as f:
        assert f.read() == "not a socket"
    text = relay.text()
    assert "serving agent of container " + CID2[:12] not in text
    for name in (links, nothex, short, upper):
        assert "container " + name[:12] not in text
        assert not os.path.exists(relay.sock(name, "agent.sock"))


@pytest.mark.parametrize("args", [[], ["--dir", "/tmp/x"], ["--squid-port", "3128"],
                                  ["--agent-dir", "relative"], ["--bogus"],
                                  ["--agent-dir", "/tmp/x", "--squid-port", "0"]])
def test_usage(args):
    p = subprocess.run([RELAY] + args, capture_output=True, timeout=10)
    assert p.returncode == 2, p
    assert b"usage:" in p.stderr


def test_pending_without_dial_is_closed(relay):
    relay.add(CID)
    relay.start()
    relay.served(CID)
    b = connect(relay.sock(CID, "agent.sock"))
    assert closed_by_peer(b)  # after PENDING_MS (10 s) with no dial
    assert "no dial within" in relay.text()
    b.close()
    # a later connection is still served
    one_pair(relay, CID, b"w")
