"""Warm pool (issue 13, docs/CONFIGURATION.md "Warm pool"): the supervisor keeps
POOL=image:size members created, started and unassigned; an exclusive or
user_shared acquire takes the oldest one in its claim script (never twice),
gets its limits by a container update, and an empty pool is a cold create.
Two supervisors on one Redis refill the same pool while a storm claims.
"""

import concurrent.futures
import os
import signal
import threading
import time

import pytest

from brokerlib import http_request, wait_until
from sandboxlib import (BASE_IMAGE, DOCKER, TINY_IMAGE, check_sandbox_lease, docker_broker,  # noqa: F401
                        require_docker, start_second_supervisor)

require_docker()

SIZE = 2
NANO = 500 * 1000000  # SANDBOX_MILLICPUS default 500


def pool_env(**kw):
    env = dict(SANDBOX_IMAGE=TINY_IMAGE, POOL="%s:%d" % (TINY_IMAGE, SIZE),
               BROKER_CAPACITY=8, RECONCILE_MS=1000, IDLE_POLICY="delete")
    env.update(kw)
    return env


def ready_ids(sb, image=TINY_IMAGE):
    return sb.b.redis.zrange(sb.b.key("wpool:" + image), 0, -1)


def status(sb):
    r = sb.b.get("/v1/status")
    assert r.status == 200, r
    return r.json


def pool_status(sb):
    pools = status(sb).get("pools")
    assert pools and pools[0]["image"] == TINY_IMAGE, pools
    return pools[0]


def wait_full(sb, n=SIZE, timeout=30):
    return wait_until(lambda: len(ready_ids(sb)) >= n and ready_ids(sb),
                      timeout, 0.1, "pool filled to %d" % n)


def pool_containers(sb):
    """Containers of this broker that are (still) pool members."""
    out = []
    for c in sb.containers():
        sid = c["Labels"]["io.sandbox-broker.sandbox-id"]
        if sb.b.redis.exists(sb.b.key("wpoolm:" + sid)):
            out.append(c)
    return out


def test_pool_fills_claims_warm_and_refills(docker_broker):
    sb = docker_broker(**pool_env())
    members = set(wait_full(sb))
    for sid in members:
        assert DOCKER.state("sb-" + sid) == "running"
    st = pool_status(sb)
    assert st["size"] == SIZE and st["ready"] == SIZE and st["lastRefillAt"] > 0, st

    t0 = time.monotonic()
    lz = check_sandbox_lease(sb.acquire("wu", "s1"))
    assert sb.run(lz, "true")["exitCode"] == 0
    print("warm: acquire -> first command %.1f ms" % ((time.monotonic() - t0) * 1000))
    sid = lz["sandboxId"]
    assert sid in members, "the lease's sandbox %s was not a pool member %r" % (sid, members)
    rec = sb.record(sid)
    assert rec["state"] == "Running" and rec.get("poolLimits"), rec
    assert int(rec["createdAt"]) >= 0
    assert sb.run(lz, "true")["exitCode"] == 0
    # no longer a member; the pool makes a new one
    assert not sb.b.redis.exists(sb.b.key("wpoolm:" + sid))
    wait_until(lambda: len(ready_ids(sb)) == SIZE and sid not in ready_ids(sb), 30, 0.1,
               "pool refilled")
    st = pool_status(sb)
    assert st["claimsWarm"] == 1 and st["claimsCold"] == 0, st
    m = http_request(sb.b.port, "GET", "/metrics",
                     headers=sb.b.auth_headers(sb.b.config["METRICS_TOKEN"]))
    assert m.status == 200, m
    text = m.raw.decode()
    assert 'broker_pool_claims_total{image="%s",kind="warm"} 1' % TINY_IMAGE in text, text[-2000:]
    assert 'broker_pool_ready{image="%s"} %d' % (TINY_IMAGE, SIZE) in text
    # releasing (IDLE_POLICY=delete) removes the claimed container, not members
    sb.release("wu", "s1")
    wait_until(lambda: DOCKER.state("sb-" + sid) is None, 20, 0.2, "claimed sandbox removed")
    for m_sid in ready_ids(sb):
        assert DOCKER.state("sb-" + m_sid) == "running"


def test_claim_applies_limits_by_container_update(docker_broker):
    sb = docker_broker(**pool_env(POOL="%s:1" % TINY_IMAGE))
    (sid,) = wait_full(sb, 1)
    # make the member differ from what a claim asks for
    st, body = DOCKER.call("POST", "/containers/sb-%s/update" % sid,
                           {"NanoCpus": 250000000, "PidsLimit": 64})
    assert st == 200, (st, body)
    sb.b.redis.hset(sb.b.key("wpoolm:" + sid), "limits", "250000000,536870912,64")
    lz = check_sandbox_lease(sb.acquire("lu", "s1"))
    assert lz["sandboxId"] == sid
    hc = DOCKER.inspect("sb-" + sid)["HostConfig"]
    assert hc["NanoCpus"] == NANO and hc["PidsLimit"] == 256, hc
    assert hc["Memory"] == 512 * 1024 * 1024, hc
    assert sb.run(lz, "true")["exitCode"] == 0


def test_empty_pool_falls_back_cold(docker_broker):
    # the pool's image cannot start: it backs off, claims go cold
    sb = docker_broker(**pool_env(POOL="sandbox-broker/no-such-image:1,%s:0" % TINY_IMAGE))
    wait_until(lambda: sb.b.redis.hget(sb.b.key("wpoolstat:sandbox-broker/no-such-image"),
                                       "failures"),
               30, 0.2, "pool failure recorded")
    h = sb.b.get("/health")
    assert h.status == 200 and h.json["status"] == "degraded", h
    assert "no-such-image" in h.json["checks"]["pool"], h.json
    t0 = time.monotonic()
    lz = check_sandbox_lease(sb.acquire("cu", "s1"))
    assert sb.run(lz, "true")["exitCode"] == 0
    print("cold: acquire -> first command %.1f ms" % ((time.monotonic() - t0) * 1000))
    pools = status(sb)["pools"]
    bad = [p for p in pools if "no-such-image" in p["image"]][0]
    assert bad["failures"] >= 1 and bad["error"] and not bad["healthy"], bad
    tiny = [p for p in pools if p["image"] == TINY_IMAGE][0]
    assert tiny["claimsCold"] == 1 and tiny["claimsWarm"] == 0, tiny


def test_storm_never_double_claims(docker_broker):
    n = 8
    sb = docker_broker(**pool_env(POOL="%s:4" % TINY_IMAGE, BROKER_CAPACITY=n))
    members = set(wait_full(sb, 4))
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        leases = list(ex.map(lambda i: check_sandbox_lease(sb.acquire("st%d" % i, "s")),
                             range(n)))
    sids = [lz["sandboxId"] for lz in leases]
    assert len(set(sids)) == n, sids
    refs = [sb.record(s)["ref"] for s in sids]
    assert len(set(refs)) == n, refs
    warm = [s for s in sids if s in members]
    assert len(warm) == 4, (warm, members)  # every ready member went, each once
    st = pool_status(sb)  # (a member the refill made during the storm may be warm too)
    assert st["claimsWarm"] >= 4 and st["claimsWarm"] + st["claimsCold"] == n, st
    for lz in leases:
        assert sb.run(lz, "true")["exitCode"] == 0


def test_supervisor_killed_mid_refill_no_leak(docker_broker):
    sb = docker_broker(**pool_env(POOL="%s:3" % TINY_IMAGE))
    # kill as soon as the first member is reserved (refill under way)
    wait_until(lambda: sb.b.redis.zcard(sb.b.key("wpool:all")) >= 1, 30, 0.01, "refill started")
    os.kill(sb.b.pid("supervisor"), signal.SIGKILL)
    time.sleep(0.5)
    sb.b.start("supervisor")
    wait_full(sb, 3, 60)

    def converged():
        cs = sb.containers()
        members = set(ready_ids(sb))
        # every container is a ready member; no stray one left
        return len(cs) == 3 and {c["Labels"]["io.sandbox-broker.sandbox-id"] for c in cs} == members
    wait_until(converged, 60, 0.5, "pool converged, nothing leaked")


def test_max_age_replaces_members(docker_broker):
    sb = docker_broker(**pool_env(POOL="%s:1" % TINY_IMAGE, POOL_MAX_AGE_MS=3000))
    (first,) = wait_full(sb, 1)
    wait_until(lambda: ready_ids(sb) and ready_ids(sb)[0] != first, 20, 0.2, "member replaced")
    wait_until(lambda: DOCKER.state("sb-" + first) is None, 10, 0.2, "old member removed")
    assert "older than POOL_MAX_AGE_MS" in sb.b.logs("supervisor")


def test_reconciler_removes_stale_members(docker_broker):
    sb = docker_broker(**pool_env(POOL="%s:1" % TINY_IMAGE))
    (sid,) = wait_full(sb, 1)
    # the member's Redis entry is gone (e.g. Redis lost it): its container is an orphan
    for k in ("wpoolm:" + sid,):
        sb.b.redis.delete(sb.b.key(k))
    sb.b.redis.zrem(sb.b.key("wpool:" + TINY_IMAGE), sid)
    sb.b.redis.zrem(sb.b.key("wpoolall:" + TINY_IMAGE), sid)
    sb.b.redis.zrem(sb.b.key("wpool:all"), sid)
    wait_until(lambda: DOCKER.state("sb-" + sid) is None, 20, 0.2, "stale member removed")
    wait_full(sb, 1)
    assert len(pool_containers(sb)) == 1




def test_two_supervisors_storm_never_double_claims(docker_broker, request):
    n, size, cap = 16, 4, 8
    sb = docker_broker(**pool_env(POOL="%s:%d" % (TINY_IMAGE, size), BROKER_CAPACITY=cap))
    sup2 = start_second_supervisor(sb, request)

    seen_members = set(wait_full(sb, size))
    # both supervisors refill and scan the same pool while the storm claims
    # members: the first `cap` acquires in the handlers, the queued rest in
    # whichever supervisor grants them
    stop = threading.Event()

    def watch_members():
        while not stop.is_set():
            seen_members.update(ready_ids(sb))
            time.sleep(0.02)
    watcher = threading.Thread(target=watch_members)
    watcher.start()
    leases = []
    try:
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            futs = [ex.submit(lambda i=i: (i, check_sandbox_lease(sb.acquire("ts%d" % i, "s"))))
                    for i in range(n)]
            for f in concurrent.futures.as_completed(futs):
                i, lz = f.result()
                leases.append(lz)
                assert sb.run(lz, "true")["exitCode"] == 0
                sb.release("ts%d" % i, "s")  # frees the slot for a queued one
    finally:
        stop.set()
        watcher.join()
    assert sup2.poll() is None, "the second supervisor exited"
    sids = [lz["sandboxId"] for lz in leases]
    assert len(sids) == n and len(set(sids)) == n, sids
    refs = [sb.record(s)["ref"] for s in sids]
    assert len(set(refs)) == n, refs
    # a warm claim's record keeps the member's limits (poolLimits); every
    # such sandbox was a member (the watcher samples, so it may miss one
    # made and claimed within 20 ms: a subset check)
    warm = [s for s in sids if sb.record(s).get("poolLimits")]
    st = pool_status(sb)
    assert len(warm) >= size and st["claimsWarm"] == len(warm), (warm, st)
    assert set(s for s in sids if s in seen_members) <= set(warm), (warm, seen_members)
    assert st["claimsWarm"] + st["claimsCold"] == n, st

    # no leak: once the released sandboxes are gone, the only containers
    # left are ready members, each recorded once
    def converged():
        cs = sb.containers()
        members = set(ready_ids(sb))
        ids = [c["Labels"]["io.sandbox-broker.sandbox-id"] for c in cs]
        return len(members) >= size and len(ids) == len(set(ids)) and set(ids) == members
    wait_until(converged, 90, 0.5, "only ready members left, nothing leaked")


def test_image_retag_replaces_members(docker_broker, request):
    # a name of this test's own, first naming the tiny image, then the base one
    repo = "sandbox-broker/it-pool-retag-%s" % os.urandom(4).hex()
    name = repo + ":latest"

    def tag(image):
        st, body = DOCKER.call("POST", "/images/%s/tag?repo=%s&tag=latest" % (image, repo))
        assert st == 201, (st, body)

    def untag():
        DOCKER.call("DELETE", "/images/%s?noprune=1" % name)
    request.addfinalizer(untag)
    tag(TINY_IMAGE)
    tiny_id = DOCKER.call("GET", "/images/%s/json" % TINY_IMAGE)[1]["Id"]
    base_id = DOCKER.call("GET", "/images/%s/json" % BASE_IMAGE)[1]["Id"]
    assert tiny_id != base_id
    sb = docker_broker(**pool_env(SANDBOX_IMAGE=name, POOL="%s:1" % name))
    (first,) = wait_until(lambda: ready_ids(sb, name), 60, 0.1, "pool filled")
    assert DOCKER.inspect("sb-" + first)["Image"] == tiny_id
    assert sb.b.redis.hget(sb.b.key("wpoolm:" + first), "imageId") == tiny_id
    tag(BASE_IMAGE)  # the name now names another image
    second = wait_until(lambda: [s for s in ready_ids(sb, name) if s != first], 30, 0.2,
                        "a member of the new image")[0]
    assert DOCKER.inspect("sb-" + second)["Image"] == base_id
    wait_until(lambda: DOCKER.state("sb-" + first) is None, 20, 0.2, "old member removed")
    assert "its image name now names another image" in sb.b.logs("supervisor")
    # a claim gets the new image
    lz = check_sandbox_lease(sb.acquire("ru", "s1"))
    assert lz["sandboxId"] == second


BROKER_PROCS = ("nginx", "ingress", "fcgi-execd", "fcgi-execd-lane", "fcgi-sandboxes", "fcgi-leases",
                "fcgi-status", "supervisor")


@pytest.mark.parametrize("how", ["term", "kill_and_lose_one"])
def test_pool_members_survive_broker_restart(docker_broker, how):
    """Every broker process stopped (SIGTERM, or SIGKILL with one member's
    container removed while the broker is down), then started again: the
    members are the same containers, claimed warm; a lost one is
    reconciled away and the pool converges to its size; nothing leaks."""
    size = 3
    sb = docker_broker(**pool_env(POOL="%s:%d" % (TINY_IMAGE, size)))
    members = set(wait_full(sb, size))
    wait_until(lambda: len(sb.containers()) == size, 30, 0.2, "only the members run")
    ids = {sid: DOCKER.inspect("sb-" + sid)["Id"] for sid in members}
    for name in BROKER_PROCS:
        sb.b.stop(name, kill=(how != "term"))
    lost = None
    if how == "kill_and_lose_one":
        lost = sorted(members)[0]
        st, body = DOCKER.call("DELETE", "/containers/sb-%s?force=1&v=1" % lost)
        assert st == 204, (st, body)
    # the members outlive the broker
    for sid in members - {lost}:
        assert DOCKER.state("sb-" + sid) == "running", sid
    for name in reversed(BROKER_PROCS):
        sb.b.start(name)
    wait_until(lambda: sb.b.get("/health").status == 200, 30, 0.2, "broker up again")
    kept = members - {lost}

    seen = {}

    def converged():
        ready = set(ready_ids(sb))
        cs = sb.containers()
        sids = {c["Labels"]["io.sandbox-broker.sandbox-id"] for c in cs}
        seen.update(ready=ready, containers=sids, kept=kept, lost=lost)
        # the surviving members are still members; the lost one is not;
        # every container is a ready member (no stray one)
        return (len(ready) == size and kept <= ready and lost not in ready
                and len(cs) == size and sids == ready)
    try:
        wait_until(converged, 60, 0.5, "pool converged to %d, nothing leaked" % size)
    except AssertionError:
        raise AssertionError("pool did not converge: %r" % seen)
    if lost:
        assert "its container is gone or has ended" in sb.b.logs("supervisor")
    for sid in kept:  # the very same containers
        assert DOCKER.inspect("sb-" + sid)["Id"] == ids[sid], sid
    # claims are served warm from the members made before the restart first
    # (the oldest member goes first)
    lz = check_sandbox_lease(sb.acquire("ru", "s1"))
    assert lz["sandboxId"] in kept, (lz["sandboxId"], kept)
    assert sb.run(lz, "true")["exitCode"] == 0
    st = pool_status(sb)
    assert st["claimsWarm"] == 1 and st["claimsCold"] == 0, st
    sb.release("ru", "s1")
    wait_until(lambda: DOCKER.state("sb-" + lz["sandboxId"]) is None, 20, 0.2,
               "claimed sandbox removed")
    wait_full(sb, size)
    wait_until(lambda: len(sb.containers()) == size, 30, 0.5, "only the members run")


def test_refill_waits_for_cold_creates_of_its_image(docker_broker):
    # a cold create of the pooled image in flight (pool_cold_begin's entry,
    # made here by hand) holds the refill; at most POOL_REFILL_HOLD_MS
    sb = docker_broker(**pool_env(POOL="%s:1" % TINY_IMAGE, POOL_REFILL_HOLD_MS=8000))
    (sid,) = wait_full(sb, 1)
    cold = sb.b.key("wpoolcold:" + TINY_IMAGE)
    sb.b.redis.zadd(cold, {"0" * 32: int(time.time() * 1000) + 600000})
    lz = check_sandbox_lease(sb.acquire("hu", "s1"))
    assert lz["sandboxId"] == sid
    time.sleep(2)  # several refill steps (every 200 ms while idle)
    assert ready_ids(sb) == [] and sb.b.redis.zcard(sb.b.key("wpoolall:" + TINY_IMAGE)) == 0
    sb.b.redis.zrem(cold, "0" * 32)
    wait_full(sb, 1)
    # real cold creates leave no entry behind
    for sess in ("s2", "s3", "s4"):
        check_sandbox_lease(sb.acquire("hu", sess))
    assert sb.b.redis.zcard(cold) == 0
    # an entry that never ends (a crashed process's, before its bound) is outwaited
    wait_full(sb, 1)
    sb.b.redis.zadd(cold, {"1" * 32: int(time.time() * 1000) + 600000})
    check_sandbox_lease(sb.acquire("hu", "s5"))
    wait_full(sb, 1, timeout=60)  # after at most 8 s of holding
    assert sb.b.redis.zcard(cold) == 1


def test_refill_hold_off(docker_broker):
    sb = docker_broker(**pool_env(POOL="%s:1" % TINY_IMAGE, POOL_REFILL_HOLD_MS=0))
    (sid,) = wait_full(sb, 1)
    lz = check_sandbox_lease(sb.acquire("ou", "s1"))
    assert lz["sandboxId"] == sid
    assert sb.b.redis.zcard(sb.b.key("wpoolcold:" + TINY_IMAGE)) == 0
    wait_full(sb, 1)


# Issue 24 (M6): POOL=sandbox-broker/base:5 made a pool whose members the
# acquires for sandbox-broker/base:latest never claimed (0 of 50), reported
# healthy, nothing logged. Images compare as Docker means them now.
TINY_BARE = TINY_IMAGE.rsplit(":", 1)[0]  # sandbox-broker/tiny


@pytest.mark.parametrize("pool_image,sandbox_image", [
    (TINY_BARE, TINY_IMAGE),                    # the spelling
    (TINY_IMAGE, TINY_BARE),                    # the other way round
    ("docker.io/" + TINY_BARE, TINY_IMAGE),     # Docker Hub's full name
], ids=["pool-untagged", "image-untagged", "pool-docker.io"])
def test_pool_spellings_serve_claims_warm(docker_broker, pool_image, sandbox_image):
    n = 3
    sb = docker_broker(**pool_env(SANDBOX_IMAGE=sandbox_image, POOL="%s:%d" % (pool_image, n)))
    members = set(wait_until(lambda: len(ready_ids(sb, pool_image)) >= n and ready_ids(sb, pool_image),
                             60, 0.1, "pool filled"))
    got = []
    for i in range(n):
        lz = check_sandbox_lease(sb.acquire("sp%d" % i, "s1"))
        assert sb.run(lz, "true")["exitCode"] == 0
        got.append(lz["sandboxId"])
    assert set(got) == members, "claims went cold: %r, members %r" % (got, members)
    st = [p for p in status(sb)["pools"] if p["image"] == pool_image][0]
    assert st["claimsWarm"] == n and st["claimsCold"] == 0, st
    assert st["servesLeases"] is True and st["warning"] == "", st
    h = sb.b.get("/health")
    assert h.status == 200 and h.json["status"] == "healthy", h
    assert "only OpenSandbox creates" not in sb.b.logs("supervisor")
    # the members were made of the image the name means, and refill goes on
    wait_until(lambda: len(ready_ids(sb, pool_image)) == n, 60, 0.2, "pool refilled")


def test_pool_of_an_image_nothing_asks_for_is_reported(docker_broker):
    """A pool of an image no lease mode uses (SANDBOX_IMAGE is another) is
    said once in the supervisor's log at start and is a warning in /health
    (degraded, naming the pool) while no create has asked for its image;
    the pool of SANDBOX_IMAGE next to it is not reported."""
    sb = docker_broker(**pool_env(SANDBOX_IMAGE=TINY_IMAGE,
                                  POOL="%s:1,%s:1" % (BASE_IMAGE, TINY_BARE)))
    wait_until(lambda: ready_ids(sb, BASE_IMAGE) and ready_ids(sb, TINY_BARE), 90, 0.2, "pools filled")
    h = sb.b.get("/health")
    assert h.status == 200 and h.json["status"] == "degraded", h
    check = h.json["checks"]["pool"]
    assert check.startswith("warning: pool %s: " % BASE_IMAGE), check
    assert "no lease mode uses its image (SANDBOX_IMAGE is %s)" % TINY_IMAGE in check, check
    assert check.count("pool ") == 1 and "pool %s:" % TINY_BARE not in check, check
    pools = {p["image"]: p for p in status(sb)["pools"]}
    assert pools[BASE_IMAGE]["servesLeases"] is False and pools[BASE_IMAGE]["warning"], pools
    assert pools[TINY_BARE]["servesLeases"] is True and pools[TINY_BARE]["warning"] == "", pools
    # leases keep taking the tiny pool's members; the base pool still serves nobody
    lz = check_sandbox_lease(sb.acquire("nu", "s1"))
    assert sb.b.redis.hget(sb.b.key("wpoolstat:" + TINY_BARE), "warm") == "1"
    assert lz["sandboxId"] not in ready_ids(sb, BASE_IMAGE)
    assert sb.b.get("/health").json["status"] == "degraded"
    log = sb.b.logs("supervisor")
    lines = [ln for ln in log.splitlines() if "only OpenSandbox creates naming this image" in ln]
    assert len(lines) == 1 and BASE_IMAGE in lines[0], lines
