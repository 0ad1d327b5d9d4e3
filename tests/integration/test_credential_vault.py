"""The Credential Vault (issue 28, step 1): OpenSandbox 1.1.1's
`/credential-vault` routes of the egress API, served by the broker under
/v1/sandboxes/{id}/proxy/18080. Written as the attack: secrets go in and
never come back out (no answer, no error message, no log line of the run),
another tenant sees 404 and changes nothing, bad bodies are 400 and change
nothing. Asserts on the HTTP answers and on the world: the record's `vault`
field in Redis, gone when the vault is deleted and when the sandbox ends.

Injection on the wire (steps 2 and 3 of the issue) is not built yet:
docs/EGRESS.md, "Credential Vault".
"""

import json
import os

import pytest

from brokerlib import http_request
from sandboxlib import BASE_IMAGE, require_docker
from sdklib import KEY, OSB, python_sdk_python, run_script, start_osb_broker

require_docker()

# Every secret a test stores: none may ever appear in an answer or a log.
SECRETS = []


def secret(tag):
    s = "s3cr3t-%s-%s" % (tag, os.urandom(8).hex())
    SECRETS.append(s)
    return s


@pytest.fixture(scope="module")
def vault_key(tmp_path_factory):
    p = tmp_path_factory.mktemp("vault-key") / "vault.key"
    p.write_text(os.urandom(32).hex() + "\n")
    os.chmod(str(p), 0o600)
    return str(p)


@pytest.fixture(scope="module")
def mb(request, services, it_root, vault_key):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, VAULT_KEY_FILE=vault_key)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, mb):
    request.node._it_brokers = [mb]


@pytest.fixture
def one(mb):
    """A sandbox of tenant charlie (the vault needs no running container)."""
    o = OSB(mb, "charlie")
    sid = o.create(wait=False)
    yield o, sid
    o.delete(sid)


def stored(b, sid):
    v = b.redis.hget(b.key("sandbox:%s" % sid), "vault")
    return json.loads(v) if v else None


class Vault:
    """The vault routes of one sandbox through the broker's endpoint path."""

    def __init__(self, osb, sid):
        r = osb.endpoint(sid, 18080)
        assert r.status == 200, r
        self.b = osb.b
        self.base = "/" + r.json["endpoint"].split("/", 1)[1] + "/credential-vault"
        assert self.base == "/v1/sandboxes/%s/proxy/18080/credential-vault" % sid, r.json
        self.headers = dict(r.json.get("headers") or {})

    def call(self, method, sub="", body=None, headers=None, raw=False):
        h = dict(self.headers if headers is None else headers)
        if body is not None and not raw:
            body = json.dumps(body)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        r = http_request(self.b.port, method, self.base + sub, body, h)
        text = (r.raw or b"").decode("utf-8", "replace")
        for s in SECRETS:
            assert s not in text, (method, sub, r)
        return r


def check_sealed(b, sid, want):
    """The record holds every credential of want sealed ("v1:..."), none in
    clear: no value member, no secret anywhere in the field."""
    raw = b.redis.hget(b.key("sandbox:%s" % sid), "vault")
    for v in want.values():
        assert v not in raw
    creds = json.loads(raw)["credentials"]
    assert sorted(c["name"] for c in creds) == sorted(want)
    assert all("value" not in c and c["sealed"].startswith("v1:") for c in creds), creds
    return {c["name"]: c["sealed"] for c in creds}


def cred(name, value):
    return {"name": name, "source": {"type": "inline", "value": value}}


def binding(name, hosts, auth):
    return {"name": name, "match": {"hosts": hosts}, "auth": auth}


def names(lst):
    return sorted(e["name"] for e in lst)


def test_create_get_patch_delete_never_show_values(mb, one):
    o, sid = one
    v = Vault(o, sid)
    gh, npm = secret("gh"), secret("npm")
    assert v.call("GET").status == 404
    r = v.call("POST", body={
        "credentials": [cred("gh-token", gh), cred("npm", npm)],
        "bindings": [
            binding("github", ["Private.Test.", "*.private.test"],
                    {"type": "bearer", "credential": "gh-token"}),
            {"name": "registry", "match": {"hosts": ["npm.private.test"], "schemes": ["https"],
                                           "ports": [443], "methods": ["get"], "paths": ["/pkg"]},
             "auth": {"type": "passthrough", "substitutions": [
                 {"credential": "npm", "placeholder": "__NPM__", "in": ["header", "query"]}]}},
        ]})
    assert r.status == 201, r
    state = r.json
    assert state["revision"] == 1
    assert names(state["credentials"]) == ["gh-token", "npm"]
    assert all(c["sourceType"] == "inline" and c["revision"] == 1 and set(c) ==
               {"name", "sourceType", "revision"} for c in state["credentials"]), state
    b = {x["name"]: x for x in state["bindings"]}
    assert b["github"]["match"] == {"hosts": ["private.test", "*.private.test"]}, b
    assert b["github"]["auth"] == {"type": "bearer", "credential": "gh-token"}, b
    assert b["registry"]["match"] == {"hosts": ["npm.private.test"], "schemes": ["https"],
                                      "methods": ["GET"], "paths": ["/pkg"]}, b
    assert b["registry"]["auth"]["substitutions"] == [
        {"credential": "npm", "placeholder": "__NPM__", "in": ["header", "query"]}], b
    # The secrets are kept under the sandbox's record key, sealed with VAULT_KEY_FILE's key.
    rec = stored(mb, sid)
    check_sealed(mb, sid, {"gh-token": gh, "npm": npm})
    assert v.call("GET").json == state
    assert v.call("GET", "/credentials").json == {"revision": 1, "credentials": state["credentials"]}
    assert v.call("GET", "/bindings").json == {"revision": 1, "bindings": state["bindings"]}
    assert v.call("GET", "/credentials/npm").json == [c for c in state["credentials"]
                                                      if c["name"] == "npm"][0]
    assert v.call("GET", "/bindings/github").json == b["github"]
    assert v.call("GET", "/credentials/nope").status == 404
    assert v.call("GET", "/bindings/nope").status == 404
    # A second create is a conflict and changes nothing.
    assert v.call("POST", body={"credentials": [], "bindings": []}).status == 409
    assert stored(mb, sid) == rec
    # PATCH: replace a value, delete a binding and add one, atomically.
    gh2 = secret("gh2")
    r = v.call("PATCH", body={
        "expectedRevision": 1,
        "credentials": {"replace": [cred("gh-token", gh2)]},
        "bindings": {"delete": ["registry"],
                     "add": [binding("api", ["api.private.test"],
                                     {"type": "apiKey", "name": "X-Api-Key", "credential": "npm"})]}})
    assert r.status == 200, r
    assert r.json["revision"] == 2
    assert names(r.json["bindings"]) == ["api", "github"]
    assert {c["name"]: c["revision"] for c in r.json["credentials"]} == {"gh-token": 2, "npm": 1}
    rec = stored(mb, sid)
    sealed = check_sealed(mb, sid, {"gh-token": gh2, "npm": npm})
    assert sealed["npm"] == {c["name"]: c["sealed"] for c in stored(mb, sid)["credentials"]}["npm"]
    # A stale expectedRevision is a conflict: nothing changes.
    r = v.call("PATCH", body={"expectedRevision": 1, "credentials": {"delete": ["npm"]}})
    assert r.status == 409, r
    assert stored(mb, sid) == rec
    # A credential still used by a binding cannot go alone.
    r = v.call("PATCH", body={"credentials": {"delete": ["npm"]}})
    assert r.status == 400 and "api" in r.json["message"], r
    assert stored(mb, sid) == rec
    r = v.call("DELETE")
    assert r.status == 204, r
    assert stored(mb, sid) is None
    assert v.call("GET").status == 404
    assert v.call("DELETE").status == 404
    assert v.call("PATCH", body={"credentials": {"delete": ["npm"]}}).status == 404


BAD = {
    "not json": "{",
    "array": "[]",
    "no bindings": {"credentials": []},
    "credentials not array": {"credentials": {}, "bindings": []},
    "bad name": {"credentials": [cred("a b", "x")], "bindings": []},
    "name too long": {"credentials": [cred("a" * 65, "x")], "bindings": []},
    "empty value": {"credentials": [cred("a", "")], "bindings": []},
    "value with newline": {"credentials": [cred("a", "x\r\nX-Evil: 1")], "bindings": []},
    "value with NUL": {"credentials": [cred("a", "x\u0000y")], "bindings": []},
    "value too long": {"credentials": [cred("a", "x" * 4097)], "bindings": []},
    "source type": {"credentials": [{"name": "a", "source": {"type": "env", "value": "x"}}],
                    "bindings": []},
    "too many credentials": {"credentials": [cred("c%d" % i, "x") for i in range(33)],
                             "bindings": []},
    "duplicate credential": {"credentials": [cred("a", "x"), cred("a", "y")], "bindings": []},
    "unknown credential": {"credentials": [cred("a", "x")],
                           "bindings": [binding("b", ["h.test"], {"type": "bearer", "credential": "z"})]},
    "bad auth type": {"credentials": [cred("a", "x")],
                      "bindings": [binding("b", ["h.test"], {"type": "magic", "credential": "a"})]},
    "no hosts": {"credentials": [cred("a", "x")],
                 "bindings": [binding("b", [], {"type": "bearer", "credential": "a"})]},
    "ip host": {"credentials": [cred("a", "x")],
                "bindings": [binding("b", ["10.0.0.1"], {"type": "bearer", "credential": "a"})]},
    "bad port": {"credentials": [cred("a", "x")],
                 "bindings": [{"name": "b", "match": {"hosts": ["h.test"], "ports": [8080]},
                               "auth": {"type": "bearer", "credential": "a"}}]},
    "bad scheme": {"credentials": [cred("a", "x")],
                   "bindings": [{"name": "b", "match": {"hosts": ["h.test"], "schemes": ["ftp"]},
                                 "auth": {"type": "bearer", "credential": "a"}}]},
    "host header": {"credentials": [cred("a", "x")],
                    "bindings": [binding("b", ["h.test"], {"type": "apiKey", "name": "Host",
                                                           "credential": "a"})]},
    "custom content-length": {"credentials": [cred("a", "x")],
                              "bindings": [binding("b", ["h.test"], {"type": "customHeaders", "headers": [
                                  {"name": "Content-Length", "credential": "a"}]})]},
    "passthrough without substitutions": {"credentials": [cred("a", "x")],
                                          "bindings": [binding("b", ["h.test"], {"type": "passthrough"})]},
    "bad surface": {"credentials": [cred("a", "x")],
                    "bindings": [binding("b", ["h.test"], {"type": "passthrough", "substitutions": [
                        {"credential": "a", "placeholder": "__A__", "in": ["cookie"]}]})]},
    "placeholder with space": {"credentials": [cred("a", "x")],
                               "bindings": [binding("b", ["h.test"], {"type": "passthrough", "substitutions": [
                                   {"credential": "a", "placeholder": "a b", "in": ["body"]}]})]},
}


def test_bad_bodies_are_400_and_change_nothing(mb, one):
    o, sid = one
    v = Vault(o, sid)
    keep = secret("keep")
    assert v.call("POST", body={"credentials": [cred("k", keep)], "bindings": []}).status == 201
    before = stored(mb, sid)
    assert v.call("DELETE").status == 204
    for name, body in sorted(BAD.items()):
        r = v.call("POST", body=body, raw=isinstance(body, str))
        assert r.status == 400 and r.json.get("message"), (name, r)
        assert stored(mb, sid) is None, name
    assert v.call("POST", body={"credentials": [cred("k", keep)], "bindings": []}).status == 201
    before = stored(mb, sid)
    for name, body in sorted(BAD.items()):
        if name == "no bindings":
            continue  # as a PATCH: nothing to add, a valid no-op
        if isinstance(body, dict) and "credentials" in body and isinstance(body["credentials"], list):
            patch = {"credentials": {"add": body["credentials"]},
                     "bindings": {"add": body.get("bindings", [])}}
        else:
            patch = body
        r = v.call("PATCH", body=patch, raw=isinstance(patch, str))
        assert r.status == 400 and r.json.get("message"), (name, r)
        assert stored(mb, sid) == before, name
    for patch in ({"credentials": {"delete": ["nope"]}}, {"credentials": {"replace": [cred("nope", "x")]}},
                  {"credentials": {"add": [cred("k", "x")]}}, {"expectedRevision": "1"},
                  {"bindings": {"delete": [7]}}, {"credentials": []}):
        r = v.call("PATCH", body=patch)
        assert r.status == 400, (patch, r)
        assert stored(mb, sid) == before, patch
    # Values are never echoed in an error, even when they are what is wrong.
    bad_value = secret("bad") + "\n"
    r = v.call("POST", body={"credentials": [cred("x", bad_value)], "bindings": []})
    assert r.status == 409 or r.status == 400
    r = v.call("PATCH", body={"credentials": {"add": [cred("x y", bad_value)]}})
    assert r.status == 400 and bad_value.strip() not in r.json["message"], r
    assert v.call("POST", body="x" * (300 * 1024), raw=True).status in (400, 413)
    assert stored(mb, sid) == before


def test_other_tenant_is_404_and_changes_nothing(mb, one):
    o, sid = one
    v = Vault(o, sid)
    s = secret("iso")
    assert v.call("POST", body={"credentials": [cred("k", s)], "bindings": [
        binding("b", ["h.test"], {"type": "bearer", "credential": "k"})]}).status == 201
    before = stored(mb, sid)
    other = {"OPEN-SANDBOX-API-KEY": KEY["delta"]}
    for method, sub, body in (("GET", "", None), ("GET", "/credentials", None),
                              ("GET", "/credentials/k", None), ("GET", "/bindings", None),
                              ("GET", "/bindings/b", None),
                              ("POST", "", {"credentials": [], "bindings": []}),
                              ("PATCH", "", {"credentials": {"replace": [cred("k", "evil")]}}),
                              ("DELETE", "", None)):
        assert v.call(method, sub, body, headers=other).status == 404, (method, sub)
        assert v.call(method, sub, body, headers={}).status == 401, (method, sub)
    assert stored(mb, sid) == before
    # charlie's own key still works meanwhile.
    assert v.call("GET", headers={"OPEN-SANDBOX-API-KEY": KEY["charlie"]}).status == 200


def test_unusable_key_refuses_writes_and_changes_nothing(mb, one, vault_key):
    """VAULT_KEY_FILE is read at each write: a key file others may read is
    refused (503, nothing stored, the reason logged without the key)."""
    o, sid = one
    v = Vault(o, sid)
    key = open(vault_key).read().strip()
    os.chmod(vault_key, 0o644)
    try:
        r = v.call("POST", body={"credentials": [cred("k", secret("nokey"))], "bindings": []})
        assert r.status == 503 and r.json["code"] == "SERVICE_UNAVAILABLE", r
        assert stored(mb, sid) is None
    finally:
        os.chmod(vault_key, 0o600)
    assert v.call("POST", body={"credentials": [cred("k", secret("key"))], "bindings": []}).status == 201
    assert "owner only" in mb.logs("fcgi-execd") + mb.logs("fcgi-execd-lane")
    for name in ("fcgi-execd", "fcgi-execd-lane"):
        assert key not in mb.logs(name)


def test_vault_ends_with_its_sandbox(mb):
    o = OSB(mb, "charlie")
    sid = o.create(wait=False)
    v = Vault(o, sid)
    assert v.call("POST", body={"credentials": [cred("k", secret("end"))], "bindings": []}).status == 201
    assert stored(mb, sid) is not None
    o.delete(sid)
    import time
    deadline = time.time() + 120
    while time.time() < deadline and mb.redis.hget(mb.key("sandbox:%s" % sid), "state") != "Terminated":
        time.sleep(0.5)
    assert mb.redis.hget(mb.key("sandbox:%s" % sid), "state") == "Terminated"
    assert stored(mb, sid) is None
    assert v.call("GET", headers={"OPEN-SANDBOX-API-KEY": KEY["charlie"]}).status == 404


SDK_SCRIPT = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.sandboxes import (Credential, CredentialBinding, CredentialMutationSet,
                                          CredentialBindingMutationSet)

cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http",
                           request_timeout=timedelta(seconds=60))
sb = SandboxSync.create(sys.argv[3], connection_config=cfg, timeout=timedelta(minutes=5))
out = {"id": sb.id}
try:
    cv = sb.credential_vault
    st = cv.create(credentials=[Credential(name="gh", source={"type": "inline", "value": sys.argv[4]})],
                   bindings=[CredentialBinding(name="github", match={"hosts": ["private.test"]},
                                               auth={"type": "basic", "credential": "gh"})])
    out["created"] = st.model_dump(mode="json", by_alias=True)
    out["list_credentials"] = [c.model_dump(mode="json", by_alias=True) for c in cv.list_credentials()]
    out["get_credential"] = cv.get_credential("gh").model_dump(mode="json", by_alias=True)
    out["list_bindings"] = [b.model_dump(mode="json", by_alias=True) for b in cv.list_bindings()]
    out["get_binding"] = cv.get_binding("github").model_dump(mode="json", by_alias=True)
    st = cv.patch(expected_revision=1,
                  credentials=CredentialMutationSet(add=[Credential(name="npm",
                      source={"type": "inline", "value": sys.argv[5]})]),
                  bindings=CredentialBindingMutationSet(add=[CredentialBinding(name="npm",
                      match={"hosts": ["npm.private.test"]},
                      auth={"type": "passthrough", "substitutions": [
                          {"credential": "npm", "placeholder": "__NPM__", "in": ["header"]}]})]))
    out["patched"] = st.model_dump(mode="json", by_alias=True)
    out["get"] = cv.get().model_dump(mode="json", by_alias=True)
    cv.delete()
    try:
        cv.get()
        out["after_delete"] = "still there"
    except Exception as e:
        out["after_delete"] = type(e).__name__
finally:
    sb.kill()
print(json.dumps(out))
"""


def test_python_sdk_credential_vault_calls(mb, tmp_path):
    py = python_sdk_python()
    script = tmp_path / "vault_sdk.py"
    script.write_text(SDK_SCRIPT)
    gh, npm = secret("sdk-gh"), secret("sdk-npm")
    run = run_script([py, str(script), "127.0.0.1:%d" % mb.port, KEY["foxtrot"], BASE_IMAGE, gh, npm],
                     env={})
    assert run.rc == 0, run.explain()
    for s in (gh, npm):
        assert s not in run.out and s not in run.err
    out = json.loads(run.out.strip().splitlines()[-1])
    assert out["created"]["revision"] == 1, out
    assert out["list_credentials"] == [{"name": "gh", "sourceType": "inline", "revision": 1}], out
    assert out["get_credential"] == out["list_credentials"][0], out
    assert out["get_binding"]["auth"]["type"] == "basic", out
    assert out["get_binding"]["match"]["hosts"] == ["private.test"], out
    assert out["patched"]["revision"] == 2, out
    assert sorted(c["name"] for c in out["get"]["credentials"]) == ["gh", "npm"], out
    assert sorted(b["name"] for b in out["get"]["bindings"]) == ["github", "npm"], out
    assert out["after_delete"] != "still there", out


def test_zz_no_secret_in_any_log_of_the_run(mb, vault_key):
    """Runs last in this file: every secret the tests stored, searched in
    every log file of the broker's run (fcgi, supervisor, nginx access and
    error logs), and the deployment's key too."""
    assert SECRETS, "the tests above stored no secret"
    needles = SECRETS + [open(vault_key).read().strip()]
    found = []
    for root, _dirs, files in os.walk(mb.state_dir):
        for f in files:
            p = os.path.join(root, f)
            if not (f.endswith(".log") or "log" in root.split(os.sep)[-1]):
                continue
            try:
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            found += ["%s in %s" % (s, p) for s in needles if s.encode() in data]
    assert not found, found
    assert mb.logs("fcgi") or os.listdir(os.path.join(mb.state_dir, "logs")), "no logs to search"
