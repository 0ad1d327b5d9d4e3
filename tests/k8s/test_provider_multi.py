"""Several brokers against one cluster (issue 26: "several brokers, several nodes"): two broker
nodes of one deployment, each with its own nginx front, handlers, supervisor, relay and AGENT_DIR,
sharing one Redis (one key prefix), one Kafka (one topic, one consumer group) and the cluster.

- OpenSandbox creates through both fronts; each sandbox runs a command (through the execd route,
  the token of its endpoint) from either front, and is deleted through the front that did not
  make it; another tenant gets 404 for it on both.
- a storm of acquires split over both fronts never holds more than the capacity (sampled
  throughout), grants exactly the capacity and queues the rest with distinct positions; each
  lease runs a command from either front.
- supervisor A SIGKILLed (by its PID) while the grants of the released slots are being made,
  supervisor B going on: no ticket is lost (every queued one is granted, on its own sandbox, which
  runs commands from both fronts: front A's handlers reach pods its dead supervisor never saw),
  and at the end no pod is left without a record, no record lies.
"""

import concurrent.futures
import os
import signal
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import sandboxlib  # noqa: E402
from brokerlib import Sampler, wait_until  # noqa: E402
from sandboxlib import SB, check_sandbox_lease  # noqa: E402
from sdklib import OSB  # noqa: E402
from test_cluster import IMAGE  # noqa: E402
from test_execd import Execd  # noqa: E402
from test_provider_chaos import converge  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster needs root")

CAP, STORM = 3, 8


@pytest.fixture
def two_nodes(k8s_broker, monkeypatch):
    """(A, B): SB of two brokers sharing a prefix, a topic and a group. RECONCILE_MS short: each
    supervisor's reconciler runs while the other one creates pods."""
    monkeypatch.setattr(sandboxlib, "LEASE_PROVIDER", "kubernetes")
    cfg = dict(SANDBOX_IMAGE=IMAGE, BROKER_CAPACITY=CAP, IDLE_POLICY="delete",
               TICKET_TTL_MS=300000, ACQUIRE_WAIT_MS=0, RECONCILE_MS=2000)
    a = k8s_broker(**cfg)
    b = k8s_broker(like=a, **cfg)
    assert a.prefix == b.prefix and a.state_dir != b.state_dir
    return SB(a), SB(b)


def host(sid):
    """The hostname a command in sandbox sid prints: its pod's name."""
    return "sb-" + sid


def hostname_via_execd(front, tenant, sid):
    """`hostname` in sandbox sid through front's execd route (its own endpoint answer)."""
    o = OSB(front.b, tenant)
    e = o.endpoint(sid, 44772)
    assert e.status == 200, e
    ex = Execd(front, sid, e.json["headers"]["X-EXECD-ACCESS-TOKEN"])
    st, _, events = ex.command_stream({"command": "hostname"})
    assert st == 200, (st, events)
    out = "".join(x.get("text", "") for x in events if x.get("type") == "stdout")
    assert any(x.get("type") == "execution_complete" for x in events), events
    return out.strip()


def supervisor_alive(sb):
    pid = sb.b.pid("supervisor")
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def lease_from(r, fronts):
    """The lease of an acquire answer: at once (200), or polled on the fronts in turn."""
    if r.status == 200:
        return r.json["lease"]
    tid = r.json["ticketId"]
    turn = [0]

    def check():
        f = fronts[turn[0] % len(fronts)]
        turn[0] += 1
        p = f.b.poll(tid, timeout=60)
        assert p.status == 200 and p.json["status"] in ("queued", "provisioning", "granted"), p
        return p.json["lease"] if p.json["status"] == "granted" else None
    return wait_until(check, 120, 0.1, "ticket %s granted" % tid)


def test_two_brokers_drive_one_cluster(two_nodes):
    A, B = two_nodes
    fronts = (A, B)
    t0 = time.monotonic()

    # ---- OpenSandbox creates through both fronts, commands from either
    body = {"image": {"uri": IMAGE}, "entrypoint": ["sleep", "3600"], "timeout": 600,
            "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    made = []
    for front, tenant in ((A, "alpha"), (B, "bravo")):
        r = OSB(front.b, tenant).create_raw(body)
        assert r.status == 202, r
        made.append((front, tenant, r.json["id"]))
    for front, tenant, sid in made:
        other = B if front is A else A
        OSB(other.b, tenant).wait_state(sid, "Running", timeout=120)
        for f in fronts:
            assert hostname_via_execd(f, tenant, sid) == host(sid)
            intruder = "bravo" if tenant == "alpha" else "alpha"
            assert OSB(f.b, intruder).get(sid).status == 404
        assert len(A.containers(sid)) == 1
    for front, tenant, sid in made:
        other = B if front is A else A
        assert OSB(other.b, tenant).delete(sid).status == 204
    for _, _, sid in made:
        A.wait_container_state(sid, None, timeout=60)
    print("creates through both fronts, commands from either: %.1f s" % (time.monotonic() - t0))

    # ---- a storm of acquires split over both fronts
    go = threading.Event()

    def one(i):
        go.wait(30)
        return fronts[i % 2].b.acquire("st%d" % i, "s", timeout=60)

    with Sampler(A.b.active, CAP, interval=0.002) as samp:
        with concurrent.futures.ThreadPoolExecutor(STORM) as ex:
            futs = [ex.submit(one, i) for i in range(STORM)]
            go.set()
            answers = [f.result(timeout=120) for f in futs]
        assert all(r.status in (200, 202) for r in answers), answers
        holders = [(i, r) for i, r in enumerate(answers) if r.json["status"] in ("granted", "provisioning")]
        queued = [(i, r) for i, r in enumerate(answers) if r.json["status"] == "queued"]
        assert len(holders) == CAP and len(queued) == STORM - CAP, answers
        assert sorted(r.json["position"] for _, r in queued) == list(range(1, STORM - CAP + 1))
        leases = {i: check_sandbox_lease(lease_from(r, (B, A) if i % 2 == 0 else (A, B)))
                  for i, r in holders}
        assert len({lz["sandboxId"] for lz in leases.values()}) == CAP
        for lz in leases.values():
            for f in fronts:
                assert f.run(lz, "hostname")["stdout"] == host(lz["sandboxId"]) + "\n"
        assert A.b.active() == CAP and len(A.containers()) == CAP
        print("storm of %d over two fronts: %d granted, %d queued: %.1f s" % (
            STORM, CAP, STORM - CAP, time.monotonic() - t0))

        # ---- supervisor A SIGKILLed while the freed slots' sandboxes are being made
        before = {c["Id"] for c in A.containers()}
        for i in leases:
            B.release("st%d" % i, "s")
        wait_until(lambda: [c for c in A.containers() if c["Id"] not in before], 60, 0.005,
                   "a queued ticket's pod POSTed")
        os.kill(A.b.pid("supervisor"), signal.SIGKILL)
        print("supervisor A SIGKILLed: %.1f s" % (time.monotonic() - t0))

        # no ticket lost: each queued one granted (by B), its sandbox runs commands from both
        # fronts; the holders' slots go to the queue as they are released
        pending = dict(queued)
        done = {}
        while pending:
            progressed = False
            for i, r in list(pending.items()):
                p = fronts[i % 2].b.poll(r.json["ticketId"], timeout=60)
                assert p.status == 200 and p.json["status"] in ("queued", "provisioning", "granted"), p
                if p.json["status"] != "granted":
                    continue
                lz = check_sandbox_lease(p.json["lease"])
                for f in fronts:
                    assert f.run(lz, "hostname")["stdout"] == host(lz["sandboxId"]) + "\n", f.b.prefix
                done[i] = lz
                del pending[i]
                fronts[i % 2].release("st%d" % i, "s")
                progressed = True
            if pending and not progressed:
                assert supervisor_alive(B), "supervisor B exited"
                assert time.monotonic() - t0 < 400, "tickets left: %r" % sorted(pending)
                time.sleep(0.2)
    samp.check()
    assert not supervisor_alive(A) and supervisor_alive(B)
    sids = [lz["sandboxId"] for lz in done.values()]
    assert len(sids) == STORM - CAP and len(set(sids)) == len(sids), done
    print("every queued ticket granted after the kill: %.1f s" % (time.monotonic() - t0))

    # no orphan pod, no lying record: every pod released is gone, pods and records agree
    wait_until(lambda: not A.containers(), 90, 0.2, "no pod left")
    converge(A, 30)
    assert A.b.active() == 0
    print("two brokers on one cluster: %.1f s" % (time.monotonic() - t0))
