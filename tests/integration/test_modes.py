"""user_shared and multi_user_shared slots and seats."""

import collections
import threading
import time

from brokerlib import Sampler, check_lease, wait_until


def assert_stays_queued(b, ticket, seconds=1.5):
    """Poll a ticket for a while (several supervisor ticks); it stays queued."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r = b.poll(ticket)
        assert r.status == 200 and r.json["status"] == "queued", r
        time.sleep(0.1)


def test_user_shared_sessions_share_one_slot(broker):
    b = broker(BROKER_CAPACITY=1)
    r1 = b.acquire("u", "s1", mode="user_shared")
    assert r1.status == 200, r1
    l1 = check_lease(r1.json["lease"], "u", "s1", "user_shared")
    r2 = b.acquire("u", "s2", mode="user_shared")
    assert r2.status == 200, "second session of a slot holder must be granted at capacity: %r" % (r2,)
    l2 = check_lease(r2.json["lease"], "u", "s2", "user_shared")
    assert l1["leaseId"] != l2["leaseId"]
    assert b.active() == 1
    st = b.status()
    assert st["activeSlots"] == 1 and st["activeLeases"] == 2, st
    assert st["modes"]["user_shared"] == {"slots": 1, "leases": 2}, st

    # another user needs a slot of its own: queued
    q = b.acquire("v", "s1", mode="user_shared")
    assert q.status == 202 and q.json["position"] == 1, q
    tv = q.json["ticketId"]
    # a third session of u needs no new slot: granted at once, queue or not
    r3 = b.acquire("u", "s3", mode="user_shared")
    assert r3.status == 200, r3
    assert b.active() == 1

    with Sampler(b.active, 1) as samp:
        # releasing some of u's sessions keeps the slot
        assert b.release("u", "s1").status == 200
        assert b.release("u", "s3").status == 200
        assert b.active() == 1
        assert_stays_queued(b, tv)
        assert b.active() == 1
        r = b.heartbeat("u", "s2")
        assert r.status == 200 and r.json["lease"]["leaseId"] == l2["leaseId"], r
        # releasing the last one frees it: v is granted
        assert b.release("u", "s2").status == 200
        g = b.wait_granted(tv)
        check_lease(g["lease"], "v", "s1", "user_shared")
        assert b.active() == 1
    samp.check()
    st = b.status()
    assert st["activeSlots"] == 1 and st["activeLeases"] == 1, st


def test_user_shared_release_all_frees_slot(broker):
    b = broker(BROKER_CAPACITY=1)
    for s in ("s1", "s2"):
        assert b.acquire("u", s, mode="user_shared").status == 200
    assert b.release("u", "s2").status == 200
    assert b.active() == 1
    assert b.release("u", "s1").status == 200
    assert b.active() == 0
    st = b.status()
    assert st["activeSlots"] == 0 and st["activeLeases"] == 0, st
    # an exclusive session of another user now gets the slot at once
    assert b.acquire("w", "s1").status == 200


def test_multi_user_shared_seats(broker):
    b = broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    m = "multi_user_shared"
    ra = b.acquire("a", "s1", mode=m, pool="p")
    assert ra.status == 200, ra
    la = check_lease(ra.json["lease"], "a", "s1", m, "p")
    rb = b.acquire("b", "s1", mode=m, pool="p")
    assert rb.status == 200, rb
    lb = check_lease(rb.json["lease"], "b", "s1", m, "p")
    assert {la["seat"], lb["seat"]} == {1, 2}, (la, lb)
    assert b.active() == 1, "a and b must share one pool slot"
    st = b.status()
    assert st["modes"]["multi_user_shared"] == {"slots": 1, "leases": 2}, st

    # the pool sandbox is full: c needs a second slot of the same pool
    rc = b.acquire("c", "s1", mode=m, pool="p")
    assert rc.status == 200, rc
    lc = check_lease(rc.json["lease"], "c", "s1", m, "p")
    assert lc["seat"] in (1, 2), lc
    assert b.active() == 2
    st = b.status()
    assert st["modes"]["multi_user_shared"] == {"slots": 2, "leases": 3}, st

    # a second session of a gets a's seat again, no new slot
    ra2 = b.acquire("a", "s2", mode=m, pool="p")
    assert ra2.status == 200, ra2
    la2 = check_lease(ra2.json["lease"], "a", "s2", m, "p")
    assert la2["seat"] == la["seat"], (la, la2)
    assert la2["leaseId"] != la["leaseId"]
    assert b.active() == 2

    # d takes the free seat of the second pool sandbox: no new slot
    rd = b.acquire("d", "s1", mode=m, pool="p")
    assert rd.status == 200, rd
    ld = check_lease(rd.json["lease"], "d", "s1", m, "p")
    assert {lc["seat"], ld["seat"]} == {1, 2}, (lc, ld)
    assert b.active() == 2
    st = b.status()
    assert st["modes"]["multi_user_shared"] == {"slots": 2, "leases": 5}, st

    # both pool sandboxes are full and capacity is reached: e waits
    re_ = b.acquire("e", "s1", mode=m, pool="p")
    assert re_.status == 202, re_
    te = re_.json["ticketId"]

    with Sampler(b.active, 2) as samp:
        # c leaves: its seat in the second sandbox frees, and e takes it
        # (no new slot is needed)
        assert b.release("c", "s1").status == 200
        g = b.wait_granted(te)
        le = check_lease(g["lease"], "e", "s1", m, "p")
        assert le["seat"] == lc["seat"], (lc, le)
        assert b.active() == 2
        # the second sandbox lives while one of its users does
        assert b.release("d", "s1").status == 200
        assert b.active() == 2
        assert b.release("e", "s1").status == 200
        assert b.active() == 1
    samp.check()
    # releasing every session of every user of the first pool sandbox frees it
    for u, s in (("a", "s1"), ("b", "s1")):
        assert b.release(u, s).status == 200
        assert b.active() == 1
    assert b.release("a", "s2").status == 200
    assert b.active() == 0
    st = b.status()
    assert st["modes"]["multi_user_shared"] == {"slots": 0, "leases": 0}, st


def test_multi_user_shared_default_pool(broker):
    b = broker(BROKER_CAPACITY=1, POOL_SEATS=2)
    r = b.acquire("a", "s1", mode="multi_user_shared")
    assert r.status == 200, r
    check_lease(r.json["lease"], "a", "s1", "multi_user_shared", "default")
    r = b.acquire("b", "s1", mode="multi_user_shared", pool="default")
    assert r.status == 200, r
    assert b.active() == 1
    # other pools need their own slot
    r = b.acquire("c", "s1", mode="multi_user_shared", pool="other")
    assert r.status == 202, r


def test_multi_user_shared_concurrent_seats_are_unique(broker):
    seats, cap, users = 3, 2, 6
    b = broker(BROKER_CAPACITY=cap, POOL_SEATS=seats)
    barrier = threading.Barrier(users)
    results = [None] * users
    errors = []

    def worker(i):
        try:
            barrier.wait(10)
            results[i] = b.acquire("user%d" % i, "s", mode="multi_user_shared", pool="p")
        except Exception as e:
            errors.append(repr(e))

    with Sampler(b.active, cap) as samp:
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(users)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    samp.check()
    assert not errors, errors
    assert all(r.status == 200 for r in results), results
    got = collections.Counter(
        check_lease(r.json["lease"], None, None, "multi_user_shared", "p")["seat"]
        for r in results)
    # two pool sandboxes of 3 seats: every seat number exactly twice
    assert got == {1: 2, 2: 2, 3: 2}, got
    assert b.active() == cap
    wait_until(lambda: b.status()["modes"]["multi_user_shared"] == {"slots": 2, "leases": 6},
               5, desc="status counts")
