"""Helpers for the sandbox integration tests (Docker provider, runtime API).

- `Docker`: a tiny Docker Engine API client over /var/run/docker.sock
  (http.client on a unix socket; every call has a timeout).
- `docker_broker` fixture: a factory like `broker(**env)` that starts a broker
  with SANDBOX_PROVIDER=docker and, at teardown (also on failure), stops the
  broker and force-removes every container labelled with that broker's
  REDIS_KEY_PREFIX -- only containers our tests created.
- `SB`: lease + runtime API shortcuts on a brokerlib.Broker (acquire that
  waits through "queued"/"provisioning", exec, files, start/stop/delete).

Every wait is a bounded poll (brokerlib.wait_until).
"""

import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import time
import urllib.parse

import pytest

from brokerlib import BUILD_DIR, http_request, wait_until

DOCKER_SOCK = os.environ.get("IT_DOCKER_SOCK", "/var/run/docker.sock")
LABEL_MANAGED = "io.sandbox-broker.managed"
LABEL_SID = "io.sandbox-broker.sandbox-id"
LABEL_PREFIX = "io.sandbox-broker.prefix"
TINY_IMAGE = "sandbox-broker/tiny:latest"
BASE_IMAGE = "sandbox-broker/base:latest"
MULTI_IMAGE = "sandbox-broker/multiuser:latest"

# how long a sandbox may take to be made on a loaded 2-core box
PROVISION_TIMEOUT = float(os.environ.get("IT_PROVISION_TIMEOUT", "90"))
SB_HTTP_TIMEOUT = 60


# ------------------------------------------------------------------- Docker

class _UnixConn(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class DockerError(RuntimeError):
    pass


class Docker:
    """Docker Engine API over the unix socket (no CLI)."""

    def __init__(self, sock=DOCKER_SOCK, timeout=60):
        self.sock = sock
        self.timeout = timeout

    def call(self, method, path, body=None, timeout=None):
        """-> (status, parsed JSON or raw bytes)"""
        conn = _UnixConn(self.sock, timeout or self.timeout)
        try:
            hdrs = {}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=hdrs)
            r = conn.getresponse()
            raw = r.read()
            status = r.status
        finally:
            conn.close()
        try:
            return status, json.loads(raw.decode()) if raw else None
        except (ValueError, UnicodeDecodeError):
            return status, raw

    def ping(self):
        try:
            st, body = self.call("GET", "/_ping", timeout=5)
        except OSError:
            return False
        return st == 200

    def inspect(self, name_or_id):
        """The container's inspect JSON, or None when it does not exist."""
        st, body = self.call("GET", "/containers/%s/json"
                             % urllib.parse.quote(name_or_id, safe=""))
        if st == 404:
            return None
        if st != 200:
            raise DockerError("inspect %s: %d %r" % (name_or_id, st, body))
        return body

    def state(self, name_or_id):
        """'running', 'exited', 'created', ... or None when gone."""
        c = self.inspect(name_or_id)
        return None if c is None else c["State"]["Status"]

    def list(self, prefix=None, sandbox_id=None, all=True):
        """Containers (list entries) carrying our labels."""
        labels = ["%s=1" % LABEL_MANAGED]
        if prefix is not None:
            labels.append("%s=%s" % (LABEL_PREFIX, prefix))
        if sandbox_id is not None:
            labels.append("%s=%s" % (LABEL_SID, sandbox_id))
        q = urllib.parse.urlencode({"all": "1" if all else "0",
                                    "filters": json.dumps({"label": labels})})
        st, body = self.call("GET", "/containers/json?" + q)
        if st != 200:
            raise DockerError("list: %d %r" % (st, body))
        return body

    def remove(self, name_or_id):
        st, body = self.call("DELETE", "/containers/%s?force=1&v=1"
                             % urllib.parse.quote(name_or_id, safe=""))
        if st not in (204, 404, 409):  # 409: removal already in progress
            raise DockerError("remove %s: %d %r" % (name_or_id, st, body))
        return st

    def remove_prefix(self, prefix):
        """Force-remove every managed container of one test's prefix."""
        n = 0
        for c in self.list(prefix=prefix):
            if c.get("Labels", {}).get(LABEL_PREFIX) == prefix:
                self.remove(c["Id"])
                n += 1
        return n

    def create_orphan(self, prefix, sandbox_id, image=TINY_IMAGE):
        """A container made by hand with the managed labels; started."""
        body = {"Image": image, "Cmd": ["sleep", "3600"],
                "Labels": {LABEL_MANAGED: "1", LABEL_SID: sandbox_id,
                           LABEL_PREFIX: prefix},
                "HostConfig": {"NetworkMode": "none"}}
        st, res = self.call("POST", "/containers/create?name=sb-%s" % sandbox_id, body)
        if st != 201:
            raise DockerError("create: %d %r" % (st, res))
        cid = res["Id"]
        st, res = self.call("POST", "/containers/%s/start" % cid)
        if st not in (204, 304):
            self.remove(cid)
            raise DockerError("start: %d %r" % (st, res))
        return cid

    def image_exists(self, image):
        st, _ = self.call("GET", "/images/%s/json" % urllib.parse.quote(image, safe=""))
        return st == 200


DOCKER = Docker()


def view_of(b):
    """The backend view of broker b: its `sandbox_view` if it has one, else DOCKER."""
    return getattr(b, "sandbox_view", None) or DOCKER


def docker_skip_reason():
    """None when the tests can run; else why not (for pytest.skip)."""
    if not os.path.exists(DOCKER_SOCK):
        return "%s does not exist (start dockerd: scripts/docker-up)" % DOCKER_SOCK
    if not DOCKER.ping():
        return "%s does not answer /_ping (start dockerd: scripts/docker-up)" % DOCKER_SOCK
    missing = [i for i in (BASE_IMAGE, MULTI_IMAGE, TINY_IMAGE)
               if not DOCKER.image_exists(i)]
    if missing:
        return "images missing: %s (run scripts/build-images)" % ", ".join(missing)
    return None


def require_docker():
    """Module-level: skip the whole module cleanly when Docker is not there."""
    reason = docker_skip_reason()
    if reason:
        pytest.skip(reason, allow_module_level=True)


# ---------------------------------------------------------- broker fixture

DOCKER_DEFAULTS = {
    "SANDBOX_PROVIDER": "docker",
    "IDLE_POLICY": "stop_keep",
}


@pytest.fixture
def docker_broker(request, broker):
    """Factory: docker_broker(BROKER_CAPACITY=2, ...) -> SB (wrapping a
    running brokerlib.Broker with the Docker provider). Its teardown
    (conftest.make_broker) stops the broker, then removes every container
    labelled with its prefix and what was mounted for them."""

    def factory(**env):
        cfg = dict(DOCKER_DEFAULTS)
        cfg.update(env)
        return SB(broker(**cfg))
    return factory


# ------------------------------------------------------ lease/runtime API

def b64(data):
    return base64.b64encode(data).decode("ascii")


class SB:
    """Lease and runtime API shortcuts around a brokerlib.Broker."""

    def __init__(self, b):
        self.b = b
        self.prefix = b.prefix

    # -- leases
    def poll_lease(self, ticket, timeout=PROVISION_TIMEOUT, seen=None):
        """Poll a ticket until granted; returns the lease. `seen` (a list)
        collects every distinct status met on the way. Fails on failed/expired."""
        def check():
            r = self.b.poll(ticket, timeout=SB_HTTP_TIMEOUT)
            assert r.status == 200, r
            st = r.json["status"]
            if seen is not None and (not seen or seen[-1] != st):
                seen.append(st)
            assert st in ("queued", "provisioning", "granted"), \
                "ticket %s: %r" % (ticket, r)
            return r.json["lease"] if st == "granted" else None
        return wait_until(check, timeout, 0.1, "ticket %s granted" % ticket)

    def acquire(self, user, session, mode=None, pool=None):
        """Acquire and wait for the lease (through queued/provisioning)."""
        r = self.b.acquire(user, session, mode, pool, timeout=SB_HTTP_TIMEOUT)
        if r.status == 200:
            return r.json["lease"]
        assert r.status == 202, r
        return self.poll_lease(r.json["ticketId"])

    def acquire_raw(self, user, session, mode=None, pool=None):
        return self.b.acquire(user, session, mode, pool, timeout=SB_HTTP_TIMEOUT)

    def release(self, user, session, reason=None):
        r = self.b.release(user, session, reason, timeout=SB_HTTP_TIMEOUT)
        assert r.status == 200, r
        return r.json

    # -- runtime API
    def call(self, method, lease, path, body=None, sandbox_id=None, lease_id=None,
             timeout=SB_HTTP_TIMEOUT):
        sid = sandbox_id or lease["sandboxId"]
        lid = lease_id or lease["leaseId"]
        return self.b.request(method, "/v1/sandboxes/%s%s" % (sid, path), body,
                              {"X-Lease-ID": lid}, timeout)

    def exec(self, lease, cmd, **kw):
        body = {"cmd": cmd}
        for k in ("cwd", "env", "timeoutMs"):
            if k in kw:
                body[k] = kw.pop(k)
        return self.call("POST", lease, "/exec", body, **kw)

    def run(self, lease, cmd, **kw):
        """exec that must answer 200; returns the result object."""
        r = self.exec(lease, cmd, **kw)
        assert r.status == 200, r
        return r.json

    def write(self, lease, path, data, **kw):
        return self.call("POST", lease, "/files/write",
                         {"path": path, "content": b64(data)}, **kw)

    def read(self, lease, path, **kw):
        return self.call("POST", lease, "/files/read", {"path": path}, **kw)

    def start(self, lease, **kw):
        return self.call("POST", lease, "/start", {}, **kw)

    def stop(self, lease, **kw):
        return self.call("POST", lease, "/stop", {}, **kw)

    def delete(self, lease, **kw):
        sid = kw.pop("sandbox_id", None) or lease["sandboxId"]
        lid = kw.pop("lease_id", None) or lease["leaseId"]
        # 204 has no body: not through Broker.request (which wants JSON)
        hdrs = {"X-Lease-ID": lid}
        hdrs.update(kw.pop("headers", None) or self.b.auth_headers())
        return http_request(self.b.port, "DELETE", "/v1/sandboxes/%s" % sid, None,
                            hdrs, SB_HTTP_TIMEOUT)

    # -- records and containers
    def record(self, sandbox_id):
        return self.b.redis.hgetall(self.b.key("sandbox:" + sandbox_id))

    @property
    def view(self):
        """What the backend holds, in the Engine API's shapes: DOCKER, or the broker's own
        `sandbox_view` (tests/k8s: its pods as containers)."""
        return view_of(self.b)

    @property
    def stops(self):
        """Whether the provider stops a sandbox and keeps it (IDLE_POLICY=stop_keep); a
        Kubernetes broker removes it instead (docs/KUBERNETES.md)."""
        return getattr(self.view, "stops", True)

    def containers(self, sandbox_id=None):
        return self.view.list(prefix=self.prefix, sandbox_id=sandbox_id)

    def container(self, sandbox_id):
        return self.view.inspect("sb-" + sandbox_id)

    def wait_container_state(self, sandbox_id, states, timeout=60):
        """Wait until the container sb-<id> is in one of `states` (None = gone)."""
        if not isinstance(states, (tuple, list, set)):
            states = (states,)
        last = [None]

        def chk():
            s = self.view.state("sb-" + sandbox_id)
            last[0] = s
            return s in states
        try:
            wait_until(chk, timeout, 0.2, "container sb-%s in %s" % (sandbox_id, states))
        except AssertionError as e:
            raise AssertionError("%s; container state: %s" % (e, last[0]))
        return last[0]

    def wait_record_state(self, sandbox_id, state, timeout=60):
        def chk():
            rec = self.record(sandbox_id)
            return rec if rec.get("state") == state else None
        return wait_until(chk, timeout, 0.1, "record %s %s" % (sandbox_id, state))


LEASE_PROVIDER = "docker"  # what check_sandbox_lease expects (tests/k8s: "kubernetes")


def check_sandbox_lease(lease, mode="exclusive"):
    """The sandbox fields of a lease granted with the Docker provider (LEASE_PROVIDER)."""
    import re
    assert re.match(r"^[0-9a-f]{32}$", lease.get("sandboxId") or ""), lease
    assert lease["provider"] == LEASE_PROVIDER, lease
    assert isinstance(lease["workdir"], str) and lease["workdir"].startswith("/"), lease
    assert isinstance(lease["linuxUser"], str) and lease["linuxUser"], lease
    if mode == "exclusive":
        assert lease["workdir"] == "/workspace" and lease["linuxUser"] == "root", lease
    elif mode == "user_shared":
        assert lease["workdir"] == "/workspace/" + lease["sessionId"], lease
        assert lease["linuxUser"] == "root", lease
    elif mode == "multi_user_shared":
        assert lease["linuxUser"] == "sbu%d" % lease["seat"], lease
        assert lease["workdir"] == "/home/" + lease["linuxUser"], lease
    return lease


def now():
    return time.monotonic()


def start_second_supervisor(sb, request):
    """Another broker-supervisor with exactly the first one's environment
    (what scripts/stack gave it: Redis prefix, Kafka topic and group,
    AGENT_DIR, ...); stopped by PID when the test ends."""
    build = BUILD_DIR
    with open("/proc/%d/environ" % sb.b.pid("supervisor"), "rb") as f:
        env = dict(kv.decode().split("=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    log = open(os.path.join(sb.b.state_dir, "logs", "supervisor2.log"), "ab")
    p = subprocess.Popen([os.path.join(build, "broker-supervisor")], env=env,
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    log.close()

    def fin():
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
    request.addfinalizer(fin)
    return p
