"""Heartbeat, expiry and release."""

import time

from brokerlib import check_error, check_lease, now_ms, wait_until


def test_heartbeat_extends_then_expiry_frees_slot(broker):
    # heartbeats every 0.5 s: a stall of up to ~3 s on a loaded machine is fine
    ttl = 4000
    b = broker(BROKER_CAPACITY=1, LEASE_TTL_MS=ttl)
    t0 = now_ms()
    r = b.acquire("a", "s")
    assert r.status == 200, r
    lease = check_lease(r.json["lease"], "a", "s")
    lid, first_exp = lease["leaseId"], lease["expiresAtMs"]
    assert t0 < first_exp <= now_ms() + ttl + 1000, lease

    q = b.acquire("b", "s")
    assert q.status == 202 and q.json["position"] == 1, q
    tb = q.json["ticketId"]

    # heartbeat (both forms, alternating) for 2.5 TTLs: the lease stays
    last = first_exp
    by_id = False
    end = time.monotonic() + 2.5 * ttl / 1000.0
    beats = 0
    while time.monotonic() < end:
        r = b.heartbeat(lease_id=lid) if by_id else b.heartbeat("a", "s")
        by_id = not by_id
        beats += 1
        assert r.status == 200 and r.json["status"] == "active", r
        hl = check_lease(r.json["lease"], "a", "s")
        assert hl["leaseId"] == lid, r
        exp = hl["expiresAtMs"]
        n = now_ms()
        assert exp >= last, "expiry went backwards: %d -> %d" % (last, exp)
        assert n < exp <= n + ttl + 1000, (n, r)
        last = exp
        p = b.poll(tb)
        assert p.status == 200 and p.json["status"] == "queued", p
        assert p.json["position"] == 1, p
        time.sleep(0.5)
    assert beats >= 5
    assert last > first_exp + ttl, (first_exp, last)
    assert lid in b.live_leases()
    assert int(b.redis.zscore(b.key("leases"), lid)) == last
    assert b.active() == 1

    # stop heartbeating: the reaper frees the slot and the ticket is granted
    def granted():
        p = b.poll(tb)
        assert p.status == 200 and p.json["status"] in ("queued", "granted"), p
        return p.json if p.json["status"] == "granted" else None
    g = wait_until(granted, ttl / 1000.0 + 5 + 5, 0.1, "queued ticket granted after expiry")
    seen_at = now_ms()
    assert seen_at >= last, "slot freed before the lease expired (%d < %d)" % (seen_at, last)
    gl = check_lease(g["lease"], "b", "s")
    assert gl["leaseId"] != lid

    check_error(b.heartbeat("a", "s"), 404, "LEASE_NOT_FOUND")
    check_error(b.heartbeat(lease_id=lid), 404, "LEASE_NOT_FOUND")
    check_error(b.release("a", "s"), 404, "LEASE_NOT_FOUND")
    assert lid not in b.live_leases()
    assert b.live_leases() == {gl["leaseId"]}
    assert b.active() == 1
    h = b.redis.hgetall(b.key("lease:" + lid))
    assert not h or h.get("state") != "active", h


def test_expiry_without_queue_frees_slot(broker):
    ttl = 2000
    b = broker(BROKER_CAPACITY=1, LEASE_TTL_MS=ttl)
    r = b.acquire("a", "s")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    wait_until(lambda: b.active() == 0, ttl / 1000.0 + 5, 0.1, "slot freed by expiry")
    st = b.status()
    assert st["activeSlots"] == 0 and st["activeLeases"] == 0, st
    check_error(b.heartbeat(lease_id=lid), 404, "LEASE_NOT_FOUND")
    r = b.acquire("c", "s")
    assert r.status == 200, r


def test_release_frees_slot(broker):
    b = broker(BROKER_CAPACITY=1)
    r = b.acquire("a", "s")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    r = b.release("a", "s")
    assert r.status == 200, r
    assert r.json == {"status": "released", "leaseId": lid, "reason": "idle"}, r
    assert b.active() == 0
    assert lid not in b.live_leases()
    st = b.status()
    assert st["activeSlots"] == 0 and st["activeLeases"] == 0, st
    check_error(b.release("a", "s"), 404, "LEASE_NOT_FOUND")
    check_error(b.heartbeat("a", "s"), 404, "LEASE_NOT_FOUND")
    check_error(b.heartbeat(lease_id=lid), 404, "LEASE_NOT_FOUND")

    # the freed slot is granted at once; reason "deleted" is echoed
    r = b.acquire("b", "s")
    assert r.status == 200, r
    lid2 = r.json["lease"]["leaseId"]
    assert lid2 != lid
    r = b.release("b", "s", reason="deleted")
    assert r.status == 200, r
    assert r.json == {"status": "released", "leaseId": lid2, "reason": "deleted"}, r
    r = b.acquire("c", "s")
    assert r.status == 200, r
    r = b.release("c", "s", reason="idle")
    assert r.status == 200 and r.json["reason"] == "idle", r


def test_release_of_another_users_session_is_404(broker):
    b = broker(BROKER_CAPACITY=2)
    r = b.acquire("alice", "s1")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    snap = b.snapshot()
    check_error(b.release("bob", "s1"), 404, "LEASE_NOT_FOUND")
    check_error(b.release("bob", "s1", reason="deleted"), 404, "LEASE_NOT_FOUND")
    check_error(b.heartbeat("bob", "s1"), 404, "LEASE_NOT_FOUND")
    assert b.snapshot() == snap
    assert lid in b.live_leases()
    assert b.redis.exists(b.key("lease:" + lid))
    r = b.heartbeat("alice", "s1")
    assert r.status == 200 and r.json["lease"]["leaseId"] == lid, r


def test_release_invalid_reason_is_400(broker):
    b = broker(BROKER_CAPACITY=2)
    r = b.acquire("alice", "s1")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    snap = b.snapshot()
    for reason in ("forever", "", "IDLE", 5, ["idle"], {"r": 1}):
        body = {"userId": "alice", "sessionId": "s1", "reason": reason}
        check_error(b.post("/v1/leases/release", body), 400, "INVALID_REQUEST")
    assert b.snapshot() == snap
    r = b.heartbeat(lease_id=lid)
    assert r.status == 200, r


def test_granted_ticket_answers_granted_while_lease_lives(broker):
    b = broker(BROKER_CAPACITY=1)
    assert b.acquire("a", "s").status == 200
    q = b.acquire("b", "s")
    assert q.status == 202, q
    t = q.json["ticketId"]
    assert b.release("a", "s").status == 200
    g = b.wait_granted(t)
    lid = check_lease(g["lease"], "b", "s")["leaseId"]
    for _ in range(3):
        r = b.poll(t)
        assert r.status == 200 and r.json["status"] == "granted", r
        assert r.json["ticketId"] == t and r.json["lease"]["leaseId"] == lid, r
    # re-acquire of the session now returns the granted lease
    r = b.acquire("b", "s")
    assert r.status == 200 and r.json["lease"]["leaseId"] == lid, r


def test_json_content_type_with_charset_is_accepted(broker):
    b = broker(BROKER_CAPACITY=1)
    r = b.post("/v1/leases/acquire", {"userId": "a", "sessionId": "s"},
               headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status == 200, r
    r = b.post("/v1/leases/heartbeat", {"userId": "a", "sessionId": "s"},
               headers={"Content-Type": "application/json;charset=UTF-8"})
    assert r.status == 200, r
