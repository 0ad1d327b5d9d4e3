"""Credential Vault injection over HTTPS (issue 28; docs/EGRESS.md, "Injection
over HTTPS"): Squid decrypts (ssl_bump) only a CONNECT to a host the
sandbox's vault binds for https, with a certificate signed by the
deployment's CA (egress/vault-ca), which the sandbox trusts (the agent adds
the ca.pem the broker put in its egress directory to the image's bundle); the
decrypted request goes through the same injector as plain HTTP. Every other
CONNECT is a plain tunnel: the client sees the upstream's own certificate.
Squid verifies the upstream's certificate: a bound host whose certificate
does not verify fails, and never gets the secret.

Real Docker sandboxes, Squid (Debian's squid-openssl), the relay, the helper,
the injector, Redis; the upstreams are HTTPS servers of the test on
127.0.0.1 with a CA of the test's own ("upstream CA", trusted by Squid only
through EGRESS_VAULT_UPSTREAM_CAFILE) and a rogue CA nobody trusts, behind
names of the test's own resolver (test_egress.Squid). The sandbox holds only
a placeholder.
"""

import base64
import http.server
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading

import pytest

from brokerlib import free_port, http_request, wait_until
from sandboxlib import docker_broker, require_docker  # noqa: F401
from test_egress import ROOT, Squid  # noqa: E402  (skips the module without squid)
from test_vault_injection import in_sandbox

require_docker()

if "--with-openssl" not in subprocess.run(["squid", "-v"], capture_output=True, text=True).stdout:
    pytest.skip("squid is not the OpenSSL build (Debian's squid-openssl): no ssl_bump",
                allow_module_level=True)

SECRET = "vlt-" + os.urandom(12).hex()
PH = "__VAULT_TOKEN__"
GIT_PW = "gitpw-" + os.urandom(8).hex()
SEEN = []  # (server, path, headers) of every request an upstream got


def recorder(name):
    class Recorder(http.server.BaseHTTPRequestHandler):
        def handle_one(self):
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            SEEN.append((name, self.path, {k.lower(): v for k, v in self.headers.items()}))
            out = b"recorded by " + name.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST = handle_one

        def log_message(self, *a):
            pass
    return Recorder


def openssl(d, *a):
    subprocess.run(("openssl",) + a, check=True, capture_output=True, cwd=d)


def make_upstream_certs(d):
    """upca.pem (the upstreams' CA) signs good.pem for allowed.test and
    other.test; rogue.pem (a CA nobody trusts) signs bad.pem for denied.test."""
    for ca, cn in (("upca", "vault https test upstream CA"), ("rogue", "rogue test CA")):
        openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                "/CN=" + cn, "-keyout", ca + ".key", "-out", ca + ".pem")
    for leaf, ca, names in (("good", "upca", ["allowed.test", "other.test"]),
                            ("bad", "rogue", ["denied.test"])):
        openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + names[0],
                "-keyout", leaf + ".key", "-out", leaf + ".csr")
        with open(os.path.join(d, leaf + ".ext"), "w") as f:
            f.write("subjectAltName=" + ",".join("DNS:" + n for n in names) + "\n")
        openssl(d, "x509", "-req", "-in", leaf + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
                "-CAcreateserial", "-days", "2", "-extfile", leaf + ".ext", "-out", leaf + ".pem")
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)


def serve_tls(d, leaf, handler):
    port = free_port()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, leaf + ".pem"), os.path.join(d, leaf + ".key"))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, port


class GitBackend(http.server.BaseHTTPRequestHandler):
    """git's smart HTTP (git http-backend as CGI) under /repo.git, behind
    basic auth (user "git", GIT_PW): what a private Git host does."""
    root = None

    def handle_one(self):
        want = "Basic " + base64.b64encode(("git:" + GIT_PW).encode()).decode()
        SEEN.append(("git", self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.headers.get("Authorization") != want:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        env = {"GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": "git",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "PATH": os.environ["PATH"],
               "CONTENT_LENGTH": str(len(body)),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        r = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                           timeout=60)
        head, _, out = r.stdout.partition(b"\r\n\r\n")
        status = 200
        hdrs = []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k, v.strip()))
        self.send_response(status)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = handle_one

    def log_message(self, *a):
        pass


@pytest.fixture
def world(request, docker_broker):  # noqa: F811
    d = tempfile.mkdtemp(prefix="sbvtls-", dir="/tmp")
    servers, squid = [], []
    try:
        yield from _world(d, docker_broker, servers, squid)
    finally:
        for sq in squid:
            sq.stop()
        for s in servers:
            s.shutdown()
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print("\nvault https state kept: %s" % d)
        else:
            shutil.rmtree(d, ignore_errors=True)


def _world(d, docker_broker, servers, squid):  # noqa: F811
    from sdklib import API_KEYS_ENV
    os.chmod(d, 0o755)
    up = os.path.join(d, "up")
    os.makedirs(up)
    os.chmod(up, 0o755)
    make_upstream_certs(up)
    # the deployment's CA, as an operator makes it: the key Squid's only
    ca_dir = os.path.join(d, "vault-ca")
    subprocess.run([os.path.join(ROOT, "egress", "vault-ca"), ca_dir, "proxy"], check=True,
                   capture_output=True)
    key = os.path.join(d, "vault.key")
    with open(key, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(key, 0o600)
    # a bare repository for the git case
    work = os.path.join(d, "work")
    os.makedirs(work)
    git = lambda *a, cwd=work: subprocess.run(("git",) + a, check=True, capture_output=True, cwd=cwd)  # noqa: E731
    git("init", "-q")
    with open(os.path.join(work, "README"), "w") as f:
        f.write("cloned over https with an injected password\n")
    git("add", "README")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    git("clone", "-q", "--bare", work, os.path.join(d, "git", "repo.git"), cwd=d)
    GitBackend.root = os.path.join(d, "git")
    good, good_port = serve_tls(up, "good", recorder("good"))
    bad, bad_port = serve_tls(up, "bad", recorder("bad"))
    gitsrv, git_port = serve_tls(up, "good", GitBackend)
    servers += [good, bad, gitsrv]
    sb = docker_broker(EGRESS_DIR=os.path.join(d, "egress"), OPENSANDBOX_API_KEYS=API_KEYS_ENV,
                       VAULT_KEY_FILE=key, EGRESS_VAULT_CA_DIR=ca_dir, BROKER_CAPACITY=2)
    sq = Squid(d, sb.b.services.redis_port, sb.b.prefix, [good_port, bad_port, git_port], True,
               vault_key=key, vault_ca_dir=ca_dir, upstream_cafile=os.path.join(up, "upca.pem"))
    squid.append(sq)
    sq.start()
    yield {"sb": sb, "sq": sq, "good": good_port, "bad": bad_port, "git": git_port, "up": up,
           "ca_dir": ca_dir, "key": key, "d": d}
    for log in (sq.cache_log(), open(os.path.join(d, "icap.log"), errors="replace").read()):
        assert "AddressSanitizer" not in log and "runtime error:" not in log, log[-4000:]


# In the sandbox: GET https://host:port/path through the proxy of its
# environment (CONNECT), with X-Token: <token>, trusting the image's bundle
# (or the CA file named by argv[4]). Prints OK <status> <issuer CN> <body>
# or FAIL <why>.
REQ = r"""
import http.client, os, ssl, sys
host, port, path, token = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
extra = {"Host": os.environ["HOST_HDR"]} if os.environ.get("HOST_HDR") else {}
ctx = ssl.create_default_context(cafile=sys.argv[5]) if len(sys.argv) > 5 else ssl.create_default_context()
try:
    c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ctx, timeout=20)
    c.set_tunnel(host, port)
    c.connect()
    issuer = dict(x[0] for x in c.sock.getpeercert()["issuer"]).get("commonName", "?")
    c.request("GET", path, headers=dict(extra, **{"X-Token": token}))
    r = c.getresponse()
    body = r.read().decode("utf-8", "replace")
    print("OK", r.status, "issuer=" + issuer.replace(" ", "_"),
          (body[:200] if r.status == 200 else body[:8000]).replace("\n", " "))
except Exception as e:
    print("FAIL", type(e).__name__, str(e)[:200].replace("\n", " "))
"""


def get(sb, sid, host, port, path, token=PH, cafile=None, host_header=None):
    r = in_sandbox(sb.b, sid, *(["env", "HOST_HDR=" + host_header] if host_header else []),
                   "python3", "-c", REQ, host, str(port), path, token,
                   *([cafile] if cafile else []))
    assert r.returncode == 0, r
    return r.stdout.strip()


def hits(server, part):
    return [s for s in SEEN if s[0] == server and part in s[1]]


def make_vault(sb, osb, sid, body):
    ep = osb.endpoint(sid, 18080)
    vault = "/" + ep.json["endpoint"].split("/", 1)[1] + "/credential-vault"
    headers = dict(ep.json["headers"], **{"Content-Type": "application/json"})
    r = http_request(sb.b.port, "POST", vault, json.dumps(body), headers)
    assert r.status == 201, r
    assert SECRET not in (r.raw or b"").decode() and GIT_PW not in (r.raw or b"").decode()
    return vault, headers


def test_https_injection_bound_only_and_verified(world):
    from sdklib import OSB
    sb, sq, up = world["sb"], world["sq"], world["up"]
    good, bad = world["good"], world["bad"]
    policy = {"defaultAction": "deny", "egress": [{"action": "allow", "target": t} for t in
                                                  ("allowed.test", "other.test", "denied.test")]}
    osb = OSB(sb.b, "alpha")
    sid = osb.create(networkPolicy=policy)
    vault, headers = make_vault(sb, osb, sid, {
        "credentials": [{"name": "tok", "source": {"type": "inline", "value": SECRET}},
                        {"name": "gitpw", "source": {"type": "inline", "value": base64.b64encode(
                            ("git:" + GIT_PW).encode()).decode()}}],
        "bindings": [
            {"name": "git", "match": {"hosts": ["allowed.test"], "schemes": ["https"],
                                      "paths": ["/repo.git/*"]},
             "auth": {"type": "basic", "credential": "gitpw"}},
            {"name": "auth", "match": {"hosts": ["allowed.test", "denied.test"],
                                       "schemes": ["https"], "paths": ["/auth"]},
             "auth": {"type": "bearer", "credential": "tok"}},
            {"name": "subst", "match": {"hosts": ["allowed.test"], "schemes": ["https"],
                                        "paths": ["/sub/*"]},
             "auth": {"type": "passthrough", "substitutions": [
                 {"credential": "tok", "placeholder": PH, "in": ["header", "path"]}]}},
        ]})

    # the sandbox got the deployment's CA (the certificate, never the key)
    ca = open(os.path.join(world["ca_dir"], "ca.pem")).read()
    r = in_sandbox(sb.b, sid, "sh", "-c", "cat /.sandbox-broker/egress/ca.pem; echo ==; "
                   "ls /.sandbox-broker/egress; echo ==; grep -c 'BEGIN CERT' "
                   "/etc/ssl/certs/ca-certificates.crt; tail -c 3000 /etc/ssl/certs/ca-certificates.crt")
    parts = r.stdout.split("==\n")
    assert parts[0].strip() == ca.strip(), r.stdout[:3000]
    assert "ca.key" not in parts[1] and "PRIVATE" not in r.stdout, r.stdout
    assert ca.strip() in parts[2], "the image's bundle must hold the deployment's CA"

    wait_until(lambda: get(sb, sid, "allowed.test", good, "/auth").startswith("OK 200"), 30,
               interval=0.5, desc="the sandbox's egress up")
    # bound host over https: decrypted with our CA, the bearer injected
    SEEN.clear()
    out = get(sb, sid, "allowed.test", good, "/auth")
    assert out.startswith("OK 200 issuer=Sandbox_Broker_egress_CA") and "recorded by good" in out, out
    assert SECRET not in out
    got = hits("good", "/auth")
    assert got and got[-1][2].get("authorization") == "Bearer " + SECRET, got
    # substitutions in a header and the path
    out = get(sb, sid, "allowed.test", good, "/sub/%s/x" % PH)
    assert out.startswith("OK 200"), out
    path, hdrs = hits("good", "/sub/")[-1][1:]
    assert path == "/sub/%s/x" % SECRET and hdrs["x-token"] == SECRET, (path, hdrs)
    assert "authorization" not in hdrs

    # inside a decrypted connection to allowed.test, a request whose Host
    # names another bound host: not sent down that connection (the upstream
    # gets nothing), and denied.test's address does not prove that name
    SEEN.clear()
    out = get(sb, sid, "allowed.test", good, "/auth", host_header="denied.test:%d" % good)
    assert out.startswith("OK 503 issuer=Sandbox_Broker_egress_CA"), out[:300]
    assert not SEEN, SEEN

    # an unbound host: tunnelled, never decrypted: the sandbox sees the
    # upstream's own certificate (its own bundle does not trust it; the
    # upstream's CA does), and the placeholder arrives as written
    out = get(sb, sid, "other.test", good, "/sub/%s/y" % PH)
    assert out.startswith("FAIL") and "CERTIFICATE_VERIFY_FAILED" in out, out
    subprocess.run(["docker", "exec", "-i", in_sandbox_container(sb, sid), "sh", "-c",
                    "cat > /tmp/upca.pem"], input=open(os.path.join(up, "upca.pem"), "rb").read(),
                   check=True, capture_output=True)
    SEEN.clear()
    out = get(sb, sid, "other.test", good, "/sub/%s/y" % PH, cafile="/tmp/upca.pem")
    assert out.startswith("OK 200 issuer=vault_https_test_upstream_CA"), out
    path, hdrs = hits("good", "/sub/")[-1][1:]
    assert PH in path and hdrs["x-token"] == PH and "authorization" not in hdrs, (path, hdrs)

    # git clone over https from a private host (smart HTTP behind basic
    # auth): the password is injected, the sandbox holds none
    SEEN.clear()
    r = in_sandbox(sb.b, sid, "sh", "-c", "GIT_TERMINAL_PROMPT=0 git clone -q "
                   "https://allowed.test:%d/repo.git /tmp/clone 2>&1 && cat /tmp/clone/README"
                   % world["git"])
    assert "cloned over https with an injected password" in r.stdout, (r.stdout, r.stderr, SEEN)
    assert [s for s in SEEN if s[0] == "git" and "git-upload-pack" in s[1]], SEEN
    assert all(s[2].get("authorization") for s in SEEN if s[0] == "git"), SEEN

    # a bound host whose certificate Squid cannot verify: fails, and the
    # upstream never gets a request (nor the secret)
    SEEN.clear()
    out = get(sb, sid, "denied.test", bad, "/auth")
    # (Squid's error page, through the bumped connection: the upstream's
    # certificate did not verify)
    assert out.startswith("OK 503 issuer=Sandbox_Broker_egress_CA"), out
    assert "ERR_SECURE_CONNECT_FAIL" in out, out
    assert not [s for s in SEEN if s[0] == "bad"], SEEN

    # fail closed: the deployment's key changed (the sealed value no longer
    # opens): the decrypted request is Squid's error page, the upstream gets
    # nothing; the key back, it works again
    keyfile = world["key"]
    old = open(keyfile).read()
    with open(keyfile, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    SEEN.clear()
    out = get(sb, sid, "allowed.test", good, "/auth")
    assert out.startswith("OK 500 issuer=Sandbox_Broker_egress_CA"), out[:300]
    assert not SEEN, SEEN
    with open(keyfile, "w") as f:
        f.write(old)
    assert get(sb, sid, "allowed.test", good, "/auth").startswith("OK 200")
    assert hits("good", "/auth")[-1][2].get("authorization") == "Bearer " + SECRET

    # the sandbox holds the placeholder only
    gitb64 = base64.b64encode(("git:" + GIT_PW).encode()).decode()
    for secret in (SECRET, GIT_PW, gitb64):
        r = in_sandbox(sb.b, sid, "sh", "-c", "env; cat /proc/1/environ | tr '\\0' '\\n'; "
                       "grep -rsl '%s' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true"
                       % secret)
        assert secret not in r.stdout, r.stdout[-2000:]
    key = open(os.path.join(world["ca_dir"], "ca.key")).read().split("\n")[1]
    r = in_sandbox(sb.b, sid, "sh", "-c", "grep -rslF '%s' / --exclude-dir=proc --exclude-dir=sys "
                   "2>/dev/null; true" % key)
    assert not r.stdout.strip(), "the CA's key is inside the sandbox: " + r.stdout

    # the vault deleted: the next bound CONNECT is a tunnel again
    assert http_request(sb.b.port, "DELETE", vault, None, headers).status == 204
    out = get(sb, sid, "allowed.test", good, "/auth")
    assert out.startswith("FAIL") and "CERTIFICATE_VERIFY_FAILED" in out, out
    # and the rogue upstream itself answers (through the tunnel, to a client
    # that trusts its CA): what failed above was Squid's verification
    subprocess.run(["docker", "exec", "-i", in_sandbox_container(sb, sid), "sh", "-c",
                    "cat > /tmp/rogue.pem"], input=open(os.path.join(up, "rogue.pem"), "rb").read(),
                   check=True, capture_output=True)
    out = get(sb, sid, "denied.test", bad, "/auth", cafile="/tmp/rogue.pem")
    assert out.startswith("OK 200 issuer=rogue_test_CA") and "recorded by bad" in out, out
    assert "authorization" not in [s for s in SEEN if s[0] == "bad"][-1][2]

    # no log of the run holds the secret or the CA's key
    logs = [os.path.join(sq.d, "icap.log"), os.path.join(sq.state, "access.log"),
            os.path.join(sq.state, "cache.log")]
    for root, _dirs, files in os.walk(os.path.join(sb.b.state_dir, "logs")):
        logs += [os.path.join(root, f) for f in files]
    for p in logs:
        data = open(p, errors="replace").read() if os.path.exists(p) else ""
        assert SECRET not in data and key not in data and GIT_PW not in data, p
    osb.delete(sid)


def in_sandbox_container(sb, sid):
    from sdklib import container
    return container(sb.b, sid)["Id"]
