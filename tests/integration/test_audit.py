"""Audit events (lib/queue/audit.h, docs/OPERATIONS.md "Audit events"): every
lifecycle event goes to the Kafka events topic (KAFKA_EVENTS_TOPIC, by
default "<KAFKA_TOPIC>.events") keyed by tenant, and to the log with the
same fields.

One story per test: with BROKER_CAPACITY=1, alice holds the slot, bob
queues, alice releases so the supervisor grants bob's ticket, carol queues
behind bob and never polls (her ticket expires), and bob stops
heartbeating (his lease expires). The events are read back from the topic
with Kafka's console consumer.

test_supervisor_events asserts on what the supervisor emits (lease.granted,
ticket.expired, lease.expired); test_sandbox_expired_event (Docker only)
on the sandbox.expired of a reaped lease's sandbox. test_handler_events asserts on the
FastCGI handlers' events (lease.acquired, lease.queued, lease.released,
auth.denied); it runs once fcgi/*.c calls audit_emit() and is skipped
until then.
"""

import json
import os
import uuid

import pytest

from brokerlib import HEX32, ISO_MS, http_request, kafka_tool, wait_until
from sandboxlib import docker_broker, docker_skip_reason  # noqa: F401

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
LEASE_TTL_MS = 6000
TICKET_TTL_MS = 2000

SUPERVISOR_EVENTS = {"lease.granted", "lease.expired", "ticket.expired",
                     "sandbox.expired"}
FIELDS = {"type", "time", "tenant", "userId", "sessionId", "leaseId",
          "sandboxId", "ticketId", "requestId", "reason"}


def events_topic(broker):
    return broker.config.get("KAFKA_EVENTS_TOPIC") or \
        broker.config["KAFKA_TOPIC"] + ".events"


def read_events(broker, timeout_ms=4000):
    """Every event of the broker's events topic, from the beginning, as
    (key, object) pairs in partition order."""
    out = kafka_tool(broker.services, CONSOLE_CONSUMER,
                     "--topic", events_topic(broker), "--from-beginning",
                     "--timeout-ms", str(timeout_ms),
                     "--property", "print.key=true",
                     "--property", "key.separator=\t",
                     timeout=90)
    events = []
    for line in out.splitlines():
        if "\t" not in line:
            continue
        key, value = line.split("\t", 1)
        try:
            ev = json.loads(value)
        except ValueError:
            raise AssertionError("event is not JSON: %r" % line)
        events.append((None if key == "null" else key, ev))
    return events


def wait_events(broker, want, timeout=60):
    """Read the topic until every (type, predicate) of want has a match;
    return all events."""
    last = []

    def check():
        last[:] = read_events(broker)
        for typ, pred in want:
            if not any(ev["type"] == typ and pred(ev) for _, ev in last):
                return None
        return list(last)
    try:
        return wait_until(check, timeout, 1.0, "audit events %s" % [t for t, _ in want])
    except AssertionError as e:
        raise AssertionError("%s\nevents so far:\n%s" % (
            e, "\n".join(json.dumps(ev) for _, ev in last)))


def check_shape(key, ev):
    """Every event: known fields only, strings, type and time, key = tenant."""
    assert set(ev) <= FIELDS, ev
    assert isinstance(ev.get("type"), str) and ev["type"], ev
    assert ISO_MS.match(ev.get("time", "")), ev
    for k, v in ev.items():
        assert isinstance(v, str) and v, "field %s of %r" % (k, ev)
    assert key == ev.get("tenant"), "key %r, event %r" % (key, ev)


def split_user(scoped):
    """What the supervisor reports for a user id as Redis stores it."""
    if "/" in scoped:
        return tuple(scoped.split("/", 1))
    return "", scoped


def absent_or(ev, field, value):
    return ev.get(field, "") == value


def story(broker):
    """Run the story; return what it made (ids, request ids)."""
    st = {}
    r = broker.acquire("alice", "a1")
    assert r.status == 200, r
    st["alice_lease"] = r.json["lease"]["leaseId"]
    st["alice_acquire_rid"] = r.headers["X-Request-ID"]

    r = broker.acquire("bob", "b1")
    assert r.status == 202, r
    st["bob_ticket"] = r.json["ticketId"]
    st["bob_acquire_rid"] = r.headers["X-Request-ID"]
    # Redis spells users as the supervisor sees them (scoped by tenant
    # once API keys are in): what the events must split.
    st["bob_scoped"] = broker.redis.hget(broker.key("ticket:" + st["bob_ticket"]), "userId")
    assert st["bob_scoped"], "no userId on bob's ticket"

    r = broker.release("alice", "a1")
    assert r.status == 200, r
    st["alice_release_rid"] = r.headers["X-Request-ID"]
    granted = broker.wait_granted(st["bob_ticket"])
    st["bob_lease"] = granted["lease"]["leaseId"]

    # carol queues behind bob and never polls again: her ticket expires
    # (TICKET_TTL_MS) long before bob's lease (LEASE_TTL_MS).
    r = broker.acquire("carol", "c1")
    assert r.status == 202, r
    st["carol_ticket"] = r.json["ticketId"]
    st["carol_acquire_rid"] = r.headers["X-Request-ID"]
    st["carol_scoped"] = broker.redis.hget(broker.key("ticket:" + st["carol_ticket"]), "userId")

    # bob never heartbeats: the reaper frees his slot after LEASE_TTL_MS.
    wait_until(lambda: st["bob_lease"] not in broker.live_leases(),
               LEASE_TTL_MS / 1000.0 + 30, 0.2, "bob's lease reaped")
    return st


@pytest.fixture
def audit_broker(broker):
    return broker(BROKER_CAPACITY=1, LEASE_TTL_MS=LEASE_TTL_MS,
                  TICKET_TTL_MS=TICKET_TTL_MS)


def test_events_topic_defaults_to_ticket_topic_events(audit_broker):
    b = audit_broker
    assert "KAFKA_EVENTS_TOPIC" not in b.config
    assert "events %s.events" % b.config["KAFKA_TOPIC"] in b.logs("supervisor"), \
        b.logs("supervisor")[-2000:]


def test_supervisor_events(audit_broker):
    b = audit_broker
    st = story(b)
    bob_tenant, bob_user = split_user(st["bob_scoped"])
    carol_tenant, carol_user = split_user(st["carol_scoped"] or "carol")

    def is_bob_grant(ev):
        return ev.get("ticketId") == st["bob_ticket"]

    def is_bob_expiry(ev):
        return ev.get("leaseId") == st["bob_lease"]

    def is_carol_expiry(ev):
        return ev.get("ticketId") == st["carol_ticket"]

    events = wait_events(b, [("lease.granted", is_bob_grant),
                             ("lease.expired", is_bob_expiry),
                             ("ticket.expired", is_carol_expiry)])
    for key, ev in events:
        check_shape(key, ev)

    grants = [ev for _, ev in events if ev["type"] == "lease.granted" and is_bob_grant(ev)]
    assert len(grants) == 1, grants
    g = grants[0]
    assert g["leaseId"] == st["bob_lease"], g
    assert g["userId"] == bob_user == "bob", g
    assert g["sessionId"] == "b1", g
    assert absent_or(g, "tenant", bob_tenant), g
    assert "requestId" not in g, g  # the supervisor acts on no request

    exps = [ev for _, ev in events if ev["type"] == "lease.expired" and is_bob_expiry(ev)]
    assert len(exps) == 1, exps
    e = exps[0]
    assert e["userId"] == "bob" and e["sessionId"] == "b1", e
    assert absent_or(e, "tenant", bob_tenant), e
    assert e.get("reason") == "LEASE_EXPIRED", e

    texp = [ev for _, ev in events if ev["type"] == "ticket.expired" and is_carol_expiry(ev)]
    assert len(texp) == 1, texp
    t = texp[0]
    # The supervisor held carol's Kafka message: it names her.
    assert t.get("userId") == carol_user == "carol", t
    assert t.get("sessionId") == "c1", t
    assert absent_or(t, "tenant", carol_tenant), t

    # A tenant's events are in order: the grant comes before the expiry.
    order = [ev for _, ev in events if ev["type"] in SUPERVISOR_EVENTS
             and ev.get("tenant", "") == bob_tenant]
    assert order.index(g) < order.index(e), order

    # The same events are in the supervisor's log with the journald fields.
    log = b.logs("supervisor")
    lines = [l for l in log.splitlines() if "audit: lease.granted" in l
             and "LEASE_ID=%s" % st["bob_lease"] in l]
    assert len(lines) == 1, log[-3000:]
    line = lines[0]
    for field in ("EVENT=lease.granted", "TICKET_ID=%s" % st["bob_ticket"],
                  "USER_ID=bob", "SESSION_ID=b1"):
        assert " " + field in line, line
    if bob_tenant:
        assert " TENANT=%s" % bob_tenant in line, line
    assert any("audit: lease.expired" in l and "LEASE_ID=%s" % st["bob_lease"] in l
               and "REASON=LEASE_EXPIRED" in l for l in log.splitlines()), log[-3000:]
    assert any("audit: ticket.expired" in l and "TICKET_ID=%s" % st["carol_ticket"] in l
               for l in log.splitlines()), log[-3000:]


def test_events_topic_can_be_named(broker):
    b = broker(BROKER_CAPACITY=1, KAFKA_EVENTS_TOPIC="it.audit.named.%s" % os.urandom(4).hex())
    topic = b.config["KAFKA_EVENTS_TOPIC"]
    r = b.acquire("dave", "d1")
    assert r.status == 200, r
    r = b.acquire("erin", "e1")
    assert r.status == 202, r
    tid = r.json["ticketId"]
    assert b.release("dave", "d1").status == 200
    b.wait_granted(tid)
    events = wait_events(b, [("lease.granted", lambda ev: ev.get("ticketId") == tid)])
    assert events_topic(b) == topic
    assert all(ev["type"] for _, ev in events)


def test_sandbox_expired_event(docker_broker):
    reason = docker_skip_reason()
    if reason:
        pytest.skip(reason)
    sb = docker_broker(BROKER_CAPACITY=1, LEASE_TTL_MS=4000)
    b = sb.b
    lease = sb.acquire("frank", "f1")
    sid, lid = lease["sandboxId"], lease["leaseId"]
    assert HEX32.match(sid or ""), lease
    scoped = b.redis.hget(b.key("sandbox:" + sid), "userId") or "frank"
    tenant, user = split_user(scoped)
    # no heartbeats: the lease expires, its sandbox is removed
    events = wait_events(b, [("lease.expired", lambda ev: ev.get("leaseId") == lid),
                             ("sandbox.expired", lambda ev: ev.get("sandboxId") == sid)],
                         timeout=120)
    for key, ev in events:
        check_shape(key, ev)
    (e,) = [ev for _, ev in events if ev["type"] == "sandbox.expired" and ev.get("sandboxId") == sid]
    assert e.get("reason") == "LEASE_EXPIRED", e
    assert e.get("userId") == user == "frank", e
    assert absent_or(e, "tenant", tenant), e
    assert b.redis.hget(b.key("sandbox:" + sid), "state") == "Terminated"


def test_handler_events(audit_broker):
    b = audit_broker
    st = story(b)
    tenant = b.tenant

    # A request with a key nobody issued.
    r = b.get("/v1/status", auth="itk_not_a_key_%s" % os.urandom(8).hex())
    assert r.status == 401, r
    denied_rid = r.headers["X-Request-ID"]

    def rid(value):
        return lambda ev: ev.get("requestId") == value

    events = wait_events(b, [
        ("lease.acquired", rid(st["alice_acquire_rid"])),
        ("lease.queued", rid(st["bob_acquire_rid"])),
        ("lease.queued", rid(st["carol_acquire_rid"])),
        ("lease.released", rid(st["alice_release_rid"])),
        ("auth.denied", rid(denied_rid)),
        ("lease.granted", lambda ev: ev.get("ticketId") == st["bob_ticket"]),
    ])
    for key, ev in events:
        check_shape(key, ev)
    by_rid = {}
    for _, ev in events:
        if "requestId" in ev:
            by_rid.setdefault(ev["requestId"], []).append(ev)

    (acq,) = [ev for ev in by_rid[st["alice_acquire_rid"]] if ev["type"] == "lease.acquired"]
    assert acq["tenant"] == tenant and acq["userId"] == "alice", acq
    assert acq["sessionId"] == "a1" and acq["leaseId"] == st["alice_lease"], acq

    (q,) = [ev for ev in by_rid[st["bob_acquire_rid"]] if ev["type"] == "lease.queued"]
    assert q["tenant"] == tenant and q["userId"] == "bob", q
    assert q["sessionId"] == "b1" and q["ticketId"] == st["bob_ticket"], q

    (rel,) = [ev for ev in by_rid[st["alice_release_rid"]] if ev["type"] == "lease.released"]
    assert rel["tenant"] == tenant and rel["userId"] == "alice", rel
    assert rel["leaseId"] == st["alice_lease"], rel

    (den,) = [ev for ev in by_rid[denied_rid] if ev["type"] == "auth.denied"]
    assert "tenant" not in den, den  # an unknown key stands for no tenant

    # The tenant's story, in order, as one handler process produced it
    # (the supervisor's events come from another producer: no order
    # between the two).
    story_types = [(ev["type"], ev.get("requestId"))
                   for _, ev in events if ev.get("tenant") == tenant]
    want = [("lease.acquired", st["alice_acquire_rid"]),
            ("lease.queued", st["bob_acquire_rid"]),
            ("lease.released", st["alice_release_rid"])]
    pos = [story_types.index(w) for w in want]
    assert pos == sorted(pos), story_types

    for ev in events:
        assert HEX32.match(ev[1].get("leaseId", "0" * 32)), ev


def test_sandbox_lifecycle_events(docker_broker):
    """An OpenSandbox sandbox's life (create, pause, resume, delete) as its
    tenant's events, with the request ids that caused them."""
    reason = docker_skip_reason()
    if reason:
        pytest.skip(reason)
    key = "kaud_" + uuid.uuid4().hex
    sb = docker_broker(BROKER_CAPACITY=2, OPENSANDBOX_API_KEYS="%s:acme" % key)
    b = sb.b
    hdr = {"OPEN-SANDBOX-API-KEY": key}
    body = {"image": {"uri": "sandbox-broker/base:latest"}, "entrypoint": ["sleep", "infinity"],
            "timeout": 600, "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    rids = {}
    r = b.request("POST", "/v1/sandboxes", body, hdr)
    assert r.status == 202, r
    sid = r.json["id"]
    rids["sandbox.created"] = r.headers["X-Request-ID"]
    wait_until(lambda: b.request("GET", "/v1/sandboxes/" + sid, None, hdr).json["status"]["state"]
               == "Running", 90, 0.2, "running")
    for verb, typ in (("pause", "sandbox.paused"), ("resume", "sandbox.resumed")):
        r = http_request(b.port, "POST", "/v1/sandboxes/%s/%s" % (sid, verb), {}, hdr)
        assert r.status == 202, r
        rids[typ] = r.headers["X-Request-ID"]
    r = http_request(b.port, "DELETE", "/v1/sandboxes/" + sid, None, hdr)
    assert r.status == 204, r
    rids["sandbox.deleted"] = r.headers["X-Request-ID"]
    events = wait_events(b, [(t, lambda ev, t=t: ev.get("sandboxId") == sid) for t in rids])
    mine = [(k, ev) for k, ev in events if ev.get("sandboxId") == sid]
    for k, ev in mine:
        check_shape(k, ev)
        assert ev["tenant"] == "acme", ev
    assert [ev["type"] for _, ev in mine] == list(rids), mine  # in order
    for _, ev in mine:
        assert ev["requestId"] == rids[ev["type"]], ev
