"""OpenSandbox volumes (sandbox-lifecycle.yml, Volume) on the Docker provider,
against real sandboxes and real Docker volumes (docs/OPENSANDBOX.md, "Volumes"):

- host paths under VOLUME_HOST_ALLOW: read-only unless the entry says ":rw"
  (a write fails in the sandbox, and nothing reaches the host); the mount's
  source is the resolved path; a symlink in an allowed directory that
  leads out of it, a path outside the allowlist, one that does not exist
  and a file are 400s that leave no sandbox, no container and no volume;
- named volumes (pvc): a file written by a tenant's first sandbox is seen by
  its second, never by another tenant asking for the same claimName (its own
  volume, labelled with its tenant); deleteOnSandboxTermination removes the
  volume the create made when the sandbox is deleted; createIfNotExists
  false on a missing volume is a 400; VOLUME_MAX_PER_TENANT is a 409;
- GET /v1/volumes and DELETE /v1/volumes/{name}: tenant-scoped, 409 while a
  sandbox mounts the volume, 204 after, 404 then and for another tenant;
- spec-shaped 400s for malformed volumes (ossfs by name, bad mount paths,
  reserved mount points, duplicates, too many);
- the official Python SDK's Volume/Host/PVC models reach a sandbox.

The world is checked through the Docker Engine API (container mounts,
volumes and their labels) and the host's files. Each test module's broker
has its own Redis prefix; its finalizer removes the containers and volumes
labelled with it.
"""

import json
import os
import subprocess
import textwrap
import urllib.parse
import uuid

import pytest

from brokerlib import wait_until
from sandboxlib import BASE_IMAGE, DOCKER, require_docker
from sdklib import KEY, OSB, check_osb_error, container, python_sdk_python, start_osb_broker, \
    wait_container_gone

require_docker()

LABEL_TENANT = "io.sandbox-broker.tenant"
LABEL_VOLUME = "io.sandbox-broker.volume"
LABEL_PREFIX = "io.sandbox-broker.prefix"
MAX_PER_TENANT = 3


def docker_volumes(prefix, tenant=None):
    """The Docker volumes labelled with a broker's prefix (and tenant)."""
    labels = ["io.sandbox-broker.managed=1", "%s=%s" % (LABEL_PREFIX, prefix)]
    if tenant:
        labels.append("%s=%s" % (LABEL_TENANT, tenant))
    st, body = DOCKER.call("GET", "/volumes?filters=" +
                           urllib.parse.quote(json.dumps({"label": labels})))
    assert st == 200, body
    return body.get("Volumes") or []


def sandbox_exec(b, sid, *argv):
    """Run argv in sandbox sid's container through the Engine API (a tty:
    one raw stream). -> (exit code, output)"""
    c = container(b, sid)
    assert c is not None, "sandbox %s has no container" % sid
    st, ex = DOCKER.call("POST", "/containers/%s/exec" % c["Id"],
                         {"Cmd": list(argv), "AttachStdout": True, "AttachStderr": True,
                          "Tty": True})
    assert st == 201, ex
    st, out = DOCKER.call("POST", "/exec/%s/start" % ex["Id"], {"Detach": False, "Tty": True})
    assert st == 200, out
    st, info = DOCKER.call("GET", "/exec/%s/json" % ex["Id"])
    assert st == 200, info
    if isinstance(out, bytes):
        out = out.decode("utf-8", "replace")
    elif out is not None:
        out = json.dumps(out)
    return info["ExitCode"], out or ""


@pytest.fixture(scope="module")
def dirs(it_root):
    """Host directories: ro/ (read-only entry), rw/ (":rw" entry), out/ (not
    allowed), with a symlink ro/escape -> out/ and a file ro/afile."""
    root = os.path.join(it_root, "vol-%s" % uuid.uuid4().hex[:8])
    d = {k: os.path.join(root, k) for k in ("ro", "rw", "out")}
    for p in d.values():
        os.makedirs(p)
    with open(os.path.join(d["ro"], "hello"), "w") as f:
        f.write("from the host\n")
    with open(os.path.join(d["out"], "secret"), "w") as f:
        f.write("not for sandboxes\n")
    with open(os.path.join(d["ro"], "afile"), "w") as f:
        f.write("a file\n")
    os.makedirs(os.path.join(d["ro"], "sub"))
    os.symlink(d["out"], os.path.join(d["ro"], "escape"))
    return d


@pytest.fixture(scope="module")
def vb(request, services, it_root, dirs):
    made = []

    def fin():
        # registered first, so it runs last: after the broker's finalizer
        # removed its containers, no volume of its prefix is in use
        for b in made:
            for v in docker_volumes(b.prefix):
                DOCKER.call("DELETE", "/volumes/%s" % urllib.parse.quote(v["Name"], safe=""))
    request.addfinalizer(fin)
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=6,
                         VOLUME_HOST_ALLOW="%s,%s:rw" % (dirs["ro"], dirs["rw"]),
                         VOLUME_MAX_PER_TENANT=MAX_PER_TENANT)
    made.append(b)
    return b


@pytest.fixture(autouse=True)
def _logs_on_failure(request, vb):
    request.node._it_brokers = [vb]


@pytest.fixture
def made(vb):
    """Sandboxes a test made ((tenant, id)); deleted (and their containers
    gone) after it."""
    ids = []
    yield ids
    for tenant, sid in ids:
        OSB(vb, tenant).delete(sid)
    for tenant, sid in ids:
        wait_container_gone(vb, sid)


def create(vb, made, tenant, volumes, wait=True):
    o = OSB(vb, tenant)
    sid = o.create(volumes=volumes, wait=wait)
    made.append((tenant, sid))
    return sid


def mount_of(vb, sid, target):
    c = container(vb, sid)
    found = [m for m in c["Mounts"] if m["Destination"] == target]
    assert len(found) == 1, c["Mounts"]
    return found[0]


def assert_refused(vb, tenant, volumes, status=400, code=None, contains=None):
    """A create with these volumes is refused and leaves nothing behind."""
    o = OSB(vb, tenant)
    before = o.list("pageSize=200").json["pagination"]["totalItems"]
    vols_before = {v["Name"] for v in docker_volumes(vb.prefix)}
    r = o.create_raw({"image": {"uri": BASE_IMAGE}, "entrypoint": ["sleep", "infinity"],
                      "timeout": 600, "volumes": volumes})
    check_osb_error(r, status, code)
    if contains:
        assert contains in r.json["message"], r.json
    assert o.list("pageSize=200").json["pagination"]["totalItems"] == before, \
        "a refused create left a sandbox behind"
    assert {v["Name"] for v in docker_volumes(vb.prefix)} == vols_before, \
        "a refused create left a volume behind"
    return r.json


# ------------------------------------------------------------------ host paths

def test_host_path_is_read_only_unless_allowed(vb, made, dirs):
    sid = create(vb, made, "alpha", [
        {"name": "ro", "host": {"path": dirs["ro"]}, "mountPath": "/data"},
        {"name": "rw", "host": {"path": dirs["rw"]}, "mountPath": "/work"},
        {"name": "rw-ro", "host": {"path": dirs["rw"]}, "mountPath": "/view", "readOnly": True},
    ])
    m = mount_of(vb, sid, "/data")
    assert m["Type"] == "bind" and m["Source"] == os.path.realpath(dirs["ro"]) and not m["RW"], m
    assert mount_of(vb, sid, "/work")["RW"] is True
    assert mount_of(vb, sid, "/view")["RW"] is False

    rc, out = sandbox_exec(vb, sid, "cat", "/data/hello")
    assert rc == 0 and "from the host" in out, (rc, out)
    # the spec's default is read-write; the read-only entry wins
    rc, out = sandbox_exec(vb, sid, "sh", "-c", "echo x > /data/new")
    assert rc != 0 and "Read-only" in out, (rc, out)
    assert not os.path.exists(os.path.join(dirs["ro"], "new"))
    # the ":rw" entry: the sandbox's write reaches the host
    rc, out = sandbox_exec(vb, sid, "sh", "-c", "echo written-in-sandbox > /work/out.txt")
    assert rc == 0, out
    with open(os.path.join(dirs["rw"], "out.txt")) as f:
        assert f.read() == "written-in-sandbox\n"
    # the client's readOnly on a writable entry
    rc, out = sandbox_exec(vb, sid, "sh", "-c", "echo x > /view/other")
    assert rc != 0 and "Read-only" in out, (rc, out)
    assert not os.path.exists(os.path.join(dirs["rw"], "other"))


def test_host_sub_path_mounts_the_resolved_subdirectory(vb, made, dirs):
    sid = create(vb, made, "alpha", [
        {"name": "sub", "host": {"path": dirs["ro"]}, "subPath": "sub", "mountPath": "/sub"}])
    assert mount_of(vb, sid, "/sub")["Source"] == os.path.realpath(os.path.join(dirs["ro"], "sub"))


def test_symlink_out_of_the_allowed_dir_is_refused(vb, dirs):
    j = assert_refused(vb, "alpha", [
        {"name": "esc", "host": {"path": os.path.join(dirs["ro"], "escape")}, "mountPath": "/x"}])
    # the answer does not tell a path that exists from one that does not
    j2 = assert_refused(vb, "alpha", [
        {"name": "esc", "host": {"path": os.path.join(dirs["ro"], "nope")}, "mountPath": "/x"}])
    assert j["message"].replace("escape", "X") == j2["message"].replace("nope", "X")
    # the same through subPath, and through ".." (resolved, then outside)
    assert_refused(vb, "alpha", [
        {"name": "esc", "host": {"path": dirs["ro"]}, "subPath": "escape", "mountPath": "/x"}])
    assert_refused(vb, "alpha", [
        {"name": "esc", "host": {"path": dirs["ro"] + "/../out"}, "mountPath": "/x"}])


def test_paths_outside_the_allowlist_or_not_directories_are_refused(vb, dirs):
    for path in ("/etc", dirs["out"], "/", os.path.dirname(dirs["ro"])):
        assert_refused(vb, "alpha", [{"name": "h", "host": {"path": path}, "mountPath": "/x"}],
                       contains="VOLUME_HOST_ALLOW")
    assert_refused(vb, "alpha", [
        {"name": "h", "host": {"path": os.path.join(dirs["ro"], "afile")}, "mountPath": "/x"}],
        contains="not a directory")


BAD_VOLUMES = {
    "ossfs": [{"name": "o", "ossfs": {"bucket": "bkt", "endpoint": "e", "accessKeyId": "a",
                                       "accessKeySecret": "s"}, "mountPath": "/x"}],
    "no backend": [{"name": "v", "mountPath": "/x"}],
    "two backends": [{"name": "v", "host": {"path": "/tmp"}, "pvc": {"claimName": "c"},
                      "mountPath": "/x"}],
    "relative mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "x"}],
    "root mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/"}],
    "dotdot mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/a/../b"}],
    "agent mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/.sandbox-broker/run"}],
    "broker mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/.sandbox-broker"}],
    "proc mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/proc/sys"}],
    "bad name": [{"name": "Bad_Name", "pvc": {"claimName": "c"}, "mountPath": "/x"}],
    "bad claimName": [{"name": "v", "pvc": {"claimName": "../etc"}, "mountPath": "/x"}],
    "dotdot subPath": [{"name": "v", "host": {"path": "/tmp"}, "subPath": "../x", "mountPath": "/x"}],
    "duplicate name": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/x"},
                       {"name": "v", "pvc": {"claimName": "d"}, "mountPath": "/y"}],
    "duplicate mountPath": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/x"},
                            {"name": "w", "pvc": {"claimName": "d"}, "mountPath": "/x"}],
    "too many": [{"name": "v%d" % i, "pvc": {"claimName": "c%d" % i}, "mountPath": "/m%d" % i}
                 for i in range(9)],
    "bad storage": [{"name": "v", "pvc": {"claimName": "c", "storage": "lots"}, "mountPath": "/x"}],
    "not an array": {"name": "v"},
    "unknown field": [{"name": "v", "pvc": {"claimName": "c"}, "mountPath": "/x", "size": 1}],
}


@pytest.mark.parametrize("name", sorted(BAD_VOLUMES))
def test_malformed_volumes_are_spec_shaped_400s(vb, name):
    j = assert_refused(vb, "alpha", BAD_VOLUMES[name], 400, "INVALID_REQUEST")
    if name == "ossfs":
        assert "ossfs" in j["message"], j


# --------------------------------------------------------------- named volumes

def pvc(claim, mount="/ws", **kw):
    p = {"claimName": claim}
    p.update(kw)
    return {"name": "ws", "pvc": p, "mountPath": mount}


def test_named_volume_is_kept_for_its_tenant_and_no_other(vb, made):
    s1 = create(vb, made, "bravo", [pvc("workspace")])
    m = mount_of(vb, s1, "/ws")
    assert m["Type"] == "volume" and m["RW"] is True, m
    assert m["Name"].startswith("sbv-") and m["Name"].endswith("-workspace"), m
    rc, out = sandbox_exec(vb, s1, "sh", "-c", "echo kept > /ws/note")
    assert rc == 0, out
    assert OSB(vb, "bravo").delete(s1).status == 204
    wait_container_gone(vb, s1)

    s2 = create(vb, made, "bravo", [pvc("workspace", mount="/again")])
    assert mount_of(vb, s2, "/again")["Name"] == m["Name"]
    rc, out = sandbox_exec(vb, s2, "cat", "/again/note")
    assert rc == 0 and "kept" in out, (rc, out)

    # another tenant, the same claimName: its own, empty volume
    s3 = create(vb, made, "charlie", [pvc("workspace")])
    other = mount_of(vb, s3, "/ws")["Name"]
    assert other != m["Name"]
    rc, out = sandbox_exec(vb, s3, "cat", "/ws/note")
    assert rc != 0, out
    labels = {v["Name"]: v["Labels"] for v in docker_volumes(vb.prefix)}
    assert labels[m["Name"]][LABEL_TENANT] == "bravo" and labels[other][LABEL_TENANT] == "charlie"
    assert labels[m["Name"]][LABEL_VOLUME] == "workspace"


def test_delete_on_sandbox_termination_removes_the_volume_it_made(vb, made):
    sid = create(vb, made, "delta", [pvc("scratch", deleteOnSandboxTermination=True)])
    name = mount_of(vb, sid, "/ws")["Name"]
    assert name in {v["Name"] for v in docker_volumes(vb.prefix, "delta")}
    assert OSB(vb, "delta").delete(sid).status == 204
    wait_until(lambda: name not in {v["Name"] for v in docker_volumes(vb.prefix, "delta")},
               60, 0.2, "volume %s removed" % name)


def test_create_if_not_exists_false_and_the_per_tenant_cap(vb, made):
    assert_refused(vb, "echo", [pvc("missing", createIfNotExists=False)], 400,
                   contains="createIfNotExists")
    sid = create(vb, made, "echo", [
        {"name": "v%d" % i, "pvc": {"claimName": "c%d" % i}, "mountPath": "/m%d" % i}
        for i in range(MAX_PER_TENANT)])
    assert len(docker_volumes(vb.prefix, "echo")) == MAX_PER_TENANT
    j = assert_refused(vb, "echo", [pvc("one-more")], 409, "CONFLICT")
    assert "VOLUME_MAX_PER_TENANT" in j["message"], j
    # existing ones are still usable at the cap, also with createIfNotExists false
    s2 = create(vb, made, "echo", [pvc("c0", createIfNotExists=False)])
    assert mount_of(vb, s2, "/ws")["Name"] == mount_of(vb, sid, "/m0")["Name"]


def test_list_and_delete_routes(vb, made):
    o = OSB(vb, "foxtrot")
    sid = create(vb, made, "foxtrot", [pvc("data")])
    r = o.call("GET", "/volumes")
    assert r.status == 200, r
    assert [v["name"] for v in r.json["items"]] == ["data"], r.json
    assert r.json["items"][0]["createdBySandbox"] == sid
    # another tenant sees none of it and cannot delete it
    assert o.as_tenant("golf").call("GET", "/volumes").json["items"] == []
    check_osb_error(o.as_tenant("golf").call("DELETE", "/volumes/data"), 404, "NOT_FOUND")
    # in use: 409, and the volume stays
    check_osb_error(o.call("DELETE", "/volumes/data"), 409, "CONFLICT")
    assert len(docker_volumes(vb.prefix, "foxtrot")) == 1
    assert o.delete(sid).status == 204
    wait_container_gone(vb, sid)
    r = o.call("DELETE", "/volumes/data")
    assert r.status == 204, r
    assert docker_volumes(vb.prefix, "foxtrot") == []
    check_osb_error(o.call("DELETE", "/volumes/data"), 404, "NOT_FOUND")
    check_osb_error(o.call("DELETE", "/volumes/Not_A_Label"), 400, "INVALID_REQUEST")
    check_osb_error(o.call("GET", "/volumes", key="wrong-key"), 401, "UNAUTHORIZED")


# ------------------------------------------------------------------------ SDK

SDK_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from opensandbox import SandboxSync
    from opensandbox.config import ConnectionConfigSync
    from opensandbox.models.sandboxes import Host, PVC, Volume
    cfg = ConnectionConfigSync(domain=os.environ["D"], api_key=os.environ["K"])
    sb = SandboxSync.create("sandbox-broker/base:latest", connection_config=cfg,
        volumes=[Volume(name="proj", host=Host(path=os.environ["P"]), mount_path="/proj"),
                 Volume(name="cache", pvc=PVC(claim_name="sdk-cache"), mount_path="/cache")])
    try:
        a = sb.commands.run("cat /proj/hello").text
        sb.commands.run("echo sdk > /cache/f")
        b = sb.commands.run("cat /cache/f").text
        print(json.dumps({"id": sb.id, "proj": a, "cache": b}))
    finally:
        sb.kill()
""")


def test_python_sdk_volume_models(vb, dirs):
    py = python_sdk_python()
    cp = subprocess.run([py, "-c", SDK_SCRIPT], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=300,
                        env=dict(os.environ, D="127.0.0.1:%d" % vb.port, K=KEY["hotel"],
                                 P=dirs["ro"]))
    assert cp.returncode == 0, cp.stderr.decode()[-3000:]
    out = json.loads(cp.stdout.decode().strip().splitlines()[-1])
    assert "from the host" in out["proj"] and "sdk" in out["cache"], out
    assert [v["Labels"][LABEL_VOLUME] for v in docker_volumes(vb.prefix, "hotel")] == ["sdk-cache"]


# ------------------------------------------------------------- queued creates

def test_queued_create_rechecks_its_volumes(request, services, it_root, dirs):
    """A create that waits for a slot is checked again when its container is
    made: a host directory swapped for a symlink (out of the allowlist) since
    the create, or a named volume the tenant deleted since, fails the sandbox
    instead of being mounted (or made anew by Docker, unlabelled). A queued
    create deleted before it ran removes its deleteOnSandboxTermination
    volume."""
    made_b = []

    def fin():
        for b in made_b:
            for v in docker_volumes(b.prefix):
                DOCKER.call("DELETE", "/volumes/%s" % urllib.parse.quote(v["Name"], safe=""))
    request.addfinalizer(fin)
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=1,
                         VOLUME_HOST_ALLOW="%s:rw" % dirs["rw"])
    made_b.append(b)
    request.node._it_brokers = [b]
    o = OSB(b, "alpha")
    swap = os.path.join(dirs["rw"], "swap-%s" % uuid.uuid4().hex[:6])
    os.makedirs(swap)
    first = o.create()
    body = {"image": {"uri": BASE_IMAGE}, "entrypoint": ["sleep", "infinity"], "timeout": 600}
    r = o.create_raw(dict(body, volumes=[{"name": "h", "host": {"path": swap}, "mountPath": "/h"}]))
    assert r.status == 202 and r.json["status"]["state"] == "Pending", r
    s_host = r.json["id"]
    r = o.create_raw(dict(body, volumes=[pvc("queued")]))
    assert r.status == 202 and r.json["status"]["state"] == "Pending", r
    s_vol = r.json["id"]
    # a queued create deleted before it ran: no container, no teardown, and
    # still its deleteOnSandboxTermination volume goes with it
    r = o.create_raw(dict(body, volumes=[pvc("short", deleteOnSandboxTermination=True)]))
    assert r.status == 202 and r.json["status"]["state"] == "Pending", r
    assert sorted(v["Labels"][LABEL_VOLUME] for v in docker_volumes(b.prefix)) == ["queued", "short"]
    assert o.delete(r.json["id"]).status == 204
    assert [v["Labels"][LABEL_VOLUME] for v in docker_volumes(b.prefix)] == ["queued"]
    # while they wait: the directory becomes a symlink out, the volume goes
    os.rename(swap, swap + ".real")
    os.symlink(dirs["out"], swap)
    assert o.call("DELETE", "/volumes/queued").status == 204
    assert o.delete(first).status == 204
    st = o.wait_state(s_host, "Failed")["status"]
    assert "changed since the create" in st.get("message", ""), st
    assert container(b, s_host) is None
    st = o.wait_state(s_vol, "Failed")["status"]
    assert "deleted before the sandbox was made" in st.get("message", ""), st
    assert docker_volumes(b.prefix) == [], "Docker made the deleted volume anew"
