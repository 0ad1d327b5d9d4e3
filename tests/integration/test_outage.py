"""Redis or Kafka down: /health says so, requests get the documented 5xx JSON
and change nothing, and the broker recovers when the service is back.

These stop the session's shared Redis/Kafka (with scripts/stack, by pid
file) and always start them again, in a finalizer too.
"""

import pytest

from brokerlib import check_error, check_lease, diff_snapshots, run_stack, wait_until


@pytest.fixture
def outage(services):
    """outage(name): stop the shared service `name`; it is started again at
    teardown whatever happens."""
    stopped = []

    def stop(name):
        stopped.append(name)
        run_stack(services.env(), "stop", name, timeout=120)

    yield stop
    for name in stopped:
        run_stack(services.env(), "start", name, timeout=180)


def health(b):
    r = b.get("/health", timeout=30)
    return r


def wait_health(b, status, timeout):
    return wait_until(lambda: (lambda r: r if r.status == status else None)(health(b)),
                      timeout, 0.5, "GET /health %d" % status)


def test_kafka_down(broker, services, outage):
    # long TTLs: nobody heartbeats or polls while Kafka restarts (up to minutes on a loaded
    # box), and this test is about the outage, not about expiry
    b = broker(BROKER_CAPACITY=1, KAFKA_TIMEOUT_MS=2000, LEASE_TTL_MS=600000,
               TICKET_TTL_MS=600000)
    r = b.acquire("a", "s")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    q = b.acquire("b", "s")
    assert q.status == 202, q
    tb = q.json["ticketId"]

    outage("kafka")
    r = wait_health(b, 503, 30)
    assert r.json["status"] == "unhealthy", r
    assert r.json["checks"]["redis"] == "ok", r
    assert r.json["checks"]["kafka"] != "ok" and r.json["checks"]["kafka"], r

    # a ticket cannot be confirmed by Kafka: 503 and no ticket
    before = b.snapshot()
    r = b.acquire("c", "s", timeout=30)
    check_error(r, 503, "SERVICE_UNAVAILABLE")
    after = b.snapshot()
    assert not diff_snapshots(before, after), \
        "a 503 acquire changed Redis:\n" + "\n".join(diff_snapshots(before, after))

    # what needs only Redis still works
    r = b.heartbeat("a", "s")
    assert r.status == 200 and r.json["lease"]["leaseId"] == lid, r
    r = b.poll(tb)
    assert r.status == 200 and r.json["status"] == "queued", r
    st = b.status()
    assert st["queueDepth"] == 1 and st["activeSlots"] == 1, st

    run_stack(services.env(), "start", "kafka", timeout=180)
    wait_health(b, 200, 60)
    r = b.acquire("c", "s")
    assert r.status == 202 and r.json["position"] == 2, r
    tc = r.json["ticketId"]
    assert b.release("a", "s").status == 200
    check_lease(b.wait_granted(tb, timeout=60)["lease"], "b", "s")
    assert b.release("b", "s").status == 200
    check_lease(b.wait_granted(tc, timeout=60)["lease"], "c", "s")
    assert b.active() == 1


def test_redis_down(broker, services, outage):
    b = broker(BROKER_CAPACITY=1, REDIS_TIMEOUT_MS=1000)
    r = b.acquire("a", "s")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    q = b.acquire("b", "s")
    assert q.status == 202, q
    tb = q.json["ticketId"]

    outage("redis")
    r = wait_health(b, 503, 30)
    assert r.json["status"] == "unhealthy", r
    assert r.json["checks"]["redis"] != "ok" and r.json["checks"]["redis"], r

    for resp in (b.acquire("c", "s", timeout=30), b.poll(tb, timeout=30),
                 b.heartbeat("a", "s", timeout=30), b.release("a", "s", timeout=30),
                 b.get("/v1/status", timeout=30)):
        assert resp.status in (503, 504), resp
        check_error(resp, resp.status,
                    "SERVICE_UNAVAILABLE" if resp.status == 503 else "GATEWAY_TIMEOUT")

    run_stack(services.env(), "start", "redis", timeout=120)
    wait_health(b, 200, 60)
    # nothing was lost (Redis persists) and nothing changed while it was down
    r = b.heartbeat("a", "s")
    assert r.status == 200 and r.json["lease"]["leaseId"] == lid, r
    r = b.poll(tb)
    assert r.status == 200 and r.json["status"] == "queued", r
    check_error(b.heartbeat("c", "s"), 404, "LEASE_NOT_FOUND")
    # the supervisor got its Redis connection back: it still grants
    assert b.release("a", "s").status == 200
    check_lease(b.wait_granted(tb, timeout=60)["lease"], "b", "s")
    assert b.active() == 1
