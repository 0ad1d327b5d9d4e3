"""A test double of Daytona: the subset of its control-plane API and toolbox
API that lib/providers/daytona/daytona.c calls, on 127.0.0.1, for the integration tests. A test
fixture; it never ships in the product.

- Every request is validated against Daytona's OpenAPI documents with
  openapi-core (a maintained validator from PyPI), security (the bearer
  header) included. The documents are `api/openapi.yaml` of the Go modules
  github.com/daytonaio/daytona/libs/api-client-go and
  .../libs/toolbox-api-client-go (Apache-2.0) at a pinned version, fetched
  and sha256-checked into .cache/daytona-specs/ by scripts/daytona-specs
  (run by scripts/deps-install); DAYTONA_SPEC_DIR points elsewhere. A
  request that does not match is answered 400 and recorded in `violations`;
  tests assert there are none. The documents are used as they are, except
  their `servers`, which are pointed at this double in memory.
- Sandboxes are real Docker containers (docker CLI, `--network none`), one
  per Daytona sandbox, of the image the snapshot name maps to; the toolbox
  runs commands in them with `docker exec` (as root, like a Daytona sandbox
  created with user "root"). The state machine (creating -> started,
  stopping -> stopped, ...) runs in the background so the provider's polls
  see transitions.
- Faults: POST /__control {"fail": OP, "status": 401, "times": 1,
  "delay_ms": 0, "malformed": false, "retry_after": null} makes the next
  `times` requests of OP (create, get, list, start, stop, pause, delete,
  execute, upload, download, delete_file, any) fail that way; {"state":
  "error", "reason": "..."} makes new sandboxes end in that state instead
  of `started`. GET /__control returns {"violations", "requests"}.

Usage: d = Double(api_key, snapshots={"snap": "docker/image"}); d.start();
d.url ("http://127.0.0.1:PORT/api"); d.close().
"""

import json
import os
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import yaml
from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from werkzeug.datastructures import Headers, ImmutableMultiDict
from werkzeug.formparser import parse_form_data

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SPEC_DIR = os.environ.get("DAYTONA_SPEC_DIR", os.path.join(ROOT, ".cache", "daytona-specs"))
API_HOST = "http://daytona-api"
TOOLBOX_HOST = "http://daytona-toolbox"
CONTAINER_LABEL = "io.sandbox-broker.daytona-double"


def _load(name, server):
    path = os.path.join(SPEC_DIR, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path}: the Daytona OpenAPI specs are not fetched; run scripts/daytona-specs "
            "(scripts/deps-install runs it)")
    with open(path) as f:
        spec = yaml.safe_load(f)
    spec["servers"] = [{"url": server}]
    return OpenAPI.from_dict(spec)


class _Req:
    """openapi-core's Request protocol over one HTTP request."""

    def __init__(self, host_url, path, method, query, headers, body, content_type):
        self.host_url = host_url
        self.path = path
        self.method = method.lower()
        self.parameters = RequestParameters(
            query=ImmutableMultiDict(query), header=Headers(headers), cookie=ImmutableMultiDict())
        self.body = body if body else None
        # The media type is case-insensitive, a multipart boundary is not.
        ct = content_type or ""
        mt, sep, params = ct.partition(";")
        self.content_type = mt.strip().lower() + (sep + params if sep else "")

    @property
    def full_url_pattern(self):
        return self.host_url + self.path


def docker(*args, input=None, timeout=60):
    return subprocess.run(["docker", *args], input=input, capture_output=True, timeout=timeout)


class Double:
    def __init__(self, api_key, snapshots, org_id=None):
        self.api_key = api_key
        self.org_id = org_id
        self.snapshots = dict(snapshots)
        self.token = uuid.uuid4().hex[:12]
        self.api_spec = _load("api-openapi.yaml", API_HOST)
        self.toolbox_spec = _load("toolbox-openapi.yaml", TOOLBOX_HOST)
        self.lock = threading.RLock()
        self.sandboxes = {}
        self.violations = []
        self.requests = []
        self.faults = []
        self.end_state = None  # ("error", reason) for new sandboxes
        self.server = None
        self.port = None

    # ---- lifecycle ----
    def start(self):
        double = self

        class Handler(_Handler):
            pass

        Handler.double = double
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return "http://127.0.0.1:%d/api" % self.port

    def close(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        out = docker("ps", "-aq", "--filter", "label=%s=%s" % (CONTAINER_LABEL, self.token))
        ids = out.stdout.decode().split()
        if ids:
            docker("rm", "-f", *ids)

    # ---- faults ----
    def fault_for(self, op):
        with self.lock:
            for f in self.faults:
                if f["fail"] in (op, "any") and f["times"] > 0:
                    f["times"] -= 1
                    return dict(f)
        return None

    # ---- sandbox state ----
    def public(self, s):
        return {
            "id": s["id"], "organizationId": self.org_id or "org-double", "name": s["name"],
            "snapshot": s["snapshot"], "user": s["user"], "env": s["env"], "labels": s["labels"],
            "public": False, "networkBlockAll": s["networkBlockAll"], "target": s["target"],
            "cpu": 1, "gpu": 0, "memory": 1, "disk": 3, "state": s["state"],
            "errorReason": s.get("errorReason") or None,
            "autoStopInterval": s["autoStopInterval"], "autoDeleteInterval": s["autoDeleteInterval"],
            "toolboxProxyUrl": "http://127.0.0.1:%d/toolbox" % self.port,
        }

    def find(self, id_or_name):
        with self.lock:
            s = self.sandboxes.get(id_or_name)
            if s is None:
                s = next((x for x in self.sandboxes.values() if x["name"] == id_or_name), None)
            return s

    def _later(self, fn, delay=0.15):
        def run():
            time.sleep(delay)
            fn()
        threading.Thread(target=run, daemon=True).start()

    def create(self, body):
        name = body.get("name") or None
        with self.lock:
            if name and any(x["name"] == name for x in self.sandboxes.values()):
                return 409, {"statusCode": 409, "message": "Sandbox with name %s already exists" % name}
            sid = str(uuid.uuid4())
            s = {
                "id": sid, "name": name or sid, "snapshot": body.get("snapshot", ""),
                "user": body.get("user", "daytona"), "env": body.get("env", {}),
                "labels": body.get("labels", {}), "networkBlockAll": bool(body.get("networkBlockAll")),
                "target": body.get("target", "us"), "state": "creating",
                "autoStopInterval": body.get("autoStopInterval", 15),
                "autoDeleteInterval": body.get("autoDeleteInterval", -1),
                "container": "dtd-%s-%s" % (self.token, sid[:8]),
            }
            self.sandboxes[sid] = s
            end = self.end_state

        def provision():
            if end:
                s["state"], s["errorReason"] = end
                return
            image = self.snapshots.get(s["snapshot"])
            if not image:
                s["state"], s["errorReason"] = "error", "snapshot %s not found" % s["snapshot"]
                return
            args = ["run", "-d", "--name", s["container"], "--label",
                    "%s=%s" % (CONTAINER_LABEL, self.token), "--hostname", "localhost"]
            if s["networkBlockAll"]:
                args += ["--network", "none"]
            for k, v in s["env"].items():
                args += ["-e", "%s=%s" % (k, v)]
            r = docker(*args, image, "sleep", "infinity")
            if r.returncode != 0:
                s["state"], s["errorReason"] = "error", r.stderr.decode()[:200]
            else:
                s["state"] = "started"

        self._later(provision)
        return 200, self.public(s)

    def transition(self, s, op):
        st = s["state"]
        if op == "start":
            if st == "started":
                return 200, self.public(s)
            if st not in ("stopped", "paused", "archived"):
                return 409, {"statusCode": 409, "message": "Sandbox is %s" % st}
            cmd = "unpause" if st == "paused" else "start"
            s["state"] = "starting"
            self._later(lambda: s.update(state="started" if docker(cmd, s["container"]).returncode == 0
                                         else "error"))
        elif op == "stop":
            if st not in ("started", "paused"):
                return 409, {"statusCode": 409, "message": "Sandbox is %s" % st}
            s["state"] = "stopping"
            self._later(lambda: (docker("stop", "-t", "1", s["container"]), s.update(state="stopped")))
        elif op == "pause":
            if st != "started":
                return 409, {"statusCode": 409, "message": "Sandbox is %s" % st}
            s["state"] = "pausing"
            self._later(lambda: (docker("pause", s["container"]), s.update(state="paused")))
        return 200, self.public(s)

    def delete(self, s):
        with self.lock:
            self.sandboxes.pop(s["id"], None)
        docker("rm", "-f", s["container"])
        s["state"] = "destroyed"
        return 200, self.public(s)

    def list(self, query):
        want = json.loads(query.get("labels", "{}") or "{}")
        limit = int(float(query.get("limit", 100)))
        start = int(query.get("cursor") or 0)
        with self.lock:
            items = [self.public(s) for s in self.sandboxes.values()
                     if all(s["labels"].get(k) == v for k, v in want.items())]
        page = items[start:start + limit]
        nxt = str(start + limit) if start + limit < len(items) else None
        return 200, {"items": page, "nextCursor": nxt}

    # ---- toolbox ----
    def execute(self, s, body):
        if s["state"] != "started":
            return 400, {"error": "sandbox is not running"}
        args = ["exec"]
        if body.get("cwd"):
            args += ["-w", body["cwd"]]
        for k, v in (body.get("envs") or {}).items():
            args += ["-e", "%s=%s" % (k, v)]
        timeout = body.get("timeout") or 10
        try:
            r = subprocess.run(["docker", *args, s["container"], "sh", "-c", body["command"]],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return 408, {"error": "command execution timeout"}
        # Daytona answers stdout and stderr combined, as text.
        return 200, {"exitCode": r.returncode, "result": r.stdout.decode("utf-8", "replace")}

    def upload(self, s, path, data):
        r = docker("exec", "-i", s["container"], "sh", "-c", 'cat > "$1"', "sh", path, input=data)
        if r.returncode != 0:
            return 400, {"error": r.stderr.decode()[:200]}
        return 200, {}

    def delete_file(self, s, path):
        r = docker("exec", s["container"], "rm", "-rf", "--", path)
        return (204, None) if r.returncode == 0 else (400, {"error": r.stderr.decode()[:200]})


class _Handler(BaseHTTPRequestHandler):
    double = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, obj, raw=None, headers=None):
        body = raw if raw is not None else (b"" if obj is None else json.dumps(obj).encode())
        self.send_response(status)
        if body or status != 204:
            self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_DELETE(self):
        self._handle("DELETE")

    def _handle(self, method):
        d = self.double
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        u = urlsplit(self.path)
        query = parse_qsl(u.query, keep_blank_values=True)
        q = dict(query)
        if u.path == "/__control":
            return self._control(method, body)
        with d.lock:
            d.requests.append({"method": method, "path": u.path, "query": q,
                               "org": self.headers.get("X-Daytona-Organization-ID"),
                               "auth": (self.headers.get("Authorization") or "")[:7]})
        parts = u.path.strip("/").split("/")
        if parts[0] == "api":
            spec, host, rel, sbx = d.api_spec, API_HOST, "/" + "/".join(parts[1:]), None
        elif parts[0] == "toolbox" and len(parts) >= 3:
            spec, host, rel, sbx = d.toolbox_spec, TOOLBOX_HOST, "/" + "/".join(parts[2:]), parts[1]
        else:
            return self._send(404, {"message": "no route"})
        req = _Req(host, rel, method, query, list(self.headers.items()), body,
                   self.headers.get("Content-Type"))
        try:
            spec.validate_request(req)
        except Exception as e:  # every validation error is a violation
            detail = "%s: %s" % (type(e).__name__, e)
            cause = getattr(e, "__cause__", None)
            if cause is not None:
                detail += " (%s)" % cause
            with d.lock:
                d.violations.append({"method": method, "path": u.path, "error": detail[:500]})
            return self._send(400, {"statusCode": 400, "message": "spec violation: " + detail[:200]})
        if self.headers.get("Authorization") != "Bearer " + d.api_key:
            return self._send(401, {"statusCode": 401, "message": "Unauthorized"})
        if d.org_id and self.headers.get("X-Daytona-Organization-ID") != d.org_id:
            return self._send(403, {"statusCode": 403, "message": "Forbidden: organization"})
        op = self._op(method, parts[0], rel)
        f = d.fault_for(op)
        if f:
            if f.get("delay_ms"):
                time.sleep(f["delay_ms"] / 1000.0)
            if f.get("malformed"):
                return self._send(200, None, raw=b'{"id": "broken", "state": ')
            if f.get("status"):
                hdrs = {}
                if f.get("retry_after") is not None:
                    hdrs["Retry-After"] = str(f["retry_after"])
                return self._send(f["status"], {"statusCode": f["status"],
                                                "message": "injected %d" % f["status"]}, headers=hdrs)
        try:
            status, obj, raw = self._route(method, parts[0], rel, q, body, sbx)
        except Exception as e:
            return self._send(500, {"statusCode": 500, "message": "double: %s" % e})
        return self._send(status, obj, raw=raw)

    @staticmethod
    def _op(method, kind, rel):
        p = rel.strip("/").split("/")
        if kind == "toolbox":
            return {"/process/execute": "execute", "/files/upload": "upload",
                    "/files/download": "download"}.get(rel, "delete_file" if method == "DELETE" else rel)
        if p == ["sandbox"]:
            return "create" if method == "POST" else "list"
        if len(p) == 2:
            return "delete" if method == "DELETE" else "get"
        return p[2] if len(p) == 3 else rel

    def _route(self, method, kind, rel, q, body, sbx):
        d = self.double
        p = rel.strip("/").split("/")
        if kind == "api":
            if p == ["sandbox"] and method == "POST":
                return (*d.create(json.loads(body)), None)
            if p == ["sandbox"]:
                return (*d.list(q), None)
            s = d.find(p[1])
            if s is None:
                return 404, {"statusCode": 404, "message": "Sandbox %s not found" % p[1]}, None
            if len(p) == 2 and method == "GET":
                return 200, d.public(s), None
            if len(p) == 2 and method == "DELETE":
                return (*d.delete(s), None)
            if len(p) == 3 and p[2] in ("start", "stop", "pause"):
                return (*d.transition(s, p[2]), None)
            if len(p) == 3 and p[2] == "toolbox-proxy-url":
                return 200, {"url": "http://127.0.0.1:%d/toolbox" % d.port}, None
            return 404, {"message": "not in the double"}, None
        s = d.find(sbx)
        if s is None:
            return 404, {"error": "sandbox not found"}, None
        if rel == "/process/execute":
            return (*d.execute(s, json.loads(body)), None)
        if rel == "/files/upload":
            env = {"wsgi.input": __import__("io").BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                   "CONTENT_TYPE": self.headers.get("Content-Type"), "REQUEST_METHOD": "POST"}
            _, _, files = parse_form_data(env)
            return (*d.upload(s, q["path"], files["file"].read()), None)
        if rel == "/files" and method == "DELETE":
            return (*d.delete_file(s, q["path"]), None)
        if rel == "/files/download":
            r = docker("exec", s["container"], "cat", "--", q["path"])
            if r.returncode != 0:
                return 404, {"error": "file not found"}, None
            return 200, None, r.stdout
        return 404, {"error": "not in the double"}, None

    def _control(self, method, body):
        d = self.double
        if method == "GET":
            with d.lock:
                return self._send(200, {"violations": d.violations, "requests": d.requests})
        c = json.loads(body or b"{}")
        with d.lock:
            if c.get("reset"):
                d.faults.clear()
                d.end_state = None
            if "state" in c:
                d.end_state = (c["state"], c.get("reason", "")) if c["state"] else None
            if c.get("fail"):
                c.setdefault("times", 1)
                d.faults.append(c)
        return self._send(200, {"ok": True})


if __name__ == "__main__":  # manual use: python double.py KEY snapshot=image ...
    import sys
    dbl = Double(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])).start()
    print(dbl.url, flush=True)
    try:
        threading.Event().wait()
    finally:
        dbl.close()
