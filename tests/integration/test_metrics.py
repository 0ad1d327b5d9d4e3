"""GET /metrics: Prometheus text from the counters every broker process
flushes to Redis (<prefix>metrics) plus live gauges (docs/OPERATIONS.md)."""

import re

from brokerlib import http_request, wait_until

# label values are quoted and may hold braces (route="/v1/sandboxes/{}/exec")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? '
                    r'(-?[0-9.e+]+|\+Inf|NaN)$')


def parse(text):
    """{series: value}; asserts every line is a comment or a valid sample."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = SAMPLE.match(line)
        assert m, "not a Prometheus sample line: %r" % line
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def metrics(b):
    # not JSON: b.get() would refuse it; the scrape credential is METRICS_TOKEN
    r = http_request(b.port, "GET", "/metrics", headers=b.auth_headers(b.config["METRICS_TOKEN"]))
    assert r.status == 200, r
    assert r.headers.get("X-Request-ID"), r
    assert r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"), r
    return parse(r.raw.decode())


def test_metrics_counts_requests_gauges_and_grant_wait(broker):
    b = broker(BROKER_CAPACITY=1)
    m = metrics(b)
    for g in ("broker_capacity", "broker_slots_active", "broker_leases_active",
              "broker_queue_depth", "broker_leases_reaped_total",
              "broker_grant_wait_seconds_count", "broker_sandbox_create_seconds_count",
              "broker_sandbox_exec_seconds_count"):
        assert g in m, g
    assert m["broker_capacity"] == 1

    assert b.acquire("u1", "s1").status == 200
    r = b.acquire("u2", "s1")
    assert r.status == 202, r
    ticket = r.json["ticketId"]
    m = metrics(b)
    assert (m["broker_slots_active"], m["broker_leases_active"], m["broker_queue_depth"]) == (1, 1, 1)

    assert b.release("u1", "s1").status == 200
    b.wait_granted(ticket)
    acq = ('broker_http_requests_total{group="leases",route="/v1/leases/acquire",'
           'method="POST",status="%d"}')

    scrape = 'broker_http_requests_total{group="status",route="/metrics",method="GET",status="200"}'

    # counters reach Redis within the ~1 s flush of each process (each on its
    # own clock: the status group's own scrapes may land a flush later)
    def flushed():
        m = metrics(b)
        ok = (m.get(acq % 200) == 1 and m.get(acq % 202) == 1 and
              m.get("broker_tickets_granted_total") == 1 and
              m["broker_grant_wait_seconds_count"] == 1 and
              m.get(scrape, 0) >= 1)
        return m if ok else None
    m = wait_until(flushed, 10, desc="counters flushed")
    assert m['broker_grant_wait_seconds_bucket{le="+Inf"}'] == 1
    assert 0 < m["broker_grant_wait_seconds_sum"] < 30
    # the hash itself aggregates across processes
    assert int(b.redis.hget(b.key("metrics"), acq % 200)) == 1


def test_metrics_unknown_route_label_is_bounded(broker):
    b = broker()
    for i in range(5):
        assert b.get("/v1/leases/nope-%d" % i).status == 404
    series = 'broker_http_requests_total{group="leases",route="none",method="GET",status="404"}'
    m = wait_until(lambda: (lambda m: m if m.get(series) == 5 else None)(metrics(b)), 10,
                   desc="404s counted under one series")
    assert not [k for k in m if "nope" in k], "client paths must never become labels"
