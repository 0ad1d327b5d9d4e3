"""OpenSandbox creates that tell the truth when their answer is lost (issue 24,
"State that tells the truth"; docs/API.md "Idempotent creates"), through nginx
and FastCGI against real dockerd, Redis and Kafka.

The attack: fcgi-sandboxes is SIGKILLed while a create is in flight, after the
record is stored and before the answer (the client reads a 502). To hold the
create there for sure, the warm-pool member it takes has its sandbox-agent
(PID 1 of the container) stopped with SIGSTOP: the handler waits for the agent
to start the entrypoint (up to 10 s), and is killed while it waits.

- With an Idempotency-Key, the client's retry answers the same sandbox (same
  id, 202, Idempotent-Replayed), the supervisor's recovery makes it Running,
  and exactly one container exists for it; the same key with another body is
  422 and makes nothing; another tenant's same key is another sandbox;
  concurrent creates with one key make one sandbox; bad keys are 400 and
  change nothing (no record, no key, no container).
- Without a key, a create whose answer reached nobody is removed
  OPENSANDBOX_UNANSWERED_S after it (reason CREATE_UNANSWERED, its container
  gone), even with `timeout: null`; one that a request of its tenant named
  meanwhile (found in the list by its metadata) stays, and so does an
  answered create with `timeout: null`.
"""
import http.client
import json
import os
import signal
import threading
import time

from brokerlib import check_error, wait_until
from sandboxlib import BASE_IMAGE, DOCKER, require_docker
from sdklib import OSB, PROVISION_TIMEOUT, check_sandbox, start_osb_broker

require_docker()

KEY_HEADER = "Idempotency-Key"


def pool_broker(request, services, it_root, size, **env):
    b = start_osb_broker(request, services, it_root, POOL="%s:%d" % (BASE_IMAGE, size),
                         BROKER_CAPACITY=6, IDLE_POLICY="delete", RECONCILE_MS=1000, **env)
    request.node._it_brokers = [b]
    return b


def ready_members(b):
    return b.redis.zrange(b.key("wpool:" + BASE_IMAGE), 0, -1)


def wait_members(b, n, timeout=90):
    return wait_until(lambda: len(ready_members(b)) >= n and ready_members(b)[:n], timeout, 0.1,
                      "warm pool filled to %d" % n)


def body(tag="one", timeout=600, **extra):
    b = {"image": {"uri": BASE_IMAGE}, "entrypoint": ["sleep", "7654321"], "timeout": timeout,
         "resourceLimits": {"cpu": "250m", "memory": "128Mi"}, "metadata": {"job": tag}}
    b.update(extra)
    return b


def containers_of(b, sid):
    return DOCKER.list(prefix=b.prefix, sandbox_id=sid)


def tenant_ids(osb):
    r = osb.list("pageSize=200")
    assert r.status == 200, r
    return [s["id"] for s in r.json["items"]]


def idem_keys(b, tenant):
    return b.redis.hgetall(b.key("idem:" + tenant))


class FrozenAgent:
    """SIGSTOP the sandbox-agent (the container's PID 1, as the host sees it)
    of a warm-pool member: a create that takes the member waits for it."""

    def __init__(self, sid):
        self.pid = DOCKER.inspect("sb-" + sid)["State"]["Pid"]
        assert self.pid > 0, sid
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.pid = 0


class InFlight(threading.Thread):
    """One create, sent from a thread: the handler will be killed under it."""

    def __init__(self, osb, payload, headers=None):
        super().__init__(daemon=True)
        self.osb, self.payload, self.headers = osb, payload, headers or {}
        self.resp = self.error = None
        self.start()

    def run(self):
        try:
            self.resp = self.osb.create_raw(self.payload, headers=self.headers, timeout=90)
        except Exception as e:  # a reset connection is as good as a 502 here
            self.error = e


def alive(pid):
    """Is pid a live process (a zombie is not)?"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_handler_mid_create(b, creates, stored):
    """Wait until `stored()` (the record is in Redis), check that every create
    is still waiting for its answer, SIGKILL fcgi-sandboxes, and start it again."""
    wait_until(stored, 30, 0.02, "the create's record stored")
    time.sleep(0.5)  # the handler is in the agent call (10 s of it) by now
    for c in creates:
        assert c.is_alive(), "the create answered before the kill: %r" % (c.resp,)
    pid = b.pid("fcgi-sandboxes")
    b.stop("fcgi-sandboxes", kill=True)
    assert pid and not alive(pid), pid
    for c in creates:
        c.join(60)
        assert not c.is_alive()
        # the client never learnt the id
        assert c.error is not None or c.resp.status == 502, c.resp
    b.start("fcgi-sandboxes")


def test_bad_keys_are_400_and_change_nothing(request, services, it_root):
    b = start_osb_broker(request, services, it_root)
    request.node._it_brokers = [b]
    osb = OSB(b, "echo")
    before = set(b.redis.keys(b.prefix + "*"))
    bad = ["", "   ", "a b", "a,b", "k" * 129, "k\u00e9y", "a;b", "\"\"", "a\"b"]
    for k in bad:
        r = osb.create_raw(body(), headers={KEY_HEADER: k})
        e = check_error(r, 400, "INVALID_REQUEST")
        assert "Idempotency-Key" in e["message"], (k, e)
    # two headers (nginx joins them with ", "): 400 too
    conn = http.client.HTTPConnection("127.0.0.1", b.port, timeout=30)
    try:
        data = json.dumps(body()).encode()
        conn.putrequest("POST", "/v1/sandboxes")
        conn.putheader("OPEN-SANDBOX-API-KEY", osb.key)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(data)))
        conn.putheader(KEY_HEADER, "one")
        conn.putheader(KEY_HEADER, "two")
        conn.endheaders(data)
        resp = conn.getresponse()
        raw = resp.read()
        assert resp.status == 400, (resp.status, raw)
        assert json.loads(raw)["code"] == "INVALID_REQUEST", raw
    finally:
        conn.close()
    # nothing changed: no record, no key, no container, an empty list
    assert tenant_ids(osb) == []
    assert not idem_keys(b, "echo")
    assert DOCKER.list(prefix=b.prefix) == []
    after = set(b.redis.keys(b.prefix + "*"))
    made = {k for k in after - before if not k.startswith(b.prefix + "metrics")}
    assert not any(":sandbox:" in k or "idem" in k for k in made), made
    # the longest key, and the draft's quoted form, are good ones
    r = osb.create_raw(body(), headers={KEY_HEADER: "k" * 128})
    assert r.status == 202, r
    r2 = osb.create_raw(body(), headers={KEY_HEADER: "\"%s\"" % ("k" * 128)})
    assert r2.status == 202 and r2.json["id"] == r.json["id"], (r, r2)
    assert r2.headers.get("Idempotent-Replayed") == "true", r2.headers
    assert osb.delete(r.json["id"]).status == 204


def test_one_key_one_sandbox_per_tenant(request, services, it_root):
    b = start_osb_broker(request, services, it_root)
    request.node._it_brokers = [b]
    alpha, bravo = OSB(b, "alpha"), OSB(b, "bravo")
    key = "01HV3KQ5Z8-order:7/retry+x="

    # concurrent creates with one key: one sandbox, every answer names it
    answers = [None] * 6

    def create(i):
        answers[i] = alpha.create_raw(body(), headers={KEY_HEADER: key})
    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert all(a is not None and a.status == 202 for a in answers), answers
    ids = {a.json["id"] for a in answers}
    assert len(ids) == 1, answers
    (sid,) = ids
    assert sum(1 for a in answers if a.headers.get("Idempotent-Replayed") == "true") == 5, \
        [a.headers.get("Idempotent-Replayed") for a in answers]
    for a in answers:
        check_sandbox(a.json, full=False)
        assert a.headers.get("Location") == "/v1/sandboxes/" + sid, a.headers
    assert tenant_ids(alpha) == [sid]
    alpha.wait_state(sid, "Running")
    assert len(containers_of(b, sid)) == 1

    # a retry later: the sandbox as it is now
    r = alpha.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] == sid, r
    assert r.json["status"]["state"] == "Running", r.json
    assert r.headers.get("Idempotent-Replayed") == "true"

    # the same key with another body: 422, nothing made
    for other in (body(tag="two"), body(timeout=900), body(env={"A": "b"})):
        e = check_error(alpha.create_raw(other, headers={KEY_HEADER: key}), 422,
                        "IDEMPOTENCY_KEY_REUSED")
        assert sid in e["message"], e
    assert tenant_ids(alpha) == [sid]
    assert len(DOCKER.list(prefix=b.prefix)) == 1

    # another tenant's same key is its own
    r = bravo.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] != sid, r
    assert r.headers.get("Idempotent-Replayed") is None
    bsid = r.json["id"]
    assert tenant_ids(bravo) == [bsid]
    assert alpha.get(bsid).status == 404 and bravo.get(sid).status == 404
    # bravo's replay is bravo's
    r = bravo.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] == bsid, r

    # deleted: the key still answers it (Terminated, readable for an hour) ...
    assert alpha.delete(sid).status == 204
    r = alpha.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] == sid, r
    assert r.json["status"]["state"] in ("Stopping", "Terminated"), r.json
    # ... and once its record is gone (expired), it is spent: 409, nothing made
    wait_until(lambda: alpha.state(sid)["state"] == "Terminated", 60, 0.2, "Terminated")
    b.redis.delete(b.key("sandbox:" + sid))
    e = check_error(alpha.create_raw(body(), headers={KEY_HEADER: key}), 409, "IDEMPOTENCY_KEY_SPENT")
    assert sid in e["message"], e
    assert tenant_ids(alpha) == []
    # a create without a key is a new sandbox each time
    r1, r2 = alpha.create_raw(body()), alpha.create_raw(body())
    assert r1.status == r2.status == 202 and r1.json["id"] != r2.json["id"], (r1, r2)
    # keys are kept with a TTL (OPENSANDBOX_IDEMPOTENCY_TTL_S)
    ttl = b.redis.pttl(b.key("idem:alpha"))
    assert 0 < ttl <= 86400 * 1000, ttl
    assert bravo.delete(bsid).status == 204
    for s in (r1.json["id"], r2.json["id"]):
        assert alpha.delete(s).status == 204


def test_handler_killed_mid_create_the_key_answers_the_same_sandbox(request, services, it_root):
    b = pool_broker(request, services, it_root, 1)
    osb, other = OSB(b, "foxtrot"), OSB(b, "golf")
    (member,) = wait_members(b, 1)
    key = "create-7f3c2a"
    frozen = FrozenAgent(member)
    try:
        c = InFlight(osb, body(), {KEY_HEADER: key})
        kill_handler_mid_create(b, [c], lambda: key in idem_keys(b, "foxtrot"))
    finally:
        frozen.thaw()
    # the record and its key were stored together: the key names the member
    assert idem_keys(b, "foxtrot")[key].split(" ")[0] == member
    # the retry: the same sandbox, not another
    r = osb.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202, r
    assert r.json["id"] == member, (r.json, member)
    assert r.headers.get("Idempotent-Replayed") == "true", r.headers
    assert r.headers.get("Location") == "/v1/sandboxes/" + member
    # the recovery finishes what the killed handler began
    st = osb.wait_state(member, "Running", timeout=PROVISION_TIMEOUT)
    assert st["metadata"] == {"job": "one"}, st
    assert len(containers_of(b, member)) == 1
    assert tenant_ids(osb) == [member]
    # answered by the replay: never removed as unanswered
    assert b.redis.zscore(b.key("osbunanswered"), member) is None
    assert not b.redis.hget(b.key("sandbox:" + member), "answerBy")
    # and again: still one
    r = osb.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] == member and r.json["status"]["state"] == "Running", r
    assert len(containers_of(b, member)) == 1 and tenant_ids(osb) == [member]
    # another tenant with the same key gets a sandbox of its own
    r = other.create_raw(body(), headers={KEY_HEADER: key})
    assert r.status == 202 and r.json["id"] != member, r
    other.wait_state(r.json["id"], "Running")
    assert tenant_ids(other) == [r.json["id"]] and tenant_ids(osb) == [member]
    assert osb.delete(member).status == 204
    assert other.delete(r.json["id"]).status == 204


def test_unanswered_create_is_removed_unless_named(request, services, it_root):
    bound = 30
    b = pool_broker(request, services, it_root, 2, OPENSANDBOX_UNANSWERED_S=bound)
    osb = OSB(b, "hotel")
    members = wait_members(b, 2)
    t0 = time.monotonic()
    frozen = [FrozenAgent(m) for m in members]
    try:
        creates = [InFlight(osb, body(tag=tag, timeout=None)) for tag in ("lost", "found")]
        kill_handler_mid_create(
            b, creates, lambda: len(b.redis.zrange(b.key("tenant:hotel"), 0, -1)) == 2)
    finally:
        for f in frozen:
            f.thaw()
    # the client that got the 502 finds its sandbox by its metadata, and
    # names it: that one stays
    r = osb.list("metadata=job%3Dfound")
    assert r.status == 200 and len(r.json["items"]) == 1, r
    found = r.json["items"][0]["id"]
    assert "expiresAt" not in r.json["items"][0], r.json  # timeout null: no expiry
    assert osb.get(found).status == 200
    (lost,) = [s for s in tenant_ids(osb) if s != found]
    assert time.monotonic() - t0 < bound, "too slow to name it within the bound"
    assert b.redis.zscore(b.key("osbunanswered"), found) is None
    assert b.redis.zscore(b.key("osbunanswered"), lost) is not None
    # an answered create with timeout null, for comparison
    r = osb.create_raw(body(tag="answered", timeout=None))
    assert r.status == 202, r
    answered = r.json["id"]
    for s in (found, answered):
        osb.wait_state(s, "Running")
    # the lost one is read from Redis: a GET would name it, and keep it
    record = b.key("sandbox:" + lost)
    wait_until(lambda: b.redis.hget(record, "state") == "Running", PROVISION_TIMEOUT, 0.2,
               "the recovery made the lost one Running")
    assert b.redis.hget(record, "answerBy")
    # past the bound: the unanswered one is removed, with its container
    wait_until(lambda: b.redis.hget(record, "state") == "Terminated", bound + 60, 0.5,
               "unanswered sandbox removed")
    st = osb.state(lost)
    assert st["state"] == "Terminated" and st["reason"] == "CREATE_UNANSWERED", st
    assert time.monotonic() - t0 >= bound - 1
    wait_until(lambda: not containers_of(b, lost), 60, 0.2, "its container removed")
    # the others live on, for good
    assert osb.state(found)["state"] == "Running"
    assert osb.state(answered)["state"] == "Running"
    assert len(containers_of(b, found)) == 1 and len(containers_of(b, answered)) == 1
    assert sorted(tenant_ids(osb)) == sorted([found, answered])
    # counted (the supervisor flushes its counters to <prefix>metrics)
    wait_until(lambda: int(b.redis.hget(b.key("metrics"), "broker_sandboxes_unanswered_total") or 0) == 1,
               30, 0.2, "broker_sandboxes_unanswered_total counted")
    for s in (found, answered):
        assert osb.delete(s).status == 204
