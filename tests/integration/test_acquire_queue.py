"""Acquire, the FIFO queue, idempotent re-acquire, ticket abandonment."""

import threading
import time

from brokerlib import (HEX32, Sampler, check_error, check_lease, kafka_end_offsets,
                       kafka_group_offsets, wait_until)


def poll_until_one_granted(b, tickets, timeout=30):
    """Poll every ticket (keeping them all alive) until one is granted.

    Returns (ticketId, poll body) of the first granted one seen; fails if
    two are granted in the same round or any reads expired."""
    def check():
        granted = []
        for t in tickets:
            r = b.poll(t)
            assert r.status == 200, r
            assert r.json["ticketId"] == t, r
            assert r.json["status"] in ("queued", "granted"), r
            if r.json["status"] == "granted":
                granted.append((t, r.json))
        assert len(granted) <= 1, "two tickets granted for one slot: %r" % granted
        return granted[0] if granted else None
    return wait_until(check, timeout, 0.1, "one of %r granted" % (tickets,))


def queued_positions(b, tickets):
    out = []
    for t in tickets:
        r = b.poll(t)
        assert r.status == 200, r
        out.append((r.json["status"], r.json.get("position")))
    return out


def test_five_concurrent_acquires_capacity_two_fifo(broker):
    b = broker(BROKER_CAPACITY=2)
    n = 5
    barrier = threading.Barrier(n)
    results = [None] * n
    errors = []

    def worker(i):
        try:
            barrier.wait(10)
            results[i] = b.acquire("u%d" % i, "s%d" % i)
        except Exception as e:  # reported below
            errors.append(repr(e))

    with Sampler(b.active, 2) as samp:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors

        granted = [i for i in range(n) if results[i].status == 200]
        queued = [i for i in range(n) if results[i].status == 202]
        assert len(granted) == 2 and len(queued) == 3, results
        for i in granted:
            assert results[i].json["status"] == "granted", results[i]
            check_lease(results[i].json["lease"], "u%d" % i, "s%d" % i)
        for i in queued:
            assert results[i].json["status"] == "queued", results[i]
            assert HEX32.match(results[i].json["ticketId"]), results[i]
        assert sorted(results[i].json["position"] for i in queued) == [1, 2, 3], \
            [results[i] for i in queued]
        assert b.active() == 2

        order = sorted(queued, key=lambda i: results[i].json["position"])
        ticket_of = {i: results[i].json["ticketId"] for i in queued}
        holders = list(granted)
        remaining = list(order)
        lease_ids = {results[i].json["lease"]["leaseId"] for i in granted}
        while remaining:
            h = holders.pop(0)
            r = b.release("u%d" % h, "s%d" % h)
            assert r.status == 200 and r.json["status"] == "released", r
            expected = remaining.pop(0)
            t, body = poll_until_one_granted(
                b, [ticket_of[i] for i in [expected] + remaining])
            assert t == ticket_of[expected], \
                "FIFO broken: %s granted before %s" % (t, ticket_of[expected])
            lease = check_lease(body["lease"], "u%d" % expected, "s%d" % expected)
            assert lease["leaseId"] not in lease_ids, body
            lease_ids.add(lease["leaseId"])
            # the granted ticket's lease is a real lease
            r = b.heartbeat(lease_id=lease["leaseId"])
            assert r.status == 200 and r.json["lease"]["leaseId"] == lease["leaseId"], r
            r = b.heartbeat("u%d" % expected, "s%d" % expected)
            assert r.status == 200 and r.json["lease"]["leaseId"] == lease["leaseId"], r
            tk = b.redis.hgetall(b.key("ticket:" + t))
            assert tk.get("state") == "granted" and tk.get("leaseId") == lease["leaseId"], tk
            # the rest stay queued and move up one place
            want = [("queued", p + 1) for p in range(len(remaining))]
            wait_until(lambda: queued_positions(b, [ticket_of[i] for i in remaining]) == want,
                       10, 0.1, "positions %r" % (want,))
            assert b.active() == 2
            holders.append(expected)
        assert b.redis.zcard(b.key("queue")) == 0
        held = {b.heartbeat("u%d" % i, "s%d" % i).json["lease"]["leaseId"]
                for i in holders}
        assert len(held) == 2 and b.live_leases() == held, (held, b.live_leases())
    samp.check()
    # one Kafka message per queued ticket, all consumed and committed
    topic, group = b.config["KAFKA_TOPIC"], b.config["KAFKA_GROUP"]
    assert kafka_end_offsets(b.services, topic) == {0: 3}
    wait_until(lambda: kafka_group_offsets(b.services, group, topic) == {0: (3, 3)},
               30, 1.0, "supervisor group committed every ticket message")


def test_idempotent_reacquire(broker):
    b = broker(BROKER_CAPACITY=2)
    r1 = b.acquire("alice", "s1")
    assert r1.status == 200, r1
    lease = check_lease(r1.json["lease"], "alice", "s1")
    r2 = b.acquire("alice", "s1")
    assert r2.status == 200 and r2.json["status"] == "granted", r2
    assert r2.json["lease"]["leaseId"] == lease["leaseId"], r2
    r3 = b.acquire("alice", "s1", mode="exclusive")
    assert r3.status == 200 and r3.json["lease"]["leaseId"] == lease["leaseId"], r3
    st = b.status()
    assert st["activeSlots"] == 1 and st["activeLeases"] == 1, st
    assert b.active() == 1

    # a different mode for a held session
    snap = b.snapshot()
    r = b.acquire("alice", "s1", mode="user_shared")
    check_error(r, 409, "MODE_CONFLICT")
    r = b.acquire("alice", "s1", mode="multi_user_shared", pool="p")
    check_error(r, 409, "MODE_CONFLICT")
    assert b.snapshot() == snap

    # fill the capacity, then queue; re-acquire of a queued session
    assert b.acquire("bob", "s1").status == 200
    q1 = b.acquire("carol", "s1")
    assert q1.status == 202 and q1.json["position"] == 1, q1
    q2 = b.acquire("carol", "s1")
    assert q2.status == 202, q2
    assert q2.json["ticketId"] == q1.json["ticketId"], (q1, q2)
    assert q2.json["position"] == 1, q2
    assert b.redis.zcard(b.key("queue")) == 1
    st = b.status()
    assert st["queueDepth"] == 1 and st["activeSlots"] == 2, st
    assert b.active() == 2


def test_reacquire_of_held_pool_session_with_other_pool_conflicts(broker):
    b = broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    r = b.acquire("alice", "s1", mode="multi_user_shared", pool="p1")
    assert r.status == 200, r
    check_lease(r.json["lease"], "alice", "s1", "multi_user_shared", "p1")
    r2 = b.acquire("alice", "s1", mode="multi_user_shared", pool="p1")
    assert r2.status == 200 and r2.json["lease"]["leaseId"] == r.json["lease"]["leaseId"], r2
    snap = b.snapshot()
    check_error(b.acquire("alice", "s1", mode="multi_user_shared", pool="p2"),
                409, "MODE_CONFLICT")
    check_error(b.acquire("alice", "s1"), 409, "MODE_CONFLICT")
    assert b.snapshot() == snap


def test_abandoned_ticket_is_skipped(broker):
    # c is polled every 0.3 s: a stall of up to ~2.5 s does not expire it
    ttl = 3000
    b = broker(BROKER_CAPACITY=1, TICKET_TTL_MS=ttl)
    assert b.acquire("a", "s").status == 200
    rb = b.acquire("b", "s")
    assert rb.status == 202 and rb.json["position"] == 1, rb
    rc = b.acquire("c", "s")
    assert rc.status == 202 and rc.json["position"] == 2, rc
    tb, tc = rb.json["ticketId"], rc.json["ticketId"]

    # keep c's ticket alive, leave b's alone for well past TICKET_TTL_MS
    end = time.monotonic() + ttl / 1000.0 + 1.5
    while time.monotonic() < end:
        r = b.poll(tc)
        assert r.status == 200 and r.json["status"] == "queued", r
        time.sleep(0.3)

    r = b.release("a", "s")
    assert r.status == 200, r

    def c_granted():
        r = b.poll(tc)
        assert r.status == 200 and r.json["status"] in ("queued", "granted"), r
        return r.json if r.json["status"] == "granted" else None
    g = wait_until(c_granted, 30, 0.2, "ticket of c granted")
    lease = check_lease(g["lease"], "c", "s")

    r = b.poll(tb)
    assert r.status == 200, r
    assert r.json == {"status": "expired", "ticketId": tb}, r
    assert b.redis.hget(b.key("ticket:" + tb), "state") == "expired"
    assert b.active() == 1
    assert b.live_leases() == {lease["leaseId"]}

    # a granted ticket keeps answering granted while its lease lives, even
    # when nobody polled it for longer than TICKET_TTL_MS
    time.sleep(ttl / 1000.0 + 1.0)
    r = b.poll(tc)
    assert r.status == 200 and r.json["status"] == "granted", r
    assert r.json["lease"]["leaseId"] == lease["leaseId"], r
    # b's session can queue again (a new ticket, not the expired one)
    r = b.acquire("b", "s")
    assert r.status == 202 and r.json["ticketId"] != tb, r
