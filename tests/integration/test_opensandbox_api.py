"""The OpenSandbox lifecycle API (sandbox-lifecycle.yml of the OpenSandbox project)
over raw HTTP, against real Docker sandboxes: auth (401), spec-shaped 400s
for bad bodies, list filters (repeatable state, metadata) and pagination
(newest first), metadata merge patch, pause/resume changing the real
container, renew rules, endpoints, tenant isolation (404), delete, expiry
killing the container, and admission shared with leases (Pending/QUEUED
at capacity, Running once a slot frees).

One broker (capacity 8) serves the module; every test that lists uses its
own tenant. The capacity test and the expiry test start their own broker.
"""

import datetime
import time

import pytest

from brokerlib import parse_iso_ms, wait_until
from sandboxlib import BASE_IMAGE, require_docker
from sdklib import OSB, check_osb_error, check_sandbox, container, metadata_query, \
    start_osb_broker, wait_container_gone

require_docker()


@pytest.fixture(scope="module")
def mb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=8)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, mb):
    request.node._it_brokers = [mb]


@pytest.fixture
def made(mb):
    """Sandboxes a test made ((tenant, id)); deleted after it."""
    ids = []
    yield ids
    for tenant, sid in ids:
        OSB(mb, tenant).delete(sid)


def iso_in(seconds):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def valid_body(**over):
    body = {"image": {"uri": BASE_IMAGE}, "entrypoint": ["sleep", "infinity"], "timeout": 600,
            "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
    body.update(over)
    return body


# ------------------------------------------------------------------ auth

@pytest.mark.parametrize("key", ["", "wrong-key", "key-alpha-0123456789x"])
def test_missing_or_invalid_api_key_is_401(mb, key):
    o = OSB(mb, None)
    check_osb_error(o.list(key=key), 401, "UNAUTHORIZED")
    check_osb_error(o.create_raw(valid_body(), key=key), 401, "UNAUTHORIZED")
    check_osb_error(o.get("0" * 32, key=key), 401, "UNAUTHORIZED")
    check_osb_error(o.delete("0" * 32, key=key), 401, "UNAUTHORIZED")


def test_request_id_is_echoed(mb):
    r = OSB(mb, "alpha").list(headers={"X-Request-ID": "osb-test-rid-1"})
    assert r.status == 200, r
    assert r.headers.get("X-Request-ID") == "osb-test-rid-1", r.headers


# ------------------------------------------------------------ bad bodies

BAD_BODIES = {
    "missing image": {"entrypoint": ["sleep", "1"], "timeout": 600},
    "image without uri": valid_body(image={}),
    "image uri not a string": valid_body(image={"uri": 5}),
    "missing entrypoint": {"image": {"uri": BASE_IMAGE}, "timeout": 600},
    "empty entrypoint": valid_body(entrypoint=[]),
    "entrypoint not strings": valid_body(entrypoint=[1, 2]),
    "timeout 59": valid_body(timeout=59),
    "timeout 0": valid_body(timeout=0),
    "timeout x": valid_body(timeout="x"),
    "timeout float": valid_body(timeout=60.5),
    "cpu 5 cores": valid_body(resourceLimits={"cpu": "5 cores"}),
    "cpu negative": valid_body(resourceLimits={"cpu": "-1"}),
    "cpu number": valid_body(resourceLimits={"cpu": 1}),
    "memory 12 parsecs": valid_body(resourceLimits={"memory": "12 parsecs"}),
    "memory 1Qi": valid_body(resourceLimits={"memory": "1Qi"}),
    "memory too small": valid_body(resourceLimits={"memory": "1Ki"}),
    "unknown resource": valid_body(resourceLimits={"flux": "1"}),
    "platform os null": valid_body(platform={"os": None, "arch": "amd64"}),
    "platform arch not a string": valid_body(platform={"os": "linux", "arch": ["amd64"]}),
    "platform windows": valid_body(platform={"os": "windows", "arch": "amd64"}),
    "resourceLimits not an object": valid_body(resourceLimits="1 cpu"),
    "metadata reserved key": valid_body(metadata={"opensandbox.io/owner": "me"}),
    "metadata bad key": valid_body(metadata={"bad key": "v"}),
    "metadata bad value": valid_body(metadata={"k": "has spaces"}),
    "metadata value not a string": valid_body(metadata={"k": 1}),
    "metadata not an object": valid_body(metadata=["k"]),
    "env bad name": valid_body(env={"1BAD": "x"}),
    "env value not a string": valid_body(env={"A": 1}),
    "snapshotId": valid_body(snapshotId="snap-1"),
    "snapshotId without image": {"snapshotId": "snap-1"},
    "image auth not an object": valid_body(image={"uri": BASE_IMAGE, "auth": "u:p"}),
    "image auth unknown field": valid_body(image={"uri": BASE_IMAGE, "auth": {"token": "t"}}),
    "volumes": valid_body(volumes=[{"name": "v", "host": {"path": "/tmp"}, "mountPath": "/mnt"}]),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_create_body_is_a_spec_shaped_400(mb, name):
    o = OSB(mb, "alpha")
    before = o.list("pageSize=200").json["pagination"]["totalItems"]
    r = o.create_raw(BAD_BODIES[name])
    check_osb_error(r, 400)
    assert o.list("pageSize=200").json["pagination"]["totalItems"] == before, \
        "a refused create left a sandbox behind"


@pytest.mark.parametrize("raw,ctype", [
    (b"not json", "application/json"),
    (b'{"image": ', "application/json"),
    (b"[1, 2]", "application/json"),
    (b"", "application/json"),
])
def test_create_body_not_a_json_object_is_400(mb, raw, ctype):
    r = OSB(mb, "alpha").create_raw(raw, headers={"Content-Type": ctype})
    check_osb_error(r, 400)


def test_create_with_wrong_content_type_is_refused(mb):
    import json
    r = OSB(mb, "alpha").create_raw(json.dumps(valid_body()), headers={"Content-Type": "text/plain"})
    assert r.status in (400, 415), r
    check_osb_error(r, r.status)


# ------------------------------------------------------ create/get/delete

def test_create_get_delete_the_real_container(mb):
    o = OSB(mb, "charlie")
    r = o.create_raw(valid_body(metadata={"team": "red"}, env={"FOO": "bar"}, timeout=900))
    assert r.status == 202, r
    sb = check_sandbox(r.json, full=False)
    sid = sb["id"]
    assert sb["status"]["state"] in ("Pending", "Running"), sb
    assert sb["metadata"] == {"team": "red"}, sb
    assert sb["entrypoint"] == ["sleep", "infinity"], sb
    created, expires = parse_iso_ms(sb["createdAt"]), parse_iso_ms(sb["expiresAt"])
    assert abs(expires - created - 900 * 1000) <= 1000, sb

    got = o.wait_state(sid, "Running")
    check_sandbox(got)
    assert got["image"]["uri"] == BASE_IMAGE, got
    c = container(mb, sid)
    assert c is not None and c["State"]["Running"], c
    hc = c["HostConfig"]
    assert hc["NanoCpus"] == 250_000_000, hc.get("NanoCpus")
    assert hc["Memory"] == 128 * 1024 * 1024, hc.get("Memory")
    assert hc["NetworkMode"] == "none", hc.get("NetworkMode")
    assert c["Config"]["Cmd"] == ["sleep", "infinity"] or \
        (c["Config"].get("Entrypoint") or []) + (c["Config"]["Cmd"] or []) == ["sleep", "infinity"], \
        c["Config"]
    assert "FOO=bar" in c["Config"]["Env"], c["Config"]["Env"]

    r = o.delete(sid)
    assert r.status == 204 and r.raw == b"", r
    o.wait_state(sid, "Terminated", timeout=60)
    wait_container_gone(mb, sid)
    # a terminated sandbox cannot be deleted again
    check_osb_error(o.delete(sid), 404)


def test_manual_cleanup_has_no_expiry(mb, made):
    o = OSB(mb, "alpha")
    r = o.create_raw(valid_body(timeout=None))
    assert r.status == 202, r
    made.append(("alpha", r.json["id"]))
    assert "expiresAt" not in r.json or r.json["expiresAt"] is None, r
    got = o.wait_state(r.json["id"], "Running")
    assert got.get("expiresAt") is None, got


def test_unknown_sandbox_is_404(mb):
    o = OSB(mb, "alpha")
    for r in (o.get("f" * 32), o.delete("f" * 32), o.pause("f" * 32), o.resume("f" * 32),
              o.endpoint("f" * 32, 44772), o.renew("f" * 32, iso_in(3600)),
              o.patch_metadata("f" * 32, {"a": "b"})):
        check_osb_error(r, 404)


# --------------------------------------------------------- list, paging

def test_list_filters_and_pagination_newest_first(mb, made):
    o = OSB(mb, "delta")
    ids = []
    for i, md in enumerate([{"team": "red", "env": "prod"}, {"team": "blue", "env": "prod"},
                            {"team": "red", "env": "dev"}, {"team": "red", "env": "prod"}]):
        sid = o.create(metadata=md)
        made.append(("delta", sid))
        ids.append(sid)
        time.sleep(0.01)  # distinct createdAt
    newest_first = list(reversed(ids))
    # one of them Paused, for the state filter
    r = o.pause(ids[1])
    assert r.status == 202, r
    o.wait_state(ids[1], "Paused")

    r = o.list()
    assert r.status == 200, r
    assert [s["id"] for s in r.json["items"]] == newest_first, r
    for s in r.json["items"]:
        check_sandbox(s)
    pg = r.json["pagination"]
    assert pg["page"] == 1 and pg["pageSize"] == 20 and pg["totalItems"] == 4, pg
    assert pg["totalPages"] == 1 and pg["hasNextPage"] is False, pg

    # pagination
    p1 = o.list("pageSize=3&page=1").json
    p2 = o.list("pageSize=3&page=2").json
    p3 = o.list("pageSize=3&page=3").json
    assert [s["id"] for s in p1["items"]] == newest_first[:3], p1
    assert [s["id"] for s in p2["items"]] == newest_first[3:], p2
    assert p3["items"] == [], p3
    assert p1["pagination"] == {"page": 1, "pageSize": 3, "totalItems": 4, "totalPages": 2,
                                "hasNextPage": True}, p1
    assert p2["pagination"]["hasNextPage"] is False and p2["pagination"]["totalItems"] == 4, p2

    # state filter, repeatable
    r = o.list("state=Paused").json
    assert [s["id"] for s in r["items"]] == [ids[1]], r
    r = o.list("state=Running").json
    assert [s["id"] for s in r["items"]] == [ids[3], ids[2], ids[0]], r
    r = o.list("state=Running&state=Paused").json
    assert [s["id"] for s in r["items"]] == newest_first, r
    r = o.list("state=Terminated").json
    assert r["items"] == [] and r["pagination"]["totalItems"] == 0, r
    # states in any letter case (the SDK README writes RUNNING); a state this
    # server never gives (the spec's Resuming, the reference's Allocated, one
    # invented) matches nothing, alone or beside a known one
    r = o.list("state=RUNNING&state=paused").json
    assert [s["id"] for s in r["items"]] == newest_first, r
    for st in ("Resuming", "Allocated", "resuming", "Sleeping"):
        r = o.list("state=" + st)
        assert r.status == 200 and r.json["items"] == [], (st, r)
        assert r.json["pagination"]["totalItems"] == 0, r.json
    r = o.list("state=Resuming&state=Paused").json
    assert [s["id"] for s in r["items"]] == [ids[1]], r
    # but an empty or overlong one is a 400
    check_osb_error(o.list("state="), 400)
    check_osb_error(o.list("state=" + "x" * 24), 400)

    # metadata filter as the spec encodes it (pairs joined by &, encoded again)
    r = o.list(metadata_query({"team": "red"})).json
    assert [s["id"] for s in r["items"]] == [ids[3], ids[2], ids[0]], r
    r = o.list(metadata_query({"team": "red", "env": "prod"})).json
    assert [s["id"] for s in r["items"]] == [ids[3], ids[0]], r
    r = o.list(metadata_query({"team": "green"})).json
    assert r["items"] == [], r
    # metadata and state together, with paging
    r = o.list(metadata_query({"env": "prod"}) + "&state=Running&pageSize=1&page=2").json
    assert [s["id"] for s in r["items"]] == [ids[0]], r
    assert r["pagination"]["totalItems"] == 2 and r["pagination"]["hasNextPage"] is False, r

    # another tenant sees none of them
    r = OSB(mb, "echo").list().json
    assert not set(s["id"] for s in r["items"]) & set(ids), r


def test_terminated_sandboxes_leave_the_list(mb, made):
    """A deleted (killed) sandbox leaves every listing, so cleanup loops that
    count their tagged sandboxes converge; it stays readable by id."""
    o = OSB(mb, "foxtrot")
    tag = {"job": "gc-%d" % int(time.time() * 1000)}
    keep = o.create(metadata=tag)
    gone = o.create(metadata=tag)
    made.extend([("foxtrot", keep), ("foxtrot", gone)])
    assert o.delete(gone).status == 204
    o.wait_state(gone, "Terminated", timeout=60)
    for q in ("", metadata_query(tag), "state=Terminated"):
        ids = [s["id"] for s in o.list(q).json["items"]]
        assert gone not in ids, (q, ids)
    assert [s["id"] for s in o.list(metadata_query(tag)).json["items"]] == [keep]
    assert o.get(gone).json["status"]["state"] == "Terminated"
    # the record is kept for a bounded time (SANDBOX_KEEP_S, one hour:
    # docs/API.md, "Differences"), the live one has no such bound
    ttl = mb.redis.ttl(mb.key("sandbox:" + gone))
    assert 0 < ttl <= 3600, ttl
    assert mb.redis.ttl(mb.key("sandbox:" + keep)) == -1


@pytest.mark.parametrize("query", ["page=0", "pageSize=0", "page=x", "pageSize=-1",
                                   "pageSize=100000", "page=1.5"])
def test_list_bad_paging_is_400(mb, query):
    check_osb_error(OSB(mb, "alpha").list(query), 400)


# ------------------------------------------------------------ metadata

def test_metadata_merge_patch(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create(metadata={"keep": "1", "replace": "old", "drop": "x"})
    made.append(("alpha", sid))

    r = o.patch_metadata(sid, {"replace": "new", "drop": None, "add": "yes",
                               "example.com/team": "infra"})
    assert r.status == 200, r
    check_sandbox(r.json)
    want = {"keep": "1", "replace": "new", "add": "yes", "example.com/team": "infra"}
    assert r.json["metadata"] == want, r
    assert o.get(sid).json["metadata"] == want

    # deleting a key that is not there is fine (merge patch)
    r = o.patch_metadata(sid, {"never-there": None})
    assert r.status == 200 and r.json["metadata"] == want, r
    # plain application/json is accepted too (what the SDKs send)
    r = o.patch_metadata(sid, {"add": "again"}, content_type="application/json")
    assert r.status == 200 and r.json["metadata"]["add"] == "again", r
    want["add"] = "again"

    # refused patches change nothing
    for bad in ({"opensandbox.io/owner": "me"}, {"k": "has spaces"}, {"k": 5},
                {"bad key": "v"}, {"k": "x" * 64}, {"k": {"nested": "v"}}):
        check_osb_error(o.patch_metadata(sid, bad), 400)
    check_osb_error(o.patch_metadata(sid, "not json"), 400)
    assert o.get(sid).json["metadata"] == want


def test_concurrent_metadata_patches_all_land(mb, made):
    """Each patch is merged atomically in Redis: 16 clients patching
    different keys at once lose none of them (a read-then-write would)."""
    import threading
    o = OSB(mb, "alpha")
    sid = o.create(wait=False)
    made.append(("alpha", sid))
    answers = []

    def patch(i):
        answers.append(o.patch_metadata(sid, {"k%02d" % i: "v%d" % i}).status)
    threads = [threading.Thread(target=patch, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert answers == [200] * 16, answers
    md = o.get(sid).json["metadata"]
    assert md == {"k%02d" % i: "v%d" % i for i in range(16)}, md


# --------------------------------------------------------- pause/resume

def test_pause_resume_change_the_real_container(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create()
    made.append(("alpha", sid))
    assert container(mb, sid)["State"]["Paused"] is False

    r = o.pause(sid)
    assert r.status == 202, r
    # an empty answer says so: the TypeScript SDK parses any body it is not told is empty
    assert r.headers.get("Content-Length") == "0" and r.raw == b"", (r, r.headers.items())
    assert "chunked" not in (r.headers.get("Transfer-Encoding") or ""), r.headers.items()
    sb = o.wait_state(sid, "Paused")
    assert sb["status"]["state"] == "Paused"
    wait_until(lambda: container(mb, sid)["State"]["Paused"], 30, 0.2, "container paused")
    check_osb_error(o.pause(sid), 409)  # already paused

    r = o.resume(sid)
    assert r.status == 202, r
    o.wait_state(sid, "Running")
    wait_until(lambda: not container(mb, sid)["State"]["Paused"], 30, 0.2, "container unpaused")
    assert container(mb, sid)["State"]["Running"]
    check_osb_error(o.resume(sid), 409)  # not paused


# --------------------------------------------------------------- renew

def test_renew_expiration_rules(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create(timeout=600)
    made.append(("alpha", sid))
    cur = parse_iso_ms(o.get(sid).json["expiresAt"])

    later = iso_in(3600)
    r = o.renew(sid, later)
    assert r.status == 200, r
    assert parse_iso_ms(r.json["expiresAt"]) == parse_iso_ms(later), r
    assert parse_iso_ms(o.get(sid).json["expiresAt"]) == parse_iso_ms(later)
    assert parse_iso_ms(later) > cur

    # what the Python SDK sends: microseconds and +00:00
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
    r = o.renew(sid, t.isoformat())
    assert r.status == 200, r
    assert abs(parse_iso_ms(r.json["expiresAt"]) - int(t.timestamp() * 1000)) <= 1, r

    # a shorter life is fine (what the SDK's SandboxPool does), the past is not
    sooner = iso_in(900)
    r = o.renew(sid, sooner)
    assert r.status == 200 and parse_iso_ms(r.json["expiresAt"]) == parse_iso_ms(sooner), r
    assert parse_iso_ms(o.get(sid).json["expiresAt"]) == parse_iso_ms(sooner)
    check_osb_error(o.renew(sid, iso_in(-60)), 400)      # in the past
    # up to OPENSANDBOX_MAX_TIMEOUT_S (86400 by default) from now; beyond it a
    # 400 that names the maximum, and the expiry stays as it was
    near_max = iso_in(86400 - 300)
    r = o.renew(sid, near_max)
    assert r.status == 200 and parse_iso_ms(r.json["expiresAt"]) == parse_iso_ms(near_max), r
    body = check_osb_error(o.renew(sid, iso_in(86400 + 300)), 400, "INVALID_REQUEST")
    assert "86400" in body["message"] and "OPENSANDBOX_MAX_TIMEOUT_S" in body["message"], body
    assert parse_iso_ms(o.get(sid).json["expiresAt"]) == parse_iso_ms(near_max)
    check_osb_error(o.renew(sid, "tomorrow"), 400)
    r = o.call("POST", "/sandboxes/%s/renew-expiration" % sid, {})
    check_osb_error(r, 400)


# ------------------------------------------------------------ endpoints

def test_endpoints(mb, made):
    o = OSB(mb, "alpha")
    sid = o.create()
    made.append(("alpha", sid))
    tokens = set()
    for port in (44772, 18080):
        r = o.endpoint(sid, port, "?use_server_proxy=false", headers={"Host": "sb.example:8080"})
        assert r.status == 200, r
        assert r.json["endpoint"] == "sb.example:8080/v1/sandboxes/%s/proxy/%d" % (sid, port), r
        tok = r.json["headers"]["X-EXECD-ACCESS-TOKEN"]
        assert isinstance(tok, str) and len(tok) >= 32, r
        tokens.add(tok)
        r = o.endpoint(sid, port, "?use_server_proxy=true")
        assert r.status == 200, r
        assert r.json["endpoint"] == "127.0.0.1:%d/v1/sandboxes/%s/proxy/%d" % (mb.port, sid, port), r
    assert len(tokens) == 1, tokens  # one token per sandbox
    # a second sandbox has another token
    sid2 = o.create()
    made.append(("alpha", sid2))
    assert o.endpoint(sid2, 44772).json["headers"]["X-EXECD-ACCESS-TOKEN"] not in tokens

    # any other port: the same path, reached through the agent (docs/INGRESS.md)
    for port in (1, 3000, 8080, 65535):
        r = o.endpoint(sid, port)
        assert r.status == 200, r
        assert r.json["endpoint"] == "127.0.0.1:%d/v1/sandboxes/%s/proxy/%d" % (mb.port, sid, port), r
        assert r.json["headers"]["X-EXECD-ACCESS-TOKEN"] in tokens, r
    check_osb_error(o.endpoint(sid, 65536), 400)
    check_osb_error(o.endpoint(sid, "3000x"), 400)
    check_osb_error(o.endpoint(sid, 0), 400)
    check_osb_error(o.endpoint(sid, 70000), 400)
    check_osb_error(o.endpoint(sid, "http"), 400)
    check_osb_error(o.endpoint(sid, 44772, "?expires=1999999999"), 400)  # no signed endpoints


# ------------------------------------------------------ tenant isolation

def test_foreign_tenant_gets_404_and_changes_nothing(mb, made):
    owner, other = OSB(mb, "foxtrot"), OSB(mb, "golf")
    sid = owner.create(metadata={"who": "foxtrot"})
    made.append(("foxtrot", sid))
    cur = owner.get(sid).json

    for r in (other.get(sid), other.delete(sid), other.pause(sid), other.resume(sid),
              other.endpoint(sid, 44772), other.renew(sid, iso_in(7200)),
              other.patch_metadata(sid, {"who": "golf"})):
        check_osb_error(r, 404)
    assert sid not in [s["id"] for s in other.list().json["items"]]

    after = owner.get(sid).json
    assert after["status"]["state"] == "Running", after
    assert after["metadata"] == cur["metadata"] and after["expiresAt"] == cur["expiresAt"], after
    assert container(mb, sid)["State"]["Running"] and not container(mb, sid)["State"]["Paused"]


# ------------------------------------------------------------ admission

def test_create_at_capacity_is_queued_then_runs(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=1)
    request.node._it_brokers = [b]
    o = OSB(b, "alpha")
    first = o.create()

    r = o.create_raw(valid_body())
    assert r.status == 202, r
    second = r.json["id"]
    seen = []
    sb = o.wait_state(second, "Pending", timeout=30, seen=seen)
    # it stays queued while the slot is taken
    for _ in range(10):
        sb = o.get(second).json
        assert sb["status"]["state"] == "Pending", sb
        assert sb["status"]["reason"] == "QUEUED", sb
        time.sleep(0.2)
    assert container(b, second) is None
    listed = o.list("state=Pending").json["items"]
    assert [s["id"] for s in listed] == [second], listed

    r = o.delete(first)
    assert r.status == 204, r
    o.wait_state(second, "Running", timeout=120, seen=seen)
    assert container(b, second)["State"]["Running"]
    wait_container_gone(b, first)
    o.delete(second)


def test_delete_while_queued(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=1)
    request.node._it_brokers = [b]
    o = OSB(b, "alpha")
    first = o.create()
    r = o.create_raw(valid_body())
    assert r.status == 202, r
    queued = r.json["id"]
    o.wait_state(queued, "Pending", timeout=30)
    r = o.delete(queued)
    assert r.status == 204, r
    o.wait_state(queued, "Terminated", timeout=30)
    # the slot stays the first one's; freeing it runs nothing else
    o.delete(first)
    o.wait_state(first, "Terminated", timeout=60)
    assert container(b, queued) is None


# -------------------------------------------------------------- expiry

def test_expiry_kills_the_container(mb):
    """timeout 60 s (the minimum): the reaper terminates the sandbox and its
    container when expiresAt passes -- nothing but time moves it."""
    o = OSB(mb, "hotel")
    sid = o.create(timeout=60)
    sb = o.get(sid).json
    expires = parse_iso_ms(sb["expiresAt"])
    assert container(mb, sid)["State"]["Running"]
    left = (expires - int(time.time() * 1000)) / 1000.0
    assert 30 < left <= 60, left
    # still Running shortly before expiry
    time.sleep(max(0.0, left - 5))
    st = o.get(sid).json
    assert st["status"]["state"] == "Running", (st, int(time.time() * 1000), expires)
    end = o.wait_state(sid, "Terminated", timeout=40)
    assert parse_iso_ms(end["status"]["lastTransitionAt"]) >= expires - 1000, end
    wait_container_gone(mb, sid, timeout=30)
