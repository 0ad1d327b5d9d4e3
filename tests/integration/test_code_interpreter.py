"""The code interpreter of the execd contract (execd-api.yaml, CodeInterpreting: /code/context,
/code/contexts[/{id}], POST /code as SSE, DELETE /code?id=), served by the broker through the
agent to Jupyter kernels in the code-interpreter image (snapshots/code-interpreter/, built by
scripts/build-images), against real Docker sandboxes, through nginx and FastCGI:

- the official code-interpreter SDK (PyPI opensandbox-code-interpreter 1.1.1, unmodified, its
  README's entrypoint): its strict health check passes, state kept in a context (x = 40, then
  x + 2 -> 42), stdout/stderr, ZeroDivisionError with a traceback, a second context without x,
  an endless loop interrupted (the context lives on), the default context, list/get/delete;
- the raw events (init's execution id, timestamps, execution_count, result's mime bundle);
- a base-image sandbox answers 501 naming the image, at once (not the SDK's 30 s wait);
- another tenant (its own sandbox's token, or its API key) gets 404 for the first tenant's
  contexts, and cannot run or interrupt there, while the owner's runs go on;
- the sandbox is hostile: a kernel-runner replaced by one that prints forged frames, junk,
  an over-long line and an `init` of its own cannot break the SSE framing or add events of
  another type; 16 contexts is the bound (429), counted by live kernels (the other 15
  forged as live processes, as root in the sandbox can);
- bad input: languages the image lacks (400 naming python), bad ids, missing code (400);
- a context's resident bridge killed between runs (the next run restarts it, state intact) and
  mid-run (RunnerDied at once, the cell interrupted); its socket unreachable for non-root users.
"""

import json
import os
import subprocess
import threading
import time

import pytest

from sandboxlib import DOCKER, require_docker
from sdklib import KEY, OSB, SDK_DIR, python_sdk_python, run_script, start_osb_broker
from test_execd import execd_sandbox
from test_execd_session import stream

require_docker()

CI_IMAGE = "sandbox-broker/code-interpreter:latest"
BASE = "sandbox-broker/base:latest"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _image_present():
    if not DOCKER.image_exists(CI_IMAGE):
        cp = subprocess.run([os.path.join(REPO, "scripts", "build-images"), "code-interpreter"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        if cp.returncode != 0:
            pytest.fail("scripts/build-images code-interpreter failed:\n%s"
                        % cp.stdout.decode("utf-8", "replace")[-3000:], pytrace=False)


@pytest.fixture(scope="module")
def ci_broker(request, services, it_root):
    _image_present()
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=6, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, ci_broker):
    request.node._it_brokers = [ci_broker]


@pytest.fixture(scope="module")
def ci(ci_broker):
    return execd_sandbox(ci_broker, CI_IMAGE, tenant="alpha")


def ctx_create(ex, language="python"):
    st, _, body = ex.json("POST", "/code/context", {"language": language})
    assert st == 200, body
    assert set(body) == {"id", "language"} and body["language"] == language, body
    return body["id"]


def run(ex, code, ctx=None, language=None, on_event=None):
    body = {"code": code}
    if ctx or language:
        body["context"] = {k: v for k, v in (("id", ctx), ("language", language)) if v}
    st, events = stream(ex, "/code", body, timeout=120, on_event=on_event)
    assert st == 200, events
    assert events[0]["type"] == "init" and len(events[0]["text"]) == 32, events
    for e in events:
        assert isinstance(e.get("timestamp"), int) and e["timestamp"] > 1.6e12, e
    return events


def of(events, kind):
    return [e for e in events if e["type"] == kind]


# ------------------------------------------------------------------ the official SDK

def test_sdk_code_interpreter(ci_broker):
    py = python_sdk_python()
    r = run_script([py, os.path.join(SDK_DIR, "ci_flow.py")], {
        "QS_DOMAIN": "127.0.0.1:%d" % ci_broker.port, "QS_API_KEY": KEY["alpha"],
        "QS_IMAGE": CI_IMAGE}, timeout=400)
    assert r.rc == 0, r.explain()
    it = r.step("interpreter")
    assert it["healthy"] is True, r.explain()
    st = r.step("state")
    assert st["first"]["error"] is None and st["first"]["complete"], r.explain()
    assert st["second"]["results"] == ["42"] and st["second"]["error"] is None, r.explain()
    assert st["second"]["execution_count"] == 2, r.explain()
    p = r.step("print")
    assert p["stdout"] == "hello 40\n" and p["stderr"] == "warn\n", r.explain()
    e = r.step("error")
    assert e["error"]["name"] == "ZeroDivisionError" and e["error"]["value"] == "division by zero", \
        r.explain()
    assert any("1/0" in line for line in e["error"]["traceback"]), r.explain()
    assert not e["complete"], r.explain()
    s = r.step("second_context")
    assert s["context_id"] != r.step("context")["id"], r.explain()
    assert s["error"]["name"] == "NameError" and "'x'" in s["error"]["value"], r.explain()
    i = r.step("interrupt")
    assert i["loop"]["error"]["name"] == "KeyboardInterrupt", r.explain()
    assert i["after"]["results"] == ["80"], r.explain()   # x survived the interrupt
    assert i["ms"] < 60000, r.explain()
    d = r.step("default_context")
    assert d["results"] == ["42"], r.explain()
    c = r.step("contexts")
    ctx, ctx2 = r.step("context")["id"], s["context_id"]
    assert {ctx, ctx2, "default-python"} == set(c["listed"]), r.explain()
    assert c["got"] == {"id": ctx, "language": "python"}, r.explain()
    dl = r.step("delete")
    assert dl["gone"] == 404 or "404" in str(dl["gone"]), r.explain()
    assert dl["left"] == [], r.explain()
    r.step("kill")


# ------------------------------------------------------------------ raw events

def test_events_and_state(ci):
    cid = ctx_create(ci)
    ev = run(ci, "a = 6 * 7\nprint('line1')\nprint('line2')\na", ctx=cid)
    assert of(ev, "execution_count") == [of(ev, "execution_count")[0]], ev
    assert "".join(e["text"] for e in of(ev, "stdout")) == "line1\nline2\n", ev
    res = of(ev, "result")
    assert len(res) == 1 and res[0]["results"]["text/plain"] == "42", ev
    assert res[0]["results"]["text"] == "42", ev   # what the SDKs read
    assert ev[-1]["type"] == "execution_complete" and ev[-1]["execution_time"] >= 0, ev
    # rich output: a display_data's whole mime bundle
    ev = run(ci, "from IPython.display import HTML, display\ndisplay(HTML('<b>hi</b>'))", ctx=cid)
    assert of(ev, "result")[0]["results"]["text/html"] == "<b>hi</b>", ev
    # an error ends the run, with no execution_complete
    ev = run(ci, "raise ValueError('nope')", ctx=cid)
    err = of(ev, "error")
    assert len(err) == 1 and err[0]["error"]["ename"] == "ValueError", ev
    assert err[0]["error"]["evalue"] == "nope" and err[0]["error"]["traceback"], ev
    assert not of(ev, "execution_complete") and ev[-1]["type"] == "error", ev
    # the context is as the kernel left it; get and delete
    st, _, body = ci.json("GET", "/code/contexts/%s" % cid)
    assert st == 200 and body == {"id": cid, "language": "python"}, body
    st, _, _ = ci.request("DELETE", "/code/contexts/%s" % cid)
    assert st == 200
    st, _, body = ci.json("GET", "/code/contexts/%s" % cid)
    assert st == 404 and body["code"] == "NOT_FOUND", body
    st, _, body = ci.json("DELETE", "/code/contexts/%s" % cid)
    assert st == 404, body
    st, body = stream(ci, "/code", {"code": "1", "context": {"id": cid, "language": "python"}})
    assert st == 404 and cid in body["message"], body


def test_bad_input(ci):
    st, _, body = ci.json("POST", "/code/context", {"language": "ruby"})
    assert st == 400 and "python" in body["message"] and "ruby" in body["message"], body
    for bad in ({"language": 5}, {"language": "../x"}, {"language": "a" * 33}):
        st, _, body = ci.json("POST", "/code/context", bad)
        assert st == 400, (bad, body)
    for bad in ({}, {"code": ""}, {"code": 5}, {"code": "1", "context": "x"},
                {"code": "1", "context": {"id": "../../etc"}}, {"code": "1", "context": {"language": "go"}}):
        st, body = stream(ci, "/code", bad)
        assert st == 400, (bad, body)
    st, _, body = ci.json("GET", "/code/contexts/..%2f..%2fetc")
    assert st in (400, 404), body
    st, _, body = ci.json("DELETE", "/code/contexts")   # no language
    assert st == 400 and "language" in body["message"], body
    st, _, body = ci.json("DELETE", "/code")             # no id
    assert st == 400, body
    st, _, body = ci.json("DELETE", "/code?id=" + "f" * 32)
    assert st == 404, body
    # a body over MAX_BODY_BYTES (16 KiB by default) is refused before the sandbox sees it
    st, body = stream(ci, "/code", {"code": "x = 1\n" * 5000})
    assert st == 413, body


def test_interrupt_raw_and_timeout_bound_is_not_hit(ci):
    cid = ctx_create(ci)
    run(ci, "n = 1", ctx=cid)
    got = {}

    def on_event(e):
        if e["type"] == "init":
            got["id"] = e["text"]
            threading.Timer(1.0, lambda: got.setdefault(
                "st", ci.request("DELETE", "/code?id=%s" % e["text"])[0])).start()

    t0 = time.monotonic()
    ev = run(ci, "import time\nwhile True: time.sleep(0.01)", ctx=cid, on_event=on_event)
    assert time.monotonic() - t0 < 60, ev
    assert got.get("st") == 200, got
    assert of(ev, "error")[0]["error"]["ename"] == "KeyboardInterrupt", ev
    ev = run(ci, "n + 1", ctx=cid)
    assert of(ev, "result")[0]["results"]["text/plain"] == "2", ev
    # the execution is over: interrupting it again is 404
    st, _, _ = ci.request("DELETE", "/code?id=%s" % got["id"])
    assert st == 404


def test_client_gone_interrupts_the_cell(ci):
    """A client that hangs up mid-run: the broker kills the run's runner and interrupts the cell,
    so the context is free again (without the interrupt the next run would queue behind the
    endless loop forever)."""
    import http.client
    cid = ctx_create(ci)
    run(ci, "m = 5", ctx=cid)
    c = http.client.HTTPConnection("127.0.0.1", ci.port, timeout=60)
    c.request("POST", ci.url("/code"), body=json.dumps({"code": "while True: pass",
                                                         "context": {"id": cid}}),
              headers={"X-EXECD-ACCESS-TOKEN": ci.token, "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    buf = b""
    while b"\n\n" not in buf:
        buf += r.read1(4096)
    assert b'"init"' in buf, buf
    time.sleep(1.0)
    c.sock.shutdown(2)   # gone, mid-run
    c.close()
    t0 = time.monotonic()

    def deadline(e):   # pings keep a queued run's stream alive: give up on our own
        assert time.monotonic() - t0 < 90, "the next run waited behind the abandoned cell"

    ev = run(ci, "m + 1", ctx=cid, on_event=deadline)   # the broker sees the hang-up at a ping (3 s)
    assert of(ev, "result")[0]["results"]["text/plain"] == "6", ev


def sh(ex, cmd):
    """A command as root in the sandbox (its stdout)."""
    st, _, events = ex.command_stream({"command": cmd})
    assert st == 200 and events[-1]["type"] == "execution_complete", (cmd, events)
    return "".join(e.get("text", "") for e in events if e["type"] == "stdout")


def test_killed_bridge_and_root_only_socket(ci):
    """A context's resident bridge (kernel-runner bridge, the process that keeps the kernel's
    connection between runs) is the sandbox's to kill: killed between runs, the next run_code
    starts a new one and the context's state is intact; killed mid-run, that run ends at once
    with a RunnerDied error (never hangs), its cell interrupted, and the next run works. Its
    socket is root's only: a non-root user in the sandbox (nobody: this image has no seats)
    cannot connect to it."""
    cid = ctx_create(ci)
    run(ci, "y = 10", ctx=cid)
    d = "/var/lib/code-interpreter/ctx/%s" % cid
    assert sh(ci, "stat -c '%%a %%U' /var/lib/code-interpreter %s/bridge.sock" % d).split() == \
        ["700", "root", "600", "root"]
    pid1 = sh(ci, "cat %s/bridge.pid" % d).strip()
    assert pid1.isdigit(), pid1
    sh(ci, "kill -9 %s" % pid1)
    ev = run(ci, "y + 1", ctx=cid)
    assert of(ev, "result")[0]["results"]["text/plain"] == "11", ev
    pid2 = sh(ci, "cat %s/bridge.pid" % d).strip()
    assert pid2.isdigit() and pid2 != pid1, (pid1, pid2)

    def on_event(e):   # killed one second into a 60 s cell
        if e["type"] == "init":
            threading.Timer(1.0, lambda: sh(ci, "kill -9 $(cat %s/bridge.pid)" % d)).start()

    t0 = time.monotonic()
    ev = run(ci, "import time\ntime.sleep(60)\ny = 0", ctx=cid, on_event=on_event)
    assert time.monotonic() - t0 < 45, ev
    err = of(ev, "error")
    assert len(err) == 1 and err[0]["error"]["ename"] == "RunnerDied", ev
    assert ev[-1]["type"] == "error", ev
    t0 = time.monotonic()
    ev = run(ci, "y + 2", ctx=cid)   # the sleep was interrupted: y is still 10, and no wait
    assert of(ev, "result")[0]["results"]["text/plain"] == "12", ev
    assert time.monotonic() - t0 < 45, ev
    out = sh(ci, "python3 -c \"import os, socket\n"
                 "os.setgid(65534); os.setgroups([]); os.setuid(65534)\n"
                 "s = socket.socket(socket.AF_UNIX)\n"
                 "try:\n    s.connect('%s/bridge.sock'); print('CONNECTED')\n"
                 "except OSError as e:\n    print('refused', e.errno)\n\"" % d)
    assert out.strip() == "refused 13", out   # EACCES: the 0700 directory
    pid3 = sh(ci, "cat %s/bridge.pid" % d).strip()
    assert pid3.isdigit() and pid3 not in (pid1, pid2), (pid1, pid2, pid3)
    st, _, _ = ci.request("DELETE", "/code/contexts/%s" % cid)
    assert st == 200
    time.sleep(0.5)
    out = sh(ci, "p=$(cut -d' ' -f3 /proc/%s/stat 2>/dev/null); echo \"${p:-gone}\"" % pid3)
    assert out.strip() in ("gone", "Z"), out   # the bridge went with its kernel (a zombie at most)


# ------------------------------------------------------------------ images without it

def test_base_image_answers_at_once(ci_broker):
    ex = execd_sandbox(ci_broker, BASE, tenant="bravo")
    for method, path, body in (("POST", "/code/context", {"language": "python"}),
                               ("GET", "/code/contexts?language=python", None),
                               ("GET", "/code/contexts/abc", None),
                               ("DELETE", "/code?id=abc", None)):
        t0 = time.monotonic()
        st, _, res = ex.json(method, path, body)
        assert st == 501 and res["code"] == "NOT_IMPLEMENTED", (path, res)
        assert "code-interpreter" in res["message"], res
        assert time.monotonic() - t0 < 20, path   # generous: an exec, never the SDK's 30 s
    st, res = stream(ex, "/code", {"code": "1"})
    assert st == 501 and "has no code interpreter" in res["message"], res


# ------------------------------------------------------------------ tenants

def test_other_tenant_cannot_reach_contexts(ci_broker, ci):
    cid = ctx_create(ci)
    run(ci, "secret = 'alpha-only'", ctx=cid)
    other = execd_sandbox(ci_broker, BASE, tenant="charlie")
    done = {}

    def owner_runs():   # the owner's run goes on during the attack
        done["ev"] = run(ci, "import time; time.sleep(2); secret", ctx=cid)

    t = threading.Thread(target=owner_runs)
    t.start()
    calls = (("GET", "/code/contexts/%s" % cid, None), ("DELETE", "/code/contexts/%s" % cid, None),
             ("GET", "/code/contexts?language=python", None),
             ("DELETE", "/code/contexts?language=python", None),
             ("POST", "/code/context", {"language": "python"}), ("DELETE", "/code?id=" + "a" * 32, None))
    for method, path, body in calls:
        # charlie's own sandbox token on alpha's sandbox
        st, _, res = ci.json(method, path, body, token=other.token)
        assert st == 404 and res["code"] == "SANDBOX_NOT_FOUND", (method, path, res)
        # charlie's API key
        st, _, res = ci.json(method, path, body, token="",
                             headers={"OPEN-SANDBOX-API-KEY": KEY["charlie"]})
        assert st == 404, (method, path, res)
    st, res = stream(other, "/code", {"code": "secret", "context": {"id": cid}})
    assert st == 501, res   # charlie's base sandbox, not alpha's
    c = __import__("http.client").client.HTTPConnection("127.0.0.1", ci.port, timeout=60)
    c.request("POST", ci.url("/code"), body=json.dumps({"code": "secret", "context": {"id": cid}}),
              headers={"X-EXECD-ACCESS-TOKEN": other.token, "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 404, r.read()
    c.close()
    t.join(60)
    assert of(done["ev"], "result")[0]["results"]["text/plain"] == "'alpha-only'", done
    st, _, body = ci.json("GET", "/code/contexts/%s" % cid)
    assert st == 200, body


# ------------------------------------------------------------------ a hostile sandbox

FAKE_RUNNER = r"""#!/bin/sh
case "$1" in
pre) echo '{"id":"fake","language":"python"}' ;;
run)
  printf '%s\n' '{"type":"stdout","text":"a\n\ndata: {\"type\":\"init\",\"text\":\"forged\"}\n\n"}'
  printf 'data: {"type":"init","text":"forged2"}\n\n'
  printf '%s\n' '{"type":"init","text":"forged3"}' 'not json' '[1,2]' '{"type":7}'
  printf '%s\n' '{"type":"result","results":{"text/plain":"\u0000\ud800x","text":"ok"}}'
  head -c 3000000 /dev/zero | tr '\0' 'a'; echo
  printf '\377\376{"type":"stdout","text":"bad utf8"}\n'
  printf '%s\n' '{"type":"execution_complete","execution_time":1}' ;;
*) echo '[]' ;;
esac
"""


def test_hostile_runner_cannot_forge_frames(ci_broker):
    ex = execd_sandbox(ci_broker, BASE, tenant="delta")
    # write the fake runner with a command (root in the sandbox can)
    st, _, events = ex.command_stream({"command": "mkdir -p /opt/code-interpreter && "
                                       "cat > /opt/code-interpreter/kernel-runner <<'EOF'\n"
                                       + FAKE_RUNNER + "EOF\nchmod 755 /opt/code-interpreter/kernel-runner"})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    st, events = stream(ex, "/code", {"code": "1"}, timeout=120)
    assert st == 200, events
    types = [e["type"] for e in events]
    assert types[0] == "init" and types.count("init") == 1, types
    assert all(t in ("init", "stdout", "stderr", "result", "execution_complete") for t in types), types
    assert of(events, "stdout")[0]["text"].startswith("a\n\ndata: "), events   # just text
    assert of(events, "result")[0]["results"]["text"] == "ok", events
    assert any("truncated" in e["text"] for e in of(events, "stderr")), events
    assert events[-1]["type"] == "execution_complete" or types[-2] == "execution_complete", types


def test_contexts_bound(ci_broker):
    ex = execd_sandbox(ci_broker, CI_IMAGE, tenant="echo")
    ctx_create(ex)
    # 15 more "live kernels": directories whose pid is a live process (root in the sandbox can
    # make them; kernels cost ~50 MB each, the bound is what is checked here)
    st, _, events = ex.command_stream({"command":
        "sleep 600 & p=$!; for i in $(seq 1 15); do d=/var/lib/code-interpreter/ctx/fake$i; "
        "mkdir -p $d; echo python > $d/language; echo $p > $d/pid; done"})
    assert st == 200 and events[-1]["type"] == "execution_complete", events
    st, _, body = ex.json("GET", "/code/contexts")
    assert st == 200 and len(body) == 16, body
    st, _, body = ex.json("POST", "/code/context", {"language": "python"})
    assert st == 429 and body["code"] == "TOO_MANY_REQUESTS" and "16" in body["message"], body
    st, body = stream(ex, "/code", {"code": "1"})   # the default context would be the 17th
    assert st == 429, body
    st, _, _ = ex.request("DELETE", "/code/contexts?language=python")
    assert st == 200
    st, _, body = ex.json("GET", "/code/contexts")
    assert st == 200 and body == [], body
    ctx_create(ex)


def test_zz_no_sanitizer_reports(ci_broker):
    """Last of the module: under SANITIZER= (BROKER_BUILD_DIR=build-asan) no handler reported
    anything while serving the above (a report aborts the process: its requests would have
    failed too, but the report says where)."""
    logdir = os.path.join(ci_broker.state_dir, "logs")
    for name in sorted(os.listdir(logdir)):
        with open(os.path.join(logdir, name), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        assert "AddressSanitizer" not in text and "runtime error:" not in text, (name, text[-4000:])
