"""The OpenCode plugin (@sandbox-broker/opencode, plugins/opencode) with the
real OpenCode (npm `opencode-ai`, run headless by `opencode serve`), a
scripted local model, and the real broker stack with Docker sandboxes.

- test_opencode_tools_run_in_sandbox: one session's write, bash, edit, read,
  grep and glob run in its sandbox: the files are in the container and not on
  the host; the outputs look like the built-ins'; deleting the session
  releases its lease (reason deleted) and removes the container.
- test_opencode_capacity_queue_idle_release: capacity 2, three sessions: the
  third's tool call waits in the queue (its result records the queue position) and
  completes after an idle release frees a slot; session deletion releases
  with reason deleted.

scripts/opencode-install (run by scripts/deps-install, and by these tests)
installs OpenCode and builds the plugin; without it these tests fail.
"""

import io
import os
import sys
import tarfile
import threading
import urllib.parse

import pytest

from brokerlib import wait_until
from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "opencode"))
from runner import OpenCode, ensure_installed  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402

require_docker()


@pytest.fixture(scope="module", autouse=True)
def installed():
    ensure_installed()


@pytest.fixture
def model():
    m = ScriptedModel().start()
    yield m
    m.stop()


@pytest.fixture
def opencode(request, tmp_path, model):
    """Factory: opencode(broker, **plugin env) -> a started OpenCode (one at a time)."""
    made = []

    def factory(broker, **env):
        plugin_env = {"SANDBOX_BROKER_URL": "http://127.0.0.1:%d" % broker.port,
                      "SANDBOX_BROKER_API_KEY": broker.api_key,
                      "SANDBOX_BROKER_POLL_MS": "200"}
        plugin_env.update({("SANDBOX_BROKER_" + k if not k.startswith("SANDBOX_") else k): str(v)
                           for k, v in env.items()})
        oc = OpenCode(str(tmp_path / ("oc%d" % len(made))), model, plugin_env).setup()
        made.append(oc)
        oc.start()
        return oc
    yield factory
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for oc in made:
        if failed:
            print("\n--- opencode log %s ---\n%s" % (oc.log_path, oc.log_tail(150)))
        oc.stop()


def container_file(sandbox_id, path):
    """A file's bytes read from the container by the Docker Engine API (archive), None if missing."""
    st, body = DOCKER.call("GET", "/containers/sb-%s/archive?path=%s"
                           % (sandbox_id, urllib.parse.quote(path)))
    if st == 404:
        return None
    assert st == 200, (st, body)
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        m = t.getmembers()[0]
        return t.extractfile(m).read()


def tools_by_name(oc, sid):
    parts = oc.tool_parts(sid)
    return [(p["tool"], p["state"]) for p in parts]


def completed(state):
    assert state["status"] == "completed", state
    return state


# --------------------------------------------------------------- end to end

def test_opencode_tools_run_in_sandbox(docker_broker, opencode, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    model.script("e2e", [
        [("write", {"filePath": "notes/hello.txt", "content": "hello from opencode\nsecond line\n"})],
        [("bash", {"command": "cat notes/hello.txt; pwd; id -un; echo oops >&2; exit 3",
                   "description": "Show the file"})],
        [("edit", {"filePath": "notes/hello.txt", "oldString": "hello from", "newString": "goodbye from"})],
        [("read", {"filePath": "notes/hello.txt"})],
        [("grep", {"pattern": "goodbye", "include": "*.txt"})],
        [("glob", {"pattern": "**/*.txt"})],
        [("bash", {"command": "printf 'print(1)\\n' > patched.py; sed -i s/second/third/ notes/hello.txt"})],
        [("read", {"filePath": "missing.txt"})],
        [("bash", {"command": "sleep 5", "timeout": 500})],
        "All done.",
    ])
    oc = opencode(sb.b, IDLE_RELEASE_MS="-1")
    sid = oc.session()
    oc.prompt(sid, "SCRIPT:e2e please work in the sandbox")

    tools = tools_by_name(oc, sid)
    assert [t for t, _ in tools] == ["write", "bash", "edit", "read", "grep", "glob", "bash",
                                     "read", "bash"], tools
    w, b, e, r, g, gl, ap, miss, slow = [s for _, s in tools]
    sandbox_id = completed(w)["metadata"]["sandboxId"]
    assert completed(w)["output"] == "Wrote file successfully."

    # bash: combined output, the sandbox's workdir and user, the exit code
    out = completed(b)["output"]
    assert out.startswith("hello from opencode\nsecond line\n/workspace\nroot\n"), out
    assert "oops" in out, out
    assert b["metadata"]["exit"] == 3, b["metadata"]
    assert b["title"] == "Show the file"
    assert completed(e)["output"] == "Edit applied successfully."
    out = completed(r)["output"]
    assert out == ("<path>/workspace/notes/hello.txt</path>\n<type>file</type>\n<content>\n"
                   "1: goodbye from opencode\n2: second line\n\n(End of file - total 2 lines)\n</content>"), out
    assert completed(g)["output"] == ("Found 1 matches\n/workspace/notes/hello.txt:\n"
                                      "  Line 1: goodbye from opencode"), g
    assert completed(gl)["output"] == "/workspace/notes/hello.txt", gl
    assert completed(ap)["output"] == "(no output)", ap
    assert miss["status"] == "error" and "File not found: /workspace/missing.txt" in miss["error"], miss
    out = completed(slow)["output"]
    assert "terminated command after exceeding timeout 500 ms" in out, out

    # the world: the files are in the container, not on the host
    assert container_file(sandbox_id, "/workspace/notes/hello.txt") == b"goodbye from opencode\nthird line\n"
    assert container_file(sandbox_id, "/workspace/patched.py") == b"print(1)\n"
    for p in ("notes/hello.txt", "hello.txt", "patched.py"):
        assert not os.path.exists(os.path.join(oc.project, p)), p
    # the model was told where it works, and got our tools in place of the built-ins
    assert "/workspace" in model.system_prompt("e2e") and "Sandbox Broker" in model.system_prompt("e2e")
    offered = model.tools_offered("e2e")
    for t in ("bash", "read", "write", "edit", "glob", "grep"):
        assert t in offered, offered
    # the tool results the model saw are the sandbox's
    results = model.tool_results("e2e")
    assert results[1][0] == "bash" and "/workspace" in results[1][1], results

    # deleting the session releases its lease with reason deleted: the container goes
    lease_before = sb.b.status()
    assert lease_before["activeLeases"] == 1, lease_before
    oc.delete(sid)
    wait_until(lambda: sb.b.status()["activeLeases"] == 0, 30, desc="lease released")
    sb.wait_container_state(sandbox_id, None, timeout=60)


# ---------------------------------------------------- the three scenarios

def _in_thread(fn, *args):
    box = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # re-raised by the joiner
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()

    def join(timeout=300):
        t.join(timeout)
        assert not t.is_alive(), "prompt still running after %ss" % timeout
        if "error" in box:
            raise box["error"]
        return box.get("value")
    return join


def test_opencode_capacity_queue_idle_release(docker_broker, opencode, model):
    """Scenario 1 through OpenCode: capacity 2, three sessions. The third
    session's tool call waits in the queue (its metadata records the position)
    and completes after the first session goes idle and its lease is
    released; the first session's next tool call gets its stopped sandbox
    back (stop_keep); deleting a session removes its sandbox."""
    sb = docker_broker(BROKER_CAPACITY=2, IDLE_POLICY="stop_keep")
    model.script("cap_a", [[("bash", {"command": "echo a > marker; sleep 6; cat marker"})], "a done"])
    model.script("cap_b", [[("bash", {"command": "echo b > marker; sleep 20; cat marker"})], "b done"])
    model.script("cap_c", [[("bash", {"command": "echo c from $(pwd)"})], "c done"])
    model.script("cap_a2", [[("read", {"filePath": "marker"})], "a2 done"])
    oc = opencode(sb.b, IDLE_RELEASE_MS="1500", USER_ID="alice")
    s1, s2, s3 = oc.session(), oc.session(), oc.session()
    oc.watch_events()

    j1 = _in_thread(oc.prompt, s1, "SCRIPT:cap_a")
    j2 = _in_thread(oc.prompt, s2, "SCRIPT:cap_b")
    wait_until(lambda: sb.b.status()["activeSlots"] == 2 and len(sb.containers()) == 2, 90,
               desc="two sandboxes")
    j3 = _in_thread(oc.prompt, s3, "SCRIPT:cap_c")

    # the third waits: queued at the broker, no third container, the tool's title says so
    wait_until(lambda: sb.b.status()["queueDepth"] == 1, 30, desc="s3 queued")
    assert sb.b.status()["queueDepth"] == 1
    assert len(sb.containers()) == 2

    # s1's turn ends; 1.5 s later its lease is released (idle): s3 gets the slot
    j1()
    j3()
    (tool3, st3), = tools_by_name(oc, s3)
    assert completed(st3)["output"] == "c from /workspace\n", st3
    # the call says it waited, and where it was in the queue
    assert st3["metadata"]["queued"]["position"] == 1, st3["metadata"]
    assert st3["metadata"]["queued"]["waitedMs"] > 1000, st3["metadata"]
    sid1 = completed(tools_by_name(oc, s1)[0][1])["metadata"]["sandboxId"]
    sid3 = st3["metadata"]["sandboxId"]
    assert sid3 != sid1
    sb.wait_container_state(sid1, ("exited",), timeout=60)   # stop_keep: stopped, kept
    assert container_file(sid3, "/workspace/marker") is None

    # s1 again: after s2 and s3 go idle a slot frees, and its own stopped sandbox comes back
    j2()
    oc.prompt(s1, "SCRIPT:cap_a2")
    (_, st1b), = [t for t in tools_by_name(oc, s1) if t[0] == "read"]
    assert completed(st1b)["metadata"]["sandboxId"] == sid1, st1b
    assert "1: a" in st1b["output"], st1b

    # deleting a session releases with reason deleted: its sandbox is removed
    oc.delete(s1)
    sb.wait_container_state(sid1, None, timeout=60)
