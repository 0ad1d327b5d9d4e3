"""Sandbox access tokens die with the API key that fetched them, and can be
rotated (issue 24, M4).

The attack: a tenant's key is revoked (leaked, an employee gone) but a
sandbox token (the X-EXECD-ACCESS-TOKEN that GET /v1/sandboxes/{id}/endpoints/
{port} hands out) fetched with it earlier is still held by the attacker.
Before the fix it kept running commands as root in the sandbox, and there was
no way to rotate it. Now each key gets a token of its own for a sandbox
(lib/store/lua/token_issue.lua), every use checks that key is still live
(token_check.lua: the data plane's one Redis round trip), and
POST /v1/sandboxes/{id}/token/rotate replaces every token of a sandbox.

Checked on every door a token opens: execd commands, files (upload,
download), /ping, the egress API (port 18080) and a port endpoint (ingress,
nginx's auth_request); that nothing the refused token asked for ran; that
another key of the same tenant keeps working with its own token; that another
tenant, throughout, keeps its own sandbox and cannot rotate ours (404).
"""

import json
import os
import subprocess
import uuid

import pytest

from brokerlib import BUILD_DIR, base_env, http_request, wait_until
from sandboxlib import SB, require_docker
from sdklib import KEY, OSB, start_osb_broker
from test_execd import Execd, multipart

require_docker()

FILES_PORT = 8000  # python3 -m http.server in the sandbox, for the port endpoint


@pytest.fixture(scope="module")
def tb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, tb):
    request.node._it_brokers = [tb]


def admin(b, *args):
    env = base_env()
    env.update({"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(b.services.redis_port),
                "REDIS_KEY_PREFIX": b.prefix})
    cp = subprocess.run([os.path.join(BUILD_DIR, "broker-admin")] + list(args), env=env,
                        capture_output=True, timeout=30)
    assert cp.returncode == 0, cp
    return cp.stdout.decode()


def new_key(b, tenant="alpha"):
    """A fresh key of tenant: {"id", "key"}."""
    o = json.loads(admin(b, "key", "create", tenant, "--create-tenant", "--name",
                         "t" + uuid.uuid4().hex[:8], "--json"))
    return o


def as_key(b, key):
    o = OSB(b, "alpha")
    o.key = key
    return o


def token(o, sid, port=44772):
    r = o.endpoint(sid, port)
    assert r.status == 200, r
    return r.json["headers"]["X-EXECD-ACCESS-TOKEN"]


def run(ex, script, tok=None):
    """A command through execd with token tok (default ex's): (status, stdout)."""
    saved = ex.token
    if tok is not None:
        ex.token = tok
    try:
        st, _, events = ex.command_stream({"command": script})
    finally:
        ex.token = saved
    if st != 200:
        return st, events
    return st, "".join(e.get("text", "") for e in events if e.get("type") == "stdout")


def works(ex, tok=None):
    st, out = run(ex, "echo alive-$((40+2)); id -u", tok)
    assert st == 200 and out == "alive-42\n0\n", (st, out)


def ingress(b, sid, tok, path="/hello.txt"):
    return http_request(b.port, "GET", "/v1/sandboxes/%s/proxy/%d%s" % (sid, FILES_PORT, path), None,
                        {"X-EXECD-ACCESS-TOKEN": tok}, 60)


def refused(r, status):
    """A refusal as the API writes it: status, a JSON error body. r is an
    Execd.request answer (status, headers, raw) or a brokerlib Resp."""
    st, raw = (r.status, r.raw) if hasattr(r, "raw") else (r[0], r[2])
    assert st == status, (st, raw)
    body = json.loads(raw)
    assert body["code"] and body["message"], body


class Bystander:
    """Another tenant's sandbox and token, checked during the attack."""

    def __init__(self, b):
        self.o = OSB(b, "bravo")
        self.sid = self.o.create()
        self.ex = Execd(SB(b), self.sid, token(self.o, self.sid))

    def check(self):
        works(self.ex)


def test_a_revoked_key_s_tokens_are_refused_at_once_on_every_door(tb):
    other = Bystander(tb)
    k1, k2 = new_key(tb), new_key(tb)
    o1, o2 = as_key(tb, k1["key"]), as_key(tb, k2["key"])
    sid = o1.create()
    t1, t2 = token(o1, sid), token(o2, sid)
    assert t1 != t2  # a token per key
    assert token(o1, sid) == t1 and token(o1, sid, 18080) == t1  # the same one every time
    ex = Execd(SB(tb), sid, t1)
    works(ex, t1)
    works(ex, t2)
    st, out = run(ex, "mkdir -p /workspace/www && echo hello > /workspace/www/hello.txt && "
                      "(cd /workspace/www && nohup python3 -m http.server %d --bind 127.0.0.1 "
                      ">/dev/null 2>&1 &) && echo started" % FILES_PORT)
    assert st == 200 and "started" in out, out
    wait_until(lambda: ingress(tb, sid, t1).status == 200, 30, 0.2, "the sandbox's http.server answers")
    assert ingress(tb, sid, t1).raw == b"hello\n"

    admin(tb, "key", "revoke", k1["id"])

    # every door refuses t1 at once, with a JSON 401, and nothing runs
    st, body = run(ex, "touch /workspace/pwned-command", t1)
    assert st == 401 and body["code"] == "UNAUTHORIZED" and "revoked" in body["message"], body
    up, ctype = multipart([("/workspace/pwned-upload", b"x", {})])
    refused(ex.request("POST", "/files/upload", up, {"Content-Type": ctype}, token=t1), 401)
    refused(ex.request("GET", "/files/download?path=/workspace/www/hello.txt", token=t1), 401)
    refused(ex.request("GET", "/ping", token=t1), 401)
    refused(ex.request("GET", "/policy", token=t1, port=18080), 401)
    refused(ex.request("POST", "/session", {}, token=t1), 401)
    r = ingress(tb, sid, t1)
    refused(r, 401)
    assert b"hello" not in r.raw
    # a live key of the tenant beside it does not make the dead token good
    refused(ex.request("GET", "/ping", token=t1, headers={"OPEN-SANDBOX-API-KEY": k2["key"]}), 401)
    # the revoked key itself gets no new token
    assert o1.endpoint(sid, 44772).status == 401
    # the same tenant's other key works with its own token, everywhere
    works(ex, t2)
    st, out = run(ex, "ls /workspace", t2)
    assert st == 200 and "pwned" not in out, out  # nothing t1 asked for ran
    assert ex.request("GET", "/files/download?path=/workspace/www/hello.txt", token=t2)[0] == 200
    assert ingress(tb, sid, t2).raw == b"hello\n"
    assert token(o2, sid) == t2
    other.check()

    # a rotated key (broker-admin key rotate) takes its tokens with it too
    rot = json.loads(admin(tb, "key", "rotate", k2["id"], "--json"))
    refused(ex.request("GET", "/ping", token=t2), 401)
    t3 = token(as_key(tb, rot["key"]), sid)
    assert t3 not in (t1, t2)
    works(ex, t3)
    other.check()
    assert as_key(tb, rot["key"]).delete(sid).status == 204


def test_rotation_refuses_every_old_token_and_hands_out_new_ones(tb):
    other = Bystander(tb)
    k1, k2 = new_key(tb), new_key(tb)
    o1, o2 = as_key(tb, k1["key"]), as_key(tb, k2["key"])
    sid = o1.create()
    t1, t2 = token(o1, sid), token(o2, sid)
    ex = Execd(SB(tb), sid, t1)
    works(ex, t1)

    # another tenant cannot rotate it: 404 exactly like an unknown id, nothing changes
    r = other.o.call("POST", "/sandboxes/%s/token/rotate" % sid)
    assert r.status == 404 and r.json["code"] == "SANDBOX_NOT_FOUND", r
    r = other.o.call("POST", "/sandboxes/%s/token/rotate" % ("f" * 32))
    assert r.status == 404 and r.json["code"] == "SANDBOX_NOT_FOUND", r
    works(ex, t1)
    works(ex, t2)
    # nor anybody without a key
    r = http_request(tb.port, "POST", "/v1/sandboxes/%s/token/rotate" % sid, None,
                     {"X-EXECD-ACCESS-TOKEN": t1})
    assert r.status == 401, r

    r = o1.call("POST", "/sandboxes/%s/token/rotate" % sid)
    assert r.status == 200 and r.json["revokedTokens"] == 2, r
    n1 = r.json["headers"]["X-EXECD-ACCESS-TOKEN"]
    assert n1 not in (t1, t2)
    # the old tokens, of both keys, are refused; nothing they ask for runs
    for old in (t1, t2):
        st, body = run(ex, "touch /workspace/pwned-after-rotate", old)
        assert st == 404 and body["code"] == "SANDBOX_NOT_FOUND", body
        refused(ex.request("GET", "/ping", token=old), 404)
    works(ex, n1)
    st, out = run(ex, "ls /workspace", n1)
    assert st == 200 and "pwned" not in out, out
    # the endpoint hands out the new ones: the rotating key's, and a fresh one for the other key
    assert token(o1, sid) == n1
    n2 = token(o2, sid)
    assert n2 not in (t1, t2, n1)
    works(ex, n2)
    other.check()
    assert o1.delete(sid).status == 204


def test_a_token_of_another_sandbox_or_tenant_opens_nothing(tb):
    # tokens are per sandbox as before: bravo's token on alpha's sandbox, and
    # alpha's on bravo's, are unknown ids (404), with or without a key
    other = Bystander(tb)
    o = OSB(tb, "alpha")
    sid = o.create()
    t = token(o, sid)
    ex = Execd(SB(tb), sid, t)
    refused(ex.request("GET", "/ping", token=other.ex.token), 404)
    refused(other.ex.request("GET", "/ping", token=t), 404)
    refused(ex.request("GET", "/ping", token=other.ex.token,
                       headers={"OPEN-SANDBOX-API-KEY": KEY["bravo"]}), 404)
    refused(ex.request("GET", "/ping", token="x" * 200), 404)  # longer than any token
    works(ex)
    other.check()
    assert o.delete(sid).status == 204
