"""Installing the OpenCode plugin as a user would, and failing closed
(docs/OPENCODE.md, "Install"), with the real OpenCode and a broker with Docker sandboxes.

- test_install_check_and_use: `scripts/opencode-install --into <config dir> --broker-url ...
  --api-key-file ...` in a scratch HOME with nothing else installed; `sandbox-broker-opencode
  check --sandbox` passes (OpenCode loads the plugin from its file URL, the host tools are
  denied, the broker answers to the key, a sandbox runs `true`); then `opencode run` runs the
  model's bash and write in the sandbox, not on the host.
- test_broken_install_runs_nothing_on_the_host: the same install with the plugin's files gone
  (a deleted node_modules): check fails and says why; `opencode run` offers the model no bash,
  read, write or edit at all (the install's denies), so nothing runs on the host.
- test_invalid_settings_fail_every_tool: a setting the plugin refuses (SANDBOX_BROKER_MODE=bogus):
  the plugin still loads, every tool call fails with what is wrong, nothing runs on the host,
  and the install refuses the same value at once.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from sandboxlib import docker_broker, require_docker  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "opencode"))
from oclib import installed, model  # noqa: E402,F401
from runner import INSTALL, OPENCODE_BIN, OpenCode, opencode_run  # noqa: E402

require_docker()


@pytest.fixture
def user_oc(tmp_path, model):
    """An OpenCode tree with no plugin at all (a project whose opencode.json names the
    scripted model only), as on a machine where the plugin is about to be installed."""
    oc = OpenCode(str(tmp_path / "oc"), model, {}).setup(with_plugin=False)
    yield oc
    oc.stop()


def install(oc, broker, *extra):
    key = os.path.join(oc.root, "broker-key")
    with open(key, "w") as f:
        f.write(broker.api_key + "\n")
    os.chmod(key, 0o600)
    cfgdir = os.path.join(oc.xdg["XDG_CONFIG_HOME"], "opencode")
    r = subprocess.run([INSTALL, "--into", cfgdir, "--broker-url", "http://127.0.0.1:%d" % broker.port,
                        "--api-key-file", key] + list(extra),
                       env=oc.env(), capture_output=True, text=True, timeout=600)
    return cfgdir, r


def check(oc, *extra):
    cli = os.path.join(oc.xdg["XDG_CONFIG_HOME"], "opencode", "sandbox-broker", "node_modules",
                       "@sandbox-broker", "opencode", "dist", "cli.js")
    env = oc.env()
    env["PATH"] = os.path.dirname(OPENCODE_BIN) + ":" + env.get("PATH", "")
    return subprocess.run(["node", cli, "check"] + list(extra), cwd=oc.project, env=env,
                          capture_output=True, text=True, timeout=300)


def host_files(oc):
    return sorted(f for f in os.listdir(oc.project) if f not in ("opencode.json", ".opencode"))


def test_install_check_and_use(docker_broker, user_oc, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    cfgdir, r = install(user_oc, sb.b, "--mode", "exclusive")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, (r.stdout, r.stderr)
    cfg = json.load(open(os.path.join(cfgdir, "opencode.json")))
    (entry, opts), = cfg["plugin"]
    assert entry.startswith("file://%s/sandbox-broker/node_modules/@sandbox-broker/opencode/dist/index.js" % cfgdir), entry
    assert opts["brokerUrl"] == "http://127.0.0.1:%d" % sb.b.port and opts["apiKeyFile"].endswith("broker-key"), opts
    assert "apiKey" not in opts and sb.b.api_key not in json.dumps(cfg), "the key stays in its file"
    for t in ("bash", "read", "edit", "glob", "grep", "list", "webfetch"):
        assert cfg["permission"][t] == "deny", cfg["permission"]
    assert os.path.exists(os.path.join(cfgdir, "node_modules", "@opencode-ai", "plugin", "package.json"))

    c = check(user_oc, "--sandbox")
    print(c.stdout, c.stderr)
    assert c.returncode == 0, (c.stdout, c.stderr)
    out = c.stdout
    assert "OpenCode loads the plugin (file://" in out
    assert "denied on the host: websearch, codesearch, lsp" in out
    assert "API key valid: tenant it" in out
    assert "a sandbox runs commands" in out and out.rstrip().endswith("all checks passed"), out
    assert sb.b.status()["activeLeases"] == 0, "check released its sandbox's lease"

    model.script("inst", [[("bash", {"command": "pwd; echo in-sandbox > made.txt", "description": "where"})],
                          [("write", {"filePath": "notes.txt", "content": "x\n"})], "done"])
    rc, stdout, stderr = opencode_run(user_oc, "SCRIPT:inst go")
    print(stdout, stderr)
    assert rc == 0, (stdout, stderr)
    results = model.tool_results("inst")
    assert results[0] == ("bash", "/workspace\n"), results
    assert results[1] == ("write", "Wrote file successfully."), results
    assert host_files(user_oc) == [], "nothing was made on the host"
    assert sb.b.status()["activeLeases"] == 0, "run released its lease when it ended"


@pytest.mark.invalid_ok("bash", "write", "read")
def test_broken_install_runs_nothing_on_the_host(docker_broker, user_oc, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    cfgdir, r = install(user_oc, sb.b)
    assert r.returncode == 0, (r.stdout, r.stderr)
    # the plugin's files go (a cleaned cache, a failed upgrade); the config still names them
    keep = os.path.join(user_oc.root, "kept-plugin")
    shutil.move(os.path.join(cfgdir, "sandbox-broker"), keep)
    c = subprocess.run(["node", os.path.join(keep, "node_modules", "@sandbox-broker", "opencode", "dist", "cli.js"), "check"],
                       cwd=user_oc.project, env=dict(user_oc.env(), PATH=os.path.dirname(OPENCODE_BIN) + ":" + os.environ["PATH"]),
                       capture_output=True, text=True, timeout=300)
    print(c.stdout, c.stderr)
    assert c.returncode == 1, c.stdout
    assert "FAIL  OpenCode did not load the plugin: Failed to load plugin file://" in c.stdout, c.stdout
    assert "FAIL  OpenCode still denies bash, read, edit, glob, grep, list, webfetch" in c.stdout
    assert c.stdout.rstrip().endswith("some checks failed: OpenCode is not safe to use with this configuration yet")

    model.script("broken", [[("bash", {"command": "touch host-bash.txt"})],
                            [("write", {"filePath": "host-write.txt", "content": "x"})],
                            [("read", {"filePath": "opencode.json"})], "done"])
    rc, stdout, stderr = opencode_run(user_oc, "SCRIPT:broken go")
    print(stdout, stderr)
    offered = model.tools_offered("broken")
    for t in ("bash", "read", "write", "edit", "glob", "grep", "webfetch"):
        assert t not in offered, offered
    results = model.tool_results("broken")
    assert len(results) == 3 and all("unavailable tool" in out for _, out in results), results
    assert host_files(user_oc) == [], "nothing ran on the host"


def test_invalid_settings_fail_every_tool(docker_broker, user_oc, model):
    sb = docker_broker(BROKER_CAPACITY=2)
    # the install refuses what the plugin would refuse
    _, bad = install(user_oc, sb.b, "--mode", "bogus")
    assert bad.returncode == 2 and "mode must be one of exclusive, user_shared, multi_user_shared" in bad.stderr, bad
    _, r = install(user_oc, sb.b)
    assert r.returncode == 0, (r.stdout, r.stderr)
    model.script("badcfg", [[("bash", {"command": "touch host-bash.txt"})],
                            [("write", {"filePath": "host-write.txt", "content": "x"})], "done"])
    user_oc.plugin_env["SANDBOX_BROKER_MODE"] = "bogus"
    rc, stdout, stderr = opencode_run(user_oc, "SCRIPT:badcfg go")
    print(stdout, stderr)
    results = model.tool_results("badcfg")
    assert [t for t, _ in results] == ["bash", "write"], results
    for _, out in results:
        assert "mode must be one of exclusive, user_shared, multi_user_shared" in out, out
        assert "no tool runs" in out, out
    assert host_files(user_oc) == []
    assert sb.b.status()["activeLeases"] == 0 and sb.containers() == [], "no sandbox was even made"
