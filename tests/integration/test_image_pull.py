"""Image pulls from a registry (IMAGE_ALLOW, image.auth), against a real
registry: Debian's docker-registry (distribution 2.8) started here on
127.0.0.1 twice over one storage directory, once open and once behind
htpasswd basic auth. The test pushes a locally built image
(sandbox-broker/tiny) under a unique tag, removes the local tag, and has
the broker pull it for an OpenSandbox create.

dockerd treats 127.0.0.0/8 registries as insecure (plain HTTP) by default,
so no daemon configuration is needed. Cleanup: the registries by PID, the
pushed and pulled tags, the broker's containers (start_osb_broker).
"""

import os
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
import warnings

import pytest

from brokerlib import check_error, free_port, wait_until
from sandboxlib import TINY_IMAGE, docker_broker, require_docker  # noqa: F401
from sdklib import OSB, start_osb_broker
from test_execd import Execd

require_docker()

REGISTRY_BIN = "/usr/bin/docker-registry"
USER = "puller"
PASSWORD = "Pw-" + uuid.uuid4().hex          # the right one
WRONG = "WrongPw-" + uuid.uuid4().hex        # must appear nowhere either
TAG = uuid.uuid4().hex[:10]

if not os.access(REGISTRY_BIN, os.X_OK):
    pytest.skip("docker-registry is not installed (scripts/deps-install)", allow_module_level=True)


def bcrypt_hash(password):
    """htpasswd's bcrypt line ($2y$ and $2b$ both read by distribution)."""
    if shutil.which("htpasswd"):
        out = subprocess.run(["htpasswd", "-nbB", USER, password], check=True,
                             stdout=subprocess.PIPE, timeout=30).stdout.decode()
        return out.strip().split(":", 1)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


class Registry:
    def __init__(self, root, storage, auth):
        self.port = free_port()
        self.host = "127.0.0.1:%d" % self.port
        os.makedirs(root, exist_ok=True)
        cfg = os.path.join(root, "config.yml")
        lines = ["version: 0.1",
                 "log:", "  level: warn",
                 "storage:", "  filesystem:", "    rootdirectory: %s" % storage,
                 "  delete:", "    enabled: true",
                 "http:", "  addr: %s" % self.host]
        if auth:
            htp = os.path.join(root, "htpasswd")
            with open(htp, "w") as f:
                f.write("%s:%s\n" % (USER, bcrypt_hash(PASSWORD)))
            lines += ["auth:", "  htpasswd:", "    realm: it-registry", "    path: %s" % htp]
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = open(os.path.join(root, "registry.log"), "wb")
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", cfg], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)

        def up():
            try:
                urllib.request.urlopen("http://%s/v2/" % self.host, timeout=2).close()
                return True
            except urllib.error.HTTPError as e:
                return e.code == 401  # up, asking for credentials
            except OSError:
                assert self.proc.poll() is None, "docker-registry exited"
                return False
        wait_until(up, 30, 0.1, "docker-registry on %s" % self.host)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=check)


def local_image(ref):
    return docker("image", "inspect", ref, check=False).returncode == 0


@pytest.fixture(scope="module")
def registries(request, it_root):
    root = os.path.join(it_root, "registry")
    storage = os.path.join(root, "storage")
    os.makedirs(storage)
    regs = {}
    tags = []

    def fin():
        for ref in tags:
            docker("rmi", ref, check=False)
        for r in regs.values():
            if isinstance(r, Registry):
                r.stop()
    request.addfinalizer(fin)
    regs["open"] = Registry(os.path.join(root, "open"), storage, auth=False)
    regs["auth"] = Registry(os.path.join(root, "auth"), storage, auth=True)
    # push to the open one; the auth one serves the same storage
    pushed = "%s/test/tiny:%s" % (regs["open"].host, TAG)
    tags.append(pushed)
    docker("tag", TINY_IMAGE, pushed)
    docker("push", pushed)
    docker("rmi", pushed)
    regs["tags"] = tags
    return regs


def image_ref(regs, which, tag=TAG):
    """A reference to the pushed image; the caller registers it for cleanup."""
    ref = "%s/test/tiny:%s" % (regs[which].host, tag)
    regs["tags"].append(ref)
    return ref


@pytest.fixture(scope="module")
def pull_broker(request, services, it_root, registries):
    allow = "%s/*, %s/*" % (registries["open"].host, registries["auth"].host)
    return start_osb_broker(request, services, it_root, IMAGE_ALLOW=allow,
                            IMAGE_PULL_TIMEOUT_MS=60000)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, pull_broker):
    request.node._it_brokers = [pull_broker]


def create_with_auth(osb, ref, auth):
    """A create with image.auth (OSB.create has no place for it); the id."""
    r = osb.create_raw({"image": {"uri": ref, "auth": auth}, "entrypoint": ["sleep", "3600"],
                        "timeout": 600, "resourceLimits": {"cpu": "250m", "memory": "128Mi"}})
    assert r.status == 202, r
    return r.json["id"]


def run_echo(b, sid, tenant):
    r = OSB(b, tenant).endpoint(sid, 44772)
    assert r.status == 200, r
    token = r.json["headers"]["X-EXECD-ACCESS-TOKEN"]
    from sandboxlib import SB
    ex = Execd(SB(b), sid, token)
    st, _, events = ex.command_stream({"command": "echo pulled-$((6*7))"})
    assert st == 200, events
    out = "".join(e.get("text", "") for e in events if e.get("type") == "stdout")
    assert "pulled-42" in out, events


def everything_stored(b):
    """Every value in the services' Redis plus every file under the broker's
    state directory, as one text (to look for secrets in)."""
    parts = []
    r = b.redis
    for k in r.scan_iter(count=1000):
        t = r.type(k)
        if t == "string":
            parts.append(str(r.get(k)))
        elif t == "hash":
            parts.append(repr(r.hgetall(k)))
        elif t == "list":
            parts.append(repr(r.lrange(k, 0, -1)))
        elif t == "set":
            parts.append(repr(r.smembers(k)))
        elif t == "zset":
            parts.append(repr(r.zrange(k, 0, -1)))
        elif t == "stream":
            parts.append(repr(r.xrange(k)))
    for d, _, files in os.walk(b.state_dir):
        for n in files:
            try:
                with open(os.path.join(d, n), "rb") as f:
                    parts.append(f.read().decode("utf-8", "replace"))
            except OSError:
                pass
    return "\n".join(parts)


def assert_secret_nowhere(b, secret):
    assert secret not in everything_stored(b), "the registry password was stored or logged"


def test_pull_from_an_open_registry(pull_broker, registries):
    osb = OSB(pull_broker, "alpha")
    ref = image_ref(registries, "open")
    assert not local_image(ref)
    seen = []
    sid = osb.create(image=ref, entrypoint=("sleep", "3600"), wait=False)
    sb = osb.wait_state(sid, "Running", seen=seen)
    assert sb["image"]["uri"] == ref
    assert local_image(ref), "the pulled image stays cached"
    run_echo(pull_broker, sid, "alpha")
    assert osb.delete(sid).status == 204


def test_pull_with_registry_credentials(pull_broker, registries):
    osb = OSB(pull_broker, "bravo")
    ref = image_ref(registries, "auth")
    assert not local_image(ref)
    sid = create_with_auth(osb, ref, {"username": USER, "password": PASSWORD})
    sb = osb.wait_state(sid, "Running")
    assert "auth" not in sb["image"], sb
    run_echo(pull_broker, sid, "bravo")
    assert_secret_nowhere(pull_broker, PASSWORD)
    assert osb.delete(sid).status == 204


def test_wrong_password_fails_the_sandbox_and_is_kept_nowhere(pull_broker, registries):
    osb = OSB(pull_broker, "charlie")
    ref = image_ref(registries, "auth", TAG + "-x")   # never pushed: must not be a cache hit
    docker("tag", TINY_IMAGE, "%s/test/tiny:%s" % (registries["open"].host, TAG + "-x"))
    docker("push", "%s/test/tiny:%s" % (registries["open"].host, TAG + "-x"))
    docker("rmi", "%s/test/tiny:%s" % (registries["open"].host, TAG + "-x"))
    assert not local_image(ref)
    sid = create_with_auth(osb, ref, {"username": USER, "password": WRONG})
    sb = osb.wait_state(sid, "Failed")
    msg = sb["status"].get("message", "")
    assert "image pull" in msg and ("unauthorized" in msg or "authentication" in msg), sb
    assert WRONG not in msg
    assert not local_image(ref)
    assert_secret_nowhere(pull_broker, WRONG)


def test_missing_image_in_an_allowed_registry_fails_with_the_reason(pull_broker, registries):
    osb = OSB(pull_broker, "delta")
    ref = image_ref(registries, "open", "never-pushed")
    sid = osb.create(image=ref, entrypoint=("sleep", "3600"), wait=False)
    sb = osb.wait_state(sid, "Failed")
    assert "image pull" in sb["status"].get("message", ""), sb


def test_image_outside_the_allowlist_is_400(pull_broker):
    osb = OSB(pull_broker, "echo")
    r = osb.create_raw({"image": {"uri": "127.0.0.1:1/elsewhere/img:1"},
                        "entrypoint": ["sleep", "1"]})
    check_error(r, 400, "INVALID_REQUEST")
    assert "IMAGE_ALLOW" in r.json["message"], r


def test_local_image_outside_the_allowlist_still_works(pull_broker):
    osb = OSB(pull_broker, "foxtrot")
    sid = osb.create(image=TINY_IMAGE, entrypoint=("sleep", "3600"))
    run_echo(pull_broker, sid, "foxtrot")
    assert osb.delete(sid).status == 204


def test_bad_image_auth_is_400(pull_broker, registries):
    osb = OSB(pull_broker, "golf")
    ref = image_ref(registries, "auth")
    for auth in ("x", {"username": USER, "password": 5}, {"username": "a" * 300},
                 {"username": USER, "token": "t"}, {"username": "a\nb"},
                 {"password": "p" * 5000}):
        r = osb.create_raw({"image": {"uri": ref, "auth": auth}, "entrypoint": ["sleep", "1"]})
        check_error(r, 400, "INVALID_REQUEST")
        assert "image.auth" in r.json["message"], r


def test_pull_timeout_fails_the_sandbox(request, services, it_root):
    """A registry that accepts connections and never answers: the pull is
    cut at IMAGE_PULL_TIMEOUT_MS and the sandbox fails, saying so."""
    import socket
    import threading
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    port = lsock.getsockname()[1]
    held, stop = [], threading.Event()

    def accept():
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(lsock.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        b = start_osb_broker(request, services, it_root, IMAGE_ALLOW="127.0.0.1:%d/*" % port,
                             IMAGE_PULL_TIMEOUT_MS=2000)
        request.node._it_brokers = [b]
        osb = OSB(b, "hotel")
        sid = osb.create(image="127.0.0.1:%d/slow/img:1" % port, entrypoint=("sleep", "60"),
                         wait=False)
        sb = osb.wait_state(sid, "Failed", timeout=60)
        assert "IMAGE_PULL_TIMEOUT_MS" in sb["status"].get("message", ""), sb
    finally:
        stop.set()
        t.join(5)
        for c in held:
            c.close()
        lsock.close()


def test_lease_acquire_pulls_the_configured_image(docker_broker, registries):
    """Leases take their image from SANDBOX_IMAGE: a missing one is pulled
    too (without credentials) when IMAGE_ALLOW lets it."""
    host = registries["open"].host
    pushed = "%s/test/tiny:%s-lease" % (host, TAG)
    registries["tags"].append(pushed)
    docker("tag", TINY_IMAGE, pushed)
    docker("push", pushed)
    docker("rmi", pushed)
    assert not local_image(pushed)
    sb = docker_broker(SANDBOX_IMAGE=pushed, IMAGE_ALLOW="%s/*" % host, IDLE_POLICY="delete")
    lease = sb.acquire("puller", "s1")
    assert sb.run(lease, "echo leased-$((6*7))")["stdout"] == "leased-42\n"
    assert local_image(pushed)
    sb.release("puller", "s1")
