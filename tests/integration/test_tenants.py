"""Tenants (issue: every API authenticated, every tenant fenced).

Each broker here has three tenant keys seeded through OPENSANDBOX_API_KEYS:
the harness's own ("it") plus "ta" and "tb". The tests try what an attacker
with network access would: no key (401 everywhere), another tenant's key
(404, exactly like an unknown id), names of another tenant (a separate
namespace: two users, two leases, two sandboxes). Then fairness: one
tenant's 200 queued tickets do not hold another tenant's first one back, and
per-tenant slot caps.
"""

import uuid

import pytest

from brokerlib import HEX32, check_error, http_request, wait_until
from sandboxlib import DOCKER, SB, docker_broker, require_docker  # noqa: F401
from sdklib import OSB_HTTP_TIMEOUT

KA = "ka_" + uuid.uuid4().hex
KB = "kb_" + uuid.uuid4().hex
SEEDS = "%s:ta,%s:tb" % (KA, KB)


def acquire(b, key, user, session, **body):
    body.update({"userId": user, "sessionId": session})
    return b.post("/v1/leases/acquire", body, auth=key)


def release(b, key, user, session, reason="deleted"):
    return b.post("/v1/leases/release",
                  {"userId": user, "sessionId": session, "reason": reason}, auth=key)


def same_404(r, sid):
    """A foreign id answers exactly what an unknown one does."""
    check_error(r, 404)
    return r.json["code"], r.json["message"].replace(sid, "<id>")


# ----------------------------------------------------------- lease API, no provider

@pytest.fixture
def tb(broker):
    return broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=4, TICKET_TTL_MS=120000)


def test_every_route_needs_a_key(tb):
    for method, path, body in (("GET", "/v1/status", None),
                               ("POST", "/v1/leases/acquire", {"userId": "u", "sessionId": "s"}),
                               ("GET", "/v1/leases/poll?ticketId=" + "0" * 32, None),
                               ("POST", "/v1/leases/heartbeat", {"leaseId": "0" * 32}),
                               ("POST", "/v1/leases/release", {"userId": "u", "sessionId": "s"}),
                               ("GET", "/v1/sandboxes", None)):
        r = tb.request(method, path, body, auth=False)
        check_error(r, 401, "UNAUTHORIZED")
        assert "Bearer" in r.headers.get("WWW-Authenticate", ""), r
        # a wrong key, a non-Bearer scheme, two keys that disagree: all 401
        for hdrs in ({"Authorization": "Bearer nope-" + uuid.uuid4().hex},
                     {"Authorization": "Basic " + KA},
                     {"Authorization": "Bearer " + KA, "OPEN-SANDBOX-API-KEY": KB}):
            check_error(tb.request(method, path, body, headers=hdrs), 401, "UNAUTHORIZED")
    # nothing was made by any of it
    assert tb.redis.zcard(tb.key("leases")) == 0 and tb.active() == 0
    # /health stays open, for load balancers
    r = tb.get("/health", auth=False)
    assert r.status == 200, r
    # /metrics: its own scrape token, not a tenant key
    assert http_request(tb.port, "GET", "/metrics").status == 401
    assert http_request(tb.port, "GET", "/metrics", headers=tb.auth_headers(KA)).status == 401
    r = http_request(tb.port, "GET", "/metrics", headers=tb.auth_headers(tb.config["METRICS_TOKEN"]))
    assert r.status == 200, r


def test_same_user_in_two_tenants_is_two_users(tb):
    ra = acquire(tb, KA, "alice", "s1")
    rb = acquire(tb, KB, "alice", "s1")
    assert ra.status == 200 and rb.status == 200, (ra, rb)
    la, lb = ra.json["lease"], rb.json["lease"]
    assert la["leaseId"] != lb["leaseId"]
    assert (la["tenant"], la["userId"]) == ("ta", "alice"), la
    assert (lb["tenant"], lb["userId"]) == ("tb", "alice"), lb
    assert tb.active() == 2  # two slots: two users
    # Redis keeps them apart by tenant
    assert tb.redis.get(tb.key("session:ta/alice:s1")) == la["leaseId"]
    assert tb.redis.get(tb.key("session:tb/alice:s1")) == lb["leaseId"]
    # B releasing "alice/s1" releases B's lease only
    r = release(tb, KB, "alice", "s1")
    assert r.status == 200 and r.json["leaseId"] == lb["leaseId"], r
    assert tb.redis.exists(tb.key("lease:" + la["leaseId"])) == 1
    check_error(release(tb, KB, "alice", "s1"), 404)
    # same pool id in two tenants: two pool sandboxes (slots), not shared seats
    ra = acquire(tb, KA, "u", "p", mode="multi_user_shared", poolId="shared")
    rb = acquire(tb, KB, "v", "p", mode="multi_user_shared", poolId="shared")
    assert ra.status == 200 and rb.status == 200, (ra, rb)
    assert ra.json["lease"]["poolId"] == "shared" and ra.json["lease"]["seat"] == 1
    assert rb.json["lease"]["seat"] == 1, rb  # a seat of its own pool
    assert tb.active() == 3


def test_foreign_leases_and_tickets_are_404(tb):
    la = acquire(tb, KA, "alice", "s1").json["lease"]
    # heartbeat by id with another tenant's key: 404 like an unknown id
    r = tb.post("/v1/leases/heartbeat", {"leaseId": la["leaseId"]}, auth=KB)
    unknown = tb.post("/v1/leases/heartbeat", {"leaseId": "f" * 32}, auth=KB)
    check_error(r, 404)
    assert (r.json["code"], r.json["message"]) == (unknown.json["code"], unknown.json["message"])
    assert tb.post("/v1/leases/heartbeat", {"leaseId": la["leaseId"]}, auth=KA).status == 200
    # by (user, session) in B's namespace: B has no such lease
    check_error(tb.post("/v1/leases/heartbeat", {"userId": "alice", "sessionId": "s1"}, auth=KB), 404)
    # a ticket of A is not B's to poll
    for i in range(3):
        assert acquire(tb, KA, "filler", "f%d" % i).status == 200
    r = acquire(tb, KA, "late", "q1")
    assert r.status == 202, r
    tid = r.json["ticketId"]
    assert same_404(tb.poll(tid, auth=KB), tid) == same_404(tb.poll("e" * 32, auth=KB), "e" * 32)
    r = tb.poll(tid, auth=KA)
    assert r.status == 200 and r.json["status"] == "queued", r
    # reserved names cannot be spelled: the OpenSandbox admission user
    check_error(acquire(tb, KA, "*osb", "x"), 400)
    check_error(acquire(tb, KA, "ta/alice", "s1"), 400)


def _holder(b):
    """(tenant, user, session) of the one live lease."""
    ids = b.redis.zrange(b.key("leases"), 0, -1)
    assert len(ids) == 1, ids
    h = b.redis.hgetall(b.key("lease:" + ids[0]))
    tenant, user = h["userId"].split("/", 1)
    return tenant, user, h["sessionId"]


def test_fair_queue_across_tenants(broker):
    """Tenant A queues 200 tickets, then B queues one: B is granted within
    the next few grants, A's tickets go out in their own order."""
    b = broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=1, TICKET_TTL_MS=300000)
    keys = {"ta": KA, "tb": KB}
    assert acquire(b, KA, "holder", "h").status == 200
    a_tickets = []
    for i in range(200):
        r = acquire(b, KA, "a", "q%03d" % i)
        assert r.status == 202 and r.json["position"] == i + 1, r
        a_tickets.append(r.json["ticketId"])
    r = acquire(b, KB, "b", "first")
    assert r.status == 202 and r.json["position"] == 1, r  # first in its tenant's line
    b_ticket = r.json["ticketId"]
    assert b.redis.zcard(b.key("queue")) == 201

    served = []
    for _ in range(5):
        tenant, user, session = _holder(b)
        assert release(b, keys[tenant], user, session).status == 200
        before = len(served)

        def next_grant():
            ids = b.redis.zrange(b.key("leases"), 0, -1)
            if len(ids) != 1:
                return None
            return _holder(b)
        served.append(wait_until(next_grant, 30, 0.05, "the next grant"))
        assert len(served) == before + 1
        if served[-1][0] == "tb":
            break
    assert ("tb", "b", "first") in served, served
    assert len(served) <= 2, served  # one A ticket at most went first
    r = b.poll(b_ticket, auth=KB)
    assert r.status == 200 and r.json["status"] == "granted", r
    # FIFO within A: q000 went first, the rest still wait in order
    assert served[0] == ("ta", "a", "q000"), served
    r = b.poll(a_tickets[1], auth=KA)
    assert r.json["status"] == "queued" and r.json["position"] == 1, r


def test_tenant_slot_cap(broker):
    """TENANT_MAX_SLOTS=1: a tenant's second sandbox waits for its first,
    while another tenant still gets a free slot at once."""
    b = broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=3, TENANT_MAX_SLOTS=1,
               TICKET_TTL_MS=120000)
    assert acquire(b, KA, "a", "s1").status == 200
    r = acquire(b, KA, "a", "s2")
    assert r.status == 202, r  # A is at its cap though slots are free
    tid = r.json["ticketId"]
    # A waiting at its cap does not block B
    assert acquire(b, KB, "b", "s1").status == 200
    assert b.active() == 2
    # a per-tenant setting overrides the default (broker-admin tenant set)
    b.redis.hset(b.key("tenantcfg:tb"), "maxSlots", "2")
    assert acquire(b, KB, "b", "s2").status == 200
    assert acquire(b, KB, "b", "s3").status == 202
    # A's release lets A's own ticket in
    assert release(b, KA, "a", "s1").status == 200
    got = wait_until(lambda: b.poll(tid, auth=KA).json["status"] == "granted", 20, 0.05,
                     "A's capped ticket granted")
    assert got
    assert b.redis.scard(b.key("tactive:ta")) == 1
    assert b.redis.scard(b.key("tactive:tb")) == 2
    assert b.active() == 3
    # /v1/status: the broker's totals, and the caller's own share
    r = b.get("/v1/status", auth=KB)
    assert r.status == 200 and r.json["activeSlots"] == 3, r
    assert r.json["tenant"] == {"name": "tb", "activeSlots": 2, "queued": 1, "maxSlots": 2,
                                "maxSandboxes": 50}, r
    r = b.get("/v1/status", auth=KA)
    assert r.json["tenant"] == {"name": "ta", "activeSlots": 1, "queued": 0, "maxSlots": 1,
                                "maxSandboxes": 50}, r


# ----------------------------------------------------------- sandboxes (Docker)

@pytest.fixture
def dsb(docker_broker):
    require_docker()
    return docker_broker(OPENSANDBOX_API_KEYS=SEEDS, BROKER_CAPACITY=4)


def osb(b, method, path, body=None, key=None):
    hdrs = {"OPEN-SANDBOX-API-KEY": key} if key else {}
    return http_request(b.port, method, "/v1" + path, body, hdrs, OSB_HTTP_TIMEOUT)


def test_sandbox_takeover_is_closed(dsb):
    """The reported attack: A creates an OpenSandbox sandbox X; with no key,
    or with B's key, nobody acquires, runs in, writes to or releases it."""
    b = dsb.b
    body = {"image": {"uri": "sandbox-broker/base:latest"}, "entrypoint": ["sleep", "infinity"],
            "timeout": 600, "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    r = osb(b, "POST", "/sandboxes", body, KA)
    assert r.status == 202, r
    x = r.json["id"]
    wait_until(lambda: osb(b, "GET", "/sandboxes/" + x, key=KA).json["status"]["state"] == "Running",
               90, 0.2, "sandbox X running")
    osb_lease = b.redis.get(b.key("session:ta/*osb:%s" % x))
    assert osb_lease and HEX32.match(osb_lease)

    # 1. no key at all: 401 on every door, nothing acquired
    takeover = {"userId": "ta", "sessionId": x}
    check_error(b.post("/v1/leases/acquire", takeover, auth=False), 401)
    for path in ("/exec", "/files/write", "/files/read", "/start", "/stop"):
        r = b.request("POST", "/v1/sandboxes/%s%s" % (x, path), {"cmd": "id", "path": "/tmp/x",
                                                                   "content": ""},
                      {"X-Lease-ID": osb_lease}, auth=False)
        check_error(r, 401)
    r = http_request(b.port, "DELETE", "/v1/sandboxes/" + x, None, {"X-Lease-ID": osb_lease})
    check_error(r, 401)
    check_error(osb(b, "GET", "/sandboxes/%s/endpoints/44772" % x), 401)
    r = http_request(b.port, "GET", "/v1/sandboxes/%s/proxy/44772/ping" % x)
    check_error(r, 401)

    # 2. B's key: the name is B's own namespace, the ids do not exist
    r = b.post("/v1/leases/acquire", takeover, auth=KB)
    assert r.status == 200, r  # a lease of B's user "ta", on a sandbox of B's
    lb = r.json["lease"]
    assert lb["tenant"] == "tb" and lb["leaseId"] != osb_lease and lb["sandboxId"] != x, lb
    for path in ("/exec", "/files/write", "/files/read", "/start", "/stop"):
        for lid in (osb_lease, lb["leaseId"]):
            r = b.request("POST", "/v1/sandboxes/%s%s" % (x, path),
                          {"cmd": "id", "path": "/tmp/x", "content": ""},
                          {"X-Lease-ID": lid}, auth=KB)
            check_error(r, 404)
    r = http_request(b.port, "DELETE", "/v1/sandboxes/" + x, None,
                     dict(b.auth_headers(KB), **{"X-Lease-ID": osb_lease}))
    check_error(r, 404)
    unknown = "0123456789abcdef" * 2
    for path in ("/sandboxes/%s", "/sandboxes/%s/endpoints/44772"):
        assert same_404(osb(b, "GET", path % x, key=KB), x) == \
            same_404(osb(b, "GET", path % unknown, key=KB), unknown)
    for verb in ("pause", "resume"):
        check_error(osb(b, "POST", "/sandboxes/%s/%s" % (x, verb), {}, KB), 404)
    check_error(osb(b, "DELETE", "/sandboxes/" + x, key=KB), 404)
    # the data plane with B's key and no token: 404, not 401 (no probing)
    hdr = {"OPEN-SANDBOX-API-KEY": KB}
    for sid in (x, unknown):
        r = http_request(b.port, "GET", "/v1/sandboxes/%s/proxy/44772/ping" % sid, None, hdr)
        check_error(r, 404)
    # even A's own key cannot reach its admission lease through the lease API
    check_error(b.post("/v1/leases/heartbeat", {"leaseId": osb_lease}, auth=KA), 404)
    r = b.request("POST", "/v1/sandboxes/%s/exec" % x, {"cmd": "id"}, {"X-Lease-ID": osb_lease},
                  auth=KA)
    check_error(r, 404)

    # 3. X is untouched: still A's, still Running, its admission still held
    r = osb(b, "GET", "/sandboxes/" + x, key=KA)
    assert r.status == 200 and r.json["status"]["state"] == "Running", r
    assert b.redis.exists(b.key("lease:" + osb_lease)) == 1
    c = DOCKER.list(sandbox_id=x)
    assert len(c) == 1 and c[0]["State"] == "running", c
    # and A's own key still works on it, through the data plane too
    r = osb(b, "GET", "/sandboxes/%s/endpoints/44772" % x, key=KA)
    assert r.status == 200, r
    tok = (r.json.get("headers") or {}).get("X-EXECD-ACCESS-TOKEN")
    r = http_request(b.port, "GET", "/v1/sandboxes/%s/proxy/44772/ping" % x, None,
                     {"X-EXECD-ACCESS-TOKEN": tok})
    assert r.status == 200, r
    r = http_request(b.port, "GET", "/v1/sandboxes/%s/proxy/44772/ping" % x, None,
                     {"OPEN-SANDBOX-API-KEY": KA})
    assert r.status == 200, r  # server-proxy mode: the owner's key suffices
    assert osb(b, "DELETE", "/sandboxes/" + x, key=KA).status == 204


def test_same_user_two_tenants_two_sandboxes(dsb):
    la = dsb.b.post("/v1/leases/acquire", {"userId": "dev", "sessionId": "s"}, auth=KA)
    lb = dsb.b.post("/v1/leases/acquire", {"userId": "dev", "sessionId": "s"}, auth=KB)
    assert la.status == 200 and lb.status == 200, (la, lb)
    la, lb = la.json["lease"], lb.json["lease"]
    assert la["sandboxId"] != lb["sandboxId"]
    # each writes in its own sandbox, neither sees the other's file
    for lease, key, text in ((la, KA, b"from A"), (lb, KB, b"from B")):
        r = dsb.b.request("POST", "/v1/sandboxes/%s/exec" % lease["sandboxId"],
                          {"cmd": "echo -n '%s' > /workspace/who" % text.decode()},
                          {"X-Lease-ID": lease["leaseId"]}, auth=key)
        assert r.status == 200 and r.json["exitCode"] == 0, r
    for lease, key, text in ((la, KA, "from A"), (lb, KB, "from B")):
        r = dsb.b.request("POST", "/v1/sandboxes/%s/exec" % lease["sandboxId"],
                          {"cmd": "cat /workspace/who"}, {"X-Lease-ID": lease["leaseId"]}, auth=key)
        assert r.status == 200 and r.json["stdout"] == text, r
    assert len(DOCKER.list(prefix=dsb.prefix)) == 2


def test_admin_key_acts_across_tenants(dsb):
    """An admin key (broker-admin key create --admin) lists and acts on
    every tenant's sandboxes; a plain key sees only its own."""
    import os
    import subprocess
    from brokerlib import BUILD_DIR as build, base_env
    b = dsb.b
    env = base_env()
    env.update({"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(b.services.redis_port),
                "REDIS_KEY_PREFIX": b.prefix})
    cp = subprocess.run([os.path.join(build, "broker-admin"), "key", "create", "ops",
                         "--admin", "--create-tenant", "--name", "oncall"],
                        env=env, capture_output=True, timeout=30)
    assert cp.returncode == 0, cp
    admin_key = cp.stdout.decode().strip()
    body = {"image": {"uri": "sandbox-broker/base:latest"}, "entrypoint": ["sleep", "infinity"],
            "timeout": 600, "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    xa = osb(b, "POST", "/sandboxes", body, KA).json["id"]
    xb = osb(b, "POST", "/sandboxes", body, KB).json["id"]
    ids = lambda key: {s["id"] for s in osb(b, "GET", "/sandboxes?pageSize=200", key=key).json["items"]}
    assert ids(KA) == {xa} and ids(KB) == {xb}
    assert {xa, xb} <= ids(admin_key)
    r = osb(b, "GET", "/sandboxes/" + xa, key=admin_key)
    assert r.status == 200 and r.json["id"] == xa, r
    # the admin deletes B's sandbox: B sees it gone, A's stays
    assert osb(b, "DELETE", "/sandboxes/" + xb, key=admin_key).status == 204
    st = osb(b, "GET", "/sandboxes/" + xb, key=KB).json["status"]["state"]
    assert st in ("Stopping", "Terminated"), st
    assert osb(b, "DELETE", "/sandboxes/" + xa, key=KA).status == 204
    # admin keys are also the fallback scrape credential of /metrics
    r = http_request(b.port, "GET", "/metrics", headers=b.auth_headers(admin_key))
    assert r.status == 200, r
