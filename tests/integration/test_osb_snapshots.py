"""OpenSandbox snapshots on the Docker provider (sandbox-lifecycle.yml:
POST /sandboxes/{id}/snapshots, GET /snapshots, GET and DELETE
/snapshots/{id}, POST /sandboxes with snapshotId), through nginx and
FastCGI, against real dockerd and Redis.

A file written in a sandbox before its snapshot is in a sandbox made from
the snapshot (read back through execd); the new sandbox runs its own agent
and the snapshot image holds nothing of the broker's; a snapshot is its
tenant's alone (404 to others, on every route); the per-tenant count cap
(409) and the size cap (Failed with the reason, no image left); delete
removes the image (only untags it while a sandbox still runs from it);
bad ids and bodies are 400/404 JSON and change nothing. The official Python
SDK's snapshot methods (SandboxManagerSync, SandboxSync.create(snapshot_id))
drive the same flow.
"""
import json
import time
import urllib.parse

import pytest

from brokerlib import check_error, http_request, parse_iso_ms, wait_until
from sandboxlib import DOCKER, require_docker
from sdklib import KEY, OSB, PROVISION_TIMEOUT, check_osb_error, start_osb_broker

require_docker()

LABEL_SNAPSHOT = "io.sandbox-broker.snapshot-id"
LABEL_PREFIX = "io.sandbox-broker.prefix"
SNAP_TIMEOUT = 120
MAX_PER_TENANT = 2


def snapshot_images(prefix=None, snapshot_id=None):
    """Images (list entries, dangling ones too) carrying the snapshot labels."""
    labels = [LABEL_SNAPSHOT if snapshot_id is None else "%s=%s" % (LABEL_SNAPSHOT, snapshot_id)]
    if prefix is not None:
        labels.append("%s=%s" % (LABEL_PREFIX, prefix))
    q = urllib.parse.urlencode({"filters": json.dumps({"label": labels})})
    st, body = DOCKER.call("GET", "/images/json?" + q)
    assert st == 200, (st, body)
    return body


def remove_snapshot_images(prefix):
    DOCKER.remove_prefix(prefix)  # containers first: an image in use cannot go
    for img in snapshot_images(prefix=prefix):
        DOCKER.call("DELETE", "/images/%s?force=1" % img["Id"])


def snap_broker(request, services, it_root, **env):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, **env)
    request.addfinalizer(lambda: remove_snapshot_images(b.prefix))
    return b


@pytest.fixture(scope="module")
def sb(request, services, it_root):
    return snap_broker(request, services, it_root, SNAPSHOT_MAX_PER_TENANT=MAX_PER_TENANT)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, sb):
    request.node._it_brokers = [sb]


# ------------------------------------------------------------------ helpers

def snap_create(osb, sid, body=None, **kw):
    return osb.call("POST", "/sandboxes/%s/snapshots" % sid, body, **kw)


def snap_get(osb, snap_id, **kw):
    return osb.call("GET", "/snapshots/" + snap_id, **kw)


def snap_delete(osb, snap_id, **kw):
    return osb.call("DELETE", "/snapshots/" + snap_id, **kw)


def snap_list(osb, query="", **kw):
    return osb.call("GET", "/snapshots" + ("?" + query if query else ""), **kw)


def check_snapshot(s, sid=None):
    """The spec's Snapshot: id, sandboxId, status.state, createdAt, nothing else
    but name (additionalProperties: false)."""
    assert set(s) <= {"id", "sandboxId", "name", "status", "createdAt"}, s
    assert len(s["id"]) == 32 and all(c in "0123456789abcdef" for c in s["id"]), s
    assert s["status"]["state"] in ("Creating", "Ready", "Failed", "Deleting"), s
    parse_iso_ms(s["createdAt"])
    if sid is not None:
        assert s["sandboxId"] == sid, s
    return s


def take_snapshot(osb, sid, name=None, want="Ready"):
    """POST a snapshot (202 Creating, Location) and wait for `want`."""
    r = snap_create(osb, sid, {} if name is None else {"name": name})
    assert r.status == 202, r
    s = check_snapshot(r.json, sid)
    assert s["status"]["state"] == "Creating", s
    assert r.headers.get("Location") == "/v1/snapshots/" + s["id"], r.headers

    def settled():
        g = snap_get(osb, s["id"])
        assert g.status == 200, g
        st = g.json["status"]["state"]
        if st in ("Ready", "Failed"):
            return g.json
        return None
    done = wait_until(settled, SNAP_TIMEOUT, 0.2, "snapshot %s settled" % s["id"])
    assert done["status"]["state"] == want, done
    return done


class Execd:
    """One sandbox's execd, with the token of its 44772 endpoint."""

    def __init__(self, osb, sid):
        r = osb.endpoint(sid, 44772)
        assert r.status == 200, r
        self.port = osb.port
        self.sid = sid
        self.token = r.json["headers"]["X-EXECD-ACCESS-TOKEN"]

    def call(self, method, path, body=None):
        return http_request(self.port, method, "/v1/sandboxes/%s/proxy/44772%s" % (self.sid, path),
                            body, {"X-EXECD-ACCESS-TOKEN": self.token}, 60)

    def run(self, cmd):
        """Run cmd; return its stdout (the SSE stdout events joined)."""
        r = self.call("POST", "/command", {"command": cmd})
        assert r.status == 200, r
        out, code = "", None
        for line in r.raw.decode().split("\n"):
            if line.startswith("data: "):
                ev = json.loads(line[6:])
                if ev["type"] == "stdout":
                    out += ev["text"]
                elif ev["type"] == "error":
                    code = ev
        assert code is None, (cmd, code, out)
        return out

    def read(self, path):
        r = self.call("GET", "/files/download?path=" + urllib.parse.quote(path))
        return r.status, r.raw


# ------------------------------------------------------------------ tests

def test_snapshot_restore_round_trip(sb):
    """Write, snapshot, restore: the file is there, the restored sandbox runs
    its own agent, names its snapshot; delete untags an image in use."""
    osb = OSB(sb, "alpha")
    src = osb.create()
    ex = Execd(osb, src)
    ex.run("mkdir -p /workspace/keep && printf 'before the snapshot\\n' > /workspace/keep/a.txt")
    t0 = time.monotonic()
    snap = take_snapshot(osb, src, name="checkpoint-before-import")
    t_snap = time.monotonic() - t0
    assert snap["name"] == "checkpoint-before-import", snap
    assert snap["status"]["reason"] == "snapshot_ready", snap
    # the source keeps running (the commit paused it only meanwhile)
    assert osb.state(src)["state"] == "Running"
    ex.run("echo after > /workspace/keep/b.txt")

    # the image: the broker's name, labelled, no entrypoint of the agent
    imgs = snapshot_images(prefix=sb.prefix, snapshot_id=snap["id"])
    assert len(imgs) == 1, imgs
    assert imgs[0]["RepoTags"] == ["sandbox-broker/snapshot:%s" % snap["id"]], imgs
    st, info = DOCKER.call("GET", "/images/sandbox-broker/snapshot:%s/json" % snap["id"])
    assert st == 200, info
    labels = info["Config"]["Labels"]
    assert labels["io.sandbox-broker.tenant"] == "alpha", labels
    assert labels["io.sandbox-broker.snapshot-of"] == src, labels
    # the source container's labels, which Docker carries over, are blanked
    for k in ("io.sandbox-broker.sandbox-id", "io.sandbox-broker.managed", "io.sandbox-broker.agent"):
        assert labels.get(k, "") == "", labels
    assert not info["Config"].get("Entrypoint"), info["Config"]
    # nothing of the broker is in it: the agent binary and run directory were
    # mounts, their mount points are empty
    st, c = DOCKER.call("POST", "/containers/create", {
        "Image": "sandbox-broker/snapshot:%s" % snap["id"], "Cmd": ["true"],
        "Labels": {LABEL_PREFIX: sb.prefix, "io.sandbox-broker.managed": "1"},
        "HostConfig": {"NetworkMode": "none"}})
    assert st == 201, c
    try:
        st, stat = DOCKER.call("GET", "/containers/%s/archive?path=/.sandbox-broker/agent" % c["Id"])
        assert st in (200, 404), stat
        if st == 200:
            # HEAD-like stat is in a header; the archive of an empty file is small
            assert len(stat) < 4096, len(stat)
        st, run = DOCKER.call("GET", "/containers/%s/archive?path=/.sandbox-broker/run" % c["Id"])
        assert st in (200, 404), run
        if st == 200:
            assert b"agent.sock" not in run, run[:200]
    finally:
        DOCKER.remove(c["Id"])

    # restore: no entrypoint needed, the spec's default
    t0 = time.monotonic()
    r = osb.create_raw({"snapshotId": snap["id"], "timeout": 600,
                        "resourceLimits": {"cpu": "250m", "memory": "128Mi"}})
    assert r.status == 202, r
    new = r.json["id"]
    assert r.json["entrypoint"] == ["tail", "-f", "/dev/null"], r.json
    osb.wait_state(new, "Running")
    t_restore = time.monotonic() - t0
    # figures, not assertions (a loaded 2-core box varies)
    print("\nsnapshot of a %s sandbox: Ready after %.2f s, image Size %d bytes; "
          "restored sandbox Running %.2f s after its create"
          % ("sandbox-broker/base", t_snap, info["Size"], t_restore))
    g = osb.get(new)
    assert g.json.get("snapshotId") == snap["id"] and "image" not in g.json, g.json
    ex2 = Execd(osb, new)
    st, body = ex2.read("/workspace/keep/a.txt")
    assert st == 200 and body == b"before the snapshot\n", (st, body)
    st, body = ex2.read("/workspace/keep/b.txt")
    assert st == 404, (st, body)  # written after the snapshot
    # a fresh agent: it answers, and its socket is the new sandbox's
    assert ex2.call("GET", "/ping").status == 200
    assert ex2.run("echo restored") == "restored\n"
    # the two sandboxes are apart
    ex2.run("echo only-new > /workspace/keep/c.txt")
    assert ex.read("/workspace/keep/c.txt")[0] == 404

    # delete while a sandbox runs from it: the record and the name go, the
    # restored sandbox runs on (Docker keeps the layers it uses)
    r = snap_delete(osb, snap["id"])
    assert r.status == 204, r
    check_osb_error(snap_get(osb, snap["id"]), 404, "NOT_FOUND")
    assert not DOCKER.image_exists("sandbox-broker/snapshot:%s" % snap["id"])
    assert ex2.run("cat /workspace/keep/a.txt") == "before the snapshot\n"
    assert all(s["id"] != snap["id"] for s in snap_list(osb).json["items"])
    # a deleted snapshot makes no sandbox
    r = osb.create_raw({"snapshotId": snap["id"]})
    check_osb_error(r, 404, "NOT_FOUND")
    for sid in (src, new):
        assert osb.delete(sid).status == 204


def test_snapshots_are_per_tenant(sb):
    """Another tenant never sees, uses or deletes a snapshot (404 as for an
    unknown id), nor snapshots another tenant's sandbox."""
    alpha, bravo = OSB(sb, "alpha"), OSB(sb, "bravo")
    src = alpha.create()
    snap = take_snapshot(alpha, src)
    unknown = "f" * 32
    for osb, sid in ((bravo, snap["id"]), (alpha, unknown)):
        r = snap_get(osb, sid)
        check_osb_error(r, 404, "NOT_FOUND")
        r2 = snap_delete(osb, sid)
        check_osb_error(r2, 404, "NOT_FOUND")
        r3 = osb.create_raw({"snapshotId": sid})
        check_osb_error(r3, 404, "NOT_FOUND")
    # the same answer for another tenant's id as for an unknown one
    assert snap_get(bravo, snap["id"]).json["message"].replace(snap["id"], "X") == \
        snap_get(bravo, unknown).json["message"].replace(unknown, "X")
    assert snap_list(bravo).json["items"] == []
    assert snap_list(bravo).json["pagination"]["totalItems"] == 0
    check_osb_error(snap_create(bravo, src, {}), 404, "SANDBOX_NOT_FOUND")
    # still there for its owner, image included
    assert snap_get(alpha, snap["id"]).json["status"]["state"] == "Ready"
    assert DOCKER.image_exists("sandbox-broker/snapshot:%s" % snap["id"])
    assert snap_delete(alpha, snap["id"]).status == 204
    assert not snapshot_images(snapshot_id=snap["id"])
    assert alpha.delete(src).status == 204


def test_snapshot_count_cap_and_list(sb):
    """SNAPSHOT_MAX_PER_TENANT: one more is 409 with the reason; deleting one
    makes room. The list pages and filters as the spec says."""
    osb = OSB(sb, "charlie")
    src = osb.create()
    snaps = [take_snapshot(osb, src, name="n%d" % i) for i in range(MAX_PER_TENANT)]
    r = snap_create(osb, src, {})
    body = check_osb_error(r, 409, "CONFLICT")
    assert "SNAPSHOT_MAX_PER_TENANT" in body["message"], body
    assert len(snapshot_images(prefix=sb.prefix)) >= MAX_PER_TENANT
    # list: newest first, paged, filtered
    r = snap_list(osb, "pageSize=1")
    assert r.status == 200, r
    assert r.json["pagination"] == {"page": 1, "pageSize": 1, "totalItems": MAX_PER_TENANT,
                                    "totalPages": MAX_PER_TENANT, "hasNextPage": True}, r.json
    assert r.json["items"][0]["id"] == snaps[-1]["id"], r.json
    r = snap_list(osb, "pageSize=1&page=%d" % MAX_PER_TENANT)
    assert r.json["items"][0]["id"] == snaps[0]["id"] and not r.json["pagination"]["hasNextPage"]
    r = snap_list(osb, "state=Ready&state=Failed&sandboxId=" + src)
    assert {s["id"] for s in r.json["items"]} == {s["id"] for s in snaps}, r.json
    assert snap_list(osb, "state=Creating").json["items"] == []
    assert snap_list(osb, "sandboxId=" + "e" * 32).json["items"] == []
    assert [s["id"] for s in snap_list(osb, "name=n0").json["items"]] == [snaps[0]["id"]]
    assert snap_list(osb, "state=ready").json["pagination"]["totalItems"] == MAX_PER_TENANT
    # a state this server never gives matches nothing, alone or beside a known one
    assert snap_list(osb, "state=Archived").json["pagination"]["totalItems"] == 0
    assert snap_list(osb, "state=Archived&state=Ready").json["pagination"]["totalItems"] == MAX_PER_TENANT
    # a delete cut short (its handler died) leaves Deleting: a second one finishes it
    sb.redis.hset(sb.prefix + "snapshot:" + snaps[0]["id"], "state", "Deleting")
    assert snap_get(osb, snaps[0]["id"]).json["status"]["state"] == "Deleting"
    check_osb_error(osb.create_raw({"snapshotId": snaps[0]["id"]}), 409, "CONFLICT")
    # room again after a delete
    assert snap_delete(osb, snaps[0]["id"]).status == 204
    assert not DOCKER.image_exists("sandbox-broker/snapshot:%s" % snaps[0]["id"])
    check_osb_error(snap_get(osb, snaps[0]["id"]), 404, "NOT_FOUND")
    again = take_snapshot(osb, src)
    for s in (snaps[1], again):
        assert snap_delete(osb, s["id"]).status == 204
    assert osb.delete(src).status == 204


def test_snapshot_size_cap(request, services, it_root):
    """SNAPSHOT_MAX_BYTES: a larger image fails the snapshot with the reason,
    and no image of it is left on the host."""
    b = snap_broker(request, services, it_root, SNAPSHOT_MAX_BYTES=1)
    request.node._it_brokers = [b]
    osb = OSB(b, "delta")
    src = osb.create()
    snap = take_snapshot(osb, src, want="Failed")
    assert snap["status"]["reason"] == "snapshot_too_large", snap
    assert "SNAPSHOT_MAX_BYTES" in snap["status"]["message"], snap
    assert snapshot_images(snapshot_id=snap["id"]) == []
    # a Failed snapshot makes no sandbox (409: it exists, but is not Ready)
    check_osb_error(osb.create_raw({"snapshotId": snap["id"]}), 409, "CONFLICT")
    # and it does not count against the cap; it can be deleted
    assert snap_list(osb, "state=Failed").json["pagination"]["totalItems"] == 1
    assert snap_delete(osb, snap["id"]).status == 204
    check_osb_error(snap_get(osb, snap["id"]), 404, "NOT_FOUND")
    assert osb.delete(src).status == 204


def test_snapshot_bad_input(sb):
    """Bad ids, bodies and queries: 400/404/409 JSON, and nothing is made."""
    osb = OSB(sb, "echo")
    src = osb.create()
    before = sb.redis.keys(sb.prefix + "snapshot*")
    for bad in ("xyz", "F" * 32, "a" * 31, "a" * 33, "..%2F..%2Fetc"):
        check_osb_error(snap_get(osb, bad), 404, "NOT_FOUND")
        check_osb_error(snap_delete(osb, bad), 404, "NOT_FOUND")
    for body, want in (({"snapshotId": "snap_123"}, "snapshotId"),
                       ({"snapshotId": 5}, "snapshotId"),
                       ({"snapshotId": "a" * 32, "image": {"uri": "x"}, "entrypoint": ["sh"]},
                        "not both"),
                       ({"snapshotId": "a" * 32, "entrypoint": []}, "entrypoint")):
        body_ = check_osb_error(osb.create_raw(body), 400, "INVALID_REQUEST")
        assert want in body_["message"], body_
    for body in ({"name": ""}, {"name": 7}, {"name": "a\nb"}, {"name": "x" * 129},
                 {"name": "x", "tag": "latest"}, [1]):
        check_osb_error(snap_create(osb, src, body), 400)
    check_osb_error(snap_create(osb, src, "{not json", headers={"Content-Type": "application/json"}),
                    400, "INVALID_JSON")
    check_osb_error(snap_create(osb, "0" * 32, {}), 404, "SANDBOX_NOT_FOUND")
    for q in ("state=", "state=" + "s" * 16, "page=0", "pageSize=0", "pageSize=201", "page=x",
              "name=" + "n" * 200):
        check_osb_error(snap_list(osb, q), 400, "INVALID_REQUEST")
    check_error(osb.call("GET", "/snapshots", key=""), 401)
    check_error(osb.call("POST", "/snapshots", {}), 405)
    # a snapshot needs the sandbox Running
    assert osb.pause(src).status == 202
    osb.wait_state(src, "Paused")
    body = check_osb_error(snap_create(osb, src, {}), 409, "CONFLICT")
    assert "Paused" in body["message"], body
    assert sb.redis.keys(sb.prefix + "snapshot*") == before
    assert snapshot_images(prefix=sb.prefix, snapshot_id=None) == [] or \
        all(i["Labels"].get("io.sandbox-broker.tenant") != "echo"
            for i in snapshot_images(prefix=sb.prefix))
    assert osb.delete(src).status == 204


def test_python_sdk_snapshots(sb):
    """The official Python SDK: create_snapshot, get_snapshot, list_snapshots,
    SandboxSync.create(snapshot_id=...), files.read_file, delete_snapshot."""
    opensandbox = pytest.importorskip("opensandbox")
    from datetime import timedelta
    from opensandbox import SandboxSync
    from opensandbox.config import ConnectionConfigSync
    from opensandbox.models.sandboxes import SnapshotFilter
    from opensandbox.sync.manager import SandboxManagerSync

    assert opensandbox
    cfg = ConnectionConfigSync(domain="127.0.0.1:%d" % sb.port, api_key=KEY["foxtrot"],
                               request_timeout=timedelta(seconds=60))
    src = SandboxSync.create("sandbox-broker/base:latest", connection_config=cfg,
                             entrypoint=["sleep", "infinity"],
                             ready_timeout=timedelta(seconds=PROVISION_TIMEOUT))
    restored = None
    mgr = SandboxManagerSync.create(cfg)
    try:
        src.files.write_file("/workspace/sdk.txt", "written by the sdk\n")
        info = mgr.create_snapshot(src.id, name="sdk-snap")
        assert info.sandbox_id == src.id and info.name == "sdk-snap", info

        def ready():
            s = mgr.get_snapshot(info.id)
            assert s.status.state != "Failed", s
            return s if s.status.state == "Ready" else None
        wait_until(ready, SNAP_TIMEOUT, 0.3, "snapshot Ready")
        page = mgr.list_snapshots(SnapshotFilter(sandbox_id=src.id, page=1, page_size=10))
        assert [s.id for s in page.snapshot_infos] == [info.id], page
        restored = SandboxSync.create(snapshot_id=info.id, connection_config=cfg,
                                      ready_timeout=timedelta(seconds=PROVISION_TIMEOUT))
        assert restored.files.read_file("/workspace/sdk.txt") == "written by the sdk\n"
        mgr.delete_snapshot(info.id)
        assert mgr.list_snapshots(SnapshotFilter()).snapshot_infos == []
    finally:
        for s in (src, restored):
            if s is not None:
                s.kill()
        mgr.close()


def test_commit_cut_short_leaves_no_image(request, services, it_root):
    """A snapshot whose committing process dies mid-commit (fcgi-sandboxes
    SIGKILLed while dockerd commits, the container paused) turns Failed
    (snapshot_capture_lost) once SNAPSHOT_TIMEOUT_MS + 30 s have passed, and
    the reconciler removes the image that commit made, without anyone reading
    the snapshot; until then the image stays (its snapshot is Creating).
    Another tenant's Ready snapshot keeps its image throughout."""
    timeout_ms = 8000
    b = snap_broker(request, services, it_root, SNAPSHOT_TIMEOUT_MS=timeout_ms, RECONCILE_MS=1000)
    request.node._it_brokers = [b]
    alpha, bravo = OSB(b, "alpha"), OSB(b, "bravo")
    bsrc = bravo.create()
    ready = take_snapshot(bravo, bsrc)
    ready_image = "sandbox-broker/snapshot:%s" % ready["id"]

    # a sandbox with a large filesystem: committing it takes seconds
    src = alpha.create()
    ex = Execd(alpha, src)
    assert ex.run("dd if=/dev/zero of=/workspace/big bs=1M count=400 2>/dev/null && sync && echo ok") == "ok\n"
    r = snap_create(alpha, src, {})
    assert r.status == 202, r
    snap_id = r.json["id"]
    t0 = time.monotonic()
    wait_until(lambda: DOCKER.inspect("sb-" + src)["State"]["Paused"], 60, 0.02,
               "the commit under way (Docker pauses the container meanwhile)")
    b.stop("fcgi-sandboxes", kill=True)
    b.start("fcgi-sandboxes")
    # dockerd goes on with the commit its client left: the image lands, found by the
    # snapshot's labels (its tag comes in a second step of dockerd's, which a client gone
    # may cut short: CI once listed it as `<none>:<none>`; the reconciler goes by labels)
    imgs = wait_until(lambda: snapshot_images(prefix=b.prefix, snapshot_id=snap_id), 120, 0.2,
                      "the image of the cut-short commit")
    assert len(imgs) == 1, imgs
    # nobody's yet: its snapshot could still be finishing, so the image stays
    g = snap_get(alpha, snap_id)
    assert g.status == 200 and g.json["status"]["state"] == "Creating", g
    time.sleep(3)  # three reconciler rounds
    assert time.monotonic() - t0 < timeout_ms / 1000 + 30, "too slow to see it kept"
    assert snapshot_images(prefix=b.prefix, snapshot_id=snap_id)

    # past the bound the reconciler fails the snapshot and removes its image
    wait_until(lambda: not snapshot_images(prefix=b.prefix, snapshot_id=snap_id),
               timeout_ms / 1000 + 30 + 90, 0.5, "the image of the lost commit removed")
    assert time.monotonic() - t0 >= timeout_ms / 1000 + 30 - 5
    # Failed by the reconciler: nobody read it meanwhile
    assert b.redis.hget(b.key("snapshot:" + snap_id), "state") == "Failed"
    g = snap_get(alpha, snap_id)
    assert g.json["status"]["state"] == "Failed", g
    assert g.json["status"]["reason"] == "snapshot_capture_lost", g
    # the other tenant's Ready snapshot and its image are untouched
    assert DOCKER.image_exists(ready_image)
    g = snap_get(bravo, ready["id"])
    assert g.status == 200 and g.json["status"]["state"] == "Ready", g
    assert len(snapshot_images(prefix=b.prefix)) == 1
    # the source runs on, and a snapshot of it can be taken again
    assert alpha.state(src)["state"] == "Running"
    ex.run("rm -f /workspace/big && echo gone")
    again = take_snapshot(alpha, src)
    assert DOCKER.image_exists("sandbox-broker/snapshot:%s" % again["id"])
    for osb, snap in ((alpha, again), (bravo, ready)):
        assert snap_delete(osb, snap["id"]).status == 204
    assert alpha.delete(src).status == 204 and bravo.delete(bsrc).status == 204
