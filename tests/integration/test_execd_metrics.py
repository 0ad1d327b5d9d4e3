"""execd GET /metrics and /metrics/watch report the sandbox's own limits
(its cgroup: v1 or v2), not the host's; the watch streams a Metrics event
about every second until the client goes."""

import json
import time

import pytest

from sandboxlib import require_docker
from sdklib import start_osb_broker
from test_execd import execd_sandbox

require_docker()


@pytest.fixture(scope="module")
def ex(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=2, IDLE_POLICY="delete")
    # 500m CPU, 256 MiB
    return execd_sandbox(b, resourceLimits={"cpu": "500m", "memory": "256Mi"})


def near(value, want, pct=10):
    return abs(value - want) <= want * pct / 100.0


def test_metrics_are_the_sandbox_limits(ex):
    st, _, m = ex.json("GET", "/metrics")
    assert st == 200, m
    assert near(m["cpu_count"], 0.5), m
    assert near(m["mem_total_mib"], 256), m
    assert 0 < m["mem_used_mib"] < 256, m


def test_cpu_use_is_measured_against_the_limit(ex):
    # a busy loop for a few seconds: near 100 % of the sandbox's half CPU
    r = ex.command_stream({"command": "timeout 4 sh -c 'while :; do :; done' >/dev/null 2>&1 & sleep 0.3; echo go",
                           "background": False})
    # against the host's 2 cores the loop would read at most 50 %; against
    # the limit it reads near 100 % whenever it gets its share: a machine
    # loaded by others (CI at a load of 29 read 20.8 % once) may withhold it
    # for a sample, so the loop's 4 s are sampled and the best one counts
    seen = []
    t_end = time.monotonic() + 3.3
    while time.monotonic() < t_end:
        st, _, m = ex.json("GET", "/metrics")
        assert st == 200, m
        seen.append(m["cpu_used_pct"])
        if m["cpu_used_pct"] > 50:
            break
        time.sleep(0.2)
    assert max(seen) > 50, (seen, m, r)


def test_watch_streams_metrics_until_the_client_goes(ex):
    c = ex.conn(timeout=15)
    try:
        c.request("GET", ex.url("/metrics/watch"), headers={"X-EXECD-ACCESS-TOKEN": ex.token})
        r = c.getresponse()
        assert r.status == 200
        assert r.getheader("Content-Type", "").startswith("text/event-stream")
        events = []
        while len(events) < 3:
            line = r.fp.readline()
            assert line, "stream ended early: %r" % events
            if line.startswith(b"data: "):
                events.append(json.loads(line[6:]))
        for m in events:
            assert near(m["mem_total_mib"], 256) and near(m["cpu_count"], 0.5), m
        ts = [m["timestamp"] for m in events]
        assert ts == sorted(ts) and ts[-1] - ts[0] >= 1500, ts
    finally:
        c.close()
    # the broker noticed the client went away and serves on
    st, _, m = ex.json("GET", "/metrics")
    assert st == 200, m
