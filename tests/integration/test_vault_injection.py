"""Credential Vault injection on the wire for plain HTTP (issue 28, step 2):
a sandbox's request through Squid to a host a binding names leaves with the
secret where the binding says (an auth header, the placeholder replaced in a
header, the path, the query, a JSON body); the sandbox itself only ever holds
the placeholder. Written as the attack, two tenants at once: the sandbox
sends the placeholder to a host no binding names (it leaves as written),
looks for the secret in its environment and files; another tenant's sandbox
sending the same requests at the same time gets nothing injected; after the
vault is deleted the next request carries the placeholder. The secret is in
no log of the run. Real Docker sandboxes, Squid, the relay, the helper, the
injector (sandbox-vault-icap), Redis; the upstream is the test's own HTTP
server on 127.0.0.1 behind names of the test's own resolver.

HTTPS (Squid decrypting CONNECTs to bound hosts): test_vault_https.py.
"""

import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

from brokerlib import free_port, http_request, wait_until
from sandboxlib import docker_broker, require_docker  # noqa: F401
from test_egress import Squid  # noqa: E402  (skips the module without squid)

require_docker()

SECRET = "vlt-" + os.urandom(12).hex()  # unreserved characters: URL-encoding leaves it as is
PH = "__VAULT_TOKEN__"
SEEN = []  # (path, headers, body) of every request the upstream got


class Recorder(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        SEEN.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        out = b"recorded"
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = handle_one

    def log_message(self, *a):
        pass


@pytest.fixture
def world(docker_broker):  # noqa: F811
    from sdklib import API_KEYS_ENV
    d = tempfile.mkdtemp(prefix="sbvault-", dir="/tmp")
    os.chmod(d, 0o755)
    key = os.path.join(d, "vault.key")
    with open(key, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(key, 0o600)
    port = free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sb = docker_broker(EGRESS_DIR=os.path.join(d, "egress"), OPENSANDBOX_API_KEYS=API_KEYS_ENV,
                       VAULT_KEY_FILE=key, BROKER_CAPACITY=3)
    sq = Squid(d, sb.b.services.redis_port, sb.b.prefix, [port], True, vault_key=key)
    sq.start()
    yield sb, sq, port, key
    sq.stop()
    srv.shutdown()
    for log in (sq.cache_log(), open(os.path.join(d, "icap.log"), errors="replace").read()):
        assert "AddressSanitizer" not in log and "runtime error:" not in log, log[-4000:]
    shutil.rmtree(d, ignore_errors=True)


REQ = r"""
import json, sys, urllib.request
url, body = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
req = urllib.request.Request(url, data=body.encode() if body else None,
                             headers={"X-Token": sys.argv[3] if len(sys.argv) > 3 else "-",
                                      "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=15) as r:
        print("OK", r.status, r.read().decode()[:200])
except Exception as e:
    print("FAIL", type(e).__name__, str(e)[:160].replace("\n", " "))
"""


def in_sandbox(b, sid, *argv):
    from sdklib import container
    c = container(b, sid)
    assert c and c["State"]["Running"], c
    r = subprocess.run(["docker", "exec", c["Id"]] + list(argv), capture_output=True, text=True,
                       timeout=60)
    return r


def fetch(b, sid, url, body=None, token=PH):
    args = ["python3", "-c", REQ, url, body or "", token]
    r = in_sandbox(b, sid, *args)
    assert r.returncode == 0, r
    return r.stdout.strip()


def last(path_part):
    hits = [s for s in SEEN if path_part in s[0]]
    assert hits, (path_part, [s[0] for s in SEEN])
    return hits[-1]


def test_injection_plain_http_two_tenants(world):
    from sdklib import OSB
    sb, sq, port, key = world
    policy = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "allowed.test"},
                                                  {"action": "allow", "target": "other.test"}]}
    alpha, bravo = OSB(sb.b, "alpha"), OSB(sb.b, "bravo")
    sid = alpha.create(networkPolicy=policy)
    other = bravo.create(networkPolicy=policy)
    ep = alpha.endpoint(sid, 18080)
    vault = "/" + ep.json["endpoint"].split("/", 1)[1] + "/credential-vault"
    headers = dict(ep.json["headers"], **{"Content-Type": "application/json"})
    r = http_request(sb.b.port, "POST", vault, json.dumps({
        "credentials": [{"name": "tok", "source": {"type": "inline", "value": SECRET}}],
        "bindings": [
            {"name": "auth", "match": {"hosts": ["allowed.test"], "paths": ["/auth"]},
             "auth": {"type": "bearer", "credential": "tok"}},
            {"name": "subst", "match": {"hosts": ["allowed.test"], "paths": ["/sub/*"]},
             "auth": {"type": "passthrough", "substitutions": [
                 {"credential": "tok", "placeholder": PH, "in": ["header", "path", "query", "body"]}]}},
        ]}), headers)
    assert r.status == 201, r
    assert SECRET not in (r.raw or b"").decode()
    up = "http://allowed.test:%d" % port
    wait_until(lambda: fetch(sb.b, sid, up + "/auth").startswith("OK 200"), 20, interval=0.3,
               desc="the sandbox's egress up")

    # bearer: the header is set by the injector, the sandbox sent none
    SEEN.clear()
    assert fetch(sb.b, sid, up + "/auth").startswith("OK 200")
    assert last("/auth")[1].get("authorization") == "Bearer " + SECRET
    # passthrough: the placeholder replaced in a header, the path, the query and a JSON body
    out = fetch(sb.b, sid, up + "/sub/%s/x?q=%s" % (PH, PH), json.dumps({"t": PH}))
    assert out.startswith("OK 200"), out
    path, hdrs, body = last("/sub/")
    assert path == "/sub/%s/x?q=%s" % (SECRET, SECRET), path
    assert hdrs["x-token"] == SECRET and json.loads(body) == {"t": SECRET}, (hdrs, body)
    assert "authorization" not in hdrs  # the bearer binding's paths do not cover /sub/

    # a bound host, a path no binding covers: the request (body included) arrives as sent
    out = fetch(sb.b, sid, up + "/plain/%s" % PH, json.dumps({"t": PH}))
    assert out.startswith("OK 200"), out
    path, hdrs, body = last("/plain/")
    assert PH in path and hdrs["x-token"] == PH and json.loads(body) == {"t": PH}, (path, hdrs, body)
    assert "authorization" not in hdrs

    # the same requests to a host no binding names leave as written
    out = fetch(sb.b, sid, "http://other.test:%d/sub/%s/x?q=%s" % (port, PH, PH), json.dumps({"t": PH}))
    assert out.startswith("OK 200"), out
    path, hdrs, body = last("/sub/")
    assert SECRET not in json.dumps([path, hdrs, body]) and PH in path and hdrs["x-token"] == PH

    # another tenant's sandbox, at the same time, the bound host: nothing injected
    wait_until(lambda: fetch(sb.b, other, up + "/auth").startswith("OK 200"), 20, interval=0.3,
               desc="the other sandbox's egress up")
    SEEN.clear()
    assert fetch(sb.b, other, up + "/sub/%s/y" % PH).startswith("OK 200")
    path, hdrs, _ = last("/sub/")
    assert PH in path and hdrs["x-token"] == PH and "authorization" not in hdrs

    # the sandbox holds the placeholder only: not in its environment, nor its files
    for s in (sid, other):
        r = in_sandbox(sb.b, s, "sh", "-c", "env; cat /proc/1/environ | tr '\\0' '\\n'; "
                       "grep -rsl '%s' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true" % SECRET)
        assert SECRET not in r.stdout, r.stdout[-2000:]

    # another local process cannot use the injector: without Squid's key, 403 and no secret
    import socket
    head = "GET http://allowed.test:%d/auth HTTP/1.1\r\nHost: allowed.test\r\n\r\n" % port
    ip = ":".join(sid[i:i + 4] for i in range(0, 32, 4))
    for extra in ("", "X-Vault-Key: %s\r\n" % ("0" * 32)):
        req = ("REQMOD icap://127.0.0.1:%d/vault ICAP/1.0\r\nHost: 127.0.0.1\r\nX-Client-IP: %s\r\n%s"
               "Encapsulated: req-hdr=0, null-body=%d\r\n\r\n%s" % (sq.icap_port, ip, extra, len(head), head))
        with socket.create_connection(("127.0.0.1", sq.icap_port), timeout=10) as s:
            s.sendall(req.encode())
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        assert got.startswith(b"ICAP/1.0 403") and SECRET.encode() not in got, got

    # the vault deleted: the next request carries the placeholder, no auth
    assert http_request(sb.b.port, "DELETE", vault, None, headers).status == 204
    SEEN.clear()
    assert fetch(sb.b, sid, up + "/sub/%s/z" % PH).startswith("OK 200")
    assert fetch(sb.b, sid, up + "/auth").startswith("OK 200")
    assert PH in last("/sub/")[0] and "authorization" not in last("/auth")[1]

    # no log of the run holds the secret, nor the key
    keyhex = open(key).read().strip()
    logs = [os.path.join(sq.d, "icap.log"), os.path.join(sq.state, "access.log"),
            os.path.join(sq.state, "cache.log")]
    for root, _dirs, files in os.walk(os.path.join(sb.b.state_dir, "logs")):
        logs += [os.path.join(root, f) for f in files]
    for p in logs:
        data = open(p, errors="replace").read() if os.path.exists(p) else ""
        assert SECRET not in data and keyhex not in data, p
    assert "binding(s) applied" in open(os.path.join(sq.d, "icap.log")).read()
    alpha.delete(sid)
    bravo.delete(other)
