"""Helpers for the integration tests: the local stack, HTTP, Redis, polling.

Everything here talks to 127.0.0.1 only. Every HTTP call has a timeout and
every wait is a bounded poll loop (wait_until); nothing sleeps "long enough"
and then asserts.
"""

import datetime
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# the build under test: BROKER_BUILD_DIR (scripts/run-tests gives build-asan,
# relative: the repository's, whatever the cwd), else build/
BUILD_DIR = os.path.join(REPO, os.environ.get("BROKER_BUILD_DIR") or "build")
STACK = os.path.join(REPO, "scripts", "stack")

HEX32 = re.compile(r"^[0-9a-f]{32}$")
ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")

HTTP_TIMEOUT = float(os.environ.get("IT_HTTP_TIMEOUT", "20"))
STACK_TIMEOUT = float(os.environ.get("IT_STACK_TIMEOUT", "240"))

# Every broker variable of docs/CONFIGURATION.md plus the stack's own: never
# inherited from the caller's environment, always set by the harness.
CONFIG_VARS = (
    "REDIS_HOST", "REDIS_PORT", "REDIS_TIMEOUT_MS", "REDIS_KEY_PREFIX",
    "KAFKA_BROKERS", "KAFKA_TOPIC", "KAFKA_EVENTS_TOPIC", "KAFKA_GROUP", "KAFKA_SESSION_TIMEOUT_MS",
    "KAFKA_TIMEOUT_MS", "BROKER_CAPACITY", "LEASE_TTL_MS", "TICKET_TTL_MS",
    "POOL_SEATS", "SANDBOX_PROVIDER", "MAX_BODY_BYTES", "FCGI_THREADS",
    "BODY_MIN_BYTES_PER_S", "BODY_GRACE_MS", "EXECD_TENANT_SHARE_PCT",
    "SANDBOXES_TENANT_SHARE_PCT", "LEASES_TENANT_SHARE_PCT",
    "LOG_LEVEL", "SUPERVISOR_TICK_MS", "BROKER_STATE_DIR", "BROKER_HTTP_PORT",
    "KAFKA_PORT", "KAFKA_CONTROLLER_PORT", "KAFKA_HEAP", "REDIS_SOCKET",
    # sandboxes, OpenSandbox, Daytona: never inherited from the developer's shell
    "DOCKER_SOCKET", "DOCKER_TIMEOUT_MS", "SANDBOX_START_TIMEOUT_MS", "SANDBOX_IMAGE",
    "SANDBOX_MULTIUSER_IMAGE",
    "SANDBOX_MILLICPUS", "SANDBOX_MEMORY_MB", "SANDBOX_PIDS", "SANDBOX_NETWORK", "SANDBOX_RUNTIME",
    "SANDBOX_RUNTIMES", "SANDBOX_RUNTIME_EXCLUSIVE", "SANDBOX_RUNTIME_USER_SHARED",
    "SANDBOX_RUNTIME_MULTI_USER_SHARED", "EGRESS_POOL_POLICIES",
    "IDLE_POLICY", "IDLE_KEEP_MS", "EXEC_TIMEOUT_MS", "EXEC_MAX_TIMEOUT_MS",
    "EXEC_MAX_OUTPUT", "EXEC_RECORD_MAX_OUTPUT", "EXEC_RECORDS_PER_LEASE", "EXEC_RECORD_TTL_MS",
    "FILE_MAX_BYTES", "RECONCILE_MS", "PROVISION_WORKERS",
    "OPENSANDBOX_API_KEYS", "OPENSANDBOX_MAX_TIMEOUT_S", "OPENSANDBOX_MAX_PER_TENANT",
    "OPENSANDBOX_ENDPOINT_HOST", "OPENSANDBOX_IDEMPOTENCY_TTL_S", "OPENSANDBOX_IDEMPOTENCY_MAX",
    "OPENSANDBOX_UNANSWERED_S", "DAYTONA_API_URL", "DAYTONA_API_KEY",
    "DAYTONA_ORGANIZATION_ID", "DAYTONA_SNAPSHOT", "DAYTONA_TARGET", "DAYTONA_TIMEOUT_MS",
    "DAYTONA_POLL_MAX_MS", "LOG_TARGET", "METRICS_TOKEN", "TENANT_MAX_SLOTS",
    "SANDBOX_AGENT", "AGENT_DIR", "EXEC_TRANSPORT", "MOUNTD_SOCKET", "DISK_DIR",
    "POOL", "POOL_MAX_AGE_MS", "POOL_COUNTS_AGAINST_CAPACITY", "POOL_REFILL_HOLD_MS",
    "SNAPSHOT_MAX_PER_TENANT", "SNAPSHOT_MAX_BYTES", "SNAPSHOT_TIMEOUT_MS", "TEMPLATE_MAX_PER_TENANT",
    "VOLUME_HOST_ALLOW", "VOLUME_MAX_PER_TENANT", "INGRESS_TENANT_CONNS_MAX",
    "KUBERNETES_API_URL", "KUBERNETES_CA_FILE", "KUBERNETES_CERT_FILE", "KUBERNETES_KEY_FILE",
    "KUBERNETES_TOKEN_FILE", "KUBERNETES_NAMESPACE", "KUBERNETES_IMAGE_PULL_POLICY",
    "KUBERNETES_AGENT", "KUBERNETES_AGENT_IMAGE", "KUBERNETES_AGENT_PORT", "KUBERNETES_TIMEOUT_MS",
    "KUBERNETES_POD_WAIT_MS", "KUBERNETES_GRACE_S",
)

_used_ports = set()
_port_lock = threading.Lock()


def free_port():
    """A free TCP port on 127.0.0.1 (bind port 0), never handed out twice."""
    with _port_lock:
        for _ in range(100):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            finally:
                s.close()
            if port not in _used_ports:
                _used_ports.add(port)
                return port
    raise RuntimeError("no free port found")


def now_ms():
    return int(time.time() * 1000)


def wait_until(fn, timeout, interval=0.1, desc="condition"):
    """Call fn() until it returns a truthy value; return that value.

    Fails (AssertionError) after `timeout` seconds, with the last value seen.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(
                "timed out after %.1fs waiting for %s; last value: %r"
                % (timeout, desc, last))
        time.sleep(interval)


def tail(path, lines=80):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return "(cannot read %s: %s)" % (path, e)
    text = data.decode("utf-8", "replace").splitlines()
    return "\n".join(text[-lines:])


def logs_tail(state_dir, lines=80):
    """The tail of every log under state_dir/logs, as one text block."""
    logdir = os.path.join(state_dir, "logs")
    try:
        names = sorted(os.listdir(logdir))
    except OSError:
        return "(no log directory %s)" % logdir
    paths = [os.path.join(logdir, n) for n in names]
    nginx_err = os.path.join(state_dir, "nginx", "error.log")
    if os.path.exists(nginx_err):
        paths.append(nginx_err)
    out = []
    for p in paths:
        out.append("----- %s (last %d lines) -----\n%s" % (p, lines, tail(p, lines)))
    return "\n".join(out) or "(no logs in %s)" % logdir


class StackError(RuntimeError):
    pass


def run_stack(env, *args, timeout=STACK_TIMEOUT, check=True):
    """Run scripts/stack with env; return CompletedProcess (output merged)."""
    if not os.path.exists(STACK):
        raise StackError("%s does not exist (yet)" % STACK)
    try:
        cp = subprocess.run(
            ["bash", STACK] + list(args), env=env, cwd=REPO,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        raise StackError("scripts/stack %s timed out after %ss\n%s"
                         % (" ".join(args), timeout, out))
    out = cp.stdout.decode("utf-8", "replace")
    if check and cp.returncode != 0:
        raise StackError("scripts/stack %s failed (exit %d):\n%s\n%s"
                         % (" ".join(args), cp.returncode, out,
                            logs_tail(env.get("BROKER_STATE_DIR", "."), 40)))
    cp.output = out
    return cp


def base_env():
    env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARS}
    # scripts/stack's default is docker; a test that wants sandboxes asks for them
    env["SANDBOX_PROVIDER"] = "none"
    return env


# --------------------------------------------------------------------- HTTP

class Resp(tuple):
    """(status, headers, json) plus .raw (bytes), .method, .path.

    Unpacks as the 3-tuple (status, headers, json); json is None when the
    body is not JSON.
    """

    def __new__(cls, status, headers, body, raw, method, path):
        self = super().__new__(cls, (status, headers, body))
        self.raw = raw
        self.method = method
        self.path = path
        return self

    status = property(lambda s: s[0])
    headers = property(lambda s: s[1])
    json = property(lambda s: s[2])

    def __repr__(self):
        raw = self.raw[:600].decode("utf-8", "replace")
        return "<%s %s -> %d %s>" % (self.method, self.path, self.status, raw)


def http_request(port, method, path, body=None, headers=None,
                 timeout=HTTP_TIMEOUT):
    """One request on a fresh connection. body: dict/list/... (sent as JSON
    with Content-Type application/json unless headers say otherwise), str or
    bytes (sent raw, no Content-Type added), or None."""
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body).encode("utf-8")
            if not any(k.lower() == "content-type" for k in hdrs):
                hdrs["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        raw = r.read()
        status, rh = r.status, r.headers
    finally:
        conn.close()
    try:
        parsed = json.loads(raw.decode("utf-8")) if raw else None
    except (ValueError, UnicodeDecodeError):
        parsed = None
    return Resp(status, rh, parsed, raw, method, path)


# ------------------------------------------------------------------- checks

def check_error(resp, status, code=None):
    """The documented error shape: status, JSON {code, message}."""
    assert resp.status == status, "expected %d, got %r" % (status, resp)
    body = resp.json
    assert isinstance(body, dict), "error body is not a JSON object: %r" % resp
    assert isinstance(body.get("code"), str) and body["code"], resp
    assert isinstance(body.get("message"), str) and body["message"], resp
    if code is not None:
        assert body["code"] == code, "expected code %s, got %r" % (code, resp)
    ctype = resp.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip().lower() == "application/json", \
        "error Content-Type %r: %r" % (ctype, resp)
    return body


def parse_iso_ms(s):
    assert isinstance(s, str) and ISO_MS.match(s), "bad timestamp %r" % (s,)
    dt = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(round(dt.timestamp() * 1000))


def check_lease(lease, user=None, session=None, mode="exclusive", pool=None):
    """A lease object of docs/API.md."""
    assert isinstance(lease, dict), "lease is not an object: %r" % (lease,)
    for f in ("leaseId", "userId", "sessionId", "mode", "poolId", "seat",
              "sandboxId", "provider", "workdir", "linuxUser", "createdAt",
              "expiresAt", "expiresAtMs"):
        assert f in lease, "lease lacks %s: %r" % (f, lease)
    assert HEX32.match(lease["leaseId"] or ""), lease
    if user is not None:
        assert lease["userId"] == user, lease
    if session is not None:
        assert lease["sessionId"] == session, lease
    if mode is not None:
        assert lease["mode"] == mode, lease
    if lease["mode"] == "multi_user_shared":
        assert lease["poolId"] == (pool or "default"), lease
        assert isinstance(lease["seat"], int) and lease["seat"] >= 1, lease
    else:
        assert lease["poolId"] is None, lease
        assert lease["seat"] is None, lease
    assert isinstance(lease["expiresAtMs"], int), lease
    assert abs(parse_iso_ms(lease["expiresAt"]) - lease["expiresAtMs"]) <= 1, lease
    assert parse_iso_ms(lease["createdAt"]) <= lease["expiresAtMs"], lease
    return lease


# ------------------------------------------------------------------- broker

class Services:
    """Redis + Kafka started once per test session under their own dir."""

    def __init__(self, root):
        self.state_dir = os.path.join(root, "services")
        os.makedirs(self.state_dir, exist_ok=True)
        self.redis_port = free_port()
        self.kafka_port = free_port()
        self.kafka_controller_port = free_port()
        self.started = False

    def env(self):
        env = base_env()
        env.update({
            "BROKER_STATE_DIR": self.state_dir,
            "BROKER_HTTP_PORT": str(free_port()),
            "REDIS_PORT": str(self.redis_port),
            "KAFKA_PORT": str(self.kafka_port),
            "KAFKA_CONTROLLER_PORT": str(self.kafka_controller_port),
            "KAFKA_HEAP": os.environ.get("IT_KAFKA_HEAP", "128m"),
        })
        return env

    def up(self):
        self.started = True
        for attempt in range(3):
            try:
                run_stack(self.env(), "services-up")
                return
            except StackError as e:
                # a free port picked here was taken by someone else before
                # the service bound it (a shared machine): new ports, retry
                if "already in use" not in str(e) or attempt == 2:
                    raise
                run_stack(self.env(), "down", check=False, timeout=120)
                self.redis_port = free_port()
                self.kafka_port = free_port()
                self.kafka_controller_port = free_port()

    def down(self):
        if self.started:
            run_stack(self.env(), "down", check=False, timeout=120)


class Broker:
    """One broker (fcgi handlers + supervisor + nginx) with its own state dir,
    HTTP port, Redis key prefix, Kafka topic and group, sharing Services."""

    DEFAULTS = {
        "BROKER_CAPACITY": "2",
        "LEASE_TTL_MS": "60000",
        "TICKET_TTL_MS": "30000",
        "KAFKA_SESSION_TIMEOUT_MS": "6000",
        "SUPERVISOR_TICK_MS": "100",
        "METRICS_TOKEN": "it-metrics-scrape-token",
    }

    def __init__(self, services, state_dir, **overrides):
        import redis  # the only third-party dependency besides pytest
        self.services = services
        self.state_dir = state_dir
        os.makedirs(state_dir, exist_ok=True)
        tag = uuid.uuid4().hex[:12]
        self.prefix = "t%s:" % tag
        self.port = free_port()
        self.config = dict(self.DEFAULTS)
        self.config.update({
            "REDIS_HOST": "127.0.0.1",
            "REDIS_KEY_PREFIX": self.prefix,
            "KAFKA_BROKERS": "127.0.0.1:%d" % services.kafka_port,
            "KAFKA_TOPIC": "it.tickets.%s" % tag,
            "KAFKA_GROUP": "it-supervisor-%s" % tag,
        })
        if os.environ.get("IT_LOG_LEVEL"):
            self.config["LOG_LEVEL"] = os.environ["IT_LOG_LEVEL"]
        self.config.update({k: str(v) for k, v in overrides.items()})
        # Every route but /health needs an API key: each broker seeds one of
        # its own for tenant "it" (plus whatever seeds a test passes), and
        # request() sends it unless told otherwise.
        self.tenant = "it"
        self.api_key = "itk_%s" % uuid.uuid4().hex
        seeds = self.config.get("OPENSANDBOX_API_KEYS", "")
        self.config["OPENSANDBOX_API_KEYS"] = ",".join(
            s for s in ("%s:%s" % (self.api_key, self.tenant), seeds) if s)
        self.capacity = int(self.config["BROKER_CAPACITY"])
        self.redis = redis.Redis(host="127.0.0.1", port=services.redis_port,
                                 decode_responses=True, socket_timeout=10)
        self.started = False

    # -- stack
    def env(self):
        env = base_env()
        env.update(self.config)
        env.update({
            "BROKER_STATE_DIR": self.state_dir,
            "BROKER_HTTP_PORT": str(self.port),
            "REDIS_PORT": str(self.services.redis_port),
            # the broker programs reach the session's Redis over its unix socket, as
            # scripts/stack's own services would (TCP if it is not there)
            # (a test's own Redis without a state dir: TCP only)
            "REDIS_SOCKET": (os.path.join(self.services.state_dir, "run", "redis.sock")
                             if getattr(self.services, "state_dir", None) else ""),
            "KAFKA_PORT": str(self.services.kafka_port),
            "KAFKA_CONTROLLER_PORT": str(self.services.kafka_controller_port),
        })
        return env

    def up(self):
        self.started = True
        for attempt in range(3):
            try:
                run_stack(self.env(), "broker-up")
                return
            except StackError as e:
                if "already in use" not in str(e) or attempt == 2:
                    raise
                run_stack(self.env(), "down", check=False, timeout=120)
                self.port = free_port()

    def down(self):
        if self.started:
            return run_stack(self.env(), "down", check=False, timeout=120)

    def stop(self, name, kill=False):
        args = ["stop", name] + (["--kill"] if kill else [])
        return run_stack(self.env(), *args, timeout=120)

    def start(self, name):
        return run_stack(self.env(), "start", name)

    def pid(self, name):
        try:
            with open(os.path.join(self.state_dir, "pids", name + ".pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def logs(self, name):
        p = os.path.join(self.state_dir, "logs", name + ".log")
        try:
            with open(p, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def logs_tail(self, lines=80):
        return logs_tail(self.state_dir, lines)

    # -- HTTP
    def auth_headers(self, key=None):
        """Authorization: Bearer with key (default: the broker's own)."""
        return {"Authorization": "Bearer %s" % (key or self.api_key)}

    def request(self, method, path, body=None, headers=None,
                timeout=HTTP_TIMEOUT, auth=True):
        """auth: True sends the broker's key unless headers carry a
        credential already; False sends none; a string sends that key."""
        hdrs = dict(headers or {})
        has_cred = any(k.lower() in ("authorization", "open-sandbox-api-key") for k in hdrs)
        if auth and not has_cred:
            hdrs.update(self.auth_headers(auth if isinstance(auth, str) else None))
        r = http_request(self.port, method, path, body, hdrs, timeout)
        # docs/API.md: every answer carries X-Request-ID and is JSON.
        assert r.headers.get("X-Request-ID"), "no X-Request-ID on %r" % (r,)
        assert r.json is not None, "answer is not JSON: %r" % (r,)
        return r

    def get(self, path, headers=None, timeout=HTTP_TIMEOUT, auth=True):
        return self.request("GET", path, None, headers, timeout, auth)

    def post(self, path, body, headers=None, timeout=HTTP_TIMEOUT, auth=True):
        return self.request("POST", path, body, headers, timeout, auth)

    # -- lease API shortcuts
    def acquire(self, user, session, mode=None, pool=None, **kw):
        body = {"userId": user, "sessionId": session}
        if mode is not None:
            body["mode"] = mode
        if pool is not None:
            body["poolId"] = pool
        return self.post("/v1/leases/acquire", body, **kw)

    def poll(self, ticket, **kw):
        return self.get("/v1/leases/poll?ticketId=%s" % ticket, **kw)

    def heartbeat(self, user=None, session=None, lease_id=None, **kw):
        if lease_id is not None:
            body = {"leaseId": lease_id}
        else:
            body = {"userId": user, "sessionId": session}
        return self.post("/v1/leases/heartbeat", body, **kw)

    def release(self, user, session, reason=None, **kw):
        body = {"userId": user, "sessionId": session}
        if reason is not None:
            body["reason"] = reason
        return self.post("/v1/leases/release", body, **kw)

    def status(self):
        r = self.get("/v1/status")
        assert r.status == 200, r
        return r.json

    def wait_granted(self, ticket, timeout=30):
        """Poll a ticket until granted; return the poll answer body."""
        def check():
            r = self.poll(ticket)
            assert r.status == 200, r
            assert r.json["status"] in ("queued", "provisioning", "granted"), \
                "ticket %s: %r" % (ticket, r)
            return r.json if r.json["status"] == "granted" else None
        return wait_until(check, timeout, 0.1, "ticket %s granted" % ticket)

    # -- Redis
    def key(self, name):
        return self.prefix + name

    def active(self):
        return self.redis.scard(self.key("active"))

    def live_leases(self):
        return set(self.redis.zrange(self.key("leases"), 0, -1))

    # Observability, not broker state: request counters that every request
    # (errors included) adds to, flushed by a timer (docs/OPERATIONS.md,
    # "Metrics"). Left out of snapshots.
    OBSERVABILITY_KEYS = ("metrics",)

    def snapshot(self):
        """Every key under the prefix with its type and value (less the
        metrics hash)."""
        skip = {self.prefix + k for k in self.OBSERVABILITY_KEYS}
        snap = {}
        for k in self.redis.scan_iter(match=self.prefix + "*", count=1000):
            if k in skip:
                continue
            t = self.redis.type(k)
            if t == "string":
                v = self.redis.get(k)
            elif t == "hash":
                v = self.redis.hgetall(k)
            elif t == "set":
                v = sorted(self.redis.smembers(k))
            elif t == "zset":
                v = self.redis.zrange(k, 0, -1, withscores=True)
            elif t == "list":
                v = self.redis.lrange(k, 0, -1)
            elif t == "none":
                continue
            else:
                v = "<%s>" % t
            snap[k] = (t, v)
        return snap


def diff_snapshots(a, b):
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append("%s: %r -> %r" % (k, a.get(k, "<absent>"),
                                          b.get(k, "<absent>")))
    return out


class Sampler:
    """Background thread sampling a function (e.g. SCARD active) as fast as
    it reasonably can; records the maximum and every sample above a limit."""

    def __init__(self, fn, limit, interval=0.005):
        self.fn = fn
        self.limit = limit
        self.interval = interval
        self.max = None
        self.samples = 0
        self.violations = []
        self.errors = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                v = self.fn()
            except Exception as e:  # keep sampling; report at the end
                self.errors.append(repr(e))
                time.sleep(0.05)
                continue
            self.samples += 1
            if self.max is None or v > self.max:
                self.max = v
            if v > self.limit:
                self.violations.append((time.time(), v))
            time.sleep(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(10)
        return False

    def check(self):
        assert self.samples > 0, "sampler never ran: %r" % self.errors[:3]
        assert not self.violations, \
            "active slots exceeded %d: %r" % (self.limit, self.violations[:10])


def _loops_under(path):
    """{"/dev/loopN": backing file} of the loop devices whose file is at or
    below path (the disks sandbox-mountd made for a test's sandboxes)."""
    loops = {}
    try:
        out = subprocess.run(["losetup", "--list", "--noheadings", "-O", "NAME,BACK-FILE"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             check=False, text=True).stdout
    except OSError:
        return loops
    for line in out.splitlines():
        dev, _, back = line.strip().partition(" ")
        back = back.strip()
        back = back[:-len(" (deleted)")] if back.endswith(" (deleted)") else back
        if back == path or back.startswith(path + "/"):
            loops[dev] = back
    return loops


def unmount_under(path):
    """Lazily unmount every mount at or below path, deepest first, and every
    mount of a loop device whose file is below it (then detach the device):
    what sandbox-mountd mounted for a test's sandboxes (their run
    directories' tmpfs, their disks on the containers' layers) once the
    containers are gone. Returns the mount points."""
    path = os.path.realpath(path)
    loops = _loops_under(path)
    found = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                mp = fields[4].replace("\\040", " ")
                source = fields[fields.index("-") + 2] if "-" in fields else ""
                if mp == path or mp.startswith(path + "/") or source in loops:
                    found.append(mp)
    except OSError:
        return []
    for mp in sorted(found, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    for dev in loops:
        subprocess.run(["losetup", "-d", dev], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    return found


def rmtree_quiet(path):
    unmount_under(path)
    shutil.rmtree(path, ignore_errors=True)


# -------------------------------------------------------------------- Kafka

KAFKA_LIBS = os.path.join(REPO, ".cache", "kafka", "libs")


def kafka_tool(services, cls, *args, timeout=60):
    """Run a Kafka CLI class (from the stack's jars) against the services'
    Kafka; return its stdout (stderr goes into the error on failure)."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") \
        if os.environ.get("JAVA_HOME") else "java"
    log4j = os.path.join(services.state_dir, "kafka", "tools-log4j.properties")
    cmd = [java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
           "-Dlog4j.configuration=file:" + log4j, "-cp", KAFKA_LIBS + "/*", cls,
           "--bootstrap-server", "127.0.0.1:%d" % services.kafka_port] + list(args)
    cp = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (
            cls, " ".join(args), cp.returncode,
            cp.stderr.decode("utf-8", "replace")[-2000:]))
    return cp.stdout.decode("utf-8", "replace")


def kafka_end_offsets(services, topic):
    """{partition: end offset} of a topic ({} when it does not exist)."""
    try:
        out = kafka_tool(services, "org.apache.kafka.tools.GetOffsetShell",
                         "--topic", topic, "--time", "-1")
    except RuntimeError as e:
        if "Could not match any topic-partitions" in str(e):
            return {}
        raise
    offsets = {}
    for line in out.split():
        parts = line.rsplit(":", 2)
        if len(parts) == 3 and parts[0] == topic:
            offsets[int(parts[1])] = int(parts[2])
    return offsets


def kafka_group_offsets(services, group, topic):
    """{partition: (committed offset or None, end offset)} of a group on a
    topic, from ConsumerGroupCommand --describe."""
    out = kafka_tool(services,
                     "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                     "--describe", "--group", group)
    res = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0] == group and cols[1] == topic:
            cur = None if cols[3] == "-" else int(cols[3])
            end = None if cols[4] == "-" else int(cols[4])
            res[int(cols[2])] = (cur, end)
    return res
