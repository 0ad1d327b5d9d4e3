"""Helpers for the OpenSandbox tests: raw lifecycle HTTP calls with an API
key, a module-scoped Docker broker with OpenSandbox tenants, waits on sandbox
states, the real container behind a sandbox, and running the official SDKs'
quickstart scripts (tests/integration/sdk/) in a subprocess.

Tenants: every test module gets the keys of TENANTS (key -> tenant); a test
that lists sandboxes uses a tenant no other test of its module uses, so what
it lists is exactly what it made.

Everything talks to 127.0.0.1 (and the Docker socket) only; every wait is a
bounded poll (brokerlib.wait_until); every subprocess has a timeout.
"""

import json
import os
import shutil
import subprocess
import urllib.parse

import pytest

import conftest
from brokerlib import REPO, check_error, http_request, parse_iso_ms, wait_until
from sandboxlib import BASE_IMAGE, view_of

SDK_DIR = os.path.join(REPO, "tests", "integration", "sdk")
NODE_PREFIX = os.path.join(REPO, ".cache", "node")
NODE_SDK = os.path.join(NODE_PREFIX, "node_modules", "@alibaba-group", "opensandbox")
SDK_INSTALL = os.path.join(REPO, "scripts", "sdk-install")

# how long a sandbox may take to be made on a loaded 2-core box
PROVISION_TIMEOUT = float(os.environ.get("IT_PROVISION_TIMEOUT", "90"))
OSB_HTTP_TIMEOUT = 60

TENANTS = {
    "key-alpha-0123456789": "alpha",
    "key-bravo-0123456789": "bravo",
    "key-charlie-012345678": "charlie",
    "key-delta-0123456789": "delta",
    "key-echo-01234567890": "echo",
    "key-foxtrot-01234567": "foxtrot",
    "key-golf-01234567890": "golf",
    "key-hotel-0123456789": "hotel",
}
KEY = {tenant: key for key, tenant in TENANTS.items()}
API_KEYS_ENV = ",".join("%s:%s" % kv for kv in TENANTS.items())

STATES = ("Pending", "Running", "Pausing", "Paused", "Stopping", "Terminated", "Failed")


def osb_env(**extra):
    """Broker environment: Docker provider plus the OpenSandbox tenants."""
    env = {"SANDBOX_PROVIDER": "docker", "BROKER_CAPACITY": "8",
           "IDLE_POLICY": "stop_keep", "OPENSANDBOX_API_KEYS": API_KEYS_ENV}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_osb_broker(request, services, it_root, **env):
    """A broker (any scope) for the OpenSandbox API; its teardown
    (conftest.make_broker) also force-removes every container labelled with
    its Redis prefix (only what it made)."""
    return conftest.make_broker(request, services, it_root, **osb_env(**env))


# ------------------------------------------------------------------ lifecycle

class OSB:
    """The lifecycle API of one broker, as one tenant (or with raw headers)."""

    def __init__(self, broker, tenant="alpha"):
        self.b = broker
        self.port = broker.port
        self.tenant = tenant
        self.key = KEY[tenant] if tenant else None

    def as_tenant(self, tenant):
        return OSB(self.b, tenant)

    def call(self, method, path, body=None, key=None, headers=None,
             timeout=OSB_HTTP_TIMEOUT):
        hdrs = {}
        k = self.key if key is None else key
        if k:  # key="" sends no key at all
            hdrs["OPEN-SANDBOX-API-KEY"] = k
        hdrs.update(headers or {})
        r = http_request(self.port, method, "/v1" + path, body, hdrs, timeout)
        assert r.headers.get("X-Request-ID"), "no X-Request-ID on %r" % (r,)
        return r

    # -- shortcuts
    def create_raw(self, body, **kw):
        return self.call("POST", "/sandboxes", body, **kw)

    def create(self, image=BASE_IMAGE, entrypoint=("sleep", "infinity"), timeout=600,
               metadata=None, wait=True, **fields):
        """Create; by default wait until Running. Returns the sandbox id."""
        body = {"image": {"uri": image}, "entrypoint": list(entrypoint), "timeout": timeout,
                "resourceLimits": {"cpu": "250m", "memory": "128Mi"}}
        if metadata is not None:
            body["metadata"] = metadata
        body.update(fields)
        r = self.create_raw(body)
        assert r.status == 202, r
        check_sandbox(r.json, full=False)
        assert r.headers.get("Location") == "/v1/sandboxes/" + r.json["id"], r.headers
        if wait:
            self.wait_state(r.json["id"], "Running")
        return r.json["id"]

    def get(self, sid, **kw):
        return self.call("GET", "/sandboxes/" + sid, **kw)

    def list(self, query="", **kw):
        return self.call("GET", "/sandboxes" + (("?" + query) if query else ""), **kw)

    def delete(self, sid, **kw):
        return self.call("DELETE", "/sandboxes/" + sid, **kw)

    def pause(self, sid, **kw):
        return self.call("POST", "/sandboxes/%s/pause" % sid, **kw)

    def resume(self, sid, **kw):
        return self.call("POST", "/sandboxes/%s/resume" % sid, **kw)

    def renew(self, sid, expires_at, **kw):
        return self.call("POST", "/sandboxes/%s/renew-expiration" % sid,
                         {"expiresAt": expires_at}, **kw)

    def patch_metadata(self, sid, patch, content_type="application/merge-patch+json", **kw):
        return self.call("PATCH", "/sandboxes/%s/metadata" % sid, json.dumps(patch),
                         headers={"Content-Type": content_type}, **kw)

    def endpoint(self, sid, port, query="", **kw):
        return self.call("GET", "/sandboxes/%s/endpoints/%s%s" % (sid, port, query), **kw)

    def state(self, sid):
        r = self.get(sid)
        assert r.status == 200, r
        return r.json["status"]

    def wait_state(self, sid, want, timeout=PROVISION_TIMEOUT, seen=None):
        """Poll GET until status.state is `want` (a state or a tuple of
        states); fails early on Failed (unless wanted). Returns the sandbox."""
        wants = (want,) if isinstance(want, str) else tuple(want)

        def check():
            r = self.get(sid)
            assert r.status == 200, r
            st = r.json["status"]
            if seen is not None and (not seen or seen[-1] != st["state"]):
                seen.append(st["state"])
            assert st["state"] in wants or st["state"] != "Failed", \
                "sandbox %s failed: %r" % (sid, r)
            return r.json if st["state"] in wants else None
        return wait_until(check, timeout, 0.2, "sandbox %s %s" % (sid, "/".join(wants)))


def check_sandbox(sb, full=True):
    """The spec's Sandbox (GET/list) or CreateSandboxResponse (full=False)."""
    assert isinstance(sb, dict), sb
    for f in ("id", "status", "metadata", "entrypoint", "createdAt"):
        assert f in sb, "sandbox lacks %s: %r" % (f, sb)
    if full:
        assert isinstance(sb.get("image"), dict) and sb["image"].get("uri"), sb
    st = sb["status"]
    assert st["state"] in STATES, sb
    if "lastTransitionAt" in st:
        parse_iso_ms(st["lastTransitionAt"])
    parse_iso_ms(sb["createdAt"])
    if sb.get("expiresAt") is not None:
        assert parse_iso_ms(sb["expiresAt"]) > parse_iso_ms(sb["createdAt"]), sb
    assert isinstance(sb["metadata"], dict), sb
    assert isinstance(sb["entrypoint"], list) and sb["entrypoint"], sb
    return sb


def check_osb_error(resp, status, code=None):
    """The spec's ErrorResponse {code, message} with the given status."""
    return check_error(resp, status, code)


def metadata_query(md):
    """The spec's metadata filter: k=v pairs joined by &, each part
    url-encoded, the whole encoded once more as one query value (this is what
    the Python SDK sends)."""
    inner = "&".join("%s=%s" % (urllib.parse.quote(k, safe=""), urllib.parse.quote(v, safe=""))
                     for k, v in md.items())
    return "metadata=" + urllib.parse.quote(inner, safe="")


# ------------------------------------------------------------------- Docker

def container(b, sid):
    """The inspect JSON of the container behind sandbox sid of broker b, or
    None when there is none."""
    view = view_of(b)
    found = [c for c in view.list(prefix=b.prefix, sandbox_id=sid)
             if c.get("Labels", {}).get("io.sandbox-broker.sandbox-id") == sid]
    assert len(found) <= 1, found
    return view.inspect(found[0]["Id"]) if found else None


def wait_container_gone(b, sid, timeout=60):
    return wait_until(lambda: container(b, sid) is None, timeout, 0.2,
                      "container of %s removed" % sid)


# --------------------------------------------------------------------- SDKs

def python_sdk_python():
    """A python that can import opensandbox (the test venv's), installing
    the SDK with scripts/sdk-install when it is missing."""
    import sys
    py = sys.executable
    if _can_import(py):
        return py
    cp = subprocess.run([SDK_INSTALL, "python"], cwd=REPO, stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    out = cp.stdout.decode("utf-8", "replace")
    if cp.returncode != 0 or not _can_import(py):
        pytest.fail("the OpenSandbox Python SDK is not installed and scripts/sdk-install "
                    "could not install it:\n%s" % out[-3000:], pytrace=False)
    return py


def _can_import(py):
    cp = subprocess.run([py, "-c", "import opensandbox"], stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return cp.returncode == 0


def node_skip_reason():
    node = shutil.which("node")
    if not node:
        return "node is not on PATH (the TypeScript SDK test needs Node.js >= 20)"
    cp = subprocess.run([node, "-p", "process.versions.node"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, timeout=30)
    ver = cp.stdout.decode().strip()
    try:
        major = int(ver.split(".")[0])
    except ValueError:
        return "cannot tell the node version (%r)" % ver
    if major < 20:
        return "node %s is older than 20 (the TypeScript SDK needs Node.js >= 20)" % ver
    if not shutil.which("npm") and not os.path.exists(NODE_SDK):
        return "npm is not on PATH and the TypeScript SDK is not installed under %s" % NODE_PREFIX
    return None


def node_sdk_entry():
    """The TypeScript SDK's ESM entry under .cache/node, installing it with
    scripts/sdk-install when it is missing."""
    entry = os.path.join(NODE_SDK, "dist", "index.js")
    if not os.path.exists(entry):
        cp = subprocess.run([SDK_INSTALL, "node"], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        out = cp.stdout.decode("utf-8", "replace")
        if cp.returncode != 0 or not os.path.exists(entry):
            pytest.fail("the OpenSandbox TypeScript SDK is not installed and scripts/sdk-install "
                        "could not install it:\n%s" % out[-3000:], pytrace=False)
    return entry


class ScriptRun:
    """The outcome of one quickstart script: rc, steps (name -> the JSON
    object it printed), the raw output."""

    def __init__(self, cmd, rc, out, err):
        self.cmd = cmd
        self.rc = rc
        self.out = out
        self.err = err
        self.steps = {}
        self.order = []
        for line in out.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "step" in obj:
                self.steps[obj["step"]] = obj
                self.order.append(obj["step"])

    def failure(self):
        """The first step that printed an error, or None."""
        for name in self.order:
            if "error" in self.steps[name] and self.steps[name]["error"] is not None \
                    and not isinstance(self.steps[name]["error"], dict):
                return self.steps[name]
        return None

    def explain(self):
        return ("%s exited %s\n--- stdout ---\n%s\n--- stderr (tail) ---\n%s"
                % (" ".join(self.cmd), self.rc, self.out[-6000:], self.err[-4000:]))

    def step(self, name):
        f = self.failure()
        assert name in self.steps, "step %r never reported%s\n%s" % (
            name, "" if not f else "; failed at %r: %s (%s)" % (
                f["step"], f.get("error"), f.get("code")), self.explain())
        return self.steps[name]


def run_script(cmd, env, timeout=300):
    full_env = dict(os.environ)
    full_env.update(env)
    try:
        cp = subprocess.run(cmd, cwd=SDK_DIR, env=full_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err = (e.stderr or b"").decode("utf-8", "replace")
        raise AssertionError("%s did not finish in %ss\n%s\n%s" % (" ".join(cmd), timeout, out, err))
    return ScriptRun(cmd, cp.returncode, cp.stdout.decode("utf-8", "replace"),
                     cp.stderr.decode("utf-8", "replace"))


def check_quickstart(run, b, text, osb):
    """What the quickstart flow must show, the same for both SDKs."""
    create = run.step("create")
    sid = create["id"]
    assert isinstance(sid, str) and sid, create

    info = run.step("get_info")
    assert info["id"] == sid and info["state"] == "Running", info
    assert info["metadata"].get("suite", "").startswith("sdk-"), info
    assert info["entrypoint"] == ["sleep", "infinity"], info
    assert info["expires_at"], info

    run.step("write_file")

    r = run.step("run")
    assert r["exit_code"] == 0, r
    # one message per line, each with its newline (execd-api.yaml's example
    # event is "Hello, World!\n"): joined, they are the output as it was
    assert r["stdout"] == [l + "\n" for l in text.rstrip("\n").split("\n")] + ["greeting=hi\n"], r
    assert "".join(r["stdout"]) == text + "greeting=hi\n", r
    assert r["stderr"] == [], r
    assert r["error"] is None, r

    f = run.step("run_failing")
    assert f["exit_code"] == 3, f
    assert f["stdout"] == ["to-stdout\n"], f
    assert f["stderr"] == ["to-stderr\n"], f
    assert f["error"] is not None and f["error"]["value"] == "3", f

    rd = run.step("read_file")
    assert rd["content"] == text and rd["same"] is True, rd

    rn = run.step("renew")
    after = run.step("get_info_after_renew")
    assert after["state"] == "Running", after
    # renewed to ~30 min from now: later than the 5 min of the create
    assert _ms(rn["expires_at"]) > _ms(info["expires_at"]) + 20 * 60 * 1000, (rn, info)
    assert abs(_ms(after["expires_at"]) - _ms(rn["expires_at"])) <= 1000, (after, rn)

    run.step("kill")
    gone = run.step("get_info_after_kill")
    assert gone.get("state") in ("Stopping", "Terminated") or gone.get("status") == 404, gone
    run.step("done")
    assert run.rc == 0, run.explain()

    # the broker's view: the sandbox ends Terminated and its container is gone
    osb.wait_state(sid, "Terminated", timeout=60)
    wait_container_gone(b, sid)
    return sid


def _ms(iso):
    """ms since the epoch of an ISO 8601 time as either SDK prints it."""
    import datetime
    s = iso.replace("Z", "+00:00")
    dt = datetime.datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp() * 1000)
