"""A storm of concurrent acquires never over-grants (docs/ARCHITECTURE.md §5)."""

import concurrent.futures
import threading

from brokerlib import Sampler, check_lease, kafka_end_offsets


def test_storm_200_acquires_capacity_10(broker):
    cap, n, workers = 10, 200, 50
    b = broker(BROKER_CAPACITY=cap, TICKET_TTL_MS=600000)
    start = threading.Event()

    def one(i):
        start.wait(30)
        return b.acquire("storm%d" % (i % 37), "sess%d" % i, timeout=60)

    with Sampler(b.active, cap, interval=0.002) as samp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            futs = [ex.submit(one, i) for i in range(n)]
            start.set()
            results = [f.result(timeout=180) for f in futs]
    samp.check()

    by_status = {}
    for r in results:
        by_status.setdefault(r.status, []).append(r)
    assert set(by_status) <= {200, 202}, \
        {s: rs[:3] for s, rs in by_status.items() if s not in (200, 202)}
    granted, queued = by_status.get(200, []), by_status.get(202, [])
    assert len(granted) == cap, "granted %d, want %d" % (len(granted), cap)
    assert len(queued) == n - cap
    lease_ids = set()
    for r in granted:
        assert r.json["status"] == "granted", r
        lease_ids.add(check_lease(r.json["lease"])["leaseId"])
    assert len(lease_ids) == cap
    positions = sorted(r.json["position"] for r in queued)
    assert positions == list(range(1, n - cap + 1)), positions
    assert len({r.json["ticketId"] for r in queued}) == n - cap

    assert b.active() == cap
    assert b.live_leases() == lease_ids
    assert b.redis.zcard(b.key("queue")) == n - cap
    st = b.status()
    assert st["activeSlots"] == cap and st["activeLeases"] == cap, st
    assert st["queueDepth"] == n - cap, st
    # every queued ticket was produced to Kafka (one partition keeps order)
    assert kafka_end_offsets(b.services, b.config["KAFKA_TOPIC"]) == {0: n - cap}
