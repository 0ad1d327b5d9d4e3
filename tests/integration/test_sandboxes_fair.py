"""No tenant starves another through the sandboxes API (issue 24), written
as the attack, against real Docker sandboxes through nginx:

The runtime exec (POST /v1/sandboxes/{id}/exec) holds a handler thread of
the sandboxes group for its command's whole run. Tenant A ("alpha") holds
three lease sandboxes and starts more long commands across them than the
group has threads (FCGI_THREADS=8 here). All the while tenant B ("bravo")
runs a short command in its own lease sandbox, reads its OpenSandbox
sandbox with GET /v1/sandboxes/{id}, heartbeats its lease and acquires
another: every answer
comes within a bound generous for a loaded 2-core box, never 429.

A gets exactly its share of the group's threads (fcgi/tenant_share.h:
SANDBOXES_TENANT_SHARE_PCT 50 % of 8 - 4, so 2): the rest of its commands
are 429 with Retry-After at once. At its share A still reads its sandbox
and deletes one (calls that look or end pass at the share), which ends the
commands in it and gives A its threads back.

Before the shares, A's commands held every thread of fcgi-sandboxes and B's
exec and GET waited for them (timed out here).
"""

import concurrent.futures
import threading
import time

import pytest

from brokerlib import http_request, wait_until
from sandboxlib import SB, check_sandbox_lease, require_docker  # noqa: F401
from sdklib import KEY, OSB, start_osb_broker

require_docker()

THREADS = 8                       # FCGI_THREADS of this broker's sandboxes group
SHARE = (THREADS - 4) * 50 // 100  # SANDBOXES_TENANT_SHARE_PCT's default of the unreserved
A_EXECS = THREADS + 4             # more long commands than the group has threads
A_SLEEP_S = 60
B_BOUND_S = 10.0                  # one of B's calls, on a loaded 2-core box
HTTP_TIMEOUT = 90


def now():
    return time.monotonic()


def call(b, tenant, method, path, body=None, lease=None, timeout=HTTP_TIMEOUT):
    hdrs = {"Authorization": "Bearer " + KEY[tenant]}
    if lease:
        hdrs["X-Lease-ID"] = lease["leaseId"]
    t0 = now()
    try:
        r = http_request(b.port, method, path, body, hdrs, timeout)
    except OSError as e:  # a timeout is an answer that never came
        r = e
    return r, now() - t0


def acquire(b, sb, tenant, user):
    r = b.acquire(user, "s1", auth=KEY[tenant], timeout=HTTP_TIMEOUT)
    if r.status == 200:
        return check_sandbox_lease(r.json["lease"])
    assert r.status == 202, r

    def granted():
        p = b.poll(r.json["ticketId"], auth=KEY[tenant], timeout=HTTP_TIMEOUT)
        assert p.status == 200 and p.json["status"] in ("queued", "provisioning", "granted"), p
        return p.json["lease"] if p.json["status"] == "granted" else None
    return check_sandbox_lease(wait_until(granted, 120, 0.2, "%s's lease granted" % tenant))


@pytest.fixture(scope="module")
def fair(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=7, IDLE_POLICY="delete",
                         FCGI_THREADS=THREADS, LEASE_TTL_MS=120000)
    sb = SB(b)
    a = [acquire(b, sb, "alpha", "ua%d" % i) for i in range(3)]
    bl = acquire(b, sb, "bravo", "ub0")
    bl["osb"] = OSB(b, "bravo").create()  # B's sandbox of the lifecycle API
    return b, sb, a, bl


def exec_path(lease):
    return "/v1/sandboxes/%s/exec" % lease["sandboxId"]


def b_round(b, bl, k):
    """B's exec, GET, heartbeat and (once) acquire: [(name, ok, status, seconds, answer)]."""
    out = []
    r, took = call(b, "bravo", "POST", exec_path(bl), {"cmd": "echo b-was-here"}, bl)
    ok = not isinstance(r, Exception) and r.status == 200 and r.json["stdout"] == "b-was-here\n"
    out.append(("exec", ok, getattr(r, "status", None), took, r))
    r, took = call(b, "bravo", "GET", "/v1/sandboxes/%s" % bl["osb"])
    ok = not isinstance(r, Exception) and r.status == 200 and r.json["id"] == bl["osb"]
    out.append(("get", ok, getattr(r, "status", None), took, r))
    r, took = call(b, "bravo", "POST", "/v1/leases/heartbeat", {"leaseId": bl["leaseId"]})
    ok = not isinstance(r, Exception) and r.status == 200
    out.append(("heartbeat", ok, getattr(r, "status", None), took, r))
    if k == 0:
        r, took = call(b, "bravo", "POST", "/v1/leases/acquire", {"userId": "ub1", "sessionId": "s1"})
        ok = not isinstance(r, Exception) and r.status in (200, 202)
        out.append(("acquire", ok, getattr(r, "status", None), took, r))
    return out


def test_one_tenants_long_execs_never_hold_up_another(fair):
    b, sb, a, bl = fair
    idle = b_round(b, bl, 1)
    assert all(ok for _, ok, _, _, _ in idle), idle

    # A: more long commands than the group has threads, across its sandboxes
    pool = concurrent.futures.ThreadPoolExecutor(A_EXECS)
    t_a = now()
    futs = [pool.submit(call, b, "alpha", "POST", exec_path(a[i % 3]),
                        {"cmd": "sleep %d" % A_SLEEP_S, "timeoutMs": (A_SLEEP_S + 30) * 1000},
                        a[i % 3], A_SLEEP_S + 60)
            for i in range(A_EXECS)]
    try:
        time.sleep(3)  # A's commands reach the handlers (or their refusal)

        # B, during all of it: answered, in time, never 429
        rounds = []
        for k in range(3):
            rounds.append(b_round(b, bl, k))
            for name, ok, st, took, r in rounds[-1]:
                assert ok, (name, st, took, r)
                assert took < B_BOUND_S, (name, took, r)
            time.sleep(0.5)
        assert now() - t_a < A_SLEEP_S - 5, "B's rounds outlasted A's commands"
        worst = {n: round(max(x[3] for rnd in rounds for x in rnd if x[0] == n), 3)
                 for n, _, _, _, _ in rounds[0]}
        print("\nB during A's %d long commands, %d rounds; worst seconds: %s; idle: %s" % (
            A_EXECS, len(rounds), worst, {n: round(t, 3) for n, _, _, t, _ in idle}))

        # A past its share: 429 with Retry-After at once, A's share still running
        refused = [f.result() for f in futs if f.done()]
        assert len(refused) == A_EXECS - SHARE, [r for r, _ in refused]
        for r, took in refused:
            assert r.status == 429, r
            assert r.json["code"] == "TOO_MANY_REQUESTS", r
            assert r.headers.get("Retry-After") == "2", r
            assert "share" in r.json["message"], r
            assert took < B_BOUND_S, (took, r)
        # A at its share: reads its exec records (a call that looks passes;
        # 404: none ran with this execId)
        r, _ = call(b, "alpha", "GET", exec_path(a[0]) + "/nosuchexec", None, a[0])
        assert r.status == 404 and r.json["code"] == "EXEC_NOT_FOUND", r
        # and another command of A: still 429
        r, _ = call(b, "alpha", "POST", exec_path(a[2]), {"cmd": "echo over"}, a[2])
        assert r.status == 429, r

        # A ends what holds its share: its deletes pass at the share (a call
        # that ends things) and the commands in those sandboxes end with them
        running = [i for i, f in enumerate(futs) if not f.done()]
        assert len(running) == SHARE
        for sid in sorted({a[i % 3]["sandboxId"] for i in running}):
            lz = next(x for x in a if x["sandboxId"] == sid)
            r = sb.delete(lz, headers={"Authorization": "Bearer " + KEY["alpha"]})
            assert r.status == 204, r
        for i in running:
            r, took = futs[i].result(timeout=60)
            assert not isinstance(r, Exception) and r.status != 429, r
            assert took < A_SLEEP_S, (took, r)
        # A's share is free again: a command in a sandbox it still holds runs
        kept = [x for x in a if x["sandboxId"] not in {a[i % 3]["sandboxId"] for i in running}]
        assert kept, "every sandbox of A was deleted"
        r, _ = call(b, "alpha", "POST", exec_path(kept[0]), {"cmd": "echo again"}, kept[0])
        assert r.status == 200 and r.json["stdout"] == "again\n", r
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    after = b_round(b, bl, 1)
    assert all(ok for _, ok, _, _, _ in after), after
