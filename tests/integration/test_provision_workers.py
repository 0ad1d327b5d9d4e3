"""The supervisor's provisioning workers (PROVISION_WORKERS, supervisor/provision.c).

A burst of queued grants is provisioned in parallel: with capacity 20 held,
20 tickets queue; releasing the holders grants all 20 at once, and the
workers make their sandboxes side by side. The test measures, in the same
run and through the same path (a queued ticket granted by a release, polled
until `granted`), one lone provisioning and then the burst, prints both
(scripts/bench-provision collects the line into docs/LOAD-CAPACITY.md) and
asserts no speed: from the supervisor's own log (each make's end and length),
some makes overlapped, which a one-at-a-time supervisor cannot do, and never
more than PROVISION_WORKERS at once.
"""

import datetime
import os
import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from brokerlib import Sampler, wait_until
from sandboxlib import (PROVISION_TIMEOUT, SB_HTTP_TIMEOUT, TINY_IMAGE, docker_broker,  # noqa: F401
                        require_docker)

require_docker()

N = 20
WORKERS = int(os.environ.get("IT_PROVISION_WORKERS", "4"))
SINGLE_TRIALS = int(os.environ.get("IT_PROVISION_SINGLE_TRIALS", "3"))


def _log_ms(ts):
    """a log line's UTC timestamp (2026-12-03T21:40:03.821Z) as milliseconds"""
    return round(datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000)


def _acquire_holder(b, i):
    r = b.acquire("h%d" % i, "s", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200, r
    return r.json["lease"]


def _queue(b, user):
    r = b.acquire(user, "s", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["status"] == "queued", r
    return r.json["ticketId"]


def _poll_all(b, tickets, t0):
    """Poll every ticket until all are granted; returns {ticket: seconds
    from t0 to the first `granted` answer} and the leases."""
    done, leases = {}, {}

    def check():
        for t in tickets:
            if t in done:
                continue
            r = b.poll(t, timeout=SB_HTTP_TIMEOUT)
            assert r.status == 200, r
            st = r.json["status"]
            assert st in ("queued", "provisioning", "granted"), r
            if st == "granted":
                done[t] = time.monotonic() - t0
                leases[t] = r.json["lease"]
        return len(done) == len(tickets)
    wait_until(check, PROVISION_TIMEOUT * 2, 0.02, "%d tickets granted" % len(tickets))
    return done, leases


def test_burst_of_queued_grants_is_provisioned_in_parallel(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=N, IDLE_POLICY="delete", TICKET_TTL_MS=300000,
                       SANDBOX_IMAGE=TINY_IMAGE, PROVISION_WORKERS=WORKERS)
    b = sb.b
    with ThreadPoolExecutor(4) as ex:
        holders = list(ex.map(lambda i: _acquire_holder(b, i), range(N)))
    users = ["h%d" % i for i in range(N)]
    assert b.active() == N

    assert all(h["sandboxId"] for h in holders), holders

    with Sampler(b.active, N, interval=0.05) as samp:
        # one lone provisioning, through the same path as the burst
        singles = []
        for k in range(SINGLE_TRIALS):
            t = _queue(b, "one%d" % k)
            user = users.pop(0)
            t0 = time.monotonic()
            sb.release(user, "s", "deleted")
            took, leases = _poll_all(b, [t], t0)
            singles.append(took[t])
            users.append("one%d" % k)
            assert leases[t]["sandboxId"] and leases[t]["provider"] == "docker", leases[t]
        single = statistics.median(singles)

        # the burst: 20 tickets queued behind the held batch, then release all
        tickets = [_queue(b, "q%d" % i) for i in range(N)]
        t0 = time.monotonic()
        for user in users:
            sb.release(user, "s", "deleted")
        released = time.monotonic() - t0
        took, leases = _poll_all(b, tickets, t0)
        last = max(took.values())
    samp.check()

    sids = {l["sandboxId"] for l in leases.values()}
    assert len(sids) == N, leases
    for sid in sids:  # every one really runs
        rec = wait_until(lambda: sb.record(sid) if sb.record(sid).get("state") == "Running" else None,
                         10, 0.1, "record %s Running" % sid)
        assert rec["ref"], rec
    # the supervisor's own account of each: queued (waiting for a worker), made
    made = [(int(q), int(m), _log_ms(ts)) for ts, q, m in
            re.findall(r"^(\S+) .*\((\d+) ms queued, (\d+) ms made\)", b.logs("supervisor"), re.M)]
    assert len(made) >= N + SINGLE_TRIALS, made
    burst = made[-N:]
    # each make as [end - made, end] on the supervisor's own clock: how many overlapped.
    # end (wall clock) and made (monotonic) are whole ms each, and a worker starts
    # its next make within a ms of logging the last: each span loses ROUNDING_MS
    # at its end, so that a worker's two makes in a row never count as overlapping
    ROUNDING_MS = 3
    spans = [(end - m, end - ROUNDING_MS) for _, m, end in burst]
    overlap = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    line = ("BURST workers=%d n=%d single_ms=%.0f singles_ms=%s releases_ms=%.0f "
            "first_ms=%.0f median_ms=%.0f last_ms=%.0f serial_ms=%.0f ratio=%.2f "
            "make_median_ms=%.0f make_max_ms=%d queued_max_ms=%d overlap=%d" % (
                WORKERS, N, single * 1000, ",".join("%.0f" % (s * 1000) for s in singles),
                released * 1000, min(took.values()) * 1000,
                statistics.median(took.values()) * 1000, last * 1000, N * single * 1000,
                last / (N * single), statistics.median(m for _, m, _ in burst),
                max(m for _, m, _ in burst), max(q for q, _, _ in burst), overlap))
    print("\n" + line)
    # parallel, and bounded by the workers: at the start of some make, others were under
    # way (a one-at-a-time supervisor never overlaps), never more than PROVISION_WORKERS
    assert 2 <= overlap <= WORKERS if WORKERS > 1 else overlap == 1, line
    wait_until(lambda: len(sb.containers()) == N, 60, 0.2, "the released holders' containers gone")
