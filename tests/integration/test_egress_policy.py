"""The egress POLICY side (issue 14): OpenSandbox `networkPolicy` on create,
the egress API of egress-api.yaml (GET/PATCH/DELETE /policy) served by the
broker under /v1/sandboxes/{id}/proxy/18080, and EGRESS_DEFAULT /
EGRESS_POLICY_<MODE> for lease sandboxes. Asserts on the HTTP answers and on
the world: the record's `egress_policy` field in Redis (what the Squid helper
reads, docs/EGRESS.md) and that refused creates leave nothing behind.

The data path (the proxy actually letting traffic out) is test_egress.py.
"""

import json
import threading
import time

import pytest

from brokerlib import http_request
from sandboxlib import BASE_IMAGE, require_docker
from sdklib import KEY, OSB, check_osb_error, python_sdk_python, run_script, \
    start_osb_broker

require_docker()

DEFAULT = {"defaultAction": "deny",
           "egress": [{"action": "allow", "target": "pypi.org"}]}
EXCLUSIVE = {"defaultAction": "deny",
             "egress": [{"action": "allow", "target": "*.github.com"}]}


@pytest.fixture(scope="module")
def mb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=8,
                            EGRESS_DEFAULT=json.dumps(DEFAULT))


@pytest.fixture(autouse=True)
def _logs_on_failure(request, mb):
    request.node._it_brokers = [mb]


@pytest.fixture
def made(mb):
    ids = []
    yield ids
    for tenant, sid in ids:
        OSB(mb, tenant).delete(sid)


def stored(b, sid):
    v = b.redis.hget(b.key("sandbox:%s" % sid), "egress_policy")
    return json.loads(v) if v else None


class Egress:
    """The egress API of one sandbox through the broker's endpoint path."""

    def __init__(self, osb, sid):
        r = osb.endpoint(sid, 18080)
        assert r.status == 200, r
        self.b = osb.b
        self.path = "/" + r.json["endpoint"].split("/", 1)[1] + "/policy"
        assert self.path == "/v1/sandboxes/%s/proxy/18080/policy" % sid, r.json
        self.headers = dict(r.json.get("headers") or {})
        assert self.headers, r.json

    def call(self, method, body=None, headers=None, raw=False):
        h = dict(self.headers if headers is None else headers)
        if body is not None and not raw:
            body = json.dumps(body)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        return http_request(self.b.port, method, self.path, body, h)

    def get(self, **kw):
        return self.call("GET", **kw)

    def patch(self, rules, **kw):
        return self.call("PATCH", rules, **kw)

    def delete(self, targets, **kw):
        return self.call("DELETE", targets, **kw)


def check_status(r, policy=None):
    assert r.status == 200, r
    assert r.json["status"] == "ok", r.json
    assert r.json["enforcementMode"] == "proxy", r.json
    want_mode = "allow_all" if r.json["policy"]["defaultAction"] == "allow" else "deny_all"
    assert r.json["mode"] == want_mode, r.json
    assert set(r.json) <= {"status", "mode", "enforcementMode", "reason", "policy"}, r.json
    if policy is not None:
        assert r.json["policy"] == policy, r.json
    return r.json["policy"]


def rules(*pairs):
    return [{"action": a, "target": t} for a, t in pairs]


# ------------------------------------------------------------- create

def test_network_policy_on_create_is_stored_normalized_and_served(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create(networkPolicy={"defaultAction": "deny", "egress": rules(
        ("allow", "PyPI.org."), ("allow", "*.Example.COM"), ("deny", "pypi.org"))})
    made.append(("alpha", sid))
    want = {"defaultAction": "deny",
            "egress": rules(("allow", "pypi.org"), ("allow", "*.example.com"))}
    assert stored(mb, sid) == want
    check_status(Egress(o, sid).get(), want)


def test_create_without_network_policy_gets_egress_default(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create()
    made.append(("alpha", sid))
    assert stored(mb, sid) == DEFAULT
    sid2 = o.create(networkPolicy=None)
    made.append(("alpha", sid2))
    assert stored(mb, sid2) == DEFAULT


def test_empty_network_policy_is_allow_all_as_the_spec_says(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create(networkPolicy={}, wait=False)
    made.append(("alpha", sid))
    assert stored(mb, sid) == {"defaultAction": "allow", "egress": []}
    sid2 = o.create(networkPolicy={"egress": []}, wait=False)
    made.append(("alpha", sid2))
    assert stored(mb, sid2) == {"defaultAction": "deny", "egress": []}


BAD_POLICIES = {
    "not an object": ["pypi.org"],
    "string": "deny",
    "unknown member": {"defaultAction": "deny", "ingress": []},
    "bad defaultAction": {"defaultAction": "block"},
    "egress not an array": {"egress": {"action": "allow", "target": "a.com"}},
    "rule unknown member": {"egress": [{"action": "allow", "target": "a.com", "port": 443}]},
    "rule without target": {"egress": [{"action": "allow"}]},
    "rule bad action": {"egress": [{"action": "permit", "target": "a.com"}]},
    "ip target": {"egress": [{"action": "allow", "target": "10.0.0.1"}]},
    "cidr target": {"egress": [{"action": "allow", "target": "10.0.0.0/8"}]},
    "ipv6 target": {"egress": [{"action": "allow", "target": "::1"}]},
    "bad wildcard": {"egress": [{"action": "allow", "target": "a.*.com"}]},
    "bad name": {"egress": [{"action": "allow", "target": "a b.com"}]},
    "long label": {"egress": [{"action": "allow", "target": "a" * 64 + ".com"}]},
    "too many rules": {"egress": [{"action": "allow", "target": "h%d.a.com" % i}
                                  for i in range(257)]},
}


@pytest.mark.parametrize("name", sorted(BAD_POLICIES))
def test_invalid_network_policy_is_400_and_creates_nothing(mb, name):
    o = OSB(mb, "bravo")
    before = o.list("pageSize=200").json["pagination"]["totalItems"]
    keys = set(mb.redis.keys(mb.key("sandbox:*")))
    r = o.create_raw({"image": {"uri": BASE_IMAGE}, "entrypoint": ["sleep", "infinity"],
                      "timeout": 600, "networkPolicy": BAD_POLICIES[name]})
    check_osb_error(r, 400)
    assert "networkPolicy" in r.json["message"], r.json
    if name in ("ip target", "cidr target", "ipv6 target"):
        assert "IP/CIDR targets are not supported" in r.json["message"], r
    assert o.list("pageSize=200").json["pagination"]["totalItems"] == before
    assert set(mb.redis.keys(mb.key("sandbox:*"))) == keys


# ------------------------------------------------------- the egress API

@pytest.fixture(scope="module")
def one(mb):
    """A running sandbox of tenant charlie, its policy reset by each user."""
    o = OSB(mb, "charlie")
    sid = o.create(networkPolicy={"defaultAction": "deny", "egress": []})
    yield o, sid
    o.delete(sid)


def reset(mb, sid, policy):
    mb.redis.hset(mb.key("sandbox:%s" % sid), "egress_policy", json.dumps(policy))


def test_patch_merges_with_priority_and_first_wins(mb, one):
    o, sid = one
    reset(mb, sid, {"defaultAction": "deny", "egress": rules(("allow", "a.com"), ("allow", "b.com"))})
    e = Egress(o, sid)
    r = e.patch(rules(("deny", "B.com"), ("allow", "c.com"), ("allow", "b.com")))
    want = {"defaultAction": "deny",
            "egress": rules(("deny", "b.com"), ("allow", "c.com"), ("allow", "a.com"))}
    check_status(r, want)
    assert stored(mb, sid) == want
    check_status(e.get(), want)


def test_delete_removes_targets_idempotently(mb, one):
    o, sid = one
    reset(mb, sid, {"defaultAction": "allow",
                    "egress": rules(("deny", "a.com"), ("deny", "*.b.com"), ("deny", "c.com"))})
    e = Egress(o, sid)
    want = {"defaultAction": "allow", "egress": rules(("deny", "c.com"))}
    check_status(e.delete(["*.B.com", "a.com.", "not.there"]), want)
    check_status(e.delete(["a.com"]), want)
    assert stored(mb, sid) == want


BAD_BODIES = {
    "empty array": [],
    "object": {"action": "allow", "target": "a.com"},
    "rule without action": [{"target": "a.com"}],
    "unknown member": [{"action": "allow", "target": "a.com", "x": 1}],
    "ip": [{"action": "allow", "target": "127.0.0.1"}],
    "cidr": [{"action": "allow", "target": "0.0.0.0/0"}],
    "not json": "nope[",
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_patch_is_400_and_changes_nothing(mb, one, name):
    o, sid = one
    reset(mb, sid, {"defaultAction": "deny", "egress": rules(("allow", "keep.com"))})
    body = BAD_BODIES[name]
    r = Egress(o, sid).call("PATCH", body, raw=isinstance(body, str))
    assert r.status == 400, r
    assert r.json.get("message"), r
    assert stored(mb, sid) == {"defaultAction": "deny", "egress": rules(("allow", "keep.com"))}


@pytest.mark.parametrize("body", [[], [1], ["10.0.0.0/8"], "a.com", {"targets": ["a.com"]}])
def test_bad_delete_is_400_and_changes_nothing(mb, one, body):
    o, sid = one
    reset(mb, sid, {"defaultAction": "deny", "egress": rules(("allow", "keep.com"))})
    r = Egress(o, sid).delete(body)
    assert r.status == 400, r
    assert stored(mb, sid)["egress"] == rules(("allow", "keep.com"))


def test_oversized_and_wrongly_typed_bodies_are_refused(mb, one):
    o, sid = one
    e = Egress(o, sid)
    big = json.dumps(rules(*[("allow", "h%05d.example.com" % i) for i in range(4000)]))
    r = e.call("PATCH", big, raw=True)
    assert r.status == 413, r
    h = dict(e.headers, **{"Content-Type": "text/plain"})
    r = e.call("PATCH", json.dumps(rules(("allow", "a.com"))), headers=h, raw=True)
    assert r.status == 415, r
    r = e.patch(rules(*[("allow", "h%d.a.com" % i) for i in range(257)]))
    assert r.status == 400, r


def test_concurrent_patches_lose_nothing(mb, one):
    o, sid = one
    reset(mb, sid, {"defaultAction": "deny", "egress": []})
    e = Egress(o, sid)
    errors = []

    def worker(k):
        for i in range(5):
            r = e.patch(rules(("allow", "t%d-%d.example.com" % (k, i))))
            if r.status != 200:
                errors.append(r)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]
    got = {r["target"] for r in stored(mb, sid)["egress"]}
    assert got == {"t%d-%d.example.com" % (k, i) for k in range(8) for i in range(5)}


def test_auth_like_execd_and_tenant_isolation(mb, one):
    o, sid = one
    e = Egress(o, sid)
    reset(mb, sid, {"defaultAction": "deny", "egress": []})
    assert e.get(headers={}).status == 401
    for h in ({"X-EXECD-ACCESS-TOKEN": "0" * 32}, {"OPENSANDBOX-EGRESS-AUTH": "0" * 32},
              {"OPEN-SANDBOX-API-KEY": KEY["delta"]}):
        assert e.get(headers=h).status in (401, 403, 404), h
        r = e.patch(rules(("allow", "evil.com")), headers=h)
        assert r.status in (401, 403, 404), (h, r)
        r = e.delete(["x.com"], headers=h)
        assert r.status in (401, 403, 404), (h, r)
    # the owner's API key and the egress header both work
    check_status(e.get(headers={"OPEN-SANDBOX-API-KEY": KEY["charlie"]}))
    tok = list(e.headers.values())[0]
    check_status(e.get(headers={"OPENSANDBOX-EGRESS-AUTH": tok}))
    assert stored(mb, sid) == {"defaultAction": "deny", "egress": []}


def test_unknown_sandbox_is_404(mb, one):
    o, sid = one
    e = Egress(o, sid)
    e.path = e.path.replace(sid, "0" * 32)
    assert e.get().status == 404
    assert e.patch(rules(("allow", "a.com"))).status == 404


def test_policy_survives_pause_resume_and_broker_restart(mb, made):
    o = OSB(mb, "echo")
    sid = o.create(networkPolicy={"defaultAction": "deny", "egress": rules(("allow", "a.com"))})
    made.append(("echo", sid))
    e = Egress(o, sid)
    assert o.pause(sid).status in (200, 202, 204)
    o.wait_state(sid, "Paused")
    # changing a paused sandbox's policy works and persists
    check_status(e.patch(rules(("allow", "b.com"))))
    assert o.resume(sid).status in (200, 202, 204)
    o.wait_state(sid, "Running")
    want = {"defaultAction": "deny", "egress": rules(("allow", "b.com"), ("allow", "a.com"))}
    check_status(e.get(), want)
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1800))
    r = o.renew(sid, later)
    assert r.status == 200, r
    # the whole broker restarted (handlers, supervisor, nginx); Redis keeps the policy
    names = ("nginx", "fcgi-sandboxes", "fcgi-execd", "supervisor")
    for name in names:
        mb.stop(name)
    for name in reversed(names):
        mb.start(name)
    o.wait_state(sid, "Running")
    check_status(Egress(o, sid).get(), want)
    assert stored(mb, sid) == want


# ----------------------------------------------------------- leases

def test_lease_acquire_gets_egress_default_or_its_mode_policy(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4,
                         EGRESS_DEFAULT=json.dumps(DEFAULT),
                         EGRESS_POLICY_EXCLUSIVE=json.dumps(EXCLUSIVE))
    request.node._it_brokers = [b]
    from sandboxlib import SB
    sb = SB(b)
    lease = sb.acquire("u1", "s1", mode="exclusive")
    assert stored(b, lease["sandboxId"]) == EXCLUSIVE
    lease2 = sb.acquire("u2", "s2", mode="user_shared")
    assert stored(b, lease2["sandboxId"]) == DEFAULT


def test_multi_user_shared_lease_gets_its_pools_policy(request, services, it_root):
    """EGRESS_POOL_POLICIES: a pool's entry wins over the mode's and the
    default; "<tenant>/<pool>" over the bare poolId; another tenant's entry
    does not apply."""
    pa = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]}
    pc_any = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "c-any.test"}]}
    pc_it = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "c-it.test"}]}
    other = {"defaultAction": "allow", "egress": []}
    mus = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "mus.test"}]}
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4,
                         EGRESS_DEFAULT=json.dumps(DEFAULT),
                         EGRESS_POLICY_MULTI_USER_SHARED=json.dumps(mus),
                         EGRESS_POOL_POLICIES=json.dumps({
                             "pa": pa, "pc": pc_any, "%s/pc" % "it": pc_it,
                             "other/pb": other}))
    request.node._it_brokers = [b]
    assert b.tenant == "it"
    from sandboxlib import SB
    sb = SB(b)
    got = {}
    for pool in ("pa", "pb", "pc"):
        lease = sb.acquire("u-" + pool, "s1", mode="multi_user_shared", pool=pool)
        rec = b.redis.hgetall(b.key("sandbox:%s" % lease["sandboxId"]))
        assert rec["poolId"] == "it/" + pool, rec
        got[pool] = stored(b, lease["sandboxId"])
    assert got == {"pa": pa, "pb": mus, "pc": pc_it}
    # a second user of pool pa shares the sandbox and its policy
    lease = sb.acquire("u-pa2", "s1", mode="multi_user_shared", pool="pa")
    assert stored(b, lease["sandboxId"]) == pa
    # other modes are untouched by pool entries
    lease = sb.acquire("u-ex", "s1", mode="exclusive")
    assert stored(b, lease["sandboxId"]) == DEFAULT


@pytest.mark.parametrize("value,want", [
    ('{"pa": {"egress": [{"action": "allow", "target": "10.0.0.1"}]}}',
     '"pa": egress[0]: IP/CIDR'),
    ('["pa"]', "must be a JSON object"),
])
def test_bad_egress_pool_policies_stop_the_broker(request, services, it_root, value, want):
    import conftest
    from brokerlib import Broker, StackError
    b = Broker(services, conftest._state_dir(it_root, request.node.name),
               EGRESS_POOL_POLICIES=value)
    request.addfinalizer(b.down)
    with pytest.raises(StackError) as e:
        b.up()
    msg = str(e.value)
    assert "EGRESS_POOL_POLICIES" in msg and want in msg, msg
    assert not b.redis.keys(b.key("*"))


def test_empty_egress_default_is_deny_all(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=2)
    request.node._it_brokers = [b]
    o = OSB(b, "alpha")
    sid = o.create(wait=False)
    try:
        assert stored(b, sid) == {"defaultAction": "deny", "egress": []}
        check_status(Egress(o, sid).get(), {"defaultAction": "deny", "egress": []})
    finally:
        o.delete(sid)


# --------------------------------------------------------------- SDK

SDK_SCRIPT = r"""
import json, sys
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.sandboxes import NetworkPolicy, NetworkRule

cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http",
                           request_timeout=timedelta(seconds=60))
sb = SandboxSync.create(sys.argv[3], connection_config=cfg, timeout=timedelta(minutes=5),
                        network_policy=NetworkPolicy(defaultAction="deny",
                            egress=[NetworkRule(action="allow", target="pypi.org")]))
out = {"id": sb.id}
try:
    out["created"] = sb.get_egress_policy().model_dump(mode="json", exclude_none=True)
    sb.patch_egress_rules([NetworkRule(action="allow", target="*.github.com")])
    sb.delete_egress_rules(["pypi.org"])
    out["after"] = sb.get_egress_policy().model_dump(mode="json", exclude_none=True)
finally:
    sb.kill()
print(json.dumps(out))
"""


def test_python_sdk_network_policy_and_egress_calls(mb, tmp_path):
    py = python_sdk_python()
    script = tmp_path / "egress_sdk.py"
    script.write_text(SDK_SCRIPT)
    run = run_script([py, str(script), "127.0.0.1:%d" % mb.port, KEY["foxtrot"], BASE_IMAGE],
                     env={})
    assert run.rc == 0, run.explain()
    out = json.loads(run.out.strip().splitlines()[-1])
    norm = lambda p: {"defaultAction": p.get("defaultAction") or p.get("default_action"),
                      "egress": [{"action": r["action"], "target": r["target"]}
                                 for r in p.get("egress", [])]}
    assert norm(out["created"]) == {"defaultAction": "deny",
                                    "egress": rules(("allow", "pypi.org"))}, out
    assert norm(out["after"]) == {"defaultAction": "deny",
                                  "egress": rules(("allow", "*.github.com"))}, out


# ------------------------------------ the lifecycle API's networkpolicy routes

def lifecycle_client(b, tenant):
    """The Python SDK's generated lifecycle client (what its
    NetworkPolicyAdapter uses), on this broker with tenant's key."""
    from opensandbox.api.lifecycle import AuthenticatedClient
    return AuthenticatedClient(base_url="http://127.0.0.1:%d/v1" % b.port, token=KEY[tenant], prefix="",
                               auth_header_name="OPEN-SANDBOX-API-KEY")


def test_lifecycle_networkpolicy_is_the_same_policy(mb, one):
    """GET/PUT/PATCH/DELETE /v1/sandboxes/{id}/networkpolicy, called through
    the SDK's own generated client, read and change the very policy the
    egress API serves and the proxy enforces; PUT replaces it whole."""
    from opensandbox.api.lifecycle.api.sandboxes import delete_sandbox_network_policy_rules, \
        get_sandbox_network_policy, patch_sandbox_network_policy, replace_sandbox_network_policy
    from opensandbox.api.lifecycle.models import NetworkPolicy, NetworkRule, PolicyStatusResponse
    o, sid = one
    reset(mb, sid, {"defaultAction": "deny", "egress": rules(("allow", "old.com"))})
    c = lifecycle_client(mb, "charlie")
    want = {"defaultAction": "allow", "egress": rules(("deny", "bad.com"), ("deny", "*.worse.com"))}
    r = replace_sandbox_network_policy.sync_detailed(sid, client=c, body=NetworkPolicy.from_dict(
        {"defaultAction": "allow", "egress": rules(("deny", "Bad.COM."), ("deny", "*.worse.com"))}))
    assert r.status_code == 200 and isinstance(r.parsed, PolicyStatusResponse), r
    assert r.parsed.policy.to_dict() == want and r.parsed.mode == "allow_all", r.parsed
    assert stored(mb, sid) == want
    check_status(Egress(o, sid).get(), want)
    r = patch_sandbox_network_policy.sync_detailed(sid, client=c,
                                                  body=[NetworkRule.from_dict({"action": "allow",
                                                                               "target": "good.com"})])
    assert r.status_code == 200, r
    r = delete_sandbox_network_policy_rules.sync_detailed(sid, client=c, body=["bad.com"])
    assert r.status_code == 200, r
    want = {"defaultAction": "allow", "egress": rules(("allow", "good.com"), ("deny", "*.worse.com"))}
    assert stored(mb, sid) == want
    r = get_sandbox_network_policy.sync_detailed(sid, client=c)
    assert r.status_code == 200 and r.parsed.policy.to_dict() == want, r
    check_status(Egress(o, sid).get(), want)


LIFECYCLE_BAD_PUTS = {
    "bad default": {"defaultAction": "maybe", "egress": []},
    "cidr": {"defaultAction": "deny", "egress": rules(("allow", "10.0.0.0/8"))},
    "unknown member": {"defaultAction": "deny", "egress": [], "x": 1},
    "array": rules(("allow", "a.com")),
    "too many": {"defaultAction": "deny", "egress": rules(*[("allow", "h%d.a.com" % i) for i in range(257)])},
}


def test_lifecycle_networkpolicy_refuses_and_isolates(mb, one):
    """A bad PUT is 400 and changes nothing; another tenant's key, no key and
    an unknown sandbox change nothing either."""
    o, sid = one
    keep = {"defaultAction": "deny", "egress": rules(("allow", "keep.com"))}
    reset(mb, sid, keep)
    path = "/v1/sandboxes/%s/networkpolicy" % sid

    def call(method, body, tenant="charlie", p=path):
        h = {"Content-Type": "application/json"}
        if tenant:
            h["OPEN-SANDBOX-API-KEY"] = KEY[tenant]
        return http_request(mb.port, method, p, None if body is None else json.dumps(body), h)

    for name, body in sorted(LIFECYCLE_BAD_PUTS.items()):
        r = call("PUT", body)
        assert r.status == 400 and r.json.get("message"), (name, r)
    for method, body in (("GET", None), ("PUT", keep), ("PATCH", rules(("allow", "evil.com"))),
                         ("DELETE", ["keep.com"])):
        assert call(method, body, tenant="delta").status == 404, method
        assert call(method, body, tenant=None).status == 401, method
        assert call(method, body, p=path.replace(sid, "0" * 32)).status == 404, method
    assert stored(mb, sid) == keep
