"""Killing the supervisor loses no ticket and grants none twice
(docs/ARCHITECTURE.md §5)."""

import os
import random
import threading
import time

from brokerlib import (Sampler, check_lease, kafka_end_offsets, kafka_group_offsets,
                       wait_until)

N_TICKETS = 6
GRANT_TIMEOUT = 60  # a restarted supervisor waits out KAFKA_SESSION_TIMEOUT_MS


class Poller:
    """Keeps every ticket alive like real clients do, and records every
    lease id each ticket was ever seen granted with."""

    def __init__(self, b, tickets):
        self.b = b
        self.tickets = list(tickets)
        self.locks = {t: threading.Lock() for t in self.tickets}
        self.done = set()        # tickets whose lease the test released
        self.seen = {t: set() for t in self.tickets}
        self.bad = []            # answers other than queued/granted
        self.errors = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for t in self.tickets:
                with self.locks[t]:
                    if t in self.done:
                        continue
                    try:
                        r = self.b.poll(t, timeout=10)
                    except Exception as e:
                        self.errors.append(repr(e))
                        continue
                    if r.status != 200 or r.json.get("status") not in ("queued", "granted"):
                        self.bad.append(r)
                    elif r.json["status"] == "granted":
                        self.seen[t].add(r.json["lease"]["leaseId"])
            self._stop.wait(0.2)

    def retire(self, t):
        with self.locks[t]:
            self.done.add(t)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(30)
        return False


def lease_hashes(b):
    return sorted(k[len(b.prefix) + len("lease:"):]
                  for k in b.redis.scan_iter(match=b.prefix + "lease:*", count=1000))


def test_supervisor_sigkill_loses_no_ticket_and_grants_none_twice(broker):
    seed = int(os.environ.get("IT_SEED") or time.time_ns() % 1000003)
    rng = random.Random(seed)
    print("IT_SEED=%d" % seed)
    b = broker(BROKER_CAPACITY=1, TICKET_TTL_MS=120000)

    r = b.acquire("holder", "s")
    assert r.status == 200, r
    holder = r.json["lease"]["leaseId"]
    tickets, user_of = [], {}
    for i in range(N_TICKETS):
        if i == N_TICKETS - 2:
            # 1st crash: SIGKILL; the last two tickets are queued (Redis +
            # Kafka) while no supervisor runs
            b.stop("supervisor", kill=True)
        q = b.acquire("w%d" % i, "s")
        assert q.status == 202 and q.json["position"] == i + 1, q
        tickets.append(q.json["ticketId"])
        user_of[q.json["ticketId"]] = "w%d" % i

    # more kills at random moments of the grant sequence, at ticket #k:
    # "after": release its lease, wait a random delay (the next grant runs
    # within milliseconds of a release, its Kafka commit a little later),
    # SIGKILL, restart; "before": SIGKILL, release while no supervisor runs,
    # restart. At least one.
    def kill_plan():
        return (rng.choice(("after", "after", "before")),
                rng.choice((0.0, rng.uniform(0.0, 0.05), rng.uniform(0.0, 0.4))))
    kills = {rng.randrange(0, N_TICKETS - 1): kill_plan()}
    for k in range(N_TICKETS - 1):
        if k not in kills and rng.random() < 0.4:
            kills[k] = kill_plan()
    print("kills at ticket #k (when, delay): %r" % sorted(kills.items()))

    granted = {}   # ticket -> leaseId, in grant order
    with Sampler(b.active, 1) as samp, Poller(b, tickets) as poller:
        # the slot frees while the supervisor is dead
        r = b.release("holder", "s")
        assert r.status == 200 and r.json["leaseId"] == holder, r
        b.start("supervisor")

        for k, t in enumerate(tickets):
            g = b.wait_granted(t, timeout=GRANT_TIMEOUT)
            lease = check_lease(g["lease"], user_of[t], "s")
            lid = lease["leaseId"]
            assert lid not in granted.values(), "lease %s given to two tickets" % lid
            assert lid != holder
            granted[t] = lid
            # exactly this ticket holds the slot; the later ones still wait
            for j, other in enumerate(tickets[k + 1:]):
                p = b.poll(other)
                assert p.status == 200 and p.json["status"] == "queued", \
                    "ticket #%d granted while #%d holds the only slot: %r" % (k + 1 + j, k, p)
            assert b.live_leases() == {lid}, (b.live_leases(), lid)
            assert lease_hashes(b) == [lid], (lease_hashes(b), lid)
            tk = b.redis.hgetall(b.key("ticket:" + t))
            assert tk.get("state") == "granted" and tk.get("leaseId") == lid, tk
            assert b.active() == 1

            poller.retire(t)
            when, delay = kills.get(k, (None, 0))
            if when == "before":
                b.stop("supervisor", kill=True)
            r = b.release(user_of[t], "s")
            assert r.status == 200 and r.json["leaseId"] == lid, r
            if when == "after":
                time.sleep(delay)
                b.stop("supervisor", kill=True)
            if when:
                b.start("supervisor")

    samp.check()
    assert not poller.errors, poller.errors[:5]
    assert not poller.bad, poller.bad[:5]
    assert list(granted) == tickets
    assert len(set(granted.values())) == N_TICKETS
    for t in tickets:
        # never seen with any other lease than the one it was granted
        assert poller.seen[t] <= {granted[t]}, (t, poller.seen[t], granted[t])
    # everything released: nothing left behind, nothing granted late
    wait_until(lambda: b.redis.zcard(b.key("queue")) == 0, 5, desc="queue empty")
    assert b.active() == 0
    assert b.live_leases() == set()
    assert lease_hashes(b) == []
    # and a supervisor that saw two crashes still serves the queue
    assert b.acquire("late1", "s").status == 200
    q = b.acquire("late2", "s")
    assert q.status == 202, q
    assert b.release("late1", "s").status == 200
    b.wait_granted(q.json["ticketId"], timeout=GRANT_TIMEOUT)
    # no stale Kafka message re-granted an old ticket meanwhile
    for t in tickets:
        p = b.poll(t)
        assert not (p.status == 200 and p.json.get("status") == "granted"
                    and p.json["lease"]["leaseId"] != granted[t]), p
    # every ticket message is in Kafka once, and the group committed them all
    topic, group = b.config["KAFKA_TOPIC"], b.config["KAFKA_GROUP"]
    assert kafka_end_offsets(b.services, topic) == {0: N_TICKETS + 1}
    wait_until(lambda: kafka_group_offsets(b.services, group, topic)
               == {0: (N_TICKETS + 1, N_TICKETS + 1)},
               60, 1.0, "supervisor group committed every ticket message")
