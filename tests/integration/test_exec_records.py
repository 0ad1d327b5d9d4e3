"""Exec records (docs/API.md, "Exec records"): POST /v1/sandboxes/{id}/exec
with an `execId` keeps the command's record in Redis, readable with GET
/v1/sandboxes/{id}/exec/{execId}: its output so far while it runs, its
result when done, the provider's error when it failed. Against real Docker
sandboxes through nginx:

- the answer is the plain exec's, and the record holds the same result;
- a running command shows a growing tail that is a prefix of its output;
- a second POST of the same execId is 409 and never runs the command again
  (a counter file proves it);
- a client that goes away, or an nginx restart under a running command,
  does not lose the result;
- bad, unknown, foreign (lease, tenant) execIds; the per-lease cap
  (eviction of the oldest finished record, 429 when all run); the expiry of
  running and finished records; records gone with their lease;
- a queued ticket polled with no supervisor running says so.

One broker (EXEC_MAX_OUTPUT=65536, EXEC_RECORD_MAX_OUTPUT=4096, a second
tenant) serves most tests; the cap/TTL and poll tests start their own.
"""

import json
import os
import signal
import socket
import threading
import time
import uuid

import pytest

import conftest
from brokerlib import check_error, http_request, wait_until
from sandboxlib import (DOCKER, SB, SB_HTTP_TIMEOUT, TINY_IMAGE, check_sandbox_lease,  # noqa: F401
                        docker_broker, require_docker)

require_docker()

EXEC_MAX_OUTPUT = 65536
RECORD_MAX_OUTPUT = 4096
OTHER_TENANT = "other"
OTHER_KEY = "itk_%s" % uuid.uuid4().hex
LINES = "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.5; done"
LINES_OUT = "".join("line %d\n" % i for i in range(1, 7))


@pytest.fixture(scope="module")
def rt(request, services, it_root):
    env = {"SANDBOX_PROVIDER": "docker", "BROKER_CAPACITY": "8", "IDLE_POLICY": "delete",
           "EXEC_MAX_OUTPUT": str(EXEC_MAX_OUTPUT),
           "EXEC_RECORD_MAX_OUTPUT": str(RECORD_MAX_OUTPUT),
           "OPENSANDBOX_API_KEYS": "%s:%s" % (OTHER_KEY, OTHER_TENANT)}
    b = conftest.make_broker(request, services, it_root, **env)
    return SB(b)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, rt):
    request.node._it_brokers = [rt.b]


def user():
    return "u" + uuid.uuid4().hex[:10]


def exec_id():
    return "x-" + uuid.uuid4().hex[:20]


@pytest.fixture
def lease(rt):
    u = user()
    lz = check_sandbox_lease(rt.acquire(u, "s1"))
    yield lz
    rt.b.release(u, "s1", "deleted")


def post(sb, lease, cmd, eid, timeout=SB_HTTP_TIMEOUT, **kw):
    body = {"cmd": cmd}
    if eid is not None:
        body["execId"] = eid
    body.update(kw)
    return sb.call("POST", lease, "/exec", body, timeout=timeout)


def get(sb, lease, eid, **kw):
    return sb.call("GET", lease, "/exec/%s" % eid, **kw)


def rec_key(sb, lease, eid):
    return sb.b.key("exec:%s:%s" % (lease["leaseId"], eid))


def wait_state(sb, lease, eid, state, timeout=30):
    """Poll the record until it is in state; a 404 counts as "not yet" only
    while waiting for 'running' (the POST may not have reached the broker)."""
    last = []

    def chk():
        r = get(sb, lease, eid)
        last[:] = [r]
        if r.status == 404 and state == "running":
            return None
        assert r.status == 200, r
        return r.json if r.json["state"] == state else None
    try:
        return wait_until(chk, timeout, 0.1, "exec %s %s" % (eid, state))
    except AssertionError as e:
        raise AssertionError("%s; last answer %r" % (e, last))


def raw_redis(sb):
    """A client of the broker's Redis that gives bytes, not text."""
    import redis
    return redis.Redis(host="127.0.0.1", port=sb.b.services.redis_port, socket_timeout=10)


def in_thread(fn, *args, **kw):
    """Run fn in a thread; the returned dict gets 'resp' or 'error'."""
    out = {}

    def run():
        try:
            out["resp"] = fn(*args, **kw)
        except Exception as e:  # the request failing is what some tests want
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    out["thread"] = t
    return out


RESULT_FIELDS = ("exitCode", "stdout", "stderr", "stdoutTruncated", "stderrTruncated",
                 "timedOut", "durationMs")


def test_answer_unchanged_and_record_done(rt, lease):
    cmd = "echo out; echo err >&2; exit 3"
    plain = rt.run(lease, cmd)
    eid = exec_id()
    t0 = int(time.time() * 1000)
    r = post(rt, lease, cmd, eid)
    assert r.status == 200, r
    assert set(r.json) == set(plain) == set(RESULT_FIELDS), (r.json, plain)
    for f in RESULT_FIELDS:
        if f != "durationMs":
            assert r.json[f] == plain[f], (f, r.json, plain)
    g = get(rt, lease, eid)
    assert g.status == 200, g
    assert g.json["execId"] == eid and g.json["state"] == "done", g
    assert abs(g.json["startedAt"] - t0) < 10000, g
    for f in RESULT_FIELDS:
        assert g.json[f] == r.json[f], (f, g.json, r.json)
    assert "output" not in g.json and "message" not in g.json, g
    # the world: one record, expiring EXEC_RECORD_TTL_MS (default 10 min) after its end
    key = rec_key(rt, lease, eid)
    h = rt.b.redis.hgetall(key)
    assert h["state"] == "done" and h["tenant"] == "it" and h["sandboxId"] == lease["sandboxId"], h
    assert "output" not in h, h
    assert 590000 < rt.b.redis.pttl(key) <= 600000
    assert rt.b.redis.zrange(rt.b.key("execs:" + lease["leaseId"]), 0, -1) == [eid]
    # without execId nothing is recorded
    n = len(list(rt.b.redis.scan_iter(match=rt.b.key("exec:*"))))
    rt.run(lease, "true")
    assert len(list(rt.b.redis.scan_iter(match=rt.b.key("exec:*")))) == n


def test_running_tail_grows_then_done(rt, lease):
    eid = exec_id()
    p = in_thread(post, rt, lease, LINES, eid)
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        g = get(rt, lease, eid)
        if g.status == 404:  # not created yet
            time.sleep(0.05)
            continue
        assert g.status == 200, g
        if g.json["state"] != "running":
            break
        assert set(g.json) == {"execId", "state", "startedAt", "output", "outputBytes"}, g
        assert g.json["outputBytes"] == len(g.json["output"].encode()), g
        if not seen or seen[-1] != g.json["output"]:
            seen.append(g.json["output"])
        time.sleep(0.15)
    p["thread"].join(SB_HTTP_TIMEOUT)
    r = p["resp"]
    assert r.status == 200 and r.json["stdout"] == LINES_OUT, r
    done = wait_state(rt, lease, eid, "done")
    assert done["stdout"] == LINES_OUT, done
    grown = [s for s in seen if s]
    assert len(grown) >= 2, "the tail did not grow while running: %r" % seen
    for a, b in zip(seen, seen[1:]):
        assert len(b) >= len(a) and b.startswith(a), seen
    for s in seen:
        assert LINES_OUT.startswith(s), (s, LINES_OUT)


def test_hostile_output_is_capped_and_sanitized(rt, lease):
    # while running: 100 kB of random bytes shows as at most 32 KiB of text
    eid = exec_id()
    p = in_thread(post, rt, lease, "head -c 100000 /dev/urandom; sleep 2; echo end", eid)
    g = wait_until(lambda: (lambda r: r.json if r.status == 200 and r.json["state"] == "running"
                            and r.json["outputBytes"] == 100000 else None)(get(rt, lease, eid)),
                   20, 0.1, "tail of the random bytes")
    assert len(g["output"]) <= 32768, len(g["output"])
    p["thread"].join(SB_HTTP_TIMEOUT)
    r = p["resp"]
    assert r.status == 200 and r.json["stdoutTruncated"] is True, r  # EXEC_MAX_OUTPUT 65536
    done = wait_state(rt, lease, eid, "done")
    assert done["stdoutTruncated"] is True
    assert len(done["stdout"]) <= RECORD_MAX_OUTPUT, len(done["stdout"])  # a char per byte at most
    # the record keeps EXEC_RECORD_MAX_OUTPUT bytes (the answer EXEC_MAX_OUTPUT), as they came
    rb = raw_redis(rt)
    assert len(rb.hget(rec_key(rt, lease, eid), "stdout")) == RECORD_MAX_OUTPUT
    # 10000 bytes: all in the answer, cut in the record (with its flag)
    eid = exec_id()
    r = post(rt, lease, "head -c 10000 /dev/zero | tr '\\0' a; printf '\\377\\0z' >&2", eid)
    assert r.status == 200, r
    assert r.json["stdout"] == "a" * 10000 and r.json["stdoutTruncated"] is False, r.json["stdoutTruncated"]
    assert r.json["stderr"] == "\ufffd\ufffdz", r.json["stderr"]
    g = get(rt, lease, eid)
    assert g.json["stdout"] == "a" * RECORD_MAX_OUTPUT and g.json["stdoutTruncated"] is True, g.json
    assert g.json["stderr"] == "\ufffd\ufffdz" and g.json["stderrTruncated"] is False, g.json
    assert len(rb.hget(rec_key(rt, lease, eid), "stderr")) == 3  # bytes kept as they came


def test_same_exec_id_never_runs_twice(rt, lease):
    eid = exec_id()
    cmd = "echo run >> /tmp/counter; sleep 2; echo done"
    p = in_thread(post, rt, lease, cmd, eid)
    wait_state(rt, lease, eid, "running")
    # while it runs
    r = post(rt, lease, cmd, eid)
    body = check_error(r, 409, "EXEC_ID_IN_USE")
    assert "GET /v1/sandboxes/%s/exec/%s" % (lease["sandboxId"], eid) in body["message"], body
    p["thread"].join(SB_HTTP_TIMEOUT)
    assert p["resp"].status == 200 and p["resp"].json["stdout"] == "done\n", p["resp"]
    # and after it finished, with another command under the same id
    r = post(rt, lease, "echo run >> /tmp/counter", eid)
    check_error(r, 409, "EXEC_ID_IN_USE")
    assert rt.run(lease, "wc -l < /tmp/counter")["stdout"].strip() == "1"
    assert get(rt, lease, eid).json["stdout"] == "done\n"
    # another lease may use the same id for its own command
    other = check_sandbox_lease(rt.acquire(user(), "s1"))
    try:
        r = post(rt, other, "echo mine", eid)
        assert r.status == 200 and r.json["stdout"] == "mine\n", r
        assert get(rt, other, eid).json["stdout"] == "mine\n"
        assert get(rt, lease, eid).json["stdout"] == "done\n"
    finally:
        rt.b.release(other["userId"], "s1", "deleted")


def test_client_gone_mid_command_result_kept(rt, lease):
    eid = exec_id()
    body = json.dumps({"cmd": LINES, "execId": eid}).encode()
    head = ("POST /v1/sandboxes/%s/exec HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Authorization: Bearer %s\r\nX-Lease-ID: %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n"
            % (lease["sandboxId"], rt.b.api_key, lease["leaseId"], len(body))).encode()
    s = socket.create_connection(("127.0.0.1", rt.b.port), timeout=10)
    s.sendall(head + body)
    wait_state(rt, lease, eid, "running")
    s.close()  # the client goes away while the command runs
    done = wait_state(rt, lease, eid, "done", timeout=30)
    assert done["stdout"] == LINES_OUT and done["exitCode"] == 0, done
    # nginx saw the client go (499), the handler finished the command anyway
    log = open("%s/nginx/access.log" % rt.b.state_dir).read()
    assert any("/exec HTTP/1.1\" 499" in ln for ln in log.splitlines()), log[-2000:]


def test_nginx_restart_mid_command_result_kept(rt, lease):
    eid = exec_id()
    p = in_thread(post, rt, lease, LINES + "; echo end >> /tmp/ran", eid)
    wait_state(rt, lease, eid, "running")
    try:
        rt.b.stop("nginx")
        p["thread"].join(SB_HTTP_TIMEOUT)
        assert "error" in p or p["resp"].status >= 500, p  # the client's request failed
    finally:
        rt.b.start("nginx")
    done = wait_state(rt, lease, eid, "done", timeout=30)
    assert done["stdout"] == LINES_OUT, done
    # the retry recipe: the record exists, so a re-POST is refused, nothing runs twice
    check_error(post(rt, lease, LINES, eid), 409, "EXEC_ID_IN_USE")
    assert rt.run(lease, "wc -l < /tmp/ran")["stdout"].strip() == "1"


def test_provider_failure_recorded_as_failed(rt):
    u = user()
    lz = check_sandbox_lease(rt.acquire(u, "s1"))
    sup = rt.b.pid("supervisor")
    stopped = False
    try:
        eid = exec_id()
        p = in_thread(post, rt, lz, "sleep 20", eid)
        wait_state(rt, lz, eid, "running")
        # the supervisor's watch ends the lease of a dead sandbox, and its
        # exec records with it (test_lease_sandbox_lost.py): held off until
        # the record has been read
        os.kill(sup, signal.SIGSTOP)
        stopped = True
        st, _ = DOCKER.call("POST", "/containers/sb-%s/kill" % lz["sandboxId"])
        assert st == 204, st
        p["thread"].join(SB_HTTP_TIMEOUT)
        r = p["resp"]
        if r.status == 200:
            # the backend reported the kill as the command's end
            g = wait_state(rt, lz, eid, "done")
            assert g["exitCode"] == r.json["exitCode"], (g, r)
        else:
            body = check_error(r, r.status)
            assert r.status in (409, 502, 503), r
            g = wait_until(lambda: (lambda x: x.json if x.json["state"] != "running" else None)(
                get(rt, lz, eid)), 20, 0.1, "record ended")
            assert g == {"execId": eid, "state": "failed", "startedAt": g["startedAt"],
                         "message": body["message"]}, (g, body)
        # the sandbox is not Running any more: GET still reads the record
        assert get(rt, lz, eid).status == 200
        # once the watch sees the death, the lease ends, its records with it
        os.kill(sup, signal.SIGCONT)
        stopped = False
        wait_until(lambda: rt.b.heartbeat(lease_id=lz["leaseId"]).status == 404, 20, 0.1,
                   "the lease ended with its sandbox")
        check_error(rt.b.heartbeat(lease_id=lz["leaseId"]), 404, "SANDBOX_LOST")
        check_error(get(rt, lz, eid), 404)
    finally:
        if stopped:
            os.kill(sup, signal.SIGCONT)
        rt.b.release(u, "s1", "deleted")


def test_bad_unknown_and_foreign_exec_ids(rt, lease):
    b = rt.b
    lid = lease["leaseId"]
    # bad execId in the body: 400, nothing runs, nothing stored
    for bad in ("short", "x" * 65, "bad.id!!", "abc/defgh", "abcdefgh ", 5, "", ["abcdefgh"], True):
        r = post(rt, lease, "echo ran >> /tmp/badid", bad)
        body = check_error(r, 400, "INVALID_REQUEST")
        assert "execId" in body["message"], body
    assert rt.run(lease, "test -e /tmp/badid; echo $?")["stdout"] == "1\n"
    assert list(b.redis.scan_iter(match=b.key("exec*:%s*" % lid))) == []
    # bad execId in the path: 400; one over a route segment's 64 bytes, or with
    # an encoded '/': no such route (as for every route)
    for bad in ("short", "bad.id!!", "%2E%2E%2E%2E%2E%2E%2E%2E", "abcdefgh%00"):
        check_error(get(rt, lease, bad), 400, "INVALID_REQUEST")
    for bad in ("x" * 65, "abcd%2Fefgh"):
        check_error(get(rt, lease, bad), 404, "NOT_FOUND")
    # unknown
    nobody = exec_id()
    unknown = check_error(get(rt, lease, nobody), 404, "EXEC_NOT_FOUND")
    # another lease's record: the same answer as an unknown one
    eid = exec_id()
    assert post(rt, lease, "echo secret", eid).status == 200
    other = check_sandbox_lease(rt.acquire(user(), "s1"))
    try:
        r = get(rt, other, eid)
        body = check_error(r, 404, "EXEC_NOT_FOUND")
        assert body["message"].replace(eid, "ID") == unknown["message"].replace(nobody, "ID"), body
        # its lease on our sandbox, or ours on its sandbox: no such sandbox
        check_error(get(rt, lease, eid, lease_id=other["leaseId"]), 404, "SANDBOX_NOT_FOUND")
        check_error(get(rt, other, eid, lease_id=lid, sandbox_id=other["sandboxId"]), 404,
                    "SANDBOX_NOT_FOUND")
    finally:
        b.release(other["userId"], "s1", "deleted")
    # another tenant: its own lease, or our lease id with its key: 404
    ou = user()
    r = b.acquire(ou, "s1", auth=OTHER_KEY, timeout=SB_HTTP_TIMEOUT)
    if r.status == 202:
        tid = r.json["ticketId"]
        olz = wait_until(lambda: (lambda x: x.json.get("lease") if x.json["status"] == "granted" else None)(
            b.poll(tid, auth=OTHER_KEY, timeout=SB_HTTP_TIMEOUT)), 90, 0.2, "other tenant's lease")
    else:
        assert r.status == 200, r
        olz = r.json["lease"]
    try:
        hdr = {"Authorization": "Bearer " + OTHER_KEY, "X-Lease-ID": olz["leaseId"]}
        r = b.request("GET", "/v1/sandboxes/%s/exec/%s" % (olz["sandboxId"], eid), None, hdr)
        check_error(r, 404, "EXEC_NOT_FOUND")
        hdr = {"Authorization": "Bearer " + OTHER_KEY, "X-Lease-ID": lid}
        r = b.request("GET", "/v1/sandboxes/%s/exec/%s" % (lease["sandboxId"], eid), None, hdr)
        check_error(r, 404, "SANDBOX_NOT_FOUND")
        # the same execId under the other tenant is its own
        hdr = {"Authorization": "Bearer " + OTHER_KEY, "X-Lease-ID": olz["leaseId"]}
        r = b.request("POST", "/v1/sandboxes/%s/exec" % olz["sandboxId"],
                      {"cmd": "echo theirs", "execId": eid}, hdr, SB_HTTP_TIMEOUT)
        assert r.status == 200 and r.json["stdout"] == "theirs\n", r
    finally:
        b.release(ou, "s1", "deleted", auth=OTHER_KEY)
    assert get(rt, lease, eid).json["stdout"] == "secret\n"


def test_cap_evicts_the_oldest_finished(rt, lease):
    b = rt.b
    idx = b.key("execs:" + lease["leaseId"])
    ids = ["cap-%02d-%s" % (i, uuid.uuid4().hex[:8]) for i in range(17)]
    for i, eid in enumerate(ids[:16]):
        r = post(rt, lease, "echo %d" % i, eid)
        assert r.status == 200, r
        time.sleep(0.002)  # distinct start times
    assert b.redis.zcard(idx) == 16
    r = post(rt, lease, "echo 16", ids[16])  # the 17th
    assert r.status == 200, r
    check_error(get(rt, lease, ids[0]), 404, "EXEC_NOT_FOUND")
    assert not b.redis.exists(rec_key(rt, lease, ids[0]))
    assert b.redis.zcard(idx) == 16
    for eid in ids[1:]:
        assert get(rt, lease, eid).json["state"] == "done"
    # the evicted id is free again
    assert post(rt, lease, "echo again", ids[0]).status == 200


def test_records_go_with_their_lease(rt):
    u = user()
    lz = check_sandbox_lease(rt.acquire(u, "s1"))
    eid = exec_id()
    assert post(rt, lz, "true", eid).status == 200
    assert rt.b.redis.exists(rec_key(rt, lz, eid))
    rt.release(u, "s1", "deleted")
    assert not rt.b.redis.exists(rec_key(rt, lz, eid))
    assert not rt.b.redis.exists(rt.b.key("execs:" + lz["leaseId"]))
    check_error(get(rt, lz, eid), 404, "SANDBOX_NOT_FOUND")


def test_all_running_is_429_and_records_expire(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE,
                       EXEC_RECORDS_PER_LEASE=2, EXEC_RECORD_TTL_MS=2000)
    b = sb.b
    u = user()
    lz = sb.acquire(u, "s1")
    a, c = exec_id(), exec_id()
    pa = in_thread(post, sb, lz, "sleep 4", a, timeoutMs=5000)
    pc = in_thread(post, sb, lz, "sleep 4", c, timeoutMs=5000)
    wait_state(sb, lz, a, "running")
    wait_state(sb, lz, c, "running")
    # a running record lives its command's timeout + 60 s
    assert 60000 < b.redis.pttl(rec_key(sb, lz, a)) <= 65000
    r = post(sb, lz, "echo no >> /tmp/full", exec_id())
    body = check_error(r, 429, "TOO_MANY_EXECS")
    assert "2" in body["message"], body
    for p in (pa, pc):
        p["thread"].join(SB_HTTP_TIMEOUT)
        assert p["resp"].status == 200, p
    assert sb.run(lz, "test -e /tmp/full; echo $?")["stdout"] == "1\n"
    # finished: readable for EXEC_RECORD_TTL_MS, then gone
    assert 0 < b.redis.pttl(rec_key(sb, lz, a)) <= 2000
    assert get(sb, lz, a).json["state"] == "done"
    wait_until(lambda: get(sb, lz, a).status == 404, 10, 0.2, "record expired")
    check_error(get(sb, lz, a), 404, "EXEC_NOT_FOUND")
    assert not b.redis.exists(rec_key(sb, lz, a))
    wait_until(lambda: not b.redis.exists(b.key("execs:" + lz["leaseId"])), 10, 0.2, "index expired")
    # room again
    assert post(sb, lz, "true", exec_id()).status == 200
    sb.release(u, "s1", "deleted")


def test_poll_says_no_supervisor_runs(broker):
    b = broker(BROKER_CAPACITY=1)
    r = b.acquire("u1", "s1")
    assert r.status == 200, r
    r = b.acquire("u2", "s1")
    assert r.status == 202 and r.json["status"] == "queued", r
    assert "message" not in r.json, r  # a supervisor runs
    tid = r.json["ticketId"]
    r = b.poll(tid)
    assert r.status == 200 and r.json["status"] == "queued" and "message" not in r.json, r
    b.stop("supervisor")
    r = b.poll(tid)
    assert r.status == 200 and r.json["status"] == "queued", r
    assert "no supervisor is running" in r.json["message"], r
    r = b.acquire("u3", "s1")
    assert r.status == 202 and r.json["status"] == "queued", r
    assert "no supervisor is running" in r.json["message"], r
    b.start("supervisor")
    r = b.release("u1", "s1")
    assert r.status == 200, r
    got = b.wait_granted(tid)
    assert "message" not in got, got


def test_poll_of_provisioning_says_no_supervisor_runs(docker_broker):
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="delete", SANDBOX_IMAGE=TINY_IMAGE)
    b = sb.b
    b.stop("supervisor")
    r = b.acquire("u1", "s1", timeout=SB_HTTP_TIMEOUT)
    assert r.status == 202 and r.json["status"] == "provisioning", r
    msg = r.json["message"]
    r = b.poll(r.json["ticketId"], timeout=SB_HTTP_TIMEOUT)
    assert r.status == 200 and r.json["status"] == "provisioning", r
    assert r.json["message"] == msg, r
    b.start("supervisor")
    sb.poll_lease(r.json["ticketId"])
    sb.release("u1", "s1", "deleted")
