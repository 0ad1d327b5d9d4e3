"""Chaos: the supervisor SIGKILLed at the worst moment, again and again,
while queued tickets are granted with real sandboxes (issue 11).

Each kill lands just after a grant, while its lease is 'provisioning' and
its sandbox is being made (or not yet started). Once the list of sandboxes
to make lived only in the supervisor's memory; now the grant stores the
intent with the lease (grant.lua), so the intent waits in Redis for the
next supervisor, or, taken by the dead one, its lease is found by the
recovery (lease_stale.lua). The lease must not be reaped for missing
heartbeats (nobody could heartbeat it yet), and the next supervisor
finishes it within seconds.

Every ticket is granted exactly once and gets a running sandbox; active
slots never exceed capacity; no container is left over at the end.
"""

import os
import random
import time

from brokerlib import Sampler, wait_until
from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

require_docker()

CAPACITY = 3
N_TICKETS = CAPACITY + 20  # one kill per queued ticket's grant
MIN_KILLS = 20


def test_supervisor_killed_mid_provisioning_loses_nothing(docker_broker):
    seed = int(os.environ.get("IT_SEED") or time.time_ns() % 1000003)
    rng = random.Random(seed)
    print("IT_SEED=%d" % seed)
    sb = docker_broker(BROKER_CAPACITY=CAPACITY, IDLE_POLICY="delete", TICKET_TTL_MS=300000,
                       SANDBOX_IMAGE="sandbox-broker/tiny:latest")
    b = sb.b
    holders = {}   # user -> lease id, leases we still hold
    tickets = {}   # ticket -> user
    for i in range(N_TICKETS):
        r = b.acquire("c%d" % i, "s", timeout=60)
        assert r.status in (200, 202), r
        if r.status == 200:
            holders["c%d" % i] = r.json["lease"]["leaseId"]
        else:
            tickets[r.json["ticketId"]] = "c%d" % i

    granted = {}   # ticket -> lease id
    kills = 0
    deadline = time.monotonic() + 900
    with Sampler(b.active, CAPACITY) as samp:
        while (tickets.keys() - granted.keys() or holders) and time.monotonic() < deadline:
            # release one held lease (its sandbox ran): a queued ticket is granted
            if holders:
                user, lid = holders.popitem()
                r = b.release(user, "s", "deleted", timeout=60)
                assert r.status == 200 and r.json["leaseId"] == lid, r
            # watch for the grant; kill the supervisor as soon as one is
            # provisioning (or, some of the time, a moment later)
            t_end = time.monotonic() + 120
            killed_this_round = False
            while time.monotonic() < t_end:
                for t in list(tickets.keys() - granted.keys()):
                    p = b.poll(t, timeout=30)
                    assert p.status == 200, p
                    st = p.json["status"]
                    assert st in ("queued", "provisioning", "granted"), (t, p)
                    # kill at the grant: while provisioning if we see it
                    # (the worst moment), else once it is granted
                    if st in ("provisioning", "granted") and not killed_this_round:
                        time.sleep(rng.choice((0.0, 0.0, rng.uniform(0.0, 0.3))))
                        b.stop("supervisor", kill=True)
                        kills += 1
                        killed_this_round = True
                        b.start("supervisor")
                    if st == "granted":
                        lease = p.json["lease"]
                        lid = lease["leaseId"]
                        assert lid not in granted.values(), "lease %s granted twice" % lid
                        granted[t] = lid
                        sid = lease["sandboxId"]
                        assert DOCKER.state("sb-" + sid) == "running", (t, lease)
                        holders[tickets[t]] = lid
                if holders:
                    break
                time.sleep(0.05)
            assert holders or not (tickets.keys() - granted.keys()), \
                "no grant within 120 s; granted %d of %d" % (len(granted), len(tickets))
        samp.check()
    print("kills: %d, granted: %d" % (kills, len(granted)))
    assert set(granted) == set(tickets), "tickets never granted: %r" % (tickets.keys() - granted.keys())
    assert kills >= MIN_KILLS, kills
    # everything released: the slots are free and no container is left
    wait_until(lambda: b.active() == 0, 30, desc="slots free")
    wait_until(lambda: sb.containers() == [], 90, desc="no container left over")
    # the index of provisioning leases (lease_stale reads it) kept no entry
    assert b.redis.zcard(b.key("provisioning")) == 0, b.redis.zrange(b.key("provisioning"), 0, -1)


def test_stale_scan_indexes_leases_made_before_the_index(docker_broker):
    """A lease left 'provisioning' by a broker version without the index
    (no entry in P..provisioning, no P..provisioning:indexed marker) is
    still found and finished: the first scan indexes every such lease."""
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE="sandbox-broker/tiny:latest")
    b = sb.b
    r = b.acquire("old", "s", timeout=60)
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    sid = r.json["lease"]["sandboxId"]
    b.stop("supervisor", kill=True)
    # as an older version left it when killed before the lease was made active:
    # provisioning, no index entry, no marker, no intent
    b.redis.hset(b.key("lease:%s" % lid), mapping={"state": "provisioning", "createdAt": "1"})
    b.redis.delete(b.key("provisioning"), b.key("provisioning:indexed"))
    b.start("supervisor")

    def finished():
        return b.redis.hget(b.key("lease:%s" % lid), "state") == "active"
    wait_until(finished, 30, desc="the old lease finished by the next supervisor")
    assert b.redis.get(b.key("provisioning:indexed")) == "1"
    assert b.redis.zcard(b.key("provisioning")) == 0
    assert b.redis.hget(b.key("lease:%s" % lid), "sandboxId") == sid
    assert sb.run(r.json["lease"], "echo ok")["stdout"] == "ok\n"
