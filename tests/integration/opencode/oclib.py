"""Fixtures and helpers of the OpenCode tests (test_opencode*.py): the real OpenCode with the
plugin (runner.py), the scripted model (scripted_model.py), and what they read back.

A test module imports the fixtures it uses (`from oclib import installed, model, opencode`):
pytest finds fixtures in the module's namespace. The `model` fixture checks, after every test,
that what OpenCode sent the model back is what the model sent (history_mismatches): no test
passes with a rewritten history.
"""

import io
import tarfile
import threading
import urllib.parse

import pytest

from runner import OpenCode, ensure_installed
from sandboxlib import DOCKER
from scripted_model import ScriptedModel


@pytest.fixture(scope="module", autouse=True)
def installed():
    ensure_installed()


@pytest.fixture
def model(request):
    """The scripted model. A test whose script calls a tool OpenCode does not offer names it in
    a marker, @pytest.mark.invalid_ok("websearch"): OpenCode sends such a call back as its
    `invalid` tool."""
    m = ScriptedModel().start()
    yield m
    m.stop()
    marker = request.node.get_closest_marker("invalid_ok")
    bad = m.history_mismatches(invalid_ok=marker.args if marker else ())
    assert bad == [], "OpenCode sent the model back another history than it made:\n" + "\n".join(bad)


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


def part_updates(oc, sid, tool):
    """The states one tool's parts of a session went through, in order, as OpenCode's
    event stream (GET /event, oc.watch_events()) published them: every
    message.part.updated of a `tool` part of session `sid`."""
    out = []
    for ev in list(oc.events):
        ev = ev.get("payload", ev)  # an event, or one wrapped with its directory
        if ev.get("type") != "message.part.updated":
            continue
        part = (ev.get("properties") or {}).get("part") or {}
        if part.get("type") == "tool" and part.get("sessionID") == sid and part.get("tool") == tool:
            out.append(part["state"])
    return out


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


