"""Redis loading its dataset after a restart (issue 24): until it is done it
answers every command "LOADING Redis is loading the dataset in memory". The
handlers turned that into 500 "Protocol error"; every answer during the
loading must be 503 SERVICE_UNAVAILABLE with a Retry-After header and a
message that says Redis is loading, on every route, and the supervisor logs
it once, keeps retrying and serves the queue again once Redis is back.

The test runs a Redis of its own (the session's is shared), started as
scripts/stack starts it (AOF, no RDB saves) plus two settings that make a
small dataset load slowly and visibly: key-load-delay (a pause per key) and
loading-process-events-interval-bytes (how often a loading Redis answers
its clients; 2 MiB by default, which on a real dataset of gigabytes is just
as often relative to its size). Two tenants' requests flow across the
restart; a sampler reads INFO's loading flag to know when Redis was loading.
"""

import os
import signal
import subprocess
import threading
import time

import pytest
import redis

from brokerlib import free_port, http_request, wait_until
from conftest import make_broker

FILLER_KEYS = 20000
KEY_LOAD_DELAY_US = 100


class OwnRedis:
    """A redis-server of this test; Kafka is the session's."""

    def __init__(self, services, root):
        self.redis_port = free_port()
        self.kafka_port = services.kafka_port
        self.kafka_controller_port = services.kafka_controller_port
        self.dir = os.path.join(root, "redis-loading-%d" % self.redis_port)
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        self.log = open(os.path.join(self.dir, "redis.log"), "ab")

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
             "--dir", self.dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
             "--daemonize", "no", "--protected-mode", "yes", "--logfile", "", "--loglevel", "notice",
             "--key-load-delay", str(KEY_LOAD_DELAY_US),
             "--loading-process-events-interval-bytes", "1024"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # shutdown: the AOF is fsynced
            self.proc.wait(timeout=60)
        self.proc = None

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.redis_port, decode_responses=True,
                           socket_timeout=10)


@pytest.fixture
def own_redis(request, services, it_root):
    r = OwnRedis(services, it_root)
    request.addfinalizer(r.stop)
    r.start()
    wait_until(lambda: _ping(r), 15, 0.1, "own redis up")
    return r


def _ping(r):
    try:
        return r.client().ping()
    except redis.RedisError:
        return False


def _info_loading(c):
    try:
        return c.info("persistence").get("loading") == 1
    except redis.BusyLoadingError:
        return True
    except redis.RedisError:
        return None  # down


OTHER_KEY = "itk_other_%s" % os.urandom(8).hex()


def test_redis_loading_is_503_with_retry_after_on_every_route(request, it_root, own_redis):
    b = make_broker(request, own_redis, it_root, BROKER_CAPACITY=1,
                    OPENSANDBOX_API_KEYS="%s:other" % OTHER_KEY, REDIS_TIMEOUT_MS=2000)
    # the world before: tenant it holds the one slot, tenant other waits
    r = b.acquire("ua", "s1")
    assert r.status == 200, r
    lid = r.json["lease"]["leaseId"]
    q = b.acquire("ub", "s1", auth=OTHER_KEY)
    assert q.status == 202, q
    ticket = q.json["ticketId"]
    # a dataset that takes seconds to load, written into the AOF's RDB base
    c = own_redis.client()
    pipe = c.pipeline(transaction=False)
    for i in range(FILLER_KEYS):
        pipe.set("zzfiller:%d" % i, "v")
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    c.bgrewriteaof()
    wait_until(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
               c.info("persistence")["aof_rewrite_scheduled"] == 0, 60, 0.2, "AOF rewritten")
    time.sleep(1.5)  # appendfsync everysec: the lease and ticket are on disk

    metrics = {"Authorization": "Bearer " + b.config["METRICS_TOKEN"]}
    me = b.auth_headers()
    other = {"Authorization": "Bearer " + OTHER_KEY}
    routes = [
        ("health", "GET", "/health", None, {}),
        ("status", "GET", "/v1/status", None, me),
        ("heartbeat", "POST", "/v1/leases/heartbeat", {"leaseId": lid}, me),
        ("poll", "GET", "/v1/leases/poll?ticketId=%s" % ticket, None, other),
        ("acquire", "POST", "/v1/leases/acquire", {"userId": "uc", "sessionId": "s9"}, other),
        ("release", "POST", "/v1/leases/release", {"userId": "ud", "sessionId": "s9"}, other),
        ("metrics", "GET", "/metrics", None, metrics),
        ("osb-list", "GET", "/v1/sandboxes", None, other),
        ("osb-get", "GET", "/v1/sandboxes/nosuchsandbox", None, other),
        ("execd", "GET", "/v1/sandboxes/nosuchsandbox/proxy/44772/ping", None, other),
        ("endpoint", "GET", "/v1/sandboxes/nosuchsandbox/proxy/8080/", None, other),
    ]
    answers, loading_at = [], []
    stop = threading.Event()
    lock = threading.Lock()

    def flow(offset):
        i = offset
        while not stop.is_set():
            name, method, path, body, hdrs = routes[i % len(routes)]
            i += 1
            t0 = time.monotonic()
            try:
                a = http_request(b.port, method, path, body, hdrs, timeout=30)
            except OSError as e:  # nginx is up throughout: a failure is a finding
                a = e
            with lock:
                answers.append((t0, time.monotonic(), name, a))

    def sample():
        s = own_redis.client()
        while not stop.is_set():
            if _info_loading(s):
                loading_at.append(time.monotonic())
            time.sleep(0.01)

    threads = [threading.Thread(target=flow, args=(k * 3,)) for k in range(4)]
    threads.append(threading.Thread(target=sample))
    for t in threads:
        t.start()
    sup_pid = b.pid("supervisor")
    try:
        time.sleep(1)
        own_redis.stop()
        time.sleep(1)
        own_redis.start()
        wait_until(lambda: loading_at, 30, 0.05, "Redis seen loading")
        wait_until(lambda: _info_loading(own_redis.client()) is False, 120, 0.1, "Redis loaded")
        time.sleep(2)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    first, last = loading_at[0], loading_at[-1]
    print("\nRedis loaded for %.2f s (seen); %d answers in all" % (last - first, len(answers)))

    # no 500, ever, nor a failed connection
    bad = [(n, a) for _, _, n, a in answers if not hasattr(a, "status") or a.status >= 500 and a.status != 503]
    assert not bad, bad[:10]
    during = [(n, a) for t0, t1, n, a in answers if t0 >= first and t1 <= last]
    seen = {n for n, _ in during}
    assert seen == {r[0] for r in routes}, "routes not answered while Redis was loading: %r" % (
        {r[0] for r in routes} - seen)
    for n, a in during:
        assert a.status == 503, (n, a)
        assert a.headers.get("Retry-After") == "1", (n, a, dict(a.headers))
        assert a.headers.get("X-Request-ID"), (n, a)
        assert a.headers.get("Content-Type", "").startswith("application/json"), (n, a)
        if n == "health":
            assert a.json["status"] == "unhealthy" and "loading" in a.json["checks"]["redis"], a
        else:
            assert a.json["code"] == "SERVICE_UNAVAILABLE", (n, a)
            assert "Redis is loading" in a.json["message"], (n, a)
    print("%d answers while Redis was loading, all 503 with Retry-After" % len(during))

    # the supervisor said it once, kept going, and serves the queue again
    assert b.pid("supervisor") == sup_pid and os.path.exists("/proc/%d" % sup_pid)
    log = b.logs("supervisor")
    said = [ln for ln in log.splitlines() if "Redis is loading its dataset" in ln]
    assert len(said) == 1, said
    assert "Redis is back" in log
    r = b.heartbeat(lease_id=lid)
    assert r.status == 200, r
    assert b.release("ua", "s1").status == 200
    g = wait_until(lambda: (lambda p: p.json if p.status == 200 and p.json["status"] == "granted" else None)(
        b.poll(ticket, auth=OTHER_KEY)), 60, 0.2, "the queued ticket granted")
    assert g["lease"]["userId"] == "ub", g
    h = b.get("/health", auth=False)
    assert h.status == 200 and h.json["status"] == "healthy", h
